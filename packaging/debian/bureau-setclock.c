/*
 * bureau-setclock TIME_NS MONO_NS: step the clock to TIME_NS (unix time in
 * ns) plus the CLOCK_MONOTONIC time passed since MONO_NS. bureaud runs it
 * for `system set_clock` when it lacks CAP_SYS_TIME (it runs as the
 * desktop user): installed setuid root, executable by the group bureaud
 * only (bureaud.postinst). It takes nothing but the two numbers, reads no
 * environment and sets nothing but the time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int
num(const char *s, long long min, long long max, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return (
	    errno != 0 || end == s || *end != '\0' || *out < min || *out > max ?
	        -1 :
	        0);
}

int
main(int argc, char **argv)
{
	struct timespec now, ts;
	long long t, mono, passed, target;

	if (argc != 3 ||
	    num(argv[1], 1000000000000000000LL, 9000000000000000000LL, &t) !=
	        0 ||
	    num(argv[2], 0, 9000000000000000000LL, &mono) != 0) {
		fprintf(stderr, "usage: bureau-setclock TIME_NS MONO_NS\n");
		return (2);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	passed = (long long)now.tv_sec * 1000000000LL + now.tv_nsec - mono;
	/* The request came in a moment ago, never in the future. */
	if (passed < 0 || passed > 60000000000LL) {
		fprintf(stderr,
		    "bureau-setclock: MONO_NS is not a moment ago\n");
		return (2);
	}
	target = t + passed;
	ts.tv_sec = (time_t)(target / 1000000000LL);
	ts.tv_nsec = (long)(target % 1000000000LL);
	if (clock_settime(CLOCK_REALTIME, &ts) != 0) {
		fprintf(stderr, "bureau-setclock: %s\n", strerror(errno));
		return (1);
	}
	return (0);
}
