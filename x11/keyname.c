/*
 * x11/keyname: key names and xdotool-style combos to keysyms (UTF-8
 * decoded by common/utf8.h, as typing decodes it). Split out of kbd.c so the
 * parser that reads what clients send can be unit tested and fuzzed without an
 * X server: XStringToKeysym and XConvertCase read Xlib's tables, never the
 * connection.
 */
#include "x11/keyname.h"
#include "common/utf8.h"
#include "x11/xerr.h"

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/keysym.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The keysym of a Unicode character: Latin-1 is itself, the rest 0x01000000
 * + code point (X's Unicode keysyms). */
KeySym
x11_key_ucs_keysym(uint32_t cp)
{
	if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff))
		return cp;
	return 0x01000000 + cp;
}

static const struct {
	const char *name;
	KeySym sym;
} key_aliases[] = {
	{ "ctrl", XK_Control_L },
	{ "control", XK_Control_L },
	{ "shift", XK_Shift_L },
	{ "alt", XK_Alt_L },
	{ "option", XK_Alt_L },
	{ "super", XK_Super_L },
	{ "win", XK_Super_L },
	{ "cmd", XK_Super_L },
	{ "command", XK_Super_L },
	{ "meta", XK_Meta_L },
	{ "enter", XK_Return },
	{ "return", XK_Return },
	{ "esc", XK_Escape },
	{ "escape", XK_Escape },
	{ "del", XK_Delete },
	{ "delete", XK_Delete },
	{ "bs", XK_BackSpace },
	{ "backspace", XK_BackSpace },
	{ "tab", XK_Tab },
	{ "space", XK_space },
	{ "pgup", XK_Page_Up },
	{ "pageup", XK_Page_Up },
	{ "page_up", XK_Page_Up },
	{ "pgdn", XK_Page_Down },
	{ "pagedown", XK_Page_Down },
	{ "page_down", XK_Page_Down },
	{ "up", XK_Up },
	{ "down", XK_Down },
	{ "left", XK_Left },
	{ "right", XK_Right },
	{ "arrowup", XK_Up },
	{ "arrowdown", XK_Down },
	{ "arrowleft", XK_Left },
	{ "arrowright", XK_Right },
	{ "home", XK_Home },
	{ "end", XK_End },
	{ "insert", XK_Insert },
	{ "ins", XK_Insert },
	{ "capslock", XK_Caps_Lock },
	{ "caps_lock", XK_Caps_Lock },
};

/* Resolve one key name; single is set when it was one character. */
static KeySym
key_name_keysym(const char *name, int *single)
{
	char buf[64];
	uint32_t cp;
	size_t i, len;
	KeySym ks;
	int n;
	char *end;
	long f;

	*single = 0;
	len = strlen(name);
	for (i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++)
		if (strcasecmp(name, key_aliases[i].name) == 0)
			return key_aliases[i].sym;
	if ((name[0] == 'f' || name[0] == 'F') &&
	    isdigit((unsigned char)name[1])) {
		errno = 0;
		f = strtol(name + 1, &end, 10);
		if (*end == '\0' && errno == 0 && f >= 1 && f <= 24 &&
		    name[1] != '0')
			return XK_F1 + (f - 1);
	}
	n = utf8_decode((const unsigned char *)name, len, &cp);
	if (n > 0 && (size_t)n == len && cp >= 0x20 && cp != 0x7f &&
	    !(cp >= 0x80 && cp < 0xa0)) {
		*single = 1;
		return x11_key_ucs_keysym(cp);
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
		x11_fail(cause, "empty combo");
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
			x11_fail(cause, "empty key in '%s'", combo);
			return -1;
		}
		if (count == max) {
			x11_fail(cause, "too many keys in '%s': at most %d",
			    combo, max);
			return -1;
		}
		if (len >= sizeof name) {
			x11_fail(cause, "unknown key '%.*s...' in '%s'", 32,
			    start, combo);
			return -1;
		}
		memcpy(name, start, len);
		name[len] = '\0';
		syms[count] = key_name_keysym(name, &single[count]);
		if (syms[count] == NoSymbol) {
			x11_fail(cause, "unknown key '%s' in '%s'", name,
			    combo);
			return -1;
		}
		count++;
		if (*p == '\0')
			break;
		p++; /* the '+' between names */
		if (*p == '\0') {
			x11_fail(cause, "empty key at the end of '%s'", combo);
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
