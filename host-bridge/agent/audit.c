/*
 * host-bridge/agent/audit.c: the host-side audit trail of a desktop.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/action.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/util/util.h"

struct audit {
	pthread_mutex_t lock;
	char *log;   /* DIR/audit.log */
	char *old;   /* DIR/audit.log.1 */
	char *shots; /* DIR/audit */
	int fd;
	long size;
	long max;      /* rotate past this many bytes */
	long keep;     /* screenshots of the last this many requests */
	long long seq; /* of the last line written */
};

/* The seq of the last line of a log file, 0 when there is none. */
static long long
audit_last_seq(const char *path)
{
	char *s = hb_read_file(path), *line;
	long long seq = 0;
	json_t *j;
	size_t n;

	if (s == NULL)
		return (0);
	n = strlen(s);
	while (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	line = strrchr(s, '\n');
	line = line != NULL ? line + 1 : s;
	if ((j = json_loads(line, 0, NULL)) != NULL) {
		seq = json_integer_value(json_object_get(j, "seq"));
		json_decref(j);
	}
	free(s);
	return (seq > 0 ? seq : 0);
}

static int
audit_reopen(struct audit *a, char **cause)
{
	struct stat st;

	if (a->fd >= 0)
		close(a->fd);
	a->fd = open(a->log,
	    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (a->fd < 0) {
		*cause = hb_fmt("cannot open '%s': %s", a->log,
		    strerror(errno));
		return (-1);
	}
	a->size = fstat(a->fd, &st) == 0 ? (long)st.st_size : 0;
	return (0);
}

int
audit_open(const char *dir, struct audit **out, char **cause)
{
	struct audit *a = calloc(1, sizeof *a);
	long long s1;

	if (a == NULL || (a->log = hb_fmt("%s/audit.log", dir)) == NULL ||
	    (a->old = hb_fmt("%s/audit.log.1", dir)) == NULL ||
	    (a->shots = hb_fmt("%s/audit", dir)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->fd = -1;
	/* Knobs for tests and small disks; the defaults suit most. */
	a->max = AUDIT_LOG_MAX;
	a->keep = AUDIT_SHOTS_KEEP;
	if ((getenv("BUREAU_AUDIT_MAX") != NULL &&
	        hb_parse_int("BUREAU_AUDIT_MAX", getenv("BUREAU_AUDIT_MAX"),
	            1024, 1L << 40, &a->max, cause) != 0) ||
	    (getenv("BUREAU_AUDIT_SHOTS") != NULL &&
	        hb_parse_int("BUREAU_AUDIT_SHOTS", getenv("BUREAU_AUDIT_SHOTS"),
	            1, 1000000, &a->keep, cause) != 0))
		goto fail;
	if (mkdir(a->shots, 0700) != 0 && errno != EEXIST) {
		*cause = hb_fmt("cannot create '%s': %s", a->shots,
		    strerror(errno));
		goto fail;
	}
	a->seq = audit_last_seq(a->log);
	if ((s1 = audit_last_seq(a->old)) > a->seq)
		a->seq = s1;
	if (audit_reopen(a, cause) != 0)
		goto fail;
	*out = a;
	return (0);
fail:
	if (a != NULL) {
		free(a->log);
		free(a->old);
		free(a->shots);
		free(a);
	}
	return (-1);
}

void
audit_close(struct audit *a)
{
	if (a == NULL)
		return;
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->log);
	free(a->old);
	free(a->shots);
	free(a);
}

json_t *
audit_summary(json_t *req)
{
	/* bureaud's own summary (common/action.c); the action is a field of
	 * the line. */
	return (action_summary(req, "action"));
}

static void
audit_write_png(struct audit *a, long long seq, const void *png, size_t len,
    json_t *line)
{
	char *path = hb_fmt("%s/%lld.png", a->shots, seq), *cause = NULL;
	char *gone = hb_fmt("%s/%lld.png", a->shots, seq - a->keep);

	if (path != NULL && hb_write_file(path, png, len, 0600, &cause) == 0)
		json_object_set_new(line, "screenshot",
		    json_sprintf("audit/%lld.png", seq));
	else
		fprintf(stderr, "bureau agent: %s\n",
		    cause ? cause : "no memory for a screenshot");
	/* One in, one out keeps the count bounded without listing. */
	if (gone != NULL && seq > a->keep)
		unlink(gone);
	free(cause);
	free(path);
	free(gone);
}

void
audit_record(struct audit *a, json_t *req, const char *tool, const char *action,
    const char *error, double elapsed_ms, const void *png, size_t pnglen)
{
	struct timespec ts;
	json_t *line;
	char *text, *cause = NULL;
	long long seq;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&a->lock);
	seq = ++a->seq;
	line = json_pack("{s:f, s:I, s:s?, s:s?, s:o, s:b, s:f}", "time",
	    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "seq",
	    (json_int_t)seq, "tool", tool, "action", action, "summary",
	    req != NULL ? audit_summary(req) : json_string(""), "ok",
	    error == NULL, "elapsed_ms", elapsed_ms);
	if (line == NULL)
		goto out;
	if (error != NULL)
		json_object_set_new(line, "error", json_string(error));
	if (png != NULL && pnglen > 0)
		audit_write_png(a, seq, png, pnglen, line);
	if ((text = json_dumps(line, JSON_COMPACT)) == NULL)
		goto out;
	len = strlen(text);
	text[len++] = '\n'; /* over the NUL: written by length */
	if (a->size + (long)len > a->max && a->size > 0) {
		if (rename(a->log, a->old) != 0 || audit_reopen(a, &cause) != 0)
			fprintf(stderr,
			    "bureau agent: cannot rotate '%s': %s\n", a->log,
			    cause ? cause : strerror(errno));
		free(cause);
	}
	if (a->fd >= 0 && write(a->fd, text, len) == (ssize_t)len)
		a->size += (long)len;
	else
		fprintf(stderr, "bureau agent: cannot append to '%s': %s\n",
		    a->log, strerror(errno));
	free(text);
out:
	json_decref(line);
	pthread_mutex_unlock(&a->lock);
}
