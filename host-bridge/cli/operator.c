/*
 * host-bridge/cli/operator.c: attached desktops and the operator's
 * commands over a desktop's host agent: `bureau attach|agent|takeover|
 * approvals|approve|deny|policy|log`.
 *
 * The agent itself is host-bridge/agent; these commands reach it on its
 * operator socket, ipc://DIR/operator.sock.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent.h"
#include "host-bridge/agent/audit.h"
#include "host-bridge/agent/policy.h"
#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/operator.h"
#include "host-bridge/cli/safeprint.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

/* The operator socket answers at once; a wedged agent should not hang a
 * command. */
#define OP_TIMEOUT_MS 10000
/* attach waits this long for the daemon to answer through the agent;
 * each ping outlasts the agent's own wait for the daemon (10 s), so what
 * comes back is the agent's reason. */
#define ATTACH_WAIT_MS 30000
#define ATTACH_PING_S  15.0

static void
op_fail(const char *cmd, char *cause)
{
	fprintf(stderr, "bureau %s: %s\n", cmd, cause ? cause : "failed");
	free(cause);
}

static int
op_usage(const char *cmd, const char *msg)
{
	for (const struct cli_cmd *c = cli_operator_cmds; c->name; c++)
		if (strcmp(c->name, cmd) == 0)
			fprintf(stderr, "bureau %s: %s\nusage: bureau %s\n",
			    cmd, msg, c->usage);
	return (2);
}

/* ---- the operator socket ---------------------------------------------- */

/* Replies socket s still owes: the requests its connections sent minus
 * the replies they read (nng's statistics; a reply to a request that
 * timed out is read and dropped by nng, and counted). */
static uint64_t
op_owed(nng_socket s)
{
	nng_stat *all, *st, *v;
	uint64_t tx = 0, rx = 0;

	if (nng_stats_get(&all) != 0)
		return (0);
	for (st = nng_stat_child(all); st != NULL; st = nng_stat_next(st)) {
		if (strcmp(nng_stat_name(st), "pipe") != 0 ||
		    (v = nng_stat_find(st, "socket")) == NULL ||
		    nng_stat_value(v) != (uint64_t)nng_socket_id(s))
			continue;
		if ((v = nng_stat_find(st, "tx_msgs")) != NULL)
			tx += nng_stat_value(v);
		if ((v = nng_stat_find(st, "rx_msgs")) != NULL)
			rx += nng_stat_value(v);
	}
	nng_stats_free(all);
	return (tx > rx ? tx - rx : 0);
}

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
	if (store_agent_pid(d) == 0) {
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
	*cause = hb_fmt("cannot talk to the host agent of '%s' at '%s': %s",
	    d->name, url, nng_strerror(rv));
	ret = OP_UNREACHABLE;
out:
	if (buf != NULL)
		nng_free(buf, len);
	/*
	 * A reply that arrives as the socket closes hangs libnng 1.5.2's
	 * nng_close for good, and every one of the process after it
	 * (nanomsg/nng#1636; Mission Control's later calls then never
	 * return): after a timeout, let a late reply land first, for a
	 * bounded time, as bureau_close does.
	 */
	if (open && rv == NNG_ETIMEDOUT) {
		nng_time until = nng_clock() + 2000;

		while (op_owed(s) > 0 && nng_clock() < until)
			nng_msleep(2);
	}
	if (open)
		nng_close(s);
	json_decref(r);
	free(text);
	free(url);
	free(path);
	return (ret);
}

/*
 * Send req (stolen) to the desktop's agent; *reply is its ok reply.
 * Returns 0, -1 with *cause, or 1 with *cause when no agent runs.
 */
static int
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

int
agent_launch(const struct desktop *d, const char *accel, pid_t *pidp,
    char **cause)
{
	char exe[PATH_MAX], *log = desktop_path(d, "agent.log");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	pid_t pid;

	if (n <= 0 || log == NULL) {
		*cause = hb_fmt("cannot find this program: %s",
		    strerror(errno));
		free(log);
		return (-1);
	}
	exe[n] = '\0';
	fflush(NULL);
	if ((pid = fork()) < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		free(log);
		return (-1);
	}
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		int nul = open("/dev/null", O_RDONLY);

		setsid();
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		/* The agent outlives this command: it must not hold the
		 * caller's pipes or sockets open. */
		close_range(3, ~0U, 0);
		if (accel != NULL)
			execl(exe, "bureau", "agent", d->name, "--accel", accel,
			    (char *)NULL);
		else
			execl(exe, "bureau", "agent", d->name, (char *)NULL);
		fprintf(stderr, "bureau: cannot run '%s': %s\n", exe,
		    strerror(errno));
		_exit(127);
	}
	free(log);
	*pidp = pid;
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
	int rv = AGENT_WAIT_TIMEOUT, last = BUREAU_ECONNECT, st;
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
		if (waitpid(pid, &st, WNOHANG) == pid) {
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
		    "{\"tool\":\"system\",\"action\":\"ping\"}", ATTACH_PING_S,
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

/* Start `bureau agent NAME` and return once its endpoint answers a ping
 * through to the daemon. */
static int
agent_spawn(const struct desktop *d, char **cause)
{
	pid_t pid;
	int st;

	if (agent_launch(d, NULL, &pid, cause) != 0)
		return (-1);
	switch (agent_wait(d, pid, ATTACH_WAIT_MS, 1, cause)) {
	case 0:
		return (0);
	case AGENT_WAIT_EXITED:
		return (-1);
	default:
		kill(pid, SIGTERM);
		waitpid(pid, &st, 0);
		return (-1);
	}
}

static int
cmd_agent(int argc, char **argv)
{
	const char *accel = NULL;
	char *cause = NULL;

	if (argc == 4 && strcmp(argv[2], "--accel") == 0 &&
	    (strcmp(argv[3], "kvm") == 0 || strcmp(argv[3], "tcg") == 0))
		accel = argv[3];
	else if (argc != 2)
		return (op_usage("agent", "NAME [--accel kvm|tcg] expected"));
	if (agent_serve(argv[1], accel, &cause) != 0) {
		op_fail("agent", cause);
		return (1);
	}
	return (0);
}

/* ---- attach ----------------------------------------------------------- */

static int
write_secret(const struct desktop *d, const char *file, const char *s,
    mode_t mode, char **cause)
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

/* Register a new attached desktop: its directory and files, under the
 * store-wide lock so no other desktop gets its name or port. */
static int
attach_register(struct desktop *d, const char *guest_token,
    const struct policy_list *al, const struct policy_list *ap, long timeout,
    char **cause)
{
	char *home = hb_home(), *token = NULL, *s = NULL, *a1 = NULL;
	char *a2 = NULL;
	json_t *cfg = NULL;
	int lk = -1, created = 0, rv = -1;

	if (home == NULL || (d->dir = store_dir(d->name, NULL)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (store_lock_all(&lk, cause) != 0)
		goto out;
	if (mkdir(d->dir, 0700) != 0) {
		*cause = errno == EEXIST ?
		    hb_fmt("desktop '%s' exists (bureau attach %s "
		           "without --url restarts its agent)",
		        d->name, d->name) :
		    hb_fmt("cannot create '%s': %s", d->dir, strerror(errno));
		goto out;
	}
	created = 1;
	if (store_pick_port(&d->port, cause) != 0)
		goto out;
	if ((token = hb_random_hex(32)) == NULL) {
		*cause = hb_fmt("no random bytes: %s", strerror(errno));
		goto out;
	}
	if (write_secret(d, "guest-token", guest_token, 0600, cause) != 0 ||
	    write_secret(d, "token", token, 0600, cause) != 0)
		goto out;
	if ((s = hb_fmt("tcp://127.0.0.1:%d\n", d->port)) == NULL ||
	    write_secret(d, "endpoint", s, 0644, cause) != 0)
		goto out;
	free(s);
	a1 = policy_format(al);
	a2 = policy_format(ap);
	cfg = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:I, s:I}", "name",
	    d->name, "kind", "attached", "url", d->url, "port", d->port,
	    "allow", a1 ? a1 : "", "approve", a2 ? a2 : "", "approve_timeout",
	    (json_int_t)timeout, "created", (json_int_t)time(NULL));
	if ((s = cfg ? json_dumps(cfg, JSON_INDENT(2)) : NULL) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	/* Written last: a desktop exists for the store once this does. */
	if (write_secret(d, "desktop.json", s, 0600, cause) != 0)
		goto out;
	rv = 0;
out:
	if (rv != 0 && created)
		hb_rm_tree(d->dir);
	if (lk >= 0)
		close(lk);
	if (token != NULL)
		memset(token, 0, strlen(token));
	free(token);
	free(s);
	free(a1);
	free(a2);
	free(home);
	json_decref(cfg);
	return (rv);
}

static int
cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "token-file", required_argument, NULL, 't' },
		{ "allow", required_argument, NULL, 'a' },
		{ "approve", required_argument, NULL, 'p' },
		{ "approve-timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL, *tfile = NULL, *allow = "", *approve = "";
	struct policy_list al = { 0 }, ap = { 0 };
	struct desktop d = { 0 }, *old = NULL;
	char *cause = NULL, *gtok = NULL, *homedir = NULL;
	long timeout = AGENT_APPROVE_TIMEOUT;
	int c, rc = 1, registered = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			url = optarg;
			break;
		case 't':
			tfile = optarg;
			break;
		case 'a':
			allow = optarg;
			break;
		case 'p':
			approve = optarg;
			break;
		case 'T':
			if (hb_parse_int("--approve-timeout", optarg, 1, 86400,
			        &timeout, &cause) != 0) {
				op_usage("attach", cause);
				free(cause);
				return (2);
			}
			break;
		default:
			return (op_usage("attach", "unknown option"));
		}
	}
	if (optind + 1 != argc)
		return (op_usage("attach", "one NAME expected"));
	d.name = argv[optind];
	if (store_valid_name(d.name, &cause) != 0)
		goto fail;
	if (url == NULL && tfile == NULL) {
		/* An attached desktop whose agent ended: start it again. */
		if (desktop_load(d.name, &old, &cause) != 0)
			goto fail;
		if (!old->attached) {
			cause = hb_fmt("desktop '%s' is not attached (bureau "
			               "start runs it)",
			    d.name);
			goto fail;
		}
		if (store_agent_pid(old) != 0) {
			cause = hb_fmt("desktop '%s' already has a host agent",
			    d.name);
			goto fail;
		}
		if (agent_spawn(old, &cause) != 0)
			goto fail;
		printf("restarted the host agent of desktop '%s'\nendpoint "
		       "tcp://127.0.0.1:%d\n",
		    d.name, old->port);
		rc = 0;
		goto out;
	}
	if (url == NULL || *url == '\0' || tfile == NULL)
		return (
		    op_usage("attach", "--url and --token-file are needed"));
	d.url = (char *)url;
	if (policy_parse("--allow", allow, &al, &cause) != 0 ||
	    policy_parse("--approve", approve, &ap, &cause) != 0)
		goto fail;
	if ((gtok = hb_read_file(tfile)) == NULL) {
		cause = hb_fmt("cannot read --token-file '%s': %s", tfile,
		    strerror(errno));
		goto fail;
	}
	gtok[strcspn(gtok, "\r\n")] = '\0';
	if (*gtok == '\0') {
		cause = hb_fmt("--token-file '%s' holds no token", tfile);
		goto fail;
	}
	if ((homedir = hb_home()) == NULL || hb_mkdirs(homedir, 0700) != 0) {
		cause = hb_fmt("cannot create '%s': %s",
		    homedir ? homedir : "BUREAU_HOME", strerror(errno));
		goto fail;
	}
	if (attach_register(&d, gtok, &al, &ap, timeout, &cause) != 0)
		goto fail;
	registered = 1;
	if (agent_spawn(&d, &cause) != 0)
		goto fail;
	printf("attached desktop '%s' (%s)\nendpoint tcp://127.0.0.1:%d\n",
	    d.name, url, d.port);
	rc = 0;
	goto out;
fail:
	op_fail("attach", cause);
	if (registered) {
		char *c2 = NULL;
		struct desktop *nd = NULL;
		if (desktop_load(d.name, &nd, &c2) == 0)
			agent_stop(nd, &c2);
		desktop_free(nd);
		free(c2);
		hb_rm_tree(d.dir);
	}
out:
	if (gtok != NULL)
		memset(gtok, 0, strlen(gtok));
	free(gtok);
	free(homedir);
	free(d.dir);
	desktop_free(old);
	policy_list_clear(&al);
	policy_list_clear(&ap);
	return (rc);
}

/* ---- what desktop.c asks ------------------------------------------------ */

int
attached_refuse(const struct desktop *d, const char *cmd, char **cause)
{
	if (!d->attached)
		return (0);
	*cause = hb_fmt(
	    "'%s' does not apply to desktop '%s': it is attached (its "
	    "daemon at %s runs outside bureau; bureau rm forgets it)",
	    cmd, d->name, d->url);
	return (-1);
}

static void
agent_uptime(const struct desktop *d, pid_t pid, char *buf, size_t len)
{
	char *p = desktop_path(d, "agent.pid");
	struct stat st;

	if (pid == 0 || p == NULL || stat(p, &st) != 0) {
		snprintf(buf, len, "-");
	} else {
		long s = (long)(time(NULL) - st.st_mtime);
		snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s % 3600 / 60,
		    s % 60);
	}
	free(p);
}

void
attached_status(const struct desktop *d)
{
	pid_t pid = store_agent_pid(d);
	json_t *r = NULL;
	char *cause = NULL, up[32];

	agent_uptime(d, pid, up, sizeof up);
	printf("name: %s\nstate: %s\n", d->name, pid ? "attached" : "detached");
	if (pid == 0)
		printf("agent: not running (bureau attach %s restarts it)\n",
		    d->name);
	if (pid != 0)
		printf("agent pid: %d\nuptime: %s\n", (int)pid, up);
	printf("endpoint: tcp://127.0.0.1:%d\ndaemon: %s\n", d->port, d->url);
	if (pid != 0 &&
	    op_call(d, json_pack("{s:s}", "op", "state"), &r, &cause) == 0) {
		const char *al = json_string_value(json_object_get(r, "allow"));
		const char *ap = json_string_value(
		    json_object_get(r, "approve"));
		printf("takeover: %s\npending approvals: %lld\nallow: "
		       "%s\napprove: %s\n",
		    json_is_true(json_object_get(r, "takeover")) ? "on" : "off",
		    (long long)json_integer_value(
		        json_object_get(r, "pending")),
		    al && *al ? al : "(everything)",
		    ap && *ap ? ap : "(nothing)");
	}
	printf("dir: %s\n", d->dir);
	free(cause);
	json_decref(r);
}

void
attached_ls_row(const struct desktop *d)
{
	pid_t pid = store_agent_pid(d);
	char up[32], ep[40];

	char guest[48] = "-";

	agent_uptime(d, pid, up, sizeof up);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", d->port);
	if (pid != 0)
		ls_guest(d, guest, sizeof guest);
	printf(LS_ROW, d->name, pid ? "attached" : "detached", up, "-", "-",
	    "-", guest, ep);
}

void
ls_guest(const struct desktop *d, char *buf, size_t len)
{
	json_t *r = NULL, *load, *mem;
	char *cause = NULL, used[16], total[16];
	json_int_t t, a;

	snprintf(buf, len, "-");
	if (op_exchange(d, json_pack("{s:s}", "op", "info"), 1500, &r,
	        &cause) == 0 &&
	    json_is_true(json_object_get(r, "ok")) &&
	    json_is_number(
	        load = json_array_get(json_object_get(r, "load"), 0)) &&
	    json_is_object(mem = json_object_get(r, "memory"))) {
		t = json_integer_value(json_object_get(mem, "total_bytes"));
		a = json_integer_value(json_object_get(mem, "available_bytes"));
		hb_human(used, sizeof used, (long long)(t - a));
		hb_human(total, sizeof total, (long long)t);
		snprintf(buf, len, "%.2f %s/%s", json_number_value(load), used,
		    total);
	}
	json_decref(r);
	free(cause);
}

/* ---- takeover, approvals, approve, deny --------------------------------- */

static int
load_or_fail(const char *cmd, const char *name, struct desktop **d)
{
	char *cause = NULL;

	if (desktop_load(name, d, &cause) != 0) {
		op_fail(cmd, cause);
		return (-1);
	}
	return (0);
}

static int
cmd_takeover(int argc, char **argv)
{
	struct desktop *d = NULL;
	json_t *r = NULL;
	char *cause = NULL;
	int on;

	if (argc != 3 ||
	    (strcmp(argv[2], "on") != 0 && strcmp(argv[2], "off") != 0))
		return (op_usage("takeover", "NAME and on|off expected"));
	on = strcmp(argv[2], "on") == 0;
	if (load_or_fail("takeover", argv[1], &d) != 0)
		return (1);
	if (op_call(d, json_pack("{s:s, s:b}", "op", "takeover", "on", on), &r,
	        &cause) != 0) {
		op_fail("takeover", cause);
		desktop_free(d);
		return (1);
	}
	printf(on ? "took over desktop '%s': the agent's input is refused\n" :
	            "handed desktop '%s' back to its agent\n",
	    d->name);
	json_decref(r);
	desktop_free(d);
	return (0);
}

struct approvals_acc {
	json_t *list;
	int named; /* one desktop asked for by name: errors count */
	int failed;
};

static int
approvals_one(const char *name, void *arg)
{
	struct approvals_acc *acc = arg;
	struct desktop *d = NULL;
	json_t *r = NULL;
	char *cause = NULL;
	int rv;

	if (desktop_load(name, &d, &cause) != 0) {
		if (acc->named) {
			op_fail("approvals", cause);
			acc->failed = 1;
		} else
			free(cause);
		return (0);
	}
	rv = op_call(d, json_pack("{s:s}", "op", "approvals"), &r, &cause);
	if (rv == 0)
		json_array_extend(acc->list, json_object_get(r, "approvals"));
	else if (acc->named || rv < 0) {
		/* Every desktop without an agent has nothing pending; an
		 * agent that does not answer is worth saying. */
		op_fail("approvals", cause);
		cause = NULL;
		acc->failed = acc->named;
	}
	free(cause);
	json_decref(r);
	desktop_free(d);
	return (0);
}

static int
cmd_approvals(int argc, char **argv)
{
	struct approvals_acc acc = { .list = json_array() };
	const char *name = NULL;
	int json = 0;
	size_t i;
	json_t *a;

	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--json") == 0)
			json = 1;
		else if (argv[k][0] == '-' || name != NULL)
			return (op_usage("approvals", "unexpected argument"));
		else
			name = argv[k];
	}
	if (acc.list == NULL)
		return (1);
	if (name != NULL) {
		acc.named = 1;
		approvals_one(name, &acc);
	} else
		store_each(approvals_one, &acc);
	if (acc.failed) {
		json_decref(acc.list);
		return (1);
	}
	if (json) {
		char *s = json_dumps(acc.list, JSON_INDENT(2));
		printf("%s\n", s ? s : "[]");
		free(s);
	} else {
		if (json_array_size(acc.list) == 0)
			printf("no pending approvals\n");
		json_array_foreach(acc.list, i, a)
		{
			json_t *sum = audit_summary(
			    json_object_get(a, "request"));
			const char *act = json_string_value(
			    json_object_get(a, "action"));
			time_t since = (time_t)json_number_value(
			    json_object_get(a, "since"));
			char when[32];

			strftime(when, sizeof when, "%H:%M:%S",
			    localtime(&since));
			/* the agent wrote the request: shown, never sent to
			 * the terminal (safeprint) */
			char *line = hb_fmt(
			    "%-16s %-16s %s%s%s  since %s  %s\n",
			    json_string_value(json_object_get(a, "desktop")),
			    json_string_value(json_object_get(a, "approval")),
			    json_string_value(json_object_get(a, "tool")),
			    act ? "." : "", act ? act : "", when,
			    json_string_value(sum) ?: "");
			if (line != NULL)
				sp_puts(stdout, line);
			free(line);
			json_decref(sum);
		}
	}
	json_decref(acc.list);
	return (0);
}

static int
decide(int argc, char **argv, int allow)
{
	static const struct option opts[] = {
		{ "reason", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = argv[0], *reason = NULL;
	struct desktop *d = NULL;
	json_t *req, *r = NULL;
	char *cause = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'r')
			return (op_usage(cmd, "unknown option"));
		reason = optarg;
	}
	if (optind + 2 != argc)
		return (op_usage(cmd, "NAME and ID expected"));
	if (load_or_fail(cmd, argv[optind], &d) != 0)
		return (1);
	req = json_pack("{s:s, s:s, s:b}", "op", "decide", "approval",
	    argv[optind + 1], "allow", allow);
	if (req != NULL && reason != NULL)
		json_object_set_new(req, "reason", json_string(reason));
	if (op_call(d, req, &r, &cause) != 0) {
		op_fail(cmd, cause);
		desktop_free(d);
		return (1);
	}
	printf("%s approval %s on desktop '%s'\n",
	    allow ? "approved" : "denied", argv[optind + 1], d->name);
	json_decref(r);
	desktop_free(d);
	return (0);
}

static int
cmd_approve(int argc, char **argv)
{
	return (decide(argc, argv, 1));
}

static int
cmd_deny(int argc, char **argv)
{
	return (decide(argc, argv, 0));
}

/* ---- policy ------------------------------------------------------------ */

static void
print_policy(json_t *p)
{
	const char *al = json_string_value(json_object_get(p, "allow"));
	const char *ap = json_string_value(json_object_get(p, "approve"));
	json_t *to = json_object_get(p, "approve_timeout");

	printf("allow: %s\napprove: %s\napprove-timeout: %lld s\n",
	    al && *al ? al : "(everything)", ap && *ap ? ap : "(nothing)",
	    json_is_integer(to) ? (long long)json_integer_value(to) :
	                          (long long)AGENT_APPROVE_TIMEOUT);
}

/* No agent runs: change desktop.json, which the next agent reads. */
static int
policy_offline(const struct desktop *d, json_t *req, char **cause)
{
	char *path = desktop_path(d, "desktop.json"), *s = NULL;
	json_t *j = path ? json_load_file(path, 0, NULL) : NULL;
	const char *key;
	json_t *v;
	int rv = -1;

	if (j == NULL) {
		*cause = hb_fmt("cannot read the settings of '%s'", d->name);
		goto out;
	}
	json_object_foreach(req, key, v) if (strcmp(key, "op") != 0)
	    json_object_set(j, key, v);
	if ((s = json_dumps(j, JSON_INDENT(2))) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (hb_write_file(path, s, strlen(s), 0600, cause) != 0)
		goto out;
	print_policy(j);
	rv = 0;
out:
	json_decref(j);
	free(s);
	free(path);
	return (rv);
}

static int
cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "allow", required_argument, NULL, 'a' },
		{ "approve", required_argument, NULL, 'p' },
		{ "approve-timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct policy_list l = { 0 };
	struct desktop *d = NULL;
	json_t *req = json_pack("{s:s}", "op", "policy"), *r = NULL;
	char *cause = NULL;
	long timeout;
	int c, rc = 1, rv;

	if (req == NULL)
		return (1);
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
		case 'p':
			/* Checked here too, for an error before any change. */
			if (policy_parse(c == 'a' ? "--allow" : "--approve",
			        optarg, &l, &cause) != 0) {
				op_usage("policy", cause);
				goto usage;
			}
			policy_list_clear(&l);
			json_object_set_new(req, c == 'a' ? "allow" : "approve",
			    json_string(optarg));
			break;
		case 'T':
			if (hb_parse_int("--approve-timeout", optarg, 1, 86400,
			        &timeout, &cause) != 0) {
				op_usage("policy", cause);
				goto usage;
			}
			json_object_set_new(req, "approve_timeout",
			    json_integer(timeout));
			break;
		default:
			op_usage("policy", "unknown option");
			goto usage;
		}
	}
	if (optind + 1 != argc) {
		op_usage("policy", "one NAME expected");
		goto usage;
	}
	if (load_or_fail("policy", argv[optind], &d) != 0)
		goto out;
	json_incref(req);
	rv = op_call(d, req, &r, &cause);
	if (rv == 1) {
		free(cause);
		cause = NULL;
		if (policy_offline(d, req, &cause) != 0)
			goto fail;
	} else if (rv != 0) {
		goto fail;
	} else
		print_policy(r);
	rc = 0;
	goto out;
usage:
	free(cause);
	json_decref(req);
	return (2);
fail:
	op_fail("policy", cause);
out:
	json_decref(req);
	json_decref(r);
	desktop_free(d);
	return (rc);
}

/* ---- log --------------------------------------------------------------- */

static void
log_print_line(const char *line)
{
	json_t *j = json_loads(line, 0, NULL), *shot;
	const char *act, *err, *sum;
	char when[32], *out;
	time_t t;

	if (j == NULL)
		return;
	sum = json_string_value(json_object_get(j, "summary"));
	if (sum == NULL)
		sum = "";
	t = (time_t)json_number_value(json_object_get(j, "time"));
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
	act = json_string_value(json_object_get(j, "action"));
	err = json_string_value(json_object_get(j, "error"));
	shot = json_object_get(j, "screenshot");
	/* The agent chose the text it summarizes: safeprint, not printf. */
	out = hb_fmt("%s #%lld %s%s%s%s%s -> %s (%.1f ms)%s%s\n", when,
	    (long long)json_integer_value(json_object_get(j, "seq")),
	    json_string_value(json_object_get(j, "tool")) ?: "-",
	    act ? "." : "", act ? act : "", *sum ? " " : "", sum,
	    err ? err : "ok",
	    json_number_value(json_object_get(j, "elapsed_ms")),
	    json_is_string(shot) ? " " : "",
	    json_is_string(shot) ? json_string_value(shot) : "");
	if (out != NULL)
		sp_puts(stdout, out);
	free(out);
	json_decref(j);
}

/* Print the complete lines of f from *off on; *off moves past them. */
static void
log_drain(FILE *f, long *off)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	fseek(f, *off, SEEK_SET);
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			break; /* half written: read it whole next time */
		*off += n;
		log_print_line(line);
	}
	clearerr(f);
	free(line);
	fflush(stdout);
}

static int
cmd_log(int argc, char **argv)
{
	struct desktop *d = NULL;
	char *path = NULL, *old = NULL;
	int follow = 0, c;
	long off = 0;
	FILE *f;

	optind = 1;
	while ((c = getopt(argc, argv, "f")) != -1) {
		if (c != 'f')
			return (op_usage("log", "unknown option"));
		follow = 1;
	}
	if (optind + 1 != argc)
		return (op_usage("log", "one NAME expected"));
	if (load_or_fail("log", argv[optind], &d) != 0)
		return (1);
	path = desktop_path(d, "audit.log");
	old = desktop_path(d, "audit.log.1");
	desktop_free(d);
	if (path == NULL || old == NULL)
		return (1);
	if ((f = fopen(old, "re")) != NULL) {
		log_drain(f, &off);
		fclose(f);
	}
	off = 0;
	f = fopen(path, "re");
	if (f != NULL)
		log_drain(f, &off);
	while (follow) {
		struct stat a, b;

		usleep(200000);
		/* Rotated (a new file under the name) or not there yet. */
		if (f == NULL || stat(path, &a) != 0 ||
		    fstat(fileno(f), &b) != 0 || a.st_ino != b.st_ino) {
			if (f != NULL) {
				log_drain(f, &off);
				fclose(f);
			}
			f = fopen(path, "re");
			off = 0;
		}
		if (f != NULL)
			log_drain(f, &off);
	}
	if (f != NULL)
		fclose(f);
	free(path);
	free(old);
	return (0);
}

const struct cli_cmd cli_operator_cmds[] = {
	{ "attach",
	    "attach NAME --url URL --token-file F [--allow LIST] [--approve "
	    "LIST] "
	    "[--approve-timeout S]   (NAME alone: restart its agent)",
	    cmd_attach },
	{ "agent",
	    "agent NAME [--accel kvm|tcg]   (the host agent; start and "
	    "attach start it)",
	    cmd_agent },
	{ "takeover", "takeover NAME on|off", cmd_takeover },
	{ "approvals", "approvals [NAME] [--json]", cmd_approvals },
	{ "approve", "approve NAME ID [--reason TEXT]", cmd_approve },
	{ "deny", "deny NAME ID [--reason TEXT]", cmd_deny },
	{ "policy",
	    "policy NAME [--allow LIST] [--approve LIST] [--approve-timeout S]",
	    cmd_policy },
	{ "log", "log NAME [-f]", cmd_log },
	{ NULL, NULL, NULL },
};
