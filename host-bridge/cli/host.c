/*
 * host-bridge/cli/host.c: `bureau host add|ls|rm`, the hosts desktops run
 * on (DESIGN.md, "Hosts: desktops on libvirt"; store/hosts.c keeps them),
 * and the choice of `create --host auto`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/operator.h"
#include "host-bridge/cli/remote.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

#ifndef BUREAU_VERSION
#define BUREAU_VERSION "unknown"
#endif

/* MemAvailable of this machine in bytes, or -1. */
static long long
host_local_free(void)
{
	char *s = hb_read_file("/proc/meminfo"), *p;
	long long kb = -1;

	if (s != NULL && (p = strstr(s, "MemAvailable:")) != NULL)
		kb = strtoll(p + 13, NULL, 10);
	free(s);
	return (kb >= 0 ? kb * 1024 : -1);
}

/* Free memory of host name (uri NULL: local): 0, or -1 (*cause says why:
 * it cannot be reached). */
static int
host_free(const char *uri, long long *free_bytes, char **cause)
{
	if (uri == NULL) {
		*free_bytes = host_local_free();
		return (0);
	}
	if (!host_here(uri))
		return (remote_probe(uri, free_bytes, NULL, cause));
	return (vm_host_probe(uri, free_bytes, cause));
}

struct host_count {
	const char *host;
	int n;
	char names[256];
};

static int
host_count_one(const char *name, void *arg)
{
	struct host_count *hc = arg;
	struct desktop *d;
	char *cause = NULL;

	if (desktop_load(name, &d, &cause) != 0) {
		free(cause);
		return (0);
	}
	if (strcmp(desktop_host(d), hc->host) == 0) {
		size_t l = strlen(hc->names);

		if (l + strlen(name) + 3 < sizeof hc->names)
			snprintf(hc->names + l, sizeof hc->names - l, "%s%s",
			    hc->n ? ", " : "", name);
		hc->n++;
	}
	desktop_free(d);
	return (0);
}

static int
host_add(int argc, char **argv)
{
	json_t *h = NULL;
	const char *old;
	char *cause = NULL, *ver = NULL;
	long long fb;
	int lk = -1, rc = 1;

	if (argc != 4) {
		usage_err("host", "host add NAME URI");
		return (2);
	}
	if (host_valid_name(argv[2], &cause) != 0)
		goto fail;
	if (host_is_local(argv[2])) {
		cause = hb_fmt("'%s' is the embedded QEMU backend's host, "
		               "always there",
		    HOST_LOCAL);
		goto fail;
	}
	if (strstr(argv[3], "://") == NULL) {
		cause = hb_fmt("invalid URI '%s': a libvirt URI such as "
		               "qemu:///system or qemu+ssh://user@host/system",
		    argv[3]);
		goto fail;
	}
	/* another machine: asked of the bureau there, whose desktops they
	 * are */
	if ((host_here(argv[3]) ?
	            vm_host_probe(argv[3], &fb, &cause) :
	            remote_probe(argv[3], &fb, &ver, &cause)) != 0) {
		char *c2 = hb_fmt("cannot reach '%s': %s", argv[3], cause);
		free(cause);
		cause = c2;
		goto fail;
	}
	if (store_lock_all(&lk, &cause) != 0 || hosts_load(&h, &cause) != 0)
		goto fail;
	/* the same again is no error: a bureau on another machine adds
	 * its own libvirt under the name this one gave it, each time */
	if ((old = json_string_value(json_object_get(
	         json_object_get(h, argv[2]), "uri"))) != NULL &&
	    strcmp(old, argv[3]) == 0) {
		printf("host '%s' is there already: %s\n", argv[2], argv[3]);
		rc = 0;
		goto out;
	}
	if (json_object_get(h, argv[2]) != NULL) {
		cause = hb_fmt("host '%s' exists (`bureau host rm %s` first)",
		    argv[2], argv[2]);
		goto fail;
	}
	json_object_set_new(h, argv[2],
	    json_pack("{s:s, s:I}", "uri", argv[3], "added",
	        (json_int_t)time(NULL)));
	if (hosts_save(h, &cause) != 0)
		goto fail;
	printf("added host '%s': %s\n", argv[2], argv[3]);
	if (ver != NULL)
		printf("on another machine: %s answers there over SSH\n", ver);
	rc = 0;
	goto out;
fail:
	die_cause("host add", cause);
out:
	if (lk >= 0)
		close(lk);
	json_decref(h);
	free(ver);
	return (rc);
}

static int
host_rm(int argc, char **argv)
{
	struct host_count hc = { 0 };
	json_t *h = NULL;
	char *cause = NULL;
	int lk = -1, rc = 1;

	if (argc != 3) {
		usage_err("host", "host rm NAME");
		return (2);
	}
	hc.host = argv[2];
	if (host_is_local(argv[2])) {
		cause = hb_fmt("'%s' cannot be removed", HOST_LOCAL);
		goto fail;
	}
	if (store_lock_all(&lk, &cause) != 0 || hosts_load(&h, &cause) != 0)
		goto fail;
	if (json_object_get(h, argv[2]) == NULL) {
		cause = hb_fmt("no host '%s'", argv[2]);
		goto fail;
	}
	store_each(host_count_one, &hc);
	if (hc.n > 0) {
		cause = hb_fmt("%d desktop%s on host '%s' (%s): `bureau rm` "
		               "them (or move them) first",
		    hc.n, hc.n == 1 ? " is" : "s are", argv[2], hc.names);
		goto fail;
	}
	json_object_del(h, argv[2]);
	if (hosts_save(h, &cause) != 0)
		goto fail;
	printf("removed host '%s'\n", argv[2]);
	rc = 0;
	goto out;
fail:
	die_cause("host rm", cause);
out:
	if (lk >= 0)
		close(lk);
	json_decref(h);
	return (rc);
}

#define HOST_ROW "%-16s %-36s %-10s %-9s %s\n"

static void
host_row(const char *name, const char *uri)
{
	struct host_count hc = { .host = name };
	char *cause = NULL, nd[16], fm[16];
	long long fb = -1;
	int ok = host_free(uri, &fb, &cause) == 0;

	store_each(host_count_one, &hc);
	snprintf(nd, sizeof nd, "%d", hc.n);
	if (fb >= 0)
		hb_human(fm, sizeof fm, fb);
	else
		snprintf(fm, sizeof fm, "-");
	printf(HOST_ROW, name, uri ? uri : "(bureau's own QEMU)",
	    ok ? "yes" : "no", nd, fm);
	if (!ok)
		fprintf(stderr, "bureau host ls: '%s': %s\n", name,
		    cause ? cause : "unreachable");
	free(cause);
}

static int
host_ls(int argc, char **argv)
{
	json_t *h = NULL, *v;
	const char *k;
	char *cause = NULL;

	(void)argv;
	if (argc != 2) {
		usage_err("host", "host ls");
		return (2);
	}
	if (hosts_load(&h, &cause) != 0) {
		die_cause("host ls", cause);
		return (1);
	}
	printf(HOST_ROW, "NAME", "URI", "REACHABLE", "DESKTOPS", "FREE MEM");
	host_row(HOST_LOCAL, NULL);
	json_object_foreach(h, k, v)
	    host_row(k, json_string_value(json_object_get(v, "uri")));
	json_decref(h);
	return (0);
}

/* `bureau host probe URI`: a libvirt URI of this machine reached, as
 * JSON (what a bureau on another machine asks of this one, remote.c). */
static int
host_probe(int argc, char **argv)
{
	char *cause = NULL;
	long long fb;

	if (argc != 3) {
		usage_err("host", "host probe URI");
		return (2);
	}
	if (!host_here(argv[2])) {
		die_cause("host probe",
		    hb_fmt("'%s' is not a libvirt URI of this machine",
		        argv[2]));
		return (1);
	}
	if (vm_host_probe(argv[2], &fb, &cause) != 0) {
		die_cause("host probe",
		    hb_fmt("cannot reach '%s': %s", argv[2], cause));
		free(cause);
		return (1);
	}
	{
		json_t *j = json_pack("{s:s, s:I, s:s}", "uri", argv[2],
		    "free_bytes", (json_int_t)fb, "version",
		    "bureau " BUREAU_VERSION);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		json_decref(j);
		if (s == NULL) {
			die_cause("host probe", hb_fmt("out of memory"));
			return (1);
		}
		printf("%s\n", s);
		free(s);
	}
	return (0);
}

int
cmd_host(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "add") == 0)
		return (host_add(argc, argv));
	if (argc >= 2 && strcmp(argv[1], "ls") == 0)
		return (host_ls(argc, argv));
	if (argc >= 2 && strcmp(argv[1], "rm") == 0)
		return (host_rm(argc, argv));
	if (argc >= 2 && strcmp(argv[1], "probe") == 0)
		return (host_probe(argc, argv));
	usage_err("host", "add, ls, rm or probe expected");
	return (2);
}

char *
host_pick(const char *want, char **cause)
{
	json_t *h = NULL, *v;
	const char *k, *best = HOST_LOCAL;
	long long bf = -1, fb;
	char *uri = NULL, *c2 = NULL, *out;

	if (want == NULL || host_is_local(want))
		return (strdup(HOST_LOCAL));
	if (strcmp(want, "auto") != 0) {
		/* a host that is there and reachable */
		if (host_valid_name(want, cause) != 0 ||
		    host_uri(want, &uri, cause) != 0)
			return (NULL);
		/* on another machine: reached over SSH (remote.c) */
		if (!host_here(uri) && remote_host(want, cause) < 0) {
			free(uri);
			return (NULL);
		}
		if (host_free(uri, &fb, &c2) != 0) {
			*cause = hb_fmt("host '%s' (%s) cannot be reached: %s",
			    want, uri, c2);
			free(c2);
			free(uri);
			return (NULL);
		}
		free(uri);
		return (strdup(want));
	}
	/* auto: the reachable host on this machine with the most free
	 * memory */
	bf = host_local_free();
	if (hosts_load(&h, cause) != 0)
		return (NULL);
	json_object_foreach(h, k, v)
	{
		const char *u = json_string_value(json_object_get(v, "uri"));

		if (u != NULL && host_here(u) &&
		    vm_host_probe(u, &fb, &c2) == 0 && fb > bf) {
			bf = fb;
			best = k;
		}
		free(c2);
		c2 = NULL;
	}
	out = strdup(best);
	json_decref(h);
	return (out);
}

/* desktop.json's "host" set to host (NULL: local, the key removed). */
static int
host_set_change(json_t *j, void *arg, char **cause)
{
	const char *host = arg;

	if (host == NULL)
		json_object_del(j, "host");
	else if (json_object_set_new(j, "host", json_string(host)) != 0) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	return (0);
}

static int
host_set(const struct desktop *d, const char *host, char **cause)
{
	return (store_update(d, host_set_change, (void *)host, cause));
}

int
cmd_move(int argc, char **argv)
{
	struct desktop *d = NULL;
	const char *to = NULL, *from;
	char *cause = NULL, *dst = NULL, *uri = NULL, *furi = NULL;
	const struct vm_backend *vm;
	int lk = -1, rc = 1, saved;

	if (argc == 4 && strcmp(argv[2], "--to") == 0)
		to = argv[3];
	else if (argc == 3 && strncmp(argv[2], "--to=", 5) == 0)
		to = argv[2] + 5;
	if (to == NULL || *to == '\0') {
		usage_err("move", "NAME --to HOST expected");
		return (2);
	}
	if (desktop_load(argv[1], &d, &cause) != 0 ||
	    attached_refuse(d, "move", &cause) != 0 ||
	    store_lock(d, "move", &lk, &cause) != 0)
		goto fail;
	from = desktop_host(d);
	vm = vm_backend_for(d);
	if (strcmp(to, "auto") == 0) {
		cause = hb_fmt("move needs a host by name (`bureau host ls`)");
		goto fail;
	}
	if ((dst = host_pick(to, &cause)) == NULL)
		goto fail;
	if (strcmp(dst, from) == 0) {
		cause = hb_fmt("desktop '%s' is on host '%s' already", d->name,
		    from);
		goto fail;
	}
	if (vm->pid(d) > 0 || store_agent_pid(d) > 0) {
		cause = hb_fmt("desktop '%s' runs (or its host agent serves an "
		               "idle save): `bureau stop %s` first, which "
		               "saves it; move carries the saved state",
		    d->name, d->name);
		goto fail;
	}
	if (host_uri(from, &furi, &cause) != 0 ||
	    host_uri(dst, &uri, &cause) != 0)
		goto fail;
	if (!host_here(uri) && !host_here(furi)) {
		cause = hb_fmt("hosts '%s' and '%s' are both on other "
		               "machines: move it here first, then there",
		    from, dst);
		goto fail;
	}
	/* a saved state is the backend's own: libvirt's save image or
	 * the local QEMU's, which the other cannot restore */
	saved = vm->saved(d);
	if (saved && host_is_local(from) != host_is_local(dst)) {
		cause = hb_fmt(
		    "desktop '%s' holds a saved state of %s, which "
		    "%s cannot restore: `bureau start %s` and `bureau "
		    "stop %s --shutdown` end it cleanly, then move",
		    d->name,
		    host_is_local(from) ? "bureau's own QEMU" : "libvirt",
		    host_is_local(dst) ? "bureau's own QEMU" : "libvirt",
		    d->name, d->name);
		goto fail;
	}
	/* to or from another machine: the directory goes over SSH */
	if (!host_here(uri) || !host_here(furi)) {
		if (remote_move(d, dst, &cause) != 0)
			goto fail;
	} else if (host_set(d, host_is_local(dst) ? NULL : dst, &cause) != 0)
		goto fail;
	printf("moved desktop '%s' from host '%s' to '%s'%s\n", d->name, from,
	    dst,
	    saved ? ": the next start restores it there, with its processes" :
	            ": the next start boots it there");
	rc = 0;
	goto out;
fail:
	die_cause("move", cause);
out:
	if (lk >= 0)
		close(lk);
	free(dst);
	free(uri);
	free(furi);
	desktop_free(d);
	return (rc);
}
