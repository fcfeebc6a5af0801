/*
 * host-bridge/cli/operator.c: attached desktops and the operator's
 * commands over a desktop's host agent: `bureau attach|agent|takeover|
 * approvals|approve|deny|policy|log`.
 *
 * The agent itself is host-bridge/agent; these commands reach it on its
 * operator socket, ipc://DIR/operator.sock, through host-bridge/opclient.
 */
#include <errno.h>
#include <getopt.h>
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
#include "host-bridge/store/policy.h"
#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/operator.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/cli/replay.h"
#include "host-bridge/cli/safeprint.h"
#include "host-bridge/opclient/opclient.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/vm.h"

/* attach waits this long for the daemon to answer through the agent. */
#define ATTACH_WAIT_MS 30000

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

/* ---- the agent process ------------------------------------------------- */

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
	if (store_put(d, "guest-token", guest_token, 0600, cause) != 0 ||
	    store_put(d, "token", token, 0600, cause) != 0)
		goto out;
	if ((s = hb_fmt("tcp://127.0.0.1:%d\n", d->port)) == NULL ||
	    store_put(d, "endpoint", s, 0644, cause) != 0)
		goto out;
	free(s);
	s = NULL;
	a1 = policy_format(al);
	a2 = policy_format(ap);
	cfg = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:I, s:I}", "name",
	    d->name, "kind", "attached", "url", d->url, "port", d->port,
	    "allow", a1 ? a1 : "", "approve", a2 ? a2 : "", "approve_timeout",
	    (json_int_t)timeout, "created", (json_int_t)time(NULL));
	if (cfg == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	/* Written last: a desktop exists for the store once this does. */
	if (store_save(d, cfg, cause) != 0)
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
	printf(LS_ROW, d->name, pid ? "attached" : "detached", HOST_LOCAL, up,
	    "-", "-", "-", guest, ep);
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
	printf(on ? "took over desktop '%s': the agent can only look\n" :
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

/* Columns of a value's line in `bureau approvals`: longer ones wrap. */
#define AP_WRAP 96

/*
 * "    KEY: VALUE\n", VALUE whole (the agent chose it: an operator must
 * see what they approve, not the first 60 characters): backslashes and
 * every control character escaped, '\n' and '\t' too, so no value can
 * fake a line or a field (safeprint on top, for C1 controls and bytes
 * that are not UTF-8), wrapped at AP_WRAP characters.
 */
static void
approval_field(const char *key, const char *value)
{
	char *esc = NULL, *shown = NULL;
	size_t elen = 0, slen = 0;
	FILE *e = open_memstream(&esc, &elen), *f;
	int col = 0;

	if (e == NULL)
		return;
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		if (*p == '\\')
			fputs("\\\\", e);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(e, "\\x%02x", *p);
		else
			fputc(*p, e);
	fclose(e);
	if ((f = open_memstream(&shown, &slen)) == NULL) {
		free(esc);
		return;
	}
	sp_puts(f, esc);
	fclose(f);
	printf("    %s: ", key);
	for (const char *p = shown; p != NULL && *p; p++) {
		/* a character starts at each byte but a continuation byte */
		if (((unsigned char)*p & 0xc0) != 0x80 && col++ == AP_WRAP) {
			fputs("\n        ", stdout);
			col = 1;
		}
		putchar(*p);
	}
	putchar('\n');
	free(esc);
	free(shown);
}

/* One approval (the agent's JSON form) for a person: a header line, then
 * every field of the request whole, or what is shown of a request too
 * large to list (its size, SHA-256, first and last KiB). */
static void
print_approval(json_t *a, const char *verb)
{
	const char *act = json_string_value(json_object_get(a, "action"));
	json_t *req = json_object_get(a, "request"), *v;
	time_t since = (time_t)json_number_value(json_object_get(a, "since"));
	const char *key, *sha = json_string_value(json_object_get(a, "sha256"));
	const char *kind = json_string_value(json_object_get(a, "kind"));
	char when[32], *line;

	strftime(when, sizeof when, "%H:%M:%S", localtime(&since));
	if (kind != NULL && strcmp(kind, "ask") == 0) {
		/* The agent's question: its text is the agent's, safeprinted
		 * whole (answer with bureau answer NAME ID TEXT). */
		line = hb_fmt("%s%s %s ask  since %s  (waits up to %lld s)\n",
		    verb, json_string_value(json_object_get(a, "desktop")),
		    json_string_value(json_object_get(a, "approval")), when,
		    (long long)json_integer_value(
		        json_object_get(a, "timeout")));
		if (line != NULL)
			sp_puts(stdout, line);
		free(line);
		approval_field("message",
		    json_string_value(json_object_get(a, "message")) ?: "");
		return;
	}
	line = hb_fmt("%s%s %s %s%s%s  since %s  (%lld bytes, sha256 %.16s)\n",
	    verb, json_string_value(json_object_get(a, "desktop")),
	    json_string_value(json_object_get(a, "approval")),
	    json_string_value(json_object_get(a, "tool")), act ? "." : "",
	    act ? act : "", when,
	    (long long)json_integer_value(json_object_get(a, "bytes")),
	    sha ? sha : "?");
	if (line != NULL)
		sp_puts(stdout, line);
	free(line);
	if (!json_is_object(req)) {
		printf("    request: too large to show whole (%lld bytes of "
		       "JSON, sha256 %s)\n",
		    (long long)json_integer_value(json_object_get(a, "bytes")),
		    sha ? sha : "?");
		approval_field("first KiB",
		    json_string_value(json_object_get(a, "head")) ?: "");
		approval_field("last KiB",
		    json_string_value(json_object_get(a, "tail")) ?: "");
		return;
	}
	json_object_foreach(req, key, v)
	{
		char *text = json_is_string(v) ?
		    strdup(json_string_value(v)) :
		    json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

		if (strcmp(key, "tool") != 0)
			approval_field(key, text ? text : "?");
		free(text);
	}
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
		/* The agent chose the requests' text: jansson escapes C0
		 * controls but leaves C1 (U+009B is a terminal's CSI) and
		 * DEL raw, legal in JSON strings; they go out as the same
		 * JSON escapes, as the plain view shows them. */
		struct sp_state sp = { .style = SP_JSON };
		char *s = json_dumps(acc.list, JSON_INDENT(2));
		const char *t = s ? s : "[]";

		sp_write(&sp, stdout, t, strlen(t));
		sp_flush(&sp, stdout);
		putchar('\n');
		free(s);
	} else {
		if (json_array_size(acc.list) == 0)
			printf("no pending approvals\n");
		json_array_foreach(acc.list, i, a) print_approval(a, "");
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
	/* What was decided, shown again as `approvals` showed it. */
	if (json_is_object(json_object_get(r, "decided")))
		print_approval(json_object_get(r, "decided"),
		    allow ? "approved: " : "denied: ");
	else
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

/* bureau answer NAME ID TEXT|-: the operator's answer to the agent's
 * question (- reads it from stdin, out of the shell's history). */
static int
cmd_answer(int argc, char **argv)
{
	struct desktop *d = NULL;
	json_t *req, *r = NULL;
	char *cause = NULL, *in = NULL;
	const char *text;
	size_t n;

	if (argc != 4)
		return (
		    op_usage("answer", "NAME, ID and TEXT (or -) expected"));
	text = argv[3];
	if (strcmp(text, "-") == 0) {
		if ((in = hb_read_file("/dev/stdin")) == NULL) {
			fprintf(stderr,
			    "bureau answer: cannot read stdin: %s\n",
			    strerror(errno));
			return (1);
		}
		/* One line typed or piped: its newline is not the answer. */
		n = strlen(in);
		if (n > 0 && in[n - 1] == '\n')
			in[--n] = '\0';
		text = in;
	}
	if (load_or_fail("answer", argv[1], &d) != 0) {
		free(in);
		return (1);
	}
	req = json_pack("{s:s, s:s, s:s}", "op", "answer", "approval", argv[2],
	    "text", text);
	if (req == NULL) {
		fprintf(stderr,
		    "bureau answer: the answer is not UTF-8 text\n");
		free(in);
		desktop_free(d);
		return (2);
	}
	if (op_call(d, req, &r, &cause) != 0) {
		op_fail("answer", cause);
		free(in);
		desktop_free(d);
		return (1);
	}
	if (json_is_object(json_object_get(r, "answered")))
		print_approval(json_object_get(r, "answered"), "answered: ");
	else
		printf("answered question %s on desktop '%s'\n", argv[2],
		    d->name);
	json_decref(r);
	free(in);
	desktop_free(d);
	return (0);
}

static int
cmd_deny(int argc, char **argv)
{
	return (decide(argc, argv, 0));
}

/* ---- policy ------------------------------------------------------------ */

/* "2 cores", "0.5 cores" */
static void
cores_str(char *buf, size_t len, double c)
{
	snprintf(buf, len, "%.3g core%s", c, c == 1 ? "" : "s");
}

/*
 * The limits a config reply or desktop.json holds: "limits: cpu 0.5 of
 * 2 cores, memory 2048M, 512 processes, disk 10.0M/s, 100 IOPS", and
 * while it runs what the kernel holds ("enforced: ...", or which are
 * not). Shared with `status` (cli.h).
 */
void
print_limits(json_t *p)
{
	json_t *l = json_object_get(p, "limits"), *en;
	char cpu[32], bps[16];
	long long b, o, nr;

	if (!json_is_object(l)) {
		/* desktop.json's own fields (a desktop no agent serves) */
		double c = json_number_value(json_object_get(p, "cpu_limit"));
		json_int_t n = json_integer_value(json_object_get(p, "cpus"));

		if (n <= 0)
			return;
		cores_str(cpu, sizeof cpu, c > 0 ? c : (double)n);
		b = json_integer_value(json_object_get(p, "disk_bps"));
		o = json_integer_value(json_object_get(p, "disk_iops"));
	} else {
		cores_str(cpu, sizeof cpu,
		    json_number_value(json_object_get(l, "cpu")));
		b = json_integer_value(json_object_get(l, "disk_bps"));
		o = json_integer_value(json_object_get(l, "disk_iops"));
	}
	hb_human(bps, sizeof bps, b);
	printf("limits: cpu %s", cpu);
	if (json_is_object(l))
		printf(", memory %lldM, %lld processes",
		    (long long)json_integer_value(
		        json_object_get(l, "memory_mb")),
		    (long long)json_integer_value(json_object_get(l, "pids")));
	printf(", disk %s%s\n", b > 0 ? bps : "unlimited", b > 0 ? "/s" : "");
	if (o > 0)
		printf("disk-iops: %lld a second\n", o);
	nr = json_integer_value(
	    json_object_get(json_is_object(l) ? l : p, "net_rate"));
	if (nr > 0) {
		hb_human(bps, sizeof bps, nr);
		printf("net-rate: %s/s each way\n", bps);
	}
	if ((en = json_object_get(l, "enforced")) != NULL) {
		const char *ne = json_string_value(
		    json_object_get(en, "not_enforced"));

		json_t *c = json_object_get(en, "cpu");
		const char *cgp = json_string_value(
		    json_object_get(en, "cgroup"));

		if (cgp == NULL) {
			printf("cgroup: none bureau could make here (a user "
			       "without root, or no such controller): not "
			       "enforced: %s\n",
			    ne ? ne : "cpu, memory, pids");
			return;
		}
		cores_str(cpu, sizeof cpu, json_number_value(c));
		printf("cgroup: %s (%s):", cgp,
		    json_string_value(json_object_get(en, "hierarchy")) ?: "?");
		if (c != NULL)
			printf(" cpu %s", cpu);
		if (json_object_get(en, "memory_mb") != NULL)
			printf(" memory %lldM",
			    (long long)json_integer_value(
			        json_object_get(en, "memory_mb")));
		if (json_object_get(en, "pids") != NULL)
			printf(" pids %lld",
			    (long long)json_integer_value(
			        json_object_get(en, "pids")));
		printf("%s%s\n", ne ? "; not enforced here: " : "",
		    ne ? ne : "");
	}
}

static void
print_policy(json_t *p)
{
	const char *al = json_string_value(json_object_get(p, "allow"));
	const char *ap = json_string_value(json_object_get(p, "approve"));
	json_t *to = json_object_get(p, "approve_timeout");
	const char *na = json_string_value(json_object_get(p, "net_allow"));
	json_t *is = json_object_get(p, "idle_save");

	printf("allow: %s\napprove: %s\napprove-timeout: %lld s\n"
	       "net-allow: %s\n",
	    al && *al ? al : "(everything)", ap && *ap ? ap : "(nothing)",
	    json_is_integer(to) ? (long long)json_integer_value(to) :
	                          (long long)AGENT_APPROVE_TIMEOUT,
	    na && *na ? na : "(public addresses only)");
	if (json_is_integer(is) && json_integer_value(is) > 0)
		printf("idle-save: after %lld s without a request\n",
		    (long long)json_integer_value(is));
	else
		printf("idle-save: off\n");
	if (json_is_integer(json_object_get(p, "max_forks")))
		printf("max-forks: %lld at once (forks its agent asks for)\n",
		    (long long)json_integer_value(
		        json_object_get(p, "max_forks")));
	print_limits(p);
}

static int
cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "allow", required_argument, NULL, 'a' },
		{ "approve", required_argument, NULL, 'p' },
		{ "approve-timeout", required_argument, NULL, 'T' },
		{ "net-allow", required_argument, NULL, 'n' },
		{ "idle-save", required_argument, NULL, 'I' },
		{ "max-forks", required_argument, NULL, 'F' },
		{ "cpu-limit", required_argument, NULL, 'C' },
		{ "disk-bps", required_argument, NULL, 'B' },
		{ "disk-iops", required_argument, NULL, 'O' },
		{ "net-rate", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	/* `bureau config` is this command by another name: it changes a
	 * desktop's settings, the policy among them */
	const char *cmd = argv[0];
	struct policy_list l = { 0 };
	struct desktop *d = NULL;
	json_t *req = json_object(), *r = NULL;
	struct desk_err e = { 0 };
	char *cause = NULL;
	const char *cpu_s = NULL;
	long timeout;
	long long bps;
	int c, rc = 1;

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
				op_usage(cmd, cause);
				goto usage;
			}
			policy_list_clear(&l);
			json_object_set_new(req, c == 'a' ? "allow" : "approve",
			    json_string(optarg));
			break;
		case 'T':
			if (hb_parse_int("--approve-timeout", optarg, 1, 86400,
			        &timeout, &cause) != 0) {
				op_usage(cmd, cause);
				goto usage;
			}
			json_object_set_new(req, "approve_timeout",
			    json_integer(timeout));
			break;
		case 'n':
			if (net_allow_check(optarg, 0, NULL, &cause) != 0) {
				op_usage(cmd, cause);
				goto usage;
			}
			json_object_set_new(req, "net_allow",
			    json_string(optarg));
			break;
		case 'I':
			if (hb_parse_duration("--idle-save", optarg,
			        AGENT_IDLE_SAVE_MIN, AGENT_IDLE_SAVE_MAX,
			        &timeout, &cause) != 0) {
				op_usage(cmd, cause);
				goto usage;
			}
			json_object_set_new(req, "idle_save",
			    json_integer(timeout));
			break;
		case 'F':
			if (hb_parse_int("--max-forks", optarg, 0,
			        STORE_MAX_FORKS_MAX, &timeout, &cause) != 0) {
				op_usage(cmd, cause);
				goto usage;
			}
			json_object_set_new(req, "max_forks",
			    json_integer(timeout));
			break;
		case 'C':
			cpu_s = optarg; /* (checked against its vCPUs below) */
			break;
		case 'B':
		case 'R':
			bps = 0;
			if (strcmp(optarg, "off") != 0 &&
			    (hb_parse_size(c == 'B' ? "--disk-bps" :
			                              "--net-rate",
			         optarg, &bps, &cause) != 0 ||
			        bps > STORE_DISK_BPS_MAX)) {
				op_usage(cmd,
				    cause ? cause : "at most 1T a second");
				goto usage;
			}
			json_object_set_new(req,
			    c == 'B' ? "disk_bps" : "net_rate",
			    json_integer(bps));
			break;
		case 'O':
			timeout = 0;
			if (strcmp(optarg, "off") != 0 &&
			    hb_parse_int("--disk-iops", optarg, 1,
			        STORE_DISK_IOPS_MAX, &timeout, &cause) != 0) {
				op_usage(cmd, cause);
				goto usage;
			}
			json_object_set_new(req, "disk_iops",
			    json_integer(timeout));
			break;
		default:
			op_usage(cmd, "unknown option");
			goto usage;
		}
	}
	if (optind + 1 != argc) {
		op_usage(cmd, "one NAME expected");
		goto usage;
	}
	if (load_or_fail(cmd, argv[optind], &d) != 0)
		goto out;
	if (cpu_s != NULL) {
		long milli = 0;

		if (strcmp(cpu_s, "off") != 0 &&
		    limits_parse_cpu("--cpu-limit", cpu_s, d->cpus, &milli,
		        &cause) != 0) {
			op_usage(cmd, cause);
			desktop_free(d);
			goto usage;
		}
		json_object_set_new(req, "cpu_limit",
		    json_real(milli / 1000.0));
	}
	/* its agent applies it at once when one runs, else desktop.json
	 * takes it for the next start (the lifecycle library decides) */
	if (desk_config(d->name, req, &r, &e) != 0) {
		cause = e.cause;
		e.cause = NULL;
		goto fail;
	}
	print_policy(r);
	rc = 0;
	goto out;
usage:
	free(cause);
	json_decref(req);
	return (2);
fail:
	op_fail(cmd, cause);
out:
	json_decref(req);
	json_decref(r);
	desktop_free(d);
	return (rc);
}

/* ---- log --------------------------------------------------------------- */

static void
log_print_line(const char *line, double since)
{
	json_t *j = json_loads(line, 0, NULL), *shot;
	const char *act, *err, *sum, *apv, *ev;
	char when[32], *out;
	time_t t;

	if (j == NULL)
		return;
	if (json_number_value(json_object_get(j, "time")) < since) {
		json_decref(j);
		return;
	}
	sum = json_string_value(json_object_get(j, "summary"));
	if (sum == NULL)
		sum = "";
	t = (time_t)json_number_value(json_object_get(j, "time"));
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
	act = json_string_value(json_object_get(j, "action"));
	err = json_string_value(json_object_get(j, "error"));
	shot = json_object_get(j, "screenshot");
	/* What the operator decided: an approval, or how a question
	 * ended. */
	if ((apv = json_string_value(json_object_get(j, "approval"))) == NULL)
		apv = json_string_value(json_object_get(j, "ask"));
	ev = json_string_value(json_object_get(j, "event"));
	if (ev != NULL && strcmp(ev, "takeover") == 0)
		out = hb_fmt("%s #%lld takeover %s (operator)\n", when,
		    (long long)json_integer_value(json_object_get(j, "seq")),
		    json_is_true(json_object_get(j, "on")) ? "on" : "off");
	else if (ev != NULL)
		out = hb_fmt("%s #%lld %s (operator)\n", when,
		    (long long)json_integer_value(json_object_get(j, "seq")),
		    ev);
	else
		/* The agent chose the text it summarizes: safeprint, not
		 * printf. */
		out = hb_fmt("%s #%lld %s%s%s%s%s%s%s%s -> %s (%.1f ms)%s%s\n",
		    when,
		    (long long)json_integer_value(json_object_get(j, "seq")),
		    json_string_value(json_object_get(j, "tool")) ?: "-",
		    act ? "." : "", act ? act : "", *sum ? " " : "", sum,
		    apv ? " [" : "", apv ? apv : "", apv ? "]" : "",
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
log_drain(FILE *f, long *off, double since)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	fseek(f, *off, SEEK_SET);
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			break; /* half written: read it whole next time */
		*off += n;
		log_print_line(line, since);
	}
	clearerr(f);
	free(line);
	fflush(stdout);
}

static int
cmd_log(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "export", required_argument, NULL, 'e' },
		{ "since", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct desktop *d = NULL;
	char *path = NULL, *old = NULL, *cause = NULL;
	const char *export = NULL;
	double since = 0;
	int follow = 0, c;
	long off = 0, nsteps = 0, nshots = 0;
	FILE *f;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		if (c == 'f')
			follow = 1;
		else if (c == 'e')
			export = optarg;
		else if (c == 's') {
			if (replay_parse_since(optarg, &since, &cause) != 0) {
				fprintf(stderr, "bureau log: %s\n", cause);
				free(cause);
				return (2);
			}
		} else
			return (op_usage("log", "unknown option"));
	}
	if (optind + 1 != argc)
		return (op_usage("log", "one NAME expected"));
	if (export != NULL && follow)
		return (op_usage("log",
		    "--export writes a page once: not "
		    "with -f"));
	if (load_or_fail("log", argv[optind], &d) != 0)
		return (1);
	if (export != NULL) {
		int rc = replay_export(d->dir, d->name, export, since, &nsteps,
		    &nshots, &cause);

		if (rc == 0)
			printf("%s: %ld steps, %ld screenshots\n", export,
			    nsteps, nshots);
		else
			fprintf(stderr, "bureau log: %s\n", cause);
		free(cause);
		desktop_free(d);
		return (rc == 0 ? 0 : 1);
	}
	path = desktop_path(d, "audit.log");
	old = desktop_path(d, "audit.log.1");
	desktop_free(d);
	if (path == NULL || old == NULL)
		return (1);
	if ((f = fopen(old, "re")) != NULL) {
		log_drain(f, &off, since);
		fclose(f);
	}
	off = 0;
	f = fopen(path, "re");
	if (f != NULL)
		log_drain(f, &off, since);
	while (follow) {
		struct stat a, b;

		usleep(200000);
		/* Rotated (a new file under the name) or not there yet. */
		if (f == NULL || stat(path, &a) != 0 ||
		    fstat(fileno(f), &b) != 0 || a.st_ino != b.st_ino) {
			if (f != NULL) {
				log_drain(f, &off, since);
				fclose(f);
			}
			f = fopen(path, "re");
			off = 0;
		}
		if (f != NULL)
			log_drain(f, &off, since);
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
	{ "net-keeper",
	    "net-keeper DIR   (a desktop's network; its host agent runs it)",
	    vm_net_keeper_main },
	{ "takeover", "takeover NAME on|off", cmd_takeover },
	{ "approvals", "approvals [NAME] [--json]", cmd_approvals },
	{ "approve", "approve NAME ID [--reason TEXT]", cmd_approve },
	{ "deny", "deny NAME ID [--reason TEXT]", cmd_deny },
	{ "answer", "answer NAME ID TEXT|-   (the agent's question)",
	    cmd_answer },
	{ "policy",
	    "policy NAME [--allow LIST] [--approve LIST] [--approve-timeout S] "
	    "[--net-allow LIST] [--idle-save DURATION|off] [--max-forks N]",
	    cmd_policy },
	{ "config",
	    "config NAME [--idle-save DURATION|off] [--max-forks N] "
	    "[--cpu-limit CORES|off] [--disk-bps SIZE|off] "
	    "[--disk-iops N|off] [--net-rate SIZE|off] "
	    "[--allow LIST] [--approve LIST] [--approve-timeout S] "
	    "[--net-allow LIST]",
	    cmd_policy },
	{ "log", "log NAME [-f] [--since T] [--export FILE.html]", cmd_log },
	{ NULL, NULL, NULL },
};
