/*
 * host-bridge/agent/agent_idle.c: idle save and wake on request (DESIGN.md,
 * "Always there, next to free when idle").
 *
 * With idle_save N (create --idle-save, bureau config), a desktop that no
 * endpoint request reached for N seconds, with none at its daemon, no
 * approval waiting, no takeover and nobody on its live view, is saved as
 * `bureau stop` saves it (the guest syncs, QEMU writes its devices beside
 * the RAM file and quits): it costs the host no CPU and its RAM file can
 * go from the page cache. The agent serves on. The next endpoint request
 * restores it (the same processes) and is then answered as usual, its
 * reply saying "woke": true; requests that come meanwhile wait for that
 * one restore.
 *
 * ag->vm moves UP -> SAVING (this thread) -> SAVED (the main thread sees
 * QEMU end: ag_idle_saved) -> WAKING (the first request) -> UP. Under
 * ag->lock; vm_changed is broadcast at each step.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

/*
 * Is someone on the desktop's live view? Mission Control (or any VNC
 * client) is connected to QEMU's VNC socket: /proc/net/unix lists each
 * accepted connection with the listening socket's path and state 03
 * (connected); the listener itself is 01.
 */
static int
ag_watched(const struct agent *ag)
{
	char *path = desktop_path(ag->d, "vnc.sock"), line[512];
	FILE *f = fopen("/proc/net/unix", "re");
	int n = 0;

	while (path != NULL && f != NULL && fgets(line, sizeof line, f)) {
		char *p = strrchr(line, ' ');
		unsigned st;

		if (p == NULL)
			continue;
		p++;
		p[strcspn(p, "\n")] = '\0';
		/* Num RefCount Protocol Flags Type St Inode Path */
		if (strcmp(p, path) == 0 &&
		    sscanf(line, "%*s %*s %*s %*s %*s %x", &st) == 1 && st == 3)
			n++;
	}
	if (f != NULL)
		fclose(f);
	free(path);
	return (n > 0);
}

/* Is the desktop idle long enough to save? Called with ag->lock held. */
static int
ag_idle_due(const struct agent *ag, long long now)
{
	return (ag->vm == AG_VM_UP && ag->qemu > 0 && ag->idle_save > 0 &&
	    ag->inflight == 0 && !ag->takeover && ag->pending == 0 &&
	    now - ag->active_ms >= ag->idle_save * 1000LL);
}

/* Save it: the guest syncs, then the backend saves and QEMU quits (the
 * main thread then records it: ag_idle_saved). */
static void
ag_idle_back(struct agent *ag)
{
	pthread_mutex_lock(&ag->lock);
	if (ag->vm == AG_VM_SAVING)
		ag->vm = AG_VM_UP;
	ag->active_ms = hb_now_ms(); /* not again at once */
	pthread_cond_broadcast(&ag->vm_changed);
	pthread_mutex_unlock(&ag->lock);
}

/* Save it, with the VM's change lock and the desktop's lock file held
 * (lk): the guest syncs, then the backend saves and QEMU quits; the main
 * thread records that (ag_idle_saved), and this waits for it. */
static void
ag_idle_save(struct agent *ag, int lk)
{
	long long t0 = hb_now_ms();
	char *cause = NULL;

	if (vm_guest_sync(ag->guest, &cause) != 0) {
		fprintf(stderr,
		    "bureau agent: desktop '%s': the guest did not sync "
		    "before the idle save (%s); saving anyway\n",
		    ag->d->name, cause ? cause : "?");
		free(cause);
		cause = NULL;
	}
	if (vm_backend_for(ag->d)->save(ag->d, &cause) != 0) {
		fprintf(stderr,
		    "bureau agent: desktop '%s': cannot save it while idle: "
		    "%s; it runs on\n",
		    ag->d->name, cause ? cause : "?");
		free(cause);
		ag_idle_back(ag);
		ag_vm_end(ag, lk);
		return;
	}
	pthread_mutex_lock(&ag->lock);
	while (ag->vm == AG_VM_SAVING)
		pthread_cond_wait(&ag->vm_changed, &ag->lock);
	pthread_mutex_unlock(&ag->lock);
	ag_vm_end(ag, lk);
	fprintf(stderr,
	    "bureau agent: desktop '%s': saved after %ld s idle (%.1f s); "
	    "the next request restores it\n",
	    ag->d->name, ag->idle_save, (hb_now_ms() - t0) / 1000.0);
}

/* The idle save, when it is due: not while an op changes the VM (a fork
 * pausing it, a stop, a snapshot) or a command holds the desktop's lock:
 * it is in use, and the next idle period will do. */
static void
ag_idle_try(struct agent *ag)
{
	char *cause = NULL;
	int lk = -1, due;

	if (ag_vm_begin(ag, "idle save", 0, &lk, &cause) != 0) {
		fprintf(stderr,
		    "bureau agent: desktop '%s': no idle save now: %s\n",
		    ag->d->name, cause ? cause : "?");
		free(cause);
		/* (ag->vm is the op's now: only the clock starts again) */
		pthread_mutex_lock(&ag->lock);
		ag->active_ms = hb_now_ms();
		pthread_mutex_unlock(&ag->lock);
		return;
	}
	pthread_mutex_lock(&ag->lock);
	if ((due = ag_idle_due(ag, hb_now_ms())) != 0) {
		ag->vm = AG_VM_SAVING;
		pthread_cond_broadcast(&ag->vm_changed);
	}
	pthread_mutex_unlock(&ag->lock);
	if (due)
		ag_idle_save(ag, lk);
	else
		ag_vm_end(ag, lk);
}

static void *
ag_idle_main(void *arg)
{
	struct agent *ag = arg;

	for (;;) {
		struct timespec ts = { 1, 0 };
		int due;

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&ag->lock);
		due = ag_idle_due(ag, hb_now_ms());
		pthread_mutex_unlock(&ag->lock);
		if (!due)
			continue;
		/* someone on the live view counts as use */
		if (ag_watched(ag)) {
			pthread_mutex_lock(&ag->lock);
			ag->active_ms = hb_now_ms();
			pthread_mutex_unlock(&ag->lock);
			continue;
		}
		ag_idle_try(ag);
	}
	return (NULL);
}

int
ag_idle_start(struct agent *ag, char **cause)
{
	pthread_t t;
	int rv;

	if ((rv = pthread_create(&t, NULL, ag_idle_main, ag)) != 0) {
		*cause = hb_fmt("cannot start the idle saver: %s",
		    strerror(rv));
		return (-1);
	}
	pthread_detach(t);
	return (0);
}

int
ag_idle_saved(struct agent *ag, pid_t qemu)
{
	pid_t net;
	int st;

	pthread_mutex_lock(&ag->lock);
	if (ag->vm != AG_VM_SAVING || qemu != ag->qemu) {
		pthread_mutex_unlock(&ag->lock);
		return (0);
	}
	net = ag->net;
	ag->qemu = ag->net = 0;
	ag->adopted = 0;
	pthread_mutex_unlock(&ag->lock);
	/* The keeper ends once QEMU's end of its link closes; should it
	 * not, it goes now. */
	if (net > 0 && ag_reap(net, 3000, &st) != 0) {
		kill(net, SIGTERM);
		if (ag_reap(net, 3000, &st) != 0) {
			kill(net, SIGKILL);
			ag_reap(net, 3000, &st);
		}
	}
	pthread_mutex_lock(&ag->lock);
	ag->vm = AG_VM_SAVED;
	pthread_cond_broadcast(&ag->vm_changed);
	pthread_mutex_unlock(&ag->lock);
	return (1);
}

/* Restore the idle-saved VM: its processes as they were, the clock the
 * host's. Run by the request that found it saved (ag->vm WAKING). */
static int
ag_wake(struct agent *ag, char **cause)
{
	long long t0 = hb_now_ms();
	pid_t qemu = 0, net = 0;
	double step = 0;
	char *c2 = NULL;

	if (ag_vm_start(ag, ag->accel, &qemu, &net, cause) != 0)
		return (-1);
	pthread_mutex_lock(&ag->lock);
	ag->qemu = qemu;
	ag->net = net;
	pthread_mutex_unlock(&ag->lock);
	/* the guest's clock stood still while it was saved */
	if (vm_guest_clock(ag->guest, &step, &c2) != 0) {
		fprintf(stderr,
		    "bureau agent: desktop '%s': its clock was not stepped "
		    "after the wake: %s\n",
		    ag->d->name, c2 ? c2 : "?");
		free(c2);
	}
	fprintf(stderr,
	    "bureau agent: desktop '%s': woken by a request in %.2f s "
	    "(qemu pid %d; its clock stepped %.1f s)\n",
	    ag->d->name, (hb_now_ms() - t0) / 1000.0, (int)qemu, step);
	return (0);
}

int
ag_wake_owned(struct agent *ag, char **cause)
{
	int rv;

	pthread_mutex_lock(&ag->lock);
	if (ag->vm != AG_VM_SAVED) {
		rv = ag->vm == AG_VM_UP ? 0 : -1;
		if (rv != 0)
			*cause = hb_fmt("desktop '%s' is stopping",
			    ag->d->name);
		pthread_mutex_unlock(&ag->lock);
		return (rv);
	}
	ag->vm = AG_VM_WAKING;
	pthread_cond_broadcast(&ag->vm_changed);
	pthread_mutex_unlock(&ag->lock);
	rv = ag_wake(ag, cause);
	pthread_mutex_lock(&ag->lock);
	ag->vm = rv == 0 ? AG_VM_UP : AG_VM_SAVED;
	pthread_cond_broadcast(&ag->vm_changed);
	pthread_mutex_unlock(&ag->lock);
	return (rv);
}

/*
 * The wake holds the VM's change lock and the desktop's lock file as any
 * change does (agent_life.c): a `bureau snapshot` or `stop` of the saved
 * desktop is either done before the restore or waits for it.
 */
int
ag_vm_enter(struct agent *ag, int *woke, char **cause)
{
	int rv = 0, lk = -1;

	*woke = 0;
	pthread_mutex_lock(&ag->lock);
	ag->active_ms = hb_now_ms();
	for (;;) {
		while (ag->vm == AG_VM_SAVING || ag->vm == AG_VM_WAKING)
			pthread_cond_wait(&ag->vm_changed, &ag->lock);
		if (ag->vm != AG_VM_SAVED)
			break;
		pthread_mutex_unlock(&ag->lock);
		if (ag_vm_begin(ag, "wake", 1, &lk, cause) != 0)
			return (-1);
		rv = ag_wake_owned(ag, cause);
		ag_vm_end(ag, lk);
		*woke = rv == 0;
		pthread_mutex_lock(&ag->lock);
		if (rv != 0)
			break;
	}
	if (rv == 0 && ag->vm == AG_VM_STOPPED) {
		*cause = hb_fmt("desktop '%s' was stopped", ag->d->name);
		rv = -1;
	}
	if (rv == 0)
		ag->inflight++;
	ag->active_ms = hb_now_ms();
	pthread_mutex_unlock(&ag->lock);
	return (rv);
}

void
ag_vm_leave(struct agent *ag)
{
	pthread_mutex_lock(&ag->lock);
	ag->inflight--;
	ag->active_ms = hb_now_ms();
	pthread_mutex_unlock(&ag->lock);
}
