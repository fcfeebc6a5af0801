/*
 * runtime/dispatch.c: parse, authenticate, apply policy, call the tool,
 * build the reply, publish the audit event.
 */
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/dispatch.h"
#include "runtime/log.h"

#define BD_SUMMARY_MAX 240
#define BD_SUMMARY_VALUE 60

/* Compare hashes of the tokens with sodium_memcmp: constant time in the
 * content and independent of the length, so a wrong guess learns nothing
 * from the reply's timing. */
static int
bd_token_ok(const struct bd_config *cfg, const char *tok, size_t len)
{
	unsigned char want[crypto_generichash_BYTES];
	unsigned char got[crypto_generichash_BYTES];

	crypto_generichash(want, sizeof want, (const unsigned char *)cfg->token,
	    cfg->token_len, NULL, 0);
	crypto_generichash(got, sizeof got, (const unsigned char *)tok, len,
	    NULL, 0);
	return (sodium_memcmp(want, got, sizeof want) == 0);
}

/* A short, token-free summary of the arguments for the audit trail. */
static json_t *
bd_summary(json_t *req)
{
	char buf[BD_SUMMARY_MAX + 8];
	size_t off = 0;
	const char *key;
	json_t *v;

	buf[0] = '\0';
	json_object_foreach(req, key, v) {
		char val[BD_SUMMARY_VALUE + 8];

		if (strcmp(key, "token") == 0 || strcmp(key, "id") == 0 ||
		    strcmp(key, "tool") == 0 || strcmp(key, "action") == 0)
			continue;
		if (json_is_string(v) && strcmp(key, "data") == 0)
			snprintf(val, sizeof val, "<%zu base64 chars>",
			    json_string_length(v));
		else if (json_is_string(v)) {
			size_t n = json_string_length(v);
			/* cut at a UTF-8 boundary */
			size_t k = n > BD_SUMMARY_VALUE ? BD_SUMMARY_VALUE : n;
			while (k > 0 && k < n &&
			    ((unsigned char)json_string_value(v)[k] & 0xc0) ==
			    0x80)
				k--;
			snprintf(val, sizeof val, "%.*s%s", (int)k,
			    json_string_value(v), k < n ? "..." : "");
		} else {
			char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			snprintf(val, sizeof val, "%.*s%s", BD_SUMMARY_VALUE,
			    d != NULL ? d : "?",
			    d != NULL && strlen(d) > BD_SUMMARY_VALUE ? "..." :
			    "");
			free(d);
		}
		int w = snprintf(buf + off, sizeof buf - off, "%s%s=%s",
		    off > 0 ? " " : "", key, val);
		if (w < 0 || (size_t)w >= sizeof buf - off) {
			strcpy(buf + BD_SUMMARY_MAX, "...");
			break;
		}
		off += (size_t)w;
	}
	/* the cut above may split a character: json_string would fail */
	v = json_string(buf);
	return (v != NULL ? v : json_string("(summary not UTF-8)"));
}

static void
bd_publish_action(const struct bd_config *cfg, json_t *req, const char *tool,
    const char *action, int code, double elapsed)
{
	struct timespec ts;
	json_t *ev;
	char *text;

	if (cfg->tool.publish == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ev = json_pack("{s:f, s:s?, s:s?, s:b, s:f}", "time",
	    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "tool", tool,
	    "action", action, "ok", code == 0, "elapsed_ms", elapsed);
	if (ev == NULL)
		return;
	if (req != NULL) {
		json_t *id = json_object_get(req, "id");
		if (id != NULL)
			json_object_set(ev, "id", id);
		json_object_set_new(ev, "summary", bd_summary(req));
	}
	if (code != 0)
		json_object_set_new(ev, "error", json_string(bd_err_name(code)));
	if ((text = json_dumps(ev, JSON_COMPACT)) != NULL) {
		cfg->tool.publish("action", text, NULL, 0);
		free(text);
	}
	json_decref(ev);
}

static char *
bd_finish(json_t *reply, size_t *outlen)
{
	char *text = json_dumps(reply, JSON_COMPACT);

	json_decref(reply);
	if (text == NULL) {
		/* only when out of memory; the client still gets an answer */
		text = strdup("{\"ok\":false,\"error\":{\"code\":\"internal\","
		    "\"message\":\"cannot encode the reply\"}}");
	}
	*outlen = text != NULL ? strlen(text) : 0;
	return (text);
}

static double
bd_ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6);
}

char *
bd_dispatch(const struct bd_config *cfg, const char *buf, size_t len,
    int load, size_t *outlen)
{
	struct tool_call call = { 0 };
	const struct tool_entry *entry = NULL;
	const char *tool = NULL, *action = NULL;
	json_t *req = NULL, *reply = json_object(), *v;
	json_error_t jerr;
	struct timespec t0;
	int code = 0;
	char *msg = NULL;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (reply == NULL)
		return (bd_finish(NULL, outlen));
	call.reply = reply;
	call.cfg = &cfg->tool;
	/* first in the reply, replaced in place at the end */
	json_object_set_new(reply, "ok", json_true());

	/* jansson rejects invalid UTF-8, NUL in strings, duplicate keys (with
	 * the flag) and nesting deeper than 2048 levels. */
	req = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &jerr);
	if (req == NULL) {
		code = tool_fail(&call, BD_EBADREQ,
		    "request is not valid JSON: %s (at byte %d)", jerr.text,
		    jerr.position);
		goto reply;
	}
	if (!json_is_object(req)) {
		code = tool_fail(&call, BD_EBADREQ,
		    "request must be a JSON object");
		goto reply;
	}
	call.req = req;
	if ((v = json_object_get(req, "id")) != NULL)
		json_object_set(reply, "id", v);

	if (cfg->token != NULL) {
		v = json_object_get(req, "token");
		if (v == NULL) {
			code = tool_fail(&call, BD_EUNAUTH,
			    "missing field 'token': this daemon requires one");
			goto reply;
		}
		if (!json_is_string(v) || !bd_token_ok(cfg,
		    json_string_value(v), json_string_length(v))) {
			code = tool_fail(&call, BD_EUNAUTH,
			    "invalid token in field 'token'");
			goto reply;
		}
	}

	v = json_object_get(req, "tool");
	if (v == NULL) {
		code = tool_fail(&call, BD_EBADREQ, "missing field 'tool'");
		goto reply;
	}
	if (!json_is_string(v)) {
		code = tool_fail(&call, BD_EBADREQ,
		    "field 'tool' must be a string");
		goto reply;
	}
	tool = json_string_value(v);
	if ((entry = tool_find(tool)) == NULL) {
		char names[512];
		size_t off = 0;

		names[0] = '\0';
		for (const struct tool_entry *const *t = tool_table; *t != NULL;
		    t++)
			off += (size_t)snprintf(names + off, sizeof names - off,
			    "%s%s", off > 0 ? ", " : "", (*t)->name);
		code = tool_fail(&call, BD_EUNKNOWN_TOOL,
		    "unknown tool '%.64s': expected one of %s", tool, names);
		tool = NULL;
		goto reply;
	}
	tool = entry->name;
	/* The action names the operation for policy and the audit trail:
	 * "action", the editor's "command", or OpenAI's "type". */
	if (json_is_string(v = json_object_get(req, "action")) ||
	    json_is_string(v = json_object_get(req, "command")) ||
	    json_is_string(v = json_object_get(req, "type")))
		action = json_string_value(v);
	if (strcmp(tool, "bash") == 0)
		action = NULL; /* its "command" is a shell line, not an action */
	call.action = action;
	if (!bd_config_allows(cfg, tool, action)) {
		code = tool_fail(&call, BD_EPERM,
		    "%s '%s%s%.64s' is not allowed by this daemon's policy",
		    action != NULL ? "action" : "tool", tool,
		    action != NULL ? "." : "", action != NULL ? action : "");
		goto reply;
	}
	if (load > cfg->workers - BD_QUICK_RESERVE &&
	    (entry->quick == NULL || !entry->quick(action))) {
		code = tool_fail(&call, BD_EBUSY,
		    "%d of %d workers are busy; the last %d are kept for quick "
		    "requests (screenshots, input): retry later or start "
		    "bureaud with more --workers", load - 1, cfg->workers,
		    BD_QUICK_RESERVE);
		goto reply;
	}
	code = entry->handle(&call);
	if (code != 0 && call.code == 0)
		code = tool_fail(&call, code, "tool '%s' failed", tool);

reply:
	if (code != 0) {
		const char *m = call.message != NULL ? call.message :
		    "unknown error";
		/* A message quoting the request cut with "%.64s" can end
		 * inside a UTF-8 character, which json_pack's "s" refuses:
		 * the reply then had no error at all. tool_json_text
		 * replaces invalid bytes instead. */
		json_t *err = json_pack("{s:s, s:o*}", "code",
		    bd_err_name(code), "message", tool_json_text(m, strlen(m)));

		/* Fields a tool set before failing (partial output, say)
		 * stay, beside the error. */
		json_object_set_new(reply, "ok", json_false());
		json_object_set_new(reply, "error", err);
		msg = call.message;
		if (code == BD_EINTERNAL)
			bd_error("%s: %s", tool != NULL ? tool : "request",
			    msg != NULL ? msg : "?");
		else
			bd_debug("%s: %s: %s", tool != NULL ? tool : "request",
			    bd_err_name(code), msg != NULL ? msg : "?");
	} else
		json_object_set_new(reply, "ok", json_true());
	double elapsed = bd_ms_since(&t0);
	json_object_set_new(reply, "elapsed_ms", json_real(elapsed));
	bd_publish_action(cfg, call.req, tool, action, code, elapsed);
	free(call.message);
	json_decref(req);
	return (bd_finish(reply, outlen));
}
