/*
 * host-bridge/cli/life.c: the command lines of a desktop's lifecycle:
 * start, stop (and --all), pause, resume, snapshot, restore. Each parses
 * its options, calls the lifecycle library (../desk) and says what it
 * did; the library decides who changes the desktop (its host agent, or
 * this process under the desktop's lock).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/life.h"
#include "host-bridge/cli/remote.h"
#include "host-bridge/cli/safeprint.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

/* "bureau CMD: CAUSE" on stderr (e's cause), cleared. */
static int
life_fail(const char *cmd, struct desk_err *e)
{
	fprintf(stderr, "bureau %s: %s\n", cmd, e->cause ? e->cause : "failed");
	desk_err_clear(e);
	return (1);
}

/* A command's option value as a whole number in [min, max]. */
static int
life_int(const char *cmd, const char *opt, const char *arg, long min, long max,
    long *out)
{
	char *cause = NULL;

	if (hb_parse_int(opt, arg, min, max, out, &cause) == 0)
		return (0);
	usage_err(cmd, cause ? cause : "invalid number");
	free(cause);
	return (-1);
}

/* The guest writes these logs: its text goes through safeprint. */
void
life_print_tail(const char *dir, const char *file, int lines)
{
	struct sp_state st = { .style = SP_PLAIN };
	char *path = hb_fmt("%s/%s", dir, file);
	char *s = path ? hb_read_file(path) : NULL;
	size_t n, i;
	int seen = 0;

	if (s == NULL) {
		free(path);
		return;
	}
	n = strlen(s);
	i = n;
	while (i > 0) {
		if (s[i - 1] == '\n' && i != n && ++seen == lines)
			break;
		i--;
	}
	fprintf(stderr, "--- %s (last %d lines) ---\n", path, lines);
	sp_write(&st, stderr, s + i, n - i);
	sp_flush(&st, stderr);
	if (n && s[n - 1] != '\n')
		fputc('\n', stderr);
	free(s);
	free(path);
}

/* ---- start ------------------------------------------------------------- */

static void
start_note(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
	fflush(stdout);
}

void
life_say_started(const char *name, const struct desk_start_opts *o,
    const struct desk_start_res *r)
{
	char *t = desk_start_text(name, o->nowait, r);

	if (r->restore_failed != NULL)
		fprintf(stderr,
		    "bureau: cannot restore the saved state of '%s' (%s): "
		    "booted it instead; its disks are as they were, the "
		    "programs it ran are gone\n",
		    name, r->restore_failed);
	if (t != NULL)
		printf("%s\n", t);
	free(t);
}

int
life_start_one(const char *name, const struct desk_start_opts *o)
{
	struct desk_start_res r;
	struct desk_err e = { 0 };
	char *dir;
	int rc = 0;

	if (desk_start(name, o, &r, &e) != 0) {
		dir = store_dir(name, NULL);
		if (dir != NULL && r.tail_qemu)
			life_print_tail(dir, "qemu.log", 20);
		if (dir != NULL && r.tail_console)
			life_print_tail(dir, "console.log", 30);
		free(dir);
		rc = life_fail("start", &e);
	} else {
		life_say_started(name, o, &r);
	}
	desk_start_res_clear(&r);
	return (rc);
}

static void
stop_say(const char *name, const struct desk_stop_res *r)
{
	char *t = desk_stop_text(name, r);

	if (r->warning != NULL)
		fprintf(stderr, "bureau stop: warning: %s\n", r->warning);
	if (t != NULL)
		printf("%s\n", t);
	free(t);
}

/* `bureau stop|start --all`, each desktop's end said whole as it ends. */
static void
all_say(void *arg, const struct desk_all_one *one)
{
	const int *start = arg;

	if (!one->ok)
		fprintf(stderr, "bureau %s: %s\n", *start ? "start" : "stop",
		    one->err->cause ? one->err->cause : "failed");
	else if (*start) {
		struct desk_start_opts o = { 0 };
		life_say_started(one->name, &o, one->started);
	} else
		stop_say(one->name, one->stopped);
	fflush(stdout);
	fflush(stderr);
}

static int
life_all(int start, long timeout)
{
	long long t0 = hb_now_ms();
	int n = 0, failed = 0;

	fflush(NULL);
	/* desktops on another machine: their SSH forwards come back (the
	 * bureau there brings back its own desktops) */
	if (start)
		remote_forwards_all();
	desk_all(start, timeout, all_say, &start, &n, &failed);
	if (n == 0 && failed == 0) {
		printf(start ? "start --all: no desktop was saved by stop "
		               "--all\n" :
		               "stop --all: no desktop is running\n");
		return (0);
	}
	printf("%s --all: %s %d desktop%s in %.1f s", start ? "start" : "stop",
	    start ? "started" : "saved", n - failed, n - failed == 1 ? "" : "s",
	    (hb_now_ms() - t0) / 1000.0);
	if (failed > 0)
		printf(", %d failed (above)%s", failed,
		    start ? "; they stay marked for the next start --all" : "");
	printf("\n");
	return (failed > 0 ? 1 : 0);
}

int
cmd_start(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "accel", required_argument, NULL, 'a' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	struct desk_start_opts o = { .notes = { start_note, NULL } };
	int c, all = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (life_int("start", "--timeout", optarg, 1, 86400,
			        &o.timeout_s) != 0)
				return (2);
			break;
		case 'A':
			all = 1;
			break;
		case 'a':
			o.accel = optarg;
			break;
		case 'n':
			o.nowait = 1;
			break;
		default:
			usage_err("start", "unknown option");
			return (2);
		}
	}
	if (all && (optind != argc || o.accel != NULL || o.nowait)) {
		usage_err("start", "--all takes no NAME, --accel or --no-wait");
		return (2);
	}
	if (all)
		return (life_all(1, o.timeout_s));
	if (optind + 1 != argc) {
		usage_err("start", "one NAME expected");
		return (2);
	}
	return (life_start_one(argv[optind], &o));
}

/* ---- stop ---------------------------------------------------------------- */

/*
 * stop saves the desktop (the guest's file systems synced first) and the
 * next start restores it; --shutdown powers it off through ACPI (the next
 * start boots), --force ends QEMU at once. Either of these forgets a
 * saved state.
 */
int
cmd_stop(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		{ "shutdown", no_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	struct desk_stop_res r;
	struct desk_err e = { 0 };
	long timeout = 120, given = 0;
	int force = 0, shutdown = 0, all = 0, c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (life_int("stop", "--timeout", optarg, 1, 86400,
			        &timeout) != 0)
				return (2);
			given = timeout;
			break;
		case 'A':
			all = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 's':
			shutdown = 1;
			break;
		default:
			usage_err("stop", "unknown option");
			return (2);
		}
	}
	if (all && (optind != argc || force || shutdown)) {
		usage_err("stop",
		    "--all saves every running desktop: no "
		    "NAME, --force or --shutdown");
		return (2);
	}
	if (all)
		return (life_all(0, given));
	if (optind + 1 != argc) {
		usage_err("stop", "one NAME expected");
		return (2);
	}
	if (desk_stop(argv[optind],
	        force        ? DESK_STOP_FORCE :
	            shutdown ? DESK_STOP_SHUTDOWN :
	                       DESK_STOP_SAVE,
	        timeout, &r, &e) != 0)
		rc = life_fail("stop", &e);
	else
		stop_say(argv[optind], &r);
	desk_stop_res_clear(&r);
	return (rc);
}

/* ---- pause, resume ------------------------------------------------------- */

static int
pause_resume(int argc, char **argv, int resume)
{
	struct desk_resume_res r = { 0 };
	struct desk_err e = { 0 };

	if (argc != 2) {
		usage_err(argv[0], "one NAME expected");
		return (2);
	}
	if ((resume ? desk_resume(argv[1], &r, &e) : desk_pause(argv[1], &e)) !=
	    0)
		return (life_fail(argv[0], &e));
	if (r.warning != NULL)
		fprintf(stderr, "bureau: warning: %s\n", r.warning);
	if (r.said != NULL)
		printf("%s", r.said);
	else
		printf("%s desktop '%s'\n", resume ? "resumed" : "paused",
		    argv[1]);
	free(r.warning);
	free(r.said);
	return (0);
}

int
cmd_pause(int argc, char **argv)
{
	return (pause_resume(argc, argv, 0));
}

int
cmd_resume(int argc, char **argv)
{
	return (pause_resume(argc, argv, 1));
}

/* ---- snapshot, restore -----------------------------------------------------
 */

/* `bureau snapshot NAME`: the snapshots of both disks (read only). */
static int
snapshot_list(const char *name)
{
	struct desktop *d = NULL;
	char *cause = NULL;
	int live = 0, rc = 0;

	if (desktop_load(name, &d, &cause) != 0 ||
	    vm_backend_for(d)->snapshot(d, NULL, 0, &live, &cause) != 0) {
		fprintf(stderr, "bureau snapshot: %s\n",
		    cause ? cause : "failed");
		rc = 1;
	}
	free(cause);
	desktop_free(d);
	return (rc);
}

static int
snapshot_cmd(int argc, char **argv, int restore)
{
	struct desk_snap_res r;
	struct desk_err e = { 0 };
	const char *cmd = argv[0];
	int discard = 0, rv;

	if (restore && argc > 1 && strcmp(argv[1], "--discard-saved") == 0) {
		discard = 1;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if (argc == 2 && !restore)
		return (snapshot_list(argv[1]));
	if (argc != 3) {
		usage_err(cmd,
		    restore ? "NAME and TAG expected" :
		              "NAME and TAG expected (NAME alone "
		              "lists)");
		return (2);
	}
	rv = restore ? desk_restore(argv[1], argv[2], discard, &r, &e) :
	               desk_snapshot(argv[1], argv[2], &r, &e);
	if (rv != 0)
		return (life_fail(cmd, &e));
	if (r.warning != NULL)
		fprintf(stderr, "bureau: warning: %s\n", r.warning);
	{
		char *t = desk_snap_text(argv[1], argv[2], restore, &r);
		if (t != NULL)
			printf("%s\n", t);
		free(t);
	}
	desk_snap_res_clear(&r);
	return (0);
}

int
cmd_snapshot(int argc, char **argv)
{
	return (snapshot_cmd(argc, argv, 0));
}

int
cmd_restore(int argc, char **argv)
{
	return (snapshot_cmd(argc, argv, 1));
}
