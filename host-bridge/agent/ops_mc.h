/*
 * host-bridge/agent/ops_mc: the operator-socket ops Mission Control needs
 * beyond agent_ops.c's own (state, takeover, approvals, decide, policy):
 *   {"op":"screenshot"[,"frame":N]}   the screen now, as the daemon's
 *        screenshot reply (image, frame, width, height); with "frame" equal
 *        to the screen's current frame the image is left out and
 *        "unchanged": true says so. Never written to the audit trail: the
 *        operator watching is not an agent action.
 *   {"op":"input","request":{computer action}}   the operator's own input
 *        while they have taken over (refused with taken_over's opposite,
 *        permission_denied, when they have not); sent without a screenshot.
 *   {"op":"info"}                     the daemon's system info reply.
 */
#ifndef BUREAU_HB_OPS_MC_H
#define BUREAU_HB_OPS_MC_H

#include <jansson.h>

#include "host-bridge/include/bureau.h"

/* Is op one of these? */
int ops_mc_is(const char *op);

/* Serve op (ops_mc_is said yes) for desktop name through guest, the
 * agent's client of the daemon; takeover is the agent's takeover state.
 * Returns the reply text (malloc'd). */
char *ops_mc_handle(bureau_client *guest, const char *name, int takeover,
    const char *op, json_t *req);

#endif
