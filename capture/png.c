/*
 * png: BGRX pixels to an 8-bit RGB PNG in memory.
 *
 * Screenshots take the libdeflate path at the end of this file, the
 * container written here. Small images (and capbench's settings table) go
 * through libpng, also the reference encoder of the tests, which reads the X11
 * rows as they are: png_set_bgr swaps B and R and png_set_filler drops the
 * X byte while each row is copied into libpng's own row buffer, so the
 * caller's pixels are never modified or copied whole.
 */
#include <libdeflate.h>
#include <png.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/png_tune.h"

/*
 * The settings of the libpng path (small images), chosen with `capbench -m`
 * (every zlib level x filter x strategy, round-robin, thread CPU time) on two
 * real 1920x1080 Xvfb desktops scaled to 1280x720, one of terminals and window
 * decorations on a gradient wallpaper, one with a 720x477 photo added
 * (best of 15, CPU ms, on a shared 2-core AMD EPYC VM):
 *
 *                             text frame        with photo
 *   level 1 none  default     8.6 ms  117 KB    18.7 ms  545 KB   <- chosen
 *   level 1 sub   rle        10.7 ms  219 KB    16.6 ms  574 KB
 *   level 1 sub   default    10.5 ms  128 KB    19.9 ms  498 KB
 *   level 1 paeth default    14.6 ms  127 KB    24.3 ms  470 KB
 *   level 1 all   default   24.1 ms  122 KB    36.5 ms  467 KB
 *   level 1 none  huffman    31.9 ms  897 KB    35.4 ms 1312 KB
 *   level 0 (stored)          4.3 ms 2770 KB
 *
 * zlib's time goes into coding symbols, so whatever emits fewest symbols
 * wins both time and size. Screens repeat exact byte strings (glyphs, flat
 * rows, borders) that unfiltered LZ77 matches whole, while SUB/PAETH turn
 * them into short deltas and RLE sees only runs. No filter also skips
 * libpng's filter pass (PAETH alone costs 5-7 ms here). Only large photos
 * favour SUB+RLE (12% faster there); agent screens are mostly text and
 * flat colour, where no filter is 20% faster and half the size.
 */
#define CAPNG_FILTERS  PNG_FILTER_NONE
#define CAPNG_STRATEGY Z_DEFAULT_STRATEGY

/* Everything that lives across setjmp is reached through this. */
struct capng_state {
	uint8_t *buf;
	size_t len;
	size_t cap;
	int nomem;
	char msg[160];
};

static void
capng_error(png_structp png, png_const_charp msg)
{
	struct capng_state *st = png_get_error_ptr(png);

	snprintf(st->msg, sizeof st->msg, "%s", msg);
	png_longjmp(png, 1);
}

static void
capng_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

static void
capng_write(png_structp png, png_bytep data, png_size_t n)
{
	struct capng_state *st = png_get_io_ptr(png);
	size_t cap;
	uint8_t *p;

	if (n > st->cap - st->len) {
		cap = st->cap;
		while (n > cap - st->len)
			cap *= 2;
		if ((p = cap_alloc(cap)) == NULL) {
			st->nomem = 1;
			png_error(png, "out of memory");
		}
		memcpy(p, st->buf, st->len);
		cap_free(st->buf);
		st->buf = p;
		st->cap = cap;
	}
	memcpy(st->buf + st->len, data, n);
	st->len += n;
}

static void
capng_flush(png_structp png)
{
	(void)png;
}

/* The part that may longjmp: no local of it is changed after setjmp. */
static int
capng_run(png_structp png, png_infop info, const struct cap_image *img,
    int level, int filters, int strategy, struct capng_state *st)
{
	int y;

	if (setjmp(png_jmpbuf(png)))
		return -1;
	png_set_write_fn(png, st, capng_write, capng_flush);
	png_set_IHDR(png, info, (png_uint_32)img->width,
	    (png_uint_32)img->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
	    PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, level);
	png_set_compression_strategy(png, strategy);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, filters);
	png_write_info(png, info);
	png_set_bgr(png);
	png_set_filler(png, 0, PNG_FILLER_AFTER);
	for (y = 0; y < img->height; y++)
		png_write_row(png,
		    (png_const_bytep)(img->data +
		        (size_t)y * (size_t)img->stride));
	png_write_end(png, NULL);
	return 0;
}

int
cap_png_encode_tuned(const struct cap_image *img, int level, int filters,
    int strategy, uint8_t **out, size_t *outlen, char **cause)
{
	struct capng_state *st;
	png_structp png = NULL;
	png_infop info = NULL;
	int rc = -1;

	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width) {
		if (cause != NULL &&
		    asprintf(cause, "invalid image '%dx%d'",
		        img == NULL ? 0 : img->width,
		        img == NULL ? 0 : img->height) < 0)
			*cause = NULL;
		return -1;
	}
	if (level < 0 || level > 9) {
		if (cause != NULL &&
		    asprintf(cause, "invalid png level '%d': expected 0 to 9",
		        level) < 0)
			*cause = NULL;
		return -1;
	}
	if ((st = calloc(1, sizeof *st)) == NULL)
		goto nomem;
	/* About what level 1 makes of a desktop; grows by doubling. */
	st->cap = (size_t)img->width * (size_t)img->height / 2 + 4096;
	if ((st->buf = cap_alloc(st->cap)) == NULL)
		goto nomem;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, st, capng_error,
	    capng_warning);
	if (png == NULL || (info = png_create_info_struct(png)) == NULL)
		goto nomem;
	if (capng_run(png, info, img, level, filters, strategy, st) != 0) {
		if (st->nomem)
			goto nomem;
		if (cause != NULL &&
		    asprintf(cause, "png encoding of '%dx%d' failed: %s",
		        img->width, img->height, st->msg) < 0)
			*cause = NULL;
		goto out;
	}
	*out = st->buf;
	*outlen = st->len;
	st->buf = NULL;
	rc = 0;
	goto out;
nomem:
	if (cause != NULL &&
	    asprintf(cause, "out of memory encoding '%dx%d' as png", img->width,
	        img->height) < 0)
		*cause = NULL;
out:
	if (png != NULL)
		png_destroy_write_struct(&png, info != NULL ? &info : NULL);
	if (st != NULL)
		cap_free(st->buf);
	free(st);
	return rc;
}

/* --- the libdeflate path ------------------------------------------------ */

/*
 * Screenshots go through libdeflate (Debian's libdeflate0): it compresses a
 * whole buffer at once, 2-4x faster than zlib at the same size, with its
 * own fast adler32 and CRC-32 (PCLMUL). Measured with `capbench -m` on a
 * 1920x1080 Xvfb desktop (terminal, xcalc, xlogo on a grey root) scaled to
 * 1280x720, thread CPU time, best of 15 on a shared 2-core AMD EPYC VM:
 *
 *                        no filter         sub             up
 *   libdeflate 1      7.6 ms  51 KB    7.5 ms  55 KB   7.8 ms  55 KB
 *   libdeflate 2      3.9 ms  44 KB    3.9 ms  51 KB   4.0 ms  49 KB  <-
 *   libdeflate 4      4.2 ms  42 KB    4.3 ms  49 KB   4.4 ms  49 KB
 *   libdeflate 6      5.2 ms  40 KB    5.1 ms  48 KB   5.2 ms  47 KB
 *   zlib 1 (2 threads, the encoder this replaced)  9 ms CPU, 65 KB
 *
 * (libdeflate 1.14's level 1 is its "fastest" matcher, which screens full
 * of long runs make slower than the greedy level 2.) The whole image is
 * one buffer: libdeflate has no flush, so the stream cannot be cut into
 * pieces for threads as zlib's Z_SYNC_FLUSH allowed; one thread at level 2
 * beats two at zlib level 1 and leaves the other CPU to the agent.
 *
 * libdeflate compresses a whole buffer, never in place: the scanlines
 * (filter byte, then R, G, B) are the one copy of the image made here, and
 * the stream is written straight into the PNG's IDAT.
 */
static pthread_once_t capng_once = PTHREAD_ONCE_INIT;

/* libdeflate's hash tables (about 1 MB at level 2) are frame-sized too. */
static void
capng_init(void)
{
	libdeflate_set_memory_allocator(cap_alloc, cap_free);
}

#define CAPNG_DEFLATE_MIN_ROWS   16
#define CAPNG_DEFLATE_MIN_PIXELS (64 * 64)

/* One row of X11 BGRX pixels as a PNG scanline: filter None, R, G, B. */
static void
capng_row_rgb(const uint8_t *src, int width, uint8_t *dst)
{
	*dst++ = 0;
	for (int x = 0; x < width; x++, src += 4, dst += 3) {
		dst[0] = src[2];
		dst[1] = src[1];
		dst[2] = src[0];
	}
}

static uint8_t *
capng_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

/* A chunk at p: length, type, data (already at p + 8), CRC. */
static uint8_t *
capng_chunk(uint8_t *p, const char *type, size_t len)
{
	capng_put32(p, (uint32_t)len);
	memcpy(p + 4, type, 4);
	return capng_put32(p + 8 + len,
	    (uint32_t)libdeflate_crc32(0, p + 4, len + 4));
}

static int
capng_deflate(const struct cap_image *img, int level, uint8_t **out,
    size_t *outlen, char **cause)
{
	size_t rowlen = 1 + (size_t)img->width * 3;
	size_t rawlen = rowlen * (size_t)img->height, bound, zlen;
	struct libdeflate_compressor *c;
	uint8_t *raw = NULL, *buf = NULL, *p;
	int y, rc = -1;

	pthread_once(&capng_once, capng_init);
	if ((c = libdeflate_alloc_compressor(level)) == NULL ||
	    (raw = cap_alloc(rawlen)) == NULL)
		goto fail;
	for (y = 0; y < img->height; y++)
		capng_row_rgb(img->data + (size_t)y * (size_t)img->stride,
		    img->width, raw + (size_t)y * rowlen);
	bound = libdeflate_zlib_compress_bound(c, rawlen);
	/* signature, IHDR (25), IDAT head and CRC (12), IEND (12) */
	if ((buf = cap_alloc(8 + 25 + 12 + bound + 12)) == NULL)
		goto fail;
	memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
	p = buf + 8;
	capng_put32(p + 8, (uint32_t)img->width);
	capng_put32(p + 12, (uint32_t)img->height);
	memcpy(p + 16, "\x08\x02\x00\x00\x00", 5); /* 8-bit RGB, no interlace */
	p = capng_chunk(p, "IHDR", 13);
	zlen = libdeflate_zlib_compress(c, raw, rawlen, p + 8, bound);
	if (zlen == 0)
		goto fail;
	p = capng_chunk(p, "IDAT", zlen);
	p = capng_chunk(p, "IEND", 0);
	*out = buf;
	*outlen = (size_t)(p - buf);
	buf = NULL;
	rc = 0;
	goto out;
fail:
	if (cause != NULL &&
	    asprintf(cause, "out of memory encoding '%dx%d' as png", img->width,
	        img->height) < 0)
		*cause = NULL;
out:
	cap_free(buf);
	cap_free(raw);
	libdeflate_free_compressor(c);
	return rc;
}

int
cap_png_encode(const struct cap_image *img, int level, uint8_t **out,
    size_t *outlen, char **cause)
{
	/* small or invalid images (the latter get libpng's checks and
	 * messages): libpng */
	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width || level < 0 ||
	    level > 9 || img->height < CAPNG_DEFLATE_MIN_ROWS ||
	    (size_t)img->width * (size_t)img->height < CAPNG_DEFLATE_MIN_PIXELS)
		return cap_png_encode_tuned(img, level, CAPNG_FILTERS,
		    CAPNG_STRATEGY, out, outlen, cause);
	return capng_deflate(img, level, out, outlen, cause);
}
