/*
 * host-bridge/mc/mc.c: `bureau mission-control`: the HTTP server, its
 * token and sessions, and the routes of the page (the API's are in
 * mc_api.c, the replies in mc_http.c).
 *
 * Why civetweb and not nng's own HTTP server: nng 1.5's WebSocket
 * listener upgrades a connection before any code of ours sees its
 * headers, so an unauthenticated WebSocket could not get a 401 (the
 * contract), and its HTTP handlers have no way to stream server-sent
 * events. civetweb (Debian's libcivetweb-dev, MIT) lets one callback see
 * every request, WebSocket upgrades included, before anything is
 * answered, and serves each connection on its own thread.
 */
#include <arpa/inet.h>
#include <civetweb.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/token.h"
#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

#define MC_LISTEN   "127.0.0.1:7380"
#define MC_SESSIONS 64
#define MC_COOKIE   "bureau_mc"
/* A session unused this long ends ($BUREAU_MC_SESSION_IDLE, seconds). */
#define MC_SESSION_IDLE (12 * 3600L)

static struct {
	unsigned char token_hash[TOKEN_HASH_BYTES];
	char *web;    /* the page's files */
	char *novnc;  /* Debian's novnc */
	int insecure; /* --insecure: any Host header */
	long idle;    /* seconds a session may go unused */
	pthread_mutex_t lock;
	struct {
		unsigned char hash[TOKEN_HASH_BYTES];
		time_t used; /* CLOCK_MONOTONIC seconds of its last request */
	} sessions[MC_SESSIONS];
	int nsessions;
} mc = { .lock = PTHREAD_MUTEX_INITIALIZER, .idle = MC_SESSION_IDLE };

static time_t
mc_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec);
}

/* Forget session i; lock held. */
static void
mc_session_drop(int i)
{
	memmove(&mc.sessions[i], &mc.sessions[i + 1],
	    sizeof mc.sessions[0] * (size_t)(mc.nsessions - i - 1));
	mc.nsessions--;
}

static int mc_loopback(const char *host);

static atomic_int mc_streams; /* event streams and live views open */

int
mc_stream_enter(void)
{
	if (atomic_fetch_add(&mc_streams, 1) >= MC_STREAMS_MAX) {
		atomic_fetch_sub(&mc_streams, 1);
		return (-1);
	}
	return (0);
}

void
mc_stream_leave(void)
{
	atomic_fetch_sub(&mc_streams, 1);
}

/* ---- auth ------------------------------------------------------------- */

/* Constant time in the content (common/token.h). */
static int
mc_token_ok(const char *t, size_t n)
{
	return (token_check(mc.token_hash, t, n));
}

/*
 * Is sid a live session? One unused for mc.idle seconds has ended (and
 * goes); a live one counts as used now. Every session is compared, in
 * constant time, whichever matches.
 */
static int
mc_session_ok(const char *sid)
{
	unsigned char h[TOKEN_HASH_BYTES];
	time_t now = mc_mono();
	int found = -1;

	token_hash(sid, strlen(sid), h);
	pthread_mutex_lock(&mc.lock);
	for (int i = 0; i < mc.nsessions; i++)
		if (token_hash_equal(h, mc.sessions[i].hash))
			found = i;
	if (found >= 0 && now - mc.sessions[found].used > mc.idle) {
		mc_session_drop(found);
		found = -1;
	} else if (found >= 0)
		mc.sessions[found].used = now;
	pthread_mutex_unlock(&mc.lock);
	return (found >= 0);
}

/* End the session sid (logout); no such session is no error. */
static void
mc_session_end(const char *sid)
{
	unsigned char h[TOKEN_HASH_BYTES];

	token_hash(sid, strlen(sid), h);
	pthread_mutex_lock(&mc.lock);
	for (int i = 0; i < mc.nsessions; i++)
		if (token_hash_equal(h, mc.sessions[i].hash)) {
			mc_session_drop(i);
			break;
		}
	pthread_mutex_unlock(&mc.lock);
}

/* A new session id (malloc'd); the oldest session goes when full. */
static char *
mc_session_new(void)
{
	char *sid = hb_random_hex(32);

	if (sid == NULL)
		return (NULL);
	pthread_mutex_lock(&mc.lock);
	if (mc.nsessions == MC_SESSIONS)
		mc_session_drop(0);
	token_hash(sid, strlen(sid), mc.sessions[mc.nsessions].hash);
	mc.sessions[mc.nsessions++].used = mc_mono();
	pthread_mutex_unlock(&mc.lock);
	return (sid);
}

enum { AUTH_NONE, AUTH_COOKIE, AUTH_BEARER };

static int
mc_auth(struct mg_connection *c)
{
	const char *h = mg_get_header(c, "Authorization");
	const char *ck = mg_get_header(c, "Cookie");
	char sid[128];

	if (h != NULL && strncasecmp(h, "Bearer ", 7) == 0)
		return (mc_token_ok(h + 7, strlen(h + 7)) ? AUTH_BEARER :
		                                            AUTH_NONE);
	if (ck != NULL && mg_get_cookie(ck, MC_COOKIE, sid, sizeof sid) > 0 &&
	    mc_session_ok(sid))
		return (AUTH_COOKIE);
	return (AUTH_NONE);
}

/* A request the browser made for our own page: its Origin is this
 * server (scheme and Host). Cross-site requests carry their own. */
static int
mc_same_origin(struct mg_connection *c)
{
	const char *o = mg_get_header(c, "Origin");
	const char *host = mg_get_header(c, "Host");

	if (o == NULL || host == NULL)
		return (0);
	return (strncmp(o, "http://", 7) == 0 && strcmp(o + 7, host) == 0);
}

/* ---- every request ---------------------------------------------------- */

static int
mc_login(struct mg_connection *c, const char *query)
{
	char tok[256], *sid, *hdr;
	int n, st;

	n = query ? mg_get_var(query, strlen(query), "token", tok, sizeof tok) :
	            -1;
	if (n <= 0 || !mc_token_ok(tok, (size_t)n))
		return (mc_err(c, 401, bureau_error_name(BUREAU_EUNAUTH),
		    "wrong or missing token (bureau mission-control "
		    "--print-url prints the login URL)"));
	if ((sid = mc_session_new()) == NULL)
		return (mc_err(c, 500, bureau_error_name(BUREAU_EINTERNAL),
		    "no random bytes"));
	hdr = hb_fmt("Set-Cookie: " MC_COOKIE
	             "=%s; Path=/; HttpOnly; SameSite=Strict\r\n"
	             "Location: /\r\n",
	    sid);
	free(sid);
	st = mc_send(c, 302, "text/plain", "", 0, hdr);
	free(hdr);
	return (st);
}

/* POST /logout: the session ends here and the cookie in the browser. */
static int
mc_logout(struct mg_connection *c)
{
	const char *ck = mg_get_header(c, "Cookie");
	char sid[128];

	if (ck != NULL && mg_get_cookie(ck, MC_COOKIE, sid, sizeof sid) > 0)
		mc_session_end(sid);
	return (mc_send(c, 200, "application/json", "{\"ok\":true}", 11,
	    "Set-Cookie: " MC_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; "
	    "Max-Age=0\r\n"));
}

/*
 * Is the Host header a loopback name (localhost, 127.x.y.z, [::1], with
 * or without a port)? A page of another site that a DNS name of its own
 * points at 127.0.0.1 (DNS rebinding) sends its own name: refused, so it
 * can never read this server's answers. --insecure lets any name in.
 */
static int
mc_host_ok(struct mg_connection *c)
{
	const char *h = mg_get_header(c, "Host");
	char name[256];
	size_t n;

	if (mc.insecure)
		return (1);
	if (h == NULL || (n = strlen(h)) == 0 || n >= sizeof name)
		return (0);
	if (h[0] == '[') {
		const char *e = strchr(h, ']');
		return (e != NULL && (size_t)(e - h) == 4 &&
		    strncmp(h, "[::1]", 5) == 0 &&
		    (e[1] == '\0' || e[1] == ':'));
	}
	memcpy(name, h, n + 1);
	name[strcspn(name, ":")] = '\0';
	return (mc_loopback(name));
}

static int
mc_request(struct mg_connection *c)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	const char *m = ri->request_method, *uri = ri->local_uri;
	int auth, ws = mg_get_header(c, "Upgrade") != NULL;

	if (!mc_host_ok(c))
		return (mc_err(c, 421, bureau_error_name(BUREAU_EPERM),
		    "Host header must name this machine's loopback "
		    "(localhost, 127.0.0.1, [::1]); Mission Control was not "
		    "started with --insecure"));
	if (strcmp(uri, "/login") == 0 && strcmp(m, "GET") == 0)
		return (mc_login(c, ri->query_string));
	if ((auth = mc_auth(c)) == AUTH_NONE)
		return (mc_err(c, 401, bureau_error_name(BUREAU_EUNAUTH),
		    "log in first: open the URL `bureau mission-control "
		    "--print-url` prints, or send Authorization: Bearer "
		    "TOKEN"));
	/* A browser sends the cookie with whatever page asks: a change, or
	 * a WebSocket, must come from our own page (SameSite=Strict is the
	 * first guard, this the second). The bearer token is never sent by
	 * a browser on its own. */
	if (auth == AUTH_COOKIE && (strcmp(m, "GET") != 0 || ws) &&
	    !mc_same_origin(c))
		return (mc_err(c, 403, bureau_error_name(BUREAU_EPERM),
		    "cross-origin request refused (Origin must be this "
		    "server)"));
	if (strcmp(uri, "/logout") == 0 && strcmp(m, "POST") == 0 && !ws)
		return (mc_logout(c));
	if (ws) {
		if (strncmp(uri, "/vnc/", 5) == 0 && mc_live_known(uri + 5))
			return (0); /* on to the WebSocket handler */
		return (mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
		    "no live view at '%s'", uri));
	}
	if (strncmp(uri, "/api/", 5) == 0)
		return (mc_api(c, m, uri, ri->query_string));
	if (strcmp(m, "GET") != 0)
		return (mc_err(c, 405, bureau_error_name(BUREAU_EBADREQ),
		    "method '%s' not allowed", m));
	if (strcmp(uri, "/") == 0)
		return (mc_file(c, mc.web, "index.html"));
	if (strncmp(uri, "/desktop/", 9) == 0)
		return (mc_file(c, mc.web, "desktop.html"));
	if (strncmp(uri, "/novnc/", 7) == 0)
		return (mc_file(c, mc.novnc, uri + 7));
	if (strncmp(uri, "/static/", 8) == 0)
		return (mc_file(c, mc.web, uri + 8));
	return (mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
	    "nothing at '%s'", uri));
}

static int
mc_log_message(const struct mg_connection *c, const char *msg)
{
	(void)c;
	fprintf(stderr, "bureau mission-control: %s\n", msg);
	return (1);
}

/* ---- the command ---------------------------------------------------- */

static char *
mc_web_dir(void)
{
	const char *env = getenv("BUREAU_MC_WEB");
	char *exe = hb_exe_dir(), *p;
	struct stat st;
	/* build/bureau and build/san/bureau (the sanitized build) in a
	 * checkout, PREFIX/bin/bureau installed */
	const char *cands[] = { "%s/../web/mission-control",
		"%s/../../web/mission-control",
		"%s/../share/bureau/mission-control", NULL };

	if (env != NULL && *env != '\0')
		return (strdup(env));
	for (int i = 0; exe != NULL && cands[i] != NULL; i++) {
		p = hb_fmt(cands[i], exe);
		if (p != NULL && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			free(exe);
			return (p);
		}
		free(p);
	}
	free(exe);
	return (strdup("/usr/share/bureau/mission-control"));
}

/* The token: --token-file, else $BUREAU_HOME/mission-control.token,
 * made (0600) on first run. malloc'd. */
static char *
mc_token(const char *file, char **cause)
{
	char *home = NULL, *path = NULL, *t;
	struct stat st;

	if (file == NULL) {
		if ((home = hb_home()) == NULL || hb_mkdirs(home, 0700) != 0 ||
		    (path = hb_fmt("%s/mission-control.token", home)) == NULL) {
			*cause = hb_fmt("cannot create '%s': %s",
			    home ? home : "BUREAU_HOME", strerror(errno));
			free(home);
			return (NULL);
		}
		free(home);
		if (stat(path, &st) != 0 && errno == ENOENT) {
			char *nt = hb_random_hex(32);
			if (nt == NULL ||
			    hb_write_file(path, nt, strlen(nt), 0600, cause) !=
			        0) {
				free(nt);
				free(path);
				return (NULL);
			}
			free(nt);
		}
		file = path;
	}
	/* Whoever can read it can drive every desktop: only its owner. */
	if (lstat(file, &st) != 0) {
		*cause = hb_fmt("cannot read token file '%s': %s", file,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		*cause = !S_ISREG(st.st_mode) ?
		    hb_fmt("token file '%s' is not a regular file", file) :
		    st.st_uid != geteuid() ?
		    hb_fmt("token file '%s' belongs to uid %d, not to you "
		           "(uid %d): use a file of your own, mode 0600",
		        file, (int)st.st_uid, (int)geteuid()) :
		    hb_fmt("token file '%s' has mode %04o: others can read "
		           "it; chmod 600 '%s'",
		        file, (unsigned)(st.st_mode & 07777), file);
		free(path);
		return (NULL);
	}
	if ((t = hb_read_file(file)) == NULL) {
		*cause = hb_fmt("cannot read token file '%s': %s", file,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	t[strcspn(t, "\r\n")] = '\0';
	if (strlen(t) < 16) {
		*cause = hb_fmt("token file '%s' holds %s: use at least 16 "
		                "characters",
		    file, *t ? "a short token" : "no token");
		free(t);
		t = NULL;
	}
	free(path);
	return (t);
}

static int
mc_loopback(const char *host)
{
	struct in_addr a;

	if (strcmp(host, "localhost") == 0)
		return (1);
	return (inet_pton(AF_INET, host, &a) == 1 &&
	    (ntohl(a.s_addr) >> 24) == 127);
}

static int
mc_usage(const char *msg)
{
	fprintf(stderr,
	    "bureau mission-control: %s\nusage: bureau mission-control "
	    "[--listen 127.0.0.1:7380] [--token-file F] [--print-url] "
	    "[--insecure]\n",
	    msg);
	return (2);
}

/* --listen HOST:PORT into host and *port: 0, or 2 with the error said. */
static int
mc_listen_addr(const char *listen, char *host, size_t len, int *port)
{
	const char *colon = strrchr(listen, ':');
	char *cause = NULL;
	long lp;

	if (colon == NULL || colon == listen ||
	    (size_t)(colon - listen) >= len ||
	    hb_parse_int("--listen port", colon + 1, 1, 65535, &lp, &cause) !=
	        0) {
		fprintf(stderr,
		    "bureau mission-control: --listen '%s' must be HOST:PORT "
		    "(%s)\n",
		    listen, cause ? cause : "no port");
		free(cause);
		return (2);
	}
	*port = (int)lp;
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	return (0);
}

int
mc_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "print-url", no_argument, NULL, 'p' },
		{ "insecure", no_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen = MC_LISTEN, *tfile = NULL;
	char *token, *cause = NULL, host[256], *ports, *url, nthreads[16];
	int c, print = 0, insecure = 0, port;
	struct mg_callbacks cb = { 0 };
	struct mg_context *ctx;
	sigset_t sigs;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen = optarg;
			break;
		case 't':
			tfile = optarg;
			break;
		case 'p':
			print = 1;
			break;
		case 'i':
			insecure = 1;
			break;
		default:
			return (mc_usage("unknown option"));
		}
	}
	if (optind != argc)
		return (mc_usage("unexpected argument"));
	if (mc_listen_addr(listen, host, sizeof host, &port) != 0)
		return (2);
	if (!mc_loopback(host) && !insecure) {
		fprintf(stderr,
		    "bureau mission-control: --listen '%s' is not a loopback "
		    "address: reach it with ssh -L instead, or pass "
		    "--insecure\n",
		    listen);
		return (2);
	}
	if (sodium_init() < 0) {
		fprintf(stderr,
		    "bureau mission-control: libsodium does not "
		    "initialise\n");
		return (1);
	}
	if ((token = mc_token(tfile, &cause)) == NULL) {
		fprintf(stderr, "bureau mission-control: %s\n", cause);
		free(cause);
		return (1);
	}
	token_hash(token, strlen(token), mc.token_hash);
	url = hb_fmt("http://%s:%d/login?token=%s",
	    strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host, port, token);
	if (print) {
		printf("%s\n", url);
		free(url);
		free(token);
		return (0);
	}
	mc.insecure = insecure;
	if (getenv("BUREAU_MC_SESSION_IDLE") != NULL &&
	    hb_parse_int("BUREAU_MC_SESSION_IDLE",
	        getenv("BUREAU_MC_SESSION_IDLE"), 1, 365 * 86400L, &mc.idle,
	        &cause) != 0) {
		fprintf(stderr, "bureau mission-control: %s\n", cause);
		free(cause);
		return (2);
	}
	mc.web = mc_web_dir();
	mc.novnc = strdup(getenv("BUREAU_NOVNC") ? getenv("BUREAU_NOVNC") :
	                                           "/usr/share/novnc");
	ports = hb_fmt("%s:%d", host, port);
	snprintf(nthreads, sizeof nthreads, "%d",
	    MC_STREAMS_MAX + MC_API_WORKERS);
	{
		/* The page's own files (civetweb sends them) get the same
		 * guards as the API's replies: never framed by another site,
		 * nothing but this server's scripts. request_timeout_ms bounds
		 * a request's bytes that do not come and a write that the
		 * other side does not take (civetweb's push_all: each wait
		 * for the socket to take more), so that neither holds a
		 * worker for long. A WebSocket's quiet reader is not ended by
		 * it: civetweb retries those reads (an idle screen sends a
		 * viewer nothing for hours). It was an hour. */
		const char *o[] = { "listening_ports", ports, "num_threads",
			nthreads, "enable_keep_alive", "no",
			"request_timeout_ms", "30000", "additional_header",
			MC_HEADERS,
			/* never from the browser's cache: after a logout
			 * (or a session's end) the page must come from
			 * here, past the session check (it was an hour) */
			"static_file_max_age", "0",
			/* The live view sends each frame as a WebSocket
			 * header and its data, two writes: without
			 * TCP_NODELAY the second waited for the first's
			 * delayed ACK (40 ms) on every frame, and QEMU's VNC
			 * slows its refresh while no update request is in.
			 * Measured (tests/bench/liveview_bench.py, a
			 * 1280x720 screen changing 30 times a second): 6.6
			 * fps and 190 ms from a change to the page, against
			 * noVNC on QEMU's socket's 20-21 fps and 105-121 ms;
			 * with it, level with noVNC. */
			"tcp_nodelay", "1", NULL };
		signal(SIGPIPE, SIG_IGN);
		sigemptyset(&sigs);
		sigaddset(&sigs, SIGTERM);
		sigaddset(&sigs, SIGINT);
		sigaddset(&sigs, SIGHUP);
		pthread_sigmask(SIG_BLOCK, &sigs, NULL);
		mg_init_library(MG_FEATURES_WEBSOCKET);
		cb.begin_request = mc_request;
		cb.log_message = mc_log_message;
		if ((ctx = mg_start(&cb, NULL, o)) == NULL) {
			fprintf(stderr,
			    "bureau mission-control: cannot listen on '%s' "
			    "(in use?)\n",
			    ports);
			return (1);
		}
	}
	mc_rfb_register(ctx);
	printf("Mission Control: %s\n"
	       "From another machine: ssh -L %d:127.0.0.1:%d THIS-HOST, then "
	       "open the URL there.\n"
	       "(bureau mission-control --print-url prints it again.)\n",
	    url, port, port);
	fflush(stdout);
	free(url);
	sodium_memzero(token, strlen(token));
	free(token);
	while (sigwait(&sigs, &c) != 0)
		;
	fprintf(stderr, "bureau mission-control: signal %d, exiting\n", c);
	/* Open event streams and views hold workers: the process ends
	 * them (mg_stop would wait for each). */
	_exit(0);
}
