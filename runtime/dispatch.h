/*
 * runtime/dispatch.h: one request in, one reply out. Parsing, auth,
 * policy and the tool call; never fails to produce a reply.
 */
#ifndef BUREAU_RUNTIME_DISPATCH_H
#define BUREAU_RUNTIME_DISPATCH_H

#include <stddef.h>

#include "runtime/config.h"
#include "runtime/reply.h"

/*
 * Serve the request buf[0..len). `load` is how many workers are busy,
 * this one included: past cfg->workers - BD_QUICK_RESERVE only quick
 * requests are served, others get `busy`. Returns the reply text (malloc'd,
 * the caller frees it) and its length in *outlen. When cfg->tool.publish is
 * set, an `action` event is published for every request.
 */
char *bd_dispatch(const struct bd_config *cfg, const char *buf, size_t len,
    int load, size_t *outlen);
/* The same, the reply in *out (bd_reply_write makes its text; the caller
 * clears it): so that a screenshot's base64 is written once, into the
 * message sent. -1 (and nothing to clear) only when out of memory. */
int bd_dispatch_reply(const struct bd_config *cfg, const char *buf, size_t len,
    int load, struct bd_reply *out);

/* Workers kept for quick requests (screenshots, input, ping). */
#define BD_QUICK_RESERVE 2

#endif
