/*
 * host-bridge/agent/agent_vm.c: the VM a desktop's host agent owns: QEMU (and
 * its network keeper) started as its children or adopted from an agent
 * that was killed, and what their end leaves behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

static int ag_vm_watch(pid_t qemu, pid_t net, char **cause);

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

/* The guest's URLs from guest.json, which the backend wrote. */
static int
ag_guest_urls(struct agent *ag, char **cause)
{
	char *gp = desktop_path(ag->d, "guest.json");
	json_t *g = gp ? json_load_file(gp, 0, NULL) : NULL;
	int rv = -1;

	if (g == NULL || !json_is_string(json_object_get(g, "url"))) {
		*cause = hb_fmt("the VM backend left no guest URL in '%s'",
		    gp ? gp : "guest.json");
		goto out;
	}
	/* a wake's new QEMU: the same relay paths, which the clients
	 * made from them redial */
	if (ag->guest_url != NULL) {
		rv = 0;
		goto out;
	}
	ag->guest_url = strdup(json_string_value(json_object_get(g, "url")));
	if (json_is_string(json_object_get(g, "events")))
		ag->guest_events = strdup(
		    json_string_value(json_object_get(g, "events")));
	if (ag->guest_url == NULL)
		*cause = hb_fmt("out of memory");
	else
		rv = 0;
out:
	json_decref(g);
	free(gp);
	return (rv);
}

int
ag_vm_start(struct agent *ag, const char *accel, pid_t *qemu, pid_t *net,
    char **cause)
{
	struct image im = { 0 };
	char *fallback = NULL;
	int rv = -1, restored = 0;

	ag_unlink(ag->d, "exit.json");
	ag_unlink(ag->d, "guest.json");
	/* From the saved state when there is one (stop saved it), else a
	 * boot; the command that started us reads which from run.json. */
	if (image_load(ag->d->image, &im, cause) != 0 ||
	    vm_launch(vm_backend_for(ag->d), ag->d, &im, accel, &restored,
	        &fallback, cause) != 0)
		goto out;
	if (fallback != NULL)
		fprintf(stderr,
		    "bureau agent: cannot restore the saved state of '%s' "
		    "(%s): booted it instead\n",
		    ag->d->name, fallback);
	*qemu = ag_read_pid(ag->d, "qemu.pid");
	*net = vm_net_keeper_pid(ag->d);
	if (ag_guest_urls(ag, cause) != 0)
		goto out;
	if (*qemu == 0) {
		*cause = hb_fmt("qemu started but left no pid");
		goto out;
	}
	/* libvirt's QEMU is libvirtd's child, not ours: no SIGCHLD comes
	 * when it ends (a power-off, an idle save), its pidfd tells. */
	{
		/* (WNOWAIT: a child that already ended stays for ag_run
		 * to reap) */
		siginfo_t si;
		int foster = waitid(P_PID, (id_t)*qemu, &si,
		                 WEXITED | WNOHANG | WNOWAIT) < 0 &&
		    errno == ECHILD;

		pthread_mutex_lock(&ag->lock);
		ag->foster = foster;
		pthread_mutex_unlock(&ag->lock);
		if (foster && ag_vm_watch(*qemu, -1, cause) != 0)
			goto out;
	}
	ag_write(ag->d, "run.json",
	    json_pack("{s:i, s:i, s:i, s:s, s:f, s:b, s:s?}", "agent",
	        (int)getpid(), "qemu", (int)*qemu, "net", (int)*net, "accel",
	        accel, "started", ag_unix_now(), "restored", restored,
	        "restore_failed", fallback));
	rv = 0;
out:
	if (rv != 0 && *qemu > 0)
		kill(*qemu, SIGKILL);
	image_clear(&im);
	free(fallback);
	return (rv);
}

/* Is pid the network keeper of desktop d? (Its pid file could name a
 * pid the system has given to another process since.) */
static int
ag_is_keeper(const struct desktop *d, pid_t pid)
{
	char buf[4096];
	ssize_t n = hb_pid_cmdline(pid, buf, sizeof buf);

	/* bureau\0net-keeper\0DIR\0 */
	for (char *p = buf; n > 0 && p < buf + n; p += strlen(p) + 1)
		if (strcmp(p, "net-keeper") == 0)
			return (p + strlen(p) + 1 < buf + n &&
			    strcmp(p + strlen(p) + 1, d->dir) == 0);
	return (0);
}

/*
 * An adopted QEMU and keeper are not our children: no SIGCHLD comes when
 * they end. This thread waits on their pidfds and raises SIGCHLD in our
 * process when either ends, which ag_run's sigwait then takes.
 */
struct ag_watch {
	int fd[2];
};

static void *
ag_watch_main(void *arg)
{
	struct ag_watch *w = arg;
	struct pollfd pf[2];
	int left = 0;

	for (int i = 0; i < 2; i++) {
		pf[i].fd = w->fd[i];
		pf[i].events = POLLIN;
		left += w->fd[i] >= 0;
	}
	while (left > 0) {
		if (poll(pf, 2, -1) < 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd >= 0 && pf[i].revents != 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				left--;
				kill(getpid(), SIGCHLD);
			}
		}
	}
	free(w);
	return (NULL);
}

static int
ag_vm_watch(pid_t qemu, pid_t net, char **cause)
{
	struct ag_watch *w = malloc(sizeof *w);
	pthread_t t;
	int rv;

	if (w == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	w->fd[0] = pidfd_open(qemu, 0);
	w->fd[1] = net > 0 ? pidfd_open(net, 0) : -1;
	if (w->fd[0] < 0) {
		*cause = hb_fmt("pidfd_open of qemu (pid %d): %s", (int)qemu,
		    strerror(errno));
		goto fail;
	}
	if ((rv = pthread_create(&t, NULL, ag_watch_main, w)) != 0) {
		*cause = hb_fmt("cannot start a thread: %s", strerror(rv));
		goto fail;
	}
	pthread_detach(t);
	return (0);
fail:
	for (int i = 0; i < 2; i++)
		if (w->fd[i] >= 0)
			close(w->fd[i]);
	free(w);
	return (-1);
}

int
ag_vm_adopt(struct agent *ag, const char *accel, pid_t *qemu, pid_t *net,
    char **cause)
{
	*qemu = vm_backend_for(ag->d)->pid(ag->d);
	*net = vm_net_keeper_pid(ag->d);
	if (*qemu == 0) {
		*cause = hb_fmt("the VM of desktop '%s' ended while its host "
		                "agent started",
		    ag->d->name);
		return (-1);
	}
	if (*net == 0 || !hb_pid_running(*net) || !ag_is_keeper(ag->d, *net)) {
		*cause = hb_fmt("the VM of desktop '%s' (qemu pid %d) runs "
		                "without its network keeper, so its guest is "
		                "out of reach: `bureau stop %s --force` ends "
		                "it, and the next start boots",
		    ag->d->name, (int)*qemu, ag->d->name);
		*qemu = *net = 0;
		return (-1);
	}
	if (ag_guest_urls(ag, cause) != 0 ||
	    ag_vm_watch(*qemu, *net, cause) != 0) {
		*qemu = *net = 0;
		return (-1);
	}
	ag_unlink(ag->d, "exit.json");
	ag_write(ag->d, "run.json",
	    json_pack("{s:i, s:i, s:i, s:s, s:f, s:b, s:b}", "agent",
	        (int)getpid(), "qemu", (int)*qemu, "net", (int)*net, "accel",
	        accel, "started", ag_unix_now(), "restored", 0, "adopted", 1));
	fprintf(stderr,
	    "bureau agent: desktop '%s': adopted its running VM (qemu pid "
	    "%d, network keeper pid %d), left by a host agent that ended "
	    "without stopping it\n",
	    ag->d->name, (int)*qemu, (int)*net);
	return (0);
}

int
ag_reap(pid_t pid, int ms, int *st)
{
	long long deadline = hb_now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);
		if (r == pid)
			return (0);
		/* not our child (adopted): gone once it no longer runs */
		if (r < 0 && errno == ECHILD && !hb_pid_running(pid))
			return (0);
		if (hb_now_ms() >= deadline)
			return (-1);
		usleep(20000);
	}
}

void
ag_vm_ended(struct agent *ag, int st, const char *why, pid_t net)
{
	char how[160];
	int clean = WIFEXITED(st) && WEXITSTATUS(st) == 0 && why == NULL &&
	    !ag->adopted && !ag->foster;
	int pst;

	if (why != NULL)
		snprintf(how, sizeof how, "%s", why);
	else if (ag->adopted)
		snprintf(how, sizeof how,
		    "qemu ended (adopted by this host agent, not its child: "
		    "how it ended is not known)");
	else if (ag->foster)
		snprintf(how, sizeof how,
		    "qemu ended (libvirt's, not this host agent's child: "
		    "libvirt's log of the domain says how)");
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
	if (net > 0 && kill(net, SIGTERM) == 0 &&
	    ag_reap(net, 3000, &pst) != 0) {
		kill(net, SIGKILL);
		ag_reap(net, 3000, &pst);
	}
	ag_vm_record(ag, how, clean);
}

void
ag_vm_record(struct agent *ag, const char *how, int clean)
{
	ag_write(ag->d, "exit.json",
	    json_pack("{s:f, s:s, s:b}", "time", ag_unix_now(), "how", how,
	        "clean", clean));
	ag_unlink(ag->d, "run.json");
	ag_unlink(ag->d, "qemu.pid");
	ag_unlink(ag->d, "net.pid");
	ag_unlink(ag->d, "qmp.sock");
	ag_unlink(ag->d, "guest.json");
	/* (its QEMU gone, its cgroup empty: made anew by the next start) */
	limits_cg_drop(ag->d);
}

void
ag_vm_stop(struct agent *ag, pid_t qemu, pid_t net, int sig)
{
	char how[96];
	int st = 0;

	/* QEMU quits cleanly on SIGTERM (the disks flushed), but the guest
	 * gets no say: this is `stop --force`. */
	kill(qemu, SIGTERM);
	if (ag_reap(qemu, 15000, &st) != 0) {
		kill(qemu, SIGKILL);
		ag_reap(qemu, 5000, &st);
	}
	snprintf(how, sizeof how,
	    "the host agent ended qemu (the agent got signal %d)", sig);
	ag_vm_ended(ag, st, how, net);
}

void
ag_vm_abort(struct agent *ag, pid_t qemu, pid_t net)
{
	int st = 0;

	kill(qemu, SIGKILL);
	ag_reap(qemu, 5000, &st);
	ag_vm_ended(ag, st, "the host agent could not start", net);
}
