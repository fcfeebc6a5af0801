/*
 * tools/window.c: the window tool. `list`, `activate`, `close`, `move`,
 * `resize` on top-level client windows (x11/windows.c does the X side)
 * and `launch`, which starts a detached program and can wait for its
 * window.
 *
 * Geometry is in screenshot space, like the computer tool's coordinates,
 * so a window's x, y, width, height can be clicked in the screenshot as
 * they are; `screen` gives the same rectangle in screen pixels.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/computer.h"
#include "tools/spawn.h"
#include "tools/tool.h"
#include "x11/windows.h"

#define WIN_COORD_MAX          32767        /* screenshot-space bound of x, y */
#define WIN_SIZE_MAX           32767        /* of width, height */
#define WIN_ARGV_MAX           4096         /* arguments of a launch */
#define WIN_COMMAND_MAX        (256u << 10) /* bytes of a launch command */
#define WIN_LAUNCH_TIMEOUT     10.0         /* s, default wait for a window */
#define WIN_LAUNCH_TIMEOUT_MAX 120.0
#define WIN_CLOSE_TIMEOUT      3.0 /* s, default wait for a close */
#define WIN_CLOSE_TIMEOUT_MAX  60.0
#define WIN_APPLY_MS           1000 /* wait for a WM to apply a request */
#define WIN_POLL_MS            20

static struct {
	struct x11_wm *wm;
	char *cause;   /* why there is no connection, when wm is NULL */
	char *display; /* the display name given to launched programs */
} win;

/* --- geometry ------------------------------------------------------------ */

/* Screen and screenshot sizes; the identity when the computer tool has no
 * display (the window tool may still have one). */
struct win_space {
	int sw, sh, dw, dh;
};

static void
win_space(struct win_space *s)
{
	const char *display, *cause;

	if (tool_computer_geometry(&s->sw, &s->sh, &s->dw, &s->dh, &display,
	        &cause) != 0)
		s->sw = s->sh = s->dw = s->dh = 1;
}

/* A position mapped between spaces the way cap_map maps a pixel centre,
 * without its clamping: windows may hang off the screen. */
static int
win_map(int v, int from, int to)
{
	long long num = (2LL * v + 1) * to, den = 2LL * from, r;

	if (from == to)
		return (v);
	r = num / den;
	if (num % den != 0 && num < 0)
		r--;
	return ((int)r);
}

/* A length, rounded to the nearest pixel, never 0 when it was not. */
static int
win_map_len(int v, int from, int to)
{
	long long r;

	if (from == to)
		return (v);
	r = ((long long)v * to * 2 + from) / (2LL * from);
	return (r < 1 && v > 0 ? 1 : (int)r);
}

/* Titles and class names are whatever a client set: maybe not UTF-8. */
static json_t *
win_text(const char *s)
{
	return (tool_json_text(s, strlen(s)));
}

static json_t *
win_rect(const struct win_space *s, int x, int y, int w, int h, int shot)
{
	if (shot) {
		x = win_map(x, s->sw, s->dw);
		y = win_map(y, s->sh, s->dh);
		w = win_map_len(w, s->sw, s->dw);
		h = win_map_len(h, s->sh, s->dh);
	}
	return (json_pack("{s:i, s:i, s:i, s:i}", "x", x, "y", y, "width", w,
	    "height", h));
}

/* One window as the protocol describes it. */
static json_t *
win_json(const struct win_space *s, const struct x11_win_info *w)
{
	json_t *o = json_object();
	json_t *r = win_rect(s, w->x, w->y, w->width, w->height, 1);

	if (o == NULL || r == NULL) {
		json_decref(o);
		json_decref(r);
		return (NULL);
	}
	json_object_set_new(o, "window", json_integer((json_int_t)w->id));
	json_object_set_new(o, "title", win_text(w->title));
	json_object_set_new(o, "class", win_text(w->wm_class));
	json_object_set_new(o, "instance", win_text(w->instance));
	json_object_set_new(o, "pid",
	    w->pid > 0 ? json_integer(w->pid) : json_null());
	json_object_update(o, r);
	json_decref(r);
	json_object_set_new(o, "active", json_boolean(w->active));
	json_object_set_new(o, "visible", json_boolean(w->viewable));
	json_object_set_new(o, "screen",
	    win_rect(s, w->x, w->y, w->width, w->height, 0));
	json_object_set_new(o, "frame",
	    win_rect(s, w->fx, w->fy, w->fwidth, w->fheight, 1));
	return (o);
}

/* --- helpers ------------------------------------------------------------- */

static void
win_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* An x11 layer failure as the call's error. */
static int
win_xfail(struct tool_call *call, int rv, unsigned long id, char *cause)
{
	if (rv == X11_WM_GONE) {
		free(cause);
		return (tool_fail(call, BD_ENOTFOUND,
		    "window %lu (0x%lx) is not a top-level window", id, id));
	}
	tool_fail(call, BD_EIO, "%s", cause != NULL ? cause : "X error");
	free(cause);
	return (call->code);
}

static int
win_arg_window(struct tool_call *call, unsigned long *id)
{
	long long v;

	if (tool_arg_int(call, "window", 1, 1, 0xffffffffLL, 0, &v) != 0)
		return (call->code);
	*id = (unsigned long)v;
	return (0);
}

/* The window's details, or not_found. */
static int
win_info(struct tool_call *call, unsigned long id, struct x11_win_info *w)
{
	char *cause = NULL;
	int rv = x11_wm_info(win.wm, id, w, &cause);

	return (rv == 0 ? 0 : win_xfail(call, rv, id, cause));
}

static void
win_set_info(struct tool_call *call, const struct x11_win_info *w)
{
	struct win_space s;

	win_space(&s);
	tool_set_int(call, "window", (long long)w->id);
	tool_set_json(call, "info", win_json(&s, w));
}

/* --- list ---------------------------------------------------------------- */

static int
win_list(struct tool_call *call)
{
	struct x11_win_info *v = NULL;
	struct win_space s;
	size_t n = 0;
	char *cause = NULL, *text = NULL, *mgr;
	size_t tlen = 0;
	FILE *f;
	json_t *arr;

	if (x11_wm_list(win.wm, &v, &n, &cause) != 0)
		return (win_xfail(call, -1, 0, cause));
	win_space(&s);
	if ((arr = json_array()) == NULL ||
	    (f = open_memstream(&text, &tlen)) == NULL) {
		json_decref(arr);
		x11_wm_list_free(v, n);
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = win_json(&s, &v[i]);
		json_t *g = o != NULL ? json_object_get(o, "x") : NULL;

		if (o == NULL || g == NULL)
			continue;
		json_array_append_new(arr, o);
		fprintf(f, "%s%lu (0x%lx) %dx%d+%d+%d%s pid %ld [%s] %s",
		    i > 0 ? "\n" : "", v[i].id, v[i].id,
		    (int)json_integer_value(json_object_get(o, "width")),
		    (int)json_integer_value(json_object_get(o, "height")),
		    (int)json_integer_value(g),
		    (int)json_integer_value(json_object_get(o, "y")),
		    v[i].active ? " active" : "", v[i].pid, v[i].wm_class,
		    v[i].title);
	}
	if (n == 0)
		fprintf(f, "no windows");
	fclose(f);
	x11_wm_list_free(v, n);
	tool_set_json(call, "windows", arr);
	mgr = x11_wm_manager(win.wm);
	tool_set_json(call, "window_manager",
	    mgr != NULL ? win_text(mgr) : json_null());
	free(mgr);
	if (text != NULL)
		tool_set_strn(call, "output", text, tlen);
	free(text);
	return (0);
}

/* --- activate, close, move, resize --------------------------------------- */

static int
win_activate(struct tool_call *call)
{
	struct x11_win_info w;
	unsigned long id = 0;
	char *cause = NULL;
	int rv;
	double t0;

	if (win_arg_window(call, &id) != 0)
		return (call->code);
	if ((rv = x11_wm_activate(win.wm, id, &cause)) != 0)
		return (win_xfail(call, rv, id, cause));
	/* a window manager applies it asynchronously: wait to report it */
	t0 = tool_now_ms();
	for (;;) {
		if (win_info(call, id, &w) != 0)
			return (call->code);
		if (w.active || tool_now_ms() - t0 > WIN_APPLY_MS)
			break;
		x11_wm_info_clear(&w);
		win_sleep_ms(WIN_POLL_MS);
	}
	win_set_info(call, &w);
	tool_set_bool(call, "active", w.active);
	if (w.active)
		tool_set_output(call, "activated window %lu (0x%lx)", id, id);
	else
		tool_set_output(call,
		    "asked to activate window %lu (0x%lx); "
		    "it is not active yet",
		    id, id);
	x11_wm_info_clear(&w);
	return (0);
}

static int
win_close(struct tool_call *call)
{
	struct x11_win_info w;
	unsigned long id = 0;
	char *cause = NULL;
	int force, rv, closed = 0;
	double timeout, t0;

	if (win_arg_window(call, &id) != 0 ||
	    tool_arg_bool(call, "force", 0, &force) != 0 ||
	    tool_arg_num(call, "timeout", 0, 0, WIN_CLOSE_TIMEOUT_MAX,
	        WIN_CLOSE_TIMEOUT, &timeout) != 0)
		return (call->code);
	if (win_info(call, id, &w) != 0)
		return (call->code);
	rv = w.deletable;
	x11_wm_info_clear(&w);
	if (!force && !rv)
		return (tool_fail(call, BD_EINVAL,
		    "window %lu (0x%lx) does "
		    "not accept WM_DELETE_WINDOW: set 'force' to true to "
		    "disconnect its client",
		    id, id));
	if ((rv = x11_wm_close_window(win.wm, id, force, &cause)) != 0)
		return (win_xfail(call, rv, id, cause));
	t0 = tool_now_ms();
	for (;;) {
		rv = x11_wm_info(win.wm, id, &w, &cause);
		if (rv == X11_WM_GONE) {
			closed = 1;
			break;
		}
		if (rv != 0)
			return (win_xfail(call, rv, id, cause));
		x11_wm_info_clear(&w);
		/* the daemon stops: report it not closed (yet) */
		if (tool_now_ms() - t0 >= timeout * 1000 || tool_stopping())
			break;
		win_sleep_ms(WIN_POLL_MS);
	}
	tool_set_int(call, "window", (long long)id);
	tool_set_bool(call, "closed", closed);
	if (closed)
		tool_set_output(call, "closed window %lu (0x%lx)", id, id);
	else
		tool_set_output(call,
		    "asked window %lu (0x%lx) to close; it "
		    "is still open after %.1f s (a dialog may be asking "
		    "something)",
		    id, id, timeout);
	return (0);
}

/* Move (x, y) or resize (width, height) in screenshot space, then wait
 * until the window manager applied it or stopped changing it. */
static int
win_geometry(struct tool_call *call, int resize)
{
	const char *fa = resize ? "width" : "x", *fb = resize ? "height" : "y";
	struct x11_win_info w, before;
	struct win_space s;
	unsigned long id = 0;
	long long a, b;
	char *cause = NULL;
	int rv, sa, sb, first[4], last[4], stable = 0;
	double t0;

	if (win_arg_window(call, &id) != 0 ||
	    tool_arg_int(call, fa, 1, resize ? 1 : -WIN_COORD_MAX,
	        resize ? WIN_SIZE_MAX : WIN_COORD_MAX, 0, &a) != 0 ||
	    tool_arg_int(call, fb, 1, resize ? 1 : -WIN_COORD_MAX,
	        resize ? WIN_SIZE_MAX : WIN_COORD_MAX, 0, &b) != 0)
		return (call->code);
	win_space(&s);
	if (resize) {
		sa = win_map_len((int)a, s.dw, s.sw);
		sb = win_map_len((int)b, s.dh, s.sh);
	} else {
		sa = win_map((int)a, s.dw, s.sw);
		sb = win_map((int)b, s.dh, s.sh);
	}
	if (win_info(call, id, &before) != 0)
		return (call->code);
	memcpy(first,
	    (int[4]){ before.x, before.y, before.width, before.height },
	    sizeof first);
	memcpy(last, first, sizeof last);
	x11_wm_info_clear(&before);
	rv = resize ? x11_wm_resize(win.wm, id, sa, sb, &cause) :
	              x11_wm_move(win.wm, id, sa, sb, &cause);
	if (rv != 0)
		return (win_xfail(call, rv, id, cause));
	t0 = tool_now_ms();
	for (;;) {
		int cur[4];

		if (win_info(call, id, &w) != 0)
			return (call->code);
		memcpy(cur, (int[4]){ w.x, w.y, w.width, w.height },
		    sizeof cur);
		if (resize ? (w.width == sa && w.height == sb) :
		             (w.x == sa && w.y == sb))
			break;
		if (tool_now_ms() - t0 > WIN_APPLY_MS)
			break;
		/* size hints (a terminal's cells) or the screen's edge may
		 * change the request: accept a geometry that changed and
		 * then held still */
		stable = memcmp(cur, last, sizeof cur) == 0 ? stable + 1 : 0;
		if (stable >= 5 && memcmp(cur, first, sizeof cur) != 0)
			break;
		memcpy(last, cur, sizeof last);
		x11_wm_info_clear(&w);
		win_sleep_ms(WIN_POLL_MS);
	}
	win_set_info(call, &w);
	tool_set_output(call, "window %lu (0x%lx) is now %dx%d+%d+%d", id, id,
	    win_map_len(w.width, s.sw, s.dw), win_map_len(w.height, s.sh, s.dh),
	    win_map(w.x, s.sw, s.dw), win_map(w.y, s.sh, s.dh));
	x11_wm_info_clear(&w);
	return (0);
}

static int
win_move(struct tool_call *call)
{
	return (win_geometry(call, 0));
}

static int
win_resize(struct tool_call *call)
{
	return (win_geometry(call, 1));
}

/* --- launch -------------------------------------------------------------- */

/* Is `pid` the process `anc` or one of its descendants (/proc)? */
static int
win_descends(long pid, long anc)
{
	for (int depth = 0; depth < 32 && pid > 1; depth++) {
		char path[64], buf[512], *p;
		FILE *f;
		size_t n;

		if (pid == anc)
			return (1);
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		if ((f = fopen(path, "r")) == NULL)
			return (0);
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		/* "pid (comm) S ppid ...": comm may hold spaces and ')' */
		if ((p = strrchr(buf, ')')) == NULL ||
		    sscanf(p + 1, " %*c %ld", &pid) != 1)
			return (0);
	}
	return (0);
}

/* Has pid exited (gone or a zombie)? */
static int
win_exited(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return (1);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (
	    (p = strrchr(buf, ')')) != NULL && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * Wait for the launched program's window: the first top-level window
 * created since the mark whose _NET_WM_PID is the program or a descendant
 * of it; else one that names no pid; else, once the program has exited
 * (it handed over to a running instance, say), any of them.
 */
static int
win_wait_window(struct tool_call *call, pid_t pid, unsigned long mark,
    double timeout)
{
	double t0 = tool_now_ms();

	for (;;) {
		struct x11_win_info *v = NULL;
		size_t n = 0, pick = (size_t)-1, other = (size_t)-1;
		char *cause = NULL;
		int gone;

		if (x11_wm_list(win.wm, &v, &n, &cause) != 0)
			return (win_xfail(call, -1, 0, cause));
		gone = win_exited(pid);
		for (size_t i = 0; i < n && pick == (size_t)-1; i++) {
			if (!x11_wm_created_since(win.wm, mark, v[i].id))
				continue;
			if (v[i].pid > 0 && win_descends(v[i].pid, pid))
				pick = i;
			else if (other == (size_t)-1 && (v[i].pid <= 0 || gone))
				other = i;
		}
		if (pick == (size_t)-1)
			pick = other;
		if (pick != (size_t)-1) {
			win_set_info(call, &v[pick]);
			tool_set_output(call,
			    "started pid %ld; its window is "
			    "%lu (0x%lx) \"%s\"",
			    (long)pid, v[pick].id, v[pick].id, v[pick].title);
			x11_wm_list_free(v, n);
			return (0);
		}
		x11_wm_list_free(v, n);
		if (tool_stopping())
			return (tool_fail(call, BD_EBUSY,
			    "started pid %ld; "
			    "not waiting for its window: bureaud is shutting "
			    "down",
			    (long)pid));
		if (tool_now_ms() - t0 >= timeout * 1000)
			return (tool_fail(call, BD_ETIMEOUT,
			    "no new window from pid %ld within %.1f s (field "
			    "'timeout')%s",
			    (long)pid, timeout,
			    gone ? "; the program has exited" : ""));
		win_sleep_ms(50);
	}
}

static int
win_launch(struct tool_call *call)
{
	static const char *const names[] = { "DISPLAY" };
	const char *values[] = { win.display };
	struct spawn_opts so = { 0 };
	struct spawn_child child;
	char **argv = NULL, **envp = NULL, *cause = NULL;
	unsigned long mark = 0;
	double timeout;
	int wait, rv, code, watching = 0;
	pid_t pid = 0;

	if (tool_arg_argv(call, WIN_ARGV_MAX, WIN_COMMAND_MAX, &argv) != 0 ||
	    tool_arg_bool(call, "wait", 0, &wait) != 0 ||
	    tool_arg_num(call, "timeout", 0, 0.1, WIN_LAUNCH_TIMEOUT_MAX,
	        WIN_LAUNCH_TIMEOUT, &timeout) != 0)
		goto done;
	/* the daemon's environment, DISPLAY naming the daemon's display */
	if ((envp = spawn_env(names, values, 1)) == NULL) {
		tool_fail(call, BD_EINTERNAL, "out of memory");
		goto done;
	}
	/* watch before the program starts, so none of its windows is
	 * created unseen */
	if (wait) {
		if (x11_wm_watch(win.wm, &mark, &cause) != 0) {
			win_xfail(call, -1, 0, cause); /* frees cause */
			cause = NULL;
			goto done;
		}
		watching = 1;
	}
	so.argv = argv;
	so.envp = envp;
	so.detach = 1;
	if ((code = spawn_start(&so, &child, &cause)) != 0) {
		tool_fail(call, code, "%s",
		    cause != NULL ? cause : "cannot start the program");
		goto done;
	}
	pid = child.pid;
	tool_set_int(call, "pid", (long long)pid);
	if (!wait)
		tool_set_output(call, "started pid %ld", (long)pid);
	else
		win_wait_window(call, pid, mark, timeout);
done:
	rv = call->code;
	if (watching)
		x11_wm_unwatch(win.wm);
	free(argv);
	spawn_env_free(envp);
	free(cause);
	return (rv);
}

/* --- entry --------------------------------------------------------------- */

static int
win_prepare(struct tool_call *call)
{
	if (win.wm == NULL)
		return (tool_fail(call, BD_EIO, "no display: %s",
		    win.cause != NULL ? win.cause : "not started"));
	return (0);
}

static int
win_init(const struct tool_config *cfg, char **cause)
{
	const char *name = cfg->display != NULL ? cfg->display :
	                                          getenv("DISPLAY");

	if (name != NULL && (win.display = strdup(name)) == NULL)
		return (-1);
	if (x11_wm_open(name, &win.wm, cause) != 0) {
		win.cause = *cause != NULL ? strdup(*cause) : NULL;
		return (-1);
	}
	return (0);
}

static void
win_fini(void)
{
	x11_wm_close(win.wm);
	win.wm = NULL;
	free(win.cause);
	win.cause = NULL;
	free(win.display);
	win.display = NULL;
}

/* All but `launch` (which may wait for a window) answer at once. */
static const struct tool_action win_actions[] = {
	{ "list", "action", win_list, 1 },
	{ "activate", "action", win_activate, 1 },
	{ "close", "action", win_close, 1 },
	{ "move", "action", win_move, 1 },
	{ "resize", "action", win_resize, 1 },
	{ "launch", "action", win_launch, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_window_entry = {
	.name = "window",
	.init = win_init,
	.fini = win_fini,
	.actions = win_actions,
	.prepare = win_prepare,
};
