/*
 * `bureau image warm [DIR]`: make an image's warm state, DIR/warm (see
 * host-bridge/vm/qemu_warm.c): a desktop named "warm" with the default
 * sizes of `bureau create` (or, for `bureau create` on the first use of
 * a size and `image warm --memory ...`, DIR/warm-M-C-D-H with those),
 * booted once, its session drawn, synced and
 * saved, by this very program's create, start and stop in a private
 * BUREAU_HOME inside DIR (so the files move into DIR/warm by rename, their
 * times kept, which the state records). A failure leaves the image as it
 * was: new desktops boot instead.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/cli/desktop.h"
#include "host-bridge/store/store.h"
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

static void
rm_tree(const char *path)
{
	if (path != NULL && access(path, F_OK) == 0)
		hb_rm_tree(path);
}

/* Run `bureau ARGS...` (this program) with BUREAU_HOME=home. */
static int
run_self(const char *home, char **args, char **cause)
{
	char *exe = hb_exe_dir(), *self = NULL, *av[20];
	char *old = getenv("BUREAU_HOME") ? strdup(getenv("BUREAU_HOME")) :
	                                    NULL;
	int n = 0, rv;

	if (exe == NULL || (self = hb_fmt("%s/bureau", exe)) == NULL) {
		free(exe);
		free(old);
		*cause = hb_fmt("cannot find this program");
		return (-1);
	}
	av[n++] = self;
	for (int i = 0; args[i] != NULL && n < 19; i++)
		av[n++] = args[i];
	av[n] = NULL;
	setenv("BUREAU_HOME", home, 1);
	setenv("BUREAU_WARM", "0", 1); /* a cold boot, whatever DIR has */
	fflush(stdout);
	rv = hb_run(av, 0, cause);
	if (old != NULL)
		setenv("BUREAU_HOME", old, 1);
	else
		unsetenv("BUREAU_HOME");
	unsetenv("BUREAU_WARM");
	free(old);
	free(exe);
	free(self);
	return (rv);
}

/* A warm state that fits sz (made by another process meanwhile)? */
static int
warm_there(const char *dir, const struct warm_size *sz)
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

/* The private BUREAU_HOME's hosts.json: the libvirt host the warm
 * desktop runs on, as this BUREAU_HOME has it. */
static int
warm_host(const char *tmp, const char *host, char **cause)
{
	json_t *h = NULL, *one = NULL;
	char *p = hb_fmt("%s/hosts.json", tmp);
	int rv = -1;

	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (hosts_load(&h, cause) != 0)
		goto out;
	if (json_object_get(h, host) == NULL) {
		*cause = hb_fmt("no host '%s'", host);
		goto out;
	}
	if ((one = json_object()) == NULL ||
	    json_object_set(one, host, json_object_get(h, host)) != 0 ||
	    json_dump_file(one, p, JSON_INDENT(2)) != 0) {
		*cause = hb_fmt("cannot write '%s'", p);
		goto out;
	}
	rv = 0;
out:
	json_decref(h);
	json_decref(one);
	free(p);
	return (rv);
}

int
image_warm(const char *opt, const struct warm_size *sz, char **cause)
{
	char *dir = NULL, *tmp = NULL, *wdir = NULL, *nw = NULL, *old = NULL;
	char *from = NULL, *to = NULL, *mem = NULL, *cpus = NULL;
	char *disk = NULL, *home = NULL, *name = NULL;
	const char *host = sz != NULL ? sz->host : NULL;
	long long t0 = hb_now_ms();
	int rv = -1, lk = -1;

	if ((dir = image_dir(opt, cause)) == NULL)
		return (-1);
	if (sz != NULL &&
	    ((mem = hb_fmt("%ldM", sz->memory_mb)) == NULL ||
	        (cpus = hb_fmt("%d", sz->cpus)) == NULL ||
	        (disk = hb_fmt("%lld", sz->disk)) == NULL ||
	        (home = hb_fmt("%lld", sz->home)) == NULL)) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if ((tmp = hb_fmt("%s/.warm-XXXXXX", dir)) == NULL ||
	    (wdir = sz ? hb_fmt("%s/%s-%s-%s-%s-%s", dir,
	                     host ? VM_WARM_LIBVIRT : "warm", mem, cpus, disk,
	                     home) :
	                 hb_fmt("%s/warm", dir)) == NULL ||
	    /* (a libvirt domain's name is the host's: this one's own) */
	    (name = host ? hb_fmt("warm%d", (int)getpid()) : strdup("warm")) ==
	        NULL ||
	    (nw = hb_fmt("%s.new", wdir)) == NULL ||
	    (old = hb_fmt("%s.old", wdir)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	/* One warm at a time per image; one that another process made
	 * while this one waited is kept, not replaced under the clones
	 * that may already use it (their warm-from names DIR/warm). */
	{
		char *ws = hb_fmt("%s/state.json", wdir),
		     *lp = hb_fmt("%s/.warm.lock", dir);
		struct stat before, after;
		int had = ws != NULL && stat(ws, &before) == 0;

		if (ws == NULL || lp == NULL ||
		    (lk = hb_lock_wait(lp, "bureau image warm", cause)) < 0) {
			if (ws == NULL || lp == NULL)
				*cause = hb_fmt("out of memory");
			free(ws);
			free(lp);
			goto out;
		}
		if ((sz != NULL && warm_there(dir, sz)) ||
		    (sz == NULL && stat(ws, &after) == 0 &&
		        (!had || after.st_ino != before.st_ino ||
		            after.st_mtime != before.st_mtime))) {
			printf("bureau image warm: '%s' was made meanwhile "
			       "by another process: kept\n",
			    wdir);
			free(ws);
			free(lp);
			rv = 0;
			goto out;
		}
		free(ws);
		free(lp);
	}
	if (mkdtemp(tmp) == NULL) {
		*cause = hb_fmt("cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	printf("bureau image warm: booting a desktop of '%s' once%s\n", dir,
	    sz ? " (this size's first)" : "");
	if (host != NULL && warm_host(tmp, host, cause) != 0)
		goto out;
	char *create[] = { "create", name, "--image", dir,
		sz ? "--memory" : NULL, mem, "--cpus", cpus, "--disk", disk,
		"--home", home, host ? "--host" : NULL, (char *)host, NULL };
	char *start[] = { "start", name, NULL };
	char *stop[] = { "stop", name, NULL };
	if (run_self(tmp, create, cause) != 0)
		goto out;
	/* (a VM that did not start, or not save, must not outlive its
	 * files: on a libvirt host a domain would run on) */
	if (run_self(tmp, start, cause) != 0 ||
	    run_self(tmp, stop, cause) != 0) {
		char *c2 = NULL;
		char *kill[] = { "stop", "--force", name, NULL };
		run_self(tmp, kill, &c2);
		free(c2);
		goto out;
	}
	rm_tree(nw);
	if (mkdir(nw, 0700) != 0) {
		*cause = hb_fmt("cannot create '%s': %s", nw, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < N_WARM_FILES + 1; i++) {
		const char *f = i == N_WARM_FILES ? "desktop.json" :
		    host                          ? warm_files_lv[i] :
		                                    warm_files[i];
		free(from);
		free(to);
		from = hb_fmt("%s/%s/%s", tmp, name, f);
		to = hb_fmt("%s/%s", nw,
		    strcmp(f, "desktop.json") == 0 ? "warm.json" : f);
		if (from == NULL || to == NULL) {
			*cause = hb_fmt("out of memory");
			goto out;
		}
		if (rename(from, to) != 0) {
			*cause = hb_fmt("the warm desktop left no '%s' (%s): "
			                "was it saved?",
			    f, strerror(errno));
			goto out;
		}
	}
	rm_tree(old);
	if (access(wdir, F_OK) == 0 && rename(wdir, old) != 0) {
		*cause = hb_fmt("cannot move '%s': %s", wdir, strerror(errno));
		goto out;
	}
	if (rename(nw, wdir) != 0) {
		*cause = hb_fmt("cannot move '%s': %s", nw, strerror(errno));
		goto out;
	}
	rm_tree(old);
	printf("bureau image warm: '%s' made in %.0f s: new desktops of this "
	       "image start from it\n",
	    wdir, (hb_now_ms() - t0) / 1000.0);
	rv = 0;
out:
	rm_tree(tmp);
	if (rv != 0 && lk >= 0)
		rm_tree(nw);
	if (lk >= 0)
		close(lk);
	free(dir);
	free(tmp);
	free(wdir);
	free(nw);
	free(old);
	free(from);
	free(to);
	free(mem);
	free(cpus);
	free(disk);
	free(home);
	free(name);
	return (rv);
}
