/*
 * tools/policy.c: path confinement (--root) and the few file-system
 * operations the file and editor tools share. See tools/policy.h.
 *
 * Why not realpath() and a prefix check: between the check and the use a
 * symlink can be swapped into the path, and the use then follows it out of
 * the root. Here every lookup starts from the root's directory descriptor
 * and lets the kernel refuse an escape (openat2 RESOLVE_BENEATH, Linux
 * 5.6), or walks the path one component at a time with O_NOFOLLOW and
 * reads each symlink itself (older kernels, or a seccomp filter that
 * hides openat2). Both refuse a symlink with an absolute target: the
 * kernel does, and the walk follows it so the two agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tools/policy.h"

#define FS_LINKS_MAX 40 /* symlinks followed in one lookup, as Linux */
#define FS_RETRIES   8  /* openat2 EAGAIN (a rename raced the lookup) */
#define FS_TMP_TRIES 16

static struct {
	pthread_mutex_t lock;
	int inited;
	int rootfd;  /* O_PATH directory, -1 when paths are not confined */
	char *real;  /* the root's real path */
	char *given; /* the root as configured, cleaned */
	int have_openat2;
	char *cause; /* why the root cannot be used */
} fs = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.rootfd = -1,
};

/* --- paths as strings ---------------------------------------------------- */

/* Collapse repeated slashes and "." components, drop a trailing slash;
 * ".." is left to the lookup, which knows what it climbs. malloc'd. */
static char *
fs_clean(const char *p)
{
	size_t n = strlen(p), o = 0;
	char *s = malloc(n + 2);

	if (s == NULL)
		return (NULL);
	for (size_t i = 0; i < n;) {
		size_t j;

		if (p[i] == '/') {
			if (o == 0 || s[o - 1] != '/')
				s[o++] = '/';
			i++;
			continue;
		}
		for (j = i; j < n && p[j] != '/'; j++)
			;
		if (!(j - i == 1 && p[i] == '.')) {
			memcpy(s + o, p + i, j - i);
			o += j - i;
		} else if (j < n)
			i++; /* "./": skip the slash with the dot */
		i = j;
	}
	while (o > 1 && s[o - 1] == '/')
		o--;
	if (o == 0)
		s[o++] = '.';
	s[o] = '\0';
	return (s);
}

/* rel of abs below the root spelled as `root`, or NULL. */
static const char *
fs_below_one(const char *abs, const char *root)
{
	size_t n;

	if (root == NULL)
		return (NULL);
	if (strcmp(root, "/") == 0)
		return (abs + 1);
	n = strlen(root);
	if (strncmp(abs, root, n) != 0)
		return (NULL);
	if (abs[n] == '\0')
		return ("");
	if (abs[n] == '/')
		return (abs + n + 1);
	return (NULL);
}

static char *
fs_fdpath(int fd)
{
	char link[64], buf[PATH_MAX + 1];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, buf, sizeof buf - 1)) < 0)
		return (NULL);
	buf[n] = '\0';
	return (strdup(buf));
}

/* --- the root ------------------------------------------------------------ */

int
tool_fs_init(const struct tool_config *cfg, char **cause)
{
	int rv = 0;

	pthread_mutex_lock(&fs.lock);
	if (fs.inited)
		goto done;
	fs.inited = 1;
	if (cfg->root == NULL || *cfg->root == '\0')
		goto done;
	fs.rootfd = open(cfg->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fs.rootfd < 0) {
		if (asprintf(&fs.cause,
		        "root directory '%s' cannot be used: %s", cfg->root,
		        strerror(errno)) < 0)
			fs.cause = NULL;
		goto done;
	}
	fs.real = fs_fdpath(fs.rootfd);
	fs.given = fs_clean(cfg->root);
	if (fs.real == NULL || fs.given == NULL) {
		if (asprintf(&fs.cause,
		        "root directory '%s' cannot be used: "
		        "its path cannot be read from /proc",
		        cfg->root) < 0)
			fs.cause = NULL;
		close(fs.rootfd);
		fs.rootfd = -1;
		goto done;
	}
	/* The fallback walk is forced by tests so both paths are run. */
	fs.have_openat2 = getenv("BUREAU_NO_OPENAT2") == NULL;
	if (fs.have_openat2) {
		struct open_how how = { .flags = O_PATH | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH };
		long fd = syscall(SYS_openat2, fs.rootfd, ".", &how,
		    sizeof how);

		if (fd >= 0)
			close((int)fd);
		else
			fs.have_openat2 = 0; /* ENOSYS, or EPERM from seccomp */
	}
done:
	if (fs.cause != NULL) {
		rv = -1;
		if (cause != NULL)
			*cause = strdup(fs.cause);
	}
	pthread_mutex_unlock(&fs.lock);
	return (rv);
}

const char *
tool_fs_root(void)
{
	return (fs.rootfd >= 0 ? fs.real : NULL);
}

/* --- confined lookups ---------------------------------------------------- */

/* The walk's stack of directories below the root. */
struct fs_stack {
	int *fd;
	size_t n, cap;
};

static void
fs_stack_clear(struct fs_stack *s)
{
	for (size_t i = 0; i < s->n; i++)
		close(s->fd[i]);
	free(s->fd);
}

/*
 * openat2(root, rel, RESOLVE_BENEATH) by hand: one component at a time,
 * never letting the kernel follow a symlink, "..", kept on our own stack
 * so a directory renamed away cannot take us up and out.
 */
static int
fs_walk(int root, const char *rel, int flags, mode_t mode)
{
	struct fs_stack st = { 0 };
	char *todo = strdup(rel), *p, *comp;
	int links = 0, fd = -1, err = 0;

	if (todo == NULL) {
		errno = ENOMEM;
		return (-1);
	}
	p = todo;
	for (;;) {
		int cur = st.n > 0 ? st.fd[st.n - 1] : root, last;
		struct stat sb;
		char target[PATH_MAX + 1], *next;
		ssize_t tn;

		while (*p == '/')
			p++;
		if (*p == '\0') {
			/* the path names a directory we hold */
			fd = openat(cur, ".", flags, mode);
			if (fd < 0)
				err = errno;
			break;
		}
		comp = p;
		while (*p != '\0' && *p != '/')
			p++;
		if (*p == '/')
			*p++ = '\0';
		for (next = p; *next == '/'; next++)
			;
		last = *next == '\0';
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			if (st.n == 0) {
				err = EXDEV;
				break;
			}
			close(st.fd[--st.n]);
			continue;
		}
		if (fstatat(cur, comp, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT || !last || !(flags & O_CREAT)) {
				err = errno;
				break;
			}
		} else if (S_ISLNK(sb.st_mode)) {
			char *spliced;

			if ((tn = readlinkat(cur, comp, target,
			         sizeof target - 1)) < 0) {
				err = errno;
				break;
			}
			target[tn] = '\0';
			if (target[0] == '/') {
				err = EXDEV;
				break;
			}
			if (++links > FS_LINKS_MAX) {
				err = ELOOP;
				break;
			}
			if (asprintf(&spliced, "%s/%s", target, p) < 0) {
				err = ENOMEM;
				break;
			}
			free(todo);
			todo = p = spliced;
			continue;
		}
		if (last) {
			/* O_NOFOLLOW: a symlink put here since the fstatat
			 * makes this fail (ELOOP) instead of being followed */
			fd = openat(cur, comp, flags | O_NOFOLLOW, mode);
			if (fd >= 0 && (flags & O_PATH) &&
			    fstat(fd, &sb) == 0 && S_ISLNK(sb.st_mode)) {
				close(fd);
				fd = -1;
				errno = ELOOP;
			}
			if (fd < 0)
				err = errno;
			break;
		}
		fd = openat(cur, comp,
		    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			/* a symlink swapped in since the fstatat: look again */
			err = errno;
			if (err == ENOTDIR &&
			    fstatat(cur, comp, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(sb.st_mode))
				err = EAGAIN;
			break;
		}
		if (st.n == st.cap) {
			size_t cap = st.cap > 0 ? st.cap * 2 : 16;
			int *n = realloc(st.fd, cap * sizeof *n);

			if (n == NULL) {
				close(fd);
				err = ENOMEM;
				break;
			}
			st.fd = n;
			st.cap = cap;
		}
		st.fd[st.n++] = fd;
		fd = -1;
	}
	fs_stack_clear(&st);
	free(todo);
	if (fd < 0)
		errno = err != 0 ? err : EIO;
	return (fd);
}

/* openat below the root (confined) or as given. -1 with errno. */
static int
fs_openat(const char *rel, int flags, mode_t mode)
{
	int fd = -1;

	flags |= O_CLOEXEC | O_NOCTTY;
	if (flags & O_PATH) /* openat2 refuses anything else with it */
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	if (fs.rootfd < 0)
		return (openat(AT_FDCWD, rel, flags, mode));
	for (int i = 0; i < FS_RETRIES; i++) {
		if (fs.have_openat2) {
			struct open_how how = { .flags = (unsigned)flags,
				.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode :
				                                          0,
				.resolve = RESOLVE_BENEATH |
				    RESOLVE_NO_MAGICLINKS };

			fd = (int)syscall(SYS_openat2, fs.rootfd, rel, &how,
			    sizeof how);
		} else
			fd = fs_walk(fs.rootfd, rel, flags, mode);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return (fd);
}

/* A client path to a path below the root (or as given), malloc'd. */
static int
fs_relative(struct tool_call *call, const char *field, const char *path,
    char **rel)
{
	const char *below;
	char *clean;

	*rel = NULL;
	if (*path == '\0')
		return (tool_fail(call, BD_EINVAL, "%s '': empty path", field));
	if (strlen(path) >= PATH_MAX)
		return (tool_fail(call, BD_EINVAL,
		    "%s '%.64s...': longer than "
		    "%d bytes",
		    field, path, PATH_MAX - 1));
	if (fs.cause != NULL)
		return (tool_fail(call, BD_EIO, "%s", fs.cause));
	if ((clean = fs_clean(path)) == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	if (fs.rootfd < 0 || clean[0] != '/') {
		*rel = clean;
		return (0);
	}
	if ((below = fs_below_one(clean, fs.real)) == NULL)
		below = fs_below_one(clean, fs.given);
	if (below == NULL) {
		free(clean);
		return (tool_fail(call, BD_EPERM,
		    "%s '%s': outside the root "
		    "directory '%s'",
		    field, path, fs.real));
	}
	*rel = strdup(*below != '\0' ? below : ".");
	free(clean);
	if (*rel == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	return (0);
}

/* Resolve an already relative (or unconfined) path. */
static int
fs_resolve_rel(struct tool_call *call, struct tool_fspath *fp, char *rel)
{
	char *slash, *dir;
	const char *base;

	fp->rel = rel;
	slash = strrchr(rel, '/');
	base = slash != NULL ? slash + 1 : rel;
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
	    strcmp(rel, "/") == 0) {
		/* the path names a directory: hold it, act on "." */
		dir = strdup(rel);
		fp->name = strdup(".");
	} else if (slash == NULL) {
		dir = strdup(".");
		fp->name = strdup(rel);
	} else {
		dir = slash == rel ? strdup("/") :
		                     strndup(rel, (size_t)(slash - rel));
		fp->name = strdup(base);
	}
	if (dir == NULL || fp->name == NULL) {
		free(dir);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	fp->dirfd = fs_openat(dir, O_PATH | O_DIRECTORY, 0);
	free(dir);
	if (fp->dirfd < 0)
		return (tool_fs_fail(call, fp, errno, "open its directory"));
	return (0);
}

int
tool_fs_resolve(struct tool_call *call, const char *field, const char *path,
    struct tool_fspath *fp)
{
	char *rel;

	memset(fp, 0, sizeof *fp);
	fp->dirfd = -1;
	fp->field = field;
	fp->client = path;
	if (fs_relative(call, field, path, &rel) != 0)
		return (call->code);
	return (fs_resolve_rel(call, fp, rel));
}

void
tool_fs_release(struct tool_fspath *fp)
{
	if (fp->dirfd >= 0)
		close(fp->dirfd);
	fp->dirfd = -1;
	free(fp->name);
	free(fp->rel);
	fp->name = fp->rel = NULL;
}

int
tool_fs_open(const struct tool_fspath *fp, int flags, mode_t mode, int *fd)
{
	*fd = fs_openat(fp->rel, flags, mode);
	return (*fd < 0 ? -1 : 0);
}

int
tool_fs_lstat(const struct tool_fspath *fp, struct stat *st)
{
	return (fstatat(fp->dirfd, fp->name, st, AT_SYMLINK_NOFOLLOW));
}

/* --- errors -------------------------------------------------------------- */

int
tool_fs_fail(struct tool_call *call, const struct tool_fspath *fp, int err,
    const char *what)
{
	char buf[256];
	const char *s;
	int code;

	if (err == EXDEV && fs.rootfd >= 0)
		return (tool_fail(call, BD_EPERM,
		    "%s '%s': leads outside the "
		    "root directory '%s'",
		    fp->field, fp->client, fs.real));
	switch (err) {
	case EACCES:
	case EPERM:
	case EROFS:
	case ETXTBSY:
		code = BD_EPERM;
		break;
	case ENOENT:
	case ENOTDIR:
		code = BD_ENOTFOUND;
		break;
	case ELOOP:
	case ENAMETOOLONG:
	case EINVAL:
	case EISDIR:
	case ENOTEMPTY:
	case EEXIST:
	case EBUSY:
		code = BD_EINVAL;
		break;
	case EFBIG:
		code = BD_ETOOLARGE;
		break;
	case ENOMEM:
		code = BD_EINTERNAL;
		break;
	default:
		code = BD_EIO;
	}
	s = strerror_r(err, buf, sizeof buf);
	return (tool_fail(call, code, "%s '%s': cannot %s: %c%s", fp->field,
	    fp->client, what,
	    s[0] >= 'A' && s[0] <= 'Z' ? s[0] - 'A' + 'a' : s[0],
	    s + (s[0] != '\0')));
}

/* --- shared operations --------------------------------------------------- */

static int
fs_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		p += n;
		len -= (size_t)n;
	}
	return (0);
}

int
tool_fs_replace(struct tool_call *call, const struct tool_fspath *fp,
    const void *buf, size_t len, int mode)
{
	struct tool_fspath real = { .dirfd = -1 };
	const struct tool_fspath *at = fp;
	struct stat st;
	char tmp[NAME_MAX + 1];
	int fd = -1, exists, err, dfd;

	exists = tool_fs_lstat(fp, &st) == 0;
	if (exists && S_ISLNK(st.st_mode)) {
		/* Write through the link (a dotfile linked elsewhere stays
		 * linked), to where it leads inside the root. A link to
		 * nowhere is replaced itself. */
		int lfd;
		char *path, *rel;
		const char *below;

		if (tool_fs_open(fp, O_PATH, 0, &lfd) == 0) {
			path = fs_fdpath(lfd);
			close(lfd);
			if (path == NULL)
				return (tool_fs_fail(call, fp, errno,
				    "follow the symlink"));
			below = fs.rootfd >= 0 ? fs_below_one(path, fs.real) :
			                         path;
			rel = below == NULL ?
			    NULL :
			    strdup(*below != '\0' ? below : ".");
			free(path);
			if (rel == NULL)
				return (tool_fs_fail(call, fp,
				    below == NULL ? EXDEV : ENOMEM,
				    "follow the symlink"));
			real.field = fp->field;
			real.client = fp->client;
			if (fs_resolve_rel(call, &real, rel) != 0) {
				tool_fs_release(&real);
				return (call->code);
			}
			at = &real;
			exists = tool_fs_lstat(at, &st) == 0;
		} else if (errno != ENOENT)
			return (tool_fs_fail(call, fp, errno,
			    "follow the symlink"));
	}
	if (exists && S_ISDIR(st.st_mode)) {
		tool_fs_fail(call, fp, EISDIR, "write");
		goto out;
	}
	for (int i = 0; i < FS_TMP_TRIES && fd < 0; i++) {
		snprintf(tmp, sizeof tmp, ".%.200s.bureau-%08x", at->name,
		    randombytes_random());
		fd = openat(at->dirfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		tool_fs_fail(call, fp, errno, "create a temporary file");
		goto out;
	}
	if (mode >= 0 || (exists && S_ISREG(st.st_mode))) {
		if (exists && S_ISREG(st.st_mode) && geteuid() == 0)
			(void)!fchown(fd, st.st_uid, st.st_gid);
		if (fchmod(fd, mode >= 0 ? (mode_t)mode : st.st_mode & 07777) !=
		    0)
			goto fail;
	}
	if (fs_write_all(fd, buf, len) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(at->dirfd, tmp, at->dirfd, at->name) != 0)
		goto fail;
	/* the rename itself survives a crash once the directory is synced */
	if ((dfd = openat(at->dirfd, ".",
	         O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	tool_fs_release(&real);
	return (0);

fail:
	err = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(at->dirfd, tmp, 0);
	tool_fs_fail(call, fp, err, "write");
out:
	tool_fs_release(&real);
	return (call->code);
}

int
tool_fs_mkdirs(struct tool_call *call, const char *field, const char *path,
    mode_t mode)
{
	char *rel;
	size_t n;

	if (fs_relative(call, field, path, &rel) != 0)
		return (call->code);
	n = strlen(rel);
	for (size_t i = 1; i <= n; i++) {
		struct tool_fspath fp = { .dirfd = -1,
			.field = field,
			.client = path };
		char *prefix;
		int fd;

		if (i < n && rel[i] != '/')
			continue;
		if ((prefix = strndup(rel, i)) == NULL) {
			free(rel);
			return (tool_fail(call, BD_EINTERNAL, "out of memory"));
		}
		if (fs_resolve_rel(call, &fp, prefix) != 0)
			goto fail;
		if (mkdirat(fp.dirfd, fp.name, mode) != 0) {
			if (errno != EEXIST) {
				tool_fs_fail(call, &fp, errno,
				    "create the directory");
				goto fail;
			}
			/* there already: it must be a directory (or a link
			 * to one inside the root) */
			if (tool_fs_open(&fp, O_PATH | O_DIRECTORY, 0, &fd) !=
			    0) {
				tool_fs_fail(call, &fp, errno,
				    "create the directory");
				goto fail;
			}
			close(fd);
		}
		tool_fs_release(&fp);
		continue;
	fail:
		tool_fs_release(&fp);
		free(rel);
		return (call->code);
	}
	free(rel);
	return (0);
}

/* --- tool.h's string form ------------------------------------------------ */

int
tool_path(struct tool_call *call, const char *field, const char *path,
    char **out)
{
	struct tool_fspath fp;
	struct stat st;
	char *dir;
	int fd;

	*out = NULL;
	/* a tool other than file and editor may be the first to ask */
	(void)tool_fs_init(call->cfg, NULL);
	if (tool_fs_resolve(call, field, path, &fp) != 0) {
		tool_fs_release(&fp);
		return (call->code);
	}
	/* A name that is not a symlink: its directory's path and the name,
	 * not the file's own descriptor's path, which reads "PATH (deleted)"
	 * once the file is replaced (a concurrent atomic write), so that two
	 * edits of one file got different keys. */
	if (strcmp(fp.name, ".") != 0 &&
	    (tool_fs_lstat(&fp, &st) == 0 ? !S_ISLNK(st.st_mode) :
	                                    errno == ENOENT)) {
		if ((dir = fs_fdpath(fp.dirfd)) != NULL) {
			if (asprintf(out, "%s%s%s", dir,
			        strcmp(dir, "/") == 0 ? "" : "/", fp.name) < 0)
				*out = NULL;
			free(dir);
		}
	} else if (tool_fs_open(&fp, O_PATH, 0, &fd) == 0) {
		*out = fs_fdpath(fd);
		close(fd);
	} else if (errno == ENOENT && (dir = fs_fdpath(fp.dirfd)) != NULL) {
		if (asprintf(out, "%s%s%s", dir,
		        strcmp(dir, "/") == 0 ? "" : "/", fp.name) < 0)
			*out = NULL;
		free(dir);
	} else {
		tool_fs_fail(call, &fp, errno, "resolve");
		tool_fs_release(&fp);
		return (call->code);
	}
	tool_fs_release(&fp);
	if (*out == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	return (0);
}
