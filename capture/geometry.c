/*
 * geometry: the screenshot size a screen gets, and coordinates between
 * screen space and screenshot space.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"

#define SIDE_MIN 16
#define SIDE_MAX 16384

static void
geometry_cause(char **cause, const char *s, const char *why)
{
	if (cause == NULL)
		return;
	if (asprintf(cause, "invalid scale '%s': %s", s, why) < 0)
		*cause = NULL;
}

/*
 * Reads one side: decimal digits only (no sign, no spaces), stopping at
 * *end. Returns -1 when there is no digit or too many to be a side.
 */
static int
geometry_side(const char *s, const char **end, long *v)
{
	long n = 0;
	int digits = 0;

	while (*s >= '0' && *s <= '9') {
		if (digits++ == 9)
			return -1;
		n = n * 10 + (*s++ - '0');
	}
	if (digits == 0)
		return -1;
	*end = s;
	*v = n;
	return 0;
}

int
cap_scale_parse(const char *s, enum cap_scale_mode *mode, int *w, int *h,
    char **cause)
{
	const char *p;
	long sw, sh;

	if (s == NULL) {
		geometry_cause(cause, "", "expected none, auto or WxH");
		return -1;
	}
	if (strcmp(s, "none") == 0) {
		*mode = CAP_SCALE_NONE;
		return 0;
	}
	if (strcmp(s, "auto") == 0) {
		*mode = CAP_SCALE_AUTO;
		return 0;
	}
	if (geometry_side(s, &p, &sw) != 0 || (*p != 'x' && *p != 'X') ||
	    geometry_side(p + 1, &p, &sh) != 0 || *p != '\0') {
		geometry_cause(cause, s, "expected none, auto or WxH");
		return -1;
	}
	if (sw < SIDE_MIN) {
		geometry_cause(cause, s, "width below 16");
		return -1;
	}
	if (sw > SIDE_MAX) {
		geometry_cause(cause, s, "width above 16384");
		return -1;
	}
	if (sh < SIDE_MIN) {
		geometry_cause(cause, s, "height below 16");
		return -1;
	}
	if (sh > SIDE_MAX) {
		geometry_cause(cause, s, "height above 16384");
		return -1;
	}
	*mode = CAP_SCALE_FIXED;
	*w = (int)sw;
	*h = (int)sh;
	return 0;
}

/* The sizes models are trained on (Anthropic's computer-use guidance). */
static const struct {
	int w, h;
} geometry_targets[] = {
	{ 1024, 768 },
	{ 1280, 800 },
	{ 1366, 768 },
};

void
cap_scaled_size(enum cap_scale_mode mode, int w, int h, int sw, int sh, int *dw,
    int *dh)
{
	int64_t tw, th, best = 0;
	size_t i;

	*dw = sw;
	*dh = sh;
	switch (mode) {
	case CAP_SCALE_NONE:
		return;
	case CAP_SCALE_FIXED:
		*dw = w;
		*dh = h;
		return;
	case CAP_SCALE_AUTO:
		break;
	}
	if (sw <= 0 || sh <= 0)
		return;
	for (i = 0; i < sizeof geometry_targets / sizeof geometry_targets[0];
	     i++) {
		tw = geometry_targets[i].w;
		th = geometry_targets[i].h;
		if (tw > sw || th > sh)
			continue;
		/* |tw/th - sw/sh| <= 2% of sw/sh, in integers. */
		if (llabs(tw * sh - sw * th) * 50 > sw * th)
			continue;
		if (tw * th > best) {
			best = tw * th;
			*dw = (int)tw;
			*dh = (int)th;
		}
	}
}

int
cap_map(int v, int from, int to)
{
	int64_t num, den, r;

	if (from <= 0 || to <= 0)
		return 0;
	/* floor((v + 0.5) * to / from) exactly: (2v + 1) * to / (2 * from). */
	num = (2 * (int64_t)v + 1) * to;
	den = 2 * (int64_t)from;
	r = num / den;
	if (num % den != 0 && num < 0)
		r--;
	if (r < 0)
		return 0;
	if (r > to - 1)
		return to - 1;
	return (int)r;
}
