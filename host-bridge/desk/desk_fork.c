/*
 * host-bridge/desk/desk_fork.c: a running desktop forked into a new one
 * (DESIGN.md, "Forks"). NEW is made as `create` makes a desktop (its own
 * directory, ports, agent and guest tokens, machine-id: a clone's
 * identity), with the parent's settings and policy unless the options say
 * otherwise; the VM backend forks the parent's VM into it (vm.h's fork:
 * disks shared copy-on-write, the RAM and devices as NEW's saved state).
 * The parent's host agent does this (the owner of its VM: the fork op),
 * and the caller then starts NEW (desk_start: restored, it takes its own
 * identity and answers at its own endpoint).
 *
 * --ephemeral: NEW is discarded, disks and all, when it stops; it never
 * saves (no idle save either).
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/store/policy.h"
#include "host-bridge/desk/desk_int.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

void
desk_fork_res_clear(struct desk_fork_res *r)
{
	free(r->name);
	memset(r, 0, sizeof *r);
}

json_t *
desk_fork_opts_json(const struct desk_fork_opts *o)
{
	return (json_pack("{s:s, s:b, s:s?, s:s?, s:s?, s:s?, s:b}", "name",
	    o->newname, "ephemeral", o->ephemeral, "net", o->net, "net_allow",
	    o->net_allow, "allow", o->allow, "approve", o->approve, "by_agent",
	    o->by_agent));
}

/* The string field key of req, or NULL; -1 when it is there and not a
 * string. */
static int
opt_str(json_t *req, const char *key, const char **out, struct desk_err *e)
{
	json_t *v = json_object_get(req, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return (0);
	if (!json_is_string(v))
		return (desk_fail(e, DESK_EINVAL, "field '%s' must be a string",
		    key));
	*out = json_string_value(v);
	return (0);
}

int
desk_fork_opts_of(json_t *req, struct desk_fork_opts *o, struct desk_err *e)
{
	json_t *eph = json_object_get(req, "ephemeral");

	memset(o, 0, sizeof *o);
	if (opt_str(req, "name", &o->newname, e) != 0 ||
	    opt_str(req, "net", &o->net, e) != 0 ||
	    opt_str(req, "net_allow", &o->net_allow, e) != 0 ||
	    opt_str(req, "allow", &o->allow, e) != 0 ||
	    opt_str(req, "approve", &o->approve, e) != 0)
		return (-1);
	if (o->newname == NULL)
		return (desk_fail(e, DESK_EINVAL,
		    "field 'name' must name the fork"));
	if (eph != NULL && !json_is_boolean(eph))
		return (desk_fail(e, DESK_EINVAL,
		    "field 'ephemeral' must be true or false"));
	o->ephemeral = json_is_true(eph);
	o->by_agent = json_is_true(json_object_get(req, "by_agent"));
	return (0);
}

json_t *
desk_fork_res_json(const struct desk_fork_res *r)
{
	return (json_pack("{s:b, s:s, s:I, s:I, s:I, s:b}", "ok", 1, "name",
	    r->name, "paused_ms", (json_int_t)r->paused_ms, "state_bytes",
	    (json_int_t)r->state_bytes, "ram_pages", (json_int_t)r->ram_pages,
	    "ram_copied", r->ram_copied));
}

int
desk_fork_res_of(json_t *reply, struct desk_fork_res *r)
{
	const char *n = json_string_value(json_object_get(reply, "name"));

	memset(r, 0, sizeof *r);
	if (n == NULL || (r->name = strdup(n)) == NULL)
		return (-1);
	r->paused_ms = json_integer_value(json_object_get(reply, "paused_ms"));
	r->state_bytes = json_integer_value(
	    json_object_get(reply, "state_bytes"));
	r->ram_pages = (size_t)json_integer_value(
	    json_object_get(reply, "ram_pages"));
	r->ram_copied = json_is_true(json_object_get(reply, "ram_copied"));
	return (0);
}

/* One policy list: the option's, checked and formatted, else the
 * parent's as desktop.json holds it. */
static int
fork_policy(const char *what, const char *opt, json_t *cfg, const char *key,
    char **out, struct desk_err *e)
{
	struct policy_list l = { 0 };
	char *cause = NULL;
	int rv = -1;

	if (opt == NULL) {
		const char *p = json_string_value(json_object_get(cfg, key));
		if ((*out = strdup(p ? p : "")) == NULL)
			return (desk_fail(e, DESK_EFAIL, "out of memory"));
		return (0);
	}
	if (policy_parse(what, opt, &l, &cause) == 0 &&
	    (*out = policy_format(&l)) != NULL)
		rv = 0;
	else
		desk_fail_take(e, DESK_EINVAL,
		    cause ? cause : hb_fmt("out of memory"));
	policy_list_clear(&l);
	return (rv);
}

/* What the options ask of the fork, checked against its parent. */
static int
fork_check(const struct desktop *d, const struct desk_fork_opts *o,
    struct desk_err *e)
{
	char *cause = NULL;

	if (store_valid_name(o->newname, &cause) != 0)
		return (desk_fail_take(e, DESK_EINVAL, cause));
	if (desk_check_net(o->net, o->net_allow, d->net_none, e) != 0)
		return (-1);
	/* a fork the agent loop asks for may narrow its parent's network,
	 * never widen it */
	if (o->by_agent && d->net_none && o->net != NULL &&
	    strcmp(o->net, "internet") == 0)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' has no network (--net none): its fork "
		    "cannot have one",
		    d->name));
	if (vm_backend_for(d)->fork == NULL)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is on host '%s', whose '%s' VM backend "
		    "cannot fork yet",
		    d->name, desktop_host(d), vm_backend_for(d)->name));
	return (0);
}

/*
 * NEW's desktop.json: the parent's, with NEW's name and ports, the
 * network and policy of the options where they give them, and what it is
 * a fork of. Not the parent's takeover, nor an idle save for an ephemeral
 * fork (a save would keep what is to be discarded).
 */
static json_t *
fork_config(const struct desktop *d, const struct desktop *c, json_t *pcfg,
    const struct desk_fork_opts *o, const char *al, const char *ap)
{
	json_t *cfg = json_deep_copy(pcfg);
	const char *net = o->net ? o->net : d->net_none ? "none" : "internet";
	const char *nal = o->net_allow ? o->net_allow :
	    o->net                     ? NULL :
	                                 d->net_allow;

	if (cfg == NULL)
		return (NULL);
	json_object_del(cfg, "takeover");
	json_object_del(cfg, "net_allow");
	if (json_object_set_new(cfg, "name", json_string(c->name)) != 0 ||
	    json_object_set_new(cfg, "port", json_integer(c->port)) != 0 ||
	    json_object_set_new(cfg, "net", json_string(net)) != 0 ||
	    (nal != NULL &&
	        json_object_set_new(cfg, "net_allow", json_string(nal)) != 0) ||
	    json_object_set_new(cfg, "allow", json_string(al)) != 0 ||
	    json_object_set_new(cfg, "approve", json_string(ap)) != 0 ||
	    json_object_set_new(cfg, "created", json_integer(time(NULL))) !=
	        0 ||
	    json_object_set_new(cfg, "fork_of", json_string(d->name)) != 0 ||
	    json_object_set_new(cfg, "ephemeral", json_boolean(o->ephemeral)) !=
	        0 ||
	    (o->by_agent &&
	        json_object_set_new(cfg, "agent_made", json_true()) != 0) ||
	    (o->ephemeral &&
	        json_object_set_new(cfg, "idle_save", json_integer(0)) != 0)) {
		json_decref(cfg);
		return (NULL);
	}
	return (cfg);
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

/* The allow list *al without the items that name a fork (fork,
 * system.fork), as "a,b,c" again (replaced). */
static int
fork_no_fork(char **al, struct desk_err *e)
{
	struct policy_list l = { 0 }, k = { 0 };
	char *cause = NULL, *out;

	if (policy_parse("--allow", *al, &l, &cause) != 0)
		return (desk_fail_take(e, DESK_EINVAL, cause));
	if ((k.items = calloc((size_t)l.n + 1, sizeof *k.items)) == NULL) {
		policy_list_clear(&l);
		return (desk_fail(e, DESK_EFAIL, "out of memory"));
	}
	for (int i = 0; i < l.n; i++)
		if (strcmp(l.items[i], "fork") != 0 &&
		    strcmp(l.items[i], "system.fork") != 0)
			k.items[k.n++] = l.items[i];
	out = policy_format(&k);
	free(k.items);
	policy_list_clear(&l);
	if (out == NULL)
		return (desk_fail(e, DESK_EFAIL, "out of memory"));
	free(*al);
	*al = out;
	return (0);
}

/* NEW's directory, ports, secrets and desktop.json, under the store's
 * lock until desktop.json names its ports. */
static int
fork_make_dir(const struct desktop *d, struct desktop *c,
    const struct desk_fork_opts *o, int *created, struct desk_err *e)
{
	char *pj = desktop_path(d, "desktop.json"), *cause = NULL;
	char *al = NULL, *ap = NULL;
	json_t *pcfg = NULL, *cfg = NULL;
	json_error_t jerr;
	int lka = -1, rv = -1;

	if (pj == NULL || (pcfg = json_load_file(pj, 0, &jerr)) == NULL) {
		desk_fail(e, DESK_EFAIL, "cannot read '%s': %s",
		    pj ? pj : "desktop.json", pj ? jerr.text : "out of memory");
		goto out;
	}
	if (fork_policy("--allow", o->allow, pcfg, "allow", &al, e) != 0 ||
	    fork_policy("--approve", o->approve, pcfg, "approve", &ap, e) != 0)
		goto out;
	/* a fork the agent loop made cannot fork in turn unless the
	 * operator allows it on that fork (bureau policy NEW --allow
	 * ...,fork): it does not inherit the class */
	if (o->by_agent && fork_no_fork(&al, e) != 0)
		goto out;
	if (desk_new_dir(c, &lka, created, e) != 0)
		goto out;
	if (store_secrets(c, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL, cause);
		goto out;
	}
	if ((cfg = fork_config(d, c, pcfg, o, al, ap)) == NULL) {
		desk_fail(e, DESK_EFAIL, "out of memory");
		goto out;
	}
	if (store_save(c, cfg, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL, cause);
		goto out;
	}
	rv = 0;
out:
	if (lka >= 0)
		close(lka);
	json_decref(pcfg);
	json_decref(cfg);
	free(pj);
	free(al);
	free(ap);
	return (rv);
}

int
desk_own_fork(const struct desktop *d, const struct desk_fork_opts *o,
    struct desk_fork_res *r, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	struct desktop c = { 0 };
	struct vm_fork_info fi;
	char *cause = NULL;
	int created = 0, rv = -1;

	memset(r, 0, sizeof *r);
	if (fork_check(d, o, e) != 0)
		return (-1);
	if (vm->pid(d) == 0)
		return (desk_fail(e, DESK_ENOTAPPLY,
		    "desktop '%s' is not running: a fork is of a running "
		    "desktop (bureau start %s)",
		    d->name, d->name));
	c.name = (char *)o->newname;
	c.image = d->image;
	c.memory = d->memory;
	c.cpus = d->cpus;
	if (fork_make_dir(d, &c, o, &created, e) != 0)
		goto out;
	if (fork_old_token(d, &c, &cause) != 0 ||
	    vm->fork(d, &c, &fi, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL, cause);
		goto out;
	}
	if ((r->name = strdup(o->newname)) == NULL) {
		desk_fail(e, DESK_EFAIL, "out of memory");
		goto out;
	}
	r->paused_ms = fi.paused_ms;
	r->state_bytes = fi.state_bytes;
	r->ram_pages = fi.ram_pages;
	r->ram_copied = fi.ram_copied;
	rv = 0;
out:
	if (rv != 0 && created)
		hb_rm_tree(c.dir);
	free(c.dir);
	return (rv);
}

int
desk_fork(const char *name, const struct desk_fork_opts *o,
    struct desk_fork_res *r, struct desk_err *e)
{
	struct desktop *d = NULL;
	json_t *reply = NULL;
	int rv = -1, lk = -1, own;

	memset(r, 0, sizeof *r);
	if (desk_load(name, &d, e) != 0 ||
	    desk_not_attached(d, "fork", e) != 0 || fork_check(d, o, e) != 0)
		goto out;
	if ((own = desk_owner(d, "fork", &lk, e)) < 0)
		goto out;
	if (own != DESK_BY_AGENT) {
		desk_fail(e, DESK_ENOTAPPLY,
		    own == DESK_REMOTE ?
		        "desktop '%s' is on another machine and its agent "
		        "there "
		        "does not answer: `bureau fork %s ...` forks it there" :
		        vm_backend_for(d)->pid(d) != 0 ?
		        "desktop '%s' runs without its host agent: bureau "
		        "start %s adopts it, then fork it" :
		        "desktop '%s' is not running: a fork is of a running "
		        "desktop (bureau start %s)",
		    d->name, d->name);
		goto out;
	}
	/* the owner of its VM forks it: its host agent; one an older bureau
	 * started knows no such op: forked here under the lock, as that
	 * bureau's own fork did */
	if (desk_op(d,
	        json_pack("{s:s, s:o}", "op", "fork", "fork",
	            desk_fork_opts_json(o)),
	        600000, &reply, e) != 0) {
		if (e->code != DESK_EOLDAGENT)
			goto out;
		desk_err_clear(e);
		if (desk_lock(d, "fork", &lk, e) == 0)
			rv = desk_own_fork(d, o, r, e);
		goto out;
	}
	if (desk_fork_res_of(reply, r) != 0) {
		desk_fail(e, DESK_EFAIL,
		    "the host agent of '%s' gave no fork's name", d->name);
		goto out;
	}
	rv = 0;
out:
	if (lk >= 0)
		close(lk);
	json_decref(reply);
	desktop_free(d);
	return (rv);
}

void
desk_discard(const char *name)
{
	char *dir = store_dir(name, NULL);

	if (dir != NULL)
		hb_rm_tree(dir);
	free(dir);
}
