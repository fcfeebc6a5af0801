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
 *
 * A spare keycode holds up to 4 XKB groups of 2 levels, 8 cells: a letter
 * with a case takes a whole group ([lower, upper], both forms typable), two
 * caseless characters share one (the second typed with Shift). The core
 * request takes them as G1L1 G1L2 G2L1 G2L2 G3L1 G3L2 G4L1 G4L2 and the
 * server turns that into XKB groups of type TWO_LEVEL or ALPHABETIC. A
 * character in group g is typed with that group locked (XkbLockGroup) and
 * the caller's group locked again after: key events carry their group in
 * their state, so an application that decodes them late still gets them
 * right as long as the cells it decodes are unchanged. Clients of the core
 * protocol only (no XKB in their Xlib) see groups 3 and 4 as group 2, so
 * the lowest free group is always filled first: 76 characters (19 spare
 * keycodes on Xvfb, 2 groups of 2) before anything lands in group 3.
 */
#include "x11/kbd.h"
#include "common/utf8.h"
#include "x11/clock.h"
#include "x11/keyname.h"
#include "x11/xerr.h"

#include <X11/XKBlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>

#include <ctype.h>
#include <errno.h>
#include <poll.h>
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
 * possibly ahead of key events still queued (any round trip the application
 * makes reads them). So a spare keycode pressed recently is rebound only
 * once the focused application has worked through its queue: we send it an
 * EWMH _NET_WM_PING, which toolkits answer in event order, so the answer
 * proves the earlier keys were translated. Clients without _NET_WM_PING
 * (xterm, plain Xlib) get a fixed wait instead: measured on Xvfb with a
 * fresh xterm drawing CJK (fallback fonts load on first use), 0 ms loses
 * characters at nearly every batch boundary, 40 ms in one run of three,
 * 150 ms in 2 of 20 runs of 1300 characters (the machine busy with other
 * X tests): a guess that lowers the odds, not a guarantee. Within a batch
 * no cell changes, and filling an empty cell of a keycode leaves the cells
 * typed before as they were, so any wait happens only at batch boundaries
 * (text with more distinct unmapped characters than spare cells: 152 on
 * Xvfb) or when a call evicts a binding typed moments before.
 */
#define KBD_REBIND_GRACE_NS (150LL * 1000 * 1000)
#define KBD_PING_TIMEOUT_MS 2000

/* XKB's most groups per key; a cell is group g, level l at [2 * g + l]. */
#define KBD_GROUPS 4
#define KBD_CELLS  (2 * KBD_GROUPS)

/*
 * A group holds one letter with a case ([lower, upper], cased bit set) or
 * caseless characters; a caseless group whose level 1 repeats level 0 has
 * that level free (Shift gives the same character, as before packing).
 */
struct kbd_slot {
	int spare;             /* no keysyms of its own: ours to bind */
	int bound;             /* we bound sym[] and the server still has it */
	int ngroups;           /* groups bound, all below it non-empty */
	unsigned cased;        /* bit g: group g is [lower, upper] */
	KeySym sym[KBD_CELLS]; /* what the keycode carries */
	uint64_t used[KBD_CELLS];    /* LRU clock of the last use */
	uint64_t batch[KBD_CELLS];   /* batch that needs this cell */
	int64_t typed_ns[KBD_CELLS]; /* monotonic time of the last press */
	int held;    /* pressed by X11_KEY_DOWN, not yet released */
	int pending; /* changed locally, not yet sent */
};

/* Where a keysym is: keycode, XKB group (0 for the server's own keys) and
 * level. */
struct kbd_key {
	KeyCode kc;
	int group, level;
};

struct kbd_held {
	KeySym sym;
	KeyCode kc;
	int shift; /* we pressed Shift for it */
};

struct x11_kbd {
	int min_kc, max_kc, per; /* keycode range, keysyms per keycode */
	int groups;              /* groups we bind: 4, or 1 without XKB */
	int group_dirty;         /* we locked a group not yet given back */
	int group_orig;          /* the locked group to give back */
	KeySym *map;             /* [(kc - min_kc) * per + col] */
	struct kbd_slot *slots;  /* [kc - min_kc] */
	uint64_t clock, batch;
	int64_t not_before; /* earliest time to send pending bindings */
	struct kbd_held held[X11_KBD_MAX_COMBO * 4];
	int nheld;
	Display *ping; /* own connection for _NET_WM_PING, or NULL */
	Atom wm_protocols, wm_state, net_wm_ping;
	unsigned long ping_serial;
};

/* The Shift keys: ours to press, and the caller's that are down. */
struct kbd_shift {
	KeyCode ours;
	int ours_down;
	KeyCode user[8];
	int nuser;
	int user_up; /* we released the caller's Shift keys */
	int lock;    /* Lock is on: cased letters come out inverted */
	int group;   /* effective XKB group now */
};

static void
kbd_sleep_until(int64_t t)
{
	struct timespec ts;
	int64_t d;

	d = t - (int64_t)x11_now_ns();
	if (d <= 0)
		return;
	ts.tv_sec = d / 1000000000;
	ts.tv_nsec = d % 1000000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
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

/* Does the server's row carry what we bound to s? Columns past our groups
 * may hold the server's copies of group 1 (XKB protocol 12.4). */
static int
kbd_row_is(const struct x11_kbd *kbd, const KeySym *row,
    const struct kbd_slot *s)
{
	int c;

	for (c = 0; c < 2 * s->ngroups; c++)
		if ((c < kbd->per ? row[c] : NoSymbol) != s->sym[c])
			return 0;
	return s->ngroups > 0;
}

/* Forget what we bound to s. */
static void
kbd_slot_clear(struct kbd_slot *s)
{
	s->bound = 0;
	s->ngroups = 0;
	s->cased = 0;
	memset(s->sym, 0, sizeof s->sym);
	memset(s->batch, 0, sizeof s->batch);
	memset(s->typed_ns, 0, sizeof s->typed_ns);
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
		x11_fail(cause, "cannot read the keyboard mapping");
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
		if (s->bound && kbd_row_is(kbd, row, s)) {
			s->spare = 1;
			continue;
		}
		kbd_slot_clear(s);
		s->spare = kbd_row_empty(kbd, row);
		if (!s->spare)
			s->held = 0;
	}
	return 0;
}

/* Level 1 of caseless group g repeats level 0: free to bind. */
static int
kbd_filler(const struct kbd_slot *s, int g)
{
	return !(s->cased & (1u << g)) && s->sym[2 * g + 1] == s->sym[2 * g];
}

/* A keysym that stands for a character (what typing binds): safe to share
 * a group with, unlike keypad keys (their type depends on NumLock) or
 * modifiers a combo bound. */
static int
kbd_is_char(KeySym ks)
{
	return (ks >= 0x20 && ks <= 0x7e) || (ks >= 0xa0 && ks <= 0xff) ||
	    (ks >= 0x01000100 && ks <= 0x0110ffff);
}

/*
 * Where ks is: level 0 anywhere on the server's own keys, then level 1 there
 * (group 1, core columns 0 and 1), then our cells, lowest group first. With
 * g1 (combos, which cannot lock a group while a key is held) only group 1 of
 * our cells counts, and a caseless character only at level 0: a combo adds
 * Shift only for keys that need it.
 */
static int
kbd_find(struct x11_kbd *kbd, KeySym ks, int g1, struct kbd_key *key)
{
	struct kbd_slot *s;
	int g, lv, k;

	for (lv = 0; lv < 2; lv++) {
		for (k = kbd->min_kc; k <= kbd->max_kc; k++) {
			if (kbd->slots[k - kbd->min_kc].spare ||
			    kbd_row(kbd, k)[lv] != ks)
				continue;
			key->kc = (KeyCode)k;
			key->group = 0;
			key->level = lv;
			return 0;
		}
	}
	for (g = 0; g < (g1 ? 1 : kbd->groups); g++) {
		for (lv = 0; lv < 2; lv++) {
			for (k = kbd->min_kc; k <= kbd->max_kc; k++) {
				s = &kbd->slots[k - kbd->min_kc];
				if (!s->spare || g >= s->ngroups ||
				    s->sym[2 * g + lv] != ks)
					continue;
				if (lv == 1 &&
				    (kbd_filler(s, g) ||
				        (g1 && !(s->cased & (1u << g)))))
					continue;
				key->kc = (KeyCode)k;
				key->group = g;
				key->level = lv;
				return 0;
			}
		}
	}
	return -1;
}

/*
 * The cells a binding at (g, l) would overwrite: a whole group for a letter
 * with a case, for a combo, for a new group and over a letter with a case;
 * else the one cell, and a filler at level 1 with level 0.
 */
static unsigned
kbd_cells(const struct kbd_slot *s, int g, int l, int whole)
{
	if (whole || g >= s->ngroups || (s->cased & (1u << g)))
		return 3u << (2 * g);
	if (l == 0 && kbd_filler(s, g))
		return 3u << (2 * g);
	return 1u << (2 * g + l);
}

/*
 * How good a place (g, l) of s is for binding ks, lower is better, or
 * UINT64_MAX if it cannot be had: free cells before evictions, cells whose
 * change needs no wait for the application (see KBD_REBIND_GRACE_NS) before
 * those that do; free ones in the lowest group first, evictions least
 * recently used first.
 */
static uint64_t
kbd_rank(struct x11_kbd *kbd, const struct kbd_slot *s, int g, int l, KeySym ks,
    int whole, int combo, int64_t now)
{
	unsigned cells;
	uint64_t used;
	int c, taken, wait, is_free;

	if (g > s->ngroups || (l == 1 && (whole || g == s->ngroups)))
		return UINT64_MAX;
	/* Characters share a keycode only with characters, and a key of a
	 * combo that is none (F13, Hyper_R) gets a keycode of its own: XKB
	 * gives such keysyms actions and types of their own. */
	if (!combo && s->ngroups > 0 && !kbd_is_char(s->sym[0]))
		return UINT64_MAX;
	if (combo && !kbd_is_char(ks) && s->ngroups > 1)
		return UINT64_MAX;
	cells = kbd_cells(s, g, l, whole);
	taken = wait = 0;
	used = 0;
	is_free = 1;
	for (c = 2 * g; c < 2 * g + 2; c++) {
		if (!(cells & (1u << c)))
			continue;
		/* Free: past the last group, or a filler. */
		if (g >= s->ngroups || (c & 1 && kbd_filler(s, g))) {
			if (s->typed_ns[c] != 0 &&
			    s->typed_ns[c] + KBD_REBIND_GRACE_NS > now)
				wait = 1;
			continue;
		}
		is_free = 0;
		if (s->batch[c] == kbd->batch)
			taken = 1;
		if (s->typed_ns[c] != 0 &&
		    s->typed_ns[c] + KBD_REBIND_GRACE_NS > now)
			wait = 1;
		if (s->used[c] > used)
			used = s->used[c];
	}
	if (taken)
		return UINT64_MAX;
	if (is_free)
		return ((uint64_t)wait << 56) |
		    (uint64_t)(2 * g + (g == s->ngroups));
	if (used >= (uint64_t)1 << 54)
		used = ((uint64_t)1 << 54) - 1;
	return ((uint64_t)(2 + wait) << 56) | used;
}

/*
 * Bind ks in the local copy (kbd_send writes it to the server): a letter
 * with a case as [lower, upper], else one cell; for a combo, in group 1 and
 * a caseless one as [ks, ks]. Returns 1 if no cell is free in this batch.
 */
static int
kbd_place(struct x11_kbd *kbd, KeySym ks, int combo)
{
	struct kbd_slot *s, *best = NULL;
	KeySym lower, upper, want[2];
	uint64_t rank, best_rank = UINT64_MAX;
	unsigned cells;
	int64_t now;
	int i, n, g, l, c, cased, whole, g_max, best_g = 0, best_l = 0;

	XConvertCase(ks, &lower, &upper);
	cased = lower != upper && (ks == lower || ks == upper);
	whole = cased || combo;
	g_max = combo ? 1 : kbd->groups;
	now = (int64_t)x11_now_ns();
	n = kbd->max_kc - kbd->min_kc + 1;
	for (i = 0; i < n; i++) {
		s = &kbd->slots[i];
		if (!s->spare || s->held)
			continue;
		for (g = 0; g < g_max && g <= s->ngroups; g++) {
			for (l = 0; l < 2; l++) {
				rank = kbd_rank(kbd, s, g, l, ks, whole, combo,
				    now);
				if (rank < best_rank) {
					best_rank = rank;
					best = s;
					best_g = g;
					best_l = l;
				}
			}
		}
	}
	if (best == NULL)
		return 1;
	s = best;
	cells = kbd_cells(s, best_g, best_l, whole);
	want[0] = want[1] = ks;
	if (cased) {
		want[0] = lower;
		want[1] = upper;
	}
	for (c = 2 * best_g; c < 2 * best_g + 2; c++) {
		if (!(cells & (1u << c)) || s->sym[c] == want[c & 1])
			continue;
		/* Pressed moments ago: the application may not have read
		 * it yet. */
		if (s->typed_ns[c] != 0 &&
		    s->typed_ns[c] + KBD_REBIND_GRACE_NS > kbd->not_before)
			kbd->not_before = s->typed_ns[c] + KBD_REBIND_GRACE_NS;
		s->sym[c] = want[c & 1];
		s->typed_ns[c] = 0;
		s->batch[c] = 0;
	}
	if (cells == 3u << (2 * best_g)) {
		if (cased)
			s->cased |= 1u << best_g;
		else
			s->cased &= ~(1u << best_g);
	}
	if (best_g == s->ngroups)
		s->ngroups++;
	s->bound = 1;
	s->pending = 1;
	return 0;
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

/* The client window (the one with WM_STATE) at or below w, or None. */
static Window
kbd_client_below(struct x11_kbd *kbd, Window w, int depth)
{
	Window root, parent, *kids = NULL, found = None;
	unsigned int nkids, i;
	unsigned long nitems, after;
	unsigned char *prop = NULL;
	Atom type;
	int format;

	if (XGetWindowProperty(kbd->ping, w, kbd->wm_state, 0, 0, False,
	        AnyPropertyType, &type, &format, &nitems, &after,
	        &prop) == Success &&
	    type != None) {
		XFree(prop);
		return w;
	}
	if (prop != NULL)
		XFree(prop);
	if (depth == 0 ||
	    !XQueryTree(kbd->ping, w, &root, &parent, &kids, &nkids))
		return None;
	for (i = 0; i < nkids && found == None; i++)
		found = kbd_client_below(kbd, kids[i], depth - 1);
	if (kids != NULL)
		XFree(kids);
	return found;
}

/* The top-level client that gets key events now, if it speaks
 * _NET_WM_PING; else None. */
static Window
kbd_ping_target(struct x11_kbd *kbd)
{
	Window w, root, parent, child, *kids, client;
	unsigned int nkids;
	int revert, rx, ry, x, y, n, i, ok;
	unsigned int mask;
	Atom *protos;

	XGetInputFocus(kbd->ping, &w, &revert);
	root = DefaultRootWindow(kbd->ping);
	if (w == None)
		return None;
	if (w == PointerRoot || w == root) {
		if (!XQueryPointer(kbd->ping, root, &root, &child, &rx, &ry, &x,
		        &y, &mask) ||
		    child == None)
			return None;
		w = child;
	}
	/* Up to the child of the root, then down to the WM_STATE window (a
	 * window manager's frame sits between). */
	for (;;) {
		if (!XQueryTree(kbd->ping, w, &root, &parent, &kids, &nkids))
			return None;
		if (kids != NULL)
			XFree(kids);
		if (parent == root || parent == None)
			break;
		w = parent;
	}
	if ((client = kbd_client_below(kbd, w, 3)) == None)
		client = w;
	ok = 0;
	if (XGetWMProtocols(kbd->ping, client, &protos, &n)) {
		for (i = 0; i < n; i++)
			ok |= protos[i] == kbd->net_wm_ping;
		XFree(protos);
	}
	return ok ? client : None;
}

/* Is ev the answer to our ping number serial? */
static Bool
kbd_is_pong(Display *dpy, XEvent *ev, XPointer arg)
{
	struct x11_kbd *kbd = (struct x11_kbd *)arg;

	(void)dpy;
	return ev->type == ClientMessage &&
	    ev->xclient.message_type == kbd->wm_protocols &&
	    ev->xclient.format == 32 &&
	    (Atom)ev->xclient.data.l[0] == kbd->net_wm_ping &&
	    (unsigned long)ev->xclient.data.l[1] == kbd->ping_serial;
}

/*
 * Wait until the focused application has translated the keys sent so far
 * (see KBD_REBIND_GRACE_NS): its answer to a ping, else the fixed wait.
 */
static void
kbd_sync_app(struct x11_kbd *kbd, Display *dpy)
{
	struct pollfd pfd;
	Window target, root;
	int64_t deadline, left;
	XEvent ev;

	if (kbd->ping == NULL || (target = kbd_ping_target(kbd)) == None) {
		kbd_sleep_until(kbd->not_before);
		return;
	}
	/* Our keys are in the client's queue: dpy was synced after them,
	 * and the server handles the ping after that. */
	XSync(dpy, False);
	root = DefaultRootWindow(kbd->ping);
	XSelectInput(kbd->ping, root, SubstructureNotifyMask);
	memset(&ev, 0, sizeof ev);
	ev.xclient.type = ClientMessage;
	ev.xclient.window = target;
	ev.xclient.message_type = kbd->wm_protocols;
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = (long)kbd->net_wm_ping;
	ev.xclient.data.l[1] = (long)++kbd->ping_serial;
	ev.xclient.data.l[2] = (long)target;
	XSendEvent(kbd->ping, target, False, NoEventMask, &ev);
	XFlush(kbd->ping);
	deadline = (int64_t)x11_now_ns() +
	    (int64_t)KBD_PING_TIMEOUT_MS * 1000000;
	pfd.fd = ConnectionNumber(kbd->ping);
	pfd.events = POLLIN;
	for (;;) {
		if (XCheckIfEvent(kbd->ping, &ev, kbd_is_pong, (XPointer)kbd))
			break;
		left = deadline - (int64_t)x11_now_ns();
		if (left <= 0) {
			/* A busy or hung client: the fixed wait is all the
			 * care left to take. */
			kbd_sleep_until(kbd->not_before);
			break;
		}
		poll(&pfd, 1, (int)(left / 1000000) + 1);
	}
	XSelectInput(kbd->ping, root, NoEventMask);
	XSync(kbd->ping, True); /* and drop the other root events */
}

/*
 * Send the pending bindings: one XChangeKeyboardMapping per run of adjacent
 * keycodes (rewriting a keycode between two spare ones through the core
 * protocol could change its XKB type), all groups of each, sync, read back.
 */
static int
kbd_send(struct x11_kbd *kbd, Display *dpy, char **cause)
{
	KeySym want[256], syms[KBD_CELLS * 256];
	struct kbd_slot *s;
	int i, j, n, first, count, width;

	n = kbd->max_kc - kbd->min_kc + 1;
	width = 2 * kbd->groups;
	count = 0;
	for (i = 0; i < n; i++) {
		s = &kbd->slots[i];
		want[i] = s->ngroups > 0 ? s->sym[0] : NoSymbol;
		if (s->pending)
			count++;
	}
	if (count == 0)
		return 0;
	if (kbd->not_before > (int64_t)x11_now_ns())
		kbd_sync_app(kbd, dpy);
	kbd->not_before = 0;
	for (i = 0; i < n; i = j) {
		if (!kbd->slots[i].pending) {
			j = i + 1;
			continue;
		}
		first = i;
		for (j = i; j < n && kbd->slots[j].pending; j++)
			memcpy(&syms[width * (j - first)], kbd->slots[j].sym,
			    sizeof syms[0] * (size_t)width);
		XChangeKeyboardMapping(dpy, kbd->min_kc + first, width, syms,
		    j - first);
	}
	XSync(dpy, False);
	kbd_drain_notify(dpy);
	if (kbd_refresh(kbd, dpy, cause) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (want[i] == NoSymbol)
			continue;
		s = &kbd->slots[i];
		if (!s->bound) {
			x11_fail(cause, "keycode %d did not take keysym 0x%lx",
			    kbd->min_kc + i, (unsigned long)want[i]);
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
	struct kbd_key key;
	XkbStateRec st;
	char down[32];
	KeyCode kc;
	int i;

	memset(sh, 0, sizeof *sh);
	if ((mm = XGetModifierMapping(dpy)) == NULL) {
		x11_fail(cause, "cannot read the modifier mapping");
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
	if (kbd_find(kbd, XK_Shift_L, 1, &key) == 0 && key.level == 0)
		sh->ours = key.kc;
	if (sh->ours == 0) {
		x11_fail(cause, "no shift key in the modifier mapping");
		return -1;
	}
	if (XkbGetState(dpy, XkbUseCoreKbd, &st) == Success) {
		sh->lock = (st.mods & LockMask) != 0;
		sh->group = st.group;
		if (!kbd->group_dirty)
			kbd->group_orig = st.locked_group;
	}
	return 0;
}

/*
 * Make g the effective group for the next key: lock it. The caller's locked
 * group comes back in kbd_group_restore (a group the caller holds with a
 * group shift key is not undone: lock + base would not be g then).
 */
static void
kbd_group_set(struct x11_kbd *kbd, Display *dpy, struct kbd_shift *sh, int g)
{
	if (kbd->groups == 1 || g == sh->group)
		return;
	XkbLockGroup(dpy, XkbUseCoreKbd, (unsigned)g);
	kbd->group_dirty = 1;
	sh->group = g;
}

static void
kbd_group_restore(struct x11_kbd *kbd, Display *dpy)
{
	if (!kbd->group_dirty)
		return;
	XkbLockGroup(dpy, XkbUseCoreKbd, (unsigned)kbd->group_orig);
	kbd->group_dirty = 0;
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

/*
 * Stamp cell c of s as pressed now. A filler goes with its level 0: with
 * Lock on, a group [x, x] is ALPHABETIC to the server and gives level 1.
 */
static void
kbd_stamp_cell(struct kbd_slot *s, int c, int64_t now)
{
	s->typed_ns[c] = now;
	if (!(c & 1) && kbd_filler(s, c / 2))
		s->typed_ns[c + 1] = now;
}

/* Stamp the cells of the batch just typed; the grace counts from here. */
static void
kbd_stamp(struct x11_kbd *kbd)
{
	struct kbd_slot *s;
	int64_t now;
	int i, n, c;

	now = (int64_t)x11_now_ns();
	n = kbd->max_kc - kbd->min_kc + 1;
	for (i = 0; i < n; i++) {
		s = &kbd->slots[i];
		if (!s->spare)
			continue;
		for (c = 0; c < 2 * s->ngroups; c++)
			if (s->batch[c] == kbd->batch)
				kbd_stamp_cell(s, c, now);
	}
}

/* Keys just released by X11_KEY_UP: the grace counts from the release. */
static void
kbd_stamp_held_up(struct x11_kbd *kbd, const KeySym *syms, int n)
{
	struct kbd_slot *s;
	struct kbd_key key;
	int64_t now;
	int i;

	now = (int64_t)x11_now_ns();
	for (i = 0; i < n; i++) {
		if (kbd_find(kbd, syms[i], 1, &key) != 0)
			continue;
		s = &kbd->slots[key.kc - kbd->min_kc];
		if (s->spare)
			kbd_stamp_cell(s, 2 * key.group + key.level, now);
	}
}

/*
 * Where to press for ks, binding it to a spare keycode in the local map if
 * the map lacks it; g1 as for kbd_find. Returns 1 when no cell is free in
 * this batch (the caller sends and types what it has, then starts a new
 * batch).
 */
static int
kbd_resolve(struct x11_kbd *kbd, KeySym ks, int g1, struct kbd_key *key)
{
	struct kbd_slot *s;
	int c;

	if (kbd_find(kbd, ks, g1, key) != 0) {
		if (kbd_place(kbd, ks, g1) != 0)
			return 1;
		if (kbd_find(kbd, ks, g1, key) != 0)
			return 1; /* cannot happen: just bound */
	}
	s = &kbd->slots[key->kc - kbd->min_kc];
	if (s->spare) {
		/* A letter with a case needs both of its cells. */
		for (c = 2 * key->group; c < 2 * key->group + 2; c++) {
			if (c != 2 * key->group + key->level &&
			    !(s->cased & (1u << key->group)))
				continue;
			s->batch[c] = kbd->batch;
			s->used[c] = ++kbd->clock;
		}
	}
	return 0;
}

int
x11_kbd_new(Display *dpy, struct x11_kbd **out, char **cause)
{
	struct x11_kbd *kbd;
	int ev, err, maj, min, op;

	*out = NULL;
	if (!XTestQueryExtension(dpy, &ev, &err, &maj, &min)) {
		x11_fail(cause, "the X server has no XTEST extension");
		return -1;
	}
	if ((kbd = calloc(1, sizeof *kbd)) == NULL) {
		x11_fail(cause, "out of memory");
		return -1;
	}
	XDisplayKeycodes(dpy, &kbd->min_kc, &kbd->max_kc);
	if (kbd->min_kc < 8 || kbd->max_kc > 255 || kbd->max_kc < kbd->min_kc) {
		x11_fail(cause, "odd keycode range %d..%d", kbd->min_kc,
		    kbd->max_kc);
		goto fail;
	}
	kbd->slots = calloc((size_t)(kbd->max_kc - kbd->min_kc + 1),
	    sizeof *kbd->slots);
	if (kbd->slots == NULL) {
		x11_fail(cause, "out of memory");
		goto fail;
	}
	kbd->batch = 1;
	/* Groups need XKB to lock them; without it one group of two. */
	maj = XkbMajorVersion;
	min = XkbMinorVersion;
	kbd->groups = XkbQueryExtension(dpy, &op, &ev, &err, &maj, &min) ?
	    KBD_GROUPS :
	    1;
	if (kbd_refresh(kbd, dpy, cause) != 0)
		goto fail;
	/* A connection of our own for pings: waiting for the answer must
	 * not take events from the caller's queue. Without it we wait. */
	if ((kbd->ping = XOpenDisplay(DisplayString(dpy))) != NULL) {
		kbd->wm_protocols = XInternAtom(kbd->ping, "WM_PROTOCOLS",
		    False);
		kbd->wm_state = XInternAtom(kbd->ping, "WM_STATE", False);
		kbd->net_wm_ping = XInternAtom(kbd->ping, "_NET_WM_PING",
		    False);
	}
	*out = kbd;
	return 0;
fail:
	if (kbd->map != NULL)
		XFree(kbd->map);
	free(kbd->slots);
	free(kbd);
	return -1;
}

void
x11_kbd_free(struct x11_kbd *kbd, Display *dpy)
{
	KeySym none[2] = { NoSymbol, NoSymbol };
	struct kbd_slot *s;
	int64_t last;
	int i, n, c, any;

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
		kbd_group_restore(kbd, dpy);
		XSync(dpy, False);
		/* Only keycodes that still carry our keysyms are ours. */
		if (kbd_refresh(kbd, dpy, NULL) == 0) {
			n = kbd->max_kc - kbd->min_kc + 1;
			last = 0;
			any = 0;
			for (i = 0; i < n; i++) {
				s = &kbd->slots[i];
				for (c = 0; s->bound && c < KBD_CELLS; c++)
					if (s->typed_ns[c] > last)
						last = s->typed_ns[c];
				any |= s->bound;
			}
			if (any) {
				kbd->not_before = last + KBD_REBIND_GRACE_NS;
				if (last != 0 &&
				    kbd->not_before > (int64_t)x11_now_ns())
					kbd_sync_app(kbd, dpy);
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
	if (kbd->ping != NULL)
		XCloseDisplay(kbd->ping);
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
	struct kbd_key keys[X11_KBD_MAX_COMBO];
	int shift[X11_KBD_MAX_COMBO];
	struct kbd_shift sh;
	KeyCode kc;
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
			} else if (kbd_find(kbd, syms[i], 1, &keys[i]) == 0) {
				XTestFakeKeyEvent(dpy, keys[i].kc, False,
				    CurrentTime);
			}
		}
		XSync(dpy, False);
		kbd_stamp_held_up(kbd, syms, n);
		return 0;
	}
	if (mode == X11_KEY_DOWN &&
	    kbd->nheld + n > (int)(sizeof kbd->held / sizeof kbd->held[0])) {
		x11_fail(cause, "too many keys held down");
		return -1;
	}
	if (kbd_shift_init(kbd, dpy, &sh, cause) != 0)
		return -1;
	kbd->batch++;
	for (i = 0; i < n; i++) {
		if (kbd_resolve(kbd, syms[i], 1, &keys[i]) != 0) {
			x11_fail(cause, "no spare keycode left for '%s'",
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
		if (keys[i].level == 1 && !IsModifierKey(syms[i]) &&
		    !shift_on) {
			XTestFakeKeyEvent(dpy, sh.ours, True, CurrentTime);
			shift[i] = sh.ours;
			shift_on = 1;
		}
		kc = keys[i].kc;
		XTestFakeKeyEvent(dpy, kc, True, CurrentTime);
		if (mode == X11_KEY_DOWN) {
			kbd->held[kbd->nheld].sym = syms[i];
			kbd->held[kbd->nheld].kc = kc;
			kbd->held[kbd->nheld].shift = shift[i];
			kbd->nheld++;
			if (kbd->slots[kc - kbd->min_kc].spare)
				kbd->slots[kc - kbd->min_kc].held = 1;
		}
	}
	if (mode == X11_KEY_TAP) {
		for (i = n - 1; i >= 0; i--) {
			XTestFakeKeyEvent(dpy, keys[i].kc, False, CurrentTime);
			if (shift[i])
				XTestFakeKeyEvent(dpy, shift[i], False,
				    CurrentTime);
		}
	}
	XSync(dpy, False);
	kbd_stamp(kbd);
	return 0;
}

/* Press and release one batch of planned keys, each in its group. */
static void
kbd_type_batch(struct x11_kbd *kbd, Display *dpy, struct kbd_shift *sh,
    const KeyCode *kcs, const signed char *shift, const signed char *group,
    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		kbd_group_set(kbd, dpy, sh, group[i]);
		if (shift[i] >= 0)
			kbd_shift_set(dpy, sh, shift[i]);
		XTestFakeKeyEvent(dpy, kcs[i], True, CurrentTime);
		XTestFakeKeyEvent(dpy, kcs[i], False, CurrentTime);
	}
}

int
x11_kbd_type(struct x11_kbd *kbd, Display *dpy, const char *utf8, size_t len,
    char **cause)
{
	const unsigned char *s = (const unsigned char *)utf8;
	struct kbd_shift sh;
	KeySym *syms = NULL;
	KeyCode *kcs = NULL;
	signed char *shift = NULL, *group = NULL;
	struct kbd_key key;
	size_t i, k, n, nsyms, start;
	uint32_t cp;
	int r, clen, typing = 0, relock = 0;

	/* Decode everything first: bad input types nothing. */
	if ((syms = malloc(sizeof *syms * (len + 1))) == NULL) {
		x11_fail(cause, "out of memory");
		goto fail;
	}
	nsyms = 0;
	for (i = 0; i < len; i += n) {
		if ((clen = utf8_decode(s + i, len - i, &cp)) <= 0) {
			x11_fail(cause, "invalid utf-8 at byte %zu", i);
			goto fail;
		}
		n = (size_t)clen;
		if (cp == '\n')
			syms[nsyms++] = XK_Return;
		else if (cp == '\r') {
			if (i + 1 < len && s[i + 1] == '\n')
				continue; /* "\r\n" is one Return */
			syms[nsyms++] = XK_Return;
		} else if (cp == '\t')
			syms[nsyms++] = XK_Tab;
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
			x11_fail(cause,
			    "cannot type control character U+%04X at byte %zu",
			    (unsigned)cp, i);
			goto fail;
		} else
			syms[nsyms++] = x11_key_ucs_keysym(cp);
	}
	kcs = malloc(sizeof *kcs * (nsyms + 1));
	shift = malloc(sizeof *shift * (nsyms + 1));
	group = malloc(sizeof *group * (nsyms + 1));
	if (kcs == NULL || shift == NULL || group == NULL) {
		x11_fail(cause, "out of memory");
		goto fail;
	}
	if (kbd_refresh(kbd, dpy, cause) != 0)
		goto fail;
	if (kbd_shift_init(kbd, dpy, &sh, cause) != 0)
		goto fail;
	typing = 1;
	/* Caps Lock off while typing, back on after: applications apply Lock
	 * with case tables of their own, which capitalise letters the
	 * server's XKB does not know as cased (σ, ж, ß), so no Shift choice
	 * could make them come out right under Lock. */
	if (sh.lock) {
		XkbLockModifiers(dpy, XkbUseCoreKbd, LockMask, 0);
		sh.lock = 0;
		relock = 1;
	}
	kbd->batch++;
	start = 0;
	for (k = 0; k < nsyms; k++) {
		r = kbd_resolve(kbd, syms[k], 0, &key);
		if (r == 1) {
			/* Out of spare cells: type what is planned, then
			 * start a batch that may rebind the ones just used. */
			if (kbd_send(kbd, dpy, cause) != 0)
				goto fail;
			kbd_type_batch(kbd, dpy, &sh, kcs + start,
			    shift + start, group + start, k - start);
			XSync(dpy, False);
			kbd_stamp(kbd);
			kbd->batch++;
			start = k;
			r = kbd_resolve(kbd, syms[k], 0, &key);
		}
		if (r != 0) {
			x11_fail(cause, "no spare keycode to bind U+%04lX",
			    (unsigned long)(syms[k] >= 0x01000000 ?
			            syms[k] - 0x01000000 :
			            syms[k]));
			goto fail;
		}
		kcs[k] = key.kc;
		group[k] = (signed char)key.group;
		shift[k] = (signed char)kbd_wants_shift(&sh, syms[k],
		    key.level);
	}
	if (kbd_send(kbd, dpy, cause) != 0)
		goto fail;
	kbd_type_batch(kbd, dpy, &sh, kcs + start, shift + start, group + start,
	    nsyms - start);
	kbd_shift_restore(dpy, &sh);
	kbd_group_restore(kbd, dpy);
	if (relock)
		XkbLockModifiers(dpy, XkbUseCoreKbd, LockMask, LockMask);
	XSync(dpy, False);
	kbd_stamp(kbd);
	free(syms);
	free(kcs);
	free(shift);
	free(group);
	return 0;
fail:
	if (typing) {
		/* Every key went down and up in pairs; only Shift and the
		 * group can be left as they should not. */
		kbd_shift_restore(dpy, &sh);
		kbd_group_restore(kbd, dpy);
		if (relock)
			XkbLockModifiers(dpy, XkbUseCoreKbd, LockMask,
			    LockMask);
		XSync(dpy, False);
		kbd_refresh(kbd, dpy, NULL);
	}
	free(syms);
	free(kcs);
	free(shift);
	free(group);
	return -1;
}
