/*
 * tools/computer.c: the computer tool. Anthropic computer-use actions
 * ("action" key) and OpenAI computer-use actions ("type" key) on one tool:
 * screenshots (scaled, framed, cached), pointer, keyboard, waits.
 *
 * The screenshot pipeline is tools/screenshot.c, the OpenAI actions
 * tools/computer_openai.c, the frame publisher runtime/frames.c.
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
#include "tools/computer_impl.h"
#include "tools/screenshot.h"
#include "x11/x11.h"

#define CM_TEXT_MAX   (64u << 10) /* bytes of text one `type` may carry */
#define CM_DRAG_STEPS 8           /* motion events between drag ends */

/* The display, borrowed from tools/screenshot.c for input actions. */
static struct {
	const struct tool_config *cfg;
	struct x11 *x;
} cm;

int
cm_screenshot(struct tool_call *call)
{
	int sw, sh, dw, dh;

	shot_sizes(&sw, &sh, &dw, &dh);
	return (shot_reply(call, 0, 0, 0, 0, dw, dh));
}

/* After input: wait for the screen to settle, then reply with a shot,
 * unless the request said "screenshot": false. */
int
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
int
cm_point(struct tool_call *call, const char *field, int x, int y, int *sx,
    int *sy)
{
	int sw, sh, dw, dh;

	shot_sizes(&sw, &sh, &dw, &dh);
	if (x < 0 || y < 0 || x >= dw || y >= dh)
		return (tool_fail(call, BD_EBOUNDS,
		    "invalid %s '[%d, %d]': outside the screen %dx%d", field, x,
		    y, dw, dh));
	*sx = cap_map(x, dw, sw);
	*sy = cap_map(y, dh, sh);
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
int
cm_xy(struct tool_call *call, int *sx, int *sy)
{
	long long x, y;

	if (tool_arg_int(call, "x", 1, -1000000, 1000000, 0, &x) != 0 ||
	    tool_arg_int(call, "y", 1, -1000000, 1000000, 0, &y) != 0)
		return (call->code);
	return (cm_point(call, "x/y", (int)x, (int)y, sx, sy));
}

/* Check a combo string (modifiers, key names) before anything is pressed. */
int
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

int
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
int
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

int
cm_move(struct tool_call *call, int sx, int sy)
{
	uint64_t t;

	x11_lock(cm.x);
	x11_move(cm.x, sx, sy);
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (cm_after_input(call, t));
}

static int
cm_mouse_move(struct tool_call *call)
{
	int sx, sy, have;

	if (cm_coordinate(call, "coordinate", 1, &sx, &sy, &have) != 0)
		return (call->code);
	return (cm_move(call, sx, sy));
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
int
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
int
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
	int px, py, x, y, sw, sh, dw, dh;

	x11_lock(cm.x);
	if (x11_pointer(cm.x, &px, &py) != 0) {
		x11_unlock(cm.x);
		return (tool_fail(call, BD_EIO,
		    "the pointer is not on this screen"));
	}
	x11_unlock(cm.x);
	shot_sizes(&sw, &sh, &dw, &dh);
	x = cap_map(px, sw, dw);
	y = cap_map(py, sh, dh);
	tool_set_json(call, "coordinate", json_pack("[i, i]", x, y));
	tool_set_output(call, "X=%d,Y=%d", x, y);
	return (0);
}

static int
cm_zoom(struct tool_call *call)
{
	json_t *r = json_object_get(call->req, "region");
	int v[4], x0, y0, x1, y1, sw, sh, dw, dh;

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
	shot_sizes(&sw, &sh, &dw, &dh);
	if (v[0] >= v[2] || v[1] >= v[3] || v[2] > dw || v[3] > dh)
		return (tool_fail(call, BD_EBOUNDS,
		    "invalid region '[%d, %d, %d, %d]': need x1 < x2 <= %d and "
		    "y1 < y2 <= %d",
		    v[0], v[1], v[2], v[3], dw, dh));
	/* Screen pixels under the region, at full detail. Edges map as
	 * pixel boundaries: v * screen / shot. */
	x0 = (int)((long long)v[0] * sw / dw);
	y0 = (int)((long long)v[1] * sh / dh);
	x1 = (int)(((long long)v[2] * sw + dw - 1) / dw);
	y1 = (int)(((long long)v[3] * sh + dh - 1) / dh);
	return (shot_reply(call, x0, y0, x1 - x0, y1 - y0, x1 - x0, y1 - y0));
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

int
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

int
cm_key_tap(struct tool_call *call, const char *combo)
{
	uint64_t t;
	int rv;

	x11_lock(cm.x);
	rv = cm_kbd(call, combo, X11_KEY_TAP);
	t = tool_now_ns();
	x11_unlock(cm.x);
	return (rv != 0 ? rv : cm_after_input(call, t));
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
int
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
	have = shot_frame(&cur);
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
	const char *cause = NULL;

	if (shot_display(&cause) == NULL)
		return (tool_fail(call, BD_EIO, "no display: %s", cause));
	return (cm_check_frame(call));
}

static int
cm_init(const struct tool_config *cfg, char **cause)
{
	cm.cfg = cfg;
	if (shot_open(cfg, cause) != 0)
		return (-1);
	cm.x = shot_display(NULL);
	return (0);
}

static void
cm_fini(void)
{
	shot_close();
	cm.x = NULL;
}

const struct tool_entry tool_computer_entry = {
	.name = "computer",
	.init = cm_init,
	.fini = cm_fini,
	.actions = cm_actions,
	.prepare = cm_prepare,
};
