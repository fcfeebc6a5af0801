/*
 * hash: a 64-bit fingerprint of the pixels, to tell a changed screen from
 * an unchanged one.
 *
 * The mixing is xxHash64's round and avalanche, written out here because
 * the X byte of every pixel must be masked off on the way in (the X server
 * leaves garbage there), which libxxhash's streaming API cannot do without
 * a masked copy of each row. Not cryptographic: it only has to make an
 * accidental collision between two screens unlikely.
 *
 * Each row is hashed on its own and the row hashes are hashed in order, so
 * the rows can be hashed in any order, on any thread, as another pass
 * reads them: cap_scale_scanlines_hash folds the hash into scaling, which
 * reads every source row anyway (one read of the frame, not two).
 */
#include <stdint.h>
#include <string.h>

#include "capture/capture.h"

#define P1   0x9E3779B185EBCA87ULL
#define P2   0xC2B2AE3D27D4EB4FULL
#define P3   0x165667B19E3779F9ULL
#define P4   0x85EBCA77C2B2AE63ULL
#define MASK 0x00FFFFFF00FFFFFFULL /* B, G, R of two pixels, no X */

static inline uint64_t
hash_rotl(uint64_t v, int r)
{
	return (v << r) | (v >> (64 - r));
}

static inline uint64_t
hash_round(uint64_t acc, uint64_t in)
{
	return hash_rotl(acc + in * P2, 31) * P1;
}

/* Folds one lane into the final hash. */
static inline uint64_t
hash_merge(uint64_t h, uint64_t lane)
{
	return (h ^ hash_round(0, lane)) * P1 + P4;
}

static inline uint64_t
hash_load(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	return v & MASK; /* little-endian, as the pixel format is */
}

uint64_t
cap_hash_row(const uint8_t *p, int width)
{
	uint64_t a = P1 + P2, b = P2, c = 0, d = 0 - P1, h;
	const uint8_t *end = p + (size_t)width * 4;
	uint32_t last;

	for (; end - p >= 32; p += 32) {
		a = hash_round(a, hash_load(p));
		b = hash_round(b, hash_load(p + 8));
		c = hash_round(c, hash_load(p + 16));
		d = hash_round(d, hash_load(p + 24));
	}
	for (; end - p >= 8; p += 8)
		a = hash_round(a, hash_load(p));
	if (p < end) {
		memcpy(&last, p, sizeof last);
		b = hash_round(b, last & 0x00FFFFFFu);
	}
	h = hash_rotl(a, 1) + hash_rotl(b, 7) + hash_rotl(c, 12) +
	    hash_rotl(d, 18);
	return hash_merge(hash_merge(hash_merge(hash_merge(h, a), b), c), d);
}

uint64_t
cap_hash_rows(const uint64_t *rows, int width, int height)
{
	uint64_t h = P1 + P2, v = P2;

	/* the row hashes in order, two lanes, then the shape */
	for (int y = 0; y < height; y++)
		if (y & 1)
			v = hash_round(v, rows[y]);
		else
			h = hash_round(h, rows[y]);
	h = hash_merge(hash_merge(hash_rotl(h, 1) + hash_rotl(v, 7), h), v);
	h ^= (uint64_t)width << 32 | (uint32_t)height;
	h = (h ^ (h >> 33)) * P2;
	h = (h ^ (h >> 29)) * P3;
	return h ^ (h >> 32);
}

uint64_t
cap_hash(const struct cap_image *img)
{
	uint64_t h = P1 + P2, v = P2, r;
	int y;

	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0)
		return 0;
	/* cap_hash_rows without the array: the same value */
	for (y = 0; y < img->height; y++) {
		r = cap_hash_row(img->data + (size_t)y * (size_t)img->stride,
		    img->width);
		if (y & 1)
			v = hash_round(v, r);
		else
			h = hash_round(h, r);
	}
	h = hash_merge(hash_merge(hash_rotl(h, 1) + hash_rotl(v, 7), h), v);
	h ^= (uint64_t)img->width << 32 | (uint32_t)img->height;
	h = (h ^ (h >> 33)) * P2;
	h = (h ^ (h >> 29)) * P3;
	return h ^ (h >> 32);
}
