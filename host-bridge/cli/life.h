/*
 * host-bridge/cli/life.h: the lifecycle's command lines (life.c), for the
 * table in desktop.c and for fork.c, which starts the fork it made.
 */
#ifndef BUREAU_CLI_LIFE_H
#define BUREAU_CLI_LIFE_H

#include "host-bridge/desk/desk.h"

int cmd_start(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_restore(int argc, char **argv);

/* Start one desktop and say so as `bureau start` does: its exit status. */
int life_start_one(const char *name, const struct desk_start_opts *o);
/* What a start did, as `bureau start` says it. */
void life_say_started(const char *name, const struct desk_start_opts *o,
    const struct desk_start_res *r);
/* The last lines of file in dir, on stderr, through safeprint. */
void life_print_tail(const char *dir, const char *file, int lines);

#endif
