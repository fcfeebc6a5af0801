/*
 * host-bridge/vm/qemu_int.h: shared by the QEMU backend's files (qemu.c
 * runs QEMU, qemu_state.c saves and restores it); not for other callers,
 * which go through vm.h.
 */
#ifndef BUREAU_HB_QEMU_INT_H
#define BUREAU_HB_QEMU_INT_H

#include <jansson.h>
#include <sys/types.h>

#include "host-bridge/store/store.h"
#include "host-bridge/vm/vm.h"

/* The machine type, pinned: a saved state restores only into the machine
 * it was saved from, and plain "q35" changes with every QEMU release. */
#define QEMU_MACHINE "pc-q35-7.2"

/* The guest daemon's ports, inside the guest and inside the desktop's own
 * network namespace (netkeeper.c), where passt forwards them. */
#define GUEST_API_PORT    7300
#define GUEST_EVENTS_PORT 7301
/* The descriptor passt and QEMU find their ends of the guest's network
 * link on. */
#define QEMU_NET_FD 3
/* Where the desktop's namespace sends DNS: pasta forwards it to the host's
 * resolver (podman's choice of address for the same). */
#define NET_DNS_ADDR "169.254.1.1"
#define QEMU_STR_(x) #x
#define STR(x)       QEMU_STR_(x)

/* qemu.c */
pid_t qemu_pid(const struct desktop *d);
int qemu_wait_exit(pid_t pid, int timeout_ms);
/* One QMP command on a new connection; args is stolen. */
int qemu_qmp(const struct desktop *d, const char *cmd, json_t *args,
    json_t **ret, char **cause);
/* Start QEMU; incoming: paused, waiting for a saved state (-incoming
 * defer) in the RAM file left by the save. */
int qemu_launch(const struct desktop *d, const struct image *im,
    const char *accel, int incoming, char **cause);

/* The guest's network keeper (netkeeper.c): its pid, or -1 with *cause.
 * link -1: a socketpair, *qemu_end QEMU's end of it; else passt gets
 * link, a stream connected to QEMU's netdev (closed here in any case). */
pid_t qemu_net(const struct desktop *d, int link, int *qemu_end, char **cause);
/* guest.json: the relay's sockets in d's directory, for the host agent. */
int qemu_guest_ports(const struct desktop *d, char **cause);
/* The guest's hostname file for fw_cfg at path. */
int qemu_write_hostname(const struct desktop *d, const char *path,
    char **cause);

/* netrules.c: the network keeper redials the guest's daemon now (it
 * runs again: a restore). */
void qemu_net_redial(const struct desktop *d);
/* netrules.c: DIR/net.nft for d (its --net and --net-allow). */
int net_rules_write(const struct desktop *d, char **cause);

struct qmp;

/* qemu_state.c: see vm.h's save, restore, saved, discard. */
int qemu_save(const struct desktop *d, char **cause);
int qemu_restore(const struct desktop *d, const struct image *im,
    const char *accel, char **cause);
int qemu_saved(const struct desktop *d);
void qemu_discard(const struct desktop *d);
/* Remove these files of d's directory (those missing are no error). */
void qemu_unlink(const struct desktop *d, const char *const *files, size_t n);
/* Remove the RAM file (a boot starts without it), and the links to a
 * warm state's RAM and state that a clone runs on. */
void qemu_drop_ram(const struct desktop *d);
/* Runs on its warm state's RAM, mapped privately (ram.base, a hard link
 * to it, and state.base beside it): qemu_stream.c saves it. */
int qemu_on_base(const struct desktop *d);

/* qemu_state.c: the pieces of a save that a fork (qemu_fork.c) shares.
 * "7.2.22 (Debian ...)" and "7.2" of the QEMU behind q. */
int qemu_qmp_version(struct qmp *q, char **full, char **series, char **cause);
/* The state of the stopped QEMU pid of d into tmp (on ram.base: base;
 * the RAM too: inram), *changed pages of the warm RAM's in it. */
int qemu_state_write(const struct desktop *d, struct qmp *q, pid_t pid,
    int base, int inram, const char *tmp, size_t *changed, char **cause);
/* tmp made d's saved state: synced, state.json, renamed to state. */
int qemu_state_seal(const struct desktop *d, const char *tmp, const char *full,
    const char *series, int base, int inram, size_t changed, char **cause);
/* The same under another name: name and name.json (libvirt.c). */
int qemu_state_seal_as(const struct desktop *d, const char *name,
    const char *tmp, const char *full, const char *series, int base, int inram,
    size_t changed, char **cause);
/*
 * A snapshot of the stopped d's disks (disks_snapshot: tag, restore as
 * there) that keeps its saved state (name: "state", libvirt's
 * "lv.state") restorable: taking one changes no disk's contents, only
 * the qcow2 files' snapshot tables, so when the state fitted the disks
 * before, its record of them is taken anew. Restoring one under a saved
 * state makes that state useless: the caller discards it (and `bureau
 * restore` says so before).
 */
int qemu_snapshot_offline(const struct desktop *d, const char *tag, int restore,
    const char *name, char **cause);
/* Does j (a name.json in dir) still describe d's files and dir/name? */
int qemu_state_fits(const struct desktop *d, const char *dir, const char *name,
    json_t *j, char **cause);
/* dir/name.json (a new reference), when it describes d's files and
 * dir/name, and, for a clone's first start (warm: its warm-from), is of
 * the warm state the clone was made from; else NULL with *cause. */
json_t *qemu_state_meta(const struct desktop *d, const char *dir,
    const char *name, json_t *warm, char **cause);
/* A clone's first start: its disks (QEMU's nodes sys and home) grown
 * online from the warm state's sizes to its own (warm: its warm-from;
 * the guest's virtio-blk sees the new size, its udev rules grow the file
 * systems: bureau-growfs, bureau-growhome). */
int qemu_warm_grow(struct qmp *q, json_t *warm, const char *sys,
    const char *home, char **cause);
/* The migration capability x-ignore-shared on or off; no bandwidth cap;
 * wait for an outgoing migration to complete; wait for an incoming one
 * to leave QEMU paused with the state loaded. */
int qemu_set_ignore_shared(struct qmp *q, int on, char **cause);
int qemu_set_unthrottled(struct qmp *q, char **cause);
int qemu_migrate_wait(struct qmp *q, char **cause);
int qemu_state_loaded(const struct desktop *d, struct qmp *q, char **cause);
/* fsync (data_only: fdatasync) the file at path: 0, or -1 with errno. */
int qemu_fsync_path(const char *path, int data_only);
/* After a save that did not end the VM: set back for snapshots, and with
 * run it runs again; without, it stands still paused, its disks active
 * again (a migration left them inactive: "postmigrate"). -1 with *cause
 * when QEMU would not take its disks back. */
int qemu_state_cont(struct qmp *q, int run, char **cause);
/* The devices' state of the stopped QEMU behind q (its RAM is shared:
 * x-ignore-shared) into the new file tmp, through a descriptor passed
 * over QMP (libvirt's seccomp sandbox forbids exec: URIs). */
int qemu_state_write_fd(struct qmp *q, const char *tmp, char **cause);
/* qemu_fork.c: see vm.h's fork. */
int qemu_fork(const struct desktop *d, const struct desktop *c,
    struct vm_fork_info *fi, char **cause);
/* The same for a QEMU bureau does not start itself (libvirt.c): its QMP
 * socket (DIR/qmp), its saved state's name (state: the devices alone,
 * its RAM file copied), and grant, which lets that QEMU's user open a
 * file the fork makes (perm "rw-" or "r--"). */
struct qemu_fork_how {
	const char *qmp, *state;
	pid_t pid;
	int (*grant)(const struct desktop *d, const char *path,
	    const char *perm, char **cause);
};
int qemu_fork_how(const struct desktop *d, const struct desktop *c,
    const struct qemu_fork_how *how, struct vm_fork_info *fi, char **cause);
/* Is name a disk layer a fork left (system.L<ID>.qcow2, home.L...)? */
int qemu_layer_name(const char *name);
/* The node names of the disks' top layers now (a fork puts a new one
 * over each): sys and home of len bytes; with sizes, their virtual sizes
 * ([0] the system disk's, [1] the home's), from the same query-block. */
int qemu_top_nodes(struct qmp *q, char *sys, char *home, size_t len,
    long long *sizes, char **cause);
/* qemu.c: run the QMP job cmd (snapshot-save or snapshot-load of tag,
 * the RAM on the system disk) through q and wait until it concludes. */
int qemu_job_q(struct qmp *q, const char *cmd, const char *tag, char **cause);

/* qemu_stream.c: write the state of the stopped QEMU pid of d, which runs
 * on ram.base, to out: the warm state's RAM sections, the pages it
 * changed (*changed of them) and its devices. */
int qemu_stream_save(const struct desktop *d, struct qmp *q, pid_t pid,
    const char *out, size_t *changed, char **cause);

/* stats.c: see vm.h's stats; vm_stats_of: the same of the VM process
 * pid (0: none runs), whoever started it. */
int qemu_stats(const struct desktop *d, struct vm_stats *st);
int vm_stats_of(const struct desktop *d, pid_t pid, struct vm_stats *st);
/* qemu_warm.c: clones of an image's warm state (see there). */
char *qemu_warm_dir(const char *image);
/* The warm state of image that fits a desktop of these sizes (vm.h). */
int qemu_warm_find(const char *image, long memory, int cpus, long long disk,
    long long home, char **dir, char **why);
/* The same for libvirt hosts (libvirt.c): their own warm states,
 * IMAGE/VM_WARM_LIBVIRT-MEMORY-CPUS-DISK-HOME, a state lv.state. */
int qemu_warm_find_lv(const char *image, long memory, int cpus, long long disk,
    long long home, char **dir, char **why);
int qemu_clone_lv(const struct desktop *d, long long disk, long long home,
    char **why);
int qemu_clone(const struct desktop *d, const struct image *im, long long disk,
    long long home, char **why);
int qemu_cloned(const struct desktop *d);
/* d's warm-from ({"warm", "home", "warm_home", "disk", "warm_disk"}) or
 * NULL. */
json_t *qemu_warm_from(const struct desktop *d);
/* Runs on the warm state's RAM, mapped privately (warm-ram): a clone
 * started by an older bureau. */
int qemu_running_warm_ram(const struct desktop *d);
/* A clone's first start: the warm state's RAM and state linked into d
 * (ram.base, state.base): 0; 1 when they cannot be (another file
 * system), -1 on an error. */
int qemu_warm_link_ram(const struct desktop *d, const char *wdir, char **cause);
/* Else the warm state's RAM copied to d's own. */
int qemu_warm_copy_ram(const struct desktop *d, const char *wdir, char **cause);
char *qemu_warm_token(const struct desktop *d);
/* Remove warm-from and warm-ram (the desktop boots from now on). */
void qemu_warm_forget(const struct desktop *d);

#endif
