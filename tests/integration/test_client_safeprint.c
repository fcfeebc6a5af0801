/*
 * host-bridge/cli/safeprint.c on its own (with common/utf8.c): known
 * inputs give known output, and a stream cut anywhere (two writes, or one
 * byte at a time) gives the same output as one write. Prints "PASS name" /
 * "FAIL name: why".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/cli/safeprint.h"

static int failures;

/* The filter's output for in (len bytes) written in pieces of `step`
 * bytes (0: two pieces cut at `cut`); malloc'd. */
static char *
run(enum sp_style style, const char *in, size_t len, size_t step, size_t cut)
{
	struct sp_state st = { .style = style };
	char *out = NULL;
	size_t outlen = 0, i;
	FILE *f = open_memstream(&out, &outlen);

	if (f == NULL)
		abort();
	if (step == 0) {
		sp_write(&st, f, in, cut);
		sp_write(&st, f, in + cut, len - cut);
	} else
		for (i = 0; i < len; i += step)
			sp_write(&st, f, in + i,
			    len - i < step ? len - i : step);
	sp_flush(&st, f);
	fclose(f);
	return (out);
}

static void
expect(const char *name, enum sp_style style, const char *in, size_t len,
    const char *want)
{
	char *got = run(style, in, len, len, 0);
	int ok = strcmp(got, want) == 0;
	size_t cut;

	for (cut = 0; ok && cut <= len; cut++) {
		char *split = run(style, in, len, 0, cut);

		if (strcmp(split, want) != 0) {
			printf("FAIL %s: cut at %zu gives '%s'\n", name, cut,
			    split);
			failures++;
			free(split);
			free(got);
			return;
		}
		free(split);
	}
	if (ok) {
		char *bytes = run(style, in, len, 1, 0);

		ok = strcmp(bytes, want) == 0;
		free(bytes);
	}
	if (ok)
		printf("PASS %s\n", name);
	else {
		printf("FAIL %s: got '%s', want '%s'\n", name, got, want);
		failures++;
	}
	free(got);
}

#define EXPECT(name, style, lit, want)                                         \
	expect(name, style, lit, sizeof(lit) - 1, want)

int
main(void)
{
	EXPECT("sp_osc_title_inert", SP_PLAIN, "\033]0;pwned\007\033[2J",
	    "\\x1b]0;pwned\\x07\\x1b[2J");
	EXPECT("sp_text_kept", SP_PLAIN,
	    "a\tb\r\nGr\xc3\xbc\xc3\x9f\xe6\x97\xa5 \xf0\x9f\x98\x80\n",
	    "a\tb\r\nGr\xc3\xbc\xc3\x9f\xe6\x97\xa5 \xf0\x9f\x98\x80\n");
	EXPECT("sp_lone_cr", SP_PLAIN, "a\rb\r", "a\\x0db\\x0d");
	EXPECT("sp_c1_and_del", SP_PLAIN,
	    "\xc2\x9b"
	    "2J\x7f\xc2\x85",
	    "\\u009b2J\\x7f\\u0085");
	EXPECT("sp_nul", SP_PLAIN, "a\0b", "a\\x00b");
	/* not UTF-8: stray continuation, bad lead, overlong, surrogate, past
	 * U+10FFFF, a truncated sequence before ASCII and at the end */
	EXPECT("sp_invalid_utf8", SP_PLAIN,
	    "\x80|\xff|\xc0\xaf|\xe0\x80\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|"
	    "\xe6\x97|\xe6",
	    "\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
	    "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd");
	EXPECT("sp_json_style", SP_JSON, "{\"m\":\"a\xc2\x9b\x7f\"}\r\n",
	    "{\"m\":\"a\\u009b\\u007f\"}\r\n");
	return (failures ? 1 : 0);
}
