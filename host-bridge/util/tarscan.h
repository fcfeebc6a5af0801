/*
 * host-bridge/util/tarscan: the members of a tar stream (POSIX pax, as
 * `tar --format=posix` writes it, GNU sparse files included) read as the
 * stream passes, before tar extracts it: each member's name and type go
 * to a callback, which may refuse it, and whatever else the stream holds
 * (a member of another type, a header that does not add up, a name with
 * "..", a global pax header) is refused here. The bytes themselves are
 * the caller's to pass on to tar: the scan only reads them, and agrees
 * with tar on where each header is (sizes from the pax header or the
 * ustar one, octal or base-256; checksums checked).
 */
#ifndef BUREAU_HB_TARSCAN_H
#define BUREAU_HB_TARSCAN_H

#include <stddef.h>

/* The member types a scan passes to its callback; every other is
 * refused here (symbolic and hard links, devices, FIFOs, ...). */
#define TARSCAN_FILE '0'
#define TARSCAN_DIR  '5'

/* Called with each member's name (as tar will name it on disk: the pax
 * path or GNU.sparse.name, else the ustar prefix/name; a directory's
 * without its trailing '/') and type; 0 to take it, else -1 with *cause
 * (the scan then refuses the stream). */
typedef int (*tarscan_fn)(void *arg, const char *name, int type, char **cause);

struct tarscan {
	tarscan_fn fn;
	void *arg;
	/* (the scan's own) */
	int state;
	unsigned char hdr[512];
	size_t hlen;
	unsigned long long left; /* bytes of a member's data to pass */
	char *pax;               /* a pax header's records, being read */
	size_t paxlen, paxwant;
	char *path, *sparse_name; /* from the pax header for the next */
	long long size;           /* the same, -1: none */
	int refused, ended;
};

/* A new scan calling fn(arg, ...) for each member. */
void tarscan_init(struct tarscan *t, tarscan_fn fn, void *arg);
/* The next len bytes of the stream: 0, or -1 with *cause once the stream
 * is refused (and for every call after). */
int tarscan_feed(struct tarscan *t, const void *buf, size_t len, char **cause);
/* The stream ended here: 0 when it ended whole (after a member, with the
 * end-of-archive blocks), else -1 with *cause. */
int tarscan_end(struct tarscan *t, char **cause);
void tarscan_clear(struct tarscan *t);

#endif
