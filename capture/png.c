/*
 * png: BGRX pixels to an 8-bit RGB PNG in memory.
 *
 * Screenshots (tall images) take the parallel path at the end of this file:
 * zlib on one thread per CPU, the container written here. Small images
 * (and capbench's settings table) go through libpng, which reads the X11
 * rows as they are: png_set_bgr swaps B and R and png_set_filler drops the
 * X byte while each row is copied into libpng's own row buffer, so the
 * caller's pixels are never modified or copied whole.
 */
#include <png.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/png_tune.h"

/*
 * The settings cap_png_encode uses, chosen with `capbench -m` (every zlib
 * level x filter x strategy, round-robin, thread CPU time) on two real
 * 1920x1080 Xvfb desktops scaled to 1280x720, one of terminals and window
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
		if ((p = realloc(st->buf, cap)) == NULL) {
			st->nomem = 1;
			png_error(png, "out of memory");
		}
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
	if ((st->buf = malloc(st->cap)) == NULL)
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
		free(st->buf);
	free(st);
	return rc;
}

/* --- the parallel path --------------------------------------------------- */

/*
 * libpng compresses on one thread, and zlib is where a screenshot's time
 * goes (about half of it). A deflate stream can be cut into independent
 * pieces, as pigz does: every piece but the last ends with Z_SYNC_FLUSH on
 * a byte boundary, the last with Z_FINISH, and the zlib trailer carries
 * adler32_combine of the pieces. So the rows are split between threads and
 * the PNG container (signature, IHDR, one IDAT, IEND) is written here;
 * the bytes are a standard PNG that any decoder (libpng in the tests)
 * reads. Rows are unfiltered, as cap_png_encode's measured settings say.
 */
#define CAPNG_MAX_PARTS 4
#define CAPNG_MIN_ROWS  64 /* fewer rows per part: not worth a thread */

struct capng_part {
	const struct cap_image *img;
	int y0, y1, level, last;
	uint8_t *buf; /* raw deflate output, malloc'd */
	size_t len;
	uLong adler;
	int err;
};

static void *
capng_part_run(void *arg)
{
	struct capng_part *p = arg;
	size_t rowlen = 1 + (size_t)p->img->width * 3, cap;
	uint8_t *row = malloc(rowlen);
	z_stream zs;
	int y, rv;

	p->err = -1;
	p->adler = adler32(0, Z_NULL, 0);
	memset(&zs, 0, sizeof zs);
	cap = deflateBound(&zs, (uLong)(rowlen * (size_t)(p->y1 - p->y0))) + 64;
	/* deflateBound before init is the conservative bound: fine */
	if (row == NULL || (p->buf = malloc(cap)) == NULL)
		goto out;
	if (deflateInit2(&zs, p->level, Z_DEFLATED, -15, 8,
	        Z_DEFAULT_STRATEGY) != Z_OK)
		goto out;
	zs.next_out = p->buf;
	zs.avail_out = (uInt)cap;
	row[0] = 0; /* filter type None */
	for (y = p->y0; y < p->y1; y++) {
		const uint8_t *src = p->img->data +
		    (size_t)y * (size_t)p->img->stride;
		uint8_t *dst = row + 1;
		int flush = y + 1 < p->y1 ? Z_NO_FLUSH :
		    p->last               ? Z_FINISH :
		                            Z_SYNC_FLUSH;

		for (int x = 0; x < p->img->width; x++, src += 4, dst += 3) {
			dst[0] = src[2];
			dst[1] = src[1];
			dst[2] = src[0];
		}
		p->adler = adler32(p->adler, row, (uInt)rowlen);
		zs.next_in = row;
		zs.avail_in = (uInt)rowlen;
		rv = deflate(&zs, flush);
		if (rv == Z_STREAM_ERROR || zs.avail_in != 0 ||
		    (flush == Z_FINISH && rv != Z_STREAM_END)) {
			deflateEnd(&zs);
			goto out;
		}
	}
	p->len = cap - zs.avail_out;
	deflateEnd(&zs);
	p->err = 0;
out:
	free(row);
	return NULL;
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
	    (uint32_t)crc32(0, p + 4, (uInt)(len + 4)));
}

static int
capng_parallel(const struct cap_image *img, int level, int nparts,
    uint8_t **out, size_t *outlen, char **cause)
{
	struct capng_part parts[CAPNG_MAX_PARTS];
	pthread_t threads[CAPNG_MAX_PARTS];
	int started[CAPNG_MAX_PARTS] = { 0 }, i, rc = -1;
	size_t total = 0, rowlen = 1 + (size_t)img->width * 3;
	uLong adler;
	uint8_t *buf = NULL, *p;

	for (i = 0; i < nparts; i++) {
		parts[i] = (struct capng_part){ .img = img,
			.y0 = img->height * i / nparts,
			.y1 = img->height * (i + 1) / nparts,
			.level = level,
			.last = i == nparts - 1 };
	}
	/* part 0 on this thread, the others on their own */
	for (i = 1; i < nparts; i++)
		started[i] = pthread_create(&threads[i], NULL, capng_part_run,
		                 &parts[i]) == 0;
	capng_part_run(&parts[0]);
	for (i = 1; i < nparts; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			capng_part_run(&parts[i]);
	}
	adler = adler32(0, Z_NULL, 0);
	for (i = 0; i < nparts; i++) {
		if (parts[i].err != 0)
			goto fail;
		total += parts[i].len;
		adler = adler32_combine(adler, parts[i].adler,
		    (z_off_t)(rowlen * (size_t)(parts[i].y1 - parts[i].y0)));
	}
	/* signature, IHDR (25), IDAT head and CRC (12) with zlib header and
	 * trailer (6), IEND (12) */
	if ((buf = malloc(8 + 25 + 12 + 6 + total + 12)) == NULL)
		goto fail;
	memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
	p = buf + 8;
	capng_put32(p + 8, (uint32_t)img->width);
	capng_put32(p + 12, (uint32_t)img->height);
	memcpy(p + 16, "\x08\x02\x00\x00\x00", 5); /* 8-bit RGB, no interlace */
	p = capng_chunk(p, "IHDR", 13);
	{
		uint8_t *d = p + 8;

		d[0] = 0x78; /* deflate, 32 KiB window */
		d[1] = 0x01; /* (0x7801 % 31 == 0), no dictionary */
		d += 2;
		for (i = 0; i < nparts; i++) {
			memcpy(d, parts[i].buf, parts[i].len);
			d += parts[i].len;
		}
		capng_put32(d, (uint32_t)adler);
		p = capng_chunk(p, "IDAT", 2 + total + 4);
	}
	p = capng_chunk(p, "IEND", 0);
	*out = buf;
	*outlen = (size_t)(p - buf);
	rc = 0;
	goto out;
fail:
	if (cause != NULL &&
	    asprintf(cause,
	        "png encoding of '%dx%d' failed: out of memory or zlib error",
	        img->width, img->height) < 0)
		*cause = NULL;
out:
	for (i = 0; i < nparts; i++)
		free(parts[i].buf);
	return rc;
}

/* How many pieces for this image: one per CPU, each of at least
 * CAPNG_MIN_ROWS rows. */
static int
capng_nparts(const struct cap_image *img)
{
	static int ncpu;
	int n;

	if (ncpu == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		ncpu = c < 1            ? 1 :
		    c > CAPNG_MAX_PARTS ? CAPNG_MAX_PARTS :
		                          (int)c;
	}
	n = img->height / CAPNG_MIN_ROWS;
	return n < ncpu ? n : ncpu;
}

int
cap_png_encode(const struct cap_image *img, int level, uint8_t **out,
    size_t *outlen, char **cause)
{
	int n;

	/* small or invalid images (the latter get libpng's checks and
	 * messages): one thread, libpng */
	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width || level < 0 ||
	    level > 9 || (n = capng_nparts(img)) < 2)
		return cap_png_encode_tuned(img, level, CAPNG_FILTERS,
		    CAPNG_STRATEGY, out, outlen, cause);
	return capng_parallel(img, level, n, out, outlen, cause);
}
