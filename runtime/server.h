/*
 * runtime/server.h: the nng sockets. One REP socket listening on every
 * --listen URL, served by cfg->workers contexts, each on its own thread so
 * a long request never delays the others; one PUB socket for events.
 */
#ifndef BUREAU_RUNTIME_SERVER_H
#define BUREAU_RUNTIME_SERVER_H

#include "runtime/config.h"

struct bd_server;

/* Open the PUB socket first (tools publish from init on), listen, start
 * the workers. With a token (not NULL) every event is encrypted with a key
 * derived from it (docs/protocol.md, "Events"); without, events are
 * plain. The token is not kept. */
int bd_events_open(const char *url, const char *token, size_t token_len,
    char **cause);
void bd_events_close(void);
/* A new token (SIGHUP): events are sealed with its key from now on. */
void bd_events_rekey(const char *token, size_t token_len);
/* Matches tool_config.publish. */
void bd_events_publish(const char *topic, const char *json, const void *body,
    size_t bodylen);

int bd_server_start(struct bd_config *cfg, struct bd_server **out,
    char **cause);
/* Close the sockets (workers' receives fail and they exit), wait for the
 * workers a bounded time, free. Call tool_shutdown() first so that long
 * waits in tools end. Returns 0, or -1 when a worker is still inside a
 * tool: then the tools must not be torn down (their fini not called). */
int bd_server_stop(struct bd_server *srv);

#endif
