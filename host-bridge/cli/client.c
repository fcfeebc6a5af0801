/*
 * bureau call / bureau screenshot / bureau mcp: the client commands, over
 * libbureau (bureau mcp's server is ../mcp).
 *
 * Exit status: 0 done, 1 the daemon answered with an error (or the output
 * file could not be written), 2 usage error, 3 transport error.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/safeprint.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/mcp/mcp.h"
#include "host-bridge/util/util.h"

#define EXIT_DAEMON    1
#define EXIT_USAGE     2
#define EXIT_TRANSPORT 3

#define CALL_USAGE                                                             \
	"bureau call [--url URL] [--token-file F] [--timeout S] [NAME] "       \
	"'<json request>'|-"
#define SHOT_USAGE                                                             \
	"bureau screenshot [--url URL] [--token-file F] [--timeout S] "        \
	"[NAME] -o FILE.png|-"
#define MCP_USAGE "bureau mcp [--url URL] [--token-file F] [--timeout S] NAME"

static const char *
cl_usage_line(const char *cmd)
{
	if (strcmp(cmd, "call") == 0)
		return (CALL_USAGE);
	if (strcmp(cmd, "mcp") == 0)
		return (MCP_USAGE);
	return (SHOT_USAGE);
}

struct cl_opts {
	const char *cmd;        /* "call" or "screenshot", for messages */
	const char *url;        /* --url */
	const char *token_file; /* --token-file */
	double timeout;         /* --timeout, 0 = library default */
	const char *out;        /* -o */
	const char *pos[2];     /* positionals */
	int npos;
	char *url_buf; /* from NAME (malloc'd) */
	char *token;   /* resolved (malloc'd) */
	char *looked;  /* where no token was found, for the hint (malloc'd) */
};

static void
cl_opts_free(struct cl_opts *o)
{
	free(o->url_buf);
	free(o->looked);
	if (o->token != NULL)
		memset(o->token, 0, strlen(o->token));
	free(o->token);
}

/* Read a small file whole, without trailing whitespace; NULL + errno. */
static char *
cl_slurp(const char *path)
{
	FILE *f;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if ((f = fopen(path, "r")) == NULL)
		return (NULL);
	for (;;) {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 4096 + 1);

			if (nb == NULL) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return (NULL);
			}
			buf = nb;
			cap += 4096;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return (NULL);
	}
	fclose(f);
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = '\0';
	return (buf);
}

static int
cl_usage(const struct cl_opts *o, const char *fmt, const char *arg)
{
	fprintf(stderr, "bureau %s: ", o->cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: %s\n", cl_usage_line(o->cmd));
	return (EXIT_USAGE);
}

static int
cl_is_json(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return (*s == '{' || *s == '[' || strcmp(s, "-") == 0);
}

/*
 * Parse options and positionals; returns -1 to go on, else an exit status
 * (0 after --help).
 */
static int
cl_parse(struct cl_opts *o, int argc, char **argv, int want_out)
{
	int i, opts = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		size_t klen;

		if (!opts || a[0] != '-' || strcmp(a, "-") == 0 ||
		    cl_is_json(a)) {
			if (o->npos == 2)
				return (
				    cl_usage(o, "unexpected argument '%s'", a));
			o->pos[o->npos++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			opts = 0;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			printf("usage: %s\n", cl_usage_line(o->cmd));
			return (0);
		}
		eq = strchr(a, '=');
		klen = eq != NULL ? (size_t)(eq - a) : strlen(a);
#define IS(opt) (klen == strlen(opt) && strncmp(a, opt, klen) == 0)
		if (!IS("--url") && !IS("--token-file") && !IS("--timeout") &&
		    !(want_out && (IS("-o") || IS("--output"))))
			return (cl_usage(o, "unknown option '%s'", a));
		if (eq != NULL)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return (cl_usage(o, "option '%s' needs a value", a));
		if (IS("--url"))
			o->url = val;
		else if (IS("--token-file"))
			o->token_file = val;
		else if (IS("--timeout")) {
			char *end;

			errno = 0;
			o->timeout = strtod(val, &end);
			if (errno != 0 || end == val || *end != '\0' ||
			    !(o->timeout > 0))
				return (cl_usage(o,
				    "invalid timeout '%s': not a number of "
				    "seconds above 0",
				    val));
		} else
			o->out = val;
#undef IS
	}
	return (-1);
}

/* $XDG_CONFIG_HOME/bureau/token, else ~/.config/bureau/token; malloc'd, or
 * NULL with no home directory. */
static char *
cl_config_token(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	struct passwd *pw;
	char *p;

	if (xdg != NULL && xdg[0] == '/')
		return (asprintf(&p, "%s/bureau/token", xdg) < 0 ? NULL : p);
	if ((home == NULL || *home == '\0') &&
	    (pw = getpwuid(getuid())) != NULL)
		home = pw->pw_dir;
	if (home == NULL || *home == '\0')
		return (NULL);
	return (asprintf(&p, "%s/.config/bureau/token", home) < 0 ? NULL : p);
}

/*
 * Fill o->url and o->token from the options, NAME and the environment. The
 * token: --token-file, else NAME's, else $BUREAU_TOKEN, else the config
 * file; none is no error (a loopback daemon may run without one), but an
 * `unauthorized` reply then says where the CLI looked (o->looked).
 */
static int
cl_resolve(struct cl_opts *o, const char *name)
{
	char *home = NULL, *path = NULL;
	const char *env;

	if (name != NULL) {
		if (o->url != NULL)
			return (cl_usage(o,
			    "give either a desktop NAME or --url, not both "
			    "(NAME '%s')",
			    name));
		if (*name == '\0' || strchr(name, '/') != NULL ||
		    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return (cl_usage(o, "invalid desktop name '%s'", name));
		if ((home = hb_home()) == NULL) {
			fprintf(stderr,
			    "bureau %s: no $BUREAU_HOME and no "
			    "home directory\n",
			    o->cmd);
			return (EXIT_USAGE);
		}
		if (asprintf(&path, "%s/%s/endpoint", home, name) < 0)
			goto nomem;
		if ((o->url_buf = cl_slurp(path)) == NULL) {
			fprintf(stderr,
			    "bureau %s: no desktop '%s': cannot read '%s': "
			    "%s\n",
			    o->cmd, name, path, strerror(errno));
			goto fail;
		}
		o->url_buf[strcspn(o->url_buf, "\r\n")] = '\0';
		o->url = o->url_buf;
		free(path);
		path = NULL;
		if (o->token_file == NULL) {
			if (asprintf(&path, "%s/%s/token", home, name) < 0)
				goto nomem;
			if ((o->token = cl_slurp(path)) == NULL &&
			    errno != ENOENT) {
				fprintf(stderr,
				    "bureau %s: cannot read the token of '%s' "
				    "at '%s': %s\n",
				    o->cmd, name, path, strerror(errno));
				goto fail;
			}
		}
	}
	if (o->url == NULL)
		o->url = BUREAU_DEFAULT_URL;
	if (o->token_file != NULL) {
		if ((o->token = cl_slurp(o->token_file)) == NULL) {
			fprintf(stderr, "bureau %s: cannot read '%s': %s\n",
			    o->cmd, o->token_file, strerror(errno));
			goto fail;
		}
	} else if (o->token == NULL && (env = getenv("BUREAU_TOKEN")) != NULL &&
	    *env != '\0') {
		if ((o->token = strdup(env)) == NULL)
			goto nomem;
	} else if (o->token == NULL) {
		free(path);
		path = NULL;
		/* Where the README's example keeps it; a desktop NAME has its
		 * own token or none. */
		if (name == NULL && (path = cl_config_token()) != NULL &&
		    (o->token = cl_slurp(path)) == NULL && errno != ENOENT) {
			fprintf(stderr,
			    "bureau %s: cannot read the token at '%s': %s\n",
			    o->cmd, path, strerror(errno));
			goto fail;
		}
		if (o->token == NULL &&
		    asprintf(&o->looked,
		        "no --token-file, %s%s%sno $BUREAU_TOKEN%s%s%s",
		        name != NULL ? "no token in desktop '" : "",
		        name != NULL ? name : "", name != NULL ? "', " : "",
		        path != NULL ? ", no '" : "", path != NULL ? path : "",
		        path != NULL ? "'" : "") < 0) {
			o->looked = NULL;
			goto nomem;
		}
	}
	free(path);
	free(home);
	return (-1);

nomem:
	fprintf(stderr, "bureau %s: out of memory\n", o->cmd);
fail:
	free(path);
	free(home);
	return (EXIT_USAGE);
}

static int
cl_connect(struct cl_opts *o, bureau_client **c)
{
	if (bureau_connect(o->url, o->token, o->timeout, c) != 0) {
		fprintf(stderr, "bureau %s: %s\n", o->cmd,
		    bureau_client_error(NULL));
		return (EXIT_TRANSPORT);
	}
	return (-1);
}

/*
 * Exit status for a call that failed without a reply to print; says why.
 * A daemon code with no reply is the library's own verdict: io_error for a
 * dropped connection (a transport failure), too_large for a request over
 * the daemon's limit.
 */
static int
cl_status(const struct cl_opts *o, int rv)
{
	/* The message may be the daemon's own text. */
	fprintf(stderr, "bureau %s: %s: ", o->cmd, bureau_error_name(rv));
	sp_puts(stderr, bureau_client_error(NULL));
	fputc('\n', stderr);
	if (rv == BUREAU_ECONNECT || rv == BUREAU_ENOREPLY ||
	    rv == BUREAU_EMALFORMED || rv == BUREAU_ENOMEM || rv == BUREAU_EIO)
		return (EXIT_TRANSPORT);
	if (rv == BUREAU_EARG)
		return (EXIT_USAGE);
	return (EXIT_DAEMON);
}

/* Refused for want of a token the CLI could not find: say where it
 * looked. */
static void
cl_hint(const struct cl_opts *o, int rv)
{
	if (rv == BUREAU_EUNAUTH && o->token == NULL && o->looked != NULL)
		fprintf(stderr, "bureau %s: sent no token: %s\n", o->cmd,
		    o->looked);
}

static int
cl_call(int argc, char **argv)
{
	struct cl_opts o = { .cmd = "call" };
	bureau_client *c = NULL;
	const char *name = NULL, *req;
	char *reply = NULL, *in = NULL;
	int rv, st;

	if ((st = cl_parse(&o, argc, argv, 0)) >= 0)
		return (st);
	if (o.npos == 0)
		return (cl_usage(&o, "no request%s", ""));
	if (o.npos == 2) {
		name = o.pos[0];
		req = o.pos[1];
	} else
		req = o.pos[0];
	if (!cl_is_json(req))
		return (cl_usage(&o,
		    "no request: '%s' is not a JSON object (or - for stdin)",
		    req));
	if (strcmp(req, "-") == 0) {
		if ((in = cl_slurp("/dev/stdin")) == NULL) {
			fprintf(stderr, "bureau call: cannot read stdin: %s\n",
			    strerror(errno));
			return (EXIT_USAGE);
		}
		req = in;
	}
	if ((st = cl_resolve(&o, name)) >= 0 || (st = cl_connect(&o, &c)) >= 0)
		goto out;
	rv = bureau_call(c, req, &reply);
	cl_hint(&o, rv);
	if (reply != NULL) {
		/* ok:true or ok:false: the reply is the output either way.
		 * The daemon wrote it: C1 controls, legal raw in JSON strings,
		 * go out as the same JSON escapes rather than to the
		 * terminal. */
		struct sp_state sp = { .style = SP_JSON };

		sp_write(&sp, stdout, reply, strlen(reply));
		sp_flush(&sp, stdout);
		putchar('\n');
		st = rv == 0 ? 0 : EXIT_DAEMON;
	} else if (rv == BUREAU_EBADREQ) {
		fprintf(stderr, "bureau call: %s\n", bureau_client_error(c));
		st = EXIT_USAGE;
	} else
		st = cl_status(&o, rv);
	if (fflush(stdout) != 0 && st == 0)
		st = EXIT_DAEMON;
out:
	bureau_free(reply);
	bureau_close(c);
	free(in);
	cl_opts_free(&o);
	return (st);
}

/* Write buf to path through a temporary file and rename(2). */
static int
cl_write_atomic(const char *path, const void *buf, size_t len, char **cause)
{
	char *tmp = NULL;
	const char *p = buf;
	mode_t um;
	int fd = -1, made = 0, saved;
	ssize_t n;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		tmp = NULL;
		errno = ENOMEM;
		goto fail;
	}
	if ((fd = mkstemp(tmp)) < 0)
		goto fail;
	made = 1;
	while (len > 0) {
		if ((n = write(fd, p, len)) < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += n;
		len -= (size_t)n;
	}
	/* mkstemp makes 0600; give the file the mode a plain open would. */
	um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail;
	free(tmp);
	return (0);

fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (made)
		unlink(tmp);
	if (asprintf(cause, "cannot write '%s': %s", path, strerror(saved)) < 0)
		*cause = NULL;
	free(tmp);
	return (-1);
}

static int
cl_screenshot(int argc, char **argv)
{
	struct cl_opts o = { .cmd = "screenshot" };
	struct bureau_image img = { 0 };
	bureau_client *c = NULL;
	char *cause = NULL;
	FILE *info = stdout;
	int rv, st;

	if ((st = cl_parse(&o, argc, argv, 1)) >= 0)
		return (st);
	if (o.out == NULL)
		return (cl_usage(&o, "no output file: give -o FILE.png%s", ""));
	if (o.npos > 1 || (o.npos == 1 && cl_is_json(o.pos[0])))
		return (cl_usage(&o, "unexpected argument '%s'",
		    o.pos[o.npos - 1]));
	if ((st = cl_resolve(&o, o.npos == 1 ? o.pos[0] : NULL)) >= 0 ||
	    (st = cl_connect(&o, &c)) >= 0)
		goto out;
	if ((rv = bureau_screenshot(c, &img)) != 0) {
		cl_hint(&o, rv);
		st = cl_status(&o, rv);
		goto out;
	}
	if (strcmp(o.out, "-") == 0) {
		info = stderr;
		if (fwrite(img.data, 1, img.size, stdout) != img.size ||
		    fflush(stdout) != 0) {
			fprintf(stderr,
			    "bureau screenshot: cannot write "
			    "stdout: %s\n",
			    strerror(errno));
			st = EXIT_DAEMON;
			goto out;
		}
	} else if (cl_write_atomic(o.out, img.data, img.size, &cause) != 0) {
		fprintf(stderr, "bureau screenshot: %s\n",
		    cause != NULL ? cause : "out of memory");
		st = EXIT_DAEMON;
		goto out;
	}
	fprintf(info, "%s: %dx%d ", strcmp(o.out, "-") == 0 ? "stdout" : o.out,
	    img.width, img.height);
	sp_puts(info, img.mime_type); /* the daemon's string */
	fprintf(info, ", %zu bytes, frame %llu\n", img.size,
	    (unsigned long long)img.frame);
	st = 0;
out:
	free(cause);
	bureau_image_clear(&img);
	bureau_close(c);
	cl_opts_free(&o);
	return (st);
}

/*
 * bureau mcp: an MCP server on stdio for one desktop (../mcp), through its
 * host agent with the desktop's agent token, like `bureau call NAME`.
 */
static int
cl_mcp(int argc, char **argv)
{
	struct cl_opts o = { .cmd = "mcp" };
	struct mcp_opts mo = { 0 };
	const char *name = NULL;
	int st;

	if ((st = cl_parse(&o, argc, argv, 0)) >= 0)
		return (st);
	if (o.npos > 1 || (o.npos == 1 && cl_is_json(o.pos[0])))
		return (cl_usage(&o, "unexpected argument '%s'",
		    o.pos[o.npos - 1]));
	if (o.npos == 1)
		name = o.pos[0];
	else if (o.url == NULL)
		return (
		    cl_usage(&o, "no desktop: give its NAME (or --url)%s", ""));
	if ((st = cl_resolve(&o, name)) >= 0)
		goto out;
	mo.url = o.url;
	mo.token = o.token;
	mo.name = name;
	mo.timeout = o.timeout;
	st = mcp_serve(&mo, stdin, stdout);
out:
	cl_opts_free(&o);
	return (st);
}

const struct cli_cmd cli_client_cmds[] = {
	{ "call", CALL_USAGE, cl_call },
	{ "screenshot", SHOT_USAGE, cl_screenshot },
	{ "mcp", MCP_USAGE, cl_mcp },
	{ NULL, NULL, NULL },
};
