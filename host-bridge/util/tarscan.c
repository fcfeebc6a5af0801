/*
 * host-bridge/util/tarscan.c: a tar stream's members, checked as the
 * stream passes (tarscan.h). The format: POSIX.1-2001 (pax), 512-byte
 * blocks; a header block (ustar: name at 0, size at 124, checksum at 148,
 * type at 156, magic "ustar\0" "00" at 257, prefix at 345), then the
 * member's data rounded up to a block; a pax header (type 'x') holds
 * "LEN KEY=VALUE\n" records for the member after it; two zero blocks end
 * the archive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/util/tarscan.h"
#include "host-bridge/util/util.h"

enum { TS_HEADER, TS_DATA, TS_PAX };

#define TS_PAX_MAX (1 << 20)

void
tarscan_init(struct tarscan *t, tarscan_fn fn, void *arg)
{
	memset(t, 0, sizeof *t);
	t->fn = fn;
	t->arg = arg;
	t->size = -1;
}

void
tarscan_clear(struct tarscan *t)
{
	free(t->pax);
	free(t->path);
	free(t->sparse_name);
	t->pax = t->path = t->sparse_name = NULL;
}

/* name as it can be shown: bytes outside printable ASCII as \xNN. */
static char *
ts_shown(const char *name, size_t n)
{
	char *s = malloc(4 * n + 1), *p = s;

	if (s == NULL)
		return (NULL);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c < 0x20 || c >= 0x7f || c == '\\')
			p += sprintf(p, "\\x%02x", c);
		else
			*p++ = (char)c;
	}
	*p = '\0';
	return (s);
}

static int
ts_refuse(struct tarscan *t, char **cause, const char *name, const char *why)
{
	char *shown = name ? ts_shown(name, strlen(name)) : NULL;

	t->refused = 1;
	*cause = shown ? hb_fmt("refused '%s': %s", shown, why) :
	                 hb_fmt("refused the stream: %s", why);
	free(shown);
	return (-1);
}

/* An octal number (tar's numeric fields: digits, then a space or NUL),
 * or base-256 (GNU: the first byte's high bit set, positive only). */
static int
ts_number(const unsigned char *f, size_t n, unsigned long long *out)
{
	unsigned long long v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return (-1); /* negative, or past 2^63 */
		for (i = 1; i < n; i++) {
			if (v >> 55)
				return (-1);
			v = v << 8 | f[i];
		}
		*out = v;
		return (0);
	}
	while (i < n && f[i] == ' ')
		i++;
	if (i == n || f[i] < '0' || f[i] > '7')
		return (-1);
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return (-1);
		v = v << 3 | (unsigned)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return (-1);
	*out = v;
	return (0);
}

/* Does the header's checksum add up (unsigned, or signed as some old
 * tars summed)? */
static int
ts_checksum_ok(const unsigned char *h)
{
	unsigned long long want;
	long u = 0, s = 0;

	if (ts_number(h + 148, 8, &want) != 0)
		return (0);
	for (int i = 0; i < 512; i++) {
		unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
		u += c;
		s += (signed char)c;
	}
	return (
	    (unsigned long long)u == want || (long long)s == (long long)want);
}

/* A name tar would take as it is, within the directory it extracts to:
 * relative, no "", "." or ".." component, printable ASCII. */
static const char *
ts_bad_name(const char *name)
{
	const char *p = name;

	if (*name == '\0')
		return ("an empty name");
	if (*name == '/')
		return ("an absolute name");
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c <= 0x20 || *c >= 0x7f)
			return ("a name with a space, a control character "
			        "or a byte that is not ASCII");
	while (*p != '\0') {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return ("a name with an empty, '.' or '..' part");
		p += n;
		if (*p == '/')
			p++;
	}
	return (NULL);
}

/* The pax header's records: the keys that name the next member or size
 * it are kept; the rest (times, owners tar does not apply) pass. */
static int
ts_pax(struct tarscan *t, char **cause)
{
	size_t off = 0;

	while (off < t->paxlen) {
		char *rec = t->pax + off, *sp, *eq, *val;
		unsigned long long len = 0;
		size_t vlen;

		for (sp = rec; sp < t->pax + t->paxlen && *sp >= '0' &&
		     *sp <= '9' && len < TS_PAX_MAX;
		     sp++)
			len = len * 10 + (unsigned)(*sp - '0');
		if (sp == rec || sp >= t->pax + t->paxlen || *sp != ' ' ||
		    len > t->paxlen - off || len < 5 ||
		    (size_t)(sp - rec) + 3 > len || rec[len - 1] != '\n' ||
		    (eq = memchr(sp, '=', (size_t)(rec + len - sp))) == NULL)
			return (ts_refuse(t, cause, NULL,
			    "a pax header that does not add up"));
		val = eq + 1;
		vlen = (size_t)(rec + len - 1 - val);
		*eq = '\0';
		if (memchr(val, '\0', vlen) != NULL)
			return (ts_refuse(t, cause, NULL,
			    "a pax header value holding a NUL"));
		val[vlen] = '\0'; /* (over its '\n') */
		if (strcmp(sp + 1, "path") == 0 ||
		    strcmp(sp + 1, "GNU.sparse.name") == 0) {
			char **dst = sp[1] == 'p' ? &t->path : &t->sparse_name;
			free(*dst);
			if ((*dst = strdup(val)) == NULL)
				return (
				    ts_refuse(t, cause, NULL, "out of memory"));
		} else if (strcmp(sp + 1, "size") == 0) {
			char *end;
			unsigned long long v = strtoull(val, &end, 10);
			if (val[0] < '0' || val[0] > '9' || *end != '\0' ||
			    v > (1ULL << 62))
				return (ts_refuse(t, cause, NULL,
				    "a pax header with a bad size"));
			t->size = (long long)v;
		}
		off += (size_t)len;
	}
	return (0);
}

/* One header block, whole. */
static int
ts_header(struct tarscan *t, char **cause)
{
	const unsigned char *h = t->hdr;
	unsigned long long size;
	char name[257], *nm;
	const char *why;
	int type = h[156], zero = 1, rv;
	size_t n;

	for (int i = 0; i < 512 && zero; i++)
		zero = h[i] == 0;
	if (zero) {
		if (t->path || t->sparse_name || t->size >= 0)
			return (ts_refuse(t, cause, NULL,
			    "a pax header with no member after it"));
		if (++t->ended == 2)
			t->state = -1; /* the end: tar reads no further */
		return (0);
	}
	if (t->ended)
		return (ts_refuse(t, cause, NULL,
		    "a member after an end-of-archive block"));
	if (!ts_checksum_ok(h))
		return (ts_refuse(t, cause, NULL,
		    "a header whose checksum is wrong"));
	if (memcmp(h + 257,
	        "ustar\0"
	        "00",
	        8) != 0)
		return (ts_refuse(t, cause, NULL,
		    "a header that is not POSIX (ustar/pax)"));
	if (ts_number(h + 124, 12, &size) != 0)
		return (ts_refuse(t, cause, NULL, "a header with a bad size"));
	if (t->size >= 0)
		size = (unsigned long long)t->size;
	if (type == 'x') {
		if (t->path || t->sparse_name || t->size >= 0)
			return (ts_refuse(t, cause, NULL,
			    "two pax headers in a row"));
		if (size == 0 || size > TS_PAX_MAX)
			return (ts_refuse(t, cause, NULL,
			    "a pax header of a size out of range"));
		free(t->pax);
		if ((t->pax = malloc((size_t)size + 1)) == NULL)
			return (ts_refuse(t, cause, NULL, "out of memory"));
		t->paxlen = 0;
		t->paxwant = (size_t)size;
		t->left = (512 - size % 512) % 512; /* its padding, after */
		t->state = TS_PAX;
		return (0);
	}
	/* the member's name, as tar makes it */
	if (t->sparse_name != NULL && t->path != NULL &&
	    strcmp(t->sparse_name, t->path) != 0)
		return (ts_refuse(t, cause, t->sparse_name,
		    "a member with two names"));
	{
		size_t pl = strnlen((const char *)h + 345, 155);
		size_t nl = strnlen((const char *)h, 100);

		memcpy(name, h + 345, pl);
		n = pl;
		if (pl > 0)
			name[n++] = '/';
		memcpy(name + n, h, nl);
		name[n + nl] = '\0';
	}
	if (t->sparse_name != NULL || t->path != NULL) {
		/* the pax name is the one; a tar that read the ustar one
		 * instead would still find it harmless */
		if ((why = ts_bad_name(name)) != NULL)
			return (ts_refuse(t, cause, name, why));
		nm = strdup(t->sparse_name ? t->sparse_name : t->path);
	} else
		nm = strdup(name);
	free(t->path);
	free(t->sparse_name);
	t->path = t->sparse_name = NULL;
	t->size = -1;
	if (nm == NULL)
		return (ts_refuse(t, cause, NULL, "out of memory"));
	n = strlen(nm);
	if (type == TARSCAN_DIR)
		while (n > 1 && nm[n - 1] == '/')
			nm[--n] = '\0';
	switch (type) {
	case '0':
	case '\0':
		/* (a file whose name ends in '/' is a directory to tar) */
		why = n > 0 && nm[n - 1] == '/' ?
		    "a file named as a directory" :
		    ts_bad_name(nm);
		type = TARSCAN_FILE;
		break;
	case TARSCAN_DIR:
		why = size != 0 ? "a directory with data" : ts_bad_name(nm);
		break;
	case '1':
		why = "a hard link";
		break;
	case '2':
		why = "a symbolic link";
		break;
	case '3':
		why = "a character device";
		break;
	case '4':
		why = "a block device";
		break;
	case '6':
		why = "a FIFO";
		break;
	case 'g':
		why = "a global pax header";
		break;
	default:
		why = "a member of a type tar's POSIX format does not write";
		break;
	}
	if (why != NULL) {
		char *w = hb_fmt("%s: only regular files and directories are "
		                 "taken",
		    why);

		rv = ts_refuse(t, cause, nm, w ? w : why);
		free(w);
		free(nm);
		return (rv);
	}
	rv = t->fn(t->arg, nm, type, cause);
	free(nm);
	if (rv != 0) {
		t->refused = 1;
		return (-1);
	}
	t->left = (size + 511) / 512 * 512;
	t->state = TS_DATA;
	return (0);
}

int
tarscan_feed(struct tarscan *t, const void *buf, size_t len, char **cause)
{
	const unsigned char *p = buf;

	if (t->refused) {
		*cause = hb_fmt("refused the stream");
		return (-1);
	}
	while (len > 0) {
		size_t k;

		switch (t->state) {
		case TS_HEADER:
			k = 512 - t->hlen < len ? 512 - t->hlen : len;
			memcpy(t->hdr + t->hlen, p, k);
			t->hlen += k;
			if (t->hlen == 512) {
				t->hlen = 0;
				if (ts_header(t, cause) != 0)
					return (-1);
			}
			break;
		case TS_PAX:
			k = t->paxwant - t->paxlen < len ?
			    t->paxwant - t->paxlen :
			    len;
			memcpy(t->pax + t->paxlen, p, k);
			t->paxlen += k;
			if (t->paxlen == t->paxwant) {
				t->pax[t->paxlen] = '\0';
				if (ts_pax(t, cause) != 0)
					return (-1);
				free(t->pax);
				t->pax = NULL;
				t->state = t->left ? TS_DATA : TS_HEADER;
			}
			break;
		case TS_DATA:
			k = t->left < len ? (size_t)t->left : len;
			t->left -= k;
			if (t->left == 0)
				t->state = TS_HEADER;
			break;
		default: /* past the end: tar reads none of it */
			return (0);
		}
		p += k;
		len -= k;
	}
	return (0);
}

int
tarscan_end(struct tarscan *t, char **cause)
{
	if (t->refused) {
		*cause = hb_fmt("refused the stream");
		return (-1);
	}
	if (t->state != -1) {
		*cause = hb_fmt("the stream ended before its end-of-archive "
		                "blocks (cut short)");
		return (-1);
	}
	return (0);
}
