/*
 * runtime/dispatch.h: one request in, one reply out. Parsing, auth,
 * policy and the tool call; never fails to produce a reply.
 */
#ifndef BUREAU_RUNTIME_DISPATCH_H
#define BUREAU_RUNTIME_DISPATCH_H

#include <stddef.h>

#include "runtime/config.h"

/*
 * Serve the request buf[0..len). `load` is how many workers are busy,
 * this one included: past cfg->workers - BD_QUICK_RESERVE only quick
 * requests are served, others get `busy`. Returns the reply text (malloc'd,
 * the caller frees it) and its length in *outlen. When cfg->tool.publish is
 * set, an `action` event is published for every request.
 */
char *bd_dispatch(const struct bd_config *cfg, const char *buf, size_t len,
    int load, size_t *outlen);

/* Workers kept for quick requests (screenshots, input, ping). */
#define BD_QUICK_RESERVE 2

#endif
