/*
 * bureau mcp: the Model Context Protocol server of one desktop (mcp.h).
 *
 * Written here on jansson and libbureau rather than on an MCP library:
 * Debian 12 packages none for C, and what a tools-only server needs of the
 * protocol is small (initialize, ping, tools/list, tools/call, the
 * cancelled notification) over newline-delimited JSON-RPC.
 *
 * Each tools/call runs on a thread of its own (libbureau's calls may run
 * concurrently on one client), so a long bash command does not hold back a
 * screenshot; replies are written whole, one line each, under a lock. A
 * request the host agent refuses or fails comes back as a tool result with
 * isError and the protocol's error code and message, never as a dropped
 * session; only what is wrong with the JSON-RPC message itself (not JSON,
 * no method, an unknown tool) is a JSON-RPC error.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "host-bridge/include/bureau.h"
#include "host-bridge/mcp/mcp.h"

#ifndef BUREAU_VERSION
#define BUREAU_VERSION "unknown"
#endif

/* The newest protocol version first: a client asking for one of these gets
 * it, any other gets the newest (the specification's negotiation). */
static const char *const mcp_versions[] = {
	"2025-11-25",
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
	NULL,
};

/* JSON-RPC error codes. */
#define RPC_PARSE   (-32700)
#define RPC_INVALID (-32600)
#define RPC_METHOD  (-32601)
#define RPC_PARAMS  (-32602)

/* At most this many tool calls run at once; the reader waits for a free
 * one (back pressure on a client that floods). */
#define MCP_MAX_INFLIGHT 16
/* A call's time limit when none is given: the host agent's default wait for
 * an operator's approval (300 s) and a margin, plus the tool's own limit. */
#define MCP_APPROVAL_WAIT 330.0
#define MCP_BASH_DEFAULT  120.0
/* How long a desktop that has not answered yet may take to: a call to a
 * desktop that is not running fails in this time, not in the call's. */
#define MCP_REACH_TIMEOUT 15.0

#define COORD                                                                  \
	"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"                \
	"\"minItems\":2,\"maxItems\":2,"

/* One MCP tool: its name, the bureau tool it sends to, and its input
 * schema (JSON text, checked when the table is loaded). */
struct mcp_tool {
	const char *name;
	const char *wire;
	const char *title;
	const char *description;
	const char *schema;
};

static const struct mcp_tool mcp_tools[] = {
	{ "computer", "computer", "Screen, mouse and keyboard",
	    "Use the desktop's screen, mouse and keyboard: Anthropic's "
	    "computer-use actions. Coordinates are in screenshot space. "
	    "`screenshot` and `zoom` return the screen as an image; every "
	    "input action returns the screenshot taken once the screen has "
	    "settled after it (\"screenshot\": false skips it). `key` takes "
	    "xdotool-style combos such as \"ctrl+shift+t\" or \"Return\"; "
	    "`type` delivers any Unicode text as is.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"screenshot\","
	    "\"zoom\",\"cursor_position\",\"mouse_move\",\"left_click\","
	    "\"right_click\",\"middle_click\",\"double_click\","
	    "\"triple_click\",\"left_click_drag\",\"left_mouse_down\","
	    "\"left_mouse_up\",\"scroll\",\"type\",\"key\",\"hold_key\","
	    "\"wait\"]},"
	    "\"coordinate\":" COORD "\"description\":\"[x, y] in screenshot "
	    "coordinates\"},"
	    "\"start_coordinate\":" COORD "\"description\":\"left_click_drag: "
	    "where the drag starts\"},"
	    "\"text\":{\"type\":\"string\",\"description\":\"type: the text; "
	    "key and hold_key: the key combo; clicks and scroll: modifier "
	    "keys held, e.g. shift\"},"
	    "\"region\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"
	    "\"minItems\":4,\"maxItems\":4,\"description\":\"zoom: [x1, y1, "
	    "x2, y2]\"},"
	    "\"scroll_direction\":{\"type\":\"string\",\"enum\":[\"up\","
	    "\"down\",\"left\",\"right\"]},"
	    "\"scroll_amount\":{\"type\":\"integer\",\"minimum\":1},"
	    "\"duration\":{\"type\":\"number\",\"minimum\":0,\"description\":"
	    "\"hold_key and wait: seconds\"},"
	    "\"screenshot\":{\"type\":\"boolean\",\"description\":\"false: no "
	    "screenshot after an input action\"}},"
	    "\"required\":[\"action\"]}" },
	{ "bash", "bash", "Shell",
	    "Run a command in a persistent bash shell on the desktop (its "
	    "working directory and environment persist between calls, per "
	    "`session`). Returns stdout and stderr together, capped, and the "
	    "exit code. `timeout` (seconds, default 120) kills the command's "
	    "process group; `restart` starts a fresh shell.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"command\":{\"type\":\"string\"},"
	    "\"restart\":{\"type\":\"boolean\"},"
	    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0},"
	    "\"session\":{\"type\":\"string\"}}}" },
	{ "editor", "str_replace_based_edit_tool", "Text editor",
	    "View and edit text files on the desktop: Anthropic's text editor "
	    "tool. `view` shows a file with line numbers (or lists a "
	    "directory), `create` writes a new file, `str_replace` replaces "
	    "exactly one occurrence of old_str, `insert` adds text after "
	    "insert_line, `undo_edit` reverts the last edit of a file.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"command\":{\"type\":\"string\",\"enum\":[\"view\",\"create\","
	    "\"str_replace\",\"insert\",\"undo_edit\"]},"
	    "\"path\":{\"type\":\"string\",\"description\":\"absolute "
	    "path\"},"
	    "\"file_text\":{\"type\":\"string\"},"
	    "\"old_str\":{\"type\":\"string\"},"
	    "\"new_str\":{\"type\":\"string\"},"
	    "\"insert_line\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"view_range\":{\"type\":\"array\",\"items\":{\"type\":"
	    "\"integer\"},\"minItems\":2,\"maxItems\":2}},"
	    "\"required\":[\"command\",\"path\"]}" },
	{ "file", "file", "Files",
	    "Files on the desktop, byte-exact. `read` returns a text file's "
	    "contents as text (any other file as base64 `data`), `write` "
	    "replaces a file atomically from `text` or base64 `data`, `list` "
	    "gives a directory's entries, `stat`, `remove`, `mkdir`, `move` "
	    "(to `to`).",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"read\",\"write\","
	    "\"list\",\"stat\",\"remove\",\"mkdir\",\"move\"]},"
	    "\"path\":{\"type\":\"string\"},"
	    "\"text\":{\"type\":\"string\"},"
	    "\"data\":{\"type\":\"string\",\"description\":\"base64\"},"
	    "\"offset\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"length\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"mode\":{\"type\":\"integer\"},"
	    "\"parents\":{\"type\":\"boolean\"},"
	    "\"recursive\":{\"type\":\"boolean\"},"
	    "\"to\":{\"type\":\"string\"}},"
	    "\"required\":[\"action\",\"path\"]}" },
	{ "window", "window", "Windows",
	    "The desktop's top-level windows: `list` (id, title, class, pid, "
	    "geometry, which is active), `activate`, `close`, `move`, "
	    "`resize` a `window` by id, and `launch` a program (a shell "
	    "command or an argv array), waiting for its window when `wait` is "
	    "true.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"list\",\"activate\","
	    "\"close\",\"move\",\"resize\",\"launch\"]},"
	    "\"window\":{\"type\":\"integer\"},"
	    "\"x\":{\"type\":\"integer\"},\"y\":{\"type\":\"integer\"},"
	    "\"width\":{\"type\":\"integer\",\"minimum\":1},"
	    "\"height\":{\"type\":\"integer\",\"minimum\":1},"
	    "\"command\":{\"type\":[\"string\",\"array\"],\"items\":{\"type\":"
	    "\"string\"}},"
	    "\"wait\":{\"type\":\"boolean\"},"
	    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0}},"
	    "\"required\":[\"action\"]}" },
	{ "clipboard", "clipboard", "Clipboard",
	    "The desktop's clipboard (the CLIPBOARD selection, UTF-8 text): "
	    "`get` its text, `set` it to `text`.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"get\",\"set\"]},"
	    "\"text\":{\"type\":\"string\"}},"
	    "\"required\":[\"action\"]}" },
	{ "process", "process", "Background processes",
	    "Programs in the background: `start` a shell `command` (or an "
	    "`argv` array) and get its pid, `list` them, read new `output` "
	    "from a `cursor`, send a `signal`, `wait` for the exit code.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"start\",\"list\","
	    "\"output\",\"signal\",\"wait\"]},"
	    "\"command\":{\"type\":\"string\"},"
	    "\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	    "\"cwd\":{\"type\":\"string\"},"
	    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
	    "\"string\"}},"
	    "\"pid\":{\"type\":\"integer\"},"
	    "\"cursor\":{\"type\":\"object\"},"
	    "\"signal\":{\"type\":[\"string\",\"integer\"]},"
	    "\"timeout\":{\"type\":\"number\",\"minimum\":0}},"
	    "\"required\":[\"action\"]}" },
	{ "accessibility", "accessibility", "Accessibility tree",
	    "The desktop's controls as a screen reader sees them (AT-SPI): "
	    "`tree` of the applications (or of one `window`), `find` by "
	    "`role` (\"push button\", \"entry\", \"check box\", ...), "
	    "`name`, `name_contains` or `state`, `do` an element's action "
	    "(its first, or `name`), `set_text` of an editable one. `bounds` "
	    "are in screenshot coordinates: a click at their centre lands on "
	    "the control. Faster than a screenshot for finding a control by "
	    "its label.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"tree\",\"find\","
	    "\"do\",\"set_text\"]},"
	    "\"window\":{\"type\":\"integer\"},"
	    "\"depth\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"max_nodes\":{\"type\":\"integer\",\"minimum\":1},"
	    "\"role\":{\"type\":\"string\"},"
	    "\"name\":{\"type\":\"string\"},"
	    "\"name_contains\":{\"type\":\"string\"},"
	    "\"state\":{\"type\":\"string\"},"
	    "\"id\":{\"type\":\"integer\",\"minimum\":1},"
	    "\"text\":{\"type\":\"string\"}},"
	    "\"required\":[\"action\"]}" },
	{ "operator", "operator", "Ask the operator",
	    "Ask the person who oversees this desktop, and wait for their "
	    "answer: for a CAPTCHA, a second factor, a login or a judgement "
	    "call. They may take over the desktop to do it themselves, then "
	    "answer; secrets need not pass through you. `timeout` (seconds) "
	    "bounds the wait; no answer in time is an error.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"action\":{\"type\":\"string\",\"enum\":[\"ask\"]},"
	    "\"message\":{\"type\":\"string\",\"minLength\":1},"
	    "\"timeout\":{\"type\":\"number\",\"minimum\":1}},"
	    "\"required\":[\"action\",\"message\"]}" },
	{ NULL, NULL, NULL, NULL, NULL },
};

struct mcp_call;

struct mcp {
	const struct mcp_opts *o;
	bureau_client *c;
	FILE *out;
	pthread_mutex_t out_mu; /* one whole line at a time on out */
	int out_failed;
	pthread_mutex_t mu; /* inflight, calls */
	pthread_cond_t cv;
	int inflight;
	struct mcp_call *calls; /* running tool calls, for cancellation */
	json_t *tools;          /* the tools/list array, made once */
	int reached; /* the host agent answered since the last transport
	                failure (atomic) */
};

struct mcp_call {
	struct mcp *m;
	json_t *id; /* the JSON-RPC id */
	const struct mcp_tool *tool;
	json_t *args;
	int cancelled;
	struct mcp_call *next;
};

static void
mcp_log(const char *fmt, const char *arg)
{
	fprintf(stderr, "bureau mcp: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
}

/* Write one message as one line; a failure ends the session (the client
 * is gone). */
static void
mcp_send(struct mcp *m, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);

	pthread_mutex_lock(&m->out_mu);
	if (s == NULL || fputs(s, m->out) == EOF ||
	    fputc('\n', m->out) == EOF || fflush(m->out) == EOF) {
		if (!m->out_failed)
			mcp_log("cannot write stdout: %s",
			    s == NULL ? "out of memory" : strerror(errno));
		m->out_failed = 1;
	}
	pthread_mutex_unlock(&m->out_mu);
	free(s);
}

static void
mcp_result(struct mcp *m, json_t *id, json_t *result)
{
	/* The caller keeps its reference to result. */
	json_t *msg = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id,
	    "result", result);

	if (msg != NULL)
		mcp_send(m, msg);
	json_decref(msg);
}

static void
mcp_error(struct mcp *m, json_t *id, int code, const char *message)
{
	json_t *msg = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0",
	    "id", id != NULL ? id : json_null(), "error", "code", code,
	    "message", message);

	if (msg != NULL)
		mcp_send(m, msg);
	json_decref(msg);
}

/* The tools/list array, from the table; NULL if a schema is not JSON (a
 * bug in the table, which the tests would see at once). */
static json_t *
mcp_tool_list(void)
{
	json_t *arr = json_array();
	const struct mcp_tool *t;

	if (arr == NULL)
		return (NULL);
	for (t = mcp_tools; t->name != NULL; t++) {
		json_error_t err;
		json_t *schema = json_loads(t->schema, 0, &err), *e;

		if (schema == NULL) {
			fprintf(stderr,
			    "bureau mcp: the schema of tool %s is not JSON: "
			    "%s at %d\n",
			    t->name, err.text, err.position);
			json_decref(arr);
			return (NULL);
		}
		e = json_pack("{s:s, s:s, s:s, s:o}", "name", t->name, "title",
		    t->title, "description", t->description, "inputSchema",
		    schema);
		if (e == NULL || json_array_append_new(arr, e) != 0) {
			json_decref(arr);
			return (NULL);
		}
	}
	return (arr);
}

static const struct mcp_tool *
mcp_find_tool(const char *name)
{
	const struct mcp_tool *t;

	for (t = mcp_tools; t->name != NULL; t++)
		if (strcmp(t->name, name) == 0)
			return (t);
	return (NULL);
}

static int
mcp_add_text(json_t *content, const char *text)
{
	return (json_array_append_new(content,
	    json_pack("{s:s, s:s}", "type", "text", "text", text)));
}

/*
 * A file read's base64 `data` as a text block when the bytes are UTF-8
 * text (no NUL): 1 when added (and `data` dropped from rest), 0 when the
 * data stays as it is.
 */
static int
mcp_file_text(json_t *content, json_t *rest)
{
	const char *b64 = json_string_value(json_object_get(rest, "data"));
	size_t blen, bin_len = 0;
	unsigned char *bin;
	json_t *s;
	int done = 0;

	if (b64 == NULL)
		return (0);
	blen = strlen(b64);
	if ((bin = malloc(blen / 4 * 3 + 3)) == NULL)
		return (0);
	if (sodium_base642bin(bin, blen / 4 * 3 + 3, b64, blen, NULL, &bin_len,
	        NULL, sodium_base64_VARIANT_ORIGINAL) == 0 &&
	    memchr(bin, '\0', bin_len) == NULL &&
	    (s = json_stringn((const char *)bin, bin_len)) != NULL) {
		/* json_stringn refuses what is not UTF-8. */
		done = json_array_append_new(content,
		           json_pack("{s:s, s:o}", "type", "text", "text",
		               s)) == 0;
		if (done)
			json_object_del(rest, "data");
	}
	free(bin);
	return (done);
}

/* The tools/call result for a reply (or none). */
static json_t *
mcp_tool_result(const struct mcp_call *k, int rv, const char *reply)
{
	json_t *content = json_array(), *r = NULL, *rest = NULL, *img;
	const char *output;
	int is_error = rv != 0;
	char *msg = NULL;

	if (content == NULL)
		return (NULL);
	if (reply != NULL)
		r = json_loads(reply, 0, NULL);
	if (rv != 0) {
		/* The daemon's or the host agent's error, or the transport's
		 * when no reply came. */
		const char *code = bureau_error_name(rv), *text = NULL;
		json_t *e = json_object_get(r, "error");

		if (json_is_object(e)) {
			if (json_is_string(json_object_get(e, "code")))
				code = json_string_value(
				    json_object_get(e, "code"));
			text = json_string_value(json_object_get(e, "message"));
		}
		if (text == NULL)
			text = bureau_client_error(k->m->c);
		if (asprintf(&msg, "%s: %s%s%s%s", code, text,
		        r == NULL && rv == BUREAU_ECONNECT ?
		            " (is the desktop running? bureau status " :
		            "",
		        r == NULL && rv == BUREAU_ECONNECT ?
		            (k->m->o->name != NULL ? k->m->o->name : "NAME") :
		            "",
		        r == NULL && rv == BUREAU_ECONNECT ? ")" : "") < 0)
			msg = NULL;
		mcp_add_text(content, msg != NULL ? msg : code);
		goto done;
	}
	if (!json_is_object(r)) {
		mcp_add_text(content, "malformed_reply: the reply is not JSON");
		is_error = 1;
		goto done;
	}
	/* Text first (what the tool printed), then the other fields as
	 * JSON, then the screenshot. */
	/* shallow: the fields go as they are, the screenshot is only dropped */
	rest = json_copy(r);
	json_object_del(rest, "id");
	json_object_del(rest, "ok");
	json_object_del(rest, "elapsed_ms");
	json_object_del(rest, "image");
	/* What the tool printed, or the operator's answer. */
	if (((output = json_string_value(json_object_get(r, "output"))) !=
	            NULL ||
	        (output = json_string_value(json_object_get(r, "answer"))) !=
	            NULL) &&
	    *output != '\0')
		mcp_add_text(content, output);
	json_object_del(rest, "output");
	json_object_del(rest, "answer");
	if (strcmp(k->tool->wire, "file") == 0)
		mcp_file_text(content, rest);
	if (json_object_size(rest) > 0) {
		char *s = json_dumps(rest, JSON_COMPACT);

		if (s != NULL)
			mcp_add_text(content, s);
		free(s);
	}
	img = json_object_get(r, "image");
	if (json_is_string(json_object_get(img, "data")))
		json_array_append_new(content,
		    json_pack("{s:s, s:O, s:s}", "type", "image", "data",
		        json_object_get(img, "data"), "mimeType",
		        json_is_string(json_object_get(img, "mime_type")) ?
		            json_string_value(
		                json_object_get(img, "mime_type")) :
		            "image/png"));
	if (json_array_size(content) == 0)
		mcp_add_text(content, "ok");
done:
	free(msg);
	json_decref(rest);
	json_decref(r);
	return (
	    json_pack("{s:o, s:b}", "content", content, "isError", is_error));
}

static int
mcp_transport_error(int rv)
{
	return (rv == BUREAU_ECONNECT || rv == BUREAU_ENOREPLY ||
	    rv == BUREAU_EMALFORMED);
}

/*
 * Whether the host agent answers, asked with a ping in a short time while
 * it has not answered yet (a call's own limit is long: an approval may
 * wait minutes). 0, or the transport error with its message.
 */
static int
mcp_reach(struct mcp *m)
{
	char *reply = NULL;
	int rv;

	if (__atomic_load_n(&m->reached, __ATOMIC_ACQUIRE))
		return (0);
	rv = bureau_call_timeout(m->c,
	    "{\"tool\":\"system\",\"action\":\"ping\"}",
	    m->o->timeout > 0 && m->o->timeout < MCP_REACH_TIMEOUT ?
	        m->o->timeout :
	        MCP_REACH_TIMEOUT,
	    &reply);
	bureau_free(reply);
	if (mcp_transport_error(rv))
		return (rv);
	__atomic_store_n(&m->reached, 1, __ATOMIC_RELEASE);
	return (0);
}

/* The call's time limit: the approval wait plus the tool's own. */
static double
mcp_call_timeout(const struct mcp_call *k)
{
	double own = 0;
	json_t *t;

	if (k->m->o->timeout > 0)
		return (k->m->o->timeout);
	if (json_is_number(t = json_object_get(k->args, "timeout")))
		own = json_number_value(t);
	else if (json_is_number(t = json_object_get(k->args, "duration")))
		own = json_number_value(t);
	else if (strcmp(k->tool->wire, "bash") == 0)
		own = MCP_BASH_DEFAULT;
	if (!(own > 0) || own > 86400)
		own = 0;
	return (MCP_APPROVAL_WAIT + own);
}

static void
mcp_call_done(struct mcp_call *k)
{
	struct mcp *m = k->m;
	struct mcp_call **pp;

	pthread_mutex_lock(&m->mu);
	for (pp = &m->calls; *pp != NULL; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	m->inflight--;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	json_decref(k->id);
	json_decref(k->args);
	free(k);
}

static void *
mcp_call_run(void *arg)
{
	struct mcp_call *k = arg;
	json_t *req, *result;
	char *text = NULL, *reply = NULL;
	int rv, cancelled;

	/* The arguments are the request; the tool, the token and the id are
	 * the server's to set. */
	req = json_deep_copy(k->args);
	if (req != NULL) {
		json_object_del(req, "token");
		json_object_del(req, "id");
		json_object_set_new(req, "tool", json_string(k->tool->wire));
		text = json_dumps(req, JSON_COMPACT);
	}
	json_decref(req);
	if (text == NULL)
		rv = BUREAU_ENOMEM;
	else if ((rv = mcp_reach(k->m)) == 0)
		rv = bureau_call_timeout(k->m->c, text, mcp_call_timeout(k),
		    &reply);
	free(text);
	if (mcp_transport_error(rv))
		__atomic_store_n(&k->m->reached, 0, __ATOMIC_RELEASE);
	result = mcp_tool_result(k, rv, reply);
	bureau_free(reply);
	pthread_mutex_lock(&k->m->mu);
	cancelled = k->cancelled;
	pthread_mutex_unlock(&k->m->mu);
	/* A cancelled request gets no response (the specification). */
	if (!cancelled) {
		if (result != NULL)
			mcp_result(k->m, k->id, result);
		else
			mcp_error(k->m, k->id, RPC_INVALID, "out of memory");
	}
	json_decref(result);
	mcp_call_done(k);
	return (NULL);
}

static void
mcp_tools_call(struct mcp *m, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	const struct mcp_tool *t;
	struct mcp_call *k;
	pthread_attr_t attr;
	pthread_t th;
	char *msg = NULL;

	if (name == NULL) {
		mcp_error(m, id, RPC_PARAMS,
		    "params.name: missing or not a string (the tool's name)");
		return;
	}
	if ((t = mcp_find_tool(name)) == NULL) {
		if (asprintf(&msg, "Unknown tool: %s (tools/list has them)",
		        name) < 0)
			msg = NULL;
		mcp_error(m, id, RPC_PARAMS,
		    msg != NULL ? msg : "Unknown tool");
		free(msg);
		return;
	}
	if (args != NULL && !json_is_object(args) && !json_is_null(args)) {
		mcp_error(m, id, RPC_PARAMS,
		    "params.arguments: not an object (the tool's input)");
		return;
	}
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		mcp_error(m, id, RPC_INVALID, "out of memory");
		return;
	}
	k->m = m;
	k->id = json_incref(id);
	k->tool = t;
	k->args = json_is_object(args) ? json_incref(args) : json_object();
	pthread_mutex_lock(&m->mu);
	while (m->inflight >= MCP_MAX_INFLIGHT)
		pthread_cond_wait(&m->cv, &m->mu);
	m->inflight++;
	k->next = m->calls;
	m->calls = k;
	pthread_mutex_unlock(&m->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, mcp_call_run, k) != 0) {
		pthread_mutex_lock(&m->mu);
		k->cancelled = 1; /* answered here */
		pthread_mutex_unlock(&m->mu);
		mcp_error(m, id, RPC_INVALID,
		    "cannot start a thread for the call");
		mcp_call_done(k);
	}
	pthread_attr_destroy(&attr);
}

static void
mcp_cancel(struct mcp *m, json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");
	struct mcp_call *k;

	if (rid == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	for (k = m->calls; k != NULL; k = k->next)
		if (json_equal(k->id, rid))
			k->cancelled = 1;
	pthread_mutex_unlock(&m->mu);
}

static void
mcp_initialize(struct mcp *m, json_t *id, json_t *params)
{
	const char *want = json_string_value(
	    json_object_get(params, "protocolVersion"));
	const char *version = mcp_versions[0];
	char *title = NULL;
	json_t *result;
	int i;

	for (i = 0; want != NULL && mcp_versions[i] != NULL; i++)
		if (strcmp(want, mcp_versions[i]) == 0)
			version = mcp_versions[i];
	if (asprintf(&title, "bureau desktop%s%s",
	        m->o->name != NULL ? " " : "",
	        m->o->name != NULL ? m->o->name : "") < 0)
		title = NULL;
	result = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
	    "protocolVersion", version, "capabilities", "tools", "listChanged",
	    0, "serverInfo", "name", "bureau", "title",
	    title != NULL ? title : "bureau desktop", "version", BUREAU_VERSION,
	    "instructions",
	    "A persistent Linux desktop: take a screenshot with the computer "
	    "tool to see it, then act with its mouse and keyboard actions; "
	    "bash, editor, file, window, clipboard and process work on the "
	    "same desktop. An operator may have to approve some actions, or "
	    "may have taken over (errors say taken_over); wait and retry. "
	    "Ask the operator (the operator tool) when a person must help.");
	free(title);
	if (result == NULL)
		mcp_error(m, id, RPC_INVALID, "out of memory");
	else
		mcp_result(m, id, result);
	json_decref(result);
}

/* One message from the client. */
static void
mcp_message(struct mcp *m, const char *line)
{
	json_error_t err;
	json_t *msg = json_loads(line, JSON_REJECT_DUPLICATES, &err);
	json_t *id, *params;
	const char *method;
	char *text = NULL;

	if (msg == NULL) {
		if (asprintf(&text, "Parse error: %s at character %d", err.text,
		        err.position) < 0)
			text = NULL;
		mcp_error(m, NULL, RPC_PARSE,
		    text != NULL ? text : "Parse error");
		free(text);
		return;
	}
	if (!json_is_object(msg)) {
		mcp_error(m, NULL, RPC_INVALID,
		    json_is_array(msg) ?
		        "Invalid Request: JSON-RPC batches are not supported "
		        "(send one message per line)" :
		        "Invalid Request: not a JSON object");
		goto out;
	}
	id = json_object_get(msg, "id");
	method = json_string_value(json_object_get(msg, "method"));
	params = json_object_get(msg, "params");
	if (id != NULL && !json_is_string(id) && !json_is_integer(id)) {
		mcp_error(m, NULL, RPC_INVALID,
		    "Invalid Request: id must be a string or an integer");
		goto out;
	}
	if (method == NULL) {
		/* A response to a request of ours: we send none. */
		if (id == NULL ||
		    (json_object_get(msg, "result") == NULL &&
		        json_object_get(msg, "error") == NULL))
			mcp_error(m, id, RPC_INVALID,
			    "Invalid Request: no method");
		goto out;
	}
	if (strcmp(json_string_value(json_object_get(msg, "jsonrpc")) != NULL ?
	            json_string_value(json_object_get(msg, "jsonrpc")) :
	            "",
	        "2.0") != 0) {
		if (id != NULL)
			mcp_error(m, id, RPC_INVALID,
			    "Invalid Request: jsonrpc must be \"2.0\"");
		goto out;
	}
	if (params != NULL && !json_is_object(params) &&
	    !json_is_null(params)) {
		if (id != NULL)
			mcp_error(m, id, RPC_PARAMS,
			    "Invalid params: params must be an object");
		goto out;
	}
	if (id == NULL) {
		/* Notifications get no response. */
		if (strcmp(method, "notifications/cancelled") == 0)
			mcp_cancel(m, params);
		goto out;
	}
	if (strcmp(method, "initialize") == 0)
		mcp_initialize(m, id, params);
	else if (strcmp(method, "ping") == 0) {
		json_t *empty = json_object();

		mcp_result(m, id, empty);
		json_decref(empty);
	} else if (strcmp(method, "tools/list") == 0) {
		json_t *r = json_pack("{s:O}", "tools", m->tools);

		mcp_result(m, id, r);
		json_decref(r);
	} else if (strcmp(method, "tools/call") == 0)
		mcp_tools_call(m, id, params);
	else {
		if (asprintf(&text, "Method not found: %s", method) < 0)
			text = NULL;
		mcp_error(m, id, RPC_METHOD,
		    text != NULL ? text : "Method not found");
		free(text);
	}
out:
	json_decref(msg);
}

int
mcp_serve(const struct mcp_opts *o, FILE *in, FILE *out)
{
	struct mcp m = { .o = o, .out = out };
	struct timespec until;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int st = 0, rc;

	/* A client gone mid-reply is a failed write, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (sodium_init() < 0) {
		mcp_log("%s", "libsodium failed to initialise");
		return (1);
	}
	pthread_mutex_init(&m.out_mu, NULL);
	pthread_mutex_init(&m.mu, NULL);
	pthread_cond_init(&m.cv, NULL);
	if ((m.tools = mcp_tool_list()) == NULL)
		return (1);
	if (bureau_connect(o->url, o->token, MCP_APPROVAL_WAIT, &m.c) != 0) {
		mcp_log("%s", bureau_client_error(NULL));
		json_decref(m.tools);
		return (1);
	}
	while (!m.out_failed && (n = getline(&line, &cap, in)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		mcp_message(&m, line);
	}
	free(line);
	if (m.out_failed)
		st = 1;
	/* stdin ended: the client is leaving. Let calls in flight finish for
	 * a moment; then go without them (closing the client under them is
	 * not allowed). */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&m.mu);
	rc = 0;
	while (m.inflight > 0 && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&m.cv, &m.mu, &until);
	if (m.inflight > 0) {
		pthread_mutex_unlock(&m.mu);
		fflush(out);
		_exit(st);
	}
	pthread_mutex_unlock(&m.mu);
	bureau_close(m.c);
	json_decref(m.tools);
	return (st);
}
