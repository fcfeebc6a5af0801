/*
 * runtime/config.c: the command line, the configuration file and the token.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/action.h"
#include "common/size.h"
#include "runtime/config.h"
#include "runtime/dispatch.h"
#include "runtime/log.h"

#define BD_TOKEN_MAX 4096

static const char bd_usage[] =
    "usage: bureaud [--display :N] [--listen URL]... [--events URL]\n"
    "               [--token-file PATH] [--scale none|auto|WxH]\n"
    "               [--config PATH] [--insecure] [--log-level LEVEL]\n"
    "               [--workers N] [--max-request BYTES] [--allow LIST]\n"
    "               [--root DIR] [--settle-ms MS] [--settle-timeout-ms MS]\n"
    "               [--frame-interval-ms MS] [--no-cursor]\n"
    "               [--bash-output-max BYTES] [--reply-timeout-ms MS]\n"
    "\n"
    "Serves an X display to agents over nng: requests on REP sockets\n"
    "(default tcp://127.0.0.1:7300 and ipc://$XDG_RUNTIME_DIR/bureau/"
    "bureaud.sock),\nevents on a PUB socket (the first TCP port + 1).\n"
    "See bureaud(1) and docs/protocol.md.\n";

enum {
	OPT_DISPLAY = 256,
	OPT_LISTEN,
	OPT_EVENTS,
	OPT_TOKEN_FILE,
	OPT_SCALE,
	OPT_CONFIG,
	OPT_INSECURE,
	OPT_LOG_LEVEL,
	OPT_WORKERS,
	OPT_MAX_REQUEST,
	OPT_ALLOW,
	OPT_ROOT,
	OPT_SETTLE,
	OPT_SETTLE_TIMEOUT,
	OPT_FRAME_INTERVAL,
	OPT_NO_CURSOR,
	OPT_BASH_MAX,
	OPT_REPLY_TIMEOUT,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option bd_options[] = {
	{ "display", required_argument, NULL, OPT_DISPLAY },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "scale", required_argument, NULL, OPT_SCALE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "max-request", required_argument, NULL, OPT_MAX_REQUEST },
	{ "allow", required_argument, NULL, OPT_ALLOW },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "settle-ms", required_argument, NULL, OPT_SETTLE },
	{ "settle-timeout-ms", required_argument, NULL, OPT_SETTLE_TIMEOUT },
	{ "frame-interval-ms", required_argument, NULL, OPT_FRAME_INTERVAL },
	{ "no-cursor", no_argument, NULL, OPT_NO_CURSOR },
	{ "bash-output-max", required_argument, NULL, OPT_BASH_MAX },
	{ "reply-timeout-ms", required_argument, NULL, OPT_REPLY_TIMEOUT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int
bd_cfail(char **cause, const char *fmt, const char *a, const char *b)
{
	if (asprintf(cause, fmt, a, b) < 0)
		*cause = NULL;
	return (-1);
}

static int
bd_set_str(char **slot, const char *v)
{
	free(*slot);
	return ((*slot = strdup(v)) == NULL ? -1 : 0);
}

static int
bd_num_fail(char **cause, const char *name, const char *v, const char *why,
    long long min, long long max)
{
	if (asprintf(cause,
	        "invalid %s '%s': %s (expected an integer in "
	        "%lld..%lld%s)",
	        name, v, why, min, max,
	        max >= 1024 ? ", optionally with a K, M or G suffix" : "") < 0)
		*cause = NULL;
	return (-1);
}

/* An integer in [min, max] (min >= 0), with an optional K, M or G suffix
 * (common/size.h). */
static int
bd_parse_num(const char *name, const char *v, long long min, long long max,
    long long *out, char **cause)
{
	static const char *const why[] = {
		[SIZE_EMPTY] = "empty",
		[SIZE_NEGATIVE] = "negative",
		[SIZE_NOT_NUMBER] = "not a number",
		[SIZE_TOO_LARGE] = "too large",
		[SIZE_TRAILING] = "trailing characters",
	};
	unsigned long long n;
	enum size_status st;

	if (v == NULL)
		v = "";
	if ((st = size_parse(v, 0, (unsigned long long)max, &n)) != SIZE_OK)
		return (bd_num_fail(cause, name, v, why[st], min, max));
	if (n < (unsigned long long)min)
		return (bd_num_fail(cause, name, v, "too small", min, max));
	*out = (long long)n;
	return (0);
}

/* A boolean in the configuration file: a typo must not silently mean
 * "false" (say, "insecure = ture"). NULL is a flag on the command line. */
static int
bd_parse_bool(const char *name, const char *v, int *out, char **cause)
{
	static const char *const yes[] = { "true", "yes", "1", "on" };
	static const char *const no[] = { "false", "no", "0", "off" };

	if (v == NULL) {
		*out = 1;
		return (0);
	}
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = 1;
			return (0);
		}
		if (strcmp(v, no[i]) == 0) {
			*out = 0;
			return (0);
		}
	}
	return (bd_cfail(cause, "invalid %s '%s': expected true or false", name,
	    v));
}

/* One option, from the command line or the file. */
static int
bd_apply(struct bd_config *cfg, int opt, const char *name, const char *v,
    char **cause)
{
	long long n;

	switch (opt) {
	case OPT_DISPLAY:
		return (bd_set_str(&cfg->display, v));
	case OPT_LISTEN:
		if (cfg->listen_default) {
			for (int i = 0; i < cfg->nlisten; i++)
				free(cfg->listen[i]);
			cfg->nlisten = 0;
			cfg->listen_default = 0;
		}
		if (cfg->nlisten == BD_MAX_LISTEN)
			return (bd_cfail(cause,
			    "too many --listen URLs "
			    "(at most 16)%s%s",
			    "", ""));
		if (strstr(v, "://") == NULL)
			return (bd_cfail(cause,
			    "invalid listen URL '%s': "
			    "expected tcp://HOST:PORT or ipc:///PATH%s",
			    v, ""));
		if ((cfg->listen[cfg->nlisten] = strdup(v)) == NULL)
			return (-1);
		cfg->nlisten++;
		return (0);
	case OPT_EVENTS:
		return (bd_set_str(&cfg->events, v));
	case OPT_TOKEN_FILE:
		return (bd_set_str(&cfg->token_file, v));
	case OPT_SCALE:
		if (cap_scale_parse(v, &cfg->tool.scale, &cfg->tool.scale_w,
		        &cfg->tool.scale_h, cause) != 0)
			return (-1);
		return (bd_set_str(&cfg->scale, v));
	case OPT_INSECURE:
		return (bd_parse_bool(name, v, &cfg->insecure, cause));
	case OPT_LOG_LEVEL:
		if (bd_log_parse(v, &bd_log_level) != 0)
			return (bd_cfail(cause,
			    "invalid log level '%s': "
			    "expected error, warn, info or debug%s",
			    v, ""));
		return (0);
	case OPT_WORKERS:
		if (bd_parse_num(name, v, BD_QUICK_RESERVE + 1, 256, &n,
		        cause) != 0)
			return (-1);
		cfg->workers = (int)n;
		return (0);
	case OPT_MAX_REQUEST:
		if (bd_parse_num(name, v, 4096, 1LL << 31, &n, cause) != 0)
			return (-1);
		cfg->max_request = (size_t)n;
		return (0);
	case OPT_ALLOW:
		return (
		    action_list_add(&cfg->allow, &cfg->nallow, name, v, cause));
	case OPT_ROOT:
		if (bd_set_str(&cfg->root, v) != 0)
			return (-1);
		cfg->tool.root = cfg->root;
		return (0);
	case OPT_SETTLE:
		if (bd_parse_num(name, v, 0, 10000, &n, cause) != 0)
			return (-1);
		cfg->tool.settle_ms = (int)n;
		return (0);
	case OPT_SETTLE_TIMEOUT:
		if (bd_parse_num(name, v, 0, 60000, &n, cause) != 0)
			return (-1);
		cfg->tool.settle_timeout_ms = (int)n;
		return (0);
	case OPT_FRAME_INTERVAL:
		if (bd_parse_num(name, v, 0, 3600000, &n, cause) != 0)
			return (-1);
		cfg->tool.frame_interval_ms = (int)n;
		return (0);
	case OPT_NO_CURSOR: {
		int off;

		if (bd_parse_bool(name, v, &off, cause) != 0)
			return (-1);
		cfg->tool.draw_cursor = !off;
		return (0);
	}
	case OPT_BASH_MAX:
		if (bd_parse_num(name, v, 1024, 1LL << 30, &n, cause) != 0)
			return (-1);
		cfg->tool.bash_output_max = (size_t)n;
		return (0);
	case OPT_REPLY_TIMEOUT:
		if (bd_parse_num(name, v, 100, 600000, &n, cause) != 0)
			return (-1);
		cfg->reply_timeout_ms = (int)n;
		return (0);
	}
	return (bd_cfail(cause, "unknown option '%s'%s", name, ""));
}

static int
bd_load_file(struct bd_config *cfg, const char *path, char **cause)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int lineno = 0;

	if (f == NULL)
		return (bd_cfail(cause, "cannot open config '%s': %s", path,
		    strerror(errno)));
	while (fgets(line, sizeof line, f) != NULL) {
		char *k = line, *v, *e;
		const struct option *o;

		lineno++;
		while (isspace((unsigned char)*k))
			k++;
		if (*k == '#' || *k == '\0')
			continue;
		if ((v = strchr(k, '=')) == NULL) {
			if (asprintf(cause,
			        "config '%s' line %d: expected "
			        "'key = value'",
			        path, lineno) < 0)
				*cause = NULL;
			fclose(f);
			return (-1);
		}
		for (e = v; e > k && isspace((unsigned char)e[-1]); e--)
			;
		*e = '\0';
		for (v++; isspace((unsigned char)*v); v++)
			;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);
		     e--)
			;
		*e = '\0';
		for (o = bd_options; o->name != NULL; o++)
			if (strcmp(o->name, k) == 0)
				break;
		if (o->name == NULL || o->val == OPT_CONFIG ||
		    o->val == OPT_HELP || o->val == OPT_VERSION) {
			if (asprintf(cause,
			        "config '%s' line %d: unknown key "
			        "'%s'",
			        path, lineno, k) < 0)
				*cause = NULL;
			fclose(f);
			return (-1);
		}
		if (bd_apply(cfg, o->val, k, v, cause) != 0) {
			char *inner = *cause;
			if (asprintf(cause, "config '%s' line %d: %s", path,
			        lineno, inner != NULL ? inner : "invalid") < 0)
				*cause = NULL;
			free(inner);
			fclose(f);
			return (-1);
		}
	}
	fclose(f);
	return (0);
}

/* The default ipc socket: /run/bureau as root, else the runtime dir. */
static char *
bd_default_ipc(void)
{
	const char *base = geteuid() == 0 ? "/run" : getenv("XDG_RUNTIME_DIR");
	char *dir, *url;

	if (base == NULL || *base == '\0')
		return (NULL);
	if (asprintf(&dir, "%s/bureau", base) < 0)
		return (NULL);
	/* 0700: with no token the socket's directory is the only guard. */
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		bd_warn("not listening on ipc: cannot create '%s': %s", dir,
		    strerror(errno));
		free(dir);
		return (NULL);
	}
	if (asprintf(&url, "ipc://%s/bureaud.sock", dir) < 0)
		url = NULL;
	free(dir);
	return (url);
}

/* Events: the first TCP listen port + 1, else an ipc socket beside. */
static char *
bd_default_events(const struct bd_config *cfg)
{
	char *url = NULL;

	for (int i = 0; i < cfg->nlisten; i++) {
		const char *u = cfg->listen[i], *colon;
		char *end;
		long port;

		if (strncmp(u, "tcp://", 6) != 0 ||
		    (colon = strrchr(u + 6, ':')) == NULL)
			continue;
		port = strtol(colon + 1, &end, 10);
		if (*end != '\0' || port <= 0 || port >= 65535)
			continue;
		if (asprintf(&url, "%.*s:%ld", (int)(colon - u), u, port + 1) <
		    0)
			return (NULL);
		return (url);
	}
	for (int i = 0; i < cfg->nlisten; i++) {
		const char *u = cfg->listen[i];
		size_t n = strlen(u);

		if (strncmp(u, "ipc://", 6) != 0)
			continue;
		if (n > 5 && strcmp(u + n - 5, ".sock") == 0)
			n -= 5;
		if (asprintf(&url, "%.*s-events.sock", (int)n, u) < 0)
			return (NULL);
		return (url);
	}
	return (NULL);
}

int
bd_config_load(struct bd_config *cfg, int argc, char **argv, char **cause)
{
	int opt;

	memset(cfg, 0, sizeof *cfg);
	cfg->workers = 16;
	cfg->max_request = BD_MAX_REQUEST_DEFAULT;
	/* Long enough for a client that pipelines requests over one
	 * connection to take a few MB of screenshots over a slow link;
	 * short enough that peers that never read free their workers
	 * quickly (see runtime/server.c). */
	cfg->reply_timeout_ms = 5000;
	cfg->tool.scale = CAP_SCALE_AUTO;
	cfg->tool.settle_ms = 100;
	cfg->tool.settle_timeout_ms = 2000;
	cfg->tool.draw_cursor = 1;
	cfg->tool.frame_interval_ms = 500;
	cfg->tool.bash_output_max = 64u << 10;

	/* The file first, so the command line overrides it. */
	for (int i = 1; i < argc; i++) {
		const char *path = NULL;

		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[i + 1];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			path = argv[i] + 9;
		if (path != NULL && bd_load_file(cfg, path, cause) != 0)
			return (-1);
	}
	optind = 1;
	opterr = 0;
	int idx = 0;
	while ((opt = getopt_long(argc, argv, "", bd_options, &idx)) != -1) {
		const char *name = bd_options[idx].name;

		if (opt == '?' || opt == ':') {
			return (bd_cfail(cause,
			    "unknown or incomplete option "
			    "'%s'\n%s",
			    argv[optind - 1], bd_usage));
		}
		if (opt == OPT_HELP) {
			fputs(bd_usage, stdout);
			return (1);
		}
		if (opt == OPT_VERSION) {
			printf("bureaud %s (protocol %d)\n", BUREAU_VERSION,
			    BD_PROTOCOL_VERSION);
			return (1);
		}
		if (opt == OPT_CONFIG)
			continue;
		if (bd_apply(cfg, opt, name, optarg, cause) != 0) {
			if (*cause == NULL)
				return (bd_cfail(cause, "out of memory%s%s", "",
				    ""));
			return (-1);
		}
	}
	if (optind < argc)
		return (bd_cfail(cause, "unexpected argument '%s'\n%s",
		    argv[optind], bd_usage));
	if (cfg->nlisten == 0) {
		char *ipc = bd_default_ipc();

		cfg->listen[cfg->nlisten++] = strdup(BD_DEFAULT_TCP);
		if (ipc != NULL)
			cfg->listen[cfg->nlisten++] = ipc;
		cfg->listen_default = 1;
	}
	if (cfg->root != NULL) {
		struct stat st;

		/* Refuse at start rather than fail every file call later. */
		if (stat(cfg->root, &st) != 0)
			return (bd_cfail(cause, "invalid root '%s': %s",
			    cfg->root, strerror(errno)));
		if (!S_ISDIR(st.st_mode))
			return (bd_cfail(cause, "invalid root '%s': %s",
			    cfg->root, "not a directory"));
	}
	if (cfg->events == NULL)
		cfg->events = bd_default_events(cfg);
	cfg->tool.display = cfg->display;
	cfg->tool.workers = cfg->workers;
	cfg->tool.max_request = cfg->max_request;
	return (0);
}

static int
bd_read_token(const char *path, char **tok, size_t *len, char **cause)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (f == NULL)
		return (bd_cfail(cause, "cannot read token file '%s': %s", path,
		    strerror(errno)));
	if ((buf = malloc(BD_TOKEN_MAX + 1)) == NULL) {
		fclose(f);
		return (-1);
	}
	n = fread(buf, 1, BD_TOKEN_MAX + 1, f);
	fclose(f);
	if (n > BD_TOKEN_MAX) {
		free(buf);
		return (bd_cfail(cause,
		    "token file '%s' is larger than 4096 "
		    "bytes%s",
		    path, ""));
	}
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n == 0) {
		free(buf);
		return (
		    bd_cfail(cause, "token file '%s' is empty%s", path, ""));
	}
	*tok = buf;
	*len = n;
	return (0);
}

int
bd_config_token(struct bd_config *cfg, char **cause)
{
	const char *env = getenv("BUREAU_TOKEN");

	if (cfg->token_file != NULL)
		return (bd_read_token(cfg->token_file, &cfg->token,
		    &cfg->token_len, cause));
	if (env != NULL && *env != '\0') {
		if ((cfg->token = strdup(env)) == NULL)
			return (-1);
		cfg->token_len = strlen(env);
		return (0);
	}
	if (access(BD_FWCFG_TOKEN, R_OK) == 0)
		return (bd_read_token(BD_FWCFG_TOKEN, &cfg->token,
		    &cfg->token_len, cause));
	return (0);
}

pthread_rwlock_t bd_token_lock = PTHREAD_RWLOCK_INITIALIZER;

int
bd_config_reload_token(struct bd_config *cfg, char **cause)
{
	const char *path = cfg->token_file;
	char *tok = NULL, *old;
	size_t len = 0, oldlen;
	int same;

	if (path == NULL && cfg->token != NULL &&
	    access(BD_FWCFG_TOKEN, R_OK) == 0)
		path = BD_FWCFG_TOKEN;
	if (path == NULL || cfg->token == NULL)
		return (0);
	if (bd_read_token(path, &tok, &len, cause) != 0)
		return (-1);
	pthread_rwlock_wrlock(&bd_token_lock);
	same = len == cfg->token_len && memcmp(tok, cfg->token, len) == 0;
	old = cfg->token;
	oldlen = cfg->token_len;
	cfg->token = tok;
	cfg->token_len = len;
	pthread_rwlock_unlock(&bd_token_lock);
	memset(old, 0, oldlen);
	free(old);
	return (same ? 0 : 1);
}

void
bd_config_scrub_env(void)
{
	extern char **environ;
	static const char name[] = "BUREAU_TOKEN=";

	/* unsetenv only drops the pointer from environ: the bytes stay in
	 * the block the kernel set up at exec, and /proc/PID/environ shows
	 * that block to anyone allowed to read it. Wipe every copy of the
	 * value there first (getenv points into it). */
	for (char **e = environ; e != NULL && *e != NULL; e++)
		if (strncmp(*e, name, sizeof name - 1) == 0)
			explicit_bzero(*e + sizeof name - 1,
			    strlen(*e + sizeof name - 1));
	unsetenv("BUREAU_TOKEN");
}

int
bd_url_is_local(const char *url)
{
	const char *host, *end;
	char addr[INET_ADDRSTRLEN];
	struct in_addr in;
	size_t n;

	if (strncmp(url, "ipc://", 6) == 0 || strncmp(url, "inproc://", 9) == 0)
		return (1);
	if (strncmp(url, "tcp://", 6) == 0)
		host = url + 6;
	else if (strncmp(url, "tcp4://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "tcp6://", 7) == 0)
		host = url + 7;
	else
		return (0); /* ws, tls+tcp, ...: treat as reachable */
	if (*host == '[') {
		end = strchr(host, ']');
		return (end != NULL && strncmp(host, "[::1]", 5) == 0);
	}
	end = strrchr(host, ':');
	n = end != NULL ? (size_t)(end - host) : strlen(host);
	if (n == 9 && strncmp(host, "localhost", 9) == 0)
		return (1);
	/* Only a numeric address in 127/8: a name could resolve anywhere. */
	if (n >= INET_ADDRSTRLEN)
		return (0);
	memcpy(addr, host, n);
	addr[n] = '\0';
	return (inet_pton(AF_INET, addr, &in) == 1 &&
	    (ntohl(in.s_addr) >> 24) == 127);
}

int
bd_config_allows(const struct bd_config *cfg, const char *tool,
    const char *action)
{
	if (cfg->nallow == 0)
		return (1);
	return (action_listed(cfg->allow, cfg->nallow, tool, action));
}

void
bd_config_clear(struct bd_config *cfg)
{
	free(cfg->display);
	for (int i = 0; i < cfg->nlisten; i++)
		free(cfg->listen[i]);
	free(cfg->events);
	free(cfg->token_file);
	if (cfg->token != NULL) {
		memset(cfg->token, 0, cfg->token_len);
		free(cfg->token);
	}
	action_list_free(cfg->allow, cfg->nallow);
	free(cfg->scale);
	free(cfg->root);
	memset(cfg, 0, sizeof *cfg);
}
