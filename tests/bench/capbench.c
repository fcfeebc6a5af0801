/*
 * capbench: how long the capture layer takes on one realistic frame.
 *
 *   capbench [-n RUNS] [-m] [-o scaled.png] [frame.png]
 *
 * frame.png is a screenshot (for example of an Xvfb desktop:
 * `xwd -root -display :N | convert xwd:- frame.png`); without it a
 * synthetic frame is used (text-like strokes on a gradient, a noisy photo
 * area). Prints the median and the best time of each step in milliseconds:
 * scale to 1280x720, PNG and JPEG encoding of the scaled frame, hash of the
 * full frame. -m also prints the PNG settings matrix (zlib level, filters,
 * strategy) that chose cap_png_encode's settings. -o writes the scaled frame
 * as a PNG to look at.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/png_tune.h"

#define MAXRUNS 1000

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
report(const char *what, double *t, int n, const char *extra)
{
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	printf("%-34s median %7.2f ms  best %7.2f ms%s%s\n", what, t[n / 2],
	    t[0], extra[0] != '\0' ? "  " : "", extra);
}

static int
load_png(const char *path, struct cap_image *img)
{
	png_image pi;

	memset(&pi, 0, sizeof pi);
	pi.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&pi, path)) {
		fprintf(stderr, "capbench: %s: %s\n", path, pi.message);
		return -1;
	}
	pi.format = PNG_FORMAT_BGRA;
	img->width = (int)pi.width;
	img->height = (int)pi.height;
	img->stride = img->width * 4;
	if ((img->data = malloc(PNG_IMAGE_SIZE(pi))) == NULL) {
		png_image_free(&pi);
		return -1;
	}
	if (!png_image_finish_read(&pi, NULL, img->data, 0, NULL)) {
		fprintf(stderr, "capbench: %s: %s\n", path, pi.message);
		free(img->data);
		return -1;
	}
	return 0;
}

/* A stand-in desktop: gradient wallpaper, two white "terminals" full of
 * 1-pixel glyph strokes, a noisy photo-like area. */
static int
synth_frame(struct cap_image *img)
{
	uint32_t seed = 12345, *p;
	int x, y, inwin, photo;

	img->width = 1920;
	img->height = 1080;
	img->stride = 1920 * 4;
	if ((img->data = malloc((size_t)img->stride * 1080)) == NULL)
		return -1;
	for (y = 0; y < 1080; y++) {
		p = (uint32_t *)(img->data + (size_t)y * (size_t)img->stride);
		for (x = 0; x < 1920; x++) {
			seed = seed * 1664525u + 1013904223u;
			inwin = (x > 20 && x < 830 && y > 30 && y < 740) ||
			    (x > 980 && x < 1530 && y > 40 && y < 460);
			photo = x > 1000 && x < 1720 && y > 520 && y < 1000;
			if (photo)
				p[x] = ((uint32_t)(x / 3 + (seed >> 28)) & 0xff) |
				    (((uint32_t)(y / 3 + (seed >> 27)) & 0xff)
				    << 8) | (0x40u + (seed >> 29)) << 16;
			else if (inwin)
				p[x] = (y % 13 < 9 && (x * 7 + y * 3) % 11 < 3 &&
				    (x / 8) % 9 != 0) ? 0x000000 : 0xffffff;
			else
				p[x] = (uint32_t)(0x2c + y * 0x20 / 1080) << 16 |
				    (uint32_t)(0x3e + y * 0x63 / 1080) << 8 |
				    (uint32_t)(0x50 + y * 0x5f / 1080);
		}
	}
	return 0;
}

static void
png_matrix(const struct cap_image *img, int runs)
{
	static const struct {
		const char *name;
		int mask;
	} filters[] = {
		{ "none", PNG_FILTER_NONE },
		{ "sub", PNG_FILTER_SUB },
		{ "up", PNG_FILTER_UP },
		{ "paeth", PNG_FILTER_PAETH },
		{ "all", PNG_ALL_FILTERS },
	};
	static const struct {
		const char *name;
		int z;
	} strategies[] = {
		{ "default", Z_DEFAULT_STRATEGY },
		{ "rle", Z_RLE },
		{ "filtered", Z_FILTERED },
	};
	static const int levels[] = { 1, 2, 3, 6, 9 };
	double t[MAXRUNS], t0;
	char label[64], extra[64];
	size_t f, s, l, len = 0;
	uint8_t *out;
	char *cause = NULL;
	int i;

	for (l = 0; l < sizeof levels / sizeof levels[0]; l++)
		for (f = 0; f < sizeof filters / sizeof filters[0]; f++)
			for (s = 0; s < sizeof strategies / sizeof strategies[0];
			    s++) {
				for (i = 0; i < runs; i++) {
					t0 = now_ms();
					if (cap_png_encode_tuned(img, levels[l],
					    filters[f].mask, strategies[s].z,
					    &out, &len, &cause) != 0) {
						fprintf(stderr, "%s\n", cause);
						exit(1);
					}
					t[i] = now_ms() - t0;
					free(out);
				}
				snprintf(label, sizeof label,
				    "png level %d %-5s %-8s", levels[l],
				    filters[f].name, strategies[s].name);
				snprintf(extra, sizeof extra, "%8zu bytes", len);
				report(label, t, runs, extra);
			}
}

int
main(int argc, char **argv)
{
	struct cap_image src = { 0 }, dst;
	double t[MAXRUNS], t0;
	char extra[64];
	const char *outpath = NULL;
	uint8_t *out = NULL;
	char *cause = NULL;
	size_t len = 0;
	volatile uint64_t h;
	int c, i, runs = 30, matrix = 0;
	FILE *fp;

	while ((c = getopt(argc, argv, "mn:o:")) != -1) {
		switch (c) {
		case 'm':
			matrix = 1;
			break;
		case 'n':
			runs = atoi(optarg);
			break;
		case 'o':
			outpath = optarg;
			break;
		default:
			fprintf(stderr, "usage: capbench [-n RUNS] [-m] "
			    "[-o scaled.png] [frame.png]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAXRUNS) {
		fprintf(stderr, "capbench: runs must be 1 to %d\n", MAXRUNS);
		return 2;
	}
	if (optind < argc ? load_png(argv[optind], &src) != 0 :
	    synth_frame(&src) != 0)
		return 1;
	dst.width = 1280;
	dst.height = 720;
	dst.stride = 1280 * 4;
	if ((dst.data = malloc((size_t)dst.stride * 720)) == NULL)
		return 1;
	printf("frame %dx%d (%s), %d runs each\n", src.width, src.height,
	    optind < argc ? argv[optind] : "synthetic", runs);

	for (i = 0; i < runs; i++) {
		t0 = now_ms();
		if (cap_scale(&src, &dst, &cause) != 0) {
			fprintf(stderr, "capbench: %s\n", cause);
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	snprintf(extra, sizeof extra, "%dx%d -> 1280x720", src.width,
	    src.height);
	report("scale", t, runs, extra);

	for (i = 0; i < runs; i++) {
		t0 = now_ms();
		if (cap_png_encode(&dst, 1, &out, &len, &cause) != 0) {
			fprintf(stderr, "capbench: %s\n", cause);
			return 1;
		}
		t[i] = now_ms() - t0;
		if (i < runs - 1)
			free(out);
	}
	snprintf(extra, sizeof extra, "%zu bytes", len);
	report("png 1280x720 (cap_png_encode, 1)", t, runs, extra);
	if (outpath != NULL) {
		if ((fp = fopen(outpath, "wb")) == NULL ||
		    fwrite(out, 1, len, fp) != len || fclose(fp) != 0) {
			perror(outpath);
			return 1;
		}
	}
	free(out);

	for (i = 0; i < runs; i++) {
		t0 = now_ms();
		if (cap_jpeg_encode(&dst, 80, &out, &len, &cause) != 0) {
			fprintf(stderr, "capbench: %s\n", cause);
			return 1;
		}
		t[i] = now_ms() - t0;
		free(out);
	}
	snprintf(extra, sizeof extra, "%zu bytes", len);
	report("jpeg 1280x720 q80", t, runs, extra);

	for (i = 0; i < runs; i++) {
		t0 = now_ms();
		h = cap_hash(&src);
		t[i] = now_ms() - t0;
	}
	snprintf(extra, sizeof extra, "%dx%d", src.width, src.height);
	report("hash", t, runs, extra);
	(void)h;

	if (matrix)
		png_matrix(&dst, runs < 10 ? runs : 10);
	free(src.data);
	free(dst.data);
	return 0;
}
