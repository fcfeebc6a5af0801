/*
 * Private to the bureau command: what desktop.c and Mission Control ask of
 * operator.c about attached desktops and their host agents.
 */
#ifndef BUREAU_CLI_OPERATOR_H
#define BUREAU_CLI_OPERATOR_H

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

/* -1 with *cause when d is attached and lifecycle command cmd does not
 * apply to it, else 0. */
int attached_refuse(const struct desktop *d, const char *cmd, char **cause);

/* One `bureau ls` row: name, state, uptime, the VM's CPU %, memory and
 * disk on the host, the guest's own load and memory, the endpoint. */
#define LS_ROW "%-16s %-9s %-9s %-5s %-7s %-7s %-19s %s\n"

/* The guest's own figures for `ls` ("0.15 312M/1.4G": its 1-minute load,
 * memory in use and in all, from `system info` through the host agent),
 * or "-" when its agent or daemon does not answer within 1.5 s. */
void ls_guest(const struct desktop *d, char *buf, size_t len);

/* `bureau status` and one `bureau ls` row of an attached desktop. */
void attached_status(const struct desktop *d);
void attached_ls_row(const struct desktop *d);

/* End the desktop's host agent, if one runs (SIGTERM, then SIGKILL), and
 * wait until it is gone. */
int agent_stop(const struct desktop *d, char **cause);

/* Start `bureau agent NAME [--accel A]` (A for a VM desktop, NULL for an
 * attached one) in its own session, output in NAME/agent.log. */
int agent_launch(const struct desktop *d, const char *accel, pid_t *pid,
    char **cause);

/*
 * Wait up to wait_ms for the agent pid (a child of this process): ping 1,
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
