/*
 * Unit tests: runtime/reqscan.c, the pass over the raw request that runs
 * before authentication. It must agree with jansson (the parser used once
 * the client is known) on what is JSON, find the top-level token however
 * it is spelt, and hold its limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "runtime/reqscan.h"

static const struct bd_reqscan_limits lim = { 128, 1000 };

static int
scan(const char *s, struct bd_reqscan *out)
{
	return (bd_reqscan(s, strlen(s), &lim, out));
}

struct buf {
	char s[256];
	size_t n;
};

static void
buf_sink(void *arg, const char *p, size_t n)
{
	struct buf *b = arg;

	assert_true(b->n + n < sizeof b->s);
	memcpy(b->s + b->n, p, n);
	b->n += n;
	b->s[b->n] = '\0';
}

/* The decoded top-level token of s (which must scan). */
static const char *
token_of(const char *s, struct buf *b)
{
	struct bd_reqscan r;

	assert_int_equal(scan(s, &r), BD_REQSCAN_OK);
	assert_int_equal(r.token, 1);
	b->n = 0;
	b->s[0] = '\0';
	bd_reqscan_unescape(s + r.token_off, r.token_len, buf_sink, b);
	return (b->s);
}

static void
test_token(void **state)
{
	struct bd_reqscan r;
	struct buf b;

	(void)state;
	assert_string_equal(token_of("{\"token\":\"abc\"}", &b), "abc");
	assert_string_equal(
	    token_of(" {\"a\":{\"token\":1},\"token\" : "
	             "\"x\\\"y\\\\z\\/\\n\\u00e9\\ud83d\\ude00\"} ",
	        &b),
	    "x\"y\\z/\n\xc3\xa9\xf0\x9f\x98\x80");
	/* the key spelt with escapes is still "token" (jansson decodes it) */
	assert_string_equal(token_of("{\"\\u0074oken\":\"t\"}", &b), "t");
	/* only the top level counts */
	assert_int_equal(
	    scan("{\"a\":{\"token\":\"t\"},\"b\":[\"token\"]}", &r), 0);
	assert_int_equal(r.token, 0);
	assert_int_equal(scan("{\"token\":7}", &r), 0);
	assert_int_equal(r.token, -1);
	assert_int_equal(scan("{\"token\":{\"token\":\"t\"}}", &r), 0);
	assert_int_equal(r.token, -1);
	assert_int_equal(scan("{\"tokens\":\"t\",\"toke\":\"u\"}", &r), 0);
	assert_int_equal(r.token, 0);
	assert_int_equal(scan("{\"token\":\"a\",\"\\u0074oken\":\"b\"}", &r),
	    BD_REQSCAN_DUP_TOKEN);
}

/* {"x": followed by `levels` - 1 nested arrays: `levels` deep in all. */
static int
scan_deep(int levels, struct bd_reqscan *r)
{
	char s[600];
	size_t n = (size_t)snprintf(s, sizeof s, "{\"x\":");

	for (int i = 1; i < levels; i++)
		s[n++] = '[';
	for (int i = 1; i < levels; i++)
		s[n++] = ']';
	s[n++] = '}';
	s[n] = '\0';
	return (scan(s, r));
}

static void
test_limits(void **state)
{
	struct bd_reqscan r;
	char *many;
	size_t n;

	(void)state;
	assert_int_equal(scan_deep(128, &r), BD_REQSCAN_OK);
	assert_int_equal(scan_deep(129, &r), BD_REQSCAN_DEPTH);
	assert_int_equal(scan_deep(200, &r), BD_REQSCAN_DEPTH);

	/* 1000 values pass, 1001 do not: {"a":[0,...]} holds n + 2 */
	many = malloc(4096);
	assert_non_null(many);
	n = (size_t)sprintf(many, "{\"a\":[");
	for (int i = 0; i < 998; i++)
		n += (size_t)sprintf(many + n, "%s0", i > 0 ? "," : "");
	strcpy(many + n, "]}");
	assert_int_equal(scan(many, &r), BD_REQSCAN_OK);
	strcpy(many + n, ",0]}");
	assert_int_equal(scan(many, &r), BD_REQSCAN_VALUES);
	free(many);
}

/* The lenient pass used on requests over a limit. */
static const char *
found_token(const char *s, struct buf *b)
{
	struct bd_reqscan r;

	b->n = 0;
	b->s[0] = '\0';
	if (bd_reqscan_token(s, strlen(s), &r) <= 0)
		return (NULL);
	bd_reqscan_unescape(s + r.token_off, r.token_len, buf_sink, b);
	return (b->s);
}

static void
test_find_token(void **state)
{
	struct buf b;

	(void)state;
	assert_string_equal(found_token("{\"token\":\"t1\",\"x\":[[[[[[", &b),
	    "t1");
	assert_string_equal(
	    found_token("{\"x\":[[[[\"]\"]]]],\"y\":{\"token\":"
	                "\"no\"},\"\\u0074oken\" : \"t\\u0032\"}",
	        &b),
	    "t2");
	assert_string_equal(
	    found_token("{\"x\":[{},{},{}],\"token\":\"t3\"}", &b), "t3");
	assert_null(found_token("{\"x\":[[[\"token\",\"t\"]]]}", &b));
	assert_null(found_token("[{\"token\":\"t\"}]", &b));
	assert_null(found_token("{\"token\":\"a\",\"token\":\"b\"}", &b));
	assert_null(found_token("{\"token\":[\"t\"]}", &b));
	assert_null(found_token("{\"token\":5}", &b));
	assert_null(found_token("{\"token\"", &b));
	assert_null(found_token("", &b));
}

/* Same verdict as jansson (with the daemon's flags) on valid and broken
 * input of every kind. */
static void
check_agrees(const char *s, size_t len)
{
	struct bd_reqscan r;
	json_error_t err;
	json_t *j = json_loadb(s, len, JSON_DECODE_ANY, &err);
	int st = bd_reqscan(s, len, &lim, &r);

	if (j != NULL && st == BD_REQSCAN_NOT_OBJECT)
		assert_false(json_is_object(j));
	else if ((j != NULL) != (st == BD_REQSCAN_OK))
		fail_msg("'%.*s': jansson %s, scan %d (%s)", (int)len, s,
		    j != NULL ? "accepts" : err.text, st,
		    r.why != NULL ? r.why : "");
	json_decref(j);
}

static void
test_agrees_with_jansson(void **state)
{
	static const char *cases[] = { "", " ", "{", "}", "{}", " {} ", "[]",
		"[1,2", "{\"a\":1}{}", "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
		"{\"a\":01}", "{\"a\":-}", "{\"a\":1.}", "{\"a\":1.5e}",
		"{\"a\":-0.5E+3}", "{\"a\":.5}", "{\"a\":tru}", "{\"a\":true}",
		"{\"a\":nul}", "{\"a\":null,\"b\":false}", "{\"a\":\"\\x\"}",
		"{\"a\":\"\\u12\"}", "{\"a\":\"\\u0000\"}",
		"{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}",
		"{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\\ud800\\udc00\"}",
		"{\"a\":\"\t\"}", "{\"a\":\"\xc3\x28\"}",
		"{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}",
		"{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xf0\x9f\x98\x80\"}",
		"{\"a\":\"\xe2\x82\"}", "{\"a\":[{},[],{\"b\":[1,{}]}]}",
		"{\"a\":[,]}", "{\"a\":[1,]}", "\"str\"", "42", "null",
		"{\"a\":\"x\"", "\xef\xbb\xbf{}", "{\"\":0}",
		"{\"a\":\"\x7f\"}", "[\"a\"]x" };

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_agrees(cases[i], strlen(cases[i]));
	check_agrees("{\"a\":\"\0\"}", 8);
	check_agrees("{\"a\":1}\0", 8);
}

/* Random strings over JSON's own alphabet: the two parsers agree on each
 * (short numbers only: jansson also refuses integers past 64 bits). */
static void
test_random_agreement(void **state)
{
	static const char *atoms[] = { "{", "}", "[", "]", ",", ":", " ",
		"\"a\"", "\"token\"", "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "1",
		"-2.5e3", "true", "null", "\"\\\"\"", "\"\xc3\xa9\"", "\\",
		"\"" };
	char s[64];
	unsigned seed = 7;

	(void)state;
	for (int round = 0; round < 200000; round++) {
		size_t n = 0;
		int atoms_n = 1 +
		    (int)((seed = seed * 1103515245u + 12345u) >> 16) % 9;

		for (int k = 0; k < atoms_n; k++) {
			const char *a;

			seed = seed * 1103515245u + 12345u;
			a = atoms[(seed >> 16) %
			    (sizeof atoms / sizeof atoms[0])];
			if (n + strlen(a) >= sizeof s)
				break;
			memcpy(s + n, a, strlen(a));
			n += strlen(a);
		}
		check_agrees(s, n);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_find_token),
		cmocka_unit_test(test_agrees_with_jansson),
		cmocka_unit_test(test_random_agreement),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
