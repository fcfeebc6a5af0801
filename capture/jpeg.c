/*
 * jpeg: BGRX pixels to a baseline 4:2:0 JPEG with libturbojpeg.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "capture/capture.h"

int
cap_jpeg_encode(const struct cap_image *img, int quality, uint8_t **out,
    size_t *outlen, char **cause)
{
	unsigned char *jbuf = NULL;
	unsigned long jlen = 0;
	tjhandle tj;
	uint8_t *copy;

	if (img == NULL || img->data == NULL || img->width <= 0 ||
	    img->height <= 0 || img->stride / 4 < img->width) {
		if (cause != NULL &&
		    asprintf(cause, "invalid image '%dx%d'",
		        img == NULL ? 0 : img->width,
		        img == NULL ? 0 : img->height) < 0)
			*cause = NULL;
		return -1;
	}
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
	if (tjCompress2(tj, img->data, img->width, img->stride, img->height,
	        TJPF_BGRX, &jbuf, &jlen, TJSAMP_420, quality, 0) != 0) {
		if (cause != NULL &&
		    asprintf(cause, "jpeg encoding of '%dx%d' failed: %s",
		        img->width, img->height, tjGetErrorStr2(tj)) < 0)
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
		        img->width, img->height) < 0)
			*cause = NULL;
		return -1;
	}
	memcpy(copy, jbuf, jlen);
	tjFree(jbuf);
	*out = copy;
	*outlen = jlen;
	return 0;
}
