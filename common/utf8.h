/*
 * common/utf8: the one UTF-8 decoder (and encoder) of the daemon's request
 * scan, its typing and text replies, the X selection and the CLI's
 * terminal filter. Written here rather than taken from a library: neither
 * side links a Unicode library, mbrtowc() depends on the caller's locale,
 * and the rules (RFC 3629) fit in one function.
 */
#ifndef BUREAU_COMMON_UTF8_H
#define BUREAU_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * The UTF-8 sequence at s (n bytes there): > 0 for a valid one, its length
 * (1 to 4) with its code point in *cp; 0 when s holds only the start of
 * one that may still be valid (so a stream may wait for the rest; n == 0
 * too); -1 when s[0] starts no valid sequence: no overlongs, no
 * surrogates, nothing past U+10FFFF.
 */
int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* cp (at most U+10FFFF; a surrogate is encoded as any other) as UTF-8
 * into out; its length, 1 to 4. */
size_t utf8_encode(uint32_t cp, char out[4]);

#endif
