/*
 * x11/xerr.h: X protocol errors as return values. Xlib's default handler
 * prints and exits the process; a window that vanishes between two calls
 * (an everyday event for the window and clipboard tools) must not take the
 * daemon with it. x11_trap_push installs, once, a process-wide handler that
 * records an error in the innermost trap the calling thread holds for that
 * Display and ignores every other error.
 *
 * A trap is meant for a connection used by one thread at a time (errors
 * are delivered to the thread that reads them).
 */
#ifndef BUREAU_X11_XERR_H
#define BUREAU_X11_XERR_H

#include <X11/Xlib.h>

struct x11_trap {
	Display *dpy;
	int error;             /* first error code seen, 0 = none */
	unsigned char request; /* its major request code */
	XID resource;          /* its resource id */
	struct x11_trap *prev; /* the thread's enclosing trap */
};

/* Start recording errors on dpy in t (owned by the caller, usually on its
 * stack). Traps nest; pop them in reverse order. */
void x11_trap_push(struct x11_trap *t, Display *dpy);

/* XSync, stop recording, and return the first error code seen (0: none). */
int x11_trap_pop(struct x11_trap *t);

/* Install the handler without a trap (errors on other threads and
 * connections are then ignored instead of exiting). */
void x11_trap_install(void);

/* Set *cause (when not NULL) to a malloc'd message and return -1: the
 * x11 layer's one way of failing. */
int x11_fail(char **cause, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
