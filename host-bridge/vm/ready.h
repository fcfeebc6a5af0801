/*
 * host-bridge/vm/ready.h: bringing a desktop up and down with its guest's
 * cooperation: start it from its saved state or boot it, wait until it is
 * ready for an agent, sync its file systems before a save, step its clock
 * after a restore or a resume. Whoever talks to the guest's bureaud (the
 * CLI today, the desktop's host agent later) passes its own client.
 */
#ifndef BUREAU_HB_READY_H
#define BUREAU_HB_READY_H

#include "host-bridge/include/bureau.h"
#include "host-bridge/store/store.h"
#include "host-bridge/vm/vm.h"

/*
 * Start the desktop: from its saved state when it has one, else a boot.
 * A state that cannot be restored is discarded and the desktop boots
 * instead (its disks are as they were), and *fallback (malloc'd) says why
 * for the caller to tell its user. *restored says which happened.
 */
int vm_launch(const struct vm_backend *vm, const struct desktop *d,
    const struct image *im, const char *accel, int *restored, char **fallback,
    char **cause);

/* How the wait went: milliseconds from its call until the daemon first
 * answered and until the screen was drawn and settled. */
struct vm_ready {
	long long daemon_ms, drawn_ms;
	double clock_step_s; /* how far the guest's clock was off */
	int clock_stepped;   /* 0: the guest could not step it (warned) */
};

/*
 * Wait until the desktop is ready for an agent: its bureaud answers, the
 * session has drawn (a screenshot that is not a single colour) and the
 * screen has settled (two screenshots a moment apart show the same
 * frame; a restored desktop need only settle: it drew before it was
 * saved); then step the guest's clock to the host's. Until deadline_ms
 * (hb_now_ms). -1 with *cause when QEMU ended, the daemon refused us, or
 * time ran out (the cause says which phase); the caller decides what
 * happens to the VM.
 */
int vm_ready_wait(const struct vm_backend *vm, const struct desktop *d,
    bureau_client *bc, int restored, long long deadline_ms, struct vm_ready *r,
    char **cause);

/*
 * A boot that makes no progress. In about one of four full-image TCG
 * boots the guest used to stop early (its console went silent in the
 * kernel, or in udev's driver loading) and never came up; a boot does not
 * print nothing for long before its login prompt. vm_boot_stalled looks
 * at the desktop's console.log at each call: 1 when it has not grown for
 * silent_ms although no login prompt has been printed yet and the run is
 * a boot (not a restore: a restored guest prints nothing), with *last
 * (malloc'd) its last line; else 0. Zero-initialise the watch before a boot.
 */
struct vm_boot_watch {
	long long size, changed_ms;
	int done; /* the prompt came, or a restore: nothing to watch */
};
int vm_boot_stalled(const struct desktop *d, struct vm_boot_watch *w,
    long long silent_ms, char **last);

/* How long a boot's console may stay silent (ms): BUREAU_BOOT_STALL_S
 * in the environment, else 90 s under TCG, 30 s with KVM. */
long long vm_boot_stall_ms(const char *accel);

/* A client of d's own bureaud (the address its host agent wrote in
 * guest.json) with token, NULL for d's guest token; NULL with *cause. The
 * operator's requests (stop's sync, the clock step, the ready wait, a
 * clone's identity check) are not the agent loop's: they do not pass the
 * agent's policy, takeover or audit trail. */
bureau_client *vm_guest_client(const struct desktop *d, const char *token,
    double timeout, char **cause);

/* Have the guest write its file systems out (`system sync`, or the bash
 * tool's `sync` with an older bureaud). */
int vm_guest_sync(bureau_client *bc, char **cause);

/* Step the guest's clock to the host's (`system set_clock`); *step is
 * how far it was off, in seconds. */
int vm_guest_clock(bureau_client *bc, double *step, char **cause);

#endif
