/*
 * host-bridge/agent/agent_life.c: the host agent as the one owner of its
 * desktop's VM (DESIGN.md, "Nothing lost, one owner per desktop"). Every
 * change to the running VM is made here, one at a time: the operator ops
 * stop, pause, resume, snapshot, restore and fork (sent by the lifecycle
 * library, desk/, for the commands and Mission Control), the agent loop's
 * own fork (agent_fork.c), the idle save and the wake on request
 * (agent_idle.c). Each holds ag->vm_op and the desktop's lock file for
 * its whole course, so none sees the VM half-changed by another, and a
 * command that works on the files of a desktop without an agent (its
 * lock) never meets a change in flight either.
 *
 * A stop ends with ag->vm at AG_VM_STOPPED: requests are refused, and the
 * agent ends itself a moment after it replied (the library ends it too).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/desk/desk_int.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

/* How long an op waits for the desktop's lock (a `bureau start` holds it
 * until the desktop is ready; a command on its files for a moment). */
#define AG_LOCK_WAIT_MS 10000

char *
ag_life_error(int code, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL, *r;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	r = ag_dump(json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code",
	    desk_err_name(code), "message", msg ? msg : "out of memory"));
	free(msg);
	return (r);
}

static char *
ag_life_fail(struct desk_err *e)
{
	char *r = ag_life_error(e->code, "%s", e->cause ? e->cause : "failed");

	desk_err_clear(e);
	return (r);
}

int
ag_vm_begin(struct agent *ag, const char *what, int wait, int *lk, char **cause)
{
	long long end = hb_now_ms() + AG_LOCK_WAIT_MS;

	*lk = -1;
	if (wait)
		pthread_mutex_lock(&ag->vm_op);
	else if (pthread_mutex_trylock(&ag->vm_op) != 0) {
		*cause = hb_fmt("desktop '%s' is busy: its host agent is "
		                "changing it",
		    ag->d->name);
		return (-1);
	}
	for (;;) {
		char *c2 = NULL;

		if (store_lock(ag->d, what, lk, &c2) == 0)
			return (0);
		if (!wait || hb_now_ms() >= end) {
			*cause = c2;
			pthread_mutex_unlock(&ag->vm_op);
			return (-1);
		}
		free(c2);
		usleep(100000);
	}
}

void
ag_vm_end(struct agent *ag, int lk)
{
	if (lk >= 0)
		close(lk);
	pthread_mutex_unlock(&ag->vm_op);
}

static int
ag_vm_now(struct agent *ag)
{
	int v;

	pthread_mutex_lock(&ag->lock);
	v = ag->vm;
	pthread_mutex_unlock(&ag->lock);
	return (v);
}

static void
ag_vm_set(struct agent *ag, int v)
{
	pthread_mutex_lock(&ag->lock);
	ag->vm = v;
	pthread_cond_broadcast(&ag->vm_changed);
	pthread_mutex_unlock(&ag->lock);
}

/* Until the main thread saw QEMU end (ag->qemu 0), at most ms. */
static int
ag_vm_gone(struct agent *ag, int ms)
{
	struct timespec ts;
	int gone;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	pthread_mutex_lock(&ag->lock);
	while (ag->qemu != 0 &&
	    pthread_cond_timedwait(&ag->vm_changed, &ag->lock, &ts) == 0)
		;
	gone = ag->qemu == 0;
	pthread_mutex_unlock(&ag->lock);
	return (gone);
}

static void *
ag_exit_main(void *arg)
{
	/* (the reply is in the operator socket's buffer by then) */
	struct timespec ts = { 0, 500000000 };

	(void)arg;
	nanosleep(&ts, NULL);
	kill(getpid(), SIGTERM);
	return (NULL);
}

/* The agent of a stopped desktop ends a moment after it replied (the
 * library ends it at once; this is for one that asked and left). */
static void
ag_exit_soon(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, ag_exit_main, NULL) == 0)
		pthread_detach(t);
}

static const char *
stop_how_name(int how)
{
	return (desk_stopped_name(how));
}

/* The VM is down by a stop: exit.json says how, and what it left. */
static void
ag_stop_record(struct agent *ag, const struct desk_stop_res *r)
{
	char how[96];

	snprintf(how, sizeof how, "%s by bureau stop",
	    r->how == DESK_STOPPED_SAVED         ? "saved" :
	        r->how == DESK_STOPPED_SHUTDOWN  ? "shut down" :
	        r->how == DESK_STOPPED_DISCARDED ? "discarded (ephemeral)" :
	                                           "ended");
	ag_vm_record(ag, how, 1);
}

static char *
ag_stop_reply(const struct desk_stop_res *r)
{
	return (ag_dump(json_pack("{s:b, s:s, s:f, s:s?}", "ok", 1, "how",
	    stop_how_name(r->how), "seconds", r->seconds, "warning",
	    r->warning)));
}

/* {"op":"stop","how":"save"|"shutdown"|"force","timeout":S} */
static char *
ag_op_stop(struct agent *ag, json_t *req)
{
	static const char *const hows[] = { "save", "shutdown", "force" };
	const char *hs = json_string_value(json_object_get(req, "how"));
	json_t *jt = json_object_get(req, "timeout");
	struct desk_stop_res r = { 0 };
	struct desk_err e = { 0 };
	char *cause = NULL, *reply;
	long timeout = 120;
	int how = -1, lk, v;

	for (int i = 0; hs != NULL && i < 3; i++)
		if (strcmp(hs, hows[i]) == 0)
			how = i;
	if (how < 0 ||
	    (jt != NULL &&
	        (!json_is_integer(jt) || json_integer_value(jt) < 1 ||
	            json_integer_value(jt) > 86400)))
		return (ag_life_error(DESK_EINVAL,
		    how < 0 ? "field 'how' must be save, shutdown or force" :
		              "field 'timeout' must be 1 to 86400 seconds"));
	if (jt != NULL)
		timeout = (long)json_integer_value(jt);
	if (ag_vm_begin(ag, "stop", 1, &lk, &cause) != 0) {
		reply = ag_life_error(DESK_EBUSY, "%s", cause);
		free(cause);
		return (reply);
	}
	v = ag_vm_now(ag);
	if (v == AG_VM_STOPPED) {
		r.how = DESK_STOPPED_NOT_RUNNING;
	} else if (v == AG_VM_SAVED) {
		/* saved while idle: that state is what the next start
		 * restores, unless the stop is a power-off */
		r.how = DESK_STOPPED_IDLE;
		if (ag->d->ephemeral || how != DESK_STOP_SAVE) {
			vm_backend_for(ag->d)->discard(ag->d);
			r.how = ag->d->ephemeral ? DESK_STOPPED_DISCARDED :
			                           DESK_STOPPED_STATE_GONE;
		}
		ag_vm_set(ag, AG_VM_STOPPED);
	} else {
		/* requests wait while it goes, then find it stopped */
		ag_vm_set(ag, AG_VM_SAVING);
		if (desk_own_stop(ag->d, ag->guest, how, timeout, &r, &e) !=
		    0) {
			ag_vm_set(ag, AG_VM_UP);
			ag_vm_end(ag, lk);
			return (ag_life_fail(&e));
		}
		if (!ag_vm_gone(ag, 15000))
			fprintf(stderr,
			    "bureau agent: desktop '%s': qemu did not end "
			    "after the stop\n",
			    ag->d->name);
		ag_stop_record(ag, &r);
		ag_vm_set(ag, AG_VM_STOPPED);
	}
	fprintf(stderr, "bureau agent: desktop '%s': stopped (%s)\n",
	    ag->d->name, stop_how_name(r.how));
	ag_vm_end(ag, lk);
	reply = ag_stop_reply(&r);
	desk_stop_res_clear(&r);
	ag_exit_soon();
	return (reply);
}

/* {"op":"pause"} and {"op":"resume"} */
static char *
ag_op_pause(struct agent *ag, int resume)
{
	struct desk_resume_res r = { 0 };
	struct desk_err e = { 0 };
	char *cause = NULL, *reply;
	int lk, rv;

	if (ag_vm_begin(ag, resume ? "resume" : "pause", 1, &lk, &cause) != 0) {
		reply = ag_life_error(DESK_EBUSY, "%s", cause);
		free(cause);
		return (reply);
	}
	if (ag_vm_now(ag) != AG_VM_UP) {
		ag_vm_end(ag, lk);
		return (ag_life_error(DESK_ENOTAPPLY,
		    "desktop '%s' is not running (%s)", ag->d->name,
		    ag_vm_now(ag) == AG_VM_SAVED ?
		        "saved while idle: a request restores it" :
		        "stopped"));
	}
	rv = resume ? desk_own_resume(ag->d, &e) : desk_own_pause(ag->d, &e);
	ag_vm_end(ag, lk);
	if (rv != 0)
		return (ag_life_fail(&e));
	/* (with the VM's lock let go: a slow guest holds no other step) */
	if (resume)
		desk_own_clock(ag->d, ag->guest, &r.warning);
	reply = ag_dump(
	    json_pack("{s:b, s:s?}", "ok", 1, "warning", r.warning));
	free(r.warning);
	return (reply);
}

/* {"op":"snapshot"|"restore","tag":T,"discard_saved":B} */
static char *
ag_op_snap(struct agent *ag, json_t *req, int restore)
{
	const char *tag = json_string_value(json_object_get(req, "tag"));
	int discard = json_is_true(json_object_get(req, "discard_saved"));
	struct desk_snap_res r = { 0 };
	struct desk_err e = { 0 };
	char *cause = NULL, *reply;
	int lk, v, rv;

	if (desk_valid_tag(tag, &e) != 0)
		return (ag_life_fail(&e));
	if (ag_vm_begin(ag, restore ? "restore" : "snapshot", 1, &lk, &cause) !=
	    0) {
		reply = ag_life_error(DESK_EBUSY, "%s", cause);
		free(cause);
		return (reply);
	}
	v = ag_vm_now(ag);
	if (v == AG_VM_STOPPED) {
		ag_vm_end(ag, lk);
		return (ag_life_error(DESK_ENOTAPPLY,
		    "desktop '%s' is stopping", ag->d->name));
	}
	/* saved while idle: its disks, its saved state kept (a restore
	 * under it only when asked to discard it) */
	if (v == AG_VM_SAVED && restore && !discard) {
		ag_vm_end(ag, lk);
		return (ag_life_error(DESK_ENOTAPPLY,
		    "desktop '%s' is saved (while idle): restoring '%s' to its "
		    "disks discards its saved state (the programs it runs are "
		    "lost); bureau restore --discard-saved %s %s does that",
		    ag->d->name, tag, ag->d->name, tag));
	}
	rv = desk_own_snapshot(ag->d, tag, restore, &r, &e);
	ag_vm_end(ag, lk);
	if (rv != 0)
		return (ag_life_fail(&e));
	if (restore && r.live)
		desk_own_clock(ag->d, ag->guest, &r.warning);
	reply = ag_dump(json_pack("{s:b, s:b, s:b, s:s?}", "ok", 1, "live",
	    r.live, "saved", r.saved, "warning", r.warning));
	desk_snap_res_clear(&r);
	return (reply);
}

/* The forks of name that its agent loop made, counted. */
struct fork_count {
	const char *parent;
	int n;
};

static int
ag_fork_each(const char *name, void *arg)
{
	struct fork_count *fc = arg;
	struct desktop *d = NULL;
	char *cause = NULL;

	if (desktop_load(name, &d, &cause) == 0 && d->agent_made &&
	    d->fork_of != NULL && strcmp(d->fork_of, fc->parent) == 0)
		fc->n++;
	free(cause);
	desktop_free(d);
	return (0);
}

/*
 * May the agent loop fork its desktop now (held under ag->vm_op, so two
 * asks cannot both pass)? A fork costs the host a desktop: at most
 * max_forks of the agent loop's forks live at once (--max-forks; bureau
 * config changes it), and a desktop that is itself such a fork forks only where
 * its operator named the class on it (fork, system.fork): it did not
 * inherit it.
 */
static int
ag_fork_cap(struct agent *ag, struct desk_err *e)
{
	struct fork_count fc = { ag->d->name, 0 };
	int max, named = 0;

	pthread_mutex_lock(&ag->lock);
	max = ag->d->max_forks; /* (the policy op changes it) */
	for (int i = 0; i < ag->allow.n; i++)
		named |= strcmp(ag->allow.items[i], "fork") == 0 ||
		    strcmp(ag->allow.items[i], "system.fork") == 0;
	pthread_mutex_unlock(&ag->lock);
	if (ag->d->agent_made && !named)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is a fork its parent's agent made: it forks "
		    "only where its operator names the class 'fork' on it "
		    "(bureau policy %s --allow ...,fork)",
		    ag->d->name, ag->d->name));
	store_each(ag_fork_each, &fc);
	if (fc.n >= max)
		return (desk_fail(e, DESK_EQUOTA,
		    "desktop '%s' has %d forks its agent made, its most at "
		    "once (--max-forks %d): stop one first",
		    ag->d->name, fc.n, max));
	return (0);
}

int
ag_life_fork(struct agent *ag, const struct desk_fork_opts *o,
    struct desk_fork_res *r, struct desk_err *e)
{
	char *cause = NULL;
	int lk, rv, v;

	if (ag_vm_begin(ag, "fork", 1, &lk, &cause) != 0)
		return (desk_fail_take(e, DESK_EBUSY, cause));
	v = ag_vm_now(ag);
	/* saved while idle: woken first, a fork is of a running desktop */
	if (v == AG_VM_SAVED && ag_wake_owned(ag, &cause) != 0) {
		ag_vm_end(ag, lk);
		desk_fail(e, DESK_EFAIL,
		    "cannot wake desktop '%s', saved while idle: %s",
		    ag->d->name, cause ? cause : "?");
		free(cause);
		return (-1);
	}
	if (ag_vm_now(ag) != AG_VM_UP) {
		ag_vm_end(ag, lk);
		return (desk_fail(e, DESK_ENOTAPPLY, "desktop '%s' is stopping",
		    ag->d->name));
	}
	rv = o->by_agent && ag_fork_cap(ag, e) != 0 ?
	    -1 :
	    desk_own_fork(ag->d, o, r, e);
	ag_vm_end(ag, lk);
	if (rv == 0)
		fprintf(stderr,
		    "bureau agent: desktop '%s': forked into '%s' (stood "
		    "still %.2f s)\n",
		    ag->d->name, r->name, r->paused_ms / 1000.0);
	return (rv);
}

/* {"op":"fork","fork":{name, ephemeral, net, net_allow, allow, approve}} */
static char *
ag_op_fork(struct agent *ag, json_t *req)
{
	struct desk_fork_opts o;
	struct desk_fork_res r = { 0 };
	struct desk_err e = { 0 };
	char *reply;

	if (desk_fork_opts_of(json_object_get(req, "fork"), &o, &e) != 0 ||
	    ag_life_fork(ag, &o, &r, &e) != 0)
		return (ag_life_fail(&e));
	reply = ag_dump(desk_fork_res_json(&r));
	desk_fork_res_clear(&r);
	return (reply);
}

int
ag_life_is(const char *op)
{
	static const char *const ops[] = { "stop", "pause", "resume",
		"snapshot", "restore", "fork" };

	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(op, ops[i]) == 0)
			return (1);
	return (0);
}

char *
ag_life_op(struct agent *ag, const char *op, json_t *req)
{
	if (ag->d->attached)
		return (ag_life_error(DESK_ENOTAPPLY,
		    "'%s' does not apply to desktop '%s': it is attached (its "
		    "daemon at %s runs outside bureau; bureau rm forgets it)",
		    op, ag->d->name, ag->d->url));
	if (strcmp(op, "stop") == 0)
		return (ag_op_stop(ag, req));
	if (strcmp(op, "pause") == 0 || strcmp(op, "resume") == 0)
		return (ag_op_pause(ag, strcmp(op, "resume") == 0));
	if (strcmp(op, "snapshot") == 0 || strcmp(op, "restore") == 0)
		return (ag_op_snap(ag, req, strcmp(op, "restore") == 0));
	return (ag_op_fork(ag, req));
}
