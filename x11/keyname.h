/*
 * x11/keyname: key names and xdotool-style key combos to X keysyms. Pure: no
 * X connection, no state; safe from any thread.
 *
 * Errors: 0 on success, or -1 with *cause set to a malloc'd lowercase
 * message (the caller frees it; cause may be NULL).
 */
#ifndef BUREAU_X11_KEYNAME_H
#define BUREAU_X11_KEYNAME_H

#include <X11/X.h>
#include <stddef.h>
#include <stdint.h>

/* Maximum keys in one combo ("ctrl+alt+shift+super+t" is 5). */
#define X11_KBD_MAX_COMBO 16

/*
 * Parse one xdotool-style combo: names joined with '+', e.g. "ctrl+shift+t",
 * "Return", "super", "alt+F4", "KP_Enter", "ñ", "+" (a lone plus) and
 * "ctrl++". Names are X keysym names (XStringToKeysym), a single UTF-8
 * character, or aliases matched without regard to case: ctrl control
 * shift alt super win cmd meta enter return esc escape del delete bs
 * backspace tab space pgup pageup pgdn pagedown up down left right
 * arrowup arrowdown arrowleft arrowright home end insert ins
 * capslock, plus F1..F24 in any case. Pure: no X connection needed.
 * Fills syms[0..*n-1].
 */
int x11_kbd_parse(const char *combo, KeySym *syms, int max, int *n,
    char **cause);

/* The keysym of a Unicode character: Latin-1 is itself, the rest
 * 0x01000000 + code point (X's Unicode keysyms). */
KeySym x11_key_ucs_keysym(uint32_t cp);

#endif
