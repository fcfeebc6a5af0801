/*
 * Persistent QEMU desktops: `bureau create|start|stop|pause|resume|status|
 * ls|rm|snapshot|restore|console NAME`.
 *
 * A desktop is a directory $BUREAU_HOME/NAME:
 *   desktop.json   its settings: image, memory, cpus, ports
 *   system.qcow2   the system disk, an overlay on the image's base.qcow2
 *   home.qcow2     the data disk: an ext4 file system mounted on /home
 *   token, vnc-password   secrets QEMU hands the guest through fw_cfg
 *   endpoint       the daemon's URL (the client commands read it)
 *   qmp.sock, qemu.pid, qemu.log, console.log, accel   while it runs
 * QEMU and qemu-img are run as programs with an argv, never a shell line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/safeprint.h"

#define GUEST_API_PORT 7300
#define GUEST_EVENTS_PORT 7301
#define GUEST_VNC_PORT 5900

struct desktop {
	char *name;
	char *dir;   /* $BUREAU_HOME/NAME */
	char *image; /* the image directory (resolved, immutable) */
	long memory; /* MiB */
	int cpus;
	int port; /* api; events = port + 1, vnc = port + 2 */
};

/* ---- small helpers ---------------------------------------------------- */

char *
dk_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

char *
dk_exe_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	return strdup(buf);
}

int
dk_run(char *const argv[], int quiet, char **cause)
{
	pid_t pid = fork();
	if (pid < 0) {
		*cause = dk_fmt("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		}
		execvp(argv[0], argv);
		fprintf(stderr, "bureau: cannot run '%s': %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			*cause = dk_fmt("waitpid: %s", strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st))
		*cause = dk_fmt("'%s' exited with status %d", argv[0],
		    WEXITSTATUS(st));
	else
		*cause = dk_fmt("'%s' killed by signal %d", argv[0],
		    WTERMSIG(st));
	return -1;
}

static void
die_cause(const char *what, char *cause)
{
	fprintf(stderr, "bureau %s: %s\n", what, cause ? cause : "failed");
	free(cause);
}

static int
write_file(const char *path, const char *data, size_t len, mode_t mode,
    char **cause)
{
	char *tmp = dk_fmt("%s.tmp", path);
	if (tmp == NULL) {
		*cause = dk_fmt("out of memory");
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		goto fail;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			close(fd);
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0)
		goto fail;
	free(tmp);
	return 0;
fail:
	*cause = dk_fmt("cannot write '%s': %s", path, strerror(errno));
	unlink(tmp);
	free(tmp);
	return -1;
}

/* The whole file, NUL-terminated (malloc'd), or NULL with errno set. */
static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (cap - len < 4096) {
			char *b = realloc(buf, cap + 65536);
			if (b == NULL) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = b;
			cap += 65536;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

/* "20G", "512M", "4096K", "1T", or bytes. */
static int
parse_size(const char *s, long long *out, char **cause)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	long long mul = 1;
	if (errno != 0 || end == s || v <= 0)
		goto bad;
	switch (*end) {
	case 'k': case 'K': mul = 1LL << 10; end++; break;
	case 'm': case 'M': mul = 1LL << 20; end++; break;
	case 'g': case 'G': mul = 1LL << 30; end++; break;
	case 't': case 'T': mul = 1LL << 40; end++; break;
	case '\0': break;
	default: goto bad;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end != '\0' || v > (1LL << 50) / mul)
		goto bad;
	*out = v * mul;
	return 0;
bad:
	*cause = dk_fmt("invalid size '%s': expected a number with K, M, G "
	    "or T", s);
	return -1;
}

static int
valid_name(const char *name, char **cause)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || (i > 0 && (c == '-' ||
		    c == '_' || c == '.'))))
			goto bad;
	}
	if (strcmp(name, "images") == 0)
		goto bad;
	return 0;
bad:
	*cause = dk_fmt("invalid desktop name '%s': letters, digits, '-', "
	    "'_' and '.', at most 64, not 'images'", name);
	return -1;
}

static char *
home_path(const char *name, const char *file)
{
	char *home = cli_home();
	if (home == NULL)
		return NULL;
	char *p = file ? dk_fmt("%s/%s/%s", home, name, file) :
	    dk_fmt("%s/%s", home, name);
	free(home);
	return p;
}

static char *
dpath(const struct desktop *d, const char *file)
{
	return dk_fmt("%s/%s", d->dir, file);
}

static void
desktop_free(struct desktop *d)
{
	if (d == NULL)
		return;
	free(d->name);
	free(d->dir);
	free(d->image);
	free(d);
}

static int
desktop_load(const char *name, struct desktop **out, char **cause)
{
	struct desktop *d = NULL;
	json_t *j = NULL;
	char *path = NULL;
	json_error_t err;
	const char *image;
	json_int_t memory, cpus, port;

	if (valid_name(name, cause) != 0)
		return -1;
	if ((d = calloc(1, sizeof *d)) == NULL ||
	    (d->name = strdup(name)) == NULL ||
	    (d->dir = home_path(name, NULL)) == NULL ||
	    (path = dpath(d, "desktop.json")) == NULL) {
		*cause = dk_fmt("out of memory");
		goto fail;
	}
	if ((j = json_load_file(path, 0, &err)) == NULL) {
		if (access(d->dir, F_OK) != 0)
			*cause = dk_fmt("no desktop '%s' (bureau create %s)",
			    name, name);
		else
			*cause = dk_fmt("cannot read '%s': %s", path, err.text);
		goto fail;
	}
	if (json_unpack_ex(j, &err, 0, "{s:s, s:I, s:I, s:I}", "image",
	    &image, "memory", &memory, "cpus", &cpus, "port", &port) != 0) {
		*cause = dk_fmt("invalid '%s': %s", path, err.text);
		goto fail;
	}
	if ((d->image = strdup(image)) == NULL) {
		*cause = dk_fmt("out of memory");
		goto fail;
	}
	d->memory = (long)memory;
	d->cpus = (int)cpus;
	d->port = (int)port;
	json_decref(j);
	free(path);
	*out = d;
	return 0;
fail:
	json_decref(j);
	free(path);
	desktop_free(d);
	return -1;
}

/* ---- the image a desktop boots ---------------------------------------- */

struct image {
	json_t *j;
	const char *disk, *kernel, *initrd, *cmdline, *user;
	int uid, gid;
};

static int
image_load(const char *dir, struct image *im, char **cause)
{
	json_error_t err;
	char *path = dk_fmt("%s/image.json", dir);
	if (path == NULL) {
		*cause = dk_fmt("out of memory");
		return -1;
	}
	im->j = json_load_file(path, 0, &err);
	if (im->j == NULL) {
		*cause = dk_fmt("no image in '%s' (bureau image build): %s",
		    dir, err.text);
		free(path);
		return -1;
	}
	if (json_unpack_ex(im->j, &err, 0, "{s:s, s:s, s:s, s:s, s:s, s:i, "
	    "s:i}", "disk", &im->disk, "kernel", &im->kernel, "initrd",
	    &im->initrd, "cmdline", &im->cmdline, "user", &im->user, "uid",
	    &im->uid, "gid", &im->gid) != 0) {
		*cause = dk_fmt("invalid '%s': %s", path, err.text);
		json_decref(im->j);
		free(path);
		return -1;
	}
	free(path);
	return 0;
}

/* --image, or $BUREAU_HOME/images/full, else images/minimal; resolved
 * through the symlink so a later rebuild never changes a desktop's base. */
static char *
image_dir(const char *opt, char **cause)
{
	char *cand[2] = {NULL, NULL}, *home = NULL, *r = NULL;
	if (opt != NULL) {
		cand[0] = strdup(opt);
	} else {
		if ((home = cli_home()) == NULL) {
			*cause = dk_fmt("out of memory");
			return NULL;
		}
		cand[0] = dk_fmt("%s/images/full", home);
		cand[1] = dk_fmt("%s/images/minimal", home);
	}
	for (int i = 0; i < 2 && r == NULL; i++)
		if (cand[i] != NULL)
			r = realpath(cand[i], NULL);
	if (r == NULL)
		*cause = opt ? dk_fmt("no image '%s': %s", opt,
		    strerror(errno)) : dk_fmt("no image under '%s/images' "
		    "(bureau image build, or --image DIR)", home);
	free(cand[0]);
	free(cand[1]);
	free(home);
	return r;
}

/* ---- processes and ports ---------------------------------------------- */

/* The QEMU of this desktop, or 0 when it is not running. */
static pid_t
desktop_pid(const struct desktop *d)
{
	char *path = dpath(d, "qemu.pid"), *s = NULL, *cmd = NULL;
	pid_t pid = 0;
	if (path == NULL || (s = read_file(path)) == NULL)
		goto out;
	long v = strtol(s, NULL, 10);
	if (v <= 0 || kill((pid_t)v, 0) != 0)
		goto out;
	/* A recycled pid is not our QEMU: its command line names our dir. */
	char *cl = dk_fmt("/proc/%ld/cmdline", v);
	int fd = cl ? open(cl, O_RDONLY | O_CLOEXEC) : -1;
	free(cl);
	if (fd < 0)
		goto out;
	char buf[16384];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		goto out;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	if ((cmd = dk_fmt("%s/qmp.sock", d->dir)) != NULL &&
	    strstr(buf, cmd) != NULL)
		pid = (pid_t)v;
out:
	free(path);
	free(s);
	free(cmd);
	return pid;
}

static int
port_free(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in sa = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return ok;
}

typedef int (*desktop_fn)(const char *name, void *arg);

/* Call fn for every desktop under $BUREAU_HOME, in name order. */
static int
each_desktop(desktop_fn fn, void *arg)
{
	char *home = cli_home();
	struct dirent **ents = NULL;
	int n = home ? scandir(home, &ents, NULL, alphasort) : -1;
	for (int i = 0; i < n; i++) {
		char *cfg = dk_fmt("%s/%s/desktop.json", home, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && cfg != NULL &&
		    access(cfg, F_OK) == 0)
			fn(ents[i]->d_name, arg);
		free(cfg);
		free(ents[i]);
	}
	free(ents);
	free(home);
	return n < 0 ? -1 : 0;
}

struct taken {
	int ports[256];
	int n;
};

static int
note_port(const char *name, void *arg)
{
	struct taken *t = arg;
	struct desktop *d;
	char *cause = NULL;
	if (desktop_load(name, &d, &cause) != 0) {
		free(cause);
		return 0;
	}
	if (t->n < 256)
		t->ports[t->n++] = d->port;
	desktop_free(d);
	return 0;
}

/* Three free loopback ports P, P+1, P+2 in $BUREAU_PORTS (default
 * 7310-7999) that no other desktop was given. */
static int
pick_port(int *out, char **cause)
{
	int lo = 7310, hi = 7999;
	const char *env = getenv("BUREAU_PORTS");
	if (env != NULL && (sscanf(env, "%d-%d", &lo, &hi) != 2 || lo < 1 ||
	    hi > 65535 || hi - lo < 2)) {
		*cause = dk_fmt("invalid BUREAU_PORTS '%s': expected LO-HI",
		    env);
		return -1;
	}
	struct taken t = {.n = 0};
	each_desktop(note_port, &t);
	for (int p = lo; p + 2 <= hi; p += 3) {
		int used = 0;
		for (int i = 0; i < t.n; i++)
			if (p + 2 >= t.ports[i] && p <= t.ports[i] + 2)
				used = 1;
		if (!used && port_free(p) && port_free(p + 1) &&
		    port_free(p + 2)) {
			*out = p;
			return 0;
		}
	}
	*cause = dk_fmt("no three free ports in %d-%d (BUREAU_PORTS)", lo, hi);
	return -1;
}

/* n random bytes as 2n hex digits; malloc'd. */
static char *
random_hex(size_t n)
{
	unsigned char b[64];
	char *s = malloc(2 * n + 1);
	if (s == NULL || n > sizeof b || getrandom(b, n, 0) != (ssize_t)n) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", b[i]);
	return s;
}

/* ---- create ------------------------------------------------------------ */

/* The data disk: a sparse ext4 file system holding /home/USER owned by the
 * image's user, made without root (debugfs sets the owner), as qcow2. */
static int
make_home_disk(const struct desktop *d, const struct image *im,
    long long size, char **cause)
{
	char *raw = dpath(d, "home.raw"), *cmds = dpath(d, "home.debugfs");
	char *qcow = dpath(d, "home.qcow2"), *script = NULL, *sz = NULL;
	int rv = -1;
	if (raw == NULL || cmds == NULL || qcow == NULL)
		goto oom;
	int fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size) != 0) {
		*cause = dk_fmt("cannot create '%s': %s", raw, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	if ((sz = dk_fmt("%lldk", size / 1024)) == NULL)
		goto oom;
	char *mkfs[] = {"mke2fs", "-q", "-F", "-t", "ext4", "-L", "bureau-home",
	    "-E", "lazy_itable_init=1,lazy_journal_init=1", raw, sz, NULL};
	if (dk_run(mkfs, 0, cause) != 0)
		goto out;
	script = dk_fmt("mkdir %s\nsif %s uid %d\nsif %s gid %d\n"
	    "sif %s mode 040750\n", im->user, im->user, im->uid, im->user,
	    im->gid, im->user);
	if (script == NULL)
		goto oom;
	if (write_file(cmds, script, strlen(script), 0600, cause) != 0)
		goto out;
	char *dbg[] = {"debugfs", "-w", "-f", cmds, raw, NULL};
	if (dk_run(dbg, 1, cause) != 0)
		goto out;
	char *conv[] = {"qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw,
	    qcow, NULL};
	if (dk_run(conv, 0, cause) != 0)
		goto out;
	rv = 0;
	goto out;
oom:
	*cause = dk_fmt("out of memory");
out:
	if (raw)
		unlink(raw);
	if (cmds)
		unlink(cmds);
	free(raw);
	free(cmds);
	free(qcow);
	free(script);
	free(sz);
	return rv;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path);
}

static void
usage_err(const char *cmd, const char *msg)
{
	for (const struct cli_cmd *c = cli_desktop_cmds; c->name; c++)
		if (strcmp(c->name, cmd) == 0)
			fprintf(stderr, "bureau %s: %s\nusage: bureau %s\n", cmd,
			    msg, c->usage);
}

static int
cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"disk", required_argument, NULL, 'd'},
		{"home", required_argument, NULL, 'H'},
		{"memory", required_argument, NULL, 'm'},
		{"cpus", required_argument, NULL, 'c'},
		{"image", required_argument, NULL, 'i'},
		{NULL, 0, NULL, 0}};
	const char *disk_s = "20G", *home_s = NULL, *mem_s = "4G";
	const char *image_opt = NULL;
	long long disk, home_sz, mem;
	int cpus = 2, c, created = 0;
	char *cause = NULL, *token = NULL, *vnc = NULL, *s = NULL, *p = NULL;
	struct desktop d = {0};
	struct image im = {0};
	json_t *cfg = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': disk_s = optarg; break;
		case 'H': home_s = optarg; break;
		case 'm': mem_s = optarg; break;
		case 'i': image_opt = optarg; break;
		case 'c':
			cpus = atoi(optarg);
			if (cpus < 1 || cpus > 64) {
				usage_err("create", "invalid --cpus");
				return 2;
			}
			break;
		default: usage_err("create", "unknown option"); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage_err("create", "one NAME expected");
		return 2;
	}
	d.name = argv[optind];
	if (valid_name(d.name, &cause) != 0 ||
	    parse_size(disk_s, &disk, &cause) != 0 ||
	    parse_size(home_s ? home_s : disk_s, &home_sz, &cause) != 0 ||
	    parse_size(mem_s, &mem, &cause) != 0)
		goto fail;
	if (mem < (256LL << 20)) {
		cause = dk_fmt("invalid memory '%s': at least 256M", mem_s);
		goto fail;
	}
	if (home_sz < (64LL << 20)) {
		cause = dk_fmt("invalid home disk size: at least 64M");
		goto fail;
	}
	if ((d.image = image_dir(image_opt, &cause)) == NULL ||
	    image_load(d.image, &im, &cause) != 0)
		goto fail;
	if ((d.dir = home_path(d.name, NULL)) == NULL) {
		cause = dk_fmt("out of memory");
		goto fail;
	}
	char *home = cli_home();
	if (home == NULL || (mkdir(home, 0700) != 0 && errno != EEXIST)) {
		cause = dk_fmt("cannot create '%s': %s", home ? home : "home",
		    strerror(errno));
		free(home);
		goto fail;
	}
	free(home);
	if (mkdir(d.dir, 0700) != 0) {
		cause = errno == EEXIST ? dk_fmt("desktop '%s' exists", d.name)
		    : dk_fmt("cannot create '%s': %s", d.dir, strerror(errno));
		goto fail;
	}
	created = 1;
	if (pick_port(&d.port, &cause) != 0)
		goto fail;

	/* The system disk: the image's base, copy-on-write. */
	char *base = dk_fmt("%s/%s", d.image, im.disk);
	char *sys = dpath(&d, "system.qcow2");
	char *dsz = dk_fmt("%lld", disk);
	if (base == NULL || sys == NULL || dsz == NULL) {
		free(base);
		free(sys);
		free(dsz);
		cause = dk_fmt("out of memory");
		goto fail;
	}
	char *qi[] = {"qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2",
	    "-b", base, sys, dsz, NULL};
	int rv = dk_run(qi, 0, &cause);
	free(base);
	free(sys);
	free(dsz);
	if (rv != 0)
		goto fail;
	if (make_home_disk(&d, &im, home_sz, &cause) != 0)
		goto fail;

	if ((token = random_hex(32)) == NULL || (vnc = random_hex(4)) == NULL) {
		cause = dk_fmt("no random bytes: %s", strerror(errno));
		goto fail;
	}
	if ((p = dpath(&d, "token")) == NULL ||
	    write_file(p, token, strlen(token), 0600, &cause) != 0)
		goto fail;
	free(p);
	if ((p = dpath(&d, "vnc-password")) == NULL ||
	    write_file(p, vnc, strlen(vnc), 0600, &cause) != 0)
		goto fail;
	free(p);
	if ((s = dk_fmt("tcp://127.0.0.1:%d\n", d.port)) == NULL ||
	    (p = dpath(&d, "endpoint")) == NULL ||
	    write_file(p, s, strlen(s), 0644, &cause) != 0)
		goto fail;
	free(p);
	cfg = json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:i, s:I}", "name",
	    d.name, "image", d.image, "memory", (json_int_t)(mem >> 20),
	    "cpus", cpus, "disk", (json_int_t)disk, "home",
	    (json_int_t)home_sz, "port", d.port, "created",
	    (json_int_t)time(NULL));
	free(s);
	s = cfg ? json_dumps(cfg, JSON_INDENT(2)) : NULL;
	if (s == NULL || (p = dpath(&d, "desktop.json")) == NULL) {
		cause = dk_fmt("out of memory");
		goto fail;
	}
	if (write_file(p, s, strlen(s), 0644, &cause) != 0)
		goto fail;
	printf("created desktop '%s': %s, home %s, memory %s, %d cpus, "
	    "ports %d-%d\n", d.name, disk_s, home_s ? home_s : disk_s, mem_s,
	    cpus, d.port, d.port + 2);
	free(p);
	free(s);
	free(token);
	free(vnc);
	json_decref(cfg);
	json_decref(im.j);
	free(d.image);
	free(d.dir);
	return 0;
fail:
	die_cause("create", cause);
	if (created)
		nftw(d.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(p);
	free(s);
	free(token);
	free(vnc);
	json_decref(cfg);
	json_decref(im.j);
	free(d.image);
	free(d.dir);
	return 1;
}

/* ---- start ------------------------------------------------------------- */

static int
boot_id(char *buf, size_t len)
{
	char *s = read_file("/proc/sys/kernel/random/boot_id");
	if (s == NULL)
		return -1;
	snprintf(buf, len, "%.36s", s);
	free(s);
	return 0;
}

static long long
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Does KVM really run a guest? /dev/kvm may open while guests hang or
 * QEMU aborts (nested virtualisation here), so boot the image's kernel
 * under KVM exactly as `start` would, without a root file system, and
 * wait a few seconds for its panic on the serial port. The answer is kept
 * for this host boot in $BUREAU_HOME/.accel.
 */
static const char *
probe_accel(const char *kernel)
{
	const char *env = getenv("BUREAU_ACCEL");
	if (env != NULL && (strcmp(env, "kvm") == 0 || strcmp(env, "tcg") == 0))
		return env;
	if (access("/dev/kvm", R_OK | W_OK) != 0)
		return "tcg";
	char bid[40] = "", *home = cli_home(), *cache = NULL, *s = NULL;
	const char *res = "tcg";
	if (home == NULL || boot_id(bid, sizeof bid) != 0)
		goto out;
	if ((cache = dk_fmt("%s/.accel", home)) == NULL)
		goto out;
	if ((s = read_file(cache)) != NULL && strncmp(s, bid, 36) == 0) {
		res = strstr(s + 36, "kvm") ? "kvm" : "tcg";
		goto out;
	}
	char tmpl[] = "/tmp/bureau-kvm-probe.XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		goto out;
	close(fd);
	char *serial = dk_fmt("file:%s", tmpl);
	if (serial == NULL) {
		unlink(tmpl);
		goto out;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-machine",
		    "q35", "-accel", "kvm", "-cpu", "host", "-m", "256",
		    "-nodefaults", "-display", "none", "-no-reboot", "-kernel",
		    kernel, "-append", "console=ttyS0 panic=-1", "-serial",
		    serial, (char *)NULL);
		_exit(127);
	}
	free(serial);
	long long deadline = now_ms() + 10000;
	int ok = 0, st;
	while (pid > 0 && now_ms() < deadline) {
		char *log = read_file(tmpl);
		ok = log != NULL && strstr(log, "Kernel panic") != NULL;
		free(log);
		if (ok)
			break;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			pid = 0;
			break;
		}
		usleep(100000);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	unlink(tmpl);
	res = ok ? "kvm" : "tcg";
	free(s);
	if ((s = dk_fmt("%s %s\n", bid, res)) != NULL) {
		char *c2 = NULL;
		if (mkdir(home, 0700) == 0 || errno == EEXIST)
			write_file(cache, s, strlen(s), 0644, &c2);
		free(c2);
	}
out:
	free(home);
	free(cache);
	free(s);
	return res;
}

/*
 * One `system ping` through the forwarded port: 0 when the daemon answers
 * ok, 1 when it answers with an error (*cause says which), -1 when there
 * is no answer yet.
 */
static int
ping_daemon(int port, const char *token, int timeout_ms, char **cause)
{
	nng_socket sock;
	nng_msg *msg = NULL;
	int rv = -1;
	char *url = dk_fmt("tcp://127.0.0.1:%d", port);
	char *req = dk_fmt("{\"id\":\"start\",\"token\":\"%s\",\"tool\":"
	    "\"system\",\"action\":\"ping\"}", token);
	if (url == NULL || req == NULL || nng_req0_open(&sock) != 0) {
		free(url);
		free(req);
		return -1;
	}
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, timeout_ms);
	nng_socket_set_ms(sock, NNG_OPT_RECONNMINT, 100);
	if (nng_dial(sock, url, NULL, NNG_FLAG_NONBLOCK) != 0 ||
	    nng_send(sock, req, strlen(req), 0) != 0 ||
	    nng_recvmsg(sock, &msg, 0) != 0)
		goto out;
	json_error_t err;
	json_t *rep = json_loadb(nng_msg_body(msg), nng_msg_len(msg), 0, &err);
	if (rep == NULL)
		goto out;
	if (json_is_true(json_object_get(rep, "ok"))) {
		rv = 0;
	} else {
		const char *m = json_string_value(json_object_get(
		    json_object_get(rep, "error"), "message"));
		*cause = dk_fmt("the daemon refused the ping: %s",
		    m ? m : "no message");
		rv = 1;
	}
	json_decref(rep);
out:
	if (msg != NULL)
		nng_msg_free(msg);
	nng_close(sock);
	free(url);
	free(req);
	return rv;
}

/* Where the last `lines` lines of the n bytes at s begin. */
static size_t
tail_start(const char *s, size_t n, int lines)
{
	int seen = 0;
	size_t i = n;
	while (i > 0) {
		if (s[i - 1] == '\n' && i != n && ++seen == lines)
			break;
		i--;
	}
	return i;
}

/* The guest writes these logs: its text goes through safeprint. */
static void
print_tail(const char *path, int lines)
{
	struct sp_state st = {.style = SP_PLAIN};
	char *s = read_file(path);
	if (s == NULL)
		return;
	size_t n = strlen(s), i = tail_start(s, n, lines);
	fprintf(stderr, "--- %s (last %d lines) ---\n", path, lines);
	sp_write(&st, stderr, s + i, n - i);
	sp_flush(&st, stderr);
	if (n && s[n - 1] != '\n')
		fputc('\n', stderr);
	free(s);
}

static void
kill_qemu(const struct desktop *d, pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	for (int i = 0; i < 50 && kill(pid, 0) == 0; i++)
		usleep(100000);
	(void)d;
}

static int
cmd_start(int argc, char **argv)
{
	static const struct option opts[] = {
		{"timeout", required_argument, NULL, 't'},
		{"accel", required_argument, NULL, 'a'},
		{"no-wait", no_argument, NULL, 'n'},
		{NULL, 0, NULL, 0}};
	struct desktop *d = NULL;
	struct image im = {0};
	char *cause = NULL, *token = NULL, *log = NULL, *tokp = NULL;
	char *vncp = NULL, *pidf = NULL, *qmps = NULL, *sys = NULL, *home = NULL;
	char *args[40] = {0}; /* strings this function formats */
	int na = 0, timeout = 0, nowait = 0, c, rc = 1;
	const char *accel = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': timeout = atoi(optarg); break;
		case 'a': accel = optarg; break;
		case 'n': nowait = 1; break;
		default: usage_err("start", "unknown option"); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage_err("start", "one NAME expected");
		return 2;
	}
	if (desktop_load(argv[optind], &d, &cause) != 0)
		goto fail;
	if (desktop_pid(d) > 0) {
		cause = dk_fmt("desktop '%s' is already running", d->name);
		goto fail;
	}
	if (image_load(d->image, &im, &cause) != 0)
		goto fail;
	for (int p = d->port; p < d->port + 3; p++) {
		if (!port_free(p)) {
			cause = dk_fmt("port %d is in use on 127.0.0.1", p);
			goto fail;
		}
	}
	if (accel == NULL || strcmp(accel, "auto") == 0) {
		char *k = dk_fmt("%s/%s", d->image, im.kernel);
		accel = k ? probe_accel(k) : "tcg";
		free(k);
	}
	if (strcmp(accel, "kvm") != 0 && strcmp(accel, "tcg") != 0) {
		cause = dk_fmt("invalid accel '%s': kvm, tcg or auto", accel);
		goto fail;
	}
	if (timeout <= 0)
		timeout = strcmp(accel, "kvm") == 0 ? 180 : 600;

	if ((tokp = dpath(d, "token")) == NULL ||
	    (vncp = dpath(d, "vnc-password")) == NULL ||
	    (pidf = dpath(d, "qemu.pid")) == NULL ||
	    (qmps = dpath(d, "qmp.sock")) == NULL ||
	    (sys = dpath(d, "system.qcow2")) == NULL ||
	    (home = dpath(d, "home.qcow2")) == NULL ||
	    (log = dpath(d, "console.log")) == NULL) {
		cause = dk_fmt("out of memory");
		goto fail;
	}
	if ((token = read_file(tokp)) == NULL) {
		cause = dk_fmt("cannot read '%s': %s", tokp, strerror(errno));
		goto fail;
	}
	/* Keep the previous boot's console for a post-mortem. */
	char *old = dk_fmt("%s.1", log);
	if (old != NULL)
		rename(log, old);
	free(old);
	unlink(pidf);
	unlink(qmps);

#define A(...) (args[na] = dk_fmt(__VA_ARGS__), args[na++])
	char *argv_q[96];
	int n = 0;
	argv_q[n++] = "qemu-system-x86_64";
	argv_q[n++] = "-name";
	argv_q[n++] = A("bureau-%s", d->name);
	argv_q[n++] = "-machine";
	argv_q[n++] = "q35";
	argv_q[n++] = "-accel";
	argv_q[n++] = strcmp(accel, "kvm") == 0 ? "kvm" : "tcg,thread=multi";
	argv_q[n++] = "-cpu";
	argv_q[n++] = strcmp(accel, "kvm") == 0 ? "host" : "max";
	argv_q[n++] = "-smp";
	argv_q[n++] = A("%d", d->cpus);
	argv_q[n++] = "-m";
	argv_q[n++] = A("%ldM", d->memory);
	argv_q[n++] = "-kernel";
	argv_q[n++] = A("%s/%s", d->image, im.kernel);
	argv_q[n++] = "-initrd";
	argv_q[n++] = A("%s/%s", d->image, im.initrd);
	argv_q[n++] = "-append";
	argv_q[n++] = (char *)im.cmdline;
	/* vda is the system disk, vdb the home: the slots fix the order. */
	argv_q[n++] = "-drive";
	argv_q[n++] = A("file=%s,if=none,id=drive-sys,node-name=sys,format=qcow2,"
	    "discard=unmap", sys);
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-blk-pci,drive=drive-sys,bus=pcie.0,addr=0x4";
	argv_q[n++] = "-drive";
	argv_q[n++] = A("file=%s,if=none,id=drive-home,node-name=home,format=qcow2,"
	    "discard=unmap", home);
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-blk-pci,drive=drive-home,bus=pcie.0,addr=0x5";
	argv_q[n++] = "-netdev";
	argv_q[n++] = A("user,id=net0,hostfwd=tcp:127.0.0.1:%d-:%d,"
	    "hostfwd=tcp:127.0.0.1:%d-:%d,hostfwd=tcp:127.0.0.1:%d-:%d",
	    d->port, GUEST_API_PORT, d->port + 1, GUEST_EVENTS_PORT,
	    d->port + 2, GUEST_VNC_PORT);
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-net-pci,netdev=net0";
	argv_q[n++] = "-device";
	argv_q[n++] = "virtio-rng-pci";
	argv_q[n++] = "-fw_cfg";
	argv_q[n++] = A("name=opt/bureau/token,file=%s", tokp);
	argv_q[n++] = "-fw_cfg";
	argv_q[n++] = A("name=opt/bureau/vnc-password,file=%s", vncp);
	argv_q[n++] = "-qmp";
	argv_q[n++] = A("unix:%s,server=on,wait=off", qmps);
	argv_q[n++] = "-chardev";
	argv_q[n++] = A("file,id=console,path=%s", log);
	argv_q[n++] = "-serial";
	argv_q[n++] = "chardev:console";
	argv_q[n++] = "-display";
	argv_q[n++] = "none";
	argv_q[n++] = "-vga";
	argv_q[n++] = "std";
	argv_q[n++] = "-pidfile";
	argv_q[n++] = pidf;
	argv_q[n++] = "-daemonize";
	argv_q[n] = NULL;
#undef A
	for (int i = 0; i < na; i++) {
		if (args[i] == NULL) {
			cause = dk_fmt("out of memory");
			goto fail;
		}
	}
	if (strlen(qmps) >= 108) {
		cause = dk_fmt("path '%s' too long for a unix socket (a shorter "
		    "BUREAU_HOME)", qmps);
		goto fail;
	}
	char *qlog = dpath(d, "qemu.log");
	int lfd = qlog ? open(qlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600) : -1;
	pid_t pid = fork();
	if (pid == 0) {
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		execvp(argv_q[0], argv_q);
		fprintf(stderr, "cannot run '%s': %s\n", argv_q[0],
		    strerror(errno));
		_exit(127);
	}
	if (lfd >= 0)
		close(lfd);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		cause = dk_fmt("qemu did not start (%s)", accel);
		if (qlog)
			print_tail(qlog, 20);
		free(qlog);
		goto fail;
	}
	free(qlog);
	char *ap = dpath(d, "accel"), *c2 = NULL;
	if (ap != NULL)
		write_file(ap, accel, strlen(accel), 0644, &c2);
	free(c2);
	free(ap);
	pid_t qpid = desktop_pid(d);
	if (nowait) {
		printf("started desktop '%s' (%s), not waiting for the daemon\n"
		    "endpoint tcp://127.0.0.1:%d\n", d->name, accel, d->port);
		rc = 0;
		goto out;
	}
	long long t0 = now_ms(), deadline = t0 + (long long)timeout * 1000;
	int last = -1;
	while (now_ms() < deadline) {
		char *pc = NULL;
		if ((qpid = desktop_pid(d)) == 0) {
			cause = dk_fmt("qemu exited while desktop '%s' booted",
			    d->name);
			print_tail(log, 30);
			goto fail;
		}
		last = ping_daemon(d->port, token, 2000, &pc);
		if (last == 0)
			break;
		if (last == 1) {
			cause = pc;
			kill_qemu(d, qpid);
			goto fail;
		}
		free(pc);
		usleep(500000);
	}
	if (last != 0) {
		cause = dk_fmt("desktop '%s' did not answer on port %d within "
		    "%d s (%s); stopped it", d->name, d->port, timeout, accel);
		print_tail(log, 30);
		kill_qemu(d, qpid);
		goto fail;
	}
	printf("started desktop '%s' (%s) in %.1f s\nendpoint "
	    "tcp://127.0.0.1:%d\nevents tcp://127.0.0.1:%d\nvnc "
	    "127.0.0.1:%d\n", d->name, accel, (now_ms() - t0) / 1000.0,
	    d->port, d->port + 1, d->port + 2);
	rc = 0;
	goto out;
fail:
	die_cause("start", cause);
	cause = NULL;
out:
	for (int i = 0; i < na; i++)
		free(args[i]);
	free(token);
	free(log);
	free(tokp);
	free(vncp);
	free(pidf);
	free(qmps);
	free(sys);
	free(home);
	json_decref(im.j);
	desktop_free(d);
	return rc;
}

/* ---- stop, pause, resume ----------------------------------------------- */

static int
qmp_simple(const struct desktop *d, const char *cmd, json_t *args,
    json_t **ret, char **cause)
{
	struct qmp *q;
	char *path = dpath(d, "qmp.sock");
	int rv = -1;
	if (path == NULL) {
		json_decref(args);
		*cause = dk_fmt("out of memory");
		return -1;
	}
	if (qmp_open(&q, path, 10000, cause) == 0) {
		rv = qmp_exec(q, cmd, args, ret, cause);
		qmp_close(q);
	} else {
		json_decref(args);
	}
	free(path);
	return rv;
}

/* "running", "paused", ... from QMP; "stopped" without a QEMU. */
static char *
desktop_state(const struct desktop *d, pid_t *pidp)
{
	pid_t pid = desktop_pid(d);
	if (pidp != NULL)
		*pidp = pid;
	if (pid == 0)
		return strdup("stopped");
	json_t *r = NULL;
	char *cause = NULL;
	if (qmp_simple(d, "query-status", NULL, &r, &cause) != 0) {
		free(cause);
		return strdup("running"); /* QMP busy: it is alive anyway */
	}
	const char *st = json_string_value(json_object_get(r, "status"));
	char *s = strdup(st ? (strcmp(st, "running") == 0 ? "running" :
	    strcmp(st, "paused") == 0 ? "paused" : st) : "unknown");
	json_decref(r);
	return s;
}

static int
wait_exit(pid_t pid, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	while (kill(pid, 0) == 0) {
		if (now_ms() >= deadline)
			return -1;
		usleep(200000);
	}
	return 0;
}

static int
cmd_stop(int argc, char **argv)
{
	static const struct option opts[] = {
		{"timeout", required_argument, NULL, 't'},
		{"force", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0}};
	int timeout = 120, force = 0, c;
	struct desktop *d = NULL;
	char *cause = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': timeout = atoi(optarg); break;
		case 'f': force = 1; break;
		default: usage_err("stop", "unknown option"); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage_err("stop", "one NAME expected");
		return 2;
	}
	if (desktop_load(argv[optind], &d, &cause) != 0)
		goto fail;
	pid_t pid = desktop_pid(d);
	if (pid == 0) {
		printf("desktop '%s' is not running\n", d->name);
		desktop_free(d);
		return 0;
	}
	long long t0 = now_ms();
	if (!force) {
		/* A paused guest cannot see the power button. */
		char *c1 = NULL, *c2 = NULL;
		qmp_simple(d, "cont", NULL, NULL, &c1);
		if (qmp_simple(d, "system_powerdown", NULL, NULL, &c2) == 0 &&
		    wait_exit(pid, timeout * 1000) == 0) {
			printf("stopped desktop '%s' (shut down in %.1f s)\n",
			    d->name, (now_ms() - t0) / 1000.0);
			free(c1);
			desktop_free(d);
			return 0;
		}
		fprintf(stderr, "bureau stop: '%s' did not shut down within %d "
		    "s%s%s; forcing\n", d->name, timeout, c2 ? ": " : "",
		    c2 ? c2 : "");
		free(c1);
		free(c2);
	}
	char *c3 = NULL;
	qmp_simple(d, "quit", NULL, NULL, &c3);
	free(c3);
	if (wait_exit(pid, 10000) != 0) {
		kill(pid, SIGKILL);
		wait_exit(pid, 10000);
	}
	printf("stopped desktop '%s' (forced)\n", d->name);
	desktop_free(d);
	return 0;
fail:
	die_cause("stop", cause);
	desktop_free(d);
	return 1;
}

static int
qmp_command(int argc, char **argv, const char *qcmd, const char *done)
{
	struct desktop *d = NULL;
	char *cause = NULL;
	if (argc != 2) {
		usage_err(argv[0], "one NAME expected");
		return 2;
	}
	if (desktop_load(argv[1], &d, &cause) != 0)
		goto fail;
	if (desktop_pid(d) == 0) {
		cause = dk_fmt("desktop '%s' is not running", d->name);
		goto fail;
	}
	if (qmp_simple(d, qcmd, NULL, NULL, &cause) != 0)
		goto fail;
	printf("%s desktop '%s'\n", done, d->name);
	desktop_free(d);
	return 0;
fail:
	die_cause(argv[0], cause);
	desktop_free(d);
	return 1;
}

static int
cmd_pause(int argc, char **argv)
{
	return qmp_command(argc, argv, "stop", "paused");
}

static int
cmd_resume(int argc, char **argv)
{
	return qmp_command(argc, argv, "cont", "resumed");
}

/* ---- status, ls ----------------------------------------------------------- */

static long long
file_blocks(const struct desktop *d, const char *file)
{
	struct stat st;
	char *p = dpath(d, file);
	long long n = p && stat(p, &st) == 0 ? (long long)st.st_blocks * 512 : 0;
	free(p);
	return n;
}

static void
human(char *buf, size_t len, long long bytes)
{
	const char *u = "BKMGT";
	double v = (double)bytes;
	while (v >= 1024 && u[1]) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, *u == 'B' ? "%.0f%c" : "%.1f%c", v, *u);
}

static void
uptime_str(const struct desktop *d, pid_t pid, char *buf, size_t len)
{
	struct stat st;
	char *p = dpath(d, "qemu.pid");
	if (pid == 0 || p == NULL || stat(p, &st) != 0) {
		snprintf(buf, len, "-");
	} else {
		long s = (long)(time(NULL) - st.st_mtime);
		if (s >= 86400)
			snprintf(buf, len, "%ldd%02ldh", s / 86400,
			    s % 86400 / 3600);
		else
			snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600,
			    s % 3600 / 60, s % 60);
	}
	free(p);
}

static int
cmd_status(int argc, char **argv)
{
	struct desktop *d = NULL;
	char *cause = NULL;
	if (argc != 2) {
		usage_err("status", "one NAME expected");
		return 2;
	}
	if (desktop_load(argv[1], &d, &cause) != 0) {
		die_cause("status", cause);
		return 1;
	}
	pid_t pid;
	char *state = desktop_state(d, &pid);
	char up[32], sys[16], home[16];
	uptime_str(d, pid, up, sizeof up);
	human(sys, sizeof sys, file_blocks(d, "system.qcow2"));
	human(home, sizeof home, file_blocks(d, "home.qcow2"));
	char *ap = dpath(d, "accel"), *accel = ap ? read_file(ap) : NULL;
	printf("name: %s\nstate: %s\n", d->name, state ? state : "unknown");
	if (pid != 0)
		printf("pid: %d\naccel: %s\nuptime: %s\n", (int)pid,
		    accel ? accel : "?", up);
	printf("endpoint: tcp://127.0.0.1:%d\nevents: tcp://127.0.0.1:%d\n"
	    "vnc: 127.0.0.1:%d\nmemory: %ldM\ncpus: %d\n"
	    "disk: system %s, home %s\nimage: %s\ndir: %s\n", d->port,
	    d->port + 1, d->port + 2, d->memory, d->cpus, sys, home, d->image,
	    d->dir);
	free(ap);
	free(accel);
	free(state);
	desktop_free(d);
	return 0;
}

static int
ls_one(const char *name, void *arg)
{
	struct desktop *d;
	char *cause = NULL;
	int *count = arg;
	if (desktop_load(name, &d, &cause) != 0) {
		printf("%-16s %-8s %s\n", name, "broken", cause);
		free(cause);
		return 0;
	}
	pid_t pid;
	char *state = desktop_state(d, &pid);
	char up[32], disk[16], ep[40], vnc[24];
	uptime_str(d, pid, up, sizeof up);
	human(disk, sizeof disk, file_blocks(d, "system.qcow2") +
	    file_blocks(d, "home.qcow2"));
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", d->port);
	snprintf(vnc, sizeof vnc, "127.0.0.1:%d", d->port + 2);
	printf("%-16s %-8s %-9s %-22s %-16s %s\n", d->name,
	    state ? state : "?", up, ep, vnc, disk);
	free(state);
	desktop_free(d);
	(*count)++;
	return 0;
}

static int
cmd_ls(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		usage_err("ls", "no arguments expected");
		return 2;
	}
	int count = 0;
	printf("%-16s %-8s %-9s %-22s %-16s %s\n", "NAME", "STATE", "UPTIME",
	    "ENDPOINT", "VNC", "DISK");
	each_desktop(ls_one, &count);
	return 0;
}

/* ---- rm ------------------------------------------------------------------- */

static int
cmd_rm(int argc, char **argv)
{
	int force = 0, c;
	struct desktop *d = NULL;
	char *cause = NULL;
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'}, {NULL, 0, NULL, 0}};
	optind = 1;
	while ((c = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		if (c != 'f') {
			usage_err("rm", "unknown option");
			return 2;
		}
		force = 1;
	}
	if (optind + 1 != argc) {
		usage_err("rm", "one NAME expected");
		return 2;
	}
	if (desktop_load(argv[optind], &d, &cause) != 0)
		goto fail;
	pid_t pid = desktop_pid(d);
	if (pid != 0 && !force) {
		cause = dk_fmt("desktop '%s' is running (bureau stop, or rm "
		    "--force)", d->name);
		goto fail;
	}
	if (pid != 0) {
		kill(pid, SIGKILL);
		wait_exit(pid, 10000);
	}
	if (nftw(d->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
		cause = dk_fmt("cannot remove '%s': %s", d->dir,
		    strerror(errno));
		goto fail;
	}
	printf("removed desktop '%s'\n", d->name);
	desktop_free(d);
	return 0;
fail:
	die_cause("rm", cause);
	desktop_free(d);
	return 1;
}

/* ---- snapshot, restore ------------------------------------------------------ */

static int
valid_tag(const char *tag, char **cause)
{
	size_t n = strlen(tag);
	for (size_t i = 0; i < n; i++) {
		char c = tag[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			n = 0;
	}
	if (n == 0 || n > 64 || tag[0] == '-') {
		*cause = dk_fmt("invalid snapshot tag '%s': letters, digits, "
		    "'-', '_' and '.'", tag);
		return -1;
	}
	return 0;
}

/* Run a QMP job (snapshot-save/-load) and wait until it concludes. */
static int
qmp_job(const struct desktop *d, const char *cmd, const char *tag,
    char **cause)
{
	struct qmp *q = NULL;
	char *path = dpath(d, "qmp.sock");
	json_t *args = json_pack("{s:s, s:s, s:s, s:[s,s]}", "job-id",
	    "bureau-snap", "tag", tag, "vmstate", "sys", "devices", "sys",
	    "home");
	int rv = -1;
	if (path == NULL || args == NULL) {
		json_decref(args);
		*cause = dk_fmt("out of memory");
		goto out;
	}
	if (qmp_open(&q, path, 30000, cause) != 0) {
		json_decref(args);
		goto out;
	}
	if (qmp_exec(q, cmd, args, NULL, cause) != 0)
		goto out;
	for (;;) {
		json_t *jobs = NULL, *job;
		size_t i;
		const char *status = NULL, *err = NULL;
		if (qmp_exec(q, "query-jobs", NULL, &jobs, cause) != 0)
			goto out;
		json_array_foreach(jobs, i, job) {
			if (strcmp(json_string_value(json_object_get(job, "id"))
			    ?: "", "bureau-snap") == 0) {
				status = json_string_value(json_object_get(job,
				    "status"));
				err = json_string_value(json_object_get(job,
				    "error"));
				break;
			}
		}
		if (status != NULL && strcmp(status, "concluded") == 0) {
			if (err != NULL)
				*cause = dk_fmt("%s '%s': %s", cmd, tag, err);
			else
				rv = 0;
			json_decref(jobs);
			char *c2 = NULL;
			qmp_exec(q, "job-dismiss", json_pack("{s:s}", "id",
			    "bureau-snap"), NULL, &c2);
			free(c2);
			goto out;
		}
		json_decref(jobs);
		if (status == NULL) {
			*cause = dk_fmt("%s '%s': the job vanished", cmd, tag);
			goto out;
		}
		usleep(200000);
	}
out:
	qmp_close(q);
	free(path);
	return rv;
}

static int
snap_offline(const struct desktop *d, const char *op, const char *tag,
    char **cause)
{
	const char *disks[] = {"system.qcow2", "home.qcow2"};
	for (int i = 0; i < 2; i++) {
		char *p = dpath(d, disks[i]);
		if (p == NULL) {
			*cause = dk_fmt("out of memory");
			return -1;
		}
		char *argv_s[] = {"qemu-img", "snapshot", (char *)op,
		    (char *)tag, p, NULL};
		char *argv_l[] = {"qemu-img", "snapshot", "-U", "-l", p, NULL};
		int rv = dk_run(tag ? argv_s : argv_l, 0, cause);
		free(p);
		if (rv != 0)
			return -1;
	}
	return 0;
}

static int
snapshot_cmd(int argc, char **argv, int restore)
{
	struct desktop *d = NULL;
	char *cause = NULL;
	const char *cmd = argv[0];
	if (argc != 3 && !(argc == 2 && !restore)) {
		usage_err(cmd, restore ? "NAME and TAG expected" :
		    "NAME and TAG expected (NAME alone lists)");
		return 2;
	}
	const char *tag = argc == 3 ? argv[2] : NULL;
	if (desktop_load(argv[1], &d, &cause) != 0 ||
	    (tag != NULL && valid_tag(tag, &cause) != 0))
		goto fail;
	pid_t pid = desktop_pid(d);
	if (tag == NULL) {
		if (snap_offline(d, "-l", NULL, &cause) != 0)
			goto fail;
	} else if (pid == 0) {
		/* Stopped: the disks alone, with qemu-img. */
		if (snap_offline(d, restore ? "-a" : "-c", tag, &cause) != 0)
			goto fail;
		printf("%s desktop '%s' %s '%s' (disks)\n", restore ?
		    "restored" : "snapshot of", d->name, restore ? "to" :
		    "saved as", tag);
	} else if (!restore) {
		/* Live: disks and memory, internal qcow2 snapshots. */
		if (qmp_job(d, "snapshot-save", tag, &cause) != 0)
			goto fail;
		printf("snapshot of desktop '%s' saved as '%s' (live: disks "
		    "and memory)\n", d->name, tag);
	} else {
		char *c2 = NULL;
		if (qmp_simple(d, "stop", NULL, NULL, &cause) != 0)
			goto fail;
		int rv = qmp_job(d, "snapshot-load", tag, &cause);
		qmp_simple(d, "cont", NULL, NULL, &c2);
		free(c2);
		if (rv != 0)
			goto fail;
		printf("restored desktop '%s' to '%s' (live)\n", d->name, tag);
	}
	desktop_free(d);
	return 0;
fail:
	die_cause(cmd, cause);
	desktop_free(d);
	return 1;
}

static int
cmd_snapshot(int argc, char **argv)
{
	return snapshot_cmd(argc, argv, 0);
}

static int
cmd_restore(int argc, char **argv)
{
	return snapshot_cmd(argc, argv, 1);
}

/* ---- console ----------------------------------------------------------------- */

static int
cmd_console(int argc, char **argv)
{
	int follow = 0, lines = 100, c;
	struct desktop *d = NULL;
	char *cause = NULL;
	optind = 1;
	while ((c = getopt(argc, argv, "fn:")) != -1) {
		switch (c) {
		case 'f': follow = 1; break;
		case 'n': lines = atoi(optarg); break;
		default: usage_err("console", "unknown option"); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage_err("console", "one NAME expected");
		return 2;
	}
	if (desktop_load(argv[optind], &d, &cause) != 0) {
		die_cause("console", cause);
		return 1;
	}
	char *log = dpath(d, "console.log"), n[16];
	snprintf(n, sizeof n, "%d", lines > 0 ? lines : 100);
	desktop_free(d);
	if (log == NULL || access(log, R_OK) != 0) {
		fprintf(stderr, "bureau console: no console log yet (start "
		    "the desktop)\n");
		free(log);
		return 1;
	}
	/* The guest writes the console: its text goes through safeprint,
	 * never straight to the terminal. tail(1) still does the following
	 * (-F: across a restart's new log), into a pipe. */
	int fds[2];
	fflush(stdout);
	if (pipe(fds) != 0) {
		fprintf(stderr, "bureau console: cannot make a pipe: %s\n",
		    strerror(errno));
		free(log);
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bureau console: cannot fork: %s\n",
		    strerror(errno));
		close(fds[0]);
		close(fds[1]);
		free(log);
		return 1;
	}
	if (pid == 0) {
		char *targv[] = {"tail", "-n", n, follow ? "-F" : log, log,
		    NULL};
		if (!follow)
			targv[4] = NULL;
		close(fds[0]);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		close(fds[1]);
		execvp("tail", targv);
		fprintf(stderr, "bureau console: cannot run 'tail': %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	free(log);
	struct sp_state st = {.style = SP_PLAIN};
	char buf[8192];
	ssize_t got;
	while ((got = read(fds[0], buf, sizeof buf)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		sp_write(&st, stdout, buf, (size_t)got);
		if (fflush(stdout) != 0)
			break; /* a closed pipe (| head): stop */
	}
	sp_flush(&st, stdout);
	fflush(stdout);
	close(fds[0]);
	int status = 0;
	if (got != 0)
		kill(pid, SIGTERM);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return got == 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

const struct cli_cmd cli_desktop_cmds[] = {
	{"image", "image build [--minimal] [--out DIR] [--deb PATH] "
	    "[--cache DIR] [--rebuild]", image_main},
	{"create", "create NAME [--disk 20G] [--home SIZE] [--memory 4G] "
	    "[--cpus 2] [--image DIR]", cmd_create},
	{"start", "start NAME [--timeout S] [--accel auto|kvm|tcg] "
	    "[--no-wait]", cmd_start},
	{"stop", "stop NAME [--timeout S] [--force]", cmd_stop},
	{"pause", "pause NAME", cmd_pause},
	{"resume", "resume NAME", cmd_resume},
	{"status", "status NAME", cmd_status},
	{"ls", "ls", cmd_ls},
	{"rm", "rm [--force] NAME", cmd_rm},
	{"snapshot", "snapshot NAME [TAG]   (no TAG: list)", cmd_snapshot},
	{"restore", "restore NAME TAG", cmd_restore},
	{"console", "console [-f] [-n LINES] NAME", cmd_console},
	{NULL, NULL, NULL},
};
