/*
 * host-bridge/mc/mc.c: `bureau mission-control`: the HTTP server, its
 * token and sessions, and the routes of the page and the JSON API.
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
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

#define MC_LISTEN   "127.0.0.1:7380"
#define MC_SESSIONS 64
#define MC_COOKIE   "bureau_mc"
#define MC_BODY_MAX (1 << 16)
/* On every reply; no trailing CRLF (civetweb's additional_header adds
 * it). */
#define MC_HEADERS                                                             \
	"X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"         \
	"Content-Security-Policy: default-src 'self'; img-src 'self' data: "   \
	"blob:; connect-src 'self'; frame-ancestors 'none'"

static struct {
	unsigned char token_hash[crypto_generichash_BYTES];
	char *web;   /* the page's files */
	char *novnc; /* Debian's novnc */
	pthread_mutex_t lock;
	unsigned char sessions[MC_SESSIONS][crypto_generichash_BYTES];
	int nsessions;
} mc = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- auth ------------------------------------------------------------- */

static void
mc_hash(const char *s, size_t n, unsigned char out[crypto_generichash_BYTES])
{
	crypto_generichash(out, crypto_generichash_BYTES,
	    (const unsigned char *)s, n, NULL, 0);
}

/* Constant time in the content, as the host agent's token check. */
static int
mc_token_ok(const char *t, size_t n)
{
	unsigned char h[crypto_generichash_BYTES];

	mc_hash(t, n, h);
	return (sodium_memcmp(h, mc.token_hash, sizeof h) == 0);
}

static int
mc_session_ok(const char *sid)
{
	unsigned char h[crypto_generichash_BYTES];
	int ok = 0;

	mc_hash(sid, strlen(sid), h);
	pthread_mutex_lock(&mc.lock);
	for (int i = 0; i < mc.nsessions; i++)
		ok |= sodium_memcmp(h, mc.sessions[i], sizeof h) == 0;
	pthread_mutex_unlock(&mc.lock);
	return (ok);
}

/* A new session id (malloc'd); the oldest session goes when full. */
static char *
mc_session_new(void)
{
	char *sid = hb_random_hex(32);

	if (sid == NULL)
		return (NULL);
	pthread_mutex_lock(&mc.lock);
	if (mc.nsessions == MC_SESSIONS) {
		memmove(mc.sessions[0], mc.sessions[1],
		    sizeof mc.sessions[0] * (MC_SESSIONS - 1));
		mc.nsessions--;
	}
	mc_hash(sid, strlen(sid), mc.sessions[mc.nsessions++]);
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

/* ---- replies ---------------------------------------------------------- */

static int
mc_send(struct mg_connection *c, int status, const char *type, const void *body,
    size_t len, const char *extra)
{
	mg_printf(c,
	    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "Cache-Control: no-store\r\n" MC_HEADERS
	    "\r\n%sConnection: close\r\n\r\n",
	    status, mg_get_response_code_text(c, status), type, len,
	    extra ? extra : "");
	if (len > 0)
		mg_write(c, body, len);
	return (status);
}

/* j (stolen) as the reply's JSON body. */
static int
mc_json(struct mg_connection *c, int status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	int rv;

	json_decref(j);
	if (s == NULL)
		return (mc_send(c, 500, "application/json",
		    "{\"ok\":false,\"error\":{\"code\":\"internal\"}}", 41,
		    NULL));
	rv = mc_send(c, status, "application/json", s, strlen(s), NULL);
	free(s);
	return (rv);
}

static int mc_err(struct mg_connection *c, int status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
mc_err(struct mg_connection *c, int status, const char *code, const char *fmt,
    ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	status = mc_json(c, status,
	    json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code,
	        "message", msg ? msg : code));
	free(msg);
	return (status);
}

/* The HTTP status of an operator-socket error code. */
static int
mc_status_of(const char *code)
{
	if (strcmp(code, "not_found") == 0)
		return (404);
	if (strcmp(code, "invalid_argument") == 0 ||
	    strcmp(code, "bad_request") == 0)
		return (400);
	if (strcmp(code, "unavailable") == 0 ||
	    strcmp(code, "not_applicable") == 0)
		return (409);
	if (strcmp(code, "permission_denied") == 0)
		return (403);
	return (502);
}

/* The request body as a JSON object (empty body: {}), or NULL after
 * replying 400. */
static json_t *
mc_body(struct mg_connection *c, int *status)
{
	char *buf = malloc(MC_BODY_MAX + 1);
	size_t n = 0;
	int r;
	json_t *j;
	json_error_t e;

	if (buf == NULL) {
		*status = mc_err(c, 500, "internal", "out of memory");
		return (NULL);
	}
	while (
	    n < MC_BODY_MAX && (r = mg_read(c, buf + n, MC_BODY_MAX - n)) > 0)
		n += (size_t)r;
	if (n >= MC_BODY_MAX) {
		free(buf);
		*status = mc_err(c, 413, "too_large",
		    "request body larger than %d bytes", MC_BODY_MAX);
		return (NULL);
	}
	buf[n] = '\0';
	j = n == 0 ? json_object() :
	             json_loadb(buf, n, JSON_REJECT_DUPLICATES, &e);
	free(buf);
	if (!json_is_object(j)) {
		json_decref(j);
		*status = mc_err(c, 400, "bad_request",
		    "the request body must be a JSON object");
		return (NULL);
	}
	return (j);
}

/* ---- static files ------------------------------------------------------ */

/* Serve dir/rel: rel is checked to be a plain relative path first. */
static int
mc_file(struct mg_connection *c, const char *dir, const char *rel)
{
	char *path;
	struct stat st;

	if (*rel == '\0' || strstr(rel, "..") != NULL || rel[0] == '/' ||
	    rel[strspn(rel,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
	        "VWXYZ0123456789._-/")] != '\0')
		return (mc_err(c, 404, "not_found", "no such file"));
	path = hb_fmt("%s/%s", dir, rel);
	if (path == NULL || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		free(path);
		return (mc_err(c, 404, "not_found", "no such file"));
	}
	mg_send_file(c, path);
	free(path);
	return (200);
}

/* ---- the API ------------------------------------------------------------ */

/* The snapshot the page's event stream sends, shared by every stream
 * for a moment so that N open pages cost one round of operator calls. */
static char *
mc_state_text(void)
{
	static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
	static char *cached;
	static long long at;
	char *r;

	pthread_mutex_lock(&lk);
	if (cached == NULL || hb_now_ms() - at > 250) {
		json_t *j = json_pack("{s:o, s:o}", "desktops", mc_desktops(),
		    "approvals", mc_approvals());
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		json_decref(j);
		if (s != NULL) {
			free(cached);
			cached = s;
			at = hb_now_ms();
		}
	}
	r = cached ? strdup(cached) : NULL;
	pthread_mutex_unlock(&lk);
	return (r);
}

/* GET /api/events: server-sent events, one "state" event whenever the
 * snapshot changes. Holds this worker until the page goes. */
static int
mc_events(struct mg_connection *c)
{
	char *last = NULL;
	long long ping = hb_now_ms();

	mg_printf(c,
	    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	    "Cache-Control: no-store\r\nConnection: close\r\n\r\n");
	for (;;) {
		char *s = mc_state_text();
		int r = 1;

		if (s != NULL && (last == NULL || strcmp(s, last) != 0)) {
			r = mg_printf(c, "event: state\ndata: %s\n\n", s);
			free(last);
			last = s;
			ping = hb_now_ms();
		} else {
			free(s);
			if (hb_now_ms() - ping > 15000) {
				r = mg_printf(c, ": ping\n\n");
				ping = hb_now_ms();
			}
		}
		if (r <= 0)
			break;
		usleep(300000);
	}
	free(last);
	return (200);
}

static int
mc_lifecycle(struct mg_connection *c, const char *name, const char *what)
{
	json_t *body;
	char *argv[6], *out = NULL;
	int n = 0, st, rv;

	if ((body = mc_body(c, &st)) == NULL)
		return (st);
	argv[n++] = (char *)what;
	if (strcmp(what, "stop") == 0 &&
	    json_is_true(json_object_get(body, "shutdown")))
		argv[n++] = "--shutdown";
	argv[n++] = (char *)name;
	if (strcmp(what, "snapshot") == 0) {
		const char *tag = json_string_value(
		    json_object_get(body, "tag"));
		if (tag == NULL || *tag == '\0' || *tag == '-') {
			json_decref(body);
			return (mc_err(c, 400, "invalid_argument",
			    "field 'tag' must be a snapshot name (a string)"));
		}
		argv[n++] = (char *)tag;
	}
	argv[n] = NULL;
	rv = mc_run_self(argv, &out);
	json_decref(body);
	if (rv != 0) {
		st = mc_err(c, out && strstr(out, "does not apply") ? 409 : 500,
		    out && strstr(out, "does not apply") ? "not_applicable" :
		                                           "failed",
		    "bureau %s %s: %s", what, name, out ? out : "failed");
		free(out);
		return (st);
	}
	st = mc_json(c, 200,
	    json_pack("{s:b, s:s}", "ok", 1, "output", out ? out : ""));
	free(out);
	return (st);
}

static int
mc_load(struct mg_connection *c, const char *name, struct desktop **d)
{
	char *cause = NULL;
	int st;

	if (store_valid_name(name, &cause) != 0 ||
	    desktop_load(name, d, &cause) != 0) {
		st = mc_err(c, 404, "not_found", "%s", cause);
		free(cause);
		return (st);
	}
	return (0);
}

/* POST /api/desktops/NAME/takeover {"on": bool} */
static int
mc_takeover(struct mg_connection *c, const char *name)
{
	struct desktop *d = NULL;
	json_t *body, *on, *r = NULL;
	const char *code;
	char *cause = NULL;
	int st;

	if ((body = mc_body(c, &st)) == NULL)
		return (st);
	on = json_object_get(body, "on");
	if (!json_is_boolean(on)) {
		json_decref(body);
		return (mc_err(c, 400, "invalid_argument",
		    "field 'on' must be true or false"));
	}
	if ((st = mc_load(c, name, &d)) != 0) {
		json_decref(body);
		return (st);
	}
	if (mc_op(d, json_pack("{s:s, s:O}", "op", "takeover", "on", on), &r,
	        &code, &cause) != 0)
		st = mc_err(c, mc_status_of(code), code, "%s", cause);
	else
		st = mc_json(c, 200, r);
	free(cause);
	json_decref(body);
	desktop_free(d);
	return (st);
}

/* GET /api/desktops/NAME/screenshot: the screen now, as the daemon's PNG. */
static int
mc_screenshot(struct mg_connection *c, const char *name)
{
	struct desktop *d = NULL;
	json_t *r = NULL;
	const char *code, *b64;
	char *cause = NULL;
	unsigned char *png;
	size_t len, max;
	int st;

	if ((st = mc_load(c, name, &d)) != 0)
		return (st);
	if (mc_op(d, json_pack("{s:s}", "op", "screenshot"), &r, &code,
	        &cause) != 0) {
		st = mc_err(c, mc_status_of(code), code, "%s", cause);
		goto out;
	}
	b64 = json_string_value(
	    json_object_get(json_object_get(r, "image"), "data"));
	max = b64 ? strlen(b64) / 4 * 3 + 3 : 0;
	if (b64 == NULL || (png = malloc(max)) == NULL ||
	    sodium_base642bin(png, max, b64, strlen(b64), NULL, &len, NULL,
	        sodium_base64_VARIANT_ORIGINAL) != 0) {
		st = mc_err(c, 502, "io_error",
		    "the daemon sent no screenshot");
		goto out;
	}
	st = mc_send(c, 200, "image/png", png, len, NULL);
	free(png);
out:
	free(cause);
	json_decref(r);
	desktop_free(d);
	return (st);
}

/* GET /api/desktops/NAME/thumbnail: the live view's latest frame. */
static int
mc_thumbnail(struct mg_connection *c, const char *name)
{
	void *img;
	size_t len;
	const char *mime;
	long seq;
	int st;

	if (mc_live_image(name, &img, &len, &mime, &seq) != 0)
		return (mc_err(c, 404, "not_found",
		    "no frame of desktop '%s' yet", name));
	st = mc_send(c, 200, mime, img, len, NULL);
	free(img);
	return (st);
}

/* GET /api/desktops/NAME/audit/N.png: an action's settled screenshot. */
static int
mc_audit_shot(struct mg_connection *c, const char *name, const char *file)
{
	struct desktop *d = NULL;
	char *dir;
	int st;

	if ((st = mc_load(c, name, &d)) != 0)
		return (st);
	dir = desktop_path(d, "audit");
	st = dir ? mc_file(c, dir, file) : 500;
	free(dir);
	desktop_free(d);
	return (st);
}

/* POST /api/approvals/DESKTOP/ID {"allow": bool, "reason": "..."} */
static int
mc_decide(struct mg_connection *c, const char *name, const char *id)
{
	struct desktop *d = NULL;
	json_t *body, *allow, *reason, *req, *r = NULL;
	const char *code;
	char *cause = NULL;
	int st;

	if ((body = mc_body(c, &st)) == NULL)
		return (st);
	allow = json_object_get(body, "allow");
	reason = json_object_get(body, "reason");
	if (!json_is_boolean(allow) ||
	    (reason != NULL && !json_is_string(reason))) {
		const char *msg = !json_is_boolean(allow) ?
		    "field 'allow' must be true or false" :
		    "field 'reason' must be a string";

		json_decref(body);
		return (mc_err(c, 400, "invalid_argument", "%s", msg));
	}
	if ((st = mc_load(c, name, &d)) != 0) {
		json_decref(body);
		return (st);
	}
	req = json_pack("{s:s, s:s, s:O}", "op", "decide", "approval", id,
	    "allow", allow);
	if (req != NULL && reason != NULL)
		json_object_set(req, "reason", reason);
	if (mc_op(d, req, &r, &code, &cause) != 0)
		st = mc_err(c, mc_status_of(code), code, "%s", cause);
	else
		st = mc_json(c, 200, r);
	free(cause);
	json_decref(body);
	desktop_free(d);
	return (st);
}

/* Split "/a/b/c" after prefix into at most n parts (in buf). */
static int
mc_split(const char *uri, const char *prefix, char *buf, size_t len,
    char **parts, int n)
{
	size_t pl = strlen(prefix);
	int k = 0;
	char *s, *save = NULL;

	if (strncmp(uri, prefix, pl) != 0 || strlen(uri + pl) >= len)
		return (-1);
	strcpy(buf, uri + pl);
	for (s = strtok_r(buf, "/", &save); s != NULL;
	     s = strtok_r(NULL, "/", &save)) {
		if (k == n)
			return (-1);
		parts[k++] = s;
	}
	return (k);
}

static int
mc_api(struct mg_connection *c, const char *method, const char *uri,
    const char *query)
{
	char buf[512], *p[4], *cause = NULL, v[32];
	int get = strcmp(method, "GET") == 0,
	    post = !get && strcmp(method, "POST") == 0, n, st;
	json_t *j;

	if (strcmp(uri, "/api/desktops") == 0 && get)
		return (mc_json(c, 200, mc_desktops()));
	if (strcmp(uri, "/api/approvals") == 0 && get)
		return (mc_json(c, 200, mc_approvals()));
	if (strcmp(uri, "/api/events") == 0 && get)
		return (mc_events(c));
	if ((n = mc_split(uri, "/api/approvals/", buf, sizeof buf, p, 4)) ==
	        2 &&
	    post)
		return (mc_decide(c, p[0], p[1]));
	n = mc_split(uri, "/api/desktops/", buf, sizeof buf, p, 4);
	if (n == 1 && get) {
		if ((j = mc_desktop(p[0], 1, &cause)) == NULL) {
			st = mc_err(c, 404, "not_found", "%s", cause);
			free(cause);
			return (st);
		}
		return (mc_json(c, 200, j));
	}
	if (n == 2 && post) {
		if (strcmp(p[1], "start") == 0 || strcmp(p[1], "stop") == 0 ||
		    strcmp(p[1], "pause") == 0 || strcmp(p[1], "resume") == 0 ||
		    strcmp(p[1], "snapshot") == 0) {
			if (store_valid_name(p[0], &cause) != 0) {
				st = mc_err(c, 404, "not_found", "%s", cause);
				free(cause);
				return (st);
			}
			return (mc_lifecycle(c, p[0], p[1]));
		}
		if (strcmp(p[1], "takeover") == 0)
			return (mc_takeover(c, p[0]));
	}
	if (n == 2 && get && strcmp(p[1], "screenshot") == 0)
		return (mc_screenshot(c, p[0]));
	if (n == 2 && get && strcmp(p[1], "thumbnail") == 0)
		return (mc_thumbnail(c, p[0]));
	if (n == 3 && get && strcmp(p[1], "audit") == 0)
		return (mc_audit_shot(c, p[0], p[2]));
	if (n == 2 && get && strcmp(p[1], "log") == 0) {
		long long since = 0;
		char *end;

		if (query != NULL &&
		    mg_get_var(query, strlen(query), "since", v, sizeof v) >
		        0) {
			errno = 0;
			since = strtoll(v, &end, 10);
			if (errno != 0 || *end != '\0' || since < 0)
				return (mc_err(c, 400, "invalid_argument",
				    "query 'since' must be a sequence number "
				    "(0 or more)"));
		}
		if ((j = mc_log(p[0], since, &cause)) == NULL) {
			st = mc_err(c, 404, "not_found", "%s", cause);
			free(cause);
			return (st);
		}
		return (mc_json(c, 200, j));
	}
	if (!get && !post)
		return (mc_err(c, 405, "bad_request", "method '%s' not allowed",
		    method));
	return (mc_err(c, 404, "not_found", "no API at '%s %s'", method, uri));
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
		return (mc_err(c, 401, "unauthorized",
		    "wrong or missing token (bureau mission-control "
		    "--print-url prints the login URL)"));
	if ((sid = mc_session_new()) == NULL)
		return (mc_err(c, 500, "internal", "no random bytes"));
	hdr = hb_fmt("Set-Cookie: " MC_COOKIE
	             "=%s; Path=/; HttpOnly; SameSite=Strict\r\n"
	             "Location: /\r\n",
	    sid);
	free(sid);
	st = mc_send(c, 302, "text/plain", "", 0, hdr);
	free(hdr);
	return (st);
}

static int
mc_request(struct mg_connection *c)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	const char *m = ri->request_method, *uri = ri->local_uri;
	int auth, ws = mg_get_header(c, "Upgrade") != NULL;

	if (strcmp(uri, "/login") == 0 && strcmp(m, "GET") == 0)
		return (mc_login(c, ri->query_string));
	if ((auth = mc_auth(c)) == AUTH_NONE)
		return (mc_err(c, 401, "unauthorized",
		    "log in first: open the URL `bureau mission-control "
		    "--print-url` prints, or send Authorization: Bearer "
		    "TOKEN"));
	/* A browser sends the cookie with whatever page asks: a change, or
	 * a WebSocket, must come from our own page (SameSite=Strict is the
	 * first guard, this the second). The bearer token is never sent by
	 * a browser on its own. */
	if (auth == AUTH_COOKIE && (strcmp(m, "GET") != 0 || ws) &&
	    !mc_same_origin(c))
		return (mc_err(c, 403, "permission_denied",
		    "cross-origin request refused (Origin must be this "
		    "server)"));
	if (ws) {
		if (strncmp(uri, "/vnc/", 5) == 0 && mc_live_known(uri + 5))
			return (0); /* on to the WebSocket handler */
		return (
		    mc_err(c, 404, "not_found", "no live view at '%s'", uri));
	}
	if (strncmp(uri, "/api/", 5) == 0)
		return (mc_api(c, m, uri, ri->query_string));
	if (strcmp(m, "GET") != 0)
		return (mc_err(c, 405, "bad_request", "method '%s' not allowed",
		    m));
	if (strcmp(uri, "/") == 0)
		return (mc_file(c, mc.web, "index.html"));
	if (strncmp(uri, "/desktop/", 9) == 0)
		return (mc_file(c, mc.web, "desktop.html"));
	if (strncmp(uri, "/novnc/", 7) == 0)
		return (mc_file(c, mc.novnc, uri + 7));
	if (strncmp(uri, "/static/", 8) == 0)
		return (mc_file(c, mc.web, uri + 8));
	return (mc_err(c, 404, "not_found", "nothing at '%s'", uri));
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
	const char *cands[] = { "%s/../web/mission-control",
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

static int
cmd_mission_control(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "print-url", no_argument, NULL, 'p' },
		{ "insecure", no_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen = MC_LISTEN, *tfile = NULL, *colon;
	char *token, *cause = NULL, host[256], *ports, *url;
	int c, print = 0, insecure = 0, port;
	struct mg_callbacks cb = { 0 };
	struct mg_context *ctx;
	sigset_t sigs;
	long lp;

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
	colon = strrchr(listen, ':');
	if (colon == NULL || colon == listen ||
	    (size_t)(colon - listen) >= sizeof host ||
	    hb_parse_int("--listen port", colon + 1, 1, 65535, &lp, &cause) !=
	        0) {
		fprintf(stderr,
		    "bureau mission-control: --listen '%s' must be HOST:PORT "
		    "(%s)\n",
		    listen, cause ? cause : "no port");
		free(cause);
		return (2);
	}
	port = (int)lp;
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
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
	mc_hash(token, strlen(token), mc.token_hash);
	url = hb_fmt("http://%s:%d/login?token=%s",
	    strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host, port, token);
	if (print) {
		printf("%s\n", url);
		free(url);
		free(token);
		return (0);
	}
	mc.web = mc_web_dir();
	mc.novnc = strdup(getenv("BUREAU_NOVNC") ? getenv("BUREAU_NOVNC") :
	                                           "/usr/share/novnc");
	ports = hb_fmt("%s:%d", host, port);
	{
		/* The page's own files (civetweb sends them) get the same
		 * guards as the API's replies: never framed by another site,
		 * nothing but this server's scripts. */
		const char *o[] = { "listening_ports", ports, "num_threads",
			"48", "enable_keep_alive", "no", "request_timeout_ms",
			"3600000", "additional_header", MC_HEADERS, NULL };
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

const struct cli_cmd cli_mc_cmds[] = {
	{ "mission-control",
	    "mission-control [--listen 127.0.0.1:7380] [--token-file F] "
	    "[--print-url] [--insecure]",
	    cmd_mission_control },
	{ NULL, NULL, NULL },
};
