/*
 * host-bridge/agent/agent_ops.c: the operator socket: its requests (the ops of
 * agent.h; Mission Control's own are in ops_mc.c) and the policy they
 * change.
 */
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent.h"
#include "host-bridge/agent/agent_int.h"
#include "host-bridge/agent/ops_mc.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/vm.h"

/* What ag_persist writes into desktop.json (store_update's change). */
static int
ag_persist_change(json_t *j, void *arg, char **cause)
{
	struct agent *ag = arg;
	char *al = policy_format(&ag->allow), *ap = policy_format(&ag->approve);
	int rv = 0;

	if (al == NULL || ap == NULL ||
	    json_object_set_new(j, "allow", json_string(al)) != 0 ||
	    json_object_set_new(j, "approve", json_string(ap)) != 0 ||
	    json_object_set_new(j, "approve_timeout",
	        json_integer(ag->approve_timeout)) != 0 ||
	    json_object_set_new(j, "takeover", json_boolean(ag->takeover)) !=
	        0 ||
	    (!ag->d->attached &&
	        (json_object_set_new(j, "idle_save",
	             json_integer(ag->idle_save)) != 0 ||
	            json_object_set_new(j, "max_forks",
	                json_integer(ag->d->max_forks)) != 0 ||
	            store_set_limits(j, ag->d->cpu_milli, ag->d->disk_bps,
	                ag->d->disk_iops, ag->d->net_rate) != 0)) ||
	    (ag->d->net_allow != NULL &&
	        json_object_set_new(j, "net_allow",
	            json_string(ag->d->net_allow)) != 0)) {
		*cause = hb_fmt("out of memory");
		rv = -1;
	}
	free(al);
	free(ap);
	return (rv);
}

int
ag_persist(struct agent *ag, char **cause)
{
	return (store_update(ag->d, ag_persist_change, ag, cause));
}

json_t *
ag_policy_json(struct agent *ag)
{
	char *al = policy_format(&ag->allow), *ap = policy_format(&ag->approve);
	json_t *r = json_pack("{s:b, s:s, s:s, s:I, s:s, s:I, s:i}", "ok", 1,
	    "allow", al ? al : "", "approve", ap ? ap : "", "approve_timeout",
	    (json_int_t)ag->approve_timeout, "net_allow",
	    ag->d->net_allow ? ag->d->net_allow : "", "idle_save",
	    (json_int_t)ag->idle_save, "max_forks", ag->d->max_forks);

	free(al);
	free(ap);
	if (r != NULL && !ag->d->attached)
		json_object_set_new(r, "limits",
		    limits_json(ag->d, vm_backend_for(ag->d)->pid(ag->d)));
	return (r);
}

/* A count field of a policy request that is given but not null and not
 * a whole number in 0..max. */
static int
ag_bad_count(json_t *v, long long max)
{
	return (v != NULL && !json_is_null(v) &&
	    (!json_is_integer(v) || json_integer_value(v) < 0 ||
	        json_integer_value(v) > max));
}

/* The count v (null: 0) into *out when given. */
static void
ag_take_count(json_t *v, long long *out)
{
	if (v != NULL)
		*out = json_is_integer(v) ? json_integer_value(v) : 0;
}

/*
 * The limits a policy request sets (cpu_limit in cores, 0 or null for
 * the vCPUs; disk_bps, disk_iops and net_rate, 0 or null for none)
 * checked into *out (a copy of d's): 0, 1 when it names none, or -1 with
 * *err (the reply).
 */
static int
ag_limits_take(struct agent *ag, json_t *req, struct desktop *out, char **err)
{
	json_t *c = json_object_get(req, "cpu_limit"),
	       *b = json_object_get(req, "disk_bps"),
	       *o = json_object_get(req, "disk_iops"),
	       *nr = json_object_get(req, "net_rate");
	double cores = json_is_number(c) ? json_number_value(c) : 0;
	long long iops = ag->d->disk_iops;

	*out = *ag->d;
	if (c == NULL && b == NULL && o == NULL && nr == NULL)
		return (1);
	if (ag_bad_count(nr, STORE_DISK_BPS_MAX) ||
	    (json_integer_value(nr) > 0 && ag->d->net_none)) {
		*err = ag_error(NULL, BUREAU_EINVAL,
		    ag->d->net_none ? "field 'net_rate': the desktop has --net "
		                      "none" :
		                      "field 'net_rate' must be a whole number "
		                      "of bytes a second from 0 (none) to %lld",
		    STORE_DISK_BPS_MAX);
		return (-1);
	}
	ag_take_count(nr, &out->net_rate);
	if (ag->d->attached) {
		*err = ag_error(NULL, BUREAU_EINVAL,
		    "limits: an attached desktop's VM is not bureau's");
		return (-1);
	}
	if (c != NULL && !json_is_null(c) &&
	    (!json_is_number(c) ||
	        (cores != 0 && (cores < 0.05 || cores > ag->d->cpus)))) {
		*err = ag_error(NULL, BUREAU_EINVAL,
		    "field 'cpu_limit' must be a number of cores from 0.05 "
		    "to the desktop's %d vCPUs (0 or null: all of them)",
		    ag->d->cpus);
		return (-1);
	}
	if (ag_bad_count(b, STORE_DISK_BPS_MAX) ||
	    ag_bad_count(o, STORE_DISK_IOPS_MAX)) {
		int isb = ag_bad_count(b, STORE_DISK_BPS_MAX);

		*err = ag_error(NULL, BUREAU_EINVAL,
		    "field '%s' must be a whole number from 0 (none) to %lld",
		    isb ? "disk_bps" : "disk_iops",
		    isb ? STORE_DISK_BPS_MAX : (long long)STORE_DISK_IOPS_MAX);
		return (-1);
	}
	if (c != NULL)
		out->cpu_milli = (long)(cores * 1000 + 0.5);
	ag_take_count(b, &out->disk_bps);
	ag_take_count(o, &iops);
	out->disk_iops = (long)iops;
	return (0);
}

/*
 * The limits just set, applied to the running VM under vm_op (no save,
 * fork or start changes QEMU meanwhile), with ag->lock held on entry
 * and on return: NULL, or the error reply.
 */
static char *
ag_limits_now(struct agent *ag)
{
	struct timespec until;
	char *cause = NULL, *reply;
	int rv;

	pthread_mutex_unlock(&ag->lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20; /* (within desk_config's 30 s) */
	if (pthread_mutex_timedlock(&ag->vm_op, &until) != 0) {
		rv = -1;
		cause = hb_fmt("a stop, save or fork of the VM held it for "
		               "20 s: ask again");
	} else {
		rv = vm_limits_apply(ag->d, &cause);
		pthread_mutex_unlock(&ag->vm_op);
	}
	pthread_mutex_lock(&ag->lock);
	if (rv == 0)
		return (NULL);
	reply = ag_error(NULL, BUREAU_EIO,
	    "limits saved but not applied to the running VM: %s", cause);
	free(cause);
	return (reply);
}

static char *
ag_op_policy(struct agent *ag, json_t *req)
{
	struct policy_list al = { 0 }, ap = { 0 };
	json_t *jal = json_object_get(req, "allow");
	json_t *jap = json_object_get(req, "approve");
	json_t *jto = json_object_get(req, "approve_timeout");
	json_t *jna = json_object_get(req, "net_allow");
	json_t *jis = json_object_get(req, "idle_save");
	json_t *jmf = json_object_get(req, "max_forks");
	char *cause = NULL, *reply, *na = NULL;
	struct desktop lim;
	int lim_given;

	if (jis != NULL &&
	    (!json_is_integer(jis) || ag->d->attached ||
	        (json_integer_value(jis) != 0 &&
	            (json_integer_value(jis) < AGENT_IDLE_SAVE_MIN ||
	                json_integer_value(jis) > AGENT_IDLE_SAVE_MAX))))
		return (ag_error(NULL, BUREAU_EINVAL,
		    ag->d->attached ?
		        "field 'idle_save': an attached desktop's VM is not "
		        "bureau's to save" :
		        "field 'idle_save' must be 0 (off) or a whole number "
		        "of "
		        "seconds from %d to %ld",
		    AGENT_IDLE_SAVE_MIN, AGENT_IDLE_SAVE_MAX));

	if (jmf != NULL &&
	    (!json_is_integer(jmf) || ag->d->attached ||
	        json_integer_value(jmf) < 0 ||
	        json_integer_value(jmf) > STORE_MAX_FORKS_MAX))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'max_forks' must be a whole number from 0 to %d",
		    STORE_MAX_FORKS_MAX));
	if ((jal != NULL && !json_is_string(jal)) ||
	    (jap != NULL && !json_is_string(jap)))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field '%s' must be a string (a comma-separated list)",
		    jal != NULL && !json_is_string(jal) ? "allow" : "approve"));
	if (jto != NULL &&
	    (!json_is_integer(jto) || json_integer_value(jto) < 1 ||
	        json_integer_value(jto) > 86400))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'approve_timeout' must be a whole number of seconds "
		    "from 1 to 86400"));
	if (jna != NULL &&
	    (!json_is_string(jna) || ag->d->attached || ag->d->net_none))
		return (ag_error(NULL, BUREAU_EINVAL, "%s",
		    !json_is_string(jna) ?
		        "field 'net_allow' must be a string (a comma-separated "
		        "list of CIDR or HOST[:PORT])" :
		        ag->d->attached ?
		        "field 'net_allow': an attached desktop's network is "
		        "not bureau's" :
		        "field 'net_allow': the desktop has --net none"));
	if (jna != NULL &&
	    (net_allow_check(json_string_value(jna), 0, NULL, &cause) != 0 ||
	        (na = strdup(json_string_value(jna))) == NULL)) {
		reply = ag_error(NULL, BUREAU_EINVAL, "%s",
		    cause ? cause : "out of memory");
		free(cause);
		return (reply);
	}
	if ((lim_given = ag_limits_take(ag, req, &lim, &reply)) < 0) {
		free(na);
		return (reply);
	}
	if ((jal != NULL &&
	        policy_parse("allow", json_string_value(jal), &al, &cause) !=
	            0) ||
	    (jap != NULL &&
	        policy_parse("approve", json_string_value(jap), &ap, &cause) !=
	            0)) {
		policy_list_clear(&al);
		free(na);
		reply = ag_error(NULL, BUREAU_EINVAL, "%s", cause);
		free(cause);
		return (reply);
	}
	pthread_mutex_lock(&ag->lock);
	if (jal != NULL) {
		policy_list_clear(&ag->allow);
		ag->allow = al;
	}
	if (jap != NULL) {
		policy_list_clear(&ag->approve);
		ag->approve = ap;
	}
	if (jto != NULL)
		ag->approve_timeout = (long)json_integer_value(jto);
	if (jmf != NULL)
		ag->d->max_forks = (int)json_integer_value(jmf);
	if (jis != NULL) {
		ag->idle_save = (long)json_integer_value(jis);
		ag->active_ms = hb_now_ms(); /* counted from now */
	}
	if (jna != NULL) {
		free(ag->d->net_allow);
		ag->d->net_allow = na;
	}
	if (lim_given == 0) {
		ag->d->cpu_milli = lim.cpu_milli;
		ag->d->disk_bps = lim.disk_bps;
		ag->d->disk_iops = lim.disk_iops;
		ag->d->net_rate = lim.net_rate;
	}
	if ((jal != NULL || jap != NULL || jto != NULL || jna != NULL ||
	        jis != NULL || jmf != NULL || lim_given == 0) &&
	    ag_persist(ag, &cause) != 0) {
		/* Applied, but it would not survive a restart: say so. */
		pthread_mutex_unlock(&ag->lock);
		reply = ag_error(NULL, BUREAU_EIO,
		    "policy applied but not saved: %s", cause);
		free(cause);
		return (reply);
	}
	/* the guest's network takes it now (the keeper reloads its
	 * rules; names are resolved there and then) */
	if (jna != NULL && vm_net_reload(ag->d, &cause) != 0) {
		pthread_mutex_unlock(&ag->lock);
		reply = ag_error(NULL, BUREAU_EINVAL,
		    "net_allow saved but not applied: %s", cause);
		free(cause);
		return (reply);
	}
	/* the running VM takes them now */
	if (lim_given == 0 && (reply = ag_limits_now(ag)) != NULL) {
		pthread_mutex_unlock(&ag->lock);
		return (reply);
	}
	reply = ag_dump(ag_policy_json(ag));
	pthread_mutex_unlock(&ag->lock);
	return (reply);
}

/* {"op":"state"}: the policy, the takeover, what waits, where. */
static char *
ag_op_state(struct agent *ag)
{
	json_t *r;

	pthread_mutex_lock(&ag->lock);
	r = ag_policy_json(ag);
	if (r != NULL) {
		json_object_set_new(r, "desktop", json_string(ag->d->name));
		json_object_set_new(r, "takeover", json_boolean(ag->takeover));
		json_object_set_new(r, "pending", json_integer(ag->pending));
		json_object_set_new(r, "endpoint", json_string(ag->ep_url));
		json_object_set_new(r, "pid", json_integer(getpid()));
		/* the VM as its agent sees it: a desktop on another machine
		 * shows this (vm/remote.c) */
		json_object_set_new(r, "vm",
		    json_string(ag->vm == AG_VM_SAVED ? "saved" :
		            ag->vm == AG_VM_SAVING    ? "saving" :
		            ag->vm == AG_VM_WAKING    ? "waking" :
		            ag->vm == AG_VM_STOPPED   ? "stopped" :
		                                        "running"));
	}
	pthread_mutex_unlock(&ag->lock);
	return (ag_dump(r));
}

/* ---- the audit trail, for an operator on another machine ------------- */

/* The lines {"op":"log"} keeps: seq > since, the last max. */
struct op_log {
	long long since;
	size_t max;
	json_t *list;
};

static int
ag_op_log_line(json_t *j, void *arg)
{
	struct op_log *t = arg;

	if (json_integer_value(json_object_get(j, "seq")) > t->since) {
		json_array_append(t->list, j);
		if (json_array_size(t->list) > t->max)
			json_array_remove(t->list, 0);
	}
	return (0);
}

#define AG_LOG_MAX 1000

/* {"op":"log","since":N,"max":M}: the audit trail's lines after seq N
 * (0: from the first), the last M (1 to 1000; 200 unless said). Mission
 * Control on the machine of a desktop's record reads a trail kept on
 * another machine so, through the forwarded socket (cli/remote.c). */
static char *
ag_op_log(struct agent *ag, json_t *req)
{
	json_t *js = json_object_get(req, "since"),
	       *jm = json_object_get(req, "max");
	struct op_log t = { 0, 200, NULL };

	if (js != NULL && (!json_is_integer(js) || json_integer_value(js) < 0))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'since' must be a sequence number (0 or more)"));
	if (jm != NULL &&
	    (!json_is_integer(jm) || json_integer_value(jm) < 1 ||
	        json_integer_value(jm) > AG_LOG_MAX))
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'max' must be a whole number from 1 to %d",
		    AG_LOG_MAX));
	if (js != NULL)
		t.since = json_integer_value(js);
	if (jm != NULL)
		t.max = (size_t)json_integer_value(jm);
	if ((t.list = json_array()) == NULL)
		return (ag_error(NULL, BUREAU_EINTERNAL, "out of memory"));
	audit_log_each(ag->d->dir, ag_op_log_line, &t);
	return (ag_dump(json_pack("{s:b, s:o}", "ok", 1, "lines", t.list)));
}

/* A screenshot of the trail, as the "screenshot" of its line names it:
 * digits and letters, '.', '-', '_', nothing else. */
#define AG_SHOT_MAX (32L << 20)

/* {"op":"shot","file":"N.png"}: a settled screenshot of the audit trail
 * (audit/N.png), base64, for the same operators as "log". */
static char *
ag_op_shot(struct agent *ag, json_t *req)
{
	const char *f = json_string_value(json_object_get(req, "file"));
	char *p = NULL, *b64 = NULL, *reply;
	unsigned char *buf = NULL;
	size_t n = 0, blen;
	struct stat st = { 0 };
	FILE *fp;

	if (f == NULL || *f == '\0' || *f == '.' || strlen(f) > 64 ||
	    f[strspn(f,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789._-")] != '\0')
		return (ag_error(NULL, BUREAU_EINVAL,
		    "field 'file' must name a screenshot of the audit trail "
		    "(such as 12.png)"));
	if ((p = hb_fmt("%s/audit/%s", ag->d->dir, f)) == NULL ||
	    (fp = fopen(p, "re")) == NULL) {
		free(p);
		return (ag_error(NULL, BUREAU_ENOTFOUND,
		    "no screenshot '%s' in the audit trail", f));
	}
	free(p);
	if (fstat(fileno(fp), &st) == 0 && st.st_size < AG_SHOT_MAX &&
	    (buf = malloc((size_t)st.st_size + 1)) != NULL)
		n = fread(buf, 1, (size_t)st.st_size + 1, fp);
	fclose(fp);
	blen = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
	if (buf == NULL || n != (size_t)st.st_size ||
	    (b64 = malloc(blen)) == NULL) {
		free(buf);
		return (ag_error(NULL, BUREAU_EINTERNAL,
		    "screenshot '%s': unreadable, too large or out of memory",
		    f));
	}
	sodium_bin2base64(b64, blen, buf, n, sodium_base64_VARIANT_ORIGINAL);
	free(buf);
	reply = ag_dump(json_pack("{s:b, s:s}", "ok", 1, "png", b64));
	free(b64);
	return (reply);
}

char *
ag_op_handle(struct agent *ag, const char *buf, size_t len)
{
	json_t *req = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	const char *op = json_string_value(json_object_get(req, "op"));
	char *reply;

	if (!json_is_object(req) || op == NULL) {
		json_decref(req);
		return (ag_error(NULL, BUREAU_EBADREQ,
		    "expected a JSON object with a string field 'op'"));
	}
	if (strcmp(op, "state") == 0) {
		reply = ag_op_state(ag);
	} else if (strcmp(op, "takeover") == 0) {
		reply = ag_op_takeover(ag, req);
	} else if (strcmp(op, "approvals") == 0) {
		reply = ag_op_approvals(ag);
	} else if (strcmp(op, "decide") == 0) {
		reply = ag_op_decide(ag, req);
	} else if (strcmp(op, "answer") == 0) {
		reply = ag_op_answer(ag, req);
	} else if (strcmp(op, "policy") == 0) {
		reply = ag_op_policy(ag, req);
	} else if (strcmp(op, "log") == 0) {
		reply = ag_op_log(ag, req);
	} else if (strcmp(op, "shot") == 0) {
		reply = ag_op_shot(ag, req);
	} else if (ag_life_is(op)) { /* the VM's: agent_life.c */
		reply = ag_life_op(ag, op, req);
	} else if (ops_mc_is(op)) { /* Mission Control's: ops_mc.c */
		pthread_mutex_lock(&ag->lock);
		int tk = ag->takeover;
		pthread_mutex_unlock(&ag->lock);
		reply = ops_mc_handle(ag->guest, ag->d->name, tk, op, req);
	} else {
		reply = ag_error(NULL, BUREAU_EUNKNOWN_ACTION,
		    "unknown op '%.64s': expected state, takeover, approvals, "
		    "decide, answer, policy, log, shot, stop, pause, resume, "
		    "snapshot, restore or fork",
		    op);
	}
	json_decref(req);
	return (reply);
}
