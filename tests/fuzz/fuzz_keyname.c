/*
 * fuzz_keyname: x11_kbd_parse, the xdotool-style key-combo parser that
 * reads the computer tool's key, hold_key, keypress and modifier fields,
 * and the UTF-8 decoder it shares with typing (common/utf8.h). No X
 * server: both are pure.
 *
 * Checked (abort on failure): success yields 1..max keysyms, none NoSymbol,
 * and no cause; failure yields a cause and no keys; a smaller max gives the
 * same first keys or fails; utf8_decode accepts exactly what
 * jansson's UTF-8 validator accepts (a second, independent decoder).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "x11/keyname.h"

static void
fuzz_die(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_keyname: %s: '%.*s'\n", what, (int)size,
	    (const char *)data);
	abort();
}

static int
fuzz_parse(const char *combo, KeySym *syms, int max, int *n)
{
	char *cause = NULL;
	int rv = x11_kbd_parse(combo, syms, max, n, &cause);

	if (rv == 0) {
		if (cause != NULL || *n < 1 || *n > max ||
		    *n > X11_KBD_MAX_COMBO)
			fuzz_die("bad success", (const uint8_t *)combo,
			    strlen(combo));
		for (int i = 0; i < *n; i++)
			if (syms[i] == NoSymbol)
				fuzz_die("NoSymbol key", (const uint8_t *)combo,
				    strlen(combo));
	} else if (rv != -1 || cause == NULL || *n != 0)
		fuzz_die("bad failure", (const uint8_t *)combo, strlen(combo));
	free(cause);
	return (rv);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KeySym all[X11_KBD_MAX_COMBO], two[X11_KBD_MAX_COMBO];
	int nall, ntwo, d, valid = 1;
	size_t i;
	uint32_t cp;
	json_t *j;
	char *s;

	/* The decoder against jansson, over the raw bytes (NUL included). */
	for (i = 0; i < size; i += (size_t)d)
		if ((d = utf8_decode(data + i, size - i, &cp)) <= 0) {
			valid = 0;
			break;
		} else if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			fuzz_die("decoded an invalid code point", data, size);
	j = json_stringn((const char *)data, size);
	if ((j != NULL) != valid)
		fuzz_die(valid ? "decoder accepts what jansson refuses" :
		                 "decoder refuses what jansson accepts",
		    data, size);
	json_decref(j);

	/* Combos arrive as JSON strings: no NUL inside. */
	if ((s = malloc(size + 1)) == NULL)
		return (0);
	memcpy(s, data, size);
	s[size] = '\0';
	if (fuzz_parse(s, all, X11_KBD_MAX_COMBO, &nall) == 0 &&
	    fuzz_parse(s, two, 2, &ntwo) == 0) {
		if (ntwo != nall ||
		    memcmp(two, all, sizeof *all * (size_t)ntwo) != 0)
			fuzz_die("max 2 disagrees", data, size);
	}
	free(s);
	return (0);
}
