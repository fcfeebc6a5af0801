/*
 * host-bridge/vm/qemu_state.c: a desktop's saved state, as a laptop's
 * lid: `stop` saves the running VM and ends QEMU, `start` restores it.
 *
 * The guest's RAM lives in a file (memory-backend-file, share=on: QEMU
 * maps d->dir/ram), so a save need not copy it: with the migration
 * capability x-ignore-shared QEMU writes only the devices' state, a few
 * MB, to d->dir/state, and the RAM file stays where it is. A restore
 * starts QEMU paused with -incoming defer on that RAM file and reads the
 * state back. Beside them d->dir/state.json records what the state needs
 * to be restored (the QEMU version and machine type, memory, cpus), the
 * state file's BLAKE2b and the disks' and RAM file's sizes and times: a
 * state that no longer fits is refused before it could run a guest on
 * memory that does not match its disks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/disks.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/qmp.h"

/* How long a save or a restore's migration may take at most. */
#define STATE_TIMEOUT_MS 300000

static int qemu_state_to_fd(struct qmp *q, const char *tmp, int ignore_shared,
    char **cause);
static int qemu_state_from_fd(struct qmp *q, const char *st, char **cause);

/* BLAKE2b-256 of a file, as hex (malloc'd), NULL when unreadable. */
static char *
file_hash(const char *path)
{
	crypto_generichash_state st;
	unsigned char h[32], buf[65536];
	char *hex;
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return (NULL);
	crypto_generichash_init(&st, NULL, 0, sizeof h);
	while ((r = read(fd, buf, sizeof buf)) > 0)
		crypto_generichash_update(&st, buf, (size_t)r);
	close(fd);
	if (r < 0)
		return (NULL);
	crypto_generichash_final(&st, h, sizeof h);
	if ((hex = malloc(sizeof h * 2 + 1)) == NULL)
		return (NULL);
	return (sodium_bin2hex(hex, sizeof h * 2 + 1, h, sizeof h));
}

/* "SIZE MTIME_NS" of a desktop file ("-" when missing): the disks and the
 * RAM file must be as the save left them. */
static char *
file_stamp_in(const char *dir, const char *name)
{
	struct stat st;
	char *p = hb_fmt("%s/%s", dir, name), *s;

	if (p == NULL)
		return (NULL);
	s = stat(p, &st) == 0 ?
	    hb_fmt("%lld %lld", (long long)st.st_size,
	        (long long)st.st_mtim.tv_sec * 1000000000LL +
	            st.st_mtim.tv_nsec) :
	    strdup("-");
	free(p);
	return (s);
}

static char *
file_stamp(const struct desktop *d, const char *name)
{
	return (file_stamp_in(d->dir, name));
}

int
qemu_fsync_path(const char *path, int data_only)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rv;

	if (fd < 0)
		return (-1);
	rv = data_only ? fdatasync(fd) : fsync(fd);
	close(fd);
	return (rv);
}

/* "7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)" and "7.2" of a QEMU. */
int
qemu_qmp_version(struct qmp *q, char **full, char **series, char **cause)
{
	json_t *r = NULL, *v;
	int rv = -1;

	if (qmp_exec(q, "query-version", NULL, &r, cause) != 0)
		return (-1);
	v = json_object_get(r, "qemu");
	*full = hb_fmt("%lld.%lld.%lld (%s)",
	    (long long)json_integer_value(json_object_get(v, "major")),
	    (long long)json_integer_value(json_object_get(v, "minor")),
	    (long long)json_integer_value(json_object_get(v, "micro")),
	    json_string_value(json_object_get(r, "package")) ?: "");
	*series = hb_fmt("%lld.%lld",
	    (long long)json_integer_value(json_object_get(v, "major")),
	    (long long)json_integer_value(json_object_get(v, "minor")));
	if (*full != NULL && *series != NULL)
		rv = 0;
	else
		*cause = hb_fmt("out of memory");
	json_decref(r);
	return (rv);
}

int
qemu_set_ignore_shared(struct qmp *q, int on, char **cause)
{
	return (qmp_exec(q, "migrate-set-capabilities",
	    json_pack("{s:[{s:s, s:b}]}", "capabilities", "capability",
	        "x-ignore-shared", "state", on),
	    NULL, cause));
}

/*
 * No bandwidth cap on a save: QEMU throttles a migration to 128 MiB/s by
 * default (max-bandwidth), meant for a live migration over a network
 * that the guest's own traffic shares. A save to a local file of a
 * stopped VM only waits for it: a clone's first save, which writes its
 * RAM into the state (418 MB), took 10.9 s.
 */
int
qemu_set_unthrottled(struct qmp *q, char **cause)
{
	return (qmp_exec(q, "migrate-set-parameters",
	    json_pack("{s:I}", "max-bandwidth", (json_int_t)1 << 40), NULL,
	    cause));
}

int
qemu_saved(const struct desktop *d)
{
	char *p = desktop_path(d, "state");
	int r = p != NULL && access(p, F_OK) == 0;

	free(p);
	return (r);
}

void
qemu_unlink(const struct desktop *d, const char *const *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *p = desktop_path(d, files[i]);
		if (p != NULL)
			unlink(p);
		free(p);
	}
}

void
qemu_drop_ram(const struct desktop *d)
{
	static const char *const files[] = { "ram", "ram.base", "state.base" };

	qemu_unlink(d, files, sizeof files / sizeof files[0]);
}

int
qemu_on_base(const struct desktop *d)
{
	char *p = desktop_path(d, "ram.base");
	int r = p != NULL && access(p, F_OK) == 0;

	free(p);
	return (r);
}

void
qemu_discard(const struct desktop *d)
{
	static const char *const files[] = { "state", "state.json",
		"state.tmp" };

	qemu_unlink(d, files, sizeof files / sizeof files[0]);
	if (qemu_pid(d) == 0) {
		qemu_drop_ram(d);
		qemu_warm_forget(d);
	}
}

/* End QEMU without touching the saved state (quit, else SIGKILL). */
static void
qemu_end(const struct desktop *d, struct qmp *q)
{
	pid_t pid = qemu_pid(d);
	char *c = NULL;

	if (q == NULL || qmp_exec(q, "quit", NULL, NULL, &c) != 0) {
		if (pid != 0)
			kill(pid, SIGTERM);
	}
	free(c);
	if (pid != 0 && qemu_wait_exit(pid, 10000) != 0) {
		kill(pid, SIGKILL);
		qemu_wait_exit(pid, 10000);
	}
}

/* Wait for an outgoing migration to end: 0 once completed. */
int
qemu_migrate_wait(struct qmp *q, char **cause)
{
	long long deadline = hb_now_ms() + STATE_TIMEOUT_MS;

	for (;;) {
		json_t *r = NULL;
		const char *st;

		if (qmp_exec(q, "query-migrate", NULL, &r, cause) != 0)
			return (-1);
		st = json_string_value(json_object_get(r, "status")) ?: "";
		if (strcmp(st, "completed") == 0) {
			json_decref(r);
			return (0);
		}
		if (strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0) {
			*cause = hb_fmt("the save %s: %s", st,
			    json_string_value(json_object_get(r, "error-desc")) ?:
			        "no reason given");
			json_decref(r);
			return (-1);
		}
		json_decref(r);
		if (hb_now_ms() >= deadline) {
			*cause = hb_fmt("the save did not end within %d s",
			    STATE_TIMEOUT_MS / 1000);
			return (-1);
		}
		usleep(20000);
	}
}

/*
 * The state of the stopped QEMU pid of d into tmp: on its warm state's
 * RAM (base), what it changed of it and its devices (qemu_stream.c); else
 * its devices (x-ignore-shared: the RAM file stays where it is), or with
 * inram its RAM too. After a migration the VM is "postmigrate": cont
 * runs it again (qemu_state_cont).
 */
int
qemu_state_write(const struct desktop *d, struct qmp *q, pid_t pid, int base,
    int inram, const char *tmp, size_t *changed, char **cause)
{
	int rv = -1;

	*changed = 0;
	unlink(tmp);
	if (base) {
		rv = qemu_stream_save(d, q, pid, tmp, changed, cause);
		goto out;
	}
	rv = qemu_state_to_fd(q, tmp, !inram, cause);
out:
	if (rv != 0)
		unlink(tmp);
	return (rv);
}

int
qemu_state_cont(struct qmp *q, int run, char **cause)
{
	json_t *st = NULL;
	char *c2 = NULL;
	int post, rv = 0;

	/* (snapshot-save must include the RAM again) */
	qemu_set_ignore_shared(q, 0, &c2);
	free(c2);
	c2 = NULL;
	if (run)
		return (qmp_exec(q, "cont", NULL, NULL, cause));
	/* Paused after a migration, its disks are inactive: a later save,
	 * snapshot or fork would fail ("Can't migrate the vm that was
	 * paused due to previous migration"). QEMU 7.2 activates them only
	 * in cont, so it runs for a moment and stops again. */
	if (qmp_exec(q, "query-status", NULL, &st, cause) != 0)
		return (-1);
	post = strcmp(json_string_value(json_object_get(st, "status")) ?: "",
	           "postmigrate") == 0;
	json_decref(st);
	if (post &&
	    (qmp_exec(q, "cont", NULL, NULL, cause) != 0 ||
	        qmp_exec(q, "stop", NULL, NULL, cause) != 0))
		rv = -1;
	return (rv);
}

/*
 * tmp, a state qemu_state_write wrote for d's files as they are now, made
 * d's saved state: synced, state.json written beside it (what it needs:
 * the QEMU, machine, memory, cpus; its hash; the stamps of the files it
 * goes with), renamed to state.
 */
/* j's "chains": each disk's backing chain as its qcow2 headers name it
 * (disks.c), which the state fits only while they do. */
static int
state_chains(const struct desktop *d, json_t *j, char **cause)
{
	json_t *sys = disks_chain(d, "system.qcow2", cause), *home = NULL;

	if (sys == NULL ||
	    (home = disks_chain(d, "home.qcow2", cause)) == NULL ||
	    json_object_set_new(j, "chains",
	        json_pack("{s:o, s:o}", "system", sys, "home", home)) != 0) {
		if (sys != NULL && home == NULL) {
			json_decref(sys);
			return (-1);
		}
		if (sys == NULL)
			return (-1);
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	return (0);
}

/* The stamps of d's disks in j taken anew (their sizes and times, their
 * chains): see qemu_snapshot_offline. */
static int
state_restamp(const struct desktop *d, const char *name, char **cause)
{
	char *mn = hb_fmt("%s/%s.json", d->dir, name), *s = NULL;
	char *sys = file_stamp(d, "system.qcow2"),
	     *home = file_stamp(d, "home.qcow2");
	json_error_t jerr;
	json_t *j = NULL;
	int rv = -1;

	if (mn == NULL || sys == NULL || home == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if ((j = json_load_file(mn, 0, &jerr)) == NULL) {
		*cause = hb_fmt("unreadable '%s': %s", mn, jerr.text);
		goto out;
	}
	if (json_object_set_new(j, "system", json_string(sys)) != 0 ||
	    json_object_set_new(j, "home", json_string(home)) != 0 ||
	    state_chains(d, j, cause) != 0 ||
	    (s = json_dumps(j, JSON_INDENT(2))) == NULL) {
		if (*cause == NULL)
			*cause = hb_fmt("out of memory");
		goto out;
	}
	rv = hb_write_file(mn, s, strlen(s), 0600, cause);
out:
	json_decref(j);
	free(mn);
	free(s);
	free(sys);
	free(home);
	return (rv);
}

int
qemu_snapshot_offline(const struct desktop *d, const char *tag, int restore,
    const char *name, char **cause)
{
	json_t *j = NULL;
	char *c2 = NULL;
	int fits = 0;

	if (tag != NULL && !restore) {
		j = qemu_state_meta(d, d->dir, name, NULL, &c2);
		fits = j != NULL;
		json_decref(j);
		free(c2);
	}
	if (disks_snapshot(d, tag, restore, cause) != 0)
		return (-1);
	if (fits && state_restamp(d, name, &c2) != 0) {
		*cause = hb_fmt("snapshot '%s' taken, but the saved state's "
		                "record of the disks was not updated (%s): the "
		                "next start boots",
		    tag, c2 ? c2 : "?");
		free(c2);
		return (-1);
	}
	return (0);
}

int
qemu_state_seal(const struct desktop *d, const char *tmp, const char *full,
    const char *series, int base, int inram, size_t changed, char **cause)
{
	return (qemu_state_seal_as(d, "state", tmp, full, series, base, inram,
	    changed, cause));
}

int
qemu_state_seal_as(const struct desktop *d, const char *name, const char *tmp,
    const char *full, const char *series, int base, int inram, size_t changed,
    char **cause)
{
	char *mn = hb_fmt("%s.json", name);
	char *meta = mn ? desktop_path(d, mn) : NULL,
	     *st = desktop_path(d, name);
	char *hash = NULL, *s = NULL, *ramst = NULL, *sys = NULL, *home = NULL;
	json_t *j = NULL;
	int rv = -1;

	if (meta == NULL || st == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (qemu_fsync_path(tmp, 0) != 0) {
		*cause = hb_fmt("cannot sync the saved state: %s",
		    strerror(errno));
		goto out;
	}
	if ((hash = file_hash(tmp)) == NULL ||
	    (ramst = file_stamp(d, base ? "ram.base" : "ram")) == NULL ||
	    (sys = file_stamp(d, "system.qcow2")) == NULL ||
	    (home = file_stamp(d, "home.qcow2")) == NULL) {
		*cause = hb_fmt("cannot read the saved state '%s': %s", tmp,
		    strerror(errno));
		goto out;
	}
	j = json_pack("{s:s, s:s, s:s, s:I, s:i, s:I, s:s, s:s, s:s, s:s, "
	              "s:b}",
	    "qemu", full, "qemu_series", series, "machine", QEMU_MACHINE,
	    "memory", (json_int_t)d->memory, "cpus", d->cpus, "saved",
	    (json_int_t)time(NULL), "state_blake2b", hash, "ram", ramst,
	    "system", sys, "home", home, "ram_in_state", inram);
	/* Restored on the warm RAM again, which the stamp is of. */
	if (j != NULL && base &&
	    (json_object_set_new(j, "ram_file", json_string("ram.base")) != 0 ||
	        json_object_set_new(j, "ram_changed_pages",
	            json_integer((json_int_t)changed)) != 0)) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (j == NULL || state_chains(d, j, cause) != 0)
		goto out;
	if ((s = json_dumps(j, JSON_INDENT(2))) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (hb_write_file(meta, s, strlen(s), 0600, cause) != 0)
		goto out;
	if (rename(tmp, st) != 0) {
		*cause = hb_fmt("cannot rename '%s': %s", tmp, strerror(errno));
		goto out;
	}
	qemu_fsync_path(d->dir, 0);
	rv = 0;
out:
	json_decref(j);
	free(mn);
	free(meta);
	free(st);
	free(hash);
	free(s);
	free(ramst);
	free(sys);
	free(home);
	return (rv);
}

int
qemu_save(const struct desktop *d, char **cause)
{
	pid_t pid = qemu_pid(d);
	struct qmp *q = NULL;
	char *qmps = desktop_path(d, "qmp.sock"), *tmp = NULL, *ram = NULL;
	char *full = NULL, *series = NULL, *c2 = NULL;
	int rv = -1, stopped = 0, inram = 0, base = 0;
	size_t changed = 0;

	if (pid == 0) {
		*cause = hb_fmt("desktop '%s' is not running", d->name);
		goto out;
	}
	if (qmps == NULL || (tmp = desktop_path(d, "state.tmp")) == NULL ||
	    (ram = desktop_path(d, "ram")) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	/* A clone on its warm state's RAM (mapped privately) has no RAM
	 * file of its own: this save writes what it changed of the RAM
	 * into the state (qemu_stream.c); one started by an older bureau
	 * (warm-ram) all of it. */
	base = qemu_on_base(d);
	inram = !base && qemu_running_warm_ram(d);
	if (inram)
		unlink(ram);
	else if (!base && access(ram, F_OK) != 0) {
		*cause = hb_fmt("desktop '%s' was started before saved states "
		                "(no RAM file): stop --shutdown it once",
		    d->name);
		goto out;
	}
	if (qmp_open(&q, qmps, 30000, cause) != 0 ||
	    qemu_qmp_version(q, &full, &series, cause) != 0)
		goto out;
	if (qmp_exec(q, "stop", NULL, NULL, cause) != 0)
		goto out;
	stopped = 1;
	if (qemu_state_write(d, q, pid, base, inram, tmp, &changed, cause) != 0)
		goto out;
	/* The VM is saved: from here on it must not run again. */
	stopped = 0;
	qemu_end(d, q);
	qmp_close(q);
	q = NULL;
	/* On disk before the state says it can be restored: the RAM file's
	 * pages are the guest's memory, a state without them is garbage. */
	if (!inram && !base && qemu_fsync_path(ram, 1) != 0) {
		*cause = hb_fmt("cannot sync the saved state: %s",
		    strerror(errno));
		goto out;
	}
	/* Disk layers of forks that are gone fold back into the disks,
	 * before the state records the disks' stamps (the names this QEMU
	 * knew its overlays by are gone first: they are links). */
	disks_drop_aliases(d);
	if (disks_collapse(d, qemu_layer_name, &c2) != 0) {
		fprintf(stderr,
		    "bureau: warning: the disk layers of '%s' stay as they "
		    "are: %s\n",
		    d->name, c2 ? c2 : "?");
		free(c2);
		c2 = NULL;
	}
	if (qemu_state_seal(d, tmp, full, series, base, inram, changed,
	        cause) != 0)
		goto out;
	/* Saved whole: an ordinary saved desktop from now on. */
	if (inram)
		qemu_warm_forget(d);
	rv = 0;
out:
	if (rv != 0 && stopped && qemu_state_cont(q, 1, &c2) != 0) {
		/* Not saved: the desktop runs on as it was, or says why not. */
		char *m = hb_fmt("%s; and it did not run again: %s", *cause,
		    c2 ? c2 : "?");
		free(*cause);
		*cause = m;
	}
	free(c2);
	if (rv != 0 && tmp != NULL)
		unlink(tmp);
	qmp_close(q);
	free(qmps);
	free(tmp);
	free(ram);
	free(full);
	free(series);
	return (rv);
}

/* Does state.json still describe this desktop's files? */
int
qemu_state_fits(const struct desktop *d, const char *dir, const char *name,
    json_t *j, char **cause)
{
	static const char *const stamps[][2] = { { "ram", "ram" },
		{ "system", "system.qcow2" }, { "home", "home.qcow2" } };
	const char *m = json_string_value(json_object_get(j, "machine"));
	const char *h = json_string_value(json_object_get(j, "state_blake2b"));
	char *p, *hash;
	int ok;

	if (m == NULL || strcmp(m, QEMU_MACHINE) != 0) {
		*cause = hb_fmt("it was saved from machine type '%s', this "
		                "bureau runs '%s'",
		    m ?: "?", QEMU_MACHINE);
		return (-1);
	}
	if (json_integer_value(json_object_get(j, "memory")) != d->memory ||
	    json_integer_value(json_object_get(j, "cpus")) != d->cpus) {
		*cause = hb_fmt("it was saved with other memory or cpus");
		return (-1);
	}
	for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
		const char *want = json_string_value(
		    json_object_get(j, stamps[i][0]));
		const char *file = stamps[i][1];
		char *have;
		/* (a clone on its warm RAM: the link to it) */
		if (i == 0 && json_is_string(json_object_get(j, "ram_file")))
			file = json_string_value(
			    json_object_get(j, "ram_file"));
		if (strchr(file, '/') != NULL) {
			*cause = hb_fmt("state.json names a RAM file '%s'",
			    file);
			return (-1);
		}
		have = file_stamp_in(dir, file);
		ok = want != NULL && have != NULL && strcmp(want, have) == 0;
		free(have);
		if (!ok) {
			*cause = hb_fmt("'%s' changed since it was saved",
			    file);
			return (-1);
		}
	}
	/* the disks' chains as saved (a state of a desktop's own: a warm
	 * state's were another desktop's) */
	if (strcmp(dir, d->dir) == 0 && json_object_get(j, "chains") != NULL) {
		json_t *chains = json_object_get(j, "chains");
		json_t *now = json_object();
		char *c2 = NULL;

		ok = now != NULL && state_chains(d, now, &c2) == 0 &&
		    json_equal(chains, json_object_get(now, "chains"));
		json_decref(now);
		if (!ok) {
			*cause = hb_fmt("its disks' backing chains are not "
			                "those it was saved on%s%s",
			    c2 ? ": " : "", c2 ? c2 : "");
			free(c2);
			return (-1);
		}
	}
	if ((p = hb_fmt("%s/%s", dir, name)) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	hash = file_hash(p);
	free(p);
	ok = hash != NULL && h != NULL && strcmp(hash, h) == 0;
	free(hash);
	if (!ok) {
		*cause = hb_fmt("the state file is damaged: its checksum "
		                "differs");
		return (-1);
	}
	return (0);
}

/* Incoming, the VM is "inmigrate" until the state is in, then
 * "paused" (-S); a state QEMU cannot load makes it exit. */
int
qemu_state_loaded(const struct desktop *d, struct qmp *q, char **cause)
{
	long long deadline = hb_now_ms() + STATE_TIMEOUT_MS;
	char *c2 = NULL;

	for (;;) {
		json_t *r = NULL;
		const char *s;

		if (qmp_exec(q, "query-status", NULL, &r, &c2) != 0) {
			free(c2);
			c2 = NULL;
			if (qemu_pid(d) == 0) {
				/* Daemonized, QEMU said why on a closed
				 * stderr. */
				*cause = hb_fmt("qemu exited while it loaded "
				                "it (damaged, or not a state "
				                "this QEMU reads)");
				return (-1);
			}
			*cause = hb_fmt("qemu stopped answering while it "
			                "loaded the state");
			return (-1);
		}
		s = json_string_value(json_object_get(r, "status")) ?: "";
		if (strcmp(s, "inmigrate") != 0) {
			int ok = strcmp(s, "paused") == 0;
			if (!ok)
				*cause = hb_fmt("qemu is '%s' after loading "
				                "the state",
				    s);
			json_decref(r);
			return (ok ? 0 : -1);
		}
		json_decref(r);
		if (hb_now_ms() >= deadline) {
			*cause = hb_fmt("the restore did not end within %d s",
			    STATE_TIMEOUT_MS / 1000);
			return (-1);
		}
		usleep(20000);
	}
}

int
qemu_warm_grow(struct qmp *q, json_t *warm, const char *sys, const char *home,
    char **cause)
{
	static const char *const grow[][2] = {
		{ "disk", "warm_disk" },
		{ "home", "warm_home" },
	};

	for (size_t i = 0; i < sizeof grow / sizeof grow[0]; i++) {
		json_int_t to = json_integer_value(
		    json_object_get(warm, grow[i][0]));
		json_int_t from = json_integer_value(
		    json_object_get(warm, grow[i][1]));
		/* (a clone by an older bureau has no warm_disk) */
		if (from > 0 && to > from &&
		    qmp_exec(q, "block_resize",
		        json_pack("{s:s, s:I}", "node-name",
		            i == 0 ? sys : home, "size", to),
		        NULL, cause) != 0)
			return (-1);
	}
	return (0);
}

json_t *
qemu_state_meta(const struct desktop *d, const char *dir, const char *name,
    json_t *warm, char **cause)
{
	char *meta = hb_fmt("%s/%s.json", dir, name);
	json_error_t jerr;
	json_t *j = NULL;

	if (meta == NULL)
		*cause = hb_fmt("out of memory");
	else if ((j = json_load_file(meta, 0, &jerr)) == NULL)
		*cause = hb_fmt("unreadable '%s': %s", meta, jerr.text);
	else if (warm != NULL &&
	    !json_equal(json_object_get(warm, "state_blake2b"),
	        json_object_get(j, "state_blake2b"))) {
		*cause = hb_fmt("the image's warm state was remade since this "
		                "desktop was created from it");
		json_decref(j);
		j = NULL;
	} else if (qemu_state_fits(d, dir, name, j, cause) != 0) {
		json_decref(j);
		j = NULL;
	}
	free(meta);
	return (j);
}

int
qemu_restore(const struct desktop *d, const struct image *im, const char *accel,
    char **cause)
{
	struct qmp *q = NULL;
	char *st = NULL, *ms = NULL;
	char *qmps = NULL, *full = NULL;
	char *series = NULL;
	const char *was;
	json_t *j = NULL, *warm = NULL;
	int rv = -1, launched = 0, ram_in_state = 0;
	const char *wdir = NULL;

	/* A clone's first start: the warm state of its image, which stays
	 * (other clones read it), is restored into this desktop's disks. */
	if ((warm = qemu_warm_from(d)) != NULL)
		wdir = json_string_value(json_object_get(warm, "warm"));
	if ((st = warm ? hb_fmt("%s/state", wdir) : desktop_path(d, "state")) ==
	        NULL ||
	    (qmps = desktop_path(d, "qmp.sock")) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if ((j = qemu_state_meta(d, warm ? wdir : d->dir, "state", warm,
	         cause)) == NULL)
		goto out;
	ram_in_state = json_is_true(json_object_get(j, "ram_in_state"));
	/* A clone runs on the warm RAM, mapped privately through a link
	 * (qemu_stream.c); on another file system than the image, on a
	 * copy of it (qemu_warm.c). */
	if (warm != NULL) {
		int l = qemu_warm_link_ram(d, wdir, cause);
		if (l < 0 || (l > 0 && qemu_warm_copy_ram(d, wdir, cause) != 0))
			goto out;
	} else if (qemu_on_base(d) &&
	    !json_is_string(json_object_get(j, "ram_file"))) {
		*cause = hb_fmt("the state is not of the warm RAM this "
		                "desktop runs on");
		goto out;
	}
	if (qemu_launch(d, im, accel, 1, cause) != 0)
		goto out;
	launched = 1;
	if (qmp_open(&q, qmps, 30000, cause) != 0 ||
	    qemu_qmp_version(q, &full, &series, cause) != 0)
		goto out;
	/* QEMU keeps a machine type's migration format within a release
	 * series and across its stable updates; another series may read
	 * it differently without noticing. */
	was = json_string_value(json_object_get(j, "qemu_series"));
	if (was == NULL || strcmp(was, series) != 0) {
		*cause = hb_fmt("it was saved by QEMU %s, this is QEMU %s",
		    json_string_value(json_object_get(j, "qemu")) ?: "?", full);
		goto out;
	}
	/* A state that holds the RAM (a clone's first save) loads it into
	 * this desktop's RAM file, which x-ignore-shared would refuse. */
	if (qemu_set_ignore_shared(q, !ram_in_state, cause) != 0 ||
	    qemu_state_from_fd(q, st, cause) != 0)
		goto out;
	if (qemu_state_loaded(d, q, cause) != 0)
		goto out;
	/* Snapshots (snapshot-save) must include the RAM again. */
	if (qemu_set_ignore_shared(q, 0, cause) != 0)
		goto out;
	if (warm != NULL) {
		/* Disks larger than the warm state's: grown online (the
		 * guest's virtio-blk sees the new size, its udev rules grow
		 * the file systems: bureau-growfs, bureau-growhome). */
		if (qemu_warm_grow(q, warm, "sys", "home", cause) != 0)
			goto out;
		/* From here on an ordinary desktop on its own RAM. */
		qemu_warm_forget(d);
	} else {
		/* Once it runs its RAM moves on: the state is spent. */
		ms = desktop_path(d, "state.json");
		unlink(st);
		if (ms != NULL)
			unlink(ms);
	}
	if (qmp_exec(q, "cont", NULL, NULL, cause) != 0)
		goto out;
	qemu_net_redial(d);
	rv = 0;
out:
	if (rv != 0 && launched)
		qemu_end(d, q);
	qmp_close(q);
	json_decref(j);
	json_decref(warm);
	free(st);
	free(ms);
	free(qmps);
	free(full);
	free(series);
	return (rv);
}

int
qemu_state_write_fd(struct qmp *q, const char *tmp, char **cause)
{
	unlink(tmp);
	return (qemu_state_to_fd(q, tmp, 1, cause));
}

/*
 * The migration into a new file tmp through a descriptor handed to QEMU
 * (getfd, "fd:"), as libvirt does: QEMU's sandbox (qemu.c,
 * -sandbox spawn=deny) lets it run no "exec:" command.
 */
static int
qemu_state_to_fd(struct qmp *q, const char *tmp, int ignore_shared,
    char **cause)
{
	int fd, rv = -1;

	if ((fd = open(tmp,
	         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) <
	    0) {
		*cause = hb_fmt("cannot create '%s': %s", tmp, strerror(errno));
		return (-1);
	}
	if (qemu_set_ignore_shared(q, ignore_shared, cause) == 0 &&
	    qemu_set_unthrottled(q, cause) == 0 &&
	    qmp_getfd(q, "bureau-state", fd, cause) == 0 &&
	    qmp_exec(q, "migrate", json_pack("{s:s}", "uri", "fd:bureau-state"),
	        NULL, cause) == 0 &&
	    qemu_migrate_wait(q, cause) == 0)
		rv = 0;
	close(fd);
	return (rv);
}

/* A restore's migration from the state file, by descriptor as above. */
static int
qemu_state_from_fd(struct qmp *q, const char *st, char **cause)
{
	int fd = open(st, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rv = -1;

	if (fd < 0) {
		*cause = hb_fmt("cannot open '%s': %s", st, strerror(errno));
		return (-1);
	}
	if (qmp_getfd(q, "bureau-state", fd, cause) == 0 &&
	    qmp_exec(q, "migrate-incoming",
	        json_pack("{s:s}", "uri", "fd:bureau-state"), NULL, cause) == 0)
		rv = 0;
	close(fd);
	return (rv);
}
