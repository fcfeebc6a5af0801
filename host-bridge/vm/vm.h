/*
 * host-bridge/vm: the VM backend. Everything about running a desktop's
 * VM sits behind this one small interface, so that another backend (say
 * libvirt, for several hosts) can slot in without touching the commands.
 * The direct QEMU/QMP backend (qemu.c, disks.c) is the default.
 *
 * Every operation takes a desktop of the store (store/store.h); errors
 * are -1 with a malloc'd *cause.
 */
#ifndef BUREAU_HB_VM_H
#define BUREAU_HB_VM_H

#include <sys/types.h>

#include "host-bridge/store/store.h"

/* A VM's resource figures as the host sees them; -1 where not known. */
struct vm_stats {
	pid_t pid;              /* the VM's process, 0 when not running */
	long long cpu_ns;       /* CPU time that process has used so far */
	long long memory_bytes; /* the host memory it costs: the PSS of QEMU
	                           and of the network keeper's processes */
	long long disk_bytes;   /* what the desktop's files use on the host's
	                           disk: its disks, RAM file and state */
};

/* What a fork did (vm_backend.fork). */
struct vm_fork_info {
	long long paused_ms;   /* how long the parent stood still */
	long long state_bytes; /* the fork's saved state */
	size_t ram_pages;      /* pages of RAM in it beside the warm RAM's */
	int ram_copied;        /* the parent's own RAM file was copied */
};

/* The warm states of libvirt hosts (libvirt.c, qemu_warm.c):
 * IMAGE/VM_WARM_LIBVIRT-MEMORY-CPUS-DISK-HOME. A state holds the devices
 * of the domain libvirt.c's lv_xml makes: a change to them takes a new
 * number here, and the warm states of the old one are no longer used
 * (`create` makes new ones). */
#define VM_WARM_LIBVIRT "warm-libvirt1"

struct vm_backend {
	const char *name;
	/* The disks of a new desktop: the system disk (copy-on-write on the
	 * image's) and an empty home disk owned by the image's user. */
	int (*create)(const struct desktop *d, const struct image *im,
	    long long disk_bytes, long long home_bytes, char **cause);
	/* The accelerator start would use: want is "auto", "kvm" or "tcg";
	 * "auto" probes whether KVM really runs a guest here. */
	int (*accel)(const struct desktop *d, const struct image *im,
	    const char *want, const char **out, char **cause);
	/* Launch the VM; returns once it runs (not once the guest booted). */
	int (*start)(const struct desktop *d, const struct image *im,
	    const char *accel, char **cause);
	/* The VM's process, or 0 when it is not running. */
	pid_t (*pid)(const struct desktop *d);
	/* "running", "paused", ... or "stopped" (malloc'd); *pid as above. */
	char *(*state)(const struct desktop *d, pid_t *pid);
	/* Ask the guest to power off (ACPI) and wait up to timeout_ms. */
	int (*shutdown)(const struct desktop *d, int timeout_ms, char **cause);
	/* End the VM now, without the guest's cooperation. */
	int (*kill)(const struct desktop *d, char **cause);
	int (*pause)(const struct desktop *d, char **cause);
	int (*resume)(const struct desktop *d, char **cause);
	/* Save (restore = 0) or restore snapshot tag: live (disks and
	 * memory) while running, the disks alone while stopped; *live says
	 * which. tag NULL lists the snapshots on stdout. */
	int (*snapshot)(const struct desktop *d, const char *tag, int restore,
	    int *live, char **cause);
	/* Save the running VM (its RAM and devices, beside the disks) and end
	 * it: the next start can restore it as it was. The caller has the
	 * guest sync its file systems first. On failure the VM runs on. */
	int (*save)(const struct desktop *d, char **cause);
	/* Start the VM from its saved state, running once this returns. -1
	 * when it cannot (the state does not fit this QEMU, the desktop or
	 * its disks, or is damaged): no VM is left and the state is kept
	 * for the caller to discard. */
	int (*restore)(const struct desktop *d, const struct image *im,
	    const char *accel, char **cause);
	/* Is there a saved state to restore? */
	int (*saved)(const struct desktop *d);
	/* Forget the saved state (the next start boots). */
	void (*discard)(const struct desktop *d);
	/* The VM's resource figures now (never blocks on the guest). */
	int (*stats)(const struct desktop *d, struct vm_stats *st);
	/* The disks of a new desktop cloned from its image's warm state
	 * (instead of create): 1 done, the first start restores the warm
	 * state under the desktop's own identity; 0 when there is no warm
	 * state that fits (*why says why: the caller creates it as usual);
	 * -1 on error. */
	int (*clone)(const struct desktop *d, const struct image *im,
	    long long disk_bytes, long long home_bytes, char **why);
	/* The directory (*dir, malloc'd) of a warm state of image that a
	 * desktop of these sizes can be cloned from: 1, or 0 when none fits
	 * (*why says why, when why is not NULL), -1 out of memory. */
	int (*warm_find)(const char *image, long memory_mb, int cpus,
	    long long disk_bytes, long long home_bytes, char **dir, char **why);
	/* A clone not started yet: restore starts it from the warm state. */
	int (*cloned)(const struct desktop *d);
	/* The warm state's guest token (malloc'd), which a clone's daemon
	 * must refuse once it runs, or NULL. */
	char *(*warm_token)(const struct desktop *d);
	/* Fork the running desktop d into c, a new desktop whose directory,
	 * desktop.json and secrets are made: c gets d's disks as they are
	 * now, shared copy-on-write, and d's RAM and devices as its saved
	 * state (its start restores them under its own identity); d stands
	 * still only while these are written, and runs on after a failure
	 * too. NULL where the backend cannot. */
	int (*fork)(const struct desktop *d, const struct desktop *c,
	    struct vm_fork_info *fi, char **cause);
};

/* The QEMU/QMP backend (the host `local`), and libvirt's (libvirt.c:
 * any other host; warm clones, snapshots and forks not yet). */
extern const struct vm_backend vm_qemu;
/* A desktop on a host on another machine (remote.c): its state as its
 * agent there says through the SSH forward; the rest is done there. */
extern const struct vm_backend vm_remote;
extern const struct vm_backend vm_libvirt;
/* The backend desktop d runs on: its host's. */
const struct vm_backend *vm_backend_for(const struct desktop *d);

/* CPU % of the VM of desktop name (process pid) from its CPU time now:
 * over the time since this process's previous sample of it if that was
 * at least 200 ms ago, else -1 (the earlier sample is kept: ask again
 * later). Thread-safe; keeps the last 256 desktops' samples. */
double vm_cpu_percent(const char *name, pid_t pid, long long cpu_ns);
/* The backend's stats of d into *st and its CPU %, sampling again after
 * 200 ms when there is no usable earlier sample; -1 when not running. */
double vm_cpu_percent_now(const struct desktop *d, struct vm_stats *st);

/* The network keeper's pid from net.pid (0 when none; netrules.c). */
pid_t vm_net_keeper_pid(const struct desktop *d);

/* Can libvirt at uri be reached? 0 (with its free memory in bytes, -1
 * when it says none), or -1 with *cause. */
int vm_host_probe(const char *uri, long long *free_bytes, char **cause);

/* The local host's backend (image warm states are made there). */
const struct vm_backend *vm_backend(void);

/*
 * The guest's network (netrules.c). net_allow_check: is LIST (comma-
 * separated CIDR or HOST[:PORT]) valid? With resolve, names are looked
 * up and *rules (malloc'd, when not NULL) gets their nft lines.
 * vm_net_reload: write the running desktop's rules anew and have its
 * network keeper load them (0 also when it does not run).
 */
int net_allow_check(const char *list, int resolve, char **rules, char **cause);
int vm_net_reload(const struct desktop *d, char **cause);
/* A running desktop's limits (vm/limits.h) made what d says now: its
 * cgroup's and its disks' (0 also when it does not run: its next start
 * takes them). */
int vm_limits_apply(const struct desktop *d, char **cause);
/* `bureau net-keeper DIR`: the desktop's network namespace (netkeeper.c),
 * run by the QEMU backend, not by people. */
int vm_net_keeper_main(int argc, char **argv);

#endif
