/*
 * host-bridge/desk: a desktop's lifecycle as a library (DESIGN.md, "Nothing
 * lost, one owner per desktop"). The `bureau` commands, Mission Control,
 * the host agent and the API server call these; none of them runs the
 * `bureau` program to do a lifecycle step or reads another command's
 * printed text to learn what happened.
 *
 * One owner per desktop: while a desktop has a host agent, the agent is
 * the only process that changes its VM. The calls here send it an
 * operator op (stop, pause, resume, snapshot, restore, fork: agent.h) and
 * it performs them one at a time, its idle save and wake among them. A
 * desktop with no agent (stopped, saved, or a VM whose agent was killed)
 * is changed here, in the caller's process, under the desktop's lock
 * (store_lock). What the owner does to a running VM is desk_own.c's:
 * the agent and this library run the same steps.
 *
 * Each call returns 0, or -1 with e->code (a DESK_E*) and e->cause (a
 * sentence saying why, malloc'd): desk_err_clear frees it. Nothing here
 * prints: results come back in structs, progress through an optional
 * callback.
 */
#ifndef BUREAU_HB_DESK_H
#define BUREAU_HB_DESK_H

#include <jansson.h>
#include <sys/types.h>

#include "host-bridge/store/store.h"

enum {
	DESK_OK = 0,
	DESK_EINVAL,    /* bad input: an option or field named in cause */
	DESK_ENOTFOUND, /* no such desktop (or tag) */
	DESK_EEXIST,    /* the name is taken */
	DESK_EBUSY,     /* another command holds the desktop */
	DESK_ENOTAPPLY, /* not in a state it applies to (not running, an
	                   attached desktop, on another machine) */
	DESK_EQUOTA,    /* over a limit */
	DESK_EUNREACH,  /* its host agent does not answer */
	DESK_EFAIL,     /* it was tried and failed (QEMU, the disks, the
	                   guest): cause says what stands now */
	DESK_EOLDAGENT, /* (internal) the desktop's host agent is of an
	                   older bureau, without the op: done here instead */
};

struct desk_err {
	int code;
	char *cause;
};

void desk_err_clear(struct desk_err *e);
/* -1 with e set (fmt's text); e->cause is replaced. */
int desk_fail(struct desk_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* -1 with e set to code and cause (taken). */
int desk_fail_take(struct desk_err *e, int code, char *cause);
/* The code's name on the wire ("busy", "not_applicable", ...). */
const char *desk_err_name(int code);
/* The error code of an agent's error reply's code name (the protocol's,
 * bureau.h's names): DESK_EBUSY for "busy", ... */
int desk_code_of(const char *wire);

/* Progress a long call reports as it goes (start's "the boot made no
 * progress...: starting it again"); NULL where nobody listens. */
typedef void (*desk_note_fn)(void *arg, const char *line);
struct desk_notes {
	desk_note_fn fn;
	void *arg;
};
void desk_note(const struct desk_notes *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * A desktop on another machine (d->remote_dir) is the bureau's there.
 * While its host agent there answers (through the SSH forward of its
 * operator socket, DIR/operator.sock here) the calls send it their ops as
 * to a local one; otherwise they go through the transport set here: the
 * binary's commands register theirs (cli/remote.c: `bureau WORDS...` run
 * there over SSH, *said its output with its ports said as this side's;
 * its exit status). Without one, such a call is refused.
 */
typedef int (*desk_remote_fn)(const struct desktop *d, char *const *words,
    int n, char **said);
void desk_set_remote(desk_remote_fn fn);

/* ---- stop ---------------------------------------------------------------- */

enum {
	DESK_STOP_SAVE,     /* save it (the default): start restores it */
	DESK_STOP_SHUTDOWN, /* the guest powers off (ACPI), else forced */
	DESK_STOP_FORCE,    /* QEMU ends now */
};
/* What stop did. */
enum {
	DESK_STOPPED_SAVED,     /* saved in r->seconds */
	DESK_STOPPED_SHUTDOWN,  /* shut down in r->seconds */
	DESK_STOPPED_FORCED,    /* ended at once */
	DESK_STOPPED_DISCARDED, /* an ephemeral fork: gone, disks and all */
	DESK_STOPPED_NOT_RUNNING,
	DESK_STOPPED_IDLE,       /* saved while idle: its agent ended */
	DESK_STOPPED_STATE_GONE, /* not running; its saved state discarded */
};
struct desk_stop_res {
	int how; /* DESK_STOPPED_* */
	double seconds;
	char *warning; /* (malloc'd) said on the way, or NULL */
	char *said;    /* on another machine: what its bureau said */
};
/* "saved", "shutdown", "forced", "discarded", "not_running", "idle",
 * "state_gone": a DESK_STOPPED_* as an op's reply says it. */
const char *desk_stopped_name(int how);
int desk_stop(const char *name, int how, long timeout_s,
    struct desk_stop_res *r, struct desk_err *e);
void desk_stop_res_clear(struct desk_stop_res *r);

/* A desktop removed, disks and all: refused while it runs unless force
 * (its owner ends its VM first); an attached desktop's agent goes with
 * it, its daemon stays. */
int desk_rm(const char *name, int force, struct desk_err *e);

/* ---- pause, resume ----------------------------------------------------- */

struct desk_resume_res {
	char *warning; /* the clock not stepped, ... (malloc'd) or NULL */
	char *said;    /* on another machine: what its bureau said */
};
int desk_pause(const char *name, struct desk_err *e);
int desk_resume(const char *name, struct desk_resume_res *r,
    struct desk_err *e);

/* ---- snapshots ------------------------------------------------------------
 */

struct desk_snap_res {
	int live;  /* of the running VM (disks and memory), else the disks */
	int saved; /* a saved desktop's: its state stays (or, restore, goes) */
	char *warning;
	char *said; /* on another machine: what its bureau said */
};
/* A snapshot tag: letters, digits, '-', '_', '.', 1-64, not '-' first. */
int desk_valid_tag(const char *tag, struct desk_err *e);
int desk_snapshot(const char *name, const char *tag, struct desk_snap_res *r,
    struct desk_err *e);
/* discard_saved: a saved desktop's disks may go back under its saved
 * state, which is then discarded; without it that is refused. */
int desk_restore(const char *name, const char *tag, int discard_saved,
    struct desk_snap_res *r, struct desk_err *e);
void desk_snap_res_clear(struct desk_snap_res *r);

/* ---- fork ------------------------------------------------------------------
 */

struct desk_fork_opts {
	const char *newname;
	int ephemeral;
	const char *net;       /* "internet", "none", or NULL: the parent's */
	const char *net_allow; /* NULL: the parent's (unless net is given) */
	const char *allow, *approve; /* NULL: the parent's */
	int by_agent;                /* the agent loop asked (system fork) */
};
struct desk_fork_res {
	char *name;            /* the fork's */
	long long paused_ms;   /* how long the parent stood still */
	long long state_bytes; /* the fork's saved state */
	size_t ram_pages;      /* pages of RAM beside the warm state's */
	int ram_copied;        /* the parent's RAM file was copied */
};
void desk_fork_res_clear(struct desk_fork_res *r);
/*
 * Fork the running desktop name into o->newname: made and saved (the
 * parent runs on), not started: desk_start starts it (a restore under
 * its own identity). An ephemeral fork that is made but does not start
 * is the caller's to discard (desk_discard).
 */
int desk_fork(const char *name, const struct desk_fork_opts *o,
    struct desk_fork_res *r, struct desk_err *e);
/* Remove a desktop's directory, disks and all (an ephemeral fork that did
 * not start). */
void desk_discard(const char *name);

/* ---- start --------------------------------------------------------------- */

struct desk_start_opts {
	const char *accel; /* "auto" (NULL), "kvm" or "tcg" */
	long timeout_s;    /* 0: 600 under TCG, 180 with KVM */
	int nowait;        /* return once the agent serves */
	struct desk_notes notes;
};
struct desk_start_res {
	int adopted;          /* a VM that ran on without its agent */
	int restored;         /* from its saved state */
	char *restore_failed; /* why it booted instead of restoring, or NULL */
	const char *accel;
	double seconds, drawn_s; /* until ready; drawn after the daemon */
	int port;                /* its endpoint's; events on port + 1 */
	char *vnc;               /* unix:DIR/vnc.sock */
	/* on a failure, the logs whose last lines say why: qemu.log,
	 * console.log of the desktop's directory */
	int tail_qemu, tail_console;
	char *said; /* on another machine: what its bureau said */
};
int desk_start(const char *name, const struct desk_start_opts *o,
    struct desk_start_res *r, struct desk_err *e);
void desk_start_res_clear(struct desk_start_res *r);

/* ---- create, and an image's warm states ---------------------------------- */

struct desk_create_opts {
	const char *name;
	const char *image; /* an image directory, or NULL: the default */
	const char *host;  /* a libvirt host of hosts.json, NULL: local
	                      (a host on another machine is the caller's) */
	long long disk;    /* the system disk, bytes */
	long long home;    /* the home disk, bytes (0: as disk) */
	long long memory;  /* bytes, at least 256M */
	int cpus;          /* 1-64 */
	const char *net;   /* "internet" (NULL) or "none" */
	const char *net_allow, *allow, *approve; /* NULL: none, all, none */
	long approve_timeout;                    /* 0: STORE_APPROVE_TIMEOUT */
	long idle_save;                          /* 0: off */
	int max_forks;      /* its agent loop's forks at once; -1: the default
	                       (STORE_MAX_FORKS) */
	long cpu_milli;     /* --cpu-limit in milli-cores; 0: its vCPUs */
	long long disk_bps; /* --disk-bps; 0: none */
	long disk_iops;     /* --disk-iops; 0: none */
	long long net_rate; /* --net-rate, bytes a second; 0: none */
	int no_warm;        /* boot at the first start whatever the image
	                       has (BUREAU_WARM=0) */
	struct desk_notes notes; /* a warm state made for a new size */
};
struct desk_create_res {
	int cloned; /* its first start restores the image's warm state */
	char *why;  /* why not cloned (malloc'd) */
	int port;   /* its endpoint's; events on port + 1 */
};
void desk_create_res_clear(struct desk_create_res *r);
/* A new desktop: its directory, disks (cloned from the image's warm state
 * when one fits), secrets, ports and desktop.json; not started. Every
 * option is checked first, naming what is wrong (DESK_EINVAL); nothing is
 * left of it on a failure. */
int desk_create(const struct desk_create_opts *o, struct desk_create_res *r,
    struct desk_err *e);

/* The sizes of a warm state other than the default's. */
struct desk_warm_size {
	long memory_mb;
	int cpus;
	long long disk, home;
	const char *host; /* a libvirt host's name, or NULL: local */
};
/*
 * Make an image's warm state (image NULL: the one `create` would pick):
 * IMAGE/warm, or with sz IMAGE/warm-MEMORY-CPUS-DISK-HOME unless one that
 * fits is there: a desktop of that size created, booted once, its session
 * drawn, synced and saved, in a private store inside IMAGE (this thread's
 * only: hb_home_set), its files then moved into place. A failure leaves
 * the image as it was (its new desktops boot).
 */
int desk_warm(const char *image, const struct desk_warm_size *sz,
    const struct desk_notes *notes, struct desk_err *e);

/* ---- what a call did, in words ------------------------------------------ */

/* One text (malloc'd, no last newline) for `bureau` to print and Mission
 * Control to return: a stop's, a start's (with its endpoint lines unless
 * nowait), a snapshot's or restore's. */
char *desk_stop_text(const char *name, const struct desk_stop_res *r);
char *desk_start_text(const char *name, int nowait,
    const struct desk_start_res *r);
char *desk_snap_text(const char *name, const char *tag, int restore,
    const struct desk_snap_res *r);

/* ---- every desktop at once (a host's shutdown and boot) ---------------- */

/* In a desktop's directory: `stop --all` saved it, `start --all` brings
 * it back; its own start or stop takes the mark away. */
#define DESK_ALL_MARK "saved-by-all"
void desk_all_unmark(const struct desktop *d);

/* One desktop's end in desk_all: start's result (start) or stop's, or
 * the error; called as each ends, one at a time, from its own thread. */
struct desk_all_one {
	const char *name;
	int ok;
	const struct desk_err *err;
	const struct desk_start_res *started;
	const struct desk_stop_res *stopped;
};
typedef void (*desk_all_fn)(void *arg, const struct desk_all_one *one);
/*
 * stop --all (start 0): every running desktop (or one saved while idle
 * whose agent serves on) saved, all at once, each marked for start
 * --all; start --all (start 1): those marked brought back, all at once.
 * Desktops on another machine are the bureau's there (that start --all
 * brings back their SSH forwards is the caller's, before). *n and *failed
 * count them; 0 when none failed.
 */
int desk_all(int start, long timeout_s, desk_all_fn fn, void *arg, int *n,
    int *failed);

/* ---- config
 * ------------------------------------------------------------------ */

/*
 * A desktop's settings changed (the policy op's fields: allow, approve,
 * approve_timeout, net_allow, idle_save; checked by the caller and again
 * by the agent): by its agent when one runs (it applies them at once and
 * writes desktop.json), else in desktop.json under the desktop's lock,
 * for the next start. *now (a new reference): the settings as they are
 * after it.
 */
int desk_config(const char *name, json_t *changes, json_t **now,
    struct desk_err *e);

#endif
