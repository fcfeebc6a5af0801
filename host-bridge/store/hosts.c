/*
 * host-bridge/store/hosts.c: the hosts desktops run on (DESIGN.md, "Hosts:
 * desktops on libvirt"). $BUREAU_HOME/hosts.json (0600) maps a name to a
 * libvirt URI: {"NAME": {"uri": "qemu:///system", "added": T}, ...}. The
 * host `local`, bureau's own QEMU backend, is never in it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

static char *
hosts_path(void)
{
	char *home = hb_home(),
	     *p = home ? hb_fmt("%s/hosts.json", home) : NULL;

	free(home);
	return (p);
}

int
hosts_load(json_t **out, char **cause)
{
	char *p = hosts_path();
	json_error_t err;
	json_t *j;

	*out = NULL;
	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (access(p, F_OK) != 0) {
		free(p);
		if ((*out = json_object()) == NULL) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
		return (0);
	}
	if ((j = json_load_file(p, 0, &err)) == NULL || !json_is_object(j)) {
		*cause = hb_fmt("invalid '%s': %s", p,
		    j ? "not a JSON object" : err.text);
		json_decref(j);
		free(p);
		return (-1);
	}
	free(p);
	*out = j;
	return (0);
}

int
hosts_save(json_t *hosts, char **cause)
{
	char *p = hosts_path(), *s = json_dumps(hosts, JSON_INDENT(2));
	int rv = -1;

	if (p == NULL || s == NULL)
		*cause = hb_fmt("out of memory");
	else
		rv = hb_write_file(p, s, strlen(s), 0600, cause);
	free(p);
	free(s);
	return (rv);
}

int
host_is_local(const char *name)
{
	return (name == NULL || strcmp(name, HOST_LOCAL) == 0);
}

const char *
desktop_host(const struct desktop *d)
{
	return (host_is_local(d->host) ? HOST_LOCAL : d->host);
}

int
host_uri(const char *name, char **uri, char **cause)
{
	json_t *h = NULL;
	const char *u;
	int rv = -1;

	*uri = NULL;
	if (host_is_local(name))
		return (0);
	if (hosts_load(&h, cause) != 0)
		return (-1);
	u = json_string_value(json_object_get(json_object_get(h, name), "uri"));
	if (u == NULL)
		*cause = hb_fmt("no host '%s' (`bureau host ls` lists them, "
		                "`bureau host add NAME URI` adds one)",
		    name);
	else if ((*uri = strdup(u)) == NULL)
		*cause = hb_fmt("out of memory");
	else
		rv = 0;
	json_decref(h);
	return (rv);
}

int
host_valid_name(const char *name, char **cause)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 ||
	    strspn(name,
	        "abcdefghijklmnopqrstuvwxyz"
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789-_.") != n ||
	    name[0] == '.' || name[0] == '-') {
		*cause = hb_fmt(
		    "invalid host name '%s': letters, digits, '-', "
		    "'_' and '.', at most 64, not starting with '.' "
		    "or '-'",
		    name);
		return (-1);
	}
	return (0);
}

int
host_here(const char *uri)
{
	const char *p = uri ? strstr(uri, "://") : NULL;

	return (uri == NULL ||
	    (p != NULL &&
	        (p[3] == '/' || strncmp(p + 3, "localhost/", 10) == 0)));
}
