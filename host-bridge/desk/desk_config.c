/*
 * host-bridge/desk/desk_config.c: a desktop's settings (the policy and
 * `bureau config`'s) changed by their owner: the running agent, which
 * applies them at once and writes desktop.json, or, with no agent, this
 * library in desktop.json under the desktop's lock (a start, which holds
 * it while it starts an agent, cannot lose the change).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/util/util.h"

/* store_update's change: changes' fields into cfg. */
static int
config_merge(json_t *cfg, void *arg, char **cause)
{
	json_t *changes = arg, *v;
	const char *key;

	json_object_foreach(changes, key, v)
	{
		if (strcmp(key, "op") == 0)
			continue;
		if (json_object_set(cfg, key, v) != 0) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
	}
	return (0);
}

int
desk_config(const char *name, json_t *changes, json_t **now, struct desk_err *e)
{
	struct desktop *d = NULL;
	json_t *req = NULL, *cfg = NULL;
	char *cause = NULL, *p = NULL;
	int lk = -1, rv = -1, own;

	*now = NULL;
	if (desk_load(name, &d, e) != 0 ||
	    (own = desk_owner(d, "config", &lk, e)) < 0)
		goto out;
	if (own == DESK_BY_AGENT) {
		if ((req = json_deep_copy(changes)) == NULL ||
		    json_object_set_new(req, "op", json_string("policy")) !=
		        0) {
			json_decref(req);
			desk_fail(e, DESK_EFAIL, "out of memory");
			goto out;
		}
		rv = desk_op(d, req, 30000, now, e);
		goto out;
	}
	if (store_update(d, config_merge, changes, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL, cause);
		goto out;
	}
	if ((p = desktop_path(d, "desktop.json")) == NULL ||
	    (cfg = json_load_file(p, 0, NULL)) == NULL) {
		desk_fail(e, DESK_EFAIL, "cannot read the settings of '%s'",
		    d->name);
		goto out;
	}
	*now = cfg;
	rv = 0;
out:
	if (lk >= 0)
		close(lk);
	free(p);
	desktop_free(d);
	return (rv);
}
