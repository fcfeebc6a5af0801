/*
 * host-bridge/cli/desktop.c: the desktop commands, `bureau create|start|
 * stop|pause|resume|status|ls|rm|snapshot|restore|console NAME`. The
 * desktop store (store/) says where a desktop's files are, the VM backend
 * (vm/) runs it; this file parses command lines and reports.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/cli/life.h"
#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/remote.h"
#include "host-bridge/cli/operator.h"
#include "host-bridge/cli/safeprint.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/ready.h"
#include "host-bridge/vm/vm.h"

void
die_cause(const char *what, char *cause)
{
	fprintf(stderr, "bureau %s: %s\n", what, cause ? cause : "failed");
	free(cause);
}

void
usage_err(const char *cmd, const char *msg)
{
	for (const struct cli_cmd *c = cli_desktop_cmds; c->name; c++)
		if (strcmp(c->name, cmd) == 0)
			fprintf(stderr, "bureau %s: %s\nusage: bureau %s\n",
			    cmd, msg, c->usage);
}

/* A command's option value as a whole number in [min, max]; prints the
 * error with the usage line. */
static int
int_opt(const char *cmd, const char *opt, long min, long max, long *out)
{
	char *cause = NULL;

	if (hb_parse_int(opt, optarg, min, max, out, &cause) == 0)
		return (0);
	usage_err(cmd, cause ? cause : "invalid number");
	free(cause);
	return (-1);
}

/* ---- create ------------------------------------------------------------ */

/* bureau create's options, then what they were parsed into. */
struct create_args {
	char *name;
	const char *disk_s, *home_s, *mem_s, *image_opt, *allow, *approve;
	const char *net, *net_allow, *idle_s, *host_opt, *cpu_s, *bps_s;
	const char *rate_s;
	long approve_timeout, cpus, idle_save, max_forks, iops, cpu_milli;
	long long bps, rate;
	long long disk, home_sz, mem;
	struct policy_list al, ap;
	char *al_s, *ap_s;
};

static void
create_args_clear(struct create_args *a)
{
	free(a->al_s);
	free(a->ap_s);
	policy_list_clear(&a->al);
	policy_list_clear(&a->ap);
}

/* The command line into *a: 0, or 2 with the usage printed. */
static int
create_parse(int argc, char **argv, struct create_args *a)
{
	static const struct option opts[] = {
		{ "disk", required_argument, NULL, 'd' },
		{ "home", required_argument, NULL, 'H' },
		{ "memory", required_argument, NULL, 'm' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "image", required_argument, NULL, 'i' },
		{ "allow", required_argument, NULL, 'a' },
		{ "approve", required_argument, NULL, 'p' },
		{ "approve-timeout", required_argument, NULL, 'T' },
		{ "net", required_argument, NULL, 'N' },
		{ "net-allow", required_argument, NULL, 'A' },
		{ "idle-save", required_argument, NULL, 'I' },
		{ "host", required_argument, NULL, 'o' },
		{ "max-forks", required_argument, NULL, 'F' },
		{ "cpu-limit", required_argument, NULL, 'C' },
		{ "disk-bps", required_argument, NULL, 'B' },
		{ "disk-iops", required_argument, NULL, 'O' },
		{ "net-rate", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	char *cause = NULL;
	int c;

	a->disk_s = "20G";
	a->mem_s = "4G";
	a->allow = "";
	a->approve = "";
	a->net = "internet";
	a->approve_timeout = AGENT_APPROVE_TIMEOUT;
	a->cpus = 2;
	a->max_forks = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a->disk_s = optarg;
			break;
		case 'H':
			a->home_s = optarg;
			break;
		case 'm':
			a->mem_s = optarg;
			break;
		case 'i':
			a->image_opt = optarg;
			break;
		case 'c':
			if (int_opt("create", "--cpus", 1, 64, &a->cpus) != 0)
				return (2);
			break;
		case 'a':
			a->allow = optarg;
			break;
		case 'p':
			a->approve = optarg;
			break;
		case 'T':
			if (int_opt("create", "--approve-timeout", 1, 86400,
			        &a->approve_timeout) != 0)
				return (2);
			break;
		case 'N':
			if (strcmp(optarg, "none") != 0 &&
			    strcmp(optarg, "internet") != 0) {
				cause = hb_fmt("invalid --net '%s': none or "
				               "internet",
				    optarg);
				usage_err("create", cause);
				free(cause);
				return (2);
			}
			a->net = optarg;
			break;
		case 'A':
			a->net_allow = optarg;
			break;
		case 'I':
			a->idle_s = optarg;
			break;
		case 'o':
			a->host_opt = optarg;
			break;
		case 'F':
			if (int_opt("create", "--max-forks", 0,
			        STORE_MAX_FORKS_MAX, &a->max_forks) != 0)
				return (2);
			break;
		case 'C':
			a->cpu_s = optarg;
			break;
		case 'B':
			a->bps_s = optarg;
			break;
		case 'R':
			a->rate_s = optarg;
			break;
		case 'O':
			if (int_opt("create", "--disk-iops", 0,
			        STORE_DISK_IOPS_MAX, &a->iops) != 0)
				return (2);
			break;
		default:
			usage_err("create", "unknown option");
			return (2);
		}
	}
	if (optind + 1 != argc) {
		usage_err("create", "one NAME expected");
		return (2);
	}
	a->name = argv[optind];
	return (0);
}

/* The name, sizes and policies checked and parsed. */
static int
create_check(struct create_args *a, char **cause)
{
	if (store_valid_name(a->name, cause) != 0 ||
	    hb_parse_size("--disk", a->disk_s, &a->disk, cause) != 0 ||
	    hb_parse_size(a->home_s ? "--home" : "--disk",
	        a->home_s ? a->home_s : a->disk_s, &a->home_sz, cause) != 0 ||
	    hb_parse_size("--memory", a->mem_s, &a->mem, cause) != 0 ||
	    policy_parse("--allow", a->allow, &a->al, cause) != 0 ||
	    policy_parse("--approve", a->approve, &a->ap, cause) != 0 ||
	    (a->net_allow != NULL &&
	        net_allow_check(a->net_allow, 0, NULL, cause) != 0) ||
	    (a->idle_s != NULL &&
	        hb_parse_duration("--idle-save", a->idle_s, AGENT_IDLE_SAVE_MIN,
	            AGENT_IDLE_SAVE_MAX, &a->idle_save, cause) != 0) ||
	    (a->cpu_s != NULL &&
	        limits_parse_cpu("--cpu-limit", a->cpu_s, (int)a->cpus,
	            &a->cpu_milli, cause) != 0) ||
	    (a->bps_s != NULL &&
	        hb_parse_size("--disk-bps", a->bps_s, &a->bps, cause) != 0) ||
	    (a->rate_s != NULL &&
	        hb_parse_size("--net-rate", a->rate_s, &a->rate, cause) != 0))
		return (-1);
	if (a->rate > STORE_DISK_BPS_MAX) {
		*cause = hb_fmt("invalid --net-rate '%s': at most 1T (a "
		                "second)",
		    a->rate_s);
		return (-1);
	}
	if (a->bps > STORE_DISK_BPS_MAX) {
		*cause = hb_fmt("invalid --disk-bps '%s': at most 1T (a "
		                "second)",
		    a->bps_s);
		return (-1);
	}
	if (a->net_allow != NULL && strcmp(a->net, "none") == 0) {
		*cause = hb_fmt("--net-allow opens exceptions to --net "
		                "internet: not with --net none");
		return (-1);
	}
	if ((a->al_s = policy_format(&a->al)) == NULL ||
	    (a->ap_s = policy_format(&a->ap)) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (a->mem < (256LL << 20)) {
		*cause = hb_fmt("invalid memory '%s': at least 256M", a->mem_s);
		return (-1);
	}
	if (a->home_sz < (64LL << 20)) {
		*cause = hb_fmt("invalid home disk size: at least 64M");
		return (-1);
	}
	return (0);
}

static void
create_note(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
	fflush(stdout);
}

static int
cmd_create(int argc, char **argv)
{
	struct create_args a = { 0 };
	struct desk_create_opts o = { .notes = { create_note, NULL } };
	struct desk_create_res r = { 0 };
	struct desk_err e = { 0 };
	const char *env = getenv("BUREAU_WARM");
	char *cause = NULL, *host = NULL;
	int rc;

	if ((rc = create_parse(argc, argv, &a)) != 0)
		return (rc);
	if (create_check(&a, &cause) != 0)
		goto fail;
	if ((host = host_pick(a.host_opt, &cause)) == NULL)
		goto fail;
	/* on another machine: made there, by the bureau there */
	if ((rc = remote_host(host, &cause)) < 0)
		goto fail;
	if (rc > 0) {
		rc = remote_create(argc, argv, host, a.name);
		goto out;
	}
	o.name = a.name;
	o.image = a.image_opt;
	o.host = host;
	o.disk = a.disk;
	o.home = a.home_sz;
	o.memory = a.mem;
	o.cpus = (int)a.cpus;
	o.net = a.net;
	o.net_allow = a.net_allow;
	o.allow = a.allow;
	o.approve = a.approve;
	o.approve_timeout = a.approve_timeout;
	o.idle_save = a.idle_save;
	o.max_forks = (int)a.max_forks;
	o.cpu_milli = a.cpu_milli;
	o.disk_bps = a.bps;
	o.disk_iops = a.iops;
	o.net_rate = a.rate;
	o.no_warm = env != NULL && strcmp(env, "0") == 0;
	if (desk_create(&o, &r, &e) != 0) {
		cause = e.cause;
		e.cause = NULL;
		goto fail;
	}
	printf("created desktop '%s': %s, home %s, memory %s, %d cpus, "
	       "ports %d-%d, network %s, host %s\n",
	    a.name, a.disk_s, a.home_s ? a.home_s : a.disk_s, a.mem_s, o.cpus,
	    r.port, r.port + 2, a.net, host);
	if (r.cloned)
		printf("cloned from the image's warm state: the first start "
		       "restores it as '%s'\n",
		    a.name);
	else
		printf("no warm state (%s): the first start boots\n",
		    r.why ? r.why : "?");
	rc = 0;
	goto out;
fail:
	die_cause("create", cause);
	rc = 1;
out:
	desk_create_res_clear(&r);
	desk_err_clear(&e);
	create_args_clear(&a);
	free(host);
	return (rc);
}

/* ---- status, ls -----------------------------------------------------------
 */

/* The backend's state, "saved (idle)" for one its host agent saved
 * while idle and serves on: the next request wakes it (malloc'd). */
static char *
state_of(const struct desktop *d, pid_t *pid)
{
	char *state, *s;

	/* on another machine: its agent's word, if it answers */
	if ((state = op_remote_state(d)) != NULL) {
		*pid = 0;
		return (state);
	}
	state = vm_backend_for(d)->state(d, pid);

	if (state != NULL && strcmp(state, "saved") == 0 &&
	    store_agent_pid(d) > 0 && (s = strdup("saved (idle)")) != NULL) {
		free(state);
		state = s;
	}
	return (state);
}

static void
uptime_str(const struct desktop *d, pid_t pid, char *buf, size_t len)
{
	struct stat st;
	char *p = desktop_path(d, "qemu.pid");

	if (pid == 0 || p == NULL || stat(p, &st) != 0) {
		snprintf(buf, len, "-");
	} else {
		long s = (long)(time(NULL) - st.st_mtime);
		if (s >= 86400)
			snprintf(buf, len, "%ldd%02ldh", s / 86400,
			    s % 86400 / 3600);
		else
			snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600,
			    s % 3600 / 60, s % 60);
	}
	free(p);
}

/*
 * The host agent's part of `status`: its pid while it runs, else how the
 * last run ended (exit.json, written by the agent), or that the agent
 * itself was killed (run.json left behind: its QEMU went with it).
 */
static void
vm_agent_status(const struct desktop *d, pid_t qemu)
{
	pid_t agent = store_agent_pid(d);
	char *rp = desktop_path(d, "run.json"),
	     *ep = desktop_path(d, "exit.json");
	json_t *e = NULL;

	/* a start that had to boot says so where the user looks, not only
	 * in a log */
	if (rp != NULL && (e = json_load_file(rp, 0, NULL)) != NULL &&
	    json_is_string(json_object_get(e, "restore_failed")))
		printf("last start: booted instead of restoring its saved "
		       "state (%s): the programs it ran were gone\n",
		    json_string_value(json_object_get(e, "restore_failed")));
	json_decref(e);
	e = NULL;
	if (agent != 0) {
		printf("agent pid: %d\n", (int)agent);
		if (qemu == 0 && vm_backend_for(d)->saved(d))
			printf("agent: serves on; it saved the desktop while "
			       "idle, and the next request restores it\n");
		else if (qemu == 0)
			printf("agent: its qemu has ended; the agent is "
			       "exiting\n");
	} else if (qemu != 0) {
		printf("agent: not running (its VM runs on: bureau start "
		       "adopts it, bureau stop saves it)\n");
	} else if (rp != NULL && access(rp, F_OK) == 0) {
		printf("last exit: the host agent ended without cleaning up "
		       "(killed?), and its qemu has ended since\n");
	} else if (ep != NULL && (e = json_load_file(ep, 0, NULL)) != NULL) {
		time_t t = (time_t)json_number_value(
		    json_object_get(e, "time"));
		char when[32];

		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("last exit: %s (%s, seen by the host agent)\n",
		    json_string_value(json_object_get(e, "how")) ?: "?", when);
	}
	json_decref(e);
	free(rp);
	free(ep);
}

static int
cmd_status(int argc, char **argv)
{
	struct desktop *d = NULL;
	char *cause = NULL, *state, *ap, *accel;
	char up[32], sys[16], home[16];
	pid_t pid;

	if (argc != 2) {
		usage_err("status", "one NAME expected");
		return (2);
	}
	if (desktop_load(argv[1], &d, &cause) != 0) {
		die_cause("status", cause);
		return (1);
	}
	if (d->attached) {
		attached_status(d);
		desktop_free(d);
		return (0);
	}
	state = state_of(d, &pid);
	uptime_str(d, pid, up, sizeof up);
	hb_human(sys, sizeof sys, desktop_file_bytes(d, "system.qcow2"));
	hb_human(home, sizeof home, desktop_file_bytes(d, "home.qcow2"));
	ap = desktop_path(d, "accel");
	accel = ap ? hb_read_file(ap) : NULL;
	printf("name: %s\nstate: %s\nhost: %s\n", d->name,
	    state ? state : "unknown", desktop_host(d));
	if (pid != 0)
		printf("pid: %d\naccel: %s\nuptime: %s\n", (int)pid,
		    accel ? accel : "?", up);
	vm_agent_status(d, pid);
	if (host_is_local(d->host) && d->remote_dir == NULL) {
		json_t *l = json_pack("{s:o}", "limits",
		    limits_json(d, pid > 0 ? pid : 0));

		if (l != NULL)
			print_limits(l);
		json_decref(l);
	}
	if (state != NULL && strncmp(state, "saved", 5) == 0) {
		char ram[16], dev[16];
		hb_human(ram, sizeof ram, desktop_file_bytes(d, "ram"));
		hb_human(dev, sizeof dev,
		    desktop_file_bytes(d,
		        host_is_local(d->host) ? "state" : "lv.state"));
		printf("saved state: RAM file %s on disk (sparse, %ldM "
		       "virtual), device state %s\n",
		    ram, d->memory, dev);
	}
	printf("endpoint: tcp://127.0.0.1:%d\nevents: tcp://127.0.0.1:%d\n"
	       "vnc: unix:%s/vnc.sock\nmemory: %ldM\ncpus: %d\n"
	       "disk: system %s, home %s\nimage: %s\ndir: %s\n",
	    d->port, d->port + 1, d->dir, d->memory, d->cpus, sys, home,
	    d->image, d->dir);
	free(ap);
	free(accel);
	free(state);
	desktop_free(d);
	return (0);
}

/* `ls` samples every running VM's CPU time once before it prints, so
 * one 200 ms wait serves all rows. */
static int
ls_prime(const char *name, void *arg)
{
	struct desktop *d;
	struct vm_stats st;
	char *cause = NULL;
	int *running = arg;

	if (desktop_load(name, &d, &cause) != 0) {
		free(cause);
		return (0);
	}
	if (!d->attached && vm_backend_for(d)->stats(d, &st) == 0 &&
	    st.pid != 0) {
		vm_cpu_percent(d->name, st.pid, st.cpu_ns);
		(*running)++;
	}
	desktop_free(d);
	return (0);
}

static int
ls_one(const char *name, void *arg)
{
	struct desktop *d;
	struct vm_stats st = { 0, -1, -1, -1 };
	char *cause = NULL, *state;
	char up[32], disk[16], ep[160], cpu[16], mem[16], guest[48];
	int *count = arg;
	double pct = -1;
	pid_t pid;

	if (desktop_load(name, &d, &cause) != 0) {
		printf("%-16s %-8s %s\n", name, "broken", cause);
		free(cause);
		return (0);
	}
	if (d->attached) {
		attached_ls_row(d);
		desktop_free(d);
		(*count)++;
		return (0);
	}
	state = state_of(d, &pid);
	uptime_str(d, pid, up, sizeof up);
	if (vm_backend_for(d)->stats(d, &st) == 0 && st.pid != 0)
		pct = vm_cpu_percent_now(d, &st);
	hb_human(disk, sizeof disk, st.disk_bytes);
	if (pct >= 0)
		snprintf(cpu, sizeof cpu, "%.0f%%", pct);
	else
		snprintf(cpu, sizeof cpu, "-");
	if (st.memory_bytes >= 0)
		hb_human(mem, sizeof mem, st.memory_bytes);
	else
		snprintf(mem, sizeof mem, "-");
	if (state != NULL && strcmp(state, "running") == 0)
		ls_guest(d, guest, sizeof guest);
	else
		snprintf(guest, sizeof guest, "-");
	/* (the endpoint is the last column: a fork's mark goes after it) */
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d%s%s%s", d->port,
	    d->fork_of ? "  fork of " : "", d->fork_of ? d->fork_of : "",
	    d->ephemeral ? ", ephemeral" : "");
	printf(LS_ROW, d->name, state ? state : "?", desktop_host(d), up, cpu,
	    mem, disk, guest, ep);
	free(state);
	desktop_free(d);
	(*count)++;
	return (0);
}

static int
cmd_ls(int argc, char **argv)
{
	int count = 0, running = 0;

	(void)argv;
	if (argc != 1) {
		usage_err("ls", "no arguments expected");
		return (2);
	}
	store_each(ls_prime, &running);
	if (running > 0)
		usleep(200000);
	printf(LS_ROW, "NAME", "STATE", "HOST", "UPTIME", "CPU", "MEM", "DISK",
	    "GUEST LOAD, MEM", "ENDPOINT");
	store_each(ls_one, &count);
	return (0);
}

/* ---- rm -------------------------------------------------------------------
 */

static int
cmd_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct desk_err e = { 0 };
	int force = 0, c;
	char *cause = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		if (c != 'f') {
			usage_err("rm", "unknown option");
			return (2);
		}
		force = 1;
	}
	if (optind + 1 != argc) {
		usage_err("rm", "one NAME expected");
		return (2);
	}
	if (desk_rm(argv[optind], force, &e) != 0) {
		cause = e.cause;
		goto fail;
	}
	printf("removed desktop '%s'\n", argv[optind]);
	return (0);
fail:
	die_cause("rm", cause);
	return (1);
}

/* ---- console
 * ----------------------------------------------------------------- */

static int
cmd_console(int argc, char **argv)
{
	long lines = 100;
	int follow = 0, c;
	struct desktop *d = NULL;
	char *cause = NULL, *log, n[24];

	optind = 1;
	while ((c = getopt(argc, argv, "fn:")) != -1) {
		switch (c) {
		case 'f':
			follow = 1;
			break;
		case 'n':
			if (int_opt("console", "-n", 1, 1000000, &lines) != 0)
				return (2);
			break;
		default:
			usage_err("console", "unknown option");
			return (2);
		}
	}
	if (optind + 1 != argc) {
		usage_err("console", "one NAME expected");
		return (2);
	}
	if (desktop_load(argv[optind], &d, &cause) != 0 ||
	    attached_refuse(d, "console", &cause) != 0) {
		die_cause("console", cause);
		desktop_free(d);
		return (1);
	}
	log = desktop_path(d, "console.log");
	snprintf(n, sizeof n, "%ld", lines);
	desktop_free(d);
	if (log == NULL || access(log, R_OK) != 0) {
		fprintf(stderr,
		    "bureau console: no console log yet (start "
		    "the desktop)\n");
		free(log);
		return (1);
	}
	/* The guest writes the console: its text goes through safeprint,
	 * never straight to the terminal. tail(1) still does the following
	 * (-F: across a restart's new log), into a pipe. */
	int fds[2];
	fflush(stdout);
	if (pipe(fds) != 0) {
		fprintf(stderr, "bureau console: cannot make a pipe: %s\n",
		    strerror(errno));
		free(log);
		return (1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bureau console: cannot fork: %s\n",
		    strerror(errno));
		close(fds[0]);
		close(fds[1]);
		free(log);
		return (1);
	}
	if (pid == 0) {
		char *targv[] = { "tail", "-n", n, follow ? "-F" : log, log,
			NULL };
		if (!follow)
			targv[4] = NULL;
		close(fds[0]);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		close(fds[1]);
		execvp("tail", targv);
		fprintf(stderr, "bureau console: cannot run 'tail': %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	free(log);
	struct sp_state st = { .style = SP_PLAIN };
	char buf[8192];
	ssize_t got;
	while ((got = read(fds[0], buf, sizeof buf)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		sp_write(&st, stdout, buf, (size_t)got);
		if (fflush(stdout) != 0)
			break; /* a closed pipe (| head): stop */
	}
	sp_flush(&st, stdout);
	fflush(stdout);
	close(fds[0]);
	int status = 0;
	if (got != 0)
		kill(pid, SIGTERM);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return (got == 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

const struct cli_cmd cli_desktop_cmds[] = {
	{ "image",
	    "image build [--minimal] [--out DIR] [--deb PATH] "
	    "[--cache DIR] [--rebuild] | image warm [DIR] [--memory 4G] "
	    "[--cpus 2] [--disk 20G] [--home SIZE]",
	    image_main },
	{ "create",
	    "create NAME [--disk 20G] [--home SIZE] [--memory 4G] "
	    "[--cpus 2] [--image DIR] [--net internet|none] [--net-allow LIST] "
	    "[--allow LIST] "
	    "[--approve LIST] [--approve-timeout S] [--idle-save DURATION] "
	    "[--max-forks N] [--cpu-limit CORES] [--disk-bps SIZE] "
	    "[--disk-iops N] [--net-rate SIZE] [--host HOST|auto]",
	    cmd_create },
	{ "start",
	    "start NAME [--timeout S] [--accel auto|kvm|tcg] "
	    "[--no-wait] | start --all",
	    cmd_start },
	{ "stop", "stop NAME [--timeout S] [--shutdown | --force] | stop --all",
	    cmd_stop },
	{ "fork",
	    "fork NAME NEW [--ephemeral] [--net internet|none] "
	    "[--net-allow LIST] [--allow LIST] [--approve LIST] [--timeout S]",
	    cmd_fork },
	{ "pause", "pause NAME", cmd_pause },
	{ "resume", "resume NAME", cmd_resume },
	{ "status", "status NAME", cmd_status },
	{ "ls", "ls", cmd_ls },
	{ "rm", "rm [--force] NAME", cmd_rm },
	{ "snapshot", "snapshot NAME [TAG]   (no TAG: list)", cmd_snapshot },
	{ "restore", "restore [--discard-saved] NAME TAG", cmd_restore },
	{ "console", "console [-f] [-n LINES] NAME", cmd_console },
	{ "host", "host add NAME URI | host ls | host rm NAME | host probe URI",
	    cmd_host },
	{ "move", "move NAME --to HOST", cmd_move },
	{ "send",
	    "send NAME   (a stopped desktop as a tar stream on stdout: one "
	    "end of move between machines)",
	    cmd_send },
	{ "receive",
	    "receive NAME --host HOST   (a desktop from stdin: the other "
	    "end)",
	    cmd_receive },
	{ "remote-forward",
	    "remote-forward NAME   (the SSH forwards of a desktop on another "
	    "machine; create and start run it)",
	    cmd_remote_forward },
	{ NULL, NULL, NULL },
};
