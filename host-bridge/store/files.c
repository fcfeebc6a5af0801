/*
 * host-bridge/store/files.c: the names a desktop's directory holds, and
 * the store's own names (files.h).
 */
#include <string.h>

#include "host-bridge/store/files.h"

#define S SF_SENT
#define Q (SF_SENT | SF_QCOW2)

/* What store.h describes, each with what it is. A name the code writes
 * into a desktop's directory goes here too. */
const struct store_file store_files[] = {
	/* its settings and its disks */
	{ "desktop.json", S, "its settings (validated field by field)" },
	{ "system.qcow2", Q, "the system disk: an overlay on the image's" },
	{ "home.qcow2", Q, "the data disk, mounted on /home" },
	{ "system.L<hex>.qcow2", Q | SF_LAYER, "a system disk layer (fork)" },
	{ "home.L<hex>.qcow2", Q | SF_LAYER, "a home disk layer (fork)" },
	{ "layers.shared", S, "the layers a fork got from its parent" },
	/* its identity, through fw_cfg */
	{ "guest-token", S, "the guest's secret" },
	{ "guest-token.old", S, "the one it had, while it takes the new" },
	{ "machine-id", S, "its machine-id" },
	{ "hostname", S, "its name, padded, written at each start" },
	/* a saved state (vm/qemu_state.c, vm/libvirt.c) */
	{ "ram", S, "its RAM file" },
	{ "state", S, "its saved device state" },
	{ "state.json", S, "what the saved state needs" },
	{ "lv.save", S, "the state libvirt saved" },
	{ "lv.state", S, "its state saved on a libvirt host" },
	{ "lv.state.json", S, "what that state needs" },
	/* a clone of the image's warm state (vm/qemu_warm.c) */
	{ "warm-from", S, "the warm state its first start restores" },
	{ "warm-token", S,
	    "the warm state's guest token, refused once it runs" },
	{ "warm-ram", S, "running on the warm RAM (an older bureau's clone)" },
	{ "ram.base", S, "the warm RAM file (a link, a copy once sent)" },
	{ "state.base", S, "the warm state file (the same)" },
	/* its host agent */
	{ "token", S, "the agent token (0600)" },
	{ "endpoint", S, "the host agent's URL (receive writes its own)" },
	{ "agent.log", S, "the host agent's log" },
	{ "audit.log", S, "the audit trail" },
	{ "audit.log.1", S, "the audit trail, rotated" },
	{ "audit", SF_DIR | S, "the audit trail's screenshots" },
	{ "audit/<n>.png", S, "a screenshot of an input action" },
	{ "exit.json", S, "how its last run ended" },
	/* what its runs left */
	{ "accel", S, "the accelerator of its last start" },
	{ "qemu.log", S, "QEMU's log" },
	{ "console.log", S, "the guest's serial console" },
	{ "console.log.1", S, "the previous boot's console" },
	{ "passt.log", S, "the guest network's log (passt)" },
	{ "net.log", S, "the network keeper's log" },
	{ "net.nft", S, "the guest network's rules" },
	{ "guest.json", S, "where the guest's daemon was forwarded to" },
	/* while it runs, or while a command works on it: never sent */
	{ "lock", 0, "the lock of the command changing it" },
	{ "run.json", SF_RUN, "the run in progress" },
	{ "qemu.pid", SF_RUN, "QEMU's pid" },
	{ "passt.pid", SF_RUN, "passt's pid" },
	{ "net.pid", SF_RUN, "the network keeper's pid" },
	{ "agent.pid", SF_RUN, "the host agent's pid (locked)" },
	{ "qmp.sock", SF_RUN, "QEMU's monitor" },
	{ "vnc.sock", SF_RUN, "QEMU's VNC server, the live view" },
	{ "guest.sock", SF_RUN, "the guest's daemon, relayed" },
	{ "guest-events.sock", SF_RUN, "the guest's events, relayed" },
	{ "operator.sock", SF_RUN, "the host agent's operator socket" },
	{ "lv", SF_DIR | SF_RUN, "what libvirt's QEMU may write (sockets)" },
	/* a desktop on another machine's record here (cli/remote.c) */
	{ "forward.pid", SF_RUN, "the keeper of its SSH forwards" },
	{ "forward.log", 0, "that keeper's log" },
	{ "remote-state", 0, "the state its last command there left" },
	/* temporaries, while they are written */
	{ "home.raw", 0, "the home file system, made at create" },
	{ "home.debugfs", 0, "the commands that fill it" },
	{ "ram.tmp", 0, "a RAM file being copied" },
	{ "state.tmp", 0, "a state being saved" },
	{ "state.dev.tmp", 0, "a state's devices being saved" },
	{ "state.vram.tmp", 0, "a state's video memory being saved" },
	{ "lv.state.tmp", 0, "a libvirt state being saved" },
	{ "lv.save.tmp", 0, "a libvirt save being written" },
	{ NULL, 0, NULL },
};

#undef S
#undef Q

/* The top of $BUREAU_HOME: what bureau itself keeps there. */
static const char *const own_names[] = {
	"images",                /* the images (bureau image build) */
	"hosts.json",            /* the hosts desktops run on (hosts.c) */
	"mission-control.token", /* Mission Control's token (mc/mc.c) */
	"keys",                  /* the API's keys (bureau key, v4) */
	".lock",                 /* the store-wide lock (store_lock_all) */
	".accel",                /* the accelerator probed (vm/qemu.c) */
	NULL,
};

int
store_file_match(const char *p, const char *s)
{
	while (*p != '\0') {
		const char *set = NULL;
		size_t n, max = 0;

		if (strncmp(p, "<hex>", 5) == 0) {
			set = "0123456789abcdef";
			p += 5;
		} else if (strncmp(p, "<n>", 3) == 0) {
			set = "0123456789";
			max = 19;
			p += 3;
		}
		if (set == NULL) {
			if (*p++ != *s++)
				return (0);
			continue;
		}
		n = strspn(s, set);
		if (n == 0 || (max != 0 && n > max))
			return (0);
		s += n;
	}
	return (*s == '\0');
}

const struct store_file *
store_file_find(const char *rel)
{
	for (const struct store_file *f = store_files; f->name != NULL; f++)
		if (store_file_match(f->name, rel))
			return (f);
	return (NULL);
}

int
store_own_name(const char *name)
{
	for (size_t i = 0; own_names[i] != NULL; i++)
		if (strcmp(name, own_names[i]) == 0)
			return (1);
	return (0);
}
