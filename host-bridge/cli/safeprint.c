/*
 * safeprint: guest text made inert for a terminal (safeprint.h).
 *
 * The UTF-8 check is written here rather than taken from a library: the
 * CLI links no Unicode library, mbrtowc() depends on the caller's locale,
 * and the rules (RFC 3629: no overlongs, no surrogates, nothing past
 * U+10FFFF) fit in one function.
 */
#include "host-bridge/cli/safeprint.h"

#include <string.h>

static const char sp_repl[] = "\xef\xbf\xbd"; /* U+FFFD */

static void
sp_control(const struct sp_state *st, FILE *f, unsigned cp)
{
	if (st->style == SP_JSON || cp >= 0x80)
		fprintf(f, "\\u%04x", cp);
	else
		fprintf(f, "\\x%02x", cp);
}

/*
 * Length of the UTF-8 sequence at s (n bytes there): > 0 for a valid one
 * (its code point in *cp), 0 when s holds only the start of one that may
 * still be valid, -1 when s[0] starts no valid sequence.
 */
static int
sp_utf8(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0], min;
	int len, i;

	if (c < 0x80) {
		*cp = c;
		return (1);
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
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
	if (c < min)
		return (-1);
	*cp = c;
	return (len);
}

/* One whole character cp, encoded as the n bytes at s. */
static void
sp_char(const struct sp_state *st, FILE *f, const unsigned char *s, int n,
    unsigned cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		sp_control(st, f, cp);
	else
		fwrite(s, 1, (size_t)n, f);
}

void
sp_write(struct sp_state *st, FILE *f, const void *buf, size_t len)
{
	const unsigned char *in = buf;
	unsigned char tmp[4];
	size_t i = 0;
	unsigned cp;
	int n;

	/* Settle what the last call left pending, a byte at a time. */
	while (st->npend > 0 && i < len) {
		if (st->pend[0] == '\r') {
			st->npend = 0;
			if (in[i] == '\n')
				fputc('\r', f);
			else
				sp_control(st, f, '\r');
			continue;
		}
		memcpy(tmp, st->pend, st->npend);
		tmp[st->npend] = in[i];
		if ((n = sp_utf8(tmp, st->npend + 1, &cp)) == 0) {
			st->pend[st->npend++] = in[i++];
		} else if (n < 0) {
			/* Its lead byte starts nothing: show that, and look
			 * at the bytes after it afresh. */
			fputs(sp_repl, f);
			memmove(st->pend, st->pend + 1, --st->npend);
		} else {
			sp_char(st, f, tmp, n, cp);
			st->npend = 0;
			i++;
		}
	}
	while (i < len) {
		unsigned char c = in[i];

		if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
			fputc(c, f);
			i++;
		} else if (c == '\r') {
			if (i + 1 == len) { /* is a '\n' next? */
				st->pend[0] = '\r';
				st->npend = 1;
				return;
			}
			if (in[i + 1] == '\n')
				fputc('\r', f);
			else
				sp_control(st, f, c);
			i++;
		} else if ((n = sp_utf8(in + i, len - i, &cp)) == 0) {
			st->npend = len - i;
			memcpy(st->pend, in + i, st->npend);
			return;
		} else if (n < 0) {
			fputs(sp_repl, f);
			i++;
		} else {
			sp_char(st, f, in + i, n, cp);
			i += (size_t)n;
		}
	}
}

void
sp_flush(struct sp_state *st, FILE *f)
{
	if (st->npend > 0) {
		if (st->pend[0] == '\r')
			sp_control(st, f, '\r');
		else
			fputs(sp_repl, f);
	}
	st->npend = 0;
}

void
sp_puts(FILE *f, const char *s)
{
	struct sp_state st = { .style = SP_PLAIN };

	sp_write(&st, f, s, strlen(s));
	sp_flush(&st, f);
}
