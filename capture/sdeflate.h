/*
 * sdeflate: the zlib stream of a PNG's scanlines, made for screens
 * (sdeflate.c says how and why).
 */
#ifndef BUREAU_CAPTURE_SDEFLATE_H
#define BUREAU_CAPTURE_SDEFLATE_H

#include <stddef.h>
#include <stdint.h>

#define SD_PARTS 2 /* at most this many threads per stream */

/* The most bytes sd_zlib writes for n input bytes, less its 6 of zlib
 * header and trailer. */
size_t sd_bound(size_t n);

/*
 * in[0..n) as a zlib stream at out (cap >= sd_bound(n) + 6), rows of row
 * bytes (0: not rows), on up to threads threads. Returns the stream's
 * length, 0 when cap is short or memory ran out.
 */
size_t sd_zlib(const uint8_t *in, size_t n, size_t row, int threads,
    uint8_t *out, size_t cap);

#endif
