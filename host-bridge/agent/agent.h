/*
 * host-bridge/agent: a desktop's host agent, the only path to its bureaud.
 *
 * One `bureau agent NAME` process per desktop (started detached by
 * `bureau attach` and `bureau start`). It serves the desktop's
 * endpoint with the agent token, enforces the operator's policy,
 * approvals and takeover, writes the audit trail on the host, and forwards
 * what it allows to the daemon at the desktop's guest URL with the guest
 * token. Whether that daemon runs in a QEMU guest or elsewhere (an
 * attached desktop) makes no difference here.
 *
 * Operators reach it on ipc://DIR/operator.sock (the desktop's 0700
 * directory guards it) with one JSON object a request:
 *   {"op":"state"}                      desktop, takeover, pending, policy
 *   {"op":"takeover","on":true|false}
 *   {"op":"approvals"}                  {"approvals":[{desktop, approval,
 *                                        tool, action, request, since}]}
 *   {"op":"decide","approval":ID,"allow":true|false,"reason":"..."}
 *   {"op":"policy"[,"allow":L][,"approve":L][,"approve_timeout":S]}
 *   {"op":"log","since":N,"max":M}       {"lines":[audit trail lines]}
 *   {"op":"shot","file":"N.png"}         {"png": base64 of audit/N.png}
 * Replies are {"ok":true,...} or the protocol's {"ok":false,"error":{code,
 * message}}.
 */
#ifndef BUREAU_HB_AGENT_H
#define BUREAU_HB_AGENT_H

#include "host-bridge/store/store.h"

/* Approvals wait this long for an operator unless the desktop says. */
#define AGENT_APPROVE_TIMEOUT STORE_APPROVE_TIMEOUT
/* idle_save (desktop.json, the policy op): seconds without a request
 * before the agent saves the desktop; 0 is off. */
#define AGENT_IDLE_SAVE_MIN STORE_IDLE_SAVE_MIN
#define AGENT_IDLE_SAVE_MAX STORE_IDLE_SAVE_MAX

/*
 * Serve desktop name until SIGTERM or SIGINT; returns only on a failure
 * to start (with *cause). A desktop bureau runs (not attached) gets its VM
 * started here, on accelerator accel ("kvm" or "tcg"), as this process's
 * child: the agent sees it end, records how in exit.json and exits too;
 * SIGTERM ends the VM first.
 */
int agent_serve(const char *name, const char *accel, char **cause);

#endif
