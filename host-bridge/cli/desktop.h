/*
 * Private to the desktop manager (desktop.c, image.c, qmp.c): the QMP
 * client and the helpers the commands share.
 */
#ifndef BUREAU_DESKTOP_H
#define BUREAU_DESKTOP_H

#include <jansson.h>

/* QMP: QEMU's JSON control socket (one line of JSON per message). */
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

/*
 * Run a program (argv[0] looked up in PATH) and wait for it; its output
 * goes to ours unless quiet, then to /dev/null. Fails unless it exits 0.
 */
int dk_run(char *const argv[], int quiet, char **cause);

/* Printf into a malloc'd string; NULL only when out of memory. */
char *dk_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The directory holding this executable (malloc'd), NULL if unknown. */
char *dk_exe_dir(void);

/* `bureau image ...` (image.c). */
int image_main(int argc, char **argv);

#endif
