/*
 * host-bridge/desk/desk_start.c: a desktop started (desk.h). Its host
 * agent is started (a process of its own, as lima's hostagent is), and
 * the agent starts the VM as its child: from its saved state when it has
 * one, else a boot. This waits until a ping with the agent token answers
 * through the agent's endpoint (the guest's daemon answers the agent) and
 * the session has drawn, the guest's clock stepped to the host's.
 *
 * A VM that runs without its agent (the agent was killed) is adopted: a
 * new agent takes the same QEMU. A boot whose console stays silent before
 * its login prompt has hung (an intermittent early hang of TCG guests) and
 * is started again, once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

void
desk_start_res_clear(struct desk_start_res *r)
{
	free(r->restore_failed);
	free(r->vnc);
	free(r->said);
	memset(r, 0, sizeof *r);
}

/* A desktop made before the host agent has one token, which its guest
 * knew: it stays the guest's, and the agent gets a new one. */
static int
start_guest_token(const struct desktop *d, char **cause)
{
	char *gp = desktop_path(d, "guest-token"),
	     *tp = desktop_path(d, "token");
	char *old = NULL, *tok = NULL;
	int rv = -1;

	if (gp == NULL || tp == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (access(gp, F_OK) == 0) {
		rv = 0;
		goto out;
	}
	if ((old = hb_read_file(tp)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", tp, strerror(errno));
		goto out;
	}
	if ((tok = hb_random_hex(32)) == NULL) {
		*cause = hb_fmt("no random bytes: %s", strerror(errno));
		goto out;
	}
	if (hb_write_file(gp, old, strlen(old), 0600, cause) == 0 &&
	    hb_write_file(tp, tok, strlen(tok), 0600, cause) == 0)
		rv = 0;
out:
	free(gp);
	free(tp);
	free(old);
	free(tok);
	return (rv);
}

/* A start, as it goes. */
struct start {
	const struct desk_start_opts *o;
	struct desk_start_res *r;
	const struct vm_backend *vm;
	struct desktop *d;
	struct image im;
	const char *accel;
	long timeout;
	int lk, stall_retried;
	long long t0, stall_ms;
	pid_t agent;
};

/* The accelerator an adopted VM runs on, as its start recorded it
 * (desktop file `accel`): 0, or -1 when not known. */
static int
start_adopt_accel(struct start *s)
{
	char *p = desktop_path(s->d, "accel"), *a = p ? hb_read_file(p) : NULL;
	int rv = -1;

	if (a != NULL) {
		a[strcspn(a, "\r\n")] = '\0';
		if (strcmp(a, "kvm") == 0 || strcmp(a, "tcg") == 0) {
			s->accel = strcmp(a, "kvm") == 0 ? "kvm" : "tcg";
			rv = 0;
		}
	}
	free(a);
	free(p);
	return (rv);
}

/* store_update's change: desktop.json's port. */
static int
start_port_set(json_t *cfg, void *arg, char **cause)
{
	if (json_object_set_new(cfg, "port", json_integer(*(int *)arg)) != 0) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	return (0);
}

/*
 * The desktop's three ports free on 127.0.0.1, or others taken in their
 * place: another program (a desktop of another store, another user's)
 * may hold them since they were picked. The move is said (a note), and
 * desktop.json and the endpoint file name the new ones.
 */
static int
start_ports(struct start *s, struct desk_err *e)
{
	char *cause = NULL, *ep = NULL;
	int taken = -1, port = 0, lka = -1, rv = -1;

	for (int p = s->d->port; p < s->d->port + 3 && taken < 0; p++)
		if (!store_port_free(p))
			taken = p;
	if (taken < 0)
		return (0);
	if (store_lock_all(&lka, &cause) != 0 ||
	    store_pick_port(&port, &cause) != 0 ||
	    store_update(s->d, start_port_set, &port, &cause) != 0 ||
	    (ep = hb_fmt("tcp://127.0.0.1:%d\n", port)) == NULL ||
	    store_put(s->d, "endpoint", ep, 0644, &cause) != 0) {
		desk_fail(e, DESK_EBUSY,
		    "port %d of desktop '%s' is in use on 127.0.0.1, and no "
		    "other could be taken: %s",
		    taken, s->d->name, cause ? cause : "out of memory");
		free(cause);
		goto out;
	}
	desk_note(&s->o->notes,
	    "desktop '%s': port %d is in use by another program: its endpoint "
	    "is tcp://127.0.0.1:%d now (was %d)",
	    s->d->name, taken, port, s->d->port);
	s->d->port = port;
	rv = 0;
out:
	if (lka >= 0)
		close(lka);
	free(ep);
	return (rv);
}

/* The desktop loaded and locked, stopped, its ports free; the
 * accelerator and the timeout. */
static int
start_check(const char *name, struct start *s, struct desk_err *e)
{
	char *cause = NULL;

	if (desk_load(name, &s->d, e) != 0 ||
	    desk_not_attached(s->d, "start", e) != 0 ||
	    desk_lock(s->d, "start", &s->lk, e) != 0)
		return (-1);
	s->vm = vm_backend_for(s->d);
	if (store_agent_pid(s->d) > 0) {
		if (s->vm->pid(s->d) == 0 && s->vm->saved(s->d))
			return (desk_fail(e, DESK_ENOTAPPLY,
			    "desktop '%s' was saved while idle and its host "
			    "agent serves on: the next request to its "
			    "endpoint restores it (bureau stop %s ends the "
			    "agent; the desktop stays saved)",
			    s->d->name, s->d->name));
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is already running", s->d->name));
	}
	/* a VM without its host agent (the agent was killed): a new agent
	 * adopts it, on the accelerator it runs on */
	s->r->adopted = s->vm->pid(s->d) > 0;
	if (image_load(s->d->image, &s->im, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	if (start_ports(s, e) != 0)
		return (-1);
	if (!(s->r->adopted && start_adopt_accel(s) == 0) &&
	    s->vm->accel(s->d, &s->im, s->o->accel ? s->o->accel : "auto",
	        &s->accel, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	if (start_guest_token(s->d, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	s->timeout = s->o->timeout_s > 0 ? s->o->timeout_s :
	    strcmp(s->accel, "kvm") == 0 ? 180 :
	                                   600;
	s->r->accel = s->accel;
	return (0);
}

/* Stop what a failed start left (its agent, and with it the VM). */
static void
start_undo(struct start *s)
{
	char *c2 = NULL;

	agent_stop(s->d, &c2);
	free(c2);
}

/*
 * Until the daemon answers through the agent, in slices: a boot whose
 * console stays silent before its login prompt has hung and is started
 * again, once. 0 with agent_wait's answer in *w; 1: the agent was
 * stopped, to start again; -1 with e.
 */
static int
start_watch(struct start *s, int *w, char **cause, struct desk_err *e)
{
	struct vm_boot_watch watch = { 0 };
	struct desktop *d = s->d;
	char *last = NULL;

	for (;;) {
		long long left = s->t0 + s->timeout * 1000LL - hb_now_ms();

		*w = agent_wait(d, s->agent, left < 5000 ? left : 5000, 1,
		    cause);
		if (*w != AGENT_WAIT_TIMEOUT || left <= 5000)
			return (0);
		free(*cause);
		*cause = NULL;
		/* an adopted VM's console is quiet: it booted long ago */
		if (s->r->adopted ||
		    !vm_boot_stalled(d, &watch, s->stall_ms, &last))
			continue;
		if (s->stall_retried) {
			desk_fail(e, DESK_EFAIL,
			    "desktop '%s' (%s): the boot made no progress "
			    "again (console silent for %lld s after \"%s\"); "
			    "stopped it",
			    d->name, s->accel, s->stall_ms / 1000,
			    last ? last : "");
			free(last);
			s->r->tail_console = 1;
			start_undo(s);
			return (-1);
		}
		desk_note(&s->o->notes,
		    "desktop '%s' (%s): the boot made no progress (console "
		    "silent for %lld s after \"%s\"): starting it again "
		    "(once; that console is console.log.1)",
		    d->name, s->accel, s->stall_ms / 1000, last ? last : "");
		free(last);
		last = NULL;
		s->stall_retried = 1;
		if (agent_stop(d, cause) != 0)
			return (desk_fail_take(e, DESK_EFAIL, *cause));
		return (1);
	}
}

/* The host agent started, which starts the VM, and waited for until the
 * daemon answers (nowait: until the agent serves); a desktop that does
 * not answer is stopped, its logs' tails named in r. */
static int
start_boot(struct start *s, struct desk_err *e)
{
	char *cause = NULL;
	int w, r;

	for (;;) {
		if (agent_launch(s->d, s->accel, &s->agent, &cause) != 0)
			return (desk_fail_take(e, DESK_EFAIL, cause));
		if (s->o->nowait) {
			w = agent_wait(s->d, s->agent, 120000, 0, &cause);
			break;
		}
		if ((r = start_watch(s, &w, &cause, e)) < 0)
			return (-1);
		if (r == 0)
			break;
	}
	if (w == AGENT_WAIT_EXITED) {
		s->r->tail_qemu = s->r->tail_console = 1;
		return (desk_fail_take(e, DESK_EFAIL, cause));
	}
	if (w != 0) {
		desk_fail(e, DESK_EFAIL,
		    "desktop '%s' did not answer within %ld s (%s): %s; "
		    "stopped it",
		    s->d->name, s->timeout, s->accel, cause ? cause : "?");
		free(cause);
		s->r->tail_console = 1;
		start_undo(s);
		return (-1);
	}
	free(cause);
	return (0);
}

/* The agent restored the saved state, or booted (run.json). */
static void
start_run_json(struct start *s)
{
	char *rp = desktop_path(s->d, "run.json");
	json_t *run = rp ? json_load_file(rp, 0, NULL) : NULL;
	const char *why = json_string_value(
	    json_object_get(run, "restore_failed"));

	s->r->restored = json_is_true(json_object_get(run, "restored"));
	if (why != NULL)
		s->r->restore_failed = strdup(why);
	json_decref(run);
	free(rp);
}

/* Ready: the daemon answers, the session has drawn, the clock is the
 * host's (not waited for with nowait). */
static int
start_ready(struct start *s, struct desk_err *e)
{
	struct desktop *d = s->d;
	bureau_client *bc = NULL;
	struct vm_ready ready;
	char *rcause = NULL, *c2 = NULL;
	int rv = -1;

	if (s->o->nowait)
		return (0);
	/* an adopted session drew long ago, as a restored one did */
	if ((bc = vm_guest_client(d, NULL, 2.0, &c2)) == NULL ||
	    vm_ready_wait(s->vm, d, bc, s->r->restored || s->r->adopted,
	        s->t0 + (long long)s->timeout * 1000, &ready, &rcause) != 0) {
		desk_fail(e, DESK_EFAIL,
		    "desktop '%s' (%s) not ready within %ld s: %s; stopped it",
		    d->name, s->accel, s->timeout,
		    rcause ? rcause :
		        c2 ? c2 :
		             "?");
		s->r->tail_console = 1;
		start_undo(s);
		goto out;
	}
	s->r->drawn_s = (ready.drawn_ms - ready.daemon_ms) / 1000.0;
	rv = 0;
out:
	free(rcause);
	free(c2);
	bureau_close(bc);
	return (rv);
}

int
desk_start(const char *name, const struct desk_start_opts *o,
    struct desk_start_res *r, struct desk_err *e)
{
	static const struct desk_start_opts none = { 0 };
	struct start s = { .o = o ? o : &none, .r = r, .lk = -1 };
	int rv = -1;

	memset(r, 0, sizeof *r);
	/* on another machine: the bureau there starts it */
	if (desk_load(name, &s.d, e) != 0)
		goto out;
	if (s.d->remote_dir != NULL) {
		char *w[] = { "start", s.d->name };
		rv = desk_remote_run(s.d, w, 2, &r->said, e);
		goto out;
	}
	desktop_free(s.d);
	s.d = NULL;
	if (start_check(name, &s, e) != 0)
		goto out;
	s.t0 = hb_now_ms();
	s.stall_ms = vm_boot_stall_ms(s.accel);
	if (start_boot(&s, e) != 0)
		goto out;
	start_run_json(&s);
	if (start_ready(&s, e) != 0)
		goto out;
	r->seconds = (hb_now_ms() - s.t0) / 1000.0;
	r->port = s.d->port;
	r->vnc = hb_fmt("unix:%s/vnc.sock", s.d->dir);
	/* started by hand: start --all's mark is not its any more */
	desk_all_unmark(s.d);
	rv = 0;
out:
	if (s.lk >= 0)
		close(s.lk);
	image_clear(&s.im);
	desktop_free(s.d);
	return (rv);
}
