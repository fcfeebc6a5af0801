/*
 * host-bridge/store/files.c: the names a desktop's directory holds, and
 * the store's own names (files.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/store/files.h"
#include "host-bridge/util/util.h"

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
	{ "system.T<hex>.qcow2", SF_RUN,
	    "the name a running QEMU knows a fork's overlay by (a link)" },
	{ "home.T<hex>.qcow2", SF_RUN, "the same of the home disk" },
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
	{ "lv/qmp.sock", SF_RUN, "bureau's own monitor of libvirt's QEMU" },
	{ "lv/net.sock", SF_RUN, "the guest's link to passt (libvirt)" },
	{ "lv/vnc.sock", SF_RUN, "the live view (libvirt)" },
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

/* One entry rel (under dir) as the table has it, made ours (0600, a
 * directory 0700); *isdir says which. */
static int
files_entry(const char *dir, const char *rel, int *isdir, char **cause)
{
	const struct store_file *f = store_file_find(rel);
	char *p = hb_fmt("%s/%s", dir, rel);
	struct stat st;
	int fd = -1, rv = -1;
	const char *why = NULL;

	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (lstat(p, &st) != 0) {
		*cause = hb_fmt("cannot stat '%s': %s", p, strerror(errno));
		goto out;
	}
	*isdir = S_ISDIR(st.st_mode);
	if (f == NULL)
		why = "no such file is in a desktop's directory";
	else if (!(f->flags & SF_SENT))
		why = "a desktop's directory holds it only while it runs or "
		      "a command writes it: never sent";
	else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		why = "neither a regular file nor a directory";
	else if (!!(f->flags & SF_DIR) != !!S_ISDIR(st.st_mode))
		why = f->flags & SF_DIR ? "a file where a directory belongs" :
		                          "a directory where a file belongs";
	else if (S_ISREG(st.st_mode) && st.st_nlink != 1)
		why = "a file of more than one link";
	else if (st.st_uid != geteuid())
		why = "not ours";
	if (why != NULL) {
		*cause = hb_fmt("refused '%s': %s", rel, why);
		goto out;
	}
	/* Its modes ours: opened without following (it was checked to be
	 * no symlink, in a directory only we write). */
	fd = open(p,
	    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
	        (*isdir ? O_DIRECTORY : 0));
	if (fd < 0 || fchmod(fd, *isdir ? 0700 : 0600) != 0) {
		*cause = hb_fmt("cannot change the mode of '%s': %s", p,
		    strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	free(p);
	return (rv);
}

/* Every entry of dir/sub ("" for dir itself), one level of
 * subdirectories below it. */
static int
files_walk(const char *dir, const char *sub, char **cause)
{
	char *p = *sub ? hb_fmt("%s/%s", dir, sub) : strdup(dir);
	DIR *dp = p ? opendir(p) : NULL;
	struct dirent *e;
	int rv = 0;

	if (dp == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", p ? p : dir,
		    strerror(errno));
		free(p);
		return (-1);
	}
	while (rv == 0 && (e = readdir(dp)) != NULL) {
		char *rel;
		int isdir = 0;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		rel = *sub ? hb_fmt("%s/%s", sub, e->d_name) :
		             strdup(e->d_name);
		if (rel == NULL) {
			*cause = hb_fmt("out of memory");
			rv = -1;
		} else if ((rv = files_entry(dir, rel, &isdir, cause)) == 0 &&
		    isdir) {
			if (*sub) { /* (the table has none so deep) */
				*cause = hb_fmt("refused '%s': too deep", rel);
				rv = -1;
			} else
				rv = files_walk(dir, rel, cause);
		}
		free(rel);
	}
	closedir(dp);
	free(p);
	return (rv);
}

int
store_files_check(const char *dir, char **cause)
{
	struct stat st;
	int fd;

	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid()) {
		*cause = hb_fmt("refused '%s': not a directory of ours", dir);
		return (-1);
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
	        0 ||
	    fchmod(fd, 0700) != 0) {
		*cause = hb_fmt("cannot change the mode of '%s': %s", dir,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return (-1);
	}
	close(fd);
	return (files_walk(dir, "", cause));
}

/* The family of a disk's name: "system" or "home" (up to its first '.'). */
static size_t
disk_family(const char *name)
{
	return (strcspn(name, "."));
}

/* A qcow2's backing file name from its header (docs/interop/qcow2.txt,
 * big-endian: version at 4, the backing name's offset at 8 and length at
 * 16, version 3's incompatible features at 72, bit 2 an external data
 * file). 0, or -1 with *why. */
static int
disk_backing(const char *path, char *backing, size_t len, const char **why)
{
	const char *w;
	unsigned char h[80];
	unsigned long long off = 0, incompat = 0;
	unsigned version = 0, blen = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rv = -1;
	ssize_t n;

	backing[0] = '\0';
	w = "cannot be read";
	if (fd < 0) {
		*why = w;
		return (-1);
	}
	n = pread(fd, h, sizeof h, 0);
	w = "not a qcow2 image";
	if (n < 72 || memcmp(h, "QFI\xfb", 4) != 0)
		goto out;
	for (int i = 0; i < 4; i++)
		version = version << 8 | h[4 + i];
	for (int i = 0; i < 8; i++)
		off = off << 8 | h[8 + i];
	for (int i = 0; i < 4; i++)
		blen = blen << 8 | h[16 + i];
	if (version != 2 && version != 3)
		goto out;
	if (version == 3) {
		if (n < 80)
			goto out;
		for (int i = 0; i < 8; i++)
			incompat = incompat << 8 | h[72 + i];
		w = "a qcow2 image with an external data file";
		if (incompat & 4)
			goto out;
	}
	w = "a qcow2 image whose backing name cannot be read";
	if (off != 0 &&
	    (blen == 0 || blen >= len ||
	        pread(fd, backing, blen, (off_t)off) != (ssize_t)blen ||
	        memchr(backing, '\0', blen) != NULL))
		goto out;
	backing[off != 0 ? blen : 0] = '\0';
	rv = 0;
out:
	if (rv != 0)
		*why = w;
	close(fd);
	return (rv);
}

int
store_disks_check(const char *dir, const char *base, char **cause)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort), rv = 0;

	if (n < 0) {
		*cause = hb_fmt("cannot read '%s': %s", dir, strerror(errno));
		return (-1);
	}
	for (int i = 0; i < n && rv == 0; i++) {
		const struct store_file *f = store_file_find(ents[i]->d_name);
		char cur[1024], backing[1024];
		const char *why = NULL;
		int steps = 0;

		if (f == NULL || !(f->flags & SF_QCOW2))
			continue;
		/* its chain, down to the base or a disk without backing */
		snprintf(cur, sizeof cur, "%s", ents[i]->d_name);
		while (rv == 0 && why == NULL) {
			const struct store_file *b;
			char *p = hb_fmt("%s/%s", dir, cur);

			if (p == NULL ||
			    disk_backing(p, backing, sizeof backing, &why) !=
			        0) {
				if (p == NULL)
					why = "out of memory";
				free(p);
				break;
			}
			free(p);
			if (backing[0] == '\0')
				break; /* the bottom */
			if (strcmp(backing, base) == 0 &&
			    disk_family(cur) == 6 &&
			    strncmp(cur, "system", 6) == 0)
				break; /* the image's base disk */
			b = store_file_find(backing);
			if (b == NULL || !(b->flags & SF_LAYER) ||
			    disk_family(backing) != disk_family(cur) ||
			    strncmp(backing, cur, disk_family(cur)) != 0) {
				why = "a backing file that is neither a layer "
				      "of its disk in its directory nor the "
				      "image's base disk";
				break;
			}
			if (++steps > n) {
				why = "a backing chain that loops";
				break;
			}
			snprintf(cur, sizeof cur, "%s", backing);
		}
		if (why != NULL) {
			char *shown = backing[0] ? hb_fmt(" (backing file "
			                                  "'%s')",
			                               backing) :
			                           NULL;

			*cause = hb_fmt("refused '%s'%s%s%s: %s",
			    ents[i]->d_name,
			    strcmp(cur, ents[i]->d_name) ? ", through '" : "",
			    strcmp(cur, ents[i]->d_name) ? cur : "",
			    shown ? shown : "", why);
			free(shown);
			rv = -1;
		}
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return (rv);
}
