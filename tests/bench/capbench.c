/*
 * capbench: how long the capture layer takes on one realistic frame.
 *
 *   capbench [-n RUNS] [-m] [-o scaled.png] [frame.png]
 *   capbench -s WxH frame.png
 *   capbench -e [-n RUNS] frame.png
 *
 * frame.png is a screenshot (for example of an Xvfb desktop:
 * `xwd -root -display :N | convert xwd:- frame.png`); without it a
 * synthetic frame is used (text-like strokes on a gradient, a noisy photo
 * area). Prints the median and the best time of each step in milliseconds:
 * scale to 1280x720, PNG and JPEG encoding of the scaled frame, hash of the
 * full frame. -m also prints the PNG settings matrix (zlib level, filters,
 * strategy) that chose cap_png_encode's settings. -o writes the scaled frame
 * as a PNG to look at. -s scales the frame to WxH and prints the sizes of
 * its PNG from cap_png_encode and from libpng at levels 1 and 6 with
 * libpng's default (adaptive) filters: `bytes=N libpng1=N libpng6=N`.
 * -e only compares the compressors of big images (libdeflate, sdeflate on
 * one and two threads) on the frame scaled to 1280x720 and at full size:
 * wall and CPU time, size, and whether libpng decodes the same pixels.
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

static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
report(const char *what, double *t, double *cpu, int n, const char *extra)
{
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	if (cpu != NULL) {
		qsort(cpu, (size_t)n, sizeof *cpu, cmp_double);
		printf("%-34s median %7.2f ms  best %7.2f ms  cpu %7.2f ms"
		       "%s%s\n",
		    what, t[n / 2], t[0], cpu[n / 2],
		    extra[0] != '\0' ? "  " : "", extra);
		return;
	}
	printf("%-40s median %7.2f ms  best %7.2f ms%s%s\n", what, t[n / 2],
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
				p[x] = ((uint32_t)(x / 3 + (seed >> 28)) &
				           0xff) |
				    (((uint32_t)(y / 3 + (seed >> 27)) & 0xff)
				        << 8) |
				    (0x40u + (seed >> 29)) << 16;
			else if (inwin)
				p[x] = (y % 13 < 9 &&
				           (x * 7 + y * 3) % 11 < 3 &&
				           (x / 8) % 9 != 0) ?
				    0x000000 :
				    0xffffff;
			else
				p[x] = (uint32_t)(0x2c + y * 0x20 / 1080)
				        << 16 |
				    (uint32_t)(0x3e + y * 0x63 / 1080) << 8 |
				    (uint32_t)(0x50 + y * 0x5f / 1080);
		}
	}
	return 0;
}

/*
 * Every combination of zlib level, PNG filters and zlib strategy, measured
 * round-robin (one encode of each per round) so that load from other
 * processes on the machine spreads evenly over all of them. Times are the
 * thread's CPU time, which such load disturbs least.
 */
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
		{ "huffman", Z_HUFFMAN_ONLY },
	};
	static const int levels[] = { 0, 1, 2, 3, 6 };
	enum {
		NL = sizeof levels / sizeof levels[0],
		NF = sizeof filters / sizeof filters[0],
		NS = sizeof strategies / sizeof strategies[0],
		NC = NL * NF * NS,
	};
	static double t[NC][MAXRUNS];
	size_t len[NC];
	char label[64], extra[64];
	uint8_t *out;
	char *cause = NULL;
	double t0;
	int i, k, l, f, s;

	for (i = 0; i < runs; i++)
		for (k = 0; k < NC; k++) {
			l = k / (NF * NS);
			f = k / NS % NF;
			s = k % NS;
			t0 = cpu_ms();
			if (cap_png_encode_tuned(img, levels[l],
			        filters[f].mask, strategies[s].z, &out, &len[k],
			        &cause) != 0) {
				fprintf(stderr, "capbench: %s\n", cause);
				exit(1);
			}
			t[k][i] = cpu_ms() - t0;
			cap_free(out);
		}
	for (k = 0; k < NC; k++) {
		l = k / (NF * NS);
		f = k / NS % NF;
		s = k % NS;
		snprintf(label, sizeof label, "png level %d %-5s %-8s (cpu)",
		    levels[l], filters[f].name, strategies[s].name);
		snprintf(extra, sizeof extra, "%8zu bytes", len[k]);
		report(label, t[k], NULL, runs, extra);
	}
}

/* -s: the frame scaled to WxH ("none": as it is), its PNG sizes. */
static int
png_sizes(const struct cap_image *src, const char *size)
{
	static const int levels[] = { 1, 6 };
	struct cap_image dst = *src;
	char *cause = NULL;
	uint8_t *out;
	size_t len[3];

	if (strcmp(size, "none") != 0) {
		if (sscanf(size, "%dx%d", &dst.width, &dst.height) != 2 ||
		    dst.width < 1 || dst.height < 1) {
			fprintf(stderr, "capbench: bad size '%s'\n", size);
			return 2;
		}
		dst.stride = dst.width * 4;
		dst.data = malloc((size_t)dst.stride * (size_t)dst.height);
		if (dst.data == NULL || cap_scale(src, &dst, &cause) != 0)
			return 1;
	}
	if (cap_png_encode(&dst, CAP_PNG_LEVEL, &out, &len[0], &cause) != 0)
		return 1;
	cap_free(out);
	for (int i = 0; i < 2; i++) {
		if (cap_png_encode_tuned(&dst, levels[i], PNG_ALL_FILTERS,
		        Z_DEFAULT_STRATEGY, &out, &len[i + 1], &cause) != 0)
			return 1;
		cap_free(out);
	}
	printf("bytes=%zu libpng1=%zu libpng6=%zu\n", len[0], len[1], len[2]);
	if (dst.data != src->data)
		free(dst.data);
	return 0;
}

static double
proc_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whether png decodes (libpng) to exactly img's B, G, R. */
static int
png_same(const uint8_t *png, size_t len, const struct cap_image *img)
{
	png_image pi;
	uint8_t *back;
	int same = 1;

	memset(&pi, 0, sizeof pi);
	pi.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&pi, png, len))
		return 0;
	pi.format = PNG_FORMAT_BGRA;
	if ((int)pi.width != img->width || (int)pi.height != img->height ||
	    (back = malloc(PNG_IMAGE_SIZE(pi))) == NULL) {
		png_image_free(&pi);
		return 0;
	}
	if (!png_image_finish_read(&pi, NULL, back, 0, NULL))
		same = 0;
	for (int y = 0; same && y < img->height; y++)
		for (int x = 0; same && x < img->width; x++)
			same = memcmp(back + ((size_t)y * img->width + x) * 4,
			           img->data + (size_t)y * img->stride + x * 4,
			           3) == 0;
	free(back);
	return same;
}

/*
 * The compressors of big images side by side, round-robin so that load
 * spreads evenly: libdeflate at the level it had, sdeflate on one thread
 * and on two. Wall time and the process's CPU time (both threads), the
 * size, and whether libpng decodes it back to the same pixels.
 */
static void
png_engines(const struct cap_image *img, const char *what, int runs)
{
	static const struct {
		const char *name;
		int engine, threads, level;
	} e[] = {
		{ "libdeflate 4", CAPNG_LIBDEFLATE, 1, 4 },
		{ "libdeflate 2", CAPNG_LIBDEFLATE, 1, 2 },
		{ "sdeflate 1 thread", CAPNG_SDEFLATE, 1, CAP_PNG_LEVEL },
		{ "sdeflate 2 threads", CAPNG_SDEFLATE, 2, CAP_PNG_LEVEL },
	};
	enum { NE = sizeof e / sizeof e[0] };
	static double t[NE][MAXRUNS], cpu[NE][MAXRUNS];
	size_t len[NE];
	int same[NE];
	char label[64], extra[80];
	uint8_t *out;
	char *cause = NULL;
	double t0, c0;

	for (int i = 0; i < runs; i++)
		for (int k = 0; k < NE; k++) {
			cap_png_engine(e[k].engine, e[k].threads);
			t0 = now_ms();
			c0 = proc_cpu_ms();
			if (cap_png_encode(img, e[k].level, &out, &len[k],
			        &cause) != 0) {
				fprintf(stderr, "capbench: %s\n", cause);
				exit(1);
			}
			cpu[k][i] = proc_cpu_ms() - c0;
			t[k][i] = now_ms() - t0;
			if (i == 0)
				same[k] = png_same(out, len[k], img);
			cap_free(out);
		}
	cap_png_engine(CAPNG_SDEFLATE, -1);
	for (int k = 0; k < NE; k++) {
		snprintf(label, sizeof label, "png %s %s", what, e[k].name);
		snprintf(extra, sizeof extra, "%8zu bytes%s", len[k],
		    same[k] ? "" : "  PIXELS DIFFER");
		report(label, t[k], cpu[k], runs, extra);
	}
}

enum step { SCALE, SCALE_AUTO, PNG, JPEG, HASH };

/* Where hashes go so that the compiler keeps computing them. */
volatile uint64_t capbench_sink;

/* One run of a step; returns the output size in bytes (0 if none). */
static size_t
run_step(enum step step, const struct cap_image *src, struct cap_image *dst,
    struct cap_image *dst_auto, uint8_t **keep)
{
	uint8_t *out = NULL;
	char *cause = NULL;
	size_t len = 0;
	int rc = 0;

	switch (step) {
	case SCALE:
		rc = cap_scale(src, dst, &cause);
		break;
	case SCALE_AUTO:
		rc = cap_scale(src, dst_auto, &cause);
		break;
	case PNG:
		rc = cap_png_encode(dst, CAP_PNG_LEVEL, &out, &len, &cause);
		break;
	case JPEG:
		rc = cap_jpeg_encode(dst, 80, &out, &len, &cause);
		break;
	case HASH:
		capbench_sink = cap_hash(src);
		break;
	}
	if (rc != 0) {
		fprintf(stderr, "capbench: %s\n", cause);
		exit(1);
	}
	if (keep != NULL) {
		cap_free(*keep);
		*keep = out;
	} else
		cap_free(out);
	return len;
}

int
main(int argc, char **argv)
{
	struct cap_image src = { 0 }, dst, dst_auto;
	static double t[MAXRUNS], cpu[MAXRUNS];
	char label[64], extra[64];
	const char *outpath = NULL;
	uint8_t *png = NULL;
	char *cause = NULL;
	double t0, c0;
	size_t len = 0;
	int c, i, runs = 30, matrix = 0, engines = 0;
	const char *sizes = NULL;
	enum step step;
	FILE *fp;

	while ((c = getopt(argc, argv, "emn:o:s:")) != -1) {
		switch (c) {
		case 'e':
			engines = 1;
			break;
		case 's':
			sizes = optarg;
			break;
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
			fprintf(stderr,
			    "usage: capbench [-n RUNS] [-m] [-e] "
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
	if (sizes != NULL)
		return png_sizes(&src, sizes);
	dst.width = 1280;
	dst.height = 720;
	dst.stride = 1280 * 4;
	cap_scaled_size(CAP_SCALE_AUTO, 0, 0, src.width, src.height,
	    &dst_auto.width, &dst_auto.height);
	dst_auto.stride = dst_auto.width * 4;
	dst.data = malloc((size_t)dst.stride * (size_t)dst.height);
	dst_auto.data = malloc(
	    (size_t)dst_auto.stride * (size_t)dst_auto.height);
	if (dst.data == NULL || dst_auto.data == NULL)
		return 1;
	if (engines) {
		if (cap_scale(&src, &dst, &cause) != 0) {
			fprintf(stderr, "capbench: %s\n", cause);
			return 1;
		}
		png_engines(&dst, "1280x720", runs);
		png_engines(&src, "full", runs);
		return 0;
	}
	printf("frame %dx%d (%s), %d runs each; wall-clock median and best, "
	       "CPU median\n",
	    src.width, src.height, optind < argc ? argv[optind] : "synthetic",
	    runs);

	for (step = SCALE; step <= HASH; step++) {
		for (i = 0; i < runs; i++) {
			t0 = now_ms();
			c0 = cpu_ms();
			len = run_step(step, &src, &dst, &dst_auto,
			    step == PNG ? &png : NULL);
			cpu[i] = cpu_ms() - c0;
			t[i] = now_ms() - t0;
		}
		extra[0] = '\0';
		switch (step) {
		case SCALE:
			snprintf(label, sizeof label, "scale %dx%d -> 1280x720",
			    src.width, src.height);
			break;
		case SCALE_AUTO:
			snprintf(label, sizeof label, "scale %dx%d -> %dx%d",
			    src.width, src.height, dst_auto.width,
			    dst_auto.height);
			break;
		case PNG:
			snprintf(label, sizeof label, "png 1280x720 level %d",
			    CAP_PNG_LEVEL);
			snprintf(extra, sizeof extra, "%zu bytes", len);
			break;
		case JPEG:
			snprintf(label, sizeof label,
			    "jpeg 1280x720 q80 4:2:0");
			snprintf(extra, sizeof extra, "%zu bytes", len);
			break;
		case HASH:
			snprintf(label, sizeof label, "hash %dx%d", src.width,
			    src.height);
			break;
		}
		report(label, t, cpu, runs, extra);
	}
	/* each scaling implementation on its own (all give the same pixels) */
	for (int level = 0; level <= 2; level++) {
		const char *name = cap_scale_simd(level);

		if (level > 0 && strcmp(name, cap_scale_simd(level - 1)) == 0)
			break; /* the CPU has no better */
		cap_scale_simd(level);
		for (i = 0; i < runs; i++) {
			t0 = now_ms();
			c0 = cpu_ms();
			run_step(SCALE, &src, &dst, &dst_auto, NULL);
			cpu[i] = cpu_ms() - c0;
			t[i] = now_ms() - t0;
		}
		snprintf(label, sizeof label, "scale %dx%d -> 1280x720 %s",
		    src.width, src.height, name);
		report(label, t, cpu, runs, "");
	}
	cap_scale_simd(2);
	run_step(SCALE, &src, &dst, &dst_auto, NULL);
	png_engines(&dst, "1280x720", runs);
	png_engines(&src, "full", runs);
	if (outpath != NULL) {
		len = run_step(PNG, &src, &dst, &dst_auto, &png);
		if ((fp = fopen(outpath, "wb")) == NULL ||
		    fwrite(png, 1, len, fp) != len || fclose(fp) != 0) {
			perror(outpath);
			return 1;
		}
	}
	if (matrix)
		png_matrix(&dst, runs);
	cap_free(png);
	free(src.data);
	free(dst.data);
	free(dst_auto.data);
	return 0;
}
