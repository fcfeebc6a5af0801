/*
 * benchcli: the client side of `make bench`, over libbureau.
 *
 *   benchcli URL TOKEN_FILE shot N [CHANGE_CMD]   screenshot round trips
 *   benchcli URL TOKEN_FILE click N X Y           left_click, no screenshot
 *   benchcli URL TOKEN_FILE type TEXT_FILE        one `type`, no screenshot
 *
 * shot runs CHANGE_CMD (untimed) before each request so every screenshot
 * is a real capture + scale + encode, not the unchanged-screen cache.
 * Prints one line of medians: total (what bureau_screenshot takes: round
 * trip, parse, base64 decode), the daemon's elapsed_ms and its split
 * (timing), the daemon's serialisation after elapsed_ms replayed on the
 * same reply with its own code (base64, JSON), and the client's parse and
 * decode alone.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-bridge/include/bureau.h"
#include "host-bridge/lib/internal.h"
#include "runtime/reply.h"

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
		/* what each screenshot spent where, in ms */
		enum { TOT, SRV, CAP, HASH, SCL, ENC, B64, JSON, PARSE, NCOL };
		static const char *const names[NCOL] = { "total_ms",
			"elapsed_ms", "capture_ms", "hash_ms", "scale_ms",
			"encode_ms", "b64_ms", "json_ms", "parse_ms" };
		double *col[NCOL];
		size_t bytes = 0;
		int w = 0, h = 0;

		n = atoi(argv[4]);
		for (int k = 0; k < NCOL; k++)
			col[k] = calloc((size_t)n, sizeof(double));
		for (int i = 0; i < n; i++) {
			struct bureau_image img;
			json_t *req, *r, *t;
			char *text, *b64, *js;
			double t0, t1;

			if (argc > 5 && system(argv[5]) != 0)
				return (1);
			req = json_pack("{s:s, s:s}", "tool", "computer",
			    "action", "screenshot");
			/* what bureau_screenshot does: the round trip with
			 * the client's parse, then the base64 decode */
			t0 = now_ms();
			if (bc_request(c, req, 0, &r, &text) != 0 ||
			    bc_image(r, &img) != 0) {
				fprintf(stderr, "benchcli: %s\n",
				    bureau_client_error(c));
				return (1);
			}
			col[TOT][i] = now_ms() - t0;
			json_decref(req);
			t = json_object_get(r, "timing");
			col[SRV][i] = json_number_value(
			    json_object_get(r, "elapsed_ms"));
			col[CAP][i] = json_number_value(
			    json_object_get(t, "capture_ms"));
			col[HASH][i] = json_number_value(
			    json_object_get(t, "hash_ms"));
			col[SCL][i] = json_number_value(
			    json_object_get(t, "scale_ms"));
			col[ENC][i] = json_number_value(
			    json_object_get(t, "encode_ms"));
			/* The daemon's serialisation, after its elapsed_ms,
			 * replayed here with its own code on the same reply:
			 * the image's base64 (runtime/reply.c) and the rest
			 * of the object through jansson. */
			b64 = malloc(img.size / 3 * 4 + 8);
			t0 = now_ms();
			bd_b64_encode(img.data, img.size, b64);
			t1 = now_ms();
			col[B64][i] = t1 - t0;
			json_object_del(r, "image");
			js = json_dumps(r,
			    JSON_COMPACT | JSON_REAL_PRECISION(15));
			col[JSON][i] = now_ms() - t1;
			free(js);
			free(b64);
			json_decref(r);
			/* The client's side alone: parse and decode again. */
			t0 = now_ms();
			r = bc_parse_image_reply(text, strlen(text));
			if (r == NULL)
				r = json_loads(text, JSON_ALLOW_NUL, NULL);
			bytes = img.size;
			w = img.width;
			h = img.height;
			bureau_image_clear(&img);
			if (r == NULL || bc_image(r, &img) != 0)
				return (1);
			col[PARSE][i] = now_ms() - t0;
			bureau_image_clear(&img);
			json_decref(r);
			free(text);
		}
		for (int k = 0; k < NCOL; k++)
			printf("%s=%.3f ", names[k], median(col[k], n));
		printf("png_bytes=%zu size=%dx%d\n", bytes, w, h);
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
