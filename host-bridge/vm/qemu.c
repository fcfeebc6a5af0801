/*
 * host-bridge/vm/qemu.c: the QEMU/QMP backend. QEMU runs as the host
 * agent's child with its pid file, QMP socket and logs in the desktop's
 * directory; QEMU and
 * qemu-img are run as programs with an argv, never a shell line.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/disks.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/qmp.h"
#include "host-bridge/vm/vm.h"

/* ---- processes ---------------------------------------------------------- */

pid_t
qemu_pid(const struct desktop *d)
{
	char *path = desktop_path(d, "qemu.pid"), *s = NULL, *mark = NULL;
	char *qmps = NULL, buf[16384];
	pid_t pid = 0;
	ssize_t n;
	long v;

	/* Ended but not reaped yet counts as ended: while the host agent
	 * restores a state QEMU refused, the QEMU it ended stays a zombie
	 * until the agent's loop reaps it. */
	if (path == NULL || (s = hb_read_file(path)) == NULL)
		goto out;
	v = strtol(s, NULL, 10);
	if (v <= 0 || v >= (1L << 30) || !hb_pid_running((pid_t)v))
		goto out;
	/* A recycled pid is not our QEMU: its command line names our QMP
	 * socket (as QEMU was given it, commas doubled). */
	if ((n = hb_pid_cmdline((pid_t)v, buf, sizeof buf)) <= 0)
		goto out;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	if ((qmps = desktop_path(d, "qmp.sock")) != NULL &&
	    (mark = hb_qemu_escape(qmps)) != NULL && strstr(buf, mark) != NULL)
		pid = (pid_t)v;
out:
	free(path);
	free(s);
	free(qmps);
	free(mark);
	return (pid);
}

int
qemu_wait_exit(pid_t pid, int timeout_ms)
{
	long long deadline = hb_now_ms() + timeout_ms;

	while (hb_pid_running(pid)) {
		if (hb_now_ms() >= deadline)
			return (-1);
		usleep(200000);
	}
	return (0);
}

/* ---- QMP ------------------------------------------------------------------
 */

int
qemu_qmp(const struct desktop *d, const char *cmd, json_t *args, json_t **ret,
    char **cause)
{
	char *path = desktop_path(d, "qmp.sock");
	struct qmp *q;
	int rv = -1;

	if (path == NULL) {
		json_decref(args);
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (qmp_open(&q, path, 10000, cause) == 0) {
		rv = qmp_exec(q, cmd, args, ret, cause);
		qmp_close(q);
	} else {
		json_decref(args);
	}
	free(path);
	return (rv);
}

static char *
qemu_state(const struct desktop *d, pid_t *pidp)
{
	pid_t pid = qemu_pid(d);
	json_t *r = NULL;
	char *cause = NULL, *s;
	const char *st;

	if (pidp != NULL)
		*pidp = pid;
	if (pid == 0)
		return (strdup(qemu_saved(d) ? "saved" : "stopped"));
	if (qemu_qmp(d, "query-status", NULL, &r, &cause) != 0) {
		free(cause);
		return (strdup("running")); /* QMP busy: it is alive anyway */
	}
	st = json_string_value(json_object_get(r, "status"));
	s = strdup(st ? (strcmp(st, "running") == 0       ? "running" :
	                        strcmp(st, "paused") == 0 ? "paused" :
	                                                    st) :
	                "unknown");
	json_decref(r);
	return (s);
}

static int
qemu_shutdown(const struct desktop *d, int timeout_ms, char **cause)
{
	pid_t pid = qemu_pid(d);
	char *c1 = NULL;

	/* Powered off, the next start boots: a saved state goes. */
	if (pid == 0) {
		qemu_discard(d);
		return (0);
	}
	/* A paused guest cannot see the power button. */
	qemu_qmp(d, "cont", NULL, NULL, &c1);
	free(c1);
	if (qemu_qmp(d, "system_powerdown", NULL, NULL, cause) != 0)
		return (-1);
	if (qemu_wait_exit(pid, timeout_ms) != 0) {
		*cause = hb_fmt("the guest did not power off within %d s",
		    timeout_ms / 1000);
		return (-1);
	}
	qemu_discard(d);
	return (0);
}

static int
qemu_kill(const struct desktop *d, char **cause)
{
	pid_t pid = qemu_pid(d);
	char *c1 = NULL;

	if (pid == 0)
		return (0);
	qemu_qmp(d, "quit", NULL, NULL, &c1);
	free(c1);
	if (qemu_wait_exit(pid, 10000) != 0) {
		kill(pid, SIGKILL);
		if (qemu_wait_exit(pid, 10000) != 0) {
			*cause = hb_fmt("qemu (pid %d) did not end", (int)pid);
			return (-1);
		}
	}
	qemu_discard(d);
	return (0);
}

static int
qemu_pause(const struct desktop *d, char **cause)
{
	return (qemu_qmp(d, "stop", NULL, NULL, cause));
}

static int
qemu_resume(const struct desktop *d, char **cause)
{
	return (qemu_qmp(d, "cont", NULL, NULL, cause));
}

/* ---- accelerator ----------------------------------------------------------
 */

static int
qemu_boot_id(char *buf, size_t len)
{
	char *s = hb_read_file("/proc/sys/kernel/random/boot_id");

	if (s == NULL)
		return (-1);
	snprintf(buf, len, "%.36s", s);
	free(s);
	return (0);
}

/*
 * Does KVM really run a guest? /dev/kvm may open while guests hang or
 * QEMU aborts (nested virtualisation here), so boot the image's kernel
 * under KVM exactly as `start` would, without a root file system, and
 * wait a few seconds for its panic on the serial port. The answer is kept
 * for this host boot in $BUREAU_HOME/.accel.
 */
static const char *
qemu_probe_kvm(const char *kernel)
{
	const char *env = getenv("BUREAU_ACCEL"), *res = "tcg";
	char bid[40] = "", *home = hb_home(), *cache = NULL, *s = NULL;
	char tmpl[] = "/tmp/bureau-kvm-probe.XXXXXX", *serial;
	long long deadline;
	int fd, ok = 0, st;
	pid_t pid;

	if (env != NULL && (strcmp(env, "kvm") == 0 || strcmp(env, "tcg") == 0))
		res = env;
	else if (access("/dev/kvm", R_OK | W_OK) != 0)
		res = "tcg";
	else if (home == NULL || qemu_boot_id(bid, sizeof bid) != 0 ||
	    (cache = hb_fmt("%s/.accel", home)) == NULL)
		res = "tcg";
	else if ((s = hb_read_file(cache)) != NULL && strncmp(s, bid, 36) == 0)
		res = strstr(s + 36, "kvm") ? "kvm" : "tcg";
	else
		goto probe;
	goto out;
probe:
	if ((fd = mkstemp(tmpl)) < 0)
		goto out;
	close(fd);
	if ((serial = hb_fmt("file:%s", tmpl)) == NULL) {
		unlink(tmpl);
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-machine",
		    "q35", "-accel", "kvm", "-cpu", "host", "-m", "256",
		    "-nodefaults", "-display", "none", "-no-reboot", "-kernel",
		    kernel, "-append", "console=ttyS0 panic=-1", "-serial",
		    serial, (char *)NULL);
		_exit(127);
	}
	free(serial);
	deadline = hb_now_ms() + 10000;
	while (pid > 0 && hb_now_ms() < deadline) {
		char *log = hb_read_file(tmpl);
		ok = log != NULL && strstr(log, "Kernel panic") != NULL;
		free(log);
		if (ok)
			break;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			pid = 0;
			break;
		}
		usleep(100000);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	unlink(tmpl);
	res = ok ? "kvm" : "tcg";
	free(s);
	if ((s = hb_fmt("%s %s\n", bid, res)) != NULL) {
		char *c2 = NULL;
		if (hb_mkdirs(home, 0700) == 0)
			hb_write_file(cache, s, strlen(s), 0644, &c2);
		free(c2);
	}
out:
	free(home);
	free(cache);
	free(s);
	return (res);
}

static int
qemu_accel(const struct desktop *d, const struct image *im, const char *want,
    const char **out, char **cause)
{
	char *k;

	if (want == NULL || strcmp(want, "auto") == 0) {
		k = hb_fmt("%s/%s", d->image, im->kernel);
		*out = k ? qemu_probe_kvm(k) : "tcg";
		free(k);
		return (0);
	}
	if (strcmp(want, "kvm") != 0 && strcmp(want, "tcg") != 0) {
		*cause = hb_fmt("invalid accel '%s': kvm, tcg or auto", want);
		return (-1);
	}
	*out = want;
	return (0);
}

/* ---- start ------------------------------------------------------------------
 */

/* The files of a running desktop that QEMU is given, escaped for QEMU's
 * option syntax where they go into an option value; the *_raw ones as
 * they are, for what this file does with them itself. */
struct qemu_files {
	char *tok, *pid, *qmp, *sys, *home, *log, *qlog, *ram, *host, *mid;
	char *host_raw, *mid_raw, *qmp_raw, *log_raw;
	int ram_private; /* ram is ram.base, the warm RAM, mapped privately */
};

static void
qemu_files_free(struct qemu_files *f)
{
	free(f->tok);
	free(f->pid);
	free(f->qmp);
	free(f->sys);
	free(f->home);
	free(f->log);
	free(f->qlog);
	free(f->ram);
	free(f->host);
	free(f->mid);
	free(f->host_raw);
	free(f->mid_raw);
	free(f->qmp_raw);
	free(f->log_raw);
}

static char *
qemu_file(const struct desktop *d, const char *name, int escape)
{
	char *p = desktop_path(d, name), *e;

	if (p == NULL || !escape)
		return (p);
	e = hb_qemu_escape(p);
	free(p);
	return (e);
}

/*
 * What a desktop runs on the host (QEMU; the network keeper with its
 * pasta and passt) may be merged by KSM, where the host runs it
 * (/sys/kernel/mm/ksm/run: off unless the operator turns it on, see
 * docs/desktops.md). QEMU marks only the guest's RAM mergeable on its own
 * (mem-merge); idle clones of one warm state also hold the same video
 * memory, QEMU's and passt's pages that hold only zeros (this host's
 * kernel gives a read of untouched memory a page of its own: 12 MB of
 * QEMU's 16 MB video memory, 13 MB of pasta's and of passt's buffers),
 * and the same program data. Measured (make bench, four idle 1536M
 * clones under TCG): each more 149 MB without KSM, 70-79 MB with it, ksmd
 * taking 2.3-2.4% of one core at the kernel's default scan rate.
 * PR_SET_MEMORY_MERGE (Linux 6.4) is inherited by children and kept
 * across exec; an older kernel says EINVAL, and QEMU's own marking is
 * all there is.
 */
#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif
static void
qemu_mergeable(void)
{
	(void)prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0);
}

/*
 * In a child about to exec QEMU: the caller (the host agent) blocks the
 * signals it sigwaits for and ignores SIGPIPE, and both would survive
 * exec; its descriptors stay its own. QEMU gets a session of its own and
 * outlives its host agent (DESIGN.md, "Always there"): an agent killed
 * (kill -9, OOM) leaves the VM running, and the next agent of the
 * desktop adopts it (agent_vm.c). What ends it is a stop, a save, the
 * agent's own orderly end (SIGTERM) or the guest powering off.
 */
static void
qemu_child_setup(int out, int keep)
{
	sigset_t none;
	int nul = open("/dev/null", O_RDONLY);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	qemu_mergeable();
	if (out >= 0) {
		dup2(out, 1);
		dup2(out, 2);
	}
	if (nul >= 0)
		dup2(nul, 0);
	/* keep becomes descriptor 3, the one thing inherited. */
	if (keep >= 0 && keep != QEMU_NET_FD)
		dup2(keep, QEMU_NET_FD);
	if (keep >= 0)
		fcntl(QEMU_NET_FD, F_SETFD, 0);
	close_range(keep >= 0 ? QEMU_NET_FD + 1 : 3, ~0U, 0);
}

/*
 * Is QEMU confined (its sandbox, no capabilities, its cgroup)? Always,
 * unless BUREAU_JAIL=off is in the environment of what starts it: for
 * `make bench`, which measures what the confinement costs, and for a
 * host whose QEMU was built without seccomp. Nothing a guest or an
 * agent loop sends can set it.
 */
static int
qemu_jailed(void)
{
	const char *e = getenv("BUREAU_JAIL");

	return (e == NULL || strcmp(e, "off") != 0);
}

/*
 * In the child about to exec QEMU: no capability survives the exec (the
 * bounding set emptied, root's exec rule off and locked: uid 0 gains
 * none back), and no_new_privs, so no set-uid program or file
 * capability gives any: no mount, module, ptrace of the agent, raw I/O
 * or override of a file's mode. It still opens what root's own rights
 * as an owner give (root's files), until it runs as a uid of its own
 * (docs/desktops.md, "Security model"). (Raw prctl and
 * capset: the five calls libcap would wrap, in a child between fork and
 * exec, where a library's allocations are best avoided.)
 */
static int
qemu_child_confine(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2];

	memset(none, 0, sizeof none);
	/* (a user without root has none to drop, and may not touch the
	 * bounding set) */
	if (geteuid() != 0)
		return (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	for (int cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
		    errno != EINVAL)
			return (-1);
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (prctl(PR_SET_SECUREBITS,
	        SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
	            SECBIT_NO_SETUID_FIXUP_LOCKED,
	        0, 0, 0) != 0 ||
	    syscall(SYS_capset, &h, none) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return (-1);
	return (0);
}

/*
 * Does a unix socket listen at path? Read from /proc/net/unix rather than
 * tried with connect(): QMP serves one client at a time, and a probe would
 * hold it from whoever comes next.
 */
static int
qemu_unix_listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char *line = NULL;
	size_t cap = 0, pl = strlen(path);
	unsigned long flags;
	int found = 0;

	if (f == NULL)
		return (0);
	while (!found && getline(&line, &cap, f) > 0) {
		size_t n = strlen(line);
		char *sp;

		while (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		/* Num RefCount Protocol Flags Type St Inode Path; flag
		 * 0x10000 is __SO_ACCEPTCON, a listening socket. */
		if (n > pl && strcmp(line + n - pl, path) == 0 &&
		    line[n - pl - 1] == ' ' && (sp = strchr(line, ':')) &&
		    sscanf(sp + 1, "%*s %*s %lx", &flags) == 1 &&
		    (flags & 0x10000) != 0)
			found = 1;
	}
	free(line);
	fclose(f);
	return (found);
}

/*
 * The guest's network: a keeper of the desktop's own network namespace
 * (netkeeper.c, `bureau net-keeper DIR`) runs pasta, passt and the relay
 * to the guest's daemon there, and loads the rules of netrules.c. passt
 * talks to QEMU over a socketpair (*qemu_end is QEMU's end). The keeper
 * has a session of its own and ends with QEMU, not with the caller (the
 * host agent: a killed one's successor adopts both); it says "ok" once the
 * relay listens on DIR/guest.sock, within 30 s, or why not.
 */
pid_t
qemu_net(const struct desktop *d, int link, int *qemu_end, char **cause)
{
	char *nlog = desktop_path(d, "net.log"), exe[4096], line[512] = "";
	pid_t pid = -1;
	int lfd = -1, sv[2] = { -1, -1 }, rp[2] = { -1, -1 }, st;
	size_t n = 0;
	long long deadline = hb_now_ms() + 30000;

	*qemu_end = -1;
	if (nlog == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (hb_self(exe, sizeof exe) != 0) {
		*cause = hb_fmt("/proc/self/exe: %s", strerror(errno));
		goto out;
	}
	if (net_rules_write(d, cause) != 0)
		goto out;
	/* link: the guest's link made elsewhere (a QEMU that libvirt runs
	 * listens, and the caller connected to it): passt's end, closed
	 * here whatever happens */
	if (link >= 0)
		sv[0] = link;
	if ((link < 0 &&
	        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) ||
	    pipe2(rp, O_CLOEXEC) != 0) {
		*cause = hb_fmt("socketpair: %s", strerror(errno));
		goto out;
	}
	lfd = open(nlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if ((pid = fork()) == 0) {
		/* fd 1 the readiness pipe, 2 the log, 3 passt's link end;
		 * made out of the way of 1-3 first */
		int w = fcntl(rp[1], F_DUPFD, 10),
		    l = lfd >= 0 ? fcntl(lfd, F_DUPFD, 10) : -1,
		    k = fcntl(sv[0], F_DUPFD, 10);

		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* a session of its own: it outlives the agent with QEMU,
		 * and ends with QEMU (passt sees its link close) */
		setsid();
		qemu_mergeable(); /* pasta's and passt's too */
		if (w < 0 || k < 0)
			_exit(126);
		dup2(w, 1);
		if (l >= 0)
			dup2(l, 2);
		dup2(k, QEMU_NET_FD);
		fcntl(QEMU_NET_FD, F_SETFD, 0);
		close_range(QEMU_NET_FD + 1, ~0U, 0);
		execl(exe, "bureau", "net-keeper", d->dir, (char *)NULL);
		fprintf(stderr, "cannot run '%s': %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(rp[1]);
	rp[1] = -1;
	close(sv[0]);
	sv[0] = -1;
	if (pid < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		goto out;
	}
	/* its word: "ok", or "error: WHY" (it then ends) */
	while (n < sizeof line - 1 && memchr(line, '\n', n) == NULL &&
	    hb_now_ms() < deadline) {
		struct pollfd pf = { .fd = rp[0], .events = POLLIN };
		ssize_t r;

		if (poll(&pf, 1, 200) <= 0)
			continue;
		if ((r = read(rp[0], line + n, sizeof line - 1 - n)) <= 0)
			break;
		n += (size_t)r;
	}
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (strcmp(line, "ok") != 0) {
		*cause = hb_fmt("the guest's network did not start: %s",
		    line[0] ? line :
		              "no word from its keeper within 30 s (see "
		              "net.log)");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		pid = -1;
		goto out;
	}
	*qemu_end = sv[1];
	sv[1] = -1;
out:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (rp[i] >= 0)
			close(rp[i]);
	}
	if (lfd >= 0)
		close(lfd);
	free(nlog);
	return (pid);
}

/* The -drive options of d's disk limits ("" for none; malloc'd). */
static char *
qemu_throttle_opts(const struct desktop *d)
{
	char b[48] = "", o[48] = "";

	if (d->disk_bps <= 0 && d->disk_iops <= 0)
		return (strdup(""));
	if (d->disk_bps > 0)
		snprintf(b, sizeof b, ",throttling.bps-total=%lld",
		    d->disk_bps);
	if (d->disk_iops > 0)
		snprintf(o, sizeof o, ",throttling.iops-total=%ld",
		    d->disk_iops);
	return (hb_fmt("%s%s,throttling.group=disks", b, o));
}

/* QEMU's command line as it is built: argv, and the strings formatted for
 * it (args, na of them, the caller's to free). */
struct qemu_cmd {
	char *argv[104];
	char *args[48];
	int n, na;
};

/* An argument formatted into c->args: NULL when out of memory, which
 * qemu_cmd_build finds once the line is whole. */
#define A(...) (c->args[c->na] = hb_fmt(__VA_ARGS__), c->args[c->na++])

/* The desktop's files QEMU is given (struct qemu_files), the QMP socket's
 * path short enough for a unix socket. */
static int
qemu_launch_files(const struct desktop *d, struct qemu_files *f, int incoming,
    char **cause)
{
	/* (a boot drops ram.base: qemu_launch_reset) */
	f->ram_private = incoming && qemu_on_base(d);
	/* The guest's own token: the host agent's token (`token`) never
	 * enters the guest. */
	if ((f->tok = qemu_file(d, "guest-token", 1)) == NULL ||
	    (f->pid = qemu_file(d, "qemu.pid", 0)) == NULL ||
	    (f->qmp = qemu_file(d, "qmp.sock", 1)) == NULL ||
	    (f->sys = qemu_file(d, "system.qcow2", 1)) == NULL ||
	    (f->home = qemu_file(d, "home.qcow2", 1)) == NULL ||
	    (f->log = qemu_file(d, "console.log", 1)) == NULL ||
	    (f->qlog = qemu_file(d, "qemu.log", 0)) == NULL ||
	    (f->ram = qemu_file(d, f->ram_private ? "ram.base" : "ram", 1)) ==
	        NULL ||
	    (f->host = qemu_file(d, "hostname", 1)) == NULL ||
	    (f->mid = qemu_file(d, "machine-id", 1)) == NULL ||
	    (f->host_raw = qemu_file(d, "hostname", 0)) == NULL ||
	    (f->mid_raw = qemu_file(d, "machine-id", 0)) == NULL ||
	    (f->qmp_raw = qemu_file(d, "qmp.sock", 0)) == NULL ||
	    (f->log_raw = qemu_file(d, "console.log", 0)) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (strlen(f->qmp_raw) >= 108) {
		*cause = hb_fmt("path '%s' too long for a unix socket (a "
		                "shorter BUREAU_HOME)",
		    f->qmp_raw);
		return (-1);
	}
	return (0);
}

/* The guest's hostname (the desktop's name) through fw_cfg, padded
 * to a fixed size: the guest's fw_cfg driver keeps the entries' sizes
 * from its boot, and a clone's guest booted as another desktop. */
int
qemu_write_hostname(const struct desktop *d, const char *path, char **cause)
{
	char hn[66];
	size_t l = strlen(d->name);

	memset(hn, '\n', sizeof hn - 1);
	hn[sizeof hn - 1] = '\0';
	memcpy(hn, d->name, l < 64 ? l : 64);
	return (hb_write_file(path, hn, sizeof hn - 1, 0600, cause));
}

/* What the previous QEMU left is put aside before the next starts. */
static int
qemu_launch_reset(const struct desktop *d, const struct qemu_files *f,
    int incoming, char **cause)
{
	/* Keep the previous boot's console for a post-mortem. */
	char *old = hb_fmt("%s.1", f->log_raw);
	if (old != NULL)
		rename(f->log_raw, old);
	free(old);
	unlink(f->pid);
	unlink(f->qmp_raw);
	/* (the names the previous QEMU knew its forks' overlays by) */
	disks_drop_aliases(d);
	/* A boot starts from fresh (sparse) RAM; a restore from the saved. */
	if (!incoming) {
		char *c2 = NULL;

		qemu_drop_ram(d);
		qemu_warm_forget(d);
		/* (as a save does: layers no fork shares fold back) */
		if (disks_collapse(d, qemu_layer_name, &c2) != 0)
			fprintf(stderr,
			    "bureau: warning: the disk layers of '%s' stay "
			    "as they are: %s\n",
			    d->name, c2 ? c2 : "?");
		free(c2);
	}
	return (qemu_write_hostname(d, f->host_raw, cause));
}

/* The guest's daemon and its events, as the host agent (and the commands
 * that ask the guest to sync or step its clock) reach them: the network
 * keeper's relay, in the desktop's 0700 directory. */
int
qemu_guest_ports(const struct desktop *d, char **cause)
{
	char *path = desktop_path(d, "guest.json"),
	     *sock = desktop_path(d, "guest-events.sock"), *gj = NULL;
	int rv = -1;

	if (path == NULL || sock == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		*cause = hb_fmt("'%s' is too long for a unix socket "
		                "(BUREAU_HOME on a shorter path)",
		    sock);
		goto out;
	}
	if ((gj = hb_fmt("{\"url\": \"ipc://%s/guest.sock\", "
	                 "\"events\": \"ipc://%s/guest-events.sock\"}\n",
	         d->dir, d->dir)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	rv = hb_write_file(path, gj, strlen(gj), 0600, cause);
out:
	free(path);
	free(sock);
	free(gj);
	return (rv);
}

/* The machine, its CPUs and memory, the kernel it boots. */
static void
qemu_cmd_machine(struct qemu_cmd *c, const struct desktop *d,
    const struct image *im, const struct qemu_files *f, const char *accel,
    long tb_mb)
{
	int kvm = strcmp(accel, "kvm") == 0;

	c->argv[c->n++] = "qemu-system-x86_64";
	c->argv[c->n++] = "-name";
	c->argv[c->n++] = A("bureau-%s", d->name);
	/* Only the devices below: q35's defaults (a CD-ROM drive, a parallel
	 * port, a default NIC) cost the guest drivers and udev work at every
	 * boot, and nothing uses them. */
	c->argv[c->n++] = "-nodefaults";
	/* RAM is a file beside the disks, so that a save (qemu_state.c)
	 * leaves it where it is and writes only the devices' state; the
	 * machine type is pinned so that a newer QEMU still restores it. */
	c->argv[c->n++] = "-machine";
	c->argv[c->n++] = QEMU_MACHINE ",memory-backend=mem";
	c->argv[c->n++] = "-object";
	/* A clone maps its warm state's RAM privately (ram.base): the
	 * pages it does not change are the page cache's, one copy for all
	 * the clones that run (qemu_stream.c). */
	c->argv[c->n++] = A("memory-backend-file,id=mem,size=%ldM,mem-path=%s,"
	                    "share=%s",
	    d->memory, f->ram, f->ram_private ? "off" : "on");
	c->argv[c->n++] = "-accel";
	/* TCG keeps the code it translated until its cache (1 GiB by
	 * default) is full, in pages of QEMU's own: a desktop that worked
	 * keeps them while idle. Capped at 256 MB (qemu_tb_size), measured
	 * on 4G clones of the full image under TCG, twice each: Chromium's
	 * window in 19.5-20.7 s against 23.6-29.0 s, a page's 3e7-step JS
	 * loop 9.2-11.6 s against 9.5-10.7 s, and QEMU's PSS after them
	 * 1082-1108 MB against 1945-1946 MB; a minimal
	 * desktop after 100 runs of `ls /usr/bin` and `python3 -c 1`: 34.0 s
	 * against 34.4-38.6 s, 416 MB against 745 MB. At 16-32 MB the same
	 * work took 1.8-2.7 times as long. */
	c->argv[c->n++] = kvm ? "kvm" :
	    tb_mb > 0         ? A("tcg,thread=multi,tb-size=%ld", tb_mb) :
	                        "tcg,thread=multi";
	c->argv[c->n++] = "-cpu";
	c->argv[c->n++] = kvm ? "host" : "max";
	c->argv[c->n++] = "-smp";
	c->argv[c->n++] = A("%d", d->cpus);
	c->argv[c->n++] = "-m";
	c->argv[c->n++] = A("%ldM", d->memory);
	/* -kernel, -initrd, -append and -pidfile take their value whole. */
	c->argv[c->n++] = "-kernel";
	c->argv[c->n++] = A("%s/%s", d->image, im->kernel);
	c->argv[c->n++] = "-initrd";
	c->argv[c->n++] = A("%s/%s", d->image, im->initrd);
	c->argv[c->n++] = "-append";
	c->argv[c->n++] = (char *)im->cmdline;
}

/* vda is the system disk, vdb the home: the slots fix the order. With
 * --disk-bps or --disk-iops both are in one throttle group (QEMU's
 * block throttling, libvirt's <iotune>): the limit is the desktop's,
 * not each disk's. */
static void
qemu_cmd_disks(struct qemu_cmd *c, const struct desktop *d,
    const struct qemu_files *f)
{
	char *thr = qemu_throttle_opts(d);

	c->args[c->na++] = thr;
	c->argv[c->n++] = "-drive";
	c->argv[c->n++] = A("file=%s,if=none,id=drive-sys,node-name=sys,"
	                    "format=qcow2,discard=unmap%s",
	    f->sys, thr ? thr : "");
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "virtio-blk-pci,drive=drive-sys,bus=pcie.0,addr=0x4";
	c->argv[c->n++] = "-drive";
	c->argv[c->n++] = A("file=%s,if=none,id=drive-home,node-name=home,"
	                    "format=qcow2,discard=unmap%s",
	    f->home, thr ? thr : "");
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "virtio-blk-pci,drive=drive-home,bus=pcie.0,addr=0x5";
}

/* The guest's network: passt's end of the link (qemu_net). */
static void
qemu_cmd_net(struct qemu_cmd *c)
{
	c->argv[c->n++] = "-netdev";
	c->argv[c->n++] = A(
	    "stream,id=net0,server=off,addr.type=fd,addr.str=%d", QEMU_NET_FD);
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "virtio-net-pci,netdev=net0";
}

/* The guest's entropy and identity: its RNG, its generation id, and
 * through fw_cfg its hostname, machine id and token. */
static void
qemu_cmd_identity(struct qemu_cmd *c, const struct qemu_files *f)
{
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "virtio-rng-pci";
	/* A new generation id for every QEMU: a guest restored from a state
	 * saved by another (a clone of a warm state) is told, reseeds its
	 * RNG and re-reads its identity from fw_cfg (bureau-identity). */
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "vmgenid,guid=auto";
	c->argv[c->n++] = "-fw_cfg";
	c->argv[c->n++] = A("name=opt/bureau/hostname,file=%s", f->host);
	if (access(f->mid_raw, R_OK) == 0) {
		c->argv[c->n++] = "-fw_cfg";
		c->argv[c->n++] = A("name=opt/bureau/machine-id,file=%s",
		    f->mid);
	}
	c->argv[c->n++] = "-fw_cfg";
	c->argv[c->n++] = A("name=opt/bureau/token,file=%s", f->tok);
}

/* QMP, the serial console, the display and its VNC server. */
static void
qemu_cmd_console(struct qemu_cmd *c, const struct qemu_files *f)
{
	c->argv[c->n++] = "-chardev";
	c->argv[c->n++] = A("socket,id=qmp,path=%s,server=on,wait=off", f->qmp);
	c->argv[c->n++] = "-mon";
	c->argv[c->n++] = "chardev=qmp,mode=control";
	c->argv[c->n++] = "-chardev";
	c->argv[c->n++] = A("file,id=console,path=%s", f->log);
	c->argv[c->n++] = "-serial";
	c->argv[c->n++] = "chardev:console";
	c->argv[c->n++] = "-display";
	c->argv[c->n++] = "none";
	c->argv[c->n++] = "-vga";
	c->argv[c->n++] = "std";
	/* Mission Control's live view: QEMU's own VNC server (it shows the
	 * boot too) on a unix socket in the 0700 desktop directory, with an
	 * absolute pointer so the viewer's clicks land where they point
	 * (f->qmp ends in "/qmp.sock": the same directory, escaped). */
	c->argv[c->n++] = "-vnc";
	c->argv[c->n++] = A("unix:%.*s/vnc.sock", (int)(strlen(f->qmp) - 9),
	    f->qmp);
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "qemu-xhci,id=xhci";
	c->argv[c->n++] = "-device";
	c->argv[c->n++] = "usb-tablet,bus=xhci.0";
}

/* The pid file, and for a restore the wait for the saved state. */
static void
qemu_cmd_state(struct qemu_cmd *c, const struct qemu_files *f, int incoming)
{
	c->argv[c->n++] = "-pidfile";
	c->argv[c->n++] = f->pid;
	if (incoming) {
		/* Paused until the saved state is in (qemu_restore). */
		c->argv[c->n++] = "-S";
		c->argv[c->n++] = "-incoming";
		c->argv[c->n++] = "defer";
	}
}

#undef A

/*
 * TCG's translation cache in MB (qemu_cmd_machine): 256, or
 * BUREAU_TB_SIZE's (0: QEMU's own default, 1 GiB in QEMU 7.2).
 */
static int
qemu_tb_size(long *mb, char **cause)
{
	const char *e = getenv("BUREAU_TB_SIZE");

	*mb = 256;
	if (e == NULL || *e == '\0')
		return (0);
	return (hb_parse_int("BUREAU_TB_SIZE", e, 0, 65536, mb, cause));
}

/* QEMU's whole command line, in c. */
static int
qemu_cmd_build(struct qemu_cmd *c, const struct desktop *d,
    const struct image *im, const struct qemu_files *f, const char *accel,
    int incoming, char **cause)
{
	long tb_mb;

	if (qemu_tb_size(&tb_mb, cause) != 0)
		return (-1);
	qemu_cmd_machine(c, d, im, f, accel, tb_mb);
	qemu_cmd_disks(c, d, f);
	qemu_cmd_net(c);
	qemu_cmd_identity(c, f);
	qemu_cmd_console(c, f);
	qemu_cmd_state(c, f, incoming);
	/* QEMU's own seccomp filter: no process of its own (fork, exec),
	 * no change of user or privilege, no scheduling or memory policy
	 * of the host's, no obsolete system call. Its migrations go to
	 * descriptors bureau hands it (qemu_state.c), never "exec:". */
	if (qemu_jailed()) {
		c->argv[c->n++] = "-sandbox";
		c->argv[c->n++] = "on,obsolete=deny,elevateprivileges=deny,"
		                  "spawn=deny,resourcecontrol=deny";
	}
	c->argv[c->n] = NULL;
	for (int i = 0; i < c->na; i++) {
		if (c->args[i] == NULL) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
	}
	return (0);
}

/* QEMU is the caller's child (the host agent's), not a daemon: its
 * parent sees it end. *net, passt's end of the guest's link, goes to
 * QEMU and is closed here. */
static pid_t
qemu_spawn(char **argv, const char *qlog, int *net, const struct limits_cg *cg,
    char **cause)
{
	int lfd = open(qlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pid_t pid = fork();

	if (pid == 0) {
		qemu_child_setup(lfd, *net);
		/* into its cgroup before it runs: all its threads and
		 * memory are counted there from the first */
		if (limits_cg_join(cg) != 0) {
			fprintf(stderr,
			    "cannot join the desktop's cgroup: %s\n",
			    strerror(errno));
			_exit(126);
		}
		if (qemu_jailed() && qemu_child_confine() != 0) {
			fprintf(stderr, "cannot drop QEMU's privileges: %s\n",
			    strerror(errno));
			_exit(126);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run '%s': %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	if (lfd >= 0)
		close(lfd);
	if (*net >= 0)
		close(*net);
	*net = -1;
	if (pid < 0)
		*cause = hb_fmt("fork: %s", strerror(errno));
	return (pid);
}

/* Running once its QMP socket listens (what -daemonize waited
 * for); TCG with a loaded host takes a few seconds. A QEMU that ended
 * meanwhile is reaped: *pid becomes -1. */
static int
qemu_wait_qmp(pid_t *pid, const struct qemu_files *f, const char *accel,
    char **cause)
{
	long long deadline = hb_now_ms() + 60000;
	int st = 0;

	while (!qemu_unix_listening(f->qmp_raw)) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = -1;
			*cause = hb_fmt("qemu did not start (%s): see '%s'",
			    accel, f->qlog);
			return (-1);
		}
		if (hb_now_ms() >= deadline) {
			*cause = hb_fmt("qemu did not open its QMP socket "
			                "within 60 s: see '%s'",
			    f->qlog);
			return (-1);
		}
		usleep(50000);
	}
	return (0);
}

/* Written down once QEMU runs: the network keeper's pid, QEMU's, the
 * accelerator. */
static void
qemu_launch_record(const struct desktop *d, const struct qemu_files *f,
    pid_t pid, pid_t net, const char *accel)
{
	char *pp = desktop_path(d, "net.pid"), *ps = NULL, *c3 = NULL;
	struct stat sb;

	if (pp != NULL && net > 0 && (ps = hb_fmt("%d\n", (int)net)) != NULL)
		hb_write_file(pp, ps, strlen(ps), 0600, &c3);
	free(ps);
	free(c3);
	ps = c3 = NULL;
	/* QEMU writes its pid file early in its start; should it not
	 * have, the caller still finds its child. */
	if (stat(f->pid, &sb) != 0 && (ps = hb_fmt("%d\n", (int)pid)) != NULL)
		hb_write_file(f->pid, ps, strlen(ps), 0600, &c3);
	free(c3);
	free(ps);
	free(pp);
	char *ap = desktop_path(d, "accel"), *c2 = NULL;
	if (ap != NULL)
		hb_write_file(ap, accel, strlen(accel), 0644, &c2);
	free(c2);
	free(ap);
}

int
qemu_launch(const struct desktop *d, const struct image *im, const char *accel,
    int incoming, char **cause)
{
	struct qemu_files f = { 0 };
	struct qemu_cmd c = { 0 };
	struct limits_cg cg = { 0 };
	int rv = -1, st = 0, net = -1;
	pid_t pid = -1, passt = -1;

	if (qemu_launch_files(d, &f, incoming, cause) != 0 ||
	    qemu_launch_reset(d, &f, incoming, cause) != 0 ||
	    qemu_guest_ports(d, cause) != 0 ||
	    (passt = qemu_net(d, -1, &net, cause)) < 0)
		goto out;
	if (qemu_jailed() && limits_cg_make(d, &cg, cause) != 0)
		goto out;
	if (cg.missing != NULL)
		fprintf(stderr,
		    "bureau: '%s': the host gives no cgroup for its %s "
		    "limit: not enforced\n",
		    d->name, cg.missing);
	if (qemu_cmd_build(&c, d, im, &f, accel, incoming, cause) != 0 ||
	    (pid = qemu_spawn(c.argv, f.qlog, &net, &cg, cause)) < 0 ||
	    qemu_wait_qmp(&pid, &f, accel, cause) != 0)
		goto out;
	qemu_launch_record(d, &f, pid, passt, accel);
	rv = 0;
out:
	if (rv != 0 && pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	if (rv != 0 && passt > 0) {
		kill(passt, SIGKILL);
		waitpid(passt, &st, 0);
	}
	if (net >= 0)
		close(net);
	for (int i = 0; i < c.na; i++)
		free(c.args[i]);
	limits_cg_free(&cg);
	qemu_files_free(&f);
	return (rv);
}

static int
qemu_start(const struct desktop *d, const struct image *im, const char *accel,
    char **cause)
{
	return (qemu_launch(d, im, accel, 0, cause));
}

/* ---- snapshots
 * --------------------------------------------------------------- */

/* Run a QMP job (snapshot-save/-load) and wait until it concludes. The
 * disks' top nodes are asked for: a fork puts new ones over them. */
int
qemu_job_q(struct qmp *q, const char *cmd, const char *tag, char **cause)
{
	char sys[64], home[64];
	json_t *args = NULL;
	int rv = -1;

	if (qemu_top_nodes(q, sys, home, sizeof sys, NULL, cause) != 0)
		goto out;
	if ((args = json_pack("{s:s, s:s, s:s, s:[s,s]}", "job-id",
	         "bureau-snap", "tag", tag, "vmstate", sys, "devices", sys,
	         home)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (qmp_exec(q, cmd, args, NULL, cause) != 0)
		goto out;
	for (;;) {
		json_t *jobs = NULL, *job;
		size_t i;
		const char *status = NULL, *err = NULL;

		if (qmp_exec(q, "query-jobs", NULL, &jobs, cause) != 0)
			goto out;
		json_array_foreach(jobs, i, job)
		{
			if (strcmp(
			        json_string_value(json_object_get(job, "id")) ?:
			            "",
			        "bureau-snap") == 0) {
				status = json_string_value(
				    json_object_get(job, "status"));
				err = json_string_value(
				    json_object_get(job, "error"));
				break;
			}
		}
		if (status != NULL && strcmp(status, "concluded") == 0) {
			char *c2 = NULL;
			if (err != NULL)
				*cause = hb_fmt("%s '%s': %s", cmd, tag, err);
			else
				rv = 0;
			json_decref(jobs);
			qmp_exec(q, "job-dismiss",
			    json_pack("{s:s}", "id", "bureau-snap"), NULL, &c2);
			free(c2);
			goto out;
		}
		json_decref(jobs);
		if (status == NULL) {
			*cause = hb_fmt("%s '%s': the job vanished", cmd, tag);
			goto out;
		}
		usleep(200000);
	}
out:
	return (rv);
}

static int
qemu_job(const struct desktop *d, const char *cmd, const char *tag,
    char **cause)
{
	char *path = desktop_path(d, "qmp.sock");
	struct qmp *q = NULL;
	int rv = -1;

	if (path == NULL)
		*cause = hb_fmt("out of memory");
	else if (qmp_open(&q, path, 30000, cause) == 0)
		rv = qemu_job_q(q, cmd, tag, cause);
	qmp_close(q);
	free(path);
	return (rv);
}

static int
qemu_snapshot(const struct desktop *d, const char *tag, int restore, int *live,
    char **cause)
{
	char *c2 = NULL;
	int rv;

	*live = tag != NULL && qemu_pid(d) != 0;
	if (!*live) {
		rv = qemu_snapshot_offline(d, tag, restore, "state", cause);
		/* Disks reverted under a saved state would not be the disks
		 * its memory knew: the next start boots. */
		if (rv == 0 && tag != NULL && restore)
			qemu_discard(d);
		return (rv);
	}
	if (!restore)
		return (qemu_job(d, "snapshot-save", tag, cause));
	if (qemu_qmp(d, "stop", NULL, NULL, cause) != 0)
		return (-1);
	rv = qemu_job(d, "snapshot-load", tag, cause);
	qemu_qmp(d, "cont", NULL, NULL, &c2);
	free(c2);
	/* The guest's connections went back to the snapshot's: the relay's
	 * to its daemon hangs until dialled anew (20 s for the clock step
	 * after it to give up, measured on a libvirt desktop). */
	qemu_net_redial(d);
	return (rv);
}

/* A running desktop given its limits as they are now in d (`bureau
 * config`): its cgroup's values, and its disks' throttle group through
 * QMP (zeros end the throttling). */
int
vm_limits_apply(const struct desktop *d, char **cause)
{
	pid_t pid;
	static const char *const drives[] = { "drive-sys", "drive-home" };

	if (vm_backend_for(d) != &vm_qemu) {
		/* (the network's are the keeper's, the same on libvirt) */
		if (!d->net_none && vm_net_reload(d, cause) != 0)
			return (-1);
		*cause = hb_fmt("on host '%s', libvirt's, the CPU and disk "
		                "limits take effect at the desktop's next "
		                "start",
		    d->host ? d->host : "?");
		return (-1);
	}
	if ((pid = qemu_pid(d)) <= 0)
		return (0); /* its next start takes them */
	if (limits_cg_update(d, pid, cause) != 0 ||
	    (!d->net_none && vm_net_reload(d, cause) != 0))
		return (-1);
	for (int i = 0; i < 2; i++) {
		json_t *a = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, "
		                      "s:s}",
		    "device", drives[i], "bps", (json_int_t)d->disk_bps,
		    "bps_rd", (json_int_t)0, "bps_wr", (json_int_t)0, "iops",
		    (json_int_t)d->disk_iops, "iops_rd", (json_int_t)0,
		    "iops_wr", (json_int_t)0, "group", "disks");

		if (a == NULL) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
		if (qemu_qmp(d, "block_set_io_throttle", a, NULL, cause) != 0)
			return (-1);
	}
	return (0);
}

const struct vm_backend vm_qemu = {
	.name = "qemu",
	.create = disks_create,
	.accel = qemu_accel,
	.start = qemu_start,
	.pid = qemu_pid,
	.state = qemu_state,
	.shutdown = qemu_shutdown,
	.kill = qemu_kill,
	.pause = qemu_pause,
	.resume = qemu_resume,
	.snapshot = qemu_snapshot,
	.save = qemu_save,
	.restore = qemu_restore,
	.saved = qemu_saved,
	.discard = qemu_discard,
	.stats = qemu_stats,
	.clone = qemu_clone,
	.warm_find = qemu_warm_find,
	.cloned = qemu_cloned,
	.warm_token = qemu_warm_token,
	.fork = qemu_fork,
};

const struct vm_backend *
vm_backend(void)
{
	return (&vm_qemu);
}
