/*
 * bureau log NAME --export FILE.html: the replay page (replay.h).
 *
 * The page is web/replay/replay.html, built into this binary (the .incbin
 * below) so that an exported page never depends on where bureau is
 * installed. Its data goes in as one JSON script element: the steps of
 * the trail, and each distinct screenshot once, base64 (an unchanged
 * screen after two actions is one image). Every '<' of that JSON is
 * written \u003c, so no text of the trail (the agent chose much of it)
 * can end the element or open markup; the page puts every text in with
 * textContent. The page's Content-Security-Policy allows no fetch at all,
 * images from data: URLs only, and only its own script, by hash.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>
#include <sodium.h>

#include "host-bridge/cli/replay.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

/* The template, NUL-terminated (see the Makefile: replay.o depends on
 * it). */
__asm__(".section .rodata\n"
        ".balign 16\n"
        "replay_template:\n"
        ".incbin \"web/replay/replay.html\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char replay_template[] __asm__("replay_template");

/* A screenshot larger than this is not a settled screenshot of the trail
 * (the agent keeps PNGs of screens): it is left out. */
#define REPLAY_SHOT_MAX (32L << 20)

struct shots {
	json_t *list; /* base64 strings */
	unsigned char (*hash)[crypto_generichash_BYTES];
	size_t n, cap;
};

int
replay_parse_since(const char *s, double *out, char **cause)
{
	static const char *const fmts[] = { "%Y-%m-%dT%H:%M:%S",
		"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M",
		"%Y-%m-%d", NULL };
	size_t len = strlen(s);
	long secs;
	char *end, *c2 = NULL;

	if (s[0] == '@') {
		double v;

		errno = 0;
		v = strtod(s + 1, &end);
		if (end != s + 1 && *end == '\0' && errno == 0 && isfinite(v) &&
		    v >= 0) {
			*out = v;
			return (0);
		}
	} else if (len > 0 && strchr("smhd", s[len - 1]) != NULL &&
	    hb_parse_duration("--since", s, 1, 100L * 365 * 86400, &secs,
	        &c2) == 0) {
		*out = (double)time(NULL) - (double)secs;
		return (0);
	} else {
		int utc = len > 0 && (s[len - 1] == 'Z' || s[len - 1] == 'z');

		for (int i = 0; fmts[i] != NULL; i++) {
			struct tm tm = { 0 };
			const char *rest = strptime(s, fmts[i], &tm);
			time_t t;

			if (rest == NULL ||
			    !(*rest == '\0' || (utc && rest[1] == '\0')))
				continue;
			tm.tm_isdst = -1;
			t = utc ? timegm(&tm) : mktime(&tm);
			if (t == (time_t)-1)
				continue;
			*out = (double)t;
			return (0);
		}
	}
	free(c2);
	*cause = hb_fmt("invalid --since '%s': expected a time "
	                "(2026-12-05T11:30:00Z in UTC, 2026-12-05 11:30 or "
	                "2026-12-05 in local time), @UNIX-SECONDS, or a "
	                "duration ago (90s, 10m, 2h, 1d)",
	    s);
	return (-1);
}

/* The index of the screenshot of a trail line ("audit/N.png", read from
 * dir) in sh, added when new: >= 0, or -2 when the file is gone. */
static long
replay_shot(const char *dir, const char *rel, struct shots *sh)
{
	unsigned char h[crypto_generichash_BYTES];
	char *path = NULL, *b64 = NULL, *data = NULL;
	long long n;
	size_t len = 0, blen;
	struct stat st;
	long idx = -2;
	FILE *f = NULL;
	char tail;

	/* Only the form the agent writes: never a path out of the trail. */
	if (sscanf(rel, "audit/%lld.pn%c", &n, &tail) != 2 || tail != 'g' ||
	    n < 0 || strcmp(rel + strlen(rel) - 4, ".png") != 0 ||
	    strchr(rel + 6, '/') != NULL)
		return (-2);
	if ((path = hb_fmt("%s/audit/%lld.png", dir, n)) == NULL ||
	    (f = fopen(path, "re")) == NULL || fstat(fileno(f), &st) != 0 ||
	    !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > REPLAY_SHOT_MAX ||
	    (data = malloc((size_t)st.st_size)) == NULL ||
	    (len = fread(data, 1, (size_t)st.st_size, f)) != (size_t)st.st_size)
		goto out;
	crypto_generichash(h, sizeof h, (const unsigned char *)data, len, NULL,
	    0);
	for (size_t i = 0; i < sh->n; i++)
		if (memcmp(sh->hash[i], h, sizeof h) == 0) {
			idx = (long)i;
			goto out;
		}
	blen = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
	if ((b64 = malloc(blen)) == NULL)
		goto out;
	sodium_bin2base64(b64, blen, (const unsigned char *)data, len,
	    sodium_base64_VARIANT_ORIGINAL);
	if (sh->n == sh->cap) {
		size_t cap = sh->cap ? sh->cap * 2 : 64;
		void *nh = realloc(sh->hash, cap * sizeof *sh->hash);

		if (nh == NULL)
			goto out;
		sh->hash = nh;
		sh->cap = cap;
	}
	if (json_array_append_new(sh->list, json_string(b64)) != 0)
		goto out;
	memcpy(sh->hash[sh->n], h, sizeof h);
	idx = (long)sh->n++;
out:
	if (f != NULL)
		fclose(f);
	free(b64);
	free(data);
	free(path);
	return (idx);
}

/* What replay_step gathers: the steps at or after since. */
struct gather {
	const char *dir;
	double since;
	json_t *steps;
	struct shots *sh;
};

/* One line of the trail, a step when at or after since. */
static int
replay_step(json_t *j, void *arg)
{
	struct gather *g = arg;
	json_t *shot;

	if (json_number_value(json_object_get(j, "time")) < g->since) {
		json_decref(j);
		return (0);
	}
	shot = json_object_get(j, "screenshot");
	json_object_set_new(j, "shot",
	    json_integer(json_is_string(shot) ?
	            replay_shot(g->dir, json_string_value(shot), g->sh) :
	            -1));
	json_object_del(j, "screenshot");
	json_array_append_new(g->steps, j);
	return (0);
}

/* The Content-Security-Policy of a page whose one script is the template's
 * last <script> element; malloc'd. */
static char *
replay_csp(void)
{
	const char *s = strstr(replay_template, "\n<script>\n"), *e;
	unsigned char h[crypto_hash_sha256_BYTES];
	char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES,
	    sodium_base64_VARIANT_ORIGINAL)];

	if (s == NULL || (e = strstr(s, "</script>")) == NULL)
		return (NULL);
	s += strlen("\n<script>");
	crypto_hash_sha256(h, (const unsigned char *)s, (size_t)(e - s));
	sodium_bin2base64(b64, sizeof b64, h, sizeof h,
	    sodium_base64_VARIANT_ORIGINAL);
	return (hb_fmt("default-src 'none'; img-src data:; "
	               "style-src 'unsafe-inline'; script-src 'sha256-%s'; "
	               "base-uri 'none'; form-action 'none'",
	    b64));
}

int
replay_export(const char *dir, const char *name, const char *path, double since,
    long *nsteps, long *nshots, char **cause)
{
	struct shots sh = { .list = json_array() };
	json_t *steps = json_array(), *data = NULL;
	char *json = NULL, *csp = NULL, *page = NULL;
	const char *at_csp, *at_data;
	size_t len = 0, jlen, plen;
	FILE *mem = NULL;
	int rc = -1;

	if (sodium_init() < 0) {
		*cause = hb_fmt("libsodium failed to initialise");
		goto out;
	}
	if (steps == NULL || sh.list == NULL)
		goto nomem;
	audit_log_each(dir, replay_step,
	    &(struct gather){ dir, since, steps, &sh });
	data = json_pack("{s:s, s:f, s:O, s:O}", "desktop", name, "exported",
	    (double)time(NULL), "steps", steps, "shots", sh.list);
	if (data == NULL)
		goto nomem;
	if (since > 0)
		json_object_set_new(data, "since", json_real(since));
	if ((json = json_dumps(data, JSON_COMPACT)) == NULL ||
	    (csp = replay_csp()) == NULL)
		goto nomem;
	jlen = strlen(json);
	at_csp = strstr(replay_template, "@CSP@");
	at_data = strstr(replay_template, "@DATA@");
	if (at_csp == NULL || at_data == NULL || at_data < at_csp) {
		*cause = hb_fmt("the replay template is broken (no @CSP@ or "
		                "@DATA@ marker)");
		goto out;
	}
	if ((mem = open_memstream(&page, &plen)) == NULL)
		goto nomem;
	fwrite(replay_template, 1, (size_t)(at_csp - replay_template), mem);
	fputs(csp, mem);
	fwrite(at_csp + 5, 1, (size_t)(at_data - at_csp - 5), mem);
	fputs("<script type=\"application/json\" id=\"replay-data\">", mem);
	for (size_t i = 0, from = 0; i <= jlen; i++)
		if (i == jlen || json[i] == '<') {
			fwrite(json + from, 1, i - from, mem);
			if (i < jlen)
				fputs("\\u003c", mem);
			from = i + 1;
		}
	fputs("</script>", mem);
	fputs(at_data + 6, mem);
	if (fclose(mem) != 0) {
		mem = NULL;
		goto nomem;
	}
	mem = NULL;
	len = plen;
	/* The trail's screens may show anything the desktop showed: the
	 * page is its owner's, as the trail is. */
	if (hb_write_file(path, page, len, 0600, cause) != 0)
		goto out;
	if (nsteps != NULL)
		*nsteps = (long)json_array_size(steps);
	if (nshots != NULL)
		*nshots = (long)sh.n;
	rc = 0;
	goto out;
nomem:
	*cause = hb_fmt("out of memory");
out:
	if (mem != NULL)
		fclose(mem);
	free(page);
	free(csp);
	free(json);
	json_decref(data);
	json_decref(steps);
	json_decref(sh.list);
	free(sh.hash);
	return (rc);
}
