/*
 * libbureau transport: the nng REQ socket, one context per call, the reply
 * checks, the error codes and the per-thread error message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <sodium.h>

#include "host-bridge/lib/internal.h"

struct bureau_client {
	nng_socket sock;
	nng_dialer dialer;
	char *url;
	char *token;
	atomic_int timeout_ms;
	atomic_int npipes; /* connected pipes: tells "no connection" from
	                      "no reply" when a call times out */
	atomic_uint_fast64_t next_id;
	atomic_size_t max_reply;   /* NNG_OPT_RECVMAXSZ of the connection */
	atomic_size_t max_request; /* the daemon's --max-request, 0 = not
	                              asked yet on this connection */
};

/* --- errors ------------------------------------------------------------ */

/* The protocol's names, by -code - 1 (common/bureau_protocol.h). */
#define BC_CODE_NAME(n, suffix, name) [(n)-1] = name,
static const char *const bc_daemon_codes[] = { BUREAU_PROTOCOL_ERRORS(
    BC_CODE_NAME) };
#undef BC_CODE_NAME
#define BC_NCODES (sizeof(bc_daemon_codes) / sizeof(bc_daemon_codes[0]))

const char *
bureau_error_name(int code)
{
	if (code == 0)
		return ("ok");
	/* the list has gaps: 14 is libbureau's own BUREAU_EUNKNOWN */
	if (code < 0 && (size_t)-code <= BC_NCODES &&
	    bc_daemon_codes[-code - 1] != NULL)
		return (bc_daemon_codes[-code - 1]);
	switch (code) {
	case BUREAU_EUNKNOWN:
		return ("unknown_error");
	case BUREAU_ECONNECT:
		return ("connect_failed");
	case BUREAU_ENOREPLY:
		return ("no_reply");
	case BUREAU_EMALFORMED:
		return ("malformed_reply");
	case BUREAU_EARG:
		return ("bad_argument");
	case BUREAU_ENOMEM:
		return ("out_of_memory");
	}
	return ("unknown_error");
}

static int
bc_code_of(const char *name)
{
	size_t i;

	for (i = 0; i < BC_NCODES; i++)
		if (bc_daemon_codes[i] != NULL &&
		    strcmp(name, bc_daemon_codes[i]) == 0)
			return (-(int)i - 1);
	return (BUREAU_EUNKNOWN);
}

static pthread_once_t bc_once = PTHREAD_ONCE_INIT;
/* The last error of each thread, in thread-local storage with no
 * destructor: a library loaded by an FFI (koffi, ctypes) may be unmapped
 * while its threads still end, and a pthread key destructor would then
 * jump into unmapped code. Longer messages are cut. */
static __thread char bc_err_msg[2048];

static void
bc_init(void)
{
	/* Only the base64 helpers are used; they need no init, but calling
	 * it once keeps libsodium's contract. */
	if (sodium_init() < 0)
		abort(); /* libsodium's own advice: it cannot work at all */
}

int
bc_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(bc_err_msg, sizeof bc_err_msg, fmt, ap);
	va_end(ap);
	return (code);
}

const char *
bureau_client_error(const bureau_client *c)
{
	(void)c;
	return (bc_err_msg);
}

void
bureau_free(void *p)
{
	free(p);
}

/* --- connection -------------------------------------------------------- */

static void
bc_pipe_event(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	bureau_client *c = arg;

	(void)p;
	if (ev == NNG_PIPE_EV_ADD_POST) {
		/* A new connection may be a restarted daemon with another
		 * --max-request: ask again. */
		atomic_store(&c->max_request, 0);
		atomic_fetch_add(&c->npipes, 1);
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		atomic_fetch_sub(&c->npipes, 1);
	}
}

static int
bc_ms(double seconds)
{
	if (seconds <= 0)
		return (30000);
	if (seconds > INT_MAX / 1000.0)
		return (INT_MAX);
	return ((int)(seconds * 1000.0 + 0.5));
}

int
bureau_connect(const char *url, const char *token, double timeout,
    bureau_client **out)
{
	bureau_client *c;
	int rv;

	pthread_once(&bc_once, bc_init);
	if (out == NULL)
		return (bc_fail(BUREAU_EARG, "no place for the client"));
	*out = NULL;
	if (url == NULL)
		url = BUREAU_DEFAULT_URL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	atomic_init(&c->timeout_ms, bc_ms(timeout));
	atomic_init(&c->npipes, 0);
	atomic_init(&c->next_id, 1);
	atomic_init(&c->max_reply, BUREAU_DEFAULT_MAX_REPLY);
	atomic_init(&c->max_request, 0);
	if ((c->url = strdup(url)) == NULL ||
	    (token != NULL && (c->token = strdup(token)) == NULL)) {
		free(c->url);
		free(c);
		return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	}
	if ((rv = nng_req0_open(&c->sock)) != 0) {
		free(c->token);
		free(c->url);
		free(c);
		return (bc_fail(BUREAU_ECONNECT, "cannot open a req socket: %s",
		    nng_strerror(rv)));
	}
	/*
	 * Never resend a request on a timer: actions such as "type" are not
	 * idempotent, and a long bash command would run twice.
	 */
	if ((rv = nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME,
	         NNG_DURATION_INFINITE)) != 0 ||
	    /* nng checks a message's announced length before allocating
	     * it, so this bounds what a hostile daemon can make us hold. */
	    (rv = nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ,
	         BUREAU_DEFAULT_MAX_REPLY)) != 0 ||
	    (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 100)) != 0 ||
	    (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 1000)) != 0 ||
	    (rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, bc_pipe_event,
	         c)) != 0 ||
	    (rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, bc_pipe_event,
	         c)) != 0) {
		bureau_close(c);
		return (bc_fail(BUREAU_ECONNECT, "cannot set up the socket: %s",
		    nng_strerror(rv)));
	}
	/* Non-blocking: nng keeps dialling in the background until the daemon
	 * is there, and redials when the connection drops. */
	if ((rv = nng_dial(c->sock, c->url, &c->dialer, NNG_FLAG_NONBLOCK)) !=
	    0) {
		bc_fail(BUREAU_ECONNECT, "cannot dial '%s': %s", c->url,
		    nng_strerror(rv));
		bureau_close(c);
		return (BUREAU_ECONNECT);
	}
	*out = c;
	return (0);
}

int
bureau_set_timeout(bureau_client *c, double timeout)
{
	if (c == NULL || !(timeout > 0))
		return (bc_fail(BUREAU_EARG,
		    "invalid timeout '%g': not above 0", timeout));
	atomic_store(&c->timeout_ms, bc_ms(timeout));
	return (0);
}

int
bureau_set_max_reply(bureau_client *c, size_t bytes)
{
	int rv;

	if (c == NULL || bytes < BUREAU_MIN_MAX_REPLY || bytes > SIZE_MAX / 2)
		return (bc_fail(BUREAU_EARG,
		    "invalid max reply '%zu': not in %u..%zu bytes", bytes,
		    BUREAU_MIN_MAX_REPLY, SIZE_MAX / 2));
	if ((rv = nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, bytes)) != 0)
		return (bc_fail(BUREAU_EARG, "cannot set max reply '%zu': %s",
		    bytes, nng_strerror(rv)));
	atomic_store(&c->max_reply, bytes);
	/*
	 * nng gives a connection its limit when its handshake ends, and
	 * tells us of it (NNG_PIPE_EV_ADD_POST) only later: closing the
	 * connection we know of missed one made in between, which then
	 * took a reply over the new limit (the Python client's max_reply
	 * got a MalformedReply in about 1 of 100 runs of
	 * test_client_limits). The dialer goes, with every connection of
	 * its own, made or in the making, and a new one dials: what it
	 * connects holds the limit from its first byte.
	 */
	(void)nng_dialer_close(c->dialer);
	if ((rv = nng_dial(c->sock, c->url, &c->dialer, NNG_FLAG_NONBLOCK)) !=
	    0)
		return (bc_fail(BUREAU_ECONNECT, "cannot dial '%s': %s", c->url,
		    nng_strerror(rv)));
	return (0);
}

size_t
bureau_max_reply(const bureau_client *c)
{
	return (c != NULL ? atomic_load(&c->max_reply) : 0);
}

int
bc_timeout_ms(const bureau_client *c)
{
	return (atomic_load(&c->timeout_ms));
}

void
bureau_close(bureau_client *c)
{
	if (c == NULL)
		return;
	/* nng 1.11 (third_party/nng, patched) closes a socket with a message
	 * in flight or a redial under way without waiting and without a
	 * leak (tests/unit/test_nng_close.c, test_client_close's cycles):
	 * the waits Debian's 1.5.2 needed here are gone. */
	nng_close(c->sock);
	if (c->token != NULL)
		sodium_memzero(c->token, strlen(c->token));
	free(c->token);
	free(c->url);
	free(c);
}

/* --- one request ------------------------------------------------------- */

static int
bc_transport_fail(bureau_client *c, int rv, int timeout_ms)
{
	if (rv == NNG_ETIMEDOUT) {
		if (atomic_load(&c->npipes) == 0)
			return (bc_fail(BUREAU_ECONNECT,
			    "no connection to '%s' within %.1f s", c->url,
			    timeout_ms / 1000.0));
		return (
		    bc_fail(BUREAU_ENOREPLY, "no reply from '%s' within %.1f s",
		        c->url, timeout_ms / 1000.0));
	}
	if (rv == NNG_ENOMEM)
		return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	/*
	 * With resends off (NNG_OPT_REQ_RESENDTIME), REQ fails a call whose
	 * connection closed instead of sending it again. nng closes it itself
	 * on a reply over NNG_OPT_RECVMAXSZ, refused from its announced
	 * length before any of it is read, and does not say which: name the
	 * limit as one of the causes.
	 */
	if (rv == NNG_ECONNRESET || rv == NNG_ECONNSHUT) {
		return (bc_fail(BUREAU_EIO,
		    "connection to '%s' closed during the call: the daemon "
		    "went "
		    "away, dropped the request, or sent a reply over the "
		    "%zu-byte limit (bureau_set_max_reply)",
		    c->url, atomic_load(&c->max_reply)));
	}
	return (bc_fail(BUREAU_ECONNECT, "cannot talk to '%s': %s", c->url,
	    nng_strerror(rv)));
}

/* Send buf, wait for the reply; *out is malloc'd with a NUL after *outlen. */
static int
bc_roundtrip(bureau_client *c, const char *buf, size_t len, int timeout_ms,
    nng_msg **out)
{
	nng_ctx ctx;
	nng_aio *aio = NULL;
	nng_msg *msg = NULL;
	nng_time start;
	nng_duration left;
	int rv, ret;

	*out = NULL;
	if ((rv = nng_ctx_open(&ctx, c->sock)) != 0)
		return (bc_transport_fail(c, rv, timeout_ms));
	if ((rv = nng_aio_alloc(&aio, NULL, NULL)) != 0 ||
	    (rv = nng_msg_alloc(&msg, 0)) != 0 ||
	    (rv = nng_msg_append(msg, buf, len)) != 0) {
		ret = bc_transport_fail(c, rv, timeout_ms);
		goto fail;
	}
	start = nng_clock();
	nng_aio_set_timeout(aio, timeout_ms);
	nng_aio_set_msg(aio, msg);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0) {
		ret = bc_transport_fail(c, rv, timeout_ms);
		goto fail; /* a failed send leaves msg with us */
	}
	msg = NULL;

	left = timeout_ms - (nng_duration)(nng_clock() - start);
	nng_aio_set_timeout(aio, left > 0 ? left : 1);
	nng_ctx_recv(ctx, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0) {
		ret = bc_transport_fail(c, rv, timeout_ms);
		goto fail;
	}
	*out = nng_aio_get_msg(aio);
	nng_aio_free(aio);
	nng_ctx_close(ctx);
	return (0);

fail:
	if (msg != NULL)
		nng_msg_free(msg);
	if (aio != NULL)
		nng_aio_free(aio);
	nng_ctx_close(ctx);
	return (ret);
}

/* Is r a protocol reply to the request with this id? 0, or the error. */
static int
bc_check(const json_t *r, const json_t *id)
{
	const json_t *ok, *rid, *err;
	const char *code, *msg;
	int rv;

	ok = json_object_get(r, "ok");
	if (!json_is_object(r) || !json_is_boolean(ok))
		return (bc_fail(BUREAU_EMALFORMED,
		    "malformed reply: not an object with a boolean 'ok'"));
	rid = json_object_get(r, "id");
	/* A daemon that could not parse the request cannot echo its id. */
	if ((rid != NULL || json_is_true(ok)) && !json_equal(rid, id))
		return (bc_fail(BUREAU_EMALFORMED,
		    "malformed reply: its 'id' is not the request's"));
	if (json_is_true(ok))
		return (0);
	err = json_object_get(r, "error");
	code = json_string_value(json_object_get(err, "code"));
	msg = json_string_value(json_object_get(err, "message"));
	if (code == NULL)
		return (bc_fail(BUREAU_EMALFORMED,
		    "malformed reply: ok is false "
		    "but 'error.code' is missing"));
	rv = bc_code_of(code);
	if (msg == NULL)
		return (bc_fail(rv, "%s", code));
	if (rv == BUREAU_EUNKNOWN)
		return (bc_fail(rv, "%s: %s", code, msg));
	return (bc_fail(rv, "%s", msg));
}

/*
 * The daemon's largest request: its `system info` "max_request" (asked once
 * per connection), else bureaud's default, in *max. nng drops a larger
 * request and the connection with it, so the caller would only see the
 * drop. Returns 0, or the transport error that stopped the asking.
 */
static int
bc_max_request(bureau_client *c, const json_t *orig, int timeout_ms,
    size_t *max)
{
	json_t *req, *r = NULL, *tok;
	json_int_t n;
	int rv;

	if ((*max = atomic_load(&c->max_request)) != 0)
		return (0);
	*max = BUREAU_MAX_REQUEST;
	if ((req = json_pack("{s:s, s:s}", "tool", "system", "action",
	         "info")) == NULL)
		return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	/* A raw request may carry its own token (bureau call without one). */
	if (c->token == NULL && (tok = json_object_get(orig, "token")) != NULL)
		json_object_set(req, "token", tok);
	rv = bc_request(c, req, timeout_ms, &r, NULL);
	if (rv == 0 &&
	    (n = json_integer_value(json_object_get(r, "max_request"))) > 0) {
		*max = (size_t)n;
		atomic_store(&c->max_request, *max);
	}
	json_decref(r);
	json_decref(req);
	/* No daemon, no request either: fail now rather than wait twice. A
	 * daemon that refused (unauthorized, an older one) leaves the
	 * default. */
	if (rv == BUREAU_ECONNECT || rv == BUREAU_ENOREPLY ||
	    rv == BUREAU_ENOMEM)
		return (rv);
	return (0);
}

/* Is c a character of standard base64 (padding included)? */
static int
bc_is_b64(unsigned char c)
{
	return ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=');
}

/* Is key the last member of object o? */
static int
bc_last_key_is(json_t *o, const char *key)
{
	const char *last = NULL;
	void *it;

	for (it = json_object_iter(o); it != NULL;
	     it = json_object_iter_next(o, it))
		last = json_object_iter_key(it);
	return (last != NULL && strcmp(last, key) == 0);
}

/*
 * A screenshot reply, parsed without running its base64 through jansson's
 * lexer, which takes every string apart a byte at a time (1 ms per 100 KB,
 * more than the rest of a screenshot's trip through the client). bureaud
 * writes the image last, its data last in it: the text ends with
 * "data":"<base64>"}}. Then the rest, with the data emptied, is parsed as
 * JSON, and the data put back as the string it is (base64 needs no
 * escapes, so the value is what jansson would have made of it). NULL when
 * the reply does not have that shape: the caller parses it whole.
 */
json_t *
bc_parse_image_reply(char *in, size_t inlen)
{
	static const char key[] = "\"data\":\"";
	size_t klen = sizeof key - 1, end, start;
	json_t *r, *img, *data;
	char save[3];

	if (inlen < klen + 3 || memcmp(in + inlen - 3, "\"}}", 3) != 0)
		return (NULL);
	end = inlen - 3;
	for (start = end; start > 0 && bc_is_b64((unsigned char)in[start - 1]);
	     start--)
		;
	if (start < klen || memcmp(in + start - klen, key, klen) != 0 ||
	    end - start < 3)
		return (NULL);
	/* "data":"" then the closing braces over the data's first bytes */
	memcpy(save, in + start, 3);
	memcpy(in + start, "\"}}", 3);
	r = json_loadb(in, start + 3, JSON_ALLOW_NUL, NULL);
	memcpy(in + start, save, 3);
	/* The emptied string must be the image's data, not another's:
	 * "image" is the last member of the reply and "data" the last of
	 * the image (jansson keeps members in order). */
	img = json_object_get(r, "image");
	data = json_object_get(img, "data");
	if (!json_is_string(data) || json_string_length(data) != 0 ||
	    !bc_last_key_is(r, "image") || !bc_last_key_is(img, "data") ||
	    (data = json_stringn_nocheck(in + start, end - start)) == NULL ||
	    json_object_set_new(img, "data", data) != 0) {
		json_decref(r);
		return (NULL);
	}
	return (r);
}

/* req sent, its reply's bytes in *in (malloc'd, NUL after *inlen); *idp
 * the request's id (borrowed from req). */
static int
bc_exchange(bureau_client *c, json_t *req, int timeout_ms, json_t **idp,
    nng_msg **in)
{
	json_t *id;
	char *out = NULL;
	size_t len, max;
	int rv;

	*in = NULL;
	if (c == NULL || !json_is_object(req))
		return (bc_fail(BUREAU_EARG, "no client or no request object"));
	if (timeout_ms <= 0)
		timeout_ms = bc_timeout_ms(c);
	if (c->token != NULL) {
		json_t *tok = json_string(c->token);

		if (tok == NULL)
			return (bc_fail(BUREAU_EARG,
			    "invalid token: not UTF-8 text"));
		if (json_object_set_new(req, "token", tok) != 0)
			return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	}
	if ((id = json_object_get(req, "id")) == NULL) {
		id = json_integer((json_int_t)atomic_fetch_add(&c->next_id, 1));
		if (id == NULL || json_object_set_new(req, "id", id) != 0)
			return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	}
	if ((out = json_dumps(req, JSON_COMPACT)) == NULL)
		return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	len = strlen(out);
	/* nng counts REQ's 4-byte request id against the daemon's limit. */
	if (len + 4 > BUREAU_MIN_MAX_REQUEST &&
	    (rv = bc_max_request(c, req, timeout_ms, &max)) != 0) {
		free(out);
		return (rv);
	}
	if (len + 4 > BUREAU_MIN_MAX_REQUEST && len + 4 > max) {
		free(out);
		return (bc_fail(BUREAU_ETOOLARGE,
		    "request of %zu bytes: over the daemon's limit of %zu "
		    "bytes (its --max-request, less nng's 4-byte header)",
		    len, max));
	}
	*idp = id;
	rv = bc_roundtrip(c, out, len, timeout_ms, in);
	free(out);
	return (rv);
}

int
bc_relay(bureau_client *c, json_t *req, int timeout_ms, nng_msg **reply)
{
	json_t *id;

	return (bc_exchange(c, req, timeout_ms, &id, reply));
}

int
bc_request(bureau_client *c, json_t *req, int timeout_ms, json_t **reply,
    char **text)
{
	json_t *id = NULL, *r = NULL;
	json_error_t jerr;
	char *in = NULL;
	size_t inlen = 0;
	int rv;

	if (reply != NULL)
		*reply = NULL;
	if (text != NULL)
		*text = NULL;
	nng_msg *msg;

	if ((rv = bc_exchange(c, req, timeout_ms, &id, &msg)) != 0)
		return (rv);
	/* The caller keeps the text (NUL-terminated) and its parse, which
	 * points into it for an image's base64 while being built. */
	inlen = nng_msg_len(msg);
	if ((in = malloc(inlen + 1)) == NULL) {
		nng_msg_free(msg);
		return (bc_fail(BUREAU_ENOMEM,
		    "out of memory for a %zu-byte reply", inlen));
	}
	memcpy(in, nng_msg_body(msg), inlen);
	in[inlen] = '\0';
	nng_msg_free(msg);
	if ((r = bc_parse_image_reply(in, inlen)) == NULL &&
	    (r = json_loadb(in, inlen, JSON_ALLOW_NUL, &jerr)) == NULL) {
		rv = bc_fail(BUREAU_EMALFORMED, "malformed reply: %s",
		    jerr.text);
		free(in);
		return (rv);
	}
	rv = bc_check(r, id);
	if (rv == BUREAU_EMALFORMED) {
		json_decref(r);
		free(in);
		return (rv);
	}
	if (reply != NULL)
		*reply = r;
	else
		json_decref(r);
	if (text != NULL)
		*text = in;
	else
		free(in);
	return (rv);
}

int
bureau_call_timeout(bureau_client *c, const char *request, double timeout,
    char **reply)
{
	json_t *req;
	json_error_t jerr;
	int rv;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || request == NULL)
		return (bc_fail(BUREAU_EARG, "no client or no request"));
	if ((req = json_loads(request, JSON_ALLOW_NUL, &jerr)) == NULL)
		return (bc_fail(BUREAU_EBADREQ,
		    "invalid request: %s (line %d, column %d)", jerr.text,
		    jerr.line, jerr.column));
	if (!json_is_object(req)) {
		json_decref(req);
		return (bc_fail(BUREAU_EBADREQ,
		    "invalid request: not a JSON object"));
	}
	rv = bc_request(c, req, timeout > 0 ? bc_ms(timeout) : 0, NULL, reply);
	json_decref(req);
	return (rv);
}

int
bureau_call(bureau_client *c, const char *request, char **reply)
{
	return (bureau_call_timeout(c, request, 0, reply));
}

/* --- base64 and images ------------------------------------------------- */

/* The value of each base64 character, -1 for any other byte. */
static signed char bc_b64_val[256];
static pthread_once_t bc_b64_once = PTHREAD_ONCE_INIT;

static void
bc_b64_fill(void)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	memset(bc_b64_val, -1, sizeof bc_b64_val);
	for (int i = 0; i < 64; i++)
		bc_b64_val[(unsigned char)alphabet[i]] = (signed char)i;
}

/*
 * Strict standard base64 (groups of four, padding only at the end) at table
 * speed: libsodium's decoder is constant-time, for secrets, and 4x slower;
 * a screenshot is no secret from its recipient. 0 and *len, or -1 for
 * anything else (whitespace included): the caller then asks libsodium.
 */
static int
bc_b64_fast(const char *s, size_t slen, unsigned char *out, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char *o = out;
	size_t i, pad = 0;

	pthread_once(&bc_b64_once, bc_b64_fill);
	if (slen % 4 != 0)
		return (-1);
	if (slen > 0 && p[slen - 1] == '=')
		pad = p[slen - 2] == '=' ? 2 : 1;
	for (i = 0; i < slen; i += 4) {
		int a = bc_b64_val[p[i]], b = bc_b64_val[p[i + 1]];
		int c = bc_b64_val[p[i + 2]], d = bc_b64_val[p[i + 3]];

		if (i + 4 == slen && pad > 0) {
			/* "xx==" or "xxx=": the bits past the data are 0 */
			if (a < 0 || b < 0 || (pad == 1 && c < 0) ||
			    (pad == 2 && (b & 15) != 0) ||
			    (pad == 1 && (c & 3) != 0))
				return (-1);
			*o++ = (unsigned char)(a << 2 | b >> 4);
			if (pad == 1)
				*o++ = (unsigned char)(b << 4 | c >> 2);
			break;
		}
		if ((a | b | c | d) < 0)
			return (-1);
		*o++ = (unsigned char)(a << 2 | b >> 4);
		*o++ = (unsigned char)(b << 4 | c >> 2);
		*o++ = (unsigned char)(c << 6 | d);
	}
	*len = (size_t)(o - out);
	return (0);
}

int
bc_b64_decode(const char *s, size_t slen, void **out, size_t *len)
{
	unsigned char *buf;
	size_t max = slen / 4 * 3 + 3;

	*out = NULL;
	*len = 0;
	if ((buf = malloc(max + 1)) == NULL)
		return (bc_fail(BUREAU_ENOMEM, "out of memory"));
	if (bc_b64_fast(s, slen, buf, len) != 0 &&
	    sodium_base642bin(buf, max, s, slen, "\n\r ", len, NULL,
	        sodium_base64_VARIANT_ORIGINAL) != 0) {
		free(buf);
		return (bc_fail(BUREAU_EMALFORMED,
		    "malformed reply: invalid base64"));
	}
	buf[*len] = '\0';
	*out = buf;
	return (0);
}

char *
bc_b64_encode(const void *buf, size_t len)
{
	size_t n = sodium_base64_ENCODED_LEN(len,
	    sodium_base64_VARIANT_ORIGINAL);
	char *s;

	if ((s = malloc(n)) == NULL)
		return (NULL);
	sodium_bin2base64(s, n, buf, len, sodium_base64_VARIANT_ORIGINAL);
	return (s);
}

int
bc_image(const json_t *reply, struct bureau_image *img)
{
	const json_t *im, *data;
	const char *mime;
	int rv;

	memset(img, 0, sizeof(*img));
	im = json_object_get(reply, "image");
	data = json_object_get(im, "data");
	mime = json_string_value(json_object_get(im, "mime_type"));
	if (!json_is_string(data) ||
	    !json_is_integer(json_object_get(im, "width")) ||
	    !json_is_integer(json_object_get(im, "height")))
		return (bc_fail(BUREAU_EMALFORMED,
		    "malformed reply: no 'image' with data, width and height"));
	if ((rv = bc_b64_decode(json_string_value(data),
	         json_string_length(data), &img->data, &img->size)) != 0)
		return (rv);
	snprintf(img->mime_type, sizeof(img->mime_type), "%s",
	    mime != NULL ? mime : "image/png");
	img->width = (int)json_integer_value(json_object_get(im, "width"));
	img->height = (int)json_integer_value(json_object_get(im, "height"));
	img->frame = (uint64_t)json_integer_value(json_object_get(im, "frame"));
	return (0);
}

void
bureau_image_clear(struct bureau_image *img)
{
	if (img == NULL)
		return;
	free(img->data);
	memset(img, 0, sizeof(*img));
}
