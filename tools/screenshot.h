/*
 * tools/screenshot.h: the screenshot pipeline shared by the computer tool,
 * the window and system tools and the frame publisher (runtime/frames.c):
 * the display, the screen and screenshot sizes, capture -> scale -> encode,
 * frame numbers and the cache of the last encoded screenshot.
 *
 * Thread-safe: handlers on several workers and the publisher call these at
 * once. The display is serialised by x11_lock, frame numbers and the cache
 * by a lock of their own.
 */
#ifndef BUREAU_TOOLS_SCREENSHOT_H
#define BUREAU_TOOLS_SCREENSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "tools/tool.h"

struct x11;

enum shot_format { SHOT_PNG, SHOT_JPEG };

/* An encoded screenshot. */
struct shot {
	uint8_t *buf; /* the caller frees it with cap_free */
	size_t len;
	int width, height;
	uint64_t frame;
	enum shot_format format;
	/* where the time went, for the reply's "timing" and make bench */
	double capture_ms, hash_ms, scale_ms, encode_ms;
	int cached;
};

/* Open the display named by cfg (once, at start-up); -1 and *cause (the
 * caller frees) when there is none: later calls then fail with that
 * cause. */
int shot_open(const struct tool_config *cfg, char **cause);
void shot_close(void);

/* The open display, or NULL; *cause then says why (borrowed). */
struct x11 *shot_display(const char **cause);

/* Screen and screenshot sizes (either side of a resize). */
void shot_sizes(int *sw, int *sh, int *dw, int *dh);

/* The latest screenshot's frame number; 0 when none was taken yet. */
int shot_frame(uint64_t *frame);

/*
 * Capture, crop (zoom: the screen-space rectangle zx, zy, zw, zh when zw > 0,
 * else the whole screen), scale to out_w x out_h and encode as format
 * (quality: zlib level for PNG, 1..100 for JPEG). The encoded full
 * screenshot is cached by pixel hash: an unchanged screen costs a capture
 * and a hash, no encode.
 */
int shot_take(int zx, int zy, int zw, int zh, int out_w, int out_h,
    enum shot_format format, int quality, struct shot *shot, char **cause);

/* Wait up to timeout_ms for screen damage after sequence number seen;
 * returns the current sequence number (seen when nothing changed). */
uint64_t shot_wait_change(uint64_t seen, int timeout_ms);

/*
 * Reply with a screenshot: the request's "format" (png|jpeg) and "quality"
 * fields, "image" and "timing" in the reply. Arguments as shot_take's.
 */
int shot_reply(struct tool_call *call, int zx, int zy, int zw, int zh,
    int out_w, int out_h);

#endif
