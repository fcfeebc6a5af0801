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

/*
 * Hand QEMU the descriptor fd under name (QMP's getfd, the descriptor
 * passed with SCM_RIGHTS): "fd:NAME" then names it in a migration's URI.
 * fd stays the caller's to close.
 */
int qmp_getfd(struct qmp *q, const char *name, int fd, char **cause);

void qmp_close(struct qmp *q);

#endif
