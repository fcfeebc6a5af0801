/*
 * runtime/reply.h: a reply on its way to the wire. The reply object is
 * serialised by jansson without its image; the image's base64 is written
 * by bd_reply_write straight into the message that is sent, after the
 * object's other fields. A 100 KB screenshot thus costs one pass of base64
 * into its final place, not a base64 string, a JSON copy that escapes it
 * byte by byte and a copy of that into the message.
 */
#ifndef BUREAU_RUNTIME_REPLY_H
#define BUREAU_RUNTIME_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "tools/tool.h"

struct bd_reply {
	char *json;      /* the reply object without "image", malloc'd */
	size_t json_len; /* strlen(json); json ends with '}' */
	struct tool_image image; /* image.buf NULL: none; owned */
};

/* Bytes of the whole reply text. */
size_t bd_reply_size(const struct bd_reply *r);
/* Write the whole reply text (bd_reply_size bytes, no NUL) to dst:
 * r->json with "image": {mime_type, width, height, frame, data} added as
 * its last field. */
void bd_reply_write(const struct bd_reply *r, char *dst);
/* Free what r holds and zero it. */
void bd_reply_clear(struct bd_reply *r);

/* Standard base64 with padding (RFC 4648) of in[0..n) into out, which has
 * room for 4 * ((n + 2) / 3) bytes; returns that count. No NUL. */
size_t bd_b64_encode(const uint8_t *in, size_t n, char *out);

#endif
