/*
 * host-bridge/agent/audit.c: the host-side audit trail of a desktop.
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

#include "common/action.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

struct audit {
	pthread_mutex_t lock;
	char *log;   /* DIR/audit.log */
	char *old;   /* DIR/audit.log.1 */
	char *shots; /* DIR/audit */
	int fd;
	long size;
	long max;      /* rotate past this many bytes */
	long keep;     /* at most this many screenshots */
	long shot_max; /* and at most this many bytes of them */
	long long seq; /* of the last line written */
	/* The screenshots kept, oldest first: found in DIR/audit at open,
	 * then added one by one; the oldest go when over keep or shot_max. */
	struct audit_shot {
		long long seq;
		long size;
	} * shots_v;
	size_t nshots, capshots;
	long shot_bytes;
	/* Requests without a valid token: counted, and written as one line
	 * at most every AUDIT_UNAUTH_EVERY seconds (DESIGN.md: no one without
	 * a token can push the trail out). */
	long long unauth;      /* counted, not yet written */
	double unauth_written; /* CLOCK_MONOTONIC of the last such line */
};

static void audit_append(struct audit *a, json_t *line);

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

static double
audit_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static int
shot_cmp(const void *x, const void *y)
{
	const struct audit_shot *p = x, *q = y;

	return (p->seq < q->seq ? -1 : p->seq > q->seq);
}

static int
audit_shot_add(struct audit *a, long long seq, long size)
{
	if (a->nshots == a->capshots) {
		size_t cap = a->capshots ? a->capshots * 2 : 64;
		struct audit_shot *v = realloc(a->shots_v, cap * sizeof *v);

		if (v == NULL)
			return (-1);
		a->shots_v = v;
		a->capshots = cap;
	}
	a->shots_v[a->nshots].seq = seq;
	a->shots_v[a->nshots++].size = size;
	a->shot_bytes += size;
	return (0);
}

/* Drop the oldest screenshots while over the count or the bytes. */
static void
audit_shots_trim(struct audit *a)
{
	size_t drop = 0;

	while (drop < a->nshots &&
	    ((long)(a->nshots - drop) > a->keep ||
	        a->shot_bytes > a->shot_max)) {
		char *path = hb_fmt("%s/%lld.png", a->shots,
		    a->shots_v[drop].seq);

		if (path != NULL && unlink(path) != 0 && errno != ENOENT)
			fprintf(stderr,
			    "bureau agent: cannot remove '%s': %s\n", path,
			    strerror(errno));
		free(path);
		a->shot_bytes -= a->shots_v[drop++].size;
	}
	if (drop == 0)
		return;
	memmove(a->shots_v, a->shots_v + drop,
	    (a->nshots - drop) * sizeof *a->shots_v);
	a->nshots -= drop;
}

/* The screenshots an earlier agent left, into the list, trimmed. */
static void
audit_shots_scan(struct audit *a)
{
	DIR *dp = opendir(a->shots);
	struct dirent *e;

	if (dp == NULL)
		return;
	while ((e = readdir(dp)) != NULL) {
		char *end;
		long long seq = strtoll(e->d_name, &end, 10);
		struct stat st;

		if (seq <= 0 || strcmp(end, ".png") != 0 ||
		    fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW) !=
		        0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (audit_shot_add(a, seq, (long)st.st_size) != 0)
			break;
	}
	closedir(dp);
	if (a->nshots > 1) /* qsort's base may not be NULL, even for none */
		qsort(a->shots_v, a->nshots, sizeof *a->shots_v, shot_cmp);
	audit_shots_trim(a);
}

int
audit_open(const char *dir, struct audit **out, char **cause)
{
	struct audit *a = calloc(1, sizeof *a);
	long long s1;

	if (a == NULL || (a->log = hb_fmt("%s/" AUDIT_LOG, dir)) == NULL ||
	    (a->old = hb_fmt("%s/" AUDIT_LOG_OLD, dir)) == NULL ||
	    (a->shots = hb_fmt("%s/audit", dir)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->fd = -1;
	/* Knobs for tests and small disks; the defaults suit most. */
	a->max = AUDIT_LOG_MAX;
	a->keep = AUDIT_SHOTS_KEEP;
	a->shot_max = AUDIT_SHOTS_MAX;
	if ((getenv("BUREAU_AUDIT_MAX") != NULL &&
	        hb_parse_int("BUREAU_AUDIT_MAX", getenv("BUREAU_AUDIT_MAX"),
	            1024, 1L << 40, &a->max, cause) != 0) ||
	    (getenv("BUREAU_AUDIT_SHOTS") != NULL &&
	        hb_parse_int("BUREAU_AUDIT_SHOTS", getenv("BUREAU_AUDIT_SHOTS"),
	            1, 1000000, &a->keep, cause) != 0) ||
	    (getenv("BUREAU_AUDIT_SHOTS_MAX") != NULL &&
	        hb_parse_int("BUREAU_AUDIT_SHOTS_MAX",
	            getenv("BUREAU_AUDIT_SHOTS_MAX"), 4096, 1L << 40,
	            &a->shot_max, cause) != 0))
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
	audit_shots_scan(a);
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
	audit_flush(a);
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->shots_v);
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

	if (path != NULL && hb_write_file(path, png, len, 0600, &cause) == 0 &&
	    audit_shot_add(a, seq, (long)len) == 0)
		json_object_set_new(line, "screenshot",
		    json_sprintf("audit/%lld.png", seq));
	else
		fprintf(stderr, "bureau agent: %s\n",
		    cause ? cause : "no memory for a screenshot");
	audit_shots_trim(a);
	free(cause);
	free(path);
}

/* The count of requests without a valid token as one line; lock held. */
static void
audit_unauth_line(struct audit *a)
{
	struct timespec ts;
	json_t *line;

	if (a->unauth == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	line = json_pack("{s:f, s:I, s:n, s:n, s:o, s:b, s:s, s:I, s:f}",
	    "time", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "seq",
	    (json_int_t)++a->seq, "tool", "action", "summary",
	    json_sprintf("%lld request%s without a valid token", a->unauth,
	        a->unauth == 1 ? "" : "s"),
	    "ok", 0, "error", "unauthorized", "count", (json_int_t)a->unauth,
	    "elapsed_ms", 0.0);
	a->unauth = 0;
	a->unauth_written = audit_mono();
	if (line != NULL)
		audit_append(a, line);
	json_decref(line);
}

void
audit_unauthorized(struct audit *a)
{
	pthread_mutex_lock(&a->lock);
	a->unauth++;
	if (a->unauth_written == 0 ||
	    audit_mono() - a->unauth_written >= AUDIT_UNAUTH_EVERY)
		audit_unauth_line(a);
	pthread_mutex_unlock(&a->lock);
}

void
audit_flush(struct audit *a)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	audit_unauth_line(a);
	pthread_mutex_unlock(&a->lock);
}

/* Append line to the log, rotating it first when it would pass max;
 * lock held. */
static void
audit_append(struct audit *a, json_t *line)
{
	char *text, *cause = NULL;
	size_t len;

	if ((text = json_dumps(line, JSON_COMPACT)) == NULL)
		return;
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
}

void
audit_record(struct audit *a, json_t *req, const char *tool, const char *action,
    const char *error, json_t *mark, double elapsed_ms, const void *png,
    size_t pnglen)
{
	struct timespec ts;
	json_t *line;
	long long seq;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&a->lock);
	/* What was counted meanwhile goes in first, once a period is up. */
	if (a->unauth > 0 &&
	    audit_mono() - a->unauth_written >= AUDIT_UNAUTH_EVERY)
		audit_unauth_line(a);
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
	if (json_is_object(mark))
		json_object_update(line, mark);
	if (png != NULL && pnglen > 0)
		audit_write_png(a, seq, png, pnglen, line);
	audit_append(a, line);
out:
	json_decref(line);
	json_decref(mark);
	pthread_mutex_unlock(&a->lock);
}

void
audit_event(struct audit *a, const char *event, json_t *fields)
{
	struct timespec ts;
	json_t *line = fields != NULL ? fields : json_object();

	if (line == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&a->lock);
	json_object_set_new(line, "time",
	    json_real((double)ts.tv_sec + (double)ts.tv_nsec / 1e9));
	json_object_set_new(line, "seq", json_integer(++a->seq));
	json_object_set_new(line, "event", json_string(event));
	audit_append(a, line);
	pthread_mutex_unlock(&a->lock);
	json_decref(line);
}
