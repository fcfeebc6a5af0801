/*
 * host-bridge/agent/agent_int.h: what the host agent's files share (see
 * agent.h): its state, and the functions one file calls in another.
 *
 *   agent.c           agent_serve: startup, the workers, the signal loop
 *   agent_reply.c     the protocol's replies
 *   agent_endpoint.c  the endpoint: token, policy, forwarding to bureaud
 *   agent_ops.c       the operator socket: its ops, the policy
 *   agent_approve.c   approvals and takeover
 *   agent_events.c    the daemon's events, sealed again for subscribers
 *   agent_vm.c        the VM the agent owns (a desktop bureau runs)
 *   agent_fork.c      system fork: the agent loop forks its desktop
 *   agent_life.c      the VM's one owner: stop, pause, resume, snapshot,
 *                     restore and fork ops, one at a time (ag->vm_op)
 *
 * Threads: the workers of both sockets run the handlers at once; what
 * struct agent holds below its lock is read and written under it.
 */
#ifndef BUREAU_HB_AGENT_INT_H
#define BUREAU_HB_AGENT_INT_H

#include <jansson.h>
#include <nng/nng.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "common/token.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/store/store.h"

/* Workers on the endpoint: requests waiting for an approval hold one, so
 * at most AG_WORKERS - AG_FREE wait at once and the rest keep serving
 * screenshots and input. */
#define AG_WORKERS 16
#define AG_FREE    6
/* Operator ops: state, approvals, decisions are answered at once; a
 * screenshot or info for Mission Control waits on the guest, and must not
 * hold the others up while a desktop boots. */
#define AG_OP_WORKERS 8
/*
 * How long a forwarded request may take: libbureau waits that long for a
 * connection too, so a daemon that is gone holds a worker for it. system
 * (ping, info) is always quick, and attach relies on its short wait to
 * report an unreachable daemon; bash commands run up to 120 s by default;
 * a request with its own "timeout" or "duration" gets that plus a margin.
 */
#define AG_SYSTEM_S  10.0
#define AG_FORWARD_S 60.0
#define AG_BASH_S    150.0
#define AG_MARGIN_S  30.0
/* The largest request the endpoint takes: the protocol's, plus room for
 * the token and the envelope. `system info` reports this. */
#define AG_MAX_REQUEST (BUREAU_MAX_REQUEST + (1u << 16))

struct approval; /* agent_approve.c */

struct ag_worker {
	struct agent *ag;
	int op; /* the operator socket's */
	pthread_t thread;
	nng_ctx ctx;
	nng_aio *aio;
};

struct agent {
	struct desktop *d;
	unsigned char token_hash[TOKEN_HASH_BYTES];
	bureau_client *guest;
	atomic_int guest_down; /* the last forward found no daemon */
	struct audit *audit;
	nng_socket ep, op;
	char *ep_url, *op_url, *op_path;
	struct ag_worker workers[AG_WORKERS + AG_OP_WORKERS];
	char *guest_url;    /* the daemon's REQ/REP URL */
	char *guest_events; /* its events, or NULL */
	/* The events' keys: the daemon seals with the guest token's, the
	 * agent re-seals with the agent token's for its own subscribers. */
	unsigned char key_guest[TOKEN_EVENTS_KEY_BYTES];
	unsigned char key_agent[TOKEN_EVENTS_KEY_BYTES];
	nng_socket sub, pub;
	char *pub_url;
	pthread_t relay;
	/* The VM runs on from a killed agent's time, not as our child. */
	int adopted;
	/* QEMU is another's child (libvirtd's): its end comes by its pidfd
	 * (ag_vm_watch), as an adopted one's. Under lock. */
	int foster;

	/* Held by whoever changes the VM (agent_life.c): an op, the idle
	 * save, a wake; one at a time. Taken before lock, never while
	 * holding it. */
	pthread_mutex_t vm_op;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t decided;
	struct policy_list allow, approve;
	long approve_timeout;
	int takeover;
	struct approval *approvals;
	int pending;

	/* The VM's run (agent_idle.c): the processes, and the idle save. */
	pthread_cond_t vm_changed; /* vm changed */
	int vm;                    /* AG_VM_* */
	pid_t qemu, net;           /* 0 while saved or for an attached one */
	const char *accel;
	long idle_save; /* seconds without a request before a save; 0 off */
	long long active_ms; /* hb_now_ms of the last endpoint request */
	int inflight;        /* endpoint requests at the daemon now */
};

/* ag->vm: the VM runs; the idle save (or a stop) is writing it; it is
 * saved while the agent serves on; the next request is restoring it; a
 * stop ended it and the agent is ending (requests are refused). */
enum { AG_VM_UP, AG_VM_SAVING, AG_VM_SAVED, AG_VM_WAKING, AG_VM_STOPPED };

/* ---- agent.c ---- */

/* The wall clock as unix time, for the files and the approvals. */
double ag_unix_now(void);

/* ---- agent_reply.c ---- */

/* j (stolen) as the reply's text (malloc'd); an internal error when j is
 * NULL (out of memory). */
char *ag_dump(json_t *j);

/* The protocol's error reply of code (a BUREAU_E*, named on the wire by
 * bureau_error_name); id NULL before the request is authenticated (a
 * stranger learns nothing, not even its echo). */
char *ag_error(json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ag_error that also notes the code's wire name (a string constant) in
 * *err, for the audit trail. */
char *ag_refuse(const char **err, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A reply text (malloc'd, taken) as a message to send; NULL for none. */
nng_msg *ag_msg(char *text);

/* ---- agent_endpoint.c ---- */

/* One request on the endpoint: the reply to send. */
nng_msg *ag_handle(struct agent *ag, const char *buf, size_t len);

/* ---- agent_ops.c ---- */

/* One request on the operator socket: the reply's text (malloc'd). */
char *ag_op_handle(struct agent *ag, const char *buf, size_t len);

/* The policy as the ops show it ({"ok": true, allow, approve,
 * approve_timeout}). Called with ag->lock held. */
json_t *ag_policy_json(struct agent *ag);

/* Write the policy and the takeover into desktop.json, so they outlive
 * this agent: an operator's control must not end with an agent's restart.
 * Called with ag->lock held. */
int ag_persist(struct agent *ag, char **cause);

/* ---- agent_approve.c ---- */

/*
 * Wait for an operator's decision on req. Called and returns with
 * ag->lock held. NULL when allowed, else the error reply.
 */
char *ag_wait_approval(struct agent *ag, json_t *id, json_t *req,
    const char *tool, const char *action, const char **err);

/*
 * The agent's question to its operator (tool operator, action ask): waits
 * for an answer, a refusal or req's timeout (default the approve timeout).
 * Called and returns with ag->lock held. The reply's text: {"ok": true,
 * "answer": T}, else the error (*err its code); *outcome "answered",
 * "declined" or "timeout" once it waited.
 */
char *ag_ask(struct agent *ag, json_t *id, json_t *req, const char **err,
    const char **outcome);

/* The operator ops takeover, approvals, decide and answer: the reply's
 * text. */
/* agent_fork.c: system fork, the reply (the fork's endpoint and token). */
char *ag_fork(struct agent *ag, json_t *id, json_t *req, const char **err);
char *ag_op_takeover(struct agent *ag, json_t *req);
char *ag_op_approvals(struct agent *ag);
char *ag_op_decide(struct agent *ag, json_t *req);
char *ag_op_answer(struct agent *ag, json_t *req);

/* ---- agent_events.c ---- */

/* "tcp://host:port" with port + 1, the daemon's events by its own
 * default (malloc'd); NULL for any other URL. */
char *ag_events_of(const char *url);

/* Start the relay: a failure costs the live events only, not the
 * desktop, so it is logged, not returned. */
void ag_relay_start(struct agent *ag);

/* ---- agent_vm.c ---- */

/*
 * Run the desktop's VM as this process's child: its network keeper
 * (net.pid) and QEMU are started by the backend. Both have sessions of
 * their own and outlive this agent should it be killed. run.json says a
 * run is on; exit.json, once QEMU ends, how it ended.
 */
int ag_vm_start(struct agent *ag, const char *accel, pid_t *qemu, pid_t *net,
    char **cause);

/*
 * Take over the VM a killed agent left running (ag->adopted): the same
 * QEMU and network keeper, watched through pidfds since they are not our
 * children (ag_vm_watch). -1 when they cannot be served (the keeper is
 * gone: the guest is out of reach); the VM is left as it was.
 */
int ag_vm_adopt(struct agent *ag, const char *accel, pid_t *qemu, pid_t *net,
    char **cause);

/* QEMU ended with status st: say how, and clear what it left. */
void ag_vm_ended(struct agent *ag, int st, const char *why, pid_t net);
/* Wait up to ms for pid to end (0; its status in *st when it is our
 * child, else *st is left alone), else -1. */
int ag_reap(pid_t pid, int ms, int *st);

/* The agent got signal sig: end QEMU (SIGTERM, then SIGKILL) and say
 * so. */
void ag_vm_stop(struct agent *ag, pid_t qemu, pid_t net, int sig);

/* The agent could not start: QEMU killed, and exit.json says why. */
void ag_vm_abort(struct agent *ag, pid_t qemu, pid_t net);

/* The VM ended by an op or a save: exit.json says how (clean: by a
 * command, not a crash), and the files of its run are removed. */
void ag_vm_record(struct agent *ag, const char *how, int clean);

/* ---- agent_life.c ---- */

struct desk_fork_opts;
struct desk_fork_res;
struct desk_err;

/* The VM's change lock (ag->vm_op, waited for unless !wait) and the
 * desktop's lock file (waited for up to 10 s): 0 with *lk, else -1 with
 * *cause (busy). ag_vm_end lets both go. */
int ag_vm_begin(struct agent *ag, const char *what, int wait, int *lk,
    char **cause);
void ag_vm_end(struct agent *ag, int lk);
/* Is op one of the VM's (stop, pause, resume, snapshot, restore, fork)?
 * ag_life_op: its reply. */
int ag_life_is(const char *op);
char *ag_life_op(struct agent *ag, const char *op, json_t *req);
/* An error reply of the lifecycle's (desk.h's codes by name). */
char *ag_life_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Fork the VM this agent owns into o->newname (made, not started). */
int ag_life_fork(struct agent *ag, const struct desk_fork_opts *o,
    struct desk_fork_res *r, struct desk_err *e);

/* ---- agent_idle.c ---- */

/* Start the idle saver's thread (a VM desktop; with idle_save 0 it only
 * looks each second whether it was turned on). */
int ag_idle_start(struct agent *ag, char **cause);

/*
 * Before an endpoint request goes to the daemon: the VM is running,
 * restored first if the idle save had saved it (*woke = 1: the reply says
 * so), and counted as in use until ag_vm_leave. -1 with *cause when it
 * cannot be woken.
 */
int ag_vm_enter(struct agent *ag, int *woke, char **cause);
void ag_vm_leave(struct agent *ag);

/* QEMU ended (the main thread reaped it or saw it go): 1 when that was
 * the idle save's end, now recorded (the agent serves on), else 0. */
int ag_idle_saved(struct agent *ag, pid_t qemu);

/* Restore the VM the idle save saved, with ag->vm_op held (by an op
 * that needs it running: a fork). */
int ag_wake_owned(struct agent *ag, char **cause);

#endif
