/*
 * tools/shutdown.c: the daemon's shutdown as the tools see it. The runtime
 * calls tool_shutdown() on SIGTERM before it joins the workers and before
 * any tool's fini, so a handler in a long wait (computer wait, a shell
 * command) returns within a few hundred ms instead of holding up the exit
 * or running on after its tool was torn down.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tools/tool.h"
#include "x11/clock.h"

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	/* on CLOCK_MONOTONIC: a clock step cannot lengthen or cut a wait */
	pthread_cond_t cv;
	atomic_int stopping;
} ts = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static void
tool_shutdown_setup(void)
{
	x11_mono_cond_init(&ts.cv);
}

void
tool_shutdown(void)
{
	pthread_once(&ts.once, tool_shutdown_setup);
	pthread_mutex_lock(&ts.lock);
	atomic_store(&ts.stopping, 1);
	pthread_cond_broadcast(&ts.cv);
	pthread_mutex_unlock(&ts.lock);
}

int
tool_stopping(void)
{
	return (atomic_load(&ts.stopping));
}

int
tool_sleep(double seconds)
{
	struct timespec end;
	int stopped;

	pthread_once(&ts.once, tool_shutdown_setup);
	if (!(seconds > 0))
		seconds = 0;
	end = x11_mono_timespec(x11_now_ns() + (uint64_t)(seconds * 1e9));
	pthread_mutex_lock(&ts.lock);
	while (!atomic_load(&ts.stopping) &&
	    pthread_cond_timedwait(&ts.cv, &ts.lock, &end) == 0)
		; /* a spurious wake-up: wait again until the end */
	stopped = atomic_load(&ts.stopping);
	pthread_mutex_unlock(&ts.lock);
	return (stopped ? -1 : 0);
}

int
tool_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m,
    const struct timespec *deadline)
{
	struct timespec slice;
	int rv;

	if (atomic_load(&ts.stopping))
		return (ECANCELED);
	/* The tool's condition variable is not signalled at shutdown: wake
	 * every 200 ms to look. The caller re-checks its condition after
	 * any return of 0, so a slice's end is one more wake-up to it. */
	clock_gettime(CLOCK_REALTIME, &slice);
	slice.tv_nsec += 200000000L;
	if (slice.tv_nsec >= 1000000000L) {
		slice.tv_sec++;
		slice.tv_nsec -= 1000000000L;
	}
	if (slice.tv_sec > deadline->tv_sec ||
	    (slice.tv_sec == deadline->tv_sec &&
	        slice.tv_nsec >= deadline->tv_nsec))
		return (pthread_cond_timedwait(cv, m, deadline));
	rv = pthread_cond_timedwait(cv, m, &slice);
	if (atomic_load(&ts.stopping))
		return (ECANCELED);
	return (rv == ETIMEDOUT ? 0 : rv);
}
