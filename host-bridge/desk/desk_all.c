/*
 * host-bridge/desk/desk_all.c: `stop --all` and `start --all` (DESIGN.md,
 * "Always there"): every running desktop saved at once, and back exactly
 * those that `stop --all` saved, as libvirt-guests does for its domains at
 * a host's shutdown and boot (bureau-desktops.service).
 *
 * One thread a desktop, each the library's own desk_stop or desk_start:
 * a desktop's stop and start already lock it, wait and say what happened,
 * and one that fails or hangs holds up none of the others. The mark
 * DESK_ALL_MARK in a desktop's directory says that `stop --all` saved it;
 * the desktop's own start or stop removes it, so a desktop stopped or
 * started by hand since is left as its operator left it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/desk/desk_int.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

void
desk_all_unmark(const struct desktop *d)
{
	char *p = desktop_path(d, DESK_ALL_MARK);

	if (p != NULL)
		unlink(p);
	free(p);
}

static int
all_marked(const struct desktop *d)
{
	char *p = desktop_path(d, DESK_ALL_MARK);
	int r = p != NULL && access(p, F_OK) == 0;

	free(p);
	return (r);
}

struct all_job {
	char *name;
	int start, ok;
	long timeout;
	struct desk_err err;
	struct desk_start_res started;
	struct desk_stop_res stopped;
	desk_all_fn fn;
	void *arg;
	pthread_mutex_t *say; /* one desktop's end told at a time */
	pthread_t thread;
};

struct all_list {
	struct all_job *jobs;
	int n, cap, start;
};

/* Which desktops: the running VMs for stop, the marked ones for start. */
static int
all_collect(const char *name, void *arg)
{
	struct all_list *l = arg;
	const struct vm_backend *vm;
	struct desktop *d;
	char *cause = NULL;
	int take;

	if (desktop_load(name, &d, &cause) != 0) {
		free(cause);
		return (0);
	}
	vm = vm_backend_for(d);
	/* on another machine: the bureau there's */
	if (d->attached || d->remote_dir != NULL)
		take = 0;
	else if (!l->start)
		/* running, or saved while idle by its agent, which serves
		 * on: both are up for their users */
		take = vm->pid(d) > 0 ||
		    (store_agent_pid(d) > 0 && vm->saved(d));
	else if ((take = all_marked(d)) &&
	    (vm->pid(d) > 0 || store_agent_pid(d) > 0)) {
		/* started by hand since: nothing to bring back */
		desk_all_unmark(d);
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
	if ((l->jobs[l->n].name = strdup(name)) == NULL)
		return (-1);
	l->n++;
	return (0);
}

/* A desktop stop --all saved is marked for start --all (one that stop
 * found not running has no state: not marked). */
static void
all_mark(struct all_job *j)
{
	struct desktop *d = NULL;
	char *c2 = NULL, *mark = NULL;

	if (desktop_load(j->name, &d, &c2) == 0 &&
	    vm_backend_for(d)->saved(d) &&
	    ((mark = desktop_path(d, DESK_ALL_MARK)) == NULL ||
	        hb_write_file(mark, "", 0, 0600, &c2) != 0)) {
		j->ok = 0;
		desk_fail(&j->err, DESK_EFAIL,
		    "'%s' is saved, but start --all will not know it: %s",
		    j->name, c2 ? c2 : "out of memory");
	}
	free(c2);
	free(mark);
	desktop_free(d);
}

static void *
all_main(void *arg)
{
	struct all_job *j = arg;
	struct desk_start_opts so = { .timeout_s = j->timeout };
	struct desk_all_one one = { .name = j->name };

	if (j->start) {
		j->ok = desk_start(j->name, &so, &j->started, &j->err) == 0;
	} else {
		j->ok = desk_stop(j->name, DESK_STOP_SAVE,
		            j->timeout > 0 ? j->timeout : 120, &j->stopped,
		            &j->err) == 0;
		if (j->ok)
			all_mark(j);
	}
	one.ok = j->ok;
	one.err = &j->err;
	one.started = j->start && j->ok ? &j->started : NULL;
	one.stopped = !j->start && j->ok ? &j->stopped : NULL;
	pthread_mutex_lock(j->say);
	if (j->fn != NULL)
		j->fn(j->arg, &one);
	pthread_mutex_unlock(j->say);
	return (NULL);
}

int
desk_all(int start, long timeout_s, desk_all_fn fn, void *arg, int *n,
    int *failed)
{
	struct all_list l = { .start = start };
	pthread_mutex_t say = PTHREAD_MUTEX_INITIALIZER;
	int started = 0;

	*n = *failed = 0;
	if (store_each(all_collect, &l) != 0) {
		*failed = 1;
		goto out;
	}
	for (int i = 0; i < l.n; i++) {
		struct all_job *j = &l.jobs[i];

		j->start = start;
		j->timeout = timeout_s;
		j->fn = fn;
		j->arg = arg;
		j->say = &say;
		if (pthread_create(&j->thread, NULL, all_main, j) != 0) {
			/* (no thread: this one in turn) */
			all_main(j);
			j->thread = 0;
		}
	}
	for (int i = 0; i < l.n; i++) {
		if (l.jobs[i].thread != 0)
			pthread_join(l.jobs[i].thread, NULL);
		started++;
		if (!l.jobs[i].ok)
			(*failed)++;
	}
	*n = started;
out:
	for (int i = 0; i < l.n; i++) {
		free(l.jobs[i].name);
		desk_err_clear(&l.jobs[i].err);
		desk_start_res_clear(&l.jobs[i].started);
		desk_stop_res_clear(&l.jobs[i].stopped);
	}
	free(l.jobs);
	return (*failed > 0 ? -1 : 0);
}
