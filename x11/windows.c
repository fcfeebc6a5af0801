/*
 * x11/windows.c: top-level client windows (see windows.h).
 *
 * Written on Xlib rather than libxdo: libxdo's close is XDestroyWindow
 * (not the polite WM_DELETE_WINDOW), its geometry ignores frames, its
 * EWMH calls print to stderr instead of returning a cause, and it has no
 * tree walk for desktops without a window manager.
 */
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "x11/windows.h"
#include "common/utf8.h"
#include "x11/xerr.h"

enum {
	A_NET_SUPPORTED,
	A_NET_SUPPORTING_WM_CHECK,
	A_NET_CLIENT_LIST,
	A_NET_ACTIVE_WINDOW,
	A_NET_WM_NAME,
	A_UTF8_STRING,
	A_NET_WM_PID,
	A_WM_STATE,
	A_WM_PROTOCOLS,
	A_WM_DELETE_WINDOW,
	A_NET_MOVERESIZE_WINDOW,
	A_NET_WM_DESKTOP,
	A_NET_CURRENT_DESKTOP,
	A_COUNT
};

static char *wm_atom_names[A_COUNT] = {
	"_NET_SUPPORTED",
	"_NET_SUPPORTING_WM_CHECK",
	"_NET_CLIENT_LIST",
	"_NET_ACTIVE_WINDOW",
	"_NET_WM_NAME",
	"UTF8_STRING",
	"_NET_WM_PID",
	"WM_STATE",
	"WM_PROTOCOLS",
	"WM_DELETE_WINDOW",
	"_NET_MOVERESIZE_WINDOW",
	"_NET_WM_DESKTOP",
	"_NET_CURRENT_DESKTOP",
};

#define WM_TITLE_MAX    (1L << 14) /* 32-bit units: 64 KiB of title */
#define WM_LIST_MAX     (1L << 16) /* windows in _NET_CLIENT_LIST */
#define WM_WALK_DEPTH   3          /* frame levels searched for WM_STATE */
#define WM_SOURCE_PAGER 2          /* EWMH source indication */

#define WM_CREATED_RING 4096 /* windows remembered for launches */

struct x11_wm {
	pthread_mutex_t lock;
	Display *dpy;
	Window root;
	Atom a[A_COUNT];

	/* While a launch waits (watchers > 0) the root's CreateNotify
	 * events are logged: window ids are reused as soon as a client
	 * disconnects, so "not in the list before" cannot tell a new window
	 * from an old one, but "created after the mark" can. */
	int watchers;
	unsigned long seq;
	struct {
		unsigned long seq;
		Window id;
	} created[WM_CREATED_RING];
};

/* What the running window manager offers, read once per operation: a WM
 * may start, stop or be replaced at any time. */
struct wm_ewmh {
	Window check; /* its check window, None without EWMH */
	Atom *supported;
	unsigned long nsupported;
};

int
x11_wm_open(const char *name, struct x11_wm **out, char **cause)
{
	struct x11_wm *wm;

	x11_trap_install();
	if ((wm = calloc(1, sizeof *wm)) == NULL)
		return (x11_fail(cause, "out of memory"));
	pthread_mutex_init(&wm->lock, NULL);
	if (name == NULL)
		name = getenv("DISPLAY");
	if (name == NULL || (wm->dpy = XOpenDisplay(name)) == NULL) {
		x11_fail(cause, "cannot open display '%s'",
		    name != NULL ? name : "");
		goto fail;
	}
	wm->root = DefaultRootWindow(wm->dpy);
	if (!XInternAtoms(wm->dpy, wm_atom_names, A_COUNT, False, wm->a)) {
		x11_fail(cause, "cannot intern the EWMH atoms");
		goto fail;
	}
	*out = wm;
	return (0);
fail:
	x11_wm_close(wm);
	return (-1);
}

void
x11_wm_close(struct x11_wm *wm)
{
	if (wm == NULL)
		return;
	if (wm->dpy != NULL)
		XCloseDisplay(wm->dpy);
	pthread_mutex_destroy(&wm->lock);
	free(wm);
}

/* A property's value (XFree it), or NULL when absent, of another type or
 * the window is gone. */
static unsigned char *
wm_prop(struct x11_wm *wm, Window w, Atom prop, Atom type, long max,
    int *format, unsigned long *n, Atom *type_ret)
{
	Atom actual;
	int fmt;
	unsigned long nitems, after;
	unsigned char *data = NULL;

	if (XGetWindowProperty(wm->dpy, w, prop, 0, max, False, type, &actual,
	        &fmt, &nitems, &after, &data) != Success)
		return (NULL);
	if (actual == None || (type != AnyPropertyType && actual != type)) {
		if (data != NULL)
			XFree(data);
		return (NULL);
	}
	if (format != NULL)
		*format = fmt;
	if (n != NULL)
		*n = nitems;
	if (type_ret != NULL)
		*type_ret = actual;
	/* Xlib allocates a byte even for an empty property: data != NULL
	 * says the property is present */
	return (data);
}

/* A single 32-bit value (a window or a cardinal); 0 when absent. */
static int
wm_prop_long(struct x11_wm *wm, Window w, Atom prop, Atom type,
    unsigned long *out)
{
	unsigned char *data;
	unsigned long n = 0;
	int fmt = 0;

	data = wm_prop(wm, w, prop, type, 1, &fmt, &n, NULL);
	if (data == NULL)
		return (-1);
	if (fmt != 32 || n < 1) {
		XFree(data);
		return (-1);
	}
	*out = ((unsigned long *)data)[0];
	XFree(data);
	return (0);
}

static void
wm_ewmh_load(struct x11_wm *wm, struct wm_ewmh *e)
{
	unsigned long w = 0, again = 0;
	unsigned char *data;
	int fmt = 0;

	memset(e, 0, sizeof *e);
	/* A stale check window (its WM died) does not point to itself. */
	if (wm_prop_long(wm, wm->root, wm->a[A_NET_SUPPORTING_WM_CHECK],
	        XA_WINDOW, &w) != 0 ||
	    w == 0 ||
	    wm_prop_long(wm, (Window)w, wm->a[A_NET_SUPPORTING_WM_CHECK],
	        XA_WINDOW, &again) != 0 ||
	    again != w)
		return;
	e->check = (Window)w;
	data = wm_prop(wm, wm->root, wm->a[A_NET_SUPPORTED], XA_ATOM, 4096,
	    &fmt, &e->nsupported, NULL);
	if (data != NULL && fmt == 32)
		e->supported = (Atom *)data;
	else {
		if (data != NULL)
			XFree(data);
		e->nsupported = 0;
	}
}

static void
wm_ewmh_clear(struct wm_ewmh *e)
{
	if (e->supported != NULL)
		XFree(e->supported);
	e->supported = NULL;
}

static int
wm_supports(const struct wm_ewmh *e, Atom a)
{
	if (e->check == None)
		return (0);
	for (unsigned long i = 0; i < e->nsupported; i++)
		if (e->supported[i] == a)
			return (1);
	return (0);
}

static int
wm_has_state(struct x11_wm *wm, Window w)
{
	unsigned char *data = wm_prop(wm, w, wm->a[A_WM_STATE], AnyPropertyType,
	    2, NULL, NULL, NULL);

	if (data == NULL)
		return (0);
	XFree(data);
	return (1);
}

/* The WM_STATE client inside a frame, depth-first; None if there is none. */
static Window
wm_find_client(struct x11_wm *wm, Window w, int depth)
{
	Window r, p, *kids = NULL, found = None;
	unsigned int nk = 0;

	if (depth <= 0 || !XQueryTree(wm->dpy, w, &r, &p, &kids, &nk))
		return (None);
	for (unsigned int i = 0; i < nk && found == None; i++)
		if (wm_has_state(wm, kids[i]))
			found = kids[i];
	for (unsigned int i = 0; i < nk && found == None; i++)
		found = wm_find_client(wm, kids[i], depth - 1);
	if (kids != NULL)
		XFree(kids);
	return (found);
}

static int
wm_push(Window **v, size_t *n, size_t *cap, Window w)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		Window *nv = realloc(*v, nc * sizeof *nv);

		if (nv == NULL)
			return (-1);
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = w;
	return (0);
}

/*
 * The top-level clients: the EWMH client list when a compliant window
 * manager keeps one, else the root's children that are clients (WM_STATE)
 * or frame one, else are mapped (no window manager at all). Override-
 * redirect windows (menus, tooltips) and input-only ones are never clients.
 */
static int
wm_clients(struct x11_wm *wm, const struct wm_ewmh *e, Window **out, size_t *n,
    char **cause)
{
	Window r, p, *kids = NULL, *v = NULL;
	unsigned int nk = 0;
	size_t cnt = 0, cap = 0;
	unsigned char *data;
	unsigned long nitems = 0;
	int fmt = 0;

	if (e->check != None &&
	    (data = wm_prop(wm, wm->root, wm->a[A_NET_CLIENT_LIST], XA_WINDOW,
	         WM_LIST_MAX, &fmt, &nitems, NULL)) != NULL) {
		for (unsigned long i = 0; fmt == 32 && i < nitems; i++)
			if (wm_push(&v, &cnt, &cap,
			        (Window)((unsigned long *)data)[i]) != 0)
				goto oom;
		XFree(data);
		*out = v;
		*n = cnt;
		return (0);
	}
	if (!XQueryTree(wm->dpy, wm->root, &r, &p, &kids, &nk))
		return (x11_fail(cause, "cannot query the root window"));
	for (unsigned int i = 0; i < nk; i++) {
		XWindowAttributes a;
		Window c;

		if (!XGetWindowAttributes(wm->dpy, kids[i], &a) ||
		    a.override_redirect || a.class == InputOnly)
			continue;
		if (wm_has_state(wm, kids[i]))
			c = kids[i];
		else if ((c = wm_find_client(wm, kids[i], WM_WALK_DEPTH)) ==
		        None &&
		    a.map_state == IsViewable)
			c = kids[i];
		if (c != None && wm_push(&v, &cnt, &cap, c) != 0)
			goto oom;
	}
	if (kids != NULL)
		XFree(kids);
	*out = v;
	*n = cnt;
	return (0);
oom:
	if (kids != NULL)
		XFree(kids);
	free(v);
	return (x11_fail(cause, "out of memory"));
}

static int
wm_in(const Window *v, size_t n, Window w)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == w)
			return (1);
	return (0);
}

static Window
wm_parent(struct x11_wm *wm, Window w)
{
	Window r, p = None, *kids = NULL;
	unsigned int nk;

	if (!XQueryTree(wm->dpy, w, &r, &p, &kids, &nk))
		return (None);
	if (kids != NULL)
		XFree(kids);
	return (p);
}

/* The active client: the window manager's word when it keeps one, else the
 * client holding the input focus (or an ancestor of the focus window). */
static Window
wm_active(struct x11_wm *wm, const struct wm_ewmh *e, const Window *v, size_t n)
{
	unsigned long a = 0;
	Window f;
	int revert;

	if (wm_supports(e, wm->a[A_NET_ACTIVE_WINDOW]))
		return (wm_prop_long(wm, wm->root, wm->a[A_NET_ACTIVE_WINDOW],
		            XA_WINDOW, &a) == 0 ?
		        (Window)a :
		        None);
	XGetInputFocus(wm->dpy, &f, &revert);
	while (f != None && f != PointerRoot && f != wm->root) {
		if (wm_in(v, n, f))
			return (f);
		f = wm_parent(wm, f);
	}
	return (None);
}

static char *
wm_latin1_to_utf8(const unsigned char *s, size_t n)
{
	char *out = malloc(n * 2 + 1), *o = out;

	if (out == NULL)
		return (NULL);
	for (size_t i = 0; i < n && s[i] != '\0'; i++)
		o += utf8_encode(s[i], o);
	*o = '\0';
	return (out);
}

/* The title in UTF-8 (malloc'd): _NET_WM_NAME, else WM_NAME converted from
 * its encoding (STRING is Latin-1; COMPOUND_TEXT goes through Xlib). */
static char *
wm_title(struct x11_wm *wm, Window w)
{
	unsigned char *data;
	unsigned long n = 0;
	int fmt = 0;
	XTextProperty tp;
	char *s = NULL, **list = NULL;
	int cnt = 0;

	data = wm_prop(wm, w, wm->a[A_NET_WM_NAME], wm->a[A_UTF8_STRING],
	    WM_TITLE_MAX, &fmt, &n, NULL);
	if (data != NULL) {
		if (fmt == 8)
			s = strndup((char *)data, n);
		XFree(data);
		if (s != NULL)
			return (s);
	}
	if (!XGetWMName(wm->dpy, w, &tp) || tp.value == NULL)
		return (strdup(""));
	if (tp.format != 8)
		s = strdup("");
	else if (tp.encoding == XA_STRING)
		s = wm_latin1_to_utf8(tp.value, tp.nitems);
	else if (tp.encoding == wm->a[A_UTF8_STRING])
		s = strndup((char *)tp.value, tp.nitems);
	else if (Xutf8TextPropertyToTextList(wm->dpy, &tp, &list, &cnt) >=
	        Success &&
	    cnt > 0 && list != NULL)
		s = strdup(list[0]);
	else
		s = strndup((char *)tp.value, tp.nitems);
	if (list != NULL)
		XFreeStringList(list);
	XFree(tp.value);
	return (s);
}

static int
wm_deletable(struct x11_wm *wm, Window w)
{
	Atom *protos = NULL;
	int n = 0, yes = 0;

	if (!XGetWMProtocols(wm->dpy, w, &protos, &n))
		return (0);
	for (int i = 0; i < n; i++)
		if (protos[i] == wm->a[A_WM_DELETE_WINDOW])
			yes = 1;
	if (protos != NULL)
		XFree(protos);
	return (yes);
}

/* The window's ancestor just below the root: its frame, or itself. */
static Window
wm_frame(struct x11_wm *wm, Window w)
{
	for (int i = 0; i < 16; i++) {
		Window p = wm_parent(wm, w);

		if (p == None)
			return (None);
		if (p == wm->root)
			return (w);
		w = p;
	}
	return (w);
}

void
x11_wm_info_clear(struct x11_win_info *w)
{
	free(w->title);
	free(w->wm_class);
	free(w->instance);
	memset(w, 0, sizeof *w);
}

/* Fill *out for client w; X11_WM_GONE when it vanished meanwhile (the
 * caller holds a trap on the connection). */
static int
wm_fill(struct x11_wm *wm, Window w, Window active, struct x11_win_info *out,
    char **cause)
{
	XWindowAttributes a;
	XClassHint ch = { NULL, NULL };
	Window frame, child, r;
	int x, y, fx, fy;
	unsigned int fw, fh, bw, depth;
	unsigned long pid = 0;

	memset(out, 0, sizeof *out);
	out->id = w;
	if (!XGetWindowAttributes(wm->dpy, w, &a) ||
	    !XTranslateCoordinates(wm->dpy, w, wm->root, 0, 0, &x, &y,
	        &child) ||
	    (frame = wm_frame(wm, w)) == None ||
	    !XGetGeometry(wm->dpy, frame, &r, &fx, &fy, &fw, &fh, &bw, &depth))
		return (X11_WM_GONE);
	out->x = x;
	out->y = y;
	out->width = a.width;
	out->height = a.height;
	out->fx = fx;
	out->fy = fy;
	out->fwidth = (int)(fw + 2 * bw);
	out->fheight = (int)(fh + 2 * bw);
	out->viewable = a.map_state == IsViewable;
	out->active = w == active;
	if (wm_prop_long(wm, w, wm->a[A_NET_WM_PID], XA_CARDINAL, &pid) == 0)
		out->pid = (long)pid;
	out->deletable = wm_deletable(wm, w);
	out->title = wm_title(wm, w);
	if (XGetClassHint(wm->dpy, w, &ch)) {
		out->instance = strdup(ch.res_name != NULL ? ch.res_name : "");
		out->wm_class = strdup(
		    ch.res_class != NULL ? ch.res_class : "");
		if (ch.res_name != NULL)
			XFree(ch.res_name);
		if (ch.res_class != NULL)
			XFree(ch.res_class);
	} else {
		out->instance = strdup("");
		out->wm_class = strdup("");
	}
	if (out->title == NULL || out->instance == NULL ||
	    out->wm_class == NULL) {
		x11_wm_info_clear(out);
		return (x11_fail(cause, "out of memory"));
	}
	return (0);
}

/* Read queued events: log the windows created while someone watches,
 * drop the rest. With the lock held. */
static void
wm_drain(struct x11_wm *wm)
{
	while (XPending(wm->dpy) > 0) {
		XEvent ev;

		XNextEvent(wm->dpy, &ev);
		if (ev.type != CreateNotify || wm->watchers == 0 ||
		    ev.xcreatewindow.parent != wm->root)
			continue;
		wm->seq++;
		wm->created[wm->seq % WM_CREATED_RING].seq = wm->seq;
		wm->created[wm->seq % WM_CREATED_RING].id =
		    ev.xcreatewindow.window;
	}
}

int
x11_wm_watch(struct x11_wm *wm, unsigned long *mark, char **cause)
{
	struct x11_trap t;
	int err = 0;

	pthread_mutex_lock(&wm->lock);
	wm_drain(wm);
	if (wm->watchers++ == 0) {
		x11_trap_push(&t, wm->dpy);
		XSelectInput(wm->dpy, wm->root, SubstructureNotifyMask);
		err = x11_trap_pop(&t); /* synced: nothing created is missed */
		if (err != 0)
			wm->watchers--;
	}
	*mark = wm->seq;
	pthread_mutex_unlock(&wm->lock);
	if (err != 0)
		return (x11_fail(cause,
		    "cannot watch the root window for new "
		    "windows"));
	return (0);
}

void
x11_wm_unwatch(struct x11_wm *wm)
{
	pthread_mutex_lock(&wm->lock);
	if (wm->watchers > 0 && --wm->watchers == 0) {
		XSelectInput(wm->dpy, wm->root, NoEventMask);
		XSync(wm->dpy, False);
		wm_drain(wm);
	}
	pthread_mutex_unlock(&wm->lock);
}

int
x11_wm_created_since(struct x11_wm *wm, unsigned long mark, unsigned long id)
{
	int yes = 0;

	pthread_mutex_lock(&wm->lock);
	wm_drain(wm);
	for (unsigned long q = wm->seq;
	     q > mark && wm->seq - q < WM_CREATED_RING; q--)
		if (wm->created[q % WM_CREATED_RING].seq == q &&
		    wm->created[q % WM_CREATED_RING].id == (Window)id) {
			yes = 1;
			break;
		}
	pthread_mutex_unlock(&wm->lock);
	return (yes);
}

char *
x11_wm_manager(struct x11_wm *wm)
{
	struct wm_ewmh e;
	struct x11_trap t;
	char *name = NULL;

	pthread_mutex_lock(&wm->lock);
	wm_drain(wm);
	x11_trap_push(&t, wm->dpy);
	wm_ewmh_load(wm, &e);
	if (e.check != None)
		name = wm_title(wm, e.check);
	wm_ewmh_clear(&e);
	x11_trap_pop(&t);
	pthread_mutex_unlock(&wm->lock);
	return (name);
}

void
x11_wm_list_free(struct x11_win_info *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		x11_wm_info_clear(&v[i]);
	free(v);
}

int
x11_wm_list(struct x11_wm *wm, struct x11_win_info **out, size_t *n,
    char **cause)
{
	struct wm_ewmh e;
	struct x11_trap t;
	struct x11_win_info *v = NULL;
	Window *ids = NULL, active;
	size_t nids = 0, cnt = 0;
	int rv = -1;

	pthread_mutex_lock(&wm->lock);
	wm_drain(wm);
	x11_trap_push(&t, wm->dpy);
	wm_ewmh_load(wm, &e);
	if (wm_clients(wm, &e, &ids, &nids, cause) != 0)
		goto done;
	active = wm_active(wm, &e, ids, nids);
	if (nids > 0 && (v = calloc(nids, sizeof *v)) == NULL) {
		x11_fail(cause, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < nids; i++) {
		int r = wm_fill(wm, ids[i], active, &v[cnt], cause);

		if (r == X11_WM_GONE)
			continue; /* closed while we looked */
		if (r != 0) {
			x11_wm_list_free(v, cnt);
			v = NULL;
			goto done;
		}
		cnt++;
	}
	*out = v;
	*n = cnt;
	rv = 0;
done:
	free(ids);
	wm_ewmh_clear(&e);
	x11_trap_pop(&t);
	pthread_mutex_unlock(&wm->lock);
	return (rv);
}

/* Is id a top-level client now? With the lock and a trap held. */
static int
wm_check_client(struct x11_wm *wm, const struct wm_ewmh *e, Window id,
    Window *active, char **cause)
{
	Window *ids = NULL;
	size_t n = 0;
	int in;

	if (wm_clients(wm, e, &ids, &n, cause) != 0)
		return (-1);
	in = wm_in(ids, n, id);
	if (active != NULL)
		*active = wm_active(wm, e, ids, n);
	free(ids);
	return (in ? 0 : X11_WM_GONE);
}

int
x11_wm_info(struct x11_wm *wm, unsigned long id, struct x11_win_info *out,
    char **cause)
{
	struct wm_ewmh e;
	struct x11_trap t;
	Window active = None;
	int rv;

	pthread_mutex_lock(&wm->lock);
	wm_drain(wm);
	x11_trap_push(&t, wm->dpy);
	wm_ewmh_load(wm, &e);
	if ((rv = wm_check_client(wm, &e, (Window)id, &active, cause)) == 0)
		rv = wm_fill(wm, (Window)id, active, out, cause);
	wm_ewmh_clear(&e);
	x11_trap_pop(&t);
	pthread_mutex_unlock(&wm->lock);
	return (rv);
}

static void
wm_send_root(struct x11_wm *wm, Window w, Atom type, long l0, long l1, long l2,
    long l3, long l4)
{
	XEvent ev;

	memset(&ev, 0, sizeof ev);
	ev.xclient.type = ClientMessage;
	ev.xclient.window = w;
	ev.xclient.message_type = type;
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = l0;
	ev.xclient.data.l[1] = l1;
	ev.xclient.data.l[2] = l2;
	ev.xclient.data.l[3] = l3;
	ev.xclient.data.l[4] = l4;
	XSendEvent(wm->dpy, wm->root, False,
	    SubstructureRedirectMask | SubstructureNotifyMask, &ev);
}

/*
 * Run one operation on a client with the lock, a trap and the EWMH state:
 * X11_WM_GONE when id is not a client or an X error says it went away.
 */
typedef int (*wm_op_fn)(struct x11_wm *, const struct wm_ewmh *, Window, Window,
    const long *, char **);

static int
wm_op(struct x11_wm *wm, Window id, wm_op_fn fn, const long *args, char **cause)
{
	struct wm_ewmh e;
	struct x11_trap t;
	Window active = None;
	int rv, err;

	pthread_mutex_lock(&wm->lock);
	wm_drain(wm);
	x11_trap_push(&t, wm->dpy);
	wm_ewmh_load(wm, &e);
	rv = wm_check_client(wm, &e, id, &active, cause);
	if (rv == 0)
		rv = fn(wm, &e, id, active, args, cause);
	wm_ewmh_clear(&e);
	err = x11_trap_pop(&t);
	pthread_mutex_unlock(&wm->lock);
	if (rv == 0 && err == BadWindow)
		return (X11_WM_GONE);
	if (rv == 0 && err != 0) {
		char msg[128];

		XGetErrorText(wm->dpy, err, msg, sizeof msg);
		return (x11_fail(cause,
		    "X error on window 0x%lx: %s "
		    "(request %d)",
		    id, msg, t.request));
	}
	return (rv);
}

static int
wm_op_activate(struct x11_wm *wm, const struct wm_ewmh *e, Window id,
    Window active, const long *args, char **cause)
{
	XWindowAttributes a;
	unsigned long desk = 0, cur = 0;
	Window frame;

	(void)args;
	(void)cause;
	if (wm_supports(e, wm->a[A_NET_ACTIVE_WINDOW])) {
		/* a window on another desktop is reached by switching there */
		if (wm_supports(e, wm->a[A_NET_CURRENT_DESKTOP]) &&
		    wm_prop_long(wm, id, wm->a[A_NET_WM_DESKTOP], XA_CARDINAL,
		        &desk) == 0 &&
		    desk != 0xffffffffUL &&
		    wm_prop_long(wm, wm->root, wm->a[A_NET_CURRENT_DESKTOP],
		        XA_CARDINAL, &cur) == 0 &&
		    cur != desk)
			wm_send_root(wm, wm->root, wm->a[A_NET_CURRENT_DESKTOP],
			    (long)desk, CurrentTime, 0, 0, 0);
		/* source 2 (a pager): the user asked, so no focus-stealing
		 * prevention applies */
		wm_send_root(wm, id, wm->a[A_NET_ACTIVE_WINDOW],
		    WM_SOURCE_PAGER, CurrentTime, (long)active, 0, 0);
		return (0);
	}
	XMapWindow(wm->dpy, id);
	if ((frame = wm_frame(wm, id)) != None)
		XRaiseWindow(wm->dpy, frame);
	XSync(wm->dpy, False);
	/* focusing an unviewable window is a BadMatch: a non-EWMH window
	 * manager may map it later, and then the agent can ask again */
	if (XGetWindowAttributes(wm->dpy, id, &a) && a.map_state == IsViewable)
		XSetInputFocus(wm->dpy, id, RevertToParent, CurrentTime);
	return (0);
}

int
x11_wm_activate(struct x11_wm *wm, unsigned long id, char **cause)
{
	return (wm_op(wm, (Window)id, wm_op_activate, NULL, cause));
}

static int
wm_op_close(struct x11_wm *wm, const struct wm_ewmh *e, Window id,
    Window active, const long *args, char **cause)
{
	XEvent ev;

	(void)e;
	(void)active;
	if (args[0]) {
		XKillClient(wm->dpy, id);
		return (0);
	}
	if (!wm_deletable(wm, id))
		return (x11_fail(cause,
		    "window 0x%lx does not accept "
		    "WM_DELETE_WINDOW",
		    id));
	memset(&ev, 0, sizeof ev);
	ev.xclient.type = ClientMessage;
	ev.xclient.window = id;
	ev.xclient.message_type = wm->a[A_WM_PROTOCOLS];
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = (long)wm->a[A_WM_DELETE_WINDOW];
	ev.xclient.data.l[1] = CurrentTime;
	XSendEvent(wm->dpy, id, False, NoEventMask, &ev);
	return (0);
}

int
x11_wm_close_window(struct x11_wm *wm, unsigned long id, int kill, char **cause)
{
	long args[1] = { kill };

	return (wm_op(wm, (Window)id, wm_op_close, args, cause));
}

/* args: x, y, width, height, flags (1 move, 2 resize). */
static int
wm_op_moveresize(struct x11_wm *wm, const struct wm_ewmh *e, Window id,
    Window active, const long *args, char **cause)
{
	struct x11_win_info cur;
	long flags = 0;
	int rv;

	(void)active;
	if (wm_supports(e, wm->a[A_NET_MOVERESIZE_WINDOW])) {
		/* StaticGravity: x, y place the client area itself, whatever
		 * decorations the window manager adds around it */
		if (args[4] & 1)
			flags |= (1L << 8) | (1L << 9);
		if (args[4] & 2)
			flags |= (1L << 10) | (1L << 11);
		wm_send_root(wm, id, wm->a[A_NET_MOVERESIZE_WINDOW],
		    StaticGravity | flags | ((long)WM_SOURCE_PAGER << 12),
		    args[0], args[1], args[2], args[3]);
		return (0);
	}
	if (args[4] & 2)
		XResizeWindow(wm->dpy, id, (unsigned)args[2],
		    (unsigned)args[3]);
	if (args[4] & 1) {
		/* XMoveWindow places the outer corner (border, or the frame
		 * of a reparenting window manager under the default
		 * NorthWest gravity): shift it by the client's offset */
		if ((rv = wm_fill(wm, id, None, &cur, cause)) != 0)
			return (rv);
		XMoveWindow(wm->dpy, id, (int)args[0] - (cur.x - cur.fx),
		    (int)args[1] - (cur.y - cur.fy));
		x11_wm_info_clear(&cur);
	}
	return (0);
}

int
x11_wm_move(struct x11_wm *wm, unsigned long id, int x, int y, char **cause)
{
	long args[5] = { x, y, 0, 0, 1 };

	return (wm_op(wm, (Window)id, wm_op_moveresize, args, cause));
}

int
x11_wm_resize(struct x11_wm *wm, unsigned long id, int width, int height,
    char **cause)
{
	long args[5] = { 0, 0, width, height, 2 };

	return (wm_op(wm, (Window)id, wm_op_moveresize, args, cause));
}
