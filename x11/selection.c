/*
 * x11/selection.c: CLIPBOARD owner thread and reader (see selection.h).
 * ICCCM section 2 is the reference: ownership with a real timestamp,
 * TARGETS, and the INCR protocol in both directions.
 */
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/utf8.h"
#include "x11/clock.h"
#include "x11/selection.h"
#include "x11/xerr.h"

enum {
	A_CLIPBOARD,
	A_TARGETS,
	A_TIMESTAMP,
	A_UTF8_STRING,
	A_TEXT,
	A_INCR,
	A_COMPOUND_TEXT,
	A_BUREAU_SEL, /* where our reads land */
	A_BUREAU_TS,  /* touched to learn a server timestamp */
	A_COUNT
};

static char *sel_atom_names[A_COUNT] = {
	"CLIPBOARD",
	"TARGETS",
	"TIMESTAMP",
	"UTF8_STRING",
	"TEXT",
	"INCR",
	"COMPOUND_TEXT",
	"_BUREAU_SELECTION",
	"_BUREAU_TIMESTAMP",
};

/* Values above this go by INCR, in chunks of SEL_CHUNK: well under the
 * core protocol's 256 KiB request limit, which every client can read. */
#define SEL_INCR_MIN     (192u << 10)
#define SEL_CHUNK        (64u << 10)
#define SEL_XFER_IDLE_MS 10000      /* drop an INCR reader silent this long */
#define SEL_SET_WAIT_MS  3000       /* the owner thread's confirmation */
#define SEL_READ_LONGS   (1L << 20) /* per XGetWindowProperty: 4 MiB */

/* A value being served; shared by the current ownership and transfers,
 * counted under s->lock. */
struct sel_buf {
	int refs;
	size_t len;
	char data[];
};

/* One INCR transfer to a requestor. */
struct sel_xfer {
	Window requestor;
	Atom property, type;
	struct sel_buf *buf;
	size_t off;
	int done; /* the final empty chunk was sent */
	double last_ms;
	struct sel_xfer *next;
};

struct x11_sel {
	size_t max;
	int (*stop)(void);
	Atom a[A_COUNT];

	/* owner thread: its connection, window and state */
	Display *odpy;
	Window owin;
	pthread_t thread;
	int started;
	int wake[2];
	struct sel_xfer *xfers;
	Time own_time;

	/* shared with x11_sel_set/get, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sel_buf *cur;  /* what we serve, NULL when not owner */
	struct sel_buf *want; /* handed over by x11_sel_set */
	unsigned long want_gen, done_gen;
	int done_ok;
	int ts_pending;    /* waiting for the timestamp event */
	double ts_sent_ms; /* when the timestamp request was made */

	/* reader connection, one read at a time */
	pthread_mutex_t rlock;
	Display *rdpy;
	Window rwin;
};

static struct sel_buf *
sel_buf_new(const char *data, size_t len)
{
	struct sel_buf *b = malloc(sizeof *b + len + 1);

	if (b == NULL)
		return (NULL);
	b->refs = 1;
	b->len = len;
	memcpy(b->data, data, len);
	b->data[len] = '\0';
	return (b);
}

/* Drop a reference; the caller holds s->lock. */
static void
sel_buf_unref(struct sel_buf *b)
{
	if (b != NULL && --b->refs == 0)
		free(b);
}

/* UTF-8 to Latin-1 for the STRING target: characters beyond U+00FF become
 * '?', as ICCCM's STRING cannot carry them. */
static struct sel_buf *
sel_latin1(const struct sel_buf *in)
{
	struct sel_buf *b = malloc(sizeof *b + in->len + 1);
	const unsigned char *p = (const unsigned char *)in->data;
	size_t n = 0;

	if (b == NULL)
		return (NULL);
	for (size_t i = 0; i < in->len;) {
		uint32_t cp;
		int k = utf8_decode(p + i, in->len - i, &cp);

		/* x11_sel_set takes UTF-8 only: a bad byte would be '?' */
		b->data[n++] = k > 0 && cp <= 0xff ? (char)cp : '?';
		i += k > 0 ? (size_t)k : 1;
	}
	b->refs = 1;
	b->len = n;
	b->data[n] = '\0';
	return (b);
}

/* --- the owner thread ---------------------------------------------------- */

static void
sel_notify(struct x11_sel *s, const XSelectionRequestEvent *rq, Atom prop)
{
	XEvent ev;

	memset(&ev, 0, sizeof ev);
	ev.xselection.type = SelectionNotify;
	ev.xselection.display = s->odpy;
	ev.xselection.requestor = rq->requestor;
	ev.xselection.selection = rq->selection;
	ev.xselection.target = rq->target;
	ev.xselection.property = prop;
	ev.xselection.time = rq->time;
	XSendEvent(s->odpy, rq->requestor, False, NoEventMask, &ev);
}

static void
sel_xfer_free(struct x11_sel *s, struct sel_xfer *x)
{
	pthread_mutex_lock(&s->lock);
	sel_buf_unref(x->buf);
	pthread_mutex_unlock(&s->lock);
	free(x);
}

/* Stop watching a requestor's properties unless another transfer still
 * goes to it. */
static void
sel_xfer_remove(struct x11_sel *s, struct sel_xfer *x)
{
	struct sel_xfer **pp;
	int other = 0;

	for (pp = &s->xfers; *pp != NULL; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	for (struct sel_xfer *o = s->xfers; o != NULL; o = o->next)
		if (o->requestor == x->requestor)
			other = 1;
	if (!other) {
		struct x11_trap t;

		x11_trap_push(&t, s->odpy);
		XSelectInput(s->odpy, x->requestor, NoEventMask);
		x11_trap_pop(&t);
	}
	sel_xfer_free(s, x);
}

/* Answer one SelectionRequest. */
static void
sel_serve(struct x11_sel *s, const XSelectionRequestEvent *rq)
{
	struct sel_buf *buf = NULL;
	struct x11_trap t;
	Atom prop = rq->property != None ? rq->property : rq->target;
	Atom type;

	pthread_mutex_lock(&s->lock);
	if (s->cur != NULL && rq->selection == s->a[A_CLIPBOARD] &&
	    (rq->time == CurrentTime || rq->time >= s->own_time)) {
		buf = s->cur;
		buf->refs++;
	}
	pthread_mutex_unlock(&s->lock);
	x11_trap_push(&t, s->odpy);
	if (buf == NULL) {
		sel_notify(s, rq, None);
		goto done;
	}
	if (rq->target == s->a[A_TARGETS]) {
		Atom targets[] = { s->a[A_TARGETS], s->a[A_TIMESTAMP],
			s->a[A_UTF8_STRING], s->a[A_TEXT], XA_STRING };

		XChangeProperty(s->odpy, rq->requestor, prop, XA_ATOM, 32,
		    PropModeReplace, (unsigned char *)targets,
		    (int)(sizeof targets / sizeof targets[0]));
		sel_notify(s, rq, prop);
		goto done;
	}
	if (rq->target == s->a[A_TIMESTAMP]) {
		long ts = (long)s->own_time;

		XChangeProperty(s->odpy, rq->requestor, prop, XA_INTEGER, 32,
		    PropModeReplace, (unsigned char *)&ts, 1);
		sel_notify(s, rq, prop);
		goto done;
	}
	if (rq->target == s->a[A_UTF8_STRING] || rq->target == s->a[A_TEXT])
		type = s->a[A_UTF8_STRING];
	else if (rq->target == XA_STRING) {
		struct sel_buf *l = sel_latin1(buf);

		pthread_mutex_lock(&s->lock);
		sel_buf_unref(buf);
		pthread_mutex_unlock(&s->lock);
		buf = l;
		type = XA_STRING;
	} else {
		pthread_mutex_lock(&s->lock);
		sel_buf_unref(buf);
		pthread_mutex_unlock(&s->lock);
		buf = NULL;
	}
	if (buf == NULL) { /* a target we do not offer, or no memory */
		sel_notify(s, rq, None);
		goto done;
	}
	if (buf->len < SEL_INCR_MIN) {
		XChangeProperty(s->odpy, rq->requestor, prop, type, 8,
		    PropModeReplace, (unsigned char *)buf->data, (int)buf->len);
		sel_notify(s, rq, prop);
	} else {
		struct sel_xfer *x = calloc(1, sizeof *x);
		long size = (long)buf->len;

		if (x == NULL) {
			sel_notify(s, rq, None);
			goto done;
		}
		/* INCR: announce the size; each time the requestor deletes
		 * the property, the next chunk goes in; an empty one ends */
		x->requestor = rq->requestor;
		x->property = prop;
		x->type = type;
		x->buf = buf;
		x->last_ms = x11_now_ms();
		buf = NULL;
		x->next = s->xfers;
		s->xfers = x;
		XSelectInput(s->odpy, rq->requestor, PropertyChangeMask);
		XChangeProperty(s->odpy, rq->requestor, prop, s->a[A_INCR], 32,
		    PropModeReplace, (unsigned char *)&size, 1);
		sel_notify(s, rq, prop);
	}
done:
	x11_trap_pop(&t);
	if (buf != NULL) {
		pthread_mutex_lock(&s->lock);
		sel_buf_unref(buf);
		pthread_mutex_unlock(&s->lock);
	}
}

/* The requestor deleted the property: send the next chunk. */
static void
sel_xfer_next(struct x11_sel *s, struct sel_xfer *x)
{
	struct x11_trap t;
	size_t n;

	if (x->done) {
		sel_xfer_remove(s, x);
		return;
	}
	n = x->buf->len - x->off;
	if (n > SEL_CHUNK)
		n = SEL_CHUNK;
	x11_trap_push(&t, s->odpy);
	XChangeProperty(s->odpy, x->requestor, x->property, x->type, 8,
	    PropModeReplace, (unsigned char *)x->buf->data + x->off, (int)n);
	if (x11_trap_pop(&t) != 0) {
		sel_xfer_remove(s, x); /* the requestor went away */
		return;
	}
	x->off += n;
	x->last_ms = x11_now_ms();
	if (n == 0)
		x->done = 1;
	if (x->done)
		sel_xfer_remove(s, x);
}

/*
 * Own CLIPBOARD with the value x11_sel_set handed over, and confirm the
 * generation of that value, read under the same lock as the value: a set
 * arriving during the round trips below is not confirmed before its own
 * value is taken. Several wake-ups may come for one value (each set
 * writes one, a later set replaces an untaken value): once the value is
 * taken the others find none and confirm nothing new; taking "none" would
 * leave the daemon owning CLIPBOARD with nothing to serve.
 */
static void
sel_take_ownership(struct x11_sel *s, Time ts)
{
	struct sel_buf *old;
	unsigned long gen;
	int ok;

	pthread_mutex_lock(&s->lock);
	s->ts_pending = 0;
	if (s->want == NULL) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	old = s->cur;
	s->cur = s->want;
	s->want = NULL;
	gen = s->want_gen;
	pthread_mutex_unlock(&s->lock);
	XSetSelectionOwner(s->odpy, s->a[A_CLIPBOARD], s->owin, ts);
	ok = XGetSelectionOwner(s->odpy, s->a[A_CLIPBOARD]) == s->owin;
	pthread_mutex_lock(&s->lock);
	sel_buf_unref(old);
	s->own_time = ts;
	if (!ok) {
		sel_buf_unref(s->cur);
		s->cur = NULL;
	}
	s->done_ok = ok;
	s->done_gen = gen;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void
sel_event(struct x11_sel *s, XEvent *ev)
{
	switch (ev->type) {
	case SelectionRequest:
		sel_serve(s, &ev->xselectionrequest);
		break;
	case SelectionClear:
		/* a clear queued before our own newer ownership is stale */
		if (ev->xselectionclear.selection != s->a[A_CLIPBOARD] ||
		    XGetSelectionOwner(s->odpy, s->a[A_CLIPBOARD]) == s->owin)
			break;
		pthread_mutex_lock(&s->lock);
		sel_buf_unref(s->cur);
		s->cur = NULL;
		pthread_mutex_unlock(&s->lock);
		break;
	case PropertyNotify:
		if (ev->xproperty.window == s->owin) {
			int take;

			pthread_mutex_lock(&s->lock);
			take = ev->xproperty.atom == s->a[A_BUREAU_TS] &&
			    s->ts_pending;
			pthread_mutex_unlock(&s->lock);
			if (take)
				sel_take_ownership(s, ev->xproperty.time);
			break;
		}
		if (ev->xproperty.state != PropertyDelete)
			break;
		for (struct sel_xfer *x = s->xfers; x != NULL; x = x->next)
			if (x->requestor == ev->xproperty.window &&
			    x->property == ev->xproperty.atom) {
				sel_xfer_next(s, x);
				break;
			}
		break;
	}
}

static void *
sel_main(void *arg)
{
	struct x11_sel *s = arg;
	struct pollfd pfd[2];

	pfd[0].fd = ConnectionNumber(s->odpy);
	pfd[0].events = POLLIN;
	pfd[1].fd = s->wake[0];
	pfd[1].events = POLLIN;
	for (;;) {
		char c;

		while (XPending(s->odpy) > 0) {
			XEvent ev;

			XNextEvent(s->odpy, &ev);
			sel_event(s, &ev);
		}
		/* INCR readers that stopped reading are dropped */
		for (struct sel_xfer *x = s->xfers, *nx; x != NULL; x = nx) {
			nx = x->next;
			if (x11_now_ms() - x->last_ms > SEL_XFER_IDLE_MS)
				sel_xfer_remove(s, x);
		}
		/* Events are only looked for in the socket from here on, but
		 * the round trip in sel_xfer_remove (and any flush: libxcb
		 * reads while it writes) may have moved some into Xlib's
		 * queue, where poll does not see them: XPending flushes and
		 * counts them. */
		if (XPending(s->odpy) > 0)
			continue;
		if (poll(pfd, 2, s->xfers != NULL ? 1000 : -1) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[0].revents & (POLLERR | POLLHUP))
			break;
		if (!(pfd[1].revents & POLLIN))
			continue;
		if (read(s->wake[0], &c, 1) != 1 || c == 'q')
			break;
		/* 's': a new value; a zero-length append to our own window
		 * yields a PropertyNotify carrying the server time, the
		 * timestamp ICCCM wants for SetSelectionOwner */
		pthread_mutex_lock(&s->lock);
		s->ts_pending = 1;
		s->ts_sent_ms = x11_now_ms();
		pthread_mutex_unlock(&s->lock);
		XChangeProperty(s->odpy, s->owin, s->a[A_BUREAU_TS], XA_STRING,
		    8, PropModeAppend, (unsigned char *)"", 0);
	}
	while (s->xfers != NULL)
		sel_xfer_remove(s, s->xfers);
	return (NULL);
}

/* --- open, close, set ---------------------------------------------------- */

int
x11_sel_open(const char *name, size_t max, int (*stop)(void),
    struct x11_sel **out, char **cause)
{
	struct x11_sel *s;

	x11_trap_install();
	if ((s = calloc(1, sizeof *s)) == NULL)
		return (x11_fail(cause, "out of memory"));
	s->max = max;
	s->stop = stop;
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->rlock, NULL);
	x11_mono_cond_init(&s->cond);
	if (name == NULL)
		name = getenv("DISPLAY");
	if (name == NULL || (s->odpy = XOpenDisplay(name)) == NULL ||
	    (s->rdpy = XOpenDisplay(name)) == NULL) {
		x11_fail(cause, "cannot open display '%s'",
		    name != NULL ? name : "");
		goto fail;
	}
	if (!XInternAtoms(s->odpy, sel_atom_names, A_COUNT, False, s->a)) {
		x11_fail(cause, "cannot intern the selection atoms");
		goto fail;
	}
	s->owin = XCreateSimpleWindow(s->odpy, DefaultRootWindow(s->odpy), -10,
	    -10, 1, 1, 0, 0, 0);
	XSelectInput(s->odpy, s->owin, PropertyChangeMask);
	XStoreName(s->odpy, s->owin, "bureaud clipboard");
	XSync(s->odpy, False);
	/* one reader window for good: an owner answering late writes to a
	 * window that still exists (some clients exit on a BadWindow) */
	s->rwin = XCreateSimpleWindow(s->rdpy, DefaultRootWindow(s->rdpy), -10,
	    -10, 1, 1, 0, 0, 0);
	XSelectInput(s->rdpy, s->rwin, PropertyChangeMask);
	XSync(s->rdpy, False);
	if (pipe2(s->wake, O_CLOEXEC) != 0) {
		x11_fail(cause, "pipe: %s", strerror(errno));
		goto fail;
	}
	if (pthread_create(&s->thread, NULL, sel_main, s) != 0) {
		x11_fail(cause, "cannot start the clipboard thread");
		goto fail;
	}
	s->started = 1;
	*out = s;
	return (0);
fail:
	x11_sel_close(s);
	return (-1);
}

void
x11_sel_close(struct x11_sel *s)
{
	if (s == NULL)
		return;
	if (s->started) {
		if (write(s->wake[1], "q", 1) < 0) {
			/* the thread also stops when the display closes */
		}
		pthread_join(s->thread, NULL);
	}
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	if (s->odpy != NULL)
		XCloseDisplay(s->odpy);
	if (s->rdpy != NULL)
		XCloseDisplay(s->rdpy);
	sel_buf_unref(s->cur);
	sel_buf_unref(s->want);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->rlock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

int
x11_sel_set(struct x11_sel *s, const char *text, size_t len, char **cause)
{
	struct sel_buf *b;
	struct timespec ts;
	unsigned long gen;
	char why[96];
	int ok = 0, rv = 0, done;

	if (len > s->max)
		return (X11_SEL_TOOLARGE);
	if ((b = sel_buf_new(text, len)) == NULL)
		return (x11_fail(cause, "out of memory"));
	ts = x11_mono_timespec(
	    x11_now_ns() + (uint64_t)SEL_SET_WAIT_MS * 1000000u);
	pthread_mutex_lock(&s->lock);
	sel_buf_unref(s->want); /* a value set before and never taken */
	s->want = b;
	gen = ++s->want_gen;
	pthread_mutex_unlock(&s->lock);
	if (write(s->wake[1], "s", 1) != 1)
		return (x11_fail(cause, "cannot wake the clipboard thread"));
	pthread_mutex_lock(&s->lock);
	while (s->done_gen < gen && rv == 0)
		rv = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	/* confirmed as the wait timed out: confirmed */
	if ((done = s->done_gen >= gen))
		ok = s->done_ok;
	else if (s->ts_pending)
		snprintf(why, sizeof why,
		    "the server's timestamp event has not "
		    "come for %.0f ms",
		    x11_now_ms() - s->ts_sent_ms);
	else
		snprintf(why, sizeof why,
		    "the owner thread has not got to it: "
		    "busy with the X server or not scheduled");
	pthread_mutex_unlock(&s->lock);
	if (!done)
		return (x11_fail(cause,
		    "the X server did not confirm the "
		    "clipboard ownership within %d ms (%s)",
		    SEL_SET_WAIT_MS, why));
	if (!ok)
		return (x11_fail(cause,
		    "another client kept the clipboard "
		    "ownership"));
	return (0);
}

/* --- reading ------------------------------------------------------------- */

/* Wait for the next event of `type` on window w (others are dropped: the
 * reader connection sees only its own window): a new value of prop, or a
 * SelectionNotify answering the request made at time ts (a late answer
 * to an earlier request has another time). 0, or X11_SEL_TIMEOUT. */
static int
sel_wait(struct x11_sel *s, Window w, int type, Atom prop, Time ts,
    double deadline, XEvent *ev)
{
	Display *dpy = s->rdpy;
	struct pollfd pfd = { ConnectionNumber(dpy), POLLIN, 0 };

	for (;;) {
		double left;

		while (XPending(dpy) > 0) {
			XNextEvent(dpy, ev);
			if (ev->type != type || ev->xany.window != w)
				continue;
			if (type == PropertyNotify &&
			    (ev->xproperty.atom != prop ||
			        ev->xproperty.state != PropertyNewValue))
				continue;
			if (type == SelectionNotify &&
			    ev->xselection.time != ts &&
			    ev->xselection.time != CurrentTime)
				continue;
			return (0);
		}
		if ((left = deadline - x11_now_ms()) <= 0)
			return (X11_SEL_TIMEOUT);
		if (s->stop != NULL && s->stop())
			return (X11_SEL_CANCELED);
		if (s->stop != NULL && left > X11_SEL_STOP_MS)
			left = X11_SEL_STOP_MS;
		if (poll(&pfd, 1, (int)left + 1) < 0 && errno != EINTR)
			return (-1);
	}
}

/* Append the whole property (in slices) to *buf and delete it. *type and
 * *format describe it; *n is its size in bytes (0 when empty). */
static int
sel_read_prop(struct x11_sel *s, Window w, Atom prop, char **buf, size_t *len,
    size_t *n, Atom *type, int *format, char **cause)
{
	long off = 0;

	*n = 0;
	for (;;) {
		unsigned long nitems, after;
		unsigned char *data = NULL;
		size_t bytes;
		char *nb;

		if (XGetWindowProperty(s->rdpy, w, prop, off, SEL_READ_LONGS,
		        False, AnyPropertyType, type, format, &nitems, &after,
		        &data) != Success)
			return (x11_fail(cause,
			    "cannot read the selection "
			    "property"));
		bytes = nitems *
		    (size_t)(*format == 32 ? sizeof(long) :
		                             (size_t)*format / 8);
		if (*len + bytes > s->max) {
			XFree(data);
			XDeleteProperty(s->rdpy, w, prop);
			return (X11_SEL_TOOLARGE);
		}
		if ((nb = realloc(*buf, *len + bytes + 1)) == NULL) {
			XFree(data);
			return (x11_fail(cause, "out of memory"));
		}
		*buf = nb;
		if (bytes > 0)
			memcpy(*buf + *len, data, bytes);
		*len += bytes;
		*n += bytes;
		(*buf)[*len] = '\0';
		if (data != NULL)
			XFree(data);
		if (after == 0 || nitems == 0)
			break;
		/* offsets count 32-bit units of the property's bytes */
		off += (long)((nitems * (size_t)*format / 8) / 4);
	}
	XDeleteProperty(s->rdpy, w, prop);
	return (0);
}

/* Convert the bytes we got to UTF-8 by their type. */
static int
sel_to_utf8(struct x11_sel *s, Atom type, char **buf, size_t *len, char **cause)
{
	if (type == XA_STRING) {
		char *u = malloc(*len * 2 + 1), *o = u;

		if (u == NULL)
			return (x11_fail(cause, "out of memory"));
		for (size_t i = 0; i < *len; i++) /* Latin-1 */
			o += utf8_encode((unsigned char)(*buf)[i], o);
		*o = '\0';
		free(*buf);
		*buf = u;
		*len = (size_t)(o - u);
	} else if (type == s->a[A_COMPOUND_TEXT]) {
		XTextProperty tp = { (unsigned char *)*buf, type, 8, *len };
		char **list = NULL;
		int cnt = 0;

		if (Xutf8TextPropertyToTextList(s->rdpy, &tp, &list, &cnt) >=
		        Success &&
		    cnt > 0 && list != NULL) {
			char *u = strdup(list[0]);

			XFreeStringList(list);
			if (u == NULL)
				return (x11_fail(cause, "out of memory"));
			free(*buf);
			*buf = u;
			*len = strlen(u);
		}
	}
	return (0);
}

/* One conversion request for `target`: 0 with the bytes, 1 when the owner
 * refused the target, or an error. */
static int
sel_convert(struct x11_sel *s, Window w, Atom target, double deadline,
    char **buf, size_t *len, Atom *type, char **cause)
{
	Atom prop = s->a[A_BUREAU_SEL];
	XEvent ev;
	size_t n;
	int format, rv;
	Time ts;

	/* a server timestamp for the request: a zero-length append to our
	 * window comes back as a PropertyNotify carrying the time */
	XChangeProperty(s->rdpy, w, s->a[A_BUREAU_TS], XA_STRING, 8,
	    PropModeAppend, (unsigned char *)"", 0);
	XFlush(s->rdpy);
	if ((rv = sel_wait(s, w, PropertyNotify, s->a[A_BUREAU_TS], 0, deadline,
	         &ev)) != 0)
		return (rv);
	ts = ev.xproperty.time;
	XDeleteProperty(s->rdpy, w, prop);
	XConvertSelection(s->rdpy, s->a[A_CLIPBOARD], target, prop, w, ts);
	XFlush(s->rdpy);
	if ((rv = sel_wait(s, w, SelectionNotify, None, ts, deadline, &ev)) !=
	    0)
		return (rv);
	if (ev.xselection.property == None)
		return (1);
	*len = 0;
	if ((rv = sel_read_prop(s, w, prop, buf, len, &n, type, &format,
	         cause)) != 0)
		return (rv);
	if (*type != s->a[A_INCR])
		return (0);
	/* INCR: deleting the property (done by sel_read_prop) asks for the
	 * first chunk; each chunk arrives as a new value, an empty one ends */
	*len = 0;
	*type = None;
	for (;;) {
		Atom t;

		if ((rv = sel_wait(s, w, PropertyNotify, prop, 0, deadline,
		         &ev)) != 0)
			return (rv);
		if ((rv = sel_read_prop(s, w, prop, buf, len, &n, &t, &format,
		         cause)) != 0)
			return (rv);
		if (*type == None)
			*type = t;
		if (n == 0)
			return (0);
	}
}

int
x11_sel_get(struct x11_sel *s, int timeout_ms, char **text, size_t *len,
    unsigned long *owner, int *ours, char **cause)
{
	static const int targets[] = { A_UTF8_STRING, -1 };
	struct x11_trap t;
	double deadline = x11_now_ms() + timeout_ms;
	Window w, own;
	char *buf = NULL;
	Atom type = None;
	int rv = 1;

	*text = NULL;
	*len = 0;
	*owner = 0;
	*ours = 0;
	pthread_mutex_lock(&s->rlock);
	x11_trap_push(&t, s->rdpy);
	own = XGetSelectionOwner(s->rdpy, s->a[A_CLIPBOARD]);
	*owner = own;
	if (own == None) {
		rv = 0;
		goto done;
	}
	if (own == s->owin) {
		/* ours: the value itself, without a round trip through our
		 * own owner thread */
		*ours = 1;
		rv = 0;
		pthread_mutex_lock(&s->lock);
		if (s->cur != NULL && (buf = malloc(s->cur->len + 1)) != NULL) {
			memcpy(buf, s->cur->data, s->cur->len + 1);
			*len = s->cur->len;
		} else if (s->cur != NULL)
			rv = -1;
		pthread_mutex_unlock(&s->lock);
		if (rv != 0)
			x11_fail(cause, "out of memory");
		goto done;
	}
	w = s->rwin;
	for (int i = 0; rv == 1; i++) {
		Atom target = targets[i] >= 0 ? s->a[targets[i]] : XA_STRING;

		rv = sel_convert(s, w, target, deadline, &buf, len, &type,
		    cause);
		if (targets[i] < 0)
			break;
	}
	if (rv == 1)
		rv = x11_fail(cause,
		    "the clipboard owner (window 0x%lx) "
		    "offers no text",
		    (unsigned long)own);
	else if (rv == 0)
		rv = sel_to_utf8(s, type, &buf, len, cause);
done:
	x11_trap_pop(&t);
	pthread_mutex_unlock(&s->rlock);
	if (rv != 0) {
		free(buf);
		*len = 0;
		return (rv);
	}
	if (buf == NULL && (buf = strdup("")) == NULL)
		return (x11_fail(cause, "out of memory"));
	*text = buf;
	return (0);
}
