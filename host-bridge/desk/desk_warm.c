/*
 * host-bridge/desk/desk_warm.c: an image's warm state, DIR/warm (see
 * host-bridge/vm/qemu_warm.c): a desktop named "warm" with the default
 * sizes of `bureau create` (or, for `create` on the first use of a size
 * and `image warm --memory ...`, DIR/warm-M-C-D-H with those), booted
 * once, its session drawn, synced and saved, by the library's own create,
 * start and stop in a private store inside DIR (this thread's alone:
 * hb_home_set; its host agent is given it as BUREAU_HOME), so the files
 * move into DIR/warm by rename, their times kept, which the state
 * records. A failure leaves the image as it was: new desktops boot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

/* What a clone needs of the warm desktop's directory (on a libvirt host,
 * the state is lv.state: libvirt.c). */
static const char *const warm_files[] = { "system.qcow2", "home.qcow2", "ram",
	"state", "state.json", "guest-token" };
static const char *const warm_files_lv[] = { "system.qcow2", "home.qcow2",
	"ram", "lv.state", "lv.state.json", "guest-token" };
#define N_WARM_FILES (sizeof warm_files / sizeof warm_files[0])
_Static_assert(sizeof warm_files == sizeof warm_files_lv,
    "one list of a warm state's files per backend, of one length");

/* A warm state's making, as it goes. */
struct warm {
	const struct desk_warm_size *sz;
	const struct desk_notes *notes;
	char *dir, *tmp, *wdir, *nw, *old, *name;
	int lk;
};

static void
rm_tree(const char *path)
{
	if (path != NULL && access(path, F_OK) == 0)
		hb_rm_tree(path);
}

/* A warm state that fits sz (made by another process meanwhile)? */
static int
warm_there(const char *dir, const struct desk_warm_size *sz)
{
	struct desktop hd = { .host = (char *)sz->host };
	const struct vm_backend *vm = vm_backend_for(&hd);
	char *wd = NULL;
	int r;

	if (vm->warm_find == NULL)
		return (0);
	r = vm->warm_find(dir, sz->memory_mb, sz->cpus, sz->disk, sz->home, &wd,
	    NULL);
	free(wd);
	return (r == 1);
}

/* The private store's hosts.json: the libvirt host the warm desktop runs
 * on, as this store has it (read before the store is the private one). */
static int
warm_host(const char *tmp, const char *host, struct desk_err *e)
{
	json_t *h = NULL, *one = NULL;
	char *p = hb_fmt("%s/hosts.json", tmp), *cause = NULL;
	int rv = -1;

	if (p == NULL)
		return (desk_fail(e, DESK_EFAIL, "out of memory"));
	if (hosts_load(&h, &cause) != 0) {
		desk_fail_take(e, DESK_EFAIL, cause);
		goto out;
	}
	if (json_object_get(h, host) == NULL) {
		desk_fail(e, DESK_EINVAL, "no host '%s'", host);
		goto out;
	}
	if ((one = json_object()) == NULL ||
	    json_object_set(one, host, json_object_get(h, host)) != 0 ||
	    json_dump_file(one, p, JSON_INDENT(2)) != 0) {
		desk_fail(e, DESK_EFAIL, "cannot write '%s'", p);
		goto out;
	}
	rv = 0;
out:
	json_decref(h);
	json_decref(one);
	free(p);
	return (rv);
}

/* The paths and the warm desktop's name. */
static int
warm_names(struct warm *w, const char *image, struct desk_err *e)
{
	const struct desk_warm_size *sz = w->sz;
	const char *host = sz ? sz->host : NULL;
	char *cause = NULL;

	if ((w->dir = image_dir(image, &cause)) == NULL)
		return (desk_fail_take(e, DESK_EINVAL, cause));
	w->tmp = hb_fmt("%s/.warm-XXXXXX", w->dir);
	w->wdir = sz ? hb_fmt("%s/%s-%ldM-%d-%lld-%lld", w->dir,
	                   host ? VM_WARM_LIBVIRT : "warm", sz->memory_mb,
	                   sz->cpus, sz->disk, sz->home) :
	               hb_fmt("%s/warm", w->dir);
	/* (a libvirt domain's name is the host's: this one's own) */
	w->name = host ? hb_fmt("warm%d", (int)getpid()) : strdup("warm");
	if (w->tmp == NULL || w->wdir == NULL || w->name == NULL ||
	    (w->nw = hb_fmt("%s.new", w->wdir)) == NULL ||
	    (w->old = hb_fmt("%s.old", w->wdir)) == NULL)
		return (desk_fail(e, DESK_EFAIL, "out of memory"));
	return (0);
}

/*
 * One warm at a time per image (its lock held in w->lk); one that another
 * process made while this one waited is kept, not replaced under the
 * clones that may already use it (their warm-from names DIR/warm): 1.
 */
static int
warm_lock(struct warm *w, struct desk_err *e)
{
	char *ws = hb_fmt("%s/state.json", w->wdir),
	     *lp = hb_fmt("%s/.warm.lock", w->dir), *cause = NULL;
	struct stat before, after;
	int had = ws != NULL && stat(ws, &before) == 0, rv = 0;

	if (ws == NULL || lp == NULL)
		rv = desk_fail(e, DESK_EFAIL, "out of memory");
	else if ((w->lk = hb_lock_wait(lp, "bureau image warm", &cause)) < 0)
		rv = desk_fail_take(e, DESK_EBUSY, cause);
	else if ((w->sz != NULL && warm_there(w->dir, w->sz)) ||
	    (w->sz == NULL && stat(ws, &after) == 0 &&
	        (!had || after.st_ino != before.st_ino ||
	            after.st_mtime != before.st_mtime))) {
		desk_note(w->notes,
		    "bureau image warm: '%s' was made meanwhile by another "
		    "process: kept",
		    w->wdir);
		rv = 1;
	}
	free(ws);
	free(lp);
	return (rv);
}

/* The warm desktop created, booted, saved, in the private store. */
static int
warm_boot(struct warm *w, struct desk_err *e)
{
	const struct desk_warm_size *sz = w->sz;
	struct desk_create_opts co = { .name = w->name,
		.image = w->dir,
		.host = sz ? sz->host : NULL,
		.disk = sz ? sz->disk : 20LL << 30,
		.home = sz ? sz->home : 0,
		.memory = sz ? (long long)sz->memory_mb << 20 : 4LL << 30,
		.cpus = sz ? sz->cpus : 2,
		.no_warm = 1 };
	struct desk_create_res cr = { 0 };
	struct desk_start_res sr = { 0 };
	struct desk_stop_res pr = { 0 };
	struct desk_err e2 = { 0 };
	int rv = -1;

	hb_home_set(w->tmp);
	if (desk_create(&co, &cr, e) != 0)
		goto out;
	/* (a VM that did not start, or not save, must not outlive its
	 * files: on a libvirt host a domain would run on) */
	if (desk_start(w->name, NULL, &sr, e) != 0 ||
	    desk_stop(w->name, DESK_STOP_SAVE, 120, &pr, e) != 0) {
		desk_stop_res_clear(&pr);
		desk_stop(w->name, DESK_STOP_FORCE, 30, &pr, &e2);
		desk_err_clear(&e2);
		goto out;
	}
	if (pr.how != DESK_STOPPED_SAVED) {
		desk_fail(e, DESK_EFAIL, "the warm desktop was not saved");
		goto out;
	}
	rv = 0;
out:
	hb_home_set(NULL);
	desk_create_res_clear(&cr);
	desk_start_res_clear(&sr);
	desk_stop_res_clear(&pr);
	return (rv);
}

/* Its files moved into DIR/warm...new, then that put in place. */
static int
warm_move(struct warm *w, struct desk_err *e)
{
	const char *host = w->sz ? w->sz->host : NULL;
	char *from = NULL, *to = NULL;
	int rv = -1;

	rm_tree(w->nw);
	if (mkdir(w->nw, 0700) != 0)
		return (desk_fail(e, DESK_EFAIL, "cannot create '%s': %s",
		    w->nw, strerror(errno)));
	for (size_t i = 0; i < N_WARM_FILES + 1; i++) {
		const char *f = i == N_WARM_FILES ? "desktop.json" :
		    host                          ? warm_files_lv[i] :
		                                    warm_files[i];
		free(from);
		free(to);
		from = hb_fmt("%s/%s/%s", w->tmp, w->name, f);
		to = hb_fmt("%s/%s", w->nw,
		    strcmp(f, "desktop.json") == 0 ? "warm.json" : f);
		if (from == NULL || to == NULL) {
			desk_fail(e, DESK_EFAIL, "out of memory");
			goto out;
		}
		if (rename(from, to) != 0) {
			desk_fail(e, DESK_EFAIL,
			    "the warm desktop left no '%s' (%s): was it saved?",
			    f, strerror(errno));
			goto out;
		}
	}
	rm_tree(w->old);
	if (access(w->wdir, F_OK) == 0 && rename(w->wdir, w->old) != 0) {
		desk_fail(e, DESK_EFAIL, "cannot move '%s': %s", w->wdir,
		    strerror(errno));
		goto out;
	}
	if (rename(w->nw, w->wdir) != 0) {
		desk_fail(e, DESK_EFAIL, "cannot move '%s': %s", w->nw,
		    strerror(errno));
		goto out;
	}
	rm_tree(w->old);
	rv = 0;
out:
	free(from);
	free(to);
	return (rv);
}

int
desk_warm(const char *image, const struct desk_warm_size *sz,
    const struct desk_notes *notes, struct desk_err *e)
{
	struct warm w = { .sz = sz, .notes = notes, .lk = -1 };
	long long t0 = hb_now_ms();
	int rv = -1, made = 0, r;

	if (warm_names(&w, image, e) != 0 || (r = warm_lock(&w, e)) < 0)
		goto out;
	if (r > 0) {
		rv = 0;
		goto out;
	}
	if (mkdtemp(w.tmp) == NULL) {
		desk_fail(e, DESK_EFAIL, "cannot create '%s': %s", w.tmp,
		    strerror(errno));
		free(w.tmp);
		w.tmp = NULL;
		goto out;
	}
	made = 1;
	desk_note(notes, "bureau image warm: booting a desktop of '%s' once%s",
	    w.dir, sz ? " (this size's first)" : "");
	if ((sz != NULL && sz->host != NULL &&
	        warm_host(w.tmp, sz->host, e) != 0) ||
	    warm_boot(&w, e) != 0 || warm_move(&w, e) != 0)
		goto out;
	desk_note(notes,
	    "bureau image warm: '%s' made in %.0f s: new desktops of this "
	    "image start from it",
	    w.wdir, (hb_now_ms() - t0) / 1000.0);
	rv = 0;
out:
	if (made)
		rm_tree(w.tmp);
	if (rv != 0 && w.lk >= 0)
		rm_tree(w.nw);
	if (w.lk >= 0)
		close(w.lk);
	free(w.dir);
	free(w.tmp);
	free(w.wdir);
	free(w.nw);
	free(w.old);
	free(w.name);
	return (rv);
}
