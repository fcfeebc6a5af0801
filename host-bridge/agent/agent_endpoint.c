/*
 * host-bridge/agent/agent_endpoint.c: the desktop's endpoint: the agent token,
 * the operator's policy, takeover and approvals, and each request forwarded to
 * bureaud with the guest token (see agent.h).
 */
#include <nng/nng.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/token.h"
#include "host-bridge/agent/agent_int.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/lib/relay.h"

/* While the daemon looks gone, a request first pings it this long, so a
 * gone daemon costs each request seconds, not its whole timeout. */
#define AG_PROBE_S 3.0

static double
ag_ms_since(long long t0_us)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)((long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 -
	            t0_us) /
	    1e3);
}

static long long
ag_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

/* How long the daemon may take to answer req. */
static double
ag_forward_timeout(json_t *req, const char *tool)
{
	double t = strcmp(tool, "system") == 0 ? AG_SYSTEM_S :
	    strcmp(tool, "bash") == 0          ? AG_BASH_S :
	                                         AG_FORWARD_S,
	       v;
	json_t *x;

	if (json_is_number(x = json_object_get(req, "timeout")) &&
	    (v = json_number_value(x)) > 0 && v < 86400 && v + AG_MARGIN_S > t)
		t = v + AG_MARGIN_S;
	if (json_is_number(x = json_object_get(req, "duration")) &&
	    (v = json_number_value(x)) > 0 && v < 86400 && v + AG_MARGIN_S > t)
		t = v + AG_MARGIN_S;
	return (t);
}

/* The error code of an input action's reply, or NULL when it was ok;
 * *png its screenshot (malloc'd) if it carried one. */
static const char *
ag_reply_png(json_t *r, void **png, size_t *pnglen)
{
	json_t *img, *data;

	*png = NULL;
	*pnglen = 0;
	if (!json_is_true(json_object_get(r, "ok"))) {
		const char *c = json_string_value(
		    json_object_get(json_object_get(r, "error"), "code"));
		return (c != NULL ? c : bureau_error_name(BUREAU_EMALFORMED));
	}
	img = json_object_get(r, "image");
	data = json_object_get(img, "data");
	if (json_is_string(data) &&
	    json_is_string(json_object_get(img, "mime_type")) &&
	    strcmp(json_string_value(json_object_get(img, "mime_type")),
	        "image/png") == 0) {
		size_t slen = json_string_length(data), max = slen / 4 * 3 + 3;
		unsigned char *buf = malloc(max);

		if (buf != NULL &&
		    sodium_base642bin(buf, max, json_string_value(data), slen,
		        NULL, pnglen, NULL,
		        sodium_base64_VARIANT_ORIGINAL) == 0)
			*png = buf;
		else
			free(buf);
	}
	return (NULL);
}

/*
 * The error code of a reply, without parsing a successful one: bureaud
 * writes "ok" first ({"ok":true,...}); anything else is parsed (error
 * replies are short) and its code copied into buf. NULL when ok.
 */
static const char *
ag_reply_code(const char *reply, size_t len, char *buf, size_t size)
{
	static const char ok[] = "{\"ok\":true";
	json_t *r;
	const char *c;

	if (len >= sizeof ok - 1 && memcmp(reply, ok, sizeof ok - 1) == 0)
		return (NULL);
	r = json_loadb(reply, len, JSON_ALLOW_NUL, NULL);
	if (json_is_true(json_object_get(r, "ok"))) {
		json_decref(r);
		return (NULL);
	}
	c = json_string_value(
	    json_object_get(json_object_get(r, "error"), "code"));
	snprintf(buf, size, "%s",
	    c != NULL ? c : bureau_error_name(BUREAU_EMALFORMED));
	json_decref(r);
	return (buf);
}

/* The daemon's `system info` reply with the endpoint's own largest
 * request: clients check their requests against what they talk to (a
 * daemon's larger --max-request does not pass the agent). */
static char *
ag_info(char *reply)
{
	json_t *r = json_loads(reply, 0, NULL);
	char *s;

	if (r == NULL || !json_is_object(r) ||
	    json_object_set_new(r, "max_request",
	        json_integer((json_int_t)AG_MAX_REQUEST)) != 0 ||
	    (s = json_dumps(r, JSON_COMPACT)) == NULL) {
		json_decref(r);
		return (reply);
	}
	json_decref(r);
	free(reply);
	return (s);
}

/*
 * The operator's say on req: NULL when it goes on to the daemon, else the
 * error reply (*err its code). A request to approve waits here.
 */
static char *
ag_authorize(struct agent *ag, json_t *id, json_t *req, const char *tool,
    const char *action, const char **err, const char **approval)
{
	int look = action_is_look(tool, action);
	char *reply = NULL;

	if (strcmp(tool, "system") == 0 && action != NULL &&
	    (strcmp(action, "takeover") == 0 ||
	        strcmp(action, "approvals") == 0 ||
	        strcmp(action, "approve") == 0 || strcmp(action, "deny") == 0 ||
	        strcmp(action, "policy") == 0)) {
		return (ag_refuse(err, id, BUREAU_EPERM,
		    "system action '%s' is the operator's: it is not served "
		    "with the agent token",
		    action));
	}
	pthread_mutex_lock(&ag->lock);
	if (ag->allow.n > 0 && !policy_matches(&ag->allow, tool, action))
		reply = ag_refuse(err, id, BUREAU_EPERM,
		    "%s '%s%s%.64s' is not allowed by the policy of desktop "
		    "'%s'",
		    action ? "action" : "tool", tool, action ? "." : "",
		    action ? action : "", ag->d->name);
	else if (ag->takeover && !look)
		reply = ag_refuse(err, id, BUREAU_ETAKEN_OVER,
		    "an operator has taken over desktop '%s': until they hand "
		    "it back the agent may only look (computer screenshot, "
		    "zoom, cursor_position; window list; system ping, info), "
		    "not %.64s%s%.64s",
		    ag->d->name, tool, action ? " " : "", action ? action : "");
	else if (ag->approve.n > 0 &&
	    policy_matches(&ag->approve, tool, action)) {
		reply = ag_wait_approval(ag, id, req, tool, action, err);
		/* For the audit trail: what the operator decided. */
		if (reply == NULL)
			*approval = "approved";
		else if (*err != NULL && strcmp(*err, "timeout") == 0)
			*approval = "timeout";
		else if (*err != NULL && strcmp(*err, "permission_denied") == 0)
			*approval = "denied";
		/* The operator may have taken over while it waited. */
		if (reply == NULL && ag->takeover && !look)
			reply = ag_refuse(err, id, BUREAU_ETAKEN_OVER,
			    "an operator took over desktop '%s' while the "
			    "request waited for approval",
			    ag->d->name);
	}
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

/* The agent token checked and taken out of req: NULL, else the refusal
 * (a stranger learns nothing, and is counted, never logged line by line). */
static char *
ag_authenticate(struct agent *ag, json_t *req)
{
	json_t *tok = json_object_get(req, "token");

	if (tok == NULL) {
		audit_unauthorized(ag->audit);
		return (ag_error(NULL, BUREAU_EUNAUTH,
		    "missing field 'token': desktop '%s' requires its agent "
		    "token",
		    ag->d->name));
	}
	if (!json_is_string(tok) ||
	    !token_check(ag->token_hash, json_string_value(tok),
	        json_string_length(tok))) {
		audit_unauthorized(ag->audit);
		return (ag_error(NULL, BUREAU_EUNAUTH,
		    "invalid token in field 'token'"));
	}
	json_object_del(req, "token");
	return (NULL);
}

/* The reply to the request that woke the desktop says so: "woke": true
 * (parsed and written again: once per wake). */
static void
ag_mark_woke(nng_msg **msg, char **reply)
{
	json_t *r = *msg != NULL ?
	    json_loadb(nng_msg_body(*msg), nng_msg_len(*msg), 0, NULL) :
	    *reply != NULL ? json_loads(*reply, 0, NULL) :
	                     NULL;
	char *s;

	if (r == NULL || !json_is_object(r) ||
	    json_object_set_new(r, "woke", json_true()) != 0 ||
	    (s = json_dumps(r, JSON_COMPACT)) == NULL) {
		json_decref(r);
		return;
	}
	json_decref(r);
	if (*msg != NULL) {
		nng_msg_free(*msg);
		*msg = NULL;
	}
	free(*reply);
	*reply = s;
}

nng_msg *
ag_handle(struct agent *ag, const char *buf, size_t len)
{
	long long t0 = ag_now_us();
	json_t *req, *id = NULL, *r = NULL;
	json_error_t jerr;
	const char *tool = NULL, *action = NULL, *err = NULL, *approval = NULL,
	           *asked = NULL;
	char *reply = NULL, *cause = NULL, code[48];
	void *png = NULL;
	size_t pnglen = 0, rlen = 0;
	nng_msg *msg = NULL;
	const char *body;
	int input, rv, woke = 0, entered = 0;

	/* Duplicate keys are refused as bureaud does, and what goes on is
	 * this parse re-encoded: the daemon sees what was checked here. */
	req = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &jerr);
	if (req == NULL)
		return (ag_msg(ag_error(NULL, BUREAU_EBADREQ,
		    "request is not valid JSON: %s (at byte %d)", jerr.text,
		    jerr.position)));
	if (!json_is_object(req)) {
		json_decref(req);
		return (ag_msg(ag_error(NULL, BUREAU_EBADREQ,
		    "request must be a JSON object")));
	}
	if ((reply = ag_authenticate(ag, req)) != NULL) {
		json_decref(req);
		return (ag_msg(reply));
	}
	id = json_object_get(req, "id");
	if (policy_resolve(req, &tool, &action, &cause) != 0) {
		reply = ag_refuse(&err, id, BUREAU_EBADREQ, "%s", cause);
		goto done;
	}
	input = policy_is_input(tool, action);
	if ((reply = ag_authorize(ag, id, req, tool, action, &err,
	         &approval)) != NULL)
		goto done;
	/* The host agent's own tool: the agent asks its operator. The
	 * guest never sees it (nor wakes for it). */
	if (strcmp(tool, "operator") == 0) {
		if (action == NULL || strcmp(action, "ask") != 0)
			reply = ag_refuse(&err, id, BUREAU_EUNKNOWN_ACTION,
			    "tool 'operator' (the host agent's own) has one "
			    "action: ask, not '%.64s'",
			    action ? action : "");
		else {
			pthread_mutex_lock(&ag->lock);
			reply = ag_ask(ag, id, req, &err, &asked);
			pthread_mutex_unlock(&ag->lock);
		}
		goto done;
	}
	/* a desktop saved while idle is restored first (agent_idle.c) */
	if (ag_vm_enter(ag, &woke, &cause) != 0) {
		reply = ag_refuse(&err, id, BUREAU_EIO,
		    "cannot wake desktop '%s', saved while idle: %s",
		    ag->d->name, cause ? cause : "?");
		goto done;
	}
	entered = 1;
	/* The host agent's own too: a fork of this desktop (agent_fork.c). */
	if (strcmp(tool, "system") == 0 && action != NULL &&
	    strcmp(action, "fork") == 0) {
		reply = ag_fork(ag, id, req, &err);
		goto done;
	}

	/* libbureau waits for a connection as long as for the reply: while
	 * the daemon looks gone, a short ping first tells whether to wait
	 * at all (cutting the request's own timeout instead would cut a
	 * long bash command off once the daemon is back). */
	if (atomic_load(&ag->guest_down) &&
	    (rv = bureau_call_timeout(ag->guest,
	         "{\"tool\":\"system\",\"action\":\"ping\"}", AG_PROBE_S,
	         NULL)) != 0 &&
	    (rv == BUREAU_ECONNECT || rv == BUREAU_ENOREPLY)) {
		reply = ag_refuse(&err, id, BUREAU_EIO,
		    "cannot reach the daemon of desktop '%s': %s", ag->d->name,
		    bureau_client_error(ag->guest));
		goto done;
	}
	/* libbureau adds the guest token (and an id when there is none) to
	 * this parse and sends it; the reply comes back unparsed. */
	rv = bc_relay(ag->guest, req,
	    (int)(ag_forward_timeout(req, tool) * 1000), &msg);
	json_object_del(req, "token");
	atomic_store(&ag->guest_down, rv == BUREAU_ECONNECT);
	if (rv == 0) {
		/* nng's message of the reply goes back as it came, neither
		 * copied nor scanned: for a 1.4 MB screenshot reply that
		 * cut the agent's CPU time per request from 2.5-3.3 ms to
		 * 0.9-1.05 ms (two copies into fresh buffers and a strlen;
		 * measured from /proc/PID/task/x/schedstat, 300 requests). */
		body = nng_msg_body(msg);
		rlen = nng_msg_len(msg);
		/* The daemon's reply goes back verbatim. Only an input
		 * action's reply is parsed, for its screenshot, and system
		 * info's, for the endpoint's own limit: parsing a
		 * screenshot's base64 costs milliseconds, the hop's budget. */
		if (input) {
			r = json_loadb(body, rlen, JSON_ALLOW_NUL, NULL);
			err = r != NULL ? ag_reply_png(r, &png, &pnglen) :
			                  bureau_error_name(BUREAU_EMALFORMED);
		} else if (strcmp(tool, "system") == 0 && action != NULL &&
		    strcmp(action, "info") == 0) {
			reply = ag_info(strndup(body, rlen));
			nng_msg_free(msg);
			msg = NULL;
			err = reply != NULL ?
			    ag_reply_code(reply, strlen(reply), code,
			        sizeof code) :
			    bureau_error_name(BUREAU_EINTERNAL);
		} else
			err = ag_reply_code(body, rlen, code, sizeof code);
	} else if (rv == BUREAU_ENOREPLY) {
		reply = ag_refuse(&err, id, BUREAU_ETIMEOUT,
		    "the daemon of desktop '%s' did not answer in time: %s",
		    ag->d->name, bureau_client_error(ag->guest));
	} else if (rv == BUREAU_ETOOLARGE) {
		reply = ag_refuse(&err, id, BUREAU_ETOOLARGE, "%s",
		    bureau_client_error(ag->guest));
	} else {
		reply = ag_refuse(&err, id, BUREAU_EIO,
		    "cannot reach the daemon of desktop '%s': %s", ag->d->name,
		    bureau_client_error(ag->guest));
	}
	if (woke)
		ag_mark_woke(&msg, &reply);
done:
	if (entered)
		ag_vm_leave(ag);
	audit_record(ag->audit, req, tool, action, err,
	    approval  ? json_pack("{s:s}", "approval", approval) :
	        asked ? json_pack("{s:s}", "ask", asked) :
	                NULL,
	    ag_ms_since(t0), png, pnglen);
	json_decref(r);
	json_decref(req);
	free(png);
	free(cause);
	return (msg != NULL ? msg : ag_msg(reply));
}
