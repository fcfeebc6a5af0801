/*
 * host-bridge/vm/disks.h: a desktop's qcow2 disks, made and snapshotted
 * with qemu-img and e2fsprogs while the VM is not running.
 */
#ifndef BUREAU_HB_DISKS_H
#define BUREAU_HB_DISKS_H

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

#endif
