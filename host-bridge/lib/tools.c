/*
 * libbureau: one function per tool action, each building the request the
 * protocol names (DESIGN.md "Wire protocol v1") and unpacking its reply.
 */
#include <stdlib.h>
#include <string.h>

#include "host-bridge/lib/internal.h"

/* Extra wait for a reply beyond a tool's own time limit. */
#define BC_MARGIN_MS 10000

static int
bc_nomem(void)
{
	return (bc_fail(BUREAU_ENOMEM, "out of memory"));
}

/* A call's timeout: the client's, or longer when the tool itself may take
 * `seconds`. */
static int
bc_timeout_for(const bureau_client *c, double seconds)
{
	double ms = seconds * 1000.0 + BC_MARGIN_MS;
	int base = bc_timeout_ms(c);

	if (ms > INT_MAX)
		return (INT_MAX);
	return ((int)ms > base ? (int)ms : base);
}

static json_t *
bc_computer(const char *action)
{
	return (json_pack("{s:s, s:s}", "tool", "computer", "action", action));
}

static int
bc_set_coord(json_t *req, const char *field, int x, int y)
{
	if (x == BUREAU_NO_COORD)
		return (0);
	return (json_object_set_new(req, field, json_pack("[i, i]", x, y)));
}

static int
bc_set_str(json_t *req, const char *field, const char *s)
{
	json_t *v;

	if (s == NULL)
		return (0);
	if ((v = json_string(s)) == NULL)
		return (-1);
	return (json_object_set_new(req, field, v));
}

/*
 * Send a computer action (req is consumed) and decode the screenshot into
 * *shot, or ask for none when shot is NULL. An action reply without an
 * image leaves *shot zeroed.
 */
static int
bc_action(bureau_client *c, json_t *req, int timeout_ms, int need_image,
    struct bureau_image *shot)
{
	json_t *reply = NULL;
	int rv;

	if (shot != NULL)
		memset(shot, 0, sizeof(*shot));
	if (req == NULL)
		return (bc_nomem());
	if (shot == NULL &&
	    json_object_set_new(req, "screenshot", json_false()) != 0) {
		json_decref(req);
		return (bc_nomem());
	}
	rv = bc_request(c, req, timeout_ms, &reply, NULL);
	if (rv == 0 && shot != NULL &&
	    (need_image || json_object_get(reply, "image") != NULL))
		rv = bc_image(reply, shot);
	json_decref(reply);
	json_decref(req);
	return (rv);
}

int
bureau_screenshot(bureau_client *c, struct bureau_image *img)
{
	if (img == NULL)
		return (bc_fail(BUREAU_EARG, "no place for the screenshot"));
	return (bc_action(c, bc_computer("screenshot"), 0, 1, img));
}

int
bureau_zoom(bureau_client *c, int x1, int y1, int x2, int y2,
    struct bureau_image *img)
{
	json_t *req;

	if (img == NULL)
		return (bc_fail(BUREAU_EARG, "no place for the image"));
	req = json_pack("{s:s, s:s, s:[i, i, i, i]}", "tool", "computer",
	    "action", "zoom", "region", x1, y1, x2, y2);
	return (bc_action(c, req, 0, 1, img));
}

int
bureau_cursor_position(bureau_client *c, int *x, int *y)
{
	json_t *req, *reply = NULL;
	int rv, px, py;

	if ((req = bc_computer("cursor_position")) == NULL)
		return (bc_nomem());
	rv = bc_request(c, req, 0, &reply, NULL);
	json_decref(req);
	if (rv == 0 &&
	    json_unpack(reply, "{s:[ii]}", "coordinate", &px, &py) != 0)
		rv = bc_fail(BUREAU_EMALFORMED,
		    "malformed reply: no 'coordinate' [x, y]");
	json_decref(reply);
	if (rv != 0)
		return (rv);
	if (x != NULL)
		*x = px;
	if (y != NULL)
		*y = py;
	return (0);
}

int
bureau_mouse_move(bureau_client *c, int x, int y, struct bureau_image *shot)
{
	json_t *req = bc_computer("mouse_move");

	if (req != NULL && bc_set_coord(req, "coordinate", x, y) != 0) {
		json_decref(req);
		req = NULL;
	}
	return (bc_action(c, req, 0, 0, shot));
}

static int
bc_click(bureau_client *c, const char *action, int x, int y,
    const char *modifiers, struct bureau_image *shot)
{
	json_t *req = bc_computer(action);

	if (req != NULL &&
	    (bc_set_coord(req, "coordinate", x, y) != 0 ||
	        bc_set_str(req, "text", modifiers) != 0)) {
		json_decref(req);
		req = NULL;
	}
	return (bc_action(c, req, 0, 0, shot));
}

int
bureau_click(bureau_client *c, enum bureau_button button, int x, int y,
    const char *modifiers, struct bureau_image *shot)
{
	static const char *const actions[] = {
		[BUREAU_BUTTON_LEFT] = "left_click",
		[BUREAU_BUTTON_RIGHT] = "right_click",
		[BUREAU_BUTTON_MIDDLE] = "middle_click",
	};

	if ((unsigned)button > BUREAU_BUTTON_MIDDLE)
		return (bc_fail(BUREAU_EARG, "invalid button %d", (int)button));
	return (bc_click(c, actions[button], x, y, modifiers, shot));
}

int
bureau_double_click(bureau_client *c, int x, int y, const char *modifiers,
    struct bureau_image *shot)
{
	return (bc_click(c, "double_click", x, y, modifiers, shot));
}

int
bureau_triple_click(bureau_client *c, int x, int y, const char *modifiers,
    struct bureau_image *shot)
{
	return (bc_click(c, "triple_click", x, y, modifiers, shot));
}

int
bureau_drag(bureau_client *c, int x1, int y1, int x2, int y2,
    struct bureau_image *shot)
{
	json_t *req = json_pack("{s:s, s:s, s:[i, i], s:[i, i]}", "tool",
	    "computer", "action", "left_click_drag", "start_coordinate", x1, y1,
	    "coordinate", x2, y2);

	return (bc_action(c, req, 0, 0, shot));
}

int
bureau_mouse_down(bureau_client *c, struct bureau_image *shot)
{
	return (bc_action(c, bc_computer("left_mouse_down"), 0, 0, shot));
}

int
bureau_mouse_up(bureau_client *c, struct bureau_image *shot)
{
	return (bc_action(c, bc_computer("left_mouse_up"), 0, 0, shot));
}

int
bureau_scroll(bureau_client *c, int x, int y, enum bureau_scroll_dir dir,
    int amount, const char *modifiers, struct bureau_image *shot)
{
	static const char *const dirs[] = {
		[BUREAU_SCROLL_UP] = "up",
		[BUREAU_SCROLL_DOWN] = "down",
		[BUREAU_SCROLL_LEFT] = "left",
		[BUREAU_SCROLL_RIGHT] = "right",
	};
	json_t *req;

	if ((unsigned)dir > BUREAU_SCROLL_RIGHT)
		return (bc_fail(BUREAU_EARG, "invalid scroll direction %d",
		    (int)dir));
	req = json_pack("{s:s, s:s, s:s, s:i}", "tool", "computer", "action",
	    "scroll", "scroll_direction", dirs[dir], "scroll_amount", amount);
	if (req != NULL &&
	    (bc_set_coord(req, "coordinate", x, y) != 0 ||
	        bc_set_str(req, "text", modifiers) != 0)) {
		json_decref(req);
		req = NULL;
	}
	return (bc_action(c, req, 0, 0, shot));
}

static int
bc_text_action(bureau_client *c, const char *action, const char *text,
    double duration, struct bureau_image *shot)
{
	json_t *req;

	if (text == NULL)
		return (bc_fail(BUREAU_EARG, "no text for '%s'", action));
	if ((req = bc_computer(action)) == NULL)
		return (bc_nomem());
	if (json_object_set_new(req, "text", json_string(text)) != 0) {
		json_decref(req);
		return (bc_fail(BUREAU_EARG, "invalid text: not UTF-8"));
	}
	if (duration >= 0 &&
	    json_object_set_new(req, "duration", json_real(duration)) != 0) {
		json_decref(req);
		return (bc_nomem());
	}
	return (bc_action(c, req,
	    duration > 0 ? bc_timeout_for(c, duration) : 0, 0, shot));
}

int
bureau_type(bureau_client *c, const char *text, struct bureau_image *shot)
{
	return (bc_text_action(c, "type", text, -1, shot));
}

int
bureau_key(bureau_client *c, const char *combo, struct bureau_image *shot)
{
	return (bc_text_action(c, "key", combo, -1, shot));
}

int
bureau_hold_key(bureau_client *c, const char *combo, double duration,
    struct bureau_image *shot)
{
	return (bc_text_action(c, "hold_key", combo, duration, shot));
}

int
bureau_wait(bureau_client *c, double duration, struct bureau_image *shot)
{
	json_t *req = json_pack("{s:s, s:s, s:f}", "tool", "computer", "action",
	    "wait", "duration", duration);

	return (bc_action(c, req, bc_timeout_for(c, duration), 0, shot));
}

/* --- bash -------------------------------------------------------------- */

int
bureau_bash(bureau_client *c, const char *command, const char *session,
    double timeout, char **output, int *exit_code)
{
	json_t *req, *reply = NULL, *ec;
	const char *out;
	int rv;

	if (output != NULL)
		*output = NULL;
	if (exit_code != NULL)
		*exit_code = -1;
	if (command == NULL)
		return (bc_fail(BUREAU_EARG, "no command"));
	if ((req = json_pack("{s:s}", "tool", "bash")) == NULL)
		return (bc_nomem());
	if (bc_set_str(req, "command", command) != 0 ||
	    bc_set_str(req, "session", session) != 0 ||
	    (timeout > 0 &&
	        json_object_set_new(req, "timeout", json_real(timeout)) != 0)) {
		json_decref(req);
		return (bc_fail(BUREAU_EARG, "invalid command: not UTF-8"));
	}
	rv = bc_request(c, req, bc_timeout_for(c, timeout > 0 ? timeout : 120),
	    &reply, NULL);
	json_decref(req);
	if (rv != 0)
		goto out;
	out = json_string_value(json_object_get(reply, "output"));
	ec = json_object_get(reply, "exit_code");
	if (exit_code != NULL && json_is_integer(ec))
		*exit_code = (int)json_integer_value(ec);
	if (output != NULL &&
	    (*output = strdup(out != NULL ? out : "")) == NULL)
		rv = bc_nomem();
out:
	json_decref(reply);
	return (rv);
}

int
bureau_bash_restart(bureau_client *c, const char *session)
{
	json_t *req;
	int rv;

	if ((req = json_pack("{s:s, s:b}", "tool", "bash", "restart", 1)) ==
	    NULL)
		return (bc_nomem());
	if (bc_set_str(req, "session", session) != 0) {
		json_decref(req);
		return (bc_fail(BUREAU_EARG, "invalid session: not UTF-8"));
	}
	rv = bc_request(c, req, 0, NULL, NULL);
	json_decref(req);
	return (rv);
}

/* --- file -------------------------------------------------------------- */

int
bureau_file_read(bureau_client *c, const char *path, void **data, size_t *len)
{
	json_t *req = NULL, *reply = NULL, *d;
	unsigned char *buf = NULL, *nb;
	void *chunk;
	size_t have = 0, n;
	json_int_t size;
	int rv;

	if (data != NULL)
		*data = NULL;
	if (len != NULL)
		*len = 0;
	if (path == NULL || data == NULL || len == NULL)
		return (
		    bc_fail(BUREAU_EARG, "no path or no place for the data"));
	/* The daemon may cap one read: ask again from where it stopped. */
	for (;;) {
		req = json_pack("{s:s, s:s, s:s, s:I}", "tool", "file",
		    "action", "read", "path", path, "offset", (json_int_t)have);
		if (req == NULL) {
			rv = bc_fail(BUREAU_EARG, "invalid path: not UTF-8");
			goto fail;
		}
		if ((rv = bc_request(c, req, 0, &reply, NULL)) != 0)
			goto fail;
		d = json_object_get(reply, "data");
		size = json_integer_value(json_object_get(reply, "size"));
		if (!json_is_string(d)) {
			rv = bc_fail(BUREAU_EMALFORMED,
			    "malformed reply: no 'data'");
			goto fail;
		}
		if ((rv = bc_b64_decode(json_string_value(d),
		         json_string_length(d), &chunk, &n)) != 0)
			goto fail;
		if ((nb = realloc(buf, have + n + 1)) == NULL) {
			free(chunk);
			rv = bc_nomem();
			goto fail;
		}
		buf = nb;
		memcpy(buf + have, chunk, n);
		have += n;
		buf[have] = '\0';
		free(chunk);
		json_decref(req);
		json_decref(reply);
		req = reply = NULL;
		if (n == 0 || (json_int_t)have >= size)
			break;
	}
	if (buf == NULL && (buf = calloc(1, 1)) == NULL)
		return (bc_nomem());
	*data = buf;
	*len = have;
	return (0);

fail:
	json_decref(req);
	json_decref(reply);
	free(buf);
	return (rv);
}

int
bureau_file_write(bureau_client *c, const char *path, const void *data,
    size_t len, int mode, int parents)
{
	json_t *req;
	char *b64;
	int rv;

	if (path == NULL || (data == NULL && len > 0))
		return (bc_fail(BUREAU_EARG, "no path or no data"));
	/* nng would drop the oversized request and the connection with it:
	 * say why instead of "connection reset". */
	if (len / 3 * 4 + strlen(path) + 4096 > BUREAU_MAX_REQUEST)
		return (bc_fail(BUREAU_ETOOLARGE,
		    "data of %zu bytes for '%s': over one request's %u bytes "
		    "once in base64; write it in pieces by offset",
		    len, path, BUREAU_MAX_REQUEST));
	if ((b64 = bc_b64_encode(data != NULL ? data : "", len)) == NULL)
		return (bc_nomem());
	req = json_pack("{s:s, s:s, s:s, s:s, s:b}", "tool", "file", "action",
	    "write", "path", path, "data", b64, "parents", parents != 0);
	free(b64);
	if (req == NULL)
		return (bc_fail(BUREAU_EARG, "invalid path: not UTF-8"));
	if (mode >= 0 &&
	    json_object_set_new(req, "mode", json_integer(mode)) != 0) {
		json_decref(req);
		return (bc_nomem());
	}
	rv = bc_request(c, req, 0, NULL, NULL);
	json_decref(req);
	return (rv);
}

/* --- system ------------------------------------------------------------ */

/* --- accessibility ------------------------------------------------------ */

/* Send req (taken) and hand back its "nodes" as JSON text. */
static int
bc_a11y_nodes(bureau_client *c, json_t *req, char **nodes_json)
{
	json_t *reply = NULL;
	int rv;

	*nodes_json = NULL;
	rv = bc_request(c, req, 0, &reply, NULL);
	json_decref(req);
	if (rv == 0 &&
	    (*nodes_json = json_dumps(json_object_get(reply, "nodes"),
	         JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		rv = bc_nomem();
	json_decref(reply);
	return (rv);
}

int
bureau_a11y_tree(bureau_client *c, unsigned long window, int depth,
    int max_nodes, char **nodes_json)
{
	json_t *req;

	if (nodes_json == NULL)
		return (bc_fail(BUREAU_EARG, "no nodes_json"));
	*nodes_json = NULL;
	if ((req = json_pack("{s:s, s:s}", "tool", "accessibility", "action",
	         "tree")) == NULL ||
	    (window != 0 &&
	        json_object_set_new(req, "window",
	            json_integer((json_int_t)window)) != 0) ||
	    (depth > 0 &&
	        json_object_set_new(req, "depth", json_integer(depth)) != 0) ||
	    (max_nodes > 0 &&
	        json_object_set_new(req, "max_nodes",
	            json_integer(max_nodes)) != 0)) {
		json_decref(req);
		return (bc_nomem());
	}
	return (bc_a11y_nodes(c, req, nodes_json));
}

int
bureau_a11y_find(bureau_client *c, const char *role, const char *name,
    const char *name_contains, const char *state, char **nodes_json)
{
	json_t *req;

	if (nodes_json == NULL)
		return (bc_fail(BUREAU_EARG, "no nodes_json"));
	*nodes_json = NULL;
	if ((req = json_pack("{s:s, s:s}", "tool", "accessibility", "action",
	         "find")) == NULL)
		return (bc_nomem());
	if (bc_set_str(req, "role", role) != 0 ||
	    bc_set_str(req, "name", name) != 0 ||
	    bc_set_str(req, "name_contains", name_contains) != 0 ||
	    bc_set_str(req, "state", state) != 0) {
		json_decref(req);
		return (bc_fail(BUREAU_EARG, "invalid filter: not UTF-8"));
	}
	return (bc_a11y_nodes(c, req, nodes_json));
}

int
bureau_a11y_do(bureau_client *c, long id, const char *action, char **done)
{
	json_t *req, *reply = NULL;
	const char *d;
	int rv;

	if (done != NULL)
		*done = NULL;
	if ((req = json_pack("{s:s, s:s, s:I}", "tool", "accessibility",
	         "action", "do", "id", (json_int_t)id)) == NULL)
		return (bc_nomem());
	if (bc_set_str(req, "name", action) != 0) {
		json_decref(req);
		return (bc_fail(BUREAU_EARG, "invalid action: not UTF-8"));
	}
	rv = bc_request(c, req, 0, &reply, NULL);
	json_decref(req);
	d = json_string_value(json_object_get(reply, "done"));
	if (rv == 0 && done != NULL && (*done = strdup(d ? d : "")) == NULL)
		rv = bc_nomem();
	json_decref(reply);
	return (rv);
}

int
bureau_a11y_set_text(bureau_client *c, long id, const char *text)
{
	json_t *req;
	int rv;

	if (text == NULL)
		return (bc_fail(BUREAU_EARG, "no text"));
	if ((req = json_pack("{s:s, s:s, s:I}", "tool", "accessibility",
	         "action", "set_text", "id", (json_int_t)id)) == NULL)
		return (bc_nomem());
	if (bc_set_str(req, "text", text) != 0) {
		json_decref(req);
		return (bc_fail(BUREAU_EARG, "invalid text: not UTF-8"));
	}
	rv = bc_request(c, req, 0, NULL, NULL);
	json_decref(req);
	return (rv);
}

int
bureau_ping(bureau_client *c)
{
	json_t *req = json_pack("{s:s, s:s}", "tool", "system", "action",
	    "ping");
	int rv;

	if (req == NULL)
		return (bc_nomem());
	rv = bc_request(c, req, 0, NULL, NULL);
	json_decref(req);
	return (rv);
}

int
bureau_info(bureau_client *c, struct bureau_info *info)
{
	json_t *req, *reply = NULL, *v;
	char *text = NULL;
	int rv;

	if (info == NULL)
		return (bc_fail(BUREAU_EARG, "no place for the info"));
	memset(info, 0, sizeof(*info));
	req = json_pack("{s:s, s:s}", "tool", "system", "action", "info");
	if (req == NULL)
		return (bc_nomem());
	rv = bc_request(c, req, 0, &reply, &text);
	json_decref(req);
	if (rv != 0)
		goto fail;
	v = json_object_get(reply, "version");
	if (json_is_string(v) &&
	    (info->version = strdup(json_string_value(v))) == NULL) {
		rv = bc_nomem();
		goto fail;
	}
	info->protocol = (int)json_integer_value(
	    json_object_get(reply, "protocol"));
	v = json_object_get(reply, "screen");
	info->screen_width = (int)json_integer_value(
	    json_object_get(v, "width"));
	info->screen_height = (int)json_integer_value(
	    json_object_get(v, "height"));
	v = json_object_get(reply, "scaled");
	info->scaled_width = (int)json_integer_value(
	    json_object_get(v, "width"));
	info->scaled_height = (int)json_integer_value(
	    json_object_get(v, "height"));
	info->json = text;
	json_decref(reply);
	return (0);

fail:
	free(text);
	json_decref(reply);
	bureau_info_clear(info);
	return (rv);
}

void
bureau_info_clear(struct bureau_info *info)
{
	if (info == NULL)
		return;
	free(info->version);
	free(info->json);
	memset(info, 0, sizeof(*info));
}
