/*
 * Unit tests: common/utf8.c, the UTF-8 decoder and encoder of the daemon
 * and the CLI.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/utf8.h"

#define DECODE(s, cp) utf8_decode((const unsigned char *)(s), sizeof(s) - 1, cp)

static void
test_decode_valid(void **state)
{
	static const struct {
		const char *s;
		int len;
		uint32_t cp;
	} ok[] = {
		{ "A", 1, 'A' },
		{ "", 1, 0 }, /* NUL is a character */
		{ "\xc2\x80", 2, 0x80 },
		{ "\xc3\xa9z", 2, 0xe9 }, /* only the first character */
		{ "\xe0\xa0\x80", 3, 0x800 },
		{ "\xe2\x82\xac", 3, 0x20ac },
		{ "\xed\x9f\xbf", 3, 0xd7ff },
		{ "\xef\xbf\xbd", 3, 0xfffd },
		{ "\xf0\x90\x80\x80", 4, 0x10000 },
		{ "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
	};
	uint32_t cp;

	(void)state;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		size_t n = strlen(ok[i].s);

		assert_int_equal(utf8_decode((const unsigned char *)ok[i].s,
		                     n > 0 ? n : 1, &cp),
		    ok[i].len);
		assert_int_equal(cp, ok[i].cp);
	}
}

static void
test_decode_invalid(void **state)
{
	static const char *const bad[] = { "\x80",
		"\xbf",                         /* a continuation first */
		"\xc0\x80", "\xc1\xbf",         /* overlong 2 */
		"\xe0\x80\x80", "\xe0\x9f\xbf", /* overlong 3 */
		"\xed\xa0\x80", "\xed\xbf\xbf", /* surrogates */
		"\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", /* overlong 4 */
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", /* > U+10FFFF */
		"\xf8\x88\x80\x80\x80", "\xff", "\xfe", "\xc3(", "\xe2\x82(",
		"\xf0\x90\x80(", /* a bad continuation */
		NULL };
	uint32_t cp;

	(void)state;
	for (int i = 0; bad[i] != NULL; i++)
		assert_int_equal(utf8_decode((const unsigned char *)bad[i],
		                     strlen(bad[i]), &cp),
		    -1);
}

/* The start of a sequence that may still be valid: 0, so a stream waits;
 * one that cannot be (refused on its second byte) is -1 at once. */
static void
test_decode_partial(void **state)
{
	uint32_t cp;

	(void)state;
	assert_int_equal(utf8_decode((const unsigned char *)"", 0, &cp), 0);
	assert_int_equal(DECODE("\xc3", &cp), 0);
	assert_int_equal(DECODE("\xe2", &cp), 0);
	assert_int_equal(DECODE("\xe2\x82", &cp), 0);
	assert_int_equal(DECODE("\xf0\x90\x80", &cp), 0);
	assert_int_equal(DECODE("\xe0\x80", &cp), -1);
	assert_int_equal(DECODE("\xed\xa0", &cp), -1);
	assert_int_equal(DECODE("\xf4\x90", &cp), -1);
}

static void
test_encode(void **state)
{
	static const uint32_t cps[] = { 0, 'A', 0x7f, 0x80, 0xe9, 0x7ff, 0x800,
		0x20ac, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff };
	char out[4];
	uint32_t cp;

	(void)state;
	for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
		size_t n = utf8_encode(cps[i], out);

		assert_int_equal(
		    utf8_decode((const unsigned char *)out, n, &cp), (int)n);
		assert_int_equal(cp, cps[i]);
	}
	assert_int_equal(utf8_encode(0x20ac, out), 3);
	assert_memory_equal(out, "\xe2\x82\xac", 3);
	/* a lone surrogate (a JSON "\ud800") is encoded all the same */
	assert_int_equal(utf8_encode(0xd800, out), 3);
	assert_memory_equal(out, "\xed\xa0\x80", 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_valid),
		cmocka_unit_test(test_decode_invalid),
		cmocka_unit_test(test_decode_partial),
		cmocka_unit_test(test_encode),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
