/*
 * common/utf8.c: UTF-8 sequences (see utf8.h).
 */
#include "common/utf8.h"

int
utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;
	int len, i;

	if (n == 0)
		return (0);
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return (1);
	}
	if (c >= 0xc2 && c <= 0xdf) { /* 0xc0, 0xc1: overlong */
		len = 2;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		c &= 0x07;
	} else
		return (-1);
	for (i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return (0);
		if ((s[i] & 0xc0) != 0x80)
			return (-1);
		/* Refuse on the second byte what no ending could make valid,
		 * so that a stream split there is not held back. */
		if (i == 1 &&
		    ((s[0] == 0xe0 && s[1] < 0xa0) ||     /* overlong */
		        (s[0] == 0xed && s[1] >= 0xa0) || /* surrogate */
		        (s[0] == 0xf0 && s[1] < 0x90) ||  /* overlong */
		        (s[0] == 0xf4 && s[1] >= 0x90)))  /* > U+10FFFF */
			return (-1);
		c = c << 6 | (s[i] & 0x3f);
	}
	*cp = c; /* the second byte's checks above leave no overlong */
	return (len);
}

size_t
utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return (1);
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return (2);
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return (3);
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return (4);
}
