/*
 * libbureau's bureau_close never hangs: many clients opened, used and
 * closed in a row against a real bureaud, some of them after a request the
 * daemon dropped (nng closes the connection on a request over its
 * --max-request), with the process's fds and threads counted before and
 * after. libnng 1.5.2 leaks the descriptor of a connection it is still
 * making when its socket closes, and its nng_close can wait for good
 * (nanomsg/nng#1543, fixed upstream by #1824 in 1.8.0); bureau_close lets
 * the redial after a dropped connection land before it closes.
 *
 *   BUREAU_URL, BUREAU_TOKEN  a bureaud and its token
 *   SMALL_URL                 a bureaud started with --max-request 65536
 *   test_client_close [CYCLES] (default 10000)
 *
 * Prints "PASS name" / "FAIL name: why"; exits 1 if any check failed.
 * Run it under timeout(1): a hang shows up as that timeout.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int
main(int argc, char **argv)
{
	const char *url = getenv("BUREAU_URL"), *token = getenv("BUREAU_TOKEN");
	const char *small = getenv("SMALL_URL");
	long cycles = argc > 1 ? strtol(argv[1], NULL, 10) : 10000, i;
	long pings = 0, drops = 0, bad = 0;
	int fds0, threads0, fds1, threads1, rv;
	double t0, worst = 0, t, total;
	char why[512], *big;
	size_t bigsz = 100000;

	if (url == NULL || token == NULL || small == NULL || cycles <= 0) {
		fprintf(stderr,
		    "test_client_close: set BUREAU_URL, "
		    "BUREAU_TOKEN and SMALL_URL\n");
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
	 * nng_close returned: the last cycles' may still be open when first
	 * counted (seen once in a loaded CI run as 8 -> 9). A leak stays; give
	 * the reaper up to 5 s. */
	for (int w = 0; w < 100; w++) {
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
	result(fds1 <= fds0 && threads1 <= threads0, "close_no_leak", why);
	free(big);
	return (failures ? 1 : 0);
}
