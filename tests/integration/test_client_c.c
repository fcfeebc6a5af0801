/*
 * Drives a real bureaud through libbureau and checks each call's effect
 * independently: X input through the log of an xev window (run under
 * `stdbuf -oL xev -geometry 640x480+0+0`), the pointer through xdotool,
 * PNG headers by hand. Started by test_client.sh, which passes:
 *
 *   BUREAU_URL, BUREAU_TOKEN  the daemon under test
 *   BUREAUD_PID               its pid (stopped once to provoke no_reply)
 *   XEV_LOG                   the xev window's log
 *   SCREEN_W, SCREEN_H        the Xvfb screen size
 *   DEAD_URL                  a URL where nothing listens
 *   MALFORMED_URL             an nngcat --rep peer answering "not json"
 *   OUT_DIR                   where to leave c-shot.png for the script
 *
 * Prints "PASS name" / "FAIL name: why" / "SKIP name: why"; exits 1 if any
 * check failed.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/include/bureau.h"

static int failures;

static void
result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s", ok ? "PASS" : "FAIL", name);
	if (!ok) {
		failures++;
		if (fmt != NULL) {
			printf(": ");
			va_start(ap, fmt);
			vprintf(fmt, ap);
			va_end(ap);
		}
	}
	printf("\n");
	fflush(stdout);
}

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL) {
		fprintf(stderr, "test_client_c: $%s is not set\n", name);
		exit(2);
	}
	return (v);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

/* --- the xev log ------------------------------------------------------- */

static const char *xev_log;

static long
log_mark(void)
{
	struct stat st;

	return (stat(xev_log, &st) == 0 ? (long)st.st_size : 0);
}

/* The log from offset `from` on, malloc'd. */
static char *
log_since(long from)
{
	FILE *f = fopen(xev_log, "r");
	char *buf;
	long end;

	if (f == NULL)
		return (NULL);
	fseek(f, 0, SEEK_END);
	end = ftell(f);
	if (end < from)
		from = end;
	if ((buf = calloc(1, (size_t)(end - from) + 1)) == NULL) {
		fclose(f);
		return (NULL);
	}
	fseek(f, from, SEEK_SET);
	if (fread(buf, 1, (size_t)(end - from), f) != (size_t)(end - from))
		buf[0] = '\0';
	fclose(f);
	return (buf);
}

/*
 * Count the xev events after `from` (blank-line separated) that start with
 * `type` and contain every one of needles (NULL-terminated), waiting up to
 * 3 s for at least `want` of them. Returns the count seen.
 */
static int
log_count(long from, int want, const char *type, const char *const *needles)
{
	double deadline = now() + 3.0;
	int n;

	for (;;) {
		char *buf = log_since(from), *ev, *next;

		n = 0;
		for (ev = buf; ev != NULL && *ev != '\0'; ev = next) {
			const char *const *p;
			int all = 1;

			while (*ev == '\n')
				ev++;
			if ((next = strstr(ev, "\n\n")) != NULL) {
				*next = '\0';
				next += 2;
			}
			if (strncmp(ev, type, strlen(type)) != 0)
				continue;
			for (p = needles; *p != NULL; p++)
				if (strstr(ev, *p) == NULL)
					all = 0;
			n += all;
		}
		if (n < want && now() > deadline && getenv("TEST_DEBUG")) {
			free(buf);
			buf = log_since(from);
			fprintf(stderr, "--- log since %ld, %s:\n%s---\n", from,
			    type, buf);
		}
		free(buf);
		if (n >= want || now() > deadline)
			return (n);
		usleep(50000);
	}
}

#define NEEDLES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static int
is_png(const struct bureau_image *img, int *w, int *h)
{
	const unsigned char *p = img->data;

	if (img->data == NULL || img->size < 24 ||
	    memcmp(p, "\x89PNG\r\n\x1a\n", 8) != 0 ||
	    memcmp(p + 12, "IHDR", 4) != 0)
		return (0);
	*w = (p[16] << 24) | (p[17] << 16) | (p[18] << 8) | p[19];
	*h = (p[20] << 24) | (p[21] << 16) | (p[22] << 8) | p[23];
	return (1);
}

static int
pointer_at(int x, int y)
{
	FILE *p = popen("xdotool getmouselocation", "r");
	int px = -1, py = -1;

	if (p == NULL)
		return (0);
	if (fscanf(p, "x:%d y:%d", &px, &py) != 2)
		px = py = -1;
	pclose(p);
	return (px == x && py == y);
}

/* The daemon's message in a reply, for the "verbatim" check. */
static int
message_is_verbatim(const char *reply, const char *msg)
{
	json_t *r = json_loads(reply, 0, NULL);
	const char *m = json_string_value(
	    json_object_get(json_object_get(r, "error"), "message"));
	int ok = m != NULL && strcmp(m, msg) == 0;

	json_decref(r);
	return (ok);
}

/* --- concurrency ------------------------------------------------------- */

struct waiter {
	bureau_client *c;
	int rv;
	double done;
};

static void *
wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rv = bureau_wait(w->c, 1.5, NULL);
	w->done = now();
	return (NULL);
}

/* --- the tests --------------------------------------------------------- */

static void
test_errors(bureau_client *c, const char *url)
{
	static const struct {
		const char *name, *req;
		int code;
	} cases[] = {
		{ "error_unknown_tool", "{\"tool\":\"no_such_tool\"}",
		    BUREAU_EUNKNOWN_TOOL },
		{ "error_unknown_action",
		    "{\"tool\":\"computer\",\"action\":\"fly\"}",
		    BUREAU_EUNKNOWN_ACTION },
		{ "error_bad_request", "{\"tool\":5}", BUREAU_EBADREQ },
		{ "error_out_of_bounds",
		    "{\"tool\":\"computer\",\"action\":\"left_click\","
		    "\"coordinate\":[99999,5],\"screenshot\":false}",
		    BUREAU_EBOUNDS },
		{ "error_invalid_argument",
		    "{\"tool\":\"computer\",\"action\":\"scroll\","
		    "\"scroll_direction\":\"sideways\",\"scroll_amount\":1}",
		    BUREAU_EINVAL },
	};
	bureau_client *bad = NULL;
	char *reply = NULL;
	size_t i;
	int rv;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rv = bureau_call(c, cases[i].req, &reply);
		result(rv == cases[i].code && reply != NULL &&
		        message_is_verbatim(reply, bureau_client_error(c)),
		    cases[i].name, "rv %d (%s), message '%s', reply %s", rv,
		    bureau_error_name(rv), bureau_client_error(c),
		    reply != NULL ? reply : "(none)");
		bureau_free(reply);
		reply = NULL;
	}

	/* The typed call gives the same code as the raw one. */
	rv = bureau_click(c, BUREAU_BUTTON_LEFT, 99999, 10, NULL, NULL);
	result(rv == BUREAU_EBOUNDS &&
	        strstr(bureau_client_error(c), "99999") != NULL,
	    "error_out_of_bounds_typed", "rv %d, message '%s'", rv,
	    bureau_client_error(c));

	/* A stale frame is refused (DESIGN: invalid_argument). */
	rv = bureau_call(c,
	    "{\"tool\":\"computer\",\"action\":\"mouse_move\","
	    "\"coordinate\":[1,1],\"frame\":987654321}",
	    &reply);
	result(rv == BUREAU_EINVAL, "error_stale_frame", "rv %d: %s", rv,
	    bureau_client_error(c));
	bureau_free(reply);
	reply = NULL;

	/* Over one request: refused locally, the connection stays. */
	{
		size_t big = 60u << 20;
		void *buf = calloc(1, big);

		rv = buf != NULL ? bureau_file_write(c, "/tmp/never-written",
		                       buf, big, -1, 0) :
		                   BUREAU_ENOMEM;
		free(buf);
		result(rv == BUREAU_ETOOLARGE && bureau_ping(c) == 0,
		    "error_too_large_local", "rv %d: %s", rv,
		    bureau_client_error(c));
	}

	/* Not JSON: refused locally, nothing sent. */
	rv = bureau_call(c, "{\"tool\":", &reply);
	result(rv == BUREAU_EBADREQ && reply == NULL, "error_local_bad_json",
	    "rv %d", rv);

	if (bureau_connect(url, "wrong-token", 5, &bad) != 0) {
		result(0, "error_unauthorized", "connect: %s",
		    bureau_client_error(NULL));
		return;
	}
	rv = bureau_ping(bad);
	result(rv == BUREAU_EUNAUTH, "error_unauthorized", "rv %d: %s", rv,
	    bureau_client_error(bad));
	bureau_close(bad);
	if (bureau_connect(url, NULL, 5, &bad) == 0) {
		rv = bureau_ping(bad);
		result(rv == BUREAU_EUNAUTH, "error_unauthorized_no_token",
		    "rv %d: %s", rv, bureau_client_error(bad));
		bureau_close(bad);
	}
}

/* Wait until every thread of pid is stopped: SIGSTOP is not synchronous,
 * and a worker that is still running would answer. */
static int
stopped(pid_t pid)
{
	char path[300], state;
	double deadline = now() + 3.0;
	struct dirent *e;
	DIR *d;
	FILE *f;
	int all;

	while (now() < deadline) {
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		if ((d = opendir(path)) == NULL)
			return (0);
		all = 1;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%s/stat",
			    (int)pid, e->d_name);
			state = 0;
			if ((f = fopen(path, "r")) != NULL) {
				if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
					state = 0;
				fclose(f);
			}
			if (state != 'T')
				all = 0;
		}
		closedir(d);
		if (all)
			return (1);
		usleep(10000);
	}
	return (0);
}

static void
test_transport(bureau_client *c)
{
	bureau_client *t = NULL;
	pid_t pid = (pid_t)atoi(env("BUREAUD_PID"));
	double t0, dt;
	int rv;

	/* Nothing listening: the call gives up after the timeout. */
	if (bureau_connect(env("DEAD_URL"), "x", 1.0, &t) != 0) {
		result(0, "transport_connect_failed", "connect: %s",
		    bureau_client_error(NULL));
	} else {
		t0 = now();
		rv = bureau_ping(t);
		dt = now() - t0;
		result(rv == BUREAU_ECONNECT && dt > 0.9 && dt < 2.5,
		    "transport_connect_failed", "rv %d after %.2f s: %s", rv,
		    dt, bureau_client_error(t));
		bureau_close(t);
	}

	/* Connected but the daemon is stopped: no reply in time. */
	bureau_set_timeout(c, 1.0);
	if (kill(pid, SIGSTOP) != 0 || !stopped(pid)) {
		result(0, "transport_no_reply", "SIGSTOP %d: %s", (int)pid,
		    strerror(errno));
	} else {
		t0 = now();
		rv = bureau_ping(c);
		dt = now() - t0;
		kill(pid, SIGCONT);
		result(rv == BUREAU_ENOREPLY && dt > 0.9 && dt < 2.5,
		    "transport_no_reply", "rv %d after %.2f s: %s", rv, dt,
		    bureau_client_error(c));
	}
	bureau_set_timeout(c, 10.0);
	rv = bureau_ping(c);
	result(rv == 0, "transport_recovers", "rv %d: %s", rv,
	    bureau_client_error(c));

	/* A real nng peer answering garbage. */
	if (bureau_connect(env("MALFORMED_URL"), NULL, 3.0, &t) == 0) {
		char *reply = NULL;

		rv = bureau_call(t, "{\"tool\":\"system\",\"action\":\"ping\"}",
		    &reply);
		result(rv == BUREAU_EMALFORMED && reply == NULL,
		    "transport_malformed", "rv %d: %s", rv,
		    bureau_client_error(t));
		bureau_free(reply);
		bureau_close(t);
	} else
		result(0, "transport_malformed", "connect: %s",
		    bureau_client_error(NULL));

	/* A URL nng cannot dial fails at once. */
	rv = bureau_connect("nosuch://x", NULL, 1.0, &t);
	result(rv == BUREAU_ECONNECT && t == NULL, "transport_bad_url", "rv %d",
	    rv);
}

static void
test_input(bureau_client *c)
{
	struct bureau_image shot = { 0 };
	long m;
	int rv, n, x = -1, y = -1, w, h;
	double t0, dt;

	/* mouse_move, with and without a screenshot */
	rv = bureau_mouse_move(c, 200, 150, &shot);
	result(rv == 0 && is_png(&shot, &w, &h) && pointer_at(200, 150),
	    "mouse_move", "rv %d: %s", rv, bureau_client_error(c));
	bureau_image_clear(&shot);
	rv = bureau_cursor_position(c, &x, &y);
	result(rv == 0 && x == 200 && y == 150, "cursor_position",
	    "rv %d, (%d, %d)", rv, x, y);
	rv = bureau_mouse_move(c, 250, 180, NULL);
	result(rv == 0 && pointer_at(250, 180), "mouse_move_no_screenshot",
	    "rv %d", rv);

	m = log_mark();
	rv = bureau_click(c, BUREAU_BUTTON_LEFT, 210, 160, NULL, &shot);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(210,160)", "button 1,"));
	result(rv == 0 && n == 1 && shot.data != NULL, "left_click",
	    "rv %d, %d presses", rv, n);
	bureau_image_clear(&shot);

	m = log_mark();
	rv = bureau_click(c, BUREAU_BUTTON_RIGHT, 220, 170, NULL, NULL);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(220,170)", "button 3,"));
	result(rv == 0 && n == 1, "right_click", "rv %d, %d presses", rv, n);

	m = log_mark();
	rv = bureau_click(c, BUREAU_BUTTON_MIDDLE, 230, 175, NULL, NULL);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(230,175)", "button 2,"));
	result(rv == 0 && n == 1, "middle_click", "rv %d, %d presses", rv, n);

	/* Shift held: the press carries ShiftMask (state 0x1). */
	m = log_mark();
	rv = bureau_click(c, BUREAU_BUTTON_LEFT, 240, 180, "shift", NULL);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(240,180)", "state 0x1,", "button 1,"));
	result(rv == 0 && n == 1, "click_modifiers", "rv %d, %d presses", rv,
	    n);

	/* Where the pointer is: no coordinate. */
	m = log_mark();
	rv = bureau_click(c, BUREAU_BUTTON_LEFT, BUREAU_NO_COORD,
	    BUREAU_NO_COORD, NULL, NULL);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(240,180)", "button 1,"));
	result(rv == 0 && n == 1, "click_here", "rv %d, %d presses", rv, n);

	m = log_mark();
	rv = bureau_double_click(c, 260, 200, NULL, NULL);
	n = log_count(m, 2, "ButtonPress",
	    NEEDLES("root:(260,200)", "button 1,"));
	result(rv == 0 && n == 2, "double_click", "rv %d, %d presses", rv, n);

	m = log_mark();
	rv = bureau_triple_click(c, 270, 210, NULL, NULL);
	n = log_count(m, 3, "ButtonPress",
	    NEEDLES("root:(270,210)", "button 1,"));
	result(rv == 0 && n == 3, "triple_click", "rv %d, %d presses", rv, n);

	m = log_mark();
	rv = bureau_drag(c, 100, 100, 300, 200, NULL);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(100,100)", "button 1,"));
	n += log_count(m, 1, "ButtonRelease",
	    NEEDLES("root:(300,200)", "button 1,"));
	result(rv == 0 && n == 2, "drag", "rv %d, %d of 2 events", rv, n);

	bureau_mouse_move(c, 150, 120, NULL);
	m = log_mark();
	rv = bureau_mouse_down(c, NULL);
	n = log_count(m, 1, "ButtonPress",
	    NEEDLES("root:(150,120)", "button 1,"));
	rv |= bureau_mouse_up(c, &shot);
	n += log_count(m, 1, "ButtonRelease",
	    NEEDLES("root:(150,120)", "button 1,"));
	result(rv == 0 && n == 2 && shot.data != NULL, "mouse_down_up",
	    "rv %d, %d of 2 events", rv, n);
	bureau_image_clear(&shot);

	m = log_mark();
	rv = bureau_scroll(c, 300, 250, BUREAU_SCROLL_DOWN, 3, NULL, NULL);
	n = log_count(m, 3, "ButtonPress",
	    NEEDLES("root:(300,250)", "button 5,"));
	result(rv == 0 && n == 3, "scroll_down", "rv %d, %d wheel clicks", rv,
	    n);
	m = log_mark();
	rv = bureau_scroll(c, 300, 250, BUREAU_SCROLL_UP, 2, NULL, NULL);
	n = log_count(m, 2, "ButtonPress",
	    NEEDLES("root:(300,250)", "button 4,"));
	result(rv == 0 && n == 2, "scroll_up", "rv %d, %d wheel clicks", rv, n);

	/* Keyboard: the pointer is inside xev, which has the focus then. */
	m = log_mark();
	rv = bureau_type(c, "hi", NULL);
	n = log_count(m, 1, "KeyPress", NEEDLES("(keysym 0x68, h)"));
	n += log_count(m, 1, "KeyPress", NEEDLES("(keysym 0x69, i)"));
	result(rv == 0 && n == 2, "type", "rv %d, %d of 2 keys", rv, n);

	m = log_mark();
	rv = bureau_key(c, "ctrl+a", NULL);
	n = log_count(m, 1, "KeyPress", NEEDLES("Control_L"));
	n += log_count(m, 1, "KeyPress",
	    NEEDLES("state 0x4,", "(keysym 0x61, a)"));
	result(rv == 0 && n == 2, "key_combo", "rv %d, %d of 2 presses", rv, n);

	m = log_mark();
	rv = bureau_key(c, "Return", NULL);
	n = log_count(m, 1, "KeyPress", NEEDLES("Return"));
	result(rv == 0 && n == 1, "key_return", "rv %d", rv);

	m = log_mark();
	t0 = now();
	rv = bureau_hold_key(c, "shift", 0.6, NULL);
	dt = now() - t0;
	n = log_count(m, 1, "KeyPress", NEEDLES("Shift_L"));
	n += log_count(m, 1, "KeyRelease", NEEDLES("Shift_L"));
	result(rv == 0 && n == 2 && dt >= 0.55, "hold_key",
	    "rv %d, %d of 2 events, %.2f s", rv, n, dt);

	t0 = now();
	rv = bureau_wait(c, 0.4, &shot);
	dt = now() - t0;
	result(rv == 0 && dt >= 0.38 && is_png(&shot, &w, &h), "wait",
	    "rv %d after %.2f s", rv, dt);
	bureau_image_clear(&shot);
}

static void
test_bash_file(bureau_client *c, const struct bureau_info *info)
{
	char *out = NULL, path[256];
	void *data = NULL;
	size_t len = 0;
	int rv, code = -1;
	FILE *f;

	if (strstr(info->json, "\"bash\"") == NULL) {
		printf("SKIP bash: the daemon has no bash tool yet\n");
	} else {
		rv = bureau_bash(c, "echo hello from bash; exit 3", NULL, 20,
		    &out, &code);
		result(rv == 0 && out != NULL &&
		        strstr(out, "hello from bash") != NULL && code == 3,
		    "bash", "rv %d, exit %d, output '%s': %s", rv, code,
		    out != NULL ? out : "", bureau_client_error(c));
		bureau_free(out);
		out = NULL;
		rv = bureau_bash(c, "cd /tmp && export BC_T=42", "c-test", 0,
		    NULL, NULL);
		rv |= bureau_bash(c, "echo $PWD $BC_T", "c-test", 0, &out,
		    &code);
		result(rv == 0 && out != NULL && strstr(out, "/tmp 42") != NULL,
		    "bash_session", "rv %d, output '%s'", rv,
		    out != NULL ? out : "");
		bureau_free(out);
		out = NULL;
		rv = bureau_bash_restart(c, "c-test");
		rv |= bureau_bash(c, "echo \"[$BC_T]\"", "c-test", 0, &out,
		    NULL);
		result(rv == 0 && out != NULL && strstr(out, "[]") != NULL,
		    "bash_restart", "rv %d, output '%s'", rv,
		    out != NULL ? out : "");
		bureau_free(out);
	}

	if (strstr(info->json, "\"file\"") == NULL) {
		printf("SKIP file: the daemon has no file tool yet\n");
		return;
	}
	/* The daemon runs on this machine: check the file on disk. */
	snprintf(path, sizeof(path), "%s/c-file/sub/blob.bin", env("OUT_DIR"));
	{
		unsigned char blob[3000];
		unsigned char disk[4000];
		size_t i, n = 0;

		for (i = 0; i < sizeof(blob); i++)
			blob[i] = (unsigned char)(i * 7 + (i >> 8));
		blob[10] = 0;
		rv = bureau_file_write(c, path, blob, sizeof(blob), 0600, 1);
		if ((f = fopen(path, "rb")) != NULL) {
			n = fread(disk, 1, sizeof(disk), f);
			fclose(f);
		}
		result(rv == 0 && n == sizeof(blob) &&
		        memcmp(disk, blob, n) == 0,
		    "file_write", "rv %d, %zu bytes on disk: %s", rv, n,
		    bureau_client_error(c));
		rv = bureau_file_read(c, path, &data, &len);
		result(rv == 0 && len == sizeof(blob) &&
		        memcmp(data, blob, len) == 0,
		    "file_read", "rv %d, %zu bytes: %s", rv, len,
		    bureau_client_error(c));
		bureau_free(data);
		rv = bureau_file_read(c, "/nonexistent/bureau/x", &data, &len);
		result(rv == BUREAU_ENOTFOUND && data == NULL,
		    "error_not_found", "rv %d: %s", rv, bureau_client_error(c));
	}
}

int
main(void)
{
	const char *url = env("BUREAU_URL");
	struct bureau_info info = { 0 };
	struct bureau_image img = { 0 }, img2 = { 0 }, zoom = { 0 };
	bureau_client *c = NULL;
	struct waiter wt;
	pthread_t th;
	char *reply = NULL, path[512];
	int rv, w = 0, h = 0, sw = atoi(env("SCREEN_W")),
	        sh = atoi(env("SCREEN_H"));
	double t0, dt;
	FILE *f;

	xev_log = env("XEV_LOG");
	if ((rv = bureau_connect(url, env("BUREAU_TOKEN"), 10, &c)) != 0) {
		result(0, "connect", "%s", bureau_client_error(NULL));
		return (1);
	}
	rv = bureau_ping(c);
	result(rv == 0, "ping", "rv %d: %s", rv, bureau_client_error(c));

	rv = bureau_info(c, &info);
	result(rv == 0 && info.protocol == BUREAU_PROTOCOL &&
	        info.version != NULL && info.screen_width == sw &&
	        info.screen_height == sh && info.scaled_width > 0 &&
	        info.json != NULL && info.json[0] == '{',
	    "info", "rv %d, protocol %d, screen %dx%d (want %dx%d)", rv,
	    info.protocol, info.screen_width, info.screen_height, sw, sh);

	rv = bureau_screenshot(c, &img);
	result(rv == 0 && strcmp(img.mime_type, "image/png") == 0 &&
	        is_png(&img, &w, &h) && w == img.width && h == img.height &&
	        w == info.scaled_width && h == info.scaled_height &&
	        img.frame >= 1,
	    "screenshot",
	    "rv %d, %s %zu bytes, PNG %dx%d, reply %dx%d, "
	    "frame %llu",
	    rv, img.mime_type, img.size, w, h, img.width, img.height,
	    (unsigned long long)img.frame);
	snprintf(path, sizeof(path), "%s/c-shot.png", env("OUT_DIR"));
	if ((f = fopen(path, "wb")) != NULL) {
		fwrite(img.data, 1, img.size, f);
		fclose(f);
	}
	printf("INFO screenshot %d %d %llu\n", img.width, img.height,
	    (unsigned long long)img.frame);

	rv = bureau_screenshot(c, &img2);
	result(rv == 0 && img2.frame == img.frame, "screenshot_same_frame",
	    "rv %d, frames %llu then %llu", rv, (unsigned long long)img.frame,
	    (unsigned long long)img2.frame);

	rv = bureau_zoom(c, 0, 0, 320, 200, &zoom);
	result(rv == 0 && is_png(&zoom, &w, &h) && w == zoom.width &&
	        h == zoom.height && w > 0 && w * 200 == h * 320,
	    "zoom", "rv %d, PNG %dx%d: %s", rv, w, h, bureau_client_error(c));

	/* Raw call: our own id is echoed, the token is added. */
	rv = bureau_call(c,
	    "{\"id\":\"c-raw-1\",\"tool\":\"system\","
	    "\"action\":\"ping\"}",
	    &reply);
	result(rv == 0 && reply != NULL &&
	        strstr(reply, "\"id\":\"c-raw-1\"") != NULL &&
	        strstr(reply, "\"ok\":true") != NULL,
	    "call_raw", "rv %d, reply %s", rv, reply != NULL ? reply : "-");
	bureau_free(reply);

	test_input(c);

	/* One client, two threads: a screenshot is not held up by a wait. */
	wt.c = c;
	wt.done = 0;
	t0 = now();
	pthread_create(&th, NULL, wait_thread, &wt);
	usleep(200000);
	bureau_image_clear(&img2);
	rv = bureau_screenshot(c, &img2);
	dt = now() - t0;
	pthread_join(th, NULL);
	result(rv == 0 && wt.rv == 0 && dt < 1.0 && wt.done - t0 >= 1.45,
	    "concurrent_calls",
	    "screenshot rv %d after %.2f s, wait rv %d "
	    "after %.2f s",
	    rv, dt, wt.rv, wt.done - t0);

	test_bash_file(c, &info);
	test_errors(c, url);
	test_transport(c);

	bureau_image_clear(&img);
	bureau_image_clear(&img2);
	bureau_image_clear(&zoom);
	bureau_info_clear(&info);
	bureau_close(c);
	return (failures > 0);
}
