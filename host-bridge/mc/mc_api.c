/*
 * host-bridge/mc/mc_api.c: the JSON API under the page (docs/
 * mission-control.md), on mc_desk.c's desktops and mc_live.c's frames.
 */
#include <civetweb.h>
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/desk/desk.h"
#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

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
 * snapshot changes. Holds this worker until the page goes: one of
 * MC_STREAMS_MAX (mc.h). */
static int
mc_events(struct mg_connection *c)
{
	char *last = NULL;
	long long ping = hb_now_ms();

	if (mc_stream_enter() != 0)
		return (mc_err(c, 503, bureau_error_name(BUREAU_EBUSY),
		    "%d pages are open already: close one (the API still "
		    "answers)",
		    MC_STREAMS_MAX));
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
	mc_stream_leave();
	return (200);
}

/* The HTTP status of a lifecycle error (desk.h's codes). */
static int
mc_desk_status(int code)
{
	switch (code) {
	case DESK_EINVAL:
		return (400);
	case DESK_ENOTFOUND:
		return (404);
	case DESK_EEXIST:
	case DESK_EBUSY:
	case DESK_ENOTAPPLY:
		return (409);
	case DESK_EQUOTA:
		return (429);
	case DESK_EUNREACH:
		return (502);
	default:
		return (500);
	}
}

/* POST /api/desktops/NAME/start|stop|pause|resume|snapshot: the
 * lifecycle library's call, its result in words ("output", as the CLI
 * says it). */
static int
mc_lifecycle(struct mg_connection *c, const char *name, const char *what)
{
	struct desk_err e = { 0 };
	struct desk_start_res sr = { 0 };
	struct desk_stop_res pr = { 0 };
	struct desk_snap_res nr = { 0 };
	struct desk_resume_res rr = { 0 };
	const char *tag = NULL;
	char *out = NULL;
	json_t *body;
	int st, rv;

	if ((body = mc_body(c, &st)) == NULL)
		return (st);
	if (strcmp(what, "snapshot") == 0) {
		tag = json_string_value(json_object_get(body, "tag"));
		if (tag == NULL || *tag == '\0' || *tag == '-') {
			json_decref(body);
			return (mc_err(c, 400, bureau_error_name(BUREAU_EINVAL),
			    "field 'tag' must be a snapshot name (a string)"));
		}
	}
	if (strcmp(what, "start") == 0) {
		rv = desk_start(name, NULL, &sr, &e);
		out = rv == 0 ? desk_start_text(name, 0, &sr) : NULL;
	} else if (strcmp(what, "stop") == 0) {
		rv = desk_stop(name,
		    json_is_true(json_object_get(body, "shutdown")) ?
		        DESK_STOP_SHUTDOWN :
		        DESK_STOP_SAVE,
		    120, &pr, &e);
		out = rv == 0 ? desk_stop_text(name, &pr) : NULL;
	} else if (strcmp(what, "pause") == 0) {
		rv = desk_pause(name, &e);
		out = rv == 0 ? hb_fmt("paused desktop '%s'", name) : NULL;
	} else if (strcmp(what, "resume") == 0) {
		rv = desk_resume(name, &rr, &e);
		out = rv == 0 ? hb_fmt("resumed desktop '%s'", name) : NULL;
	} else {
		rv = desk_snapshot(name, tag, &nr, &e);
		out = rv == 0 ? desk_snap_text(name, tag, 0, &nr) : NULL;
	}
	if (rv != 0)
		st = mc_err(c, mc_desk_status(e.code), desk_err_name(e.code),
		    "%s", e.cause ? e.cause : "failed");
	else
		st = mc_json(c, 200,
		    json_pack("{s:b, s:s}", "ok", 1, "output", out ? out : ""));
	free(out);
	desk_err_clear(&e);
	desk_start_res_clear(&sr);
	desk_stop_res_clear(&pr);
	desk_snap_res_clear(&nr);
	free(rr.warning);
	free(rr.said);
	json_decref(body);
	return (st);
}

static int
mc_load(struct mg_connection *c, const char *name, struct desktop **d)
{
	char *cause = NULL;
	int st;

	if (store_valid_name(name, &cause) != 0 ||
	    desktop_load(name, d, &cause) != 0) {
		st = mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND), "%s",
		    cause);
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
		return (mc_err(c, 400, bureau_error_name(BUREAU_EINVAL),
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
		st = mc_err(c, 502, bureau_error_name(BUREAU_EIO),
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
		return (mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
		    "no frame of desktop '%s' yet", name));
	st = mc_send(c, 200, mime, img, len, NULL);
	free(img);
	return (st);
}

/* An audit screenshot of a desktop on another machine, from its agent
 * (agent.h's "shot", through the forwarded operator socket). */
static int
mc_remote_shot(struct mg_connection *c, const struct desktop *d,
    const char *file)
{
	json_t *r = NULL;
	char *cause = NULL;
	const char *b64, *code = NULL;
	unsigned char *png = NULL;
	size_t len = 0, blen;
	int st;

	if (mc_op(d, json_pack("{s:s, s:s}", "op", "shot", "file", file), &r,
	        &code, &cause) != 0) {
		st = mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND), "%s",
		    cause);
		free(cause);
		return (st);
	}
	b64 = json_string_value(json_object_get(r, "png"));
	blen = b64 ? strlen(b64) : 0;
	if (b64 == NULL || (png = malloc(blen / 4 * 3 + 3)) == NULL ||
	    sodium_base642bin(png, blen / 4 * 3 + 3, b64, blen, NULL, &len,
	        NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
		json_decref(r);
		free(png);
		return (mc_err(c, 500, bureau_error_name(BUREAU_EINTERNAL),
		    "the agent of '%s' sent no screenshot", d->name));
	}
	json_decref(r);
	st = mc_send(c, 200, "image/png", png, len, NULL);
	free(png);
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
	if (d->remote_dir != NULL) { /* asked of its agent there */
		st = mc_remote_shot(c, d, file);
		desktop_free(d);
		return (st);
	}
	dir = desktop_path(d, "audit");
	st = dir ? mc_file(c, dir, file) : 500;
	free(dir);
	desktop_free(d);
	return (st);
}

/* POST /api/approvals/DESKTOP/ID {"allow": bool, "reason": "..."}, or
 * {"answer": "..."} for the agent's question. */
static int
mc_decide(struct mg_connection *c, const char *name, const char *id)
{
	struct desktop *d = NULL;
	json_t *body, *allow, *reason, *answer, *req, *r = NULL;
	const char *code;
	char *cause = NULL;
	int st;

	if ((body = mc_body(c, &st)) == NULL)
		return (st);
	allow = json_object_get(body, "allow");
	reason = json_object_get(body, "reason");
	answer = json_object_get(body, "answer");
	if ((answer == NULL && !json_is_boolean(allow)) ||
	    (answer != NULL && (!json_is_string(answer) || allow != NULL)) ||
	    (reason != NULL && !json_is_string(reason))) {
		const char *msg = answer != NULL && allow != NULL ?
		    "give 'answer' (a question) or 'allow' (an approval), not "
		    "both" :
		    answer != NULL && !json_is_string(answer) ?
		    "field 'answer' must be a string" :
		    !json_is_boolean(allow) ?
		    "field 'allow' must be true or false (or give 'answer' to "
		    "a question)" :
		    "field 'reason' must be a string";

		json_decref(body);
		return (mc_err(c, 400, bureau_error_name(BUREAU_EINVAL), "%s",
		    msg));
	}
	if ((st = mc_load(c, name, &d)) != 0) {
		json_decref(body);
		return (st);
	}
	if (answer != NULL)
		req = json_pack("{s:s, s:s, s:O}", "op", "answer", "approval",
		    id, "text", answer);
	else
		req = json_pack("{s:s, s:s, s:O}", "op", "decide", "approval",
		    id, "allow", allow);
	if (req != NULL && reason != NULL && answer == NULL)
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

/* 0 when name is a desktop of the store, else the 404 sent (mc_load's). */
static int
mc_known(struct mg_connection *c, const char *name)
{
	struct desktop *d = NULL;
	int st = mc_load(c, name, &d);

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

int
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
		return ((st = mc_known(c, p[0])) != 0 ?
		        st :
		        mc_decide(c, p[0], p[1]));
	n = mc_split(uri, "/api/desktops/", buf, sizeof buf, p, 4);
	/* Every route of a desktop names one that exists before anything
	 * runs for it (a thumbnail started a live view's thread and socket
	 * for any name). */
	if (n >= 1 && (st = mc_known(c, p[0])) != 0)
		return (st);
	if (n == 1 && get) {
		if ((j = mc_desktop(p[0], 1, &cause)) == NULL) {
			st = mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
			    "%s", cause);
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
				st = mc_err(c, 404,
				    bureau_error_name(BUREAU_ENOTFOUND), "%s",
				    cause);
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
				return (mc_err(c, 400,
				    bureau_error_name(BUREAU_EINVAL),
				    "query 'since' must be a sequence number "
				    "(0 or more)"));
		}
		if ((j = mc_log(p[0], since, &cause)) == NULL) {
			st = mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
			    "%s", cause);
			free(cause);
			return (st);
		}
		return (mc_json(c, 200, j));
	}
	if (!get && !post)
		return (mc_err(c, 405, bureau_error_name(BUREAU_EBADREQ),
		    "method '%s' not allowed", method));
	return (mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
	    "no API at '%s %s'", method, uri));
}
