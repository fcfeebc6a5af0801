/*
 * host-bridge/vm/limits.h: what a desktop's QEMU may use of the host
 * (DESIGN.md, "Least privilege"; issue 38, item 4): CPU, memory and
 * processes in a cgroup of its own (v2, or the v1 controllers the host
 * has), the disks' bandwidth and operations by QEMU's own block
 * throttling (libvirt's <iotune> is the same), which holds with v1 too,
 * whose blkio controller does not see buffered writes.
 */
#ifndef BUREAU_VM_LIMITS_H
#define BUREAU_VM_LIMITS_H

#include <jansson.h>
#include <sys/types.h>

#include "host-bridge/store/store.h"

/* What QEMU itself takes beside the guest's RAM, in MiB: TCG's
 * translation cache (256 MB, qemu.c's tb-size), the video memory, its
 * heap and threads' stacks. A clone of the minimal image under TCG
 * peaks near RAM + 300 MB (make bench); the guest's RAM is a shared
 * file mapping, so above the limit the kernel writes it back to the RAM
 * file rather than ends QEMU. */
#define LIMITS_MEM_OVERHEAD_MB 512
/* Processes and threads: QEMU's vCPUs, its I/O workers (64 at most),
 * migration and VNC threads; with -sandbox spawn=deny it forks none. */
#define LIMITS_PIDS_MAX 512
/* cpu.cfs_period_us / cpu.max's period. */
#define LIMITS_CPU_PERIOD_US 100000

/* The cgroup a QEMU about to start joins: the files it writes its pid
 * to (one per v1 controller, one for v2), and what is not enforced. */
struct limits_cg {
	char *procs[4];
	int n;
	char *missing; /* "memory, pids" or NULL: not enforced here */
};

/* Makes (or finds) the desktop's cgroup and writes its limits: 0, or -1
 * with *cause. Controllers the host lacks are named in cg->missing, not
 * an error. */
int limits_cg_make(const struct desktop *d, struct limits_cg *cg, char **cause);

/* In the child about to exec QEMU: joins the cgroup. 0, or -1 (errno). */
int limits_cg_join(const struct limits_cg *cg);

void limits_cg_free(struct limits_cg *cg);

/* The desktop's cgroup removed once no process is left in it (a stop,
 * rm). */
void limits_cg_drop(const struct desktop *d);

/* A running QEMU (pid) given the desktop's limits as they are now in d:
 * its cgroup's values rewritten (`bureau config`). The disks' part is
 * the backend's (QMP block_set_io_throttle). */
int limits_cg_update(const struct desktop *d, pid_t pid, char **cause);

/* The limits as the kernel holds them for pid's cgroup, for status and
 * Mission Control: {"cpu": cores, "memory_mb": n, "pids": n,
 * "cgroup": "v1"|"v2", "not_enforced": "..."} (new reference). */
json_t *limits_cg_json(pid_t pid);

/* d's limits as set ({"cpu": cores, "memory_mb", "pids", "disk_bps",
 * "disk_iops", "net_rate"}; 0: none) and, while its QEMU (pid) runs, as the
 * kernel holds them ("enforced": limits_cg_json's). New reference. */
json_t *limits_json(const struct desktop *d, pid_t pid);

/* --cpu-limit's value: cores, as milli-cores (a decimal from 0.05 to
 * cpus): 0, or -1 with *cause naming the option. */
int limits_parse_cpu(const char *what, const char *s, int cpus, long *milli,
    char **cause);

#endif
