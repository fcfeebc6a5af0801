/*
 * Unit tests: the host bridge's shared helpers (host-bridge/util): strict
 * number and size parsing (atoi read "2x" as 2 and "x" as 0) and the
 * escaping of paths put into QEMU option values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-bridge/util/util.h"

static void
bad_int(const char *s, long min, long max)
{
	char *cause = NULL;
	long v = 12345;

	assert_int_equal(hb_parse_int("--timeout", s, min, max, &v, &cause),
	    -1);
	assert_non_null(cause);
	/* the message names the option and quotes the value */
	assert_non_null(strstr(cause, "--timeout"));
	assert_non_null(strstr(cause, s));
	assert_int_equal(v, 12345);
	free(cause);
}

static void
test_parse_int(void **state)
{
	char *cause = NULL;
	long v;

	(void)state;
	assert_int_equal(hb_parse_int("n", "42", 1, 100, &v, &cause), 0);
	assert_int_equal(v, 42);
	assert_int_equal(hb_parse_int("n", "-3", -5, 5, &v, &cause), 0);
	assert_int_equal(v, -3);
	bad_int("", 0, 10);
	bad_int("abc", 0, 10);
	bad_int("2x", 0, 10);
	bad_int(" 2", 0, 10);
	bad_int("+2", 0, 10);
	bad_int("11", 0, 10);
	bad_int("-1", 0, 10);
	bad_int("99999999999999999999999", 0, 10);
	assert_null(cause);
}

static void
test_parse_size(void **state)
{
	char *cause = NULL;
	long long v;

	(void)state;
	assert_int_equal(hb_parse_size("--disk", "20G", &v, &cause), 0);
	assert_true(v == 20LL << 30);
	assert_int_equal(hb_parse_size("--disk", "512MiB", &v, &cause), 0);
	assert_true(v == 512LL << 20);
	assert_int_equal(hb_parse_size("--disk", "4096", &v, &cause), 0);
	assert_true(v == 4096);
	assert_int_equal(hb_parse_size("--disk", "1024T", &v, &cause), 0);
	assert_true(v == 1LL << 50);
	const char *bad[] = { "", "G", "-1G", "0", " 1G", "1X", "1GG", "1025T",
		"17179869185G", "9223372036854775808", NULL };
	for (int i = 0; bad[i] != NULL; i++) {
		assert_int_equal(hb_parse_size("--disk", bad[i], &v, &cause),
		    -1);
		assert_non_null(strstr(cause, "--disk"));
		free(cause);
		cause = NULL;
	}
}

static void
test_qemu_escape(void **state)
{
	char *s;

	(void)state;
	s = hb_qemu_escape("/a,b/c,,d");
	assert_string_equal(s, "/a,,b/c,,,,d");
	free(s);
	s = hb_qemu_escape("");
	assert_string_equal(s, "");
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_qemu_escape),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
