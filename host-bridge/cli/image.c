/*
 * `bureau image build`: runs the image recipe (packaging/image/
 * build-image.sh: mmdebstrap, the bureaud .deb as a last layer, mke2fs,
 * qemu-img) with an argv. The recipe keeps its caches under
 * /var/cache/bureau and writes immutable images under --out.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/util/util.h"

static void
image_note(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
	fflush(stdout);
}

/* The lifecycle library's desk_warm, its notes printed. */
static int
image_warm(const char *dir, const struct desk_warm_size *sz, char **cause)
{
	struct desk_notes n = { image_note, NULL };
	struct desk_err e = { 0 };

	if (desk_warm(dir, sz, &n, &e) == 0)
		return (0);
	*cause = e.cause;
	return (-1);
}

/* $BUREAU_RECIPE, the tree beside this binary (build/bureau ->
 * packaging/image), or the installed copy beside it (/usr/bin/bureau ->
 * /usr/share/bureau/image: the host package, make install's PREFIX).
 * malloc'd, NULL if none. */
static char *
find_recipe(void)
{
	static const char *const rel[] = {
		"../packaging/image/build-image.sh",
		"../share/bureau/image/build-image.sh",
	};
	const char *env = getenv("BUREAU_RECIPE");
	char *exe, *p;

	if (env != NULL)
		return strdup(env);
	if ((exe = hb_exe_dir()) == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		p = hb_fmt("%s/%s", exe, rel[i]);
		if (p != NULL && access(p, X_OK) == 0) {
			free(exe);
			return p;
		}
		free(p);
	}
	free(exe);
	return NULL;
}

/* The package `make deb` left beside this binary; malloc'd or NULL. */
static char *
find_deb(void)
{
	const char *env = getenv("BUREAU_DEB");
	if (env != NULL)
		return strdup(env);
	char *exe = hb_exe_dir(), *pat, *r = NULL;
	if (exe == NULL)
		return NULL;
	pat = hb_fmt("%s/bureaud_*.deb", exe);
	free(exe);
	glob_t g;
	if (pat != NULL && glob(pat, 0, NULL, &g) == 0) {
		if (g.gl_pathc > 0)
			r = strdup(g.gl_pathv[g.gl_pathc - 1]);
		globfree(&g);
	}
	free(pat);
	return r;
}

static void
image_usage(FILE *f)
{
	fprintf(f,
	    "usage: bureau image build [--minimal | --full] [--out DIR] "
	    "[--deb PATH | --no-daemon]\n"
	    "                          [--cache DIR] [--rebuild]\n"
	    "  builds a Debian desktop image with bureaud installed into "
	    "DIR/<variant>-<key>\n"
	    "  (default DIR: $BUREAU_HOME/images); DIR/<variant> points at "
	    "the newest,\n"
	    "  and makes its warm state (new desktops start from it).\n"
	    "usage: bureau image warm [DIR] [--memory 4G] [--cpus 2] "
	    "[--disk 20G] [--home SIZE]\n"
	    "  (re)makes the warm state of image DIR (an image directory or "
	    "DIR/<variant>;\n"
	    "  default: the image `bureau create` picks); with sizes, one for "
	    "desktops of\n"
	    "  those (create makes it on a size's first use) unless one "
	    "fits them.\n");
}

/* `bureau image warm [DIR] [--memory M] [--cpus N] [--disk S] [--home S]` */
static int
image_warm_main(int argc, char **argv)
{
	const char *dir = NULL, *mem = NULL, *cpus = NULL, *disk = NULL;
	const char *home = NULL;
	struct desk_warm_size sz = { 0 };
	char *cause = NULL;
	long long m = 0;
	long c = 2;

	for (int i = 1; i < argc; i++) {
		const char **o = strcmp(argv[i], "--memory") == 0 ? &mem :
		    strcmp(argv[i], "--cpus") == 0                ? &cpus :
		    strcmp(argv[i], "--disk") == 0                ? &disk :
		    strcmp(argv[i], "--home") == 0                ? &home :
		                                                    NULL;
		if (o != NULL && i + 1 < argc)
			*o = argv[++i];
		else if (o == NULL && argv[i][0] != '-' && dir == NULL)
			dir = argv[i];
		else {
			fprintf(stderr, "bureau image warm: %s '%s'\n",
			    o ? "no value for" : "unknown argument", argv[i]);
			image_usage(stderr);
			return (2);
		}
	}
	/* Sizes as `bureau create` reads and defaults them. */
	if ((mem || cpus || disk || home) &&
	    (hb_parse_size("--memory", mem ? mem : "4G", &m, &cause) != 0 ||
	        (cpus != NULL &&
	            hb_parse_int("--cpus", cpus, 1, 64, &c, &cause) != 0) ||
	        hb_parse_size("--disk", disk ? disk : "20G", &sz.disk,
	            &cause) != 0 ||
	        hb_parse_size(home ? "--home" : "--disk",
	            home     ? home :
	                disk ? disk :
	                       "20G",
	            &sz.home, &cause) != 0)) {
		fprintf(stderr, "bureau image warm: %s\n", cause);
		free(cause);
		return (2);
	}
	sz.memory_mb = (long)(m >> 20);
	sz.cpus = (int)c;
	if (image_warm(dir, mem || cpus || disk || home ? &sz : NULL, &cause) !=
	    0) {
		fprintf(stderr,
		    "bureau image warm: %s: the image stays as it was (new "
		    "desktops of %s boot)\n",
		    cause ? cause : "failed",
		    mem || cpus || disk || home ? "that size" : "it");
		free(cause);
		return (1);
	}
	return (0);
}

int
image_main(int argc, char **argv)
{
	const char *out = NULL, *cache = NULL, *deb_opt = NULL;
	int minimal = 0, rebuild = 0, nodaemon = 0, rv = 1;
	char *recipe = NULL, *deb = NULL, *home = NULL, *outdir = NULL;

	if (argc >= 2 && strcmp(argv[1], "warm") == 0)
		return (image_warm_main(argc - 1, argv + 1));
	if (argc < 2 || strcmp(argv[1], "build") != 0) {
		image_usage(argc >= 2 && strcmp(argv[1], "help") == 0 ? stdout :
		                                                        stderr);
		return argc >= 2 && strcmp(argv[1], "help") == 0 ? 0 : 2;
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--minimal") == 0 || strcmp(a, "--full") == 0) {
			minimal = strcmp(a, "--minimal") == 0;
		} else if (strcmp(a, "--rebuild") == 0) {
			rebuild = 1;
		} else if (strcmp(a, "--no-daemon") == 0) {
			nodaemon = 1;
		} else if (i + 1 < argc && strcmp(a, "--out") == 0) {
			out = argv[++i];
		} else if (i + 1 < argc && strcmp(a, "--cache") == 0) {
			cache = argv[++i];
		} else if (i + 1 < argc && strcmp(a, "--deb") == 0) {
			deb_opt = argv[++i];
		} else {
			fprintf(stderr, "bureau image: unknown argument '%s'\n",
			    a);
			image_usage(stderr);
			return 2;
		}
	}
	if ((recipe = find_recipe()) == NULL) {
		fprintf(stderr,
		    "bureau image: no image recipe (set "
		    "BUREAU_RECIPE to packaging/image/build-image.sh)\n");
		goto out;
	}
	if (!nodaemon) {
		deb = deb_opt ? strdup(deb_opt) : find_deb();
		if (deb == NULL) {
			fprintf(stderr,
			    "bureau image: no bureaud package "
			    "(make deb, or --deb PATH, or --no-daemon)\n");
			goto out;
		}
	}
	if (out == NULL) {
		if ((home = hb_home()) == NULL ||
		    (outdir = hb_fmt("%s/images", home)) == NULL) {
			fprintf(stderr, "bureau image: out of memory\n");
			goto out;
		}
		out = outdir;
	}
	char *av[16];
	int n = 0;
	av[n++] = recipe;
	if (minimal)
		av[n++] = "--minimal";
	if (rebuild)
		av[n++] = "--rebuild";
	if (deb != NULL) {
		av[n++] = "--deb";
		av[n++] = deb;
	}
	if (cache != NULL) {
		av[n++] = "--cache";
		av[n++] = (char *)cache;
	}
	av[n++] = "--";
	av[n++] = (char *)out;
	av[n] = NULL;
	char *cause = NULL;
	/* One build at a time per output directory: two at once (two CI
	 * runs on a new machine) raced on the base tarball's temporary
	 * file and both failed. The second waits, then finds the layers
	 * and the warm state made. */
	char *lp = NULL;
	int lk = -1;
	if ((hb_mkdirs(out, 0755) != 0 &&
	        (cause = hb_fmt("cannot create '%s': %s", out,
	             strerror(errno))) != NULL) ||
	    (lp = hb_fmt("%s/.build.lock", out)) == NULL ||
	    (lk = hb_lock_wait(lp, "bureau image build", &cause)) < 0) {
		fprintf(stderr, "bureau image: %s\n",
		    cause ? cause : "out of memory");
		free(cause);
		free(lp);
		goto out;
	}
	free(lp);
	if (hb_run(av, 0, &cause) != 0) {
		fprintf(stderr, "bureau image: %s\n", cause);
		free(cause);
		close(lk);
		goto out;
	}
	rv = 0;
	/* The image's warm state, unless it has one (or --no-daemon: no
	 * daemon, no ready desktop to save). A failure leaves a usable
	 * image whose desktops boot. */
	if (!nodaemon) {
		char *img = hb_fmt("%s/%s", out, minimal ? "minimal" : "full");
		char *ws = img ? hb_fmt("%s/warm/state.json", img) : NULL;

		if (ws != NULL && (rebuild || access(ws, F_OK) != 0) &&
		    image_warm(img, NULL, &cause) != 0) {
			fprintf(stderr,
			    "bureau image: warning: no warm state: %s; the "
			    "image is usable, its new desktops boot (cold)\n",
			    cause ? cause : "failed");
			free(cause);
			cause = NULL;
		}
		free(img);
		free(ws);
	}
	close(lk);
out:
	free(recipe);
	free(deb);
	free(home);
	free(outdir);
	return rv;
}
