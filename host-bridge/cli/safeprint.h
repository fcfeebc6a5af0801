/*
 * Printing text that a guest controls (its serial console, QEMU's log,
 * daemon messages) on the operator's terminal without letting it drive
 * that terminal: escape sequences could retitle the window, clear the
 * screen, rewrite earlier lines or, on some terminals, answer back.
 *
 * Kept: printable UTF-8, '\n', '\t', and the '\r' of a "\r\n". Everything
 * else is shown, never sent: C0 controls, DEL and a lone '\r' as "\x1b"
 * (SP_PLAIN) or "\u001b" (SP_JSON), C1 controls (U+0080..U+009F) as
 * "\u009b", bytes that are not UTF-8 as U+FFFD.
 */
#ifndef BUREAU_CLI_SAFEPRINT_H
#define BUREAU_CLI_SAFEPRINT_H

#include <stddef.h>
#include <stdio.h>

enum sp_style {
	SP_PLAIN, /* console text: "\x1b" */
	SP_JSON   /* JSON text: "\u001b", the same JSON value */
};

/* A filter over a stream that may split a character between writes. */
struct sp_state {
	enum sp_style style;
	unsigned char pend[4]; /* an unfinished UTF-8 sequence, or "\r" */
	size_t npend;
};

/* Filter len bytes of buf to f, keeping an unfinished sequence for the
 * next call. */
void sp_write(struct sp_state *st, FILE *f, const void *buf, size_t len);
/* End of the stream: show what is still pending. */
void sp_flush(struct sp_state *st, FILE *f);
/* A whole NUL-terminated string, SP_PLAIN. */
void sp_puts(FILE *f, const char *s);

#endif
