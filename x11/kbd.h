/*
 * x11 keyboard: key presses and exact Unicode typing with XTest. Key-combo
 * parsing (pure) is in x11/keyname.h.
 *
 * Typing binds every keysym the text needs that the keyboard map lacks to
 * spare keycodes (keycodes with no keysyms) in one XChangeKeyboardMapping,
 * syncs, then types the whole batch at full speed. Letters that have a case
 * are bound as [lower, upper] and pressed with Shift for the upper form, so
 * applications see exactly the character asked for (Debian 12's libxdo binds
 * one keysym, and X then hands applications the lowercase form of Ñ); two
 * caseless characters share a keycode's two levels. With XKB each spare
 * keycode carries 4 groups, typed by locking the group for the key and the
 * caller's group again after: 8 characters per spare keycode (152 on Xvfb)
 * before a text needs a second batch. Applications that decode keys without
 * XKB (core protocol only: rare) see groups 3 and 4 as group 2; groups fill
 * lowest first. Bindings stay in place (reused by later calls, least
 * recently used evicted) and are removed by x11_kbd_free.
 *
 * Threading: none inside. The caller serialises every call on one Display
 * (bureau holds the x11 lock).
 *
 * Errors: 0 on success, or -1 with *cause set to a malloc'd lowercase message
 * (the caller frees it).
 */
#ifndef BUREAU_X11_KBD_H
#define BUREAU_X11_KBD_H

#include <X11/Xlib.h>
#include <stddef.h>

#include "x11/keyname.h"

struct x11_kbd;

enum x11_key_mode {
	X11_KEY_TAP,  /* press all keys in order, release in reverse order */
	X11_KEY_DOWN, /* press only (hold_key, left_mouse_down modifiers) */
	X11_KEY_UP,   /* release only, in reverse order */
};

/*
 * Keyboard state for one Display: the keyboard map, the spare keycodes and
 * what is bound to them. Reads the map from the server.
 */
int x11_kbd_new(Display *dpy, struct x11_kbd **out, char **cause);

/* Unbind every spare keycode bound by this kbd, give back a group it left
 * locked, sync, free. NULL is fine. */
void x11_kbd_free(struct x11_kbd *kbd, Display *dpy);

/*
 * Press and/or release the keys of a combo (x11_kbd_parse syntax) with XTest.
 * Keysyms missing from the map are bound to spare keycodes first. Ends with
 * XSync.
 */
int x11_kbd_combo(struct x11_kbd *kbd, Display *dpy, const char *combo,
    enum x11_key_mode mode, char **cause);

/*
 * Type UTF-8 text exactly: every character, in order, including newlines
 * (Return) and tabs (Tab). Invalid UTF-8 fails before anything is typed.
 * Ends with XSync. Modifiers the caller holds are released around shifted
 * characters only as needed for the character to come out right.
 */
int x11_kbd_type(struct x11_kbd *kbd, Display *dpy, const char *utf8,
    size_t len, char **cause);

#endif
