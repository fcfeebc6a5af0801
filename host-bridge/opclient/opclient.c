/*
 * host-bridge/opclient/opclient.c: requests on a desktop's operator
 * socket, and the host agent's process seen from outside (see
 * opclient.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host-bridge/include/bureau.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

/* The operator socket answers at once; a wedged agent should not hang a
 * command. */
#define OP_TIMEOUT_MS 10000
/* Each ping through a starting agent outlasts the agent's own wait for
 * the daemon (10 s), so what comes back is the agent's reason. */
#define AGENT_PING_S 15.0

/* ---- the operator socket ---------------------------------------------- */

int
op_exchange(const struct desktop *d, json_t *req, int timeout_ms,
    json_t **reply, char **cause)
{
	char *path = desktop_path(d, "operator.sock"), *url = NULL;
	char *text = json_dumps(req, JSON_COMPACT), *buf = NULL;
	nng_socket s = NNG_SOCKET_INITIALIZER;
	size_t len = 0;
	json_t *r = NULL;
	int rv, ret = -1, open = 0;

	*reply = NULL;
	json_decref(req);
	if (path == NULL || text == NULL ||
	    (url = hb_fmt("ipc://%s", path)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	/* A desktop on another machine: its agent's socket is an SSH
	 * forward here (cli/remote.c); whether it answers says whether it
	 * runs. */
	if (d->remote_dir == NULL && store_agent_pid(d) == 0) {
		*cause = d->attached ?
		    hb_fmt("desktop '%s' has no host agent running (bureau "
		           "attach %s restarts it)",
		        d->name, d->name) :
		    hb_fmt("desktop '%s' has no host agent running", d->name);
		ret = 1;
		goto out;
	}
	if ((rv = nng_req0_open(&s)) != 0)
		goto nng;
	open = 1;
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	/* The agent is trusted, and an approvals list holds whole requests
	 * (a file write up to 64 MiB): no cap, whatever libnng's default. */
	nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 0);
	if ((rv = nng_dial(s, url, NULL, 0)) != 0 ||
	    (rv = nng_send(s, text, strlen(text), 0)) != 0 ||
	    (rv = nng_recv(s, &buf, &len, NNG_FLAG_ALLOC)) != 0)
		goto nng;
	if ((r = json_loadb(buf, len, 0, NULL)) == NULL ||
	    !json_is_boolean(json_object_get(r, "ok"))) {
		*cause = hb_fmt("the host agent of '%s' sent a malformed reply",
		    d->name);
		goto out;
	}
	*reply = r;
	r = NULL;
	ret = 0;
	goto out;
nng:
	if (d->remote_dir != NULL)
		*cause = hb_fmt("the host agent of '%s' on host '%s' does not "
		                "answer through its SSH forward (%s): is the "
		                "desktop started there? (`bureau status %s`)",
		    d->name, d->host, nng_strerror(rv), d->name);
	else
		*cause = hb_fmt("cannot talk to the host agent of '%s' at "
		                "'%s': %s",
		    d->name, url, nng_strerror(rv));
	ret = OP_UNREACHABLE;
out:
	if (buf != NULL)
		nng_free(buf, len);
	if (open)
		nng_close(s);
	json_decref(r);
	free(text);
	free(url);
	free(path);
	return (ret);
}

/* How long a look waits for the agent there: a forward whose far end is
 * gone answers at once (the SSH server closes it), a slow link is not
 * worth a longer wait for one row of `ls`. */
#define REMOTE_LOOK_MS 3000

char *
op_remote_state(const struct desktop *d)
{
	json_t *r = NULL;
	char *cause = NULL, *s = NULL;
	const char *vm;

	if (d->remote_dir != NULL &&
	    op_exchange(d, json_pack("{s:s}", "op", "state"), REMOTE_LOOK_MS,
	        &r, &cause) == 0 &&
	    json_is_true(json_object_get(r, "ok"))) {
		vm = json_string_value(json_object_get(r, "vm"));
		/* an idle save keeps the agent: "idle", as Mission Control
		 * says of a local one */
		s = strdup(vm == NULL            ? "running" :
		        strcmp(vm, "saved") == 0 ? "idle" :
		                                   vm);
	}
	json_decref(r);
	free(cause);
	return (s);
}

int
op_call(const struct desktop *d, json_t *req, json_t **reply, char **cause)
{
	json_t *r = NULL, *e;
	int rv;

	if ((rv = op_exchange(d, req, OP_TIMEOUT_MS, &r, cause)) != 0)
		return (rv > 0 ? 1 : -1);
	if (!json_is_true(json_object_get(r, "ok"))) {
		e = json_object_get(r, "error");
		*cause = hb_fmt("%s (%s)",
		    json_string_value(json_object_get(e, "message")) ?:
		                                                       "failed",
		    json_string_value(json_object_get(e, "code")) ?: "?");
		json_decref(r);
		return (-1);
	}
	*reply = r;
	return (0);
}

/* ---- the agent process ------------------------------------------------- */

int
agent_stop(const struct desktop *d, char **cause)
{
	pid_t pid = store_agent_pid(d);
	long long deadline;

	if (pid == 0)
		return (0);
	kill(pid, SIGTERM);
	deadline = hb_now_ms() + 10000;
	while (store_agent_pid(d) != 0 && hb_now_ms() < deadline)
		usleep(20000);
	if (store_agent_pid(d) != 0) {
		kill(pid, SIGKILL);
		deadline = hb_now_ms() + 5000;
		while (store_agent_pid(d) != 0 && hb_now_ms() < deadline)
			usleep(20000);
	}
	if (store_agent_pid(d) != 0) {
		*cause = hb_fmt("the host agent of '%s' (pid %d) did not end",
		    d->name, (int)pid);
		return (-1);
	}
	return (0);
}

/* "the host agent exited: " and the last line of its log (malloc'd). */
static char *
last_line(const char *log)
{
	char *s = hb_read_file(log), *r, *nl;
	size_t n = s ? strlen(s) : 0;

	while (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	nl = s ? strrchr(s, '\n') : NULL;
	r = hb_fmt("the host agent exited: %s",
	    s == NULL ? "(no log)" :
	        nl    ? nl + 1 :
	                s);
	free(s);
	return (r);
}

/*
 * The agent is started in a grandchild, so that whoever starts it (a
 * command, Mission Control, another desktop's agent forking its desktop)
 * never has a child of its own to reap: the agent belongs to init (or the
 * service manager) from its first moment. Its pid comes back on a pipe.
 */
/* The environment the agent gets: this one's, with BUREAU_HOME this
 * thread's store (hb_home_set may have made it another than the
 * environment's). Made before the fork: the child only execs. */
static char **
agent_env(void)
{
	extern char **environ;
	char *home = hb_home(), **env;
	size_t n = 0, k = 0;

	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + 2, sizeof *env)) == NULL) {
		free(home);
		return (NULL);
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "BUREAU_HOME=", 12) != 0)
			env[k++] = environ[i];
	if (home != NULL)
		env[k++] = hb_fmt("BUREAU_HOME=%s", home);
	free(home);
	return (env);
}

static void
agent_env_free(char **env)
{
	size_t n = 0;

	if (env == NULL)
		return;
	while (env[n] != NULL)
		n++;
	if (n > 0 && strncmp(env[n - 1], "BUREAU_HOME=", 12) == 0)
		free(env[n - 1]);
	free(env);
}

int
agent_launch(const struct desktop *d, const char *accel, pid_t *pidp,
    char **cause)
{
	char exe[PATH_MAX], *log = desktop_path(d, "agent.log");
	int p[2] = { -1, -1 }, st, self = hb_self(exe, sizeof exe);
	pid_t pid, agent = 0;
	char **env = agent_env();

	if (self != 0 || log == NULL || env == NULL ||
	    pipe2(p, O_CLOEXEC) != 0) {
		*cause = hb_fmt("cannot start the host agent: %s",
		    strerror(errno));
		free(log);
		agent_env_free(env);
		return (-1);
	}
	fflush(NULL);
	if ((pid = fork()) < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		free(log);
		agent_env_free(env);
		close(p[0]);
		close(p[1]);
		return (-1);
	}
	if (pid == 0) {
		sigset_t none;

		/* (an agent forking its desktop blocks the signals it
		 * sigwaits for: the new agent starts with none blocked) */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if ((agent = fork()) != 0) {
			(void)!write(p[1], &agent, sizeof agent);
			_exit(agent > 0 ? 0 : 1);
		}
		/* The agent outlives this command: it must not hold the
		 * caller's pipes or sockets open. */
		hb_detach_child(log);
		{
			char *av[] = { "bureau", "agent", d->name,
				accel ? "--accel" : NULL, (char *)accel, NULL };
			execve(exe, av, env);
		}
		fprintf(stderr, "bureau: cannot run '%s': %s\n", exe,
		    strerror(errno));
		_exit(127);
	}
	agent_env_free(env);
	close(p[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (read(p[0], &agent, sizeof agent) != (ssize_t)sizeof agent ||
	    agent <= 0) {
		*cause = hb_fmt("cannot start the host agent: fork failed");
		close(p[0]);
		free(log);
		return (-1);
	}
	close(p[0]);
	free(log);
	*pidp = agent;
	return (0);
}

int
agent_wait(const struct desktop *d, pid_t pid, long wait_ms, int ping,
    char **cause)
{
	char *log = desktop_path(d, "agent.log");
	char *tokp = desktop_path(d, "token"), *token = NULL, *url = NULL;
	bureau_client *bc = NULL;
	long long deadline = hb_now_ms() + wait_ms;
	int rv = AGENT_WAIT_TIMEOUT, last = BUREAU_ECONNECT;
	json_t *r = NULL;

	if (log == NULL || tokp == NULL ||
	    (token = hb_read_file(tokp)) == NULL ||
	    (url = hb_fmt("tcp://127.0.0.1:%d", d->port)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", tokp ? tokp : "token",
		    strerror(errno));
		goto out;
	}
	token[strcspn(token, "\r\n")] = '\0';
	while (hb_now_ms() < deadline) {
		if (!hb_pid_running(pid)) {
			*cause = last_line(log);
			rv = AGENT_WAIT_EXITED;
			goto out;
		}
		/*
		 * Up once its operator socket answers (it listens after the
		 * VM started, and after its endpoint). With ping the endpoint
		 * is dialled only then: a client made before would meet
		 * nng's redial backoff (100 ms doubling to 1 s) and find it
		 * up to 0.6 s late, which was half of a restore's 1.1 s.
		 */
		if (bc == NULL) {
			char *c2 = NULL;
			if (op_call(d, json_pack("{s:s}", "op", "state"), &r,
			        &c2) != 0) {
				free(c2);
				usleep(ping ? 20000 : 100000);
				continue;
			}
			if (!ping) {
				rv = 0;
				goto out;
			}
			json_decref(r);
			r = NULL;
			if (bureau_connect(url, token, 2.0, &bc) != 0) {
				*cause = hb_fmt("cannot make a client for '%s'",
				    url);
				goto out;
			}
		}
		last = bureau_call_timeout(bc,
		    "{\"tool\":\"system\",\"action\":\"ping\"}", AGENT_PING_S,
		    NULL);
		if (last == 0) {
			rv = 0;
			goto out;
		}
		/* The agent token is right by construction: this refusal is
		 * the daemon's, of the guest token. */
		if (last == BUREAU_EUNAUTH || last == BUREAU_EPERM) {
			*cause = hb_fmt("the daemon refused the host agent: %s",
			    bureau_client_error(bc));
			rv = AGENT_WAIT_REFUSED;
			goto out;
		}
		usleep(200000);
	}
	*cause = hb_fmt("no answer through the host agent within %ld s: %s",
	    wait_ms / 1000,
	    !ping                       ? "it does not listen" :
	        last == BUREAU_ECONNECT ? "the agent does not listen" :
	                                  bureau_client_error(bc));
out:
	bureau_close(bc);
	json_decref(r);
	if (token != NULL)
		memset(token, 0, strlen(token));
	free(token);
	free(tokp);
	free(url);
	free(log);
	return (rv);
}
