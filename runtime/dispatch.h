/*
 * runtime/dispatch.h: one request in, one reply out. Parsing, auth,
 * policy and the tool call; never fails to produce a reply.
 */
#ifndef BUREAU_RUNTIME_DISPATCH_H
#define BUREAU_RUNTIME_DISPATCH_H

#include <stddef.h>

#include "runtime/config.h"

/*
 * Serve the request buf[0..len). Returns the reply text (malloc'd, the
 * caller frees it) and its length in *outlen. When cfg->tool.publish is set,
 * an `action` event is published for every request.
 */
char *bd_dispatch(const struct bd_config *cfg, const char *buf, size_t len,
    size_t *outlen);

#endif
