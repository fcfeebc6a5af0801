#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/log.h"

enum bd_log_level bd_log_level = BD_LOG_INFO;

static const char *const bd_log_names[] = { "error", "warn", "info", "debug" };

int
bd_log_parse(const char *s, enum bd_log_level *out)
{
	for (size_t i = 0; i < sizeof bd_log_names / sizeof *bd_log_names; i++)
		if (strcmp(s, bd_log_names[i]) == 0) {
			*out = (enum bd_log_level)i;
			return (0);
		}
	return (-1);
}

void
bd_log(enum bd_log_level level, const char *fmt, ...)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;

	if (level > bd_log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
	pthread_mutex_lock(&lock);
	fprintf(stderr, "bureaud %s.%03ld %s: ", stamp, ts.tv_nsec / 1000000,
	    bd_log_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&lock);
}
