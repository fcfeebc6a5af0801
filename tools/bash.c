/*
 * tools/bash.c: the bash tool (Anthropic's: `command`, `restart`), one
 * persistent shell per `session`.
 *
 * Each session is a `bash --noprofile --norc` in its own process group,
 * reading commands from a pipe, with stdout and stderr on one pipe so they
 * interleave as produced. A command is sent as
 *
 *   eval '<command, single-quoted>' </dev/null; printf '\n%s %d\n' MARK "$?"
 *
 * so it runs in the shell itself (cd and export persist), a syntax error in
 * it cannot swallow what follows, it reads /dev/null rather than our pipe
 * or the daemon's stdin (`read x` or `cat` end at once), and MARK, random
 * per command, tells the end of its output and carries its exit status.
 *
 * A timeout kills the session's whole process group (the command's
 * children and the shell: a pure shell loop has no other process to kill)
 * and starts a new shell. Output beyond the cap keeps its first and last
 * halves; the middle is read and dropped, so memory stays bounded whatever
 * the command prints.
 *
 * A session runs one command at a time: a second request for a busy
 * session is answered at once with `busy` rather than tying up a worker,
 * except `restart`, which kills the running command's group and takes the
 * session over (the way out of a stuck command).
 *
 * There are BASH_SESSIONS_MAX slots. `close` ends a session (its group is
 * killed) and frees its slot; a session idle for longer than the idle
 * timeout (BASH_IDLE_DEFAULT_S, or $BUREAU_BASH_IDLE_S; 0 = never) is
 * closed the same way by a thread of its own, and the next request that
 * names it gets a new shell and a note saying so.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/spawn.h"
#include "tools/tool.h"

#define BASH_SESSIONS_MAX    16
#define BASH_NAME_MAX        64
#define BASH_TIMEOUT_DEFAULT 120.0  /* s */
#define BASH_TIMEOUT_MAX     3600.0 /* s */
#define BASH_COMMAND_MAX     (1u << 20)
#define BASH_CHUNK           65536
#define BASH_SPILL_MAX       4096 /* output that arrived after a marker */
#define BASH_REAP_MS         5000 /* wait for a killed shell to be reaped */
#define BASH_MARK_LEN        45   /* "\n__bureau_end_" + 32 hex + "__ " */
#define BASH_IDLE_DEFAULT_S  1800 /* an unused session is closed after */

struct bash_session {
	char name[BASH_NAME_MAX + 1]; /* "" = a free slot */
	pthread_mutex_t run;          /* held while a command or restart runs */
	double since;                 /* when the running command started */
	pid_t pid;                    /* the shell (under bs.lock), 0 = none */
	int pidfd;                    /* its pidfd (under bs.lock), or -1 */
	int in, out;                  /* its command and output pipes */
	int exited, status;           /* from the reaper (under bs.lock) */
	char spill[BASH_SPILL_MAX];   /* background output after a marker */
	size_t nspill;
	double last;  /* when last used (under bs.lock) */
	int expiring; /* the idle thread is closing it (ditto) */
};

static struct {
	pthread_mutex_t lock; /* slots, pids, exit statuses, `last`, expired */
	pthread_cond_t cv;    /* a shell was reaped */
	pthread_cond_t quit;  /* the idle thread is to stop */
	const struct tool_config *cfg;
	int ready;
	double idle_ms; /* 0: sessions never expire */
	pthread_t idler;
	int idler_started, stopping;
	struct bash_session s[BASH_SESSIONS_MAX];
	/* sessions the idle timeout closed, so that the next request naming
	 * one can say its shell is new (a ring: the oldest names go) */
	char expired[BASH_SESSIONS_MAX][BASH_NAME_MAX + 1];
	int nexpired;
	char why[128]; /* why init failed, for the replies */
} bs = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.quit = PTHREAD_COND_INITIALIZER,
};

/* --- bounded output ------------------------------------------------------ */

/* The first `hcap` bytes and a ring of the last `tcap`, and how many
 * bytes there were in all. */
struct bash_out {
	char *head;
	size_t hlen, hcap, halloc;
	char *tail;
	size_t tlen, tcap, tpos;
	unsigned long long total;
};

static void
bash_out_init(struct bash_out *o, size_t max)
{
	*o = (struct bash_out){ 0 };
	o->hcap = max - max / 2;
	o->tcap = max / 2;
}

static void
bash_out_free(struct bash_out *o)
{
	free(o->head);
	free(o->tail);
}

static int
bash_out_add(struct bash_out *o, const char *buf, size_t n)
{
	if (n == 0)
		return (0);
	o->total += n;
	if (o->hlen < o->hcap) {
		size_t k = n < o->hcap - o->hlen ? n : o->hcap - o->hlen;

		if (o->hlen + k > o->halloc) {
			size_t a = o->halloc > 0 ? o->halloc : 4096;
			char *h;

			while (a < o->hlen + k)
				a *= 2;
			if (a > o->hcap)
				a = o->hcap;
			if ((h = realloc(o->head, a)) == NULL)
				return (-1);
			o->head = h;
			o->halloc = a;
		}
		memcpy(o->head + o->hlen, buf, k);
		o->hlen += k;
		buf += k;
		n -= k;
	}
	if (n == 0 || o->tcap == 0)
		return (0);
	if (o->tail == NULL && (o->tail = malloc(o->tcap)) == NULL)
		return (-1);
	if (n > o->tcap) { /* only the last tcap bytes can survive */
		buf += n - o->tcap;
		n = o->tcap;
	}
	while (n > 0) {
		size_t k = o->tcap - o->tpos;

		if (k > n)
			k = n;
		memcpy(o->tail + o->tpos, buf, k);
		o->tpos = (o->tpos + k) % o->tcap;
		o->tlen = o->tlen + k > o->tcap ? o->tcap : o->tlen + k;
		buf += k;
		n -= k;
	}
	return (0);
}

/* The text for the reply, with the truncation note when bytes were
 * dropped; malloc'd, the caller frees. */
static char *
bash_out_text(const struct bash_out *o, size_t *len, int *truncated)
{
	char note[160];
	size_t nn = 0, start, k;
	char *s;

	*truncated = o->total > (unsigned long long)(o->hlen + o->tlen);
	if (*truncated)
		nn = (size_t)snprintf(note, sizeof note,
		    "\n[output truncated: "
		    "%llu bytes, showing the first %zu and last %zu]\n",
		    o->total, o->hlen, o->tlen);
	if ((s = malloc(o->hlen + nn + o->tlen + 1)) == NULL)
		return (NULL);
	if (o->hlen > 0)
		memcpy(s, o->head, o->hlen);
	memcpy(s + o->hlen, note, nn);
	start = o->tlen < o->tcap ? 0 : o->tpos;
	k = o->tcap - start < o->tlen ? o->tcap - start : o->tlen;
	if (k > 0)
		memcpy(s + o->hlen + nn, o->tail + start, k);
	if (o->tlen > k)
		memcpy(s + o->hlen + nn + k, o->tail, o->tlen - k);
	*len = o->hlen + nn + o->tlen;
	s[*len] = '\0';
	return (s);
}

/* --- shells -------------------------------------------------------------- */

static void
bash_on_exit(void *arg, pid_t pid, int status)
{
	struct bash_session *s = arg;

	pthread_mutex_lock(&bs.lock);
	if (s->pid == pid) {
		s->exited = 1;
		s->status = status;
		pthread_cond_broadcast(&bs.cv);
	}
	pthread_mutex_unlock(&bs.lock);
}

/* Wait until the shell has been reaped (at most ms); 1 when it was, with
 * its status. */
static int
bash_wait_exit(struct bash_session *s, int ms, int *status)
{
	struct timespec ts;
	int done;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&bs.lock);
	while (!s->exited && s->pid > 0)
		if (pthread_cond_timedwait(&bs.cv, &bs.lock, &ts) != 0)
			break;
	done = s->exited;
	if (done && status != NULL)
		*status = s->status;
	pthread_mutex_unlock(&bs.lock);
	return (done);
}

/* Kill the session's process group and forget the shell. */
static void
bash_stop(struct bash_session *s)
{
	pid_t pid;

	pthread_mutex_lock(&bs.lock);
	pid = s->pid;
	pthread_mutex_unlock(&bs.lock);
	if (pid > 0) {
		/* by the pidfd: the group may outlive a shell reaped long
		 * ago (background jobs), but its number may not be ours */
		(void)spawn_kill_group(pid, s->pidfd, SIGKILL);
		/* its pid may be reused once reaped: wait for that before a
		 * new shell can be told apart from it */
		(void)bash_wait_exit(s, BASH_REAP_MS, NULL);
	}
	spawn_close(&s->in);
	spawn_close(&s->out);
	pthread_mutex_lock(&bs.lock);
	spawn_close(&s->pidfd);
	s->pid = 0;
	s->exited = 0;
	pthread_mutex_unlock(&bs.lock);
	s->nspill = 0;
}

static int
bash_begin(struct bash_session *s, char **cause)
{
	static char *const argv[] = { "bash", "--noprofile", "--norc", NULL };
	const char *names[6], *values[6];
	struct spawn_opts o = { .argv = argv,
		.stdin_pipe = 1,
		.merge_stderr = 1,
		.on_exit = bash_on_exit,
		.arg = s,
		.want_pidfd = 1 };
	struct spawn_child c;
	const char *home = getenv("HOME");
	struct stat st;
	size_t n = 0;
	char **envp;
	int rv;

	/* Programs that page or colour output for a terminal must not wait
	 * for one; programs started here draw on the daemon's display. */
	names[n] = "PAGER", values[n++] = "cat";
	names[n] = "GIT_PAGER", values[n++] = "cat";
	names[n] = "TERM", values[n++] = "dumb";
	names[n] = "BUREAU_TOKEN", values[n++] = NULL;
	names[n] = "BUREAU_SESSION", values[n++] = s->name;
	if (bs.cfg != NULL && bs.cfg->display != NULL)
		names[n] = "DISPLAY", values[n++] = bs.cfg->display;
	if ((envp = spawn_env(names, values, n)) == NULL) {
		*cause = strdup("out of memory");
		return (-1);
	}
	o.envp = envp;
	if (home != NULL && stat(home, &st) == 0 && S_ISDIR(st.st_mode))
		o.cwd = home;
	/* bs.lock across the start: the reaper cannot report this pid
	 * before s->pid says it is this session's shell */
	pthread_mutex_lock(&bs.lock);
	rv = spawn_start(&o, &c, cause);
	if (rv == 0) {
		s->pid = c.pid;
		s->pidfd = c.pidfd;
		s->exited = 0;
		s->in = c.in;
		s->out = c.out;
	}
	pthread_mutex_unlock(&bs.lock);
	spawn_env_free(envp);
	s->nspill = 0;
	return (rv);
}

/* --- running a command --------------------------------------------------- */

enum bash_end {
	BASH_DONE,
	BASH_EXITED,
	BASH_TIMEDOUT,
	BASH_FAILED,
	BASH_STOPPED
};

/* The text sent to the shell for one command; malloc'd. */
static char *
bash_wrap(const char *cmd, size_t len, const char *mark)
{
	static const char pre[] = "eval '";
	static const char post[] = "' </dev/null; printf '\\n%s %d\\n' '";
	size_t quotes = 0, n, k = 0;
	char *w;

	for (size_t i = 0; i < len; i++)
		quotes += cmd[i] == '\'';
	n = sizeof pre + len + quotes * 3 + sizeof post + strlen(mark) + 16;
	if ((w = malloc(n)) == NULL)
		return (NULL);
	memcpy(w, pre, sizeof pre - 1);
	k = sizeof pre - 1;
	for (size_t i = 0; i < len; i++) {
		if (cmd[i] == '\'') { /* close, escaped quote, reopen */
			memcpy(w + k, "'\\''", 4);
			k += 4;
		} else
			w[k++] = cmd[i];
	}
	k += (size_t)snprintf(w + k, n - k, "%s%s' \"$?\"\n", post, mark);
	return (w);
}

static int
bash_mark(char *mark, size_t size)
{
	unsigned char r[16];

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return (-1);
	snprintf(mark, size,
	    "__bureau_end_%02x%02x%02x%02x%02x%02x%02x%02x"
	    "%02x%02x%02x%02x%02x%02x%02x%02x__",
	    r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
	    r[11], r[12], r[13], r[14], r[15]);
	return (0);
}

/*
 * Send the command and read its output until its marker line, the shell's
 * end, or the deadline. Output goes to *o; the exit status to *code.
 */
static enum bash_end
bash_exec(struct bash_session *s, const char *cmd, size_t len, double timeout,
    struct bash_out *o, int *code, char **cause)
{
	char mark[64], needle[72], *wrap = NULL, *hold = NULL;
	size_t wlen, woff = 0, nlen, holdlen = 0;
	size_t holdcap = BASH_CHUNK + 2 * BASH_MARK_LEN + 64;
	double deadline = tool_now_ms() + timeout * 1000.0;
	enum bash_end end = BASH_FAILED;
	int eof = 0, found = 0;

	if (bash_mark(mark, sizeof mark) != 0) {
		*cause = strdup("cannot read random bytes for the marker");
		return (BASH_FAILED);
	}
	nlen = (size_t)snprintf(needle, sizeof needle, "\n%s ", mark);
	if ((wrap = bash_wrap(cmd, len, mark)) == NULL ||
	    (hold = malloc(holdcap)) == NULL) {
		*cause = strdup("out of memory");
		goto out;
	}
	wlen = strlen(wrap);
	/* what background jobs printed since the last marker comes first */
	if (s->nspill > 0 && bash_out_add(o, s->spill, s->nspill) != 0)
		goto oom;
	s->nspill = 0;

	for (;;) {
		struct pollfd pfd[2];
		nfds_t np = 0;
		double left = deadline - tool_now_ms();
		ssize_t r;
		char *p;

		if (left <= 0) {
			end = BASH_TIMEDOUT;
			break;
		}
		/* the daemon stops: seen within one short poll below */
		if (tool_stopping()) {
			end = BASH_STOPPED;
			break;
		}
		pfd[np++] = (struct pollfd){ .fd = s->out, .events = POLLIN };
		if (woff < wlen && s->in >= 0)
			pfd[np++] = (struct pollfd){ .fd = s->in,
				.events = POLLOUT };
		/* a short wait: a shell that exited while a background job
		 * holds the pipe open never shows EOF, see below */
		if (poll(pfd, np, left > 200 ? 200 : (int)ceil(left)) < 0) {
			if (errno == EINTR)
				continue;
			if (asprintf(cause, "cannot wait for output: %s",
			        strerror(errno)) < 0)
				*cause = NULL;
			goto out;
		}
		if (np > 1 && pfd[1].revents != 0) {
			r = write(s->in, wrap + woff, wlen - woff);
			if (r > 0)
				woff += (size_t)r;
			else if (r < 0 && errno != EAGAIN && errno != EINTR)
				spawn_close(&s->in); /* EPIPE: the shell died */
		}
		if (pfd[0].revents == 0) {
			int gone;

			pthread_mutex_lock(&bs.lock);
			gone = s->exited;
			pthread_mutex_unlock(&bs.lock);
			if (!gone)
				continue;
			/* what it wrote before it went is still in the pipe */
			if (bash_out_add(o, hold, holdlen) != 0)
				goto oom;
			while ((r = read(s->out, hold, holdcap)) > 0 ||
			    (r < 0 && errno == EINTR))
				if (r > 0 &&
				    bash_out_add(o, hold, (size_t)r) != 0)
					goto oom;
			end = BASH_EXITED;
			break;
		}
		/* Read what there is now, hold back what may be the start
		 * of the marker, pass the rest on. */
		for (;;) {
			r = read(s->out, hold + holdlen, holdcap - holdlen);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				eof = r == 0;
				break;
			}
			holdlen += (size_t)r;
			if (!found &&
			    (p = memmem(hold, holdlen, needle, nlen)) != NULL) {
				if (bash_out_add(o, hold, (size_t)(p - hold)) !=
				    0)
					goto oom;
				holdlen -= (size_t)(p - hold);
				memmove(hold, p, holdlen);
				found = 1;
			}
			if (found) {
				char *nl = memchr(hold + nlen, '\n',
				    holdlen - nlen);

				if (nl == NULL && holdlen < holdcap)
					continue;
				*code = (int)strtol(hold + nlen, NULL, 10);
				if (nl != NULL) {
					size_t rest = holdlen -
					    (size_t)(nl + 1 - hold);

					if (rest > sizeof s->spill)
						rest = sizeof s->spill;
					memcpy(s->spill, nl + 1, rest);
					s->nspill = rest;
				}
				end = BASH_DONE;
				goto out;
			}
			if (holdlen > nlen) {
				size_t k = holdlen - nlen;

				if (bash_out_add(o, hold, k) != 0)
					goto oom;
				memmove(hold, hold + k, nlen);
				holdlen = nlen;
			}
		}
		if (eof) {
			/* The shell is gone (`exit`, `set -e`, killed): what
			 * it held back is output too. */
			if (bash_out_add(o, hold, holdlen) != 0)
				goto oom;
			end = BASH_EXITED;
			break;
		}
	}
out:
	free(wrap);
	free(hold);
	return (end);
oom:
	*cause = strdup("out of memory");
	free(wrap);
	free(hold);
	return (BASH_FAILED);
}

static void
bash_set_output(struct tool_call *call, struct bash_out *o, const char *extra)
{
	size_t len;
	int truncated;
	char *text = bash_out_text(o, &len, &truncated);

	if (text == NULL) {
		tool_set_str(call, "output", "[output lost: out of memory]");
		return;
	}
	if (extra != NULL) {
		char *t;

		if (asprintf(&t, "%.*s%s%s", (int)len, text,
		        len > 0 && text[len - 1] != '\n' ? "\n" : "",
		        extra) >= 0) {
			free(text);
			text = t;
			len = strlen(t);
		}
	}
	tool_set_strn(call, "output", text, len);
	if (truncated) {
		tool_set_bool(call, "truncated", 1);
		tool_set_int(call, "output_bytes", (long long)o->total);
	}
	free(text);
}

static int
bash_run(struct tool_call *call, struct bash_session *s, const char *cmd,
    size_t len, double timeout)
{
	struct bash_out o;
	char *cause = NULL, *note = NULL;
	int code = -1, status = 0, rv = 0;
	enum bash_end end;

	bash_out_init(&o,
	    call->cfg->bash_output_max > 0 ? call->cfg->bash_output_max :
	                                     64u << 10);
	end = bash_exec(s, cmd, len, timeout, &o, &code, &cause);
	switch (end) {
	case BASH_DONE:
		bash_set_output(call, &o, NULL);
		tool_set_int(call, "exit_code", code);
		break;
	case BASH_EXITED:
		if (!bash_wait_exit(s, BASH_REAP_MS, &status))
			status = 255 << 8;
		code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
		                             WEXITSTATUS(status);
		bash_stop(s);
		if (bash_begin(s, &cause) == 0)
			rv = asprintf(&note,
			    "[the shell exited with status "
			    "%d; session '%s' has a new shell: working "
			    "directory and environment are reset]",
			    code, s->name);
		else
			rv = asprintf(&note,
			    "[the shell exited with status "
			    "%d; session '%s' could not start a new one: %s]",
			    code, s->name, cause != NULL ? cause : "?");
		bash_set_output(call, &o, rv >= 0 ? note : NULL);
		tool_set_int(call, "exit_code", code);
		rv = 0;
		break;
	case BASH_TIMEDOUT:
		/* partial output stays in the reply beside the error */
		bash_set_output(call, &o, NULL);
		bash_stop(s);
		if (bash_begin(s, &cause) == 0)
			rv = tool_fail(call, BD_ETIMEOUT,
			    "command timed out "
			    "after %g s: its process group was killed and "
			    "session '%s' restarted (working directory and "
			    "environment are reset)",
			    timeout, s->name);
		else
			rv = tool_fail(call, BD_ETIMEOUT,
			    "command timed out "
			    "after %g s: its process group was killed; session "
			    "'%s' could not restart (%s) and will try again on "
			    "the next command",
			    timeout, s->name, cause != NULL ? cause : "?");
		break;
	case BASH_STOPPED:
		/* no new shell: the session ends with the daemon */
		bash_set_output(call, &o, NULL);
		bash_stop(s);
		rv = tool_fail(call, BD_EBUSY,
		    "command interrupted: bureaud "
		    "is shutting down; its process group was killed");
		break;
	case BASH_FAILED:
		bash_set_output(call, &o, NULL);
		bash_stop(s);
		rv = tool_fail(call, BD_EINTERNAL,
		    "session '%s': %s; its "
		    "shell was stopped",
		    s->name, cause != NULL ? cause : "?");
		break;
	}
	free(note);
	free(cause);
	bash_out_free(&o);
	return (rv);
}

/* --- the tool ------------------------------------------------------------ */

static int
bash_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > BASH_NAME_MAX)
		return (0);
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		        (name[i] >= 'A' && name[i] <= 'Z') ||
		        (name[i] >= '0' && name[i] <= '9') || name[i] == '_' ||
		        name[i] == '-' || name[i] == '.'))
			return (0);
	return (1);
}

/* The session called name, made on first use when `create`; NULL when
 * there is none (all slots are taken). *expired: it is made anew for a
 * name the idle timeout closed. */
static struct bash_session *
bash_session(const char *name, int create, int *expired)
{
	struct bash_session *s = NULL;

	*expired = 0;
	pthread_mutex_lock(&bs.lock);
	for (int i = 0; i < BASH_SESSIONS_MAX; i++)
		if (strcmp(bs.s[i].name, name) == 0) {
			s = &bs.s[i];
			goto out;
		}
	for (int i = 0; create && i < BASH_SESSIONS_MAX; i++)
		if (bs.s[i].name[0] == '\0') {
			s = &bs.s[i];
			snprintf(s->name, sizeof s->name, "%s", name);
			s->last = tool_now_ms();
			break;
		}
	for (int i = 0; s != NULL && i < BASH_SESSIONS_MAX; i++)
		if (strcmp(bs.expired[i], name) == 0) {
			bs.expired[i][0] = '\0';
			*expired = 1;
		}
out:
	pthread_mutex_unlock(&bs.lock);
	return (s);
}

/* The names of the sessions, for the message that all slots are taken. */
static void
bash_names(char *buf, size_t size)
{
	size_t k = 0;

	buf[0] = '\0';
	pthread_mutex_lock(&bs.lock);
	for (int i = 0; i < BASH_SESSIONS_MAX && k < size; i++)
		if (bs.s[i].name[0] != '\0')
			k += (size_t)snprintf(buf + k, size - k, "%s'%s'",
			    k > 0 ? ", " : "", bs.s[i].name);
	pthread_mutex_unlock(&bs.lock);
}

/* End a session whose run lock the caller holds: kill its group, forget
 * its shell, free its slot. `expired`: remember the name for a note. */
static void
bash_close(struct bash_session *s, int expired)
{
	bash_stop(s);
	pthread_mutex_lock(&bs.lock);
	if (expired) {
		memcpy(bs.expired[bs.nexpired], s->name, sizeof s->name);
		bs.nexpired = (bs.nexpired + 1) % BASH_SESSIONS_MAX;
	}
	s->name[0] = '\0';
	s->nspill = 0;
	s->expiring = 0;
	pthread_mutex_unlock(&bs.lock);
}

/* Close the sessions idle for longer than the idle timeout. A session
 * running a command holds its run lock and is not idle. */
static void
bash_expire(void)
{
	for (int i = 0; i < BASH_SESSIONS_MAX; i++) {
		struct bash_session *s = &bs.s[i];
		int idle;

		/* `expiring` before the run lock is taken: a request that
		 * finds the lock held meanwhile waits for the close rather
		 * than being told the session is busy */
		pthread_mutex_lock(&bs.lock);
		idle = s->name[0] != '\0' &&
		    tool_now_ms() - s->last > bs.idle_ms;
		s->expiring = idle;
		pthread_mutex_unlock(&bs.lock);
		if (!idle)
			continue;
		if (pthread_mutex_trylock(&s->run) != 0) {
			/* a request has it: no longer idle */
			pthread_mutex_lock(&bs.lock);
			s->expiring = 0;
			pthread_mutex_unlock(&bs.lock);
			continue;
		}
		pthread_mutex_lock(&bs.lock);
		idle = s->name[0] != '\0' &&
		    tool_now_ms() - s->last > bs.idle_ms;
		s->expiring = idle;
		pthread_mutex_unlock(&bs.lock);
		if (idle)
			bash_close(s, 1);
		pthread_mutex_unlock(&s->run);
	}
}

/* The idle thread: look a few times per idle period, at least once a
 * minute (a late close costs nothing but the shell's memory). */
static void *
bash_idler(void *unused)
{
	double step = bs.idle_ms / 4 < 60000 ? bs.idle_ms / 4 : 60000;

	(void)unused;
	if (step < 100)
		step = 100;
	pthread_mutex_lock(&bs.lock);
	while (!bs.stopping) {
		struct timespec ts;
		uint64_t ns;

		clock_gettime(CLOCK_REALTIME, &ts); /* the condition's clock */
		ns = (uint64_t)ts.tv_nsec + (uint64_t)(step * 1e6);
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		if (pthread_cond_timedwait(&bs.quit, &bs.lock, &ts) == 0 ||
		    bs.stopping)
			continue;
		pthread_mutex_unlock(&bs.lock);
		bash_expire();
		pthread_mutex_lock(&bs.lock);
	}
	pthread_mutex_unlock(&bs.lock);
	return (NULL);
}

/* The run lock is held: when by the idle thread closing the session,
 * wait for that (a kill and a reap: bounded) and return 1 holding it. */
static int
bash_wait_expiring(struct bash_session *s)
{
	struct timespec ts;
	int expiring;

	pthread_mutex_lock(&bs.lock);
	expiring = s->expiring;
	pthread_mutex_unlock(&bs.lock);
	if (!expiring)
		return (0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += BASH_REAP_MS / 1000 + 2;
	return (pthread_mutex_timedlock(&s->run, &ts) == 0);
}

/* Say in the reply that the session's old shell was closed as idle: its
 * working directory and environment are gone. */
static void
bash_note_expired(struct tool_call *call, const char *name)
{
	json_t *o = json_object_get(call->reply, "output");
	const char *text = json_is_string(o) ? json_string_value(o) : "";
	size_t len = json_is_string(o) ? json_string_length(o) : 0;
	char *t;

	tool_set_bool(call, "session_expired", 1);
	if (asprintf(&t,
	        "%s%s[session '%s' had been idle for more than %.0f "
	        "s and was closed; this is a new shell: working directory and "
	        "environment are reset]",
	        text, len > 0 && text[len - 1] != '\n' ? "\n" : "", name,
	        bs.idle_ms / 1000.0) >= 0) {
		tool_set_str(call, "output", t);
		free(t);
	}
}

static int
bash_handle(struct tool_call *call)
{
	const char *cmd, *name;
	size_t len;
	double timeout;
	int restart, closing, expired, interrupted = 0, dead, rv = 0;
	struct bash_session *s;
	char *cause = NULL;

	if (tool_arg_strn(call, "command", 0, BASH_COMMAND_MAX, &cmd, &len) !=
	        0 ||
	    tool_arg_bool(call, "restart", 0, &restart) != 0 ||
	    tool_arg_bool(call, "close", 0, &closing) != 0 ||
	    tool_arg_str(call, "session", 0, "default", &name) != 0 ||
	    tool_arg_num(call, "timeout", 0, 0.001, BASH_TIMEOUT_MAX,
	        BASH_TIMEOUT_DEFAULT, &timeout) != 0)
		return (call->code);
	if (cmd != NULL && strlen(cmd) != len)
		return (tool_fail(call, BD_EINVAL,
		    "invalid command: field "
		    "'command' contains a NUL byte"));
	if (closing && (cmd != NULL || restart))
		return (tool_fail(call, BD_EINVAL,
		    "field 'close': give it "
		    "alone, without 'command' or 'restart'"));
	if (cmd == NULL && !restart && !closing)
		return (tool_fail(call, BD_EINVAL,
		    "missing field 'command' "
		    "(or 'restart': true, or 'close': true)"));
	if (!bash_name_ok(name))
		return (tool_fail(call, BD_EINVAL,
		    "invalid session '%.80s': "
		    "expected 1 to %d letters, digits, '_', '-' or '.'",
		    name, BASH_NAME_MAX));
	if (!bs.ready)
		return (tool_fail(call, BD_EINTERNAL,
		    "the bash tool did not "
		    "start%s%s",
		    bs.why[0] != '\0' ? ": " : "", bs.why));
again:
	if ((s = bash_session(name, !closing, &expired)) == NULL) {
		char names[BASH_SESSIONS_MAX * (BASH_NAME_MAX + 4) + 1];
		char idle[80] = "";

		if (closing)
			return (tool_fail(call, BD_ENOTFOUND,
			    "session '%s': "
			    "no such session (never opened, or already "
			    "closed)",
			    name));
		bash_names(names, sizeof names);
		if (bs.idle_ms > 0)
			snprintf(idle, sizeof idle,
			    "; a session idle for %.0f "
			    "s closes by itself",
			    bs.idle_ms / 1000.0);
		return (tool_fail(call, BD_EBUSY,
		    "session '%s': all %d bash "
		    "sessions are in use (%s): free one with {\"session\": "
		    "NAME, \"close\": true}, or use one of them%s",
		    name, BASH_SESSIONS_MAX, names, idle));
	}
	if (pthread_mutex_trylock(&s->run) != 0 && !bash_wait_expiring(s)) {
		if (!restart && !closing)
			return (tool_fail(call, BD_EBUSY,
			    "session '%s' is "
			    "running another command (for %.0f s): wait for "
			    "it, restart the session, or use another "
			    "'session'",
			    name, (tool_now_ms() - s->since) / 1000.0));
		/* restart is the way out of a stuck command: kill the
		 * group, and the request running it ends at once (its shell
		 * exited) and lets go of the session */
		pthread_mutex_lock(&bs.lock);
		/* still this session's slot (see below) */
		if (s->pid > 0 && strcmp(s->name, name) == 0)
			(void)spawn_kill_group(s->pid, s->pidfd, SIGKILL);
		pthread_mutex_unlock(&bs.lock);
		pthread_mutex_lock(&s->run);
		interrupted = 1;
	}
	/* The slot may have been closed (and even given to another name)
	 * while this request waited for it: look it up again. Only a
	 * holder of the run lock frees a slot, so the check stands. */
	pthread_mutex_lock(&bs.lock);
	dead = strcmp(s->name, name) != 0;
	pthread_mutex_unlock(&bs.lock);
	if (dead) {
		pthread_mutex_unlock(&s->run);
		interrupted = 0;
		goto again;
	}
	s->since = tool_now_ms();
	if (closing) {
		bash_close(s, 0);
		tool_set_output(call,
		    "session '%s' closed: its shell and "
		    "process group were killed%s",
		    name,
		    interrupted ? " (including the command it was running)" :
		                  "");
		goto out;
	}
	if (restart) {
		bash_stop(s);
		if (bash_begin(s, &cause) != 0) {
			rv = tool_fail(call, BD_EINTERNAL,
			    "cannot restart "
			    "session '%s': %s",
			    name, cause != NULL ? cause : "?");
			goto out;
		}
		if (cmd == NULL) {
			tool_set_output(call, "session '%s' restarted%s", name,
			    interrupted ? " (the command it was running was "
			                  "killed)" :
			                  "");
			goto out;
		}
	}
	/* a shell that died between commands (killed from elsewhere) is
	 * replaced before the command, which would otherwise not run */
	pthread_mutex_lock(&bs.lock);
	dead = s->pid > 0 && s->exited;
	pthread_mutex_unlock(&bs.lock);
	if (dead)
		bash_stop(s);
	if (s->pid == 0 && bash_begin(s, &cause) != 0) {
		rv = tool_fail(call, BD_EINTERNAL,
		    "cannot start a shell for "
		    "session '%s': %s",
		    name, cause != NULL ? cause : "?");
		goto out;
	}
	rv = bash_run(call, s, cmd, len, timeout);
out:
	if (expired && !closing)
		bash_note_expired(call, name);
	pthread_mutex_lock(&bs.lock);
	s->last = tool_now_ms();
	pthread_mutex_unlock(&bs.lock);
	pthread_mutex_unlock(&s->run);
	free(cause);
	return (rv);
}

static int
bash_init(const struct tool_config *cfg, char **cause)
{
	const char *env;

	bs.cfg = cfg;
	for (int i = 0; i < BASH_SESSIONS_MAX; i++) {
		pthread_mutex_init(&bs.s[i].run, NULL);
		bs.s[i].in = bs.s[i].out = bs.s[i].pidfd = -1;
	}
	if (spawn_init(cause) != 0)
		return (-1);
	bs.idle_ms = BASH_IDLE_DEFAULT_S * 1000.0;
	if ((env = getenv("BUREAU_BASH_IDLE_S")) != NULL && *env != '\0') {
		char *end;
		double v = strtod(env, &end);

		if (*end != '\0' || !(v >= 0) || v > 1e9) {
			snprintf(bs.why, sizeof bs.why,
			    "invalid "
			    "$BUREAU_BASH_IDLE_S '%.40s': expected seconds (0: "
			    "never)",
			    env);
			*cause = strdup(bs.why);
			spawn_fini();
			return (-1);
		}
		bs.idle_ms = v * 1000.0;
	}
	bs.stopping = 0;
	if (bs.idle_ms > 0 &&
	    pthread_create(&bs.idler, NULL, bash_idler, NULL) == 0)
		bs.idler_started = 1;
	bs.ready = 1;
	return (0);
}

static void
bash_fini(void)
{
	if (!bs.ready)
		return;
	if (bs.idler_started) {
		pthread_mutex_lock(&bs.lock);
		bs.stopping = 1;
		pthread_cond_broadcast(&bs.quit);
		pthread_mutex_unlock(&bs.lock);
		pthread_join(bs.idler, NULL);
		bs.idler_started = 0;
	}
	for (int i = 0; i < BASH_SESSIONS_MAX; i++) {
		struct bash_session *s = &bs.s[i];

		/* a command still running holds its lock: its shell is
		 * killed all the same, and its worker sees the end */
		if (pthread_mutex_trylock(&s->run) == 0) {
			bash_stop(s);
			pthread_mutex_unlock(&s->run);
		} else if (s->pid > 0) {
			pthread_mutex_lock(&bs.lock);
			(void)spawn_kill_group(s->pid, s->pidfd, SIGKILL);
			pthread_mutex_unlock(&bs.lock);
		}
	}
	bs.ready = 0;
	spawn_fini();
}

const struct tool_entry tool_bash_entry = {
	.name = "bash",
	.init = bash_init,
	.fini = bash_fini,
	.handle = bash_handle, /* no actions: "command" is a shell line */
};
