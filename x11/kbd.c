/*
 * x11 keyboard: combo parsing, XTest key presses and exact Unicode typing.
 * See kbd.h for the contract; the notes here say how and why.
 *
 * The keyboard map is read again at the start of every call (one round
 * trip): another client (xdotool, setxkbmap, a second bureaud) may have
 * changed it, and a spare keycode someone else bound is no longer ours.
 *
 * A keysym is looked up at level 0 (no Shift) or level 1 (Shift) of the core
 * map. One that is not there goes to a spare keycode, a keycode with no
 * keysyms at all. The bindings of a batch are written with one
 * XChangeKeyboardMapping per run of adjacent keycodes, synced and read
 * back, and only then is the batch typed, at full speed.
 */
#include "x11/kbd.h"

#include <X11/XKBlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/*
 * A keycode rebound while an application has not yet looked up its earlier
 * presses is read with the new keysym: X applications translate keycodes
 * lazily, with whatever map they hold when they get to the event, and Xlib
 * fetches the new map as soon as it reads the MappingNotify from its socket,
 * possibly ahead of key events still queued. Nothing on the wire tells us
 * when a client has caught up, so a spare keycode is rebound only once this
 * long has passed since its last press. Within a batch no keycode changes,
 * so the wait happens only at batch boundaries (text with more distinct
 * unmapped characters than spare keycodes) and when a later call evicts a
 * binding typed moments before. Measured on Xvfb with xterm: 0 ms loses
 * characters at nearly every boundary, 10 ms loses none in 20 runs of 1200
 * characters; 40 ms leaves room for slower clients.
 */
#define KBD_REBIND_GRACE_NS (kbd_grace_ms() * 1000000LL)
static long long kbd_grace_ms(void) { const char *e = getenv("KBD_GRACE_MS"); return e ? atoll(e) : 40; }

struct kbd_slot {
	int spare;        /* no keysyms of its own: ours to bind */
	int bound;        /* we bound sym[] and the server still has it */
	KeySym sym[2];    /* level 0 and level 1 */
	uint64_t used;    /* LRU clock of the last use */
	uint64_t batch;   /* batch that needs this binding */
	int64_t typed_ns; /* monotonic time of the last press, 0 never */
	int held;         /* pressed by X11_KEY_DOWN, not yet released */
	int pending;      /* changed locally, not yet sent */
};

struct kbd_held {
	KeySym sym;
	KeyCode kc;
	int shift; /* we pressed Shift for it */
};

struct x11_kbd {
	int min_kc, max_kc, per; /* keycode range, keysyms per keycode */
	KeySym *map;             /* [(kc - min_kc) * per + col] */
	struct kbd_slot *slots;  /* [kc - min_kc] */
	uint64_t clock, batch;
	int64_t not_before; /* earliest time to send pending bindings */
	struct kbd_held held[X11_KBD_MAX_COMBO * 4];
	int nheld;
};

/* The Shift keys: ours to press, and the caller's that are down. */
struct kbd_shift {
	KeyCode ours;
	int ours_down;
	KeyCode user[8];
	int nuser;
	int user_up; /* we released the caller's Shift keys */
	int lock;    /* Lock is on: cased letters come out inverted */
};

static void
kbd_fail(char **cause, const char *fmt, ...)
{
	va_list ap;

	if (cause == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(cause, fmt, ap) == -1)
		*cause = NULL;
	va_end(ap);
}

static int64_t
kbd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
kbd_sleep_until(int64_t t)
{
	struct timespec ts;
	int64_t d;

	d = t - kbd_now_ns();
	if (d <= 0)
		return;
	ts.tv_sec = d / 1000000000;
	ts.tv_nsec = d % 1000000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * Decode one UTF-8 character at s[0..len-1]: its length, or 0 if invalid
 * (truncated, overlong, surrogate, beyond U+10FFFF).
 */
static size_t
kbd_utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
	uint32_t c, min;
	size_t n, i;

	if (len == 0)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4, c &= 0x07, min = 0x10000;
	} else
		return 0;
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* The keysym of a Unicode character: Latin-1 is itself, the rest 0x01000000
 * + code point (X's Unicode keysyms). */
static KeySym
kbd_ucs_keysym(uint32_t cp)
{
	if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff))
		return cp;
	return 0x01000000 + cp;
}

static const struct {
	const char *name;
	KeySym sym;
} kbd_aliases[] = {
	{"ctrl", XK_Control_L}, {"control", XK_Control_L},
	{"shift", XK_Shift_L}, {"alt", XK_Alt_L}, {"option", XK_Alt_L},
	{"super", XK_Super_L}, {"win", XK_Super_L}, {"cmd", XK_Super_L},
	{"command", XK_Super_L}, {"meta", XK_Meta_L},
	{"enter", XK_Return}, {"return", XK_Return},
	{"esc", XK_Escape}, {"escape", XK_Escape},
	{"del", XK_Delete}, {"delete", XK_Delete},
	{"bs", XK_BackSpace}, {"backspace", XK_BackSpace},
	{"tab", XK_Tab}, {"space", XK_space},
	{"pgup", XK_Page_Up}, {"pageup", XK_Page_Up}, {"page_up", XK_Page_Up},
	{"pgdn", XK_Page_Down}, {"pagedown", XK_Page_Down},
	{"page_down", XK_Page_Down},
	{"up", XK_Up}, {"down", XK_Down}, {"left", XK_Left}, {"right", XK_Right},
	{"arrowup", XK_Up}, {"arrowdown", XK_Down}, {"arrowleft", XK_Left},
	{"arrowright", XK_Right},
	{"home", XK_Home}, {"end", XK_End},
	{"insert", XK_Insert}, {"ins", XK_Insert},
	{"capslock", XK_Caps_Lock}, {"caps_lock", XK_Caps_Lock},
};

/* Resolve one key name; single is set when it was one character. */
static KeySym
kbd_name_keysym(const char *name, int *single)
{
	char buf[64];
	uint32_t cp;
	size_t i, len, n;
	KeySym ks;
	char *end;
	long f;

	*single = 0;
	len = strlen(name);
	for (i = 0; i < sizeof kbd_aliases / sizeof kbd_aliases[0]; i++)
		if (strcasecmp(name, kbd_aliases[i].name) == 0)
			return kbd_aliases[i].sym;
	if ((name[0] == 'f' || name[0] == 'F') && isdigit((unsigned char)name[1])) {
		errno = 0;
		f = strtol(name + 1, &end, 10);
		if (*end == '\0' && errno == 0 && f >= 1 && f <= 24 &&
		    name[1] != '0')
			return XK_F1 + (f - 1);
	}
	n = kbd_utf8_next((const unsigned char *)name, len, &cp);
	if (n != 0 && n == len && cp >= 0x20 && cp != 0x7f &&
	    !(cp >= 0x80 && cp < 0xa0)) {
		*single = 1;
		return kbd_ucs_keysym(cp);
	}
	if ((ks = XStringToKeysym(name)) != NoSymbol)
		return ks;
	/* "PRINT", "SCROLL_LOCK", "kp_enter": the keysym's own spelling. */
	if (len == 0 || len >= sizeof buf)
		return NoSymbol;
	for (i = 0; i <= len; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[0] = (char)toupper((unsigned char)buf[0]);
	for (i = 1; i < len; i++)
		if (buf[i - 1] == '_')
			buf[i] = (char)toupper((unsigned char)buf[i]);
	if ((ks = XStringToKeysym(buf)) != NoSymbol)
		return ks;
	if (strncmp(buf, "Kp_", 3) == 0) {
		buf[1] = 'P';
		if ((ks = XStringToKeysym(buf)) != NoSymbol)
			return ks;
	}
	return NoSymbol;
}

int
x11_kbd_parse(const char *combo, KeySym *syms, int max, int *n, char **cause)
{
	int single[X11_KBD_MAX_COMBO];
	const char *p, *start, *end;
	char name[256];
	KeySym lower, upper;
	size_t len;
	int count, i;

	*n = 0;
	if (combo == NULL || *combo == '\0') {
		kbd_fail(cause, "empty combo");
		return -1;
	}
	if (max > X11_KBD_MAX_COMBO)
		max = X11_KBD_MAX_COMBO;
	count = 0;
	p = combo;
	for (;;) {
		/* A name runs to the next '+'; a '+' where a name starts is
		 * the plus key itself ("+", "ctrl++"). */
		start = p;
		if (*p == '+')
			p++;
		while (*p != '\0' && *p != '+')
			p++;
		end = p;
		/* Blanks around names are dropped, but " " is the space. */
		while (end - start > 1 && isspace((unsigned char)*start))
			start++;
		while (end - start > 1 && isspace((unsigned char)end[-1]))
			end--;
		len = (size_t)(end - start);
		if (len == 0) {
			kbd_fail(cause, "empty key in '%s'", combo);
			return -1;
		}
		if (count == max) {
			kbd_fail(cause, "too many keys in '%s': at most %d",
			    combo, max);
			return -1;
		}
		if (len >= sizeof name) {
			kbd_fail(cause, "unknown key '%.*s...' in '%s'", 32,
			    start, combo);
			return -1;
		}
		memcpy(name, start, len);
		name[len] = '\0';
		syms[count] = kbd_name_keysym(name, &single[count]);
		if (syms[count] == NoSymbol) {
			kbd_fail(cause, "unknown key '%s' in '%s'", name, combo);
			return -1;
		}
		count++;
		if (*p == '\0')
			break;
		p++; /* the '+' between names */
		if (*p == '\0') {
			kbd_fail(cause, "empty key at the end of '%s'", combo);
			return -1;
		}
	}
	/* "ctrl+A" and OpenAI's ["CTRL", "A"] mean the A key, not
	 * ctrl+shift+a: Shift in a combo is asked for by name. */
	if (count > 1) {
		for (i = 0; i < count; i++) {
			if (!single[i])
				continue;
			XConvertCase(syms[i], &lower, &upper);
			if (lower != upper && syms[i] == upper)
				syms[i] = lower;
		}
	}
	*n = count;
	return 0;
}

static KeySym *
kbd_row(struct x11_kbd *kbd, int kc)
{
	return kbd->map + (size_t)(kc - kbd->min_kc) * (size_t)kbd->per;
}

static int
kbd_row_empty(const struct x11_kbd *kbd, const KeySym *row)
{
	int i;

	for (i = 0; i < kbd->per; i++)
		if (row[i] != NoSymbol)
			return 0;
	return 1;
}

/*
 * Read the server's map. Slots we bound stay ours while the server still has
 * our keysyms there; keycodes with no keysyms become spare.
 */
static int
kbd_refresh(struct x11_kbd *kbd, Display *dpy, char **cause)
{
	struct kbd_slot *s;
	KeySym *map, *row;
	int per, kc;

	map = XGetKeyboardMapping(dpy, (KeyCode)kbd->min_kc,
	    kbd->max_kc - kbd->min_kc + 1, &per);
	if (map == NULL || per < 2) {
		if (map != NULL)
			XFree(map);
		kbd_fail(cause, "cannot read the keyboard mapping");
		return -1;
	}
	if (kbd->map != NULL)
		XFree(kbd->map);
	kbd->map = map;
	kbd->per = per;
	for (kc = kbd->min_kc; kc <= kbd->max_kc; kc++) {
		s = &kbd->slots[kc - kbd->min_kc];
		row = kbd_row(kbd, kc);
		s->pending = 0;
		if (s->bound && row[0] == s->sym[0] && row[1] == s->sym[1]) {
			s->spare = 1;
			continue;
		}
		s->bound = 0;
		s->sym[0] = s->sym[1] = NoSymbol;
		s->spare = kbd_row_empty(kbd, row);
		if (!s->spare)
			s->held = 0;
	}
	return 0;
}

/*
 * Where ks is on the map: keycode and level (0 plain, 1 Shift). Level 0
 * anywhere wins over level 1, and a keycode of the server's own map over a
 * spare one, so bindings are made only for what the map lacks.
 */
static int
kbd_find(struct x11_kbd *kbd, KeySym ks, KeyCode *kc, int *level)
{
	int lv, k, pass;

	for (pass = 0; pass < 2; pass++) {
		for (lv = 0; lv < 2; lv++) {
			for (k = kbd->min_kc; k <= kbd->max_kc; k++) {
				if (kbd->slots[k - kbd->min_kc].spare != pass)
					continue;
				if (kbd_row(kbd, k)[lv] == ks) {
					*kc = (KeyCode)k;
					*level = lv;
					return 0;
				}
			}
		}
	}
	return -1;
}

/* A spare keycode to bind: an empty one, else the least recently used that
 * the current batch does not need and no held key is on. */
static struct kbd_slot *
kbd_pick(struct x11_kbd *kbd)
{
	struct kbd_slot *s, *best;
	int i, n;

	best = NULL;
	n = kbd->max_kc - kbd->min_kc + 1;
	for (i = 0; i < n; i++) {
		s = &kbd->slots[i];
		if (!s->spare || s->held || s->batch == kbd->batch)
			continue;
		if (!s->bound)
			return s;
		if (best == NULL || s->used < best->used)
			best = s;
	}
	return best;
}

/* Bind ks to slot s in the local copy; kbd_send writes it to the server. */
static void
kbd_bind(struct x11_kbd *kbd, struct kbd_slot *s, KeySym ks)
{
	KeySym lower, upper, *row;
	int i;

	XConvertCase(ks, &lower, &upper);
	if (lower != upper && (ks == lower || ks == upper)) {
		s->sym[0] = lower;
		s->sym[1] = upper;
	} else {
		s->sym[0] = s->sym[1] = ks;
	}
	if (s->bound && s->typed_ns != 0 &&
	    s->typed_ns + KBD_REBIND_GRACE_NS > kbd->not_before)
		kbd->not_before = s->typed_ns + KBD_REBIND_GRACE_NS;
	s->bound = 1;
	s->pending = 1;
	s->typed_ns = 0;
	i = (int)(s - kbd->slots);
	row = kbd_row(kbd, kbd->min_kc + i);
	memset(row, 0, sizeof *row * (size_t)kbd->per);
	row[0] = s->sym[0];
	row[1] = s->sym[1];
}

static void
kbd_drain_notify(Display *dpy)
{
	XEvent ev;

	/* Our own MappingNotify events would pile up on a Display nobody
	 * reads events from; handling them keeps Xlib's map current. */
	while (XCheckTypedEvent(dpy, MappingNotify, &ev))
		XRefreshKeyboardMapping(&ev.xmapping);
}

/*
 * Send the pending bindings: one XChangeKeyboardMapping per run of adjacent
 * keycodes (rewriting a keycode between two spare ones through the core
 * protocol could change its XKB type), sync, read back.
 */
static int
kbd_send(struct x11_kbd *kbd, Display *dpy, char **cause)
{
	KeySym want[2 * 256], syms[2 * 256];
	struct kbd_slot *s;
	int i, j, n, first, count;

	n = kbd->max_kc - kbd->min_kc + 1;
	count = 0;
	for (i = 0; i < n; i++) {
		s = &kbd->slots[i];
		want[2 * i] = s->sym[0];
		want[2 * i + 1] = s->sym[1];
		if (s->pending)
			count++;
	}
	if (count == 0)
		return 0;
	kbd_sleep_until(kbd->not_before);
	kbd->not_before = 0;
	for (i = 0; i < n; i = j) {
		if (!kbd->slots[i].pending) {
			j = i + 1;
			continue;
		}
		first = i;
		for (j = i; j < n && kbd->slots[j].pending; j++) {
			syms[2 * (j - first)] = kbd->slots[j].sym[0];
			syms[2 * (j - first) + 1] = kbd->slots[j].sym[1];
		}
		XChangeKeyboardMapping(dpy, kbd->min_kc + first, 2, syms,
		    j - first);
	}
	XSync(dpy, False);
	kbd_drain_notify(dpy);
	if (kbd_refresh(kbd, dpy, cause) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (want[2 * i] == NoSymbol)
			continue;
		s = &kbd->slots[i];
		if (!s->bound) {
			kbd_fail(cause, "keycode %d did not take keysym 0x%lx",
			    kbd->min_kc + i, (unsigned long)want[2 * i]);
			return -1;
		}
	}
	return 0;
}

/* Shift keys and Lock, read from the server at the start of a call. */
static int
kbd_shift_init(struct x11_kbd *kbd, Display *dpy, struct kbd_shift *sh,
    char **cause)
{
	XModifierKeymap *mm;
	XkbStateRec st;
	char down[32];
	KeyCode kc;
	int i, level;

	memset(sh, 0, sizeof *sh);
	if ((mm = XGetModifierMapping(dpy)) == NULL) {
		kbd_fail(cause, "cannot read the modifier mapping");
		return -1;
	}
	XQueryKeymap(dpy, down);
	for (i = 0; i < mm->max_keypermod; i++) {
		kc = mm->modifiermap[ShiftMapIndex * mm->max_keypermod + i];
		if (kc == 0)
			continue;
		if (sh->ours == 0)
			sh->ours = kc;
		if ((down[kc / 8] & (1 << (kc % 8))) &&
		    sh->nuser < (int)(sizeof sh->user / sizeof sh->user[0]))
			sh->user[sh->nuser++] = kc;
	}
	XFreeModifiermap(mm);
	/* Prefer the key that says Shift_L: a modmap entry may be odd. */
	if (kbd_find(kbd, XK_Shift_L, &kc, &level) == 0 && level == 0)
		sh->ours = kc;
	if (sh->ours == 0) {
		kbd_fail(cause, "no shift key in the modifier mapping");
		return -1;
	}
	if (XkbGetState(dpy, XkbUseCoreKbd, &st) == Success)
		sh->lock = (st.mods & LockMask) != 0;
	return 0;
}

static void
kbd_shift_set(Display *dpy, struct kbd_shift *sh, int on)
{
	int i, is_on;

	is_on = sh->ours_down || (sh->nuser > 0 && !sh->user_up);
	if (on == is_on)
		return;
	if (on) {
		XTestFakeKeyEvent(dpy, sh->ours, True, CurrentTime);
		sh->ours_down = 1;
		return;
	}
	if (sh->ours_down) {
		XTestFakeKeyEvent(dpy, sh->ours, False, CurrentTime);
		sh->ours_down = 0;
	}
	if (!sh->user_up) {
		for (i = 0; i < sh->nuser; i++)
			XTestFakeKeyEvent(dpy, sh->user[i], False, CurrentTime);
		sh->user_up = 1;
	}
}

/* Leave Shift as the caller had it. */
static void
kbd_shift_restore(Display *dpy, struct kbd_shift *sh)
{
	int i;

	if (sh->ours_down)
		XTestFakeKeyEvent(dpy, sh->ours, False, CurrentTime);
	sh->ours_down = 0;
	if (sh->user_up)
		for (i = 0; i < sh->nuser; i++)
			XTestFakeKeyEvent(dpy, sh->user[i], True, CurrentTime);
	sh->user_up = 0;
}

/* Shift for ks at this level: Lock inverts letters that have a case. */
static int
kbd_wants_shift(const struct kbd_shift *sh, KeySym ks, int level)
{
	KeySym lower, upper;

	if (IsModifierKey(ks))
		return -1; /* leave Shift alone */
	if (sh->lock) {
		XConvertCase(ks, &lower, &upper);
		if (lower != upper)
			return !level;
	}
	return level;
}

/* Stamp the slots of the batch just typed; the grace counts from here. */
static void
kbd_stamp(struct x11_kbd *kbd)
{
	int64_t now;
	int i, n;

	now = kbd_now_ns();
	n = kbd->max_kc - kbd->min_kc + 1;
	for (i = 0; i < n; i++)
		if (kbd->slots[i].spare && kbd->slots[i].batch == kbd->batch)
			kbd->slots[i].typed_ns = now;
}

/* Keys just released by X11_KEY_UP: the grace counts from the release. */
static void
kbd_stamp_held_up(struct x11_kbd *kbd, const KeySym *syms, int n)
{
	KeyCode kc;
	int64_t now;
	int i, level;

	now = kbd_now_ns();
	for (i = 0; i < n; i++)
		if (kbd_find(kbd, syms[i], &kc, &level) == 0 &&
		    kbd->slots[kc - kbd->min_kc].spare)
			kbd->slots[kc - kbd->min_kc].typed_ns = now;
}

/*
 * The keycode and level for ks, binding it to a spare keycode in the local
 * map if the map lacks it. Returns 1 when no spare keycode is free in this
 * batch (the caller sends and types what it has, then starts a new batch).
 */
static int
kbd_resolve(struct x11_kbd *kbd, KeySym ks, KeyCode *kc, int *level)
{
	struct kbd_slot *s;

	if (kbd_find(kbd, ks, kc, level) != 0) {
		if ((s = kbd_pick(kbd)) == NULL)
			return 1;
		kbd_bind(kbd, s, ks);
		if (kbd_find(kbd, ks, kc, level) != 0)
			return 1; /* cannot happen: just bound */
	}
	s = &kbd->slots[*kc - kbd->min_kc];
	if (s->spare) {
		s->batch = kbd->batch;
		s->used = ++kbd->clock;
	}
	return 0;
}

int
x11_kbd_new(Display *dpy, struct x11_kbd **out, char **cause)
{
	struct x11_kbd *kbd;
	int ev, err, maj, min;

	*out = NULL;
	if (!XTestQueryExtension(dpy, &ev, &err, &maj, &min)) {
		kbd_fail(cause, "the X server has no XTEST extension");
		return -1;
	}
	if ((kbd = calloc(1, sizeof *kbd)) == NULL) {
		kbd_fail(cause, "out of memory");
		return -1;
	}
	XDisplayKeycodes(dpy, &kbd->min_kc, &kbd->max_kc);
	if (kbd->min_kc < 8 || kbd->max_kc > 255 ||
	    kbd->max_kc < kbd->min_kc) {
		kbd_fail(cause, "odd keycode range %d..%d", kbd->min_kc,
		    kbd->max_kc);
		goto fail;
	}
	kbd->slots = calloc((size_t)(kbd->max_kc - kbd->min_kc + 1),
	    sizeof *kbd->slots);
	if (kbd->slots == NULL) {
		kbd_fail(cause, "out of memory");
		goto fail;
	}
	kbd->batch = 1;
	if (kbd_refresh(kbd, dpy, cause) != 0)
		goto fail;
	*out = kbd;
	return 0;
fail:
	free(kbd->slots);
	free(kbd);
	return -1;
}

void
x11_kbd_free(struct x11_kbd *kbd, Display *dpy)
{
	KeySym none[2] = {NoSymbol, NoSymbol};
	struct kbd_slot *s;
	int64_t last;
	int i, n, any;

	if (kbd == NULL)
		return;
	if (dpy != NULL) {
		/* Release what X11_KEY_DOWN left down. */
		for (i = kbd->nheld - 1; i >= 0; i--) {
			XTestFakeKeyEvent(dpy, kbd->held[i].kc, False,
			    CurrentTime);
			if (kbd->held[i].shift)
				XTestFakeKeyEvent(dpy, kbd->held[i].shift,
				    False, CurrentTime);
		}
		XSync(dpy, False);
		/* Only keycodes that still carry our keysyms are ours. */
		if (kbd_refresh(kbd, dpy, NULL) == 0) {
			n = kbd->max_kc - kbd->min_kc + 1;
			last = 0;
			any = 0;
			for (i = 0; i < n; i++) {
				s = &kbd->slots[i];
				if (s->bound && s->typed_ns > last)
					last = s->typed_ns;
				any |= s->bound;
			}
			if (any) {
				if (last != 0)
					kbd_sleep_until(
					    last + KBD_REBIND_GRACE_NS);
				for (i = 0; i < n; i++)
					if (kbd->slots[i].bound)
						XChangeKeyboardMapping(dpy,
						    kbd->min_kc + i, 2, none,
						    1);
				XSync(dpy, False);
				kbd_drain_notify(dpy);
			}
		}
	}
	if (kbd->map != NULL)
		XFree(kbd->map);
	free(kbd->slots);
	free(kbd);
}

/* Forget a held key and its binding pin. */
static void
kbd_unhold(struct x11_kbd *kbd, int i)
{
	KeyCode kc;
	int j;

	kc = kbd->held[i].kc;
	memmove(&kbd->held[i], &kbd->held[i + 1],
	    sizeof kbd->held[0] * (size_t)(kbd->nheld - i - 1));
	kbd->nheld--;
	for (j = 0; j < kbd->nheld; j++)
		if (kbd->held[j].kc == kc)
			return;
	kbd->slots[kc - kbd->min_kc].held = 0;
}

int
x11_kbd_combo(struct x11_kbd *kbd, Display *dpy, const char *combo,
    enum x11_key_mode mode, char **cause)
{
	KeySym syms[X11_KBD_MAX_COMBO];
	KeyCode kcs[X11_KBD_MAX_COMBO];
	int level[X11_KBD_MAX_COMBO], shift[X11_KBD_MAX_COMBO];
	struct kbd_shift sh;
	int n, i, j, shift_on;

	if (x11_kbd_parse(combo, syms, X11_KBD_MAX_COMBO, &n, cause) != 0)
		return -1;
	if (kbd_refresh(kbd, dpy, cause) != 0)
		return -1;
	if (mode == X11_KEY_UP) {
		for (i = n - 1; i >= 0; i--) {
			for (j = kbd->nheld - 1; j >= 0; j--)
				if (kbd->held[j].sym == syms[i])
					break;
			if (j >= 0) {
				XTestFakeKeyEvent(dpy, kbd->held[j].kc, False,
				    CurrentTime);
				if (kbd->held[j].shift)
					XTestFakeKeyEvent(dpy,
					    kbd->held[j].shift, False,
					    CurrentTime);
				kbd_unhold(kbd, j);
			} else if (kbd_find(kbd, syms[i], &kcs[i],
			    &level[i]) == 0) {
				XTestFakeKeyEvent(dpy, kcs[i], False,
				    CurrentTime);
			}
		}
		XSync(dpy, False);
		kbd_stamp_held_up(kbd, syms, n);
		return 0;
	}
	if (mode == X11_KEY_DOWN &&
	    kbd->nheld + n > (int)(sizeof kbd->held / sizeof kbd->held[0])) {
		kbd_fail(cause, "too many keys held down");
		return -1;
	}
	if (kbd_shift_init(kbd, dpy, &sh, cause) != 0)
		return -1;
	kbd->batch++;
	for (i = 0; i < n; i++) {
		if (kbd_resolve(kbd, syms[i], &kcs[i], &level[i]) != 0) {
			kbd_fail(cause, "no spare keycode left for '%s'",
			    combo);
			kbd_refresh(kbd, dpy, NULL);
			return -1;
		}
	}
	if (kbd_send(kbd, dpy, cause) != 0)
		return -1;
	/* Shift is added for a key only at level 1 and only if nothing holds
	 * it yet; a combo never releases a Shift the caller holds. */
	shift_on = sh.nuser > 0;
	for (i = 0; i < n; i++) {
		shift[i] = 0;
		if (syms[i] == XK_Shift_L || syms[i] == XK_Shift_R)
			shift_on = 1;
		/* Keys, not characters: Caps Lock does not matter here. */
		if (level[i] == 1 && !IsModifierKey(syms[i]) && !shift_on) {
			XTestFakeKeyEvent(dpy, sh.ours, True, CurrentTime);
			shift[i] = sh.ours;
			shift_on = 1;
		}
		XTestFakeKeyEvent(dpy, kcs[i], True, CurrentTime);
		if (mode == X11_KEY_DOWN) {
			kbd->held[kbd->nheld].sym = syms[i];
			kbd->held[kbd->nheld].kc = kcs[i];
			kbd->held[kbd->nheld].shift = shift[i];
			kbd->nheld++;
			if (kbd->slots[kcs[i] - kbd->min_kc].spare)
				kbd->slots[kcs[i] - kbd->min_kc].held = 1;
		}
	}
	if (mode == X11_KEY_TAP) {
		for (i = n - 1; i >= 0; i--) {
			XTestFakeKeyEvent(dpy, kcs[i], False, CurrentTime);
			if (shift[i])
				XTestFakeKeyEvent(dpy, shift[i], False,
				    CurrentTime);
		}
	}
	XSync(dpy, False);
	kbd_stamp(kbd);
	return 0;
}

/* Press and release one batch of planned keys. */
static void
kbd_type_batch(Display *dpy, struct kbd_shift *sh, const KeyCode *kcs,
    const signed char *shift, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (shift[i] >= 0)
			kbd_shift_set(dpy, sh, shift[i]);
		XTestFakeKeyEvent(dpy, kcs[i], True, CurrentTime);
		XTestFakeKeyEvent(dpy, kcs[i], False, CurrentTime);
	}
}

int
x11_kbd_type(struct x11_kbd *kbd, Display *dpy, const char *utf8,
    size_t len, char **cause)
{
	const unsigned char *s = (const unsigned char *)utf8;
	struct kbd_shift sh;
	KeySym *syms = NULL;
	KeyCode *kcs = NULL;
	signed char *shift = NULL;
	size_t i, k, n, nsyms, start;
	uint32_t cp;
	int level, r, typing = 0;

	/* Decode everything first: bad input types nothing. */
	if ((syms = malloc(sizeof *syms * (len + 1))) == NULL) {
		kbd_fail(cause, "out of memory");
		goto fail;
	}
	nsyms = 0;
	for (i = 0; i < len; i += n) {
		if ((n = kbd_utf8_next(s + i, len - i, &cp)) == 0) {
			kbd_fail(cause, "invalid utf-8 at byte %zu", i);
			goto fail;
		}
		if (cp == '\n')
			syms[nsyms++] = XK_Return;
		else if (cp == '\r') {
			if (i + 1 < len && s[i + 1] == '\n')
				continue; /* "\r\n" is one Return */
			syms[nsyms++] = XK_Return;
		} else if (cp == '\t')
			syms[nsyms++] = XK_Tab;
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
			kbd_fail(cause,
			    "cannot type control character U+%04X at byte %zu",
			    (unsigned)cp, i);
			goto fail;
		} else
			syms[nsyms++] = kbd_ucs_keysym(cp);
	}
	kcs = malloc(sizeof *kcs * (nsyms + 1));
	shift = malloc(sizeof *shift * (nsyms + 1));
	if (kcs == NULL || shift == NULL) {
		kbd_fail(cause, "out of memory");
		goto fail;
	}
	if (kbd_refresh(kbd, dpy, cause) != 0)
		goto fail;
	if (kbd_shift_init(kbd, dpy, &sh, cause) != 0)
		goto fail;
	typing = 1;
	kbd->batch++;
	start = 0;
	for (k = 0; k < nsyms; k++) {
		r = kbd_resolve(kbd, syms[k], &kcs[k], &level);
		if (r == 1) {
			/* Out of spare keycodes: type what is planned, then
			 * start a batch that may rebind the ones just used. */
			if (kbd_send(kbd, dpy, cause) != 0)
				goto fail;
			kbd_type_batch(dpy, &sh, kcs + start, shift + start,
			    k - start);
			XSync(dpy, False);
			kbd_stamp(kbd);
			kbd->batch++;
			start = k;
			r = kbd_resolve(kbd, syms[k], &kcs[k], &level);
		}
		if (r != 0) {
			kbd_fail(cause, "no spare keycode to bind U+%04lX",
			    (unsigned long)(syms[k] >= 0x01000000
				    ? syms[k] - 0x01000000 : syms[k]));
			goto fail;
		}
		shift[k] = (signed char)kbd_wants_shift(&sh, syms[k], level);
	}
	if (kbd_send(kbd, dpy, cause) != 0)
		goto fail;
	kbd_type_batch(dpy, &sh, kcs + start, shift + start, nsyms - start);
	kbd_shift_restore(dpy, &sh);
	XSync(dpy, False);
	kbd_stamp(kbd);
	free(syms);
	free(kcs);
	free(shift);
	return 0;
fail:
	if (typing) {
		/* Every key went down and up in pairs; only Shift can be
		 * left as it should not. */
		kbd_shift_restore(dpy, &sh);
		XSync(dpy, False);
		kbd_refresh(kbd, dpy, NULL);
	}
	free(syms);
	free(kcs);
	free(shift);
	return -1;
}
