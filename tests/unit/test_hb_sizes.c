/*
 * Unit tests: the host's sizes, `--disk 20G`, `--home`, `--memory 4G`
 * (bureau create, bureau image warm): hb_parse_size over common/size.c's
 * size_parse (test_size.c tests that one for bureaud's options;
 * test_hb_util.c the common cases). Here the edges: the 1 PiB limit
 * exactly, overflow by the number and by the unit, signs, blanks before,
 * inside and after, units of either case and their "B"/"iB", and what
 * strtoull or a float parser would have read (decimals, exponents, hex).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-bridge/util/util.h"

#define PIB (1LL << 50)

static void
size_is(const char *s, long long want)
{
	char *cause = NULL;
	long long v = -1;

	if (hb_parse_size("--memory", s, &v, &cause) != 0)
		fail_msg("'%s' refused: %s", s, cause);
	assert_null(cause);
	if (v != want)
		fail_msg("'%s' read as %lld, not %lld", s, v, want);
}

static void
refused(const char *s)
{
	char *cause = NULL;
	long long v = 12345;

	if (hb_parse_size("--memory", s, &v, &cause) != -1)
		fail_msg("'%s' taken as %lld", s, v);
	/* the message names the option and quotes the value; nothing is
	 * written on failure */
	assert_non_null(cause);
	assert_non_null(strstr(cause, "--memory"));
	assert_non_null(strstr(cause, s));
	assert_true(v == 12345);
	free(cause);
}

static void
test_units(void **state)
{
	(void)state;
	size_is("1", 1);
	size_is("4096", 4096);
	size_is("1k", 1LL << 10);
	size_is("1K", 1LL << 10);
	size_is("4m", 4LL << 20);
	size_is("4G", 4LL << 30);
	size_is("4g", 4LL << 30);
	size_is("2t", 2LL << 40);
	size_is("2GB", 2LL << 30);
	size_is("2GiB", 2LL << 30);
	size_is("512MiB", 512LL << 20);
	size_is("1KB", 1LL << 10);
	/* leading zeros are the number's (no octal) */
	size_is("00020G", 20LL << 30);
	size_is("010", 10);
	/* units are powers of 1024; there is no P or E, nor bytes with B */
	refused("1P");
	refused("1E");
	refused("1B");
	refused("4096B");
	refused("1iB");
	refused("1Kib");
	refused("1KIB");
	refused("1Kb");
	refused("1GiBB");
	refused("1GG");
	refused("1KM");
	refused("1X");
}

static void
test_limits(void **state)
{
	(void)state;
	/* at most 1 PiB, however written */
	size_is("1024T", PIB);
	size_is("1048576G", PIB);
	size_is("1073741824M", PIB);
	size_is("1099511627776K", PIB);
	size_is("1125899906842624", PIB);
	refused("1125899906842625");
	refused("1099511627777K");
	refused("1025T");
	refused("1048577G");
	/* zero is no size */
	refused("0");
	refused("0K");
	refused("0G");
	refused("000T");
	/* past 64 bits, by the number or by the unit: refused, never
	 * wrapped into a small size */
	refused("9223372036854775807");
	refused("9223372036854775808");
	refused("18446744073709551615");
	refused("18446744073709551616");
	refused("99999999999999999999999999999999G");
	refused("17179869184G"); /* 2^64 */
	refused("17179869185G");
	refused("16777216T"); /* 2^64 */
	refused("16777217T");
	refused("18446744073709551615K");
}

static void
test_signs_and_blanks(void **state)
{
	(void)state;
	refused("");
	refused("-1");
	refused("-1G");
	refused("-0");
	refused("--1G");
	refused("+1G");
	refused(" 1G");
	refused("\t1G");
	refused("\n1G");
	refused("1G ");
	refused("1G\n");
	refused("1 G");
	refused("1\tG");
	refused(" ");
	refused("G");
	refused("iB");
}

static void
test_other_numbers(void **state)
{
	(void)state;
	refused("1.5G");
	refused("1,5G");
	refused("0.5");
	refused(".5G");
	refused("1e9");
	refused("1E9");
	refused("1e+9");
	refused("0x10");
	refused("0x10G");
	refused("1_000");
	refused("1'000");
	refused("inf");
	refused("nan");
	refused("\xef\xbc\x92G"); /* a fullwidth digit 2 */
	refused("\xd9\xa2G");     /* an Arabic-Indic digit 2 */
	refused("1G;");
	refused("1G$(id)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_signs_and_blanks),
		cmocka_unit_test(test_other_numbers),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
