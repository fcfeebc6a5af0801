/*
 * host-bridge/vm/qemu.c: the QEMU/QMP backend. QEMU runs daemonized with
 * its pid file, QMP socket and logs in the desktop's directory; QEMU and
 * qemu-img are run as programs with an argv, never a shell line.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/disks.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/qmp.h"
#include "host-bridge/vm/vm.h"

#define GUEST_API_PORT    7300
#define GUEST_EVENTS_PORT 7301
#define GUEST_VNC_PORT    5900

/* ---- processes ---------------------------------------------------------- */

pid_t
qemu_pid(const struct desktop *d)
{
	char *path = desktop_path(d, "qemu.pid"), *s = NULL, *mark = NULL;
	char *qmps = NULL, *cl = NULL, buf[16384];
	pid_t pid = 0;
	ssize_t n;
	long v;
	int fd;

	if (path == NULL || (s = hb_read_file(path)) == NULL)
		goto out;
	v = strtol(s, NULL, 10);
	if (v <= 0 || kill((pid_t)v, 0) != 0)
		goto out;
	/* A recycled pid is not our QEMU: its command line names our QMP
	 * socket (as QEMU was given it, commas doubled). */
	if ((cl = hb_fmt("/proc/%ld/cmdline", v)) == NULL ||
	    (fd = open(cl, O_RDONLY | O_CLOEXEC)) < 0)
		goto out;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		goto out;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	if ((qmps = desktop_path(d, "qmp.sock")) != NULL &&
	    (mark = hb_qemu_escape(qmps)) != NULL && strstr(buf, mark) != NULL)
		pid = (pid_t)v;
out:
	free(path);
	free(s);
	free(cl);
	free(qmps);
	free(mark);
	return (pid);
}

int
qemu_wait_exit(pid_t pid, int timeout_ms)
{
	long long deadline = hb_now_ms() + timeout_ms;

	while (kill(pid, 0) == 0) {
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
 * option syntax where they go into an option value. */
struct qemu_files {
	char *tok, *vnc, *pid, *qmp, *sys, *home, *log, *qlog, *ram;
};

static void
qemu_files_free(struct qemu_files *f)
{
	free(f->tok);
	free(f->vnc);
	free(f->pid);
	free(f->qmp);
	free(f->sys);
	free(f->home);
	free(f->log);
	free(f->qlog);
	free(f->ram);
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

int
qemu_launch(const struct desktop *d, const struct image *im, const char *accel,
    int incoming, char **cause)
{
	struct qemu_files f = { 0 };
	char *args[40] = { 0 }; /* strings this function formats */
	char *argv_q[96], *qmp_raw = NULL, *log_raw = NULL;
	int na = 0, n = 0, rv = -1, lfd, st = 0, kvm;
	pid_t pid;

	kvm = strcmp(accel, "kvm") == 0;
	if ((f.tok = qemu_file(d, "token", 1)) == NULL ||
	    (f.vnc = qemu_file(d, "vnc-password", 1)) == NULL ||
	    (f.pid = qemu_file(d, "qemu.pid", 0)) == NULL ||
	    (f.qmp = qemu_file(d, "qmp.sock", 1)) == NULL ||
	    (f.sys = qemu_file(d, "system.qcow2", 1)) == NULL ||
	    (f.home = qemu_file(d, "home.qcow2", 1)) == NULL ||
	    (f.log = qemu_file(d, "console.log", 1)) == NULL ||
	    (f.qlog = qemu_file(d, "qemu.log", 0)) == NULL ||
	    (f.ram = qemu_file(d, "ram", 1)) == NULL ||
	    (qmp_raw = qemu_file(d, "qmp.sock", 0)) == NULL ||
	    (log_raw = qemu_file(d, "console.log", 0)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (strlen(qmp_raw) >= 108) {
		*cause = hb_fmt("path '%s' too long for a unix socket (a "
		                "shorter BUREAU_HOME)",
		    qmp_raw);
		goto out;
	}
	/* Keep the previous boot's console for a post-mortem. */
	char *old = hb_fmt("%s.1", log_raw);
	if (old != NULL)
		rename(log_raw, old);
	free(old);
	unlink(f.pid);
	unlink(qmp_raw);
	/* A boot starts from fresh (sparse) RAM; a restore from the saved. */
	if (!incoming)
		qemu_drop_ram(d);

#define A(...) (args[na] = hb_fmt(__VA_ARGS__), args[na++])
	argv_q[n++] = "qemu-system-x86_64";
	argv_q[n++] = "-name";
	argv_q[n++] = A("bureau-%s", d->name);
	/* RAM is a file beside the disks, so that a save (qemu_state.c)
	 * leaves it where it is and writes only the devices' state; the
	 * machine type is pinned so that a newer QEMU still restores it. */
	argv_q[n++] = "-machine";
	argv_q[n++] = QEMU_MACHINE ",memory-backend=mem";
	argv_q[n++] = "-object";
	argv_q[n++] = A("memory-backend-file,id=mem,size=%ldM,mem-path=%s,"
	                "share=on",
	    d->memory, f.ram);
	argv_q[n++] = "-accel";
	argv_q[n++] = kvm ? "kvm" : "tcg,thread=multi";
	argv_q[n++] = "-cpu";
	argv_q[n++] = kvm ? "host" : "max";
	argv_q[n++] = "-smp";
	argv_q[n++] = A("%d", d->cpus);
	argv_q[n++] = "-m";
	argv_q[n++] = A("%ldM", d->memory);
	/* -kernel, -initrd, -append and -pidfile take their value whole. */
	argv_q[n++] = "-kernel";
	argv_q[n++] = A("%s/%s", d->image, im->kernel);
	argv_q[n++] = "-initrd";
	argv_q[n++] = A("%s/%s", d->image, im->initrd);
	argv_q[n++] = "-append";
	argv_q[n++] = (char *)im->cmdline;
	/* vda is the system disk, vdb the home: the slots fix the order. */
	argv_q[n++] = "-drive";
	argv_q[n++] = A("file=%s,if=none,id=drive-sys,node-name=sys,"
	                "format=qcow2,discard=unmap",
	    f.sys);
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-blk-pci,drive=drive-sys,bus=pcie.0,addr=0x4";
	argv_q[n++] = "-drive";
	argv_q[n++] = A("file=%s,if=none,id=drive-home,node-name=home,"
	                "format=qcow2,discard=unmap",
	    f.home);
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-blk-pci,drive=drive-home,bus=pcie.0,addr=0x5";
	argv_q[n++] = "-netdev";
	argv_q[n++] = A(
	    "user,id=net0,hostfwd=tcp:127.0.0.1:%d-:%d,"
	    "hostfwd=tcp:127.0.0.1:%d-:%d,hostfwd=tcp:127.0.0.1:%d-:%d",
	    d->port, GUEST_API_PORT, d->port + 1, GUEST_EVENTS_PORT,
	    d->port + 2, GUEST_VNC_PORT);
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-net-pci,netdev=net0";
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-rng-pci";
	argv_q[n++] = "-fw_cfg";
	argv_q[n++] = A("name=opt/bureau/token,file=%s", f.tok);
	argv_q[n++] = "-fw_cfg";
	argv_q[n++] = A("name=opt/bureau/vnc-password,file=%s", f.vnc);
	argv_q[n++] = "-chardev";
	argv_q[n++] = A("socket,id=qmp,path=%s,server=on,wait=off", f.qmp);
	argv_q[n++] = "-mon";
	argv_q[n++] = "chardev=qmp,mode=control";
	argv_q[n++] = "-chardev";
	argv_q[n++] = A("file,id=console,path=%s", f.log);
	argv_q[n++] = "-serial";
	argv_q[n++] = "chardev:console";
	argv_q[n++] = "-display";
	argv_q[n++] = "none";
	argv_q[n++] = "-vga";
	argv_q[n++] = "std";
	argv_q[n++] = "-pidfile";
	argv_q[n++] = f.pid;
	argv_q[n++] = "-daemonize";
	if (incoming) {
		/* Paused until the saved state is in (qemu_restore). */
		argv_q[n++] = "-S";
		argv_q[n++] = "-incoming";
		argv_q[n++] = "defer";
	}
	argv_q[n] = NULL;
#undef A
	for (int i = 0; i < na; i++) {
		if (args[i] == NULL) {
			*cause = hb_fmt("out of memory");
			goto out;
		}
	}
	lfd = open(f.qlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		execvp(argv_q[0], argv_q);
		fprintf(stderr, "cannot run '%s': %s\n", argv_q[0],
		    strerror(errno));
		_exit(127);
	}
	if (lfd >= 0)
		close(lfd);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		*cause = hb_fmt("qemu did not start (%s): see '%s'", accel,
		    f.qlog);
		goto out;
	}
	char *ap = desktop_path(d, "accel"), *c2 = NULL;
	if (ap != NULL)
		hb_write_file(ap, accel, strlen(accel), 0644, &c2);
	free(c2);
	free(ap);
	rv = 0;
out:
	for (int i = 0; i < na; i++)
		free(args[i]);
	qemu_files_free(&f);
	free(qmp_raw);
	free(log_raw);
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

/* Run a QMP job (snapshot-save/-load) and wait until it concludes. */
static int
qemu_job(const struct desktop *d, const char *cmd, const char *tag,
    char **cause)
{
	struct qmp *q = NULL;
	char *path = desktop_path(d, "qmp.sock");
	json_t *args = json_pack("{s:s, s:s, s:s, s:[s,s]}", "job-id",
	    "bureau-snap", "tag", tag, "vmstate", "sys", "devices", "sys",
	    "home");
	int rv = -1;

	if (path == NULL || args == NULL) {
		json_decref(args);
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (qmp_open(&q, path, 30000, cause) != 0) {
		json_decref(args);
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
		rv = disks_snapshot(d, tag, restore, cause);
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
	return (rv);
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
};

const struct vm_backend *
vm_backend(void)
{
	return (&vm_qemu);
}
