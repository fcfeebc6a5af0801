/*
 * host-bridge/agent/agent.c: the host agent's life (see agent.h): startup,
 * the workers of its two sockets, the signal loop, the end. The rest is
 * in the files agent_int.h lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/token.h"
#include "host-bridge/agent/agent.h"
#include "host-bridge/agent/agent_int.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

/* A peer that stops reading frees its worker after this long. */
#define AG_SEND_MS 10000

double
ag_unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

/* ---- workers --------------------------------------------------------- */

static void *
ag_worker_main(void *arg)
{
	struct ag_worker *w = arg;

	for (;;) {
		nng_msg *msg, *out;
		int rv;

		nng_aio_set_timeout(w->aio, NNG_DURATION_INFINITE);
		nng_ctx_recv(w->ctx, w->aio);
		nng_aio_wait(w->aio);
		if ((rv = nng_aio_result(w->aio)) != 0) {
			if (rv == NNG_ECLOSED)
				return (NULL);
			continue;
		}
		msg = nng_aio_get_msg(w->aio);
		out = w->op ?
		    ag_msg(ag_op_handle(w->ag, nng_msg_body(msg),
		        nng_msg_len(msg))) :
		    ag_handle(w->ag, nng_msg_body(msg), nng_msg_len(msg));
		nng_msg_free(msg);
		if (out == NULL)
			continue;
		nng_aio_set_msg(w->aio, out);
		nng_aio_set_timeout(w->aio, AG_SEND_MS);
		nng_ctx_send(w->ctx, w->aio);
		nng_aio_wait(w->aio);
		if (nng_aio_result(w->aio) != 0)
			nng_msg_free(out); /* a failed send leaves it ours */
	}
}

static int
ag_listen(nng_socket *s, const char *url, size_t max, char **cause)
{
	int rv;

	if ((rv = nng_rep0_open(s)) != 0 ||
	    (rv = nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, max)) != 0 ||
	    (rv = nng_listen(*s, url, NULL, 0)) != 0) {
		*cause = hb_fmt("cannot listen on '%s': %s", url,
		    nng_strerror(rv));
		return (-1);
	}
	return (0);
}

/* On failure, the workers it started are ended again: a failed start
 * frees the agent, which they use. */
static int
ag_start_workers(struct agent *ag, char **cause)
{
	int i, rv = 0;

	for (i = 0; i < AG_WORKERS + AG_OP_WORKERS; i++) {
		struct ag_worker *w = &ag->workers[i];

		w->ag = ag;
		w->op = i >= AG_WORKERS;
		if ((rv = nng_ctx_open(&w->ctx, w->op ? ag->op : ag->ep)) !=
		        0 ||
		    (rv = nng_aio_alloc(&w->aio, NULL, NULL)) != 0 ||
		    (rv = pthread_create(&w->thread, NULL, ag_worker_main,
		         w)) != 0)
			break;
	}
	if (rv == 0)
		return (0);
	*cause = hb_fmt("cannot start a worker: %s",
	    rv > 0 ? strerror(rv) : nng_strerror(rv));
	/* Closed, the sockets end their workers' receives (NNG_ECLOSED). */
	nng_close(ag->ep);
	nng_close(ag->op);
	for (int j = 0; j < i; j++) {
		pthread_join(ag->workers[j].thread, NULL);
		nng_aio_free(ag->workers[j].aio);
	}
	nng_aio_free(ag->workers[i].aio);
	return (-1);
}

/* ---- setup ----------------------------------------------------------- */

/* A secret read by ag_secret, wiped and freed; NULL does nothing. */
static void
ag_secret_free(char *s)
{
	if (s == NULL)
		return;
	sodium_memzero(s, strlen(s));
	free(s);
}

/* A secret file's content without trailing whitespace (malloc'd). */
static char *
ag_secret(const struct desktop *d, const char *file, char **cause)
{
	char *path = desktop_path(d, file), *s;
	size_t n;

	if (path == NULL || (s = hb_read_file(path)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", path ? path : file,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	free(path);
	n = strlen(s);
	while (n > 0 &&
	    (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
	        s[n - 1] == '\t'))
		s[--n] = '\0';
	if (n == 0) {
		*cause = hb_fmt("the %s of desktop '%s' is empty", file,
		    d->name);
		free(s);
		return (NULL);
	}
	return (s);
}

static int
ag_load_policy(struct agent *ag, char **cause)
{
	char *path = desktop_path(ag->d, "desktop.json");
	json_t *j = path ? json_load_file(path, 0, NULL) : NULL;
	const char *al = json_string_value(json_object_get(j, "allow"));
	const char *ap = json_string_value(json_object_get(j, "approve"));
	json_t *to = json_object_get(j, "approve_timeout");
	int rv = -1;

	if (j == NULL) {
		*cause = hb_fmt("cannot read '%s'",
		    path ? path : "desktop.json");
		goto out;
	}
	ag->approve_timeout = AGENT_APPROVE_TIMEOUT;
	if (json_is_integer(to) && json_integer_value(to) >= 1 &&
	    json_integer_value(to) <= 86400)
		ag->approve_timeout = (long)json_integer_value(to);
	ag->takeover = json_is_true(json_object_get(j, "takeover"));
	/* idle save: only for a VM bureau runs */
	if (!ag->d->attached &&
	    json_is_integer(to = json_object_get(j, "idle_save")) &&
	    json_integer_value(to) >= 0 &&
	    json_integer_value(to) <= AGENT_IDLE_SAVE_MAX)
		ag->idle_save = (long)json_integer_value(to);
	if (policy_parse("allow", al ? al : "", &ag->allow, cause) != 0 ||
	    policy_parse("approve", ap ? ap : "", &ag->approve, cause) != 0)
		goto out;
	rv = 0;
out:
	json_decref(j);
	free(path);
	return (rv);
}

/* The agent's pid file, locked for its whole life (store_agent_pid). */
static int
ag_lock_pid(const struct desktop *d, char **cause)
{
	char *path = desktop_path(d, "agent.pid"), *s;
	int fd;

	if (path == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	/* (an agent that runs holds it for good; a look at whether one runs
	 * holds it for a moment: CI, the sanitized test_agent's attach saw
	 * its own wait's look and gave up) */
	if (fd < 0 || hb_flock_held_retry(fd, 2000) != 0) {
		*cause = fd >= 0 && errno == EWOULDBLOCK ?
		    hb_fmt("desktop '%s' already has a host agent", d->name) :
		    hb_fmt("cannot lock '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		return (-1);
	}
	free(path);
	if ((s = hb_fmt("%d\n", (int)getpid())) == NULL ||
	    ftruncate(fd, 0) != 0 || pwrite(fd, s, strlen(s), 0) < 0) {
		*cause = hb_fmt("cannot write the agent's pid: %s",
		    strerror(errno));
		free(s);
		close(fd);
		return (-1);
	}
	free(s);
	return (fd);
}

/*
 * A VM desktop's guest gets a new token at every start and restore, so
 * that a token read inside the desktop (it is the desktop user's to
 * read) is worth nothing once it stops. The one it had stays in
 * guest-token.old until the guest took the new one (vm_launch: a
 * restored guest re-reads its identity from fw_cfg, and must then refuse
 * the old token). Run under the pid lock, before the token is read.
 */
static int
ag_rotate_guest_token(const struct desktop *d, char **cause)
{
	char *gp = desktop_path(d, "guest-token"),
	     *op = desktop_path(d, "guest-token.old");
	char *old = gp ? hb_read_file(gp) : NULL, *tok = hb_random_hex(32);
	int rv = -1;

	if (gp == NULL || op == NULL || tok == NULL) {
		*cause = hb_fmt("out of memory or no random bytes");
		goto out;
	}
	/* an .old already there is the one the guest may still hold (an
	 * agent that ended before its guest took the new token) */
	if (old != NULL && access(op, F_OK) != 0 &&
	    hb_write_file(op, old, strlen(old), 0600, cause) != 0)
		goto out;
	rv = hb_write_file(gp, tok, strlen(tok), 0600, cause);
out:
	if (old != NULL)
		sodium_memzero(old, strlen(old));
	if (tok != NULL)
		sodium_memzero(tok, strlen(tok));
	free(old);
	free(tok);
	free(gp);
	free(op);
	return (rv);
}

/*
 * What the agent needs before it talks to anyone: its desktop, the pid
 * lock, the tokens' hash and keys, the policy and the audit trail. *guest
 * the guest token (malloc'd).
 */
static int
ag_init(struct agent *ag, const char *name, const char *accel, char **guest,
    char **cause)
{
	pthread_condattr_t cattr;
	char *token;
	int pidfd;

	umask(077);
	pthread_mutex_init(&ag->lock, NULL);
	pthread_mutex_init(&ag->vm_op, NULL);
	/* Approvals time out on the monotonic clock: a wall clock stepped
	 * (NTP, date -s) neither cuts nor stretches the wait. */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&ag->decided, &cattr);
	pthread_cond_init(&ag->vm_changed, NULL);
	pthread_condattr_destroy(&cattr);
	if (sodium_init() < 0) {
		*cause = hb_fmt("libsodium does not initialise");
		return (-1);
	}
	if (desktop_load(name, &ag->d, cause) != 0)
		return (-1);
	if (!ag->d->attached && accel == NULL) {
		*cause = hb_fmt("desktop '%s' runs in a VM: its agent needs "
		                "--accel (bureau start starts it)",
		    name);
		return (-1);
	}
	if ((pidfd = ag_lock_pid(ag->d, cause)) < 0)
		return (-1);
	(void)pidfd; /* held open, and so locked, until this process ends */
	/* A VM that runs under the pid lock we now hold was left by an
	 * agent that was killed: adopted, it keeps the token its guest
	 * holds. */
	ag->adopted = !ag->d->attached && vm_backend_for(ag->d)->pid(ag->d) > 0;
	if (!ag->d->attached && !ag->adopted &&
	    ag_rotate_guest_token(ag->d, cause) != 0)
		return (-1);
	if ((token = ag_secret(ag->d, "token", cause)) == NULL ||
	    (*guest = ag_secret(ag->d, "guest-token", cause)) == NULL) {
		ag_secret_free(token);
		return (-1);
	}
	token_hash(token, strlen(token), ag->token_hash);
	token_events_key(token, strlen(token), ag->key_agent);
	token_events_key(*guest, strlen(*guest), ag->key_guest);
	ag_secret_free(token);
	if (ag_load_policy(ag, cause) != 0 ||
	    audit_open(ag->d->dir, &ag->audit, cause) != 0)
		return (-1);
	return (0);
}

/* What a start that failed leaves: no worker runs (ag_start_workers
 * ends those it started) and the relay has not started. */
static void
ag_free(struct agent *ag)
{
	bureau_close(ag->guest);
	audit_close(ag->audit);
	policy_list_clear(&ag->allow);
	policy_list_clear(&ag->approve);
	desktop_free(ag->d);
	free(ag->guest_url);
	free(ag->guest_events);
	free(ag->ep_url);
	free(ag->op_url);
	free(ag->op_path);
	pthread_cond_destroy(&ag->decided);
	pthread_mutex_destroy(&ag->lock);
	free(ag);
}

/* The endpoint and the operator socket, served by the workers. */
static int
ag_open(struct agent *ag, char **cause)
{
	ag->ep_url = hb_fmt("tcp://127.0.0.1:%d", ag->d->port);
	ag->op_path = desktop_path(ag->d, "operator.sock");
	ag->op_url = ag->op_path ? hb_fmt("ipc://%s", ag->op_path) : NULL;
	if (ag->ep_url == NULL || ag->op_url == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (strlen(ag->op_path) >= 108) {
		*cause = hb_fmt("'%s' is too long for a unix socket "
		                "(BUREAU_HOME on a shorter path)",
		    ag->op_path);
		return (-1);
	}
	unlink(ag->op_path); /* a dead agent's; the pid lock says we are it */
	if (ag_listen(&ag->ep, ag->ep_url, AG_MAX_REQUEST, cause) != 0 ||
	    ag_listen(&ag->op, ag->op_url, 1u << 20, cause) != 0 ||
	    ag_start_workers(ag, cause) != 0)
		return (-1);
	return (0);
}

/*
 * The network keeper ended while QEMU runs: passt, and so the keeper,
 * ends when QEMU's end closes its socket, so a QEMU that is ending on its
 * own (killed, crashed) is given a moment and its end is what gets
 * recorded (1; a busy host reaped the keeper first). Else QEMU is ended
 * (0): without its network the guest is out of reach.
 */
static int
ag_net_ended(struct agent *ag, pid_t qemu, const char **why)
{
	int st = 0;

	if (ag_reap(qemu, 1000, &st) == 0) {
		ag_vm_ended(ag, st, NULL, 0);
		return (1);
	}
	*why = "its network (the keeper, pasta or passt) ended, so the host "
	       "agent ended qemu";
	fprintf(stderr, "bureau agent: %s\n", *why);
	kill(qemu, SIGKILL);
	return (0);
}

/*
 * Wait for a signal to end on (returned), or for QEMU to end (0 returned,
 * its end recorded). When the network keeper ends first, QEMU is ended
 * here. An adopted QEMU and keeper are not our children: their ends come
 * as a SIGCHLD raised by ag_vm_watch. QEMU's end by an idle save is not
 * the end: the agent serves on (agent_idle.c), and a request's wake
 * starts the next QEMU (ag->qemu). Only these two are waited for here:
 * other children (a helper a wake runs) are their callers' to reap.
 */
static int
ag_run(struct agent *ag, const sigset_t *sigs)
{
	const char *why = NULL;
	int sig, st;

	for (;;) {
		pid_t qemu, net;
		int qgone = 0, ngone = 0, adopted, foster, nst;

		if (sigwait(sigs, &sig) != 0)
			continue;
		if (sig != SIGCHLD)
			return (sig);
		pthread_mutex_lock(&ag->lock);
		qemu = ag->qemu;
		net = ag->net;
		adopted = ag->adopted;
		foster = ag->foster;
		pthread_mutex_unlock(&ag->lock);
		st = 0;
		if (qemu > 0)
			qgone = adopted || foster ?
			    !hb_pid_running(qemu) :
			    waitpid(qemu, &st, WNOHANG) == qemu;
		if (qgone) {
			if (ag_idle_saved(ag, qemu))
				continue;
			ag_vm_ended(ag, st, why, net);
			return (0);
		}
		if (net > 0)
			ngone = adopted ? !hb_pid_running(net) :
			                  waitpid(net, &nst, WNOHANG) == net;
		if (ngone && qemu > 0) {
			pthread_mutex_lock(&ag->lock);
			int saving = ag->vm == AG_VM_SAVING;
			ag->net = 0;
			pthread_mutex_unlock(&ag->lock);
			/* an idle save's QEMU is ending too: not an error */
			if (saving)
				continue;
			if (ag_net_ended(ag, qemu, &why))
				return (0);
		}
	}
}

int
agent_serve(const char *name, const char *accel, char **cause)
{
	struct agent *ag = calloc(1, sizeof *ag);
	char *guest = NULL;
	sigset_t sigs;
	pid_t qemu = 0, net = 0;
	int sig;

	if (ag == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (ag_init(ag, name, accel, &guest, cause) != 0)
		goto out;

	/* Signals are taken by sigwait below, never by a worker; the VM's
	 * processes, our children, reset the mask before they exec. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (ag->d->attached) {
		ag->guest_url = strdup(ag->d->url);
		ag->guest_events = ag_events_of(ag->d->url);
	} else if (ag->adopted) {
		if (ag_vm_adopt(ag, accel, &qemu, &net, cause) != 0)
			goto out; /* the VM left as it was */
	} else if (ag_vm_start(ag, accel, &qemu, &net, cause) != 0) {
		goto out; /* it killed the QEMU it started */
	}
	if (ag->guest_url == NULL ||
	    bureau_connect(ag->guest_url, guest, AG_FORWARD_S, &ag->guest) !=
	        0) {
		*cause = hb_fmt("cannot make a client for '%s': %s",
		    ag->guest_url ? ag->guest_url : "?",
		    bureau_client_error(NULL));
		goto fail;
	}
	ag_secret_free(guest);
	guest = NULL;

	if (ag_open(ag, cause) != 0)
		goto fail;
	ag_relay_start(ag);
	fprintf(stderr,
	    "bureau agent: desktop '%s': serving %s and %s, forwarding to "
	    "%s",
	    name, ag->ep_url, ag->op_url, ag->guest_url);
	if (qemu > 0)
		fprintf(stderr, "; qemu pid %d, network keeper pid %d",
		    (int)qemu, (int)net);
	fputc('\n', stderr);

	pthread_mutex_lock(&ag->lock);
	ag->qemu = qemu;
	ag->net = net;
	ag->accel = accel;
	ag->active_ms = hb_now_ms();
	pthread_mutex_unlock(&ag->lock);
	if (qemu > 0 && ag_idle_start(ag, cause) != 0)
		goto fail;
	if ((sig = ag_run(ag, &sigs)) != 0) {
		fprintf(stderr,
		    "bureau agent: desktop '%s': signal %d, exiting\n", name,
		    sig);
		/* the VM as it is now: a wake may have started another,
		 * an idle save ended it */
		pthread_mutex_lock(&ag->lock);
		qemu = ag->qemu;
		net = ag->net;
		pthread_mutex_unlock(&ag->lock);
		if (qemu > 0)
			ag_vm_stop(ag, qemu, net, sig);
	}
	unlink(ag->op_path);
	audit_flush(ag->audit); /* the count of token-less requests */
	/* An ephemeral fork goes with its VM, disks and all (DESIGN.md,
	 * "Forks"); the layers it shared stay its parent's. */
	if (ag->d->ephemeral && !ag->d->attached && hb_rm_tree(ag->d->dir) == 0)
		fprintf(stderr,
		    "bureau agent: desktop '%s': an ephemeral fork, "
		    "discarded\n",
		    name);
	/*
	 * _exit, not an orderly return: workers may still be inside a
	 * forwarded call (a bash command's 150 s, a request's own timeout)
	 * or waiting for an approval (up to approve_timeout), and they use
	 * the guest client and the audit trail until they come back.
	 * bureau_close must not race calls on its client, nor audit_close an
	 * audit_record, and waiting for the workers would outlast
	 * agent_stop's 10 s before its SIGKILL. Nothing is lost: the trail
	 * is written with write(2), and the sockets close with the process.
	 */
	_exit(0);
fail:
	/* A VM we started goes with us; one we adopted runs on (start
	 * says why the agent could not serve it). */
	if (qemu > 0 && !ag->adopted)
		ag_vm_abort(ag, qemu, net);
out:
	ag_secret_free(guest);
	ag_free(ag);
	return (-1);
}
