/*
 * x11/clock.h: the daemon's one monotonic clock. It sits in the lowest
 * layer so that x11/ uses it directly and tools/ and runtime/ through
 * tool_now_ns and tool_now_ms (tools/tool.h): every timeout, deadline and
 * elapsed time in bureaud is read from CLOCK_MONOTONIC here, so a clock
 * step (the guest's clock is stepped after a restore) cannot cut or
 * lengthen any of them.
 */
#ifndef BUREAU_X11_CLOCK_H
#define BUREAU_X11_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Now, in nanoseconds and in milliseconds, since an arbitrary start. */
uint64_t x11_now_ns(void);
double x11_now_ms(void);

/* Monotonic time `ns` (as x11_now_ns counts it) as a timespec, for
 * pthread_cond_timedwait on a condition variable set to CLOCK_MONOTONIC
 * (pthread_condattr_setclock). */
struct timespec x11_mono_timespec(uint64_t ns);

/* Initialise a condition variable whose timed waits use CLOCK_MONOTONIC. */
void x11_mono_cond_init(pthread_cond_t *cv);

#endif
