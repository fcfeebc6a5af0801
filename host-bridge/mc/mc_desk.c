/*
 * host-bridge/mc/mc_desk.c: desktops as Mission Control's API shows them,
 * the operator socket, and the lifecycle commands (run as `bureau` itself,
 * so the page does exactly what the CLI does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/mc/mc.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/vm.h"

#define MC_OP_MS   15000
#define MC_LOG_MAX 500

int
mc_op(const struct desktop *d, json_t *req, json_t **reply, const char **code,
    char **cause)
{
	static const int known[] = { BUREAU_ENOTFOUND, BUREAU_EINVAL,
		BUREAU_EBADREQ, BUREAU_EPERM, BUREAU_ETIMEOUT, BUREAU_EIO,
		BUREAU_EBUSY, BUREAU_EUNKNOWN_ACTION, 0 };
	json_t *r = NULL, *e;
	const char *c;
	int rv;

	*reply = NULL;
	*code = bureau_error_name(BUREAU_EINTERNAL);
	if ((rv = op_exchange(d, req, MC_OP_MS, &r, cause)) != 0) {
		if (rv == 1 || rv == OP_UNREACHABLE)
			*code = "unavailable";
		return (-1);
	}
	if (!json_is_true(json_object_get(r, "ok"))) {
		e = json_object_get(r, "error");
		c = json_string_value(json_object_get(e, "code"));
		for (int i = 0; c != NULL && known[i] != 0; i++)
			if (strcmp(c, bureau_error_name(known[i])) == 0)
				*code = bureau_error_name(known[i]);
		*cause = hb_fmt("%s",
		    json_string_value(json_object_get(e, "message")) ?:
		                                                       "failed");
		json_decref(r);
		return (-1);
	}
	*reply = r;
	return (0);
}

/* ---- resource figures ------------------------------------------------- */

static time_t
mc_mtime(const struct desktop *d, const char *file)
{
	struct stat st;
	char *p = desktop_path(d, file);
	time_t t = p && stat(p, &st) == 0 ? st.st_mtime : 0;

	free(p);
	return (t);
}

/* ---- the audit trail --------------------------------------------------- */

/* What mc_log_line keeps: the last max lines with seq > since. */
struct log_tail {
	const struct desktop *d;
	long long since;
	size_t max;
	json_t *list;
};

static int
mc_log_line(json_t *j, void *arg)
{
	struct log_tail *t = arg;
	json_t *shot;

	if (json_integer_value(json_object_get(j, "seq")) <= t->since) {
		json_decref(j);
		return (0);
	}
	/* The screenshot as a URL of this API. */
	if (json_is_string(shot = json_object_get(j, "screenshot"))) {
		const char *s = json_string_value(shot);
		const char *b = strrchr(s, '/');
		char *u = hb_fmt("/api/desktops/%s/audit/%s", t->d->name,
		    b ? b + 1 : s);
		if (u != NULL)
			json_object_set_new(j, "screenshot_url",
			    json_string(u));
		free(u);
	}
	json_array_append_new(t->list, j);
	if (json_array_size(t->list) > t->max)
		json_array_remove(t->list, 0);
	return (0);
}

/* The trail of a desktop on another machine: its agent's lines through
 * the forwarded operator socket (agent.h's "log"), or NULL. */
static json_t *
mc_remote_log(const struct desktop *d, long long since, size_t max)
{
	json_t *r = NULL, *lines;
	char *cause = NULL;

	if (op_call(d,
	        json_pack("{s:s, s:I, s:I}", "op", "log", "since",
	            (json_int_t)since, "max", (json_int_t)max),
	        &r, &cause) != 0) {
		free(cause);
		return (NULL);
	}
	lines = json_incref(json_object_get(r, "lines"));
	json_decref(r);
	if (!json_is_array(lines)) {
		json_decref(lines);
		return (NULL);
	}
	return (lines);
}

/* Lines of d's audit trail (both files) with seq > since, the last max. */
static json_t *
mc_read_log(const struct desktop *d, long long since, size_t max)
{
	struct log_tail t = { d, since, max, json_array() };
	json_t *lines, *j;
	size_t i;

	if (t.list == NULL)
		return (NULL);
	if (d->remote_dir == NULL) {
		audit_log_each(d->dir, mc_log_line, &t);
		return (t.list);
	}
	if ((lines = mc_remote_log(d, since, max)) != NULL)
		json_array_foreach(lines, i, j) mc_log_line(json_incref(j), &t);
	json_decref(lines);
	return (t.list);
}

/* The last line of the trail, read from the end of the file: the event
 * stream asks several times a second, and audit.log grows to 4 MiB. The
 * 64 KiB read buffer is on the heap: this runs on civetweb's worker
 * threads, whose stacks are small (with ASan's redzones a stack buffer
 * this size overflowed one: CI, test_ask's Mission Control case). */
#define MC_TAIL 65536
static json_t *
mc_last_action(const struct desktop *d)
{
	const char *files[] = { AUDIT_LOG, AUDIT_LOG_OLD };
	char *buf;
	json_t *j = NULL;

	if (d->remote_dir != NULL) { /* its agent's last line */
		json_t *l = mc_remote_log(d, 0, 1);

		j = json_incref(json_array_get(l, 0));
		json_decref(l);
		return (j);
	}
	buf = malloc(MC_TAIL);

	for (int i = 0; buf != NULL && i < 2 && j == NULL; i++) {
		char *p = desktop_path(d, files[i]), *nl;
		int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
		struct stat st;
		ssize_t n;
		off_t at;

		free(p);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_size > 0) {
			at = st.st_size > (off_t)MC_TAIL - 1 ?
			    st.st_size - (off_t)MC_TAIL + 1 :
			    0;
			n = pread(fd, buf, MC_TAIL - 1, at);
			/* Complete lines only: a half-written one is skipped.
			 */
			while (n > 0 && buf[n - 1] != '\n')
				n--;
			if (n > 0) {
				buf[n - 1] = '\0';
				nl = strrchr(buf, '\n');
				j = json_loads(nl ? nl + 1 : buf, 0, NULL);
			}
		}
		close(fd);
	}
	free(buf);
	return (j);
}

json_t *
mc_log(const char *name, long long since, char **cause)
{
	struct desktop *d = NULL;
	json_t *r;

	if (store_valid_name(name, cause) != 0 ||
	    desktop_load(name, &d, cause) != 0)
		return (NULL);
	r = mc_read_log(d, since, MC_LOG_MAX);
	desktop_free(d);
	return (r);
}

/* ---- desktops ---------------------------------------------------------- */

static json_t *
mc_num_or_null(long long v)
{
	return (v >= 0 ? json_integer(v) : json_null());
}

json_t *
mc_desktop(const char *name, int detail, char **cause)
{
	struct desktop *d = NULL;
	json_t *j, *r = NULL, *last;
	const char *code;
	char *state = NULL, *accel = NULL, *p, *ep, *oc = NULL;
	pid_t pid = 0, agent;
	time_t since = 0;
	long long disk = -1, rss = -1;
	double cpu = -1;

	if (store_valid_name(name, cause) != 0 ||
	    desktop_load(name, &d, cause) != 0)
		return (NULL);
	agent = store_agent_pid(d);
	if (d->attached) {
		state = strdup(agent ? "attached" : "detached");
		if (agent)
			since = mc_mtime(d, "agent.pid");
	} else {
		struct vm_stats st;

		/* on another machine: its agent answered through the SSH
		 * forward, and its frames come through it */
		if ((state = op_remote_state(d)) != NULL)
			agent = 1;
		else
			state = vm_backend_for(d)->state(d, &pid);
		/* saved by its agent while idle: the next request wakes it */
		if (state != NULL && strcmp(state, "saved") == 0 && agent) {
			free(state);
			state = strdup("idle");
		}
		if (pid != 0) {
			since = mc_mtime(d, "qemu.pid");
			cpu = vm_cpu_percent_now(d, &st);
			rss = st.memory_bytes;
		} else
			vm_backend_for(d)->stats(d, &st);
		disk = st.disk_bytes;
		if ((p = desktop_path(d, "accel")) != NULL) {
			accel = hb_read_file(p);
			if (accel != NULL)
				accel[strcspn(accel, "\r\n")] = '\0';
			free(p);
		}
	}
	ep = hb_fmt("tcp://127.0.0.1:%d", d->port);
	/* (on another machine: asked of its agent, when it answered) */
	last = d->remote_dir != NULL && !agent ? NULL : mc_last_action(d);
	j = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s?, s:O?, "
	              "s:b, s:I}",
	    "name", d->name, "kind", d->attached ? "attached" : "vm", "state",
	    state ? state : "unknown", "uptime_s",
	    since ? json_integer((json_int_t)(time(NULL) - since)) :
	            json_null(),
	    "cpu_percent", cpu >= 0 ? json_real(cpu) : json_null(),
	    "memory_bytes", mc_num_or_null(rss), "disk_bytes",
	    mc_num_or_null(disk), "accel",
	    accel && *accel ? json_string(accel) : json_null(), "endpoint", ep,
	    "last_action", last, "agent", agent != 0, "frame",
	    (json_int_t)(agent || pid ? mc_live_seq(d->name) : -1));
	if (j != NULL && json_object_get(j, "last_action") == NULL)
		json_object_set_new(j, "last_action", json_null());
	/* A fork: shown under its parent; an ephemeral one's stop discards
	 * it (the page's Discard). */
	if (j != NULL) {
		json_object_set_new(j, "fork_of",
		    d->fork_of ? json_string(d->fork_of) : json_null());
		json_object_set_new(j, "ephemeral", json_boolean(d->ephemeral));
		/* the host it runs on: the page groups desktops by host (an
		 * attached desktop's agent runs on this one) */
		json_object_set_new(j, "host", json_string(desktop_host(d)));
	}
	json_decref(last);
	/* Takeover is on every row: the page shows it at a glance. */
	if (j != NULL && agent != 0 &&
	    mc_op(d, json_pack("{s:s}", "op", "state"), &r, &code, &oc) == 0) {
		json_object_set(j, "taken_over",
		    json_object_get(r, "takeover"));
		json_object_set(j, "pending", json_object_get(r, "pending"));
		if (detail) {
			json_object_set(j, "allow",
			    json_object_get(r, "allow"));
			json_object_set(j, "approve",
			    json_object_get(r, "approve"));
		}
	} else if (j != NULL)
		json_object_set_new(j, "taken_over", json_false());
	json_decref(r);
	r = NULL;
	free(oc);
	oc = NULL;
	/* what it may use of the host, as set and as its cgroup holds */
	if (j != NULL && detail && !d->attached && d->remote_dir == NULL &&
	    host_is_local(d->host))
		json_object_set_new(j, "limits",
		    limits_json(d, pid > 0 ? pid : 0));
	if (j != NULL && detail) {
		json_t *ap = json_array();
		if (agent != 0 &&
		    mc_op(d, json_pack("{s:s}", "op", "approvals"), &r, &code,
		        &oc) == 0)
			json_array_extend(ap, json_object_get(r, "approvals"));
		json_object_set_new(j, "approvals", ap);
		json_decref(r);
		r = NULL;
		free(oc);
		oc = NULL;
		/* The guest's own view of itself, where it says. */
		if (agent != 0 &&
		    mc_op(d, json_pack("{s:s}", "op", "info"), &r, &code,
		        &oc) == 0) {
			json_t *g = json_object();
			const char *keys[] = { "version", "screen", "scaled",
				"uptime_s", "load", "memory", NULL };
			for (int i = 0; g && keys[i]; i++)
				if (json_object_get(r, keys[i]))
					json_object_set(g, keys[i],
					    json_object_get(r, keys[i]));
			json_object_set_new(j, "guest", g);
		} else
			json_object_set_new(j, "guest", json_null());
		json_decref(r);
		free(oc);
	}
	free(ep);
	free(state);
	free(accel);
	desktop_free(d);
	return (j);
}

static int
mc_each_desktop(const char *name, void *arg)
{
	char *cause = NULL;
	json_t *j = mc_desktop(name, 0, &cause);

	if (j != NULL)
		json_array_append_new(arg, j);
	free(cause);
	return (0);
}

json_t *
mc_desktops(void)
{
	json_t *list = json_array();

	if (list != NULL)
		store_each(mc_each_desktop, list);
	return (list);
}

static int
mc_each_approvals(const char *name, void *arg)
{
	struct desktop *d = NULL;
	json_t *r = NULL;
	const char *code;
	char *cause = NULL;

	if (desktop_load(name, &d, &cause) == 0 && store_agent_pid(d) != 0 &&
	    mc_op(d, json_pack("{s:s}", "op", "approvals"), &r, &code,
	        &cause) == 0)
		json_array_extend(arg, json_object_get(r, "approvals"));
	json_decref(r);
	free(cause);
	desktop_free(d);
	return (0);
}

json_t *
mc_approvals(void)
{
	json_t *list = json_array();

	if (list != NULL)
		store_each(mc_each_approvals, list);
	return (list);
}
