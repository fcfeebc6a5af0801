/*
 * host-bridge/desk/desk.c: the library's errors, and how a call finds the
 * desktop's owner: its host agent (an operator op), or, when none runs,
 * the caller under the desktop's lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/desk/desk.h"
#include "host-bridge/desk/desk_int.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

static const char *const desk_names[] = {
	[DESK_OK] = "ok",
	[DESK_EINVAL] = "invalid_argument",
	[DESK_ENOTFOUND] = "not_found",
	[DESK_EEXIST] = "exists",
	[DESK_EBUSY] = "busy",
	[DESK_ENOTAPPLY] = "not_applicable",
	[DESK_EQUOTA] = "quota",
	[DESK_EUNREACH] = "unreachable",
	[DESK_EFAIL] = "failed",
	[DESK_EOLDAGENT] = "failed",
};

void
desk_err_clear(struct desk_err *e)
{
	free(e->cause);
	e->cause = NULL;
	e->code = DESK_OK;
}

int
desk_fail_take(struct desk_err *e, int code, char *cause)
{
	free(e->cause);
	e->code = code;
	e->cause = cause ? cause : hb_fmt("out of memory");
	return (-1);
}

int
desk_fail(struct desk_err *e, int code, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return (desk_fail_take(e, code, s));
}

const char *
desk_err_name(int code)
{
	if (code < 0 ||
	    (size_t)code >= sizeof desk_names / sizeof desk_names[0] ||
	    desk_names[code] == NULL)
		return ("failed");
	return (desk_names[code]);
}

int
desk_code_of(const char *wire)
{
	if (wire == NULL)
		return (DESK_EFAIL);
	for (size_t i = 1; i < sizeof desk_names / sizeof desk_names[0]; i++)
		if (desk_names[i] != NULL && strcmp(desk_names[i], wire) == 0)
			return ((int)i);
	/* the protocol's own, as an agent answers them */
	if (strcmp(wire, "not_found") == 0)
		return (DESK_ENOTFOUND);
	if (strcmp(wire, "bad_request") == 0 ||
	    strcmp(wire, "unknown_action") == 0)
		return (DESK_EINVAL);
	if (strcmp(wire, "permission_denied") == 0)
		return (DESK_ENOTAPPLY);
	return (DESK_EFAIL);
}

void
desk_note(const struct desk_notes *n, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	if (n == NULL || n->fn == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s != NULL)
		n->fn(n->arg, s);
	free(s);
}

int
desk_check_net(const char *net, const char *net_allow, int none_else,
    struct desk_err *e)
{
	char *cause = NULL;
	int none = net != NULL ? strcmp(net, "none") == 0 : none_else;

	if (net != NULL && strcmp(net, "none") != 0 &&
	    strcmp(net, "internet") != 0)
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --net '%s': none or internet", net));
	if (net_allow != NULL &&
	    net_allow_check(net_allow, 0, NULL, &cause) != 0)
		return (desk_fail_take(e, DESK_EINVAL, cause));
	if (net_allow != NULL && none)
		return (desk_fail(e, DESK_EINVAL,
		    "--net-allow opens exceptions to --net internet: not "
		    "with --net none"));
	return (0);
}

int
desk_new_dir(struct desktop *d, int *lk, int *created, struct desk_err *e)
{
	char *cause = NULL;

	if (store_lock_all(lk, &cause) == 0 &&
	    store_create_dir(d, created, &cause) == 0 &&
	    store_pick_port(&d->port, &cause) == 0)
		return (0);
	return (desk_fail_take(e,
	    cause != NULL && strstr(cause, "exists") != NULL ? DESK_EEXIST :
	                                                       DESK_EFAIL,
	    cause));
}

int
desk_load(const char *name, struct desktop **d, struct desk_err *e)
{
	char *cause = NULL;

	if (desktop_load(name, d, &cause) == 0)
		return (0);
	*d = NULL;
	return (desk_fail_take(e, DESK_ENOTFOUND, cause));
}

int
desk_not_attached(const struct desktop *d, const char *what, struct desk_err *e)
{
	if (!d->attached)
		return (0);
	return (desk_fail(e, DESK_ENOTAPPLY,
	    "'%s' does not apply to desktop '%s': it is attached (its "
	    "daemon at %s runs outside bureau; bureau rm forgets it)",
	    what, d->name, d->url));
}

int
desk_lock(const struct desktop *d, const char *what, int *lk,
    struct desk_err *e)
{
	char *cause = NULL;

	if (store_lock(d, what, lk, &cause) == 0)
		return (0);
	return (desk_fail_take(e, DESK_EBUSY, cause));
}

int
desk_op(const struct desktop *d, json_t *req, int timeout_ms, json_t **reply,
    struct desk_err *e)
{
	json_t *r = NULL, *err;
	char *cause = NULL;
	int rv;

	*reply = NULL;
	if (req == NULL)
		return (desk_fail(e, DESK_EFAIL, "out of memory"));
	rv = op_exchange(d, req, timeout_ms, &r, &cause);
	if (rv == 1)
		return (desk_fail_take(e, DESK_ENOTAPPLY, cause));
	/* it answered a moment ago (desk_owner): an agent that ended since
	 * (its desktop stopped by another) is a busy desktop, not a fault */
	if (rv != 0 && d->remote_dir == NULL && store_agent_pid(d) == 0) {
		free(cause);
		return (desk_fail(e, DESK_EBUSY,
		    "desktop '%s' is busy: its host agent ended while this "
		    "was asked (another stopped it); ask again",
		    d->name));
	}
	if (rv != 0)
		return (desk_fail_take(e, DESK_EUNREACH, cause));
	if (!json_is_true(json_object_get(r, "ok"))) {
		const char *code, *msg;

		err = json_object_get(r, "error");
		code = json_string_value(json_object_get(err, "code"));
		msg = json_string_value(json_object_get(err, "message"));
		desk_fail(e,
		    /* an agent an older bureau started (it runs on across
		     * an upgrade) knows no lifecycle op */
		    code != NULL && strcmp(code, "unknown_action") == 0 &&
		            msg != NULL && strncmp(msg, "unknown op", 10) == 0 ?
		        DESK_EOLDAGENT :
		        desk_code_of(code),
		    "%s", msg ? msg : "the host agent refused it");
		json_decref(r);
		return (-1);
	}
	*reply = r;
	return (0);
}

static desk_remote_fn desk_remote;

void
desk_set_remote(desk_remote_fn fn)
{
	desk_remote = fn;
}

int
desk_remote_run(const struct desktop *d, char *const *words, int n, char **said,
    struct desk_err *e)
{
	int rc;

	*said = NULL;
	if (desk_remote == NULL)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is on host '%s', another machine, and its "
		    "host agent there does not answer: `bureau %s %s` sends "
		    "it there",
		    d->name, d->host ? d->host : "?", words[0], d->name));
	if ((rc = desk_remote(d, words, n, said)) == 0)
		return (0);
	desk_fail(e, rc == 255 ? DESK_EUNREACH : DESK_EFAIL,
	    "on host '%s': `bureau %s %s` failed%s%s", d->host ? d->host : "?",
	    words[0], d->name, *said && **said ? ": " : "", *said ? *said : "");
	free(*said);
	*said = NULL;
	return (-1);
}

void
desk_remote_note(const struct desktop *d, const char *state)
{
	char *p = desktop_path(d, "remote-state"), *cause = NULL;

	if (p != NULL &&
	    hb_write_file(p, state, strlen(state), 0600, &cause) != 0)
		free(cause);
	free(p);
}

int
desk_agent_answers(const struct desktop *d)
{
	json_t *r = NULL;
	char *cause = NULL;
	int ok = op_exchange(d, json_pack("{s:s}", "op", "state"), 5000, &r,
	             &cause) == 0 &&
	    json_is_true(json_object_get(r, "ok"));

	json_decref(r);
	free(cause);
	return (ok);
}

/*
 * A host agent that holds its pid lock and does not answer is starting
 * (its operator socket opens once its VM runs) or ending. A `bureau
 * start` holds the desktop's lock while its agent starts: then that is
 * the answer (busy). Else it is waited for, a moment at a time: it
 * answers, or it is gone and the desktop is ours under the lock.
 */
#define DESK_OWNER_WAIT_MS 30000

int
desk_owner(const struct desktop *d, const char *what, int *lk,
    struct desk_err *e)
{
	long long end = hb_now_ms() + DESK_OWNER_WAIT_MS;
	pid_t pid = 0;

	*lk = -1;
	if (d->remote_dir != NULL)
		return (desk_agent_answers(d) ? DESK_BY_AGENT : DESK_REMOTE);
	for (;;) {
		if ((pid = store_agent_pid(d)) == 0) {
			if (desk_lock(d, what, lk, e) != 0)
				return (-1);
			/* none can start while the lock is held */
			if (store_agent_pid(d) == 0)
				return (DESK_HERE);
			close(*lk);
			*lk = -1;
			continue;
		}
		if (desk_agent_answers(d))
			return (DESK_BY_AGENT);
		if (desk_lock(d, what, lk, e) != 0)
			return (-1); /* busy: the start of its agent */
		close(*lk);
		*lk = -1;
		desk_err_clear(e);
		if (hb_now_ms() >= end)
			return (desk_fail(e, DESK_EUNREACH,
			    "the host agent of desktop '%s' (pid %d) does not "
			    "answer on its operator socket",
			    d->name, (int)pid));
		usleep(100000);
	}
}
