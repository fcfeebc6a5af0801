/*
 * jpeg: BGRX pixels or PNG scanlines to a baseline 4:2:0 JPEG with
 * libturbojpeg.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "capture/capture.h"

/* Pixels of format pf (TJPF_BGRX or TJPF_RGB), rows pitch bytes apart. */
static int
jpeg_run(const uint8_t *data, int width, int height, int pitch, int pf,
    int quality, uint8_t **out, size_t *outlen, char **cause)
{
	unsigned char *jbuf = NULL;
	unsigned long jlen = 0;
	tjhandle tj;
	uint8_t *copy;

	if (quality < 1 || quality > 100) {
		if (cause != NULL &&
		    asprintf(cause,
		        "invalid jpeg quality '%d': expected 1 to 100",
		        quality) < 0)
			*cause = NULL;
		return -1;
	}
	/* A handle per call: it costs microseconds and keeps this function
	 * safe to call from several workers at once. */
	if ((tj = tjInitCompress()) == NULL) {
		if (cause != NULL &&
		    asprintf(cause, "jpeg encoder failed to start: %s",
		        tjGetErrorStr2(NULL)) < 0)
			*cause = NULL;
		return -1;
	}
	if (tjCompress2(tj, data, width, pitch, height, pf, &jbuf, &jlen,
	        TJSAMP_420, quality, 0) != 0) {
		if (cause != NULL &&
		    asprintf(cause, "jpeg encoding of '%dx%d' failed: %s",
		        width, height, tjGetErrorStr2(tj)) < 0)
			*cause = NULL;
		tjFree(jbuf);
		tjDestroy(tj);
		return -1;
	}
	tjDestroy(tj);
	/* tjAlloc'd memory must go back through tjFree; callers use
	 * cap_free. */
	if ((copy = cap_alloc(jlen)) == NULL) {
		tjFree(jbuf);
		if (cause != NULL &&
		    asprintf(cause, "out of memory encoding '%dx%d' as jpeg",
		        width, height) < 0)
			*cause = NULL;
		return -1;
	}
	memcpy(copy, jbuf, jlen);
	tjFree(jbuf);
	*out = copy;
	*outlen = jlen;
	return 0;
}

int
cap_jpeg_encode(const struct cap_image *img, int quality, uint8_t **out,
    size_t *outlen, char **cause)
{
	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width) {
		if (cause != NULL &&
		    asprintf(cause, "invalid image '%dx%d'",
		        img == NULL ? 0 : img->width,
		        img == NULL ? 0 : img->height) < 0)
			*cause = NULL;
		return -1;
	}
	return jpeg_run(img->data, img->width, img->height, img->stride,
	    TJPF_BGRX, quality, out, outlen, cause);
}

int
cap_jpeg_encode_scanlines(const uint8_t *rows, int width, int height,
    int quality, uint8_t **out, size_t *outlen, char **cause)
{
	if (rows == NULL || width <= 0 || height <= 0 ||
	    width > (INT32_MAX - 1) / 3) {
		if (cause != NULL &&
		    asprintf(cause, "invalid image '%dx%d'", width, height) < 0)
			*cause = NULL;
		return -1;
	}
	/* the RGB after each row's filter byte */
	return jpeg_run(rows + 1, width, height, (int)CAP_SCANLINE(width),
	    TJPF_RGB, quality, out, outlen, cause);
}
