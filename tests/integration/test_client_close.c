/*
 * libbureau's bureau_close never hangs: many clients opened, used and
 * closed in a row against a real bureaud, some of them after a request the
 * daemon dropped (nng closes the connection on a request over its
 * --max-request), with the process's fds and threads counted before and
 * after. Then clients closed just as a late reply arrives: a call times
 * out on a stopped daemon, the daemon is continued and sends its reply,
 * the client closes. Both are the cases where Debian's libnng 1.5.2
 * leaked a descriptor or hung in nng_close for good (nanomsg/nng#1543,
 * #1636); the nng built from third_party/nng must do neither, with no
 * wait in bureau_close.
 *
 *   BUREAU_URL, BUREAU_TOKEN  a bureaud and its token
 *   SMALL_URL                 a bureaud started with --max-request 65536
 *   BUREAUD_PID               the first bureaud's pid (stopped, continued)
 *   test_client_close [CYCLES [LATE_CYCLES]] (default 10000 and 20)
 *
 * Prints "PASS name" / "FAIL name: why"; exits 1 if any check failed.
 * Run it under timeout(1): a hang shows up as that timeout.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/include/bureau.h"

static int failures;

static void
result(int ok, const char *name, const char *why)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ",
	    ok ? "" : why);
	fflush(stdout);
	if (!ok)
		failures++;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

/* Entries of a /proc/self directory (open fds, threads), read from the
 * kernel rather than from the library. */
static int
count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return (-1);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return (n);
}

/* Each socket this process holds, its family and type (from the socket
 * itself): what a leak leaked. */
static void
print_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[300], t[300];
		int fd = atoi(e->d_name), dom = -1, ty = -1;
		socklen_t l = sizeof dom;
		ssize_t n;

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		if ((n = readlink(p, t, sizeof t - 1)) <= 0)
			continue;
		t[n] = '\0';
		if (strncmp(t, "socket:", 7) != 0)
			continue;
		getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
		l = sizeof ty;
		getsockopt(fd, SOL_SOCKET, SO_TYPE, &ty, &l);
		printf("# fd %d: %s, family %d (inet %d, unix %d, netlink %d), "
		       "type %d\n",
		    fd, t, dom, AF_INET, AF_UNIX, AF_NETLINK, ty);
	}
	if (d != NULL)
		closedir(d);
}

/* SIGSTOP is not synchronous: wait until every thread of pid is in T. */
static int
stopped(pid_t pid)
{
	char path[300], line[512], *p;

	for (int i = 0; i < 300; i++) {
		DIR *d;
		struct dirent *e;
		int all = 1;

		snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
		if ((d = opendir(path)) == NULL)
			return (0);
		while ((e = readdir(d)) != NULL) {
			FILE *f;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "/proc/%d/task/%s/stat",
			    (int)pid, e->d_name);
			if ((f = fopen(path, "r")) == NULL)
				continue;
			if (fgets(line, sizeof line, f) == NULL ||
			    (p = strrchr(line, ')')) == NULL || p[1] == 0 ||
			    p[2] != 'T')
				all = 0;
			fclose(f);
		}
		closedir(d);
		if (all)
			return (1);
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	return (0);
}

static void *
close_thread(void *c)
{
	bureau_close(c);
	return (NULL);
}

/* Bytes this process has read from descriptors so far (nng's threads
 * included), from the kernel's count in /proc/self/io. */
static long long
rchar(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	long long n = -1;

	if (f == NULL)
		return (-1);
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "rchar: %lld", &n) == 1)
			break;
	fclose(f);
	return (n);
}

/*
 * n clients, each closed while the reply to a call that timed out is
 * arriving: a file read of 16 MiB (a 22 MB reply) asked of a stopped
 * daemon, which is continued; once this process has read 1 MB more, the
 * reply is mid-transfer and the client closes. A close that does not
 * return within 30 s has hung.
 */
static void
late_reply_cycles(const char *url, const char *token, pid_t pid, long n)
{
	long i, late = 0, bad = 0, midway = 0;
	double t0, t, worst = 0;
	char why[256], path[] = "/tmp/bureau-late-reply.XXXXXX", req[256];
	size_t size = 16 << 20;
	int fd;

	if ((fd = mkstemp(path)) < 0 || ftruncate(fd, (off_t)size) != 0) {
		result(0, "close_after_late_reply", "cannot make the file");
		return;
	}
	close(fd);
	snprintf(req, sizeof req,
	    "{\"tool\":\"file\",\"action\":\"read\",\"path\":\"%s\","
	    "\"length\":%zu}",
	    path, size);
	for (i = 0; i < n; i++) {
		bureau_client *c = NULL;
		char *reply = NULL;
		pthread_t th;
		struct timespec dl;
		long long r0;
		int rv;

		if (bureau_connect(url, token, 10, &c) != 0 ||
		    bureau_ping(c) != 0) {
			if (bad++ < 5)
				fprintf(stderr, "# late cycle %ld: %s\n", i,
				    bureau_client_error(c));
			bureau_close(c);
			continue;
		}
		bureau_set_timeout(c, 0.3);
		if (kill(pid, SIGSTOP) != 0 || !stopped(pid)) {
			kill(pid, SIGCONT);
			snprintf(why, sizeof why, "SIGSTOP %d: %s", (int)pid,
			    strerror(errno));
			result(0, "close_after_late_reply", why);
			bureau_close(c);
			break;
		}
		rv = bureau_call(c, req, &reply);
		bureau_free(reply);
		r0 = rchar();
		kill(pid, SIGCONT);
		if (rv == BUREAU_ENOREPLY)
			late++;
		else if (bad++ < 5)
			fprintf(stderr, "# late cycle %ld: read gave %s\n", i,
			    bureau_error_name(rv));
		/* up to 10 s for the reply to be on its way */
		for (int w = 0; w < 10000 && rchar() < r0 + 1000000; w++)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 },
			    NULL);
		if (rchar() >= r0 + 1000000)
			midway++;
		t0 = now();
		if (pthread_create(&th, NULL, close_thread, c) != 0) {
			result(0, "close_after_late_reply", "pthread_create");
			break;
		}
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 30;
		if (pthread_timedjoin_np(th, NULL, &dl) != 0) {
			snprintf(why, sizeof why,
			    "bureau_close hung (over 30 s) in cycle %ld of %ld",
			    i + 1, n);
			unlink(path);
			result(0, "close_after_late_reply", why);
			_exit(1); /* the stuck close cannot be undone */
		}
		if ((t = now() - t0) > worst)
			worst = t;
	}
	unlink(path);
	printf("# %ld late-reply cycles: %ld timed out, %ld closed mid-reply, "
	       "slowest close %.3f s\n",
	    n, late, midway, worst);
	snprintf(why, sizeof why,
	    "%ld of %ld cycles failed, %ld timed out, %ld closed mid-reply",
	    bad, n, late, midway);
	result(bad == 0 && late == n && midway == n, "close_after_late_reply",
	    why);
}

int
main(int argc, char **argv)
{
	const char *url = getenv("BUREAU_URL"), *token = getenv("BUREAU_TOKEN");
	const char *small = getenv("SMALL_URL");
	const char *pid = getenv("BUREAUD_PID");
	long cycles = argc > 1 ? strtol(argv[1], NULL, 10) : 10000, i;
	long late = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
	long pings = 0, drops = 0, bad = 0;
	int fds0, threads0, fds1, threads1, rv;
	double t0, worst = 0, t, total;
	char why[512], *big;
	size_t bigsz = 100000;

	if (url == NULL || token == NULL || small == NULL || pid == NULL ||
	    cycles <= 0 || late < 0) {
		fprintf(stderr,
		    "test_client_close: set BUREAU_URL, "
		    "BUREAU_TOKEN, SMALL_URL and BUREAUD_PID\n");
		return (2);
	}
	/* 100 kB: over the small daemon's 64 KiB, under the 64 MiB that the
	 * client assumes when `system info` is refused (wrong token), so it
	 * is sent and nng on the daemon's side drops it with the pipe. */
	if ((big = malloc(bigsz + 64)) == NULL)
		return (2);
	rv = snprintf(big, 64, "{\"tool\":\"system\",\"action\":\"");
	memset(big + rv, 'x', bigsz);
	strcpy(big + rv + bigsz, "\"}");

	/* nng starts its thread pools on the first socket: count after. */
	for (i = 0; i < 20; i++) {
		bureau_client *c;

		if (bureau_connect(url, token, 10, &c) == 0) {
			(void)bureau_ping(c);
			bureau_close(c);
		}
	}
	fds0 = count_dir("/proc/self/fd");
	threads0 = count_dir("/proc/self/task");

	total = now();
	for (i = 0; i < cycles; i++) {
		bureau_client *c = NULL;
		int drop = i % 10 == 9;

		t0 = now();
		rv = bureau_connect(drop ? small : url,
		    drop ? "wrong-token" : token, 10, &c);
		if (rv == 0) {
			if (drop) {
				char *reply = NULL;

				rv = bureau_call(c, big, &reply);
				if (rv == BUREAU_EIO && reply == NULL)
					drops++;
				else if (bad++ < 5)
					fprintf(stderr,
					    "# cycle %ld: dropped send gave "
					    "%s: "
					    "%s\n",
					    i, bureau_error_name(rv),
					    bureau_client_error(c));
				bureau_free(reply);
			} else if ((rv = bureau_ping(c)) == 0)
				pings++;
			else if (bad++ < 5)
				fprintf(stderr,
				    "# cycle %ld: ping gave %s: %s\n", i,
				    bureau_error_name(rv),
				    bureau_client_error(c));
		} else if (bad++ < 5)
			fprintf(stderr, "# cycle %ld: connect: %s\n", i,
			    bureau_client_error(NULL));
		bureau_close(c);
		if ((t = now() - t0) > worst)
			worst = t;
	}
	total = now() - total;
	/* nng closes a pipe's descriptor on its own reaper thread, after
	 * nng_close returned, and a redial's address lookup (getaddrinfo,
	 * whose AI_ADDRCONFIG opens a netlink socket) may still run on its
	 * resolver thread: the last cycles' may still be open when first
	 * counted (seen once in a loaded CI run as 8 -> 9, and once more
	 * after 5 s). A leak stays; give them up to 30 s (the loop ends as
	 * soon as the counts are back), and a leak is shown socket by
	 * socket. */
	for (int w = 0; w < 600; w++) {
		fds1 = count_dir("/proc/self/fd");
		threads1 = count_dir("/proc/self/task");
		if (fds1 <= fds0 && threads1 <= threads0)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
	}
	printf("# %ld cycles in %.1f s (slowest %.3f s): %ld pings, %ld "
	       "dropped sends; fds %d -> %d, threads %d -> %d\n",
	    cycles, total, worst, pings, drops, fds0, fds1, threads0, threads1);

	snprintf(why, sizeof why, "%ld of %ld cycles failed", bad, cycles);
	result(bad == 0 && pings + drops == cycles, "close_cycles", why);
	snprintf(why, sizeof why, "%ld dropped sends seen, %ld expected", drops,
	    cycles / 10);
	result(drops == cycles / 10, "close_dropped_sends", why);
	/* A cycle is a connect, one round trip and a close on loopback; 10 s
	 * means something waited for a timeout or hung. */
	snprintf(why, sizeof why, "slowest cycle %.1f s", worst);
	result(worst < 10, "close_no_stall", why);
	snprintf(why, sizeof why, "fds %d -> %d, threads %d -> %d", fds0, fds1,
	    threads0, threads1);
	/* fewer is fine: a connection of the warm-up may still have been
	 * closing when they were counted */
	if (fds1 > fds0)
		print_sockets();
	result(fds1 <= fds0 && threads1 <= threads0, "close_no_leak", why);
	free(big);
	if (late > 0)
		late_reply_cycles(url, token, (pid_t)atol(pid), late);
	return (failures ? 1 : 0);
}
