/*
 * host-bridge/vm/disks.h: a desktop's qcow2 disks, made and snapshotted
 * with qemu-img and e2fsprogs while the VM is not running.
 */
#ifndef BUREAU_HB_DISKS_H
#define BUREAU_HB_DISKS_H

#include <jansson.h>

#include "host-bridge/store/store.h"

/* system.qcow2 (an overlay on the image's base disk, disk_bytes) and
 * home.qcow2 (ext4 of home_bytes holding /home/USER owned by the
 * image's user). */
int disks_create(const struct desktop *d, const struct image *im,
    long long disk_bytes, long long home_bytes, char **cause);

/* qemu-img snapshot of both disks: save (restore = 0) or apply tag, or
 * list the snapshots on stdout when tag is NULL. */
int disks_snapshot(const struct desktop *d, const char *tag, int restore,
    char **cause);

/*
 * Fold the disk layers a fork left (vm/qemu_fork.c) back into d's disks
 * where no other desktop shares them any more (one link), while the VM is
 * not running: the top overlay committed into the layer under it, which
 * then takes its name, until the layer under a disk is shared, is not a
 * layer (is_layer: the image's base), or the top holds snapshots (a commit
 * would not carry them). The layer's own snapshots (taken before the fork)
 * are the disk's again. 0, or -1 with *cause (the chain is left whole).
 */
int disks_collapse(const struct desktop *d, int (*is_layer)(const char *),
    char **cause);

/* The names a running QEMU knew its disks' newer overlays by (a fork's:
 * system.T<ID>.qcow2, home.T<ID>.qcow2, hard links: qemu_fork.c),
 * removed once no QEMU of d runs: the disks keep their own names. */
void disks_drop_aliases(const struct desktop *d);

/*
 * The backing chain of d's disk file (system.qcow2 or home.qcow2) as the
 * qcow2 headers name it, the file first: ["system.qcow2",
 * "system.L1f2e.qcow2", "/…/base.qcow2"] (a new reference), or NULL with
 * *cause. A saved state records it: the state fits only the disks it was
 * saved on.
 */
json_t *disks_chain(const struct desktop *d, const char *file, char **cause);

#endif
