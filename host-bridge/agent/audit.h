/*
 * host-bridge/agent/audit: the desktop's audit trail, kept on the host
 * where the agent in the desktop cannot touch it.
 *
 * DIR/audit.log holds one JSON object a line, a request:
 *   {"time": unix seconds, "seq": N, "tool", "action", "summary", "ok",
 *    "error": code (when not ok), "elapsed_ms", "screenshot": "audit/N.png"
 *    (input actions whose reply carried one), "approval": "approved",
 *    "denied" or "timeout" (requests that waited for an operator), "ask":
 *    "answered", "declined" or "timeout" (the agent's questions)}
 * or an operator's event:
 *   {"time", "seq", "event": "takeover", "on": true|false}
 * Bounded in bytes: past AUDIT_LOG_MAX bytes audit.log becomes
 * audit.log.1 (the previous .1 is dropped), and the newest screenshots
 * are kept, at most AUDIT_SHOTS_KEEP of them and AUDIT_SHOTS_MAX bytes,
 * whatever the mix of requests and across agent restarts (the agent
 * counts what an earlier one left). $BUREAU_AUDIT_MAX,
 * $BUREAU_AUDIT_SHOTS and $BUREAU_AUDIT_SHOTS_MAX in the agent's
 * environment change them. seq goes on from the log's last line across
 * agent restarts.
 *
 * Requests without a valid token are counted, not written one by one:
 * one line {"error": "unauthorized", "count": N} at most every
 * AUDIT_UNAUTH_EVERY seconds, so no one without a token can push real
 * entries out of the trail.
 *
 * Threads: audit_record may be called from several threads at once.
 */
#ifndef BUREAU_HB_AUDIT_H
#define BUREAU_HB_AUDIT_H

#include <jansson.h>
#include <stddef.h>

#define AUDIT_LOG_MAX      (4L << 20)
#define AUDIT_SHOTS_KEEP   300
#define AUDIT_SHOTS_MAX    (128L << 20)
#define AUDIT_UNAUTH_EVERY 60.0

struct audit;

/* Open (creating) the trail in the desktop directory dir. */
int audit_open(const char *dir, struct audit **out, char **cause);
void audit_close(struct audit *a);

/*
 * Append one line. req is the request (its token, id and base64 data
 * never reach the summary); error is NULL when the request succeeded;
 * mark (stolen, may be NULL) fields added to the line: what the operator
 * decided ({"approval": ...}, {"ask": ...}); png/pnglen the settled
 * screenshot to keep, or NULL. Failures to write are logged to stderr,
 * never returned: the request has happened.
 */
void audit_record(struct audit *a, json_t *req, const char *tool,
    const char *action, const char *error, json_t *mark, double elapsed_ms,
    const void *png, size_t pnglen);

/* Append an operator's event: fields (stolen; NULL for none) with "time",
 * "seq" and "event" added. */
void audit_event(struct audit *a, const char *event, json_t *fields);

/* A request without a valid token: counted (see above). */
void audit_unauthorized(struct audit *a);

/* Write what is counted and not yet written (at exit). */
void audit_flush(struct audit *a);

/* A short summary of req's arguments without secrets (the caller
 * decrefs). */
json_t *audit_summary(json_t *req);

#endif
