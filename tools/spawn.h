/*
 * tools/spawn: start child processes for the tools and reap them.
 *
 * Every child starts in a new session (so in its own process group, whose
 * id is its pid, and without a controlling terminal), with the default
 * signal mask and dispositions (the daemon blocks some signals and ignores
 * SIGPIPE; a child must not inherit that), and with no descriptor of the
 * daemon's but the pipes asked for.
 *
 * A detached child (spawn_opts.detach) is a program the daemon starts and
 * lets go: a double fork, so it is not the daemon's child (nothing to
 * reap, no SIGCHLD, it outlives the daemon), stdin, stdout and stderr on
 * /dev/null, nobody told of its exit.
 *
 * One reaper thread waits for every child started here by pid (pidfds),
 * never with waitpid(-1), so it cannot steal a child some other code
 * started and waits for itself. A tool that wants a child's exit status
 * gives an on_exit callback.
 */
#ifndef BUREAU_TOOLS_SPAWN_H
#define BUREAU_TOOLS_SPAWN_H

#include <sys/types.h>

/* Called on the reaper thread once the child is reaped; status as from
 * waitpid. It must not block for long and must not call spawn_start. */
typedef void (*spawn_exit_fn)(void *arg, pid_t pid, int status);

struct spawn_opts {
	char *const *argv;     /* argv[0] is looked up in $PATH */
	const char *cwd;       /* NULL: the daemon's */
	char *const *envp;     /* NULL: the daemon's environment */
	int stdin_pipe;        /* 1: a pipe in child->in; 0: /dev/null */
	int merge_stderr;      /* 1: stderr goes into the stdout pipe */
	spawn_exit_fn on_exit; /* may be NULL: the child is only reaped */
	void *arg;
	int want_pidfd; /* 1: a pidfd of the child in child->pidfd */
	int detach;     /* 1: detached (above): only argv, cwd and envp
	                 * count, and only child->pid is set */
};

struct spawn_child {
	pid_t pid; /* also its process group id */
	int in;    /* write end of stdin, or -1 */
	int out;   /* read end of stdout (and stderr when merged) */
	int err;   /* read end of stderr, or -1 when merged */
	int pidfd; /* with want_pidfd: the child's pidfd (opened before it
	            * could be reaped, so never another process's), the
	            * caller's to close; -1 otherwise or without pidfds */
};

/* Start (and stop) the reaper; counted, so each tool calls them once. */
int spawn_init(char **cause);
void spawn_fini(void);

/*
 * Start a child. On success returns 0 and fills *child: its descriptors
 * are the caller's to close, non-blocking and close-on-exec. On failure
 * returns the error code (runtime/protocol.h) that says why, with *cause
 * (malloc'd): BD_ENOTFOUND when the program cannot be run ("cannot run
 * 'foo': No such file or directory"), BD_EIO when cwd cannot be entered
 * or the system is out of something; nothing is left behind.
 */
int spawn_start(const struct spawn_opts *o, struct spawn_child *child,
    char **cause);

/*
 * An environment: the daemon's, with names[i] set to values[i] (or removed
 * when values[i] is NULL). Returns a malloc'd NULL-terminated array for
 * spawn_opts.envp, freed with spawn_env_free, or NULL when out of memory.
 */
char **spawn_env(const char *const *names, const char *const *values, size_t n);
void spawn_env_free(char **envp);

/*
 * Send sig to a child started here that has not been reaped yet: to its
 * process group too when `group`. Decided under the reaper's lock, so the
 * pid cannot be reaped and reused meanwhile (the process alone goes by its
 * pidfd; its group id is its pid while it is unreaped, as a session
 * leader cannot leave its group). Returns 0, or -1 with errno: ESRCH when
 * the child was reaped (its exit is reported, or about to be, through
 * on_exit), else as kill(2).
 */
int spawn_signal(pid_t pid, int sig, int group);

/*
 * Send sig to the process group a child started here leads, even after
 * the child itself was reaped, as long as members remain: through its
 * pidfd (from want_pidfd) with PIDFD_SIGNAL_PROCESS_GROUP, which names
 * that very group, never a later one with the same number. Kernels
 * before 6.9 lack the flag: then as spawn_signal (only while the leader
 * is unreaped). 0, or -1 with errno (ESRCH: nobody left to signal).
 */
int spawn_kill_group(pid_t pid, int pidfd, int sig);

/* Close *fd if open and set it to -1. */
void spawn_close(int *fd);

#endif
