/*
 * runtime/frames.c: the frame publisher (see frames.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/frames.h"
#include "tools/screenshot.h"

static struct {
	const struct tool_config *cfg;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
} fr = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static void
bd_frames_sleep_ms(int ms)
{
	struct timespec ts;
	uint64_t ns;

	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000u;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&fr.lock);
	if (!fr.stopping)
		pthread_cond_timedwait(&fr.cond, &fr.lock, &ts);
	pthread_mutex_unlock(&fr.lock);
}

static int
bd_frames_stopping(void)
{
	int s;

	pthread_mutex_lock(&fr.lock);
	s = fr.stopping;
	pthread_mutex_unlock(&fr.lock);
	return (s);
}

static void *
bd_frames_main(void *arg)
{
	uint64_t seen = 0;

	(void)arg;
	while (!bd_frames_stopping()) {
		uint64_t seq = shot_wait_change(seen, 500);
		struct shot shot;
		char *cause = NULL, *hdr;
		struct timespec now;
		int sw, sh, dw, dh;

		if (seq == seen)
			continue;
		seen = seq;
		shot_sizes(&sw, &sh, &dw, &dh);
		if (shot_take(0, 0, 0, 0, dw, dh, SHOT_JPEG, 70, &shot,
		        &cause) != 0) {
			free(cause);
			bd_frames_sleep_ms(fr.cfg->frame_interval_ms);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &now);
		if (asprintf(&hdr,
		        "{\"frame\":%llu,\"width\":%d,\"height\":%d,"
		        "\"mime_type\":\"image/jpeg\",\"time\":%lld.%03ld}",
		        (unsigned long long)shot.frame, shot.width, shot.height,
		        (long long)now.tv_sec, now.tv_nsec / 1000000) >= 0) {
			fr.cfg->publish("frame", hdr, shot.buf, shot.len);
			free(hdr);
		}
		cap_free(shot.buf);
		bd_frames_sleep_ms(fr.cfg->frame_interval_ms);
	}
	return (NULL);
}

void
bd_frames_start(const struct tool_config *cfg)
{
	fr.cfg = cfg;
	if (shot_display(NULL) != NULL && cfg->publish != NULL &&
	    cfg->frame_interval_ms > 0 &&
	    pthread_create(&fr.thread, NULL, bd_frames_main, NULL) == 0)
		fr.started = 1;
}

void
bd_frames_stop(void)
{
	if (!fr.started)
		return;
	pthread_mutex_lock(&fr.lock);
	fr.stopping = 1;
	pthread_cond_broadcast(&fr.cond);
	pthread_mutex_unlock(&fr.lock);
	pthread_join(fr.thread, NULL);
	fr.started = 0;
}
