/*
 * host-bridge/vm/qemu_warm.c: new desktops cloned from an image's warm
 * state. IMAGE/warm is a desktop that was booted once, drew its session,
 * synced and was saved (bureau image warm): its disks (system.qcow2, an
 * overlay on the image's base, and home.qcow2), its RAM file and device
 * state, its desktop.json (as warm.json) and its guest-token.
 *
 * A clone gets copies of the two small overlays, as they were at the save
 * (the warm RAM knows those disks), and at its first start a copy of the
 * warm RAM file as its own RAM file (sparse: the warm state's pages that
 * hold data, 385 MB of the minimal image's 4 GB, 0.2 s from the page
 * cache here), which it then runs on like any saved desktop: its stops
 * and starts are ordinary saves and restores. The warm files never
 * change; every clone reads them.
 *
 * It used to map IMAGE/warm/ram privately instead (copy-on-write pages
 * of its QEMU), which DESIGN.md's "the warm RAM state shared read-only"
 * describes and which shares the unchanged pages' memory between running
 * clones. But QEMU 7.2 cannot save a private RAM block without writing
 * all of it into the state (x-ignore-shared skips only shared ones, and
 * it has no mapped-ram): that first stop took 4.4-10.9 s, and the next
 * start 14-18 s, 12.2 s of it loading the RAM from the state, which reads
 * every page of the 4 GB. A copy at the first start costs 0.2 s.
 *
 * The files in a clone's directory:
 *   warm-from  {"warm": DIR, "home": BYTES}: not run yet, the next start
 *              restores DIR's state (and grows home to BYTES online)
 *   warm-ram   running on DIR's RAM (privately), a clone started by an
 *              older bureau: the next save writes the RAM into the state
 * Its identity (tokens, hostname, machine-id) comes through fw_cfg from
 * the new QEMU; the guest re-reads it on the VM generation change
 * (-device vmgenid), see ready.c's vm_launch.
 */
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

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *p = desktop_path(d, files[i]);
		if (p != NULL)
			unlink(p);
		free(p);
	}
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

int
qemu_clone(const struct desktop *d, const struct image *im, long long disk,
    long long home, char **why)
{
	char *wd = qemu_warm_dir(d->image), *p = NULL, *from = NULL;
	char *to = NULL, *s = NULL;
	json_t *w = NULL, *st = NULL, *mark = NULL;
	long long whome;
	const char *m;
	int rv = 0;

	(void)im;
	if (wd == NULL || (p = hb_fmt("%s/warm.json", wd)) == NULL) {
		*why = hb_fmt("out of memory");
		rv = -1;
		goto out;
	}
	if (getenv("BUREAU_WARM") != NULL &&
	    strcmp(getenv("BUREAU_WARM"), "0") == 0) {
		*why = hb_fmt("BUREAU_WARM=0");
		goto out;
	}
	if ((w = json_load_file(p, 0, NULL)) == NULL) {
		*why = hb_fmt("the image has no warm state (bureau image warm "
		              "makes it)");
		goto out;
	}
	free(p);
	if ((p = hb_fmt("%s/state.json", wd)) == NULL ||
	    (st = json_load_file(p, 0, NULL)) == NULL) {
		*why = hb_fmt("the image's warm state is incomplete (no "
		              "state.json)");
		goto out;
	}
	m = json_string_value(json_object_get(st, "machine"));
	whome = json_integer_value(json_object_get(w, "home"));
	if (m == NULL || strcmp(m, QEMU_MACHINE) != 0) {
		*why = hb_fmt("the warm state is of machine type '%s', this "
		              "bureau runs '%s'",
		    m ? m : "?", QEMU_MACHINE);
		goto out;
	}
	if (json_integer_value(json_object_get(w, "memory")) != d->memory ||
	    json_integer_value(json_object_get(w, "cpus")) != d->cpus) {
		*why = hb_fmt("the warm state has %lldM of memory and %lld "
		              "cpus",
		    (long long)json_integer_value(json_object_get(w, "memory")),
		    (long long)json_integer_value(json_object_get(w, "cpus")));
		goto out;
	}
	if (json_integer_value(json_object_get(w, "disk")) != disk) {
		*why = hb_fmt("the warm state's system disk is %lld bytes",
		    (long long)json_integer_value(json_object_get(w, "disk")));
		goto out;
	}
	if (home < whome) {
		*why = hb_fmt("the warm state's home is %lld bytes: a home "
		              "cannot shrink",
		    whome);
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		const char *n = i == 0 ? "system.qcow2" : "home.qcow2";
		free(from);
		free(to);
		from = hb_fmt("%s/%s", wd, n);
		to = desktop_path(d, n);
		if (from == NULL || to == NULL) {
			*why = hb_fmt("out of memory");
			rv = -1;
			goto out;
		}
		if (copy_disk(from, to, why) != 0) {
			rv = -1;
			goto out;
		}
	}
	/* Which warm state: one remade since (image warm) does not know
	 * these disks. */
	mark = json_pack("{s:s, s:I, s:I, s:s?}", "warm", wd, "home",
	    (json_int_t)home, "warm_home", (json_int_t)whome, "state_blake2b",
	    json_string_value(json_object_get(st, "state_blake2b")));
	free(p);
	if (mark == NULL || (s = json_dumps(mark, 0)) == NULL ||
	    (p = desktop_path(d, "warm-from")) == NULL) {
		*why = hb_fmt("out of memory");
		rv = -1;
		goto out;
	}
	if (hb_write_file(p, s, strlen(s), 0600, why) != 0) {
		rv = -1;
		goto out;
	}
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

char *
qemu_warm_token(const struct desktop *d)
{
	char *p = hb_fmt("%s/warm/guest-token", d->image), *t;

	t = p ? hb_read_file(p) : NULL;
	free(p);
	if (t != NULL)
		t[strcspn(t, "\r\n")] = '\0';
	return (t);
}
