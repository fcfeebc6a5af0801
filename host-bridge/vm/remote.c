/*
 * host-bridge/vm/remote.c: the VM backend of a desktop on a host on another
 * machine (DESIGN.md, "Hosts: desktops on libvirt"; cli/remote.c). Its VM,
 * disks and host agent are there, run by bureau there; the commands that
 * change it run there too, over SSH (cli/remote.c sends them before they
 * would reach this backend). What this side knows is what its agent says
 * through the SSH forward of its operator socket, and the state the last
 * command there left (DIR/remote-state): enough for `ls`, `status` and
 * Mission Control, without an SSH connection for every look. This layer
 * knows the files; the agent is asked above it (op_remote_state).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

static int
rm_there(const struct desktop *d, const char *what, char **cause)
{
	*cause = hb_fmt("desktop '%s' runs on host '%s', another machine: "
	                "%s is done there (bureau sends it over SSH)",
	    d->name, d->host ? d->host : "?", what);
	return (-1);
}

static int
rm_create(const struct desktop *d, const struct image *im, long long disk,
    long long home, char **cause)
{
	(void)im;
	(void)disk;
	(void)home;
	return (rm_there(d, "create", cause));
}

static int
rm_accel(const struct desktop *d, const struct image *im, const char *want,
    const char **out, char **cause)
{
	(void)im;
	(void)want;
	*out = NULL;
	return (rm_there(d, "start", cause));
}

static int
rm_start(const struct desktop *d, const struct image *im, const char *accel,
    char **cause)
{
	(void)im;
	(void)accel;
	return (rm_there(d, "start", cause));
}

static pid_t
rm_pid(const struct desktop *d)
{
	(void)d;
	return (0); /* no process of its VM is here */
}

/* What the last command there left ("saved", "stopped", ...), or NULL. */
static char *
rm_last(const struct desktop *d)
{
	char *p = desktop_path(d, "remote-state"),
	     *s = p ? hb_read_file(p) : NULL;

	free(p);
	if (s != NULL)
		s[strcspn(s, "\r\n")] = '\0';
	if (s != NULL && *s == '\0') {
		free(s);
		s = NULL;
	}
	return (s);
}

/* What the last command there left (saved, stopped) while no agent
 * answers through the forward; else the machine or the forward cannot
 * be reached now, and what runs there is not known here. (Whether its
 * agent answers is asked above this layer: opclient's op_remote_state.) */
static char *
rm_state(const struct desktop *d, pid_t *pid)
{
	char *s = rm_last(d);

	*pid = 0;
	if (s != NULL && strncmp(s, "saved", 5) != 0 &&
	    strcmp(s, "stopped") != 0) {
		free(s);
		s = strdup("unreachable");
	}
	return (s != NULL ? s : strdup("unknown"));
}

static int
rm_shutdown(const struct desktop *d, int timeout_ms, char **cause)
{
	(void)timeout_ms;
	return (rm_there(d, "stop", cause));
}

static int
rm_kill(const struct desktop *d, char **cause)
{
	return (rm_there(d, "stop --force", cause));
}

static int
rm_pause(const struct desktop *d, char **cause)
{
	return (rm_there(d, "pause", cause));
}

static int
rm_resume(const struct desktop *d, char **cause)
{
	return (rm_there(d, "resume", cause));
}

static int
rm_snapshot(const struct desktop *d, const char *tag, int restore, int *live,
    char **cause)
{
	(void)tag;
	(void)restore;
	*live = 0;
	return (rm_there(d, "snapshot", cause));
}

static int
rm_save(const struct desktop *d, char **cause)
{
	return (rm_there(d, "stop", cause));
}

static int
rm_restore(const struct desktop *d, const struct image *im, const char *accel,
    char **cause)
{
	(void)im;
	(void)accel;
	return (rm_there(d, "start", cause));
}

static int
rm_saved(const struct desktop *d)
{
	char *s = rm_last(d);
	int saved = s != NULL && strncmp(s, "saved", 5) == 0;

	free(s);
	return (saved);
}

static void
rm_discard(const struct desktop *d)
{
	(void)d;
}

static int
rm_stats(const struct desktop *d, struct vm_stats *st)
{
	(void)d;
	/* the figures are the other machine's: `bureau status NAME` asks
	 * there */
	st->pid = 0;
	st->cpu_ns = -1;
	st->memory_bytes = -1;
	st->disk_bytes = -1;
	return (0);
}

const struct vm_backend vm_remote = {
	.name = "remote",
	.create = rm_create,
	.accel = rm_accel,
	.start = rm_start,
	.pid = rm_pid,
	.state = rm_state,
	.shutdown = rm_shutdown,
	.kill = rm_kill,
	.pause = rm_pause,
	.resume = rm_resume,
	.snapshot = rm_snapshot,
	.save = rm_save,
	.restore = rm_restore,
	.saved = rm_saved,
	.discard = rm_discard,
	.stats = rm_stats,
};
