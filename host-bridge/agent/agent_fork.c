/*
 * host-bridge/agent/agent_fork.c: `{"tool":"system","action":"fork"}` from
 * the agent loop (DESIGN.md, "Forks"): the host agent forks its own
 * desktop through this very program's `bureau fork NAME NEW` (the
 * operator's command: the same lock, checks and messages), and hands the
 * agent loop the fork's endpoint and agent token.
 *
 * A fork costs the host a desktop, so it is the operator's to allow: it is
 * served only where the desktop's --allow names the class fork (or
 * system.fork, or system); with no allow list, where every other tool is
 * allowed, it is refused, saying how to allow it. --approve fork makes
 * each wait for an operator's decision, as any request (agent_endpoint.c).
 * A fork asked for this way is ephemeral unless the request says
 * "ephemeral": false (a throwaway twin is what an agent asks for; a
 * desktop that outlives it is the operator's to keep), and has the
 * parent's policy and network, or "net": "none".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/util/util.h"

/* How long the fork may take: its state written, its start (a restore). */
#define AG_FORK_S 300

/* `bureau fork ...` run to its end: its exit status, its output (the
 * last outlen - 1 bytes; outlen over 1 KiB) in out. */
static int
ag_fork_run(char *const argv[], char *out, size_t outlen)
{
	int fds[2], st = -1;
	size_t n = 0;
	long long deadline = hb_now_ms() + AG_FORK_S * 1000LL;
	pid_t pid;

	out[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) != 0)
		return (-1);
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return (-1);
	}
	if (pid == 0) {
		sigset_t none;
		int nul = open("/dev/null", O_RDONLY);

		/* the agent blocks the signals it sigwaits for */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		struct pollfd p = { fds[0], POLLIN, 0 };
		long long left = deadline - hb_now_ms();
		char buf[1024];
		ssize_t r;

		if (left <= 0) {
			kill(pid, SIGTERM);
			break;
		}
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		if ((r = read(fds[0], buf, sizeof buf)) <= 0)
			break;
		/* keep the last outlen - 1 bytes (outlen > sizeof buf) */
		if (n + (size_t)r > outlen - 1) {
			size_t drop = n + (size_t)r - (outlen - 1);
			memmove(out, out + drop, n - drop);
			n -= drop;
		}
		memcpy(out + n, buf, (size_t)r);
		n += (size_t)r;
		out[n] = '\0';
	}
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The last line of s that says why (bureau fork's error), trimmed. */
static const char *
ag_fork_why(char *s)
{
	char *e = s + strlen(s), *line;

	while (e > s && (e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	line = strrchr(s, '\n');
	line = line ? line + 1 : s;
	return (*line ? line : "it gave no reason");
}

char *
ag_fork(struct agent *ag, json_t *id, json_t *req, const char **err)
{
	json_t *jeph = json_object_get(req, "ephemeral");
	json_t *jname = json_object_get(req, "name");
	json_t *jnet = json_object_get(req, "net");
	char *exe = hb_exe_dir(), *self = NULL, *suffix = NULL, *name = NULL;
	char *tp = NULL, *ep = NULL, *tok = NULL, *url = NULL, *cause = NULL;
	char *reply = NULL, out[4096];
	const char *net = NULL;
	int eph = 1, allowed, rc;

	pthread_mutex_lock(&ag->lock);
	allowed = ag->allow.n > 0; /* (ag_authorize matched it) */
	pthread_mutex_unlock(&ag->lock);
	if (!allowed) {
		reply = ag_refuse(err, id, BUREAU_EPERM,
		    "a fork of desktop '%s' is the operator's to allow: its "
		    "policy must name the class 'fork' (bureau policy %s "
		    "--allow ...,fork)",
		    ag->d->name, ag->d->name);
		goto out;
	}
	if (jeph != NULL && !json_is_boolean(jeph)) {
		reply = ag_refuse(err, id, BUREAU_EINVAL,
		    "field 'ephemeral' must be true or false (default true)");
		goto out;
	}
	eph = jeph == NULL || json_is_true(jeph);
	if (jnet != NULL &&
	    (!json_is_string(jnet) ||
	        (strcmp(json_string_value(jnet), "none") != 0 &&
	            strcmp(json_string_value(jnet), "internet") != 0))) {
		reply = ag_refuse(err, id, BUREAU_EINVAL,
		    "field 'net' must be \"none\" or \"internet\"");
		goto out;
	}
	net = jnet ? json_string_value(jnet) : NULL;
	/* a fork may narrow its parent's network, never widen it */
	if (net != NULL && strcmp(net, "internet") == 0 && ag->d->net_none) {
		reply = ag_refuse(err, id, BUREAU_EPERM,
		    "desktop '%s' has no network (--net none): its fork "
		    "cannot have one",
		    ag->d->name);
		goto out;
	}
	if (jname != NULL) {
		if (!json_is_string(jname) ||
		    store_valid_name(json_string_value(jname), &cause) != 0) {
			reply = ag_refuse(err, id, BUREAU_EINVAL,
			    "field 'name': %s",
			    cause ? cause : "must be a string");
			goto out;
		}
		name = strdup(json_string_value(jname));
	} else if ((suffix = hb_random_hex(3)) != NULL) {
		name = hb_fmt("%.48s-fork-%s", ag->d->name, suffix);
	}
	if (name == NULL || exe == NULL ||
	    (self = hb_fmt("%s/bureau", exe)) == NULL) {
		reply = ag_refuse(err, id, BUREAU_EINTERNAL,
		    "out of memory, or this program not found");
		goto out;
	}
	{
		char *av[10];
		int n = 0;

		av[n++] = self;
		av[n++] = "fork";
		av[n++] = ag->d->name;
		av[n++] = name;
		if (eph)
			av[n++] = "--ephemeral";
		if (net != NULL) {
			av[n++] = "--net";
			av[n++] = (char *)net;
		}
		av[n] = NULL;
		fprintf(stderr,
		    "bureau agent: the agent asked for a fork: %s\n", name);
		rc = ag_fork_run(av, out, sizeof out);
	}
	if (rc != 0) {
		reply = ag_refuse(err, id, BUREAU_EIO,
		    "the fork of desktop '%s' failed: %s", ag->d->name,
		    ag_fork_why(out));
		goto out;
	}
	if ((tp = store_dir(name, "token")) == NULL ||
	    (ep = store_dir(name, "endpoint")) == NULL ||
	    (tok = hb_read_file(tp)) == NULL ||
	    (url = hb_read_file(ep)) == NULL) {
		reply = ag_refuse(err, id, BUREAU_EIO,
		    "the fork '%s' was made but its token or endpoint cannot "
		    "be read",
		    name);
		goto out;
	}
	url[strcspn(url, "\r\n")] = '\0';
	tok[strcspn(tok, "\r\n")] = '\0';
	reply = ag_dump(
	    json_pack("{s:O?, s:b, s:s, s:s, s:s, s:b}", "id", id, "ok", 1,
	        "name", name, "endpoint", url, "token", tok, "ephemeral", eph));
	if (reply == NULL)
		reply = ag_refuse(err, id, BUREAU_EINTERNAL, "out of memory");
out:
	if (tok != NULL)
		sodium_memzero(tok, strlen(tok));
	free(exe);
	free(self);
	free(suffix);
	free(name);
	free(tp);
	free(ep);
	free(tok);
	free(url);
	free(cause);
	return (reply);
}
