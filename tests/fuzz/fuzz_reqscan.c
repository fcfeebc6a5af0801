/*
 * fuzz_reqscan: runtime/reqscan.c, the pass over the raw request that runs
 * before authentication, against jansson, the parser that reads the
 * request once the client is known.
 *
 * Input: a request, as received.
 *
 * Checked (abort on failure): within the limits, the scan accepts an
 * object exactly when jansson does (jansson alone may still refuse a
 * number too big for it); when both accept, they find the same top-level
 * "token" and the scan's decoding of it is jansson's string, byte for
 * byte; the lenient pass for over-limit requests finds the same token.
 * Skipped: input with a NUL byte (jansson skips one between tokens, the
 * scan refuses it: stricter is safe).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/reqscan.h"

struct fuzz_buf {
	char *p;
	size_t n;
};

static void
fuzz_die(const char *what)
{
	fprintf(stderr, "fuzz_reqscan: %s\n", what);
	abort();
}

static void
fuzz_sink(void *arg, const char *p, size_t n)
{
	struct fuzz_buf *b = arg;
	char *q = realloc(b->p, b->n + n + 1);

	if (q == NULL)
		fuzz_die("out of memory");
	memcpy(q + b->n, p, n);
	b->p = q;
	b->n += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct bd_reqscan_limits lim = { 128, 1 << 17 };
	const char *buf = (const char *)data;
	struct bd_reqscan r, lenient;
	json_error_t err;
	json_t *j, *t;
	int st;

	if (memchr(data, 0, size) != NULL)
		return (0);
	st = bd_reqscan(buf, size, &lim, &r);
	bd_reqscan_token(buf, size, &lenient);
	if (st == BD_REQSCAN_DEPTH || st == BD_REQSCAN_VALUES)
		return (0);
	j = json_loadb(buf, size, JSON_DECODE_ANY, &err);
	if (j != NULL && !json_is_object(j)) {
		if (st != BD_REQSCAN_NOT_OBJECT)
			fuzz_die("jansson reads a non-object the scan refuses");
		json_decref(j);
		return (0);
	}
	if (j != NULL && st != BD_REQSCAN_OK && st != BD_REQSCAN_DUP_TOKEN)
		fuzz_die("jansson accepts an object the scan refuses");
	if (j == NULL && st == BD_REQSCAN_OK &&
	    strstr(err.text, "too big") == NULL &&
	    strstr(err.text, "overflow") == NULL)
		fuzz_die("the scan accepts what jansson refuses");
	if (j != NULL && st == BD_REQSCAN_OK) {
		t = json_object_get(j, "token");
		if ((t != NULL) != (r.token != 0) ||
		    (t != NULL && json_is_string(t) != (r.token == 1)))
			fuzz_die("the scan and jansson disagree on the token");
		if (r.token == 1) {
			struct fuzz_buf b = { NULL, 0 };

			bd_reqscan_unescape(buf + r.token_off, r.token_len,
			    fuzz_sink, &b);
			if (b.n != json_string_length(t) ||
			    (b.n > 0 &&
			        memcmp(b.p, json_string_value(t), b.n) != 0))
				fuzz_die("the token decodes differently");
			free(b.p);
			if (lenient.token != 1 ||
			    lenient.token_off != r.token_off ||
			    lenient.token_len != r.token_len)
				fuzz_die(
				    "the lenient pass finds another token");
		} else if (lenient.token == 1)
			fuzz_die("the lenient pass finds a token that is none");
	}
	json_decref(j);
	return (0);
}
