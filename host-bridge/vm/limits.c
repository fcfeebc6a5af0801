/*
 * host-bridge/vm/limits.c: a desktop's QEMU in a cgroup of its own, with
 * its CPU, memory and process limits (limits.h).
 *
 * Where: under the cgroup of the process that starts QEMU (the host
 * agent), in bureau/NAME-HASH (HASH: of the desktop's directory, so two
 * homes' desktops of one name stay apart). With cgroup v2 at
 * /sys/fs/cgroup, the cpu, memory and pids controllers are enabled down
 * to it where the parent allows (a service needs Delegate=yes); on a host
 * with v1 (or hybrid) hierarchies, each controller's own. What the host
 * cannot give is named, never an error: `status` says which limits hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"

#define CG_ROOT "/sys/fs/cgroup"
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static const char *const cg_ctls[] = { "cpu", "memory", "pids" };
#define CG_NCTL 3

/* Is the host's cgroup hierarchy v2 alone (no v1 controllers)? */
static int
cg_v2(void)
{
	struct statfs sf;

	return (statfs(CG_ROOT, &sf) == 0 &&
	    (unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC);
}

/* pid's cgroup path in the hierarchy of controller ctl (v1), or the v2
 * one (ctl NULL), from /proc/PID/cgroup; malloc'd, NULL when none. */
static char *
cg_path_of(pid_t pid, const char *ctl)
{
	char *pp = pid > 0 ? hb_fmt("/proc/%d/cgroup", (int)pid) :
	                     strdup("/proc/self/cgroup"),
	     *line = NULL, *found = NULL;
	size_t cap = 0;
	FILE *f = pp ? fopen(pp, "re") : NULL;

	free(pp);
	if (f == NULL)
		return (NULL);
	while (found == NULL && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'),
		     *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		size_t n;

		if (c2 == NULL)
			continue;
		*c2 = '\0';
		n = strlen(c2 + 1);
		while (n > 0 && c2[n] == '\n')
			c2[n--] = '\0';
		if (ctl == NULL) {
			if (c1[1] == '\0')
				found = strdup(c2 + 1);
			continue;
		}
		/* "cpu,cpuacct": a list of controllers */
		for (char *tok, *sp = NULL, *s = c1 + 1;
		     (tok = strtok_r(s, ",", &sp)) != NULL; s = NULL) {
			if (strcmp(tok, ctl) == 0) {
				found = strdup(c2 + 1);
				break;
			}
		}
	}
	free(line);
	fclose(f);
	return (found);
}

/* The directory of a cgroup: the hierarchy's mount and the path. */
static char *
cg_dir(const char *ctl, const char *path)
{
	if (strcmp(path, "/") == 0)
		path = "";
	return (ctl ? hb_fmt(CG_ROOT "/%s%s", ctl, path) :
	              hb_fmt(CG_ROOT "%s", path));
}

/* This desktop's cgroup's last part: NAME-HASH. */
static char *
cg_leaf(const struct desktop *d)
{
	unsigned char h[4];
	char hex[9];

	crypto_generichash(h, sizeof h, (const unsigned char *)d->dir,
	    strlen(d->dir), NULL, 0);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	return (hb_fmt("%s-%s", d->name, hex));
}

static int
cg_write(const char *dir, const char *file, const char *val, char **cause)
{
	char *p = hb_fmt("%s/%s", dir, file);
	int fd = p ? open(p, O_WRONLY | O_CLOEXEC) : -1, rv = -1;
	size_t n = strlen(val);

	if (fd >= 0 && write(fd, val, n) == (ssize_t)n)
		rv = 0;
	else if (cause != NULL)
		*cause = hb_fmt("cannot write '%s' to '%s': %s", val,
		    p ? p : file, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(p);
	return (rv);
}

static char *
cg_read(const char *dir, const char *file)
{
	char *p = hb_fmt("%s/%s", dir, file), *s = p ? hb_read_file(p) : NULL;

	free(p);
	if (s != NULL)
		s[strcspn(s, "\n")] = '\0';
	return (s);
}

/* d's CPU quota in microseconds a period (its vCPUs' when unset), and
 * its memory limit in MiB: what the cgroup files, limits_json and
 * libvirt's <cputune> take. */
static long
cg_quota_us(const struct desktop *d)
{
	return ((d->cpu_milli > 0 ? d->cpu_milli : d->cpus * 1000L) *
	    (LIMITS_CPU_PERIOD_US / 1000));
}

static long
cg_memory_mb(const struct desktop *d)
{
	return (d->memory + LIMITS_MEM_OVERHEAD_MB);
}

/* Controller ctl's limits for d into dir: v1's file names, or (v2) only
 * those of the controllers in have. */
static int
cg_values(const struct desktop *d, const char *ctl, const char *dir, int v2,
    const char *have, char **cause)
{
	char v[64];

	if (v2 && strstr(have, ctl) == NULL)
		return (0);
	if (strcmp(ctl, "cpu") == 0) {
		if (v2) {
			snprintf(v, sizeof v, "%ld %d", cg_quota_us(d),
			    LIMITS_CPU_PERIOD_US);
			return (cg_write(dir, "cpu.max", v, cause));
		}
		snprintf(v, sizeof v, "%d", LIMITS_CPU_PERIOD_US);
		if (cg_write(dir, "cpu.cfs_period_us", v, cause) != 0)
			return (-1);
		snprintf(v, sizeof v, "%ld", cg_quota_us(d));
		return (cg_write(dir, "cpu.cfs_quota_us", v, cause));
	}
	if (strcmp(ctl, "memory") == 0) {
		snprintf(v, sizeof v, "%lld", (long long)cg_memory_mb(d) << 20);
		return (cg_write(dir,
		    v2 ? "memory.max" : "memory.limit_in_bytes", v, cause));
	}
	snprintf(v, sizeof v, "%d", LIMITS_PIDS_MAX);
	return (cg_write(dir, "pids.max", v, cause));
}

/* All three controllers' limits for d into the v2 cgroup dir. */
static int
cg_values_v2(const struct desktop *d, const char *dir, const char *have,
    char **cause)
{
	for (int i = 0; i < CG_NCTL; i++)
		if (cg_values(d, cg_ctls[i], dir, 1, have, cause) != 0)
			return (-1);
	return (0);
}

/* mkdir that finds one already there fine. */
static int
cg_mkdir(const char *dir, char **cause)
{
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return (0);
	*cause = hb_fmt("cannot make cgroup '%s': %s", dir, strerror(errno));
	return (-1);
}

/* Appends name to cg->missing ("cpu, memory"). */
static void
cg_missing(struct limits_cg *cg, const char *name)
{
	char *m = cg->missing ? hb_fmt("%s, %s", cg->missing, name) :
	                        strdup(name);

	if (m != NULL) {
		free(cg->missing);
		cg->missing = m;
	}
}

static int
cg_make_v1(const struct desktop *d, struct limits_cg *cg, const char *leaf,
    char **cause)
{
	for (int i = 0; i < CG_NCTL; i++) {
		char *own = cg_path_of(0, cg_ctls[i]), *base = NULL,
		     *dir = NULL, *top = NULL;
		int rv = -1;

		if (own == NULL || (top = cg_dir(cg_ctls[i], "/")) == NULL ||
		    access(top, W_OK) != 0) {
			cg_missing(cg, cg_ctls[i]);
			rv = 0;
		} else if ((base = cg_dir(cg_ctls[i], own)) == NULL ||
		    (dir = hb_fmt("%s/bureau", base)) == NULL ||
		    cg_mkdir(dir, cause) != 0) {
			;
		} else {
			free(dir);
			dir = hb_fmt("%s/bureau/%s", base, leaf);
			if (dir != NULL && cg_mkdir(dir, cause) == 0 &&
			    cg_values(d, cg_ctls[i], dir, 0, NULL, cause) ==
			        0 &&
			    (cg->procs[cg->n] = hb_fmt("%s/cgroup.procs",
			         dir)) != NULL) {
				cg->n++;
				rv = 0;
			}
		}
		free(own);
		free(base);
		free(dir);
		free(top);
		if (rv != 0)
			return (-1);
	}
	return (0);
}

/* Enables the controllers of want that dir's cgroup.controllers has in
 * its subtree: what was enabled, as "cpu memory pids" (malloc'd). */
static char *
cg_enable_v2(const char *dir, const char *want)
{
	char *have = cg_read(dir, "cgroup.controllers"), *got = strdup("");

	for (int i = 0; have && got && i < CG_NCTL; i++) {
		char on[16], *g;

		if (strstr(want, cg_ctls[i]) == NULL ||
		    strstr(have, cg_ctls[i]) == NULL)
			continue;
		snprintf(on, sizeof on, "+%s", cg_ctls[i]);
		if (cg_write(dir, "cgroup.subtree_control", on, NULL) != 0)
			continue;
		g = hb_fmt("%s%s%s", got, *got ? " " : "", cg_ctls[i]);
		free(got);
		got = g;
	}
	free(have);
	return (got);
}

static int
cg_make_v2(const struct desktop *d, struct limits_cg *cg, const char *leaf,
    char **cause)
{
	char *own = cg_path_of(0, NULL), *base = own ? cg_dir(NULL, own) : NULL,
	     *mid = base ? hb_fmt("%s/bureau", base) : NULL, *dir = NULL,
	     *e1 = NULL, *e2 = NULL;
	int rv = -1;

	if (mid == NULL || cg_mkdir(mid, cause) != 0)
		goto out;
	/* (a parent with processes of its own cannot enable them: the
	 * cgroup is still made, its limits named as not enforced) */
	e1 = cg_enable_v2(base, "cpu memory pids");
	e2 = cg_enable_v2(mid, e1 ? e1 : "");
	if ((dir = hb_fmt("%s/%s", mid, leaf)) == NULL ||
	    cg_mkdir(dir, cause) != 0 ||
	    cg_values_v2(d, dir, e2 ? e2 : "", cause) != 0 ||
	    (cg->procs[cg->n] = hb_fmt("%s/cgroup.procs", dir)) == NULL)
		goto out;
	cg->n++;
	for (int i = 0; i < CG_NCTL; i++)
		if (e2 == NULL || strstr(e2, cg_ctls[i]) == NULL)
			cg_missing(cg, cg_ctls[i]);
	rv = 0;
out:
	free(own);
	free(base);
	free(mid);
	free(dir);
	free(e1);
	free(e2);
	return (rv);
}

int
limits_cg_make(const struct desktop *d, struct limits_cg *cg, char **cause)
{
	char *leaf = cg_leaf(d);
	int rv;

	memset(cg, 0, sizeof *cg);
	if (leaf == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	rv = cg_v2() ? cg_make_v2(d, cg, leaf, cause) :
	               cg_make_v1(d, cg, leaf, cause);
	free(leaf);
	if (rv != 0)
		limits_cg_free(cg);
	return (rv);
}

int
limits_cg_join(const struct limits_cg *cg)
{
	for (int i = 0; i < cg->n; i++) {
		int fd = open(cg->procs[i], O_WRONLY | O_CLOEXEC);

		/* "0": the writer itself, in v1 and v2 */
		if (fd < 0 || write(fd, "0", 1) != 1) {
			int e = errno;

			if (fd >= 0)
				close(fd);
			errno = e;
			return (-1);
		}
		close(fd);
	}
	return (0);
}

void
limits_cg_free(struct limits_cg *cg)
{
	for (int i = 0; i < cg->n; i++)
		free(cg->procs[i]);
	free(cg->missing);
	memset(cg, 0, sizeof *cg);
}

void
limits_cg_drop(const struct desktop *d)
{
	char *leaf = cg_leaf(d);
	int v2 = cg_v2();

	for (int i = 0; leaf != NULL && i < (v2 ? 1 : CG_NCTL); i++) {
		const char *ctl = v2 ? NULL : cg_ctls[i];
		char *own = cg_path_of(0, ctl),
		     *base = own ? cg_dir(ctl, own) : NULL,
		     *dir = base ? hb_fmt("%s/bureau/%s", base, leaf) : NULL;

		/* (EBUSY while a process is in it: the next drop) */
		if (dir != NULL)
			(void)rmdir(dir);
		free(own);
		free(base);
		free(dir);
	}
	free(leaf);
}

int
limits_cg_update(const struct desktop *d, pid_t pid, char **cause)
{
	if (cg_v2()) {
		char *p = cg_path_of(pid, NULL),
		     *dir = p ? cg_dir(NULL, p) : NULL,
		     *have = dir ? cg_read(dir, "cgroup.controllers") : NULL;
		int rv = dir != NULL && have != NULL ?
		    cg_values_v2(d, dir, have, cause) :
		    0;

		free(p);
		free(dir);
		free(have);
		return (rv);
	}
	for (int i = 0; i < CG_NCTL; i++) {
		char *p = cg_path_of(pid, cg_ctls[i]),
		     *dir = p ? cg_dir(cg_ctls[i], p) : NULL;
		int rv = 0;

		/* only the cgroup bureau made: never the host's own */
		if (dir != NULL && strstr(dir, "/bureau/") != NULL)
			rv = cg_values(d, cg_ctls[i], dir, 0, NULL, cause);
		free(p);
		free(dir);
		if (rv != 0)
			return (-1);
	}
	return (0);
}

/* A number from a cgroup file; -1 for "max", a v1 limit at its
 * unlimited value (above 2^60) or an unreadable file. */
static long long
cg_num(const char *dir, const char *file, int field)
{
	char *s = dir ? cg_read(dir, file) : NULL, *p = s;
	long long v = -1;

	for (int i = 0; p != NULL && i < field; i++)
		p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
	if (p != NULL && strncmp(p, "max", 3) != 0) {
		v = strtoll(p, NULL, 10);
		if (v > (1LL << 60))
			v = -1;
	}
	free(s);
	return (v);
}

/* The read-back's keys into r: cpu (cores), memory_mb, pids. */
static void
cg_json_values(json_t *r, const char *cpu_dir, const char *mem_dir,
    const char *pids_dir, int v2)
{
	long long q, per, m, pm;

	if (v2) {
		q = cg_num(cpu_dir, "cpu.max", 0);
		per = cg_num(cpu_dir, "cpu.max", 1);
		m = cg_num(mem_dir, "memory.max", 0);
	} else {
		q = cg_num(cpu_dir, "cpu.cfs_quota_us", 0);
		per = cg_num(cpu_dir, "cpu.cfs_period_us", 0);
		m = cg_num(mem_dir, "memory.limit_in_bytes", 0);
	}
	pm = cg_num(pids_dir, "pids.max", 0);
	if (q > 0 && per > 0)
		json_object_set_new(r, "cpu", json_real((double)q / per));
	if (m > 0)
		json_object_set_new(r, "memory_mb", json_integer(m >> 20));
	if (pm > 0)
		json_object_set_new(r, "pids", json_integer(pm));
}

json_t *
limits_cg_json(pid_t pid)
{
	json_t *r = json_object();
	int v2 = cg_v2();
	char *dirs[CG_NCTL] = { NULL, NULL, NULL }, *miss = NULL;

	if (r == NULL || pid <= 0)
		return (r);
	for (int i = 0; i < CG_NCTL; i++) {
		char *p = cg_path_of(pid, v2 ? NULL : cg_ctls[i]);

		if (p != NULL && strstr(p, "/bureau/") != NULL)
			dirs[i] = cg_dir(v2 ? NULL : cg_ctls[i], p);
		if (p != NULL && strstr(p, "/bureau/") != NULL &&
		    json_object_get(r, "cgroup") == NULL)
			json_object_set_new(r, "cgroup",
			    json_string(strstr(p, "/bureau/")));
		free(p);
	}
	json_object_set_new(r, "hierarchy", json_string(v2 ? "v2" : "v1"));
	cg_json_values(r, dirs[0], dirs[1], dirs[2], v2);
	for (int i = 0; i < CG_NCTL; i++) {
		const char *k = i == 0 ? "cpu" : i == 1 ? "memory_mb" : "pids";
		char *m2;

		if (json_object_get(r, k) != NULL)
			continue;
		m2 = miss ? hb_fmt("%s, %s", miss, cg_ctls[i]) :
		            strdup(cg_ctls[i]);
		free(miss);
		miss = m2;
	}
	if (miss != NULL)
		json_object_set_new(r, "not_enforced", json_string(miss));
	free(miss);
	for (int i = 0; i < CG_NCTL; i++)
		free(dirs[i]);
	return (r);
}

int
limits_parse_cpu(const char *what, const char *s, int cpus, long *milli,
    char **cause)
{
	char *end = NULL;
	double v;

	/* digits and one point only: strtod would take blanks before,
	 * hex, exponents, "inf" and the locale's decimal comma too */
	errno = 0;
	v = s && *s >= '0' && *s <= '9' &&
	        strspn(s, "0123456789.") == strlen(s) &&
	        strchr(s, '.') == strrchr(s, '.') ?
	    strtod(s, &end) :
	    0;
	if (s == NULL || end == NULL || *end != '\0' || errno != 0 ||
	    !(v >= 0.05) || v > cpus) {
		*cause = hb_fmt("%s must be a number of cores from 0.05 to "
		                "the desktop's %d vCPUs, not '%s'",
		    what, cpus, s ? s : "");
		return (-1);
	}
	*milli = (long)(v * 1000 + 0.5);
	return (0);
}

json_t *
limits_json(const struct desktop *d, pid_t pid)
{
	json_t *r = json_pack("{s:f, s:I, s:i, s:I, s:I, s:I}", "cpu",
	    (double)cg_quota_us(d) / LIMITS_CPU_PERIOD_US, "memory_mb",
	    (json_int_t)cg_memory_mb(d), "pids", LIMITS_PIDS_MAX, "disk_bps",
	    (json_int_t)d->disk_bps, "disk_iops", (json_int_t)d->disk_iops,
	    "net_rate", (json_int_t)d->net_rate);

	if (r != NULL && pid > 0)
		json_object_set_new(r, "enforced", limits_cg_json(pid));
	return (r);
}
