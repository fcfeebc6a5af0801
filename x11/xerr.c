/*
 * x11/xerr.c: a process-wide X error handler that never exits, and
 * per-thread traps that collect errors for the code that caused them.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "x11/xerr.h"

static __thread struct x11_trap *x11_trap_top;
static pthread_once_t x11_trap_once = PTHREAD_ONCE_INIT;

static int
x11_trap_handler(Display *dpy, XErrorEvent *ev)
{
	for (struct x11_trap *t = x11_trap_top; t != NULL; t = t->prev) {
		if (t->dpy != dpy)
			continue;
		if (t->error == 0) {
			t->error = ev->error_code;
			t->request = ev->request_code;
			t->resource = ev->resourceid;
		}
		return (0);
	}
	/* Nobody asked: an error on a request whose outcome no one checks
	 * (a window gone before a fire-and-forget call) is not fatal. */
	return (0);
}

static void
x11_trap_set(void)
{
	XSetErrorHandler(x11_trap_handler);
}

void
x11_trap_install(void)
{
	pthread_once(&x11_trap_once, x11_trap_set);
}

void
x11_trap_push(struct x11_trap *t, Display *dpy)
{
	x11_trap_install();
	t->dpy = dpy;
	t->error = 0;
	t->request = 0;
	t->resource = 0;
	t->prev = x11_trap_top;
	x11_trap_top = t;
}

int
x11_trap_pop(struct x11_trap *t)
{
	XSync(t->dpy, False);
	/* pop this trap and any inner one left behind by mistake */
	while (x11_trap_top != NULL && x11_trap_top != t)
		x11_trap_top = x11_trap_top->prev;
	if (x11_trap_top == t)
		x11_trap_top = t->prev;
	return (t->error);
}

int
x11_fail(char **cause, const char *fmt, ...)
{
	va_list ap;

	if (cause != NULL) {
		va_start(ap, fmt);
		if (vasprintf(cause, fmt, ap) < 0)
			*cause = NULL;
		va_end(ap);
	}
	return (-1);
}
