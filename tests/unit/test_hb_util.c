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
#include <dirent.h>
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

/* The whole of a small file, or NULL. */
static char *
slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return (NULL);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (buf);
}

/*
 * hb_write_file never writes through a name someone else left in the
 * directory (a received desktop's, issue 38): a symlink at PATH.tmp to a
 * file outside (the old temporary name, opened with O_TRUNC, wrote
 * through it) or at PATH itself leaves that file as it was; the new file
 * is a regular one with the mode asked for, and no temporary is left.
 */
static void
test_write_file_planted(void **state)
{
	char tmpl[] = "/tmp/bureau-write.XXXXXX", *cause = NULL;
	char *outside, *dir, *path, *tmp, *other, *text;
	struct stat st;
	DIR *dp;
	struct dirent *e;
	int n = 0;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	outside = hb_fmt("%s/outside", tmpl);
	dir = hb_fmt("%s/desk", tmpl);
	path = hb_fmt("%s/desktop.json", dir);
	tmp = hb_fmt("%s/desktop.json.tmp", dir);
	other = hb_fmt("%s/endpoint", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	FILE *f = fopen(outside, "w");
	assert_non_null(f);
	fputs("keep", f);
	fclose(f);
	assert_int_equal(symlink(outside, tmp), 0);
	assert_int_equal(symlink(outside, other), 0);

	assert_int_equal(hb_write_file(path, "{}\n", 3, 0600, &cause), 0);
	assert_int_equal(hb_write_file(other, "tcp\n", 4, 0644, &cause), 0);
	assert_null(cause);
	assert_string_equal(slurp(outside), "keep");
	text = slurp(path);
	assert_non_null(text);
	assert_string_equal(text, "{}\n");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	/* PATH a symlink: replaced by the file, its target untouched */
	assert_int_equal(lstat(other, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_string_equal(slurp(other), "tcp\n");
	/* the planted symlink stays what it was; no temporary left */
	assert_int_equal(lstat(tmp, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_non_null(dp = opendir(dir));
	while ((e = readdir(dp)) != NULL)
		n += e->d_name[0] != '.';
	closedir(dp);
	assert_int_equal(n, 3);

	unlink(tmp);
	unlink(path);
	unlink(other);
	rmdir(dir);
	unlink(outside);
	rmdir(tmpl);
	free(outside);
	free(dir);
	free(path);
	free(tmp);
	free(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_qemu_escape),
		cmocka_unit_test(test_mkdirs),
		cmocka_unit_test(test_write_file_planted),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
