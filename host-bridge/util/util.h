/*
 * host-bridge/util: the small helpers every host-side part shares (the CLI,
 * the desktop store, the VM backend, later the host agent). Nothing here
 * knows about desktops.
 *
 * Errors: functions that can fail return 0 or -1 and, on -1, set *cause to
 * a malloc'd message the caller frees (tmux's convention); the message is
 * lowercase, without a full stop, and quotes its subject.
 */
#ifndef BUREAU_HB_UTIL_H
#define BUREAU_HB_UTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Printf into a malloc'd string; NULL only when out of memory. */
char *hb_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* $BUREAU_HOME, else ~/.local/share/bureau; malloc'd, NULL if no home. */
char *hb_home(void);
/* This thread's store is dir instead (NULL: the environment's again): an
 * image's warm desktop lives in a private one while it is made, without
 * changing the process's environment under other threads. Processes
 * started meanwhile (a host agent) are given it as BUREAU_HOME. */
void hb_home_set(const char *dir);

/* The directory holding this executable (malloc'd), NULL if unknown. */
char *hb_exe_dir(void);
/* This program's own path into buf (a host agent, a network keeper, an
 * SSH forwards' keeper are this program again): 0, or -1 with errno. */
int hb_self(char *buf, size_t len);

/*
 * Run a program (argv[0] looked up in PATH) and wait for it; its output
 * goes to ours unless quiet, then to /dev/null. Fails unless it exits 0.
 */
int hb_run(char *const argv[], int quiet, char **cause);

/* Write data to path atomically: a fsync'd temporary of a new, unique
 * name (O_CREAT|O_EXCL: never through a file or symlink already there),
 * then renamed over path (which replaces a symlink, never follows it). */
int hb_write_file(const char *path, const char *data, size_t len, mode_t mode,
    char **cause);

/* The whole file, NUL-terminated (malloc'd), or NULL with errno set. */
char *hb_read_file(const char *path);

/* "20G", "512M", "4096K", "1T", "2GiB", or bytes: a positive size of at
 * most 1 PiB. what names the option in the error. */
int hb_parse_size(const char *what, const char *s, long long *out,
    char **cause);

/* A decimal integer in [min, max], nothing before or after it (unlike
 * atoi, which reads "12x" as 12 and "x" as 0). */
int hb_parse_int(const char *what, const char *s, long min, long max, long *out,
    char **cause);
/* Does pid run (not a zombie, not gone)? Its parent need not be us. */
int hb_pid_running(pid_t pid);
/* pid's command line into buf (its arguments NUL-separated, then a NUL):
 * the length, or -1. */
ssize_t hb_pid_cmdline(pid_t pid, char *buf, size_t size);
/* A duration for option what: "off" (0), or N seconds, Ns, Nm, Nh, Nd,
 * from min to max seconds; else -1 with *cause naming what and s. */
int hb_parse_duration(const char *what, const char *s, long min, long max,
    long *out, char **cause);

/* n random bytes (n <= 64) as 2n hex digits; malloc'd, NULL on failure. */
char *hb_random_hex(size_t n);

/* mkdir -p: path and its missing parents (parents 0755 as mkdir -p makes
 * them, path itself with mode). An existing directory is success. */
int hb_mkdirs(const char *path, mode_t mode);

/* Milliseconds of CLOCK_MONOTONIC. */
long long hb_now_ms(void);

/*
 * s with every ',' doubled: QEMU's option syntax (QemuOpts) splits
 * "key=value,key=value" on commas and reads ",," as one comma, so a path
 * holding a comma would otherwise inject options. malloc'd.
 */
char *hb_qemu_escape(const char *s);

/* bytes as "512B", "1.5K", "3.2G" (powers of 1024) into buf. */
void hb_human(char *buf, size_t len, long long bytes);

/* Remove path and everything under it (symlinks are not followed): 0,
 * or -1 with errno from the first failure. */
int hb_rm_tree(const char *path);

/* flock(fd, LOCK_EX | LOCK_NB), tried again for up to ms while the lock
 * is held: a pid file's holder keeps it locked for its life, and whoever
 * asks whether one lives (store_lock_pid) holds a shared lock for a
 * moment; a new holder must not take that moment for a live one. 0, or
 * -1 with errno (EWOULDBLOCK: held all along). */
int hb_flock_held_retry(int fd, int ms);

/* In a child that will outlive its parent's command (a host agent, a
 * forwards keeper): a session of its own, stdin /dev/null, stdout and
 * stderr appended to log (never through a symlink there), and no
 * descriptor of the caller's left open (its pipes and sockets). */
void hb_detach_child(const char *log);

/* An exclusive flock on path (made if missing), waited for, saying so on
 * stderr as who when another holds it; the descriptor (held: closing it
 * unlocks), or -1. Serializes what two processes must not do at once
 * (two CI runs building the same image cache). */
int hb_lock_wait(const char *path, const char *who, char **cause);

#endif
