/*
 * x11/selection.h: the CLIPBOARD selection as UTF-8 text.
 *
 * Owning a selection means answering every client that asks for it, for as
 * long as we own it: a thread with its own Display connection serves
 * SelectionRequest (TARGETS, TIMESTAMP, UTF8_STRING, TEXT, STRING) and
 * sends large values incrementally (INCR) until another client takes the
 * selection. Reading goes through a second private connection, so a slow
 * owner never holds up the owner thread or any other X work.
 *
 * Errors: 0 on success; -1 with *cause (malloc'd, the caller frees);
 * X11_SEL_TIMEOUT when the owner did not answer in time; X11_SEL_TOOLARGE
 * when the value exceeds the size bound; X11_SEL_CANCELED when the stop
 * function said so during a read.
 */
#ifndef BUREAU_X11_SELECTION_H
#define BUREAU_X11_SELECTION_H

#include <stddef.h>

#define X11_SEL_TIMEOUT  (-2)
#define X11_SEL_TOOLARGE (-3)
#define X11_SEL_CANCELED (-4)

struct x11_sel;

/* Connect to display `name` (NULL: $DISPLAY) and start the owner thread.
 * `max` bounds the bytes of a value read or served. `stop` (may be NULL)
 * is called at least every X11_SEL_STOP_MS while a read waits for the
 * owner: non-zero ends the read (an owner may never answer, and a read
 * may wait a minute). */
#define X11_SEL_STOP_MS 100
int x11_sel_open(const char *name, size_t max, int (*stop)(void),
    struct x11_sel **out, char **cause);
/* Stop serving (the selection is then lost) and disconnect. */
void x11_sel_close(struct x11_sel *s);

/* Own CLIPBOARD with a copy of text (len bytes, UTF-8). Returns once the
 * server confirmed the ownership. */
int x11_sel_set(struct x11_sel *s, const char *text, size_t len, char **cause);

/*
 * Read CLIPBOARD as text: UTF8_STRING, else STRING (Latin-1, converted).
 * *text is malloc'd and NUL-terminated (the caller frees it); *owner is
 * the owner's window, 0 when nobody owns the selection (then *text is "").
 * *ours says whether this daemon is the owner.
 */
int x11_sel_get(struct x11_sel *s, int timeout_ms, char **text, size_t *len,
    unsigned long *owner, int *ours, char **cause);

#endif
