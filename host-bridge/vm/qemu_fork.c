/*
 * host-bridge/vm/qemu_fork.c: a running desktop forked into a new one
 * (bureau fork): the fork gets the parent's disks as they are now,
 * shared copy-on-write, and its RAM and devices as a saved state, which
 * the fork's first start restores under its own identity (ready.c); the
 * parent stands still only while these are written, and runs on.
 *
 * Disks. Both desktops go on from the same contents without seeing each
 * other's writes, and nothing is copied (a used system disk holds GBs).
 * While the parent is paused its system.qcow2 becomes a read-only layer,
 * renamed system.L<ID>.qcow2, and each desktop gets a new empty overlay
 * on it named system.qcow2: the parent's through QMP blockdev-snapshot
 * (QEMU writes into the new overlay from then on and keeps the layer open
 * as its backing), the fork's made by qemu-img. The layer is hard-linked
 * into the fork's directory under the same name, so each overlay names
 * its backing relative to its own directory and removing either desktop
 * leaves the other's chain whole (the last link frees it). The same for
 * home.qcow2. From then on a block either writes costs disk, nothing else.
 * The layers stay under the parent's overlays (a chain one layer deeper
 * per fork; qemu-img and the snapshots work on the top overlay); internal
 * snapshots taken before the fork stay in the layer (disks_snapshot).
 *
 * RAM. A parent on its warm state's RAM (ram.base: every clone) is saved
 * as a stop saves it (qemu_stream.c: the pages it changed and its
 * devices) into the fork's state, and the fork links ram.base and
 * state.base as its parent does: it maps the same warm RAM privately, its
 * restore loads the parent's changed pages over it. A parent on a RAM file
 * of its own (one that booted) is saved with x-ignore-shared (devices
 * only) and its RAM file copied, sparse, while it is paused: that pause
 * grows with the RAM the guest uses.
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
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/qmp.h"

/* One of the two disks: the drive, its file, what the fork makes of it. */
struct fork_disk {
	const char *drive, *file, *stem; /* "drive-sys", "system.qcow2" */
	char node[64];                   /* its top node now */
	char newnode[64];                /* the parent's new overlay */
	char *layer;                     /* "system.L<ID>.qcow2" */
	char *p_file, *p_layer, *p_new;  /* in the parent's directory */
	char *p_alias; /* the name QEMU knows p_new by (stem.T<ID>.qcow2) */
	char *c_file, *c_layer; /* in the fork's */
	int renamed, linked;
	int aliased; /* p_alias made */
	int used;    /* QEMU's top node is on p_new: kept */
};

int
qemu_top_nodes(struct qmp *q, char *sys, char *home, size_t len,
    long long *sizes, char **cause)
{
	json_t *r = NULL, *b;
	size_t i;
	int found = 0;

	if (qmp_exec(q, "query-block", NULL, &r, cause) != 0)
		return (-1);
	json_array_foreach(r, i, b)
	{
		const char *dev = json_string_value(
		    json_object_get(b, "device"));
		const char *qdev = json_string_value(
		    json_object_get(b, "qdev"));
		json_t *in = json_object_get(b, "inserted");
		const char *node = json_string_value(
		    json_object_get(in, "node-name"));
		long long size = json_integer_value(json_object_get(
		    json_object_get(in, "image"), "virtual-size"));
		char *to = NULL;
		int n = -1;

		if (dev == NULL || node == NULL)
			continue;
		/* (local's drives by their ids; a libvirt domain's, whose
		 * -blockdev nodes have none, by libvirt's device aliases) */
		if (strcmp(dev, "drive-sys") == 0 ||
		    (qdev != NULL && strstr(qdev, "/virtio-disk0/") != NULL))
			to = sys, n = 0;
		else if (strcmp(dev, "drive-home") == 0 ||
		    (qdev != NULL && strstr(qdev, "/virtio-disk1/") != NULL))
			to = home, n = 1;
		if (to != NULL && strlen(node) < len &&
		    (sizes == NULL || size > 0)) {
			strcpy(to, node);
			if (sizes != NULL)
				sizes[n] = size;
			found++;
		}
	}
	json_decref(r);
	if (found != 2) {
		*cause = hb_fmt("QEMU does not show the system and home disks");
		return (-1);
	}
	return (0);
}

/* An empty qcow2 overlay at path on the layer (named relative to path's
 * directory, which need not hold it yet: -u). */
static int
fork_overlay(const char *path, const char *layer, long long size, char **cause)
{
	char sz[32];
	char *qi[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2",
		"-u", "-b", (char *)layer, (char *)path, sz, NULL };

	snprintf(sz, sizeof sz, "%lld", size);
	return (hb_run(qi, 0, cause));
}

static void
fork_disk_free(struct fork_disk *k)
{
	free(k->layer);
	free(k->p_file);
	free(k->p_layer);
	free(k->p_new);
	free(k->p_alias);
	free(k->c_file);
	free(k->c_layer);
}

/* The names, and the two new overlays made (before the pause). */
static int
fork_prepare(const struct desktop *d, const struct desktop *c,
    struct fork_disk *k, const long long *sizes, const char *id, char **cause)
{
	for (int n = 0; n < 2; n++) {
		if ((k[n].layer = hb_fmt("%s.L%s.qcow2", k[n].stem, id)) ==
		        NULL ||
		    (k[n].p_file = desktop_path(d, k[n].file)) == NULL ||
		    (k[n].p_layer = desktop_path(d, k[n].layer)) == NULL ||
		    (k[n].p_new = hb_fmt("%s.new", k[n].p_file)) == NULL ||
		    (k[n].p_alias = hb_fmt("%s/%s.T%s.qcow2", d->dir, k[n].stem,
		         id)) == NULL ||
		    (k[n].c_file = desktop_path(c, k[n].file)) == NULL ||
		    (k[n].c_layer = desktop_path(c, k[n].layer)) == NULL) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
		snprintf(k[n].newnode, sizeof k[n].newnode, "%s-L%s",
		    n == 0 ? "sys" : "home", id);
		if (fork_overlay(k[n].p_new, k[n].layer, sizes[n], cause) !=
		        0 ||
		    fork_overlay(k[n].c_file, k[n].layer, sizes[n], cause) != 0)
			return (-1);
		if (link(k[n].p_new, k[n].p_alias) != 0) {
			*cause = hb_fmt("cannot link '%s': %s", k[n].p_alias,
			    strerror(errno));
			return (-1);
		}
		k[n].aliased = 1;
	}
	return (0);
}

/* Undo what fork_swap did of the files (the parent runs on its own). */
static void
fork_unswap(struct fork_disk *k)
{
	for (int n = 0; n < 2; n++) {
		if (k[n].linked)
			unlink(k[n].c_layer);
		if (k[n].renamed) {
			rename(k[n].p_file, k[n].p_new);
			rename(k[n].p_layer, k[n].p_file);
		}
		k[n].linked = k[n].renamed = 0;
	}
}

/* k's file renamed to its layer, the new overlay put at its name, the
 * layer linked into the fork; on failure as far as fork_unswap undoes. */
static int
fork_rename(struct fork_disk *k, char **cause)
{
	if (rename(k->p_file, k->p_layer) != 0) {
		*cause = hb_fmt("cannot rename '%s': %s", k->p_file,
		    strerror(errno));
		return (-1);
	}
	k->renamed = 1;
	if (rename(k->p_new, k->p_file) != 0) {
		*cause = hb_fmt("cannot rename '%s': %s", k->p_new,
		    strerror(errno));
		rename(k->p_layer, k->p_file);
		k->renamed = 0;
		return (-1);
	}
	if (link(k->p_layer, k->c_layer) != 0) {
		*cause = hb_fmt("cannot link '%s' into the fork: %s (are the "
		                "desktops on one file system?)",
		    k->p_layer, strerror(errno));
		return (-1);
	}
	k->linked = 1;
	return (0);
}

/*
 * While the parent stands still: QEMU's top node of each disk moved onto
 * the new overlay, both disks in one transaction; then each disk's file
 * renamed to its layer, linked into the fork, and the new overlay put at
 * its name. On failure before the transaction the files are as they were.
 *
 * Nothing QEMU knows by a name is renamed while QEMU may reopen it. QEMU
 * reopens a file by the name it opened it by when its mode changes:
 * blockdev-snapshot reopens the old top read-only, and the migration of
 * a save or a fork reopens what it deactivated. A disk's file renamed
 * before the transaction had QEMU reopen the new overlay in place of the
 * layer (seen: the layer's node reading the overlay's file, the guest's
 * ext4 then "group descriptors corrupted", and after a migration "Failed
 * to get write lock", the parent stuck in postmigrate). So the renames
 * come after the transaction (the old top, which QEMU opened as
 * system.qcow2, is reopened while it still has that name), and QEMU
 * opens the new overlay by a name of its own, a hard link that no rename
 * touches while this QEMU runs (stem.T<ID>.qcow2, removed when it ends:
 * disks_drop_aliases): when a later fork makes that overlay a layer, its
 * read-only reopen finds the same file. Descriptors passed in an fd set
 * did that too, but the set's own descriptor kept QEMU's OFD write lock
 * on the file after the node had let it go, and the next fork's child
 * could not open its layer ("Failed to get shared "write" lock").
 */
static int
fork_swap(struct qmp *q, struct fork_disk *k, char **cause)
{
	json_t *acts = json_array();

	for (int n = 0; n < 2; n++) {
		if (qmp_exec(q, "blockdev-add",
		        json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:n}",
		            "driver", "qcow2", "node-name", k[n].newnode,
		            "discard", "unmap", "file", "driver", "file",
		            "filename", k[n].p_alias, "backing"),
		        NULL, cause) != 0)
			goto fail;
		json_array_append_new(acts,
		    json_pack("{s:s, s:{s:s, s:s}}", "type",
		        "blockdev-snapshot", "data", "node", k[n].node,
		        "overlay", k[n].newnode));
	}
	if (qmp_exec(q, "transaction", json_pack("{s:o}", "actions", acts),
	        NULL, cause) != 0) {
		acts = NULL;
		goto fail;
	}
	/* QEMU writes into the new overlays now: their files must take the
	 * disks' names (the next start opens those), the old ones the
	 * layers' (which the overlays name as their backing) */
	for (int n = 0; n < 2; n++)
		k[n].used = 1;
	for (int n = 0; n < 2; n++)
		if (fork_rename(&k[n], cause) != 0) {
			char *c2 = hb_fmt("the disks moved onto new overlays, "
			                  "but %s (the writes since are in "
			                  "'%s')",
			    *cause, k[n].p_new);

			free(*cause);
			*cause = c2;
			return (-1);
		}
	return (0);
fail:
	json_decref(acts);
	for (int n = 0; n < 2; n++) {
		char *c2 = NULL;
		/* (an overlay added and not put in use: dropped) */
		qmp_exec(q, "blockdev-del",
		    json_pack("{s:s}", "node-name", k[n].newnode), NULL, &c2);
		free(c2);
	}
	fork_unswap(k);
	return (-1);
}

/* A hard link of the parent's file name in the fork's directory. */
static int
fork_link(const struct desktop *d, const struct desktop *c, const char *name,
    char **cause)
{
	char *from = desktop_path(d, name), *to = desktop_path(c, name);
	int rv = -1;

	if (from == NULL || to == NULL)
		*cause = hb_fmt("out of memory");
	else if (link(from, to) != 0)
		*cause = hb_fmt("cannot link '%s' into the fork: %s", from,
		    strerror(errno));
	else
		rv = 0;
	free(from);
	free(to);
	return (rv);
}

int
qemu_layer_name(const char *name)
{
	const char *p;
	size_t n;

	if (strncmp(name, "system.L", 8) == 0)
		p = name + 8;
	else if (strncmp(name, "home.L", 6) == 0)
		p = name + 6;
	else
		return (0);
	n = strspn(p, "0123456789abcdef");
	return (n > 0 && strcmp(p + n, ".qcow2") == 0);
}

/*
 * The layers the parent's disks already stand on (it is a fork, or was
 * forked before) linked into the fork, whose chains go through them too,
 * and c/layers.shared listing them and the two new ones: the layers the
 * fork did not make (stats.c counts the others as its disk).
 */
static int
fork_link_layers(const struct desktop *d, const struct desktop *c,
    const struct fork_disk *k, char **cause)
{
	DIR *dir = opendir(d->dir);
	struct dirent *e;
	char *list = NULL, *p = NULL;
	size_t len = 0;
	int rv = -1;
	FILE *m = open_memstream(&list, &len);

	if (dir == NULL || m == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", d->dir,
		    strerror(errno));
		goto out;
	}
	while ((e = readdir(dir)) != NULL) {
		if (!qemu_layer_name(e->d_name))
			continue;
		if (fork_link(d, c, e->d_name, cause) != 0)
			goto out;
		fprintf(m, "%s\n", e->d_name);
	}
	fprintf(m, "%s\n%s\n", k[0].layer, k[1].layer);
	if (fclose(m) != 0) {
		m = NULL;
		*cause = hb_fmt("out of memory");
		goto out;
	}
	m = NULL;
	if ((p = desktop_path(c, "layers.shared")) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	rv = hb_write_file(p, list, len, 0600, cause);
out:
	if (m != NULL)
		fclose(m);
	if (dir != NULL)
		closedir(dir);
	free(list);
	free(p);
	return (rv);
}

/* The parent's own RAM file copied, sparse, into the fork. */
static int
fork_copy_ram(const struct desktop *d, const struct desktop *c, char **cause)
{
	char *from = desktop_path(d, "ram"), *to = desktop_path(c, "ram");
	int rv = -1;

	if (from == NULL || to == NULL) {
		*cause = hb_fmt("out of memory");
	} else {
		char *cp[] = { "cp", "--sparse=always", from, to, NULL };
		rv = hb_run(cp, 0, cause);
	}
	free(from);
	free(to);
	return (rv);
}

int
qemu_fork(const struct desktop *d, const struct desktop *c,
    struct vm_fork_info *fi, char **cause)
{
	struct qemu_fork_how how = { "qmp.sock", NULL, qemu_pid(d), NULL };

	return (qemu_fork_how(d, c, &how, fi, cause));
}

/* The new files of fork k, for the QEMU user of how (the overlay QEMU
 * opens now, read-write; the layers it opens at a later start). */
static int
fork_grant(const struct desktop *d, const struct qemu_fork_how *how,
    struct fork_disk *k, char **cause)
{
	for (int n = 0; how->grant != NULL && n < 2; n++)
		if (how->grant(d, k[n].p_new, "rw-", cause) != 0)
			return (-1);
	return (0);
}

int
qemu_fork_how(const struct desktop *d, const struct desktop *c,
    const struct qemu_fork_how *how, struct vm_fork_info *fi, char **cause)
{
	struct fork_disk k[2] = {
		{ .drive = "drive-sys",
		    .file = "system.qcow2",
		    .stem = "system" },
		{ .drive = "drive-home", .file = "home.qcow2", .stem = "home" },
	};
	pid_t pid = how->pid;
	struct qmp *q = NULL;
	char *qmps = desktop_path(d, how->qmp), *tmp = NULL;
	char *full = NULL, *series = NULL, *id = NULL, *ram = NULL, *c2 = NULL;
	long long sizes[2] = { 0, 0 };
	int rv = -1, stopped = 0, running = 0, base;
	json_t *status = NULL;
	long long t0 = 0;
	struct stat st;

	memset(fi, 0, sizeof *fi);
	tmp = how->state ? hb_fmt("%s/%s.tmp", c->dir, how->state) :
	                   desktop_path(c, "state.tmp");
	if (qmps == NULL || tmp == NULL ||
	    (ram = desktop_path(d, "ram")) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (pid == 0) {
		*cause = hb_fmt("desktop '%s' is not running", d->name);
		goto out;
	}
	/* (a QEMU bureau does not start runs on a RAM file of its own) */
	base = how->state == NULL && qemu_on_base(d);
	if (!base &&
	    ((how->state == NULL && qemu_running_warm_ram(d)) ||
	        access(ram, F_OK) != 0)) {
		*cause = hb_fmt("desktop '%s' runs on RAM an older bureau set "
		                "up: stop and start it once, then fork it",
		    d->name);
		goto out;
	}
	if ((id = hb_random_hex(4)) == NULL) {
		*cause = hb_fmt("no random bytes: %s", strerror(errno));
		goto out;
	}
	if (qmp_open(&q, qmps, 30000, cause) != 0 ||
	    qemu_qmp_version(q, &full, &series, cause) != 0 ||
	    qemu_top_nodes(q, k[0].node, k[1].node, sizeof k[0].node, sizes,
	        cause) != 0 ||
	    fork_prepare(d, c, k, sizes, id, cause) != 0 ||
	    fork_grant(d, how, k, cause) != 0 ||
	    fork_link_layers(d, c, k, cause) != 0)
		goto out;
	/* The warm RAM and state the parent runs on: the fork's too. */
	if (base &&
	    (fork_link(d, c, "ram.base", cause) != 0 ||
	        fork_link(d, c, "state.base", cause) != 0))
		goto out;
	/* A desktop its operator paused stays paused after its fork. */
	if (qmp_exec(q, "query-status", NULL, &status, cause) != 0)
		goto out;
	running = json_is_true(json_object_get(status, "running"));
	t0 = hb_now_ms();
	if (qmp_exec(q, "stop", NULL, NULL, cause) != 0)
		goto out;
	stopped = 1;
	/* The disks first: a migration (not base) leaves them inactive. */
	if (fork_swap(q, k, cause) != 0)
		goto out;
	if ((how->state != NULL ? qemu_state_write_fd(q, tmp, cause) :
	                          qemu_state_write(c, q, pid, base, 0, tmp,
	                              &fi->ram_pages, cause)) != 0 ||
	    (!base && fork_copy_ram(d, c, cause) != 0))
		goto out;
	stopped = 0;
	if (qemu_state_cont(q, running, &c2) != 0) {
		*cause = hb_fmt("desktop '%s' did not %s again after its "
		                "state was written: %s",
		    d->name, running ? "run" : "take its disks back", c2);
		goto out;
	}
	fi->paused_ms = hb_now_ms() - t0;
	fi->ram_copied = !base;
	/* The fork's state, on disk (a copied RAM file too) before its
	 * state.json says it can be restored. */
	if (!base) {
		char *cr = desktop_path(c, "ram");
		int bad = cr == NULL || qemu_fsync_path(cr, 1) != 0;

		free(cr);
		if (bad) {
			*cause = hb_fmt("cannot sync the fork's RAM file: %s",
			    strerror(errno));
			goto out;
		}
	}
	if (stat(tmp, &st) == 0)
		fi->state_bytes = (long long)st.st_size;
	if ((how->state != NULL ? qemu_state_seal_as(c, how->state, tmp, full,
	                              series, 0, 0, 0, cause) :
	                          qemu_state_seal(c, tmp, full, series, base, 0,
	                              fi->ram_pages, cause)) != 0)
		goto out;
	rv = 0;
out:
	if (stopped) {
		/* The parent runs on, on its new overlays if the swap was
		 * done (they hold what the layers held: nothing is lost). */
		if (qemu_state_cont(q, running, &c2) != 0) {
			char *m = hb_fmt("%s; and '%s' did not run again: %s",
			    *cause, d->name, c2 ? c2 : "?");
			free(*cause);
			*cause = m;
		}
		fi->paused_ms = hb_now_ms() - t0;
	}
	free(c2);
	if (rv != 0 && tmp != NULL)
		unlink(tmp);
	qmp_close(q);
	json_decref(status);
	for (int n = 0; n < 2; n++) {
		if (rv != 0 && k[n].p_new != NULL && !k[n].used)
			unlink(k[n].p_new);
		if (rv != 0 && k[n].aliased && !k[n].used)
			unlink(k[n].p_alias);
		fork_disk_free(&k[n]);
	}
	free(qmps);
	free(tmp);
	free(ram);
	free(full);
	free(series);
	free(id);
	return (rv);
}
