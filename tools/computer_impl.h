/*
 * tools/computer_impl.h: what tools/computer.c and
 * tools/computer_openai.c share; nothing else includes it. Every function
 * takes the call being served and returns 0 or the code it set with
 * tool_fail, as handlers do.
 */
#ifndef BUREAU_TOOLS_COMPUTER_IMPL_H
#define BUREAU_TOOLS_COMPUTER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "tools/tool.h"
#include "x11/x11.h"

#define CM_DURATION_MAX 100.0 /* seconds, wait and hold_key */
#define CM_SCROLL_MAX   100   /* wheel clicks in one scroll */
#define CM_PATH_MAX     1000  /* points in an OpenAI drag path */

/* The screenshot reply of a screenshot action. */
int cm_screenshot(struct tool_call *call);
/* Wait for the screen to settle after input at since_ns, then reply with
 * a screenshot (unless the request said "screenshot": false). */
int cm_after_input(struct tool_call *call, uint64_t since_ns);

/* A point in screenshot space, checked and mapped to the screen. */
int cm_point(struct tool_call *call, const char *field, int x, int y, int *sx,
    int *sy);
/* OpenAI's {x, y}, checked and mapped. */
int cm_xy(struct tool_call *call, int *sx, int *sy);
/* Check a combo string before anything is pressed. */
int cm_check_combo(struct tool_call *call, const char *field,
    const char *combo);
int cm_kbd(struct tool_call *call, const char *combo, enum x11_key_mode mode);

/* Input, each followed by cm_after_input (screen coordinates). */
int cm_click_at(struct tool_call *call, int have, int sx, int sy, int button,
    int count, const char *mods);
int cm_move(struct tool_call *call, int sx, int sy);
int cm_drag_path(struct tool_call *call, const int *pts, int n);
int cm_wheel(struct tool_call *call, int have, int sx, int sy, int dx, int dy,
    const char *mods);
int cm_key_tap(struct tool_call *call, const char *combo);
int cm_type(struct tool_call *call);
/* Sleep, cut short (with the call's error) when the daemon stops. */
int cm_sleep(struct tool_call *call, double seconds);

/* The OpenAI actions (tools/computer_openai.c). */
int oa_click(struct tool_call *call);
int oa_double_click(struct tool_call *call);
int oa_drag(struct tool_call *call);
int oa_keypress(struct tool_call *call);
int oa_move(struct tool_call *call);
int oa_scroll(struct tool_call *call);
int oa_type(struct tool_call *call);
int oa_wait(struct tool_call *call);

#endif
