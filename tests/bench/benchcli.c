/*
 * benchcli: the client side of `make bench`, over libbureau.
 *
 *   benchcli URL TOKEN_FILE shot N [CHANGE_CMD]   screenshot round trips
 *   benchcli URL TOKEN_FILE click N X Y           left_click, no screenshot
 *   benchcli URL TOKEN_FILE type TEXT_FILE        one `type`, no screenshot
 *
 * shot runs CHANGE_CMD (untimed) before each request so every screenshot
 * is a real capture + scale + encode, not the unchanged-screen cache.
 * Prints one line of medians: total, and the daemon's own split.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-bridge/include/bureau.h"

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
		perror(path);
		exit(2);
	}
	rewind(f);
	if ((buf = calloc(1, (size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return (buf);
}

/* One raw call; the parsed reply, or exit on any failure. */
static json_t *
call(bureau_client *c, const char *req, double *ms)
{
	char *reply = NULL;
	double t0 = now_ms();
	int rv = bureau_call(c, req, &reply);
	json_t *r;

	*ms = now_ms() - t0;
	if (rv != 0 && reply == NULL) {
		fprintf(stderr, "benchcli: %s\n", bureau_client_error(c));
		exit(1);
	}
	r = json_loads(reply, 0, NULL);
	bureau_free(reply);
	if (r == NULL || !json_is_true(json_object_get(r, "ok"))) {
		fprintf(stderr, "benchcli: request failed: %s\n", req);
		exit(1);
	}
	return (r);
}

int
main(int argc, char **argv)
{
	bureau_client *c;
	char *token;
	int n;

	if (argc < 5) {
		fprintf(stderr,
		    "usage: benchcli URL TOKEN_FILE shot|click|type "
		    "...\n");
		return (2);
	}
	token = slurp(argv[2]);
	if (bureau_connect(argv[1], token, 30.0, &c) != 0) {
		fprintf(stderr, "benchcli: cannot connect to %s\n", argv[1]);
		return (1);
	}
	if (strcmp(argv[3], "shot") == 0) {
		double *tot, *srv, *cap, *scl, *enc;
		size_t bytes = 0;
		int w = 0, h = 0;

		n = atoi(argv[4]);
		tot = calloc((size_t)n, sizeof *tot);
		srv = calloc((size_t)n, sizeof *srv);
		cap = calloc((size_t)n, sizeof *cap);
		scl = calloc((size_t)n, sizeof *scl);
		enc = calloc((size_t)n, sizeof *enc);
		for (int i = 0; i < n; i++) {
			json_t *r, *img, *t;

			if (argc > 5 && system(argv[5]) != 0)
				return (1);
			r = call(c,
			    "{\"tool\":\"computer\",\"action\":"
			    "\"screenshot\"}",
			    &tot[i]);
			img = json_object_get(r, "image");
			t = json_object_get(r, "timing");
			srv[i] = json_number_value(
			    json_object_get(r, "elapsed_ms"));
			cap[i] = json_number_value(
			    json_object_get(t, "capture_ms"));
			scl[i] = json_number_value(
			    json_object_get(t, "scale_ms"));
			enc[i] = json_number_value(
			    json_object_get(t, "encode_ms"));
			bytes = json_string_length(
			            json_object_get(img, "data")) *
			    3 / 4;
			w = (int)json_integer_value(
			    json_object_get(img, "width"));
			h = (int)json_integer_value(
			    json_object_get(img, "height"));
			json_decref(r);
		}
		printf("total_ms=%.2f capture_ms=%.2f scale_ms=%.2f "
		       "encode_ms=%.2f transport_ms=%.2f png_bytes=%zu "
		       "size=%dx%d\n",
		    median(tot, n), median(cap, n), median(scl, n),
		    median(enc, n), median(tot, n) - median(srv, n), bytes, w,
		    h);
	} else if (strcmp(argv[3], "click") == 0 && argc >= 7) {
		char req[256];
		double *tot;

		n = atoi(argv[4]);
		tot = calloc((size_t)n, sizeof *tot);
		snprintf(req, sizeof req,
		    "{\"tool\":\"computer\",\"action\":"
		    "\"left_click\",\"coordinate\":[%d,%d],\"screenshot\":"
		    "false}",
		    atoi(argv[5]), atoi(argv[6]));
		for (int i = 0; i < n; i++)
			json_decref(call(c, req, &tot[i]));
		printf("total_ms=%.3f\n", median(tot, n));
	} else if (strcmp(argv[3], "type") == 0) {
		char *text = slurp(argv[4]), *req;
		json_t *j = json_pack("{s:s, s:s, s:s, s:b}", "tool",
		    "computer", "action", "type", "text", text, "screenshot",
		    0);
		double ms;

		req = json_dumps(j, JSON_COMPACT);
		json_decref(call(c, req, &ms));
		printf("total_ms=%.2f\n", ms);
		free(req);
		json_decref(j);
		free(text);
	} else {
		fprintf(stderr, "benchcli: unknown mode '%s'\n", argv[3]);
		return (2);
	}
	bureau_close(c);
	free(token);
	return (0);
}
