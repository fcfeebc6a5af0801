/*
 * host-bridge/vm/stats.c: a desktop VM's resource figures as the host sees
 * them (the QEMU backend's `stats`), and CPU % from two samples, for
 * `bureau ls`, `status` and Mission Control alike.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/vm.h"

/* utime + stime of pid in ns, or -1. */
static long long
stats_cpu_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	long hz = sysconf(_SC_CLK_TCK);
	int fd;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (hz <= 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return (-1);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields count
	 * from the last ')'. utime and stime are fields 14 and 15. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2,
	        "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	        &st) != 2)
		return (-1);
	return ((long long)((ut + st) * (1000000000ULL / (unsigned long)hz)));
}

/*
 * pid's proportional set size in bytes (PSS: each page it maps divided by
 * the number of processes that map it, so clones that share pages are
 * not each charged all of them), from /proc/PID/smaps_rollup; VmRSS where
 * that cannot be read (another user's process); -1 when neither.
 */
static long long
stats_pss(pid_t pid)
{
	char path[64], *s, *p;
	long long kb = -1;

	snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
	if ((s = hb_read_file(path)) != NULL) {
		if ((p = strstr(s, "\nPss:")) != NULL)
			kb = strtoll(p + 5, NULL, 10);
		free(s);
		if (kb >= 0)
			return (kb * 1024);
	}
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((s = hb_read_file(path)) == NULL)
		return (-1);
	if ((p = strstr(s, "\nVmRSS:")) != NULL)
		kb = strtoll(p + 7, NULL, 10);
	free(s);
	return (kb < 0 ? -1 : kb * 1024);
}

/* The PSS of pid and of its descendants (the network keeper's pasta,
 * passt and namespace holder), depth-limited. */
static long long
stats_tree_pss(pid_t pid, int depth)
{
	char path[80], *s, *p, *end;
	long long sum = stats_pss(pid), v;

	if (sum < 0)
		return (0);
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if (depth <= 0 || (s = hb_read_file(path)) == NULL)
		return (sum);
	for (p = s; *p != '\0'; p = end) {
		long c = strtol(p, &end, 10);
		if (end == p)
			break;
		if (c > 0 && (v = stats_tree_pss((pid_t)c, depth - 1)) > 0)
			sum += v;
	}
	free(s);
	return (sum);
}

/* The disk layers of d's directory that it made (forks of it left them
 * under its disks), not those it shares from its parent (layers.shared):
 * their bytes. */
static long long
stats_own_layers(const struct desktop *d)
{
	char *sp = desktop_path(d, "layers.shared");
	char *shared = sp ? hb_read_file(sp) : NULL;
	DIR *dir = opendir(d->dir);
	struct dirent *e;
	long long sum = 0;

	while (dir != NULL && (e = readdir(dir)) != NULL) {
		size_t n = strlen(e->d_name);
		const char *at = shared;
		int theirs = 0;

		if (!qemu_layer_name(e->d_name))
			continue;
		while (at != NULL && (at = strstr(at, e->d_name)) != NULL) {
			if ((at == shared || at[-1] == '\n') &&
			    (at[n] == '\n' || at[n] == '\0')) {
				theirs = 1;
				break;
			}
			at += n;
		}
		if (!theirs)
			sum += desktop_file_bytes(d, e->d_name);
	}
	if (dir != NULL)
		closedir(dir);
	free(shared);
	free(sp);
	return (sum);
}

int
qemu_stats(const struct desktop *d, struct vm_stats *st)
{
	return (vm_stats_of(d, qemu_pid(d), st));
}

int
vm_stats_of(const struct desktop *d, pid_t pid, struct vm_stats *st)
{
	pid_t net;

	st->pid = pid;
	st->cpu_ns = st->pid ? stats_cpu_ns(st->pid) : -1;
	st->memory_bytes = st->pid ? stats_pss(st->pid) : -1;
	/* what the desktop's network costs too: the keeper and its
	 * children */
	if (st->memory_bytes >= 0 && (net = vm_net_keeper_pid(d)) > 0 &&
	    hb_pid_running(net))
		st->memory_bytes += stats_tree_pss(net, 3);
	/* the disks, its own RAM file and its saved state (not the warm
	 * RAM and state a clone links to, ram.base and state.base: its
	 * image's, shared by all its clones), the disk layers it made (not
	 * those a fork shares with its parent) */
	st->disk_bytes = stats_own_layers(d);
	for (int i = 0; i < 5; i++) {
		static const char *const files[] = { "system.qcow2",
			"home.qcow2", "ram", "state", "lv.save" };
		long long b = desktop_file_bytes(d, files[i]);
		if (b > 0)
			st->disk_bytes += b;
	}
	return (0);
}

#define STATS_SLOTS 256

double
vm_cpu_percent(const char *name, pid_t pid, long long cpu_ns)
{
	static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		char name[65]; /* store_valid_name: at most 64 */
		pid_t pid;
		long long cpu_ns, at_ms;
	} last[STATS_SLOTS];
	long long now = hb_now_ms();
	double pct = -1;
	int slot = -1, i;

	if (pid == 0 || cpu_ns < 0)
		return (-1);
	pthread_mutex_lock(&lk);
	for (i = 0; i < STATS_SLOTS && slot < 0; i++)
		if (strcmp(last[i].name, name) == 0)
			slot = i;
	if (slot >= 0 && last[slot].pid == pid && cpu_ns >= last[slot].cpu_ns) {
		if (now - last[slot].at_ms < 200) {
			/* too close to the previous sample: keep it */
			pthread_mutex_unlock(&lk);
			return (-1);
		}
		pct = (double)(cpu_ns - last[slot].cpu_ns) / 1e6 /
		    (double)(now - last[slot].at_ms) * 100.0;
	}
	if (slot < 0) {
		/* a free slot, else the oldest sample */
		slot = 0;
		for (i = 0; i < STATS_SLOTS; i++) {
			if (last[i].name[0] == '\0') {
				slot = i;
				break;
			}
			if (last[i].at_ms < last[slot].at_ms)
				slot = i;
		}
		snprintf(last[slot].name, sizeof last[slot].name, "%s", name);
	}
	last[slot].pid = pid;
	last[slot].cpu_ns = cpu_ns;
	last[slot].at_ms = now;
	pthread_mutex_unlock(&lk);
	return (pct);
}

double
vm_cpu_percent_now(const struct desktop *d, struct vm_stats *st)
{
	const struct vm_backend *vm = vm_backend_for(d);
	struct vm_stats s0;
	long long t0, dt;
	double pct;

	if (vm->stats(d, st) != 0 || st->pid == 0)
		return (-1);
	if ((pct = vm_cpu_percent(d->name, st->pid, st->cpu_ns)) >= 0)
		return (pct);
	/* No usable sample (none yet, or another caller's too recent):
	 * measure over 200 ms here, then leave the sample for the next. */
	s0 = *st;
	t0 = hb_now_ms();
	usleep(200000);
	dt = hb_now_ms() - t0;
	if (vm->stats(d, st) != 0 || st->pid != s0.pid || s0.cpu_ns < 0 ||
	    st->cpu_ns < s0.cpu_ns || dt <= 0)
		return (-1);
	vm_cpu_percent(d->name, st->pid, st->cpu_ns);
	return ((double)(st->cpu_ns - s0.cpu_ns) / 1e6 / (double)dt * 100.0);
}
