/*
 * Unit tests of runtime/reply.c: the base64 written into reply messages
 * against libsodium's (an independent encoder), and the reply text with
 * its image parsed back by jansson.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <sodium.h>

#include "runtime/reply.h"

/* Every length 0..600 (all three tails) of random bytes, and every byte
 * value at each position of a group. */
static void
test_b64_matches_libsodium(void **state)
{
	uint8_t in[600];
	char got[800 + 4], want[800 + 8];
	uint32_t x = 2463534242u;
	size_t n, len;

	(void)state;
	for (n = 0; n < sizeof in; n++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		in[n] = (uint8_t)x;
	}
	for (n = 0; n <= sizeof in; n++) {
		len = bd_b64_encode(in, n, got);
		sodium_bin2base64(want, sizeof want, in, n,
		    sodium_base64_VARIANT_ORIGINAL);
		assert_int_equal(len, strlen(want));
		assert_memory_equal(got, want, len);
	}
	for (int v = 0; v < 256; v++) {
		uint8_t b[3] = { (uint8_t)v, (uint8_t)(255 - v),
			(uint8_t)(v * 7) };

		for (n = 1; n <= 3; n++) {
			len = bd_b64_encode(b, n, got);
			sodium_bin2base64(want, sizeof want, b, n,
			    sodium_base64_VARIANT_ORIGINAL);
			assert_int_equal(len, strlen(want));
			assert_memory_equal(got, want, len);
		}
	}
}

static void
test_reply_with_image(void **state)
{
	struct bd_reply r = { 0 };
	const uint8_t bytes[] = "\x89PNG\r\n\x1a\n and some more bytes";
	json_t *j, *img;
	json_error_t jerr;
	uint8_t back[64];
	size_t n, blen;
	char *text;

	(void)state;
	r.json = strdup("{\"ok\":true,\"elapsed_ms\":1.5}");
	r.json_len = strlen(r.json);
	r.image.mime = "image/png";
	r.image.len = sizeof bytes - 1;
	r.image.buf = cap_alloc(r.image.len);
	assert_non_null(r.image.buf);
	memcpy(r.image.buf, bytes, r.image.len);
	r.image.width = 1280;
	r.image.height = 720;
	r.image.frame = 1ull << 40;
	n = bd_reply_size(&r);
	text = malloc(n + 1);
	assert_non_null(text);
	bd_reply_write(&r, text);
	text[n] = '\0';
	assert_int_equal(strlen(text), n);
	j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL)
		fail_msg("%s: %s", text, jerr.text);
	assert_true(json_is_true(json_object_get(j, "ok")));
	img = json_object_get(j, "image");
	assert_string_equal(
	    json_string_value(json_object_get(img, "mime_type")), "image/png");
	assert_int_equal(json_integer_value(json_object_get(img, "width")),
	    1280);
	assert_int_equal(json_integer_value(json_object_get(img, "height")),
	    720);
	assert_int_equal(json_integer_value(json_object_get(img, "frame")),
	    1ll << 40);
	assert_int_equal(sodium_base642bin(back, sizeof back,
	                     json_string_value(json_object_get(img, "data")),
	                     json_string_length(json_object_get(img, "data")),
	                     NULL, &blen, NULL, sodium_base64_VARIANT_ORIGINAL),
	    0);
	assert_int_equal(blen, sizeof bytes - 1);
	assert_memory_equal(back, bytes, blen);
	json_decref(j);
	free(text);
	bd_reply_clear(&r);
	assert_null(r.image.buf);

	/* without an image: the text as it is */
	r.json = strdup("{\"ok\":true}");
	r.json_len = strlen(r.json);
	assert_int_equal(bd_reply_size(&r), r.json_len);
	text = calloc(1, r.json_len + 1);
	assert_non_null(text);
	bd_reply_write(&r, text);
	assert_string_equal(text, "{\"ok\":true}");
	free(text);
	bd_reply_clear(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64_matches_libsodium),
		cmocka_unit_test(test_reply_with_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
