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
 * Written here rather than taken from a library: Debian's candidates
 * (pixman, libswscale, ImageMagick) either do not do an exact box filter or
 * pull in far more than these 300 lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"

#define WBITS 14 /* weight precision: 1.0 == 1 << WBITS */
#define TBITS 7  /* fraction bits kept in the intermediate row */
#define VSHIFT (WBITS - TBITS)
#define HSHIFT (WBITS + TBITS)

/* The weights of one axis: destination i reads count[i] source pixels from
 * first[i], with weights w[i * taps ...]. */
struct scale_axis {
	int *first;
	int *count;
	int32_t *w;
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
		if (cause != NULL && asprintf(cause, "%s image has no pixels",
		    what) < 0)
			*cause = NULL;
		return -1;
	}
	if (img->width <= 0 || img->height <= 0 ||
	    img->stride / 4 < img->width) {
		if (cause != NULL && asprintf(cause,
		    "invalid %s image '%dx%d' (stride %d)", what, img->width,
		    img->height, img->stride) < 0)
			*cause = NULL;
		return -1;
	}
	return 0;
}

static void
scale_axis_free(struct scale_axis *a)
{
	free(a->first);
	free(a->count);
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
	int64_t lo, hi, ov, num, den, frac;
	int i, j, k, big, sum;
	int32_t *w;

	memset(a, 0, sizeof *a);
	if (m < n)
		a->taps = (n + m - 1) / m + 1;
	else
		a->taps = 2;
	a->first = calloc((size_t)m, sizeof *a->first);
	a->count = calloc((size_t)m, sizeof *a->count);
	a->w = calloc((size_t)m * (size_t)a->taps, sizeof *a->w);
	if (a->first == NULL || a->count == NULL || a->w == NULL) {
		scale_axis_free(a);
		return -1;
	}
	for (i = 0; i < m; i++) {
		w = a->w + (size_t)i * (size_t)a->taps;
		if (m == n) {
			a->first[i] = i;
			a->count[i] = 1;
			w[0] = 1 << WBITS;
			continue;
		}
		if (m > n) {
			/* Bilinear: the centre of i in source pixels is
			 * ((2i+1)n - m) / 2m. */
			num = (2 * (int64_t)i + 1) * n - m;
			den = 2 * (int64_t)m;
			if (num <= 0) {
				a->first[i] = 0;
				a->count[i] = 1;
				w[0] = 1 << WBITS;
				continue;
			}
			j = (int)(num / den);
			frac = ((num % den) << WBITS) / den;
			if (j >= n - 1 || frac == 0) {
				a->first[i] = j >= n - 1 ? n - 1 : j;
				a->count[i] = 1;
				w[0] = 1 << WBITS;
				continue;
			}
			a->first[i] = j;
			a->count[i] = 2;
			w[0] = (1 << WBITS) - (int32_t)frac;
			w[1] = (int32_t)frac;
			continue;
		}
		/* Area. */
		lo = (int64_t)i * n;
		hi = lo + n;
		a->first[i] = (int)(lo / m);
		a->count[i] = (int)((hi - 1) / m) - a->first[i] + 1;
		sum = 0;
		big = 0;
		for (k = 0; k < a->count[i]; k++) {
			j = a->first[i] + k;
			ov = ((int64_t)(j + 1) * m < hi ? (int64_t)(j + 1) * m :
			    hi) - ((int64_t)j * m > lo ? (int64_t)j * m : lo);
			w[k] = (int32_t)(((ov << WBITS) + n / 2) / n);
			sum += w[k];
			if (w[k] > w[big])
				big = k;
		}
		/* Rounding may leave the sum off by a few units. */
		w[big] += (1 << WBITS) - sum;
	}
	return 0;
}

/* One destination row's worth of source rows, combined into tmp. */
static void
scale_vertical(const struct cap_image *src, const struct scale_axis *ya,
    int y, uint32_t *acc, uint16_t *tmp)
{
	const int32_t *w = ya->w + (size_t)y * (size_t)ya->taps;
	const uint8_t *r0, *r1;
	size_t n = (size_t)src->width * 4, i;
	uint32_t w0, w1;
	int k;

	r0 = src->data + (size_t)ya->first[y] * (size_t)src->stride;
	if (ya->count[y] == 1) {
		for (i = 0; i < n; i++)
			tmp[i] = (uint16_t)(r0[i] << TBITS);
		return;
	}
	w0 = (uint32_t)w[0];
	w1 = (uint32_t)w[1];
	r1 = r0 + src->stride;
	if (ya->count[y] == 2) {
		for (i = 0; i < n; i++)
			tmp[i] = (uint16_t)((w0 * r0[i] + w1 * r1[i] +
			    (1u << (VSHIFT - 1))) >> VSHIFT);
		return;
	}
	for (i = 0; i < n; i++)
		acc[i] = w0 * r0[i] + w1 * r1[i];
	for (k = 2; k < ya->count[y]; k++) {
		w0 = (uint32_t)w[k];
		r0 = src->data + (size_t)(ya->first[y] + k) *
		    (size_t)src->stride;
		for (i = 0; i < n; i++)
			acc[i] += w0 * r0[i];
	}
	for (i = 0; i < n; i++)
		tmp[i] = (uint16_t)((acc[i] + (1u << (VSHIFT - 1))) >> VSHIFT);
}

static void
scale_horizontal(const uint16_t *tmp, const struct scale_axis *xa,
    uint8_t *out, int width)
{
	const int32_t *w;
	const uint16_t *p;
	uint32_t b, g, r, wk;
	int x, k;

	for (x = 0; x < width; x++) {
		w = xa->w + (size_t)x * (size_t)xa->taps;
		p = tmp + (size_t)xa->first[x] * 4;
		b = g = r = 1u << (HSHIFT - 1);
		for (k = 0; k < xa->count[x]; k++, p += 4) {
			wk = (uint32_t)w[k];
			b += wk * p[0];
			g += wk * p[1];
			r += wk * p[2];
		}
		out[4 * x + 0] = (uint8_t)(b >> HSHIFT);
		out[4 * x + 1] = (uint8_t)(g >> HSHIFT);
		out[4 * x + 2] = (uint8_t)(r >> HSHIFT);
		out[4 * x + 3] = 0xff;
	}
}

int
cap_scale(const struct cap_image *src, struct cap_image *dst, char **cause)
{
	struct scale_axis xa, ya;
	uint32_t *acc = NULL;
	uint16_t *tmp = NULL;
	int y, rc = -1;

	if (scale_check(src, "source", cause) != 0 ||
	    scale_check(dst, "destination", cause) != 0)
		return -1;
	if (src->width == dst->width && src->height == dst->height) {
		for (y = 0; y < src->height; y++)
			memmove(dst->data + (size_t)y * (size_t)dst->stride,
			    src->data + (size_t)y * (size_t)src->stride,
			    (size_t)src->width * 4);
		return 0;
	}
	if (scale_axis_init(&xa, src->width, dst->width) != 0)
		goto nomem;
	if (scale_axis_init(&ya, src->height, dst->height) != 0) {
		scale_axis_free(&xa);
		goto nomem;
	}
	acc = malloc((size_t)src->width * 4 * sizeof *acc);
	tmp = malloc((size_t)src->width * 4 * sizeof *tmp);
	if (acc == NULL || tmp == NULL) {
		scale_cause(cause, "out of memory scaling '%dx%d' to '%dx%d'",
		    src->width, src->height, dst->width, dst->height);
		goto out;
	}
	for (y = 0; y < dst->height; y++) {
		scale_vertical(src, &ya, y, acc, tmp);
		scale_horizontal(tmp, &xa,
		    dst->data + (size_t)y * (size_t)dst->stride, dst->width);
	}
	rc = 0;
out:
	free(acc);
	free(tmp);
	scale_axis_free(&xa);
	scale_axis_free(&ya);
	return rc;
nomem:
	scale_cause(cause, "out of memory scaling '%dx%d' to '%dx%d'",
	    src->width, src->height, dst->width, dst->height);
	return -1;
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
		if (cause != NULL && asprintf(cause,
		    "invalid crop '%d,%d %dx%d': outside %dx%d", x, y, w, h,
		    src->width, src->height) < 0)
			*cause = NULL;
		return -1;
	}
	dst->data = src->data + (size_t)y * (size_t)src->stride +
	    (size_t)x * 4;
	dst->width = w;
	dst->height = h;
	dst->stride = src->stride;
	return 0;
}
