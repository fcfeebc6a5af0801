/*
 * host-bridge/cli/all.h: `bureau stop --all` and `start --all` (all.c).
 */
#ifndef BUREAU_CLI_ALL_H
#define BUREAU_CLI_ALL_H

#include "host-bridge/store/store.h"

/* In a desktop's directory: `stop --all` saved it, `start --all` brings
 * it back. */
#define ALL_MARK "saved-by-all"

/* stop --all (start 0) or start --all (start 1), each desktop's own
 * `bureau stop|start NAME [--timeout timeout]` at once: the exit
 * status (1 when any failed). */
int all_run(int start, const char *timeout);

/* The desktop's own start or stop: it is no longer `stop --all`'s. */
void all_unmark(const struct desktop *d);

#endif
