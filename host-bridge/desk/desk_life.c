/*
 * host-bridge/desk/desk_life.c: stop, pause, resume, snapshot and restore
 * (desk.h). A desktop whose host agent runs is changed by the agent (an
 * operator op: it owns the VM and does one change at a time, its idle
 * save and wake among them); one without is changed here, under its lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

/* How long an op may wait for its agent: a save writes the devices (a
 * clone's first save its changed RAM: seconds), a shutdown waits for the
 * guest, a live snapshot writes the RAM. */
#define DESK_OP_MS(timeout_s) ((int)((timeout_s) + 120) * 1000)

static const char *const stop_hows[] = { "save", "shutdown", "force" };

void
desk_stop_res_clear(struct desk_stop_res *r)
{
	free(r->warning);
	free(r->said);
	memset(r, 0, sizeof *r);
}

void
desk_snap_res_clear(struct desk_snap_res *r)
{
	free(r->warning);
	free(r->said);
	memset(r, 0, sizeof *r);
}

/* On another machine, its agent there silent: the bureau there does it
 * (`bureau VERB [OPT] NAME [ARG]`), *said what it said. */
static int
there(const struct desktop *d, const char *verb, const char *opt,
    const char *arg, char **said, struct desk_err *e)
{
	char *w[4];
	int n = 0;

	w[n++] = (char *)verb;
	if (opt != NULL)
		w[n++] = (char *)opt;
	w[n++] = d->name;
	if (arg != NULL)
		w[n++] = (char *)arg;
	return (desk_remote_run(d, w, n, said, e));
}

/* r from an op's reply: {"how", "seconds", "warning"}. */
static void
stop_res_of(json_t *reply, struct desk_stop_res *r)
{
	const char *how = json_string_value(json_object_get(reply, "how"));
	const char *w = json_string_value(json_object_get(reply, "warning"));
	static const char *const names[] = { "saved", "shutdown", "forced",
		"discarded", "not_running", "idle", "state_gone" };

	r->how = DESK_STOPPED_SAVED;
	for (size_t i = 0; how != NULL && i < sizeof names / sizeof names[0];
	     i++)
		if (strcmp(how, names[i]) == 0)
			r->how = (int)i;
	r->seconds = json_number_value(json_object_get(reply, "seconds"));
	r->warning = w ? strdup(w) : NULL;
}

const char *
desk_stopped_name(int how)
{
	static const char *const names[] = { "saved", "shutdown", "forced",
		"discarded", "not_running", "idle", "state_gone" };

	return (how >= 0 && how < 7 ? names[how] : "saved");
}

/* A stop by the agent: it saves (or ends) the VM and says so, then it
 * ends itself; we wait for that (or end it). */
static int
stop_by_agent(const struct desktop *d, int how, long timeout_s,
    struct desk_stop_res *r, struct desk_err *e)
{
	json_t *reply = NULL;
	char *cause = NULL;

	if (desk_op(d,
	        json_pack("{s:s, s:s, s:I}", "op", "stop", "how",
	            stop_hows[how], "timeout", (json_int_t)timeout_s),
	        DESK_OP_MS(timeout_s), &reply, e) != 0)
		return (-1);
	stop_res_of(reply, r);
	json_decref(reply);
	/* an agent on another machine ends itself there a moment after
	 * its reply: once it no longer answers, the desktop is stopped */
	if (d->remote_dir != NULL) {
		long long end = hb_now_ms() + 15000;

		while (desk_agent_answers(d) && hb_now_ms() < end)
			usleep(100000);
		desk_remote_note(d,
		    r->how == DESK_STOPPED_SAVED ||
		            r->how == DESK_STOPPED_IDLE ?
		        "saved" :
		        "stopped");
		return (0);
	}
	if (agent_stop(d, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	/* an ephemeral fork's agent took its directory with it */
	if (d->ephemeral && r->how == DESK_STOPPED_DISCARDED)
		hb_rm_tree(d->dir);
	return (0);
}

/* No agent runs and we hold the lock: the VM, if one runs without its
 * agent, is ours to stop; a saved state is forgotten by --shutdown and
 * --force. */
static int
stop_here(const struct desktop *d, int how, long timeout_s,
    struct desk_stop_res *r, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);

	if (vm->pid(d) != 0) {
		if (desk_own_stop(d, NULL, how, timeout_s, r, e) != 0)
			return (-1);
		if (r->how == DESK_STOPPED_DISCARDED)
			hb_rm_tree(d->dir);
		return (0);
	}
	if (d->ephemeral) {
		hb_rm_tree(d->dir);
		r->how = DESK_STOPPED_DISCARDED;
	} else if (how != DESK_STOP_SAVE && vm->saved(d)) {
		vm->discard(d);
		r->how = DESK_STOPPED_STATE_GONE;
	} else {
		r->how = DESK_STOPPED_NOT_RUNNING;
	}
	return (0);
}

int
desk_stop(const char *name, int how, long timeout_s, struct desk_stop_res *r,
    struct desk_err *e)
{
	struct desktop *d = NULL;
	int lk = -1, rv = -1, own;

	memset(r, 0, sizeof *r);
	if (how < DESK_STOP_SAVE || how > DESK_STOP_FORCE)
		return (desk_fail(e, DESK_EINVAL, "no such way to stop"));
	if (desk_load(name, &d, e) != 0 ||
	    desk_not_attached(d, "stop", e) != 0 ||
	    (own = desk_owner(d, "stop", &lk, e)) < 0)
		goto out;
	desk_all_unmark(d); /* stopped by hand: start --all leaves it be */
	if (own == DESK_REMOTE)
		rv = there(d, "stop",
		    how == DESK_STOP_FORCE        ? "--force" :
		        how == DESK_STOP_SHUTDOWN ? "--shutdown" :
		                                    NULL,
		    NULL, &r->said, e);
	else if (own == DESK_BY_AGENT &&
	    ((rv = stop_by_agent(d, how, timeout_s, r, e)) == 0 ||
	        e->code != DESK_EOLDAGENT))
		;
	else if (own == DESK_BY_AGENT) {
		/* an older bureau's agent: its VM stopped from here, under
		 * the lock, as that bureau's own stop did, then the agent */
		char *cause = NULL;

		desk_err_clear(e);
		if ((rv = desk_lock(d, "stop", &lk, e)) == 0 &&
		    (rv = stop_here(d, how, timeout_s, r, e)) == 0 &&
		    agent_stop(d, &cause) != 0)
			rv = desk_fail_take(e, DESK_EFAIL, cause);
	} else
		rv = stop_here(d, how, timeout_s, r, e);
out:
	if (lk >= 0)
		close(lk);
	desktop_free(d);
	return (rv);
}

/*
 * req (stolen) to d's host agent: 0 with *reply. An agent an older bureau
 * started (it runs on across an upgrade) knows no lifecycle op: then 0
 * with *own DESK_HERE and the lock taken (*lk), for the caller to do it
 * here as that bureau did. -1 with e otherwise.
 */
static int
op_or_here(const struct desktop *d, const char *what, json_t *req, int ms,
    int *own, int *lk, json_t **reply, struct desk_err *e)
{
	if (desk_op(d, req, ms, reply, e) == 0)
		return (0);
	if (e->code != DESK_EOLDAGENT)
		return (-1);
	desk_err_clear(e);
	if (desk_lock(d, what, lk, e) != 0)
		return (-1);
	*own = DESK_HERE;
	return (0);
}

/* pause (resume 0) or resume. */
static int
pause_resume(const char *name, int resume, struct desk_resume_res *r,
    struct desk_err *e)
{
	const char *what = resume ? "resume" : "pause";
	struct desktop *d = NULL;
	json_t *reply = NULL;
	char *dropped = NULL;
	int lk = -1, rv = -1, own, clock = 0;

	if (desk_load(name, &d, e) != 0 || desk_not_attached(d, what, e) != 0 ||
	    (own = desk_owner(d, what, &lk, e)) < 0)
		goto out;
	if (own == DESK_REMOTE) {
		char *said = NULL;
		rv = there(d, what, NULL, NULL, &said, e);
		if (r != NULL)
			r->said = said;
		else
			free(said);
		goto out;
	}
	if (own == DESK_BY_AGENT &&
	    op_or_here(d, what, json_pack("{s:s}", "op", what), DESK_OP_MS(0),
	        &own, &lk, &reply, e) != 0)
		goto out;
	if (own == DESK_BY_AGENT) {
		if (r != NULL &&
		    json_is_string(json_object_get(reply, "warning")))
			r->warning = strdup(json_string_value(
			    json_object_get(reply, "warning")));
		rv = 0;
	} else {
		rv = resume ? desk_own_resume(d, e) : desk_own_pause(d, e);
		clock = rv == 0 && resume;
	}
out:
	json_decref(reply);
	if (lk >= 0)
		close(lk);
	/* (the lock let go first: desk_own_clock) */
	if (clock)
		desk_own_clock(d, NULL, r != NULL ? &r->warning : &dropped);
	free(dropped);
	desktop_free(d);
	return (rv);
}

int
desk_pause(const char *name, struct desk_err *e)
{
	return (pause_resume(name, 0, NULL, e));
}

int
desk_resume(const char *name, struct desk_resume_res *r, struct desk_err *e)
{
	memset(r, 0, sizeof *r);
	return (pause_resume(name, 1, r, e));
}

int
desk_valid_tag(const char *tag, struct desk_err *e)
{
	size_t n = tag ? strlen(tag) : 0;

	if (n == 0 || n > 64 || tag[0] == '-' ||
	    tag[strspn(tag,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789-_.")] != '\0')
		return (desk_fail(e, DESK_EINVAL,
		    "invalid snapshot tag '%s': letters, digits, '-', '_' "
		    "and '.'",
		    tag ? tag : ""));
	return (0);
}

/* snapshot (restore 0) or restore of tag. */
static int
snap(const char *name, const char *tag, int restore, int discard,
    struct desk_snap_res *r, struct desk_err *e)
{
	const char *what = restore ? "restore" : "snapshot";
	const struct vm_backend *vm;
	struct desktop *d = NULL;
	json_t *reply = NULL;
	int lk = -1, rv = -1, own, clock = 0;

	memset(r, 0, sizeof *r);
	if (desk_valid_tag(tag, e) != 0 || desk_load(name, &d, e) != 0 ||
	    desk_not_attached(d, what, e) != 0 ||
	    (own = desk_owner(d, what, &lk, e)) < 0)
		goto out;
	if (own == DESK_REMOTE) {
		rv = there(d, what,
		    restore && discard ? "--discard-saved" : NULL, tag,
		    &r->said, e);
		goto out;
	}
	if (own == DESK_BY_AGENT &&
	    op_or_here(d, what,
	        json_pack("{s:s, s:s, s:b}", "op", what, "tag", tag,
	            "discard_saved", discard),
	        DESK_OP_MS(300), &own, &lk, &reply, e) != 0)
		goto out;
	if (own == DESK_BY_AGENT) {
		r->live = json_is_true(json_object_get(reply, "live"));
		r->saved = json_is_true(json_object_get(reply, "saved"));
		if (json_is_string(json_object_get(reply, "warning")))
			r->warning = strdup(json_string_value(
			    json_object_get(reply, "warning")));
		rv = 0;
		goto out;
	}
	vm = vm_backend_for(d);
	/* Disks taken back under a saved state are not the disks its memory
	 * knew: the state goes, with the programs it ran. Said before, not
	 * after. */
	if (restore && !discard && vm->pid(d) == 0 && vm->saved(d)) {
		desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is saved: restoring '%s' to its disks "
		    "discards its saved state (the programs it runs are lost); "
		    "bureau restore --discard-saved %s %s does that, or start "
		    "it and restore '%s' live",
		    d->name, tag, d->name, tag, tag);
		goto out;
	}
	rv = desk_own_snapshot(d, tag, restore, r, e);
	clock = rv == 0 && restore && r->live;
out:
	json_decref(reply);
	if (lk >= 0)
		close(lk);
	if (clock)
		desk_own_clock(d, NULL, &r->warning);
	desktop_free(d);
	return (rv);
}

int
desk_snapshot(const char *name, const char *tag, struct desk_snap_res *r,
    struct desk_err *e)
{
	return (snap(name, tag, 0, 0, r, e));
}

int
desk_restore(const char *name, const char *tag, int discard_saved,
    struct desk_snap_res *r, struct desk_err *e)
{
	return (snap(name, tag, 1, discard_saved, r, e));
}

int
desk_rm(const char *name, int force, struct desk_err *e)
{
	struct desk_stop_res r = { 0 };
	struct desktop *d = NULL;
	char *cause = NULL;
	int lk = -1, rv = -1, running;

	if (desk_load(name, &d, e) != 0)
		goto out;
	if (d->remote_dir != NULL) {
		desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is on host '%s', another machine: `bureau rm "
		    "%s` removes it there",
		    d->name, d->host ? d->host : "?", d->name);
		goto out;
	}
	running = !d->attached &&
	    (vm_backend_for(d)->pid(d) != 0 || store_agent_pid(d) != 0);
	if (running && !force) {
		desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is running (bureau stop, or rm --force)",
		    d->name);
		goto out;
	}
	/* its owner ends its VM first (the agent, or this under the lock) */
	if (running && desk_stop(name, DESK_STOP_FORCE, 30, &r, e) != 0)
		goto out;
	if (d->ephemeral && r.how == DESK_STOPPED_DISCARDED) {
		rv = 0; /* gone with its stop */
		goto out;
	}
	if (desk_lock(d, "rm", &lk, e) != 0)
		goto out;
	/* an attached desktop's agent goes with it; its daemon stays */
	if (store_agent_pid(d) != 0 && agent_stop(d, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL, cause);
		goto out;
	}
	if (hb_rm_tree(d->dir) != 0) {
		desk_fail(e, DESK_EFAIL, "cannot remove '%s': %s", d->dir,
		    strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (lk >= 0)
		close(lk);
	desk_stop_res_clear(&r);
	desktop_free(d);
	return (rv);
}
