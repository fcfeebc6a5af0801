/*
 * runtime/reqscan.h: one validating pass over a raw request, before any of
 * it is built into a tree. It checks the JSON syntax (RFC 8259, UTF-8), the
 * nesting depth and the number of values against limits, and finds the
 * top-level "token" field, in O(1) memory: so a client without the token
 * cannot make the daemon allocate anything for what it sent.
 *
 * Pure functions, no global state, thread-safe: also the fuzz target's
 * entry point.
 */
#ifndef BUREAU_RUNTIME_REQSCAN_H
#define BUREAU_RUNTIME_REQSCAN_H

#include <stddef.h>

/* The deepest nesting a scan can follow (its stack is this many bits). */
#define BD_REQSCAN_DEPTH_CAP 1024

struct bd_reqscan_limits {
	unsigned
	    depth; /* most nested arrays/objects (<= BD_REQSCAN_DEPTH_CAP) */
	size_t values; /* most values in all (scalars, arrays, objects) */
};

enum bd_reqscan_status {
	BD_REQSCAN_OK = 0,
	BD_REQSCAN_SYNTAX,     /* not JSON: see why and pos */
	BD_REQSCAN_NOT_OBJECT, /* valid JSON, but not an object */
	BD_REQSCAN_DEPTH,      /* nested deeper than the limit */
	BD_REQSCAN_VALUES,     /* more values than the limit */
	BD_REQSCAN_DUP_TOKEN,  /* two top-level "token" fields */
};

struct bd_reqscan {
	enum bd_reqscan_status status;
	const char *why; /* BD_REQSCAN_SYNTAX: what was wrong (static text) */
	size_t pos;      /* the byte where the scan stopped */
	/* The top-level "token": 0 absent, 1 a string, -1 another type. For a
	 * string, buf[token_off .. token_off + token_len) is its raw text
	 * between the quotes, escapes not decoded (bd_reqscan_unescape). */
	int token;
	size_t token_off, token_len;
};

/*
 * Scan buf[0..len). Returns out->status (0 when the request is a valid
 * JSON object within the limits). Never allocates; reads each byte once
 * (a top-level key is read twice, to decode it).
 */
int bd_reqscan(const char *buf, size_t len, const struct bd_reqscan_limits *lim,
    struct bd_reqscan *out);

/*
 * Find the top-level "token" of a request that bd_reqscan refused for a
 * limit (depth, values): a lenient pass with a depth counter only, which
 * does not check the structure, so that the daemon can tell an
 * authenticated client which limit it hit and everyone else only that
 * they are not authenticated. Fills out->token, token_off, token_len as
 * bd_reqscan does (a duplicate "token" counts as none); returns
 * out->token.
 */
int bd_reqscan_token(const char *buf, size_t len, struct bd_reqscan *out);

/*
 * Decode the JSON escapes of raw string text that bd_reqscan accepted,
 * handing the UTF-8 bytes to sink in pieces (no allocation, so a long
 * token costs no memory either).
 */
void bd_reqscan_unescape(const char *raw, size_t len,
    void (*sink)(void *arg, const char *p, size_t n), void *arg);

#endif
