/*
 * host-bridge/agent/agent_fork.c: `{"tool":"system","action":"fork"}` from
 * the agent loop (DESIGN.md, "Forks"): the host agent, the owner of its
 * desktop's VM, forks it itself (agent_life.c, the same step as the
 * operator's `bureau fork`: the same lock, checks and messages), starts
 * the fork through the lifecycle library, and hands the agent loop the
 * fork's endpoint and agent token.
 *
 * A fork costs the host a desktop, so it is the operator's to allow: it is
 * served only where the desktop's --allow names the class fork (or
 * system.fork, or system); with no allow list, where every other tool is
 * allowed, it is refused, saying how to allow it. --approve fork makes
 * each wait for an operator's decision, as any request (agent_endpoint.c).
 * A fork asked for this way is ephemeral unless the request says
 * "ephemeral": false (a throwaway twin is what an agent asks for; a
 * desktop that outlives it is the operator's to keep), and has the
 * parent's policy and network, or "net": "none".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/util/util.h"

/* How long the fork's start may take (a restore). */
#define AG_FORK_S 300

/* The fork started: its endpoint and agent token into the reply. */
static char *
ag_fork_started(json_t *id, const char *name, int eph, const char **err)
{
	char *tp = store_dir(name, "token"), *ep = store_dir(name, "endpoint");
	char *tok = tp ? hb_read_file(tp) : NULL;
	char *url = ep ? hb_read_file(ep) : NULL, *reply;

	if (tok == NULL || url == NULL) {
		reply = ag_refuse(err, id, BUREAU_EIO,
		    "the fork '%s' was made but its token or endpoint cannot "
		    "be read",
		    name);
	} else {
		url[strcspn(url, "\r\n")] = '\0';
		tok[strcspn(tok, "\r\n")] = '\0';
		reply = ag_dump(json_pack("{s:O?, s:b, s:s, s:s, s:s, s:b}",
		    "id", id, "ok", 1, "name", name, "endpoint", url, "token",
		    tok, "ephemeral", eph));
		if (reply == NULL)
			reply = ag_refuse(err, id, BUREAU_EINTERNAL,
			    "out of memory");
	}
	if (tok != NULL)
		sodium_memzero(tok, strlen(tok));
	free(tok);
	free(url);
	free(tp);
	free(ep);
	return (reply);
}

/* The request's fields: 0, or the refusal's reply in *reply. */
static int
ag_fork_args(struct agent *ag, json_t *id, json_t *req,
    struct desk_fork_opts *o, char **name, char **reply, const char **err)
{
	json_t *jeph = json_object_get(req, "ephemeral");
	json_t *jname = json_object_get(req, "name");
	json_t *jnet = json_object_get(req, "net");
	char *cause = NULL, *suffix;

	if (jeph != NULL && !json_is_boolean(jeph)) {
		*reply = ag_refuse(err, id, BUREAU_EINVAL,
		    "field 'ephemeral' must be true or false (default true)");
		return (-1);
	}
	o->ephemeral = jeph == NULL || json_is_true(jeph);
	if (jnet != NULL &&
	    (!json_is_string(jnet) ||
	        (strcmp(json_string_value(jnet), "none") != 0 &&
	            strcmp(json_string_value(jnet), "internet") != 0))) {
		*reply = ag_refuse(err, id, BUREAU_EINVAL,
		    "field 'net' must be \"none\" or \"internet\"");
		return (-1);
	}
	o->net = jnet ? json_string_value(jnet) : NULL;
	/* a fork may narrow its parent's network, never widen it */
	if (o->net != NULL && strcmp(o->net, "internet") == 0 &&
	    ag->d->net_none) {
		*reply = ag_refuse(err, id, BUREAU_EPERM,
		    "desktop '%s' has no network (--net none): its fork "
		    "cannot have one",
		    ag->d->name);
		return (-1);
	}
	if (jname != NULL) {
		if (!json_is_string(jname) ||
		    store_valid_name(json_string_value(jname), &cause) != 0) {
			*reply = ag_refuse(err, id, BUREAU_EINVAL,
			    "field 'name': %s",
			    cause ? cause : "must be a string");
			free(cause);
			return (-1);
		}
		*name = strdup(json_string_value(jname));
	} else if ((suffix = hb_random_hex(3)) != NULL) {
		*name = hb_fmt("%.48s-fork-%s", ag->d->name, suffix);
		free(suffix);
		/* a DNS label, whatever the parent's older name holds
		 * (uppercase, '_', '.') */
		for (char *c = *name; c != NULL && *c != '\0'; c++)
			*c = (*c >= 'A' && *c <= 'Z') ? (char)(*c - 'A' + 'a') :
			    ((*c >= 'a' && *c <= 'z') ||
			        (*c >= '0' && *c <= '9')) ?
			                                *c :
			                                '-';
		while (*name != NULL && (*name)[0] == '-')
			memmove(*name, *name + 1, strlen(*name));
	}
	if (*name == NULL) {
		*reply = ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory");
		return (-1);
	}
	o->newname = *name;
	o->by_agent = 1;
	return (0);
}

char *
ag_fork(struct agent *ag, json_t *id, json_t *req, const char **err)
{
	struct desk_fork_opts o = { 0 };
	struct desk_start_opts so = { .timeout_s = AG_FORK_S };
	struct desk_fork_res fr = { 0 };
	struct desk_start_res sr = { 0 };
	struct desk_err e = { 0 };
	char *name = NULL, *reply = NULL;
	int allowed;

	pthread_mutex_lock(&ag->lock);
	allowed = ag->allow.n > 0; /* (ag_authorize matched it) */
	pthread_mutex_unlock(&ag->lock);
	if (!allowed) {
		reply = ag_refuse(err, id, BUREAU_EPERM,
		    "a fork of desktop '%s' is the operator's to allow: its "
		    "policy must name the class 'fork' (bureau policy %s "
		    "--allow ...,fork)",
		    ag->d->name, ag->d->name);
		goto out;
	}
	if (ag_fork_args(ag, id, req, &o, &name, &reply, err) != 0)
		goto out;
	fprintf(stderr, "bureau agent: the agent asked for a fork: %s\n", name);
	if (ag_life_fork(ag, &o, &fr, &e) != 0) {
		/* the operator's limits refuse it; a failure says so */
		if (e.code == DESK_EQUOTA || e.code == DESK_ENOTAPPLY)
			reply = ag_refuse(err, id, BUREAU_EPERM, "%s",
			    e.cause ? e.cause : "?");
		else
			reply = ag_refuse(err, id,
			    e.code == DESK_EINVAL    ? BUREAU_EINVAL :
			        e.code == DESK_EBUSY ? BUREAU_EBUSY :
			                               BUREAU_EIO,
			    "the fork of desktop '%s' failed: %s", ag->d->name,
			    e.cause ? e.cause : "?");
		goto out;
	}
	if (desk_start(name, &so, &sr, &e) != 0) {
		if (o.ephemeral)
			desk_discard(name);
		reply = ag_refuse(err, id, BUREAU_EIO,
		    "the fork '%s' of desktop '%s' did not start: %s%s", name,
		    ag->d->name, e.cause ? e.cause : "?",
		    o.ephemeral ? " (discarded it)" : "");
		goto out;
	}
	reply = ag_fork_started(id, name, o.ephemeral, err);
out:
	desk_err_clear(&e);
	desk_fork_res_clear(&fr);
	desk_start_res_clear(&sr);
	free(name);
	return (reply);
}
