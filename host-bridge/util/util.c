/*
 * host-bridge/util/util.c: formatting, files, programs, numbers.
 */
#include <errno.h>
#include <signal.h>
#include <ftw.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/size.h"
#include "host-bridge/util/util.h"

char *
hb_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return (s);
}

/* This thread's BUREAU_HOME, over the environment's (hb_home_set). */
static __thread char *hb_home_over;

void
hb_home_set(const char *dir)
{
	free(hb_home_over);
	hb_home_over = dir != NULL ? strdup(dir) : NULL;
}

char *
hb_home(void)
{
	const char *env = getenv("BUREAU_HOME"), *home;
	struct passwd *pw;

	if (hb_home_over != NULL)
		return (strdup(hb_home_over));
	if (env != NULL && *env != '\0')
		return (strdup(env));
	home = getenv("HOME");
	if ((home == NULL || *home == '\0') &&
	    (pw = getpwuid(getuid())) != NULL)
		home = pw->pw_dir;
	if (home == NULL || *home == '\0')
		return (NULL);
	return (hb_fmt("%s/.local/share/bureau", home));
}

int
hb_self(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0 || (size_t)n >= len - 1) {
		if (n > 0)
			errno = ENAMETOOLONG;
		return (-1);
	}
	buf[n] = '\0';
	return (0);
}

char *
hb_exe_dir(void)
{
	char buf[PATH_MAX], *slash;

	if (hb_self(buf, sizeof buf) != 0)
		return (NULL);
	if ((slash = strrchr(buf, '/')) == NULL)
		return (NULL);
	*slash = '\0';
	return (strdup(buf));
}

int
hb_run(char *const argv[], int quiet, char **cause)
{
	pid_t pid = fork();
	int st;

	if (pid < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		return (-1);
	}
	if (pid == 0) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		}
		execvp(argv[0], argv);
		fprintf(stderr, "bureau: cannot run '%s': %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			*cause = hb_fmt("waitpid: %s", strerror(errno));
			return (-1);
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return (0);
	if (WIFEXITED(st))
		*cause = hb_fmt("'%s' exited with status %d", argv[0],
		    WEXITSTATUS(st));
	else
		*cause = hb_fmt("'%s' killed by signal %d", argv[0],
		    WTERMSIG(st));
	return (-1);
}

int
hb_write_file(const char *path, const char *data, size_t len, mode_t mode,
    char **cause)
{
	/* A name of our own, made new (mkostemp: O_CREAT|O_EXCL, which
	 * refuses an existing name, a symlink too): never a file or a
	 * symlink someone left at PATH.tmp, as a received desktop's
	 * directory may hold. The rename then replaces whatever PATH is
	 * (a symlink itself, never what it points at). */
	char *tmp = hb_fmt("%s.tmp-XXXXXX", path);
	size_t off = 0;
	int fd, e;

	if (tmp == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		e = errno;
		free(tmp);
		*cause = hb_fmt("cannot write '%s': %s", path, strerror(e));
		return (-1);
	}
	if (fchmod(fd, mode) != 0) {
		close(fd);
		goto fail;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			close(fd);
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0)
		goto fail;
	free(tmp);
	return (0);
fail:
	e = errno;
	*cause = hb_fmt("cannot write '%s': %s", path, strerror(e));
	unlink(tmp);
	free(tmp);
	return (-1);
}

char *
hb_read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, len = 0;

	if (f == NULL)
		return (NULL);
	for (;;) {
		size_t n;

		if (cap - len < 4096) {
			char *b = realloc(buf, cap + 65536);
			if (b == NULL) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return (NULL);
			}
			buf = b;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	return (buf);
}

int
hb_parse_size(const char *what, const char *s, long long *out, char **cause)
{
	unsigned long long v;

	if (size_parse(s, SIZE_UNIT_T | SIZE_UNIT_BYTES, 1ULL << 50, &v) !=
	        SIZE_OK ||
	    v == 0) {
		*cause = hb_fmt("invalid %s '%s': expected a positive number "
		                "with K, M, G or T, at most 1P",
		    what, s);
		return (-1);
	}
	*out = (long long)v;
	return (0);
}

int
hb_parse_int(const char *what, const char *s, long min, long max, long *out,
    char **cause)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (s[0] == '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) ||
	    *end != '\0' || errno != 0 || v < min || v > max) {
		*cause = hb_fmt("invalid %s '%s': expected a whole number from "
		                "%ld to %ld",
		    what, s, min, max);
		return (-1);
	}
	*out = v;
	return (0);
}

int
hb_pid_running(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (pid <= 0 || kill(pid, 0) != 0)
		return (0);
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return (0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return (0);
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold spaces and parentheses */
	return ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' ||
	    (p[2] != 'Z' && p[2] != 'X'));
}

ssize_t
hb_pid_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if (size == 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return (-1);
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	return (n);
}

int
hb_parse_duration(const char *what, const char *s, long min, long max,
    long *out, char **cause)
{
	char *end;
	long v, mul = 1;

	if (strcmp(s, "off") == 0) {
		*out = 0;
		return (0);
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (end != s && end[0] != '\0' && end[1] == '\0') {
		switch (end[0]) {
		case 's':
			mul = 1;
			end++;
			break;
		case 'm':
			mul = 60;
			end++;
			break;
		case 'h':
			mul = 3600;
			end++;
			break;
		case 'd':
			mul = 86400;
			end++;
			break;
		}
	}
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 ||
	    v > max / mul || v * mul < min || v * mul > max) {
		*cause = hb_fmt("invalid %s '%s': expected off or a duration "
		                "from %ld s to %ld s (such as 90s, 10m, 2h, "
		                "1d)",
		    what, s, min, max);
		return (-1);
	}
	*out = v * mul;
	return (0);
}

char *
hb_random_hex(size_t n)
{
	unsigned char b[64];
	char *s;

	if (n > sizeof b || (s = malloc(2 * n + 1)) == NULL)
		return (NULL);
	if (getrandom(b, n, 0) != (ssize_t)n) {
		free(s);
		return (NULL);
	}
	for (size_t i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", b[i]);
	return (s);
}

int
hb_mkdirs(const char *path, mode_t mode)
{
	char *p = strdup(path);
	int rv = 0;

	if (p == NULL) {
		errno = ENOMEM;
		return (-1);
	}
	/* ~/.local/share may not exist yet for a user who never ran a
	 * desktop application */
	for (char *s = p + 1; rv == 0 && *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			rv = -1;
		*s = '/';
	}
	if (rv == 0 && mkdir(p, mode) != 0 && errno != EEXIST)
		rv = -1;
	free(p);
	return (rv);
}

long long
hb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

char *
hb_qemu_escape(const char *s)
{
	size_t n = strlen(s), commas = 0;
	char *r, *p;

	for (size_t i = 0; i < n; i++)
		commas += s[i] == ',';
	if ((r = malloc(n + commas + 1)) == NULL)
		return (NULL);
	for (p = r; *s != '\0'; s++) {
		*p++ = *s;
		if (*s == ',')
			*p++ = ',';
	}
	*p = '\0';
	return (r);
}

void
hb_human(char *buf, size_t len, long long bytes)
{
	const char *u = "BKMGT";
	double v = (double)bytes;

	while (v >= 1024 && u[1]) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, *u == 'B' ? "%.0f%c" : "%.1f%c", v, *u);
}

static int
hb_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return (remove(path));
}

int
hb_rm_tree(const char *path)
{
	return (nftw(path, hb_rm_entry, 16, FTW_DEPTH | FTW_PHYS));
}

int
hb_lock_wait(const char *path, const char *who, char **cause)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0) {
		*cause = hb_fmt("cannot open '%s': %s", path, strerror(errno));
		return (-1);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return (fd);
	fprintf(stderr, "%s: waiting for another one to finish (%s)\n", who,
	    path);
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			*cause = hb_fmt("cannot lock '%s': %s", path,
			    strerror(errno));
			close(fd);
			return (-1);
		}
	}
	return (fd);
}

void
hb_detach_child(const char *log)
{
	int fd = open(log,
	    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setsid();
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	if (nul >= 0)
		dup2(nul, 0);
	close_range(3, ~0U, 0);
}

int
hb_flock_held_retry(int fd, int ms)
{
	long long end = hb_now_ms() + ms;

	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK || hb_now_ms() >= end)
			return (-1);
		usleep(5000);
	}
	return (0);
}
