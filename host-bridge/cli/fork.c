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

#include "host-bridge/agent/policy.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/operator.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

struct fork_args {
	const char *name, *newname, *net, *net_allow, *allow, *approve;
	const char *timeout;
	int ephemeral;
	char *al_s, *ap_s;
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

/* One policy list: the option's, checked and formatted, else the
 * parent's as desktop.json holds it. */
static int
fork_policy(const char *what, const char *opt, json_t *cfg, const char *key,
    char **out, char **cause)
{
	struct policy_list l = { 0 };
	int rv = -1;

	if (opt == NULL) {
		const char *p = json_string_value(json_object_get(cfg, key));
		*out = strdup(p ? p : "");
		if (*out == NULL)
			*cause = hb_fmt("out of memory");
		return (*out ? 0 : -1);
	}
	if (policy_parse(what, opt, &l, cause) == 0 &&
	    (*out = policy_format(&l)) != NULL)
		rv = 0;
	else if (*cause == NULL)
		*cause = hb_fmt("out of memory");
	policy_list_clear(&l);
	return (rv);
}

/*
 * NEW's desktop.json: the parent's, with NEW's name and ports, the
 * network and policy of the command line where it gives them, and what
 * it is a fork of. Not the parent's takeover, nor an idle save for an
 * ephemeral fork (a save would keep what is to be discarded).
 */
static int
fork_config(const struct desktop *c, json_t *pcfg, const struct fork_args *a,
    char **cause)
{
	json_t *cfg = json_deep_copy(pcfg);
	const char *net = a->net ?
	    a->net :
	    json_string_value(json_object_get(pcfg, "net"));
	const char *nal = a->net_allow ? a->net_allow :
	    a->net                     ? NULL :
	             json_string_value(json_object_get(pcfg, "net_allow"));
	char *s = NULL, *p = NULL;
	int rv = -1;

	if (cfg == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	json_object_del(cfg, "takeover");
	json_object_del(cfg, "net_allow");
	if (json_object_set_new(cfg, "name", json_string(c->name)) != 0 ||
	    json_object_set_new(cfg, "port", json_integer(c->port)) != 0 ||
	    json_object_set_new(cfg, "net",
	        json_string(net ? net : "internet")) != 0 ||
	    (nal != NULL &&
	        json_object_set_new(cfg, "net_allow", json_string(nal)) != 0) ||
	    json_object_set_new(cfg, "allow", json_string(a->al_s)) != 0 ||
	    json_object_set_new(cfg, "approve", json_string(a->ap_s)) != 0 ||
	    json_object_set_new(cfg, "created", json_integer(time(NULL))) !=
	        0 ||
	    json_object_set_new(cfg, "fork_of", json_string(a->name)) != 0 ||
	    json_object_set_new(cfg, "ephemeral", json_boolean(a->ephemeral)) !=
	        0 ||
	    (a->ephemeral &&
	        json_object_set_new(cfg, "idle_save", json_integer(0)) != 0) ||
	    (s = json_dumps(cfg, JSON_INDENT(2))) == NULL ||
	    (p = desktop_path(c, "desktop.json")) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	rv = hb_write_file(p, s, strlen(s), 0600, cause);
out:
	json_decref(cfg);
	free(s);
	free(p);
	return (rv);
}

/* The parent's guest token as NEW's guest-token.old: restored, NEW's
 * daemon must take its own and refuse this one (ready.c). */
static int
fork_old_token(const struct desktop *d, const struct desktop *c, char **cause)
{
	char *from = desktop_path(d, "guest-token"),
	     *to = desktop_path(c, "guest-token.old");
	char *tok = from ? hb_read_file(from) : NULL;
	int rv = -1;

	if (tok == NULL || to == NULL)
		*cause = hb_fmt("cannot read '%s': %s", from ? from : "?",
		    strerror(errno));
	else
		rv = hb_write_file(to, tok, strlen(tok), 0600, cause);
	if (tok != NULL)
		sodium_memzero(tok, strlen(tok));
	free(tok);
	free(from);
	free(to);
	return (rv);
}

/* NEW made (from pcfg, the parent's desktop.json) and the parent forked
 * into it, under the parent's lock. */
static int
fork_make(const struct fork_args *a, const struct desktop *d, json_t *pcfg,
    struct desktop *c, int *created, char **cause)
{
	const struct vm_backend *vm = vm_backend_for(d);
	struct vm_fork_info fi;
	int lka = -1, rv = -1;
	char sb[16];

	c->name = (char *)a->newname;
	c->image = d->image;
	c->memory = d->memory;
	c->cpus = d->cpus;
	/* Held until desktop.json names the ports NEW was given. */
	if (store_lock_all(&lka, cause) != 0 ||
	    create_dir(c, created, cause) != 0 ||
	    store_pick_port(&c->port, cause) != 0 ||
	    create_secrets(c, cause) != 0 ||
	    fork_config(c, pcfg, a, cause) != 0)
		goto out;
	close(lka);
	lka = -1;
	if (fork_old_token(d, c, cause) != 0 || vm->fork(d, c, &fi, cause) != 0)
		goto out;
	hb_human(sb, sizeof sb, fi.state_bytes);
	printf("forked desktop '%s' into '%s'%s: '%s' stood still %.2f s; "
	       "disks shared copy-on-write, a state of %s (%zu pages of RAM "
	       "beside the warm state's%s)\n",
	    d->name, c->name, a->ephemeral ? " (ephemeral)" : "", d->name,
	    fi.paused_ms / 1000.0, sb, fi.ram_pages,
	    fi.ram_copied ? "; its RAM file copied" : "");
	fflush(stdout);
	rv = 0;
out:
	if (lka >= 0)
		close(lka);
	return (rv);
}

int
cmd_fork(int argc, char **argv)
{
	const struct vm_backend *vm = NULL;
	struct fork_args a = { 0 };
	struct desktop *d = NULL, c = { 0 };
	char *cause = NULL, *pj = NULL;
	json_t *pcfg = NULL;
	json_error_t jerr;
	int rc, lk = -1, created = 0;

	if ((rc = fork_parse(argc, argv, &a)) != 0)
		return (rc);
	rc = 1;
	if (store_valid_name(a.newname, &cause) != 0 ||
	    desktop_load(a.name, &d, &cause) != 0 ||
	    attached_refuse(d, "fork", &cause) != 0)
		goto fail;
	vm = vm_backend_for(d);
	if (vm->fork == NULL) {
		cause = hb_fmt("desktop '%s' is on host '%s', whose '%s' VM "
		               "backend cannot fork yet",
		    d->name, desktop_host(d), vm->name);
		goto fail;
	}
	if ((pj = desktop_path(d, "desktop.json")) == NULL ||
	    (pcfg = json_load_file(pj, 0, &jerr)) == NULL) {
		cause = hb_fmt("cannot read '%s': %s", pj ? pj : "desktop.json",
		    pj ? jerr.text : "out of memory");
		goto fail;
	}
	if (fork_policy("--allow", a.allow, pcfg, "allow", &a.al_s, &cause) !=
	        0 ||
	    fork_policy("--approve", a.approve, pcfg, "approve", &a.ap_s,
	        &cause) != 0 ||
	    (a.net_allow != NULL &&
	        net_allow_check(a.net_allow, 0, NULL, &cause) != 0))
		goto fail;
	if (a.net_allow != NULL &&
	    ((a.net != NULL && strcmp(a.net, "none") == 0) ||
	        (a.net == NULL && d->net_none))) {
		cause = hb_fmt("--net-allow opens exceptions to --net "
		               "internet: not with --net none");
		goto fail;
	}
	if (store_lock(d, "fork", &lk, &cause) != 0)
		goto fail;
	if (vm->pid(d) == 0) {
		cause = hb_fmt("desktop '%s' is not running: a fork is of a "
		               "running desktop (bureau start %s)",
		    d->name, d->name);
		goto fail;
	}
	if (fork_make(&a, d, pcfg, &c, &created, &cause) != 0)
		goto fail;
	close(lk);
	lk = -1;
	/* NEW's start: a saved desktop's, restored under its identity. */
	{
		char *sv[] = { "start", (char *)a.newname, "--timeout",
			(char *)(a.timeout ? a.timeout : "600"), NULL };
		if (cmd_start(4, sv) != 0) {
			if (a.ephemeral) {
				hb_rm_tree(c.dir);
				fprintf(stderr,
				    "bureau fork: the ephemeral fork '%s' did "
				    "not start: discarded it\n",
				    a.newname);
			} else {
				fprintf(stderr,
				    "bureau fork: '%s' is made and saved but "
				    "did not start (bureau start %s tries "
				    "again)\n",
				    a.newname, a.newname);
			}
			goto out;
		}
	}
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "bureau fork: %s\n", cause ? cause : "failed");
	if (created)
		hb_rm_tree(c.dir);
out:
	if (lk >= 0)
		close(lk);
	free(cause);
	free(pj);
	json_decref(pcfg);
	free(a.al_s);
	free(a.ap_s);
	free(c.dir);
	desktop_free(d);
	return (rc);
}
