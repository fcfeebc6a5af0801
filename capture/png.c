/*
 * png: BGRX pixels to an 8-bit RGB PNG in memory.
 *
 * Screenshots take the sdeflate path at the end of this file (the
 * compressor in capture/sdeflate.c), the container written here. Small
 * images (and capbench's settings table) go through libpng, also the
 * reference encoder of the tests, which reads the X11 rows as they are:
 * png_set_bgr swaps B and R and png_set_filler drops the X byte while each row
 * is copied into libpng's own row buffer, so the caller's pixels are never
 * modified or copied whole.
 */
#include <libdeflate.h>
#include <png.h>
#include <pthread.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/png_tune.h"
#include "capture/sdeflate.h"
#include <unistd.h>

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

/* What libpng reads: BGRX rows, or scanlines (scan set: rows of filter
 * byte and RGB, the filter byte skipped). */
struct capng_src {
	const uint8_t *data;
	int width, height;
	size_t stride;
	int scan;
};

/* The part that may longjmp: no local of it is changed after setjmp. */
static int
capng_run(png_structp png, png_infop info, const struct capng_src *img,
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
	if (!img->scan) {
		png_set_bgr(png);
		png_set_filler(png, 0, PNG_FILLER_AFTER);
	}
	for (y = 0; y < img->height; y++)
		png_write_row(png,
		    (png_const_bytep)(img->data + (size_t)y * img->stride +
		        (img->scan ? 1 : 0)));
	png_write_end(png, NULL);
	return 0;
}

static int
capng_libpng(const struct capng_src *img, int level, int filters, int strategy,
    uint8_t **out, size_t *outlen, char **cause)
{
	struct capng_state *st;
	png_structp png = NULL;
	png_infop info = NULL;
	int rc = -1;

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

static int
capng_level_ok(int level, char **cause)
{
	if (level >= 0 && level <= 9)
		return 1;
	if (cause != NULL &&
	    asprintf(cause, "invalid png level '%d': expected 0 to 9", level) <
	        0)
		*cause = NULL;
	return 0;
}

int
cap_png_encode_tuned(const struct cap_image *img, int level, int filters,
    int strategy, uint8_t **out, size_t *outlen, char **cause)
{
	struct capng_src src;

	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width) {
		if (cause != NULL &&
		    asprintf(cause, "invalid image '%dx%d'",
		        img == NULL ? 0 : img->width,
		        img == NULL ? 0 : img->height) < 0)
			*cause = NULL;
		return -1;
	}
	if (!capng_level_ok(level, cause))
		return -1;
	src = (struct capng_src){ .data = img->data,
		.width = img->width,
		.height = img->height,
		.stride = (size_t)img->stride };
	return capng_libpng(&src, level, filters, strategy, out, outlen, cause);
}

/* --- big images: sdeflate (or libdeflate) ------------------------------- */

/*
 * Screenshots are compressed by sdeflate (capture/sdeflate.c), written
 * here because no library on Debian matches where screens repeat; this
 * replaced libdeflate (Debian's libdeflate0, kept for its adler32 and
 * CRC-32 and as the other engine of capbench -e). Measured with
 * `capbench -e` on real 1920x1080 Xvfb desktops (a terminal with xcalc, a
 * web page in Chromium, a photo), CPU time of the whole encode (filters
 * included), medians of 9, on the shared 2-core AMD EPYC VM at load
 * average 8-9:
 *
 *                     terminal          web page          photo
 *   1280x720
 *   libdeflate 4    7.8 ms  37 KB    6.7 ms  105 KB     31 ms  665 KB
 *   sdeflate        2.3 ms  38 KB    3.1 ms  119 KB     18 ms  672 KB  <-
 *   libpng 6                43 KB            108 KB            658 KB
 *   1920x1080
 *   libdeflate 4     15 ms  45 KB     13 ms  106 KB     64 ms 1172 KB
 *   sdeflate        3.8 ms  45 KB    4.7 ms  104 KB     28 ms 1256 KB  <-
 *   libpng 6                40 KB            105 KB           1170 KB
 *
 * libdeflate indexes every position of every match, so flat and repeated
 * regions cost it as much per byte as noise; sdeflate looks at the pixel
 * to the left and the row above first and indexes only a match's first
 * positions: 2-4x less CPU on screens, 1.7-2.3x less on photos, within
 * 1.2x of libpng 6's size (the target; 1.10x on the web page, the worst
 * here). Two threads (SD_PARTS) pay only when a CPU is free, which on
 * this shared machine it seldom is: images below CAPNG_PAR_MIN (a scaled
 * 1280x720 frame is 2.7 MB) take one.
 *
 * The scanlines (filter byte, then R, G, B) are the one copy of the
 * image made here, and the stream is written straight into the PNG's
 * IDAT.
 */
static pthread_once_t capng_once = PTHREAD_ONCE_INIT;
static int capng_engine = CAPNG_SDEFLATE, capng_nthreads = -1;

int
cap_png_engine(int engine, int threads)
{
	if (engine == CAPNG_SDEFLATE || engine == CAPNG_LIBDEFLATE)
		capng_engine = engine;
	if (threads != 0)
		capng_nthreads = threads;
	return capng_engine;
}

/* Below this many scanline bytes one thread (see the table above). */
#define CAPNG_PAR_MIN ((size_t)4 << 20)

/* Threads for one stream of n bytes: 2 for big ones where there are 2
 * CPUs, unless set. */
static int
capng_threads(size_t n)
{
	long cpus;

	if (capng_nthreads > 0)
		return capng_nthreads;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return n >= CAPNG_PAR_MIN && cpus >= SD_PARTS ? SD_PARTS : 1;
}

/* libdeflate's hash tables (about 1 MB at level 2) are frame-sized too. */
static void
capng_init(void)
{
	libdeflate_set_memory_allocator(cap_alloc, cap_free);
}

#define CAPNG_DEFLATE_MIN_ROWS   16
#define CAPNG_DEFLATE_MIN_PIXELS (64 * 64)

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

/*
 * Per-row filters, chosen as libpng chooses them: the filter whose output
 * has the smallest sum of bytes read as signed (the "minimum sum of
 * absolute differences" heuristic), here among None, Sub, Up and Paeth
 * (Paeth only where Sub and Up leave something: it costs a pass of its
 * own), None on ties.
 * Text and flat colour keep None, which deflate matches best (see the
 * table above); photos get Sub or Up, which took a 1280x720 photo desktop
 * from 2.3x libpng 6's size to 1.09x. SSE2 sums a row in 16-byte
 * steps (|signed b| is min(b, -b) unsigned, summed by psadbw).
 */
#ifdef __SSE2__
static uint64_t
capng_msad(const uint8_t *a, const uint8_t *b, size_t n)
{
	const __m128i zero = _mm_setzero_si128();
	__m128i acc = zero, d;
	uint64_t sum = 0;
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		d = _mm_loadu_si128((const __m128i *)(a + i));
		if (b != NULL)
			d = _mm_sub_epi8(d,
			    _mm_loadu_si128((const __m128i *)(b + i)));
		d = _mm_min_epu8(d, _mm_sub_epi8(zero, d));
		acc = _mm_add_epi64(acc, _mm_sad_epu8(d, zero));
	}
	sum = (uint64_t)_mm_cvtsi128_si64(acc) +
	    (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
#else
static uint64_t
capng_msad(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t sum = 0;
	size_t i = 0;
#endif
	for (; i < n; i++) {
		uint8_t v = (uint8_t)(a[i] - (b != NULL ? b[i] : 0));

		sum += v < 128 ? v : 256 - v;
	}
	return sum;
}

/* Rows whose bytes average below this as signed values (black, white,
 * near-flat colour: text and UI) keep None without trying the others:
 * None compresses them best, and it saves two passes. Measured on the
 * desktops of the table above: any threshold from 24 to 40 leaves the
 * text desktop at None's size (42 KB, where filtering every row made
 * 48 KB) and the photo at the filtered size. */
#define CAPNG_FLAT 32

/* Paeth (PNG filter 4) of the row r, above it up, into out. When
 * encoding, every predictor input is known, so SSE2 does 8 bytes at a time
 * in 16-bit lanes (a scalar loop doubled the encode time of a photo). */
static void
capng_paeth(const uint8_t *r, const uint8_t *up, size_t n, uint8_t *out)
{
	size_t i = 0;

	/* no left pixel: a = c = 0, so the predictor is b */
	for (; i < 3 && i < n; i++)
		out[i] = (uint8_t)(r[i] - up[i]);
#ifdef __SSE2__
	const __m128i zero = _mm_setzero_si128();

	for (; i + 8 <= n; i += 8) {
		__m128i a = _mm_unpacklo_epi8(
		            _mm_loadl_epi64((const __m128i *)(r + i - 3)),
		            zero),
		        b = _mm_unpacklo_epi8(
		            _mm_loadl_epi64((const __m128i *)(up + i)), zero),
		        c = _mm_unpacklo_epi8(
		            _mm_loadl_epi64((const __m128i *)(up + i - 3)),
		            zero);
		__m128i bc = _mm_sub_epi16(b, c), ac = _mm_sub_epi16(a, c);
		__m128i pa = _mm_max_epi16(bc, _mm_sub_epi16(zero, bc)),
		        pb = _mm_max_epi16(ac, _mm_sub_epi16(zero, ac)),
		        pc = _mm_add_epi16(bc, ac);
		__m128i take_a, take_b, pred;

		pc = _mm_max_epi16(pc, _mm_sub_epi16(zero, pc));
		take_a = _mm_andnot_si128(_mm_cmpgt_epi16(pa, pb),
		    _mm_andnot_si128(_mm_cmpgt_epi16(pa, pc),
		        _mm_set1_epi16(-1)));
		take_b = _mm_andnot_si128(_mm_cmpgt_epi16(pb, pc),
		    _mm_set1_epi16(-1));
		pred = _mm_or_si128(_mm_and_si128(take_b, b),
		    _mm_andnot_si128(take_b, c));
		pred = _mm_or_si128(_mm_and_si128(take_a, a),
		    _mm_andnot_si128(take_a, pred));
		pred = _mm_packus_epi16(pred, zero);
		_mm_storel_epi64((__m128i *)(out + i),
		    _mm_sub_epi8(_mm_loadl_epi64((const __m128i *)(r + i)),
		        pred));
	}
#endif
	for (; i < n; i++) {
		int a = r[i - 3], b = up[i], c = up[i - 3];
		int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
		int pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;

		out[i] = (uint8_t)(r[i] - pred);
	}
}

/*
 * None's, Sub's and Up's sums of a row in one pass: each 16 bytes of the
 * row, the row above and the pixel to the left are loaded once for all
 * three (three passes of capng_msad cost the filter choice about twice
 * as much on a 1920x1080 frame). Up without a row above is None.
 */
/* capng_msad3's bytes [i, end) one at a time; i >= 3 has a left pixel. */
static inline void
capng_msad3_bytes(const uint8_t *r, const uint8_t *up, size_t i, size_t end,
    uint64_t *sn, uint64_t *ss, uint64_t *su)
{
	for (; i < end; i++) {
		uint8_t v = r[i], s1 = (uint8_t)(i >= 3 ? v - r[i - 3] : v);
		uint8_t u = (uint8_t)(up != NULL ? v - up[i] : v);

		*sn += v < 128 ? v : 256 - v;
		*ss += s1 < 128 ? s1 : 256 - s1;
		*su += u < 128 ? u : 256 - u;
	}
}

static void
capng_msad3(const uint8_t *r, const uint8_t *up, size_t n, uint64_t *none,
    uint64_t *sub, uint64_t *upv)
{
	uint64_t sn = 0, ss = 0, su = 0;
	size_t i = n < 16 ? n : 16;

	/* the first 16 bytes one at a time: the first pixel has no left one */
	capng_msad3_bytes(r, up, 0, i, &sn, &ss, &su);
#ifdef __SSE2__
	const __m128i zero = _mm_setzero_si128();
	__m128i an = zero, as = zero, au = zero;

	for (; i + 16 <= n; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(r + i));
		__m128i l = _mm_sub_epi8(v,
		    _mm_loadu_si128((const __m128i *)(r + i - 3)));
		__m128i u = up != NULL ?
		    _mm_sub_epi8(v,
		        _mm_loadu_si128((const __m128i *)(up + i))) :
		    v;

		an = _mm_add_epi64(an,
		    _mm_sad_epu8(_mm_min_epu8(v, _mm_sub_epi8(zero, v)), zero));
		as = _mm_add_epi64(as,
		    _mm_sad_epu8(_mm_min_epu8(l, _mm_sub_epi8(zero, l)), zero));
		au = _mm_add_epi64(au,
		    _mm_sad_epu8(_mm_min_epu8(u, _mm_sub_epi8(zero, u)), zero));
	}
	sn += (uint64_t)_mm_cvtsi128_si64(an) +
	    (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(an, an));
	ss += (uint64_t)_mm_cvtsi128_si64(as) +
	    (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(as, as));
	su += (uint64_t)_mm_cvtsi128_si64(au) +
	    (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(au, au));
#endif
	capng_msad3_bytes(r, up, i, n, &sn, &ss, &su);
	*none = sn;
	*sub = ss;
	*upv = su;
}

/* Sub or Up this close to all zeros (runs of one colour, rows repeated)
 * leaves Paeth nothing to gain worth its pass: below this many per byte
 * it is not tried. 2 took the photo desktop from 1.02x libpng 6's size
 * to 1.11x; 1 costs it 0.2% and still skips the solid rows. */
#define CAPNG_PAETH_MIN 1

/* Filter the rows of raw in place, last row first (Up and Paeth read the
 * row above unfiltered). */
static void
capng_filter(uint8_t *raw, int width, int height)
{
	size_t row = CAP_SCANLINE(width), n = row - 1;
	uint8_t *tmp = malloc(n);

	for (int y = height - 1; y >= 0; y--) {
		uint8_t *r = raw + (size_t)y * row + 1;
		const uint8_t *up = y > 0 ? r - row : NULL;
		uint64_t none, sub, upv, pae = UINT64_MAX;

		capng_msad3(r, up, n, &none, &sub, &upv);
		if (none <= (uint64_t)n * CAPNG_FLAT)
			continue;
		if (tmp != NULL && up != NULL &&
		    (sub < upv ? sub : upv) >= (uint64_t)n * CAPNG_PAETH_MIN) {
			capng_paeth(r, up, n, tmp);
			pae = capng_msad(tmp, NULL, n);
		}
		if (none <= sub && none <= upv && none <= pae)
			continue;
		if (pae < upv && pae < sub) {
			memcpy(r, tmp, n);
			r[-1] = 4;
		} else if (upv <= sub) {
			for (size_t i = 0; i < n; i++)
				r[i] = (uint8_t)(r[i] - up[i]);
			r[-1] = 2;
		} else {
			for (size_t i = n; i-- > 3;)
				r[i] = (uint8_t)(r[i] - r[i - 3]);
			r[-1] = 1;
		}
	}
	free(tmp);
}

/* Scanlines (filtered here, in place) to PNG through sdeflate, or through
 * libdeflate when capbench -e asks for it (cap_png_engine). */
static int
capng_deflate(uint8_t *raw, int width, int height, int level, uint8_t **out,
    size_t *outlen, char **cause)
{
	size_t rawlen = CAP_SCANLINE(width) * (size_t)height, bound, zlen;
	struct libdeflate_compressor *c = NULL;
	uint8_t *buf = NULL, *p;
	int rc = -1;

	pthread_once(&capng_once, capng_init);
	if (capng_engine == CAPNG_LIBDEFLATE) {
		if ((c = libdeflate_alloc_compressor(level)) == NULL)
			goto fail;
		bound = libdeflate_zlib_compress_bound(c, rawlen);
	} else
		bound = sd_bound(rawlen) + 6;
	capng_filter(raw, width, height);
	/* signature, IHDR (25), IDAT head and CRC (12), IEND (12) */
	if ((buf = cap_alloc(8 + 25 + 12 + bound + 12)) == NULL)
		goto fail;
	memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
	p = buf + 8;
	capng_put32(p + 8, (uint32_t)width);
	capng_put32(p + 12, (uint32_t)height);
	memcpy(p + 16, "\x08\x02\x00\x00\x00", 5); /* 8-bit RGB, no interlace */
	p = capng_chunk(p, "IHDR", 13);
	if (c != NULL)
		zlen = libdeflate_zlib_compress(c, raw, rawlen, p + 8, bound);
	else
		zlen = sd_zlib(raw, rawlen, CAP_SCANLINE(width),
		    capng_threads(rawlen), p + 8, bound);
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
	    asprintf(cause, "out of memory encoding '%dx%d' as png", width,
	        height) < 0)
		*cause = NULL;
out:
	cap_free(buf);
	if (c != NULL)
		libdeflate_free_compressor(c);
	return rc;
}

const char *
cap_png_encoder(void)
{
	/* "libdeflate 1.14" in the binary would match lintian's pattern for
	 * an embedded copy of zlib ("deflate" and a version), which fails
	 * `make deb`: libdeflate is linked, not embedded. */
	if (capng_engine == CAPNG_SDEFLATE)
		return "sdeflate";
	return "libdeflate v" LIBDEFLATE_VERSION_STRING;
}

/* Small images go through libpng, large ones through capng_deflate. */
static int
capng_small(int width, int height)
{
	return height < CAPNG_DEFLATE_MIN_ROWS ||
	    (size_t)width * (size_t)height < CAPNG_DEFLATE_MIN_PIXELS;
}

int
cap_png_encode_scanlines(uint8_t *rows, int width, int height, int level,
    uint8_t **out, size_t *outlen, char **cause)
{
	struct capng_src src = { .data = rows,
		.width = width,
		.height = height,
		.stride = CAP_SCANLINE(width),
		.scan = 1 };

	if (rows == NULL || width <= 0 || height <= 0 ||
	    width > (INT32_MAX - 1) / 3) {
		if (cause != NULL &&
		    asprintf(cause, "invalid image '%dx%d'", width, height) < 0)
			*cause = NULL;
		return -1;
	}
	if (!capng_level_ok(level, cause))
		return -1;
	if (capng_small(width, height))
		return capng_libpng(&src, level, CAPNG_FILTERS, CAPNG_STRATEGY,
		    out, outlen, cause);
	return capng_deflate(rows, width, height, level, out, outlen, cause);
}

int
cap_png_encode(const struct cap_image *img, int level, uint8_t **out,
    size_t *outlen, char **cause)
{
	uint8_t *raw;
	int rv;

	/* small or invalid images (the latter get libpng's checks and
	 * messages): libpng */
	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width || level < 0 ||
	    level > 9 || capng_small(img->width, img->height))
		return cap_png_encode_tuned(img, level, CAPNG_FILTERS,
		    CAPNG_STRATEGY, out, outlen, cause);
	/* capng_deflate compresses a whole buffer: the scanlines, the one
	 * copy of the image made here */
	if ((raw = cap_alloc(CAP_SCANLINE(img->width) * (size_t)img->height)) ==
	    NULL) {
		if (cause != NULL &&
		    asprintf(cause, "out of memory encoding '%dx%d' as png",
		        img->width, img->height) < 0)
			*cause = NULL;
		return -1;
	}
	for (int y = 0; y < img->height; y++)
		cap_scanline_put(img->data + (size_t)y * (size_t)img->stride,
		    img->width, raw + (size_t)y * CAP_SCANLINE(img->width));
	rv = capng_deflate(raw, img->width, img->height, level, out, outlen,
	    cause);
	cap_free(raw);
	return rv;
}
