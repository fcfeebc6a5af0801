/*
 * host-bridge/opclient: the client side of a desktop's host agent, for the
 * `bureau` commands (../cli) and Mission Control (../mc) alike: requests on
 * its operator socket (ipc://DIR/operator.sock, the ops are in
 * ../agent/agent.h), and starting, waiting for and ending the agent
 * process itself.
 */
#ifndef BUREAU_HB_OPCLIENT_H
#define BUREAU_HB_OPCLIENT_H

#include <jansson.h>
#include <sys/types.h>

#include "host-bridge/store/store.h"

/*
 * One request (req, stolen) on the desktop's operator socket, waiting up to
 * timeout_ms. 0 with *reply the agent's reply object (ok or not); 1 with
 * *cause when no host agent runs; OP_UNREACHABLE with *cause when its
 * socket does not answer; -1 with *cause otherwise (a malformed reply).
 */
#define OP_UNREACHABLE (-2)
int op_exchange(const struct desktop *d, json_t *req, int timeout_ms,
    json_t **reply, char **cause);

/*
 * A desktop on another machine (d->remote_dir): its VM's state as its
 * agent there says through the SSH forward ("running"; "idle": saved by
 * its idle save; "saving", "waking"), or NULL when none answers (the VM
 * backend then says what the last command there left).
 */
char *op_remote_state(const struct desktop *d);

/*
 * Send req (stolen) to the desktop's agent; *reply is its ok reply.
 * Returns 0, -1 with *cause (an error reply as "message (code)"), or 1
 * with *cause when no agent runs.
 */
int op_call(const struct desktop *d, json_t *req, json_t **reply, char **cause);

/* End the desktop's host agent, if one runs (SIGTERM, then SIGKILL), and
 * wait until it is gone. */
int agent_stop(const struct desktop *d, char **cause);

/* Start `bureau agent NAME [--accel A]` (A for a VM desktop, NULL for an
 * attached one) in its own session, output in NAME/agent.log: not this
 * process's child (init's), so no caller has it to reap. */
int agent_launch(const struct desktop *d, const char *accel, pid_t *pid,
    char **cause);

/*
 * Wait up to wait_ms for the agent pid (agent_launch's): ping 1,
 * until a `system ping` answers through its endpoint (the daemon is up);
 * ping 0, until its operator socket answers (it serves). 0 when it does;
 * else *cause and AGENT_WAIT_EXITED (the agent ended: its log's last
 * line), AGENT_WAIT_REFUSED (the daemon refused the guest token) or
 * AGENT_WAIT_TIMEOUT; the agent then still runs.
 */
#define AGENT_WAIT_EXITED  1
#define AGENT_WAIT_REFUSED 2
#define AGENT_WAIT_TIMEOUT 3
int agent_wait(const struct desktop *d, pid_t pid, long wait_ms, int ping,
    char **cause);

#endif
