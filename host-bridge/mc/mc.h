/*
 * host-bridge/mc: Mission Control, `bureau mission-control`: one web page
 * and a JSON API over every desktop of $BUREAU_HOME, served from this
 * process (see docs/mission-control.md).
 *
 *   mc.c       the command, the HTTP server (civetweb), auth, routing
 *   mc_desk.c  desktops as JSON, the operator socket, lifecycle commands
 *   mc_live.c  live frames of each desktop and the RFB-over-WebSocket view
 *
 * Threads: civetweb serves each connection on a worker thread; everything
 * here may be called from several at once.
 */
#ifndef BUREAU_HB_MC_H
#define BUREAU_HB_MC_H

#include <jansson.h>
#include <stddef.h>

#include "host-bridge/store/store.h"

struct mg_context;

/* ---- mc_desk.c ---- */

/* Send req (stolen) to d's host agent on its operator socket; *reply its
 * ok reply. 0; -1 with *cause and *code (the protocol's error code, or
 * "unavailable" when no agent runs). */
int mc_op(const struct desktop *d, json_t *req, json_t **reply,
    const char **code, char **cause);

/* One desktop as the API shows it (new reference), NULL when it does not
 * load (*cause). detail adds taken_over, approvals, policy, guest info. */
json_t *mc_desktop(const char *name, int detail, char **cause);

/* Every desktop, and every pending approval. */
json_t *mc_desktops(void);
json_t *mc_approvals(void);

/* The audit trail of name after seq since: [{seq, time, ...}]. */
json_t *mc_log(const char *name, long long since, char **cause);

/* Run `bureau ARGV...` (this program) and wait; 0 when it exited 0. Its
 * output in *out (malloc'd). */
int mc_run_self(char *const argv[], char **out);

/* ---- mc_live.c ---- */

/* The latest frame number of name's live view, starting the live view
 * when none runs; -1 when there is no frame (yet). */
long mc_live_seq(const char *name);

/* A copy of name's latest frame as encoded image (malloc'd, *mime a
 * constant): 0, or -1 when there is none. */
int mc_live_image(const char *name, void **img, size_t *len, const char **mime,
    long *seq);

/* Register the WebSocket handlers of /vnc/NAME on ctx. */
void mc_live_register(struct mg_context *ctx);

/* Does the WebSocket session's path name a desktop with a live view?
 * Checked before the upgrade (mc.c). */
int mc_live_known(const char *name);

#endif
