/*
 * host-bridge/vm/disks.c: the system overlay, the home file system, and
 * offline snapshots.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/disks.h"

/* The data disk: a sparse ext4 file system holding /home/USER owned by the
 * image's user, made without root (debugfs sets the owner), as qcow2. */
static int
disks_home(const struct desktop *d, const struct image *im, long long size,
    char **cause)
{
	char *raw = desktop_path(d, "home.raw");
	char *cmds = desktop_path(d, "home.debugfs");
	char *qcow = desktop_path(d, "home.qcow2"), *script = NULL, *sz = NULL;
	int rv = -1, fd;

	if (raw == NULL || cmds == NULL || qcow == NULL)
		goto oom;
	fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size) != 0) {
		*cause = hb_fmt("cannot create '%s': %s", raw, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	if ((sz = hb_fmt("%lldk", size / 1024)) == NULL)
		goto oom;
	char *mkfs[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-L",
		"bureau-home", "-E", "lazy_itable_init=1,lazy_journal_init=1",
		raw, sz, NULL };
	if (hb_run(mkfs, 0, cause) != 0)
		goto out;
	script = hb_fmt("mkdir %s\nsif %s uid %d\nsif %s gid %d\n"
	                "sif %s mode 040750\n",
	    im->user, im->user, im->uid, im->user, im->gid, im->user);
	if (script == NULL)
		goto oom;
	if (hb_write_file(cmds, script, strlen(script), 0600, cause) != 0)
		goto out;
	char *dbg[] = { "debugfs", "-w", "-f", cmds, raw, NULL };
	if (hb_run(dbg, 1, cause) != 0)
		goto out;
	char *conv[] = { "qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw,
		qcow, NULL };
	if (hb_run(conv, 0, cause) != 0)
		goto out;
	rv = 0;
	goto out;
oom:
	*cause = hb_fmt("out of memory");
out:
	if (raw)
		unlink(raw);
	if (cmds)
		unlink(cmds);
	free(raw);
	free(cmds);
	free(qcow);
	free(script);
	free(sz);
	return (rv);
}

int
disks_create(const struct desktop *d, const struct image *im,
    long long disk_bytes, long long home_bytes, char **cause)
{
	/* qemu-img's -b takes the backing file whole: no escaping. */
	char *base = hb_fmt("%s/%s", d->image, im->disk);
	char *sys = desktop_path(d, "system.qcow2");
	char *dsz = hb_fmt("%lld", disk_bytes);
	int rv = -1;

	if (base == NULL || sys == NULL || dsz == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	char *qi[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2",
		"-b", base, sys, dsz, NULL };
	if (hb_run(qi, 0, cause) != 0)
		goto out;
	rv = disks_home(d, im, home_bytes, cause);
out:
	free(base);
	free(sys);
	free(dsz);
	return (rv);
}

int
disks_snapshot(const struct desktop *d, const char *tag, int restore,
    char **cause)
{
	const char *disks[] = { "system.qcow2", "home.qcow2" };
	const char *op = restore ? "-a" : "-c";

	for (int i = 0; i < 2; i++) {
		char *p = desktop_path(d, disks[i]);
		int rv;

		if (p == NULL) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
		char *argv_s[] = { "qemu-img", "snapshot", (char *)op,
			(char *)tag, p, NULL };
		char *argv_l[] = { "qemu-img", "snapshot", "-U", "-l", p,
			NULL };
		rv = hb_run(tag ? argv_s : argv_l, 0, cause);
		free(p);
		if (rv != 0)
			return (-1);
	}
	return (0);
}
