/*
 * runtime/reply.c: reply text with the image's base64 written in place.
 *
 * The base64 is this file's own rather than libsodium's
 * sodium_bin2base64, which the rest of bureau uses: libsodium's encoder
 * is constant-time (it must not leak secrets through timing), one
 * character at a time with arithmetic instead of a table. An image is no
 * secret from its recipient, and a table of every 12-bit pair of output
 * characters (8 KiB) encodes about 4x faster.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/reply.h"

static const char bd_b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* The two characters of every 12-bit value, in memory order. */
static uint16_t bd_b64_pairs[4096];
static pthread_once_t bd_b64_once = PTHREAD_ONCE_INIT;

static void
bd_b64_init(void)
{
	for (int i = 0; i < 4096; i++) {
		char c[2] = { bd_b64_alphabet[i >> 6],
			bd_b64_alphabet[i & 63] };

		memcpy(&bd_b64_pairs[i], c, 2);
	}
}

size_t
bd_b64_encode(const uint8_t *in, size_t n, char *out)
{
	char *o = out;
	size_t i = 0;

	pthread_once(&bd_b64_once, bd_b64_init);
	for (; i + 3 <= n; i += 3, o += 4) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
		    in[i + 2];

		memcpy(o, &bd_b64_pairs[v >> 12], 2);
		memcpy(o + 2, &bd_b64_pairs[v & 0xfff], 2);
	}
	if (n - i == 1) {
		o[0] = bd_b64_alphabet[in[i] >> 2];
		o[1] = bd_b64_alphabet[(in[i] & 3) << 4];
		o[2] = o[3] = '=';
		o += 4;
	} else if (n - i == 2) {
		o[0] = bd_b64_alphabet[in[i] >> 2];
		o[1] = bd_b64_alphabet[(in[i] & 3) << 4 | in[i + 1] >> 4];
		o[2] = bd_b64_alphabet[(in[i + 1] & 15) << 2];
		o[3] = '=';
		o += 4;
	}
	return ((size_t)(o - out));
}

/* The image's fields before its data: ,"image":{...,"data":" */
static int
bd_reply_image_head(const struct bd_reply *r, char *buf, size_t size)
{
	return (snprintf(buf, size,
	    ",\"image\":{\"mime_type\":\"%s\",\"width\":%d,\"height\":%d,"
	    "\"frame\":%" PRIu64 ",\"data\":\"",
	    r->image.mime, r->image.width, r->image.height, r->image.frame));
}

size_t
bd_reply_size(const struct bd_reply *r)
{
	char head[256];

	if (r->image.buf == NULL)
		return (r->json_len);
	return (r->json_len +
	    (size_t)bd_reply_image_head(r, head, sizeof head) +
	    4 * ((r->image.len + 2) / 3) + 2);
}

void
bd_reply_write(const struct bd_reply *r, char *dst)
{
	char head[256];
	int n;

	if (r->image.buf == NULL) {
		memcpy(dst, r->json, r->json_len);
		return;
	}
	/* the object without its closing brace, then the image, then it */
	memcpy(dst, r->json, r->json_len - 1);
	dst += r->json_len - 1;
	n = bd_reply_image_head(r, head, sizeof head);
	memcpy(dst, head, (size_t)n);
	dst += n;
	dst += bd_b64_encode(r->image.buf, r->image.len, dst);
	memcpy(dst, "\"}}", 3);
}

void
bd_reply_clear(struct bd_reply *r)
{
	free(r->json);
	cap_free(r->image.buf);
	memset(r, 0, sizeof *r);
}
