/*
 * host-bridge/agent/agent_approve.c: approvals (a request the policy sends to
 * an operator waits for their decision), the agent's questions to its
 * operator (tool "operator", action "ask": listed with the approvals, kind
 * "ask", answered with text) and the takeover.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/util/util.h"

enum { AP_PENDING, AP_ALLOWED, AP_DENIED, AP_ANSWERED };

/* An ask's message and an answer, in bytes of UTF-8. */
#define AP_MESSAGE_MAX (16 * 1024)
#define AP_ANSWER_MAX  (64 * 1024)
/* The longest an ask may wait, in seconds. */
#define AP_ASK_MAX (24 * 3600)

/* A request whose JSON text is larger is shown by its size, its SHA-256
 * and its first and last KiB (DESIGN.md): whole, a 48 MiB file write
 * would fill every listing and Mission Control's event stream. */
#define AP_SHOW_MAX  (64 * 1024)
#define AP_SHOW_ENDS 1024

struct approval {
	char id[17];
	char *tool;
	char *action;
	json_t *request; /* without its token; NULL when too large to show */
	size_t bytes;    /* its compact JSON text's size */
	char sha256[crypto_hash_sha256_BYTES * 2 + 1]; /* of that text */
	char *head; /* too large: the text's first and last KiB */
	char *tail;
	double since; /* unix time */
	int state;
	char *reason;
	int ask;       /* a question (tool operator, action ask) */
	char *message; /* ask: the agent's question */
	long timeout;  /* ask: seconds it waits */
	char *answer;  /* ask: the operator's, once answered */
	struct approval *next;
};

static void
ag_approval_free(struct approval *a)
{
	if (a == NULL)
		return;
	free(a->tool);
	free(a->action);
	free(a->reason);
	free(a->message);
	if (a->answer != NULL)
		sodium_memzero(a->answer, strlen(a->answer));
	free(a->answer);
	free(a->head);
	free(a->tail);
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
 * What the operator is shown of req: its compact JSON text (keys sorted,
 * ASCII: escapes instead of raw UTF-8, so the ends cut anywhere) measured
 * and hashed; the request itself when that text is at most AP_SHOW_MAX
 * bytes, else its first and last AP_SHOW_ENDS bytes.
 */
static int
ag_approval_show(struct approval *a, json_t *req)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char *text = json_dumps(req,
	    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);

	if (text == NULL)
		return (-1);
	a->bytes = strlen(text);
	crypto_hash_sha256(h, (const unsigned char *)text, a->bytes);
	sodium_bin2hex(a->sha256, sizeof a->sha256, h, sizeof h);
	if (a->bytes <= AP_SHOW_MAX)
		a->request = json_deep_copy(req);
	else {
		a->head = strndup(text, AP_SHOW_ENDS);
		a->tail = strdup(text + a->bytes - AP_SHOW_ENDS);
	}
	free(text);
	return (a->request != NULL || (a->head != NULL && a->tail != NULL) ?
	        0 :
	        -1);
}

/*
 * A new entry for the operator's list, with its id, or NULL and *reply the
 * refusal: the list is full (the agent keeps workers for requests that do
 * not wait) or memory ran out. With ag->lock held.
 */
static struct approval *
ag_approval_new(struct agent *ag, json_t *id, const char **err, char **reply)
{
	struct approval *a;
	char *hex;

	if (ag->pending >= AG_WORKERS - AG_FREE) {
		*reply = ag_refuse(err, id, BUREAU_EBUSY,
		    "%d requests already wait for an operator's approval or "
		    "answer on desktop '%s': retry later",
		    ag->pending, ag->d->name);
		return (NULL);
	}
	if ((a = calloc(1, sizeof *a)) == NULL ||
	    (hex = hb_random_hex(8)) == NULL) {
		free(a);
		*reply = ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory");
		return (NULL);
	}
	memcpy(a->id, hex, 16);
	free(hex);
	a->since = ag_unix_now();
	return (a);
}

/* List a and wait for the operator, at most secs; a is off the list on
 * return, its state the decision (AP_PENDING: none in time). With
 * ag->lock held (the wait releases it). */
static void
ag_approval_wait(struct agent *ag, struct approval *a, long secs)
{
	struct timespec until;
	int rv = 0;

	a->next = ag->approvals;
	ag->approvals = a;
	ag->pending++;
	clock_gettime(CLOCK_MONOTONIC, &until); /* the cond's clock */
	until.tv_sec += secs;
	while (a->state == AP_PENDING && rv != ETIMEDOUT)
		rv = pthread_cond_timedwait(&ag->decided, &ag->lock, &until);
	ag_approval_unlink(ag, a);
	ag->pending--;
}

char *
ag_wait_approval(struct agent *ag, json_t *id, json_t *req, const char *tool,
    const char *action, const char **err)
{
	struct approval *a;
	char *reply = NULL;
	long secs = ag->approve_timeout;

	if ((a = ag_approval_new(ag, id, err, &reply)) == NULL)
		return (reply);
	a->tool = strdup(tool);
	a->action = action != NULL ? strdup(action) : NULL;
	if (a->tool == NULL || (action != NULL && a->action == NULL) ||
	    ag_approval_show(a, req) != 0) {
		ag_approval_free(a);
		return (ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory"));
	}
	fprintf(stderr, "bureau agent: approval %s waits: %s%s%s\n", a->id,
	    tool, action ? "." : "", action ? action : "");
	ag_approval_wait(ag, a, secs);
	if (a->state == AP_PENDING)
		reply = ag_refuse(err, id, BUREAU_ETIMEOUT,
		    "no operator decided on approval %s for %s%s%s within %ld "
		    "s",
		    a->id, tool, action ? "." : "", action ? action : "", secs);
	else if (a->state == AP_DENIED)
		reply = ag_refuse(err, id, BUREAU_EPERM,
		    "the operator denied %s%s%s (approval %s): %s", tool,
		    action ? "." : "", action ? action : "", a->id,
		    a->reason && *a->reason ? a->reason : "no reason given");
	ag_approval_free(a);
	return (reply);
}

/* An approval as the operator sees it: the request whole, or (too large
 * to show) null with the first and last KiB of its JSON text in "head"
 * and "tail"; either way its size ("bytes") and SHA-256. */
static json_t *
ag_approval_json(const struct agent *ag, const struct approval *a)
{
	json_t *j;

	if (a->ask)
		return (json_pack("{s:s, s:s, s:s, s:s, s:I, s:f}", "desktop",
		    ag->d->name, "approval", a->id, "kind", "ask", "message",
		    a->message, "timeout", (json_int_t)a->timeout, "since",
		    a->since));
	j = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:O?, s:I, s:s, s:f}",
	    "desktop", ag->d->name, "approval", a->id, "kind", "approval",
	    "tool", a->tool, "action", a->action, "request", a->request,
	    "bytes", (json_int_t)a->bytes, "sha256", a->sha256, "since",
	    a->since);

	if (j != NULL && a->request == NULL &&
	    (json_object_set_new(j, "head", json_string(a->head)) != 0 ||
	        json_object_set_new(j, "tail", json_string(a->tail)) != 0)) {
		json_decref(j);
		return (NULL);
	}
	return (j);
}

char *
ag_op_approvals(struct agent *ag)
{
	json_t *list = json_array();

	pthread_mutex_lock(&ag->lock);
	for (struct approval *a = ag->approvals; a != NULL && list; a = a->next)
		if (a->state == AP_PENDING)
			json_array_insert_new(list, 0, ag_approval_json(ag, a));
	pthread_mutex_unlock(&ag->lock);
	return (ag_dump(
	    list ? json_pack("{s:b, s:o}", "ok", 1, "approvals", list) : NULL));
}

char *
ag_op_decide(struct agent *ag, json_t *req)
{
	json_t *jid = json_object_get(req, "approval");
	json_t *allow = json_object_get(req, "allow");
	json_t *reason = json_object_get(req, "reason");
	struct approval *a;
	char *reply;

	if (!json_is_string(jid))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'approval' must be the approval's id (a string)"));
	if (!json_is_boolean(allow))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'allow' must be true or false"));
	if (reason != NULL && !json_is_string(reason))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'reason' must be a string"));
	pthread_mutex_lock(&ag->lock);
	for (a = ag->approvals; a != NULL; a = a->next)
		if (a->state == AP_PENDING &&
		    strcmp(a->id, json_string_value(jid)) == 0)
			break;
	if (a == NULL) {
		reply = ag_error(NULL, BUREAU_ENOTFOUND,
		    "no pending approval '%.64s' on desktop '%s'",
		    json_string_value(jid), ag->d->name);
	} else if (a->ask && json_is_true(allow)) {
		reply = ag_error(NULL, BUREAU_EINVAL,
		    "'%s' on desktop '%s' is the agent's question, not a "
		    "request to approve: answer it (bureau answer %s %s TEXT) "
		    "or deny it",
		    a->id, ag->d->name, ag->d->name, a->id);
	} else {
		a->state = json_is_true(allow) ? AP_ALLOWED : AP_DENIED;
		if (reason != NULL)
			a->reason = strdup(json_string_value(reason));
		pthread_cond_broadcast(&ag->decided);
		/* The decision in words for the log, not an error code. */
		fprintf(stderr, "bureau agent: approval %s %s\n", a->id,
		    a->state == AP_ALLOWED ? "allowed" : "denied");
		/* What was decided on, for the operator to see again. */
		reply = ag_dump(json_pack("{s:b, s:s, s:b, s:o}", "ok", 1,
		    "approval", a->id, "allow", a->state == AP_ALLOWED,
		    "decided", ag_approval_json(ag, a)));
	}
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

/* {"op":"answer","approval":ID,"text":T}: the operator's answer to an
 * ask. */
char *
ag_op_answer(struct agent *ag, json_t *req)
{
	json_t *jid = json_object_get(req, "approval");
	json_t *text = json_object_get(req, "text");
	struct approval *a;
	char *reply;

	if (!json_is_string(jid))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'approval' must be the question's id (a string)"));
	if (!json_is_string(text) || json_string_length(text) > AP_ANSWER_MAX)
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'text' must be the answer: a string of at most %d "
		    "bytes",
		    AP_ANSWER_MAX));
	if (memchr(json_string_value(text), '\0', json_string_length(text)))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'text' must not hold a NUL character"));
	pthread_mutex_lock(&ag->lock);
	for (a = ag->approvals; a != NULL; a = a->next)
		if (a->state == AP_PENDING &&
		    strcmp(a->id, json_string_value(jid)) == 0)
			break;
	if (a == NULL)
		reply = ag_error(NULL, BUREAU_ENOTFOUND,
		    "no pending question '%.64s' on desktop '%s'",
		    json_string_value(jid), ag->d->name);
	else if (!a->ask)
		reply = ag_error(NULL, BUREAU_EINVAL,
		    "'%s' on desktop '%s' is a request waiting for approval, "
		    "not a question: approve or deny it",
		    a->id, ag->d->name);
	else if ((a->answer = strdup(json_string_value(text))) == NULL)
		reply = ag_error(NULL, BUREAU_EINTERNAL, "out of memory");
	else {
		a->state = AP_ANSWERED;
		pthread_cond_broadcast(&ag->decided);
		fprintf(stderr, "bureau agent: question %s answered\n", a->id);
		reply = ag_dump(json_pack("{s:b, s:s, s:o}", "ok", 1,
		    "approval", a->id, "answered", ag_approval_json(ag, a)));
	}
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

char *
ag_ask(struct agent *ag, json_t *id, json_t *req, const char **err,
    const char **outcome)
{
	json_t *msg = json_object_get(req, "message");
	json_t *jto = json_object_get(req, "timeout");
	struct approval *a;
	char *reply = NULL;
	long secs = ag->approve_timeout;

	if (!json_is_string(msg) || json_string_length(msg) == 0 ||
	    json_string_length(msg) > AP_MESSAGE_MAX)
		return (ag_refuse(err, id, BUREAU_EINVAL,
		    "field 'message' must be the question for the operator: "
		    "a string of 1 to %d bytes",
		    AP_MESSAGE_MAX));
	if (jto != NULL && !json_is_null(jto)) {
		double t = json_number_value(jto);

		if (!json_is_number(jto) || !(t >= 1) || t > AP_ASK_MAX)
			return (ag_refuse(err, id, BUREAU_EINVAL,
			    "field 'timeout' must be a number of seconds from "
			    "1 to %d (default: the desktop's approve "
			    "timeout, %ld)",
			    AP_ASK_MAX, ag->approve_timeout));
		secs = (long)t;
	}
	if ((a = ag_approval_new(ag, id, err, &reply)) == NULL)
		return (reply);
	a->ask = 1;
	a->timeout = secs;
	if ((a->message = strdup(json_string_value(msg))) == NULL) {
		ag_approval_free(a);
		return (ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory"));
	}
	fprintf(stderr, "bureau agent: question %s waits\n", a->id);
	ag_approval_wait(ag, a, secs);
	if (a->state == AP_ANSWERED) {
		*outcome = "answered";
		reply = ag_dump(json_pack("{s:O?, s:b, s:s}", "id", id, "ok", 1,
		    "answer", a->answer));
		if (reply == NULL)
			reply = ag_refuse(err, id, BUREAU_EINTERNAL,
			    "out of memory");
	} else if (a->state == AP_DENIED) {
		*outcome = "declined";
		reply = ag_refuse(err, id, BUREAU_EPERM,
		    "the operator declined to answer question %s: %s", a->id,
		    a->reason && *a->reason ? a->reason : "no reason given");
	} else {
		*outcome = "timeout";
		reply = ag_refuse(err, id, BUREAU_ETIMEOUT,
		    "no operator answered question %s within %ld s", a->id,
		    secs);
	}
	ag_approval_free(a);
	return (reply);
}

char *
ag_op_takeover(struct agent *ag, json_t *req)
{
	json_t *on = json_object_get(req, "on");
	char *cause = NULL, *reply;
	int rv, changed;

	if (!json_is_boolean(on))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'on' must be true or false"));
	pthread_mutex_lock(&ag->lock);
	changed = ag->takeover != json_is_true(on);
	ag->takeover = json_is_true(on);
	rv = ag_persist(ag, &cause);
	pthread_mutex_unlock(&ag->lock);
	/* The trail shows when an operator had control (the replay page
	 * marks it). */
	if (changed)
		audit_event(ag->audit, "takeover",
		    json_pack("{s:b}", "on", json_is_true(on)));
	fprintf(stderr, "bureau agent: takeover %s\n",
	    json_is_true(on) ? "on" : "off");
	/* In force either way; say when it would not survive a restart. */
	reply = rv == 0 ?
	    ag_dump(json_pack("{s:b, s:b}", "ok", 1, "takeover",
	        json_is_true(on))) :
	    ag_error(NULL, BUREAU_EIO, "takeover %s but not saved: %s",
	        json_is_true(on) ? "on" : "off", cause);
	free(cause);
	return (reply);
}
