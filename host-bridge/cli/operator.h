/*
 * Private to the bureau command: what desktop.c asks of operator.c about
 * attached desktops and their host agents.
 */
#ifndef BUREAU_CLI_OPERATOR_H
#define BUREAU_CLI_OPERATOR_H

#include <jansson.h>
#include <stddef.h>

#include "host-bridge/store/store.h"

/* -1 with *cause when d is attached and lifecycle command cmd does not
 * apply to it, else 0. */
int attached_refuse(const struct desktop *d, const char *cmd, char **cause);

/* One `bureau ls` row: name, state, uptime, the VM's CPU %, memory and
 * disk on the host, the guest's own load and memory, the endpoint. */
#define LS_ROW "%-16s %-12s %-10s %-9s %-5s %-7s %-7s %-19s %s\n"

/* The guest's own figures for `ls` ("0.15 312M/1.4G": its 1-minute load,
 * memory in use and in all, from `system info` through the host agent),
 * or "-" when its agent or daemon does not answer within 1.5 s. */
void ls_guest(const struct desktop *d, char *buf, size_t len);

/* `bureau status` and one `bureau ls` row of an attached desktop. */
void attached_status(const struct desktop *d);
void attached_ls_row(const struct desktop *d);

/* A desktop's limits ("limits: cpu ...", and what its cgroup holds) from
 * a config reply ({"limits": ...}) or desktop.json's fields. */
void print_limits(json_t *p);

#endif
