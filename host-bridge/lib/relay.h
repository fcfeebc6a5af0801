/*
 * libbureau's one call for a relay: the host agent (host-bridge/agent)
 * forwards each request to bureaud with it and passes the reply on as it
 * came. Not in bureau.h, whose API takes and gives text and never shows
 * jansson or nng; not installed, and hidden in libbureau.so (the bureau
 * program links libbureau's objects). The rest of libbureau's internals
 * stay in internal.h.
 */
#ifndef BUREAU_LIB_RELAY_H
#define BUREAU_LIB_RELAY_H

#include <jansson.h>
#include <nng/nng.h>

#include "host-bridge/include/bureau.h"

#pragma GCC visibility push(hidden)

/*
 * Send req (borrowed; the client adds "token" and, when missing, "id") and
 * wait up to timeout_ms (<= 0: the client's timeout) for the reply, which
 * is passed on verbatim: not parsed (a screenshot's base64 costs
 * milliseconds to parse) nor checked, nor copied: 0 when a reply arrived,
 * nng's own message of it in *reply (the caller's: send it on, or
 * nng_msg_free it; its body is not NUL-terminated); else the transport's
 * error.
 */
int bc_relay(bureau_client *c, json_t *req, int timeout_ms, nng_msg **reply);

#pragma GCC visibility pop

#endif
