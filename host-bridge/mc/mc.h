/*
 * host-bridge/mc: Mission Control, `bureau mission-control`: one web page
 * and a JSON API over every desktop of $BUREAU_HOME, served from this
 * process (see docs/mission-control.md).
 *
 *   mc.c       the command, the HTTP server (civetweb), auth, routing
 *   mc_api.c   the JSON API and the page's event stream
 *   mc_http.c  replies: JSON, errors, request bodies, static files
 *   mc_desk.c  desktops as JSON, the operator socket, lifecycle commands
 *   mc_live.c  the live frames of each desktop
 *   mc_rfb.c   the live view over a WebSocket: an RFB server of those
 *              frames, or a bridge to a QEMU desktop's own VNC server
 *
 * Threads: civetweb serves each connection on a worker thread; everything
 * here may be called from several at once.
 */
#ifndef BUREAU_HB_MC_H
#define BUREAU_HB_MC_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#include "host-bridge/include/bureau.h"
#include "host-bridge/store/store.h"

struct mg_connection;
struct mg_context;

/* On every reply; no trailing CRLF (civetweb's additional_header adds
 * it). */
#define MC_HEADERS                                                             \
	"X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"         \
	"Content-Security-Policy: default-src 'self'; img-src 'self' data: "   \
	"blob:; connect-src 'self'; frame-ancestors 'none'"

/* ---- mc.c ---- */

/* `bureau mission-control ARGS` (argv[0] the command's name): serve until
 * SIGTERM, SIGINT or SIGHUP end the process. Returns the exit status when
 * it does not serve (--print-url, a usage error, a failure to start). */
int mc_main(int argc, char **argv);

/*
 * Event streams and live views hold one of civetweb's workers each for as
 * long as the page is open (civetweb serves a connection on one thread
 * and cannot hand it elsewhere). The workers are MC_STREAMS_MAX for them
 * and MC_API_WORKERS more that only requests ever use: a stream past
 * MC_STREAMS_MAX is refused (503 busy), so open pages never starve the
 * API. mc_stream_enter: 0 when one more may open (mc_stream_leave when
 * it ends), -1 when it may not.
 */
#define MC_STREAMS_MAX 256
#define MC_API_WORKERS 64
int mc_stream_enter(void);
void mc_stream_leave(void);

/* ---- mc_http.c: each returns the HTTP status it sent ---- */

/* A reply with body (len bytes of type); extra: more header lines, each
 * ending in CRLF, or NULL. */
int mc_send(struct mg_connection *c, int status, const char *type,
    const void *body, size_t len, const char *extra);

/* j (stolen) as the reply's JSON body. */
int mc_json(struct mg_connection *c, int status, json_t *j);

/* {"ok": false, "error": {code, message}}. */
int mc_err(struct mg_connection *c, int status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The HTTP status of an operator-socket error code. */
int mc_status_of(const char *code);

/* The request body as a JSON object (empty: {}), or NULL after a 400 or
 * 413 reply (*status). The caller decrefs. */
json_t *mc_body(struct mg_connection *c, int *status);

/* Serve dir/rel, rel a plain relative path (else 404). */
int mc_file(struct mg_connection *c, const char *dir, const char *rel);

/* ---- mc_api.c ---- */

/* A request under /api/ (authenticated, and checked for its origin). */
int mc_api(struct mg_connection *c, const char *method, const char *uri,
    const char *query);

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

/* ---- mc_live.c ---- */

/* One desktop's live frames, made once and kept for the process's life. */
struct live {
	char name[72];
	pthread_mutex_t lock; /* everything below */
	long seq;             /* -1: no frame yet */
	int w, h;
	unsigned char *px; /* RGBX */
	void *img;         /* the frame as received (JPEG or PNG) */
	size_t imglen;
	const char *mime;
	struct live *next;
};

/* name's live frames, started when new; NULL when out of memory. */
struct live *mc_live_get(const char *name);

/* The latest frame number of name's live view, starting the live view
 * when none runs; -1 when there is no frame (yet). */
long mc_live_seq(const char *name);

/* A copy of name's latest frame as encoded image (malloc'd, *mime a
 * constant): 0, or -1 when there is none. */
int mc_live_image(const char *name, void **img, size_t *len, const char **mime,
    long *seq);

/* The unix socket of d's QEMU VNC server (malloc'd), NULL when d is
 * attached or its VM does not run. */
char *mc_live_vnc_sock(const struct desktop *d);

/* Does /vnc/NAME have something to show: an attached desktop with a host
 * agent, or a QEMU desktop whose VNC socket is there? Checked before the
 * upgrade (mc.c). */
int mc_live_known(const char *name);

/* ---- mc_rfb.c ---- */

/* Register the WebSocket handlers of /vnc/NAME on ctx. */
void mc_rfb_register(struct mg_context *ctx);

#endif
