/*
 * common/token: the one token check of bureaud, the host agent and Mission
 * Control, and the events key derived from a token.
 *
 * A token is kept and compared as its BLAKE2b hash: sodium_memcmp of two
 * hashes takes the same time whatever the tokens hold and whatever their
 * lengths, so a wrong guess learns nothing from the reply's timing.
 */
#ifndef BUREAU_COMMON_TOKEN_H
#define BUREAU_COMMON_TOKEN_H

#include <sodium.h>
#include <stddef.h>

#define TOKEN_HASH_BYTES       crypto_generichash_BYTES
#define TOKEN_EVENTS_KEY_BYTES crypto_aead_xchacha20poly1305_ietf_KEYBYTES

/* The hash of tok[0..len). */
void token_hash(const char *tok, size_t len,
    unsigned char out[TOKEN_HASH_BYTES]);

/* The same hash over pieces, for a token that arrives in parts (bureaud
 * hashes it as it decodes the request's escapes): token_hash_add has the
 * shape of a sink taking st. */
void token_hash_init(crypto_generichash_state *st);
void token_hash_add(void *st, const char *p, size_t n);
void token_hash_final(crypto_generichash_state *st,
    unsigned char out[TOKEN_HASH_BYTES]);

/* Are two hashes the same? Constant time. */
int token_hash_equal(const unsigned char a[TOKEN_HASH_BYTES],
    const unsigned char b[TOKEN_HASH_BYTES]);

/* Is tok[0..len) the token whose hash is want? Constant time. */
int token_check(const unsigned char want[TOKEN_HASH_BYTES], const char *tok,
    size_t len);

/* The key that seals the events of a daemon or agent with token tok:
 * BLAKE2b-256 of the token keyed with BUREAU_EVENTS_KEY_CONTEXT
 * (docs/protocol.md, "Encryption"). */
void token_events_key(const char *tok, size_t len,
    unsigned char key[TOKEN_EVENTS_KEY_BYTES]);

#endif
