/* tools/computer.h: what other tools may ask of the computer tool. */
#ifndef BUREAU_TOOLS_COMPUTER_H
#define BUREAU_TOOLS_COMPUTER_H

#include "tools/tool.h"

extern const struct tool_entry tool_computer_entry;

/* Screen and screenshot sizes; -1 and the cause when no display is open.
 * *cause is borrowed (valid for the daemon's life). */
int tool_computer_geometry(int *sw, int *sh, int *dw, int *dh,
    const char **display, const char **cause);

#endif
