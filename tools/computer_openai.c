/*
 * tools/computer_openai.c: OpenAI's computer-use actions ("type" key) on the
 * computer tool, mapped onto the same input and screenshot code as the
 * Anthropic actions (tools/computer.c lists both in its table).
 */
#include <stdlib.h>
#include <string.h>

#include "tools/computer_impl.h"
#include "x11/x11.h"

int
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

int
oa_double_click(struct tool_call *call)
{
	int sx, sy;

	if (cm_xy(call, &sx, &sy) != 0)
		return (call->code);
	return (cm_click_at(call, 1, sx, sy, 1, 2, NULL));
}

int
oa_move(struct tool_call *call)
{
	int sx, sy;

	if (cm_xy(call, &sx, &sy) != 0)
		return (call->code);
	return (cm_move(call, sx, sy));
}

int
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

int
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
	return (cm_key_tap(call, combo));
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

int
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

int
oa_type(struct tool_call *call)
{
	return (cm_type(call));
}

int
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
