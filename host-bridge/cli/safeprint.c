/*
 * safeprint: guest text made inert for a terminal (safeprint.h), over the
 * UTF-8 decoder of common/utf8.h.
 */
#include "host-bridge/cli/safeprint.h"

#include <string.h>

#include "common/utf8.h"

static const char sp_repl[] = "\xef\xbf\xbd"; /* U+FFFD */

static void
sp_control(const struct sp_state *st, FILE *f, unsigned cp)
{
	if (st->style == SP_JSON || cp >= 0x80)
		fprintf(f, "\\u%04x", cp);
	else
		fprintf(f, "\\x%02x", cp);
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
	uint32_t cp;
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
		if ((n = utf8_decode(tmp, st->npend + 1, &cp)) == 0) {
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
		} else if ((n = utf8_decode(in + i, len - i, &cp)) == 0) {
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
