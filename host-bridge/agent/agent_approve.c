/*
 * host-bridge/agent/agent_approve.c: approvals (a request the policy sends to
 * an operator waits for their decision) and the takeover.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/util/util.h"

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

char *
ag_wait_approval(struct agent *ag, json_t *id, json_t *req, const char *tool,
    const char *action, const char **err)
{
	struct approval *a;
	struct timespec until;
	char *hex, *reply = NULL;
	long secs = ag->approve_timeout;
	int rv = 0;

	if (ag->pending >= AG_WORKERS - AG_FREE)
		return (ag_refuse(err, id, BUREAU_EBUSY,
		    "%d requests already wait for an operator's approval on "
		    "desktop '%s': retry later",
		    ag->pending, ag->d->name));
	if ((a = calloc(1, sizeof *a)) == NULL ||
	    (hex = hb_random_hex(8)) == NULL) {
		free(a);
		return (ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory"));
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
		return (ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory"));
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

static json_t *
ag_approval_json(const struct agent *ag, const struct approval *a)
{
	return (json_pack("{s:s, s:s, s:s, s:s?, s:O, s:f}", "desktop",
	    ag->d->name, "approval", a->id, "tool", a->tool, "action",
	    a->action, "request", a->request, "since", a->since));
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
	} else {
		a->state = json_is_true(allow) ? AP_ALLOWED : AP_DENIED;
		if (reason != NULL)
			a->reason = strdup(json_string_value(reason));
		pthread_cond_broadcast(&ag->decided);
		/* The decision in words for the log, not an error code. */
		fprintf(stderr, "bureau agent: approval %s %s\n", a->id,
		    a->state == AP_ALLOWED ? "allowed" : "denied");
		reply = ag_dump(json_pack("{s:b, s:s, s:b}", "ok", 1,
		    "approval", a->id, "allow", a->state == AP_ALLOWED));
	}
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

char *
ag_op_takeover(struct agent *ag, json_t *req)
{
	json_t *on = json_object_get(req, "on");
	char *cause = NULL, *reply;
	int rv;

	if (!json_is_boolean(on))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'on' must be true or false"));
	pthread_mutex_lock(&ag->lock);
	ag->takeover = json_is_true(on);
	rv = ag_persist(ag, &cause);
	pthread_mutex_unlock(&ag->lock);
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
