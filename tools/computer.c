/*
 * tools/computer.c: the computer tool. Anthropic computer-use actions
 * ("action" key) and OpenAI computer-use actions ("type" key) on one tool:
 * screenshots (scaled, framed, cached), pointer, keyboard, waits.
 *
 * Coordinates arrive in screenshot space and are mapped to the screen with
 * cap_map. After an input action the reply carries a screenshot taken once
 * XDamage has been quiet for settle_ms (never a fixed sleep).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/computer.h"
#include "x11/x11.h"

#define CM_TEXT_MAX     (64u << 10) /* bytes of text one `type` may carry */
#define CM_DURATION_MAX 100.0       /* seconds, wait and hold_key */
#define CM_SCROLL_MAX   100         /* wheel clicks in one scroll */
#define CM_PATH_MAX     1000        /* points in an OpenAI drag path */
#define CM_DRAG_STEPS   8           /* motion events between drag ends */

enum cm_format { CM_PNG, CM_JPEG };

/* An encoded screenshot. */
struct cm_shot {
	uint8_t *buf; /* malloc'd, the caller frees */
	size_t len;
	int width, height;
	uint64_t frame;
	enum cm_format format;
	/* where the time went, for the reply's "timing" and make bench */
	double capture_ms, scale_ms, encode_ms;
	int cached;
};

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
	struct cm_cache {
		uint8_t *buf;
		size_t len;
		uint64_t hash;
		int quality;
	} cache[2];

	/* frame publisher */
	pthread_t pub;
	int pub_started;
	pthread_mutex_t plock;
	pthread_cond_t pcond;
	int stopping;
} cm = {
	.flock = PTHREAD_MUTEX_INITIALIZER,
	.plock = PTHREAD_MUTEX_INITIALIZER,
	.pcond = PTHREAD_COND_INITIALIZER,
};

/* --- screenshots --------------------------------------------------------- */

/*
 * Capture, crop (zoom: a screen-space rectangle, else the whole screen),
 * scale to out_w x out_h and encode. The encoded full screenshot is cached
 * by pixel hash: an unchanged screen costs a capture and a hash, no encode.
 */
static int
cm_shoot(int zx, int zy, int zw, int zh, int out_w, int out_h,
    enum cm_format format, int quality, struct cm_shot *shot, char **cause)
{
	struct cap_image full, src, dst = { 0 };
	int zoom = zw > 0, rv = -1;
	struct cm_cache *c;
	uint64_t hash;

	double t0 = tool_now_ms(), t1;

	memset(shot, 0, sizeof *shot);
	x11_lock(cm.x);
	if (x11_grab(cm.x, cm.cfg->draw_cursor, &full, cause) != 0)
		goto unlock;
	if (full.width != cm.sw || full.height != cm.sh) {
		/* The screen was resized: new screenshot size from now on.
		 * (Readers of these ints elsewhere see either the old or the
		 * new size; requests in flight keep the mapping they had.) */
		cm.sw = full.width;
		cm.sh = full.height;
		cap_scaled_size(cm.cfg->scale, cm.cfg->scale_w, cm.cfg->scale_h,
		    cm.sw, cm.sh, &cm.dw, &cm.dh);
		if (!zoom) {
			out_w = cm.dw;
			out_h = cm.dh;
		}
	}
	hash = cap_hash(&full);
	t1 = tool_now_ms();
	shot->capture_ms = t1 - t0;

	pthread_mutex_lock(&cm.flock);
	if (!cm.have_frame || hash != cm.hash) {
		cm.frame++;
		cm.hash = hash;
		cm.have_frame = 1;
	}
	shot->frame = cm.frame;
	c = &cm.cache[format];
	if (!zoom && c->buf != NULL && c->hash == hash &&
	    c->quality == quality) {
		shot->buf = malloc(c->len);
		if (shot->buf != NULL) {
			memcpy(shot->buf, c->buf, c->len);
			shot->len = c->len;
			shot->width = out_w;
			shot->height = out_h;
			shot->format = format;
			shot->cached = 1;
			pthread_mutex_unlock(&cm.flock);
			x11_unlock(cm.x);
			return (0);
		}
	}
	pthread_mutex_unlock(&cm.flock);

	src = full;
	if (zoom && cap_crop(&full, zx, zy, zw, zh, &src, cause) != 0)
		goto unlock;
	/* A private copy (scaled or not) so encoding runs without the lock. */
	dst.width = out_w;
	dst.height = out_h;
	dst.stride = out_w * 4;
	if ((dst.data = malloc((size_t)dst.stride * (size_t)out_h)) == NULL) {
		*cause = strdup("out of memory");
		goto unlock;
	}
	if (cap_scale(&src, &dst, cause) != 0)
		goto unlock;
	x11_unlock(cm.x);
	t0 = tool_now_ms();
	shot->scale_ms = t0 - t1;

	if (format == CM_JPEG)
		rv = cap_jpeg_encode(&dst, quality, &shot->buf, &shot->len,
		    cause);
	else
		rv = cap_png_encode(&dst, quality, &shot->buf, &shot->len,
		    cause);
	free(dst.data);
	if (rv != 0)
		return (-1);
	shot->encode_ms = tool_now_ms() - t0;
	shot->width = out_w;
	shot->height = out_h;
	shot->format = format;
	if (!zoom) {
		pthread_mutex_lock(&cm.flock);
		uint8_t *copy = malloc(shot->len);
		if (copy != NULL) {
			c = &cm.cache[format];
			free(c->buf);
			memcpy(copy, shot->buf, shot->len);
			c->buf = copy;
			c->len = shot->len;
			c->hash = hash;
			c->quality = quality;
		}
		pthread_mutex_unlock(&cm.flock);
	}
	return (0);
unlock:
	x11_unlock(cm.x);
	free(dst.data);
	return (-1);
}

/* Options every screenshot-bearing reply honours: format and quality. */
static int
cm_format_args(struct tool_call *call, enum cm_format *format, int *quality)
{
	const char *f;
	long long q;

	if (tool_arg_str(call, "format", 0, "png", &f) != 0)
		return (call->code);
	if (strcmp(f, "png") == 0) {
		*format = CM_PNG;
		*quality = 1; /* zlib level: see capture/png.c */
		return (0);
	}
	if (strcmp(f, "jpeg") != 0)
		return (tool_fail(call, BD_EINVAL,
		    "invalid format '%s': expected png or jpeg", f));
	if (tool_arg_int(call, "quality", 0, 1, 100, 80, &q) != 0)
		return (call->code);
	*format = CM_JPEG;
	*quality = (int)q;
	return (0);
}

static int
cm_reply_shot(struct tool_call *call, int zx, int zy, int zw, int zh, int out_w,
    int out_h)
{
	struct cm_shot shot;
	enum cm_format format = CM_PNG;
	int quality = 1, rv;
	char *cause = NULL;

	if (cm_format_args(call, &format, &quality) != 0)
		return (call->code);
	if (cm_shoot(zx, zy, zw, zh, out_w, out_h, format, quality, &shot,
	        &cause) != 0) {
		rv = tool_fail(call, BD_EIO, "screenshot failed: %s",
		    cause != NULL ? cause : "unknown error");
		free(cause);
		return (rv);
	}
	rv = tool_set_image(call, format == CM_PNG ? "image/png" : "image/jpeg",
	    shot.buf, shot.len, shot.width, shot.height, shot.frame);
	tool_set_json(call, "timing",
	    json_pack("{s:f, s:f, s:f, s:b}", "capture_ms", shot.capture_ms,
	        "scale_ms", shot.scale_ms, "encode_ms", shot.encode_ms,
	        "cached", shot.cached));
	free(shot.buf);
	return (rv);
}

static int
cm_screenshot(struct tool_call *call)
{
	return (cm_reply_shot(call, 0, 0, 0, 0, cm.dw, cm.dh));
}

/* After input: wait for the screen to settle, then reply with a shot,
 * unless the request said "screenshot": false. */
static int
cm_after_input(struct tool_call *call, uint64_t since_ns)
{
	long long settle, limit;
	int want;

	if (tool_arg_bool(call, "screenshot", 1, &want) != 0 ||
	    tool_arg_int(call, "settle_ms", 0, 0, 10000, cm.cfg->settle_ms,
	        &settle) != 0 ||
	    tool_arg_int(call, "settle_timeout_ms", 0, 0, 60000,
	        cm.cfg->settle_timeout_ms, &limit) != 0)
		return (call->code);
	if (!want)
		return (0);
	if (x11_settle(cm.x, since_ns, (int)settle, (int)limit) != 0)
		tool_set_bool(call, "settle_timed_out", 1);
	return (cm_screenshot(call));
}

/* --- arguments ----------------------------------------------------------- */

/* A point in screenshot space, checked and mapped to the screen. */
static int
cm_point(struct tool_call *call, const char *field, int x, int y, int *sx,
    int *sy)
{
	if (x < 0 || y < 0 || x >= cm.dw || y >= cm.dh)
		return (tool_fail(call, BD_EBOUNDS,
		    "invalid %s '[%d, %d]': outside the screen %dx%d", field, x,
		    y, cm.dw, cm.dh));
	*sx = cap_map(x, cm.dw, cm.sw);
	*sy = cap_map(y, cm.dh, cm.sh);
	return (0);
}

/* "coordinate": [x, y], optional unless required. *have says if given. */
static int
cm_coordinate(struct tool_call *call, const char *field, int required, int *sx,
    int *sy, int *have)
{
	int x, y, present;

	if (tool_arg_pair(call, field, required, &x, &y, &present) != 0)
		return (call->code);
	*have = present;
	if (!present)
		return (0);
	return (cm_point(call, field, x, y, sx, sy));
}

/* OpenAI's {x, y}. */
static int
cm_xy(struct tool_call *call, int *sx, int *sy)
{
	long long x, y;

	if (tool_arg_int(call, "x", 1, -1000000, 1000000, 0, &x) != 0 ||
	    tool_arg_int(call, "y", 1, -1000000, 1000000, 0, &y) != 0)
		return (call->code);
	return (cm_point(call, "x/y", (int)x, (int)y, sx, sy));
}

/* Check a combo string (modifiers, key names) before anything is pressed. */
static int
cm_check_combo(struct tool_call *call, const char *field, const char *combo)
{
	KeySym syms[X11_KBD_MAX_COMBO];
	char *cause = NULL;
	int n, rv;

	if (x11_kbd_parse(combo, syms, X11_KBD_MAX_COMBO, &n, &cause) == 0)
		return (0);
	rv = tool_fail(call, BD_EINVAL, "invalid key '%s' in field '%s': %s",
	    combo, field, cause != NULL ? cause : "cannot parse");
	free(cause);
	return (rv);
}

/* Modifiers held during a click or scroll: the Anthropic `text` field. */
static int
cm_modifiers(struct tool_call *call, const char **mods)
{
	if (tool_arg_str(call, "text", 0, NULL, mods) != 0)
		return (call->code);
	if (*mods != NULL && **mods == '\0')
		*mods = NULL;
	if (*mods != NULL)
		return (cm_check_combo(call, "text", *mods));
	return (0);
}

static int
cm_kbd(struct tool_call *call, const char *combo, enum x11_key_mode mode)
{
	char *cause = NULL;
	int rv;

	if (x11_kbd_combo(x11_kbd(cm.x), x11_display(cm.x), combo, mode,
	        &cause) == 0)
		return (0);
	rv = tool_fail(call, BD_EIO, "key '%s' failed: %s", combo,
	    cause != NULL ? cause : "unknown error");
	free(cause);
	return (rv);
}

/* --- pointer actions ----------------------------------------------------- */

/* Move (if have), hold mods, click `button` `count` times, release mods. */
static int
cm_click_at(struct tool_call *call, int have, int sx, int sy, int button,
    int count, const char *mods)
{
	uint64_t t;
	int rv = 0;

	x11_lock(cm.x);
	if (have)
		x11_move(cm.x, sx, sy);
	if (mods != NULL && (rv = cm_kbd(call, mods, X11_KEY_DOWN)) != 0)
		goto out;
	for (int i = 0; i < count; i++) {
		x11_button(cm.x, button, 1);
		x11_button(cm.x, button, 0);
	}
	if (mods != NULL)
		rv = cm_kbd(call, mods, X11_KEY_UP);
out:
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (rv != 0 ? rv : cm_after_input(call, t));
}

static int
cm_click_common(struct tool_call *call, int button, int count)
{
	const char *mods;
	int sx = 0, sy = 0, have;

	if (cm_coordinate(call, "coordinate", 0, &sx, &sy, &have) != 0 ||
	    cm_modifiers(call, &mods) != 0)
		return (call->code);
	return (cm_click_at(call, have, sx, sy, button, count, mods));
}

static int
cm_left_click(struct tool_call *call)
{
	return (cm_click_common(call, 1, 1));
}

static int
cm_right_click(struct tool_call *call)
{
	return (cm_click_common(call, 3, 1));
}

static int
cm_middle_click(struct tool_call *call)
{
	return (cm_click_common(call, 2, 1));
}

static int
cm_double_click(struct tool_call *call)
{
	return (cm_click_common(call, 1, 2));
}

static int
cm_triple_click(struct tool_call *call)
{
	return (cm_click_common(call, 1, 3));
}

static int
cm_mouse_move(struct tool_call *call)
{
	int sx, sy, have;
	uint64_t t;

	if (cm_coordinate(call, "coordinate", 1, &sx, &sy, &have) != 0)
		return (call->code);
	x11_lock(cm.x);
	x11_move(cm.x, sx, sy);
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (cm_after_input(call, t));
}

static int
cm_mouse_button(struct tool_call *call, int down)
{
	int sx = 0, sy = 0, have;
	uint64_t t;

	if (cm_coordinate(call, "coordinate", 0, &sx, &sy, &have) != 0)
		return (call->code);
	x11_lock(cm.x);
	if (have)
		x11_move(cm.x, sx, sy);
	x11_button(cm.x, 1, down);
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (cm_after_input(call, t));
}

static int
cm_left_mouse_down(struct tool_call *call)
{
	return (cm_mouse_button(call, 1));
}

static int
cm_left_mouse_up(struct tool_call *call)
{
	return (cm_mouse_button(call, 0));
}

/* Press at pts[0], move through the rest, release at the last point.
 * Intermediate motion events let applications see a drag, not a jump. */
static int
cm_drag_path(struct tool_call *call, const int *pts, int n)
{
	uint64_t t;

	x11_lock(cm.x);
	x11_move(cm.x, pts[0], pts[1]);
	x11_button(cm.x, 1, 1);
	for (int i = 1; i < n; i++) {
		int x0 = pts[2 * i - 2], y0 = pts[2 * i - 1];
		int x1 = pts[2 * i], y1 = pts[2 * i + 1];
		for (int s = 1; s <= CM_DRAG_STEPS; s++)
			x11_move(cm.x, x0 + (x1 - x0) * s / CM_DRAG_STEPS,
			    y0 + (y1 - y0) * s / CM_DRAG_STEPS);
	}
	x11_button(cm.x, 1, 0);
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (cm_after_input(call, t));
}

static int
cm_left_click_drag(struct tool_call *call)
{
	int pts[4], have;

	if (cm_coordinate(call, "start_coordinate", 1, &pts[0], &pts[1],
	        &have) != 0 ||
	    cm_coordinate(call, "coordinate", 1, &pts[2], &pts[3], &have) != 0)
		return (call->code);
	return (cm_drag_path(call, pts, 2));
}

/* Wheel clicks: buttons 4 up, 5 down, 6 left, 7 right. */
static int
cm_wheel(struct tool_call *call, int have, int sx, int sy, int dx, int dy,
    const char *mods)
{
	uint64_t t;
	int rv = 0;

	x11_lock(cm.x);
	if (have)
		x11_move(cm.x, sx, sy);
	if (mods != NULL && (rv = cm_kbd(call, mods, X11_KEY_DOWN)) != 0)
		goto out;
	for (int i = 0; i < abs(dy); i++) {
		x11_button(cm.x, dy < 0 ? 4 : 5, 1);
		x11_button(cm.x, dy < 0 ? 4 : 5, 0);
	}
	for (int i = 0; i < abs(dx); i++) {
		x11_button(cm.x, dx < 0 ? 6 : 7, 1);
		x11_button(cm.x, dx < 0 ? 6 : 7, 0);
	}
	if (mods != NULL)
		rv = cm_kbd(call, mods, X11_KEY_UP);
out:
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (rv != 0 ? rv : cm_after_input(call, t));
}

static int
cm_scroll(struct tool_call *call)
{
	const char *dir, *mods;
	long long amount;
	int sx = 0, sy = 0, have, dx = 0, dy = 0;

	if (cm_coordinate(call, "coordinate", 0, &sx, &sy, &have) != 0 ||
	    tool_arg_str(call, "scroll_direction", 1, NULL, &dir) != 0 ||
	    tool_arg_int(call, "scroll_amount", 0, 0, CM_SCROLL_MAX, 3,
	        &amount) != 0 ||
	    cm_modifiers(call, &mods) != 0)
		return (call->code);
	if (strcmp(dir, "up") == 0)
		dy = -(int)amount;
	else if (strcmp(dir, "down") == 0)
		dy = (int)amount;
	else if (strcmp(dir, "left") == 0)
		dx = -(int)amount;
	else if (strcmp(dir, "right") == 0)
		dx = (int)amount;
	else
		return (tool_fail(call, BD_EINVAL,
		    "invalid scroll_direction '%s': expected up, down, left "
		    "or right",
		    dir));
	return (cm_wheel(call, have, sx, sy, dx, dy, mods));
}

static int
cm_cursor_position(struct tool_call *call)
{
	int px, py, x, y;

	x11_lock(cm.x);
	if (x11_pointer(cm.x, &px, &py) != 0) {
		x11_unlock(cm.x);
		return (tool_fail(call, BD_EIO,
		    "the pointer is not on this screen"));
	}
	x11_unlock(cm.x);
	x = cap_map(px, cm.sw, cm.dw);
	y = cap_map(py, cm.sh, cm.dh);
	tool_set_json(call, "coordinate", json_pack("[i, i]", x, y));
	tool_set_output(call, "X=%d,Y=%d", x, y);
	return (0);
}

static int
cm_zoom(struct tool_call *call)
{
	json_t *r = json_object_get(call->req, "region");
	int v[4], x0, y0, x1, y1;

	if (r == NULL || json_is_null(r))
		return (tool_fail(call, BD_EINVAL,
		    "missing field 'region' (required by 'zoom')"));
	if (!json_is_array(r) || json_array_size(r) != 4)
		return (tool_fail(call, BD_EBADREQ,
		    "field 'region' must be an array of four integers "
		    "[x1, y1, x2, y2]"));
	for (int i = 0; i < 4; i++) {
		json_t *e = json_array_get(r, (size_t)i);
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    json_integer_value(e) > 1000000)
			return (tool_fail(call, BD_EBADREQ,
			    "field 'region' must be an array of four "
			    "non-negative integers [x1, y1, x2, y2]"));
		v[i] = (int)json_integer_value(e);
	}
	if (v[0] >= v[2] || v[1] >= v[3] || v[2] > cm.dw || v[3] > cm.dh)
		return (tool_fail(call, BD_EBOUNDS,
		    "invalid region '[%d, %d, %d, %d]': need x1 < x2 <= %d and "
		    "y1 < y2 <= %d",
		    v[0], v[1], v[2], v[3], cm.dw, cm.dh));
	/* Screen pixels under the region, at full detail. Edges map as
	 * pixel boundaries: v * screen / shot. */
	x0 = (int)((long long)v[0] * cm.sw / cm.dw);
	y0 = (int)((long long)v[1] * cm.sh / cm.dh);
	x1 = (int)(((long long)v[2] * cm.sw + cm.dw - 1) / cm.dw);
	y1 = (int)(((long long)v[3] * cm.sh + cm.dh - 1) / cm.dh);
	return (
	    cm_reply_shot(call, x0, y0, x1 - x0, y1 - y0, x1 - x0, y1 - y0));
}

/* --- keyboard actions ---------------------------------------------------- */

static int
cm_type_text(struct tool_call *call, const char *text, size_t len)
{
	char *cause = NULL;
	uint64_t t;
	int rv;

	x11_lock(cm.x);
	rv = x11_kbd_type(x11_kbd(cm.x), x11_display(cm.x), text, len, &cause);
	t = tool_now_ns();
	x11_unlock(cm.x);
	if (rv != 0) {
		rv = tool_fail(call, BD_EINVAL, "cannot type field 'text': %s",
		    cause != NULL ? cause : "unknown error");
		free(cause);
		return (rv);
	}
	return (cm_after_input(call, t));
}

static int
cm_type(struct tool_call *call)
{
	const char *text;
	size_t len;

	if (tool_arg_strn(call, "text", 1, CM_TEXT_MAX, &text, &len) != 0)
		return (call->code);
	return (cm_type_text(call, text, len));
}

/* Press combos in order: "ctrl+a Delete" is two combos. */
static int
cm_key_combos(struct tool_call *call, const char *field, const char *text)
{
	char *copy, *save = NULL, *tok;
	uint64_t t;
	int rv = 0, n = 0;

	if ((copy = strdup(text)) == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	for (tok = strtok_r(copy, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save), n++)
		if ((rv = cm_check_combo(call, field, tok)) != 0)
			goto out;
	if (n == 0) {
		rv = tool_fail(call, BD_EINVAL, "field '%s' names no key",
		    field);
		goto out;
	}
	free(copy);
	if ((copy = strdup(text)) == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	x11_lock(cm.x);
	for (tok = strtok_r(copy, " \t\n", &save); tok != NULL && rv == 0;
	     tok = strtok_r(NULL, " \t\n", &save))
		rv = cm_kbd(call, tok, X11_KEY_TAP);
	t = tool_now_ns();
	x11_unlock(cm.x);
	free(copy);
	return (rv != 0 ? rv : cm_after_input(call, t));
out:
	free(copy);
	return (rv);
}

static int
cm_key(struct tool_call *call)
{
	const char *text;
	size_t len;

	if (tool_arg_strn(call, "text", 1, 4096, &text, &len) != 0)
		return (call->code);
	return (cm_key_combos(call, "text", text));
}

/* Sleep without holding anything; seconds. */
/* Sleep, or less when the daemon stops: then -1 after the call's error
 * (no settle and no screenshot, the display is about to close). */
static int
cm_sleep(struct tool_call *call, double seconds)
{
	if (tool_sleep(seconds) == 0)
		return (0);
	return (tool_fail(call, BD_EBUSY,
	    "the wait was cut short: bureaud "
	    "is shutting down"));
}

static int
cm_hold_key(struct tool_call *call)
{
	const char *text;
	double duration;
	uint64_t t;
	int rv, stopped;

	if (tool_arg_str(call, "text", 1, NULL, &text) != 0 ||
	    tool_arg_num(call, "duration", 1, 0, CM_DURATION_MAX, 0,
	        &duration) != 0 ||
	    cm_check_combo(call, "text", text) != 0)
		return (call->code);
	x11_lock(cm.x);
	rv = cm_kbd(call, text, X11_KEY_DOWN);
	x11_unlock(cm.x);
	if (rv != 0)
		return (rv);
	/* The lock is free while the key is held: screenshots and other
	 * input go on, as with a person holding a key. */
	stopped = cm_sleep(call, duration);
	/* released even when stopping: no key stays down in the session */
	x11_lock(cm.x);
	rv = cm_kbd(call, text, X11_KEY_UP);
	t = tool_now_ns();
	x11_unlock(cm.x);
	if (stopped != 0)
		return (call->code);
	return (rv != 0 ? rv : cm_after_input(call, t));
}

static int
cm_wait(struct tool_call *call)
{
	double duration;

	if (tool_arg_num(call, "duration", 0, 0, CM_DURATION_MAX, 1.0,
	        &duration) != 0)
		return (call->code);
	if (cm_sleep(call, duration) != 0)
		return (call->code);
	return (cm_after_input(call, tool_now_ns()));
}

/* --- OpenAI actions ------------------------------------------------------ */

static int
oa_click(struct tool_call *call)
{
	static const struct {
		const char *name;
		int button;
	} buttons[] = { { "left", 1 }, { "wheel", 2 }, { "middle", 2 },
		{ "right", 3 }, { "back", 8 }, { "forward", 9 } };
	const char *b;
	int sx, sy;

	if (cm_xy(call, &sx, &sy) != 0 ||
	    tool_arg_str(call, "button", 0, "left", &b) != 0)
		return (call->code);
	for (size_t i = 0; i < sizeof buttons / sizeof *buttons; i++)
		if (strcmp(b, buttons[i].name) == 0)
			return (cm_click_at(call, 1, sx, sy, buttons[i].button,
			    1, NULL));
	return (tool_fail(call, BD_EINVAL,
	    "invalid button '%s': expected left, right, wheel, back or "
	    "forward",
	    b));
}

static int
oa_double_click(struct tool_call *call)
{
	int sx, sy;

	if (cm_xy(call, &sx, &sy) != 0)
		return (call->code);
	return (cm_click_at(call, 1, sx, sy, 1, 2, NULL));
}

static int
oa_move(struct tool_call *call)
{
	int sx, sy;
	uint64_t t;

	if (cm_xy(call, &sx, &sy) != 0)
		return (call->code);
	x11_lock(cm.x);
	x11_move(cm.x, sx, sy);
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (cm_after_input(call, t));
}

static int
oa_drag(struct tool_call *call)
{
	json_t *path = json_object_get(call->req, "path");
	int *pts, n, rv;

	if (path == NULL || json_is_null(path))
		return (tool_fail(call, BD_EINVAL,
		    "missing field 'path' (required by 'drag')"));
	if (!json_is_array(path))
		return (tool_fail(call, BD_EBADREQ,
		    "field 'path' must be an array of {x, y} points"));
	n = (int)json_array_size(path);
	if (n < 2 || n > CM_PATH_MAX)
		return (tool_fail(call, BD_EBOUNDS,
		    "field 'path' has %d points, expected 2..%d", n,
		    CM_PATH_MAX));
	if ((pts = calloc((size_t)n * 2, sizeof *pts)) == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	for (int i = 0; i < n; i++) {
		json_t *p = json_array_get(path, (size_t)i);
		json_t *jx = json_object_get(p, "x"),
		       *jy = json_object_get(p, "y");
		if (!json_is_integer(jx) || !json_is_integer(jy) ||
		    llabs(json_integer_value(jx)) > 1000000 ||
		    llabs(json_integer_value(jy)) > 1000000) {
			free(pts);
			return (tool_fail(call, BD_EBADREQ,
			    "field 'path' point %d must be {\"x\": int, "
			    "\"y\": int}",
			    i));
		}
		if (cm_point(call, "path point", (int)json_integer_value(jx),
		        (int)json_integer_value(jy), &pts[2 * i],
		        &pts[2 * i + 1]) != 0) {
			free(pts);
			return (call->code);
		}
	}
	rv = cm_drag_path(call, pts, n);
	free(pts);
	return (rv);
}

static int
oa_keypress(struct tool_call *call)
{
	json_t *keys = json_object_get(call->req, "keys");
	char combo[1024];
	size_t off = 0;

	if (keys == NULL || json_is_null(keys))
		return (tool_fail(call, BD_EINVAL,
		    "missing field 'keys' (required by 'keypress')"));
	if (!json_is_array(keys) || json_array_size(keys) == 0 ||
	    json_array_size(keys) > X11_KBD_MAX_COMBO)
		return (tool_fail(call, BD_EBADREQ,
		    "field 'keys' must be an array of 1..%d key names",
		    X11_KBD_MAX_COMBO));
	/* OpenAI sends ["CTRL", "A"]: one combo, the letter meant as its
	 * key (lowercase), as a person pressing ctrl+a. */
	for (size_t i = 0; i < json_array_size(keys); i++) {
		json_t *k = json_array_get(keys, i);
		const char *s = json_string_value(k);
		size_t n;

		if (s == NULL || *s == '\0')
			return (tool_fail(call, BD_EBADREQ,
			    "field 'keys' entry %zu must be a non-empty "
			    "string",
			    i));
		n = strlen(s);
		if (off + n + 2 > sizeof combo)
			return (tool_fail(call, BD_ETOOLARGE,
			    "field 'keys' is too long"));
		if (off > 0)
			combo[off++] = '+';
		if (n == 1 && s[0] >= 'A' && s[0] <= 'Z')
			combo[off++] = (char)(s[0] - 'A' + 'a');
		else {
			memcpy(combo + off, s, n);
			off += n;
		}
	}
	combo[off] = '\0';
	if (cm_check_combo(call, "keys", combo) != 0)
		return (call->code);
	{
		uint64_t t;
		int rv;

		x11_lock(cm.x);
		rv = cm_kbd(call, combo, X11_KEY_TAP);
		t = tool_now_ns();
		x11_unlock(cm.x);
		return (rv != 0 ? rv : cm_after_input(call, t));
	}
}

/* OpenAI scroll_x/scroll_y are pixels; one wheel click scrolls about
 * 100 of them in common toolkits. */
static int
oa_clicks(long long px)
{
	if (px == 0)
		return (0);
	long long c = (llabs(px) + 99) / 100;
	if (c > CM_SCROLL_MAX)
		c = CM_SCROLL_MAX;
	return (px < 0 ? -(int)c : (int)c);
}

static int
oa_scroll(struct tool_call *call)
{
	long long dx, dy;
	int sx, sy;

	if (cm_xy(call, &sx, &sy) != 0 ||
	    tool_arg_int(call, "scroll_x", 0, -100000, 100000, 0, &dx) != 0 ||
	    tool_arg_int(call, "scroll_y", 0, -100000, 100000, 0, &dy) != 0)
		return (call->code);
	return (cm_wheel(call, 1, sx, sy, oa_clicks(dx), oa_clicks(dy), NULL));
}

static int
oa_type(struct tool_call *call)
{
	return (cm_type(call));
}

static int
oa_wait(struct tool_call *call)
{
	long long ms;

	if (tool_arg_int(call, "ms", 0, 0, (long long)(CM_DURATION_MAX * 1000),
	        1000, &ms) != 0)
		return (call->code);
	if (cm_sleep(call, (double)ms / 1000.0) != 0)
		return (call->code);
	return (cm_after_input(call, tool_now_ns()));
}

/* --- dispatch ------------------------------------------------------------ */

/* Anthropic actions are named by "action", OpenAI's computer_call actions
 * by "type"; the runtime resolves one, never both. Everything but the
 * deliberate waits answers in milliseconds (quick). */
static const struct tool_action cm_actions[] = {
	{ "screenshot", "action", cm_screenshot, 1 },
	{ "zoom", "action", cm_zoom, 1 },
	{ "cursor_position", "action", cm_cursor_position, 1 },
	{ "mouse_move", "action", cm_mouse_move, 1 },
	{ "left_click", "action", cm_left_click, 1 },
	{ "right_click", "action", cm_right_click, 1 },
	{ "middle_click", "action", cm_middle_click, 1 },
	{ "double_click", "action", cm_double_click, 1 },
	{ "triple_click", "action", cm_triple_click, 1 },
	{ "left_click_drag", "action", cm_left_click_drag, 1 },
	{ "left_mouse_down", "action", cm_left_mouse_down, 1 },
	{ "left_mouse_up", "action", cm_left_mouse_up, 1 },
	{ "scroll", "action", cm_scroll, 1 },
	{ "type", "action", cm_type, 1 },
	{ "key", "action", cm_key, 1 },
	{ "hold_key", "action", cm_hold_key, 0 },
	{ "wait", "action", cm_wait, 0 },
	{ "click", "type", oa_click, 1 },
	{ "double_click", "type", oa_double_click, 1 },
	{ "drag", "type", oa_drag, 1 },
	{ "keypress", "type", oa_keypress, 1 },
	{ "move", "type", oa_move, 1 },
	{ "screenshot", "type", cm_screenshot, 1 },
	{ "scroll", "type", oa_scroll, 1 },
	{ "type", "type", oa_type, 1 },
	{ "wait", "type", oa_wait, 0 },
	{ NULL, NULL, NULL, 0 },
};

static int
cm_check_frame(struct tool_call *call)
{
	long long want;
	uint64_t cur;
	int have;

	if (!tool_arg_has(call, "frame"))
		return (0);
	if (tool_arg_int(call, "frame", 1, 0, INT64_MAX, 0, &want) != 0)
		return (call->code);
	pthread_mutex_lock(&cm.flock);
	cur = cm.frame;
	have = cm.have_frame;
	pthread_mutex_unlock(&cm.flock);
	if (!have || (uint64_t)want != cur)
		return (tool_fail(call, BD_EINVAL,
		    "stale frame %lld: the latest screenshot is frame %llu",
		    want, (unsigned long long)cur));
	return (0);
}

/* Every action needs the display, and an action sent with "frame" only
 * runs on the screen it was decided on. */
static int
cm_prepare(struct tool_call *call)
{
	if (cm.x == NULL)
		return (tool_fail(call, BD_EIO, "no display: %s",
		    cm.cause != NULL ? cm.cause : "not started"));
	return (cm_check_frame(call));
}

/* --- frame publisher ----------------------------------------------------- */

static void
cm_pub_sleep_ms(int ms)
{
	struct timespec ts;
	uint64_t ns;

	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000u;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&cm.plock);
	if (!cm.stopping)
		pthread_cond_timedwait(&cm.pcond, &cm.plock, &ts);
	pthread_mutex_unlock(&cm.plock);
}

static int
cm_pub_stopping(void)
{
	int s;

	pthread_mutex_lock(&cm.plock);
	s = cm.stopping;
	pthread_mutex_unlock(&cm.plock);
	return (s);
}

/* Publish a JPEG of the screen whenever it changed, at most once per
 * frame_interval_ms. Idle screens cost nothing: the thread sleeps on the
 * damage counter. */
static void *
cm_pub_main(void *arg)
{
	uint64_t seen = 0;

	(void)arg;
	while (!cm_pub_stopping()) {
		uint64_t seq = x11_damage_wait(cm.x, seen, 500);
		struct cm_shot shot;
		char *cause = NULL, *hdr;
		struct timespec now;

		if (seq == seen)
			continue;
		seen = seq;
		if (cm_shoot(0, 0, 0, 0, cm.dw, cm.dh, CM_JPEG, 70, &shot,
		        &cause) != 0) {
			free(cause);
			cm_pub_sleep_ms(cm.cfg->frame_interval_ms);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &now);
		if (asprintf(&hdr,
		        "{\"frame\":%llu,\"width\":%d,\"height\":%d,"
		        "\"mime_type\":\"image/jpeg\",\"time\":%lld.%03ld}",
		        (unsigned long long)shot.frame, shot.width, shot.height,
		        (long long)now.tv_sec, now.tv_nsec / 1000000) >= 0) {
			cm.cfg->publish("frame", hdr, shot.buf, shot.len);
			free(hdr);
		}
		free(shot.buf);
		cm_pub_sleep_ms(cm.cfg->frame_interval_ms);
	}
	return (NULL);
}

static int
cm_init(const struct tool_config *cfg, char **cause)
{
	cm.cfg = cfg;
	if (x11_open(cfg->display, &cm.x, cause) != 0) {
		cm.cause = *cause != NULL ? strdup(*cause) : NULL;
		return (-1);
	}
	x11_size(cm.x, &cm.sw, &cm.sh);
	cap_scaled_size(cfg->scale, cfg->scale_w, cfg->scale_h, cm.sw, cm.sh,
	    &cm.dw, &cm.dh);
	if (cfg->publish != NULL && cfg->frame_interval_ms > 0 &&
	    pthread_create(&cm.pub, NULL, cm_pub_main, NULL) == 0)
		cm.pub_started = 1;
	return (0);
}

static void
cm_fini(void)
{
	if (cm.pub_started) {
		pthread_mutex_lock(&cm.plock);
		cm.stopping = 1;
		pthread_cond_broadcast(&cm.pcond);
		pthread_mutex_unlock(&cm.plock);
		pthread_join(cm.pub, NULL);
		cm.pub_started = 0;
	}
	x11_close(cm.x);
	cm.x = NULL;
	for (int i = 0; i < 2; i++) {
		free(cm.cache[i].buf);
		cm.cache[i].buf = NULL;
	}
	free(cm.cause);
	cm.cause = NULL;
}

int
tool_computer_geometry(int *sw, int *sh, int *dw, int *dh, const char **display,
    const char **cause)
{
	if (cm.x == NULL) {
		*cause = cm.cause != NULL ? cm.cause : "display not open";
		return (-1);
	}
	*sw = cm.sw;
	*sh = cm.sh;
	*dw = cm.dw;
	*dh = cm.dh;
	*display = x11_name(cm.x);
	return (0);
}

const struct tool_entry tool_computer_entry = {
	.name = "computer",
	.init = cm_init,
	.fini = cm_fini,
	.actions = cm_actions,
	.prepare = cm_prepare,
};
