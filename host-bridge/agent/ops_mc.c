/*
 * host-bridge/agent/ops_mc.c: Mission Control's operator-socket ops (see
 * ops_mc.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/agent/ops_mc.h"
#include "host-bridge/util/util.h"

/* A screenshot or an input action is quick; a daemon that is gone must
 * not hold an operator worker for long. */
#define MC_CALL_S 15.0
/* `info` is a quick request: a daemon that does not answer it within
 * this is not up (a booting desktop), and an operator worker must not
 * wait longer on it. */
#define MC_INFO_S 3.0

int
ops_mc_is(const char *op)
{
	return (strcmp(op, "screenshot") == 0 || strcmp(op, "input") == 0 ||
	    strcmp(op, "info") == 0);
}

/* The reply of a protocol error (a BUREAU_E* code). */
static char *
mc_error(int code, const char *msg)
{
	json_t *r = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code",
	    bureau_error_name(code), "message", msg);
	char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;

	json_decref(r);
	return (s != NULL ? s : strdup("{\"ok\":false}"));
}

/* Forward req (borrowed) to the daemon; the reply text (malloc'd). */
static char *
mc_forward(bureau_client *guest, json_t *req, double timeout_s)
{
	char *text = json_dumps(req, JSON_COMPACT), *reply = NULL, *r;
	int rv;

	if (text == NULL)
		return (mc_error(BUREAU_EINTERNAL, "out of memory"));
	rv = bureau_call_timeout(guest, text, timeout_s, &reply);
	free(text);
	if (reply == NULL) {
		r = hb_fmt("the daemon did not answer: %s",
		    bureau_client_error(guest));
		text = mc_error(rv == BUREAU_ETIMEOUT ? BUREAU_ETIMEOUT :
		                                        BUREAU_EIO,
		    r ? r : "no reply");
		free(r);
		return (text);
	}
	/* libbureau's buffer: copied so the caller frees with free(). */
	r = strdup(reply);
	bureau_free(reply);
	return (r != NULL ? r : mc_error(BUREAU_EINTERNAL, "out of memory"));
}

static char *
mc_screenshot(bureau_client *guest, json_t *req)
{
	json_t *frame = json_object_get(req, "frame"), *fwd, *r;
	char *text, *out;

	if (frame != NULL && !json_is_integer(frame))
		return (mc_error(BUREAU_EINVAL,
		    "field 'frame' must be a frame number"));
	fwd = json_pack("{s:s, s:s}", "tool", "computer", "action",
	    "screenshot");
	text = fwd ? mc_forward(guest, fwd, MC_CALL_S) : NULL;
	json_decref(fwd);
	if (text == NULL || frame == NULL)
		return (text);
	/* The daemon numbers frames, so an unchanged screen need not cross
	 * the operator socket again. */
	if ((r = json_loads(text, 0, NULL)) != NULL &&
	    json_is_true(json_object_get(r, "ok")) &&
	    json_integer_value(json_object_get(json_object_get(r, "image"),
	        "frame")) == json_integer_value(frame)) {
		json_object_del(r, "image");
		json_object_set_new(r, "frame", json_copy(frame));
		json_object_set_new(r, "unchanged", json_true());
		if ((out = json_dumps(r, JSON_COMPACT)) != NULL) {
			free(text);
			text = out;
		}
	}
	json_decref(r);
	return (text);
}

static char *
mc_input(bureau_client *guest, const char *name, int takeover, json_t *req)
{
	json_t *in = json_object_get(req, "request"), *fwd;
	const char *tool, *action;
	char *msg, *r;

	if (!json_is_object(in))
		return (mc_error(BUREAU_EINVAL,
		    "field 'request' must be a computer action (an object)"));
	tool = json_string_value(json_object_get(in, "tool"));
	action = json_string_value(json_object_get(in, "action"));
	if (tool == NULL || strcmp(tool, "computer") != 0 || action == NULL)
		return (mc_error(BUREAU_EINVAL,
		    "field 'request' must have \"tool\": \"computer\" and a "
		    "string 'action'"));
	if (!takeover) {
		msg = hb_fmt("the operator has not taken over desktop '%s': "
		             "take over first",
		    name);
		r = mc_error(BUREAU_EPERM, msg ? msg : "not taken over");
		free(msg);
		return (r);
	}
	if ((fwd = json_deep_copy(in)) == NULL)
		return (mc_error(BUREAU_EINTERNAL, "out of memory"));
	json_object_del(fwd, "token");
	json_object_set_new(fwd, "screenshot", json_false());
	r = mc_forward(guest, fwd, MC_CALL_S);
	json_decref(fwd);
	return (r);
}

char *
ops_mc_handle(bureau_client *guest, const char *name, int takeover,
    const char *op, json_t *req)
{
	if (strcmp(op, "screenshot") == 0)
		return (mc_screenshot(guest, req));
	if (strcmp(op, "input") == 0)
		return (mc_input(guest, name, takeover, req));
	{
		json_t *fwd = json_pack("{s:s, s:s}", "tool", "system",
		    "action", "info");
		char *r = fwd ? mc_forward(guest, fwd, MC_INFO_S) :
		                mc_error(BUREAU_EINTERNAL, "out of memory");
		json_decref(fwd);
		return (r);
	}
}
