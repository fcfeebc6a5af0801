/*
 * xevlog: a window that prints the input it receives, one line per event,
 * so tests can see clicks, scrolls, drags and keys without trusting bureaud.
 *
 * Usage: xevlog [-geometry WxH+X+Y] [-title T] [-m] [-f] [-s MS] [-P]
 *   -geometry  window size and place (default 400x300+0+0)
 *   -title     WM_NAME and _NET_WM_NAME (default "xevlog")
 *   -m         also report pointer motion
 *   -f         take the input focus once mapped (no window manager needed)
 *   -s MS      sleep MS milliseconds after each key press, as a slow
 *              application would (tests of typing into lagging clients)
 *   -P         do not answer _NET_WM_PING (like xterm); by default xevlog
 *              advertises and answers it in event order, as toolkits do
 * Uses $DISPLAY. Exits 0 on SIGTERM or SIGINT, 1 if it cannot start.
 *
 * Output, on stdout, line-buffered, one event per line, fields separated by
 * one space, numbers in decimal unless marked hex:
 *   ready <window-id as 0x hex>            once mapped and exposed
 *   key_press keysym=<name> code=<keycode> state=<0x hex> text=<text>
 *   key_release keysym=<name> code=<keycode> state=<0x hex> text=<text>
 *   button_press button=<n> x=<x> y=<y> root_x=<x> root_y=<y> state=<0x hex>
 *   button_release button=<n> x=<x> y=<y> root_x=<x> root_y=<y> state=<0x hex>
 *   motion x=<x> y=<y> root_x=<x> root_y=<y>       (only with -m)
 * keysym is XKeysymToString of the keysym the event produces with its state
 * (Shift applied: "A", "Ntilde", "U65E5"), or "NoSymbol". state is the X
 * modifier and button mask before the event (Shift 0x1, Lock 0x2, Control
 * 0x4, Mod1 0x8, Mod4 0x40, Button1 0x100). text is what the key types, in
 * UTF-8 (Xutf8LookupString with an input context for presses; for releases,
 * and if no input method opens, the keysym's own character), and is always
 * last: it runs to the end of the line and may be empty or contain spaces.
 * In text, backslash is written "\\", newline "\n", carriage return "\r",
 * tab "\t", and other control bytes "\xHH" (ctrl+d: "\x04").
 * Buttons 4/5 are scroll up/down, 6/7 scroll left/right.
 */
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/keysym.h>

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: xevlog [-geometry WxH+X+Y] [-title T] [-m] "
	    "[-f] [-s MS] [-P]\n");
	exit(1);
}

/* UTF-8 of a keysym that stands for one character: Latin-1 and the
 * 0x01000000 Unicode range; legacy keysyms outside both give "". */
static int
keysym_utf8(KeySym ks, char *out)
{
	uint32_t c;

	if ((ks >= 0x20 && ks <= 0x7e) || (ks >= 0xa0 && ks <= 0xff))
		c = (uint32_t)ks;
	else if (ks >= 0x01000100 && ks <= 0x0110ffff)
		c = (uint32_t)(ks - 0x01000000);
	else if (ks == XK_Return || ks == XK_KP_Enter)
		c = '\r';
	else if (ks == XK_Tab)
		c = '\t';
	else
		return 0;
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	} else if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	} else if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

static void
print_text(const char *s, int n)
{
	unsigned char c;
	int i;

	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == '\\')
			fputs("\\\\", stdout);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\r')
			fputs("\\r", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void
print_key(XKeyEvent *ev, XIC xic)
{
	char buf[256];
	KeySym ks = NoSymbol;
	const char *name;
	Status st;
	int n = 0;

	if (ev->type == KeyPress && xic != NULL) {
		n = Xutf8LookupString(xic, ev, buf, sizeof buf - 1, &ks, &st);
		if (st == XBufferOverflow || st == XLookupNone)
			n = 0;
		if (st != XLookupKeySym && st != XLookupBoth)
			ks = NoSymbol;
		if (ks == NoSymbol) {
			/* A keysym only when the IM gives none. */
			XLookupString(ev, NULL, 0, &ks, NULL);
		}
	} else {
		XLookupString(ev, NULL, 0, &ks, NULL);
		n = keysym_utf8(ks, buf);
		/* Control turns letters into control bytes, as for presses. */
		if (n == 1 && (ev->state & ControlMask) && buf[0] >= '@' &&
		    buf[0] <= '~' && buf[0] != '`')
			buf[0] = (char)(buf[0] & 0x1f);
	}
	name = ks == NoSymbol ? NULL : XKeysymToString(ks);
	printf("%s keysym=%s code=%u state=0x%x text=",
	    ev->type == KeyPress ? "key_press" : "key_release",
	    name != NULL ? name : "NoSymbol", ev->keycode, ev->state);
	print_text(buf, n);
	putchar('\n');
}

struct opts {
	const char *title, *geom;
	int motion, focus, slow_ms, no_ping;
};

static void
parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-geometry") == 0 && i + 1 < argc)
			o->geom = argv[++i];
		else if (strcmp(argv[i], "-title") == 0 && i + 1 < argc)
			o->title = argv[++i];
		else if (strcmp(argv[i], "-m") == 0)
			o->motion = 1;
		else if (strcmp(argv[i], "-f") == 0)
			o->focus = 1;
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			o->slow_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "-P") == 0)
			o->no_ping = 1;
		else
			usage();
	}
}

/* The window, its names and WM hints; protos gets WM_DELETE_WINDOW and
 * _NET_WM_PING. Returns -1 on an invalid geometry. */
static int
create_window(Display *dpy, const struct opts *o, int argc, char **argv,
    Atom protos[2], Window *out)
{
	unsigned int w = 400, h = 300;
	int x = 0, y = 0;
	XSetWindowAttributes swa;
	XWMHints hints;
	XSizeHints size;
	Window win;
	Atom net_name, utf8;
	long mask;

	if (o->geom != NULL) {
		int m = XParseGeometry(o->geom, &x, &y, &w, &h);
		if (m == NoValue || w == 0 || h == 0) {
			fprintf(stderr, "xevlog: invalid geometry '%s'\n",
			    o->geom);
			return -1;
		}
		if (m & XNegative)
			x += DisplayWidth(dpy, DefaultScreen(dpy)) - (int)w;
		if (m & YNegative)
			y += DisplayHeight(dpy, DefaultScreen(dpy)) - (int)h;
	}
	mask = KeyPressMask | KeyReleaseMask | ButtonPressMask |
	    ButtonReleaseMask | ExposureMask | StructureNotifyMask |
	    FocusChangeMask;
	if (o->motion)
		mask |= PointerMotionMask;
	memset(&swa, 0, sizeof swa);
	swa.background_pixel = WhitePixel(dpy, DefaultScreen(dpy));
	swa.event_mask = mask;
	win = XCreateWindow(dpy, DefaultRootWindow(dpy), x, y, w, h, 0,
	    CopyFromParent, InputOutput, CopyFromParent,
	    CWBackPixel | CWEventMask, &swa);

	memset(&size, 0, sizeof size);
	size.flags = USPosition | USSize;
	size.x = x, size.y = y, size.width = (int)w, size.height = (int)h;
	memset(&hints, 0, sizeof hints);
	hints.flags = InputHint | StateHint;
	hints.input = True;
	hints.initial_state = NormalState;
	Xutf8SetWMProperties(dpy, win, o->title, o->title, argv, argc, &size,
	    &hints, NULL);
	net_name = XInternAtom(dpy, "_NET_WM_NAME", False);
	utf8 = XInternAtom(dpy, "UTF8_STRING", False);
	XChangeProperty(dpy, win, net_name, utf8, 8, PropModeReplace,
	    (const unsigned char *)o->title, (int)strlen(o->title));
	protos[0] = XInternAtom(dpy, "WM_DELETE_WINDOW", False);
	protos[1] = XInternAtom(dpy, "_NET_WM_PING", False);
	XSetWMProtocols(dpy, win, protos, o->no_ping ? 1 : 2);
	*out = win;
	return 0;
}

/* Print an input event, answer the window manager's messages. */
static void
handle_event(Display *dpy, XEvent *ev, XIC xic, const struct opts *o,
    Atom wm_protocols, const Atom protos[2])
{
	struct timespec slow;

	switch (ev->type) {
	case KeyPress:
	case KeyRelease:
		print_key(&ev->xkey, xic);
		if (ev->type == KeyPress && o->slow_ms > 0) {
			slow.tv_sec = o->slow_ms / 1000;
			slow.tv_nsec = (o->slow_ms % 1000) * 1000000L;
			nanosleep(&slow, NULL);
		}
		break;
	case ButtonPress:
	case ButtonRelease:
		printf("%s button=%u x=%d y=%d root_x=%d root_y=%d "
		       "state=0x%x\n",
		    ev->type == ButtonPress ? "button_press" : "button_release",
		    ev->xbutton.button, ev->xbutton.x, ev->xbutton.y,
		    ev->xbutton.x_root, ev->xbutton.y_root, ev->xbutton.state);
		break;
	case MotionNotify:
		printf("motion x=%d y=%d root_x=%d root_y=%d\n", ev->xmotion.x,
		    ev->xmotion.y, ev->xmotion.x_root, ev->xmotion.y_root);
		break;
	case ClientMessage:
		if (ev->xclient.message_type != wm_protocols)
			break;
		if ((Atom)ev->xclient.data.l[0] == protos[0])
			stop = 1;
		/* EWMH: send the ping back to the root window. */
		if ((Atom)ev->xclient.data.l[0] == protos[1] && !o->no_ping) {
			ev->xclient.window = DefaultRootWindow(dpy);
			XSendEvent(dpy, ev->xclient.window, False,
			    SubstructureNotifyMask | SubstructureRedirectMask,
			    ev);
			XFlush(dpy);
		}
		break;
	}
}

int
main(int argc, char **argv)
{
	struct opts o = { .title = "xevlog" };
	int mapped = 0, exposed = 0, ready = 0;
	struct sigaction sa;
	struct pollfd pfd;
	Display *dpy;
	XEvent ev;
	Window win;
	Atom wm_protocols, protos[2];
	XIM xim = NULL;
	XIC xic = NULL;

	parse_args(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Text comes out in UTF-8 whatever the caller's locale. */
	if (setlocale(LC_ALL, "") == NULL ||
	    strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
		setlocale(LC_ALL, "C.UTF-8");
	if (!XSupportsLocale())
		setlocale(LC_ALL, "C");
	XSetLocaleModifiers("");

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if ((dpy = XOpenDisplay(NULL)) == NULL) {
		fprintf(stderr, "xevlog: cannot open display '%s'\n",
		    XDisplayName(NULL));
		return 1;
	}
	if (create_window(dpy, &o, argc, argv, protos, &win) != 0)
		return 1;
	wm_protocols = XInternAtom(dpy, "WM_PROTOCOLS", False);

	if ((xim = XOpenIM(dpy, NULL, NULL, NULL)) != NULL)
		xic = XCreateIC(xim, XNInputStyle,
		    XIMPreeditNothing | XIMStatusNothing, XNClientWindow, win,
		    XNFocusWindow, win, NULL);
	if (xic != NULL)
		XSetICFocus(xic);

	XMapRaised(dpy, win);
	XFlush(dpy);
	pfd.fd = ConnectionNumber(dpy);
	pfd.events = POLLIN;
	while (!stop) {
		if (XPending(dpy) == 0) {
			if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
				break;
			continue;
		}
		XNextEvent(dpy, &ev);
		if (XFilterEvent(&ev, None))
			continue;
		if (ev.type == MappingNotify)
			XRefreshKeyboardMapping(&ev.xmapping);
		else if (ev.type == MapNotify)
			mapped = 1;
		else if (ev.type == Expose)
			exposed = 1;
		else
			handle_event(dpy, &ev, xic, &o, wm_protocols, protos);
		if (!ready && mapped && exposed) {
			ready = 1;
			if (o.focus) {
				XSetInputFocus(dpy, win, RevertToParent,
				    CurrentTime);
				XSync(dpy, False);
			}
			printf("ready 0x%lx\n", win);
		}
	}
	if (xic != NULL)
		XDestroyIC(xic);
	if (xim != NULL)
		XCloseIM(xim);
	XDestroyWindow(dpy, win);
	XCloseDisplay(dpy);
	return 0;
}
