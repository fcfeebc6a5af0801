/*
 * scale: crop views and resampling of BGRX images.
 *
 * Resampling is separable, in fixed point: a vertical pass combines the
 * source rows under one destination row into a 16-bit row (8 bits of value,
 * 7 of fraction), then a horizontal pass combines its pixels. Downscaling
 * uses exact area (box) weights, computed from integer overlaps, like
 * OpenCV's INTER_AREA: a thin text stroke fades in proportion to the area it
 * covers instead of vanishing as with point sampling. Upscaling is bilinear.
 * The weights of every destination pixel sum to exactly 1 << WBITS, so flat
 * areas keep their exact colour.
 *
 * Written here rather than taken from a library: of Debian's candidates,
 * pixman's box filter is a generic separable convolution with quantized
 * filter phases, libswscale pulls in FFmpeg and MagickCore all of
 * ImageMagick; an exact area filter for one pixel format is a few hundred
 * lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif

#include "capture/capture.h"

/*
 * Fixed point: weights are WBITS-bit fractions; the intermediate row keeps
 * TBITS bits of fraction, which leaves it below 1 << 15 so that both passes
 * fit SSE2's signed 16x16->32 multiply-add (pmaddwd). Both code paths below
 * do the same integer arithmetic and give identical results.
 */
#define WBITS  14
#define TBITS  7
#define VSHIFT (WBITS - TBITS)
#define HSHIFT (WBITS + TBITS)

/*
 * The weights of one axis: destination i reads the span[i] source pixels
 * from first[i] with weights w[i * taps ...]. Spans are even (a last unused
 * tap weighs 0) so that the passes take taps in pairs; taps is the widest.
 */
struct scale_axis {
	int *first;
	int *span;
	int16_t *w;
	int taps;
};

static void
scale_cause(char **cause, const char *fmt, int a, int b, int c, int d)
{
	if (cause == NULL)
		return;
	if (asprintf(cause, fmt, a, b, c, d) < 0)
		*cause = NULL;
}

static int
scale_check(const struct cap_image *img, const char *what, char **cause)
{
	if (img == NULL || img->data == NULL) {
		if (cause != NULL &&
		    asprintf(cause, "%s image has no pixels", what) < 0)
			*cause = NULL;
		return -1;
	}
	if (img->width <= 0 || img->height <= 0 ||
	    img->stride / 4 < img->width) {
		if (cause != NULL &&
		    asprintf(cause, "invalid %s image '%dx%d' (stride %d)",
		        what, img->width, img->height, img->stride) < 0)
			*cause = NULL;
		return -1;
	}
	return 0;
}

static void
scale_axis_free(struct scale_axis *a)
{
	free(a->first);
	free(a->span);
	free(a->w);
}

/*
 * Fills the weights for n source pixels onto m destination pixels. In
 * units of 1/m source pixel, destination i covers [i*n, (i+1)*n) and
 * source j covers [j*m, (j+1)*m), so every overlap is an exact integer.
 */
static int
scale_axis_init(struct scale_axis *a, int n, int m)
{
	int64_t lo, hi, cum, prev, num, den, frac;
	int i, j, k, count;
	int16_t *w;

	memset(a, 0, sizeof *a);
	/* The widest footprint, rounded up to a whole pair: 2 for any
	 * shrink ratio below 2 where the 1.5 source pixels of 1920 -> 1280
	 * never straddle three. */
	a->taps = 2;
	for (i = 0; i < m && m < n; i++) {
		count = (int)(((int64_t)i * n + n - 1) / m -
		            (int64_t)i * n / m) +
		    1;
		if (count > a->taps)
			a->taps = (count + 1) & ~1;
	}
	a->first = calloc((size_t)m, sizeof *a->first);
	a->span = calloc((size_t)m, sizeof *a->span);
	a->w = calloc((size_t)m * (size_t)a->taps, sizeof *a->w);
	if (a->first == NULL || a->span == NULL || a->w == NULL) {
		scale_axis_free(a);
		return -1;
	}
	for (i = 0; i < m; i++) {
		w = a->w + (size_t)i * (size_t)a->taps;
		a->span[i] = 2;
		if (m == n) {
			a->first[i] = i;
			w[0] = 1 << WBITS;
			continue;
		}
		if (m > n) {
			/* Bilinear: the centre of i in source pixels is
			 * ((2i+1)n - m) / 2m, clamped to the edge pixels. */
			num = (2 * (int64_t)i + 1) * n - m;
			den = 2 * (int64_t)m;
			if (num < 0)
				num = 0;
			j = (int)(num / den);
			frac = ((num % den) << WBITS) / den;
			if (j >= n - 1) {
				j = n - 1;
				frac = 0;
			}
			a->first[i] = j;
			w[0] = (int16_t)((1 << WBITS) - frac);
			w[1] = (int16_t)frac;
			continue;
		}
		/*
		 * Area: weight k is the share of [lo, hi) that source pixel
		 * first + k covers. Rounding the running total rather than
		 * each weight keeps every weight within one unit and makes
		 * them sum to exactly 1 << WBITS.
		 */
		lo = (int64_t)i * n;
		hi = lo + n;
		a->first[i] = (int)(lo / m);
		count = (int)((hi - 1) / m) - a->first[i] + 1;
		a->span[i] = (count + 1) & ~1;
		prev = 0;
		for (k = 0; k < count; k++) {
			cum = (int64_t)(a->first[i] + k + 1) * m;
			if (cum > hi)
				cum = hi;
			cum = (((cum - lo) << WBITS) + n / 2) / n;
			w[k] = (int16_t)(cum - prev);
			prev = cum;
		}
	}
	return 0;
}

/*
 * The two passes exist three times: plain C (the reference), SSE2 (every
 * x86-64) and, for the vertical pass, AVX2 (32 bytes a step), chosen once
 * at run time from what the CPU has (cap_scale_simd). All do the same
 * integer arithmetic; the unit tests and fuzz_scale check that their
 * outputs are identical.
 */
enum { SCALE_C, SCALE_SSE2, SCALE_AVX2 };
static const char *const scale_names[] = { "c", "sse2", "avx2" };
static int scale_best = -1; /* what the CPU allows */
static int scale_use;       /* what runs: min(best, the cap) */
static pthread_once_t scale_once = PTHREAD_ONCE_INIT;

static void
scale_detect(void)
{
	scale_best = SCALE_C;
#ifdef __SSE2__
	scale_best = SCALE_SSE2;
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		scale_best = SCALE_AVX2;
#endif
#endif
	scale_use = scale_best;
}

const char *
cap_scale_simd(int max)
{
	pthread_once(&scale_once, scale_detect);
	if (max >= 0)
		scale_use = max < scale_best ? max : scale_best;
	return scale_names[scale_use];
}

/*
 * Combines the source rows under destination row y into tmp (n values:
 * 4 per pixel, TBITS of fraction). rows[] and w[] have span entries.
 * Values from i on (the reference; the SIMD versions finish with it).
 */
static void
scale_vertical_c(const uint8_t *const *rows, const int16_t *w, int span,
    size_t i, size_t n, int16_t *tmp)
{
	int32_t acc;
	int k;

	for (; i < n; i++) {
		acc = 1 << (VSHIFT - 1);
		for (k = 0; k < span; k++)
			acc += w[k] * rows[k][i];
		tmp[i] = (int16_t)(acc >> VSHIFT);
	}
}

#ifdef __SSE2__
static void
scale_vertical_sse2(const uint8_t *const *rows, const int16_t *w, int span,
    size_t n, int16_t *tmp)
{
	const __m128i zero = _mm_setzero_si128();
	const __m128i round = _mm_set1_epi32(1 << (VSHIFT - 1));
	__m128i a, b, lo, hi, wv, s0, s1, s2, s3;
	int32_t pair;
	size_t i = 0;
	int k;

	for (; i + 16 <= n; i += 16) {
		s0 = s1 = s2 = s3 = round;
		for (k = 0; k < span; k += 2) {
			memcpy(&pair, w + k, sizeof pair);
			wv = _mm_set1_epi32(pair);
			a = _mm_loadu_si128((const __m128i *)(rows[k] + i));
			b = _mm_loadu_si128((const __m128i *)(rows[k + 1] + i));
			/* a0 b0 a1 b1 ... as 16-bit pairs for pmaddwd. */
			lo = _mm_unpacklo_epi8(a, b);
			hi = _mm_unpackhi_epi8(a, b);
			s0 = _mm_add_epi32(s0,
			    _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), wv));
			s1 = _mm_add_epi32(s1,
			    _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), wv));
			s2 = _mm_add_epi32(s2,
			    _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), wv));
			s3 = _mm_add_epi32(s3,
			    _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), wv));
		}
		s0 = _mm_srai_epi32(s0, VSHIFT);
		s1 = _mm_srai_epi32(s1, VSHIFT);
		s2 = _mm_srai_epi32(s2, VSHIFT);
		s3 = _mm_srai_epi32(s3, VSHIFT);
		_mm_storeu_si128((__m128i *)(tmp + i), _mm_packs_epi32(s0, s1));
		_mm_storeu_si128((__m128i *)(tmp + i + 8),
		    _mm_packs_epi32(s2, s3));
	}
	scale_vertical_c(rows, w, span, i, n, tmp);
}
#endif

#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
/* The SSE2 pass on 32 bytes a step. AVX2's unpack and pack work within
 * each 128-bit half, so the halves come out as [0-7 | 16-23] and
 * [8-15 | 24-31] and are put back in order before the store. */
__attribute__((target("avx2"))) static void
scale_vertical_avx2(const uint8_t *const *rows, const int16_t *w, int span,
    size_t n, int16_t *tmp)
{
	const __m256i zero = _mm256_setzero_si256();
	const __m256i round = _mm256_set1_epi32(1 << (VSHIFT - 1));
	__m256i a, b, lo, hi, wv, s0, s1, s2, s3, p01, p23;
	int32_t pair;
	size_t i = 0;
	int k;

	for (; i + 32 <= n; i += 32) {
		s0 = s1 = s2 = s3 = round;
		for (k = 0; k < span; k += 2) {
			memcpy(&pair, w + k, sizeof pair);
			wv = _mm256_set1_epi32(pair);
			a = _mm256_loadu_si256((const __m256i *)(rows[k] + i));
			b = _mm256_loadu_si256(
			    (const __m256i *)(rows[k + 1] + i));
			lo = _mm256_unpacklo_epi8(a, b);
			hi = _mm256_unpackhi_epi8(a, b);
			s0 = _mm256_add_epi32(s0,
			    _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero),
			        wv));
			s1 = _mm256_add_epi32(s1,
			    _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero),
			        wv));
			s2 = _mm256_add_epi32(s2,
			    _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero),
			        wv));
			s3 = _mm256_add_epi32(s3,
			    _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero),
			        wv));
		}
		p01 = _mm256_packs_epi32(_mm256_srai_epi32(s0, VSHIFT),
		    _mm256_srai_epi32(s1, VSHIFT));
		p23 = _mm256_packs_epi32(_mm256_srai_epi32(s2, VSHIFT),
		    _mm256_srai_epi32(s3, VSHIFT));
		_mm256_storeu_si256((__m256i *)(tmp + i),
		    _mm256_permute2x128_si256(p01, p23, 0x20));
		_mm256_storeu_si256((__m256i *)(tmp + i + 16),
		    _mm256_permute2x128_si256(p01, p23, 0x31));
	}
	scale_vertical_c(rows, w, span, i, n, tmp);
}
#endif

static void
scale_vertical(const uint8_t *const *rows, const int16_t *w, int span, size_t n,
    int16_t *tmp)
{
	switch (scale_use) {
#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
	case SCALE_AVX2:
		scale_vertical_avx2(rows, w, span, n, tmp);
		return;
#endif
#ifdef __SSE2__
	case SCALE_SSE2:
		scale_vertical_sse2(rows, w, span, n, tmp);
		return;
#endif
	default:
		scale_vertical_c(rows, w, span, 0, n, tmp);
	}
}

/* Combines tmp's pixels into one destination row: the reference. */
static void
scale_horizontal_c(const int16_t *tmp, const struct scale_axis *xa,
    uint8_t *out, int width)
{
	const int16_t *w, *p;
	int32_t b, g, r;
	uint32_t px;
	int k;

	for (int x = 0; x < width; x++) {
		w = xa->w + (size_t)x * (size_t)xa->taps;
		p = tmp + (size_t)xa->first[x] * 4;
		b = g = r = 1 << (HSHIFT - 1);
		for (k = 0; k < xa->span[x]; k++, p += 4) {
			b += w[k] * p[0];
			g += w[k] * p[1];
			r += w[k] * p[2];
		}
		px = (uint32_t)(b >> HSHIFT) | (uint32_t)(g >> HSHIFT) << 8 |
		    (uint32_t)(r >> HSHIFT) << 16 | 0xff000000u;
		memcpy(out + 4 * (size_t)x, &px, sizeof px);
	}
}

#ifdef __SSE2__
/* One destination pixel's four 32-bit sums, before the final shift. */
static inline __m128i
scale_hsum(const int16_t *tmp, const struct scale_axis *xa, int x)
{
	const int16_t *w = xa->w + (size_t)x * (size_t)xa->taps;
	const int16_t *p = tmp + (size_t)xa->first[x] * 4;
	__m128i acc = _mm_set1_epi32(1 << (HSHIFT - 1)), v;
	int32_t pair;
	int k;

	for (k = 0; k < xa->span[x]; k += 2, p += 8) {
		memcpy(&pair, w + k, sizeof pair);
		/* b0 g0 r0 x0 b1 g1 r1 x1 -> b0 b1 g0 g1 r0 r1 x0 x1 */
		v = _mm_loadu_si128((const __m128i *)p);
		v = _mm_unpacklo_epi16(v, _mm_srli_si128(v, 8));
		acc = _mm_add_epi32(acc,
		    _mm_madd_epi16(v, _mm_set1_epi32(pair)));
	}
	return _mm_srai_epi32(acc, HSHIFT);
}

/* Two taps, as every shrink below 2x (1920 -> 1280 is 3:2, 1600 -> 1200
 * 4:3) and 2:1 have: one multiply-add a pixel, no loop over taps. */
static inline __m128i
scale_hsum2(const int16_t *tmp, const struct scale_axis *xa, int x)
{
	const int16_t *p = tmp + (size_t)xa->first[x] * 4;
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	int32_t pair;

	memcpy(&pair, xa->w + (size_t)x * 2, sizeof pair);
	v = _mm_unpacklo_epi16(v, _mm_srli_si128(v, 8));
	return _mm_srai_epi32(_mm_add_epi32(_mm_set1_epi32(1 << (HSHIFT - 1)),
	                          _mm_madd_epi16(v, _mm_set1_epi32(pair))),
	    HSHIFT);
}

static void
scale_horizontal_sse2(const int16_t *tmp, const struct scale_axis *xa,
    uint8_t *out, int width)
{
	const __m128i opaque = _mm_set1_epi32((int)0xff000000u);
	__m128i a, b;
	uint32_t px;
	int x = 0;

	/* Two pixels per store. */
	if (xa->taps == 2)
		for (; x + 2 <= width; x += 2) {
			a = _mm_packs_epi32(scale_hsum2(tmp, xa, x),
			    scale_hsum2(tmp, xa, x + 1));
			a = _mm_or_si128(_mm_packus_epi16(a, a), opaque);
			_mm_storel_epi64((__m128i *)(out + 4 * (size_t)x), a);
		}
	for (; x + 2 <= width; x += 2) {
		a = scale_hsum(tmp, xa, x);
		b = scale_hsum(tmp, xa, x + 1);
		a = _mm_packs_epi32(a, b);
		a = _mm_or_si128(_mm_packus_epi16(a, a), opaque);
		_mm_storel_epi64((__m128i *)(out + 4 * (size_t)x), a);
	}
	if (x < width) {
		a = scale_hsum(tmp, xa, x);
		a = _mm_packs_epi32(a, a);
		a = _mm_or_si128(_mm_packus_epi16(a, a), opaque);
		px = (uint32_t)_mm_cvtsi128_si32(a);
		memcpy(out + 4 * (size_t)x, &px, sizeof px);
	}
}
#endif

static void
scale_horizontal(const int16_t *tmp, const struct scale_axis *xa, uint8_t *out,
    int width)
{
#ifdef __SSE2__
	if (scale_use >= SCALE_SSE2) {
		scale_horizontal_sse2(tmp, xa, out, width);
		return;
	}
#endif
	scale_horizontal_c(tmp, xa, out, width);
}

/* Output rows [y0, y1) of one scale, on whichever thread runs it. With
 * scan set, each row goes through a row buffer into PNG scanlines there
 * (dst->data is then unused). */
struct scale_job {
	const struct cap_image *src, *dst;
	const struct scale_axis *xa, *ya;
	uint8_t *scan;
	/* With rowhash set: hash the source rows [h0, h1) into it, each just
	 * before the first output row that reads it (it is then in cache). */
	uint64_t *rowhash;
	int h0, h1;
	int y0, y1;
	int err;
};

void
cap_scanline_put(const uint8_t *bgrx, int width, uint8_t *out)
{
	*out++ = 0; /* filter type None */
	for (int x = 0; x < width; x++, bgrx += 4, out += 3) {
		out[0] = bgrx[2];
		out[1] = bgrx[1];
		out[2] = bgrx[0];
	}
}

static void *
scale_rows(void *arg)
{
	struct scale_job *j = arg;
	const struct scale_axis *xa = j->xa, *ya = j->ya;
	size_t n = (size_t)j->src->width * 4;
	const uint8_t **rows;
	uint8_t *line = NULL, *out;
	int16_t *tmp;
	int y, k, r;

	/* The horizontal pass reads whole tap pairs: the zero-weight taps
	 * past the last pixel read zeros. */
	tmp = calloc(n + (size_t)xa->taps * 4 + 8, sizeof *tmp);
	rows = calloc((size_t)ya->taps, sizeof *rows);
	if (j->scan != NULL)
		line = malloc((size_t)j->dst->width * 4);
	j->err = tmp == NULL || rows == NULL ||
	    (j->scan != NULL && line == NULL);
	for (y = j->y0; y < j->y1 && !j->err; y++) {
		int lim = y + 1 < j->y1 ? ya->first[y + 1] : j->h1;

		for (; j->rowhash != NULL && j->h0 < lim; j->h0++)
			j->rowhash[j->h0] = cap_hash_row(j->src->data +
			        (size_t)j->h0 * (size_t)j->src->stride,
			    j->src->width);
		for (k = 0; k < ya->span[y]; k++) {
			/* Zero-weight taps past the last row read that row. */
			r = ya->first[y] + k;
			if (r > j->src->height - 1)
				r = j->src->height - 1;
			rows[k] = j->src->data +
			    (size_t)r * (size_t)j->src->stride;
		}
		scale_vertical(rows, ya->w + (size_t)y * (size_t)ya->taps,
		    ya->span[y], n, tmp);
		out = line != NULL ?
		    line :
		    j->dst->data + (size_t)y * (size_t)j->dst->stride;
		scale_horizontal(tmp, xa, out, j->dst->width);
		if (line != NULL)
			cap_scanline_put(line, j->dst->width,
			    j->scan + (size_t)y * CAP_SCANLINE(j->dst->width));
	}
	free(line);
	free(rows);
	free(tmp);
	return NULL;
}

#define SCALE_MAX_JOBS 4
#define SCALE_MIN_ROWS 32 /* fewer output rows per job: not worth a thread */

/* One job per CPU, each of at least SCALE_MIN_ROWS output rows. */
static int
scale_njobs(int rows)
{
	static int ncpu;
	int n;

	if (ncpu == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		ncpu = c < 1 ? 1 : c > SCALE_MAX_JOBS ? SCALE_MAX_JOBS : (int)c;
	}
	n = rows / SCALE_MIN_ROWS;
	return n < 1 ? 1 : n < ncpu ? n : ncpu;
}

/* cap_scale, or with scan set cap_scale_scanlines (dst only sized), and
 * with hash set the source's hash too. */
static int
scale_run(const struct cap_image *src, const struct cap_image *dst,
    uint8_t *scan, uint64_t *hash, char **cause)
{
	uint64_t *rowhash = NULL;
	struct scale_axis xa = { 0 }, ya = { 0 };
	struct scale_job jobs[SCALE_MAX_JOBS];
	pthread_t threads[SCALE_MAX_JOBS];
	int started[SCALE_MAX_JOBS] = { 0 };
	int y, i, njobs, rc = -1;

	pthread_once(&scale_once, scale_detect);
	if (hash != NULL &&
	    (rowhash = malloc((size_t)src->height * sizeof *rowhash)) == NULL)
		goto nomem;
	if (src->width == dst->width && src->height == dst->height) {
		for (y = 0; y < src->height; y++) {
			const uint8_t *row = src->data +
			    (size_t)y * (size_t)src->stride;

			if (rowhash != NULL)
				rowhash[y] = cap_hash_row(row, src->width);
			if (scan != NULL)
				cap_scanline_put(row, src->width,
				    scan +
				        (size_t)y * CAP_SCANLINE(src->width));
			else
				memmove(dst->data +
				        (size_t)y * (size_t)dst->stride,
				    row, (size_t)src->width * 4);
		}
		goto done;
	}
	if (scale_axis_init(&xa, src->width, dst->width) != 0 ||
	    scale_axis_init(&ya, src->height, dst->height) != 0)
		goto nomem;
	/* Output rows are independent: split them between threads, the
	 * first share on this one. */
	njobs = scale_njobs(dst->height);
	for (i = 0; i < njobs; i++)
		jobs[i] = (struct scale_job){ .src = src,
			.dst = dst,
			.xa = &xa,
			.ya = &ya,
			.scan = scan,
			.rowhash = rowhash,
			/* the source rows each job hashes: from the first its
			 * first output row reads to the next job's */
			.h0 = i == 0 ? 0 : ya.first[dst->height * i / njobs],
			.h1 = i == njobs - 1 ?
			    src->height :
			    ya.first[dst->height * (i + 1) / njobs],
			.y0 = dst->height * i / njobs,
			.y1 = dst->height * (i + 1) / njobs };
	for (i = 1; i < njobs; i++)
		started[i] = pthread_create(&threads[i], NULL, scale_rows,
		                 &jobs[i]) == 0;
	scale_rows(&jobs[0]);
	for (i = 1; i < njobs; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			scale_rows(&jobs[i]);
	}
	for (i = 0; i < njobs; i++)
		if (jobs[i].err)
			goto nomem;
done:
	if (hash != NULL)
		*hash = cap_hash_rows(rowhash, src->width, src->height);
	rc = 0;
	goto out;
nomem:
	scale_cause(cause, "out of memory scaling '%dx%d' to '%dx%d'",
	    src->width, src->height, dst->width, dst->height);
out:
	free(rowhash);
	scale_axis_free(&xa);
	scale_axis_free(&ya);
	return rc;
}

int
cap_scale(const struct cap_image *src, struct cap_image *dst, char **cause)
{
	if (scale_check(src, "source", cause) != 0 ||
	    scale_check(dst, "destination", cause) != 0)
		return -1;
	return scale_run(src, dst, NULL, NULL, cause);
}

int
cap_scale_scanlines(const struct cap_image *src, int width, int height,
    uint8_t *out, char **cause)
{
	/* a stand-in destination for the checks and the sizes */
	struct cap_image dst = { .data = out,
		.width = width,
		.height = height,
		.stride = width > 0 && width < INT32_MAX / 4 ? width * 4 : 0 };

	if (scale_check(src, "source", cause) != 0 ||
	    scale_check(&dst, "destination", cause) != 0)
		return -1;
	return scale_run(src, &dst, out, NULL, cause);
}

int
cap_scale_scanlines_hash(const struct cap_image *src, int width, int height,
    uint8_t *out, uint64_t *hash, char **cause)
{
	struct cap_image dst = { .data = out,
		.width = width,
		.height = height,
		.stride = width > 0 && width < INT32_MAX / 4 ? width * 4 : 0 };

	if (scale_check(src, "source", cause) != 0 ||
	    scale_check(&dst, "destination", cause) != 0)
		return -1;
	return scale_run(src, &dst, out, hash, cause);
}

int
cap_crop(const struct cap_image *src, int x, int y, int w, int h,
    struct cap_image *dst, char **cause)
{
	if (scale_check(src, "source", cause) != 0)
		return -1;
	if (w <= 0 || h <= 0) {
		scale_cause(cause, "invalid crop '%d,%d %dx%d': empty", x, y, w,
		    h);
		return -1;
	}
	if (x < 0 || y < 0 || x > src->width - w || y > src->height - h) {
		if (cause != NULL &&
		    asprintf(cause, "invalid crop '%d,%d %dx%d': outside %dx%d",
		        x, y, w, h, src->width, src->height) < 0)
			*cause = NULL;
		return -1;
	}
	dst->data = src->data + (size_t)y * (size_t)src->stride + (size_t)x * 4;
	dst->width = w;
	dst->height = h;
	dst->stride = src->stride;
	return 0;
}
