/*
 * tools/screenshot.c: the screenshot pipeline. Capture (x11), crop, scale
 * and encode (capture/), frame numbers and the cache of the last encoded
 * full screenshot, and the screen geometry the other tools read.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/computer.h"
#include "tools/screenshot.h"
#include "x11/x11.h"

static struct {
	const struct tool_config *cfg;
	struct x11 *x;
	char *cause; /* why there is no display, when x is NULL */
	int sw, sh;  /* screen */
	int dw, dh;  /* screenshots */

	pthread_mutex_t flock; /* frame numbers and the cache */
	uint64_t hash;
	uint64_t frame;
	int have_frame;
	/* The last full screenshot, encoded, one slot per format so the
	 * frame publisher's JPEGs never evict the agent's PNG. */
	struct shot_cache {
		uint8_t *buf;
		size_t len;
		uint64_t hash;
		int quality;
		/* the damage counter at this format's last full capture
		 * (under x11_lock): the frame publisher's JPEGs must not
		 * make the agent's next PNG look unchanged */
		uint64_t dseq;
	} cache[2];
} ss = {
	.flock = PTHREAD_MUTEX_INITIALIZER,
};

int
shot_open(const struct tool_config *cfg, char **cause)
{
	ss.cfg = cfg;
	if (x11_open(cfg->display, &ss.x, cause) != 0) {
		ss.cause = *cause != NULL ? strdup(*cause) : NULL;
		return (-1);
	}
	x11_size(ss.x, &ss.sw, &ss.sh);
	cap_scaled_size(cfg->scale, cfg->scale_w, cfg->scale_h, ss.sw, ss.sh,
	    &ss.dw, &ss.dh);
	return (0);
}

void
shot_close(void)
{
	x11_close(ss.x);
	ss.x = NULL;
	for (int i = 0; i < 2; i++) {
		cap_free(ss.cache[i].buf);
		ss.cache[i].buf = NULL;
	}
	free(ss.cause);
	ss.cause = NULL;
}

struct x11 *
shot_display(const char **cause)
{
	if (ss.x == NULL && cause != NULL)
		*cause = ss.cause != NULL ? ss.cause : "not started";
	return (ss.x);
}

void
shot_sizes(int *sw, int *sh, int *dw, int *dh)
{
	*sw = ss.sw;
	*sh = ss.sh;
	*dw = ss.dw;
	*dh = ss.dh;
}

int
shot_frame(uint64_t *frame)
{
	int have;

	pthread_mutex_lock(&ss.flock);
	*frame = ss.frame;
	have = ss.have_frame;
	pthread_mutex_unlock(&ss.flock);
	return (have);
}

uint64_t
shot_wait_change(uint64_t seen, int timeout_ms)
{
	return (x11_damage_wait(ss.x, seen, timeout_ms));
}

int
shot_take(int zx, int zy, int zw, int zh, int out_w, int out_h,
    enum shot_format format, int quality, struct shot *shot, char **cause)
{
	struct cap_image full, src;
	int zoom = zw > 0, rv = -1;
	uint8_t *scan = NULL;
	struct shot_cache *c;
	uint64_t hash, seq;

	double t0 = tool_now_ms(), t1;

	memset(shot, 0, sizeof *shot);
	x11_lock(ss.x);
	if (x11_grab(ss.x, ss.cfg->draw_cursor, &full, cause) != 0)
		goto unlock;
	if (full.width != ss.sw || full.height != ss.sh) {
		/* The screen was resized: new screenshot size from now on.
		 * (Readers of these ints elsewhere see either the old or the
		 * new size; requests in flight keep the mapping they had.) */
		ss.sw = full.width;
		ss.sh = full.height;
		cap_scaled_size(ss.cfg->scale, ss.cfg->scale_w, ss.cfg->scale_h,
		    ss.sw, ss.sh, &ss.dw, &ss.dh);
		if (!zoom) {
			out_w = ss.dw;
			out_h = ss.dh;
		}
	}
	t1 = tool_now_ms();
	shot->capture_ms = t1 - t0;
	/* Damage since the last capture: the frame is almost surely new, so
	 * hash it while scaling reads it (one read of the frame, not two).
	 * Otherwise hash alone first: an unchanged screen is then served
	 * from the cache without scaling. Either way the frame number comes
	 * from the pixels' hash, never from the damage counter, which can
	 * lag the pixels or miss the drawn-in cursor. */
	c = &ss.cache[format];
	seq = x11_damage_wait(ss.x, c->dseq, 0);
	if (!zoom && ss.have_frame && seq != c->dseq) {
		if ((scan = cap_alloc(CAP_SCANLINE(out_w) * (size_t)out_h)) ==
		    NULL) {
			*cause = strdup("out of memory");
			goto unlock;
		}
		if (cap_scale_scanlines_hash(&full, out_w, out_h, scan, &hash,
		        cause) != 0)
			goto unlock;
	} else
		hash = cap_hash(&full);
	if (!zoom)
		c->dseq = seq;
	t0 = t1;
	t1 = tool_now_ms();
	if (scan != NULL)
		shot->scale_ms = t1 - t0;
	else
		shot->hash_ms = t1 - t0;

	pthread_mutex_lock(&ss.flock);
	if (!ss.have_frame || hash != ss.hash) {
		ss.frame++;
		ss.hash = hash;
		ss.have_frame = 1;
	}
	shot->frame = ss.frame;
	c = &ss.cache[format];
	if (!zoom && c->buf != NULL && c->hash == hash &&
	    c->quality == quality) {
		shot->buf = cap_alloc(c->len);
		if (shot->buf != NULL) {
			cap_free(scan);
			memcpy(shot->buf, c->buf, c->len);
			shot->len = c->len;
			shot->width = out_w;
			shot->height = out_h;
			shot->format = format;
			shot->cached = 1;
			pthread_mutex_unlock(&ss.flock);
			x11_unlock(ss.x);
			return (0);
		}
	}
	pthread_mutex_unlock(&ss.flock);

	/* The frame, scaled or not, straight into the scanlines both
	 * encoders read: a private copy, so encoding runs without the lock,
	 * made row by row with no full-size copy before it. */
	if (scan == NULL) {
		src = full;
		if (zoom && cap_crop(&full, zx, zy, zw, zh, &src, cause) != 0)
			goto unlock;
		if ((scan = cap_alloc(CAP_SCANLINE(out_w) * (size_t)out_h)) ==
		    NULL) {
			*cause = strdup("out of memory");
			goto unlock;
		}
		if (cap_scale_scanlines(&src, out_w, out_h, scan, cause) != 0)
			goto unlock;
		t0 = t1;
		t1 = tool_now_ms();
		shot->scale_ms = t1 - t0;
	}
	x11_unlock(ss.x);
	t0 = tool_now_ms();

	if (format == SHOT_JPEG)
		rv = cap_jpeg_encode_scanlines(scan, out_w, out_h, quality,
		    &shot->buf, &shot->len, cause);
	else
		rv = cap_png_encode_scanlines(scan, out_w, out_h, quality,
		    &shot->buf, &shot->len, cause);
	cap_free(scan);
	if (rv != 0)
		return (-1);
	shot->encode_ms = tool_now_ms() - t0;
	shot->width = out_w;
	shot->height = out_h;
	shot->format = format;
	if (!zoom) {
		pthread_mutex_lock(&ss.flock);
		uint8_t *copy = cap_alloc(shot->len);
		if (copy != NULL) {
			c = &ss.cache[format];
			cap_free(c->buf);
			memcpy(copy, shot->buf, shot->len);
			c->buf = copy;
			c->len = shot->len;
			c->hash = hash;
			c->quality = quality;
		}
		pthread_mutex_unlock(&ss.flock);
	}
	return (0);
unlock:
	x11_unlock(ss.x);
	cap_free(scan);
	return (-1);
}

/* Milliseconds rounded to microseconds: what the clock can tell apart. */
static double
shot_us(double ms)
{
	return (round(ms * 1e3) / 1e3);
}

/* Options every screenshot-bearing reply honours: format and quality. */
static int
shot_format_args(struct tool_call *call, enum shot_format *format, int *quality)
{
	const char *f;
	long long q;

	if (tool_arg_str(call, "format", 0, "png", &f) != 0)
		return (call->code);
	if (strcmp(f, "png") == 0) {
		*format = SHOT_PNG;
		*quality = CAP_PNG_LEVEL;
		return (0);
	}
	if (strcmp(f, "jpeg") != 0)
		return (tool_fail(call, BD_EINVAL,
		    "invalid format '%s': expected png or jpeg", f));
	if (tool_arg_int(call, "quality", 0, 1, 100, 80, &q) != 0)
		return (call->code);
	*format = SHOT_JPEG;
	*quality = (int)q;
	return (0);
}

int
shot_reply(struct tool_call *call, int zx, int zy, int zw, int zh, int out_w,
    int out_h)
{
	struct shot shot;
	enum shot_format format = SHOT_PNG;
	int quality = CAP_PNG_LEVEL, rv;
	char *cause = NULL;

	if (shot_format_args(call, &format, &quality) != 0)
		return (call->code);
	if (shot_take(zx, zy, zw, zh, out_w, out_h, format, quality, &shot,
	        &cause) != 0) {
		rv = tool_fail(call, BD_EIO, "screenshot failed: %s",
		    cause != NULL ? cause : "unknown error");
		free(cause);
		return (rv);
	}
	tool_set_image(call, format == SHOT_PNG ? "image/png" : "image/jpeg",
	    shot.buf, shot.len, shot.width, shot.height, shot.frame);
	tool_set_json(call, "timing",
	    json_pack("{s:f, s:f, s:f, s:f, s:b}", "capture_ms",
	        shot_us(shot.capture_ms), "hash_ms", shot_us(shot.hash_ms),
	        "scale_ms", shot_us(shot.scale_ms), "encode_ms",
	        shot_us(shot.encode_ms), "cached", shot.cached));
	return (0);
}

int
tool_computer_geometry(int *sw, int *sh, int *dw, int *dh, const char **display,
    const char **cause)
{
	if (ss.x == NULL) {
		*cause = ss.cause != NULL ? ss.cause : "display not open";
		return (-1);
	}
	*sw = ss.sw;
	*sh = ss.sh;
	*dw = ss.dw;
	*dh = ss.dh;
	*display = x11_name(ss.x);
	return (0);
}
