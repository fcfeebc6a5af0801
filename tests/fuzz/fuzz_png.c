/*
 * fuzz_png: the PNG encoder (capture/png.c) must round-trip pixels exactly.
 *
 * Input: width - 1 (byte 0, mod 64), height - 1 (byte 1: up to 256 rows,
 * so images of 128 rows and more take the parallel path on 2 or more
 * CPUs), zlib level (byte 2, mod 10; its top bits pick libpng filters for
 * the tuned encoder the benchmark uses), row padding in pixels (byte 3,
 * mod 4; bits 2-3 the compressor of big images: sdeflate on one thread,
 * on two, libdeflate), then pixels (B, G, R, X bytes), repeated to fill
 * the image.
 *
 * Byte 2 from 0xf0 up instead gives the rest of the input to sdeflate
 * itself as scanlines of byte 0 + 1 bytes (threads: byte 1 & 1 + 1),
 * inflated with zlib and compared byte for byte.
 *
 * Each image is encoded, decoded with libpng (an independent decoder) and
 * compared byte for byte with the B, G, R of the input: abort on any
 * difference. The X byte and the row padding are garbage from the input,
 * as on a real XShm segment, and must not leak into the image.
 */
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/png_tune.h"
#include "capture/sdeflate.h"

static const int fuzz_filters[] = { PNG_FILTER_NONE, PNG_FILTER_SUB,
	PNG_FILTER_UP, PNG_FILTER_AVG, PNG_FILTER_PAETH, PNG_ALL_FILTERS };

static void
fuzz_die(const char *what, int w, int h, int level)
{
	fprintf(stderr, "fuzz_png: %s (%dx%d, level %d)\n", what, w, h, level);
	abort();
}

/* sdeflate on raw bytes: zlib must inflate them back exactly. */
static void
fuzz_sdeflate(const uint8_t *data, size_t size)
{
	size_t row = (size_t)data[0] + 1, cap, len;
	int threads = (data[1] & 1) + 1;
	uint8_t *z, *back;
	uLongf blen;

	data += 4;
	size -= 4;
	cap = sd_bound(size) + 6;
	if ((z = malloc(cap)) == NULL || (back = malloc(size + 1)) == NULL)
		abort();
	len = sd_zlib(data, size, row, threads, z, cap);
	blen = (uLongf)size + 1;
	if (len == 0 || len > cap ||
	    uncompress(back, &blen, z, (uLong)len) != Z_OK || blen != size ||
	    (size > 0 && memcmp(back, data, size) != 0)) {
		fprintf(stderr, "fuzz_png: sdeflate of %zu bytes, row %zu\n",
		    size, row);
		abort();
	}
	free(z);
	free(back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cap_image img;
	png_image pi;
	uint8_t *out = NULL, *back;
	size_t outlen = 0, n, i;
	char *cause = NULL;
	int level, pad, tuned, rv;

	if (size < 4)
		return (0);
	if (data[2] >= 0xf0) {
		fuzz_sdeflate(data, size);
		return (0);
	}
	cap_png_engine((data[3] >> 2) % 3 == 2 ? CAPNG_LIBDEFLATE :
	                                         CAPNG_SDEFLATE,
	    (data[3] >> 2) % 3 == 1 ? 2 : 1);
	img.width = 1 + data[0] % 64;
	img.height = 1 + data[1];
	level = data[2] % 10;
	tuned = data[2] >> 4; /* 0..15; 0 to 9 mean the production encoder */
	pad = data[3] % 4;
	img.stride = 4 * (img.width + pad);
	data += 4;
	size -= 4;
	n = (size_t)img.stride * (size_t)img.height;
	if ((img.data = malloc(n)) == NULL)
		return (0);
	for (i = 0; i < n; i++)
		img.data[i] = size > 0 ? data[i % size] : (uint8_t)i;

	if (tuned >= 10)
		rv = cap_png_encode_tuned(&img, level,
		    fuzz_filters[(tuned - 10) % 6],
		    tuned % 2 ? Z_RLE : Z_DEFAULT_STRATEGY, &out, &outlen,
		    &cause);
	else
		rv = cap_png_encode(&img, level, &out, &outlen, &cause);
	if (rv != 0)
		fuzz_die(cause != NULL ? cause : "encode failed", img.width,
		    img.height, level);

	memset(&pi, 0, sizeof pi);
	pi.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&pi, out, outlen))
		fuzz_die(pi.message, img.width, img.height, level);
	if ((int)pi.width != img.width || (int)pi.height != img.height)
		fuzz_die("decoded size differs", (int)pi.width, (int)pi.height,
		    level);
	pi.format = PNG_FORMAT_RGB;
	if ((back = malloc(PNG_IMAGE_SIZE(pi))) == NULL)
		abort();
	if (!png_image_finish_read(&pi, NULL, back, 0, NULL))
		fuzz_die(pi.message, img.width, img.height, level);
	for (int y = 0; y < img.height; y++)
		for (int x = 0; x < img.width; x++) {
			const uint8_t *s = img.data + (size_t)y * img.stride +
			    (size_t)x * 4;
			const uint8_t *d = back +
			    ((size_t)y * img.width + (size_t)x) * 3;

			if (d[0] != s[2] || d[1] != s[1] || d[2] != s[0])
				fuzz_die("pixel differs", x, y, level);
		}
	free(back);
	cap_free(out);
	free(img.data);
	return (0);
}
