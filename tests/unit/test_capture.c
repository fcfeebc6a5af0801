/*
 * Unit tests of capture/: scaling against a double-precision reference,
 * coordinate mapping, the scaled-size table, and PNG/JPEG encodings decoded
 * back with libpng and libturbojpeg.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <png.h>
#include <turbojpeg.h>

#include "capture/capture.h"
#include "capture/png_tune.h"
#include "capture/sdeflate.h"
#include <zlib.h>

/* --- helpers ------------------------------------------------------------ */

static uint32_t rng_state = 2463534242u;

static uint32_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* An image whose stride has `pad` spare bytes per row, all filled with
 * garbage (as are the X bytes), to catch reads that should not happen. */
static struct cap_image
img_new(int w, int h, int pad)
{
	struct cap_image img;
	size_t i, n;

	img.width = w;
	img.height = h;
	img.stride = w * 4 + pad;
	n = (size_t)img.stride * (size_t)h;
	img.data = malloc(n);
	assert_non_null(img.data);
	for (i = 0; i < n; i++)
		img.data[i] = (uint8_t)rng();
	return img;
}

static uint8_t *
px(const struct cap_image *img, int x, int y)
{
	return img->data + (size_t)y * (size_t)img->stride + (size_t)x * 4;
}

static void
fill(struct cap_image *img, uint8_t b, uint8_t g, uint8_t r)
{
	int x, y;

	for (y = 0; y < img->height; y++)
		for (x = 0; x < img->width; x++) {
			px(img, x, y)[0] = b;
			px(img, x, y)[1] = g;
			px(img, x, y)[2] = r;
		}
}

static void
fill_random(struct cap_image *img)
{
	int x, y, c;

	for (y = 0; y < img->height; y++)
		for (x = 0; x < img->width; x++)
			for (c = 0; c < 4; c++)
				px(img, x, y)[c] = (uint8_t)rng();
}

static double
overlap(double a0, double a1, double b0, double b1)
{
	double lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/* Reference area average of channel c under destination pixel (dx, dy). */
static double
ref_area(const struct cap_image *src, int dw, int dh, int dx, int dy, int c)
{
	double rx = (double)src->width / dw, ry = (double)src->height / dh;
	double x0 = dx * rx, x1 = (dx + 1) * rx, y0 = dy * ry,
	       y1 = (dy + 1) * ry;
	double sum = 0, wx, wy;
	int x, y;

	for (y = (int)y0; y < src->height && y < y1; y++) {
		wy = overlap(y0, y1, y, y + 1);
		for (x = (int)x0; x < src->width && x < x1; x++) {
			wx = overlap(x0, x1, x, x + 1);
			sum += wx * wy * px(src, x, y)[c];
		}
	}
	return sum / (rx * ry);
}

/* Reference bilinear sample (pixel centres, clamped at the edges). */
static double
ref_bilinear(const struct cap_image *src, int dw, int dh, int dx, int dy, int c)
{
	double sx = (dx + 0.5) * src->width / dw - 0.5;
	double sy = (dy + 0.5) * src->height / dh - 0.5;
	double fx, fy, top, bot;
	int x0, y0, x1, y1;

	if (sx < 0)
		sx = 0;
	if (sy < 0)
		sy = 0;
	x0 = (int)sx;
	y0 = (int)sy;
	fx = sx - x0;
	fy = sy - y0;
	x1 = x0 + 1 < src->width ? x0 + 1 : src->width - 1;
	y1 = y0 + 1 < src->height ? y0 + 1 : src->height - 1;
	if (x0 >= src->width - 1) {
		x0 = x1 = src->width - 1;
		fx = 0;
	}
	if (y0 >= src->height - 1) {
		y0 = y1 = src->height - 1;
		fy = 0;
	}
	top = px(src, x0, y0)[c] * (1 - fx) + px(src, x1, y0)[c] * fx;
	bot = px(src, x0, y1)[c] * (1 - fx) + px(src, x1, y1)[c] * fx;
	return top * (1 - fy) + bot * fy;
}

static void
scale_ok(const struct cap_image *src, struct cap_image *dst)
{
	char *cause = NULL;
	int rc = cap_scale(src, dst, &cause);

	if (rc != 0)
		fail_msg("cap_scale: %s", cause);
	assert_null(cause);
}

/* --- scaling ------------------------------------------------------------ */

static void
test_scale_constant(void **state)
{
	static const int sizes[][4] = {
		{ 1920, 1080, 1280, 720 },
		{ 1920, 1080, 1366, 768 },
		{ 1600, 1200, 1024, 768 },
		{ 800, 600, 1024, 768 },
		{ 100, 100, 37, 53 },
		{ 17, 3, 5, 2 },
		{ 1, 1, 40, 30 },
		{ 640, 480, 16, 16 },
		{ 300, 200, 300, 77 },
		{ 3, 700, 301, 5 },
	};
	size_t i;
	int x, y;

	(void)state;
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct cap_image src = img_new(sizes[i][0], sizes[i][1], 12);
		struct cap_image dst = img_new(sizes[i][2], sizes[i][3], 4);

		fill(&src, 10, 200, 77);
		scale_ok(&src, &dst);
		for (y = 0; y < dst.height; y++)
			for (x = 0; x < dst.width; x++) {
				uint8_t *p = px(&dst, x, y);

				if (p[0] != 10 || p[1] != 200 || p[2] != 77)
					fail_msg("%dx%d->%dx%d: pixel %d,%d is "
					         "%d,%d,%d",
					    src.width, src.height, dst.width,
					    dst.height, x, y, p[0], p[1], p[2]);
			}
		free(src.data);
		free(dst.data);
	}
}

static void
test_scale_checkerboard(void **state)
{
	struct cap_image src = img_new(64, 48, 0), dst = img_new(32, 24, 0);
	int x, y, c, sum;

	(void)state;
	/* A 1-pixel black/white checkerboard averages to mid grey. */
	for (y = 0; y < 48; y++)
		for (x = 0; x < 64; x++)
			memset(px(&src, x, y), (x + y) % 2 ? 255 : 0, 3);
	scale_ok(&src, &dst);
	for (y = 0; y < 24; y++)
		for (x = 0; x < 32; x++)
			for (c = 0; c < 3; c++)
				assert_int_equal(px(&dst, x, y)[c], 128);
	/* Any 2x2 block averages to round(sum / 4), halves rounding up. */
	fill_random(&src);
	scale_ok(&src, &dst);
	for (y = 0; y < 24; y++)
		for (x = 0; x < 32; x++)
			for (c = 0; c < 3; c++) {
				sum = px(&src, 2 * x, 2 * y)[c] +
				    px(&src, 2 * x + 1, 2 * y)[c] +
				    px(&src, 2 * x, 2 * y + 1)[c] +
				    px(&src, 2 * x + 1, 2 * y + 1)[c];
				assert_int_equal(px(&dst, x, y)[c],
				    (sum + 2) / 4);
			}
	free(src.data);
	free(dst.data);
}

static void
test_scale_gradient(void **state)
{
	struct cap_image src = img_new(1920, 1080, 0);
	struct cap_image dst = img_new(1280, 720, 0);
	int x, y;

	(void)state;
	for (y = 0; y < 1080; y++)
		for (x = 0; x < 1920; x++) {
			px(&src, x, y)[0] = (uint8_t)(x * 255 / 1919);
			px(&src, x, y)[1] = (uint8_t)(y * 255 / 1079);
			px(&src, x, y)[2] = (uint8_t)(255 - x * 255 / 1919);
		}
	scale_ok(&src, &dst);
	for (y = 0; y < 720; y++)
		for (x = 0; x < 1280; x++) {
			if (x > 0) {
				assert_true(
				    px(&dst, x, y)[0] >= px(&dst, x - 1, y)[0]);
				assert_true(
				    px(&dst, x, y)[2] <= px(&dst, x - 1, y)[2]);
			}
			if (y > 0)
				assert_true(
				    px(&dst, x, y)[1] >= px(&dst, x, y - 1)[1]);
		}
	assert_int_equal(px(&dst, 0, 0)[0], 0);
	assert_int_equal(px(&dst, 1279, 0)[0], 255);
	assert_int_equal(px(&dst, 0, 719)[1], 255);
	free(src.data);
	free(dst.data);
}

/* Random pixels against the double-precision references: area averaging
 * for shrinking, bilinear for growing, either per axis. */
static void
test_scale_reference(void **state)
{
	static const int sizes[][4] = {
		{ 1920, 1080, 1366, 768 },
		{ 193, 107, 128, 72 },
		{ 100, 70, 33, 29 },
		{ 1000, 10, 7, 3 },
		{ 30, 20, 77, 51 },
		{ 5, 4, 16, 16 },
		{ 90, 20, 40, 60 },
		{ 20, 90, 60, 40 },
	};
	double ref, err, worst = 0;
	size_t i;
	int x, y, c;

	(void)state;
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct cap_image src = img_new(sizes[i][0], sizes[i][1], 8);
		struct cap_image dst = img_new(sizes[i][2], sizes[i][3], 0);
		int down_x = dst.width < src.width;
		int down_y = dst.height < src.height;

		scale_ok(&src, &dst);
		for (y = 0; y < dst.height; y++)
			for (x = 0; x < dst.width; x++)
				for (c = 0; c < 3; c++) {
					if (down_x && down_y)
						ref = ref_area(&src, dst.width,
						    dst.height, x, y, c);
					else if (!down_x && !down_y)
						ref = ref_bilinear(&src,
						    dst.width, dst.height, x, y,
						    c);
					else
						continue; /* mixed: below */
					err = px(&dst, x, y)[c] - ref;
					if (err < 0)
						err = -err;
					if (err > worst)
						worst = err;
					if (err > 0.55)
						fail_msg(
						    "%dx%d->%dx%d at %d,%d"
						    " channel %d: %d, reference"
						    " %.3f",
						    src.width, src.height,
						    dst.width, dst.height, x, y,
						    c, px(&dst, x, y)[c], ref);
				}
		free(src.data);
		free(dst.data);
	}
	print_message("worst error against the reference: %.3f\n", worst);
}

/* Shrinking one axis and growing the other equals doing them one by one
 * (within rounding). */
static void
test_scale_mixed(void **state)
{
	struct cap_image src = img_new(90, 20, 0), mid = img_new(40, 20, 0);
	struct cap_image a = img_new(40, 60, 0), b = img_new(40, 60, 0);
	int x, y, c, d;

	(void)state;
	scale_ok(&src, &a);
	scale_ok(&src, &mid);
	scale_ok(&mid, &b);
	for (y = 0; y < 60; y++)
		for (x = 0; x < 40; x++)
			for (c = 0; c < 3; c++) {
				d = px(&a, x, y)[c] - px(&b, x, y)[c];
				assert_true(d >= -1 && d <= 1);
			}
	free(src.data);
	free(mid.data);
	free(a.data);
	free(b.data);
}

/* A 1-pixel line, wherever it falls, darkens the pixels it lands on by the
 * area it covers there: point sampling would drop a third of them. */
static void
test_scale_thin_lines(void **state)
{
	struct cap_image src = img_new(1920, 2, 0), dst = img_new(1280, 1, 0);
	int line, x, darkest;

	(void)state;
	for (line = 0; line < 1920; line++) {
		fill(&src, 255, 255, 255);
		memset(px(&src, line, 0), 0, 3);
		memset(px(&src, line, 1), 0, 3);
		scale_ok(&src, &dst);
		darkest = 255;
		for (x = 0; x < 1280; x++)
			if (px(&dst, x, 0)[1] < darkest)
				darkest = px(&dst, x, 0)[1];
		/* Covers 2/3 of one pixel, or 1/3 of each of two. */
		if (line % 3 == 1)
			assert_int_equal(darkest, 170);
		else
			assert_int_equal(darkest, 85);
	}
	free(src.data);
	free(dst.data);
}

static void
test_scale_upscale_values(void **state)
{
	struct cap_image src = img_new(2, 1, 0), dst = img_new(4, 1, 0);

	(void)state;
	memset(px(&src, 0, 0), 0, 3);
	memset(px(&src, 1, 0), 200, 3);
	scale_ok(&src, &dst);
	/* Centres at -0.25 (clamped), 0.25, 0.75, 1.25 (clamped). */
	assert_int_equal(px(&dst, 0, 0)[1], 0);
	assert_int_equal(px(&dst, 1, 0)[1], 50);
	assert_int_equal(px(&dst, 2, 0)[1], 150);
	assert_int_equal(px(&dst, 3, 0)[1], 200);
	free(src.data);
	free(dst.data);
}

static void
test_scale_same_size_and_crop(void **state)
{
	struct cap_image src = img_new(50, 40, 20), dst = img_new(13, 9, 0);
	struct cap_image view;
	char *cause = NULL;
	int y;

	(void)state;
	assert_int_equal(cap_crop(&src, 7, 11, 13, 9, &view, &cause), 0);
	assert_ptr_equal(view.data, px(&src, 7, 11));
	assert_int_equal(view.stride, src.stride);
	assert_int_equal(view.width, 13);
	assert_int_equal(view.height, 9);
	/* Equal sizes copy; a crop view is a valid source. */
	scale_ok(&view, &dst);
	for (y = 0; y < 9; y++)
		assert_memory_equal(px(&dst, 0, y), px(&src, 7, 11 + y),
		    13 * 4);
	/* The whole image is a valid crop. */
	assert_int_equal(cap_crop(&src, 0, 0, 50, 40, &view, &cause), 0);
	free(src.data);
	free(dst.data);
}

static void
crop_fails(const struct cap_image *src, int x, int y, int w, int h,
    const char *msg)
{
	struct cap_image view;
	char *cause = NULL;

	assert_int_equal(cap_crop(src, x, y, w, h, &view, &cause), -1);
	assert_non_null(cause);
	assert_string_equal(cause, msg);
	free(cause);
}

static void
test_crop_errors(void **state)
{
	struct cap_image src = img_new(50, 40, 0);

	(void)state;
	crop_fails(&src, 0, 0, 0, 10, "invalid crop '0,0 0x10': empty");
	crop_fails(&src, 0, 0, 10, -1, "invalid crop '0,0 10x-1': empty");
	crop_fails(&src, -1, 0, 10, 10,
	    "invalid crop '-1,0 10x10': outside 50x40");
	crop_fails(&src, 0, -3, 10, 10,
	    "invalid crop '0,-3 10x10': outside 50x40");
	crop_fails(&src, 41, 0, 10, 10,
	    "invalid crop '41,0 10x10': outside 50x40");
	crop_fails(&src, 0, 31, 10, 10,
	    "invalid crop '0,31 10x10': outside 50x40");
	crop_fails(&src, 2147483000, 0, 2000, 10,
	    "invalid crop '2147483000,0 2000x10': outside 50x40");
	free(src.data);
}

static void
test_scale_errors(void **state)
{
	struct cap_image src = img_new(50, 40, 0), dst = img_new(10, 10, 0);
	struct cap_image bad;
	char *cause = NULL;

	(void)state;
	bad = dst;
	bad.stride = 36;
	assert_int_equal(cap_scale(&src, &bad, &cause), -1);
	assert_string_equal(cause,
	    "invalid destination image '10x10' (stride 36)");
	free(cause);
	cause = NULL;
	bad = src;
	bad.height = 0;
	assert_int_equal(cap_scale(&bad, &dst, &cause), -1);
	assert_string_equal(cause, "invalid source image '50x0' (stride 200)");
	free(cause);
	cause = NULL;
	bad = src;
	bad.data = NULL;
	assert_int_equal(cap_scale(&bad, &dst, &cause), -1);
	assert_string_equal(cause, "source image has no pixels");
	free(cause);
	free(src.data);
	free(dst.data);
}

/* --- geometry ----------------------------------------------------------- */

static void
test_map_round_trip(void **state)
{
	static const int pairs[][2] = {
		{ 1280, 1920 },
		{ 720, 1080 },
		{ 768, 1080 },
		{ 1366, 1920 },
		{ 1024, 1600 },
		{ 768, 1200 },
		{ 800, 1200 },
		{ 1280, 1920 },
		{ 1024, 1024 },
		{ 16, 16384 },
		{ 1279, 1280 },
		{ 3, 7 },
	};
	size_t i;
	int s, b, x, X;

	(void)state;
	for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		s = pairs[i][0];
		b = pairs[i][1];
		for (x = 0; x < s; x++) {
			X = cap_map(x, s, b);
			/* The centre of screen pixel X lies inside the area
			 * that screenshot pixel x was averaged from. */
			if ((2 * (int64_t)X + 1) * s < 2 * (int64_t)x * b ||
			    (2 * (int64_t)X + 1) * s >=
			        2 * (int64_t)(x + 1) * b)
				fail_msg("%d of %d -> %d of %d: outside", x, s,
				    X, b);
			if (cap_map(X, b, s) != x)
				fail_msg("%d of %d -> %d of %d -> %d", x, s, X,
				    b, cap_map(X, b, s));
		}
	}
	assert_int_equal(cap_map(0, 1280, 1920), 0);
	assert_int_equal(cap_map(1, 1280, 1920), 2);
	assert_int_equal(cap_map(1279, 1280, 1920), 1919);
	assert_int_equal(cap_map(1919, 1920, 1280), 1279);
	assert_int_equal(cap_map(2, 1920, 1280), 1);
	/* Out of range clamps into the target. */
	assert_int_equal(cap_map(-1, 1280, 1920), 0);
	assert_int_equal(cap_map(-1000, 1280, 1920), 0);
	assert_int_equal(cap_map(1280, 1280, 1920), 1919);
	assert_int_equal(cap_map(2147483647, 1280, 1920), 1919);
	assert_int_equal(cap_map(-2147483647 - 1, 1280, 1920), 0);
	assert_int_equal(cap_map(5, 0, 1920), 0);
}

static void
test_scaled_size(void **state)
{
	static const int table[][4] = {
		{ 1920, 1080, 1366, 768 },
		{ 1920, 1200, 1280, 800 },
		{ 1024, 768, 1024, 768 },
		{ 1600, 1200, 1024, 768 },
		{ 800, 600, 800, 600 },
		{ 2560, 1080, 2560, 1080 },
		{ 1280, 800, 1280, 800 },
		{ 1366, 768, 1366, 768 },
		{ 1280, 720, 1280, 720 },
		{ 2560, 1440, 1366, 768 },
		{ 2560, 1600, 1280, 800 },
		{ 3840, 2160, 1366, 768 },
		{ 1440, 900, 1280, 800 },
		{ 1280, 1024, 1280, 1024 },
		{ 1152, 864, 1024, 768 },
		{ 1360, 768, 1360, 768 },
		{ 1400, 787, 1366, 768 },
	};
	size_t i;
	int dw, dh;

	(void)state;
	for (i = 0; i < sizeof table / sizeof table[0]; i++) {
		cap_scaled_size(CAP_SCALE_AUTO, 0, 0, table[i][0], table[i][1],
		    &dw, &dh);
		if (dw != table[i][2] || dh != table[i][3])
			fail_msg("auto %dx%d -> %dx%d, expected %dx%d",
			    table[i][0], table[i][1], dw, dh, table[i][2],
			    table[i][3]);
	}
	cap_scaled_size(CAP_SCALE_NONE, 640, 480, 1920, 1080, &dw, &dh);
	assert_int_equal(dw, 1920);
	assert_int_equal(dh, 1080);
	cap_scaled_size(CAP_SCALE_FIXED, 640, 480, 1920, 1080, &dw, &dh);
	assert_int_equal(dw, 640);
	assert_int_equal(dh, 480);
}

static void
parse_fails(const char *s, const char *msg)
{
	enum cap_scale_mode mode;
	char *cause = NULL;
	int w = -7, h = -7;

	assert_int_equal(cap_scale_parse(s, &mode, &w, &h, &cause), -1);
	assert_non_null(cause);
	assert_string_equal(cause, msg);
	assert_int_equal(w, -7);
	free(cause);
}

static void
test_scale_parse(void **state)
{
	enum cap_scale_mode mode;
	char *cause = NULL;
	int w = 0, h = 0;

	(void)state;
	assert_int_equal(cap_scale_parse("none", &mode, &w, &h, &cause), 0);
	assert_int_equal(mode, CAP_SCALE_NONE);
	assert_int_equal(cap_scale_parse("auto", &mode, &w, &h, &cause), 0);
	assert_int_equal(mode, CAP_SCALE_AUTO);
	assert_int_equal(cap_scale_parse("1280x800", &mode, &w, &h, &cause), 0);
	assert_int_equal(mode, CAP_SCALE_FIXED);
	assert_int_equal(w, 1280);
	assert_int_equal(h, 800);
	assert_int_equal(cap_scale_parse("16x16384", &mode, &w, &h, &cause), 0);
	assert_int_equal(w, 16);
	assert_int_equal(h, 16384);
	assert_null(cause);

	parse_fails("abc", "invalid scale 'abc': expected none, auto or WxH");
	parse_fails("", "invalid scale '': expected none, auto or WxH");
	parse_fails("Auto", "invalid scale 'Auto': expected none, auto or WxH");
	parse_fails("1280x",
	    "invalid scale '1280x': expected none, auto or "
	    "WxH");
	parse_fails("x800", "invalid scale 'x800': expected none, auto or WxH");
	parse_fails("1280x800x2",
	    "invalid scale '1280x800x2': expected none, "
	    "auto or WxH");
	parse_fails(" 1280x800",
	    "invalid scale ' 1280x800': expected none, "
	    "auto or WxH");
	parse_fails("1280x800 ",
	    "invalid scale '1280x800 ': expected none, "
	    "auto or WxH");
	parse_fails("-5x800",
	    "invalid scale '-5x800': expected none, auto or "
	    "WxH");
	parse_fails("+1280x800",
	    "invalid scale '+1280x800': expected none, "
	    "auto or WxH");
	parse_fails("1280*800",
	    "invalid scale '1280*800': expected none, auto "
	    "or WxH");
	parse_fails("99999999999x800",
	    "invalid scale '99999999999x800': "
	    "expected none, auto or WxH");
	parse_fails("15x800", "invalid scale '15x800': width below 16");
	parse_fails("0x800", "invalid scale '0x800': width below 16");
	parse_fails("16385x800",
	    "invalid scale '16385x800': width above "
	    "16384");
	parse_fails("800x15", "invalid scale '800x15': height below 16");
	parse_fails("800x99999",
	    "invalid scale '800x99999': height above "
	    "16384");
}

/* --- encoders ----------------------------------------------------------- */

/*
 * Screen-sized images take the libdeflate path (capture/png.c), which
 * writes the PNG container itself: libpng, the reference decoder, must
 * read it back exactly, noise and flat rows alike, at every level, from a
 * crop view whose stride is wider than its rows.
 */
static void
test_png_deflate_round_trip(void **state)
{
	static const int levels[] = { 0, 1, CAP_PNG_LEVEL, 9 };
	struct cap_image img = img_new(333, 517, 12);
	png_image pi;
	uint8_t *out = NULL, *back;
	char *cause = NULL;
	size_t len = 0, i;
	int x, y;

	(void)state;
	for (y = 200; y < 300; y++) /* flat rows across the parts' boundary */
		memset(img.data + (size_t)y * (size_t)img.stride, 0x5a,
		    (size_t)img.width * 4);
	for (i = 0; i < 3 * sizeof levels / sizeof levels[0]; i++) {
		/* sdeflate on 1 and 2 threads, libdeflate */
		cap_png_engine(i / 4 < 2 ? CAPNG_SDEFLATE : CAPNG_LIBDEFLATE,
		    i / 4 == 1 ? 2 : 1);
		if (cap_png_encode(&img, levels[i % 4], &out, &len, &cause) !=
		    0)
			fail_msg("cap_png_encode: %s", cause);
		memset(&pi, 0, sizeof pi);
		pi.version = PNG_IMAGE_VERSION;
		assert_true(png_image_begin_read_from_memory(&pi, out, len));
		assert_int_equal(pi.width, 333);
		assert_int_equal(pi.height, 517);
		pi.format = PNG_FORMAT_BGRA;
		back = malloc(PNG_IMAGE_SIZE(pi));
		assert_non_null(back);
		if (!png_image_finish_read(&pi, NULL, back, 0, NULL))
			fail_msg("level %d: libpng: %s", levels[i % 4],
			    pi.message);
		for (y = 0; y < 517; y++)
			for (x = 0; x < 333; x++)
				if (memcmp(back +
				            ((size_t)y * 333 + (size_t)x) * 4,
				        px(&img, x, y), 3) != 0)
					fail_msg(
					    "level %d: pixel %d,%d differs",
					    levels[i % 4], x, y);
		free(back);
		cap_free(out);
	}
	cap_png_engine(CAPNG_SDEFLATE, -1);
	free(img.data);
}

/*
 * sdeflate (capture/sdeflate.c) against zlib's inflate, the independent
 * decoder: noise (stored blocks), flat runs (distance 3), repeated rows
 * (distance one row), repeated glyphs (hash matches), blocks of more than
 * SD_BLOCK symbols, tiny and empty inputs, one and two threads. Every
 * stream must inflate to its input exactly and stay within sd_bound.
 */
static void
sd_check(const uint8_t *in, size_t n, size_t row, int threads, size_t *zlen)
{
	size_t cap = sd_bound(n) + 6;
	uint8_t *z = malloc(cap), *back = malloc(n + 1);
	uLongf blen = (uLongf)n + 1;
	size_t len;

	assert_non_null(z);
	assert_non_null(back);
	len = sd_zlib(in, n, row, threads, z, cap);
	if (len == 0 || len > cap)
		fail_msg("sd_zlib(%zu bytes): %zu of %zu", n, len, cap);
	if (uncompress(back, &blen, z, (uLong)len) != Z_OK)
		fail_msg("inflate failed (%zu bytes, %d threads)", n, threads);
	assert_int_equal(blen, n);
	if (n > 0 && memcmp(back, in, n) != 0)
		fail_msg("inflated bytes differ (%zu bytes)", n);
	/* too small a buffer is refused, never overrun */
	assert_int_equal(sd_zlib(in, n, row, threads, z, cap - 1), 0);
	if (zlen != NULL)
		*zlen = len;
	free(z);
	free(back);
}

static void
test_sdeflate_zlib(void **state)
{
	static const size_t tiny[] = { 0, 1, 5, 12, 13, 14, 40, 300 };
	size_t row = CAP_SCANLINE(1280), n = row * 1200, zlen = 0;
	uint8_t *in = malloc(n);
	uint32_t seed = 7;

	(void)state;
	assert_non_null(in);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		in[i] = (uint8_t)(seed >> 24);
	}
	for (size_t k = 0; k < sizeof tiny / sizeof tiny[0]; k++)
		sd_check(in, tiny[k], 0, 1, NULL);
	/* noise: no matches, stored blocks */
	sd_check(in, row * 300, row, 1, &zlen);
	assert_true(zlen <= row * 300 + row * 300 / 1000 + 64);
	/* a screen: flat colour, rows repeated, glyphs repeated along the
	 * rows, a noisy patch; > 4 MiB takes two threads */
	for (size_t y = 0; y < 1200; y++) {
		uint8_t *r = in + y * row;

		r[0] = 0;
		for (size_t x = 0; x < 1280; x++) {
			uint8_t v = (uint8_t)(0x30 + y / 40);

			if (y % 20 < 12 && x % 9 < 7 &&
			    ((x % 9) * 3 + (y % 20) * 5 + x / 9 % 5) % 4 == 0)
				v = 0xff; /* glyph strokes */
			if (y > 900 && x > 1000)
				v = (uint8_t)(x * y >> 3 ^ y); /* photo */
			r[1 + 3 * x] = v;
			r[2 + 3 * x] = (uint8_t)(v + 1);
			r[3 + 3 * x] = (uint8_t)(v ^ 0x5a);
		}
	}
	assert_true(n > (4u << 20));
	sd_check(in, n, row, 1, &zlen);
	/* the matcher found the repetition: far below the raw size */
	assert_true(zlen < n / 8);
	sd_check(in, n, row, 2, NULL);
	sd_check(in, n / 3, row, 2, NULL);
	/* all one byte: the longest matches, many per row */
	memset(in, 0x11, n);
	sd_check(in, n, row, 2, &zlen);
	assert_true(zlen < n / 100);
	/* rows wider than the window: no row-above candidate */
	sd_check(in, 40000 * 3, 40000, 1, NULL);
	free(in);
}

static void
test_png_round_trip(void **state)
{
	static const int levels[] = { 0, 1, 6, 9 };
	struct cap_image big = img_new(40, 30, 0), img;
	png_image pi;
	uint8_t *out = NULL, *back;
	char *cause = NULL;
	size_t len = 0, i;
	int x, y;

	(void)state;
	/* A crop view: odd width, stride wider than the row. */
	assert_int_equal(cap_crop(&big, 3, 2, 37, 23, &img, &cause), 0);
	for (i = 0; i < sizeof levels / sizeof levels[0]; i++) {
		if (cap_png_encode(&img, levels[i], &out, &len, &cause) != 0)
			fail_msg("cap_png_encode: %s", cause);
		assert_true(len > 8);
		assert_memory_equal(out, "\x89PNG\r\n\x1a\n", 8);

		memset(&pi, 0, sizeof pi);
		pi.version = PNG_IMAGE_VERSION;
		assert_true(png_image_begin_read_from_memory(&pi, out, len));
		assert_int_equal(pi.width, 37);
		assert_int_equal(pi.height, 23);
		/* 8-bit RGB: no alpha, no palette, not grey. */
		assert_int_equal(pi.format, PNG_FORMAT_RGB);
		pi.format = PNG_FORMAT_BGRA;
		back = malloc(PNG_IMAGE_SIZE(pi));
		assert_non_null(back);
		assert_true(png_image_finish_read(&pi, NULL, back, 0, NULL));
		for (y = 0; y < 23; y++)
			for (x = 0; x < 37; x++)
				if (memcmp(back + (y * 37 + x) * 4,
				        px(&img, x, y), 3) != 0)
					fail_msg(
					    "level %d: pixel %d,%d differs",
					    levels[i], x, y);
		free(back);
		cap_free(out);
	}
	assert_int_equal(cap_png_encode(&img, 10, &out, &len, &cause), -1);
	assert_string_equal(cause, "invalid png level '10': expected 0 to 9");
	free(cause);
	cause = NULL;
	assert_int_equal(cap_png_encode(&img, -1, &out, &len, &cause), -1);
	free(cause);
	cause = NULL;
	free(big.data);
	/* libpng's own refusal (a width above its 1000000 limit) comes back
	 * through the longjmp as an error, not a crash. */
	big = img_new(1000001, 1, 0);
	out = NULL;
	assert_int_equal(cap_png_encode(&big, 1, &out, &len, &cause), -1);
	assert_null(out);
	assert_non_null(cause);
	assert_true(
	    strncmp(cause, "png encoding of '1000001x1' failed: ", 36) == 0);
	print_message("%s\n", cause);
	free(cause);
	free(big.data);
}

static void
test_jpeg(void **state)
{
	/* Flat blocks of colour, 16-pixel aligned so 4:2:0 keeps them. */
	static const uint8_t colours[4][3] = {
		{ 255, 0, 0 },
		{ 0, 255, 0 },
		{ 0, 0, 255 },
		{ 40, 180, 220 },
	};
	struct cap_image img = img_new(64, 48, 16);
	uint8_t *out = NULL, *back;
	char *cause = NULL;
	size_t len = 0;
	tjhandle tj;
	int x, y, c, w, h, sub, cs, q, d;

	(void)state;
	for (y = 0; y < 48; y++)
		for (x = 0; x < 64; x++)
			memcpy(px(&img, x, y), colours[(x / 32) + 2 * (y / 24)],
			    3);
	for (q = 50; q <= 95; q += 45) {
		if (cap_jpeg_encode(&img, q, &out, &len, &cause) != 0)
			fail_msg("cap_jpeg_encode: %s", cause);
		assert_true(len > 4);
		assert_int_equal(out[0], 0xff);
		assert_int_equal(out[1], 0xd8);
		assert_int_equal(out[len - 2], 0xff);
		assert_int_equal(out[len - 1], 0xd9);
		tj = tjInitDecompress();
		assert_non_null(tj);
		assert_int_equal(
		    tjDecompressHeader3(tj, out, len, &w, &h, &sub, &cs), 0);
		assert_int_equal(w, 64);
		assert_int_equal(h, 48);
		assert_int_equal(sub, TJSAMP_420);
		back = malloc(64 * 48 * 4);
		assert_non_null(back);
		assert_int_equal(
		    tjDecompress2(tj, out, len, back, 64, 0, 48, TJPF_BGRX, 0),
		    0);
		/* Block interiors keep their colour. */
		for (y = 4; y < 48; y += 24)
			for (x = 4; x < 64; x += 32)
				for (c = 0; c < 3; c++) {
					d = back[(y * 64 + x) * 4 + c] -
					    px(&img, x, y)[c];
					if (d < -10 || d > 10)
						fail_msg("q%d %d,%d channel %d:"
						         " %d for %d",
						    q, x, y, c,
						    back[(y * 64 + x) * 4 + c],
						    px(&img, x, y)[c]);
				}
		free(back);
		tjDestroy(tj);
		cap_free(out); /* as the header says */
	}
	assert_int_equal(cap_jpeg_encode(&img, 0, &out, &len, &cause), -1);
	assert_string_equal(cause,
	    "invalid jpeg quality '0': expected 1 to 100");
	free(cause);
	cause = NULL;
	assert_int_equal(cap_jpeg_encode(&img, 101, &out, &len, &cause), -1);
	free(cause);
	free(img.data);
}

/*
 * Screenshots scale straight into PNG scanlines (cap_scale_scanlines): the
 * pixels must be exactly cap_scale's, for the fixed ratios screenshots use
 * (3:2, 4:3, 2:1), odd ones, upscales and equal sizes, from a crop view
 * with a wide stride and garbage in the X bytes.
 */
static void
test_scale_scanlines(void **state)
{
	static const int sizes[][4] = {
		{ 1920, 1080, 1280, 720 },
		{ 1920, 1080, 1366, 768 },
		{ 1600, 1200, 1200, 900 },
		{ 1280, 800, 640, 400 },
		{ 333, 517, 97, 203 },
		{ 40, 30, 117, 61 },
		{ 37, 23, 37, 23 },
		{ 1, 1, 5, 3 },
	};
	char *cause = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct cap_image big = img_new(sizes[i][0] + 3, sizes[i][1] + 2,
		    20);
		struct cap_image src, dst;
		uint8_t *scan, *want;
		size_t row = CAP_SCANLINE(sizes[i][2]);
		uint64_t hash = 0;
		int y;

		assert_int_equal(cap_crop(&big, 3, 1, sizes[i][0], sizes[i][1],
		                     &src, &cause),
		    0);
		dst = img_new(sizes[i][2], sizes[i][3], 4);
		scan = malloc(row * (size_t)sizes[i][3]);
		want = malloc(row);
		assert_non_null(scan);
		assert_non_null(want);
		assert_int_equal(cap_scale(&src, &dst, &cause), 0);
		/* with the hash folded in: the same pixels, cap_hash's value */
		assert_int_equal(cap_scale_scanlines_hash(&src, sizes[i][2],
		                     sizes[i][3], scan, &hash, &cause),
		    0);
		assert_true(hash == cap_hash(&src));
		for (y = 0; y < sizes[i][3]; y++) {
			cap_scanline_put(dst.data +
			        (size_t)y * (size_t)dst.stride,
			    dst.width, want);
			if (memcmp(scan + (size_t)y * row, want, row) != 0)
				fail_msg(
				    "%dx%d -> %dx%d: row %d differs (hash)",
				    sizes[i][0], sizes[i][1], sizes[i][2],
				    sizes[i][3], y);
		}
		memset(scan, 0, row * (size_t)sizes[i][3]);
		assert_int_equal(cap_scale_scanlines(&src, sizes[i][2],
		                     sizes[i][3], scan, &cause),
		    0);
		for (y = 0; y < sizes[i][3]; y++) {
			cap_scanline_put(dst.data +
			        (size_t)y * (size_t)dst.stride,
			    dst.width, want);
			if (memcmp(scan + (size_t)y * row, want, row) != 0)
				fail_msg("%dx%d -> %dx%d: row %d differs",
				    sizes[i][0], sizes[i][1], sizes[i][2],
				    sizes[i][3], y);
		}
		free(want);
		free(scan);
		free(dst.data);
		free(big.data);
	}
	/* the checks of cap_scale, on the stand-in destination */
	{
		struct cap_image src = img_new(8, 8, 0);
		uint8_t out[64];

		assert_int_equal(cap_scale_scanlines(&src, 0, 8, out, &cause),
		    -1);
		assert_non_null(cause);
		free(cause);
		cause = NULL;
		assert_int_equal(cap_scale_scanlines(&src, 4, 4, NULL, &cause),
		    -1);
		free(cause);
		free(src.data);
	}
}

/*
 * The SIMD passes (SSE2, AVX2 where the CPU has it) against the plain C
 * reference: identical bytes for the fixed ratios screenshots use (3:2,
 * 4:3, 2:1), odd shrinks with more taps, upscales and mixed axes, with
 * widths that leave tails after the 16- and 32-byte steps.
 */
static void
test_scale_simd_exact(void **state)
{
	static const int sizes[][4] = {
		{ 1920, 1080, 1280, 720 },
		{ 1600, 1200, 1200, 900 },
		{ 1280, 800, 640, 400 },
		{ 1921, 1083, 1366, 768 },
		{ 333, 517, 97, 203 },
		{ 37, 23, 111, 71 },
		{ 90, 20, 40, 60 },
		{ 7, 5, 3, 2 },
	};
	const char *best = cap_scale_simd(-1);
	char *cause = NULL;

	(void)state;
	print_message("scaling with %s\n", best);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct cap_image src = img_new(sizes[i][0], sizes[i][1], 12);
		struct cap_image ref = img_new(sizes[i][2], sizes[i][3], 0);
		size_t n = (size_t)ref.stride * (size_t)ref.height;

		assert_string_equal(cap_scale_simd(0), "c");
		assert_int_equal(cap_scale(&src, &ref, &cause), 0);
		for (int level = 1; level <= 2; level++) {
			struct cap_image got = img_new(sizes[i][2], sizes[i][3],
			    0);
			const char *name = cap_scale_simd(level);

			assert_int_equal(cap_scale(&src, &got, &cause), 0);
			if (memcmp(got.data, ref.data, n) != 0)
				fail_msg("%s differs from c: %dx%d -> %dx%d",
				    name, sizes[i][0], sizes[i][1], sizes[i][2],
				    sizes[i][3]);
			free(got.data);
		}
		free(ref.data);
		free(src.data);
	}
	assert_string_equal(cap_scale_simd(2), best);
}

/* Scanlines to PNG (libpng for small images, libdeflate for large) and to
 * JPEG, read back by libpng and libturbojpeg. */
static void
test_encode_scanlines(void **state)
{
	static const int sizes[][2] = { { 37, 23 }, { 640, 400 } };
	char *cause = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		int w = sizes[i][0], h = sizes[i][1], x, y;
		struct cap_image img = img_new(w, h, 0);
		size_t row = CAP_SCANLINE(w), len = 0, jlen = 0, jlen2 = 0;
		uint8_t *scan = malloc(row * (size_t)h), *out = NULL, *back;
		uint8_t *jpg = NULL, *jpg2 = NULL;
		png_image pi;

		assert_non_null(scan);
		for (y = 0; y < h; y++)
			cap_scanline_put(img.data +
			        (size_t)y * (size_t)img.stride,
			    w, scan + (size_t)y * row);
		/* the same JPEG as from the BGRX pixels */
		assert_int_equal(cap_jpeg_encode(&img, 80, &jpg, &jlen, &cause),
		    0);
		assert_int_equal(cap_jpeg_encode_scanlines(scan, w, h, 80,
		                     &jpg2, &jlen2, &cause),
		    0);
		assert_int_equal(jlen, jlen2);
		assert_memory_equal(jpg, jpg2, jlen);
		/* PNG last: it filters the scanlines in place */
		if (cap_png_encode_scanlines(scan, w, h, CAP_PNG_LEVEL, &out,
		        &len, &cause) != 0)
			fail_msg("cap_png_encode_scanlines: %s", cause);
		memset(&pi, 0, sizeof pi);
		pi.version = PNG_IMAGE_VERSION;
		assert_true(png_image_begin_read_from_memory(&pi, out, len));
		assert_int_equal(pi.width, (png_uint_32)w);
		assert_int_equal(pi.height, (png_uint_32)h);
		pi.format = PNG_FORMAT_BGRA;
		back = malloc(PNG_IMAGE_SIZE(pi));
		assert_non_null(back);
		assert_true(png_image_finish_read(&pi, NULL, back, 0, NULL));
		for (y = 0; y < h; y++)
			for (x = 0; x < w; x++)
				if (memcmp(back +
				            ((size_t)y * (size_t)w +
				                (size_t)x) *
				                4,
				        px(&img, x, y), 3) != 0)
					fail_msg("%dx%d: pixel %d,%d differs",
					    w, h, x, y);

		assert_int_equal(cap_png_encode_scanlines(scan, w, h, 10, &out,
		                     &len, &cause),
		    -1);
		assert_string_equal(cause,
		    "invalid png level '10': expected 0 to 9");
		free(cause);
		cause = NULL;
		cap_free(jpg);
		cap_free(jpg2);
		free(back);
		cap_free(out);
		free(scan);
		free(img.data);
	}
}

static void
test_hash(void **state)
{
	struct cap_image a = img_new(33, 17, 12), b = img_new(33, 17, 0);
	struct cap_image c;
	uint64_t h;
	int x, y;

	(void)state;
	fill_random(&a);
	for (y = 0; y < 17; y++)
		for (x = 0; x < 33; x++) {
			memcpy(px(&b, x, y), px(&a, x, y), 3);
			px(&b, x, y)[3] = (uint8_t)(px(&a, x, y)[3] ^ 0x5a);
		}
	h = cap_hash(&a);
	/* In parts: row hashes combined in order give the same value. */
	{
		uint64_t rows[17];

		for (y = 0; y < 17; y++)
			rows[y] = cap_hash_row(px(&a, 0, y), 33);
		assert_true(cap_hash_rows(rows, 33, 17) == h);
		rows[3] ^= 1;
		assert_true(cap_hash_rows(rows, 33, 17) != h);
	}
	/* The X byte and the stride padding do not count. */
	assert_true(cap_hash(&b) == h);
	/* Every channel of every pixel does, the last one included. */
	for (y = 0; y < 17; y += 8)
		for (x = 0; x < 33; x += 16) {
			px(&b, x, y)[y % 3] ^= 1;
			assert_true(cap_hash(&b) != h);
			px(&b, x, y)[y % 3] ^= 1;
		}
	assert_true(cap_hash(&b) == h);
	/* The same bytes as another shape are another image. */
	c = b;
	c.width = 11;
	c.height = 51;
	c.stride = 44;
	assert_true(cap_hash(&c) != h);
	free(a.data);
	free(b.data);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_constant),
		cmocka_unit_test(test_scale_checkerboard),
		cmocka_unit_test(test_scale_gradient),
		cmocka_unit_test(test_scale_reference),
		cmocka_unit_test(test_scale_mixed),
		cmocka_unit_test(test_scale_thin_lines),
		cmocka_unit_test(test_scale_upscale_values),
		cmocka_unit_test(test_scale_same_size_and_crop),
		cmocka_unit_test(test_crop_errors),
		cmocka_unit_test(test_scale_errors),
		cmocka_unit_test(test_map_round_trip),
		cmocka_unit_test(test_scaled_size),
		cmocka_unit_test(test_scale_parse),
		cmocka_unit_test(test_png_round_trip),
		cmocka_unit_test(test_png_deflate_round_trip),
		cmocka_unit_test(test_sdeflate_zlib),
		cmocka_unit_test(test_jpeg),
		cmocka_unit_test(test_scale_scanlines),
		cmocka_unit_test(test_scale_simd_exact),
		cmocka_unit_test(test_encode_scanlines),
		cmocka_unit_test(test_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
