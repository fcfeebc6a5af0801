/*
 * host-bridge/store: the desktop store. A desktop is a directory
 * $BUREAU_HOME/NAME (0700):
 *   desktop.json   its settings: name, image, memory, cpus, disk and home
 *                  sizes, port, net ("internet" or "none"), created, the
 *                  host it runs on (absent: local), and
 *                  the host agent's policy (allow, approve,
 *                  approve_timeout, takeover)
 *   system.qcow2   the system disk, an overlay on the image's base.qcow2
 *   home.qcow2     the data disk: an ext4 file system mounted on /home
 *   guest-token    the guest's secret, which QEMU hands it through fw_cfg
 *   machine-id, hostname   its identity, also through fw_cfg (hostname is
 *                  written at each start, the name padded to 65 bytes)
 *   ram, state, state.json   the saved state (vm/qemu_state.c)
 *   warm-from, warm-ram, ram.base, state.base   a clone of the image's
 *                  warm state (vm/qemu_warm.c)
 *   system.L<ID>.qcow2, home.L<ID>.qcow2   read-only disk layers under
 *                  the disks, left by a fork (vm/qemu_fork.c); hard links
 *                  shared with the forks; layers.shared: those a fork got
 *                  from its parent (desktop.json: fork_of, ephemeral)
 *   token          the agent token (0600), checked by the host agent
 *   endpoint       the host agent's URL (the client commands read it)
 *   qmp.sock, vnc.sock, qemu.pid, qemu.log, console.log, accel   while
 *                  it runs (vnc.sock: QEMU's VNC server, the live view)
 *   passt.pid, passt.log   the guest's network (passt), while it runs
 *   guest.json     the loopback ports the guest's daemon and events are
 *                  forwarded to, for the host agent ({"url", "events"})
 *   agent.pid, agent.log, operator.sock, audit.log, audit/   the host
 *                  agent, which runs QEMU (its parent) while it runs
 *   lv/, lv.save   on a libvirt host (vm/libvirt.c): the directory its
 *                  QEMU may write (VNC and network sockets), the saved
 *                  state libvirt wrote
 *   forward.pid, forward.log, remote-state   a desktop on a host on
 *                  another machine (desktop.json "remote": {"dir",
 *                  "port"}): the keeper of its SSH forwards (cli/remote.c)
 *                  and the state its last command there left
 *   exit.json      how the last run ended, written by the host agent
 *                  ({"time", "how", "clean"}); run.json while it runs
 * An attached desktop (a bureaud that bureau does not run, see `bureau
 * attach`) has "kind": "attached" and the daemon's "url" in desktop.json
 * instead of an image and a size, and in its directory:
 *   guest-token    the daemon's own token (0600), only the host agent reads it
 *   token          the agent token (0600), checked by the host agent
 *   endpoint       the host agent's URL
 *   agent.pid, agent.log, operator.sock, audit.log, audit/   the host agent
 * An image is a directory with image.json (see packaging/image), and
 * warm/ once `bureau image warm` made its warm state.
 *
 * The store knows files and names, not VMs: the VM backend (vm/vm.h) runs
 * what the store describes.
 */
#ifndef BUREAU_HB_STORE_H
#define BUREAU_HB_STORE_H

#include <jansson.h>
#include <sys/types.h>

struct desktop {
	char *name;
	char *dir;   /* $BUREAU_HOME/NAME */
	char *image; /* the image directory (resolved, immutable) */
	long memory; /* MiB */
	int cpus;
	int port;        /* api; events = port + 1 (port + 2 reserved) */
	int attached;    /* a daemon bureau does not run: no image, no VM */
	char *url;       /* attached: that daemon's URL; else NULL */
	int net_none;    /* --net none: the guest reaches no network */
	char *net_allow; /* --net-allow LIST, or NULL */
	char *fork_of;   /* a fork (bureau fork): its parent's name */
	int ephemeral;   /* a fork discarded, disks and all, when it stops */
	int agent_made;  /* a fork its parent's agent loop asked for */
	int max_forks;   /* the agent loop's forks of it live at once */
	/* Its limits (vm/limits.h): CPU in milli-cores (0: its vCPUs),
	 * the disks' bytes and operations per second together (0: none). */
	long cpu_milli;
	long long disk_bps;
	long disk_iops;
	long long net_rate; /* the guest's network, bytes a second each way
	                       (0: none) */
	char *host;         /* the host it runs on (hosts.c), NULL: local */
	/* On a host on another machine (cli/remote.c): the desktop's
	 * directory there and its agent's port there; NULL and 0 else. The
	 * directory here then holds desktop.json, token, endpoint and the
	 * SSH forwards' sockets (operator.sock), nothing of the VM. */
	char *remote_dir;
	int remote_port;
};

/* desktop.json's settings: an approval's wait unless it says, and the
 * idle save's range in seconds (0 is off). */
#define STORE_APPROVE_TIMEOUT 300
#define STORE_IDLE_SAVE_MIN   5
#define STORE_IDLE_SAVE_MAX   (30L * 86400)
/* The forks an agent loop may have of its desktop at once (--max-forks),
 * unless desktop.json says: a fork costs the host a desktop. */
#define STORE_MAX_FORKS     4
#define STORE_MAX_FORKS_MAX 64
/* desktop.json's limits (struct desktop's cpu_milli, disk_bps, disk_iops,
 * net_rate) into j: those above 0 set, the others taken out. 0, or -1
 * out of memory. */
int store_set_limits(json_t *j, long cpu_milli, long long disk_bps,
    long disk_iops, long long net_rate);
/* --disk-bps and --disk-iops at most (QEMU's throttling takes more; no
 * disk gives it). */
#define STORE_DISK_BPS_MAX  (1LL << 40)
#define STORE_DISK_IOPS_MAX 10000000L

/* A desktop's image: the fields of image.json (borrowed from j). */
struct image {
	json_t *j;
	const char *disk, *kernel, *initrd, *cmdline, *user;
	int uid, gid;
};

/*
 * A desktop's name: a DNS label (lowercase letters, digits, '-', 1-63,
 * not starting or ending with '-'; it becomes the guest's hostname), and
 * none of the store's own files (files.h). A desktop already there under
 * a name of the older rule (letters, digits, '-', '_', '.', at most 64)
 * keeps it: a new desktop can never get one.
 */
int store_valid_name(const char *name, char **cause);

/* $BUREAU_HOME/NAME[/file]; malloc'd, NULL when out of memory. */
char *store_dir(const char *name, const char *file);

/* d->dir/file; malloc'd, NULL when out of memory. */
char *desktop_path(const struct desktop *d, const char *file);

/* Bytes d->dir/file takes on disk (its blocks: sparse files count what
 * they use), 0 when it is not there. */
long long desktop_file_bytes(const struct desktop *d, const char *file);

/* Read desktop.json of NAME into a new *out (desktop_free it). */
int desktop_load(const char *name, struct desktop **out, char **cause);
void desktop_free(struct desktop *d);

/*
 * The desktop's host agent, or 0 when none runs: the agent holds an flock
 * on d->dir/agent.pid for its whole life, so a stale file (or a recycled
 * pid) never passes for a live agent.
 */
pid_t store_agent_pid(const struct desktop *d);
/* The pid written in the file at path by the process that holds an
 * exclusive flock on it (the agent's agent.pid, a keeper's forward.pid),
 * or 0 when none holds it. */
pid_t store_lock_pid(const char *path);

/* Call fn for every desktop under $BUREAU_HOME, in name order. */
typedef int (*store_each_fn)(const char *name, void *arg);
int store_each(store_each_fn fn, void *arg);

/* Is the TCP port free on 127.0.0.1 (can we bind it now)? */
int store_port_free(int port);

/* Three free loopback ports P, P+1, P+2 in $BUREAU_PORTS (default
 * 7310-7999) that no other desktop was given. */
int store_pick_port(int *out, char **cause);

/*
 * Serialize commands that change a desktop: take the lock file d->dir/lock
 * (flock, never waiting) for this process, recording "PID WHAT" in it, or
 * fail naming the holder. *fd is the lock; close() releases it (it is
 * close-on-exec, so QEMU never inherits it). Read-only commands (status,
 * ls) take no lock.
 */
int store_lock(const struct desktop *d, const char *what, int *fd,
    char **cause);

/* The store-wide lock $BUREAU_HOME/.lock, waited for: held while a desktop
 * is created, so two creates never pick the same name or ports. */
int store_lock_all(int *fd, char **cause);

/*
 * The directory's writes (store_write.c). store_create_dir: d->dir (from
 * d->name when NULL), 0700, under a home made if need be; *created once it
 * is there. store_secrets: the agent's token, the guest's token, the
 * guest's machine-id and the endpoint file of d->port.
 */
int store_create_dir(struct desktop *d, int *created, char **cause);
/* d->dir/file with the string s, mode (a new file renamed into place). */
int store_put(const struct desktop *d, const char *file, const char *s,
    mode_t mode, char **cause);
int store_secrets(const struct desktop *d, char **cause);
/*
 * desktop.json has one writer: these. store_save writes cfg whole (a new
 * desktop's, or one the caller holds the desktop's lock for);
 * store_update reads it, lets fn change it (fn returns 0, or -1 with
 * *cause to leave it as it was) and writes it, under an flock of the
 * directory, so that writers in other processes never lose each other's
 * changes. store_save_in: the same into another directory (a desktop
 * being received).
 */
typedef int (*store_change_fn)(json_t *cfg, void *arg, char **cause);
int store_save(const struct desktop *d, json_t *cfg, char **cause);
int store_save_in(const char *dir, json_t *cfg, char **cause);
int store_update(const struct desktop *d, store_change_fn fn, void *arg,
    char **cause);

/* image.json of the image directory dir into *im (image_clear it). */
int image_load(const char *dir, struct image *im, char **cause);
void image_clear(struct image *im);

/* --image, or $BUREAU_HOME/images/full, else images/minimal; resolved
 * through the symlink so a later rebuild never changes a desktop's base.
 * malloc'd. */
char *image_dir(const char *opt, char **cause);

/* The hosts desktops run on (hosts.c): $BUREAU_HOME/hosts.json maps a
 * name to a libvirt URI; HOST_LOCAL, bureau's own QEMU backend, is not in
 * it. hosts_load: the map ({} when there is none). host_uri: NAME's URI
 * (malloc'd), NULL for local; -1 naming the hosts when NAME is none. */
#define HOST_LOCAL "local"
int hosts_load(json_t **out, char **cause);
int hosts_save(json_t *hosts, char **cause);
int host_is_local(const char *name);
/* The name of the host d runs on: d->host, or HOST_LOCAL. */
const char *desktop_host(const struct desktop *d);
int host_uri(const char *name, char **uri, char **cause);
int host_valid_name(const char *name, char **cause);
/* Is the libvirt host at uri on this machine (a unix socket, no host
 * name)? Then it sees the desktop's directory where bureau keeps it. */
int host_here(const char *uri);

/* A desktop's audit trail, as the host agent writes it (agent/audit.c):
 * the current file and the one it rotated to. */
#define AUDIT_LOG     "audit.log"
#define AUDIT_LOG_OLD "audit.log.1"
/* Each whole line of the trail in dir that is a JSON object, the older
 * file first, to fn (which may keep it: a new reference it decrefs); a
 * line still being written is left out. fn returns nonzero to stop. */
int audit_log_each(const char *dir, int (*fn)(json_t *line, void *arg),
    void *arg);

#endif
