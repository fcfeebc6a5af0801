/*
 * tools/editor.c: str_replace_based_edit_tool (alias text_editor), the
 * Anthropic editor tool: view, create, str_replace, insert, undo_edit.
 *
 * Replies and error messages are the reference implementation's
 * (anthropic-quickstarts computer_use_demo/tools/edit.py), word for word,
 * because models are trained on them; its messages are sentences, so they
 * keep their capitals and full stops here. Where it is silent (confinement,
 * size limits, I/O errors) the house style applies. Deliberate departures,
 * each because the reference damages files or says less than it could
 * (docs/tools-files.md lists them):
 *  - bytes are kept exactly: no tab expansion, no newline translation;
 *  - a file is written by atomic replace (tools/policy.c);
 *  - several occurrences are listed by the line each starts on (a multi-
 *    line old_str gets line numbers too), and the reply carries
 *    `occurrences`;
 *  - undo of a create removes the file it created.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/policy.h"
#include "tools/tool.h"

#define ED_NAME             "str_replace_based_edit_tool"
#define ED_FILE_MAX         (16u << 20) /* bytes a file may have to be edited */
#define ED_RESPONSE_MAX     16000 /* characters of file shown, as edit.py */
#define ED_SNIPPET_LINES    4
#define ED_HISTORY_PER_FILE 10
#define ED_HISTORY_BYTES    (64u << 20)
#define ED_HISTORY_ENTRIES  1000
#define ED_BUSY_WAIT_S      10 /* an edit waits this long for another */

#define ED_TRUNCATED                                                           \
	"<response clipped><NOTE>To save on context only part "                \
	"of this file has been shown to you. You should retry this tool "      \
	"after you have searched inside the file with `grep -n` in order to "  \
	"find the line numbers of what you are looking for.</NOTE>"

/* One saved state of a file, newest last. */
struct ed_hist {
	struct ed_hist *next;
	char *key;  /* the file's real path */
	char *data; /* its bytes before the edit, NULL if it was absent */
	size_t len;
};

/* A file being edited, by its real path: two edits of one file take turns
 * (each is a read-modify-write), edits of other files go on meanwhile. */
struct ed_busy {
	struct ed_busy *next;
	const char *key;
};

/*
 * The lock guards the history and the busy list, and is only ever held
 * for a few list operations, never across file I/O: an open or a read can
 * block (a FIFO swapped in, a hung network or FUSE file system), and a
 * global lock held there once stopped every later edit and the shutdown.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t done; /* an edit finished: its file is free */
	struct ed_busy *busy;
	struct ed_hist *head;
	size_t bytes, n;
} ed = { .lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

static int
ed_init(const struct tool_config *cfg, char **cause)
{
	return (tool_fs_init(cfg, cause));
}

static void
ed_hist_free(struct ed_hist *h)
{
	free(h->key);
	free(h->data);
	free(h);
}

static void
ed_fini(void)
{
	struct ed_hist *h, *next;

	pthread_mutex_lock(&ed.lock);
	for (h = ed.head; h != NULL; h = next) {
		next = h->next;
		ed_hist_free(h);
	}
	ed.head = NULL;
	ed.bytes = ed.n = 0;
	pthread_mutex_unlock(&ed.lock);
}

/* Unlink *pp from the list (lock held). */
static void
ed_hist_drop(struct ed_hist **pp)
{
	struct ed_hist *h = *pp;

	*pp = h->next;
	ed.bytes -= h->len;
	ed.n--;
	ed_hist_free(h);
}

/* Save a state; takes data. Bounded per file and in all. */
static int
ed_hist_push(const char *key, char *data, size_t len)
{
	struct ed_hist *h = calloc(1, sizeof *h), **pp;
	size_t same = 0;

	if (h == NULL || (h->key = strdup(key)) == NULL) {
		free(h);
		free(data);
		return (-1);
	}
	h->data = data;
	h->len = len;
	pthread_mutex_lock(&ed.lock);
	for (pp = &ed.head; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->key, key) == 0)
			same++;
	*pp = h;
	ed.bytes += len;
	ed.n++;
	/* the oldest go first: of this file, then of any */
	for (pp = &ed.head; same >= ED_HISTORY_PER_FILE && *pp != NULL;) {
		if (strcmp((*pp)->key, key) == 0) {
			ed_hist_drop(pp);
			same--;
		} else
			pp = &(*pp)->next;
	}
	while ((ed.bytes > ED_HISTORY_BYTES || ed.n > ED_HISTORY_ENTRIES) &&
	    ed.head != h)
		ed_hist_drop(&ed.head);
	pthread_mutex_unlock(&ed.lock);
	return (0);
}

/* Take the newest state of key; NULL when there is none. */
static struct ed_hist *
ed_hist_pop(const char *key)
{
	struct ed_hist **pp, **last = NULL, *h = NULL;

	pthread_mutex_lock(&ed.lock);
	for (pp = &ed.head; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->key, key) == 0)
			last = pp;
	if (last != NULL) {
		h = *last;
		*last = h->next;
		ed.bytes -= h->len;
		ed.n--;
	}
	pthread_mutex_unlock(&ed.lock);
	return (h);
}

/* Wait (at most ED_BUSY_WAIT_S) until no other edit holds key, then hold
 * it; me lives until ed_release. busy when the other edit does not end. */
static int
ed_claim(struct tool_call *call, struct ed_busy *me, const char *key,
    const char *path)
{
	struct timespec ts;
	struct ed_busy *b;

	clock_gettime(CLOCK_REALTIME, &ts); /* the condition's clock */
	ts.tv_sec += ED_BUSY_WAIT_S;
	me->key = key;
	pthread_mutex_lock(&ed.lock);
	for (;;) {
		for (b = ed.busy; b != NULL && strcmp(b->key, key) != 0;
		     b = b->next)
			;
		if (b == NULL)
			break;
		if (pthread_cond_timedwait(&ed.done, &ed.lock, &ts) ==
		    ETIMEDOUT) {
			pthread_mutex_unlock(&ed.lock);
			return (tool_fail(call, BD_EBUSY,
			    "path '%s': another "
			    "edit of this file has not finished in %d s; try "
			    "again later",
			    path, ED_BUSY_WAIT_S));
		}
	}
	me->next = ed.busy;
	ed.busy = me;
	pthread_mutex_unlock(&ed.lock);
	return (0);
}

static void
ed_release(struct ed_busy *me)
{
	pthread_mutex_lock(&ed.lock);
	for (struct ed_busy **pp = &ed.busy; *pp != NULL; pp = &(*pp)->next)
		if (*pp == me) {
			*pp = me->next;
			break;
		}
	pthread_cond_broadcast(&ed.done);
	pthread_mutex_unlock(&ed.lock);
}

/* --- output -------------------------------------------------------------- */

/* edit.py's _make_output: the text (clipped to ED_RESPONSE_MAX characters)
 * numbered as `cat -n` does, under a title line. */
static void
ed_make_output(FILE *f, const char *s, size_t len, const char *what,
    long long init_line)
{
	size_t chars = 0, cut = len, i, start;
	int clipped = 0;
	long long line = init_line;

	for (i = 0; i < len; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue; /* a UTF-8 continuation byte */
		if (chars++ == ED_RESPONSE_MAX) {
			cut = i;
			clipped = 1;
			break;
		}
	}
	fprintf(f, "Here's the result of running `cat -n` on %s:\n", what);
	for (start = 0, i = 0; i <= cut; i++) {
		if (i < cut && s[i] != '\n')
			continue;
		fprintf(f, "%6lld\t", line++);
		fwrite(s + start, 1, i - start, f);
		if (i < cut)
			fputc('\n', f);
		start = i + 1;
	}
	if (clipped)
		fputs(ED_TRUNCATED, f);
	fputc('\n', f);
}

/* Finish an open_memstream and make it the reply's output. */
static int
ed_reply(struct tool_call *call, FILE *f, char **buf, size_t *len)
{
	if (fclose(f) != 0 || *buf == NULL) {
		free(*buf);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	tool_set_strn(call, "output", *buf, *len);
	free(*buf);
	return (0);
}

static size_t
ed_count_lines(const char *s, size_t len)
{
	size_t n = 1;

	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return (n);
}

/* Byte offset where line idx (0-based, as split("\n")) starts. */
static size_t
ed_line_start(const char *s, size_t len, size_t idx)
{
	size_t i = 0;

	for (; idx > 0 && i < len; i++)
		if (s[i] == '\n')
			idx--;
	return (i);
}

/* Byte offset where line idx ends (its '\n' or the end). */
static size_t
ed_line_end(const char *s, size_t len, size_t idx)
{
	size_t i = ed_line_start(s, len, idx);
	const char *nl = i < len ? memchr(s + i, '\n', len - i) : NULL;

	return (nl != NULL ? (size_t)(nl - s) : len);
}

/* --- files --------------------------------------------------------------- */

/* What a path that is not a regular file is, for messages. */
static const char *
ed_type(mode_t m)
{
	if (S_ISDIR(m))
		return ("a directory");
	if (S_ISFIFO(m))
		return ("a FIFO");
	if (S_ISSOCK(m))
		return ("a socket");
	if (S_ISCHR(m))
		return ("a character device");
	if (S_ISBLK(m))
		return ("a block device");
	return ("not a file");
}

static int
ed_read(struct tool_call *call, struct tool_fspath *fp, const char *path,
    char **out, size_t *outlen)
{
	struct stat st;
	size_t got = 0;
	char *buf = NULL;
	int fd;

	*out = NULL;
	/* O_NONBLOCK: a FIFO put here since the caller looked must not
	 * block the open (it would wait for a writer forever); on the
	 * regular file it is checked to be, reads ignore the flag */
	if (tool_fs_open(fp, O_RDONLY | O_NONBLOCK, 0, &fd) != 0)
		return (tool_fs_fail(call, fp, errno, "read"));
	if (fstat(fd, &st) != 0) {
		tool_fs_fail(call, fp, errno, "read");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		tool_fail(call, BD_EINVAL, "path '%s': not a regular file (%s)",
		    path, ed_type(st.st_mode));
		goto fail;
	}
	if ((size_t)st.st_size > ED_FILE_MAX) {
		tool_fail(call, BD_ETOOLARGE,
		    "path '%s': %lld bytes, more than "
		    "the editor's limit of %u MiB (the file tool reads it in "
		    "parts)",
		    path, (long long)st.st_size, ED_FILE_MAX >> 20);
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		tool_fail(call, BD_EINTERNAL, "out of memory");
		goto fail;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			tool_fs_fail(call, fp, errno, "read");
			goto fail;
		}
		if (n == 0)
			break; /* shrank meanwhile */
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	*out = buf;
	*outlen = got;
	return (0);
fail:
	free(buf);
	close(fd);
	return (call->code);
}

/* --- view ---------------------------------------------------------------- */

static int
ed_name_cmp(const void *a, const void *b)
{
	return (strcmp(*(const char *const *)a, *(const char *const *)b));
}

/* Names in a directory, hidden ones left out, sorted. */
static char **
ed_dir_names(int fd, size_t *n)
{
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	size_t cap = 0;
	int dup_fd = dup(fd);

	*n = 0;
	if (dup_fd < 0 || (d = fdopendir(dup_fd)) == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return (NULL);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (*n == cap) {
			size_t ncap = cap > 0 ? cap * 2 : 32;
			char **nv = realloc(v, ncap * sizeof *nv);

			if (nv == NULL)
				break;
			v = nv;
			cap = ncap;
		}
		if ((v[*n] = strdup(de->d_name)) == NULL)
			break;
		(*n)++;
	}
	closedir(d);
	if (*n > 0)
		qsort(v, *n, sizeof *v, ed_name_cmp);
	return (v);
}

/* `find PATH -maxdepth 2 -not -path '*' + '/.*'`, sorted, not following
 * links, stopping once the listing is longer than anyone will be shown. */
static void
ed_find(FILE *f, int fd, const char *prefix, int depth, size_t *chars)
{
	char **names;
	size_t n;

	if ((names = ed_dir_names(fd, &n)) == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int sub;

		if (*chars <= 2 * ED_RESPONSE_MAX) {
			*chars += (size_t)fprintf(f, "%s/%s\n", prefix,
			    names[i]);
			if (depth < 2 &&
			    fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) ==
			        0 &&
			    S_ISDIR(st.st_mode) &&
			    (sub = openat(fd, names[i],
			         O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			             O_CLOEXEC)) >= 0) {
				char *p;

				if (asprintf(&p, "%s/%s", prefix, names[i]) >=
				    0) {
					ed_find(f, sub, p, depth + 1, chars);
					free(p);
				}
				close(sub);
			}
		}
		free(names[i]);
	}
	free(names);
}

static int
ed_view_dir(struct tool_call *call, struct tool_fspath *fp, const char *path)
{
	char *list = NULL, *out = NULL, *p;
	size_t listlen = 0, outlen = 0, chars = 0;
	FILE *f;
	int fd;

	if (tool_arg_has(call, "view_range")) {
		json_t *v = json_object_get(call->req, "view_range");

		/* edit.py: `if view_range:` lets an empty list through */
		if (!json_is_array(v) || json_array_size(v) > 0)
			return (tool_fail(call, BD_EINVAL,
			    "The `view_range` "
			    "parameter is not allowed when `path` points to a "
			    "directory."));
	}
	if (tool_fs_open(fp, O_RDONLY | O_DIRECTORY, 0, &fd) != 0)
		return (tool_fs_fail(call, fp, errno, "list"));
	if ((p = strdup(path)) == NULL ||
	    (f = open_memstream(&list, &listlen)) == NULL) {
		free(p);
		close(fd);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
		p[n - 1] = '\0';
	fprintf(f, "%s\n", p);
	ed_find(f, fd, strcmp(p, "/") == 0 ? "" : p, 1, &chars);
	close(fd);
	if (fclose(f) != 0 || list == NULL) {
		free(p);
		free(list);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	if ((f = open_memstream(&out, &outlen)) == NULL) {
		free(p);
		free(list);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	fprintf(f,
	    "Here's the files and directories up to 2 levels deep in "
	    "%s, excluding hidden items:\n",
	    path);
	/* run()'s output is clipped like a file's */
	{
		size_t c = 0, i;

		for (i = 0; i < listlen; i++)
			if (((unsigned char)list[i] & 0xc0) != 0x80 &&
			    c++ == ED_RESPONSE_MAX)
				break;
		fwrite(list, 1, i, f);
		if (i < listlen)
			fputs(ED_TRUNCATED, f);
	}
	fputc('\n', f);
	free(list);
	free(p);
	return (ed_reply(call, f, &out, &outlen));
}

static int
ed_view(struct tool_call *call, struct tool_fspath *fp, const char *path)
{
	char *text, *out = NULL;
	size_t len, outlen = 0, from = 0, to;
	long long init = 1, final = -1;
	json_t *v = json_object_get(call->req, "view_range");
	FILE *f;

	if (ed_read(call, fp, path, &text, &len) != 0)
		return (call->code);
	to = len;
	if (v != NULL && !json_is_null(v) &&
	    !(json_is_array(v) && json_array_size(v) == 0)) {
		size_t n = ed_count_lines(text, len);
		char range[64];

		if (!json_is_array(v) || json_array_size(v) != 2 ||
		    !json_is_integer(json_array_get(v, 0)) ||
		    !json_is_integer(json_array_get(v, 1))) {
			free(text);
			return (tool_fail(call, BD_EINVAL,
			    "Invalid "
			    "`view_range`. It should be a list of two "
			    "integers."));
		}
		init = json_integer_value(json_array_get(v, 0));
		final = json_integer_value(json_array_get(v, 1));
		snprintf(range, sizeof range, "[%lld, %lld]", init, final);
		if (init < 1 || init > (long long)n) {
			free(text);
			return (tool_fail(call, BD_EBOUNDS,
			    "Invalid "
			    "`view_range`: %s. Its first element `%lld` should "
			    "be within the range of lines of the file: [1, "
			    "%zu]",
			    range, init, n));
		}
		if (final > (long long)n) {
			free(text);
			return (tool_fail(call, BD_EBOUNDS,
			    "Invalid "
			    "`view_range`: %s. Its second element `%lld` "
			    "should be smaller than the number of lines in the "
			    "file: `%zu`",
			    range, final, n));
		}
		if (final != -1 && final < init) {
			free(text);
			return (tool_fail(call, BD_EBOUNDS,
			    "Invalid "
			    "`view_range`: %s. Its second element `%lld` "
			    "should be larger or equal than its first `%lld`",
			    range, final, init));
		}
		from = ed_line_start(text, len, (size_t)(init - 1));
		/* Python's lines[a:b] with a negative b other than -1
		 * counts from the end; edit.py only means -1 by it */
		if (final >= 1)
			to = ed_line_end(text, len, (size_t)(final - 1));
		else if (final < -1) {
			long long end = (long long)n + final;

			to = end <= init - 1 ?
			    from :
			    ed_line_end(text, len, (size_t)(end - 1));
		}
	}
	if ((f = open_memstream(&out, &outlen)) == NULL) {
		free(text);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	ed_make_output(f, text + from, to - from, path, init);
	free(text);
	return (ed_reply(call, f, &out, &outlen));
}

/* --- edits --------------------------------------------------------------- */

static int
ed_create(struct tool_call *call, struct tool_fspath *fp, const char *path,
    const char *key)
{
	const char *text;
	size_t len;

	if (!tool_arg_has(call, "file_text"))
		return (tool_fail(call, BD_EINVAL,
		    "Parameter `file_text` is "
		    "required for command: create"));
	if (tool_arg_strn(call, "file_text", 1, ED_FILE_MAX, &text, &len) != 0)
		return (call->code);
	if (tool_fs_replace(call, fp, text, len, -1) != 0)
		return (call->code);
	if (ed_hist_push(key, NULL, 0) != 0)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	tool_set_output(call, "File created successfully at: %s", path);
	return (0);
}

static int
ed_str_replace(struct tool_call *call, struct tool_fspath *fp, const char *path,
    const char *key)
{
	const char *old, *new;
	char *text = NULL, *res = NULL, *out = NULL, *p;
	size_t len, olen, nlen, rlen, outlen = 0, count = 0, first = 0;
	size_t line = 1, lastline = 0, scanned = 0, rl, start, end, i;
	FILE *f = NULL, *lines = NULL;
	char *lbuf = NULL;
	size_t lbuflen = 0;

	if (!tool_arg_has(call, "old_str"))
		return (tool_fail(call, BD_EINVAL,
		    "Parameter `old_str` is "
		    "required for command: str_replace"));
	if (tool_arg_strn(call, "old_str", 1, ED_FILE_MAX, &old, &olen) != 0 ||
	    tool_arg_strn(call, "new_str", 0, ED_FILE_MAX, &new, &nlen) != 0)
		return (call->code);
	if (new == NULL)
		new = "";
	if (olen == 0)
		return (tool_fail(call, BD_EINVAL,
		    "Parameter `old_str` must "
		    "not be empty for command: str_replace"));
	if (ed_read(call, fp, path, &text, &len) != 0)
		return (call->code);
	if ((lines = open_memstream(&lbuf, &lbuflen)) == NULL)
		goto oom;
	/* count the occurrences (not overlapping, as str.count) and note the
	 * line each starts on */
	for (p = text; (size_t)(p - text) + olen <= len;) {
		char *hit = memmem(p, len - (size_t)(p - text), old, olen);

		if (hit == NULL)
			break;
		for (i = scanned; i < (size_t)(hit - text); i++)
			line += text[i] == '\n';
		scanned = (size_t)(hit - text);
		if (count++ == 0)
			first = scanned;
		if (line != lastline)
			fprintf(lines, "%s%zu", lastline > 0 ? ", " : "", line);
		lastline = line;
		p = hit + olen;
	}
	if (fclose(lines) != 0 || lbuf == NULL) {
		lines = NULL;
		goto oom;
	}
	lines = NULL;
	tool_set_int(call, "occurrences", (long long)count);
	if (count == 0) {
		tool_fail(call, BD_EINVAL,
		    "No replacement was performed, "
		    "old_str `%s` did not appear verbatim in %s.",
		    old, path);
		goto out;
	}
	if (count > 1) {
		tool_fail(call, BD_EINVAL,
		    "No replacement was performed. "
		    "Multiple occurrences of old_str `%s` in lines [%s]. "
		    "Please "
		    "ensure it is unique",
		    old, lbuf);
		goto out;
	}
	rlen = len - olen + nlen;
	if (rlen > ED_FILE_MAX) {
		tool_fail(call, BD_ETOOLARGE,
		    "path '%s': the edit would make "
		    "it %zu bytes, more than the editor's limit of %u MiB",
		    path, rlen, ED_FILE_MAX >> 20);
		goto out;
	}
	if ((res = malloc(rlen + 1)) == NULL)
		goto oom;
	memcpy(res, text, first);
	memcpy(res + first, new, nlen);
	memcpy(res + first + nlen, text + first + olen, len - first - olen);
	if (tool_fs_replace(call, fp, res, rlen, -1) != 0)
		goto out;
	if (ed_hist_push(key, text, len) != 0) {
		text = NULL;
		goto oom;
	}
	text = NULL;

	rl = 0;
	for (i = 0; i < first; i++)
		rl += res[i] == '\n';
	start = rl > ED_SNIPPET_LINES ? rl - ED_SNIPPET_LINES : 0;
	end = rl + ED_SNIPPET_LINES;
	for (i = 0; i < nlen; i++)
		end += new[i] == '\n';
	{
		size_t a = ed_line_start(res, rlen, start);
		size_t b = ed_line_end(res, rlen, end);
		char what[4200];

		if ((f = open_memstream(&out, &outlen)) == NULL)
			goto oom;
		snprintf(what, sizeof what, "a snippet of %s", path);
		fprintf(f, "The file %s has been edited. ", path);
		ed_make_output(f, res + a, b - a, what, (long long)start + 1);
		fputs("Review the changes and make sure they are as expected. "
		      "Edit the file again if necessary.",
		    f);
	}
	ed_reply(call, f, &out, &outlen);
	goto out;
oom:
	tool_fail(call, BD_EINTERNAL, "out of memory");
out:
	if (lines != NULL)
		fclose(lines);
	free(lbuf);
	free(text);
	free(res);
	return (call->code);
}

static int
ed_insert(struct tool_call *call, struct tool_fspath *fp, const char *path,
    const char *key)
{
	const char *new;
	char *text = NULL, *res = NULL, *out = NULL;
	size_t len, nlen, n, rlen, pos, outlen = 0, k, from, to;
	long long il;
	FILE *f;

	if (!tool_arg_has(call, "insert_line"))
		return (tool_fail(call, BD_EINVAL,
		    "Parameter `insert_line` is "
		    "required for command: insert"));
	if (tool_arg_int(call, "insert_line", 1, -(1LL << 53), 1LL << 53, 0,
	        &il) != 0)
		return (call->code);
	if (!tool_arg_has(call, "new_str"))
		return (tool_fail(call, BD_EINVAL,
		    "Parameter `new_str` is "
		    "required for command: insert"));
	if (tool_arg_strn(call, "new_str", 1, ED_FILE_MAX, &new, &nlen) != 0)
		return (call->code);
	if (ed_read(call, fp, path, &text, &len) != 0)
		return (call->code);
	n = ed_count_lines(text, len);
	if (il < 0 || il > (long long)n) {
		tool_fail(call, BD_EBOUNDS,
		    "Invalid `insert_line` parameter: "
		    "%lld. It should be within the range of lines of the file: "
		    "[0, %zu]",
		    il, n);
		goto out;
	}
	rlen = len + nlen + 1;
	if (rlen > ED_FILE_MAX) {
		tool_fail(call, BD_ETOOLARGE,
		    "path '%s': the edit would make "
		    "it %zu bytes, more than the editor's limit of %u MiB",
		    path, rlen, ED_FILE_MAX >> 20);
		goto out;
	}
	if ((res = malloc(rlen + 1)) == NULL)
		goto oom;
	/* "\n".join(lines[:il] + new.split("\n") + lines[il:]) */
	if ((size_t)il == n) {
		memcpy(res, text, len);
		res[len] = '\n';
		memcpy(res + len + 1, new, nlen);
	} else {
		pos = ed_line_start(text, len, (size_t)il);
		memcpy(res, text, pos);
		memcpy(res + pos, new, nlen);
		res[pos + nlen] = '\n';
		memcpy(res + pos + nlen + 1, text + pos, len - pos);
	}
	if (tool_fs_replace(call, fp, res, rlen, -1) != 0)
		goto out;
	if (ed_hist_push(key, text, len) != 0) {
		text = NULL;
		goto oom;
	}
	text = NULL;
	/* lines[il-4:il] + new lines + lines[il:il+4], in the new text */
	k = ed_count_lines(new, nlen);
	from = il > ED_SNIPPET_LINES ? (size_t)il - ED_SNIPPET_LINES : 0;
	to = (size_t)il + k + ED_SNIPPET_LINES; /* exclusive */
	if ((f = open_memstream(&out, &outlen)) == NULL)
		goto oom;
	{
		size_t a = ed_line_start(res, rlen, from);
		size_t b = ed_line_end(res, rlen, to - 1);

		fprintf(f, "The file %s has been edited. ", path);
		ed_make_output(f, res + a, b - a,
		    "a snippet of the edited file", (long long)from + 1);
	}
	fputs("Review the changes and make sure they are as expected (correct "
	      "indentation, no duplicate lines, etc). Edit the file again if "
	      "necessary.",
	    f);
	ed_reply(call, f, &out, &outlen);
	goto out;
oom:
	tool_fail(call, BD_EINTERNAL, "out of memory");
out:
	free(text);
	free(res);
	return (call->code);
}

static int
ed_undo(struct tool_call *call, struct tool_fspath *fp, const char *path,
    const char *key)
{
	struct ed_hist *h = ed_hist_pop(key);
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;

	if (h == NULL)
		return (tool_fail(call, BD_EINVAL,
		    "No edit history found for "
		    "%s.",
		    path));
	if (h->data == NULL) {
		/* the edit was the create: before it there was no file */
		if (unlinkat(fp->dirfd, fp->name, 0) != 0 && errno != ENOENT) {
			tool_fs_fail(call, fp, errno, "remove");
			goto fail;
		}
		tool_set_output(call,
		    "Last edit to %s undone successfully. The "
		    "file did not exist before it and has been removed.",
		    path);
		ed_hist_free(h);
		return (0);
	}
	if (tool_fs_replace(call, fp, h->data, h->len, -1) != 0)
		goto fail;
	if ((f = open_memstream(&out, &outlen)) == NULL) {
		ed_hist_free(h);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	fprintf(f, "Last edit to %s undone successfully. ", path);
	ed_make_output(f, h->data, h->len, path, 1);
	ed_hist_free(h);
	return (ed_reply(call, f, &out, &outlen));
fail:
	/* put it back: the state is still the one to return to */
	(void)ed_hist_push(h->key, h->data, h->len); /* takes h->data */
	h->data = NULL;
	ed_hist_free(h);
	return (call->code);
}

/* --- dispatch ------------------------------------------------------------ */

static int
ed_handle(struct tool_call *call)
{
	struct tool_fspath fp = { .dirfd = -1 };
	struct ed_busy me;
	const char *cmd, *path;
	char *key = NULL;
	struct stat st;
	int fd, exists, isdir = 0;

	cmd = call->action; /* resolved by the runtime from ed_commands */
	if (tool_arg_str(call, "path", 1, NULL, &path) != 0)
		return (call->code);
	if (path[0] != '/')
		return (tool_fail(call, BD_EINVAL,
		    "The path %s is not an "
		    "absolute path, it should start with `/`. Maybe you meant "
		    "/%s?",
		    path, path));
	if (tool_fs_resolve(call, "path", path, &fp) != 0)
		goto out;
	/* Path.exists() follows a final symlink: so does this, confined */
	if (tool_fs_open(&fp, O_PATH, 0, &fd) == 0) {
		exists = fstat(fd, &st) == 0;
		isdir = exists && S_ISDIR(st.st_mode);
		close(fd);
	} else if (errno == ENOENT)
		exists = 0;
	else {
		tool_fs_fail(call, &fp, errno, "open");
		goto out;
	}
	if (!exists && strcmp(cmd, "create") != 0) {
		tool_fail(call, BD_ENOTFOUND,
		    "The path %s does not exist. "
		    "Please provide a valid path.",
		    path);
		goto out;
	}
	if (exists && strcmp(cmd, "create") == 0) {
		tool_fail(call, BD_EINVAL,
		    "File already exists at: %s. Cannot "
		    "overwrite files using command `create`.",
		    path);
		goto out;
	}
	if (isdir && strcmp(cmd, "view") != 0) {
		tool_fail(call, BD_EINVAL,
		    "The path %s is a directory and only "
		    "the `view` command can be used on directories",
		    path);
		goto out;
	}
	if (exists && !isdir && !S_ISREG(st.st_mode)) {
		/* Before any open: opening a FIFO waits for a writer, a
		 * device can block, never end or act on being opened.
		 * ed_read checks again on the descriptor (a swap since). */
		tool_fail(call, BD_EINVAL,
		    "path '%s': not a regular file (%s): "
		    "the editor works on regular files and directories",
		    path, ed_type(st.st_mode));
		goto out;
	}
	if (strcmp(cmd, "view") == 0) {
		if (isdir)
			ed_view_dir(call, &fp, path);
		else
			ed_view(call, &fp, path);
		goto out;
	}
	/* the history is keyed by where the file really is */
	if (tool_path(call, "path", path, &key) != 0 ||
	    ed_claim(call, &me, key, path) != 0)
		goto out;
	if (strcmp(cmd, "create") == 0)
		ed_create(call, &fp, path, key);
	else if (strcmp(cmd, "str_replace") == 0)
		ed_str_replace(call, &fp, path, key);
	else if (strcmp(cmd, "insert") == 0)
		ed_insert(call, &fp, path, key);
	else
		ed_undo(call, &fp, path, key);
	ed_release(&me);
out:
	free(key);
	tool_fs_release(&fp);
	return (call->code);
}

/* The commands share their path checks, so one handler serves them all. */
static const struct tool_action ed_commands[] = {
	{ "view", "command", ed_handle, 0 },
	{ "create", "command", ed_handle, 0 },
	{ "str_replace", "command", ed_handle, 0 },
	{ "insert", "command", ed_handle, 0 },
	{ "undo_edit", "command", ed_handle, 0 },
	{ NULL, NULL, NULL, 0 },
};

/* In the words of Anthropic's edit.py: agents are trained on them. */
static int
ed_unknown(struct tool_call *call, const char *name, const char *expected)
{
	return (tool_fail(call, BD_EUNKNOWN_ACTION,
	    "Unrecognized command %s. "
	    "The allowed commands for the %s tool are: %s",
	    name, ED_NAME, expected));
}

const struct tool_entry tool_editor_entry = {
	.name = ED_NAME,
	.alias = "text_editor",
	.init = ed_init,
	.fini = ed_fini,
	.actions = ed_commands,
	.unknown = ed_unknown,
};
