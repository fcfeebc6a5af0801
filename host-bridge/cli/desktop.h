/*
 * Private to the desktop commands (desktop.c, image.c).
 */
#ifndef BUREAU_DESKTOP_H
#define BUREAU_DESKTOP_H

/* `bureau image ...` (image.c). */
int image_main(int argc, char **argv);

struct desktop;

/* desktop.c: "bureau WHAT: CAUSE" on stderr (cause freed); the error and
 * the usage line of desktop command cmd. */
void die_cause(const char *what, char *cause);
void usage_err(const char *cmd, const char *msg);

/* `bureau host ...` (host.c); host_pick: the host `create --host want`
 * puts a desktop on (want NULL: local; "auto": the reachable one with the
 * most free memory), malloc'd, or NULL with *cause. */
int cmd_host(int argc, char **argv);
/* `bureau move NAME --to HOST` (host.c): a stopped desktop, its saved
 * state with it, onto another host that sees its directory. */
int cmd_move(int argc, char **argv);
char *host_pick(const char *want, char **cause);

/* `bureau fork NAME NEW ...` (fork.c). */
int cmd_fork(int argc, char **argv);

#endif
