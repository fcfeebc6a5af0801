/*
 * x11/kbd: combo parsing (pure), and, when $DISPLAY names an X server
 * (a private Xvfb), typing into a window of our own on a second connection,
 * decoded the way applications decode it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <X11/XKBlib.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/keysym.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "x11/kbd.h"

static void
parse_ok(const char *combo, int n, ...)
{
	KeySym syms[X11_KBD_MAX_COMBO];
	char *cause = NULL;
	va_list ap;
	int got, i;

	if (x11_kbd_parse(combo, syms, X11_KBD_MAX_COMBO, &got, &cause) != 0)
		fail_msg("'%s': %s", combo, cause);
	if (got != n)
		fail_msg("'%s': %d keys, want %d", combo, got, n);
	va_start(ap, n);
	for (i = 0; i < n; i++) {
		KeySym want = va_arg(ap, KeySym);
		if (syms[i] != want)
			fail_msg("'%s' key %d: 0x%lx, want 0x%lx", combo, i,
			    syms[i], want);
	}
	va_end(ap);
}

static void
parse_fails(const char *combo, int max, const char *msg)
{
	KeySym syms[X11_KBD_MAX_COMBO];
	char *cause = NULL;
	int n;

	assert_int_equal(x11_kbd_parse(combo, syms, max, &n, &cause), -1);
	assert_non_null(cause);
	assert_string_equal(cause, msg);
	free(cause);
}

static void
test_parse_names(void **state)
{
	(void)state;
	parse_ok("ctrl+shift+t", 3, (KeySym)XK_Control_L, (KeySym)XK_Shift_L,
	    (KeySym)XK_t);
	parse_ok("Return", 1, (KeySym)XK_Return);
	parse_ok("super", 1, (KeySym)XK_Super_L);
	parse_ok("alt+F4", 2, (KeySym)XK_Alt_L, (KeySym)XK_F4);
	parse_ok("f12", 1, (KeySym)XK_F12);
	parse_ok("F24", 1, (KeySym)XK_F24);
	parse_ok("KP_Enter", 1, (KeySym)XK_KP_Enter);
	parse_ok("kp_enter", 1, (KeySym)XK_KP_Enter);
	parse_ok("Page_Up", 1, (KeySym)XK_Page_Up);
	parse_ok("PRINT", 1, (KeySym)XK_Print);
	parse_ok("BackSpace", 1, (KeySym)XK_BackSpace);
	parse_ok("ñ", 1, (KeySym)XK_ntilde);
	parse_ok("Ñ", 1, (KeySym)XK_Ntilde);
	parse_ok("日", 1, (KeySym)0x010065e5);
	parse_ok("€", 1, (KeySym)0x010020ac);
	parse_ok("A", 1, (KeySym)XK_A);
	parse_ok("a", 1, (KeySym)XK_a);
	parse_ok("1", 1, (KeySym)XK_1);
	parse_ok("/", 1, (KeySym)XK_slash);
	parse_ok(" ", 1, (KeySym)XK_space);
	parse_ok("ctrl + t", 2, (KeySym)XK_Control_L, (KeySym)XK_t);
	parse_ok("Ntilde", 1, (KeySym)XK_Ntilde);
	parse_ok("U20AC", 1, (KeySym)0x010020ac);
}

static void
test_parse_plus_and_case(void **state)
{
	(void)state;
	parse_ok("+", 1, (KeySym)XK_plus);
	parse_ok("ctrl++", 2, (KeySym)XK_Control_L, (KeySym)XK_plus);
	parse_ok("plus", 1, (KeySym)XK_plus);
	/* In a combo a capital names the key: ctrl+a, not ctrl+shift+a. */
	parse_ok("ctrl+A", 2, (KeySym)XK_Control_L, (KeySym)XK_a);
	parse_ok("ctrl+Ñ", 2, (KeySym)XK_Control_L, (KeySym)XK_ntilde);
	parse_ok("shift+A", 2, (KeySym)XK_Shift_L, (KeySym)XK_a);
	/* Keysym names keep their case: "ctrl+Home" is not "home". */
	parse_ok("ctrl+Home", 2, (KeySym)XK_Control_L, (KeySym)XK_Home);
}

static void
test_parse_aliases(void **state)
{
	(void)state;
	parse_ok("CTRL+ENTER", 2, (KeySym)XK_Control_L, (KeySym)XK_Return);
	parse_ok("Control", 1, (KeySym)XK_Control_L);
	parse_ok("CMD", 1, (KeySym)XK_Super_L);
	parse_ok("win", 1, (KeySym)XK_Super_L);
	parse_ok("meta", 1, (KeySym)XK_Meta_L);
	parse_ok("ALT", 1, (KeySym)XK_Alt_L);
	parse_ok("SPACE", 1, (KeySym)XK_space);
	parse_ok("BACKSPACE", 1, (KeySym)XK_BackSpace);
	parse_ok("bs", 1, (KeySym)XK_BackSpace);
	parse_ok("ESC", 1, (KeySym)XK_Escape);
	parse_ok("escape", 1, (KeySym)XK_Escape);
	parse_ok("PAGEUP", 1, (KeySym)XK_Page_Up);
	parse_ok("pgdn", 1, (KeySym)XK_Page_Down);
	parse_ok("PAGEDOWN", 1, (KeySym)XK_Page_Down);
	parse_ok("DELETE", 1, (KeySym)XK_Delete);
	parse_ok("del", 1, (KeySym)XK_Delete);
	parse_ok("ARROWLEFT", 1, (KeySym)XK_Left);
	parse_ok("ArrowRight", 1, (KeySym)XK_Right);
	parse_ok("ARROWUP", 1, (KeySym)XK_Up);
	parse_ok("arrowdown", 1, (KeySym)XK_Down);
	parse_ok("up", 1, (KeySym)XK_Up);
	parse_ok("HOME", 1, (KeySym)XK_Home);
	parse_ok("end", 1, (KeySym)XK_End);
	parse_ok("INSERT", 1, (KeySym)XK_Insert);
	parse_ok("ins", 1, (KeySym)XK_Insert);
	parse_ok("CAPSLOCK", 1, (KeySym)XK_Caps_Lock);
	parse_ok("TAB", 1, (KeySym)XK_Tab);
	parse_ok("ctrl+alt+shift+super+t", 5, (KeySym)XK_Control_L,
	    (KeySym)XK_Alt_L, (KeySym)XK_Shift_L, (KeySym)XK_Super_L,
	    (KeySym)XK_t);
}

static void
test_parse_errors(void **state)
{
	(void)state;
	parse_fails("", 16, "empty combo");
	parse_fails("ctrl+foo", 16, "unknown key 'foo' in 'ctrl+foo'");
	parse_fails("foo", 16, "unknown key 'foo' in 'foo'");
	parse_fails("ctrl+", 16, "empty key at the end of 'ctrl+'");
	parse_fails("ctrl+++", 16, "empty key at the end of 'ctrl+++'");
	parse_fails("ctrl++a", 16, "unknown key '+a' in 'ctrl++a'");
	parse_fails("F36", 16, "unknown key 'F36' in 'F36'");
	parse_fails("ctrl+\xff", 16, "unknown key '\xff' in 'ctrl+\xff'");
	parse_fails("a+b+c", 2, "too many keys in 'a+b+c': at most 2");
	parse_fails("a+b+c+d+e+f+g+h+i+j+k+l+m+n+o+p+q", 16,
	    "too many keys in 'a+b+c+d+e+f+g+h+i+j+k+l+m+n+o+p+q': at most "
	    "16");
}

/* ---- with an X server ---- */

struct xenv {
	Display *dpy; /* the typist */
	Display *app; /* the window that receives, as an application */
	Window win;
	struct x11_kbd *kbd;
	int spare;       /* keycodes with no keysyms before any test */
	int mappings;    /* MappingNotify events in the last collect */
	int mappings_in; /* of them, after its first key event */
	KeySym high[3];  /* typed in group 3 or 4 by the packed test */
	int nhigh;
};

/* Keycodes with no keysyms at all. */
static int
count_spare(Display *dpy)
{
	int min, max, per, kc, c, n = 0, empty;
	KeySym *map;

	XDisplayKeycodes(dpy, &min, &max);
	map = XGetKeyboardMapping(dpy, (KeyCode)min, max - min + 1, &per);
	for (kc = min; kc <= max; kc++) {
		empty = 1;
		for (c = 0; c < per; c++)
			empty &= map[(kc - min) * per + c] == NoSymbol;
		n += empty;
	}
	XFree(map);
	return n;
}

static int
ignore_xerror(Display *dpy, XErrorEvent *ev)
{
	(void)dpy;
	(void)ev;
	return 0;
}

static int
x_setup(void **state)
{
	struct xenv *x;
	char *cause = NULL;
	XEvent ev;

	if (getenv("DISPLAY") == NULL) {
		*state = NULL;
		return 0;
	}
	XSetErrorHandler(ignore_xerror);
	x = calloc(1, sizeof *x);
	assert_non_null(x);
	x->dpy = XOpenDisplay(NULL);
	x->app = XOpenDisplay(NULL);
	assert_non_null(x->dpy);
	assert_non_null(x->app);
	x->win = XCreateSimpleWindow(x->app, DefaultRootWindow(x->app), 0, 0,
	    200, 100, 0, 0, 0);
	XSelectInput(x->app, x->win,
	    KeyPressMask | KeyReleaseMask | StructureNotifyMask);
	XMapRaised(x->app, x->win);
	do
		XNextEvent(x->app, &ev);
	while (ev.type != MapNotify);
	XSetInputFocus(x->app, x->win, RevertToParent, CurrentTime);
	XSync(x->app, False);
	x->spare = count_spare(x->dpy);
	if (x11_kbd_new(x->dpy, &x->kbd, &cause) != 0)
		fail_msg("x11_kbd_new: %s", cause);
	*state = x;
	return 0;
}

static int
x_teardown(void **state)
{
	struct xenv *x = *state;

	if (x == NULL)
		return 0;
	x11_kbd_free(x->kbd, x->dpy);
	XCloseDisplay(x->app);
	XCloseDisplay(x->dpy);
	free(x);
	return 0;
}

#define NEED_X(x)                                                              \
	do {                                                                   \
		if ((x) == NULL)                                               \
			skip();                                                \
	} while (0)

/* Key events the window got, as keysyms with their state applied; presses
 * only unless releases is set. Stops once the queue stays empty. */
static int
collect(struct xenv *x, KeySym *out, unsigned *states, int max, int releases)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	XEvent ev;
	KeySym ks;
	int n = 0, idle = 0;
	char buf[16];

	XSync(x->dpy, False);
	x->mappings = x->mappings_in = 0;
	while (idle < 5) {
		if (!XPending(x->app)) {
			idle++;
			nanosleep(&ts, NULL);
			continue;
		}
		idle = 0;
		XNextEvent(x->app, &ev);
		if (ev.type == MappingNotify) {
			XRefreshKeyboardMapping(&ev.xmapping);
			x->mappings++;
			x->mappings_in += n > 0;
		}
		if (ev.type != KeyPress && !(releases && ev.type == KeyRelease))
			continue;
		XLookupString(&ev.xkey, buf, sizeof buf, &ks, NULL);
		if (n < max) {
			out[n] = ev.type == KeyRelease ? ~ks : ks;
			if (states != NULL)
				states[n] = ev.xkey.state;
		}
		n++;
	}
	return n;
}

/* Keycodes that carry ks at level 0 or 1. */
static int
count_keycodes_with(Display *dpy, KeySym ks)
{
	int min, max, per, kc, n = 0;
	KeySym *map;

	XDisplayKeycodes(dpy, &min, &max);
	map = XGetKeyboardMapping(dpy, (KeyCode)min, max - min + 1, &per);
	for (kc = min; kc <= max; kc++)
		if (map[(kc - min) * per] == ks ||
		    map[(kc - min) * per + 1] == ks)
			n++;
	XFree(map);
	return n;
}

static void
test_type_exact(void **state)
{
	struct xenv *x = *state;
	const char *text = "aA!ñÑ日 ß\tΣσ\n";
	KeySym want[] = { XK_a, XK_A, XK_exclam, XK_ntilde, XK_Ntilde,
		0x010065e5, XK_space, XK_ssharp, XK_Tab, 0x010003a3, 0x010003c3,
		XK_Return };
	KeySym got[64];
	KeySym shift_l = XK_Shift_L;
	char *cause = NULL;
	int n, i, j;

	NEED_X(x);
	if (x11_kbd_type(x->kbd, x->dpy, text, strlen(text), &cause) != 0)
		fail_msg("type: %s", cause);
	n = collect(x, got, NULL, 64, 0);
	/* Shift presses show up too: drop them. */
	for (i = j = 0; i < n && i < 64; i++)
		if (got[i] != shift_l)
			got[j++] = got[i];
	assert_int_equal(j, (int)(sizeof want / sizeof want[0]));
	for (i = 0; i < j; i++)
		if (got[i] != want[i])
			fail_msg("key %d: 0x%lx, want 0x%lx", i, got[i],
			    want[i]);
	/* ñ and Ñ share one keycode, bound [ntilde, Ntilde]. */
	assert_int_equal(count_keycodes_with(x->dpy, XK_Ntilde), 1);
}

static void
test_type_invalid_utf8(void **state)
{
	struct xenv *x = *state;
	KeySym got[8];
	char *cause = NULL;

	NEED_X(x);
	assert_int_equal(x11_kbd_type(x->kbd, x->dpy,
	                     "ab\xff"
	                     "cd",
	                     5, &cause),
	    -1);
	assert_string_equal(cause, "invalid utf-8 at byte 2");
	free(cause);
	cause = NULL;
	assert_int_equal(x11_kbd_type(x->kbd, x->dpy, "é\xe6\x97", 4, &cause),
	    -1);
	assert_string_equal(cause, "invalid utf-8 at byte 2");
	free(cause);
	cause = NULL;
	/* Overlong "/" and a surrogate. */
	assert_int_equal(x11_kbd_type(x->kbd, x->dpy, "\xc0\xaf", 2, &cause),
	    -1);
	free(cause);
	cause = NULL;
	assert_int_equal(
	    x11_kbd_type(x->kbd, x->dpy, "\xed\xa0\x80", 3, &cause), -1);
	free(cause);
	cause = NULL;
	assert_int_equal(x11_kbd_type(x->kbd, x->dpy, "a\x01", 2, &cause), -1);
	assert_string_equal(cause,
	    "cannot type control character U+0001 at byte 1");
	free(cause);
	assert_int_equal(collect(x, got, NULL, 8, 0), 0);
}

static void
test_combo_state(void **state)
{
	struct xenv *x = *state;
	KeySym got[16];
	unsigned st[16];
	char *cause = NULL;
	int n;

	NEED_X(x);
	if (x11_kbd_combo(x->kbd, x->dpy, "ctrl+shift+t", X11_KEY_TAP,
	        &cause) != 0)
		fail_msg("combo: %s", cause);
	n = collect(x, got, st, 16, 1);
	assert_int_equal(n, 6);
	assert_true(got[0] == XK_Control_L && st[0] == 0);
	assert_true(got[1] == XK_Shift_L && st[1] == ControlMask);
	assert_true(got[2] == XK_T && st[2] == (ControlMask | ShiftMask));
	assert_true(got[3] == ~(KeySym)XK_T);
	assert_true(got[4] == ~(KeySym)XK_Shift_L);
	assert_true(got[5] == ~(KeySym)XK_Control_L && st[5] == ControlMask);
	/* A lone capital is typed with Shift; a combo's is not. */
	if (x11_kbd_combo(x->kbd, x->dpy, "A", X11_KEY_TAP, &cause) != 0)
		fail_msg("combo: %s", cause);
	n = collect(x, got, st, 16, 0);
	assert_int_equal(n, 2);
	assert_true(got[1] == XK_A && st[1] == ShiftMask);
	if (x11_kbd_combo(x->kbd, x->dpy, "ctrl+A", X11_KEY_TAP, &cause) != 0)
		fail_msg("combo: %s", cause);
	n = collect(x, got, st, 16, 0);
	assert_int_equal(n, 2);
	assert_true(got[1] == XK_a && st[1] == ControlMask);
}

static void
test_hold_shift_then_type(void **state)
{
	struct xenv *x = *state;
	KeySym got[16];
	unsigned st[16];
	char *cause = NULL, keys[32];
	int n, i;

	NEED_X(x);
	if (x11_kbd_combo(x->kbd, x->dpy, "shift", X11_KEY_DOWN, &cause) != 0)
		fail_msg("down: %s", cause);
	/* The held Shift is let go for 'a' and taken back after. */
	if (x11_kbd_type(x->kbd, x->dpy, "aB", 2, &cause) != 0)
		fail_msg("type: %s", cause);
	if (x11_kbd_combo(x->kbd, x->dpy, "shift", X11_KEY_UP, &cause) != 0)
		fail_msg("up: %s", cause);
	n = collect(x, got, st, 16, 0);
	for (i = 0; i < n && i < 16; i++)
		if (got[i] == XK_a)
			assert_int_equal(st[i] & ShiftMask, 0);
		else if (got[i] == XK_B)
			assert_int_equal(st[i] & ShiftMask, ShiftMask);
	assert_true(n >= 4);
	/* Nothing left down. */
	XQueryKeymap(x->dpy, keys);
	for (i = 0; i < 32; i++)
		assert_int_equal(keys[i], 0);
}

static void
test_free_restores(void **state)
{
	struct xenv *x = *state;
	struct x11_kbd *k2;
	char *cause = NULL;
	const char *t = "ŒœЖ";

	NEED_X(x);
	if (x11_kbd_new(x->dpy, &k2, &cause) != 0)
		fail_msg("new: %s", cause);
	if (x11_kbd_type(k2, x->dpy, t, strlen(t), &cause) != 0)
		fail_msg("type: %s", cause);
	assert_int_equal(count_keycodes_with(x->dpy, 0x01000416), 1);
	x11_kbd_free(k2, x->dpy);
	assert_int_equal(count_keycodes_with(x->dpy, 0x01000416), 0);
	/* Another kbd's bindings (x->kbd's ñ) are left alone. */
	collect(x, (KeySym[64]){ 0 }, NULL, 64, 0);
}

/* Keycodes that carry ks in any column (any group, any level). */
static int
count_keycodes_anywhere(Display *dpy, KeySym ks)
{
	int min, max, per, kc, c, n = 0, has;
	KeySym *map;

	XDisplayKeycodes(dpy, &min, &max);
	map = XGetKeyboardMapping(dpy, (KeyCode)min, max - min + 1, &per);
	for (kc = min; kc <= max; kc++) {
		has = 0;
		for (c = 0; c < per; c++)
			has |= map[(kc - min) * per + c] == ks;
		n += has;
	}
	XFree(map);
	return n;
}

/* UTF-8 of code points first, first + step, ... (n of them). */
static char *
utf8_run(unsigned first, unsigned step, int n, KeySym *syms)
{
	char *buf, *p;
	unsigned cp;
	int i;

	buf = malloc((size_t)n * 4 + 1);
	assert_non_null(buf);
	p = buf;
	for (i = 0; i < n; i++) {
		cp = first + step * (unsigned)i;
		syms[i] = 0x01000000 + cp;
		if (cp < 0x800) {
			*p++ = (char)(0xc0 | cp >> 6);
			*p++ = (char)(0x80 | (cp & 0x3f));
		} else {
			*p++ = (char)(0xe0 | cp >> 12);
			*p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*p++ = (char)(0x80 | (cp & 0x3f));
		}
	}
	*p = '\0';
	return buf;
}

/* UTF-8 of a Unicode keysym of 3 bytes (CJK), in buf[4]. */
static char *
utf8_of(KeySym ks, char *buf)
{
	unsigned cp = (unsigned)(ks - 0x01000000);

	assert_true(cp >= 0x800 && cp < 0x10000);
	buf[0] = (char)(0xe0 | cp >> 12);
	buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
	buf[2] = (char)(0x80 | (cp & 0x3f));
	buf[3] = '\0';
	return buf;
}

/* Key presses the window got, Shift presses left out: must be want[].
 * Sets bit g of *groups for each group g seen; remembers a few keys typed
 * in groups 3 and 4. */
static void
expect_keys(struct xenv *x, const KeySym *want, int nwant, unsigned *groups)
{
	int g;

	KeySym got[512];
	unsigned st[512];
	int n, i, j;

	n = collect(x, got, st, 512, 0);
	assert_true(n <= 512);
	*groups = 0;
	for (i = j = 0; i < n; i++) {
		if (got[i] == XK_Shift_L)
			continue;
		if (j >= nwant)
			fail_msg("key %d: 0x%lx, want no more", j, got[i]);
		if (got[i] != want[j])
			fail_msg("key %d: 0x%lx, want 0x%lx", j, got[i],
			    want[j]);
		g = XkbGroupForCoreState(st[i]);
		*groups |= 1u << g;
		if (g >= 2 && x->nhigh < 3)
			x->high[x->nhigh++] = got[i];
		j++;
	}
	assert_int_equal(j, nwant);
}

/*
 * As many distinct caseless characters as the spare keycodes hold (150 on
 * Xvfb's 19) are typed exactly in one batch: all bindings are written
 * before the first key event, none between key events.
 */
static void
test_type_packed_one_batch(void **state)
{
	struct xenv *x = *state;
	KeySym want[150];
	XkbStateRec xs;
	unsigned groups;
	char *cause = NULL, *text;
	int n, kc, min, max, per, pairs;
	KeySym *map;

	NEED_X(x);
	n = 8 * x->spare - 2 < 150 ? 8 * x->spare - 2 : 150;
	if (n < 20)
		skip();
	text = utf8_run(0x5000, 3, n, want);
	if (x11_kbd_type(x->kbd, x->dpy, text, strlen(text), &cause) != 0)
		fail_msg("type: %s", cause);
	free(text);
	expect_keys(x, want, n, &groups);
	/* Each request reaches the window as a MappingNotify per keyboard
	 * device: what counts is that none came between key events. */
	assert_true(x->mappings > 0);
	assert_int_equal(x->mappings_in, 0);
	/* 150 characters on 19 keycodes: groups 3 and 4 were used. */
	if (n == 150)
		assert_int_equal(groups, 0xfu);
	/* Two caseless characters share a group, at levels 0 and 1. */
	XDisplayKeycodes(x->dpy, &min, &max);
	map = XGetKeyboardMapping(x->dpy, (KeyCode)min, max - min + 1, &per);
	pairs = 0;
	for (kc = min; kc <= max; kc++)
		pairs += map[(kc - min) * per] >= want[0] &&
		    map[(kc - min) * per] <= want[n - 1] &&
		    map[(kc - min) * per + 1] >= want[0] &&
		    map[(kc - min) * per + 1] <= want[n - 1] &&
		    map[(kc - min) * per] != map[(kc - min) * per + 1];
	XFree(map);
	assert_true(pairs > 0);
	/* The caller's group is back. */
	assert_int_equal(XkbGetState(x->dpy, XkbUseCoreKbd, &xs), Success);
	assert_int_equal(xs.locked_group, 0);
	assert_int_equal(xs.group, 0);
}

/* The caller has another group locked (a second layout): keys still come
 * out as asked, and the caller's group is locked again after. */
static void
test_type_caller_group(void **state)
{
	struct xenv *x = *state;
	KeySym want[12];
	XkbStateRec xs;
	unsigned groups;
	char *cause = NULL, *text;

	NEED_X(x);
	text = utf8_run(0x5000, 3, 12, want);
	XkbLockGroup(x->dpy, XkbUseCoreKbd, 1);
	XSync(x->dpy, False);
	assert_int_equal(XkbGetState(x->dpy, XkbUseCoreKbd, &xs), Success);
	if (xs.locked_group != 1) {
		/* One group on this keyboard: nothing to show. */
		free(text);
		skip();
	}
	if (x11_kbd_type(x->kbd, x->dpy, text, strlen(text), &cause) != 0)
		fail_msg("type: %s", cause);
	free(text);
	expect_keys(x, want, 12, &groups);
	assert_int_equal(x->mappings, 0); /* all bound already */
	assert_int_equal(XkbGetState(x->dpy, XkbUseCoreKbd, &xs), Success);
	assert_int_equal(xs.locked_group, 1);
	XkbLockGroup(x->dpy, XkbUseCoreKbd, 0);
	XSync(x->dpy, False);
}

/*
 * Caps Lock on: every character comes out exactly in any group, including
 * letters whose case the server's XKB does not know (σ, ж, ÿ, ß), because
 * Lock is off while typing; it is on again afterwards.
 */
static void
test_type_caps_lock_packed(void **state)
{
	struct xenv *x = *state;
	KeySym want[] = { XK_a, XK_B, XK_ntilde, XK_Ntilde, 0, 0, XK_oslash, 0,
		XK_eacute, XK_Eacute, XK_onehalf, 0x10003c3, 0x1000436,
		XK_ssharp, XK_ydiaeresis };
	char text[64], h[3][4];
	KeySym got[64];
	unsigned st[64], groups = 0;
	XkbStateRec xs;
	char *cause = NULL;
	int n, i, j;

	NEED_X(x);
	/* Three characters test_type_packed_one_batch typed in groups 3 and
	 * 4 (still bound there: nothing was bound since). */
	if (x->nhigh < 3)
		skip();
	want[4] = x->high[0];
	want[5] = x->high[1];
	want[7] = x->high[2];
	snprintf(text, sizeof text, "aBñÑ%s%sø%séÉ½σжßÿ",
	    utf8_of(want[4], h[0]), utf8_of(want[5], h[1]),
	    utf8_of(want[7], h[2]));
	XkbLockModifiers(x->dpy, XkbUseCoreKbd, LockMask, LockMask);
	XSync(x->dpy, False);
	collect(x, got, NULL, 64, 0); /* the Lock change itself */
	if (x11_kbd_type(x->kbd, x->dpy, text, strlen(text), &cause) != 0)
		fail_msg("type: %s", cause);
	n = collect(x, got, st, 64, 0);
	for (i = j = 0; i < n && i < 64; i++) {
		if (got[i] == XK_Shift_L)
			continue;
		assert_true(j < (int)(sizeof want / sizeof want[0]));
		if (got[i] != want[j])
			fail_msg("key %d: 0x%lx, want 0x%lx", j, got[i],
			    want[j]);
		assert_false(st[i] & LockMask);
		groups |= 1u << XkbGroupForCoreState(st[i]);
		j++;
	}
	assert_int_equal(j, (int)(sizeof want / sizeof want[0]));
	assert_true(groups & 0xcu);
	assert_int_equal(XkbGetState(x->dpy, XkbUseCoreKbd, &xs), Success);
	assert_true(xs.locked_mods & LockMask);
	XkbLockModifiers(x->dpy, XkbUseCoreKbd, LockMask, 0);
	XSync(x->dpy, False);
}

/* Freeing unbinds every group of every keycode it bound. */
static void
test_free_restores_groups(void **state)
{
	struct xenv *x = *state;
	char *cause = NULL;

	NEED_X(x);
	assert_true(count_keycodes_anywhere(x->dpy, 0x01005000) > 0);
	x11_kbd_free(x->kbd, x->dpy);
	x->kbd = NULL;
	assert_int_equal(count_keycodes_anywhere(x->dpy, 0x01005000), 0);
	assert_int_equal(count_keycodes_anywhere(x->dpy, 0x01005000 + 3 * 149),
	    0);
	assert_int_equal(count_spare(x->dpy), x->spare);
	if (x11_kbd_new(x->dpy, &x->kbd, &cause) != 0)
		fail_msg("x11_kbd_new: %s", cause);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_parse_names),
		cmocka_unit_test(test_parse_plus_and_case),
		cmocka_unit_test(test_parse_aliases),
		cmocka_unit_test(test_parse_errors),
	};
	const struct CMUnitTest withx[] = {
		cmocka_unit_test(test_type_exact),
		cmocka_unit_test(test_type_invalid_utf8),
		cmocka_unit_test(test_combo_state),
		cmocka_unit_test(test_hold_shift_then_type),
		cmocka_unit_test(test_free_restores),
		cmocka_unit_test(test_type_packed_one_batch),
		cmocka_unit_test(test_type_caller_group),
		cmocka_unit_test(test_type_caps_lock_packed),
		cmocka_unit_test(test_free_restores_groups),
	};
	int rc;

	rc = cmocka_run_group_tests_name("kbd parse", pure, NULL, NULL);
	rc += cmocka_run_group_tests_name("kbd on $DISPLAY", withx, x_setup,
	    x_teardown);
	return rc;
}
