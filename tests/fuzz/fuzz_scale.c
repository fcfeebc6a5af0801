/*
 * fuzz_scale: the --scale parser (cap_scale_parse: none, auto, WxH) and the
 * geometry it feeds: the screenshot size for a screen and the mapping of
 * coordinates between the two spaces, which every click goes through.
 *
 * Input: the --scale text; after a NUL, optional bytes giving the screen
 * width and height (2 bytes each) and a coordinate (2 bytes).
 *
 * Checked (abort on failure): success gives a known mode and, for WxH,
 * sides in 16..16384; failure gives a cause; the scaled size is positive
 * and AUTO never upscales; cap_map stays inside its target and, when the
 * screenshot is not larger than the screen, screenshot -> screen ->
 * screenshot returns the same coordinate (what capture.h promises).
 * For small sizes the pixels are scaled too, from the input's bytes:
 * cap_scale_scanlines_hash must give exactly cap_scale's pixels as
 * scanlines, and cap_hash's value, and the SIMD passes exactly the plain
 * C reference's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"

static void
fuzz_die(const char *what, const char *s, int a, int b)
{
	fprintf(stderr, "fuzz_scale: %s: '%s' (%d, %d)\n", what, s, a, b);
	abort();
}

static int
fuzz_u16(const uint8_t *p, size_t n, size_t i, int def)
{
	return (i + 1 < n ? (p[i] << 8 | p[i + 1]) : def);
}

static void
fuzz_pixels(const char *s, const uint8_t *p, size_t n, int sw, int sh, int dw,
    int dh)
{
	struct cap_image src = { .width = sw,
		.height = sh,
		.stride = sw * 4 + 4 };
	struct cap_image dst = { .width = dw, .height = dh, .stride = dw * 4 };
	size_t row = CAP_SCANLINE(dw);
	uint8_t *scan, *want;
	char *cause = NULL;
	uint64_t hash = 0;

	src.data = malloc((size_t)src.stride * (size_t)sh);
	dst.data = malloc((size_t)dst.stride * (size_t)dh);
	scan = malloc(row * (size_t)dh);
	want = malloc(row);
	if (src.data == NULL || dst.data == NULL || scan == NULL ||
	    want == NULL)
		goto out;
	for (size_t i = 0; i < (size_t)src.stride * (size_t)sh; i++)
		src.data[i] = n > 6 ? p[6 + i % (n - 6)] ^ (uint8_t)(i * 131) :
		                      (uint8_t)(i * 131);
	if (cap_scale(&src, &dst, &cause) != 0 ||
	    cap_scale_scanlines_hash(&src, dw, dh, scan, &hash, &cause) != 0)
		fuzz_die("scale failed", s, dw, dh);
	if (hash != cap_hash(&src))
		fuzz_die("hash folded into scaling differs from cap_hash", s,
		    sw, sh);
	/* the plain C reference gives the same bytes as the SIMD passes */
	{
		struct cap_image ref = dst;

		ref.data = malloc((size_t)dst.stride * (size_t)dh);
		if (ref.data == NULL)
			goto out;
		cap_scale_simd(0);
		if (cap_scale(&src, &ref, &cause) != 0)
			fuzz_die("reference scale failed", s, dw, dh);
		cap_scale_simd(2);
		if (memcmp(ref.data, dst.data, (size_t)dst.stride * (size_t)dh))
			fuzz_die("SIMD scaling differs from the C reference", s,
			    dw, dh);
		free(ref.data);
	}
	for (int y = 0; y < dh; y++) {
		cap_scanline_put(dst.data + (size_t)y * (size_t)dst.stride, dw,
		    want);
		if (memcmp(want, scan + (size_t)y * row, row) != 0)
			fuzz_die("scanlines differ from cap_scale", s, y, dw);
	}
out:
	free(cause);
	free(want);
	free(scan);
	free(dst.data);
	free(src.data);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum cap_scale_mode mode = CAP_SCALE_AUTO;
	int w = 0, h = 0, sw, sh, dw, dh, v, x, back;
	const uint8_t *nul = memchr(data, '\0', size);
	size_t slen = nul != NULL ? (size_t)(nul - data) : size;
	const uint8_t *tail = nul != NULL ? nul + 1 : data + size;
	size_t tn = (size_t)(data + size - tail);
	char *s, *cause = NULL;
	int rv;

	if ((s = malloc(slen + 1)) == NULL)
		return (0);
	memcpy(s, data, slen);
	s[slen] = '\0';
	rv = cap_scale_parse(s, &mode, &w, &h, &cause);
	if (rv == 0) {
		if (cause != NULL ||
		    (mode != CAP_SCALE_NONE && mode != CAP_SCALE_AUTO &&
		        mode != CAP_SCALE_FIXED))
			fuzz_die("bad success", s, w, h);
		if (mode == CAP_SCALE_FIXED &&
		    (w < 16 || w > 16384 || h < 16 || h > 16384))
			fuzz_die("fixed size out of range", s, w, h);
	} else if (rv != -1 || cause == NULL)
		fuzz_die("failure without a cause", s, rv, 0);
	free(cause);
	if (rv != 0) {
		free(s);
		return (0);
	}

	/* A screen as X reports one: 1..16384 per side. */
	sw = 1 + fuzz_u16(tail, tn, 0, 1279) % 16384;
	sh = 1 + fuzz_u16(tail, tn, 2, 799) % 16384;
	cap_scaled_size(mode, w, h, sw, sh, &dw, &dh);
	if (dw <= 0 || dh <= 0)
		fuzz_die("empty screenshot size", s, dw, dh);
	if (mode == CAP_SCALE_AUTO && (dw > sw || dh > sh))
		fuzz_die("auto upscales", s, dw, dh);
	for (int axis = 0; axis < 2; axis++) {
		int from = axis == 0 ? dw : dh, to = axis == 0 ? sw : sh;

		v = fuzz_u16(tail, tn, 4, 0) % from;
		x = cap_map(v, from, to);
		if (x < 0 || x >= to)
			fuzz_die("mapped outside the screen", s, v, x);
		back = cap_map(x, to, from);
		if (back < 0 || back >= from)
			fuzz_die("mapped back outside the screenshot", s, x,
			    back);
		if (from <= to && back != v)
			fuzz_die("screenshot -> screen -> screenshot moved", s,
			    v, back);
	}
	/* Small sizes: scaling into scanlines is bit-exact. */
	if ((size_t)sw * (size_t)sh <= 64 * 64 &&
	    (size_t)dw * (size_t)dh <= 64 * 64)
		fuzz_pixels(s, tail, tn, sw, sh, dw, dh);
	free(s);
	return (0);
}
