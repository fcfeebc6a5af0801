/*
 * Unit tests: the command line bureau has a shell on another machine run
 * (host-bridge/util/shquote.c, cli/remote.c's `ssh MACHINE LINE`). Every
 * word must arrive as it was, whatever it holds: the line is checked
 * against its exact text, and against real shells (the POSIX sh and
 * bash found here), each running `printf '%s\0' WORDS...` from it and
 * the words compared byte for byte with what came back. A word that a
 * shell expanded, split, globbed or ran would come back otherwise (and
 * the canary files below would appear).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-bridge/util/shquote.h"
#include "host-bridge/util/util.h"

/* The program the shell runs: each word, then a NUL. */
#define PRINT "printf '%s\\0'"

/* The shells the line is tried with (those missing here are skipped). */
static const char *const shells[] = { "/bin/sh", "/bin/bash",
	"/usr/bin/busybox", "/bin/zsh", "/bin/mksh", NULL };

/* A directory of its own for the shells to run in, empty: a glob that
 * matched, or a command that ran (touch), would show in it. */
static char cwd[] = "/tmp/bureau-shquote.XXXXXX";

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(cwd) == NULL)
		return (-1);
	/* files a glob in a word would match if it were expanded */
	static const char *const files[] = { "a", "b", "ab", "x y", NULL };

	for (const char *const *f = files; *f != NULL; f++) {
		char *p = hb_fmt("%s/%s", cwd, *f);
		int fd = open(p, O_CREAT | O_WRONLY, 0600);

		free(p);
		if (fd < 0)
			return (-1);
		close(fd);
	}
	/* what $BUREAU_T_SECRET would expand to */
	setenv("BUREAU_T_SECRET", "expanded", 1);
	return (0);
}

static int
teardown(void **state)
{
	(void)state;
	hb_rm_tree(cwd);
	return (0);
}

/* Nothing in cwd but the files setup made. */
static void
assert_no_canary(void)
{
	DIR *d = opendir(cwd);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (strcmp(e->d_name, "a") != 0 &&
		    strcmp(e->d_name, "b") != 0 &&
		    strcmp(e->d_name, "ab") != 0 &&
		    strcmp(e->d_name, "x y") != 0)
			fail_msg("a word ran a command: '%s' appeared",
			    e->d_name);
		n++;
	}
	closedir(d);
	assert_int_equal(n, 4);
}

/*
 * Run shell with line: as `shell -c line` (what sshd does with the line
 * ssh sends), or from a file when script (a line longer than one
 * argument may be). Its stdout into *out (malloc'd, *len bytes); its exit
 * status returned.
 */
static int
run_shell(const char *shell, const char *line, int script, char **out,
    size_t *len)
{
	int p[2], st;
	char *path = NULL;
	size_t cap = 65536;
	ssize_t n;
	pid_t pid;

	if (script) {
		int fd;

		path = hb_fmt("%s.script", cwd);
		assert_non_null(path);
		fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, line, strlen(line)),
		    (ssize_t)strlen(line));
		close(fd);
	}
	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		dup2(nul, 0);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (chdir(cwd) != 0)
			_exit(126);
		if (strstr(shell, "busybox") != NULL)
			execl(shell, "busybox", "sh", script ? path : "-c",
			    script ? NULL : line, (char *)NULL);
		else if (script)
			execl(shell, shell, path, (char *)NULL);
		else
			execl(shell, shell, "-c", line, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = malloc(cap);
	*len = 0;
	assert_non_null(*out);
	while ((n = read(p[0], *out + *len, cap - *len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		*len += (size_t)n;
		if (*len == cap) {
			cap *= 2;
			*out = realloc(*out, cap);
			assert_non_null(*out);
		}
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	if (path != NULL) {
		unlink(path);
		free(path);
	}
	return (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* The line of words, run by every shell here: the same words come back,
 * byte for byte, and nothing ran. */
static void
roundtrip_with(char *const *words, int n, int script)
{
	char *line = sh_line(PRINT, words, n);
	int tried = 0;

	assert_non_null(line);
	for (const char *const *sh = shells; *sh != NULL; sh++) {
		char *out, *p;
		size_t len;
		int i;

		if (access(*sh, X_OK) != 0)
			continue;
		tried++;
		assert_int_equal(run_shell(*sh, line, script, &out, &len), 0);
		/* printf with no word prints its format once: one "" */
		p = out;
		for (i = 0; i < (n ? n : 1); i++) {
			const char *want = n ? words[i] : "";
			size_t wl = strlen(want);

			if ((size_t)(out + len - p) < wl + 1 ||
			    memcmp(p, want, wl) != 0 || p[wl] != '\0')
				fail_msg("%s: word %d came back otherwise "
				         "(%zu bytes of %d words)",
				    *sh, i, len, n);
			p += wl + 1;
		}
		if (p != out + len)
			fail_msg("%s: more came back than %d words", *sh, n);
		free(out);
	}
	assert_true(tried >= 1); /* /bin/sh at least */
	assert_no_canary();
	free(line);
}

static void
roundtrip(char *const *words, int n)
{
	roundtrip_with(words, n, 0);
}

/* Words each alone, then all in one line. */
static void
roundtrip_each(char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		roundtrip(words + i, 1);
	roundtrip(words, n);
}

static void
test_exact_text(void **state)
{
	char *w[] = { "host", "probe", "qemu:///system" };
	char *l;

	(void)state;
	l = sh_line("bureau", w, 3);
	assert_string_equal(l, "bureau 'host' 'probe' 'qemu:///system'");
	free(l);
	/* the program as it is, no word: nothing added */
	l = sh_line("bureau", w, 0);
	assert_string_equal(l, "bureau");
	free(l);
	{
		char *e[] = { "" };

		l = sh_line("cat", e, 1);
		assert_string_equal(l, "cat ''");
		free(l);
	}
	{
		char *q[] = { "it's", "'", "''", "a'" };

		l = sh_line("x", q, 4);
		assert_string_equal(l,
		    "x 'it'\\''s' ''\\''' "
		    "''\\'''\\''' 'a'\\'''");
		free(l);
	}
	{
		/* nothing but ' is touched: backslashes, $, newlines as
		 * they are, inside the quotes */
		char *b[] = { "\\$`\"\n;*" };

		l = sh_line("x", b, 1);
		assert_string_equal(l, "x '\\$`\"\n;*'");
		free(l);
	}
}

static void
test_empty_and_space(void **state)
{
	char *w[] = { "", " ", "  ", "a b", " a", "a ", "\t", "a\tb", "x y", "",
		"" };

	(void)state;
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
	roundtrip(w, 0);
}

static void
test_quotes_and_backslashes(void **state)
{
	char *w[] = { "'", "''", "'''", "it's", "'a'", "\"", "\"\"", "\"'\"",
		"'\"'", "\\", "\\\\", "\\'", "'\\", "a\\'b", "\\n", "\\0",
		"'\\''", "\\\"", "$'\\n'", "$\"x\"", "'$(touch q1)'",
		"\"$(touch q2)\"" };

	(void)state;
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
}

static void
test_expansions(void **state)
{
	char *w[] = { "$BUREAU_T_SECRET", "${BUREAU_T_SECRET}", "$", "$$", "$?",
		"$0", "$1", "$@", "$*", "${x:-y}", "$((1+1))", "$(touch e1)",
		"`touch e2`", "a`touch e3`b", "$(", "`", "~", "~root", "~/x",
		"a=~", "!", "!!", "!$", "%s", "%b\\n", "${BUREAU_T_SECRET:?}",
		"\\$BUREAU_T_SECRET" };

	(void)state;
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
}

static void
test_operators(void **state)
{
	char *w[] = { ";", "a;b", "; touch o1", "&", "&&", "|", "||",
		"a|touch o2", ">o3", "<x", ">>o4", "2>&1", "(", ")", "{", "}",
		"{a,b}", "(touch o5)", "#", "#c", "a#b", " #x", "a\nb", "\n",
		"\n\n", "x\ntouch o6", "\r", "a\r\nb", "\\\n", "'\n'", "\n'",
		"&touch o7" };

	(void)state;
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
}

static void
test_globs(void **state)
{
	/* the shells' directory holds a, b, ab and "x y": an expanded glob
	 * comes back as those names */
	char *w[] = { "*", "?", "[a]", "[ab]", "a*", "*b", "??", "[!a]", "x*",
		"*/", ".*", "**" };

	(void)state;
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
}

static void
test_options(void **state)
{
	/* a word that looks like an option stays a word (it is no
	 * option of the shell's, nor of the program's format) */
	char *w[] = { "-", "--", "-n", "-e", "-v", "--help", "-oProxyCommand=x",
		"--version", "-c", "-i" };

	(void)state;
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
}

static void
test_bytes(void **state)
{
	/* UTF-8, invalid UTF-8, control characters and every byte but NUL */
	char all[256];
	char *w[] = { "é", "日本語", "\xf0\x9f\x96\xa5", "\xff", "\xfe\xff",
		"\xc3", "\x80", "\x01", "\x1b[31mred\x1b[0m", "\x7f", all,
		"\xe2\x80\xae" /* right-to-left override */ };

	(void)state;
	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	roundtrip_each(w, (int)(sizeof w / sizeof *w));
}

static void
test_long(void **state)
{
	/* a word of 60000 bytes, a quarter of them quotes (its line near
	 * the 128 KiB an argument may be, as `sh -c` gets it) */
	size_t n = 60000;
	char *big = malloc(n + 1), *huge;
	char *words[1000];

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = "ab\\$ `\n;"[i % 8];
	for (size_t i = 0; i < n; i += 4)
		big[i] = '\'';
	big[n] = '\0';
	roundtrip(&big, 1);
	/* a word of 1 MiB, by a script file (an argument is at most
	 * 128 KiB) */
	n = 1 << 20;
	huge = malloc(n + 1);
	assert_non_null(huge);
	for (size_t i = 0; i < n; i++)
		huge[i] = (char)(1 + i % 255);
	huge[n] = '\0';
	roundtrip_with(&huge, 1, 1);
	{
		/* its text: 2 quotes around it, 3 more bytes for each ' */
		size_t q = 0;
		char *l = sh_line("p", &huge, 1);

		for (size_t i = 0; i < n; i++)
			q += huge[i] == '\'';
		assert_non_null(l);
		assert_int_equal(strlen(l), 1 + 1 + 2 + n + 3 * q);
		free(l);
	}
	/* a thousand words */
	for (int i = 0; i < 1000; i++)
		words[i] = i % 3 == 0 ? "a b" : i % 3 == 1 ? "'" : "";
	roundtrip(words, 1000);
	free(big);
	free(huge);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_text),
		cmocka_unit_test(test_empty_and_space),
		cmocka_unit_test(test_quotes_and_backslashes),
		cmocka_unit_test(test_expansions),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_globs),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_long),
	};

	return (cmocka_run_group_tests(tests, setup, teardown));
}
