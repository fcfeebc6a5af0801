/*
 * Private to the desktop commands: what desktop.c asks of operator.c about
 * attached desktops and their host agents.
 */
#ifndef BUREAU_CLI_OPERATOR_H
#define BUREAU_CLI_OPERATOR_H

#include "host-bridge/store/store.h"

/* -1 with *cause when d is attached and lifecycle command cmd does not
 * apply to it, else 0. */
int attached_refuse(const struct desktop *d, const char *cmd, char **cause);

/* `bureau status` and one `bureau ls` row of an attached desktop. */
void attached_status(const struct desktop *d);
void attached_ls_row(const struct desktop *d);

/* End the desktop's host agent, if one runs (SIGTERM, then SIGKILL), and
 * wait until it is gone. */
int agent_stop(const struct desktop *d, char **cause);

#endif
