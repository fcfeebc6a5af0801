/*
 * common/token.c: token hashes, their comparison and the events key (see
 * token.h).
 */
#include <string.h>

#include "common/bureau_protocol.h"
#include "common/token.h"

void
token_hash(const char *tok, size_t len, unsigned char out[TOKEN_HASH_BYTES])
{
	crypto_generichash(out, TOKEN_HASH_BYTES, (const unsigned char *)tok,
	    len, NULL, 0);
}

void
token_hash_init(crypto_generichash_state *st)
{
	crypto_generichash_init(st, NULL, 0, TOKEN_HASH_BYTES);
}

void
token_hash_add(void *st, const char *p, size_t n)
{
	crypto_generichash_update(st, (const unsigned char *)p, n);
}

void
token_hash_final(crypto_generichash_state *st,
    unsigned char out[TOKEN_HASH_BYTES])
{
	crypto_generichash_final(st, out, TOKEN_HASH_BYTES);
}

int
token_hash_equal(const unsigned char a[TOKEN_HASH_BYTES],
    const unsigned char b[TOKEN_HASH_BYTES])
{
	return (sodium_memcmp(a, b, TOKEN_HASH_BYTES) == 0);
}

int
token_check(const unsigned char want[TOKEN_HASH_BYTES], const char *tok,
    size_t len)
{
	unsigned char got[TOKEN_HASH_BYTES];

	token_hash(tok, len, got);
	return (token_hash_equal(want, got));
}

void
token_events_key(const char *tok, size_t len,
    unsigned char key[TOKEN_EVENTS_KEY_BYTES])
{
	crypto_generichash(key, TOKEN_EVENTS_KEY_BYTES,
	    (const unsigned char *)tok, len,
	    (const unsigned char *)BUREAU_EVENTS_KEY_CONTEXT,
	    strlen(BUREAU_EVENTS_KEY_CONTEXT));
}
