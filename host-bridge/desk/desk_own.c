/*
 * host-bridge/desk/desk_own.c: what the owner of a desktop's VM does to it
 * (desk_int.h): stop it (save, shut down, end), pause and resume it, and
 * take or apply snapshots. The host agent runs these on its own VM, one at
 * a time; the library runs them on a VM that has no agent, under the
 * desktop's lock. Forks are desk_fork.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

/* guest, or a client of d's daemon made now (*made: the caller closes
 * it); NULL with *cause. */
static bureau_client *
own_guest(const struct desktop *d, bureau_client *guest, double timeout,
    bureau_client **made, char **cause)
{
	*made = NULL;
	if (guest != NULL)
		return (guest);
	return (*made = vm_guest_client(d, NULL, timeout, cause));
}

/* Save: the guest's file systems synced, then the backend saves (QEMU
 * quits). On failure the VM runs on. */
static int
own_save(const struct desktop *d, bureau_client *guest, long timeout_s,
    struct desk_stop_res *r, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	bureau_client *made = NULL, *bc;
	char *c2 = NULL, *cause = NULL;
	long long t0 = hb_now_ms();

	/* What the guest wrote reaches the disks first: a state that
	 * cannot be restored falls back to a boot that loses nothing
	 * written before the stop. */
	if ((bc = own_guest(d, guest, (double)timeout_s, &made, &c2)) == NULL ||
	    vm_guest_sync(bc, &c2) != 0)
		r->warning = hb_fmt("the guest of '%s' did not sync its file "
		                    "systems (%s); saving anyway",
		    d->name, c2 ? c2 : "no answer");
	free(c2);
	bureau_close(made);
	if (vm->save(d, &cause) != 0) {
		desk_fail(e, DESK_EFAIL,
		    "cannot save desktop '%s': %s; it runs on (stop "
		    "--shutdown powers it off)",
		    d->name, cause ? cause : "?");
		free(cause);
		return (-1);
	}
	r->how = DESK_STOPPED_SAVED;
	r->seconds = (hb_now_ms() - t0) / 1000.0;
	return (0);
}

int
desk_own_stop(const struct desktop *d, bureau_client *guest, int how,
    long timeout_s, struct desk_stop_res *r, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	char *cause = NULL, *c2 = NULL;
	long long t0 = hb_now_ms();

	if (vm->pid(d) == 0)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is not running", d->name));
	if (d->ephemeral) {
		/* never saved: what it did goes with it */
		if (vm->kill(d, &cause) != 0)
			return (desk_fail_take(e, DESK_EFAIL, cause));
		r->how = DESK_STOPPED_DISCARDED;
		return (0);
	}
	if (how == DESK_STOP_SAVE)
		return (own_save(d, guest, timeout_s, r, e));
	if (how == DESK_STOP_SHUTDOWN) {
		if (vm->shutdown(d, (int)timeout_s * 1000, &c2) == 0) {
			r->how = DESK_STOPPED_SHUTDOWN;
			r->seconds = (hb_now_ms() - t0) / 1000.0;
			goto gone;
		}
		r->warning = hb_fmt("'%s' did not shut down: %s; forcing",
		    d->name, c2 ? c2 : "no answer");
		free(c2);
	}
	if (vm->kill(d, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	r->how = DESK_STOPPED_FORCED;
gone:
	/* powered off or ended: a saved state from before is not this
	 * desktop's any more (its disks went on) */
	if (vm->saved(d))
		vm->discard(d);
	return (0);
}

int
desk_own_pause(const struct desktop *d, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	char *cause = NULL;

	if (vm->pid(d) == 0)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is not running", d->name));
	if (vm->pause(d, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	return (0);
}

/* After a resume or a live restore the guest's clock is behind by the
 * time it stood still: stepped to the host's (a warning when not). The
 * callers do it once they let the desktop's lock go: waiting for a slow
 * guest to answer must not hold every other step back (CI: a resume
 * waiting 120 s held two forks past their 300 s). */
void
desk_own_clock(const struct desktop *d, bureau_client *guest, char **warning)
{
	bureau_client *made = NULL, *bc;
	char *c2 = NULL;
	double step = 0;

	if ((bc = own_guest(d, guest, 30.0, &made, &c2)) == NULL ||
	    vm_guest_clock(bc, &step, &c2) != 0)
		*warning = hb_fmt(
		    "the guest's clock of '%s' was not set to the "
		    "host's: %s",
		    d->name, c2 ? c2 : "unknown error");
	free(c2);
	bureau_close(made);
}

int
desk_own_resume(const struct desktop *d, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	char *cause = NULL;

	if (vm->pid(d) == 0)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is not running", d->name));
	if (vm->resume(d, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	return (0);
}

int
desk_own_snapshot(const struct desktop *d, const char *tag, int restore,
    struct desk_snap_res *r, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	char *cause = NULL;

	r->saved = vm->pid(d) == 0 && vm->saved(d);
	if (vm->snapshot(d, tag, restore, &r->live, &cause) != 0)
		return (desk_fail_take(e,
		    cause != NULL && strstr(cause, "not find") != NULL ?
		        DESK_ENOTFOUND :
		        DESK_EFAIL,
		    cause));
	return (0);
}
