/*
 * host-bridge/agent/agent.c: the host agent's sockets, checks and
 * forwarding (see agent.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/agent/ops_mc.h"
#include "host-bridge/agent/policy.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/lib/internal.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

/* Workers on the endpoint: requests waiting for an approval hold one, so
 * at most AG_WORKERS - AG_FREE wait at once and the rest keep serving
 * screenshots and input. */
#define AG_WORKERS 16
#define AG_FREE    6
/* Operator ops: state, approvals, decisions are answered at once; a
 * screenshot or info for Mission Control waits on the guest, and must not
 * hold the others up while a desktop boots. */
#define AG_OP_WORKERS 8
/* A peer that stops reading frees its worker after this long. */
#define AG_SEND_MS 10000
/*
 * How long a forwarded request may take: libbureau waits that long for a
 * connection too, so a daemon that is gone holds a worker for it. system
 * (ping, info) is always quick, and attach relies on its short wait to
 * report an unreachable daemon; bash commands run up to 120 s by default;
 * a request with its own "timeout" or "duration" gets that plus a margin.
 */
#define AG_SYSTEM_S  10.0
#define AG_FORWARD_S 60.0
#define AG_BASH_S    150.0
#define AG_MARGIN_S  30.0
/* While the daemon looks gone, a request first pings it this long, so a
 * gone daemon costs each request seconds, not its whole timeout. */
#define AG_PROBE_S 3.0
/* The largest request the endpoint takes: the protocol's, plus room for
 * the token and the envelope. `system info` reports this. */
#define AG_MAX_REQUEST (BUREAU_MAX_REQUEST + (1u << 16))
/* Events: what one may weigh (a frame is a JPEG of the screen), and the
 * context of their key (docs/protocol.md, "Encryption"). */
#define AG_EVENT_MAX  (32u << 20)
#define AG_EVENTS_CTX "bureau-events-v1"

enum { AP_PENDING, AP_ALLOWED, AP_DENIED };

struct approval {
	char id[17];
	char *tool;
	char *action;
	json_t *request; /* without its token */
	double since;    /* unix time */
	int state;
	char *reason;
	struct approval *next;
};

struct ag_worker {
	struct agent *ag;
	int op; /* the operator socket's */
	pthread_t thread;
	nng_ctx ctx;
	nng_aio *aio;
};

struct agent {
	struct desktop *d;
	unsigned char token_hash[crypto_generichash_BYTES];
	bureau_client *guest;
	atomic_int guest_down; /* the last forward found no daemon */
	struct audit *audit;
	nng_socket ep, op;
	char *ep_url, *op_url, *op_path;
	struct ag_worker workers[AG_WORKERS + AG_OP_WORKERS];
	char *guest_url;    /* the daemon's REQ/REP URL */
	char *guest_events; /* its events, or NULL */
	/* The events' keys: the daemon seals with the guest token's, the
	 * agent re-seals with the agent token's for its own subscribers. */
	unsigned char key_guest[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	unsigned char key_agent[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	nng_socket sub, pub;
	char *pub_url;
	pthread_t relay;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t decided;
	struct policy_list allow, approve;
	long approve_timeout;
	int takeover;
	struct approval *approvals;
	int pending;
};

/* ---- replies --------------------------------------------------------- */

static char *
ag_dump(json_t *j)
{
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (s == NULL)
		s = strdup("{\"ok\":false,\"error\":{\"code\":\"internal\","
		           "\"message\":\"out of memory\"}}");
	return (s);
}

/* The protocol's error reply; id NULL before the request is
 * authenticated (a stranger learns nothing, not even its echo). */
static char *
ag_errorv(json_t *id, const char *code, const char *fmt, va_list ap)
{
	char *msg;
	json_t *r;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	r = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code,
	    "message", msg != NULL ? msg : code);
	free(msg);
	if (r != NULL && id != NULL)
		json_object_set(r, "id", id);
	return (ag_dump(r));
}

static char *ag_error(json_t *id, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static char *
ag_error(json_t *id, const char *code, const char *fmt, ...)
{
	va_list ap;
	char *r;

	va_start(ap, fmt);
	r = ag_errorv(id, code, fmt, ap);
	va_end(ap);
	return (r);
}

/* ag_error that also notes the code (a string constant) in *err, for the
 * audit trail. */
static char *ag_refuse(const char **err, json_t *id, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static char *
ag_refuse(const char **err, json_t *id, const char *code, const char *fmt, ...)
{
	va_list ap;
	char *r;

	*err = code;
	va_start(ap, fmt);
	r = ag_errorv(id, code, fmt, ap);
	va_end(ap);
	return (r);
}

/* ---- the endpoint ---------------------------------------------------- */

/* Constant time in the content and independent of the length, as
 * bureaud's bd_token_ok. */
static int
ag_token_ok(const struct agent *ag, json_t *tok)
{
	unsigned char got[crypto_generichash_BYTES];

	if (!json_is_string(tok))
		return (0);
	crypto_generichash(got, sizeof got,
	    (const unsigned char *)json_string_value(tok),
	    json_string_length(tok), NULL, 0);
	return (sodium_memcmp(got, ag->token_hash, sizeof got) == 0);
}

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

static double
ag_unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static void
ag_approval_free(struct approval *a)
{
	if (a == NULL)
		return;
	free(a->tool);
	free(a->action);
	free(a->reason);
	json_decref(a->request);
	free(a);
}

static void
ag_approval_unlink(struct agent *ag, struct approval *a)
{
	for (struct approval **p = &ag->approvals; *p != NULL;
	     p = &(*p)->next) {
		if (*p == a) {
			*p = a->next;
			break;
		}
	}
}

/*
 * Wait for an operator's decision on req. Called and returns with
 * ag->lock held. NULL when allowed, else the error reply.
 */
static char *
ag_wait_approval(struct agent *ag, json_t *id, json_t *req, const char *tool,
    const char *action, const char **err)
{
	struct approval *a;
	struct timespec until;
	char *hex, *reply = NULL;
	long secs = ag->approve_timeout;
	int rv = 0;

	if (ag->pending >= AG_WORKERS - AG_FREE)
		return (ag_refuse(err, id, "busy",
		    "%d requests already wait for an operator's approval on "
		    "desktop '%s': retry later",
		    ag->pending, ag->d->name));
	if ((a = calloc(1, sizeof *a)) == NULL ||
	    (hex = hb_random_hex(8)) == NULL) {
		free(a);
		return (ag_refuse(err, id, "internal", "out of memory"));
	}
	memcpy(a->id, hex, 16);
	free(hex);
	a->tool = strdup(tool);
	a->action = action != NULL ? strdup(action) : NULL;
	a->request = json_deep_copy(req);
	a->since = ag_unix_now();
	if (a->tool == NULL || (action != NULL && a->action == NULL) ||
	    a->request == NULL) {
		ag_approval_free(a);
		return (ag_refuse(err, id, "internal", "out of memory"));
	}
	a->next = ag->approvals;
	ag->approvals = a;
	ag->pending++;
	fprintf(stderr, "bureau agent: approval %s waits: %s%s%s\n", a->id,
	    tool, action ? "." : "", action ? action : "");
	clock_gettime(CLOCK_MONOTONIC, &until); /* the cond's clock */
	until.tv_sec += secs;
	while (a->state == AP_PENDING && rv != ETIMEDOUT)
		rv = pthread_cond_timedwait(&ag->decided, &ag->lock, &until);
	ag_approval_unlink(ag, a);
	ag->pending--;
	if (a->state == AP_PENDING)
		reply = ag_refuse(err, id, "timeout",
		    "no operator decided on approval %s for %s%s%s within %ld "
		    "s",
		    a->id, tool, action ? "." : "", action ? action : "", secs);
	else if (a->state == AP_DENIED)
		reply = ag_refuse(err, id, "permission_denied",
		    "the operator denied %s%s%s (approval %s): %s", tool,
		    action ? "." : "", action ? action : "", a->id,
		    a->reason && *a->reason ? a->reason : "no reason given");
	ag_approval_free(a);
	return (reply);
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
		return (c != NULL ? c : "malformed_reply");
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
	snprintf(buf, size, "%s", c != NULL ? c : "malformed_reply");
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

/* A reply text (malloc'd, taken) as a message to send; NULL for none. */
static nng_msg *
ag_msg(char *text)
{
	nng_msg *m = NULL;

	if (text != NULL &&
	    (nng_msg_alloc(&m, 0) != 0 ||
	        nng_msg_append(m, text, strlen(text)) != 0)) {
		nng_msg_free(m);
		m = NULL;
	}
	free(text);
	return (m);
}

/* One request on the endpoint: the reply to send. */
static nng_msg *
ag_handle(struct agent *ag, const char *buf, size_t len)
{
	long long t0 = ag_now_us();
	json_t *req, *id = NULL, *r = NULL;
	json_error_t jerr;
	const char *tool = NULL, *action = NULL, *err = NULL;
	char *reply = NULL, *cause = NULL, code[48];
	void *png = NULL;
	size_t pnglen = 0, rlen = 0;
	nng_msg *msg = NULL;
	const char *body;
	int input, rv;

	/* Duplicate keys are refused as bureaud does, and what goes on is
	 * this parse re-encoded: the daemon sees what was checked here. */
	req = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &jerr);
	if (req == NULL)
		return (ag_msg(ag_error(NULL, "bad_request",
		    "request is not valid JSON: %s (at byte %d)", jerr.text,
		    jerr.position)));
	if (!json_is_object(req)) {
		json_decref(req);
		return (ag_msg(ag_error(NULL, "bad_request",
		    "request must be a JSON object")));
	}
	if (json_object_get(req, "token") == NULL) {
		reply = ag_error(NULL, "unauthorized",
		    "missing field 'token': desktop '%s' requires its agent "
		    "token",
		    ag->d->name);
		audit_record(ag->audit, NULL, NULL, NULL, "unauthorized",
		    ag_ms_since(t0), NULL, 0);
		json_decref(req);
		return (ag_msg(reply));
	}
	if (!ag_token_ok(ag, json_object_get(req, "token"))) {
		reply = ag_error(NULL, "unauthorized",
		    "invalid token in field 'token'");
		audit_record(ag->audit, NULL, NULL, NULL, "unauthorized",
		    ag_ms_since(t0), NULL, 0);
		json_decref(req);
		return (ag_msg(reply));
	}
	json_object_del(req, "token");
	id = json_object_get(req, "id");
	if (policy_resolve(req, &tool, &action, &cause) != 0) {
		reply = ag_refuse(&err, id, "bad_request", "%s", cause);
		goto done;
	}
	input = policy_is_input(tool, action);
	if (strcmp(tool, "system") == 0 && action != NULL &&
	    (strcmp(action, "takeover") == 0 ||
	        strcmp(action, "approvals") == 0 ||
	        strcmp(action, "approve") == 0 || strcmp(action, "deny") == 0 ||
	        strcmp(action, "policy") == 0)) {
		reply = ag_refuse(&err, id, "permission_denied",
		    "system action '%s' is the operator's: it is not served "
		    "with the agent token",
		    action);
		goto done;
	}
	pthread_mutex_lock(&ag->lock);
	if (ag->allow.n > 0 && !policy_matches(&ag->allow, tool, action))
		reply = ag_refuse(&err, id, "permission_denied",
		    "%s '%s%s%.64s' is not allowed by the policy of desktop "
		    "'%s'",
		    action ? "action" : "tool", tool, action ? "." : "",
		    action ? action : "", ag->d->name);
	else if (ag->takeover && input)
		reply = ag_refuse(&err, id, "taken_over",
		    "an operator has taken over desktop '%s': input is refused "
		    "until they hand it back (screenshot, zoom and "
		    "cursor_position still work)",
		    ag->d->name);
	else if (ag->approve.n > 0 &&
	    policy_matches(&ag->approve, tool, action)) {
		reply = ag_wait_approval(ag, id, req, tool, action, &err);
		/* The operator may have taken over while it waited. */
		if (reply == NULL && ag->takeover && input)
			reply = ag_refuse(&err, id, "taken_over",
			    "an operator took over desktop '%s' while the "
			    "request waited for approval",
			    ag->d->name);
	}
	pthread_mutex_unlock(&ag->lock);
	if (reply != NULL)
		goto done;

	/* libbureau waits for a connection as long as for the reply: while
	 * the daemon looks gone, a short ping first tells whether to wait
	 * at all (cutting the request's own timeout instead would cut a
	 * long bash command off once the daemon is back). */
	if (atomic_load(&ag->guest_down) &&
	    (rv = bureau_call_timeout(ag->guest,
	         "{\"tool\":\"system\",\"action\":\"ping\"}", AG_PROBE_S,
	         NULL)) != 0 &&
	    (rv == BUREAU_ECONNECT || rv == BUREAU_ENOREPLY)) {
		reply = ag_refuse(&err, id, "io_error",
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
			                  "malformed_reply";
		} else if (strcmp(tool, "system") == 0 && action != NULL &&
		    strcmp(action, "info") == 0) {
			reply = ag_info(strndup(body, rlen));
			nng_msg_free(msg);
			msg = NULL;
			err = reply != NULL ?
			    ag_reply_code(reply, strlen(reply), code,
			        sizeof code) :
			    "internal";
		} else
			err = ag_reply_code(body, rlen, code, sizeof code);
	} else if (rv == BUREAU_ENOREPLY) {
		reply = ag_refuse(&err, id, "timeout",
		    "the daemon of desktop '%s' did not answer in time: %s",
		    ag->d->name, bureau_client_error(ag->guest));
	} else if (rv == BUREAU_ETOOLARGE) {
		reply = ag_refuse(&err, id, "too_large", "%s",
		    bureau_client_error(ag->guest));
	} else {
		reply = ag_refuse(&err, id, "io_error",
		    "cannot reach the daemon of desktop '%s': %s", ag->d->name,
		    bureau_client_error(ag->guest));
	}
done:
	audit_record(ag->audit, req, tool, action, err, ag_ms_since(t0), png,
	    pnglen);
	json_decref(r);
	json_decref(req);
	free(png);
	free(cause);
	return (msg != NULL ? msg : ag_msg(reply));
}

/* ---- the operator socket --------------------------------------------- */

static json_t *
ag_approval_json(const struct agent *ag, const struct approval *a)
{
	return (json_pack("{s:s, s:s, s:s, s:s?, s:O, s:f}", "desktop",
	    ag->d->name, "approval", a->id, "tool", a->tool, "action",
	    a->action, "request", a->request, "since", a->since));
}

/* Write the policy and the takeover into desktop.json, so they outlive
 * this agent: an operator's control must not end with an agent's restart.
 * Called with ag->lock held. */
static int
ag_persist(struct agent *ag, char **cause)
{
	char *path = desktop_path(ag->d, "desktop.json"), *s = NULL;
	char *al = policy_format(&ag->allow), *ap = policy_format(&ag->approve);
	json_error_t jerr;
	json_t *j = NULL;
	int rv = -1;

	if (path == NULL || al == NULL || ap == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if ((j = json_load_file(path, 0, &jerr)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", path, jerr.text);
		goto out;
	}
	json_object_set_new(j, "allow", json_string(al));
	json_object_set_new(j, "approve", json_string(ap));
	json_object_set_new(j, "approve_timeout",
	    json_integer(ag->approve_timeout));
	json_object_set_new(j, "takeover", json_boolean(ag->takeover));
	if ((s = json_dumps(j, JSON_INDENT(2))) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	rv = hb_write_file(path, s, strlen(s), 0600, cause);
out:
	json_decref(j);
	free(s);
	free(al);
	free(ap);
	free(path);
	return (rv);
}

static json_t *
ag_policy_json(struct agent *ag)
{
	char *al = policy_format(&ag->allow), *ap = policy_format(&ag->approve);
	json_t *r = json_pack("{s:b, s:s, s:s, s:I}", "ok", 1, "allow",
	    al ? al : "", "approve", ap ? ap : "", "approve_timeout",
	    (json_int_t)ag->approve_timeout);

	free(al);
	free(ap);
	return (r);
}

static char *
ag_op_policy(struct agent *ag, json_t *req)
{
	struct policy_list al = { 0 }, ap = { 0 };
	json_t *jal = json_object_get(req, "allow");
	json_t *jap = json_object_get(req, "approve");
	json_t *jto = json_object_get(req, "approve_timeout");
	char *cause = NULL, *reply;

	if ((jal != NULL && !json_is_string(jal)) ||
	    (jap != NULL && !json_is_string(jap)))
		return (ag_error(NULL, "invalid_argument",
		    "field '%s' must be a string (a comma-separated list)",
		    jal != NULL && !json_is_string(jal) ? "allow" : "approve"));
	if (jto != NULL &&
	    (!json_is_integer(jto) || json_integer_value(jto) < 1 ||
	        json_integer_value(jto) > 86400))
		return (ag_error(NULL, "invalid_argument",
		    "field 'approve_timeout' must be a whole number of seconds "
		    "from 1 to 86400"));
	if ((jal != NULL &&
	        policy_parse("allow", json_string_value(jal), &al, &cause) !=
	            0) ||
	    (jap != NULL &&
	        policy_parse("approve", json_string_value(jap), &ap, &cause) !=
	            0)) {
		policy_list_clear(&al);
		reply = ag_error(NULL, "invalid_argument", "%s", cause);
		free(cause);
		return (reply);
	}
	pthread_mutex_lock(&ag->lock);
	if (jal != NULL) {
		policy_list_clear(&ag->allow);
		ag->allow = al;
	}
	if (jap != NULL) {
		policy_list_clear(&ag->approve);
		ag->approve = ap;
	}
	if (jto != NULL)
		ag->approve_timeout = (long)json_integer_value(jto);
	if ((jal != NULL || jap != NULL || jto != NULL) &&
	    ag_persist(ag, &cause) != 0) {
		/* Applied, but it would not survive a restart: say so. */
		pthread_mutex_unlock(&ag->lock);
		reply = ag_error(NULL, "io_error",
		    "policy applied but not saved: %s", cause);
		free(cause);
		return (reply);
	}
	reply = ag_dump(ag_policy_json(ag));
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

static char *
ag_op_decide(struct agent *ag, json_t *req)
{
	json_t *jid = json_object_get(req, "approval");
	json_t *allow = json_object_get(req, "allow");
	json_t *reason = json_object_get(req, "reason");
	struct approval *a;
	char *reply;

	if (!json_is_string(jid))
		return (ag_error(NULL, "invalid_argument",
		    "field 'approval' must be the approval's id (a string)"));
	if (!json_is_boolean(allow))
		return (ag_error(NULL, "invalid_argument",
		    "field 'allow' must be true or false"));
	if (reason != NULL && !json_is_string(reason))
		return (ag_error(NULL, "invalid_argument",
		    "field 'reason' must be a string"));
	pthread_mutex_lock(&ag->lock);
	for (a = ag->approvals; a != NULL; a = a->next)
		if (a->state == AP_PENDING &&
		    strcmp(a->id, json_string_value(jid)) == 0)
			break;
	if (a == NULL) {
		reply = ag_error(NULL, "not_found",
		    "no pending approval '%.64s' on desktop '%s'",
		    json_string_value(jid), ag->d->name);
	} else {
		a->state = json_is_true(allow) ? AP_ALLOWED : AP_DENIED;
		if (reason != NULL)
			a->reason = strdup(json_string_value(reason));
		pthread_cond_broadcast(&ag->decided);
		fprintf(stderr, "bureau agent: approval %s %s\n", a->id,
		    a->state == AP_ALLOWED ? "allowed" : "denied");
		reply = ag_dump(json_pack("{s:b, s:s, s:b}", "ok", 1,
		    "approval", a->id, "allow", a->state == AP_ALLOWED));
	}
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

/* One request on the operator socket. */
static char *
ag_op_handle(struct agent *ag, const char *buf, size_t len)
{
	json_t *req = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	const char *op = json_string_value(json_object_get(req, "op"));
	char *reply;

	if (!json_is_object(req) || op == NULL) {
		json_decref(req);
		return (ag_error(NULL, "bad_request",
		    "expected a JSON object with a string field 'op'"));
	}
	if (strcmp(op, "state") == 0) {
		json_t *r;
		pthread_mutex_lock(&ag->lock);
		r = ag_policy_json(ag);
		if (r != NULL) {
			json_object_set_new(r, "desktop",
			    json_string(ag->d->name));
			json_object_set_new(r, "takeover",
			    json_boolean(ag->takeover));
			json_object_set_new(r, "pending",
			    json_integer(ag->pending));
			json_object_set_new(r, "endpoint",
			    json_string(ag->ep_url));
			json_object_set_new(r, "pid", json_integer(getpid()));
		}
		pthread_mutex_unlock(&ag->lock);
		reply = ag_dump(r);
	} else if (strcmp(op, "takeover") == 0) {
		json_t *on = json_object_get(req, "on");
		if (!json_is_boolean(on)) {
			reply = ag_error(NULL, "invalid_argument",
			    "field 'on' must be true or false");
		} else {
			char *cause = NULL;
			int rv;

			pthread_mutex_lock(&ag->lock);
			ag->takeover = json_is_true(on);
			rv = ag_persist(ag, &cause);
			pthread_mutex_unlock(&ag->lock);
			fprintf(stderr, "bureau agent: takeover %s\n",
			    json_is_true(on) ? "on" : "off");
			/* In force either way; say when it would not survive
			 * a restart. */
			reply = rv == 0 ?
			    ag_dump(json_pack("{s:b, s:b}", "ok", 1, "takeover",
			        json_is_true(on))) :
			    ag_error(NULL, "io_error",
			        "takeover %s but not saved: %s",
			        json_is_true(on) ? "on" : "off", cause);
			free(cause);
		}
	} else if (strcmp(op, "approvals") == 0) {
		json_t *list = json_array();
		pthread_mutex_lock(&ag->lock);
		for (struct approval *a = ag->approvals; a != NULL && list;
		     a = a->next)
			if (a->state == AP_PENDING)
				json_array_insert_new(list, 0,
				    ag_approval_json(ag, a));
		pthread_mutex_unlock(&ag->lock);
		reply = ag_dump(list ?
		        json_pack("{s:b, s:o}", "ok", 1, "approvals", list) :
		        NULL);
	} else if (strcmp(op, "decide") == 0) {
		reply = ag_op_decide(ag, req);
	} else if (strcmp(op, "policy") == 0) {
		reply = ag_op_policy(ag, req);
	} else if (ops_mc_is(op)) { /* Mission Control's: ops_mc.c */
		pthread_mutex_lock(&ag->lock);
		int tk = ag->takeover;
		pthread_mutex_unlock(&ag->lock);
		reply = ops_mc_handle(ag->guest, ag->d->name, tk, op, req);
	} else {
		reply = ag_error(NULL, "unknown_action",
		    "unknown op '%.64s': expected state, takeover, approvals, "
		    "decide or policy",
		    op);
	}
	json_decref(req);
	return (reply);
}

/* ---- workers --------------------------------------------------------- */

static void *
ag_worker_main(void *arg)
{
	struct ag_worker *w = arg;

	for (;;) {
		nng_msg *msg, *out;
		int rv;

		nng_aio_set_timeout(w->aio, NNG_DURATION_INFINITE);
		nng_ctx_recv(w->ctx, w->aio);
		nng_aio_wait(w->aio);
		if ((rv = nng_aio_result(w->aio)) != 0) {
			if (rv == NNG_ECLOSED)
				return (NULL);
			continue;
		}
		msg = nng_aio_get_msg(w->aio);
		out = w->op ?
		    ag_msg(ag_op_handle(w->ag, nng_msg_body(msg),
		        nng_msg_len(msg))) :
		    ag_handle(w->ag, nng_msg_body(msg), nng_msg_len(msg));
		nng_msg_free(msg);
		if (out == NULL)
			continue;
		nng_aio_set_msg(w->aio, out);
		nng_aio_set_timeout(w->aio, AG_SEND_MS);
		nng_ctx_send(w->ctx, w->aio);
		nng_aio_wait(w->aio);
		if (nng_aio_result(w->aio) != 0)
			nng_msg_free(out); /* a failed send leaves it ours */
	}
}

static int
ag_listen(nng_socket *s, const char *url, size_t max, char **cause)
{
	int rv;

	if ((rv = nng_rep0_open(s)) != 0 ||
	    (rv = nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, max)) != 0 ||
	    (rv = nng_listen(*s, url, NULL, 0)) != 0) {
		*cause = hb_fmt("cannot listen on '%s': %s", url,
		    nng_strerror(rv));
		return (-1);
	}
	return (0);
}

static int
ag_start_workers(struct agent *ag, char **cause)
{
	for (int i = 0; i < AG_WORKERS + AG_OP_WORKERS; i++) {
		struct ag_worker *w = &ag->workers[i];
		int rv;

		w->ag = ag;
		w->op = i >= AG_WORKERS;
		if ((rv = nng_ctx_open(&w->ctx, w->op ? ag->op : ag->ep)) !=
		        0 ||
		    (rv = nng_aio_alloc(&w->aio, NULL, NULL)) != 0 ||
		    (rv = pthread_create(&w->thread, NULL, ag_worker_main,
		         w)) != 0) {
			*cause = hb_fmt("cannot start a worker: %s",
			    rv > 0 ? strerror(rv) : nng_strerror(rv));
			return (-1);
		}
	}
	return (0);
}

/* ---- events ---------------------------------------------------------- */

static void
ag_events_key(unsigned char *key, const char *token)
{
	crypto_generichash(key, crypto_aead_xchacha20poly1305_ietf_KEYBYTES,
	    (const unsigned char *)token, strlen(token),
	    (const unsigned char *)AG_EVENTS_CTX, strlen(AG_EVENTS_CTX));
}

/*
 * The daemon's events, opened with the guest token's key and sealed
 * again with the agent token's on the desktop's events port (the
 * endpoint's port + 1): subscribers need the agent token, never the
 * guest's, and what does not open (forged, altered, or sealed with
 * another key) is dropped here.
 */
static void *
ag_relay_main(void *arg)
{
	struct agent *ag = arg;
	const size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	const size_t tb = crypto_aead_xchacha20poly1305_ietf_ABYTES;

	for (;;) {
		nng_msg *m;
		unsigned char *body, *sp, *plain, *out;
		unsigned long long plen, olen;
		size_t len, ad;
		int rv;

		if ((rv = nng_recvmsg(ag->sub, &m, 0)) != 0) {
			if (rv == NNG_ECLOSED)
				return (NULL);
			continue;
		}
		body = nng_msg_body(m);
		len = nng_msg_len(m);
		sp = memchr(body, ' ', len < 16 ? len : 16);
		if (sp == NULL ||
		    (ad = (size_t)(sp - body) + 1) + nb + tb > len) {
			nng_msg_free(m);
			continue;
		}
		plain = malloc(len);
		out = malloc(len);
		if (plain == NULL || out == NULL ||
		    crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen,
		        NULL, body + ad + nb, len - ad - nb, body, ad,
		        body + ad, ag->key_guest) != 0) {
			free(plain);
			free(out);
			nng_msg_free(m);
			continue;
		}
		memcpy(out, body, ad);
		randombytes_buf(out + ad, nb);
		crypto_aead_xchacha20poly1305_ietf_encrypt(out + ad + nb, &olen,
		    plain, plen, body, ad, NULL, out + ad, ag->key_agent);
		sodium_memzero(plain, plen);
		free(plain);
		nng_msg_clear(m);
		if (nng_msg_append(m, out, ad + nb + olen) != 0 ||
		    nng_sendmsg(ag->pub, m, NNG_FLAG_NONBLOCK) != 0)
			nng_msg_free(m);
		free(out);
	}
}

/* Start the relay: a failure costs the live events only, not the
 * desktop, so it is logged, not returned. */
static void
ag_relay_start(struct agent *ag)
{
	int rv = NNG_ENOMEM;

	if (ag->guest_events == NULL)
		return;
	if ((ag->pub_url = hb_fmt("tcp://127.0.0.1:%d", ag->d->port + 1)) ==
	        NULL ||
	    (rv = nng_sub0_open(&ag->sub)) != 0 ||
	    (rv = nng_socket_set(ag->sub, NNG_OPT_SUB_SUBSCRIBE, "", 0)) != 0 ||
	    (rv = nng_socket_set_size(ag->sub, NNG_OPT_RECVMAXSZ,
	         AG_EVENT_MAX)) != 0 ||
	    (rv = nng_dial(ag->sub, ag->guest_events, NULL,
	         NNG_FLAG_NONBLOCK)) != 0 ||
	    (rv = nng_pub0_open(&ag->pub)) != 0 ||
	    (rv = nng_listen(ag->pub, ag->pub_url, NULL, 0)) != 0 ||
	    (rv = pthread_create(&ag->relay, NULL, ag_relay_main, ag)) != 0) {
		fprintf(stderr,
		    "bureau agent: no events relay from %s to %s: %s\n",
		    ag->guest_events, ag->pub_url ? ag->pub_url : "?",
		    rv > 0 ? strerror(rv) : nng_strerror(rv));
		return;
	}
	fprintf(stderr, "bureau agent: events of %s relayed on %s\n",
	    ag->guest_events, ag->pub_url);
}

/* ---- the VM ------------------------------------------------------------ */

/* "tcp://host:port" with port + 1, the daemon's events by its own
 * default (malloc'd); NULL for any other URL. */
static char *
ag_events_of(const char *url)
{
	const char *colon = strrchr(url, ':');
	long port;
	char *end;

	if (strncmp(url, "tcp://", 6) != 0 || colon == NULL)
		return (NULL);
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65534)
		return (NULL);
	return (hb_fmt("%.*s:%ld", (int)(colon - url), url, port + 1));
}

/* desktop file `file` gone; errors do not matter (it may not exist). */
static void
ag_unlink(const struct desktop *d, const char *file)
{
	char *p = desktop_path(d, file);

	if (p != NULL)
		unlink(p);
	free(p);
}

static void
ag_write(const struct desktop *d, const char *file, json_t *j)
{
	char *p = desktop_path(d, file), *s = json_dumps(j, JSON_COMPACT);
	char *cause = NULL;

	if (p == NULL || s == NULL ||
	    hb_write_file(p, s, strlen(s), 0600, &cause) != 0)
		fprintf(stderr, "bureau agent: cannot write '%s': %s\n",
		    p ? p : file, cause ? cause : "out of memory");
	free(cause);
	free(s);
	free(p);
	json_decref(j);
}

/* A pid from a desktop file (0 when none). */
static pid_t
ag_read_pid(const struct desktop *d, const char *file)
{
	char *p = desktop_path(d, file), *s = p ? hb_read_file(p) : NULL;
	long v = s ? strtol(s, NULL, 10) : 0;

	free(p);
	free(s);
	return (v > 0 && v < (1L << 30) ? (pid_t)v : 0);
}

/*
 * Run the desktop's VM as this process's child: passt and QEMU are
 * started by the backend from this (the main) thread, which they die
 * with. run.json says a run is on; exit.json, once QEMU ends, how it
 * ended.
 */
static int
ag_vm_start(struct agent *ag, const char *accel, pid_t *qemu, pid_t *passt,
    char **cause)
{
	struct image im = { 0 };
	char *gp = desktop_path(ag->d, "guest.json");
	json_t *g = NULL;
	char *fallback = NULL;
	int rv = -1, restored = 0;

	if (gp == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	ag_unlink(ag->d, "exit.json");
	ag_unlink(ag->d, "guest.json");
	/* From the saved state when there is one (stop saved it), else a
	 * boot; the command that started us reads which from run.json. */
	if (image_load(ag->d->image, &im, cause) != 0 ||
	    vm_launch(vm_backend(), ag->d, &im, accel, &restored, &fallback,
	        cause) != 0)
		goto out;
	if (fallback != NULL)
		fprintf(stderr,
		    "bureau agent: cannot restore the saved state of '%s' "
		    "(%s): booted it instead\n",
		    ag->d->name, fallback);
	*qemu = ag_read_pid(ag->d, "qemu.pid");
	*passt = ag_read_pid(ag->d, "passt.pid");
	if ((g = json_load_file(gp, 0, NULL)) == NULL ||
	    !json_is_string(json_object_get(g, "url"))) {
		*cause = hb_fmt("the VM backend left no guest URL in '%s'", gp);
		goto out;
	}
	ag->guest_url = strdup(json_string_value(json_object_get(g, "url")));
	if (json_is_string(json_object_get(g, "events")))
		ag->guest_events = strdup(
		    json_string_value(json_object_get(g, "events")));
	if (*qemu == 0 || ag->guest_url == NULL) {
		*cause = hb_fmt("qemu started but left no pid");
		goto out;
	}
	ag_write(ag->d, "run.json",
	    json_pack("{s:i, s:i, s:i, s:s, s:f, s:b, s:s?}", "agent",
	        (int)getpid(), "qemu", (int)*qemu, "passt", (int)*passt,
	        "accel", accel, "started", ag_unix_now(), "restored", restored,
	        "restore_failed", fallback));
	rv = 0;
out:
	if (rv != 0 && *qemu > 0)
		kill(*qemu, SIGKILL);
	json_decref(g);
	image_clear(&im);
	free(gp);
	free(fallback);
	return (rv);
}

/* Wait up to ms for child pid to end; its status in *st. */
static int
ag_reap(pid_t pid, int ms, int *st)
{
	long long deadline = hb_now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
			return (0);
		if (hb_now_ms() >= deadline)
			return (-1);
		usleep(20000);
	}
}

/* QEMU ended with status st: say how, and clear what it left. */
static void
ag_vm_ended(struct agent *ag, int st, const char *why, pid_t passt)
{
	char how[160];
	int clean = WIFEXITED(st) && WEXITSTATUS(st) == 0 && why == NULL;
	int pst;

	if (why != NULL)
		snprintf(how, sizeof how, "%s", why);
	else if (WIFSIGNALED(st))
		snprintf(how, sizeof how, "qemu was killed by signal %d (%s)",
		    WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WEXITSTATUS(st) == 0)
		/* a guest power-off, or QMP quit (stop --force, a save) */
		snprintf(how, sizeof how, "qemu ended normally (status 0)");
	else
		snprintf(how, sizeof how, "qemu exited with status %d",
		    WEXITSTATUS(st));
	fprintf(stderr, "bureau agent: desktop '%s': %s\n", ag->d->name, how);
	if (passt > 0 && kill(passt, SIGTERM) == 0 &&
	    ag_reap(passt, 3000, &pst) != 0) {
		kill(passt, SIGKILL);
		ag_reap(passt, 3000, &pst);
	}
	ag_write(ag->d, "exit.json",
	    json_pack("{s:f, s:s, s:b}", "time", ag_unix_now(), "how", how,
	        "clean", clean));
	ag_unlink(ag->d, "run.json");
	ag_unlink(ag->d, "qemu.pid");
	ag_unlink(ag->d, "passt.pid");
	ag_unlink(ag->d, "qmp.sock");
	ag_unlink(ag->d, "guest.json");
}

/* ---- setup ----------------------------------------------------------- */

/* A secret file's content without trailing whitespace (malloc'd). */
static char *
ag_secret(const struct desktop *d, const char *file, char **cause)
{
	char *path = desktop_path(d, file), *s;
	size_t n;

	if (path == NULL || (s = hb_read_file(path)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", path ? path : file,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	free(path);
	n = strlen(s);
	while (n > 0 &&
	    (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
	        s[n - 1] == '\t'))
		s[--n] = '\0';
	if (n == 0) {
		*cause = hb_fmt("the %s of desktop '%s' is empty", file,
		    d->name);
		free(s);
		return (NULL);
	}
	return (s);
}

static int
ag_load_policy(struct agent *ag, char **cause)
{
	char *path = desktop_path(ag->d, "desktop.json");
	json_t *j = path ? json_load_file(path, 0, NULL) : NULL;
	const char *al = json_string_value(json_object_get(j, "allow"));
	const char *ap = json_string_value(json_object_get(j, "approve"));
	json_t *to = json_object_get(j, "approve_timeout");
	int rv = -1;

	if (j == NULL) {
		*cause = hb_fmt("cannot read '%s'",
		    path ? path : "desktop.json");
		goto out;
	}
	ag->approve_timeout = AGENT_APPROVE_TIMEOUT;
	if (json_is_integer(to) && json_integer_value(to) >= 1 &&
	    json_integer_value(to) <= 86400)
		ag->approve_timeout = (long)json_integer_value(to);
	ag->takeover = json_is_true(json_object_get(j, "takeover"));
	if (policy_parse("allow", al ? al : "", &ag->allow, cause) != 0 ||
	    policy_parse("approve", ap ? ap : "", &ag->approve, cause) != 0)
		goto out;
	rv = 0;
out:
	json_decref(j);
	free(path);
	return (rv);
}

/* The agent's pid file, locked for its whole life (store_agent_pid). */
static int
ag_lock_pid(const struct desktop *d, char **cause)
{
	char *path = desktop_path(d, "agent.pid"), *s;
	int fd;

	if (path == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
		*cause = fd >= 0 && errno == EWOULDBLOCK ?
		    hb_fmt("desktop '%s' already has a host agent", d->name) :
		    hb_fmt("cannot lock '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		return (-1);
	}
	free(path);
	if ((s = hb_fmt("%d\n", (int)getpid())) == NULL ||
	    ftruncate(fd, 0) != 0 || pwrite(fd, s, strlen(s), 0) < 0) {
		*cause = hb_fmt("cannot write the agent's pid: %s",
		    strerror(errno));
		free(s);
		close(fd);
		return (-1);
	}
	free(s);
	return (fd);
}

int
agent_serve(const char *name, const char *accel, char **cause)
{
	struct agent *ag = calloc(1, sizeof *ag);
	char *token = NULL, *guest = NULL, *why = NULL;
	pthread_condattr_t cattr;
	sigset_t sigs;
	pid_t qemu = 0, passt = 0;
	int sig, pidfd, st = 0;

	if (ag == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	umask(077);
	pthread_mutex_init(&ag->lock, NULL);
	/* Approvals time out on the monotonic clock: a wall clock stepped
	 * (NTP, date -s) neither cuts nor stretches the wait. */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&ag->decided, &cattr);
	pthread_condattr_destroy(&cattr);
	if (sodium_init() < 0) {
		*cause = hb_fmt("libsodium does not initialise");
		return (-1);
	}
	if (desktop_load(name, &ag->d, cause) != 0)
		return (-1);
	if (!ag->d->attached && accel == NULL) {
		*cause = hb_fmt("desktop '%s' runs in a VM: its agent needs "
		                "--accel (bureau start starts it)",
		    name);
		return (-1);
	}
	if ((pidfd = ag_lock_pid(ag->d, cause)) < 0)
		return (-1);
	(void)pidfd; /* held open, and so locked, until this process ends */
	if ((token = ag_secret(ag->d, "token", cause)) == NULL ||
	    (guest = ag_secret(ag->d, "guest-token", cause)) == NULL)
		return (-1);
	crypto_generichash(ag->token_hash, sizeof ag->token_hash,
	    (const unsigned char *)token, strlen(token), NULL, 0);
	ag_events_key(ag->key_agent, token);
	ag_events_key(ag->key_guest, guest);
	sodium_memzero(token, strlen(token));
	free(token);
	if (ag_load_policy(ag, cause) != 0 ||
	    audit_open(ag->d->dir, &ag->audit, cause) != 0)
		return (-1);

	/* Signals are taken by sigwait below, never by a worker; the VM's
	 * processes, our children, reset the mask before they exec. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (ag->d->attached) {
		ag->guest_url = strdup(ag->d->url);
		ag->guest_events = ag_events_of(ag->d->url);
	} else if (ag_vm_start(ag, accel, &qemu, &passt, cause) != 0) {
		return (-1);
	}
	if (ag->guest_url == NULL ||
	    bureau_connect(ag->guest_url, guest, AG_FORWARD_S, &ag->guest) !=
	        0) {
		*cause = hb_fmt("cannot make a client for '%s': %s",
		    ag->guest_url ? ag->guest_url : "?",
		    bureau_client_error(NULL));
		goto fail;
	}
	sodium_memzero(guest, strlen(guest));
	free(guest);
	guest = NULL;

	ag->ep_url = hb_fmt("tcp://127.0.0.1:%d", ag->d->port);
	ag->op_path = desktop_path(ag->d, "operator.sock");
	ag->op_url = ag->op_path ? hb_fmt("ipc://%s", ag->op_path) : NULL;
	if (ag->ep_url == NULL || ag->op_url == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	if (strlen(ag->op_path) >= 108) {
		*cause = hb_fmt("'%s' is too long for a unix socket "
		                "(BUREAU_HOME on a shorter path)",
		    ag->op_path);
		goto fail;
	}
	unlink(ag->op_path); /* a dead agent's; the pid lock says we are it */
	if (ag_listen(&ag->ep, ag->ep_url, AG_MAX_REQUEST, cause) != 0 ||
	    ag_listen(&ag->op, ag->op_url, 1u << 20, cause) != 0 ||
	    ag_start_workers(ag, cause) != 0)
		goto fail;
	ag_relay_start(ag);
	fprintf(stderr,
	    "bureau agent: desktop '%s': serving %s and %s, forwarding to "
	    "%s",
	    name, ag->ep_url, ag->op_url, ag->guest_url);
	if (qemu > 0)
		fprintf(stderr, "; qemu pid %d, passt pid %d", (int)qemu,
		    (int)passt);
	fputc('\n', stderr);

	for (;;) {
		pid_t r;

		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig != SIGCHLD)
			break;
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			if (r == qemu) {
				ag_vm_ended(ag, st, why, passt);
				goto out;
			}
			if (r == passt && qemu > 0) {
				/* Without its network the guest is out of
				 * reach: end it rather than serve nothing. */
				passt = 0;
				why = "its network (passt) ended, so the host "
				      "agent ended qemu";
				fprintf(stderr, "bureau agent: %s\n", why);
				kill(qemu, SIGKILL);
			}
		}
	}
	fprintf(stderr, "bureau agent: desktop '%s': signal %d, exiting\n",
	    name, sig);
	if (qemu > 0) {
		char how[96];

		/* QEMU quits cleanly on SIGTERM (the disks flushed), but the
		 * guest gets no say: this is `stop --force`. */
		kill(qemu, SIGTERM);
		if (ag_reap(qemu, 15000, &st) != 0) {
			kill(qemu, SIGKILL);
			ag_reap(qemu, 5000, &st);
		}
		snprintf(how, sizeof how,
		    "the host agent ended qemu (the agent got signal %d)", sig);
		ag_vm_ended(ag, st, how, passt);
	}
out:
	unlink(ag->op_path);
	/* Workers may be inside a forwarded call; the process ends them. */
	_exit(0);
fail:
	if (guest != NULL) {
		sodium_memzero(guest, strlen(guest));
		free(guest);
	}
	if (qemu > 0) {
		kill(qemu, SIGKILL);
		ag_reap(qemu, 5000, &st);
		ag_vm_ended(ag, st, "the host agent could not start", passt);
	}
	return (-1);
}
