/*
 * libbureau: the C client of bureaud's wire protocol v1 (docs/client-c.md).
 *
 * A bureau_client talks to one daemon over an nng REQ socket. It dials in
 * the background and nng redials whenever the connection drops, so a client
 * may be made before its daemon starts and survives a daemon restart.
 *
 * Errors: every function that can fail returns 0 or a negative BUREAU_E*
 * code: one per protocol error code (the daemon said ok:false), then the
 * transport codes and two local ones. bureau_client_error() gives the
 * message of the calling thread's last failure: the daemon's message
 * verbatim when the daemon answered with an error.
 *
 * Ownership: every buffer the library hands back is malloc'd and belongs to
 * the caller, who frees it with free() or bureau_free() (the latter for
 * callers that do not share this library's C runtime, such as ctypes).
 * Result structs are released with their *_clear function. On failure an
 * out-parameter is left zeroed (or NULL) unless its comment says otherwise.
 *
 * Threads: one client may be used by several threads at once. Each call
 * runs on its own nng context, so a long bash command on one thread does not
 * delay a screenshot on another; the daemon serves them concurrently.
 * bureau_client_error() is per thread. bureau_close() must not race other
 * calls on the same client.
 */
#ifndef BUREAU_H
#define BUREAU_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bureau_client bureau_client;

/* The protocol's version (BUREAU_PROTOCOL), default URL
 * (BUREAU_DEFAULT_URL), bureaud's default largest request
 * (BUREAU_MAX_REQUEST) and its error codes, shared with bureaud: in
 * common/ in the source tree, installed beside this header. */
#if defined(__has_include)
#if __has_include("../../common/bureau_protocol.h")
#include "../../common/bureau_protocol.h"
#else
#include "bureau_protocol.h"
#endif
#else
#include "bureau_protocol.h"
#endif

/* The smallest --max-request bureaud accepts. A longer request is checked
 * against the daemon's own limit (its `system info` "max_request", asked
 * once per connection) and refused locally with BUREAU_ETOOLARGE. */
#define BUREAU_MIN_MAX_REQUEST 4096u

#define BUREAU_ERROR_(n, suffix, name) BUREAU_##suffix = -(n),
enum bureau_error {
	BUREAU_OK = 0,
	/* The daemon answered ok:false with this code, one per entry of
	 * BUREAU_PROTOCOL_ERRORS (bureau_protocol.h): BUREAU_EBADREQ
	 * (bad_request, -1), BUREAU_EUNAUTH (unauthorized),
	 * BUREAU_EUNKNOWN_TOOL, BUREAU_EUNKNOWN_ACTION, BUREAU_EINVAL
	 * (invalid_argument), BUREAU_EBOUNDS (out_of_bounds), BUREAU_ETIMEOUT
	 * (timeout: a tool's own time limit), BUREAU_ENOTFOUND, BUREAU_EPERM
	 * (permission_denied), BUREAU_EIO (io_error), BUREAU_ETOOLARGE,
	 * BUREAU_EBUSY, BUREAU_EINTERNAL (internal, -13). */
	BUREAU_PROTOCOL_ERRORS(BUREAU_ERROR_)
	    BUREAU_EUNKNOWN = -14, /* a code newer than this library knows */
	/* Transport. */
	BUREAU_ECONNECT = -20,   /* no connection to the daemon in time, or
	                            a URL nng cannot dial */
	BUREAU_ENOREPLY = -21,   /* connected, but no reply in time */
	BUREAU_EMALFORMED = -22, /* the reply is not a protocol reply */
	/* Local. */
	BUREAU_EARG = -30, /* a NULL or out-of-range argument to a bureau_
	                      function */
	BUREAU_ENOMEM = -31
};
#undef BUREAU_ERROR_

/*
 * The name of a code: the protocol's name for daemon codes
 * ("invalid_argument"), else "connect_failed", "no_reply",
 * "malformed_reply", "bad_argument", "out_of_memory", "ok". Static string.
 */
const char *bureau_error_name(int code);

/*
 * The message of the calling thread's last failed call on any client, ""
 * when there was none. Valid until that thread's next bureau_ call. c may be
 * NULL (for a failed bureau_connect).
 */
const char *bureau_client_error(const bureau_client *c);

/* Frees a buffer returned by the library (same as free()). */
void bureau_free(void *p);

/* --- connection -------------------------------------------------------- */

/*
 * Make a client for the daemon at url (NULL: BUREAU_DEFAULT_URL; tcp://,
 * ipc:// and every scheme nng knows). token (NULL: none) is sent with every
 * request. timeout (seconds; <= 0: 30) bounds each call: connecting, sending
 * and waiting for the reply. Fails only for a URL nng rejects or lack of
 * memory: a daemon that is not (yet) there shows up as BUREAU_ECONNECT from
 * the first call. On success *out is the caller's, released by
 * bureau_close().
 */
int bureau_connect(const char *url, const char *token, double timeout,
    bureau_client **out);

/* Change the per-call timeout (seconds, > 0). */
int bureau_set_timeout(bureau_client *c, double timeout);

/*
 * The largest reply the client accepts, in bytes (default
 * BUREAU_DEFAULT_MAX_REPLY, at least BUREAU_MIN_MAX_REPLY). A daemon is
 * not trusted with the caller's memory: nng refuses a longer reply from its
 * announced length, before reading it, and closes the connection; the call
 * fails at once with BUREAU_EIO, its message naming the limit. Set it
 * before the calls: a new limit takes effect on a new connection, so the
 * client redials (calls in flight fail with BUREAU_EIO).
 */
#define BUREAU_DEFAULT_MAX_REPLY (128u << 20)
#define BUREAU_MIN_MAX_REPLY     4096u
int bureau_set_max_reply(bureau_client *c, size_t bytes);
/* The client's reply limit (0 for NULL). */
size_t bureau_max_reply(const bureau_client *c);

/* Close the socket and free the client. NULL is allowed. Never hangs,
 * whatever is in flight (a late reply, a redial): the nng built in
 * (third_party/nng) closes without waiting for the peer. */
void bureau_close(bureau_client *c);

/* --- raw call -------------------------------------------------------------
 * request is one JSON object in UTF-8 text. The client sets "token" (when it
 * has one) and, when the request has none, an "id"; a request that names its
 * own "id" gets it echoed. *reply receives the daemon's reply text verbatim
 * (NUL-terminated, caller frees) whenever a reply arrived, including an
 * ok:false one; it is NULL otherwise. Returns 0 for ok:true, the BUREAU_E*
 * of the daemon's error code for ok:false, or a transport/local code.
 * bureau_call_timeout uses timeout seconds for this call (<= 0: the
 * client's).
 */
int bureau_call(bureau_client *c, const char *request, char **reply);
int bureau_call_timeout(bureau_client *c, const char *request, double timeout,
    char **reply);

/* --- tool "computer" ------------------------------------------------------
 * Coordinates are in screenshot space. BUREAU_NO_COORD for x (and y) means
 * "where the pointer is" for the actions whose coordinate is optional.
 *
 * Input actions take `struct bureau_image *shot`: NULL asks the daemon for
 * no screenshot ("screenshot": false, faster); otherwise *shot receives the
 * screenshot the daemon took once the screen settled after the action.
 * modifiers: keys held during the action, xdotool style ("shift",
 * "ctrl+alt"), or NULL.
 */
#define BUREAU_NO_COORD INT_MIN

struct bureau_image {
	void *data;  /* the encoded image (malloc'd, owned by the struct) */
	size_t size; /* bytes at data */
	char mime_type[32]; /* "image/png" */
	int width;          /* pixels, screenshot space */
	int height;
	uint64_t frame; /* changes whenever the screen changed */
};

/* Frees img->data and zeroes *img. */
void bureau_image_clear(struct bureau_image *img);

enum bureau_button {
	BUREAU_BUTTON_LEFT,
	BUREAU_BUTTON_RIGHT,
	BUREAU_BUTTON_MIDDLE
};

enum bureau_scroll_dir {
	BUREAU_SCROLL_UP,
	BUREAU_SCROLL_DOWN,
	BUREAU_SCROLL_LEFT,
	BUREAU_SCROLL_RIGHT
};

/* The output structs below are overwritten without being freed first:
 * clear one before reusing it. */
int bureau_screenshot(bureau_client *c, struct bureau_image *img);
/* A full-detail crop of [x1, y1, x2, y2]. */
int bureau_zoom(bureau_client *c, int x1, int y1, int x2, int y2,
    struct bureau_image *img);
int bureau_cursor_position(bureau_client *c, int *x, int *y);
int bureau_mouse_move(bureau_client *c, int x, int y,
    struct bureau_image *shot);
int bureau_click(bureau_client *c, enum bureau_button button, int x, int y,
    const char *modifiers, struct bureau_image *shot);
int bureau_double_click(bureau_client *c, int x, int y, const char *modifiers,
    struct bureau_image *shot);
int bureau_triple_click(bureau_client *c, int x, int y, const char *modifiers,
    struct bureau_image *shot);
/* Left button from (x1, y1) to (x2, y2). */
int bureau_drag(bureau_client *c, int x1, int y1, int x2, int y2,
    struct bureau_image *shot);
int bureau_mouse_down(bureau_client *c, struct bureau_image *shot);
int bureau_mouse_up(bureau_client *c, struct bureau_image *shot);
/* amount: wheel clicks (> 0). */
int bureau_scroll(bureau_client *c, int x, int y, enum bureau_scroll_dir dir,
    int amount, const char *modifiers, struct bureau_image *shot);
/* Any UTF-8 text, delivered as is. */
int bureau_type(bureau_client *c, const char *text, struct bureau_image *shot);
/* A key combo: "ctrl+shift+t", "Return". */
int bureau_key(bureau_client *c, const char *combo, struct bureau_image *shot);
int bureau_hold_key(bureau_client *c, const char *combo, double duration,
    struct bureau_image *shot);
int bureau_wait(bureau_client *c, double duration, struct bureau_image *shot);

/* --- tool "bash" ----------------------------------------------------------
 * Run command in the persistent shell session (NULL: "default"). timeout
 * (seconds; <= 0: the daemon's default of 120) kills the command's process
 * group; this call then waits at least that long plus a margin for the
 * reply. *output (stdout and stderr, NUL-terminated, caller frees; a NUL
 * byte the command printed ends it early: bureau_call has the exact text)
 * and *exit_code may be NULL when not wanted.
 */
int bureau_bash(bureau_client *c, const char *command, const char *session,
    double timeout, char **output, int *exit_code);
/* Kill the session's shell and start a fresh one. */
int bureau_bash_restart(bureau_client *c, const char *session);

/* --- tool "file" ------------------------------------------------------- */
/* The whole file: *data (caller frees; NUL-terminated for convenience, the
 * NUL not counted) of *len bytes. */
int bureau_file_read(bureau_client *c, const char *path, void **data,
    size_t *len);
/* Replace path atomically with len bytes. mode: permission bits, or -1 for
 * the daemon's default. parents: make missing parent directories. One
 * request carries it, and bureaud refuses requests over its --max-request
 * (64 MiB by default, dropping the connection), so data whose base64 would
 * not fit fails here with BUREAU_ETOOLARGE: send such a file in pieces with
 * bureau_call
 * ("offset", "append"). */
int bureau_file_write(bureau_client *c, const char *path, const void *data,
    size_t len, int mode, int parents);

/* --- tool "accessibility" ---------------------------------------------
 * The AT-SPI tree (DESIGN.md, "The accessibility tool"). The nodes come
 * back as the reply's JSON text of the "nodes" array (*nodes_json, caller
 * frees): [{"id", "role", "name", "states", "bounds", "text"?, "value"?,
 * "actions", "children"}], bounds in screenshot space.
 * window: an X window id from window list, or 0 for the whole desktop;
 * depth and max_nodes: <= 0 for the daemon's defaults. find's filters may
 * be NULL. do: action NULL runs the element's first action; *done (may be
 * NULL; caller frees) names the action run.
 */
int bureau_a11y_tree(bureau_client *c, unsigned long window, int depth,
    int max_nodes, char **nodes_json);
int bureau_a11y_find(bureau_client *c, const char *role, const char *name,
    const char *name_contains, const char *state, char **nodes_json);
int bureau_a11y_do(bureau_client *c, long id, const char *action, char **done);
int bureau_a11y_set_text(bureau_client *c, long id, const char *text);

/* --- tool "system" ----------------------------------------------------- */
int bureau_ping(bureau_client *c);

struct bureau_info {
	char *version;    /* daemon version (malloc'd) */
	int protocol;     /* protocol version */
	int screen_width; /* the X screen */
	int screen_height;
	int scaled_width; /* screenshot space */
	int scaled_height;
	char *json; /* the whole reply, for the other fields (malloc'd) */
};
int bureau_info(bureau_client *c, struct bureau_info *info);
/* Frees the strings and zeroes *info. */
void bureau_info_clear(struct bureau_info *info);

#ifdef __cplusplus
}
#endif

#endif
