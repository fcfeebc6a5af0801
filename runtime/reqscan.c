/*
 * runtime/reqscan.c: a small validating JSON scanner over the raw request.
 *
 * Why not a library: jansson (the daemon's JSON library) has no streaming
 * or partial API, only json_loadb, which builds the whole tree first; a
 * token-less 8 MB request of empty objects costs it 600 MB. Here one pass
 * with a bit stack for the nesting checks syntax and limits and finds the
 * top-level "token" before anything is allocated. It accepts exactly what
 * RFC 8259 does, with jansson's refusals (no "\u0000", no lone surrogates,
 * strict UTF-8), and refuses a NUL byte between tokens (jansson skips it):
 * so whatever both accept, they read the same token from. What passes
 * here and is authenticated is then parsed by jansson for real.
 */
#include <stdint.h>
#include <string.h>

#include "common/utf8.h"
#include "runtime/reqscan.h"

struct sc {
	const unsigned char *p;
	size_t len, i;
	const struct bd_reqscan_limits *lim;
	struct bd_reqscan *out;
	uint64_t stack[BD_REQSCAN_DEPTH_CAP / 64]; /* bit set: an object */
	unsigned depth;
	size_t values;
};

static int
sc_fail(struct sc *s, enum bd_reqscan_status st, const char *why)
{
	s->out->status = st;
	s->out->why = why;
	s->out->pos = s->i;
	return (st);
}

static void
sc_ws(struct sc *s)
{
	while (s->i < s->len &&
	    (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\n' ||
	        s->p[s->i] == '\r'))
		s->i++;
}

static int
sc_hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;

	for (int k = 0; k < 4; k++) {
		unsigned char c = p[k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return (-1);
	}
	*out = v;
	return (0);
}

/* The string whose opening quote is at s->i; on success s->i is past the
 * closing quote and [*off, *off + *n) is its raw text. */
static int
sc_string(struct sc *s, size_t *off, size_t *n)
{
	size_t start = ++s->i;

	while (s->i < s->len) {
		unsigned char c = s->p[s->i];
		unsigned u, u2;
		uint32_t cp;
		int k;

		if (c == '"') {
			*off = start;
			*n = s->i - start;
			s->i++;
			return (0);
		}
		if (c < 0x20)
			return (sc_fail(s, BD_REQSCAN_SYNTAX,
			    "control character in a string"));
		if (c >= 0x80) {
			if ((k = utf8_decode(s->p + s->i, s->len - s->i,
			         &cp)) <= 0)
				return (sc_fail(s, BD_REQSCAN_SYNTAX,
				    "invalid UTF-8 in a string"));
			s->i += (size_t)k;
			continue;
		}
		if (c != '\\') {
			s->i++;
			continue;
		}
		if (s->i + 1 >= s->len)
			break;
		c = s->p[s->i + 1];
		if (strchr("\"\\/bfnrt", c) != NULL && c != '\0') {
			s->i += 2;
			continue;
		}
		if (c != 'u' || s->len - s->i < 6 ||
		    sc_hex4(s->p + s->i + 2, &u) != 0)
			return (sc_fail(s, BD_REQSCAN_SYNTAX,
			    "invalid escape in a string"));
		if (u == 0)
			return (sc_fail(s, BD_REQSCAN_SYNTAX,
			    "\\u0000 in a string"));
		if (u >= 0xdc00 && u <= 0xdfff)
			return (sc_fail(s, BD_REQSCAN_SYNTAX,
			    "lone low surrogate in a string"));
		if (u >= 0xd800 && u <= 0xdbff) {
			if (s->len - s->i < 12 || s->p[s->i + 6] != '\\' ||
			    s->p[s->i + 7] != 'u' ||
			    sc_hex4(s->p + s->i + 8, &u2) != 0 || u2 < 0xdc00 ||
			    u2 > 0xdfff)
				return (sc_fail(s, BD_REQSCAN_SYNTAX,
				    "lone high surrogate in a string"));
			s->i += 6;
		}
		s->i += 6;
	}
	s->i = s->len;
	return (sc_fail(s, BD_REQSCAN_SYNTAX, "unterminated string"));
}

static int
sc_digits(struct sc *s)
{
	size_t from = s->i;

	while (s->i < s->len && s->p[s->i] >= '0' && s->p[s->i] <= '9')
		s->i++;
	return (s->i > from ? 0 : -1);
}

static int
sc_number(struct sc *s)
{
	if (s->p[s->i] == '-')
		s->i++;
	if (s->i < s->len && s->p[s->i] == '0')
		s->i++;
	else if (s->i >= s->len || s->p[s->i] < '1' || s->p[s->i] > '9' ||
	    sc_digits(s) != 0)
		return (sc_fail(s, BD_REQSCAN_SYNTAX, "invalid number"));
	if (s->i < s->len && s->p[s->i] == '.') {
		s->i++;
		if (sc_digits(s) != 0)
			return (
			    sc_fail(s, BD_REQSCAN_SYNTAX, "invalid number"));
	}
	if (s->i < s->len && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
		s->i++;
		if (s->i < s->len && (s->p[s->i] == '+' || s->p[s->i] == '-'))
			s->i++;
		if (sc_digits(s) != 0)
			return (
			    sc_fail(s, BD_REQSCAN_SYNTAX, "invalid number"));
	}
	return (0);
}

static int
sc_literal(struct sc *s, const char *word)
{
	size_t n = strlen(word);

	if (s->len - s->i < n || memcmp(s->p + s->i, word, n) != 0)
		return (sc_fail(s, BD_REQSCAN_SYNTAX, "invalid literal"));
	s->i += n;
	return (0);
}

static int
sc_push(struct sc *s, int object)
{
	uint64_t bit;

	if (s->depth >= s->lim->depth || s->depth >= BD_REQSCAN_DEPTH_CAP)
		return (sc_fail(s, BD_REQSCAN_DEPTH, "nested too deep"));
	bit = (uint64_t)1 << (s->depth % 64);
	if (object)
		s->stack[s->depth / 64] |= bit;
	else
		s->stack[s->depth / 64] &= ~bit;
	s->depth++;
	s->i++;
	return (0);
}

static int
sc_in_object(const struct sc *s)
{
	unsigned d = s->depth - 1;

	return ((s->stack[d / 64] >> (d % 64)) & 1);
}

struct sc_match {
	const char *want;
	size_t off;
	int differs;
};

static void
sc_match_sink(void *arg, const char *p, size_t n)
{
	struct sc_match *m = arg;

	if (m->differs || n > strlen(m->want) - m->off ||
	    memcmp(m->want + m->off, p, n) != 0)
		m->differs = 1;
	else
		m->off += n;
}

/* Is the raw key text, decoded, exactly `want`? (A client may spell
 * "token" with escapes; jansson would decode them.) */
static int
sc_key_is(const struct sc *s, size_t off, size_t n, const char *want)
{
	struct sc_match m = { want, 0, 0 };

	bd_reqscan_unescape((const char *)s->p + off, n, sc_match_sink, &m);
	return (!m.differs && m.off == strlen(want));
}

int
bd_reqscan(const char *buf, size_t len, const struct bd_reqscan_limits *lim,
    struct bd_reqscan *out)
{
	struct sc s;
	size_t off, n;
	int token_next = 0, is_token, object;

	memset(out, 0, sizeof *out);
	memset(&s, 0, sizeof s);
	s.p = (const unsigned char *)buf;
	s.len = len;
	s.lim = lim;
	s.out = out;
	sc_ws(&s);
	object = s.i < s.len && s.p[s.i] == '{';
	goto value;

value:
	sc_ws(&s);
	if (s.i >= s.len)
		return (sc_fail(&s, BD_REQSCAN_SYNTAX, "unexpected end"));
	if (++s.values > lim->values)
		return (sc_fail(&s, BD_REQSCAN_VALUES, "too many values"));
	/* the value of a top-level "token": only a string can be one */
	is_token = token_next;
	token_next = 0;
	if (is_token)
		out->token = s.p[s.i] == '"' ? 1 : -1;
	switch (s.p[s.i]) {
	case '{':
		if (sc_push(&s, 1) != 0)
			return (out->status);
		sc_ws(&s);
		if (s.i < s.len && s.p[s.i] == '}') {
			s.depth--;
			s.i++;
			goto after;
		}
		goto key;
	case '[':
		if (sc_push(&s, 0) != 0)
			return (out->status);
		sc_ws(&s);
		if (s.i < s.len && s.p[s.i] == ']') {
			s.depth--;
			s.i++;
			goto after;
		}
		goto value;
	case '"':
		if (sc_string(&s, &off, &n) != 0)
			return (out->status);
		if (is_token) {
			out->token_off = off;
			out->token_len = n;
		}
		break;
	case 't':
		if (sc_literal(&s, "true") != 0)
			return (out->status);
		break;
	case 'f':
		if (sc_literal(&s, "false") != 0)
			return (out->status);
		break;
	case 'n':
		if (sc_literal(&s, "null") != 0)
			return (out->status);
		break;
	default:
		if (s.p[s.i] != '-' && (s.p[s.i] < '0' || s.p[s.i] > '9'))
			return (sc_fail(&s, BD_REQSCAN_SYNTAX,
			    "unexpected character"));
		if (sc_number(&s) != 0)
			return (out->status);
		break;
	}
	goto after;

key:
	sc_ws(&s);
	if (s.i >= s.len || s.p[s.i] != '"')
		return (sc_fail(&s, BD_REQSCAN_SYNTAX, "expected a key"));
	if (sc_string(&s, &off, &n) != 0)
		return (out->status);
	if (s.depth == 1 && sc_key_is(&s, off, n, "token")) {
		if (out->token != 0) {
			s.i = off;
			return (sc_fail(&s, BD_REQSCAN_DUP_TOKEN,
			    "duplicate field 'token'"));
		}
		token_next = 1;
	}
	sc_ws(&s);
	if (s.i >= s.len || s.p[s.i] != ':')
		return (sc_fail(&s, BD_REQSCAN_SYNTAX, "expected ':'"));
	s.i++;
	goto value;

after:
	sc_ws(&s);
	if (s.depth == 0) {
		if (s.i != s.len)
			return (sc_fail(&s, BD_REQSCAN_SYNTAX,
			    "data after the end"));
		if (!object)
			return (sc_fail(&s, BD_REQSCAN_NOT_OBJECT,
			    "not an object"));
		return (BD_REQSCAN_OK);
	}
	if (s.i >= s.len)
		return (sc_fail(&s, BD_REQSCAN_SYNTAX, "unexpected end"));
	if (sc_in_object(&s)) {
		if (s.p[s.i] == ',') {
			s.i++;
			goto key;
		}
		if (s.p[s.i] != '}')
			return (sc_fail(&s, BD_REQSCAN_SYNTAX,
			    "expected ',' or '}'"));
	} else {
		if (s.p[s.i] == ',') {
			s.i++;
			goto value;
		}
		if (s.p[s.i] != ']')
			return (sc_fail(&s, BD_REQSCAN_SYNTAX,
			    "expected ',' or ']'"));
	}
	s.depth--;
	s.i++;
	goto after;
}

int
bd_reqscan_token(const char *buf, size_t len, struct bd_reqscan *out)
{
	struct bd_reqscan_limits none = { 0, 0 };
	struct sc s;
	size_t depth = 0, off, n;
	int want_key = 0, token_next = 0;

	memset(out, 0, sizeof *out);
	memset(&s, 0, sizeof s);
	s.p = (const unsigned char *)buf;
	s.len = len;
	s.lim = &none;
	s.out = out;
	sc_ws(&s);
	if (s.i >= s.len || s.p[s.i] != '{')
		return (0);
	for (; s.i < s.len; s.i++) {
		unsigned char c = s.p[s.i];

		if (c == '"') {
			if (sc_string(&s, &off, &n) != 0)
				break;
			s.i--; /* the loop steps past the closing quote */
			if (depth == 1 && want_key) {
				want_key = 0;
				if (sc_key_is(&s, off, n, "token")) {
					if (out->token != 0) {
						/* a duplicate: no token */
						out->token = 0;
						return (0);
					}
					token_next = 1;
				}
			} else if (depth == 1 && token_next) {
				out->token = 1;
				out->token_off = off;
				out->token_len = n;
				token_next = 0;
			}
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    (c == ':' && depth == 1))
			continue;
		if (depth == 1 && token_next) {
			out->token =
			    -1; /* a number, literal, array or object */
			token_next = 0;
		}
		if (c == '{' || c == '[') {
			depth++;
			want_key = depth == 1;
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				break;
		} else if (c == ',' && depth == 1)
			want_key = 1;
	}
	if (token_next)
		out->token = -1; /* "token" with no value */
	return (out->token);
}

void
bd_reqscan_unescape(const char *raw, size_t len,
    void (*sink)(void *arg, const char *p, size_t n), void *arg)
{
	const unsigned char *p = (const unsigned char *)raw;
	size_t i = 0, run = 0;

	while (i < len) {
		char u8[4];
		unsigned u, u2;
		size_t n = 1;

		if (p[i] != '\\') {
			i++;
			run++;
			continue;
		}
		if (run > 0)
			sink(arg, (const char *)p + i - run, run);
		run = 0;
		if (i + 1 >= len)
			return; /* bd_reqscan never accepts this */
		switch (p[i + 1]) {
		case 'b':
			u8[0] = '\b';
			break;
		case 'f':
			u8[0] = '\f';
			break;
		case 'n':
			u8[0] = '\n';
			break;
		case 'r':
			u8[0] = '\r';
			break;
		case 't':
			u8[0] = '\t';
			break;
		case 'u':
			if (len - i < 6 || sc_hex4(p + i + 2, &u) != 0)
				return;
			i += 4;
			if (u >= 0xd800 && u <= 0xdbff && len - i >= 8 &&
			    p[i + 2] == '\\' && p[i + 3] == 'u' &&
			    sc_hex4(p + i + 4, &u2) == 0 && u2 >= 0xdc00 &&
			    u2 <= 0xdfff) {
				u = 0x10000 + ((u - 0xd800) << 10) +
				    (u2 - 0xdc00);
				i += 6;
			}
			n = utf8_encode(u, u8);
			break;
		default: /* '"', '\\', '/' stand for themselves */
			u8[0] = (char)p[i + 1];
			break;
		}
		sink(arg, u8, n);
		i += 2;
	}
	if (run > 0)
		sink(arg, (const char *)p + len - run, run);
}
