/*
 * runtime/dispatch.c: parse, authenticate, apply policy, call the tool,
 * build the reply, publish the audit event.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/action.h"
#include "common/token.h"
#include "runtime/dispatch.h"
#include "runtime/log.h"
#include "runtime/protocol.h"
#include "runtime/reqscan.h"

#define BD_REAL_DIGITS 15

/* The token check of common/token.h. The client's token is hashed straight
 * from the raw request as its escapes are decoded: nothing is allocated
 * before the client is known. */
static int
bd_token_ok(const struct bd_config *cfg, const char *raw, size_t rawlen)
{
	unsigned char want[TOKEN_HASH_BYTES], got[TOKEN_HASH_BYTES];
	crypto_generichash_state st;

	/* SIGHUP may swap the token (bd_config_reload_token). */
	pthread_rwlock_rdlock(&bd_token_lock);
	token_hash(cfg->token, cfg->token_len, want);
	pthread_rwlock_unlock(&bd_token_lock);
	token_hash_init(&st);
	bd_reqscan_unescape(raw, rawlen, token_hash_add, &st);
	token_hash_final(&st, got);
	return (token_hash_equal(want, got));
}

/* The typed error for a request the scan refused. */
static int
bd_scan_fail(struct tool_call *call, const struct bd_reqscan *scan)
{
	switch (scan->status) {
	case BD_REQSCAN_NOT_OBJECT:
		return (tool_fail(call, BD_EBADREQ,
		    "request must be a JSON object"));
	case BD_REQSCAN_DEPTH:
		return (tool_fail(call, BD_EBADREQ,
		    "request nests arrays and objects deeper than %d levels "
		    "(the limit) at byte %zu",
		    BUREAU_MAX_DEPTH, scan->pos));
	case BD_REQSCAN_VALUES:
		return (tool_fail(call, BD_ETOOLARGE,
		    "request holds more than %d JSON values (the limit)",
		    BUREAU_MAX_VALUES));
	case BD_REQSCAN_DUP_TOKEN:
		return (tool_fail(call, BD_EBADREQ,
		    "duplicate field 'token' at byte %zu", scan->pos));
	default:
		return (tool_fail(call, BD_EBADREQ,
		    "request is not valid JSON: %s (at byte %zu)", scan->why,
		    scan->pos));
	}
}

static void
bd_publish_action(const struct bd_config *cfg, json_t *req, const char *tool,
    const struct tool_action *act, int code, double elapsed)
{
	struct timespec ts;
	json_t *ev;
	char *text;

	if (cfg->tool.publish == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ev = json_pack("{s:f, s:s?, s:s?, s:b, s:f}", "time",
	    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "tool", tool,
	    "action", act != NULL ? act->name : NULL, "ok", code == 0,
	    "elapsed_ms", elapsed);
	if (ev == NULL)
		return;
	if (req != NULL) {
		json_t *id = json_object_get(req, "id");
		if (id != NULL)
			json_object_set(ev, "id", id);
		json_object_set_new(ev, "summary",
		    action_summary(req, act != NULL ? act->key : NULL));
	}
	if (code != 0)
		json_object_set_new(ev, "error",
		    json_string(bd_err_name(code)));
	if ((text = json_dumps(ev, JSON_COMPACT)) != NULL) {
		cfg->tool.publish("action", text, NULL, 0);
		free(text);
	}
	json_decref(ev);
}

/*
 * The reply's text, its image (moved out of the call) written later by
 * bd_reply_write. Reals get 15 significant digits, not jansson's default
 * 17 that showed "elapsed_ms":0.027931000000000001: 15 is the most a
 * double always round-trips in, so a number rounded to microseconds reads
 * back as written ("0.028").
 */
static int
bd_finish(json_t *reply, struct tool_image *image, struct bd_reply *out)
{
	char *text = json_dumps(reply,
	    JSON_COMPACT | JSON_REAL_PRECISION(BD_REAL_DIGITS));

	memset(out, 0, sizeof *out);
	json_decref(reply);
	if (text == NULL) {
		/* only when out of memory; the client still gets an answer */
		text = strdup("{\"ok\":false,\"error\":{\"code\":\"internal\","
		              "\"message\":\"cannot encode the reply\"}}");
		cap_free(image->buf);
	} else
		out->image = *image;
	image->buf = NULL;
	if (text == NULL)
		return (-1);
	out->json = text;
	out->json_len = strlen(text);
	return (0);
}

/* The distinct keys that name an action of this tool, "action" first:
 * "action" is the generic field, so it always counts, even on the editor
 * (which names its action "command") — a request cannot name one action
 * for policy and another for the handler. Returns how many (at most 3). */
static int
bd_action_keys(const struct tool_entry *entry, const char *keys[3])
{
	int n = 0;

	keys[n++] = "action";
	for (const struct tool_action *a = entry->actions; a->name != NULL;
	     a++) {
		int seen = 0;

		for (int i = 0; i < n; i++)
			seen |= strcmp(keys[i], a->key) == 0;
		if (!seen && n < 3)
			keys[n++] = a->key;
	}
	return (n);
}

/* Does the table name any action with this key? */
static int
bd_key_used(const struct tool_entry *entry, const char *key)
{
	for (const struct tool_action *a = entry->actions; a->name != NULL; a++)
		if (strcmp(a->key, key) == 0)
			return (1);
	return (0);
}

/*
 * Resolve the one action a request names, from the tool's entry table:
 * exactly one of the tool's action keys must be present (null counts as
 * missing, as everywhere), a string, and a name listed under that key.
 * Policy, the quick-worker reserve, the audit trail and the handler all
 * use what this returns, so no two of them can disagree.
 */
static int
bd_resolve(struct tool_call *call, const struct tool_entry *entry,
    const struct tool_action **out)
{
	const char *keys[3], *present[3], *name, *key;
	char list[512];
	size_t off = 0;
	json_t *v;
	int n, np;

	*out = NULL;
	n = bd_action_keys(entry, keys);
	np = action_keys_present(call->req, keys, n, present);
	if (np > 1)
		return (tool_fail(call, BD_EBADREQ,
		    "fields '%s' and '%s'%s%s%s both name the action of tool "
		    "'%s': send one",
		    present[0], present[1], np > 2 ? " and '" : "",
		    np > 2 ? present[2] : "", np > 2 ? "'" : "", entry->name));
	if (np == 0) {
		list[0] = '\0';
		for (int i = 0; i < n; i++)
			if (bd_key_used(entry, keys[i]))
				off += (size_t)snprintf(list + off,
				    sizeof list - off, "%s'%s'",
				    off > 0 ? " or " : "", keys[i]);
		return (tool_fail(call, BD_EINVAL, "missing field %s", list));
	}
	key = present[0];
	if (!bd_key_used(entry, key))
		return (tool_fail(call, BD_EBADREQ,
		    "field '%s' is not used by tool '%s': it names its action "
		    "in field '%s'",
		    key, entry->name, keys[1]));
	v = json_object_get(call->req, key);
	if (!json_is_string(v))
		return (tool_fail(call, BD_EBADREQ,
		    "field '%s' must be a string", key));
	name = json_string_value(v);
	list[0] = '\0';
	for (const struct tool_action *a = entry->actions; a->name != NULL;
	     a++) {
		if (strcmp(a->key, key) != 0)
			continue;
		if (strcmp(a->name, name) == 0) {
			*out = a;
			return (0);
		}
		if (off < sizeof list)
			off += (size_t)snprintf(list + off, sizeof list - off,
			    "%s%s", off > 0 ? ", " : "", a->name);
	}
	if (entry->unknown != NULL)
		return (entry->unknown(call, name, list));
	return (tool_fail(call, BD_EUNKNOWN_ACTION,
	    "unknown %s '%.64s' for tool '%s': expected one of %s", key, name,
	    entry->name, list));
}

static const struct bd_reqscan_limits bd_limits = {
	.depth = BUREAU_MAX_DEPTH,
	.values = BUREAU_MAX_VALUES,
};

/* Syntax, limits and the token first, in one pass that allocates nothing: a
 * client without the token costs no memory beyond its message, and gets no
 * id back. Sets *authed once the client has shown the token. */
static int
bd_check(const struct bd_config *cfg, const char *buf, size_t len,
    struct tool_call *call, int *authed)
{
	struct bd_reqscan scan;

	if (bd_reqscan(buf, len, &bd_limits, &scan) != 0) {
		struct bd_reqscan found;

		/* Over a limit: only an authenticated client learns which.
		 * Syntax errors are told to anyone (they reveal nothing). */
		if (cfg->token == NULL ||
		    (scan.status != BD_REQSCAN_DEPTH &&
		        scan.status != BD_REQSCAN_VALUES))
			return (bd_scan_fail(call, &scan));
		if (bd_reqscan_token(buf, len, &found) <= 0 ||
		    !bd_token_ok(cfg, buf + found.token_off, found.token_len))
			return (tool_fail(call, BD_EUNAUTH,
			    "missing or invalid field 'token'"));
		*authed = 1;
		return (bd_scan_fail(call, &scan));
	}
	if (cfg->token != NULL) {
		if (scan.token == 0)
			return (tool_fail(call, BD_EUNAUTH,
			    "missing field 'token': this daemon requires one"));
		if (scan.token < 0 ||
		    !bd_token_ok(cfg, buf + scan.token_off, scan.token_len))
			return (tool_fail(call, BD_EUNAUTH,
			    "invalid token in field 'token'"));
		*authed = 1;
	}
	return (0);
}

/* The request's tree into *req (the caller frees it, object or not); once
 * it is an object, call->req, and its id copied into the reply. jansson
 * rejects invalid UTF-8, NUL in strings, duplicate keys (with the flag);
 * the scan bounded the nesting and the values, so the tree is bounded
 * too. */
static int
bd_parse(const char *buf, size_t len, struct tool_call *call, json_t **req)
{
	json_error_t jerr;
	json_t *v;

	*req = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &jerr);
	if (*req == NULL)
		return (tool_fail(call, BD_EBADREQ,
		    "request is not valid JSON: %s (at byte %d)", jerr.text,
		    jerr.position));
	if (!json_is_object(*req))
		return (tool_fail(call, BD_EBADREQ,
		    "request must be a JSON object"));
	call->req = *req;
	if ((v = json_object_get(*req, "id")) != NULL)
		json_object_set(call->reply, "id", v);
	return (0);
}

static int
bd_unknown_tool(struct tool_call *call, const char *tool)
{
	char names[512];
	size_t off = 0;

	names[0] = '\0';
	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++)
		off += (size_t)snprintf(names + off, sizeof names - off, "%s%s",
		    off > 0 ? ", " : "", (*t)->name);
	return (tool_fail(call, BD_EUNKNOWN_TOOL,
	    "unknown tool '%.64s': expected one of %s", tool, names));
}

/* The tool the request names into *entry (left NULL when there is none),
 * then the action, into call->act and call->action. */
static int
bd_lookup(struct tool_call *call, const struct tool_entry **entry)
{
	json_t *v = json_object_get(call->req, "tool");

	if (v == NULL)
		return (tool_fail(call, BD_EBADREQ, "missing field 'tool'"));
	if (!json_is_string(v))
		return (tool_fail(call, BD_EBADREQ,
		    "field 'tool' must be a string"));
	if ((*entry = tool_find(json_string_value(v))) == NULL)
		return (bd_unknown_tool(call, json_string_value(v)));
	if ((*entry)->actions != NULL) {
		if (bd_resolve(call, *entry, &call->act) != 0)
			return (call->code);
		call->action = call->act->name;
	}
	return (0);
}

/* The daemon's policy, then the workers kept for quick requests. */
static int
bd_admit(const struct bd_config *cfg, struct tool_call *call,
    const struct tool_entry *entry, int load)
{
	const char *tool = entry->name, *action = call->action;

	if (!bd_config_allows(cfg, tool, action))
		return (tool_fail(call, BD_EPERM,
		    "%s '%s%s%.64s' is not allowed by this daemon's policy",
		    action != NULL ? "action" : "tool", tool,
		    action != NULL ? "." : "", action != NULL ? action : ""));
	if (load > cfg->workers - BD_QUICK_RESERVE &&
	    !(call->act != NULL ? call->act->quick : entry->quick))
		return (tool_fail(call, BD_EBUSY,
		    "%d of %d workers are busy; the last %d are kept for quick "
		    "requests (screenshots, input): retry later or start "
		    "bureaud with more --workers",
		    load - 1, cfg->workers, BD_QUICK_RESERVE));
	return (0);
}

static int
bd_call(struct tool_call *call, const struct tool_entry *entry)
{
	int code;

	if (entry->prepare != NULL && (code = entry->prepare(call)) != 0)
		return (code);
	code = call->act != NULL ? call->act->handle(call) :
	                           entry->handle(call);
	if (code != 0 && call->code == 0)
		code = tool_fail(call, code, "tool '%s' failed", entry->name);
	return (code);
}

/* The reply's "ok" false and its error, from the call's message; the log
 * line. */
static void
bd_reply_error(struct tool_call *call, int code, const char *tool)
{
	const char *m = call->message != NULL ? call->message : "unknown error";
	/* A message quoting the request cut with "%.64s" can end inside a
	 * UTF-8 character, which json_pack's "s" refuses: the reply then had
	 * no error at all. tool_json_text replaces invalid bytes instead. */
	json_t *err = json_pack("{s:s, s:o*}", "code", bd_err_name(code),
	    "message", tool_json_text(m, strlen(m)));
	char *msg;

	/* Fields a tool set before failing (partial output, say) stay,
	 * beside the error. */
	json_object_set_new(call->reply, "ok", json_false());
	json_object_set_new(call->reply, "error", err);
	msg = call->message;
	if (code == BD_EINTERNAL)
		bd_error("%s: %s", tool != NULL ? tool : "request",
		    msg != NULL ? msg : "?");
	else
		bd_debug("%s: %s: %s", tool != NULL ? tool : "request",
		    bd_err_name(code), msg != NULL ? msg : "?");
}

int
bd_dispatch_reply(const struct bd_config *cfg, const char *buf, size_t len,
    int load, struct bd_reply *out)
{
	struct tool_call call = { 0 };
	const struct tool_entry *entry = NULL;
	const char *tool;
	json_t *req = NULL, *reply = json_object();
	double t0;
	int code;
	/* Has the client shown the token (or is none required)? Only then
	 * is its request part of the audit trail. */
	int authed = cfg->token == NULL;

	t0 = tool_now_ms();
	if (reply == NULL)
		return (bd_finish(NULL, &call.image, out));
	call.reply = reply;
	call.cfg = &cfg->tool;
	/* first in the reply, replaced in place at the end */
	json_object_set_new(reply, "ok", json_true());

	if ((code = bd_check(cfg, buf, len, &call, &authed)) == 0 &&
	    (code = bd_parse(buf, len, &call, &req)) == 0 &&
	    (code = bd_lookup(&call, &entry)) == 0 &&
	    (code = bd_admit(cfg, &call, entry, load)) == 0)
		code = bd_call(&call, entry);

	tool = entry != NULL ? entry->name : NULL;
	if (code != 0)
		bd_reply_error(&call, code, tool);
	else
		json_object_set_new(reply, "ok", json_true());
	double elapsed = tool_now_ms() - t0;
	json_object_set_new(reply, "elapsed_ms",
	    json_real(round(elapsed * 1e3) / 1e3));
	/* Whoever lacks the token has no request served, so nothing of it
	 * goes into the audit trail: its readers trust what they see there,
	 * and a flood of refusals must not push real actions out. */
	if (authed)
		bd_publish_action(cfg, call.req, tool, call.act, code, elapsed);
	free(call.message);
	json_decref(req);
	return (bd_finish(reply, &call.image, out));
}

char *
bd_dispatch(const struct bd_config *cfg, const char *buf, size_t len, int load,
    size_t *outlen)
{
	struct bd_reply r;
	char *text;

	*outlen = 0;
	if (bd_dispatch_reply(cfg, buf, len, load, &r) != 0)
		return (NULL);
	if ((text = malloc(bd_reply_size(&r) + 1)) != NULL) {
		*outlen = bd_reply_size(&r);
		bd_reply_write(&r, text);
		text[*outlen] = '\0';
	}
	bd_reply_clear(&r);
	return (text);
}
