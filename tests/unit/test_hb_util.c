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
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void
test_mkdirs(void **state)
{
	char tmpl[] = "/tmp/bureau-mkdirs.XXXXXX", *deep;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	/* a fresh user's ~/.local/share/bureau: none of it exists */
	deep = hb_fmt("%s/.local/share/bureau", tmpl);
	assert_int_equal(hb_mkdirs(deep, 0700), 0);
	assert_int_equal(stat(deep, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(hb_mkdirs(deep, 0700), 0); /* exists: fine */
	/* a file in the way is an error */
	char *file = hb_fmt("%s/f", tmpl), *under = hb_fmt("%s/f/x", tmpl);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(hb_mkdirs(under, 0700), -1);
	rmdir(deep);
	free(deep);
	deep = hb_fmt("%s/.local/share", tmpl);
	rmdir(deep);
	free(deep);
	deep = hb_fmt("%s/.local", tmpl);
	rmdir(deep);
	free(deep);
	unlink(file);
	rmdir(tmpl);
	free(file);
	free(under);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_qemu_escape),
		cmocka_unit_test(test_mkdirs),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
