/*
 * tools/system.c: the system tool. `ping` answers at once; `info` says what
 * this daemon is and can do, so a client can adapt without guessing.
 * `sync` flushes the guest's file systems and `set_clock` steps its clock
 * to the host's: the host calls them before it saves a desktop and after
 * it restores or resumes one (docs/protocol.md).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/computer.h"
#include "tools/spawn.h"
#include "tools/tool.h"

/* Steps the clock for a daemon without CAP_SYS_TIME (the desktop user's):
 * setuid root, executable by the group bureaud (packaging/debian). */
#ifndef BUREAU_SETCLOCK
#define BUREAU_SETCLOCK "/usr/libexec/bureau/bureau-setclock"
#endif

static uint64_t sys_started_ns;

static int
sys_init(const struct tool_config *cfg, char **cause)
{
	(void)cfg;
	sys_started_ns = tool_now_ns();
	return (spawn_init(cause));
}

static void
sys_fini(void)
{
	spawn_fini();
}

static json_t *
sys_capabilities(void)
{
	json_t *tools = json_object();

	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++) {
		json_t *acts = json_array();
		const struct tool_action *a, *b;

		/* each name once, though the computer lists some under both
		 * "action" and "type" */
		for (a = (*t)->actions; a != NULL && a->name != NULL; a++) {
			for (b = (*t)->actions; b != a; b++)
				if (strcmp(b->name, a->name) == 0)
					break;
			if (b == a)
				json_array_append_new(acts,
				    json_string(a->name));
		}
		json_object_set_new(tools, (*t)->name, acts);
	}
	return (tools);
}

static int
sys_ping(struct tool_call *call)
{
	tool_set_output(call, "pong");
	return (0);
}

/* The machine's own load and memory, as the host cannot see them from
 * outside a VM: /proc/loadavg and /proc/meminfo's MemAvailable (the
 * kernel's estimate of what can be had without swapping, which
 * sysinfo(2)'s freeram is not). NULL where /proc cannot be read. */
static json_t *
sys_load(void)
{
	double l[3];
	FILE *f = fopen("/proc/loadavg", "re");
	int n = f ? fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) : 0;

	if (f != NULL)
		fclose(f);
	return (n == 3 ? json_pack("[f, f, f]", l[0], l[1], l[2]) : NULL);
}

static json_t *
sys_memory(void)
{
	char line[256];
	long long total = -1, avail = -1, kb;
	FILE *f = fopen("/proc/meminfo", "re");

	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
			total = kb * 1024;
		else if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			avail = kb * 1024;
	}
	if (f != NULL)
		fclose(f);
	if (total < 0 || avail < 0)
		return (NULL);
	return (json_pack("{s:I, s:I}", "total_bytes", (json_int_t)total,
	    "available_bytes", (json_int_t)avail));
}

static int
sys_info(struct tool_call *call)
{
	json_t *v;
	const char *display, *cause;
	int sw, sh, dw, dh;

	tool_set_str(call, "version", BUREAU_VERSION);
	tool_set_int(call, "protocol", BUREAU_PROTOCOL);
	tool_set_int(call, "pid", (long long)getpid());
	/* Clients refuse a larger request themselves: nng would drop it
	 * with the connection and they could not tell why. */
	tool_set_int(call, "max_request", (long long)call->cfg->max_request);
	tool_set_json(call, "uptime_s",
	    json_real((double)(tool_now_ns() - sys_started_ns) / 1e9));
	tool_set_json(call, "capabilities", sys_capabilities());
	if ((v = sys_load()) != NULL)
		tool_set_json(call, "load", v);
	if ((v = sys_memory()) != NULL)
		tool_set_json(call, "memory", v);
	/* the screenshot code chosen for this CPU and build */
	tool_set_json(call, "screenshots",
	    json_pack("{s:s, s:s, s:i}", "scale", cap_scale_simd(-1), "png",
	        cap_png_encoder(), "png_level", CAP_PNG_LEVEL));
	if (tool_computer_geometry(&sw, &sh, &dw, &dh, &display, &cause) == 0) {
		tool_set_str(call, "display", display);
		tool_set_json(call, "screen",
		    json_pack("{s:i, s:i}", "width", sw, "height", sh));
		tool_set_json(call, "scaled",
		    json_pack("{s:i, s:i}", "width", dw, "height", dh));
		tool_set_output(call,
		    "bureaud %s, protocol %d, screen %dx%d, "
		    "screenshots %dx%d",
		    BUREAU_VERSION, BUREAU_PROTOCOL, sw, sh, dw, dh);
	} else {
		tool_set_str(call, "display_error", cause);
		tool_set_output(call, "bureaud %s, protocol %d, no display: %s",
		    BUREAU_VERSION, BUREAU_PROTOCOL, cause);
	}
	return (0);
}

static int
sys_sync(struct tool_call *call)
{
	uint64_t t0 = tool_now_ns();

	sync();
	tool_set_json(call, "elapsed_s",
	    json_real((double)(tool_now_ns() - t0) / 1e9));
	tool_set_output(call, "synced");
	return (0);
}

/* The helper's exit, handed from the reaper thread. */
struct sys_child {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, status;
};

static void
sys_child_exit(void *arg, pid_t pid, int status)
{
	struct sys_child *c = arg;

	(void)pid;
	pthread_mutex_lock(&c->mu);
	c->done = 1;
	c->status = status;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/*
 * Run the setuid helper with the host's time and the monotonic time it
 * was received at: the helper adds what passed since, so the time it
 * takes to start does not count. 0, or the error set on call.
 */
static int
sys_setclock_helper(struct tool_call *call, long long time_ns,
    long long mono_ns)
{
	struct sys_child c = { .mu = PTHREAD_MUTEX_INITIALIZER,
		.cv = PTHREAD_COND_INITIALIZER };
	struct spawn_child ch;
	char a1[32], a2[32], out[512];
	char *argv[] = { BUREAU_SETCLOCK, a1, a2, NULL }, *cause = NULL;
	struct spawn_opts o = { .argv = argv,
		.merge_stderr = 1,
		.on_exit = sys_child_exit,
		.arg = &c };
	size_t n = 0;
	int rv;

	snprintf(a1, sizeof a1, "%lld", time_ns);
	snprintf(a2, sizeof a2, "%lld", mono_ns);
	if ((rv = spawn_start(&o, &ch, &cause)) != 0) {
		rv = tool_fail(call, BD_EPERM,
		    "cannot set the clock: not permitted, and %s", cause);
		free(cause);
		return (rv);
	}
	/* Its output (an error message) until it closes the pipe. */
	for (;;) {
		ssize_t r = read(ch.out, out + n, sizeof out - 1 - n);
		if (r > 0 && (n += (size_t)r) < sizeof out - 1)
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		break;
	}
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	spawn_close(&ch.out);
	pthread_mutex_lock(&c.mu);
	while (!c.done)
		pthread_cond_wait(&c.cv, &c.mu);
	pthread_mutex_unlock(&c.mu);
	if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0)
		return (0);
	return (tool_fail(call, BD_EPERM, "cannot set the clock: %s",
	    n > 0 ? out : "the helper failed"));
}

static long long
sys_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

/*
 * Step CLOCK_REALTIME to time_ns (the host's unix time, in ns, when it
 * sent the request) plus what passed since it arrived. Setting the clock
 * needs CAP_SYS_TIME: a daemon without it runs the setuid helper.
 */
static int
sys_set_clock(struct tool_call *call)
{
	long long mono0 = sys_clock_ns(CLOCK_MONOTONIC);
	long long before = sys_clock_ns(CLOCK_REALTIME), target, time_ns;
	struct timespec ts;

	/* 2001 .. 2255 */
	if (tool_arg_int(call, "time_ns", 1, 1000000000000000000LL,
	        9000000000000000000LL, 0, &time_ns) != 0)
		return (call->code);
	target = time_ns + (sys_clock_ns(CLOCK_MONOTONIC) - mono0);
	ts.tv_sec = (time_t)(target / 1000000000LL);
	ts.tv_nsec = (long)(target % 1000000000LL);
	if (clock_settime(CLOCK_REALTIME, &ts) != 0) {
		if (errno != EPERM)
			return (tool_fail(call, BD_EIO,
			    "cannot set the clock: %s", strerror(errno)));
		if (sys_setclock_helper(call, time_ns, mono0) != 0)
			return (call->code);
	}
	/* How far the guest was off when the request arrived. */
	double step = (double)(time_ns - before) / 1e9;
	tool_set_json(call, "stepped_s", json_real(step));
	tool_set_output(call, "clock stepped by %+.3f s", step);
	return (0);
}

static const struct tool_action sys_actions[] = {
	{ "ping", "action", sys_ping, 1 },
	{ "info", "action", sys_info, 1 },
	/* Quick though they wait on the kernel or a helper for a moment: a
	 * desktop's shell commands must never hold up its save or its clock
	 * after a restore. */
	{ "sync", "action", sys_sync, 1 },
	{ "set_clock", "action", sys_set_clock, 1 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_system_entry = {
	.name = "system",
	.init = sys_init,
	.fini = sys_fini,
	.actions = sys_actions,
};
