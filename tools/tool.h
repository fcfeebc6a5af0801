/*
 * tools: one file per tool, each exporting a `const struct tool_entry` whose
 * table lists the tool's actions (tmux's cmd_entry: the table is the
 * dispatcher). The runtime parses the request, resolves exactly one action
 * from the table, checks auth and policy on it, then calls that action's
 * handler with a struct tool_call; the handler reads its fields through the
 * tool_arg_* helpers (which produce typed errors that name the field), adds
 * its reply fields to call->reply, and returns 0 or the error code it set
 * with tool_fail. Tools never look up their own action, never touch
 * sockets and never parse JSON by hand.
 *
 * Handlers run concurrently on several worker threads: a tool guards its
 * own shared state.
 */
#ifndef BUREAU_TOOLS_TOOL_H
#define BUREAU_TOOLS_TOOL_H

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "capture/capture.h"
#include "common/bureau_protocol.h"

/* The protocol's error codes (bureau_protocol.h), as handlers return them:
 * BD_EINVAL and so on; 0 is success. */
#define TOOL_BD_ERR(n, suffix, name) BD_##suffix = (n),
enum bd_err { BD_OK = 0, BUREAU_PROTOCOL_ERRORS(TOOL_BD_ERR) BD_NERR };
#undef TOOL_BD_ERR

/* Daemon-wide settings the tools need; filled by runtime/config.c. */
struct tool_config {
	const char *display;       /* X display name, NULL = $DISPLAY */
	enum cap_scale_mode scale; /* --scale */
	int scale_w, scale_h;      /* for CAP_SCALE_FIXED */
	int settle_ms;             /* default settle time after input */
	int settle_timeout_ms;     /* default settle bound */
	int draw_cursor;           /* draw the pointer into screenshots */
	int frame_interval_ms;     /* least time between published frames */
	size_t bash_output_max;    /* bash output cap, bytes */
	int workers;               /* requests served at once */
	size_t max_request;        /* --max-request, for `system info` */
	const char *root;          /* confine file/editor paths, or NULL */
	/* Publish an event on the PUB socket: "<topic> <json>" then, when body
	 * is not NULL, "\n" and body. Thread-safe; never blocks for long. */
	void (*publish)(const char *topic, const char *json, const void *body,
	    size_t bodylen);
};

/* An image a reply carries as "image" (tool_set_image). The runtime writes
 * its base64 straight into the reply message (runtime/reply.c) instead of
 * building a JSON string of it and escaping that byte by byte. */
struct tool_image {
	const char *mime; /* a string literal: "image/png" */
	uint8_t *buf;     /* cap_alloc'd, owned by whoever holds the struct */
	size_t len;
	int width, height;
	uint64_t frame;
};

/* One request being served. */
struct tool_call {
	json_t *req;   /* the request object (borrowed) */
	json_t *reply; /* reply object: handlers add fields */
	const struct tool_config *cfg;
	/* The action the runtime resolved from the tool's table, or NULL
	 * for a tool without actions (bash); action is act->name. */
	const struct tool_action *act;
	const char *action;
	int code;                /* set by tool_fail */
	char *message;           /* set by tool_fail, malloc'd */
	struct tool_image image; /* image.buf NULL: none */
};

/* One action of a tool. The same name may appear under two keys (the
 * computer's Anthropic "scroll" and OpenAI "scroll"): name and key together
 * pick the entry. */
struct tool_action {
	const char *name;
	/* The request field that names it: "action" for most tools, "command"
	 * for the editor, "type" for OpenAI computer-use actions. */
	const char *key;
	int (*handle)(struct tool_call *call);
	/* Does it answer promptly (no waiting on programs or timers)? The
	 * runtime keeps its last workers for quick requests, so screenshots
	 * and input never queue behind shell commands. */
	int quick;
};

struct tool_entry {
	const char *name;
	const char *alias; /* another accepted name, or NULL */
	/* Called once at start-up (may be NULL). A tool that cannot start
	 * (no X display, say) returns -1 with *cause: the daemon logs it and
	 * serves the tool's requests with an error naming the cause. */
	int (*init)(const struct tool_config *cfg, char **cause);
	void (*fini)(void); /* at shutdown (may be NULL) */
	/* The tool's actions, ended by an entry whose name is NULL; NULL for
	 * a tool without actions (bash: its "command" is a shell line). */
	const struct tool_action *actions;
	/* Called once the action is resolved and allowed, before its handler
	 * (may be NULL): what every action needs, such as an open display.
	 * Returns 0 or the code it set with tool_fail. */
	int (*prepare)(struct tool_call *call);
	/* A tool without actions: its handler and whether it is quick. */
	int (*handle)(struct tool_call *call);
	int quick;
	/* Words the unknown_action error (may be NULL: the runtime's own
	 * wording). `expected` lists the known names, comma-separated; the
	 * editor answers in the exact words of Anthropic's reference tool. */
	int (*unknown)(struct tool_call *call, const char *name,
	    const char *expected);
};

/* Every tool, NULL-terminated (tools/registry.c). */
extern const struct tool_entry *const tool_table[];
const struct tool_entry *tool_find(const char *name);

/* --- errors --------------------------------------------------------------
 * tool_fail records the first error of a call and returns its code, so a
 * handler can write `return (tool_fail(call, BD_EINVAL, "..."));`.
 * Messages: lowercase, no full stop, quote the subject:
 *   "invalid coordinate '[-1, 20]': outside 1280x800" */
int tool_fail(struct tool_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int tool_failv(struct tool_call *call, int code, const char *fmt, va_list ap);

/* --- arguments -----------------------------------------------------------
 * Each returns 0 and fills *out, or returns the error code after tool_fail
 * with a message that names the field. A missing optional field yields the
 * default; `null` counts as missing. */
int tool_arg_str(struct tool_call *call, const char *field, int required,
    const char *def, const char **out); /* borrowed from the request */
int tool_arg_strn(struct tool_call *call, const char *field, int required,
    size_t maxlen, const char **out, size_t *len); /* may hold NULs */
int tool_arg_int(struct tool_call *call, const char *field, int required,
    long long min, long long max, long long def, long long *out);
int tool_arg_num(struct tool_call *call, const char *field, int required,
    double min, double max, double def, double *out);
int tool_arg_bool(struct tool_call *call, const char *field, int def, int *out);
/* What to run, from exactly one of "command" (a shell line, at most
 * max_command bytes: /bin/sh -c) and "argv" (1..max_args strings, no NUL,
 * the first not empty). *out is a malloc'd NULL-terminated array whose
 * strings are borrowed from the request: free the array only. */
int tool_arg_argv(struct tool_call *call, size_t max_args, size_t max_command,
    char ***out);
/* An array of exactly two integers ("coordinate": [x, y]). */
int tool_arg_pair(struct tool_call *call, const char *field, int required,
    int *a, int *b, int *present);
/* Base64 decode a string field into a malloc'd buffer (caller frees). */
int tool_arg_base64(struct tool_call *call, const char *field, int required,
    uint8_t **out, size_t *len);
/* Is the field present and not null? */
int tool_arg_has(struct tool_call *call, const char *field);

/* --- reply helpers -------------------------------------------------------- */
void tool_set_str(struct tool_call *call, const char *field, const char *s);
void tool_set_strn(struct tool_call *call, const char *field, const char *s,
    size_t len); /* invalid UTF-8 is replaced by U+FFFD */
/* A new JSON string of s[0..len); invalid UTF-8 bytes become U+FFFD.
 * NULL only when out of memory. */
json_t *tool_json_text(const char *s, size_t len);
void tool_set_int(struct tool_call *call, const char *field, long long v);
void tool_set_bool(struct tool_call *call, const char *field, int v);
void tool_set_json(struct tool_call *call, const char *field, json_t *v);
/* "output": text */
void tool_set_output(struct tool_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Base64 of buf as a string field. */
int tool_set_base64(struct tool_call *call, const char *field, const void *buf,
    size_t len);
/* "image": {mime_type, data (base64), width, height, frame}. Takes buf
 * (cap_alloc'd): the call frees it once the reply is sent. mime must be a
 * string literal. */
void tool_set_image(struct tool_call *call, const char *mime, uint8_t *buf,
    size_t len, int width, int height, uint64_t frame);

/* --- policy (tools/policy.c) -------------------------------------------- */
/* Resolve a client path under cfg->root (when set) without following a
 * symlink out of it: returns a malloc'd absolute path in *out, or fails
 * with permission_denied / invalid_argument naming the field. */
int tool_path(struct tool_call *call, const char *field, const char *path,
    char **out);

/* Base64 helpers (libsodium, original variant with padding). */
char *tool_b64_encode(const void *buf, size_t len, size_t *outlen);
int tool_b64_decode(const char *s, size_t slen, uint8_t **out, size_t *len);

/* --- shutdown (tools/shutdown.c) ------------------------------------------
 * The runtime calls tool_shutdown() once when the daemon stops, before it
 * waits for the workers and before any fini: a handler that waits for
 * seconds (a timer, a program) must return early, within a few hundred ms,
 * either by sleeping with tool_sleep or by checking tool_stopping in its
 * wait loop. Thread-safe. */
void tool_shutdown(void);
int tool_stopping(void);
/* Sleep for seconds: 0 after the full time, -1 as soon as the daemon
 * stops (at once if it already has). */
int tool_sleep(double seconds);
/* pthread_cond_timedwait (deadline on CLOCK_REALTIME) that also returns
 * ECANCELED once the daemon stops. It may return 0 without a signal, as
 * pthread_cond_timedwait may: re-check the condition. */
int tool_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m,
    const struct timespec *deadline);

/* The monotonic clock (x11/clock.h) in milliseconds and nanoseconds. */
double tool_now_ms(void);
uint64_t tool_now_ns(void);

#endif
