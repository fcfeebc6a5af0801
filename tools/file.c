/*
 * tools/file.c: the file tool: move files in and out of the desktop.
 *
 *   read   {path, offset, length}          -> data (base64), size, eof
 *   write  {path, data | text, mode, parents, offset | append, truncate}
 *   list   {path}                          -> entries
 *   stat   {path}
 *   remove {path, recursive}
 *   mkdir  {path, parents, mode}
 *   move   {path, to, overwrite}
 *
 * A plain write replaces the file atomically (tools/policy.c). Files too
 * large for one request move in chunks: read with offset/length, write
 * with offset (in place, idempotent, no holes) or append, then a `move`
 * of the finished file to its name if readers must never see it partial.
 * docs/tools-files.md has the limits and the chunk protocol.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/policy.h"
#include "tools/tool.h"

/* The largest read in one reply: its base64 (4/3) fits a 64 MiB message. */
#define FILE_READ_MAX  (48LL << 20)
#define FILE_LIST_MAX  100000 /* entries in one list reply */
#define FILE_DEPTH_MAX 512    /* directory depth a recursive remove walks */
#define FILE_SIZE_MAX  (1LL << 50)

static int
file_init(const struct tool_config *cfg, char **cause)
{
	return (tool_fs_init(cfg, cause));
}

static const char *
file_type(mode_t m)
{
	if (S_ISREG(m))
		return ("file");
	if (S_ISDIR(m))
		return ("dir");
	if (S_ISLNK(m))
		return ("symlink");
	if (S_ISFIFO(m))
		return ("fifo");
	if (S_ISSOCK(m))
		return ("socket");
	if (S_ISCHR(m))
		return ("char");
	if (S_ISBLK(m))
		return ("block");
	return ("other");
}

static json_t *
file_time(const struct timespec *ts)
{
	return (json_real((double)ts->tv_sec + (double)ts->tv_nsec / 1e9));
}

/* {name?, type, size, mode, mtime, target?} for one entry. */
static json_t *
file_entry(int dirfd, const char *name, const struct stat *st, int full)
{
	char mode[8], target[4096];
	json_t *e;
	ssize_t n;

	snprintf(mode, sizeof mode, "%04o", (unsigned)(st->st_mode & 07777));
	e = json_pack("{s:s, s:I, s:s, s:o}", "type", file_type(st->st_mode),
	    "size", (json_int_t)st->st_size, "mode", mode, "mtime",
	    file_time(&st->st_mtim));
	if (e == NULL)
		return (NULL);
	if (S_ISLNK(st->st_mode) &&
	    (n = readlinkat(dirfd, name, target, sizeof target - 1)) >= 0) {
		json_t *t = json_stringn(target, (size_t)n);

		if (t != NULL)
			json_object_set_new(e, "target", t);
	}
	if (full) {
		json_object_set_new(e, "atime", file_time(&st->st_atim));
		json_object_set_new(e, "ctime", file_time(&st->st_ctim));
		json_object_set_new(e, "uid", json_integer(st->st_uid));
		json_object_set_new(e, "gid", json_integer(st->st_gid));
		json_object_set_new(e, "nlink",
		    json_integer((json_int_t)st->st_nlink));
	}
	return (e);
}

/*
 * Open the regular file fp names (a final symlink followed, confined) with
 * flags, *fd and *st filled; anything else is refused with a typed error
 * naming the field, before the open that could block or act: opening a
 * FIFO waits for the other end (for good, holding a worker and delaying
 * the shutdown), a device may block, never end, or act on being opened.
 * With O_CREAT a missing file is created. A directory is refused with
 * the caller's `dirmsg` when it gives one.
 */
static int
file_open_reg(struct tool_call *call, struct tool_fspath *fp, int flags,
    mode_t mode, const char *dirmsg, int *fd, struct stat *st)
{
	int pfd;

	*fd = -1;
	if (tool_fs_open(fp, O_PATH, 0, &pfd) == 0) {
		int rv = fstat(pfd, st);

		close(pfd);
		if (rv != 0)
			return (tool_fs_fail(call, fp, errno, "stat"));
		if (!S_ISREG(st->st_mode))
			goto refuse;
	} else if (errno != ENOENT || !(flags & O_CREAT))
		return (tool_fs_fail(call, fp, errno, "open"));
	/* O_NONBLOCK: a FIFO swapped in since the look above must not block
	 * here either (ENXIO for a writer without a reader); regular files
	 * ignore the flag, so reads and writes stay as they were */
	if (tool_fs_open(fp, flags | O_NONBLOCK, mode, fd) != 0) {
		if (errno == ENXIO && tool_fs_open(fp, O_PATH, 0, &pfd) == 0) {
			int rv = fstat(pfd, st);

			close(pfd);
			if (rv == 0 && !S_ISREG(st->st_mode))
				goto refuse;
			errno = ENXIO;
		}
		return (tool_fs_fail(call, fp, errno, "open"));
	}
	if (fstat(*fd, st) != 0) {
		tool_fs_fail(call, fp, errno, "stat");
		goto fail;
	}
	if (!S_ISREG(st->st_mode))
		goto refuse;
	return (0);
refuse:
	if (S_ISDIR(st->st_mode) && dirmsg != NULL)
		tool_fail(call, BD_EINVAL, "%s '%s': is a directory (%s)",
		    fp->field, fp->client, dirmsg);
	else
		tool_fail(call, BD_EINVAL,
		    "%s '%s': not a regular file (%s): "
		    "the file tool reads and writes regular files only",
		    fp->field, fp->client, file_type(st->st_mode));
fail:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return (call->code);
}

/* "mode": "0644" / "644" / "0o644" or an integer; -1 when absent. */
static int
file_arg_mode(struct tool_call *call, int *mode)
{
	json_t *v = json_object_get(call->req, "mode");
	long long n;

	*mode = -1;
	if (v == NULL || json_is_null(v))
		return (0);
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;

		if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
			s += 2;
		errno = 0;
		n = strtoll(s, &end, 8);
		if (*s == '\0' || *end != '\0' || errno != 0 || n < 0 ||
		    n > 07777)
			return (tool_fail(call, BD_EINVAL,
			    "mode '%s': expected "
			    "an octal mode such as \"0644\"",
			    json_string_value(v)));
		*mode = (int)n;
		return (0);
	}
	if (tool_arg_int(call, "mode", 1, 0, 07777, 0, &n) != 0)
		return (call->code);
	*mode = (int)n;
	return (0);
}

/* --- read ---------------------------------------------------------------- */

static int
file_read(struct tool_call *call, struct tool_fspath *fp)
{
	long long off, want;
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0, cap;
	int fd, eof = 0;

	if (tool_arg_int(call, "offset", 0, 0, FILE_SIZE_MAX, 0, &off) != 0 ||
	    tool_arg_int(call, "length", 0, 0, FILE_READ_MAX, FILE_READ_MAX,
	        &want) != 0)
		return (call->code);
	if (file_open_reg(call, fp, O_RDONLY, 0, "use the 'list' action", &fd,
	        &st) != 0)
		return (call->code);
	/* /proc files say size 0 and still have data: grow as it comes */
	cap = st.st_size > off ? (size_t)(st.st_size - off) : 0;
	cap = cap + 1 < (size_t)want ? cap + 1 : (size_t)want;
	if (cap < 4096 && (size_t)want > cap)
		cap = (size_t)want < 4096 ? (size_t)want : 4096;
	if ((buf = malloc(cap > 0 ? cap : 1)) == NULL) {
		tool_fail(call, BD_EINTERNAL, "out of memory");
		goto out;
	}
	while (got < (size_t)want) {
		ssize_t n;

		if (got == cap) {
			size_t ncap = cap * 2 < (size_t)want ? cap * 2 :
			                                       (size_t)want;
			uint8_t *nb = realloc(buf, ncap);

			if (nb == NULL) {
				tool_fail(call, BD_EINTERNAL, "out of memory");
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		n = pread(fd, buf + got, cap - got,
		    (off_t)(off + (long long)got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			tool_fs_fail(call, fp, errno, "read");
			goto out;
		}
		if (n == 0) {
			eof = 1;
			break;
		}
		got += (size_t)n;
	}
	if (!eof && off + (long long)got >= (long long)st.st_size &&
	    st.st_size > 0)
		eof = 1;
	if (tool_set_base64(call, "data", buf, got) != 0)
		goto out;
	tool_set_int(call, "size", (long long)st.st_size);
	tool_set_int(call, "offset", off);
	tool_set_int(call, "length", (long long)got);
	tool_set_bool(call, "eof", eof);
	tool_set_output(call,
	    "read %zu bytes of '%s' at offset %lld (size "
	    "%lld%s)",
	    got, fp->client, off, (long long)st.st_size,
	    eof ? ", end of file" : "");
out:
	free(buf);
	close(fd);
	return (call->code);
}

/* --- write --------------------------------------------------------------- */

static int
file_pwrite_all(int fd, const uint8_t *p, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return (0);
}

/* In place at an offset or at the end: the chunked path. */
static int
file_write_at(struct tool_call *call, struct tool_fspath *fp,
    const uint8_t *buf, size_t len, long long off, int append, int trunc,
    int mode)
{
	struct stat st;
	int fd, flags = O_WRONLY | O_CREAT;

	if (append)
		flags |= O_APPEND;
	if (file_open_reg(call, fp, flags, mode >= 0 ? (mode_t)mode : 0666,
	        NULL, &fd, &st) != 0)
		return (call->code);
	if (append)
		off = (long long)st.st_size;
	else if (off > (long long)st.st_size) {
		/* a lost chunk would leave a hole of zeros: refuse */
		tool_fail(call, BD_EBOUNDS,
		    "offset %lld: past the end of '%s' "
		    "(size %lld)",
		    off, fp->client, (long long)st.st_size);
		goto out;
	}
	if (mode >= 0 && fchmod(fd, (mode_t)mode) != 0) {
		tool_fs_fail(call, fp, errno, "change the mode of");
		goto out;
	}
	if ((append ? file_pwrite_all(fd, buf, len, 0) :
	              file_pwrite_all(fd, buf, len, (off_t)off)) != 0 ||
	    (trunc && ftruncate(fd, (off_t)(off + (long long)len)) != 0) ||
	    fsync(fd) != 0) {
		tool_fs_fail(call, fp, errno, "write");
		goto out;
	}
	if (fstat(fd, &st) == 0)
		tool_set_int(call, "size", (long long)st.st_size);
	tool_set_int(call, "offset", off);
out:
	close(fd);
	return (call->code);
}

/* mkdir -p of the directory that will hold path. */
static int
file_mkparents(struct tool_call *call, const char *path)
{
	char *dir = strdup(path), *slash;
	int rv = 0;

	if (dir == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	slash = strrchr(dir, '/');
	while (slash != NULL && slash > dir && slash[1] == '\0') {
		*slash = '\0'; /* "a/b/" names b */
		slash = strrchr(dir, '/');
	}
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		rv = tool_fs_mkdirs(call, "path", dir, 0777);
	}
	free(dir);
	return (rv);
}

/* A plain write renames a new file over the name: fine for a regular
 * file (or none), but over a FIFO, a socket or a device node it would
 * silently swap a special file for a plain one (as root, /dev/null for a
 * file): refused, like the in-place writes that would open it. A
 * directory is left to tool_fs_replace's own error. */
static int
file_replaceable(struct tool_call *call, struct tool_fspath *fp)
{
	struct stat st;
	int fd;

	if (tool_fs_open(fp, O_PATH, 0, &fd) != 0)
		return (0); /* absent (or a dangling link): created */
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		tool_fail(call, BD_EINVAL,
		    "%s '%s': not a regular file (%s): "
		    "the file tool reads and writes regular files only",
		    fp->field, fp->client, file_type(st.st_mode));
	close(fd);
	return (call->code);
}

/* Resolves the path itself: `parents` must create directories first. */
static int
file_write(struct tool_call *call, const char *path, struct tool_fspath *fp)
{
	const char *text = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	long long off = -1;
	int parents, append, trunc, mode, rv;
	struct stat st;

	if (tool_arg_has(call, "data") == tool_arg_has(call, "text"))
		return (tool_fail(call, BD_EINVAL,
		    "fields 'data' and 'text': "
		    "give exactly one (base64 bytes or UTF-8 text)"));
	if (tool_arg_bool(call, "parents", 0, &parents) != 0 ||
	    tool_arg_bool(call, "append", 0, &append) != 0 ||
	    tool_arg_bool(call, "truncate", 0, &trunc) != 0 ||
	    file_arg_mode(call, &mode) != 0)
		return (call->code);
	if (tool_arg_has(call, "offset") &&
	    tool_arg_int(call, "offset", 1, 0, FILE_SIZE_MAX, 0, &off) != 0)
		return (call->code);
	if (append && off >= 0)
		return (tool_fail(call, BD_EINVAL,
		    "fields 'offset' and "
		    "'append': give at most one"));
	if (trunc && off < 0)
		return (tool_fail(call, BD_EINVAL,
		    "field 'truncate': only "
		    "with 'offset' (a plain write replaces the whole file)"));
	if (tool_arg_has(call, "text")) {
		if (tool_arg_strn(call, "text", 1, (size_t)-1, &text, &len) !=
		    0)
			return (call->code);
	} else if (tool_arg_base64(call, "data", 1, &data, &len) != 0)
		return (call->code);
	if (parents && file_mkparents(call, path) != 0)
		goto out;
	if (tool_fs_resolve(call, "path", path, fp) != 0)
		goto out;
	if (off < 0 && !append && file_replaceable(call, fp) != 0)
		goto out;
	if (off >= 0 || append)
		rv = file_write_at(call, fp,
		    text != NULL ? (const uint8_t *)text : data, len, off,
		    append, trunc, mode);
	else {
		rv = tool_fs_replace(call, fp,
		    text != NULL ? (const void *)text : data, len, mode);
		int fd;

		if (rv == 0 && tool_fs_open(fp, O_PATH, 0, &fd) == 0) {
			if (fstat(fd, &st) == 0)
				tool_set_int(call, "size",
				    (long long)st.st_size);
			close(fd);
		}
	}
	if (rv == 0) {
		tool_set_int(call, "written", (long long)len);
		tool_set_output(call, "wrote %zu bytes to '%s'%s", len,
		    fp->client,
		    append       ? " (appended)" :
		        off >= 0 ? " (in place)" :
		                   "");
	}
out:
	free(data);
	return (call->code);
}

/* --- list and stat ------------------------------------------------------- */

static int
file_cmp_name(const void *a, const void *b)
{
	return (strcmp(*(const char *const *)a, *(const char *const *)b));
}

static int
file_list(struct tool_call *call, struct tool_fspath *fp)
{
	DIR *d = NULL;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int fd, truncated = 0;
	json_t *entries;

	if (tool_fs_open(fp, O_RDONLY | O_DIRECTORY, 0, &fd) != 0)
		return (tool_fs_fail(call, fp, errno, "list"));
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return (tool_fs_fail(call, fp, errno, "list"));
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == FILE_LIST_MAX) {
			truncated = 1;
			break;
		}
		if (n == cap) {
			size_t ncap = cap > 0 ? cap * 2 : 64;
			char **nn = realloc(names, ncap * sizeof *nn);

			if (nn == NULL)
				goto oom;
			names = nn;
			cap = ncap;
		}
		if ((names[n] = strdup(de->d_name)) == NULL)
			goto oom;
		n++;
	}
	/* An empty directory leaves names NULL, which qsort must not get
	 * even for 0 elements (glibc declares it nonnull; UBSan aborts). */
	if (n > 1)
		qsort(names, n, sizeof *names, file_cmp_name);
	if ((entries = json_array()) == NULL)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		json_t *e;

		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* removed while we looked */
		if ((e = file_entry(dirfd(d), names[i], &st, 0)) == NULL)
			continue;
		json_object_set_new(e, "name", json_string(names[i]));
		if (json_object_get(e, "name") == NULL ||
		    json_is_null(json_object_get(e, "name")))
			/* not UTF-8: the name still has to reach the client */
			json_object_set_new(e, "name",
			    json_string("(name not UTF-8)"));
		json_array_append_new(entries, e);
	}
	tool_set_output(call, "%zu entries in '%s'%s", json_array_size(entries),
	    fp->client, truncated ? " (truncated)" : "");
	tool_set_json(call, "entries", entries);
	if (truncated)
		tool_set_bool(call, "truncated", 1);
	goto out;
oom:
	tool_fail(call, BD_EINTERNAL, "out of memory");
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return (call->code);
}

static int
file_stat(struct tool_call *call, struct tool_fspath *fp)
{
	struct stat st;
	json_t *e;
	const char *k;
	json_t *v;

	if (tool_fs_lstat(fp, &st) != 0)
		return (tool_fs_fail(call, fp, errno, "stat"));
	if ((e = file_entry(fp->dirfd, fp->name, &st, 1)) == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	json_object_foreach(e, k, v) json_object_set(call->reply, k, v);
	tool_set_output(call, "'%s': %s, %lld bytes, mode %s", fp->client,
	    file_type(st.st_mode), (long long)st.st_size,
	    json_string_value(json_object_get(e, "mode")));
	json_decref(e);
	return (0);
}

/* --- remove, mkdir, move ------------------------------------------------- */

/* rm -r of name in dirfd without following a symlink anywhere. */
static int
file_rm_tree(int dirfd, const char *name, int depth, long long *count)
{
	struct dirent *de;
	DIR *d;
	int fd, rv = 0, err;

	if (depth > FILE_DEPTH_MAX) {
		errno = ELOOP;
		return (-1);
	}
	fd = openat(dirfd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return (-1);
	if ((d = fdopendir(fd)) == NULL) {
		err = errno;
		close(fd);
		errno = err;
		return (-1);
	}
	while (rv == 0 && (de = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT)
				rv = -1;
			continue;
		}
		if (S_ISDIR(st.st_mode))
			rv = file_rm_tree(fd, de->d_name, depth + 1, count);
		else if (unlinkat(fd, de->d_name, 0) == 0)
			(*count)++;
		else if (errno != ENOENT)
			rv = -1;
	}
	err = errno;
	closedir(d);
	if (rv != 0) {
		errno = err;
		return (-1);
	}
	if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0)
		return (-1);
	(*count)++;
	return (0);
}

static int
file_is_root(struct tool_fspath *fp)
{
	return (tool_fs_root() != NULL &&
	    (strcmp(fp->rel, ".") == 0 || strcmp(fp->name, ".") == 0));
}

static int
file_remove(struct tool_call *call, struct tool_fspath *fp)
{
	struct stat st;
	long long count = 0;
	int recursive;

	if (tool_arg_bool(call, "recursive", 0, &recursive) != 0)
		return (call->code);
	if (file_is_root(fp) || strcmp(fp->name, ".") == 0)
		return (tool_fail(call,
		    recursive && tool_fs_root() != NULL ? BD_EPERM : BD_EINVAL,
		    "%s '%s': names a directory through "
		    "'.', '..' or the root; name it by its own name",
		    fp->field, fp->client));
	if (tool_fs_lstat(fp, &st) != 0)
		return (tool_fs_fail(call, fp, errno, "remove"));
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(fp->dirfd, fp->name, 0) != 0)
			return (tool_fs_fail(call, fp, errno, "remove"));
		count = 1;
	} else if (!recursive) {
		if (unlinkat(fp->dirfd, fp->name, AT_REMOVEDIR) != 0) {
			if (errno == ENOTEMPTY || errno == EEXIST)
				return (tool_fail(call, BD_EINVAL,
				    "%s '%s': "
				    "directory not empty (pass \"recursive\": "
				    "true to remove it and all it holds)",
				    fp->field, fp->client));
			return (tool_fs_fail(call, fp, errno, "remove"));
		}
		count = 1;
	} else if (file_rm_tree(fp->dirfd, fp->name, 0, &count) != 0) {
		tool_set_int(call, "removed", count);
		return (tool_fs_fail(call, fp, errno, "remove"));
	}
	tool_set_int(call, "removed", count);
	tool_set_output(call, "removed '%s' (%lld %s)", fp->client, count,
	    count == 1 ? "entry" : "entries");
	return (0);
}

static int
file_mkdir(struct tool_call *call, const char *path, struct tool_fspath *fp)
{
	int parents, mode;

	if (tool_arg_bool(call, "parents", 0, &parents) != 0 ||
	    file_arg_mode(call, &mode) != 0)
		return (call->code);
	if (mode < 0)
		mode = 0777; /* less the umask, as mkdir(1) */
	if (parents) {
		if (tool_fs_mkdirs(call, "path", path, (mode_t)mode) != 0)
			return (call->code);
	} else {
		if (tool_fs_resolve(call, "path", path, fp) != 0)
			return (call->code);
		if (mkdirat(fp->dirfd, fp->name, (mode_t)mode) != 0)
			return (tool_fs_fail(call, fp, errno,
			    "create the directory"));
	}
	tool_set_output(call, "created directory '%s'", path);
	return (0);
}

static int
file_move(struct tool_call *call, struct tool_fspath *fp)
{
	struct tool_fspath to;
	const char *dest;
	int overwrite, rv;

	if (tool_arg_str(call, "to", 1, NULL, &dest) != 0 ||
	    tool_arg_bool(call, "overwrite", 1, &overwrite) != 0)
		return (call->code);
	if (file_is_root(fp) || strcmp(fp->name, ".") == 0)
		return (tool_fail(call, BD_EINVAL,
		    "%s '%s': names a directory "
		    "through '.', '..' or the root; name it by its own name",
		    fp->field, fp->client));
	if (tool_fs_resolve(call, "to", dest, &to) != 0) {
		tool_fs_release(&to);
		return (call->code);
	}
	/* rename(2) moves the entry itself: a symlink stays a symlink */
	rv = renameat2(fp->dirfd, fp->name, to.dirfd, to.name,
	    overwrite ? 0 : RENAME_NOREPLACE);
	if (rv != 0) {
		if (errno == ENOENT &&
		    fstatat(fp->dirfd, fp->name, &(struct stat){ 0 },
		        AT_SYMLINK_NOFOLLOW) != 0)
			tool_fs_fail(call, fp, errno, "move");
		else if (errno == EXDEV)
			tool_fail(call, BD_EINVAL,
			    "to '%s': on another file "
			    "system than '%s' (a move cannot copy)",
			    dest, fp->client);
		else
			tool_fs_fail(call, &to, errno, "move there");
	} else
		tool_set_output(call, "moved '%s' to '%s'", fp->client, dest);
	tool_fs_release(&to);
	return (call->code);
}

/* --- dispatch ------------------------------------------------------------ */

/* Every action takes "path": resolve it once here. fn_path is for the
 * actions that may create directories before the lookup. */
static int
file_run(struct tool_call *call,
    int (*fn)(struct tool_call *, struct tool_fspath *),
    int (*fn_path)(struct tool_call *, const char *, struct tool_fspath *))
{
	struct tool_fspath fp;
	const char *path;

	if (tool_arg_str(call, "path", 1, NULL, &path) != 0)
		return (call->code);
	memset(&fp, 0, sizeof fp);
	fp.dirfd = -1;
	if (fn_path != NULL)
		fn_path(call, path, &fp);
	else if (tool_fs_resolve(call, "path", path, &fp) == 0)
		fn(call, &fp);
	tool_fs_release(&fp);
	return (call->code);
}

#define FILE_ACTION(name, fn, fn_path)                                         \
	static int file_do_##name(struct tool_call *call)                      \
	{                                                                      \
		return (file_run(call, fn, fn_path));                          \
	}
FILE_ACTION(read, file_read, NULL)
FILE_ACTION(write, NULL, file_write)
FILE_ACTION(list, file_list, NULL)
FILE_ACTION(stat, file_stat, NULL)
FILE_ACTION(remove, file_remove, NULL)
FILE_ACTION(mkdir, NULL, file_mkdir)
FILE_ACTION(move, file_move, NULL)

static const struct tool_action file_actions[] = {
	{ "read", "action", file_do_read, 0 },
	{ "write", "action", file_do_write, 0 },
	{ "list", "action", file_do_list, 0 },
	{ "stat", "action", file_do_stat, 0 },
	{ "remove", "action", file_do_remove, 0 },
	{ "mkdir", "action", file_do_mkdir, 0 },
	{ "move", "action", file_do_move, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_file_entry = {
	.name = "file",
	.init = file_init,
	.actions = file_actions,
};
