/*
 * tools/process.c: the process tool. Background processes a client starts
 * and comes back to: `start`, `list`, `output`, `signal`, `wait`.
 *
 * Each process runs in its own session and process group (tools/spawn.c),
 * with stdin on /dev/null and stdout and stderr on pipes that one reader
 * thread drains into a ring per stream (PROC_RING bytes each; the oldest
 * bytes go when it overflows, and the next `output` says how many were
 * lost). So a process that prints a lot never blocks on a full pipe, and
 * the daemon's memory stays bounded.
 *
 * A cursor is {"stdout": N, "stderr": M}: byte offsets into each stream
 * since the process started. Finished processes stay addressable for
 * PROC_KEEP_S seconds, and at most the last PROC_KEEP_N of them.
 * Only processes started here are addressable, by the `pid` start gave.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/spawn.h"
#include "tools/tool.h"

#define PROC_RING           (1u << 20) /* bytes kept per stream */
#define PROC_OUTPUT_MAX     (1u << 20) /* bytes per stream in one reply */
#define PROC_KEEP_S         600        /* finished entries kept this long */
#define PROC_KEEP_N         64         /* and at most this many */
#define PROC_RUNNING_MAX    256
#define PROC_WAIT_DEFAULT   30.0  /* s */
#define PROC_WAIT_MAX       300.0 /* s */
#define PROC_ARGV_MAX       4096
#define PROC_COMMAND_MAX    (1u << 20)
#define PROC_ENV_MAX        1024
#define PROC_CHUNK          65536
#define PROC_READS_PER_WAKE 4 /* chunks per stream before the next */

struct proc_ring {
	char *buf;
	size_t cap;             /* allocated: grows to PROC_RING */
	size_t start, len;      /* the oldest byte kept, and how many */
	unsigned long long end; /* bytes ever written: the newest offset */
	int fd;                 /* the pipe, -1 once it reached EOF */
};

struct proc {
	struct proc *next;
	pid_t pid;
	char *command;
	double started;    /* unix time */
	uint64_t ended_ns; /* monotonic, when reaped */
	int running;
	int status;
	struct proc_ring out, err;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv; /* a process ended */
	const struct tool_config *cfg;
	struct proc *list; /* newest first */
	int ready;
	int stopping;
	pthread_t reader;
	int wake[2];
} ps = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.wake = { -1, -1 },
};

/* --- rings --------------------------------------------------------------- */

/* While cap < PROC_RING nothing has wrapped: start is 0 and growing is a
 * plain realloc. Short processes cost little; long ones at most the ring. */
static int
proc_ring_put(struct proc_ring *r, const char *buf, size_t n)
{
	r->end += n;
	if (n >= PROC_RING) {
		buf += n - PROC_RING;
		n = PROC_RING;
	}
	if (r->len + n > r->cap && r->cap < PROC_RING) {
		size_t cap = r->cap > 0 ? r->cap : 4096;
		char *b;

		while (cap < r->len + n && cap < PROC_RING)
			cap *= 2;
		if (cap > PROC_RING)
			cap = PROC_RING;
		if ((b = realloc(r->buf, cap)) == NULL)
			return (-1);
		r->buf = b;
		r->cap = cap;
	}
	while (n > 0) {
		size_t at = (r->start + r->len) % r->cap;
		size_t k = r->cap - at < n ? r->cap - at : n;

		memcpy(r->buf + at, buf, k);
		if (r->len + k > r->cap) { /* the oldest bytes go */
			size_t over = r->len + k - r->cap;

			r->start = (r->start + over) % r->cap;
			r->len -= over;
		}
		r->len += k;
		buf += k;
		n -= k;
	}
	return (0);
}

/* Copy up to max bytes from offset `from` (within the ring) into out. */
static size_t
proc_ring_get(const struct proc_ring *r, unsigned long long from, char *out,
    size_t max)
{
	unsigned long long oldest = r->end - r->len;
	size_t n = (size_t)(r->end - from), at, k;

	if (n > max)
		n = max;
	if (n == 0)
		return (0);
	at = (r->start + (size_t)(from - oldest)) % r->cap;
	k = r->cap - at < n ? r->cap - at : n;
	memcpy(out, r->buf + at, k);
	memcpy(out + k, r->buf, n - k);
	return (n);
}

/* Read what the pipe holds now (at most `chunks` reads); the caller holds
 * ps.lock. Returns 1 when more may be waiting. */
static int
proc_drain(struct proc_ring *r, int chunks)
{
	char buf[PROC_CHUNK];

	while (r->fd >= 0 && chunks-- > 0) {
		ssize_t n = read(r->fd, buf, sizeof buf);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return (0);
		if (n <= 0) {
			spawn_close(&r->fd);
			return (0);
		}
		/* out of memory: the bytes are lost, counted in `end` */
		(void)proc_ring_put(r, buf, (size_t)n);
	}
	return (r->fd >= 0);
}

/* --- the table ----------------------------------------------------------- */

static void
proc_free(struct proc *p)
{
	spawn_close(&p->out.fd);
	spawn_close(&p->err.fd);
	free(p->out.buf);
	free(p->err.buf);
	free(p->command);
	free(p);
}

/* Drop finished entries past their time or beyond the last PROC_KEEP_N;
 * the caller holds ps.lock. */
static void
proc_prune(void)
{
	uint64_t now = tool_now_ns();
	int finished = 0;

	for (struct proc **pp = &ps.list; *pp != NULL;) {
		struct proc *p = *pp;

		if (!p->running &&
		    (++finished > PROC_KEEP_N ||
		        now - p->ended_ns >
		            (uint64_t)PROC_KEEP_S * 1000000000u)) {
			*pp = p->next;
			proc_free(p);
			continue;
		}
		pp = &p->next;
	}
}

static struct proc *
proc_find(pid_t pid)
{
	for (struct proc *p = ps.list; p != NULL; p = p->next)
		if (p->pid == pid)
			return (p);
	return (NULL);
}

static void
proc_on_exit(void *arg, pid_t pid, int status)
{
	(void)arg;
	pthread_mutex_lock(&ps.lock);
	for (struct proc *p = ps.list; p != NULL; p = p->next)
		if (p->pid == pid && p->running) {
			p->running = 0;
			p->status = status;
			p->ended_ns = tool_now_ns();
			break;
		}
	pthread_cond_broadcast(&ps.cv);
	pthread_mutex_unlock(&ps.lock);
}

/* The reader: drain every open pipe whenever one has something. */
static void *
proc_reader(void *unused)
{
	struct pollfd *pfd = NULL;
	size_t pcap = 0;

	(void)unused;
	for (;;) {
		size_t n = 1, need = 1;
		char c[64];

		pthread_mutex_lock(&ps.lock);
		if (ps.stopping) {
			pthread_mutex_unlock(&ps.lock);
			break;
		}
		for (struct proc *p = ps.list; p != NULL; p = p->next)
			need += 2;
		if (need > pcap) {
			struct pollfd *q = realloc(pfd, need * sizeof *q);

			if (q == NULL) {
				pthread_mutex_unlock(&ps.lock);
				usleep(100000);
				continue;
			}
			pfd = q;
			pcap = need;
		}
		pfd[0] = (struct pollfd){ .fd = ps.wake[0], .events = POLLIN };
		for (struct proc *p = ps.list; p != NULL; p = p->next) {
			if (p->out.fd >= 0)
				pfd[n++] = (struct pollfd){ .fd = p->out.fd,
					.events = POLLIN };
			if (p->err.fd >= 0)
				pfd[n++] = (struct pollfd){ .fd = p->err.fd,
					.events = POLLIN };
		}
		pthread_mutex_unlock(&ps.lock);

		if (poll(pfd, n, -1) < 0 && errno != EINTR)
			usleep(10000);
		while (read(ps.wake[0], c, sizeof c) > 0)
			;
		/* A descriptor polled above may have been closed since (its
		 * entry dropped): read only those entries still hold, and
		 * every one of them, which costs an EAGAIN each. */
		pthread_mutex_lock(&ps.lock);
		/* at most a few chunks each, so one chatty process neither
		 * starves the others nor holds the lock for long; poll
		 * returns at once while more is waiting */
		for (struct proc *p = ps.list; p != NULL; p = p->next) {
			(void)proc_drain(&p->out, PROC_READS_PER_WAKE);
			(void)proc_drain(&p->err, PROC_READS_PER_WAKE);
		}
		pthread_mutex_unlock(&ps.lock);
	}
	free(pfd);
	return (NULL);
}

static void
proc_wakeup(void)
{
	char c = 1;

	if (write(ps.wake[1], &c, 1) < 0 && errno != EAGAIN)
		return;
}

/* --- helpers ------------------------------------------------------------- */

static json_t *
proc_status_json(const struct proc *p, json_t *o)
{
	if (p->running)
		return (o);
	if (WIFSIGNALED(p->status)) {
		const char *name = sigabbrev_np(WTERMSIG(p->status));
		char buf[32];

		json_object_set_new(o, "signal",
		    json_integer(WTERMSIG(p->status)));
		snprintf(buf, sizeof buf, "SIG%s", name != NULL ? name : "?");
		json_object_set_new(o, "signal_name", json_string(buf));
	} else
		json_object_set_new(o, "exit_code",
		    json_integer(WEXITSTATUS(p->status)));
	return (o);
}

static void
proc_set_status(struct tool_call *call, const struct proc *p)
{
	tool_set_bool(call, "running", p->running);
	proc_status_json(p, call->reply);
}

/* The entry for field `pid`; the caller holds ps.lock. */
static int
proc_arg_pid(struct tool_call *call, struct proc **out)
{
	long long pid;

	if (tool_arg_int(call, "pid", 1, 1, 0x7fffffff, 0, &pid) != 0)
		return (call->code);
	proc_prune();
	if ((*out = proc_find((pid_t)pid)) == NULL)
		return (tool_fail(call, BD_ENOTFOUND,
		    "no process with pid "
		    "'%lld' started through bureaud (finished ones are kept "
		    "for %d s, the last %d of them)",
		    pid, PROC_KEEP_S, PROC_KEEP_N));
	return (0);
}

/* Bytes at the end of buf that start a UTF-8 sequence not yet complete. */
static size_t
proc_utf8_partial(const char *buf, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char c = (unsigned char)buf[n - k];

		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		if (c < 0x80)
			return (0);
		size_t want = (c >> 5) == 6 ? 2 :
		    (c >> 4) == 14          ? 3 :
		    (c >> 3) == 30          ? 4 :
		                              0;
		return (want > k ? k : 0);
	}
	return (0);
}

/* --- actions ------------------------------------------------------------- */

static int
proc_env_name_ok(const char *name, size_t len)
{
	if (len == 0 || strlen(name) != len)
		return (0);
	return (strchr(name, '=') == NULL);
}

/* Field `cwd`, checked to be a directory; NULL when absent. */
static int
proc_arg_cwd(struct tool_call *call, const char **cwd)
{
	struct stat st;

	if (tool_arg_str(call, "cwd", 0, NULL, cwd) != 0)
		return (call->code);
	if (*cwd != NULL && stat(*cwd, &st) != 0)
		return (tool_fail(call, BD_EINVAL, "invalid cwd '%s': %s", *cwd,
		    strerror(errno)));
	if (*cwd != NULL && !S_ISDIR(st.st_mode))
		return (tool_fail(call, BD_EINVAL,
		    "invalid cwd '%s': not a directory", *cwd));
	return (0);
}

/* The child's environment (*envp, for spawn_env_free): the daemon's without
 * BUREAU_TOKEN, with the configured DISPLAY and field `env` applied. */
static int
proc_arg_env(struct tool_call *call, char ***envp)
{
	const char **names = NULL, **values = NULL;
	json_t *jenv;
	size_t n;
	int rv = 0;

	jenv = json_object_get(call->req, "env");
	if (json_is_null(jenv))
		jenv = NULL;
	if (jenv != NULL &&
	    (!json_is_object(jenv) || json_object_size(jenv) > PROC_ENV_MAX))
		return (tool_fail(call, BD_EBADREQ,
		    "field 'env' must be an "
		    "object of at most %d strings",
		    PROC_ENV_MAX));
	n = 2 + (jenv != NULL ? json_object_size(jenv) : 0);
	if ((names = calloc(n, sizeof *names)) == NULL ||
	    (values = calloc(n, sizeof *values)) == NULL)
		goto oom;
	n = 0;
	names[n] = "BUREAU_TOKEN", values[n++] = NULL;
	if (ps.cfg != NULL && ps.cfg->display != NULL)
		names[n] = "DISPLAY", values[n++] = ps.cfg->display;
	if (jenv != NULL) {
		const char *key;
		json_t *v;

		json_object_foreach(jenv, key, v)
		{
			if (!proc_env_name_ok(key, strlen(key))) {
				rv = tool_fail(call, BD_EINVAL,
				    "invalid name "
				    "'%.80s' in field 'env': empty or has '='",
				    key);
				goto out;
			}
			if (!json_is_string(v) && !json_is_null(v)) {
				rv = tool_fail(call, BD_EBADREQ,
				    "field "
				    "'env.%.80s' must be a string (or null to "
				    "unset it)",
				    key);
				goto out;
			}
			if (v != NULL && json_is_string(v) &&
			    strlen(json_string_value(v)) !=
			        json_string_length(v)) {
				rv = tool_fail(call, BD_EINVAL,
				    "invalid "
				    "'env.%.80s': it contains a NUL byte",
				    key);
				goto out;
			}
			names[n] = key;
			values[n++] = json_is_string(v) ? json_string_value(v) :
			                                  NULL;
		}
	}
	if ((*envp = spawn_env(names, values, n)) == NULL)
		goto oom;
	goto out;

oom:
	rv = tool_fail(call, BD_EINTERNAL, "out of memory");
out:
	free(names);
	free(values);
	return (rv);
}

/* The table entry for a process about to start, not yet running; NULL when
 * out of memory. */
static struct proc *
proc_new(const char *command, char **argv)
{
	char *shown = NULL;
	size_t nargv = 0;
	struct proc *p;
	struct timespec now;

	while (argv[nargv] != NULL)
		nargv++;
	/* what `list` shows: the shell command, or argv joined */
	if (command != NULL)
		shown = strdup(command);
	else {
		size_t len = 1;

		for (size_t i = 0; i < nargv; i++)
			len += strlen(argv[i]) + 1;
		if ((shown = malloc(len)) != NULL) {
			shown[0] = '\0';
			for (size_t i = 0; i < nargv; i++) {
				if (i > 0)
					strcat(shown, " ");
				strcat(shown, argv[i]);
			}
		}
	}
	if (shown == NULL || (p = calloc(1, sizeof *p)) == NULL) {
		free(shown);
		return (NULL);
	}
	p->command = shown;
	p->out.fd = p->err.fd = -1;
	clock_gettime(CLOCK_REALTIME, &now);
	p->started = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
	return (p);
}

/* Put p, now running as c, in the table; the caller holds ps.lock. */
static void
proc_insert(struct proc *p, const struct spawn_child *c)
{
	/* a finished entry with the same pid is stale: the pid is reused */
	for (struct proc **pp = &ps.list; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->pid == c->pid) {
			struct proc *old = *pp;

			*pp = old->next;
			proc_free(old);
			break;
		}
	p->pid = c->pid;
	p->running = 1;
	p->out.fd = c->out;
	p->err.fd = c->err;
	p->next = ps.list;
	ps.list = p;
}

/* Start the process and enter p in the table, which owns it from then on
 * (the caller keeps it on failure); *pid is the process's. */
static int
proc_spawn(struct tool_call *call, struct proc *p, char **argv, const char *cwd,
    char **envp, pid_t *pid)
{
	struct spawn_child c;
	char *cause = NULL;
	int running = 0, rv;

	pthread_mutex_lock(&ps.lock);
	proc_prune();
	for (struct proc *q = ps.list; q != NULL; q = q->next)
		running += q->running;
	if (running >= PROC_RUNNING_MAX) {
		pthread_mutex_unlock(&ps.lock);
		return (tool_fail(call, BD_EBUSY,
		    "already %d processes running, "
		    "the most there can be: wait for or signal some",
		    running));
	}
	/* under ps.lock: the reaper cannot report this pid before the
	 * entry that waits for it is in the table */
	struct spawn_opts o = { .argv = argv,
		.cwd = cwd,
		.envp = envp,
		.on_exit = proc_on_exit };
	if ((rv = spawn_start(&o, &c, &cause)) != 0) {
		pthread_mutex_unlock(&ps.lock);
		/* spawn_start's code says why (not_found: the program) */
		rv = tool_fail(call, rv, "%s",
		    cause != NULL ? cause : "cannot start the process");
		free(cause);
		return (rv);
	}
	proc_insert(p, &c);
	proc_wakeup();
	pthread_mutex_unlock(&ps.lock);
	*pid = c.pid;
	return (0);
}

static int
proc_start(struct tool_call *call)
{
	const char *command, *cwd;
	char **argv = NULL, **envp = NULL;
	struct proc *p = NULL;
	pid_t pid = 0;
	int rv;

	if (tool_arg_argv(call, PROC_ARGV_MAX, PROC_COMMAND_MAX, &argv) != 0)
		return (call->code);
	/* a shell line runs as /bin/sh -c LINE */
	command = tool_arg_has(call, "command") ? argv[2] : NULL;
	if ((rv = proc_arg_cwd(call, &cwd)) != 0 ||
	    (rv = proc_arg_env(call, &envp)) != 0)
		goto out;
	if ((p = proc_new(command, argv)) == NULL) {
		rv = tool_fail(call, BD_EINTERNAL, "out of memory");
		goto out;
	}
	if ((rv = proc_spawn(call, p, argv, cwd, envp, &pid)) != 0)
		goto out;
	p = NULL;
	tool_set_int(call, "pid", (long long)pid);
	tool_set_output(call, "started process %d", (int)pid);
out:
	if (p != NULL) {
		free(p->command);
		free(p);
	}
	spawn_env_free(envp);
	free(argv);
	return (rv);
}

static int
proc_list(struct tool_call *call)
{
	json_t *arr = json_array();
	int n = 0, running = 0;

	if (arr == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	pthread_mutex_lock(&ps.lock);
	proc_prune();
	for (struct proc *p = ps.list; p != NULL; p = p->next) {
		json_t *o = json_pack("{s:i, s:s, s:b, s:f}", "pid",
		    (int)p->pid, "command", p->command, "running", p->running,
		    "started", p->started);

		if (o == NULL) /* a command that is not UTF-8 cannot be */
			o = json_pack("{s:i, s:s, s:b, s:f}", "pid",
			    (int)p->pid, "command", "?", "running", p->running,
			    "started", p->started);
		if (o != NULL)
			json_array_insert_new(arr, 0, proc_status_json(p, o));
		n++;
		running += p->running;
	}
	pthread_mutex_unlock(&ps.lock);
	tool_set_json(call, "processes", arr);
	tool_set_output(call, "%d process%s, %d running", n, n == 1 ? "" : "es",
	    running);
	return (0);
}

/* The cursor's offset for one stream: 0 when absent. */
static int
proc_arg_cursor(struct tool_call *call, json_t *cur, const char *stream,
    const struct proc_ring *r, unsigned long long *off)
{
	json_t *v = cur != NULL ? json_object_get(cur, stream) : NULL;

	*off = 0;
	if (v == NULL || json_is_null(v))
		return (0);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return (tool_fail(call, BD_EBADREQ,
		    "field 'cursor.%s' must "
		    "be a non-negative integer",
		    stream));
	*off = (unsigned long long)json_integer_value(v);
	if (*off > r->end)
		return (tool_fail(call, BD_EBOUNDS,
		    "field 'cursor.%s' is %llu, "
		    "past the %llu bytes the process wrote there",
		    stream, *off, r->end));
	return (0);
}

static int
proc_output(struct tool_call *call)
{
	unsigned long long from[2], next[2], lost[2];
	static const char *const names[2] = { "stdout", "stderr" };
	char *buf[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	struct proc *p;
	json_t *cur = json_object_get(call->req, "cursor");
	int rv = 0;

	if (cur != NULL && !json_is_null(cur) && !json_is_object(cur))
		return (tool_fail(call, BD_EBADREQ,
		    "field 'cursor' must be an "
		    "object {\"stdout\": N, \"stderr\": M} as 'output' "
		    "returned it"));
	pthread_mutex_lock(&ps.lock);
	if (proc_arg_pid(call, &p) != 0)
		goto fail;
	for (int i = 0; i < 2; i++) {
		struct proc_ring *r = i == 0 ? &p->out : &p->err;
		unsigned long long oldest;

		/* the newest bytes, without waiting for the reader */
		(void)proc_drain(r, PROC_OUTPUT_MAX / PROC_CHUNK);
		if (proc_arg_cursor(call, cur, names[i], r, &from[i]) != 0)
			goto fail;
		oldest = r->end - r->len;
		lost[i] = from[i] < oldest ? oldest - from[i] : 0;
		if (from[i] < oldest)
			from[i] = oldest;
		len[i] = r->end - from[i] < PROC_OUTPUT_MAX ?
		    (size_t)(r->end - from[i]) :
		    PROC_OUTPUT_MAX;
		if ((buf[i] = malloc(len[i] > 0 ? len[i] : 1)) == NULL) {
			rv = tool_fail(call, BD_EINTERNAL, "out of memory");
			goto fail;
		}
		len[i] = proc_ring_get(r, from[i], buf[i], len[i]);
		/* a character split by the end of what there is now waits
		 * for its last bytes, unless no more can come */
		if (r->fd >= 0 || from[i] + len[i] < r->end)
			len[i] -= proc_utf8_partial(buf[i], len[i]);
		next[i] = from[i] + len[i];
	}
	for (int i = 0; i < 2; i++) {
		tool_set_strn(call, names[i], buf[i], len[i]);
		if (lost[i] > 0) {
			char f[16];

			snprintf(f, sizeof f, "%s_lost", names[i]);
			tool_set_int(call, f, (long long)lost[i]);
		}
	}
	tool_set_json(call, "cursor",
	    json_pack("{s:I, s:I}", "stdout", (json_int_t)next[0], "stderr",
	        (json_int_t)next[1]));
	/* `running` false and nothing left means the output is complete */
	tool_set_bool(call, "more",
	    next[0] < p->out.end || next[1] < p->err.end || p->out.fd >= 0 ||
	        p->err.fd >= 0);
	proc_set_status(call, p);
	pthread_mutex_unlock(&ps.lock);
	if (lost[0] > 0 || lost[1] > 0)
		tool_set_output(call,
		    "%llu bytes of stdout and %llu of stderr "
		    "were lost: the process wrote more than the %u kept per "
		    "stream since that cursor",
		    lost[0], lost[1], PROC_RING);
	free(buf[0]);
	free(buf[1]);
	return (0);
fail:
	pthread_mutex_unlock(&ps.lock);
	free(buf[0]);
	free(buf[1]);
	return (rv != 0 ? rv : call->code);
}

static int
proc_arg_signal(struct tool_call *call, int *sig)
{
	json_t *v = json_object_get(call->req, "signal");
	const char *s;

	if (v == NULL || json_is_null(v)) {
		*sig = SIGTERM;
		return (0);
	}
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);

		if (n < 1 || n >= NSIG)
			return (tool_fail(call, BD_EBOUNDS,
			    "field 'signal' is "
			    "%lld, outside 1..%d",
			    (long long)n, NSIG - 1));
		*sig = (int)n;
		return (0);
	}
	if (!json_is_string(v))
		return (tool_fail(call, BD_EBADREQ,
		    "field 'signal' must be a "
		    "name such as \"TERM\" or a number"));
	s = json_string_value(v);
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int i = 1; i < NSIG; i++) {
		const char *name = sigabbrev_np(i);

		if (name != NULL && strcasecmp(name, s) == 0) {
			*sig = i;
			return (0);
		}
	}
	return (tool_fail(call, BD_EINVAL,
	    "invalid signal '%.40s': expected "
	    "a name such as TERM, KILL, INT, HUP, STOP, CONT, USR1 or a "
	    "number",
	    json_string_value(v)));
}

/* The refusal to signal an ended process: the pid, and how it ended. */
static int
proc_exited_fail(struct tool_call *call, const struct proc *p)
{
	char how[48];

	if (WIFSIGNALED(p->status))
		snprintf(how, sizeof how, "(ended by SIG%s)",
		    sigabbrev_np(WTERMSIG(p->status)) != NULL ?
		        sigabbrev_np(WTERMSIG(p->status)) :
		        "?");
	else
		snprintf(how, sizeof how, "with status %d",
		    WEXITSTATUS(p->status));
	return (tool_fail(call, BD_EINVAL,
	    "pid '%d': the process has already "
	    "exited %s; it is not signalled: the pid may be another "
	    "process's now (children it left in its group are no longer "
	    "addressable)",
	    (int)p->pid, how));
}

static int
proc_signal(struct tool_call *call)
{
	struct proc *p;
	int sig = SIGTERM, group, rv;
	pid_t pid;

	if (proc_arg_signal(call, &sig) != 0 ||
	    tool_arg_bool(call, "group", 1, &group) != 0)
		return (call->code);
	pthread_mutex_lock(&ps.lock);
	if (proc_arg_pid(call, &p) != 0) {
		pthread_mutex_unlock(&ps.lock);
		return (call->code);
	}
	pid = p->pid;
	if (!p->running) {
		/* Reaped: the pid number may belong to another process by
		 * now (and lead another group), so nothing is sent. */
		rv = proc_exited_fail(call, p);
		pthread_mutex_unlock(&ps.lock);
		return (rv);
	}
	/* spawn_signal sends only while the child is unreaped, so a pid the
	 * reaper just freed is never signalled as this process's */
	rv = spawn_signal(pid, sig, group);
	if (rv != 0 && errno == ESRCH) {
		pthread_mutex_unlock(&ps.lock);
		return (tool_fail(call, BD_EINVAL,
		    "pid '%d': the process has "
		    "exited (its status is on its way: see 'wait'); it is not "
		    "signalled, the pid may be another process's now",
		    (int)pid));
	}
	if (rv != 0) {
		int e = errno;

		pthread_mutex_unlock(&ps.lock);
		return (tool_fail(call, e == EPERM ? BD_EPERM : BD_EIO,
		    "cannot signal process '%d': %s", (int)pid, strerror(e)));
	}
	pthread_mutex_unlock(&ps.lock);
	tool_set_output(call, "sent SIG%s to %s %d",
	    sigabbrev_np(sig) != NULL ? sigabbrev_np(sig) : "?",
	    group ? "process group" : "process", (int)pid);
	return (0);
}

static int
proc_wait(struct tool_call *call)
{
	struct timespec ts;
	struct proc *p;
	double timeout;
	long long pid;
	uint64_t ns;
	int rv;

	if (tool_arg_num(call, "timeout", 0, 0, PROC_WAIT_MAX,
	        PROC_WAIT_DEFAULT, &timeout) != 0 ||
	    tool_arg_int(call, "pid", 1, 1, 0x7fffffff, 0, &pid) != 0)
		return (call->code);
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_nsec + (uint64_t)(timeout * 1e9);
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&ps.lock);
	for (;;) {
		/* looked up again after each wake-up: entries come and go */
		if (proc_arg_pid(call, &p) != 0) {
			pthread_mutex_unlock(&ps.lock);
			return (call->code);
		}
		if (!p->running)
			break;
		if ((rv = tool_cond_timedwait(&ps.cv, &ps.lock, &ts)) != 0) {
			if ((p = proc_find((pid_t)pid)) != NULL && !p->running)
				break;
			if (rv == ECANCELED) {
				/* proc_fini frees the list after shutdown */
				pthread_mutex_unlock(&ps.lock);
				return (tool_fail(call, BD_EBUSY,
				    "process "
				    "'%lld' still running: bureaud is shutting "
				    "down",
				    pid));
			}
			pthread_mutex_unlock(&ps.lock);
			return (tool_fail(call, BD_ETIMEOUT,
			    "process '%lld' "
			    "still running after %g s",
			    pid, timeout));
		}
	}
	proc_set_status(call, p);
	if (WIFSIGNALED(p->status))
		tool_set_output(call, "process %d ended by SIG%s", (int)p->pid,
		    sigabbrev_np(WTERMSIG(p->status)) != NULL ?
		        sigabbrev_np(WTERMSIG(p->status)) :
		        "?");
	else
		tool_set_output(call, "process %d exited with status %d",
		    (int)p->pid, WEXITSTATUS(p->status));
	pthread_mutex_unlock(&ps.lock);
	return (0);
}

/* --- the tool ------------------------------------------------------------ */

static int
proc_prepare(struct tool_call *call)
{
	if (!ps.ready)
		return (tool_fail(call, BD_EINTERNAL,
		    "the process tool did "
		    "not start"));
	return (0);
}

static int
proc_init(const struct tool_config *cfg, char **cause)
{
	ps.cfg = cfg;
	if (spawn_init(cause) != 0)
		return (-1);
	if (pipe2(ps.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		if (asprintf(cause, "cannot create a pipe: %s",
		        strerror(errno)) < 0)
			*cause = NULL;
		spawn_fini();
		return (-1);
	}
	if (pthread_create(&ps.reader, NULL, proc_reader, NULL) != 0) {
		*cause = strdup("cannot start the output reader thread");
		spawn_close(&ps.wake[0]);
		spawn_close(&ps.wake[1]);
		spawn_fini();
		return (-1);
	}
	ps.ready = 1;
	return (0);
}

/* Processes still running get SIGTERM: nothing could address them once
 * the daemon is gone. */
static void
proc_fini(void)
{
	if (!ps.ready)
		return;
	pthread_mutex_lock(&ps.lock);
	for (struct proc *p = ps.list; p != NULL; p = p->next)
		if (p->running) /* not if reaped meanwhile: see signal */
			(void)spawn_signal(p->pid, SIGTERM, 1);
	ps.stopping = 1;
	proc_wakeup();
	pthread_mutex_unlock(&ps.lock);
	pthread_join(ps.reader, NULL);
	spawn_fini();
	pthread_mutex_lock(&ps.lock);
	while (ps.list != NULL) {
		struct proc *p = ps.list;

		ps.list = p->next;
		proc_free(p);
	}
	ps.ready = 0;
	pthread_mutex_unlock(&ps.lock);
	spawn_close(&ps.wake[0]);
	spawn_close(&ps.wake[1]);
}

static const struct tool_action proc_actions[] = {
	{ "start", "action", proc_start, 0 },
	{ "list", "action", proc_list, 0 },
	{ "output", "action", proc_output, 0 },
	{ "signal", "action", proc_signal, 0 },
	{ "wait", "action", proc_wait, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_process_entry = {
	.name = "process",
	.init = proc_init,
	.fini = proc_fini,
	.actions = proc_actions,
	.prepare = proc_prepare,
};
