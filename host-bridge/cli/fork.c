/*
 * host-bridge/cli/fork.c: `bureau fork NAME NEW [--ephemeral] ...`
 * (DESIGN.md, "Forks"): NEW becomes a copy of the running desktop NAME as
 * it is now, its disks, RAM, windows and processes, while NAME runs on.
 *
 * NEW is made as `create` makes a desktop (its own directory, ports, agent
 * and guest tokens, machine-id: a clone's identity), with NAME's settings
 * and policy unless the command line says otherwise; the VM backend forks
 * NAME's VM into it (vm.h's fork: disks shared copy-on-write, the RAM and
 * devices as NEW's saved state), and NEW is started as `start` starts a
 * saved desktop: restored, it takes its own identity (ready.c checks that
 * its daemon refuses NAME's guest token) and answers at its own endpoint.
 *
 * --ephemeral: NEW is discarded, disks and all, when it stops (bureau
 * stop, its guest powering off, its host agent ending); it never saves.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/life.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/util/util.h"

struct fork_args {
	const char *name, *newname, *net, *net_allow, *allow, *approve;
	const char *timeout;
	int ephemeral;
};

static int
fork_usage(const char *msg)
{
	fprintf(stderr,
	    "bureau fork: %s\nusage: bureau fork NAME NEW [--ephemeral] "
	    "[--net internet|none] [--net-allow LIST] [--allow LIST] "
	    "[--approve LIST] [--timeout S]\n",
	    msg);
	return (2);
}

static int
fork_parse(int argc, char **argv, struct fork_args *a)
{
	static const struct option opts[] = {
		{ "ephemeral", no_argument, NULL, 'e' },
		{ "net", required_argument, NULL, 'N' },
		{ "net-allow", required_argument, NULL, 'A' },
		{ "allow", required_argument, NULL, 'a' },
		{ "approve", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	long t;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			a->ephemeral = 1;
			break;
		case 'N':
			if (strcmp(optarg, "internet") != 0 &&
			    strcmp(optarg, "none") != 0)
				return (fork_usage("invalid --net: internet "
				                   "or none"));
			a->net = optarg;
			break;
		case 'A':
			a->net_allow = optarg;
			break;
		case 'a':
			a->allow = optarg;
			break;
		case 'p':
			a->approve = optarg;
			break;
		case 't': {
			char *cause = NULL;
			if (hb_parse_int("--timeout", optarg, 1, 86400, &t,
			        &cause) != 0) {
				int r = fork_usage(cause ? cause : "--timeout");
				free(cause);
				return (r);
			}
			a->timeout = optarg;
			break;
		}
		default:
			return (fork_usage("unknown option"));
		}
	}
	if (optind + 2 != argc)
		return (fork_usage("NAME and NEW expected"));
	a->name = argv[optind];
	a->newname = argv[optind + 1];
	return (0);
}

int
cmd_fork(int argc, char **argv)
{
	struct fork_args a = { 0 };
	struct desk_fork_opts o = { 0 };
	struct desk_start_opts so = { 0 };
	struct desk_fork_res r;
	struct desk_err e = { 0 };
	char sb[16];
	long t = 600;
	int rc;

	if ((rc = fork_parse(argc, argv, &a)) != 0)
		return (rc);
	if (a.timeout != NULL)
		hb_parse_int("--timeout", a.timeout, 1, 86400, &t, NULL);
	o.newname = a.newname;
	o.ephemeral = a.ephemeral;
	o.net = a.net;
	o.net_allow = a.net_allow;
	o.allow = a.allow;
	o.approve = a.approve;
	if (desk_fork(a.name, &o, &r, &e) != 0) {
		fprintf(stderr, "bureau fork: %s\n",
		    e.cause ? e.cause : "failed");
		desk_err_clear(&e);
		return (1);
	}
	hb_human(sb, sizeof sb, r.state_bytes);
	printf("forked desktop '%s' into '%s'%s: '%s' stood still %.2f s; "
	       "disks shared copy-on-write, a state of %s (%zu pages of RAM "
	       "beside the warm state's%s)\n",
	    a.name, r.name, a.ephemeral ? " (ephemeral)" : "", a.name,
	    r.paused_ms / 1000.0, sb, r.ram_pages,
	    r.ram_copied ? "; its RAM file copied" : "");
	fflush(stdout);
	desk_fork_res_clear(&r);
	/* NEW's start: a saved desktop's, restored under its identity */
	so.timeout_s = t;
	if (life_start_one(a.newname, &so) != 0) {
		if (a.ephemeral) {
			desk_discard(a.newname);
			fprintf(stderr,
			    "bureau fork: the ephemeral fork '%s' did not "
			    "start: discarded it\n",
			    a.newname);
		} else {
			fprintf(stderr,
			    "bureau fork: '%s' is made and saved but did not "
			    "start (bureau start %s tries again)\n",
			    a.newname, a.newname);
		}
		return (1);
	}
	return (0);
}
