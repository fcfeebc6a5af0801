/*
 * host-bridge/vm/disks.c: the system overlay, the home file system, and
 * offline snapshots.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/*
 * A qcow2 file's backing file name (as its header holds it: a fork's
 * layers are named relative to the directory) and its number of internal
 * snapshots, from the header (docs/interop/qcow2.txt: big-endian; the
 * backing name's offset at byte 8, its length at 16, nb_snapshots at 60):
 * 0, -1 when unreadable or not qcow2.
 */
static int
qcow2_head(const char *path, char *backing, size_t len, unsigned *nsnap)
{
	unsigned char h[72];
	unsigned long long off = 0;
	unsigned blen = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rv = -1;

	backing[0] = '\0';
	if (fd < 0)
		return (-1);
	if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    memcmp(h, "QFI\xfb", 4) != 0)
		goto out;
	for (int i = 0; i < 8; i++)
		off = off << 8 | h[8 + i];
	for (int i = 0; i < 4; i++)
		blen = blen << 8 | h[16 + i];
	*nsnap = (unsigned)h[60] << 24 | (unsigned)h[61] << 16 |
	    (unsigned)h[62] << 8 | h[63];
	if (off != 0 &&
	    (blen == 0 || blen >= len ||
	        pread(fd, backing, blen, (off_t)off) != (ssize_t)blen))
		goto out;
	backing[off != 0 ? blen : 0] = '\0';
	rv = 0;
out:
	close(fd);
	return (rv);
}

void
disks_drop_aliases(const struct desktop *d)
{
	DIR *dir = opendir(d->dir);
	struct dirent *e;

	while (dir != NULL && (e = readdir(dir)) != NULL) {
		const char *p = NULL;
		size_t n;
		char *path;

		if (strncmp(e->d_name, "system.T", 8) == 0)
			p = e->d_name + 8;
		else if (strncmp(e->d_name, "home.T", 6) == 0)
			p = e->d_name + 6;
		if (p == NULL || (n = strspn(p, "0123456789abcdef")) == 0 ||
		    strcmp(p + n, ".qcow2") != 0)
			continue;
		if ((path = desktop_path(d, e->d_name)) != NULL)
			unlink(path);
		free(path);
	}
	if (dir != NULL)
		closedir(dir);
}

json_t *
disks_chain(const struct desktop *d, const char *file, char **cause)
{
	json_t *names = json_array();
	char *path = desktop_path(d, file);

	if (names == NULL || path == NULL ||
	    json_array_append_new(names, json_string(file)) != 0)
		goto oom;
	for (int depth = 0;; depth++) {
		char backing[1024];
		unsigned nsnap = 0;

		if (qcow2_head(path, backing, sizeof backing, &nsnap) != 0) {
			*cause = hb_fmt("'%s' is not a readable qcow2 file",
			    path);
			goto fail;
		}
		if (backing[0] == '\0')
			break;
		if (depth >= 64) {
			*cause = hb_fmt("the backing chain of '%s' is deeper "
			                "than 64",
			    file);
			goto fail;
		}
		if (json_array_append_new(names, json_string(backing)) != 0)
			goto oom;
		free(path);
		path = backing[0] == '/' ? strdup(backing) :
		                           desktop_path(d, backing);
		if (path == NULL)
			goto oom;
	}
	free(path);
	return (names);
oom:
	*cause = hb_fmt("out of memory");
fail:
	json_decref(names);
	free(path);
	return (NULL);
}

int
disks_collapse(const struct desktop *d, int (*is_layer)(const char *),
    char **cause)
{
	static const char *const disks[] = { "system.qcow2", "home.qcow2" };
	int rv = 0;

	for (int i = 0; i < 2 && rv == 0; i++) {
		char *top = desktop_path(d, disks[i]);

		for (;;) {
			char backing[1024], *lp = NULL;
			unsigned nsnap = 0;
			struct stat st;

			if (top == NULL) {
				*cause = hb_fmt("out of memory");
				rv = -1;
				break;
			}
			/* a layer in this directory that no fork shares
			 * (one link), under a top without snapshots, whose
			 * tags a commit would not carry */
			if (qcow2_head(top, backing, sizeof backing, &nsnap) !=
			        0 ||
			    nsnap != 0 || !is_layer(backing) ||
			    (lp = desktop_path(d, backing)) == NULL ||
			    stat(lp, &st) != 0 || st.st_nlink != 1) {
				free(lp);
				break;
			}
			char *commit[] = { "qemu-img", "commit", "-q", top,
				NULL };
			if (hb_run(commit, 0, cause) != 0 ||
			    rename(lp, top) != 0) {
				if (*cause == NULL)
					*cause = hb_fmt("cannot rename '%s': "
					                "%s",
					    lp, strerror(errno));
				free(lp);
				rv = -1;
				break;
			}
			free(lp);
		}
		free(top);
	}
	return (rv);
}
