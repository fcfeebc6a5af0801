/*
 * host-bridge/agent/agent_vm.c: the VM a desktop's host agent owns: QEMU (and
 * its network keeper) started as its children, and what their end leaves
 * behind.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

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

int
ag_vm_start(struct agent *ag, const char *accel, pid_t *qemu, pid_t *net,
    char **cause)
{
	struct image im = { 0 };
	char *gp = desktop_path(ag->d, "guest.json");
	json_t *g = NULL;
	char *fallback = NULL;
	int rv = -1, restored = 0;

	if (gp == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	ag_unlink(ag->d, "exit.json");
	ag_unlink(ag->d, "guest.json");
	/* From the saved state when there is one (stop saved it), else a
	 * boot; the command that started us reads which from run.json. */
	if (image_load(ag->d->image, &im, cause) != 0 ||
	    vm_launch(vm_backend(), ag->d, &im, accel, &restored, &fallback,
	        cause) != 0)
		goto out;
	if (fallback != NULL)
		fprintf(stderr,
		    "bureau agent: cannot restore the saved state of '%s' "
		    "(%s): booted it instead\n",
		    ag->d->name, fallback);
	*qemu = ag_read_pid(ag->d, "qemu.pid");
	*net = ag_read_pid(ag->d, "net.pid");
	if ((g = json_load_file(gp, 0, NULL)) == NULL ||
	    !json_is_string(json_object_get(g, "url"))) {
		*cause = hb_fmt("the VM backend left no guest URL in '%s'", gp);
		goto out;
	}
	ag->guest_url = strdup(json_string_value(json_object_get(g, "url")));
	if (json_is_string(json_object_get(g, "events")))
		ag->guest_events = strdup(
		    json_string_value(json_object_get(g, "events")));
	if (*qemu == 0 || ag->guest_url == NULL) {
		*cause = hb_fmt("qemu started but left no pid");
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
	json_decref(g);
	image_clear(&im);
	free(gp);
	free(fallback);
	return (rv);
}

int
ag_reap(pid_t pid, int ms, int *st)
{
	long long deadline = hb_now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
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
	int clean = WIFEXITED(st) && WEXITSTATUS(st) == 0 && why == NULL;
	int pst;

	if (why != NULL)
		snprintf(how, sizeof how, "%s", why);
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
	ag_write(ag->d, "exit.json",
	    json_pack("{s:f, s:s, s:b}", "time", ag_unix_now(), "how", how,
	        "clean", clean));
	ag_unlink(ag->d, "run.json");
	ag_unlink(ag->d, "qemu.pid");
	ag_unlink(ag->d, "net.pid");
	ag_unlink(ag->d, "qmp.sock");
	ag_unlink(ag->d, "guest.json");
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
