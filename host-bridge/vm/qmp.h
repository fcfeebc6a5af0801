/*
 * host-bridge/vm/qmp.h: a small synchronous client of QMP, QEMU's JSON
 * control socket (one JSON object a line over a unix socket).
 */
#ifndef BUREAU_HB_QMP_H
#define BUREAU_HB_QMP_H

#include <jansson.h>

struct qmp;

/*
 * Connect to the QMP socket at path and leave capabilities negotiation
 * done; waits at most timeout_ms for the greeting. The caller frees the
 * connection with qmp_close().
 */
int qmp_open(struct qmp **out, const char *path, int timeout_ms, char **cause);

/*
 * Run one command. args (may be NULL) is stolen. On success *ret (if not
 * NULL) gets the "return" value, a new reference the caller decrefs.
 * Asynchronous events are skipped. A QMP error becomes *cause.
 */
int qmp_exec(struct qmp *q, const char *cmd, json_t *args, json_t **ret,
    char **cause);

void qmp_close(struct qmp *q);

#endif
