/*
 * host-bridge/store/store_write.c: the store writes a desktop's directory:
 * its making, its secrets, and desktop.json, whose one writer this is
 * (store_save, store_update). Every other file of the directory belongs
 * to the code that store.h names beside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

int
store_create_dir(struct desktop *d, int *created, char **cause)
{
	char *home;

	if (d->dir == NULL && (d->dir = store_dir(d->name, NULL)) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	home = hb_home();
	if (home == NULL || hb_mkdirs(home, 0700) != 0) {
		*cause = hb_fmt("cannot create '%s': %s", home ? home : "home",
		    strerror(errno));
		free(home);
		return (-1);
	}
	free(home);
	if (mkdir(d->dir, 0700) != 0) {
		*cause = errno == EEXIST ?
		    hb_fmt("desktop '%s' exists", d->name) :
		    hb_fmt("cannot create '%s': %s", d->dir, strerror(errno));
		return (-1);
	}
	*created = 1;
	return (0);
}

int
store_put(const struct desktop *d, const char *file, const char *s, mode_t mode,
    char **cause)
{
	char *p = desktop_path(d, file);
	int rv;

	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	rv = hb_write_file(p, s, strlen(s), mode, cause);
	free(p);
	return (rv);
}

int
store_secrets(const struct desktop *d, char **cause)
{
	char *token = NULL, *gtoken = NULL, *mid = NULL, *s = NULL;
	int rv = -1;

	if ((token = hb_random_hex(32)) == NULL ||
	    (gtoken = hb_random_hex(32)) == NULL ||
	    (mid = hb_random_hex(16)) == NULL) {
		*cause = hb_fmt("no random bytes: %s", strerror(errno));
		goto out;
	}
	if ((s = hb_fmt("tcp://127.0.0.1:%d\n", d->port)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	/* the guest's /etc/machine-id through fw_cfg, as the guest's token;
	 * the agent's token never enters the guest */
	if (store_put(d, "token", token, 0600, cause) == 0 &&
	    store_put(d, "guest-token", gtoken, 0600, cause) == 0 &&
	    store_put(d, "machine-id", mid, 0644, cause) == 0 &&
	    store_put(d, "endpoint", s, 0644, cause) == 0)
		rv = 0;
out:
	free(s);
	if (token != NULL)
		memset(token, 0, strlen(token));
	if (gtoken != NULL)
		memset(gtoken, 0, strlen(gtoken));
	free(token);
	free(gtoken);
	free(mid);
	return (rv);
}

int
store_save_in(const char *dir, json_t *cfg, char **cause)
{
	char *p = hb_fmt("%s/desktop.json", dir), *s = NULL;
	int rv = -1;

	if (p == NULL || (s = json_dumps(cfg, JSON_INDENT(2))) == NULL)
		*cause = hb_fmt("out of memory");
	/* 0600: it holds the policy, the operator's business */
	else
		rv = hb_write_file(p, s, strlen(s), 0600, cause);
	free(p);
	free(s);
	return (rv);
}

int
store_save(const struct desktop *d, json_t *cfg, char **cause)
{
	return (store_save_in(d->dir, cfg, cause));
}

/*
 * desktop.json's writers (the commands, the host agent, Mission Control)
 * run in different processes: each change is a read, a change and a
 * write under an flock of the desktop's directory itself (no file of its
 * own), so no writer's change is lost to another's older copy.
 */
int
store_update(const struct desktop *d, store_change_fn fn, void *arg,
    char **cause)
{
	int fd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rv = -1;
	char *p = desktop_path(d, "desktop.json");
	json_error_t jerr;
	json_t *cfg = NULL;

	if (fd < 0 || p == NULL) {
		*cause = hb_fmt("cannot open '%s': %s", d->dir,
		    p ? strerror(errno) : "out of memory");
		goto out;
	}
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			*cause = hb_fmt("cannot lock '%s': %s", d->dir,
			    strerror(errno));
			goto out;
		}
	}
	if ((cfg = json_load_file(p, 0, &jerr)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", p, jerr.text);
		goto out;
	}
	if (fn(cfg, arg, cause) == 0 && store_save(d, cfg, cause) == 0)
		rv = 0;
out:
	if (fd >= 0)
		close(fd); /* (the flock with it) */
	json_decref(cfg);
	free(p);
	return (rv);
}
