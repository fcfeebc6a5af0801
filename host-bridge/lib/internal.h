/*
 * libbureau internals shared by client.c (transport, errors) and tools.c
 * (one function per tool action), with relay.h's call, which the host
 * agent uses too. Not installed.
 */
#ifndef BUREAU_LIB_INTERNAL_H
#define BUREAU_LIB_INTERNAL_H

#include <jansson.h>
#include <nng/nng.h>

#include "host-bridge/include/bureau.h"
#include "host-bridge/lib/relay.h"

/* Internal: not exported from libbureau.so. */
#pragma GCC visibility push(hidden)

/* Record the calling thread's error message; returns code. */
int bc_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Send req (borrowed; the client adds "token" and, when missing, "id") and
 * wait for the reply: timeout_ms <= 0 uses the client's timeout. Returns 0
 * when the reply says ok:true, else the error code (with the message set).
 * *reply (may be NULL) receives the parsed reply whenever one arrived, also
 * for ok:false; the caller releases it with json_decref. *text (may be NULL)
 * receives the reply's bytes verbatim, NUL-terminated (caller frees).
 */
int bc_request(bureau_client *c, json_t *req, int timeout_ms, json_t **reply,
    char **text);

/* The client's timeout in milliseconds. */
int bc_timeout_ms(const bureau_client *c);

/* Decode the reply's "image" object into img (zeroed on failure). */
int bc_image(const json_t *reply, struct bureau_image *img);
/* A reply that ends with its image's base64 (as bureaud writes it), parsed
 * without passing the base64 through jansson's lexer; NULL when the text
 * has another shape (parse it whole then). in is modified and restored. */
json_t *bc_parse_image_reply(char *in, size_t inlen);

/* Base64 (original alphabet, padded) to a malloc'd buffer with a NUL after
 * its *len bytes. */
int bc_b64_decode(const char *s, size_t slen, void **out, size_t *len);
/* A malloc'd NUL-terminated base64 string of len bytes. */
char *bc_b64_encode(const void *buf, size_t len);

#pragma GCC visibility pop

#endif
