/*
 * host-bridge/cli/all.c: `bureau stop --all` and `bureau start --all`
 * (DESIGN.md, "Always there"): every running desktop saved at once, and
 * back exactly those that `stop --all` saved, as libvirt-guests does for
 * its domains at a host's shutdown and boot (bureau-desktops.service).
 *
 * Each desktop is one child, this very program's `stop NAME` or `start
 * NAME`, all of them at once: a desktop's stop and start already lock it,
 * wait and say what happened, and one that fails or hangs holds up none of
 * the others. Each child's output is printed whole when it ends, so lines
 * of two desktops never mix. The mark ALL_MARK in a desktop's directory
 * says that `stop --all` saved it; the desktop's own start or stop removes
 * it (desktop.c), so a desktop stopped or started by hand since is left as
 * its operator left it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/cli/all.h"
#include "host-bridge/cli/remote.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

struct all_job {
	char *name;
	pid_t pid;
	int fd;
	char *out;
	size_t len;
	int status;
};

struct all_list {
	struct all_job *jobs;
	int n, cap;
	int start; /* collecting for start --all */
};

static int
all_mark_path(const struct desktop *d, char **path)
{
	*path = desktop_path(d, ALL_MARK);
	return (*path != NULL ? 0 : -1);
}

void
all_unmark(const struct desktop *d)
{
	char *p;

	if (all_mark_path(d, &p) == 0)
		unlink(p);
	free(p);
}

/* Which desktops: the running VMs for stop, the marked ones for start. */
static int
all_collect(const char *name, void *arg)
{
	struct all_list *l = arg;
	struct desktop *d;
	char *cause = NULL, *mark = NULL;
	int take;

	if (desktop_load(name, &d, &cause) != 0) {
		fprintf(stderr, "bureau: skipping '%s': %s\n", name, cause);
		free(cause);
		return (0);
	}
	if (d->attached)
		take = 0;
	else if (d->remote_dir != NULL) {
		/* on another machine, the bureau there's: start --all (this
		 * machine's service at boot) brings back its SSH forwards */
		take = 0;
		if (l->start && remote_forward_launch(d, &cause) != 0) {
			fprintf(stderr, "bureau: '%s': %s\n", name, cause);
			free(cause);
			cause = NULL;
		}
	} else if (!l->start)
		/* running, or saved while idle by its agent, which serves
		 * on: both are up for their users */
		take = vm_backend_for(d)->pid(d) > 0 ||
		    (store_agent_pid(d) > 0 && vm_backend_for(d)->saved(d));
	else
		take = all_mark_path(d, &mark) == 0 && access(mark, F_OK) == 0;
	free(mark);
	if (take && l->start &&
	    (vm_backend_for(d)->pid(d) > 0 || store_agent_pid(d) > 0)) {
		/* started by hand since: nothing to bring back */
		all_unmark(d);
		take = 0;
	}
	desktop_free(d);
	if (!take)
		return (0);
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 16;
		struct all_job *j = realloc(l->jobs, cap * sizeof *j);
		if (j == NULL)
			return (-1);
		l->jobs = j;
		l->cap = cap;
	}
	memset(&l->jobs[l->n], 0, sizeof l->jobs[l->n]);
	l->jobs[l->n].fd = -1;
	if ((l->jobs[l->n].name = strdup(name)) == NULL)
		return (-1);
	l->n++;
	return (0);
}

/* `bureau VERB NAME [--timeout S]` as a child, its output into a pipe. */
static int
all_spawn(const char *exe, const char *verb, struct all_job *j,
    const char *timeout, char **cause)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0) {
		*cause = hb_fmt("pipe: %s", strerror(errno));
		return (-1);
	}
	if ((j->pid = fork()) < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return (-1);
	}
	if (j->pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (timeout != NULL)
			execl(exe, "bureau", verb, j->name, "--timeout",
			    timeout, (char *)NULL);
		else
			execl(exe, "bureau", verb, j->name, (char *)NULL);
		fprintf(stderr, "cannot run '%s': %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	j->fd = p[0];
	return (0);
}

/* Read what the children say until each has ended; each one's output is
 * printed whole as it ends. */
static void
all_collect_output(struct all_list *l)
{
	struct pollfd *pf = calloc(l->n, sizeof *pf);
	int open = 0;

	for (int i = 0; i < l->n; i++)
		open += l->jobs[i].fd >= 0;
	while (open > 0 && pf != NULL) {
		for (int i = 0; i < l->n; i++) {
			pf[i].fd = l->jobs[i].fd;
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		if (poll(pf, l->n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < l->n; i++) {
			struct all_job *j = &l->jobs[i];
			char buf[4096], *o;
			ssize_t r;

			if (j->fd < 0 || pf[i].revents == 0)
				continue;
			r = read(j->fd, buf, sizeof buf);
			if (r > 0 && (o = realloc(j->out, j->len + r + 1))) {
				memcpy(o + j->len, buf, r);
				j->len += r;
				o[j->len] = '\0';
				j->out = o;
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			close(j->fd);
			j->fd = -1;
			open--;
			waitpid(j->pid, &j->status, 0);
			j->pid = 0;
			if (j->out != NULL)
				fputs(j->out, stdout);
			fflush(stdout);
		}
	}
	free(pf);
	/* should poll fail, the children are still waited for */
	for (int i = 0; i < l->n; i++) {
		if (l->jobs[i].fd >= 0)
			close(l->jobs[i].fd);
		if (l->jobs[i].pid > 0)
			waitpid(l->jobs[i].pid, &l->jobs[i].status, 0);
	}
}

int
all_run(int start, const char *timeout)
{
	struct all_list l = { .start = start };
	const char *verb = start ? "start" : "stop";
	char exe[PATH_MAX], *cause = NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	long long t0 = hb_now_ms();
	int ok = 0, failed = 0;

	if (n <= 0) {
		fprintf(stderr,
		    "bureau %s --all: cannot find this program: %s\n", verb,
		    strerror(errno));
		return (1);
	}
	exe[n] = '\0';
	if (store_each(all_collect, &l) != 0) {
		fprintf(stderr, "bureau %s --all: out of memory\n", verb);
		return (1);
	}
	if (l.n == 0) {
		printf(start ? "start --all: no desktop was saved by stop "
		               "--all\n" :
		               "stop --all: no desktop is running\n");
		free(l.jobs);
		return (0);
	}
	fflush(NULL);
	for (int i = 0; i < l.n; i++) {
		if (all_spawn(exe, verb, &l.jobs[i], timeout, &cause) != 0) {
			fprintf(stderr, "bureau %s --all: '%s': %s\n", verb,
			    l.jobs[i].name, cause);
			free(cause);
			cause = NULL;
			l.jobs[i].status = -1;
		}
	}
	all_collect_output(&l);
	for (int i = 0; i < l.n; i++) {
		struct all_job *j = &l.jobs[i];
		struct desktop *d = NULL;
		char *mark = NULL, *c2 = NULL;
		int good = j->status != -1 && WIFEXITED(j->status) &&
		    WEXITSTATUS(j->status) == 0;

		/* A saved desktop is marked for start --all (a desktop that
		 * stop found not running has no state: not marked). */
		if (good && desktop_load(j->name, &d, &c2) == 0) {
			if (!start && vm_backend_for(d)->saved(d) &&
			    all_mark_path(d, &mark) == 0 &&
			    hb_write_file(mark, "", 0, 0600, &c2) != 0)
				fprintf(stderr,
				    "bureau stop --all: '%s' is saved, but "
				    "start --all will not know it: %s\n",
				    j->name, c2);
			if (start)
				all_unmark(d);
		}
		free(c2);
		free(mark);
		desktop_free(d);
		good ? ok++ : failed++;
		free(j->name);
		free(j->out);
	}
	free(l.jobs);
	printf("%s --all: %s %d desktop%s in %.1f s", verb,
	    start ? "started" : "saved", ok, ok == 1 ? "" : "s",
	    (hb_now_ms() - t0) / 1000.0);
	if (failed > 0)
		printf(", %d failed (above)%s", failed,
		    start ? "; they stay marked for the next start --all" : "");
	printf("\n");
	return (failed > 0 ? 1 : 0);
}
