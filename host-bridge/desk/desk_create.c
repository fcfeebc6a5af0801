/*
 * host-bridge/desk/desk_create.c: a new desktop (desk.h). Its options are
 * checked first, each error naming its option; then, under the store's
 * lock until desktop.json names its ports, its directory, ports, disks
 * (a clone of the image's warm state when one fits: vm.h's clone, else
 * new ones), its secrets and desktop.json. A size the image has no warm
 * state of gets one first (desk_warm), outside the lock: a cold boot that
 * later desktops of that size do not pay again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

void
desk_create_res_clear(struct desk_create_res *r)
{
	free(r->why);
	memset(r, 0, sizeof *r);
}

/* A policy list checked and formatted (malloc'd), or NULL with e. */
static char *
create_policy(const char *what, const char *s, struct desk_err *e)
{
	struct policy_list l = { 0 };
	char *cause = NULL, *out = NULL;

	if (policy_parse(what, s ? s : "", &l, &cause) != 0)
		desk_fail_take(e, DESK_EINVAL, cause);
	else if ((out = policy_format(&l)) == NULL)
		desk_fail(e, DESK_EFAIL, "out of memory");
	policy_list_clear(&l);
	return (out);
}

/* The options that need no store, each named when wrong. */
static int
create_check(const struct desk_create_opts *o, struct desk_err *e)
{
	long long home = o->home > 0 ? o->home : o->disk;
	char *cause = NULL;

	if (o->name == NULL || store_valid_name(o->name, &cause) != 0)
		return (desk_fail_take(e, DESK_EINVAL,
		    cause ? cause : hb_fmt("a desktop needs a name")));
	if (o->cpus < 1 || o->cpus > 64)
		return (desk_fail(e, DESK_EINVAL, "invalid --cpus %d: 1 to 64",
		    o->cpus));
	if (o->memory < (256LL << 20))
		return (
		    desk_fail(e, DESK_EINVAL, "invalid memory: at least 256M"));
	if (o->disk < (1LL << 30))
		return (
		    desk_fail(e, DESK_EINVAL, "invalid --disk: at least 1G"));
	if (home < (64LL << 20))
		return (desk_fail(e, DESK_EINVAL,
		    "invalid home disk size: at least 64M"));
	if (desk_check_net(o->net, o->net_allow, 0, e) != 0)
		return (-1);
	if (o->approve_timeout < 0 || o->approve_timeout > 86400)
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --approve-timeout %ld: 1 to 86400 seconds",
		    o->approve_timeout));
	if (o->idle_save != 0 &&
	    (o->idle_save < STORE_IDLE_SAVE_MIN ||
	        o->idle_save > STORE_IDLE_SAVE_MAX))
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --idle-save %ld s: off, or %d s to %ld s",
		    o->idle_save, STORE_IDLE_SAVE_MIN, STORE_IDLE_SAVE_MAX));
	if (o->cpu_milli != 0 &&
	    (o->cpu_milli < 50 || o->cpu_milli > o->cpus * 1000L))
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --cpu-limit: 0.05 to the desktop's %d vCPUs",
		    o->cpus));
	if (o->net_rate < 0 || o->net_rate > STORE_DISK_BPS_MAX ||
	    (o->net_rate > 0 && o->net != NULL && strcmp(o->net, "none") == 0))
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --net-rate: 0 to 1T a second, and not with "
		    "--net none"));
	if (o->disk_iops < 0 || o->disk_iops > STORE_DISK_IOPS_MAX)
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --disk-iops: 0 to %ld", STORE_DISK_IOPS_MAX));
	if (o->disk_bps < 0 || o->disk_bps > STORE_DISK_BPS_MAX)
		return (desk_fail(e, DESK_EINVAL,
		    "invalid --disk-bps: 0 to %lld", STORE_DISK_BPS_MAX));
	return (0);
}

/* desktop.json: what the desktop was created with. */
static json_t *
create_config(const struct desktop *d, const struct desk_create_opts *o,
    const char *al, const char *ap)
{
	json_t *cfg = json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:i, s:s, "
	                        "s:s, s:s, s:I, s:I, s:I, s:i}",
	    "name", d->name, "image", d->image, "memory", (json_int_t)d->memory,
	    "cpus", d->cpus, "disk", (json_int_t)o->disk, "home",
	    (json_int_t)(o->home > 0 ? o->home : o->disk), "port", d->port,
	    "net", o->net ? o->net : "internet", "allow", al, "approve", ap,
	    "approve_timeout",
	    (json_int_t)(o->approve_timeout > 0 ? o->approve_timeout :
	                                          STORE_APPROVE_TIMEOUT),
	    "idle_save", (json_int_t)o->idle_save, "created",
	    (json_int_t)time(NULL), "max_forks",
	    o->max_forks < 0 ? STORE_MAX_FORKS : o->max_forks);

	if (cfg != NULL && o->net_allow != NULL &&
	    json_object_set_new(cfg, "net_allow", json_string(o->net_allow)) !=
	        0) {
		json_decref(cfg);
		return (NULL);
	}
	if (cfg != NULL && d->host != NULL &&
	    json_object_set_new(cfg, "host", json_string(d->host)) != 0) {
		json_decref(cfg);
		return (NULL);
	}
	if (cfg != NULL &&
	    store_set_limits(cfg, o->cpu_milli, o->disk_bps, o->disk_iops,
	        o->net_rate) != 0) {
		json_decref(cfg);
		return (NULL);
	}
	return (cfg);
}

/*
 * A warm state for a size the image has none of, made on that size's
 * first use, before the store's lock: it takes a cold boot, and other
 * commands go on meanwhile. Only for an image that has the default size's
 * (image build made it, or image warm: the operator's choice), not with
 * no_warm. A failure is a note: the desktop boots at its first start, as
 * it would have.
 */
static void
create_warm(const struct desktop *d, const struct desk_create_opts *o)
{
	const struct vm_backend *vm = vm_backend_for(d);
	struct desk_warm_size sz = { d->memory, d->cpus, o->disk,
		o->home > 0 ? o->home : o->disk, d->host };
	struct desk_err e = { 0 };
	char *wd = NULL, *why = NULL, *def;
	long long t0 = hb_now_ms();
	int r;

	if (o->no_warm || vm->warm_find == NULL || vm->clone == NULL ||
	    access(d->dir, F_OK) == 0) /* (the name's taken: said below) */
		return;
	if ((def = hb_fmt("%s/warm/state.json", d->image)) == NULL ||
	    access(def, F_OK) != 0) {
		free(def);
		return;
	}
	free(def);
	r = vm->warm_find(d->image, d->memory, d->cpus, sz.disk, sz.home, &wd,
	    &why);
	free(wd);
	if (r == 0) {
		desk_note(&o->notes,
		    "no warm state fits (%s): making one for %ldM of memory, "
		    "%d cpus (one cold boot; later desktops of this size start "
		    "from it)",
		    why ? why : "?", d->memory, d->cpus);
		if (desk_warm(d->image, &sz, &o->notes, &e) != 0)
			desk_note(&o->notes, "warning: no warm state made: %s",
			    e.cause ? e.cause : "failed");
		else
			desk_note(&o->notes,
			    "warm state of this size made in %.1f s",
			    (hb_now_ms() - t0) / 1000.0);
		desk_err_clear(&e);
	}
	free(why);
}

/* The disks, from the image's warm state when it fits (vm.h), else
 * empty: 1 cloned, 0 empty (*why says why not cloned), -1 failed. */
static int
create_disks(const struct desktop *d, const struct image *im,
    const struct desk_create_opts *o, char **why, struct desk_err *e)
{
	const struct vm_backend *vm = vm_backend_for(d);
	long long home = o->home > 0 ? o->home : o->disk;
	char *cause = NULL;
	int cl = !o->no_warm && vm->clone ?
	    vm->clone(d, im, o->disk, home, why) :
	    0;

	if (cl < 0) {
		desk_fail_take(e, DESK_EFAIL, *why);
		*why = NULL;
		return (-1);
	}
	if (cl == 0 && o->no_warm && *why == NULL)
		*why = hb_fmt("BUREAU_WARM=0");
	if (cl == 0 && vm->create(d, im, o->disk, home, &cause) != 0)
		return (desk_fail_take(e, DESK_EFAIL, cause));
	return (cl);
}

/* Under the store's lock: the directory, its ports, disks, secrets and
 * desktop.json. */
static int
create_made(struct desktop *d, const struct image *im,
    const struct desk_create_opts *o, const char *al, const char *ap,
    struct desk_create_res *r, int *created, struct desk_err *e)
{
	char *cause = NULL;
	json_t *cfg = NULL;
	int lk = -1, rv = -1, cl;

	if (desk_new_dir(d, &lk, created, e) != 0)
		goto out;
	if ((cl = create_disks(d, im, o, &r->why, e)) < 0)
		goto out;
	if (store_secrets(d, &cause) != 0 ||
	    (cfg = create_config(d, o, al, ap)) == NULL ||
	    store_save(d, cfg, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL,
		    cause ? cause : hb_fmt("out of memory"));
		goto out;
	}
	r->cloned = cl > 0;
	r->port = d->port;
	rv = 0;
out:
	if (lk >= 0)
		close(lk);
	json_decref(cfg);
	return (rv);
}

int
desk_create(const struct desk_create_opts *o, struct desk_create_res *r,
    struct desk_err *e)
{
	struct desktop d = { 0 };
	struct image im = { 0 };
	char *al = NULL, *ap = NULL, *cause = NULL;
	int created = 0, rv = -1;

	memset(r, 0, sizeof *r);
	if (create_check(o, e) != 0 ||
	    (al = create_policy("--allow", o->allow, e)) == NULL ||
	    (ap = create_policy("--approve", o->approve, e)) == NULL)
		goto out;
	d.name = (char *)o->name;
	d.cpus = o->cpus;
	d.memory = (long)(o->memory >> 20);
	d.host = o->host != NULL && !host_is_local(o->host) ? (char *)o->host :
	                                                      NULL;
	if ((d.image = image_dir(o->image, &cause)) == NULL ||
	    image_load(d.image, &im, &cause) != 0) {
		desk_fail_take(e, DESK_EINVAL, cause);
		goto out;
	}
	if ((d.dir = store_dir(d.name, NULL)) == NULL) {
		desk_fail(e, DESK_EFAIL, "out of memory");
		goto out;
	}
	create_warm(&d, o);
	rv = create_made(&d, &im, o, al, ap, r, &created, e);
out:
	if (rv != 0 && created)
		hb_rm_tree(d.dir);
	image_clear(&im);
	free(d.image);
	free(d.dir);
	free(al);
	free(ap);
	return (rv);
}
