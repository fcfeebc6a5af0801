/*
 * host-bridge/desk/desk_int.h: what desk/'s files share, and the owner's
 * steps (desk_own.c) that the host agent runs on the VM it owns.
 */
#ifndef BUREAU_HB_DESK_INT_H
#define BUREAU_HB_DESK_INT_H

#include <jansson.h>

#include "host-bridge/desk/desk.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/store/store.h"

/* desktop_load as a desk error (DESK_ENOTFOUND). */
int desk_load(const char *name, struct desktop **d, struct desk_err *e);
/* -1 (DESK_ENOTAPPLY) for an attached desktop: what does not apply. */
int desk_not_attached(const struct desktop *d, const char *what,
    struct desk_err *e);
/* --net (NULL: none_else says whether the desktop's is none) and
 * --net-allow checked together: -1 with e (DESK_EINVAL) naming them. */
int desk_check_net(const char *net, const char *net_allow, int none_else,
    struct desk_err *e);
/* A new desktop's directory (d->dir, from d->name when NULL; *created
 * once it is there) and its ports (d->port), under the store's lock (*lk,
 * held for the caller until desktop.json names them): DESK_EEXIST when
 * the name is taken. */
int desk_new_dir(struct desktop *d, int *lk, int *created, struct desk_err *e);
/* store_lock as a desk error (DESK_EBUSY). */
int desk_lock(const struct desktop *d, const char *what, int *lk,
    struct desk_err *e);

/*
 * Who changes d now: DESK_BY_AGENT (its host agent runs: send it the op),
 * DESK_REMOTE (on another machine, its agent there does not answer: the
 * bureau there, desk_remote_run), or DESK_HERE with *lk the desktop's
 * lock, taken for the caller (no agent runs, and none can start while it
 * is held); -1 with e (busy).
 */
enum { DESK_HERE = 1, DESK_BY_AGENT = 2, DESK_REMOTE = 3 };
int desk_owner(const struct desktop *d, const char *what, int *lk,
    struct desk_err *e);

/* d on another machine, its agent there not answering: `bureau WORDS...`
 * there through the transport (desk_set_remote); 0 with *said, else -1
 * with e (what it said, or that there is no transport). */
int desk_remote_run(const struct desktop *d, char *const *words, int n,
    char **said, struct desk_err *e);
/* d on another machine: the state its last command there left, for `ls`
 * while its agent does not answer (vm/remote.c reads it). */
void desk_remote_note(const struct desktop *d, const char *state);

/* Does d's agent answer on its operator socket (here, or there through
 * the SSH forward)? */
int desk_agent_answers(const struct desktop *d);

/* An operator op (req, stolen) to d's host agent: 0 with *reply its ok
 * reply, else -1 with e (its error's code, or DESK_EUNREACH). */
int desk_op(const struct desktop *d, json_t *req, int timeout_ms,
    json_t **reply, struct desk_err *e);

/* ---- desk_own.c: the owner's steps on a desktop's VM -----------------------
 *
 * Run by the host agent on the VM it owns (under its one-op-at-a-time
 * lock and the desktop's lock), and by this library on a VM that has no
 * agent (under the desktop's lock). guest is a client of the guest's
 * daemon (the agent's own), or NULL: one is made when needed.
 */

/* Stop a running VM as how says (DESK_STOP_*); r->how and r->seconds say
 * what was done. Save: the guest's file systems synced first; on failure
 * the VM runs on. */
int desk_own_stop(const struct desktop *d, bureau_client *guest, int how,
    long timeout_s, struct desk_stop_res *r, struct desk_err *e);
int desk_own_pause(const struct desktop *d, struct desk_err *e);
/* Resumed; the caller then steps its clock (desk_own_clock) once it has
 * let the desktop's lock go. */
int desk_own_resume(const struct desktop *d, struct desk_err *e);
/* Save (restore 0) or apply tag: live while the VM runs, else the disks
 * (a saved state kept restorable; applied under one, it is discarded).
 * After a live restore (r->live) the caller steps the clock as above. */
int desk_own_snapshot(const struct desktop *d, const char *tag, int restore,
    struct desk_snap_res *r, struct desk_err *e);
/* The guest's clock stepped to the host's after it stood still (guest:
 * a client of its daemon, or NULL: one made here); *warning when not. */
void desk_own_clock(const struct desktop *d, bureau_client *guest,
    char **warning);
/* The fork o->newname of the running d made and forked into: its
 * directory, desktop.json, secrets, and its saved state. On failure
 * nothing of it is left. */
int desk_own_fork(const struct desktop *d, const struct desk_fork_opts *o,
    struct desk_fork_res *r, struct desk_err *e);
/* A fork's options as an op carries them ({"name", "ephemeral", "net",
 * "net_allow", "allow", "approve"}), and back. */
json_t *desk_fork_opts_json(const struct desk_fork_opts *o);
int desk_fork_opts_of(json_t *req, struct desk_fork_opts *o,
    struct desk_err *e);
/* The fork's result as an op's reply carries it, and back. */
json_t *desk_fork_res_json(const struct desk_fork_res *r);
int desk_fork_res_of(json_t *reply, struct desk_fork_res *r);

#endif
