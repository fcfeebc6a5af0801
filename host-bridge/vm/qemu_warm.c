/*
 * host-bridge/vm/qemu_warm.c: new desktops cloned from an image's warm
 * state. IMAGE/warm is a desktop that was booted once, drew its session,
 * synced and was saved (bureau image warm): its disks (system.qcow2, an
 * overlay on the image's base, and home.qcow2), its RAM file and device
 * state, its desktop.json (as warm.json) and its guest-token.
 *
 * A clone gets copies of the two small overlays, as they were at the save
 * (the warm RAM knows those disks). At its first start it links the warm
 * RAM file and state into its directory (ram.base, state.base: hard
 * links, so that the files it runs on outlive a warm state made again)
 * and QEMU maps ram.base privately: the pages the clone does not write
 * stay the page cache's one copy, shared by every clone of that warm
 * state that runs (an idle 4G clone wrote 7-14 MB of them; the warm RAM
 * holds 385 MB). Its saves write the pages it changed (qemu_stream.c);
 * its restores map ram.base again and load them over it. The warm files
 * never change; every clone reads them.
 *
 * Where the desktops are on another file system than the image (no hard
 * link), a clone copies the warm RAM at its first start instead (sparse:
 * 385 MB of the minimal image's 4 GB, 0.2 s from the page cache here) and
 * runs on it as its own RAM file (shared, saved by x-ignore-shared); a
 * clone started that way by an earlier bureau stays so.
 *
 * The files in a clone's directory:
 *   warm-from  {"warm": DIR, "disk": BYTES, "home": BYTES, ...}: not run
 *              yet, the next start restores DIR's state (and grows the
 *              system disk and the home to those sizes online)
 *   warm-token the warm state's guest token, which the clone's daemon
 *              must refuse once it runs
 *   ram.base   a hard link to the warm RAM file: runs on it privately
 *   state.base a hard link to the warm state file, whose RAM sections
 *              (the firmware's and video memory's pages) start each save
 *   warm-ram   running on DIR's RAM (privately), a clone started by an
 *              older bureau: the next save writes the RAM into the state
 * Warm states of other sizes: the memory and the cpus are the machine's
 * (the RAM block and the vCPUs the state holds), so a new desktop of
 * another --memory or --cpus needs a warm state of its own: `bureau
 * create` makes one on the first use of a size (IMAGE/warm-MEMORY-CPUS-
 * DISK-HOME, one cold boot, cli/warm.c), and every later desktop of that
 * size is a clone. The disks need not match: a warm state serves every
 * desktop whose system disk and home are at least its own, grown online
 * at the first start (block_resize; the guest's udev rule grows the file
 * system). Adding memory and cpus to a restored guest instead (virtio-mem,
 * vCPU hotplug) would give every size one warm state, but then every
 * desktop runs a machine unlike a booted one (its memory mostly in a
 * movable hotplug zone, vCPUs the guest must online) under QEMU 7.2's
 * TCG; a warm state per size costs one boot and about 400 MB of disk.
 *
 * Its identity (tokens, hostname, machine-id) comes through fw_cfg from
 * the new QEMU; the guest re-reads it on the VM generation change
 * (-device vmgenid), see ready.c's vm_launch.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/qemu_int.h"

char *
qemu_warm_dir(const char *image)
{
	return (hb_fmt("%s/warm", image));
}

/* d's warm-from, or NULL when it is not a clone waiting for its start. */
json_t *
qemu_warm_from(const struct desktop *d)
{
	char *p = desktop_path(d, "warm-from");
	json_t *j = p ? json_load_file(p, 0, NULL) : NULL;

	free(p);
	if (j != NULL && !json_is_string(json_object_get(j, "warm"))) {
		json_decref(j);
		j = NULL;
	}
	return (j);
}

int
qemu_cloned(const struct desktop *d)
{
	json_t *j = qemu_warm_from(d);
	int r = j != NULL;

	json_decref(j);
	return (r);
}

int
qemu_running_warm_ram(const struct desktop *d)
{
	char *p = desktop_path(d, "warm-ram");
	int r = p != NULL && access(p, F_OK) == 0;

	free(p);
	return (r);
}

void
qemu_warm_forget(const struct desktop *d)
{
	static const char *const files[] = { "warm-from", "warm-ram" };

	qemu_unlink(d, files, sizeof files / sizeof files[0]);
}

/* Copy a warm disk or RAM file, sparse, its times kept (the warm
 * state.json records them). */
static int
copy_disk(const char *from, const char *to, char **cause)
{
	char *cp[] = { "cp", "--preserve=timestamps", "--sparse=always",
		(char *)from, (char *)to, NULL };

	return (hb_run(cp, 0, cause));
}

/* A hard link to the warm file, to go on the clone as name: 0, 1 when
 * the two are on different file systems (or links are refused). */
static int
link_warm(const struct desktop *d, const char *wdir, const char *from,
    const char *name, char **cause)
{
	char *src = hb_fmt("%s/%s", wdir, from), *to = desktop_path(d, name);
	int rv = -1;

	if (src == NULL || to == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	unlink(to);
	if (link(src, to) == 0)
		rv = 0;
	else if (errno == EXDEV || errno == EPERM || errno == EMLINK)
		rv = 1;
	else
		*cause = hb_fmt("cannot link '%s' to '%s': %s", src, to,
		    strerror(errno));
out:
	free(src);
	free(to);
	return (rv);
}

int
qemu_warm_link_ram(const struct desktop *d, const char *wdir, char **cause)
{
	int r;

	/* The links keep the files a clone runs on when the image's warm
	 * state is made again or removed (the old inodes stay). */
	if ((r = link_warm(d, wdir, "state", "state.base", cause)) != 0)
		return (r);
	if ((r = link_warm(d, wdir, "ram", "ram.base", cause)) != 0) {
		qemu_drop_ram(d);
		return (r);
	}
	return (0);
}

int
qemu_warm_copy_ram(const struct desktop *d, const char *wdir, char **cause)
{
	char *from = hb_fmt("%s/ram", wdir), *tmp = desktop_path(d, "ram.tmp");
	char *to = desktop_path(d, "ram");
	int rv = -1;

	if (from == NULL || tmp == NULL || to == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	unlink(tmp);
	if (copy_disk(from, tmp, cause) != 0)
		goto out;
	/* Whole or not at all: a RAM file cut short by a full disk would
	 * be restored into. */
	if (rename(tmp, to) != 0) {
		*cause = hb_fmt("cannot rename '%s': %s", tmp, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (rv != 0 && tmp != NULL)
		unlink(tmp);
	free(from);
	free(tmp);
	free(to);
	return (rv);
}

/* Does the warm state in wd fit a desktop of d's memory and cpus, disk
 * and home (which grow online from the warm state's, never shrink)? 1
 * yes, 0 no (*why says why, when why is not NULL and *why is NULL), -1
 * out of memory. *wj and *sj get warm.json and state.json when it fits. */
static int
warm_fits(const char *wd, const char *sname, long memory, int cpus,
    long long disk, long long home, json_t **wj, json_t **sj, char **why)
{
	char *p = hb_fmt("%s/warm.json", wd),
	     *s = hb_fmt("%s/%s.json", wd, sname);
	json_t *w = NULL, *st = NULL;
	const char *m;
	char *no = NULL;
	int rv = 0;

	if (p == NULL || s == NULL) {
		rv = -1;
		goto out;
	}
	if ((w = json_load_file(p, 0, NULL)) == NULL) {
		no = hb_fmt("the image has no warm state (bureau image warm "
		            "makes it)");
		goto out;
	}
	if ((st = json_load_file(s, 0, NULL)) == NULL) {
		no = hb_fmt("the image's warm state is incomplete (no "
		            "%s.json)",
		    sname);
		goto out;
	}
	m = json_string_value(json_object_get(st, "machine"));
	if (m == NULL || strcmp(m, QEMU_MACHINE) != 0) {
		no = hb_fmt("the warm state is of machine type '%s', this "
		            "bureau runs '%s'",
		    m ? m : "?", QEMU_MACHINE);
		goto out;
	}
	if (json_integer_value(json_object_get(w, "memory")) != memory ||
	    json_integer_value(json_object_get(w, "cpus")) != cpus) {
		no = hb_fmt("the warm state has %lldM of memory and %lld cpus",
		    (long long)json_integer_value(json_object_get(w, "memory")),
		    (long long)json_integer_value(json_object_get(w, "cpus")));
		goto out;
	}
	if (json_integer_value(json_object_get(w, "disk")) > disk) {
		no = hb_fmt("the warm state's system disk is %lld bytes: a "
		            "disk cannot shrink",
		    (long long)json_integer_value(json_object_get(w, "disk")));
		goto out;
	}
	if (json_integer_value(json_object_get(w, "home")) > home) {
		no = hb_fmt("the warm state's home is %lld bytes: a home "
		            "cannot shrink",
		    (long long)json_integer_value(json_object_get(w, "home")));
		goto out;
	}
	rv = 1;
	*wj = w;
	*sj = st;
	w = st = NULL;
out:
	if (no != NULL && why != NULL && *why == NULL)
		*why = no;
	else
		free(no);
	json_decref(w);
	json_decref(st);
	free(p);
	free(s);
	return (rv);
}

/* The warm states of libvirt hosts (vm.h's VM_WARM_LIBVIRT), their state
 * lv.state; `local`'s are IMAGE/warm and the other IMAGE/warm-*. */
#define WARM_LV VM_WARM_LIBVIRT "-"

static int
warm_find(const char *image, int lv, long memory, int cpus, long long disk,
    long long home, char **dir, char **why)
{
	const char *sname = lv ? "lv.state" : "state";
	char *wd = NULL, *best = NULL;
	json_t *w = NULL, *st = NULL;
	long long best_grow = -1;
	DIR *dh = NULL;
	struct dirent *de;
	int rv = 0, f;

	*dir = NULL;
	if (getenv("BUREAU_WARM") != NULL &&
	    strcmp(getenv("BUREAU_WARM"), "0") == 0) {
		if (why != NULL && *why == NULL)
			*why = hb_fmt("BUREAU_WARM=0");
		return (0);
	}
	/* The default size's first: its reason is the one to give. */
	if ((wd = qemu_warm_dir(image)) == NULL)
		return (-1);
	if (!lv &&
	    (f = warm_fits(wd, sname, memory, cpus, disk, home, &w, &st,
	         why)) != 0) {
		json_decref(w);
		json_decref(st);
		if (f < 0) {
			free(wd);
			return (-1);
		}
		*dir = wd;
		return (1);
	}
	free(wd);
	wd = NULL;
	/* Then the warm states made for other sizes (warm-*): the one
	 * whose disks grow least, so that the fewest blocks are new. */
	if ((dh = opendir(image)) == NULL)
		return (0);
	while ((de = readdir(dh)) != NULL) {
		/* (not DIR.new or DIR.old: being made or replaced) */
		if (strncmp(de->d_name, "warm-", 5) != 0 ||
		    strchr(de->d_name, '.') != NULL ||
		    (lv ? strncmp(de->d_name, WARM_LV, strlen(WARM_LV)) != 0 :
		          strncmp(de->d_name, "warm-libvirt", 12) == 0))
			continue;
		free(wd);
		if ((wd = hb_fmt("%s/%s", image, de->d_name)) == NULL) {
			rv = -1;
			goto out;
		}
		if ((f = warm_fits(wd, sname, memory, cpus, disk, home, &w, &st,
		         NULL)) < 0) {
			rv = -1;
			goto out;
		}
		if (f == 0)
			continue;
		long long grow =
		    (disk - json_integer_value(json_object_get(w, "disk"))) +
		    (home - json_integer_value(json_object_get(w, "home")));
		json_decref(w);
		json_decref(st);
		w = st = NULL;
		if (best == NULL || grow < best_grow) {
			free(best);
			best = wd;
			wd = NULL;
			best_grow = grow;
		}
	}
	if (best != NULL) {
		*dir = best;
		best = NULL;
		rv = 1;
	} else if (lv && why != NULL && *why == NULL)
		*why = hb_fmt("no warm state of this size for libvirt hosts");
out:
	if (dh != NULL)
		closedir(dh);
	free(wd);
	free(best);
	return (rv);
}

int
qemu_warm_find(const char *image, long memory, int cpus, long long disk,
    long long home, char **dir, char **why)
{
	return (warm_find(image, 0, memory, cpus, disk, home, dir, why));
}

int
qemu_warm_find_lv(const char *image, long memory, int cpus, long long disk,
    long long home, char **dir, char **why)
{
	return (warm_find(image, 1, memory, cpus, disk, home, dir, why));
}

static int
warm_clone(const struct desktop *d, int lv, long long disk, long long home,
    char **why)
{
	const char *sname = lv ? "lv.state" : "state";
	char *wd = NULL, *p = NULL, *from = NULL, *to = NULL, *s = NULL;
	json_t *w = NULL, *st = NULL, *mark = NULL;
	int rv;

	if ((rv = warm_find(d->image, lv, d->memory, d->cpus, disk, home, &wd,
	         why)) <= 0) {
		if (rv < 0)
			*why = hb_fmt("out of memory");
		goto out;
	}
	rv = -1;
	if (warm_fits(wd, sname, d->memory, d->cpus, disk, home, &w, &st,
	        why) != 1)
		goto out;
	/* The disks as they were at the save (the warm RAM knows them), and
	 * the warm state's guest token, which the clone's daemon must refuse
	 * once it runs (ready.c) */
	for (int i = 0; i < 3; i++) {
		const char *n = i == 0 ? "system.qcow2" :
		    i == 1             ? "home.qcow2" :
		                         "guest-token";
		free(from);
		free(to);
		from = hb_fmt("%s/%s", wd, n);
		to = desktop_path(d, i == 2 ? "warm-token" : n);
		if (from == NULL || to == NULL) {
			*why = hb_fmt("out of memory");
			goto out;
		}
		if (copy_disk(from, to, why) != 0)
			goto out;
	}
	/* Which warm state: one remade since (image warm) does not know
	 * these disks. The disks grow to the desktop's sizes at the first
	 * start, online. */
	mark = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s?}", "warm", wd, "home",
	    (json_int_t)home, "warm_home",
	    json_integer_value(json_object_get(w, "home")), "disk",
	    (json_int_t)disk, "warm_disk",
	    json_integer_value(json_object_get(w, "disk")), "state_blake2b",
	    json_string_value(json_object_get(st, "state_blake2b")));
	if (mark == NULL || (s = json_dumps(mark, 0)) == NULL ||
	    (p = desktop_path(d, "warm-from")) == NULL) {
		*why = hb_fmt("out of memory");
		goto out;
	}
	if (hb_write_file(p, s, strlen(s), 0600, why) != 0)
		goto out;
	rv = 1;
out:
	json_decref(w);
	json_decref(st);
	json_decref(mark);
	free(wd);
	free(p);
	free(from);
	free(to);
	free(s);
	return (rv);
}

int
qemu_clone(const struct desktop *d, const struct image *im, long long disk,
    long long home, char **why)
{
	(void)im;
	return (warm_clone(d, 0, disk, home, why));
}

int
qemu_clone_lv(const struct desktop *d, long long disk, long long home,
    char **why)
{
	return (warm_clone(d, 1, disk, home, why));
}

char *
qemu_warm_token(const struct desktop *d)
{
	char *p = desktop_path(d, "warm-token"), *t;

	t = p ? hb_read_file(p) : NULL;
	free(p);
	/* a clone made by an older bureau: of the default size's */
	if (t == NULL &&
	    (p = hb_fmt("%s/warm/guest-token", d->image)) != NULL) {
		t = hb_read_file(p);
		free(p);
	}
	if (t != NULL)
		t[strcspn(t, "\r\n")] = '\0';
	return (t);
}
