/*
 * host-bridge/store/store.c: desktop directories, their settings, ports,
 * and the images they boot.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/store/files.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

/* The rule names had before they were DNS labels: letters, digits, '-',
 * '_' and '.' (not first), at most 64. */
static int
store_old_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64)
		return (0);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') ||
		        (i > 0 && (c == '-' || c == '_' || c == '.'))))
			return (0);
	}
	return (1);
}

/* A DNS label (RFC 1123), lowercase: the guest's hostname. */
static int
store_dns_label(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63 || name[0] == '-' || name[n - 1] == '-')
		return (0);
	return (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == n);
}

/* A desktop directory is there under name (a directory, not a symlink,
 * holding desktop.json). */
static int
store_desktop_there(const char *name)
{
	char *dir = store_dir(name, NULL),
	     *cfg = store_dir(name, "desktop.json");
	struct stat st;
	int there = dir != NULL && cfg != NULL && lstat(dir, &st) == 0 &&
	    S_ISDIR(st.st_mode) && lstat(cfg, &st) == 0;

	free(dir);
	free(cfg);
	return (there);
}

int
store_valid_name(const char *name, char **cause)
{
	if (store_own_name(name)) {
		*cause = hb_fmt("invalid desktop name '%s': a file of the "
		                "store's own has it",
		    name);
		return (-1);
	}
	/* A desktop made before names were DNS labels keeps its name:
	 * found, listed, started, removed as before. */
	if (store_dns_label(name) ||
	    (store_old_name(name) && store_desktop_there(name)))
		return (0);
	*cause = hb_fmt("invalid desktop name '%s': it becomes the guest's "
	                "hostname, a DNS label: lowercase letters, digits "
	                "and '-', 1 to 63, not starting or ending with '-'",
	    name);
	return (-1);
}

char *
store_dir(const char *name, const char *file)
{
	char *home = hb_home(), *p;

	if (home == NULL)
		return (NULL);
	p = file ? hb_fmt("%s/%s/%s", home, name, file) :
	           hb_fmt("%s/%s", home, name);
	free(home);
	return (p);
}

char *
desktop_path(const struct desktop *d, const char *file)
{
	return (hb_fmt("%s/%s", d->dir, file));
}

long long
desktop_file_bytes(const struct desktop *d, const char *file)
{
	struct stat st;
	char *p = desktop_path(d, file);
	long long n = p && stat(p, &st) == 0 ? (long long)st.st_blocks * 512 :
	                                       0;

	free(p);
	return (n);
}

void
desktop_free(struct desktop *d)
{
	if (d == NULL)
		return;
	free(d->name);
	free(d->dir);
	free(d->image);
	free(d->url);
	free(d->net_allow);
	free(d->fork_of);
	free(d->host);
	free(d->remote_dir);
	free(d);
}

int
store_set_limits(json_t *j, long cpu_milli, long long disk_bps, long disk_iops,
    long long net_rate)
{
	static const char *const keys[] = { "cpu_limit", "disk_bps",
		"disk_iops", "net_rate" };
	long long v[] = { cpu_milli, disk_bps, disk_iops, net_rate };

	for (int i = 0; i < 4; i++) {
		json_object_del(j, keys[i]);
		if (v[i] > 0 &&
		    json_object_set_new(j, keys[i],
		        i == 0 ? json_real(v[i] / 1000.0) :
		                 json_integer(v[i])) != 0)
			return (-1);
	}
	return (0);
}

/* A limit of desktop.json: a whole number in 1..max, else 0 (none). */
static long long
store_limit(json_t *j, const char *key, long long max)
{
	json_t *v = json_object_get(j, key);

	return (json_is_integer(v) && json_integer_value(v) > 0 &&
	            json_integer_value(v) <= max ?
	        (long long)json_integer_value(v) :
	        0);
}

/* desktop.json's limits (cpu_limit in cores, disk_bps, disk_iops,
 * net_rate): a value out of range is taken as none, as `bureau config`
 * can set it again (they are checked where they are given). */
static void
store_load_limits(struct desktop *d, json_t *j)
{
	json_t *c = json_object_get(j, "cpu_limit");
	double cores = json_is_number(c) ? json_number_value(c) : 0;

	d->cpu_milli = cores >= 0.05 && cores <= d->cpus ?
	    (long)(cores * 1000 + 0.5) :
	    0;
	d->disk_bps = store_limit(j, "disk_bps", STORE_DISK_BPS_MAX);
	d->disk_iops = (long)store_limit(j, "disk_iops", STORE_DISK_IOPS_MAX);
	d->net_rate = store_limit(j, "net_rate", STORE_DISK_BPS_MAX);
}

int
desktop_load(const char *name, struct desktop **out, char **cause)
{
	struct desktop *d = NULL;
	json_t *j = NULL;
	char *path = NULL;
	json_error_t err;
	const char *image;
	json_int_t memory, cpus, port;

	if (store_valid_name(name, cause) != 0)
		return (-1);
	if ((d = calloc(1, sizeof *d)) == NULL ||
	    (d->name = strdup(name)) == NULL ||
	    (d->dir = store_dir(name, NULL)) == NULL ||
	    (path = desktop_path(d, "desktop.json")) == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	if ((j = json_load_file(path, 0, &err)) == NULL) {
		if (access(d->dir, F_OK) != 0)
			*cause = hb_fmt("no desktop '%s' (bureau create %s)",
			    name, name);
		else
			*cause = hb_fmt("cannot read '%s': %s", path, err.text);
		goto fail;
	}
	if (json_is_string(json_object_get(j, "kind")) &&
	    strcmp(json_string_value(json_object_get(j, "kind")), "attached") ==
	        0) {
		const char *url;

		if (json_unpack_ex(j, &err, 0, "{s:s, s:I}", "url", &url,
		        "port", &port) != 0) {
			*cause = hb_fmt("invalid '%s': %s", path, err.text);
			goto fail;
		}
		if (port < 1 || port > 65533) {
			*cause = hb_fmt("invalid '%s': port out of range",
			    path);
			goto fail;
		}
		if ((d->url = strdup(url)) == NULL) {
			*cause = hb_fmt("out of memory");
			goto fail;
		}
		d->attached = 1;
		d->port = (int)port;
		goto done;
	}
	if (json_unpack_ex(j, &err, 0, "{s:s, s:I, s:I, s:I}", "image", &image,
	        "memory", &memory, "cpus", &cpus, "port", &port) != 0) {
		*cause = hb_fmt("invalid '%s': %s", path, err.text);
		goto fail;
	}
	if (memory < 1 || memory > (1L << 30) || cpus < 1 || cpus > 1024 ||
	    port < 1 || port > 65533) {
		*cause = hb_fmt("invalid '%s': memory, cpus or port out of "
		                "range",
		    path);
		goto fail;
	}
	if ((d->image = strdup(image)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	d->memory = (long)memory;
	d->cpus = (int)cpus;
	d->net_none = json_is_string(json_object_get(j, "net")) &&
	    strcmp(json_string_value(json_object_get(j, "net")), "none") == 0;
	d->port = (int)port;
	if (json_is_string(json_object_get(j, "net_allow")) &&
	    (d->net_allow = strdup(
	         json_string_value(json_object_get(j, "net_allow")))) == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	d->ephemeral = json_is_true(json_object_get(j, "ephemeral"));
	d->agent_made = json_is_true(json_object_get(j, "agent_made"));
	d->max_forks = json_is_integer(json_object_get(j, "max_forks")) ?
	    (int)json_integer_value(json_object_get(j, "max_forks")) :
	    STORE_MAX_FORKS;
	if (d->max_forks < 0 || d->max_forks > STORE_MAX_FORKS_MAX)
		d->max_forks = STORE_MAX_FORKS;
	store_load_limits(d, j);
	if (json_is_string(json_object_get(j, "host")) &&
	    !host_is_local(json_string_value(json_object_get(j, "host"))) &&
	    (d->host = strdup(json_string_value(json_object_get(j, "host")))) ==
	        NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
	/* on another machine (cli/remote.c): its directory and agent port
	 * there */
	if (json_is_object(json_object_get(j, "remote"))) {
		json_t *r = json_object_get(j, "remote");
		const char *rd = json_string_value(json_object_get(r, "dir"));
		json_int_t rp = json_integer_value(json_object_get(r, "port"));

		if (rd == NULL || rd[0] != '/' || rp < 1 || rp > 65533 ||
		    d->host == NULL) {
			*cause = hb_fmt("invalid '%s': remote needs a host, an "
			                "absolute dir and a port",
			    path);
			goto fail;
		}
		if ((d->remote_dir = strdup(rd)) == NULL) {
			*cause = hb_fmt("out of memory");
			goto fail;
		}
		d->remote_port = (int)rp;
	}
	if (json_is_string(json_object_get(j, "fork_of")) &&
	    (d->fork_of = strdup(
	         json_string_value(json_object_get(j, "fork_of")))) == NULL) {
		*cause = hb_fmt("out of memory");
		goto fail;
	}
done:
	json_decref(j);
	free(path);
	*out = d;
	return (0);
fail:
	json_decref(j);
	free(path);
	desktop_free(d);
	return (-1);
}

pid_t
store_lock_pid(const char *path)
{
	char buf[32];
	pid_t pid = 0;
	ssize_t n;
	long v;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return (0);
	/* A shared lock we can take means no one holds the exclusive one. */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
		close(fd);
		return (0);
	}
	n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	v = strtol(buf, NULL, 10);
	if (v > 0 && v < (1L << 30))
		pid = (pid_t)v;
	return (pid);
}

pid_t
store_agent_pid(const struct desktop *d)
{
	char *path = desktop_path(d, "agent.pid");
	pid_t pid = path ? store_lock_pid(path) : 0;

	free(path);
	return (pid);
}

int
store_each(store_each_fn fn, void *arg)
{
	char *home = hb_home();
	struct dirent **ents = NULL;
	int n = home ? scandir(home, &ents, NULL, alphasort) : -1;

	for (int i = 0; i < n; i++) {
		char *cfg = hb_fmt("%s/%s/desktop.json", home, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && cfg != NULL &&
		    access(cfg, F_OK) == 0)
			fn(ents[i]->d_name, arg);
		free(cfg);
		free(ents[i]);
	}
	free(ents);
	free(home);
	return (n < 0 ? -1 : 0);
}

int
store_port_free(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;
	struct sockaddr_in sa = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	if (fd < 0)
		return (0);
	/* As QEMU binds its forwards: connections of a desktop that just
	 * stopped (saved in a second) linger in TIME_WAIT, which does not
	 * keep QEMU from listening again; a listener does. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return (ok);
}

int
store_lock(const struct desktop *d, const char *what, int *fd, char **cause)
{
	char *path = desktop_path(d, "lock"), *rec = NULL, held[256];
	ssize_t n;

	*fd = -1;
	if (path == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*fd < 0) {
		*cause = hb_fmt("cannot open '%s': %s", path, strerror(errno));
		free(path);
		return (-1);
	}
	if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		n = pread(*fd, held, sizeof held - 1, 0);
		held[n > 0 ? n : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		/* the holder writes its record just after it locks: a loser
		 * that comes in between finds it empty */
		*cause = e == EWOULDBLOCK ?
		    hb_fmt("desktop '%s' is busy: "
		           "%s%s holds its lock; try again when it is done",
		        d->name, held[0] ? "pid " : "another command", held) :
		    hb_fmt("cannot lock '%s': %s", path, strerror(e));
		close(*fd);
		*fd = -1;
		free(path);
		return (-1);
	}
	free(path);
	/* Who holds it, for the loser's message; the lock itself is flock. */
	if ((rec = hb_fmt("%d bureau %s\n", (int)getpid(), what)) != NULL &&
	    ftruncate(*fd, 0) == 0)
		n = pwrite(*fd, rec, strlen(rec), 0);
	free(rec);
	return (0);
}

int
store_lock_all(int *fd, char **cause)
{
	char *home = hb_home(), *path = home ? hb_fmt("%s/.lock", home) : NULL;
	int rv = -1;

	*fd = -1;
	if (path == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (hb_mkdirs(home, 0700) != 0) {
		*cause = hb_fmt("cannot create '%s': %s", home,
		    strerror(errno));
		goto out;
	}
	if ((*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	         0600)) < 0) {
		*cause = hb_fmt("cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	while ((rv = flock(*fd, LOCK_EX)) != 0 && errno == EINTR)
		;
	if (rv != 0) {
		*cause = hb_fmt("cannot lock '%s': %s", path, strerror(errno));
		close(*fd);
		*fd = -1;
	}
out:
	free(home);
	free(path);
	return (rv);
}

struct taken {
	int ports[256];
	int n;
};

static int
store_note_port(const char *name, void *arg)
{
	struct taken *t = arg;
	struct desktop *d;
	char *cause = NULL;

	if (desktop_load(name, &d, &cause) != 0) {
		free(cause);
		return (0);
	}
	if (t->n < 256)
		t->ports[t->n++] = d->port;
	desktop_free(d);
	return (0);
}

int
store_pick_port(int *out, char **cause)
{
	const char *env = getenv("BUREAU_PORTS");
	struct taken t = { .n = 0 };
	long lo = 7310, hi = 7999;
	char *dash, *c2 = NULL;

	if (env != NULL) {
		char *s = strdup(env);
		int bad = s == NULL || (dash = strchr(s, '-')) == NULL;
		if (!bad) {
			*dash = '\0';
			bad = hb_parse_int("BUREAU_PORTS", s, 1, 65535, &lo,
			          &c2) != 0 ||
			    hb_parse_int("BUREAU_PORTS", dash + 1, 1, 65535,
			        &hi, &c2) != 0 ||
			    hi - lo < 2;
		}
		free(s);
		free(c2);
		if (bad) {
			*cause = hb_fmt("invalid BUREAU_PORTS '%s': expected "
			                "LO-HI, 1 <= LO, LO + 2 <= HI <= 65535",
			    env);
			return (-1);
		}
	}
	store_each(store_note_port, &t);
	for (int p = (int)lo; p + 2 <= hi; p += 3) {
		int used = 0;
		for (int i = 0; i < t.n; i++)
			if (p + 2 >= t.ports[i] && p <= t.ports[i] + 2)
				used = 1;
		if (!used && store_port_free(p) && store_port_free(p + 1) &&
		    store_port_free(p + 2)) {
			*out = p;
			return (0);
		}
	}
	*cause = hb_fmt("no three free ports in %ld-%ld (BUREAU_PORTS)", lo,
	    hi);
	return (-1);
}

int
image_load(const char *dir, struct image *im, char **cause)
{
	json_error_t err;
	char *path = hb_fmt("%s/image.json", dir);

	if (path == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	im->j = json_load_file(path, 0, &err);
	if (im->j == NULL) {
		*cause = hb_fmt("no image in '%s' (bureau image build): %s",
		    dir, err.text);
		free(path);
		return (-1);
	}
	if (json_unpack_ex(im->j, &err, 0,
	        "{s:s, s:s, s:s, s:s, s:s, s:i, "
	        "s:i}",
	        "disk", &im->disk, "kernel", &im->kernel, "initrd", &im->initrd,
	        "cmdline", &im->cmdline, "user", &im->user, "uid", &im->uid,
	        "gid", &im->gid) != 0) {
		*cause = hb_fmt("invalid '%s': %s", path, err.text);
		json_decref(im->j);
		im->j = NULL;
		free(path);
		return (-1);
	}
	free(path);
	return (0);
}

void
image_clear(struct image *im)
{
	json_decref(im->j);
	memset(im, 0, sizeof *im);
}

char *
image_dir(const char *opt, char **cause)
{
	char *cand[2] = { NULL, NULL }, *home = NULL, *r = NULL;

	if (opt != NULL) {
		cand[0] = strdup(opt);
	} else {
		if ((home = hb_home()) == NULL) {
			*cause = hb_fmt("out of memory");
			return (NULL);
		}
		cand[0] = hb_fmt("%s/images/full", home);
		cand[1] = hb_fmt("%s/images/minimal", home);
	}
	for (int i = 0; i < 2 && r == NULL; i++)
		if (cand[i] != NULL)
			r = realpath(cand[i], NULL);
	if (r == NULL)
		*cause = opt ?
		    hb_fmt("no image '%s': %s", opt, strerror(errno)) :
		    hb_fmt("no image under '%s/images' "
		           "(bureau image build, or --image DIR)",
		        home);
	free(cand[0]);
	free(cand[1]);
	free(home);
	return (r);
}

int
audit_log_each(const char *dir, int (*fn)(json_t *line, void *arg), void *arg)
{
	static const char *const files[] = { AUDIT_LOG_OLD, AUDIT_LOG };
	int stop = 0;

	for (size_t i = 0; i < sizeof files / sizeof files[0] && !stop; i++) {
		char *path = hb_fmt("%s/%s", dir, files[i]), *line = NULL;
		size_t cap = 0;
		ssize_t n;
		FILE *f = path != NULL ? fopen(path, "re") : NULL;

		free(path);
		if (f == NULL)
			continue;
		while (!stop && (n = getline(&line, &cap, f)) > 0) {
			json_t *j;

			if (line[n - 1] != '\n')
				break; /* half written: the agent is at it */
			j = json_loads(line, 0, NULL);
			if (json_is_object(j))
				stop = fn(j, arg);
			else
				json_decref(j);
		}
		free(line);
		fclose(f);
	}
	return (stop);
}
