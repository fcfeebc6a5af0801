/*
 * x11: the X server, as bureaud sees it. One connection for capture and
 * input (serialised by x11_lock), one private connection on a thread that
 * follows XDamage on the root window, so "has the screen settled" is a
 * wait on a condition variable rather than a sleep.
 *
 * Errors: 0 on success, or -1 with *cause set to a malloc'd lowercase
 * message (the caller frees it).
 */
#ifndef BUREAU_X11_H
#define BUREAU_X11_H

#include <X11/Xlib.h>
#include <stdint.h>

#include "capture/capture.h"
#include "x11/kbd.h"

struct x11;

/* Connect to display `name` (NULL: $DISPLAY), set up XShm, XTest, XDamage
 * and XFixes. Fails when XTest is missing or the visual is not 24/32-bit
 * TrueColor. */
int x11_open(const char *name, struct x11 **out, char **cause);
void x11_close(struct x11 *x);

/* Every call below except x11_size and x11_settle needs
 * the lock held. */
void x11_lock(struct x11 *x);
void x11_unlock(struct x11 *x);

Display *x11_display(struct x11 *x);
struct x11_kbd *x11_kbd(struct x11 *x);
const char *x11_name(struct x11 *x);
void x11_size(struct x11 *x, int *w, int *h);

/* Capture the whole screen (XShm when the server offers it, else
 * XGetImage), with the pointer drawn in when draw_cursor is set (XFixes).
 * img->data points into memory owned by x; it stays valid until the next
 * x11_grab or x11_close, and only while the lock is held. */
int x11_grab(struct x11 *x, int draw_cursor, struct cap_image *img,
    char **cause);

/* Pointer, in screen pixels. */
int x11_pointer(struct x11 *x, int *px, int *py);
int x11_move(struct x11 *x, int px, int py);
/* button 1..9; down 1 = press, 0 = release. Synced. */
int x11_button(struct x11 *x, int button, int down);

/* Wait until no damage arrived for settle_ms, counting from `since_ns`
 * (CLOCK_MONOTONIC) or the last damage, whichever is later; give up after
 * timeout_ms from since_ns. Returns 0 when settled, 1 when it timed out.
 * Needs no lock. */
int x11_settle(struct x11 *x, uint64_t since_ns, int settle_ms, int timeout_ms);

/* Wait until the damage counter differs from `seq` or timeout_ms passes
 * (the frame publisher's idle wait). Returns the counter. Needs no lock. */
uint64_t x11_damage_wait(struct x11 *x, uint64_t seq, int timeout_ms);

#endif
