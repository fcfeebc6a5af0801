/*
 * tools/spawn.c: children for the bash, process and window tools.
 *
 * posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK)) rather than fork: it is
 * safe in a threaded daemon, cheap whatever the daemon's size, and reports
 * exec and chdir failures to the caller instead of leaving a child that
 * died for a reason nobody sees. A detached child needs the double fork
 * posix_spawn cannot do: there, only async-signal-safe calls run between
 * fork and exec, and a pipe reports the failures all the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h> /* glibc 2.36 has the wrappers */
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/tool.h"
#include "tools/spawn.h"

extern char **environ;

struct spawn_watch {
	pid_t pid;
	int pidfd; /* -1 when the kernel has no pidfd_open: polled */
	spawn_exit_fn fn;
	void *arg;
};

struct spawn_done {
	pid_t pid;
	int status;
	spawn_exit_fn fn;
	void *arg;
};

static struct {
	pthread_mutex_t lock;
	int refs;
	int started;
	int stopping;
	pthread_t thread;
	int wake[2];
	struct spawn_watch *w;
	size_t n, cap;
} sp = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = { -1, -1 },
};

void
spawn_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void
spawn_wakeup(void)
{
	char c = 1;

	/* the pipe is non-blocking: a full pipe already means "wake up" */
	if (write(sp.wake[1], &c, 1) < 0 && errno != EAGAIN)
		return;
}

/*
 * The reaper: sleep until a child's pidfd turns readable (it exited) or a
 * new child is registered, then waitpid each watched pid with WNOHANG.
 * Scanning all is O(n) per wake-up, which is nothing for a few hundred.
 */
static void *
spawn_reaper(void *unused)
{
	struct pollfd *pfd = NULL;
	size_t pcap = 0;

	(void)unused;
	for (;;) {
		struct spawn_done *done = NULL;
		size_t np = 1, ndone = 0;
		int timeout = -1;
		char buf[64];

		pthread_mutex_lock(&sp.lock);
		if (sp.stopping) {
			pthread_mutex_unlock(&sp.lock);
			break;
		}
		if (pcap < sp.n + 1) {
			struct pollfd *p = realloc(pfd,
			    (sp.n + 16) * sizeof *p);

			if (p != NULL) {
				pfd = p;
				pcap = sp.n + 16;
			}
		}
		if (pfd == NULL) {
			pthread_mutex_unlock(&sp.lock);
			usleep(100000);
			continue;
		}
		pfd[0] = (struct pollfd){ .fd = sp.wake[0], .events = POLLIN };
		for (size_t i = 0; i < sp.n; i++) {
			if (sp.w[i].pidfd < 0 || np >= pcap) {
				timeout = 100;
				continue;
			}
			pfd[np++] = (struct pollfd){ .fd = sp.w[i].pidfd,
				.events = POLLIN };
		}
		pthread_mutex_unlock(&sp.lock);

		if (poll(pfd, np, timeout) < 0 && errno != EINTR)
			timeout = 100; /* should not happen: do not spin */
		while (read(sp.wake[0], buf, sizeof buf) > 0)
			;

		pthread_mutex_lock(&sp.lock);
		if (sp.n > 0 && (done = malloc(sp.n * sizeof *done)) == NULL) {
			/* reap later rather than lose an exit status */
			pthread_mutex_unlock(&sp.lock);
			usleep(100000);
			continue;
		}
		for (size_t i = 0; i < sp.n;) {
			int status = 0;
			pid_t r = waitpid(sp.w[i].pid, &status, WNOHANG);

			if (r == 0 || (r < 0 && errno == EINTR)) {
				i++;
				continue;
			}
			if (r < 0) /* ECHILD: not ours any more; never blocks */
				status = 255 << 8;
			spawn_close(&sp.w[i].pidfd);
			done[ndone++] = (struct spawn_done){ sp.w[i].pid,
				status, sp.w[i].fn, sp.w[i].arg };
			sp.w[i] = sp.w[--sp.n];
		}
		pthread_mutex_unlock(&sp.lock);
		for (size_t i = 0; i < ndone; i++)
			if (done[i].fn != NULL)
				done[i].fn(done[i].arg, done[i].pid,
				    done[i].status);
		free(done);
	}
	free(pfd);
	return (NULL);
}

int
spawn_init(char **cause)
{
	int rv = 0;

	pthread_mutex_lock(&sp.lock);
	if (sp.refs++ > 0)
		goto out;
	if (pipe2(sp.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		if (asprintf(cause, "cannot create the reaper's pipe: %s",
		        strerror(errno)) < 0)
			*cause = NULL;
		goto fail;
	}
	sp.stopping = 0;
	if (pthread_create(&sp.thread, NULL, spawn_reaper, NULL) != 0) {
		*cause = strdup("cannot start the reaper thread");
		goto fail;
	}
	sp.started = 1;
out:
	pthread_mutex_unlock(&sp.lock);
	return (rv);
fail:
	spawn_close(&sp.wake[0]);
	spawn_close(&sp.wake[1]);
	sp.refs--;
	pthread_mutex_unlock(&sp.lock);
	return (-1);
}

void
spawn_fini(void)
{
	pthread_mutex_lock(&sp.lock);
	if (sp.refs == 0 || --sp.refs > 0 || !sp.started) {
		pthread_mutex_unlock(&sp.lock);
		return;
	}
	sp.stopping = 1;
	spawn_wakeup();
	pthread_mutex_unlock(&sp.lock);
	pthread_join(sp.thread, NULL);

	pthread_mutex_lock(&sp.lock);
	sp.started = 0;
	/* Children still running are left to init; their pidfds go. */
	for (size_t i = 0; i < sp.n; i++)
		spawn_close(&sp.w[i].pidfd);
	free(sp.w);
	sp.w = NULL;
	sp.n = sp.cap = 0;
	spawn_close(&sp.wake[0]);
	spawn_close(&sp.wake[1]);
	pthread_mutex_unlock(&sp.lock);
}

/* Watch pid for the reaper; *mine (when not NULL) gets a pidfd of its
 * own, taken before the reaper knows the pid, so before any reaping. */
static int
spawn_watch(pid_t pid, spawn_exit_fn fn, void *arg, int *mine)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (pidfd >= 0)
		(void)fcntl(pidfd, F_SETFD, FD_CLOEXEC);
	if (mine != NULL && pidfd >= 0 &&
	    (*mine = fcntl(pidfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		spawn_close(&pidfd);
		return (-1);
	}
	pthread_mutex_lock(&sp.lock);
	if (sp.n == sp.cap) {
		size_t cap = sp.cap > 0 ? sp.cap * 2 : 32;
		struct spawn_watch *w = realloc(sp.w, cap * sizeof *w);

		if (w == NULL) {
			pthread_mutex_unlock(&sp.lock);
			spawn_close(&pidfd);
			if (mine != NULL)
				spawn_close(mine);
			return (-1);
		}
		sp.w = w;
		sp.cap = cap;
	}
	sp.w[sp.n++] = (struct spawn_watch){ pid, pidfd, fn, arg };
	spawn_wakeup();
	pthread_mutex_unlock(&sp.lock);
	return (0);
}

static int
spawn_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return (fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK));
}

/* What a detached child's forks report through the pipe. */
struct spawn_msg {
	int kind; /* 1: the program's pid; 2: exec failed, 3: chdir failed,
	           * 4: something else failed; val = errno */
	int val;
};

static void
spawn_child_fail(int fd, int kind, int val)
{
	struct spawn_msg m = { kind, val };

	if (write(fd, &m, sizeof m) < 0) {
		/* the daemon then sees EOF without a pid */
	}
	_exit(127);
}

/* The child of the first fork: a new session, the second fork, and in
 * the grandchild the program, with default signals and no descriptor of
 * the daemon's but the report pipe (close-on-exec, as fd 3). Only
 * async-signal-safe calls. */
static void
spawn_detached_child(const struct spawn_opts *o, int fd)
{
	struct spawn_msg m;
	struct sigaction sa;
	sigset_t none;
	pid_t b;
	int null;

	if (setsid() < 0)
		spawn_child_fail(fd, 4, errno);
	if ((b = fork()) < 0)
		spawn_child_fail(fd, 4, errno);
	if (b > 0) {
		m.kind = 1;
		m.val = (int)b;
		_exit(write(fd, &m, sizeof m) < 0 ? 1 : 0);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if ((null = open("/dev/null", O_RDWR)) < 0)
		spawn_child_fail(fd, 4, errno);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	if (fd != 3 && dup2(fd, 3) < 0)
		spawn_child_fail(fd, 4, errno);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	if (close_range(4, ~0U, 0) != 0)
		for (int i = 4; i < 65536; i++)
			close(i);
	if (o->cwd != NULL && chdir(o->cwd) != 0)
		spawn_child_fail(3, 3, errno);
	execvpe(o->argv[0], o->argv, o->envp != NULL ? o->envp : environ);
	spawn_child_fail(3, 2, errno);
}

static int
spawn_detached(const struct spawn_opts *o, struct spawn_child *child,
    char **cause)
{
	struct spawn_msg m;
	int p[2], status, kind = 0, err = 0, rv;
	pid_t a;
	ssize_t r;

	if (pipe2(p, O_CLOEXEC) != 0)
		goto fail_errno;
	if ((a = fork()) < 0) {
		err = errno;
		close(p[0]);
		close(p[1]);
		errno = err;
		goto fail_errno;
	}
	if (a == 0) {
		close(p[0]);
		spawn_detached_child(o, p[1]);
	}
	close(p[1]);
	/* the first child is gone at once; by pid, never waitpid(-1) */
	while (waitpid(a, &status, 0) < 0 && errno == EINTR)
		;
	while ((r = read(p[0], &m, sizeof m)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof m)
			break;
		if (m.kind == 1)
			child->pid = (pid_t)m.val;
		else {
			kind = m.kind;
			err = m.val;
		}
	}
	close(p[0]);
	if (kind == 2) {
		rv = asprintf(cause, "cannot run '%s': %s", o->argv[0],
		    strerror(err));
		if (rv < 0)
			*cause = NULL;
		child->pid = -1;
		return (BD_ENOTFOUND);
	}
	if (kind == 3)
		rv = asprintf(cause, "cannot change to directory '%s': %s",
		    o->cwd, strerror(err));
	else if (kind != 0 || child->pid <= 0)
		rv = asprintf(cause, "cannot start '%s': %s", o->argv[0],
		    kind != 0 ? strerror(err) : "no word from the child");
	else
		return (0);
	if (rv < 0)
		*cause = NULL;
	child->pid = -1;
	return (BD_EIO);

fail_errno:
	if (asprintf(cause, "cannot start '%s': %s", o->argv[0],
	        strerror(errno)) < 0)
		*cause = NULL;
	return (BD_EIO);
}

int
spawn_start(const struct spawn_opts *o, struct spawn_child *child, char **cause)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	const char *what = "cannot create pipes";
	int rv, fa_ok = 0, at_ok = 0, saved, code = BD_EIO;
	pid_t pid;

	*child = (struct spawn_child){ -1, -1, -1, -1, -1 };
	if (o->detach)
		return (spawn_detached(o, child, cause));
	if (!sp.started) {
		*cause = strdup("the process reaper is not running");
		return (BD_EINTERNAL);
	}
	if ((o->stdin_pipe && pipe2(in, O_CLOEXEC) != 0) ||
	    pipe2(out, O_CLOEXEC) != 0 ||
	    (!o->merge_stderr && pipe2(err, O_CLOEXEC) != 0))
		goto fail_errno;

	what = "cannot prepare the child";
	if ((errno = posix_spawn_file_actions_init(&fa)) != 0)
		goto fail_errno;
	fa_ok = 1;
	if ((errno = posix_spawnattr_init(&at)) != 0)
		goto fail_errno;
	at_ok = 1;
	if (o->stdin_pipe)
		rv = posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	else
		rv = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
		    O_RDONLY, 0);
	if (rv == 0)
		rv = posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if (rv == 0)
		rv = posix_spawn_file_actions_adddup2(&fa,
		    o->merge_stderr ? out[1] : err[1], 2);
	if (rv == 0 && o->cwd != NULL)
		rv = posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
	/* whatever a library opened without O_CLOEXEC stays ours */
	if (rv == 0)
		rv = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	if (rv == 0)
		rv = posix_spawnattr_setsigmask(&at, &none);
	if (rv == 0)
		rv = posix_spawnattr_setsigdefault(&at, &dfl);
	if (rv == 0)
		rv = posix_spawnattr_setflags(&at,
		    POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
		        POSIX_SPAWN_SETSIGDEF);
	if ((errno = rv) != 0)
		goto fail_errno;

	rv = posix_spawnp(&pid, o->argv[0], &fa, &at, o->argv,
	    o->envp != NULL ? o->envp : environ);
	if (rv != 0) {
		if (o->cwd != NULL &&
		    (rv == ENOENT || rv == ENOTDIR || rv == EACCES) &&
		    access(o->cwd, X_OK) != 0)
			saved = asprintf(cause,
			    "cannot change to directory "
			    "'%s': %s",
			    o->cwd, strerror(rv));
		else {
			saved = asprintf(cause, "cannot run '%s': %s",
			    o->argv[0], strerror(rv));
			code = BD_ENOTFOUND;
		}
		if (saved < 0)
			*cause = NULL;
		goto fail;
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	spawn_close(&in[0]);
	spawn_close(&out[1]);
	spawn_close(&err[1]);
	child->pid = pid;
	child->in = in[1];
	child->out = out[0];
	child->err = err[0];
	if ((child->in >= 0 && spawn_nonblock(child->in) != 0) ||
	    spawn_nonblock(child->out) != 0 ||
	    (child->err >= 0 && spawn_nonblock(child->err) != 0) ||
	    spawn_watch(pid, o->on_exit, o->arg,
	        o->want_pidfd ? &child->pidfd : NULL) != 0) {
		/* Cannot happen short of running out of memory; the child
		 * must not outlive our knowledge of it. */
		kill(-pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		spawn_close(&child->in);
		spawn_close(&child->out);
		spawn_close(&child->err);
		spawn_close(&child->pidfd);
		*cause = strdup("cannot watch the new process");
		return (BD_EINTERNAL);
	}
	return (0);

fail_errno:
	saved = errno;
	if (asprintf(cause, "%s: %s", what, strerror(saved)) < 0)
		*cause = NULL;
fail:
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (at_ok)
		posix_spawnattr_destroy(&at);
	for (int i = 0; i < 2; i++) {
		spawn_close(&in[i]);
		spawn_close(&out[i]);
		spawn_close(&err[i]);
	}
	return (code);
}

int
spawn_signal(pid_t pid, int sig, int group)
{
	int rv = -1;

	pthread_mutex_lock(&sp.lock);
	errno = ESRCH;
	for (size_t i = 0; i < sp.n; i++) {
		if (sp.w[i].pid != pid)
			continue;
		/* watched means not reaped: the pid (and the group id it
		 * leads) is still this child's, whatever ran since */
		if (group)
			rv = kill(-pid, sig);
		else if (sp.w[i].pidfd >= 0)
			rv = pidfd_send_signal(sp.w[i].pidfd, sig, NULL, 0);
		else
			rv = kill(pid, sig);
		break;
	}
	pthread_mutex_unlock(&sp.lock);
	return (rv);
}

#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1U << 2) /* Linux 6.9 */
#endif

int
spawn_kill_group(pid_t pid, int pidfd, int sig)
{
	if (pidfd >= 0) {
		if (pidfd_send_signal(pidfd, sig, NULL,
		        PIDFD_SIGNAL_PROCESS_GROUP) == 0)
			return (0);
		if (errno != EINVAL)
			return (-1);
		/* EINVAL: a kernel without the flag */
	}
	return (spawn_signal(pid, sig, 1));
}

char **
spawn_env(const char *const *names, const char *const *values, size_t n)
{
	size_t count = 0, k = 0;
	char **envp;

	for (char **e = environ; *e != NULL; e++)
		count++;
	if ((envp = calloc(count + n + 1, sizeof *envp)) == NULL)
		return (NULL);
	for (char **e = environ; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = eq != NULL ? (size_t)(eq - *e) : strlen(*e);
		int replaced = 0;

		for (size_t i = 0; i < n && !replaced; i++)
			replaced = strlen(names[i]) == len &&
			    memcmp(names[i], *e, len) == 0;
		if (replaced)
			continue;
		if ((envp[k++] = strdup(*e)) == NULL)
			goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		int dup = 0;

		if (values[i] == NULL)
			continue;
		/* a later duplicate of a name wins */
		for (size_t j = i + 1; j < n && !dup; j++)
			dup = strcmp(names[i], names[j]) == 0;
		if (dup)
			continue;
		if (asprintf(&envp[k], "%s=%s", names[i], values[i]) < 0) {
			envp[k] = NULL;
			goto fail;
		}
		k++;
	}
	return (envp);
fail:
	spawn_env_free(envp);
	return (NULL);
}

void
spawn_env_free(char **envp)
{
	if (envp == NULL)
		return;
	for (char **e = envp; *e != NULL; e++)
		free(*e);
	free(envp);
}
