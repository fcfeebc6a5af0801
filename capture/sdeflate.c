/*
 * sdeflate: a zlib stream (RFC 1950/1951) for PNG scanlines of screens.
 *
 * Why not libdeflate here (it stays for its adler32, and libpng with zlib
 * stay the reference decoders of the tests): libdeflate's greedy and lazy
 * matchers put every position of every match into their hash chains, so
 * a flat or repeated screen region costs as much per byte as noise, and
 * none of them looks where screens repeat: the pixel to the left (flat
 * colour, distance 3) and the row above (distance one scanline). This
 * matcher tries those two first, then a hash slot of 4 positions, extends
 * with 8-byte compares, and indexes only the first positions of a match
 * (a flat row of 3840 bytes is 15 matches and 60 index writes); symbols are
 * Huffman coded per block of SD_BLOCK symbols with trees built for that
 * block. Measured with `capbench -e` on real 1920x1080 Xvfb desktops, see
 * png.c for the table.
 *
 * Big images may be cut into parts (whole rows) compressed on two threads
 * (png.c decides when): each part may match into the rows before it (the
 * decoder has them), and a part that is not the last ends on an empty
 * stored block, which byte-aligns it, so the parts are simply
 * concatenated.
 */
#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/sdeflate.h"

#define SD_WIN   32768
#define SD_MIN   4
#define SD_MAX   258
#define SD_HBITS 15
/* Hash slots of 4 positions each; the first SD_INDEX positions of a match
 * are indexed; after 2^SD_SKIP literals in a row every second position is
 * searched, then every third... Chosen on a terminal desktop and a photo
 * one (capbench -e, see png.c): 4 ways took the text frame from 42.4 KB
 * (1 way) to 38.4 KB, indexing all of a match made it larger and slower,
 * lazy matching (as zlib's) gained nothing. */
#define SD_WAYS  4
#define SD_INDEX 4
#define SD_SKIP  5
/* The hash covers 6 bytes (2 pixels): with 4, a photo's slots filled with
 * 4-byte matches that cost more than the literals; 6 took a photo
 * desktop from 719 KB to 672 KB (libpng 6: 658 KB) and left text and a web
 * page within 0.4%; 8 made the web page 4.6% larger. */
#define SD_HLEN  6
#define SD_BLOCK 16384 /* symbols per Huffman block */
#define SD_NLIT  286
#define SD_NDIST 30

/* A literal (dist 0, v the byte) or a match (v the length). */
struct sd_sym {
	uint16_t v;
	uint16_t dist;
};

struct sd_bits {
	uint64_t buf;
	unsigned n;
	uint8_t *p;
};

struct sd_ctx {
	uint32_t ht[1u << SD_HBITS][SD_WAYS];
	struct sd_sym sym[SD_BLOCK];
	uint32_t lf[SD_NLIT], df[SD_NDIST];
	size_t nsym;
	size_t from; /* input offset where the block began */
};

static const uint16_t sd_lbase[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17,
	19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
	258 };
static const uint8_t sd_lext[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2,
	2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
static const uint16_t sd_dbase[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49,
	65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
	6145, 8193, 12289, 16385, 24577 };
static const uint8_t sd_dext[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5,
	6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };
static const uint8_t sd_clorder[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4,
	12, 3, 13, 2, 14, 1, 15 };

static uint8_t sd_lsym[SD_MAX + 1]; /* length -> 0..28 */
static uint8_t sd_dsym[512];        /* (dist - 1) or 256 + (dist - 1) >> 7 */
static pthread_once_t sd_once = PTHREAD_ONCE_INIT;

static void
sd_init(void)
{
	for (int s = 0; s < 29; s++)
		for (int l = sd_lbase[s];
		     l < sd_lbase[s] + (1 << sd_lext[s]) && l <= SD_MAX; l++)
			sd_lsym[l] = (uint8_t)s;
	sd_lsym[SD_MAX] = 28;
	for (int s = 0; s < 30; s++)
		for (int d = sd_dbase[s]; d < sd_dbase[s] + (1 << sd_dext[s]);
		     d++) {
			if (d <= 256)
				sd_dsym[d - 1] = (uint8_t)s;
			else
				sd_dsym[256 + ((d - 1) >> 7)] = (uint8_t)s;
		}
}

static inline unsigned
sd_dcode(unsigned dist)
{
	return dist <= 256 ? sd_dsym[dist - 1] :
	                     sd_dsym[256 + ((dist - 1) >> 7)];
}

static inline uint32_t
sd_load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t
sd_load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline void
sd_put(struct sd_bits *w, uint32_t bits, unsigned len)
{
	w->buf |= (uint64_t)bits << w->n;
	w->n += len;
	if (w->n >= 32) {
		uint32_t v = (uint32_t)w->buf;

		w->p[0] = (uint8_t)v;
		w->p[1] = (uint8_t)(v >> 8);
		w->p[2] = (uint8_t)(v >> 16);
		w->p[3] = (uint8_t)(v >> 24);
		w->p += 4;
		w->buf >>= 32;
		w->n -= 32;
	}
}

/* Pad to a byte boundary with zero bits. */
static void
sd_align(struct sd_bits *w)
{
	while (w->n > 0) {
		*w->p++ = (uint8_t)w->buf;
		w->buf >>= 8;
		w->n = w->n > 8 ? w->n - 8 : 0;
	}
	w->buf = 0;
}

/* --- Huffman codes -------------------------------------------------------- */

struct sd_item {
	uint32_t f;
	uint16_t s;
};

static int
sd_item_cmp(const void *a, const void *b)
{
	const struct sd_item *x = a, *y = b;

	if (x->f != y->f)
		return x->f < y->f ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

static unsigned
sd_reverse(unsigned code, unsigned len)
{
	unsigned r = 0;

	for (unsigned i = 0; i < len; i++, code >>= 1)
		r = (r << 1) | (code & 1);
	return r;
}

/*
 * Code lengths (at most maxbits) and LSB-first codes for the n symbols of
 * freq. Code lengths by Moffat and Katajainen's in-place method, limited
 * as miniz does; at least two symbols get a code, so every tree is
 * complete (what zlib's inflate asks of all but a lone code).
 */
static void
sd_huff(const uint32_t *freq, int n, int maxbits, uint8_t *len, uint16_t *code)
{
	struct sd_item it[SD_NLIT];
	uint32_t a[SD_NLIT] = { 0 };
	int num[SD_NLIT + 2] = { 0 }, m = 0, next_code[17] = { 0 },
	                  bl[17] = { 0 };

	memset(len, 0, (size_t)n);
	for (int s = 0; s < n; s++)
		if (freq[s] != 0)
			it[m++] = (struct sd_item){ freq[s], (uint16_t)s };
	for (int s = 0; m < 2 && s < n; s++)
		if (freq[s] == 0)
			it[m++] = (struct sd_item){ 1, (uint16_t)s };
	qsort(it, (size_t)m, sizeof *it, sd_item_cmp);
	for (int i = 0; i < m; i++)
		a[i] = it[i].f;
	{
		int root = 0, leaf = 2, next, avbl, used, dpth;

		a[0] += a[1];
		for (next = 1; next < m - 1; next++) {
			if (leaf >= m || a[root] < a[leaf]) {
				a[next] = a[root];
				a[root++] = (uint32_t)next;
			} else
				a[next] = a[leaf++];
			if (leaf >= m || (root < next && a[root] < a[leaf])) {
				a[next] += a[root];
				a[root++] = (uint32_t)next;
			} else
				a[next] += a[leaf++];
		}
		a[m - 2] = 0;
		for (next = m - 3; next >= 0; next--)
			a[next] = a[a[next]] + 1;
		avbl = 1;
		used = dpth = 0;
		root = m - 2;
		next = m - 1;
		while (avbl > 0) {
			while (root >= 0 && (int)a[root] == dpth) {
				used++;
				root--;
			}
			while (avbl > used) {
				a[next--] = (uint32_t)dpth;
				avbl--;
			}
			avbl = 2 * used;
			dpth++;
			used = 0;
		}
	}
	for (int i = 0; i < m; i++)
		num[a[i] < (uint32_t)SD_NLIT ? a[i] : SD_NLIT]++;
	for (int i = maxbits + 1; i <= SD_NLIT; i++)
		num[maxbits] += num[i];
	{
		uint32_t total = 0;

		for (int i = maxbits; i > 0; i--)
			total += (uint32_t)num[i] << (maxbits - i);
		while (total != (1u << maxbits)) {
			num[maxbits]--;
			for (int i = maxbits - 1; i > 0; i--)
				if (num[i] != 0) {
					num[i]--;
					num[i + 1] += 2;
					break;
				}
			total--;
		}
	}
	/* the rarest symbols get the longest codes */
	for (int l = maxbits, i = 0; l >= 1; l--)
		for (int k = 0; k < num[l]; k++)
			len[it[i++].s] = (uint8_t)l;
	for (int s = 0; s < n; s++)
		bl[len[s]]++;
	bl[0] = 0;
	for (int l = 1, c = 0; l <= 16; l++) {
		c = (c + bl[l - 1]) << 1;
		next_code[l] = c;
	}
	for (int s = 0; s < n; s++)
		code[s] = len[s] != 0 ?
		    (uint16_t)sd_reverse((unsigned)next_code[len[s]]++,
		        len[s]) :
		    0;
}

/* --- blocks ----------------------------------------------------------- */

/* Run-length code the code lengths (RFC 1951 3.2.7) into out (symbol, plus
 * its extra value in the high byte); returns the count. */
static int
sd_rle(const uint8_t *lens, int n, uint16_t *out, uint32_t *clf)
{
	int m = 0;

	for (int i = 0; i < n;) {
		int v = lens[i], run = 1;

		while (i + run < n && lens[i + run] == v)
			run++;
		i += run;
		if (v == 0) {
			while (run >= 11) {
				int r = run > 138 ? 138 : run;

				out[m++] = (uint16_t)(18 | (r - 11) << 8);
				clf[18]++;
				run -= r;
			}
			if (run >= 3) {
				out[m++] = (uint16_t)(17 | (run - 3) << 8);
				clf[17]++;
				run = 0;
			}
		} else {
			out[m++] = (uint16_t)v;
			clf[v]++;
			run--;
			while (run >= 3) {
				int r = run > 6 ? 6 : run;

				out[m++] = (uint16_t)(16 | (r - 3) << 8);
				clf[16]++;
				run -= r;
			}
		}
		while (run-- > 0) {
			out[m++] = (uint16_t)v;
			clf[v]++;
		}
	}
	return m;
}

/* Stored blocks of in[0..n), none final unless final. */
static void
sd_stored(struct sd_bits *w, const uint8_t *in, size_t n, int final)
{
	do {
		size_t k = n > 65535 ? 65535 : n;

		sd_put(w, (final && k == n) ? 1 : 0, 3);
		sd_align(w);
		w->p[0] = (uint8_t)k;
		w->p[1] = (uint8_t)(k >> 8);
		w->p[2] = (uint8_t)~k;
		w->p[3] = (uint8_t)(~k >> 8);
		memcpy(w->p + 4, in, k);
		w->p += 4 + k;
		in += k;
		n -= k;
	} while (n > 0);
}

/* The block of c's symbols, covering in[c->from..to): dynamic Huffman, or
 * stored when that is smaller (so the output is bounded by
 * sd_bound). */
static void
sd_block(struct sd_ctx *c, struct sd_bits *w, const uint8_t *in, size_t to,
    int final)
{
	uint8_t ll[SD_NLIT + SD_NDIST], *dl = ll + SD_NLIT, cl[19];
	uint16_t lc[SD_NLIT], dc[SD_NDIST], cc[19], rle[SD_NLIT + SD_NDIST];
	uint32_t clf[19] = { 0 };
	uint64_t bits;
	int hlit, hdist, hclen, nrle;
	size_t raw = to - c->from;

	c->lf[256] = 1;
	sd_huff(c->lf, SD_NLIT, 15, ll, lc);
	sd_huff(c->df, SD_NDIST, 15, dl, dc);
	for (hlit = SD_NLIT; hlit > 257 && ll[hlit - 1] == 0; hlit--)
		;
	for (hdist = SD_NDIST; hdist > 1 && dl[hdist - 1] == 0; hdist--)
		;
	/* the lengths of both trees as one sequence */
	memmove(ll + hlit, dl, (size_t)hdist);
	nrle = sd_rle(ll, hlit + hdist, rle, clf);
	memmove(dl, ll + hlit, (size_t)hdist);
	sd_huff(clf, 19, 7, cl, cc);
	for (hclen = 19; hclen > 4 && cl[sd_clorder[hclen - 1]] == 0; hclen--)
		;
	bits = 3 + 14 + 3 * (uint64_t)hclen;
	for (int s = 0; s < 19; s++)
		bits += (uint64_t)clf[s] *
		    (cl[s] +
		        (s == 16        ? 2 :
		                s == 17 ? 3 :
		                s == 18 ? 7 :
		                          0));
	for (int s = 0; s < SD_NLIT; s++)
		bits += (uint64_t)c->lf[s] *
		    (ll[s] + (s > 256 ? sd_lext[s - 257] : 0));
	for (int s = 0; s < SD_NDIST; s++)
		bits += (uint64_t)c->df[s] * (dl[s] + sd_dext[s]);
	if (bits >= 8 * (raw + 5 * (raw / 65535 + 1)) + 8) {
		sd_stored(w, in + c->from, raw, final);
		goto done;
	}
	sd_put(w, final ? 1 : 0, 1);
	sd_put(w, 2, 2);
	sd_put(w, (uint32_t)(hlit - 257), 5);
	sd_put(w, (uint32_t)(hdist - 1), 5);
	sd_put(w, (uint32_t)(hclen - 4), 4);
	for (int i = 0; i < hclen; i++)
		sd_put(w, cl[sd_clorder[i]], 3);
	for (int i = 0; i < nrle; i++) {
		unsigned s = rle[i] & 0xff, x = rle[i] >> 8;

		sd_put(w, cc[s], cl[s]);
		if (s >= 16)
			sd_put(w, x, s == 16 ? 2 : s == 17 ? 3 : 7);
	}
	for (size_t i = 0; i < c->nsym; i++) {
		const struct sd_sym *y = &c->sym[i];

		if (y->dist == 0) {
			sd_put(w, lc[y->v], ll[y->v]);
		} else {
			unsigned l = sd_lsym[y->v], d = sd_dcode(y->dist);

			sd_put(w, lc[257 + l], ll[257 + l]);
			if (sd_lext[l] != 0)
				sd_put(w, y->v - sd_lbase[l], sd_lext[l]);
			sd_put(w, dc[d], dl[d]);
			if (sd_dext[d] != 0)
				sd_put(w, y->dist - sd_dbase[d], sd_dext[d]);
		}
	}
	sd_put(w, lc[256], ll[256]);
done:
	memset(c->lf, 0, sizeof c->lf);
	memset(c->df, 0, sizeof c->df);
	c->nsym = 0;
	c->from = to;
}

/* --- matching --------------------------------------------------------- */

/* How far in[a..] equals in[b..], knowing the first SD_MIN bytes do, up
 * to lim. */
static inline size_t
sd_extend(const uint8_t *a, const uint8_t *b, size_t lim)
{
	size_t l = SD_MIN;

	while (l + 8 <= lim) {
		uint64_t x = sd_load64(a + l) ^ sd_load64(b + l);

		if (x != 0)
			return l + (size_t)__builtin_ctzll(x) / 8;
		l += 8;
	}
	while (l < lim && a[l] == b[l])
		l++;
	return l;
}

static inline uint32_t
sd_hash(const uint8_t *p)
{
	uint64_t v = sd_load64(p) << (64 - 8 * SD_HLEN);

	return (uint32_t)((v * 0x9E3779B97F4A7C15ull) >> (64 - SD_HBITS));
}

/* The longest match at i (0 if none shorter than SD_MIN), its distance in
 * *bd; i goes into the hash table. */
static inline size_t
sd_find(struct sd_ctx *c, const uint8_t *in, size_t i, size_t lim, size_t row,
    size_t *bd)
{
	uint32_t cur = sd_load32(in + i), *b = c->ht[sd_hash(in + i)];
	size_t best = 0, l;

	if (i >= 3 && sd_load32(in + i - 3) == cur) {
		best = sd_extend(in + i - 3, in + i, lim);
		*bd = 3;
	}
	if (best < lim && row != 0 && i >= row &&
	    sd_load32(in + i - row) == cur &&
	    (l = sd_extend(in + i - row, in + i, lim)) > best) {
		best = l;
		*bd = row;
	}
	for (unsigned k = 0; k < SD_WAYS && best < lim; k++) {
		size_t p = b[k];

		if (p < i && i - p <= SD_WIN && sd_load32(in + p) == cur &&
		    (l = sd_extend(in + p, in + i, lim)) > best) {
			best = l;
			*bd = i - p;
		}
	}
	b[3] = b[2];
	b[2] = b[1];
	b[1] = b[0];
	b[0] = (uint32_t)i;
	return best;
}

static inline void
sd_insert(struct sd_ctx *c, const uint8_t *in, size_t i)
{
	uint32_t *b = c->ht[sd_hash(in + i)];

	b[3] = b[2];
	b[2] = b[1];
	b[1] = b[0];
	b[0] = (uint32_t)i;
}

/* in[start..end) as deflate blocks, matching back into in[0..start) too;
 * the last block final if final. row: the scanline length. */
static void
sd_range(struct sd_ctx *c, struct sd_bits *w, const uint8_t *in, size_t start,
    size_t end, size_t row, int final)
{
	size_t i = start, miss = 0;

	memset(c->ht, 0, sizeof c->ht);
	memset(c->lf, 0, sizeof c->lf);
	memset(c->df, 0, sizeof c->df);
	c->nsym = 0;
	c->from = start;
	if (row > SD_WIN)
		row = 0;
	while (i < end) {
		size_t lim = end - i, best = 0, bd = 0;

		if (lim > SD_MAX)
			lim = SD_MAX;
		if (lim >= SD_MIN + 9)
			best = sd_find(c, in, i, lim, row, &bd);
		if (best >= SD_MIN) {
			c->sym[c->nsym++] = (struct sd_sym){ (uint16_t)best,
				(uint16_t)bd };
			c->lf[257 + sd_lsym[best]]++;
			c->df[sd_dcode((unsigned)bd)]++;
			for (size_t k = 1;
			     k < best && k < SD_INDEX && i + k + 8 <= end; k++)
				sd_insert(c, in, i + k);
			i += best;
			miss = 0;
		} else {
			/* a long stretch without matches (a photo) is
			 * searched ever more sparsely, as LZ4 does */
			size_t step = 1 + (miss++ >> SD_SKIP);

			for (size_t k = 0;
			     k < step && i < end && c->nsym < SD_BLOCK;
			     k++, i++) {
				c->sym[c->nsym++] = (struct sd_sym){ in[i], 0 };
				c->lf[in[i]]++;
			}
		}
		if (c->nsym == SD_BLOCK && i < end)
			sd_block(c, w, in, i, 0);
	}
	sd_block(c, w, in, end, final);
}

/* --- the stream ------------------------------------------------------- */

size_t
sd_bound(size_t n)
{
	/* per block at worst stored: 5 bytes per 65535 and a byte of
	 * padding; blocks hold SD_BLOCK symbols of a byte or more, and each
	 * part adds a last block and an empty stored one */
	return n + 8 * (n / 65535 + n / SD_BLOCK + 2 * SD_PARTS + 2) + 16;
}

struct sd_part {
	const uint8_t *in;
	size_t start, end, row;
	int final;
	uint8_t *out; /* at least sd_bound(end - start) */
	size_t len;
	struct sd_ctx *ctx;
};

static void *
sd_part_run(void *arg)
{
	struct sd_part *pt = arg;
	struct sd_bits w = { .p = pt->out };

	sd_range(pt->ctx, &w, pt->in, pt->start, pt->end, pt->row, pt->final);
	if (!pt->final) {
		/* an empty stored block: byte-aligns the part's end */
		sd_put(&w, 0, 3);
		sd_align(&w);
		memcpy(w.p, "\x00\x00\xff\xff", 4);
		w.p += 4;
	} else
		sd_align(&w);
	pt->len = (size_t)(w.p - pt->out);
	return (NULL);
}

size_t
sd_zlib(const uint8_t *in, size_t n, size_t row, int threads, uint8_t *out,
    size_t cap)
{
	struct sd_part pt[SD_PARTS];
	struct sd_ctx *ctx;
	pthread_t tid[SD_PARTS];
	int started[SD_PARTS] = { 0 }, parts;
	size_t len, rows, adler;
	uint8_t *tmp = NULL;

	if (cap < sd_bound(n) + 6)
		return (0);
	pthread_once(&sd_once, sd_init);
	parts = threads < 1 ? 1 : threads > SD_PARTS ? SD_PARTS : threads;
	rows = row != 0 ? n / row : 0;
	if (rows < (size_t)parts)
		parts = 1;
	if ((ctx = cap_alloc(sizeof *ctx * (size_t)parts)) == NULL)
		return (0);
	if (parts > 1 &&
	    (tmp = cap_alloc(sd_bound(n) * (size_t)(parts - 1))) == NULL)
		parts = 1;
	out[0] = 0x78; /* deflate, 32 KiB window */
	out[1] = 0x01; /* fastest; (0x78 << 8 | 0x01) % 31 == 0 */
	for (int k = 0; k < parts; k++) {
		pt[k] = (struct sd_part){ .in = in,
			.start = k == 0 ?
			    0 :
			    rows * (size_t)k / (size_t)parts * row,
			.end = k == parts - 1 ?
			    n :
			    rows * (size_t)(k + 1) / (size_t)parts * row,
			.row = row,
			.final = k == parts - 1,
			.out = k == 0 ? out + 2 :
			                tmp + sd_bound(n) * (size_t)(k - 1),
			.ctx = ctx + k };
	}
	for (int k = 1; k < parts; k++)
		started[k] = pthread_create(&tid[k], NULL, sd_part_run,
		                 &pt[k]) == 0;
	sd_part_run(&pt[0]);
	len = 2 + pt[0].len;
	for (int k = 1; k < parts; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else
			sd_part_run(&pt[k]);
		memcpy(out + len, pt[k].out, pt[k].len);
		len += pt[k].len;
	}
	adler = libdeflate_adler32(1, in, n);
	out[len++] = (uint8_t)(adler >> 24);
	out[len++] = (uint8_t)(adler >> 16);
	out[len++] = (uint8_t)(adler >> 8);
	out[len++] = (uint8_t)adler;
	cap_free(tmp);
	cap_free(ctx);
	return (len);
}
