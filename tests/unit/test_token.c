/*
 * Unit tests: common/token.c, the token check of bureaud, the host agent
 * and Mission Control, and the events key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/token.h"

static void
test_check(void **state)
{
	unsigned char want[TOKEN_HASH_BYTES];

	(void)state;
	token_hash("s3cret", 6, want);
	assert_true(token_check(want, "s3cret", 6));
	assert_false(token_check(want, "s3creT", 6));
	assert_false(token_check(want, "s3cre", 5));
	assert_false(token_check(want, "s3cret!", 7));
	assert_false(token_check(want, "", 0));
	/* the length counts, not a NUL */
	assert_false(token_check(want, "s3cret\0", 7));
}

/* The token hashed in pieces (as bureaud does while unescaping) is the
 * token hashed whole. */
static void
test_pieces(void **state)
{
	unsigned char whole[TOKEN_HASH_BYTES], parts[TOKEN_HASH_BYTES];
	crypto_generichash_state st;

	(void)state;
	token_hash("abc/def", 7, whole);
	token_hash_init(&st);
	token_hash_add(&st, "abc", 3);
	token_hash_add(&st, "", 0);
	token_hash_add(&st, "/", 1);
	token_hash_add(&st, "def", 3);
	token_hash_final(&st, parts);
	assert_true(token_hash_equal(whole, parts));
	parts[TOKEN_HASH_BYTES - 1] ^= 1;
	assert_false(token_hash_equal(whole, parts));
}

/* docs/protocol.md: BLAKE2b-256 of the token keyed with
 * "bureau-events-v1", here as Python computes it:
 * hashlib.blake2b(b"tok", key=b"bureau-events-v1", digest_size=32). */
static void
test_events_key(void **state)
{
	static const unsigned char want[32] = {
		0xd6,
		0xd3,
		0x7a,
		0x75,
		0x75,
		0x07,
		0xd9,
		0xcc,
		0x84,
		0x15,
		0xae,
		0xd1,
		0x50,
		0xbb,
		0x0b,
		0x9b,
		0xea,
		0xde,
		0x21,
		0x47,
		0xfe,
		0x32,
		0x92,
		0x2f,
		0x9d,
		0x09,
		0x81,
		0xbe,
		0x81,
		0xc6,
		0xf4,
		0x7b,
	};
	unsigned char key[TOKEN_EVENTS_KEY_BYTES], h[TOKEN_HASH_BYTES];

	(void)state;
	assert_int_equal(TOKEN_EVENTS_KEY_BYTES, 32);
	token_events_key("tok", 3, key);
	assert_memory_equal(key, want, 32);
	/* not the plain hash the check uses */
	token_hash("tok", 3, h);
	assert_memory_not_equal(key, h, 32);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_events_key),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
