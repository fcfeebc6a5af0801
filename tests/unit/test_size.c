/*
 * Unit tests: common/size.c, the size syntax of bureaud's numeric options
 * and the CLI's disk and memory sizes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/size.h"

static void
test_units(void **state)
{
	unsigned long long v;

	(void)state;
	assert_int_equal(size_parse("4096", 0, 1ULL << 40, &v), SIZE_OK);
	assert_true(v == 4096);
	assert_int_equal(size_parse("0", 0, 10, &v), SIZE_OK);
	assert_true(v == 0);
	assert_int_equal(size_parse("512M", 0, 1ULL << 40, &v), SIZE_OK);
	assert_true(v == 512ULL << 20);
	assert_int_equal(size_parse("4k", 0, 1ULL << 40, &v), SIZE_OK);
	assert_true(v == 4096);
	assert_int_equal(size_parse("20g", 0, 1ULL << 40, &v), SIZE_OK);
	assert_true(v == 20ULL << 30);
	/* T, "B" and "iB" only when asked for */
	assert_int_equal(size_parse("1T", 0, 1ULL << 50, &v), SIZE_TRAILING);
	assert_int_equal(size_parse("1T", SIZE_UNIT_T, 1ULL << 50, &v),
	    SIZE_OK);
	assert_true(v == 1ULL << 40);
	assert_int_equal(size_parse("2GB", 0, 1ULL << 50, &v), SIZE_TRAILING);
	assert_int_equal(size_parse("2GiB", SIZE_UNIT_BYTES, 1ULL << 50, &v),
	    SIZE_OK);
	assert_true(v == 2ULL << 30);
	assert_int_equal(size_parse("2GB", SIZE_UNIT_BYTES, 1ULL << 50, &v),
	    SIZE_OK);
	assert_true(v == 2ULL << 30);
	/* a "B" belongs to a unit: bytes are given bare */
	assert_int_equal(size_parse("4096B", SIZE_UNIT_BYTES, 1ULL << 50, &v),
	    SIZE_TRAILING);
}

static void
test_refused(void **state)
{
	unsigned long long v = 7;

	(void)state;
	assert_int_equal(size_parse("", 0, 100, &v), SIZE_EMPTY);
	assert_int_equal(size_parse("-1", 0, 100, &v), SIZE_NEGATIVE);
	assert_int_equal(size_parse(" 1", 0, 100, &v), SIZE_NOT_NUMBER);
	assert_int_equal(size_parse("+1", 0, 100, &v), SIZE_NOT_NUMBER);
	assert_int_equal(size_parse("G", 0, 100, &v), SIZE_NOT_NUMBER);
	assert_int_equal(size_parse("1X", 0, 100, &v), SIZE_TRAILING);
	assert_int_equal(size_parse("1GG", 0, 1ULL << 40, &v), SIZE_TRAILING);
	assert_int_equal(size_parse("1 ", 0, 100, &v), SIZE_TRAILING);
	assert_int_equal(size_parse("101", 0, 100, &v), SIZE_TOO_LARGE);
	assert_int_equal(size_parse("1K", 0, 1023, &v), SIZE_TOO_LARGE);
	/* past 64 bits, by itself or by its unit: never wrapped */
	assert_int_equal(size_parse("18446744073709551616", 0, ~0ULL, &v),
	    SIZE_TOO_LARGE);
	assert_int_equal(size_parse("17179869185G", 0, ~0ULL, &v),
	    SIZE_TOO_LARGE);
	assert_int_equal(size_parse("18446744073709551615K", 0, ~0ULL, &v),
	    SIZE_TOO_LARGE);
	assert_true(v == 7); /* untouched on failure */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_refused),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
