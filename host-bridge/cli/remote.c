/*
 * host-bridge/cli/remote.c: desktops on a host on another machine, through
 * SSH (remote.h says how and why).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/agent/agent.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/cli/desktop.h"
#include "host-bridge/cli/remote.h"
#include "host-bridge/store/files.h"
#include "host-bridge/store/hosturi.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/shquote.h"
#include "host-bridge/util/tarscan.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/vm.h"

/* How long a new forward may take to come up (an SSH connection to a far
 * machine: key exchange, authentication), and what a command waits for
 * one before it goes on without. */
#define FWD_UP_MS 15000

int
remote_host(const char *host, char **cause)
{
	struct remote r;
	char *uri = NULL;
	int rv;

	if (host_is_local(host))
		return (0);
	if (host_uri(host, &uri, cause) != 0)
		return (-1);
	if (host_here(uri)) {
		free(uri);
		return (0);
	}
	rv = remote_parse(uri, &r, cause) == 0 ? 1 : -1;
	remote_clear(&r);
	free(uri);
	return (rv);
}

static int
remote_of(const char *host, struct remote *r, char **cause)
{
	char *uri = NULL;
	int rv;

	if (host_uri(host, &uri, cause) != 0)
		return (-1);
	rv = remote_parse(uri, r, cause);
	free(uri);
	return (rv);
}

/* ---- ssh ------------------------------------------------------------------
 */

struct argv {
	char *v[64];
	int n;
};

static void
av_add(struct argv *a, char *s)
{
	if (a->n < (int)(sizeof a->v / sizeof a->v[0]) - 1)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void
av_clear(struct argv *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	a->n = 0;
}

/* ssh and its options for r (the command or the forwards follow). */
static void
ssh_base(const struct remote *r, struct argv *a)
{
	const char *ssh = getenv("BUREAU_SSH");

	av_add(a, strdup(ssh && *ssh ? ssh : "ssh"));
	/* never a prompt: a password or an unknown host key is an error,
	 * said in ssh's words */
	av_add(a, strdup("-oBatchMode=yes"));
	av_add(a, strdup("-oConnectTimeout=10"));
	av_add(a, strdup("-oServerAliveInterval=10"));
	av_add(a, strdup("-oServerAliveCountMax=3"));
	av_add(a, strdup("-oLogLevel=ERROR"));
	if (r->port != NULL) {
		av_add(a, strdup("-p"));
		av_add(a, strdup(r->port));
	}
	if (r->user != NULL) {
		av_add(a, strdup("-l"));
		av_add(a, strdup(r->user));
	}
	if (r->keyfile != NULL) {
		av_add(a, strdup("-i"));
		av_add(a, strdup(r->keyfile));
		av_add(a, strdup("-oIdentitiesOnly=yes"));
	}
	/* known_hosts: the machine's key is checked against that file;
	 * no_verify=1: not checked (as libvirt's), and not written down */
	if (r->no_verify) {
		av_add(a, strdup("-oStrictHostKeyChecking=no"));
		av_add(a, strdup("-oUserKnownHostsFile=/dev/null"));
	} else if (r->known_hosts != NULL) {
		av_add(a, hb_fmt("-oUserKnownHostsFile=%s", r->known_hosts));
		av_add(a, strdup("-oStrictHostKeyChecking=yes"));
	}
}

/* Replace each from[i] in line by to[i] (a remote port by this side's). */
struct rewrite {
	char from[2][64], to[2][64];
	int n;
};

static void
put_rewritten(FILE *out, const char *line, const struct rewrite *rw)
{
	const char *p = line;

	while (*p) {
		int hit = -1;

		for (int i = 0; rw != NULL && i < rw->n && hit < 0; i++)
			if (strncmp(p, rw->from[i], strlen(rw->from[i])) == 0 &&
			    !(p[strlen(rw->from[i])] >= '0' &&
			        p[strlen(rw->from[i])] <= '9'))
				hit = i;
		if (hit >= 0) {
			fputs(rw->to[hit], out);
			p += strlen(rw->from[hit]);
		} else
			fputc(*p++, out);
	}
	fflush(out);
}

/* Does the command read this one's stdin (answer NAME ID -)? Else ssh's
 * is /dev/null: it would read what a script meant for its next lines. */
static int run_stdin;

/*
 * Run `bureau WORDS...` on r's machine (words[0] the command; prog NULL:
 * bureau, else that program). out NULL: its output here, each line
 * rewritten by rw; else its output into *out (malloc'd). Its stderr passes
 * through. The exit status (255: ssh failed, its message on stderr).
 */
static int
remote_run(const struct remote *r, const char *prog, char *const *words, int n,
    const struct rewrite *rw, char **out)
{
	struct argv a = { 0 };
	int pfd[2] = { -1, -1 }, st = 0, rc = 255;
	pid_t pid;
	FILE *f;
	char *line = NULL;
	size_t cap = 0, olen = 0;
	ssize_t l;

	if (out != NULL)
		*out = NULL;
	ssh_base(r, &a);
	av_add(&a, strdup("-T"));
	av_add(&a, strdup("--"));
	av_add(&a, strdup(r->machine));
	av_add(&a, sh_line(prog ? prog : "bureau", words, n));
	if (a.v[a.n - 1] == NULL || pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, "bureau: out of memory or pipes\n");
		av_clear(&a);
		return (255);
	}
	fflush(NULL);
	if ((pid = fork()) < 0) {
		fprintf(stderr, "bureau: fork: %s\n", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		int nul = run_stdin ? -1 : open("/dev/null", O_RDONLY);

		dup2(pfd[1], 1);
		if (nul >= 0)
			dup2(nul, 0);
		execvp(a.v[0], a.v);
		fprintf(stderr, "bureau: cannot run %s: %s\n", a.v[0],
		    strerror(errno));
		_exit(255);
	}
	close(pfd[1]);
	pfd[1] = -1;
	if ((f = fdopen(pfd[0], "r")) == NULL) {
		kill(pid, SIGTERM);
	} else {
		pfd[0] = -1;
		while ((l = getline(&line, &cap, f)) > 0) {
			if (out == NULL) {
				put_rewritten(stdout, line, rw);
				continue;
			}
			char *nb = realloc(*out, olen + (size_t)l + 1);
			if (nb == NULL)
				continue;
			*out = nb;
			memcpy(*out + olen, line, (size_t)l + 1);
			olen += (size_t)l;
		}
		fclose(f);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
out:
	free(line);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	av_clear(&a);
	return (rc);
}

/* The value of "KEY: value" in text (malloc'd), or NULL. */
static char *
field(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = text; p != NULL && *p;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ':' &&
		    p[kl + 1] == ' ')
			return (
			    strndup(p + kl + 2, strcspn(p + kl + 2, "\r\n")));
	return (NULL);
}

int
remote_probe(const char *uri, long long *free_bytes, char **version,
    char **cause)
{
	struct remote r;
	json_t *j = NULL;
	char *out = NULL;
	int rc, rv = -1;

	*free_bytes = -1;
	if (version != NULL)
		*version = NULL;
	if (remote_parse(uri, &r, cause) != 0)
		return (-1);
	{
		char *w[] = { "host", "probe", r.ruri };

		rc = remote_run(&r, NULL, w, 3, NULL, &out);
	}
	if (rc == 0 && out != NULL)
		j = json_loads(out, 0, NULL);
	if (j == NULL || !json_is_integer(json_object_get(j, "free_bytes"))) {
		*cause = rc == 255 ?
		    hb_fmt("ssh to %s failed (ssh's words above)", r.machine) :
		    rc == 127 ?
		    hb_fmt("no bureau on %s (`bureau` is not on the PATH of "
		           "its SSH sessions): desktops there need bureau "
		           "installed there, the host package",
		        r.machine) :
		    rc != 0 ?
		    hb_fmt("on %s, `bureau host probe %s` failed (exit %d, "
		           "said above)",
		        r.machine, r.ruri, rc) :
		    hb_fmt("on %s, `bureau host probe` said no free memory: a "
		           "bureau of another version?",
		        r.machine);
		goto out;
	}
	*free_bytes = json_integer_value(json_object_get(j, "free_bytes"));
	if (version != NULL && json_is_string(json_object_get(j, "version")) &&
	    (*version = strdup(
	         json_string_value(json_object_get(j, "version")))) == NULL)
		goto out;
	rv = 0;
out:
	json_decref(j);
	free(out);
	remote_clear(&r);
	return (rv);
}

/* ---- the forwards' keeper -------------------------------------------------
 */

/* The keeper that holds d's forward.pid, or 0. */
static pid_t
fwd_pid(const struct desktop *d)
{
	char *p = desktop_path(d, "forward.pid");
	pid_t pid = p ? store_lock_pid(p) : 0;

	free(p);
	return (pid);
}

/* Is d's operator socket here a listening socket (the forward is up)? */
static int
fwd_up(const struct desktop *d)
{
	char *p = desktop_path(d, "operator.sock");
	struct stat st;
	int up = p != NULL && stat(p, &st) == 0 && S_ISSOCK(st.st_mode);

	free(p);
	return (up);
}

int
remote_forward_launch(const struct desktop *d, char **cause)
{
	char exe[PATH_MAX], *log;
	pid_t pid;

	if (fwd_pid(d) > 0)
		return (0);
	if (hb_self(exe, sizeof exe) != 0) {
		*cause = hb_fmt("cannot find this program: %s",
		    strerror(errno));
		return (-1);
	}
	if ((log = desktop_path(d, "forward.log")) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	fflush(NULL);
	if ((pid = fork()) < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		free(log);
		return (-1);
	}
	if (pid == 0) {
		hb_detach_child(log);
		/* (its own child: this command's end leaves it be) */
		if (fork() == 0) {
			execl(exe, "bureau", "remote-forward", d->name,
			    (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	free(log);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return (0);
}

/* Start d's keeper unless one runs, and wait up to FWD_UP_MS for the
 * forwards: 0, or -1 with *cause (they may still come: the keeper goes
 * on trying). */
static int
fwd_ensure(const struct desktop *d, char **cause)
{
	long long t0 = hb_now_ms();

	if (fwd_pid(d) > 0 && fwd_up(d))
		return (0);
	if (remote_forward_launch(d, cause) != 0)
		return (-1);
	while (hb_now_ms() - t0 < FWD_UP_MS) {
		if (fwd_pid(d) > 0 && fwd_up(d))
			return (0);
		usleep(50000);
	}
	*cause = hb_fmt("the SSH forwards of '%s' to host '%s' are not up "
	                "after %d s (its keeper tries on; %s/forward.log says "
	                "why)",
	    d->name, d->host, FWD_UP_MS / 1000, d->dir);
	return (-1);
}

/* End d's keeper (and so its forwards), if one runs. */
static void
fwd_stop(const struct desktop *d)
{
	pid_t pid = fwd_pid(d);
	long long t0 = hb_now_ms();

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (fwd_pid(d) > 0 && hb_now_ms() - t0 < 5000)
		usleep(20000);
	if ((pid = fwd_pid(d)) > 0)
		kill(pid, SIGKILL);
}

static volatile sig_atomic_t fwd_quit;

static void
fwd_on_signal(int sig)
{
	(void)sig;
	fwd_quit = 1;
}

/*
 * The keeper's two ssh connections. The live frames (the events port) go
 * over one of their own: OpenSSH sets no TCP_NODELAY on a connection
 * without a terminal (-N), and with frames streaming on the same one, a
 * small request waited for the frames' ACKs (Nagle against delayed ACK):
 * 46.8 ms per request instead of 5.9 while Mission Control watched
 * (test_remote.sh's hop, one connection for both).
 */
struct fwd_conn {
	struct argv a;
	pid_t pid;
	int backoff;
	long long started, next; /* hb_now_ms */
};

static int
fwd_conn_make(struct fwd_conn *c, const struct remote *r,
    const struct desktop *d, int events)
{
	ssh_base(r, &c->a);
	av_add(&c->a, strdup("-N"));
	av_add(&c->a, strdup("-oExitOnForwardFailure=yes"));
	av_add(&c->a, strdup("-L"));
	if (events) {
		av_add(&c->a,
		    hb_fmt("127.0.0.1:%d:127.0.0.1:%d", d->port + 1,
		        d->remote_port + 1));
	} else {
		av_add(&c->a,
		    hb_fmt("127.0.0.1:%d:127.0.0.1:%d", d->port,
		        d->remote_port));
		/* a socket left by an earlier forward is replaced; the new
		 * one is this user's alone (0600), as the agent's own */
		av_add(&c->a, strdup("-oStreamLocalBindUnlink=yes"));
		av_add(&c->a, strdup("-oStreamLocalBindMask=0177"));
		av_add(&c->a, strdup("-L"));
		av_add(&c->a,
		    hb_fmt("%s/operator.sock:%s/operator.sock", d->dir,
		        d->remote_dir));
	}
	av_add(&c->a, strdup("--"));
	av_add(&c->a, strdup(r->machine));
	c->backoff = 1;
	for (int i = 0; i < c->a.n; i++)
		if (c->a.v[i] == NULL)
			return (-1);
	return (0);
}

int
cmd_remote_forward(int argc, char **argv)
{
	struct desktop *d = NULL;
	struct remote r = { 0 };
	struct fwd_conn conn[2] = { 0 };
	struct sigaction sa = { .sa_handler = fwd_on_signal };
	char *cause = NULL, *p = NULL, *dj = NULL, pidbuf[32];
	int fd = -1, rc = 1, st;
	pid_t pid;

	if (argc != 2) {
		usage_err("remote-forward", "one NAME expected");
		return (2);
	}
	if (desktop_load(argv[1], &d, &cause) != 0 ||
	    remote_of(d->host, &r, &cause) != 0)
		goto fail;
	if (d->remote_dir == NULL) {
		cause = hb_fmt("desktop '%s' is not on another machine",
		    d->name);
		goto fail;
	}
	if ((p = desktop_path(d, "forward.pid")) == NULL ||
	    (dj = desktop_path(d, "desktop.json")) == NULL ||
	    (fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) <
	        0) {
		cause = hb_fmt("cannot open '%s': %s", p ? p : "forward.pid",
		    strerror(errno));
		goto fail;
	}
	if (hb_flock_held_retry(fd, 2000) != 0) {
		rc = 0; /* one keeps them already */
		goto out;
	}
	snprintf(pidbuf, sizeof pidbuf, "%d\n", (int)getpid());
	if (ftruncate(fd, 0) != 0 ||
	    pwrite(fd, pidbuf, strlen(pidbuf), 0) != (ssize_t)strlen(pidbuf)) {
		cause = hb_fmt("cannot write '%s': %s", p, strerror(errno));
		goto fail;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (fwd_conn_make(&conn[0], &r, d, 0) != 0 ||
	    fwd_conn_make(&conn[1], &r, d, 1) != 0) {
		cause = hb_fmt("out of memory");
		goto fail;
	}
	/* until stopped, or the desktop is removed here */
	while (!fwd_quit && access(dj, F_OK) == 0) {
		for (int i = 0; i < 2; i++) {
			struct fwd_conn *c = &conn[i];

			if (c->pid != 0 || hb_now_ms() < c->next)
				continue;
			if ((c->pid = fork()) == 0) {
				execvp(c->a.v[0], c->a.v);
				fprintf(stderr, "cannot run %s: %s\n",
				    c->a.v[0], strerror(errno));
				_exit(127);
			}
			if (c->pid < 0) {
				c->pid = 0;
				c->next = hb_now_ms() + 1000;
				continue;
			}
			c->started = hb_now_ms();
			fprintf(stderr, "%ld %s forward to %s: ssh pid %d\n",
			    (long)time(NULL), i ? "events" : "endpoint",
			    r.machine, (int)c->pid);
		}
		usleep(100000);
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			for (int i = 0; i < 2; i++) {
				struct fwd_conn *c = &conn[i];

				if (c->pid != pid)
					continue;
				/* it ended (the link broke, the machine
				 * rebooted): again, sooner when it had run a
				 * while */
				c->pid = 0;
				if (hb_now_ms() - c->started > 60000)
					c->backoff = 1;
				fprintf(stderr,
				    "%ld ssh %d ended (%s %d): again in %d "
				    "s\n",
				    (long)time(NULL), (int)pid,
				    WIFEXITED(st) ? "status" : "signal",
				    WIFEXITED(st) ? WEXITSTATUS(st) :
				                    WTERMSIG(st),
				    c->backoff);
				c->next = hb_now_ms() + c->backoff * 1000LL;
				c->backoff = c->backoff < 8 ? c->backoff * 2 :
				                              10;
			}
	}
	for (int i = 0; i < 2; i++)
		if (conn[i].pid > 0) {
			kill(conn[i].pid, SIGTERM);
			while (
			    waitpid(conn[i].pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
	{
		char *s = desktop_path(d, "operator.sock");

		if (s != NULL)
			unlink(s);
		free(s);
	}
	rc = 0;
	goto out;
fail:
	die_cause("remote-forward", cause);
out:
	if (fd >= 0)
		close(fd);
	free(p);
	free(dj);
	av_clear(&conn[0].a);
	av_clear(&conn[1].a);
	remote_clear(&r);
	desktop_free(d);
	return (rc);
}

/* ---- commands -------------------------------------------------------------
 */

/* The state the last command left there, for vm/remote.c to show while
 * its agent does not answer. */
static void
remote_note_state(const struct desktop *d, const struct remote *r)
{
	char *w[] = { "status", d->name }, *out = NULL, *st, *p;
	char *cause = NULL;

	if (remote_run(r, NULL, w, 2, NULL, &out) == 0 &&
	    (st = field(out, "state")) != NULL) {
		if ((p = desktop_path(d, "remote-state")) != NULL &&
		    hb_write_file(p, st, strlen(st), 0600, &cause) != 0)
			free(cause);
		free(p);
		free(st);
	}
	free(out);
}

/* Its host there: the same libvirt, under the same name (the same again
 * is no error there). */
static int
remote_host_there(const struct remote *r, const char *host, char **cause)
{
	char *w[] = { "host", "add", (char *)host, r->ruri }, *out = NULL;
	int rc = remote_run(r, NULL, w, 4, NULL, &out);

	free(out);
	if (rc != 0)
		*cause = hb_fmt("on %s, `bureau host add %s %s` failed (said "
		                "above)",
		    r->machine, host, r->ruri);
	return (rc != 0 ? -1 : 0);
}

/*
 * The record here of desktop name, there on host: desktop.json ("remote":
 * its directory and agent port there, as `bureau status` there says),
 * its token (read there), its endpoint here (port), and the state there,
 * written into dir. *rport: the agent's port there.
 */
static int
remote_record(const struct remote *r, const char *host, const char *name,
    const char *dir, int port, int *rport, char **cause)
{
	char *w[] = { "status", (char *)name }, *out = NULL, *tok = NULL;
	char *rdir = NULL, *ep = NULL, *mem = NULL, *cpus = NULL;
	char *image = NULL, *st = NULL, *tokp = NULL, *s = NULL, *p = NULL;
	json_t *cfg = NULL;
	int rv = -1;

	if (remote_run(r, NULL, w, 2, NULL, &out) != 0) {
		*cause = hb_fmt("on %s, `bureau status %s` failed", r->machine,
		    name);
		goto out;
	}
	rdir = field(out, "dir");
	ep = field(out, "endpoint");
	mem = field(out, "memory");
	cpus = field(out, "cpus");
	image = field(out, "image");
	st = field(out, "state");
	if (rdir == NULL || rdir[0] != '/' || ep == NULL ||
	    sscanf(ep, "tcp://127.0.0.1:%d", rport) != 1 || *rport < 1 ||
	    *rport > 65533 || mem == NULL || cpus == NULL || image == NULL) {
		*cause = hb_fmt("on %s, `bureau status %s` said no dir, "
		                "endpoint, memory, cpus or image: a bureau of "
		                "another version?",
		    r->machine, name);
		goto out;
	}
	if ((tokp = hb_fmt("%s/token", rdir)) == NULL)
		goto oom;
	{
		char *w2[] = { "--", tokp };

		if (remote_run(r, "cat", w2, 2, NULL, &tok) != 0 ||
		    tok == NULL || strlen(tok) < 32) {
			*cause = hb_fmt("on %s, cannot read the desktop's "
			                "token ('%s')",
			    r->machine, tokp);
			goto out;
		}
		tok[strcspn(tok, " \t\r\n")] = '\0';
	}
	cfg = json_pack("{s:s, s:s, s:I, s:I, s:i, s:s, s:I, s:{s:s, s:i}}",
	    "name", name, "image", image, "memory",
	    (json_int_t)strtol(mem, NULL, 10), "cpus",
	    (json_int_t)strtol(cpus, NULL, 10), "port", port, "host", host,
	    "created", (json_int_t)time(NULL), "remote", "dir", rdir, "port",
	    *rport);
	if (cfg == NULL || (s = json_dumps(cfg, JSON_INDENT(2))) == NULL ||
	    (p = hb_fmt("%s/token", dir)) == NULL)
		goto oom;
	if (hb_write_file(p, tok, strlen(tok), 0600, cause) != 0)
		goto out;
	free(p);
	free(tok);
	if ((tok = hb_fmt("tcp://127.0.0.1:%d\n", port)) == NULL ||
	    (p = hb_fmt("%s/endpoint", dir)) == NULL)
		goto oom;
	if (hb_write_file(p, tok, strlen(tok), 0644, cause) != 0)
		goto out;
	free(p);
	if ((p = hb_fmt("%s/remote-state", dir)) == NULL)
		goto oom;
	if (hb_write_file(p, st ? st : "stopped", strlen(st ? st : "stopped"),
	        0600, cause) != 0)
		goto out;
	rv = store_save_in(dir, cfg, cause);
	goto out;
oom:
	*cause = hb_fmt("out of memory");
out:
	json_decref(cfg);
	free(out);
	free(tok);
	free(rdir);
	free(ep);
	free(mem);
	free(cpus);
	free(image);
	free(st);
	free(tokp);
	free(s);
	free(p);
	return (rv);
}

/* The keeper of name's forwards started, and what it is said. */
static void
remote_record_done(const char *what, const char *name, const char *host,
    const struct remote *r)
{
	struct desktop *ld = NULL;
	char *cause = NULL;

	if (desktop_load(name, &ld, &cause) != 0 ||
	    fwd_ensure(ld, &cause) != 0) {
		fprintf(stderr, "bureau %s: warning: %s\n", what, cause);
		free(cause);
	}
	if (ld != NULL)
		printf("desktop '%s' is on host '%s' (%s): its VM and host "
		       "agent run there; here its endpoint "
		       "tcp://127.0.0.1:%d and operator socket are SSH "
		       "forwards to the agent's (port %d there), kept by pid "
		       "%d\n",
		    name, host, r->machine, ld->port, ld->remote_port,
		    (int)fwd_pid(ld));
	desktop_free(ld);
}

int
remote_create(int argc, char **argv, const char *host, const char *name)
{
	struct desktop d = { 0 };
	struct remote r = { 0 };
	char *cause = NULL, *uri = NULL;
	int lk = -1, created = 0, made = 0, rc = 1, rport;

	d.name = (char *)name;
	if ((d.host = strdup(host)) == NULL ||
	    host_uri(host, &uri, &cause) != 0 ||
	    remote_parse(uri, &r, &cause) != 0 ||
	    remote_host_there(&r, host, &cause) != 0)
		goto fail;
	/* Its record here, under the store's lock until desktop.json names
	 * the ports this side gave it. */
	if (store_lock_all(&lk, &cause) != 0 ||
	    store_create_dir(&d, &created, &cause) != 0 ||
	    store_pick_port(&d.port, &cause) != 0)
		goto fail;
	/* the desktop there, made by bureau there: the command as given */
	if (remote_run(&r, NULL, argv, argc, NULL, NULL) != 0) {
		cause = hb_fmt("on %s, `bureau create` failed (said above)",
		    r.machine);
		goto fail;
	}
	made = 1;
	if (remote_record(&r, host, name, d.dir, d.port, &rport, &cause) != 0)
		goto fail;
	close(lk);
	lk = -1;
	remote_record_done("create", name, host, &r);
	rc = 0;
	goto out;
fail:
	die_cause("create", cause);
	if (made) { /* undone there too */
		char *w[] = { "rm", "--force", (char *)name };
		char *o2 = NULL;

		remote_run(&r, NULL, w, 3, NULL, &o2);
		free(o2);
	}
	if (created)
		hb_rm_tree(d.dir);
out:
	if (lk >= 0)
		close(lk);
	free(d.host);
	free(d.dir);
	free(uri);
	remote_clear(&r);
	return (rc);
}

/* ---- move between machines ------------------------------------------------
 */

/* What a desktop's directory holds of its run, not of itself: not
 * carried (sockets, pid files and their locks, libvirt's socket
 * directory, the forwards' keeper here), and with them every name of
 * store/files.c's table that send does not carry (temporaries). */
#define SEND_EXCLUDES                                                          \
	"--exclude=*.sock", "--exclude=*.pid", "--exclude=*/lock",             \
	    "--exclude=*/lv", "--exclude=*/forward.log",                       \
	    "--exclude=*/remote-state", "--exclude=*/run.json"

/* Start `tar` writing name's directory (under home) to fd out; its pid. */
static pid_t
send_tar(const char *home, const char *name, int out)
{
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		/* posix: the files' nanosecond times go with them, which a
		 * saved state's record checks (qemu_state.c); sparse: a RAM
		 * file of GBs is mostly holes; hard links as files (the far
		 * end takes no link) */
		char *av[128] = { "tar", "--format=posix", "--sparse",
			"--hard-dereference", "-C", (char *)home,
			SEND_EXCLUDES };
		int n = 0;

		while (av[n] != NULL)
			n++;
		for (const struct store_file *f = store_files;
		     f->name != NULL && n < 120; f++)
			if (!(f->flags & SF_SENT))
				av[n++] = hb_fmt("--exclude=%s/%s", name,
				    f->name);
		av[n++] = "-cf";
		av[n++] = "-";
		av[n++] = (char *)name;
		av[n] = NULL;
		dup2(out, 1);
		close_range(3, ~0U, 0);
		execvp("tar", av);
		fprintf(stderr, "bureau: cannot run tar: %s\n",
		    strerror(errno));
		_exit(127);
	}
	return (pid);
}

static int
wait_ok(pid_t pid)
{
	int st = 0;

	if (pid <= 0)
		return (0);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return (0);
	return (WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* `bureau send NAME`: a stopped desktop's directory as a tar stream on
 * stdout (what `move` runs on the machine a desktop leaves). */
int
cmd_send(int argc, char **argv)
{
	struct desktop *d = NULL;
	char *cause = NULL, *home = NULL;
	int lk = -1, rc = 1;

	if (argc != 2) {
		usage_err("send", "one NAME expected");
		return (2);
	}
	if (desktop_load(argv[1], &d, &cause) != 0 ||
	    store_lock(d, "send", &lk, &cause) != 0)
		goto fail;
	if (d->attached || d->remote_dir != NULL ||
	    vm_backend_for(d)->pid(d) > 0 || store_agent_pid(d) > 0) {
		cause = hb_fmt("desktop '%s' %s", d->name,
		    d->attached ? "is attached: no disks to send" :
		        d->remote_dir != NULL ? "is on another machine" :
		                                "runs: `bureau stop` it first");
		goto fail;
	}
	if ((home = hb_home()) == NULL) {
		cause = hb_fmt("out of memory");
		goto fail;
	}
	rc = wait_ok(send_tar(home, d->name, 1)) ? 0 : 1;
	if (rc != 0)
		fprintf(stderr, "bureau send: tar failed\n");
	goto out;
fail:
	die_cause("send", cause);
out:
	if (lk >= 0)
		close(lk);
	free(home);
	desktop_free(d);
	return (rc);
}

/* ---- receive: nothing received is trusted (DESIGN.md, v4) -------------- */

/* A received member: NAME itself, or NAME/ENTRY of store/files.c's table
 * that send carries, of its kind. */
static int
recv_member(void *arg, const char *member, int type, char **cause)
{
	const char *name = arg, *rel;
	const struct store_file *f;
	size_t n = strlen(name);

	if (strcmp(member, name) == 0 && type == TARSCAN_DIR)
		return (0);
	if (strncmp(member, name, n) != 0 || member[n] != '/') {
		*cause = hb_fmt("refused '%s': not in desktop '%s''s "
		                "directory",
		    member, name);
		return (-1);
	}
	rel = member + n + 1;
	if ((f = store_file_find(rel)) == NULL)
		*cause = hb_fmt("refused '%s': no such file is in a "
		                "desktop's directory",
		    member);
	else if (!(f->flags & SF_SENT))
		*cause = hb_fmt("refused '%s': a desktop's directory holds "
		                "it only while it runs or a command writes "
		                "it: never sent",
		    member);
	else if ((type == TARSCAN_DIR) != !!(f->flags & SF_DIR))
		*cause = hb_fmt("refused '%s': a %s where a %s belongs", member,
		    type == TARSCAN_DIR ? "directory" : "file",
		    f->flags & SF_DIR ? "directory" : "file");
	else
		return (0);
	return (-1);
}

/*
 * The stream on fd in, extracted into dir (new, 0700) by tar as it
 * passes, each member's header checked before tar reads it (util/
 * tarscan.c): a member that is no regular file or directory of a
 * desktop's directory stops it there (tar killed, said in *cause).
 * tar takes no owner, mode, ACL or attribute from the stream.
 */
static int
recv_extract(const char *dir, const char *name, int in, char **cause)
{
	static char buf[256 * 1024];
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	struct tarscan ts;
	int p[2], rv = -1, refused = 0, ok;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0) {
		*cause = hb_fmt("pipe: %s", strerror(errno));
		return (-1);
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		char *av[] = { "tar", "--sparse", "--no-same-owner",
			"--no-same-permissions", "--no-acls", "--no-selinux",
			"--no-xattrs", "-C", (char *)dir, "-xf", "-", NULL };

		umask(077);
		dup2(p[0], 0);
		close_range(3, ~0U, 0);
		execvp("tar", av);
		fprintf(stderr, "bureau: cannot run tar: %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(p[0]);
	if (pid < 0) {
		*cause = hb_fmt("fork: %s", strerror(errno));
		close(p[1]);
		return (-1);
	}
	/* tar ending early is said by its status, not by a SIGPIPE here */
	sigaction(SIGPIPE, &ign, &old);
	tarscan_init(&ts, recv_member, (void *)name);
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf), off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*cause = hb_fmt("cannot read the stream: %s",
			    strerror(errno));
			refused = 1;
			break;
		}
		if (n == 0) {
			refused = tarscan_end(&ts, cause) != 0;
			break;
		}
		if (tarscan_feed(&ts, buf, (size_t)n, cause) != 0) {
			refused = 1;
			break;
		}
		while (off < n) {
			ssize_t w = write(p[1], buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += w;
		}
		if (off < n)
			break; /* tar is gone: its status says why */
	}
	tarscan_clear(&ts);
	if (refused)
		kill(pid, SIGKILL); /* none of it is kept */
	close(p[1]);
	ok = wait_ok(pid);
	sigaction(SIGPIPE, &old, NULL);
	if (!refused && !ok)
		*cause = hb_fmt("the desktop's files did not come whole (tar "
		                "failed, said above)");
	else if (!refused)
		rv = 0;
	return (rv);
}

/* A JSON file of the received directory, no larger than a settings
 * file is, its keys each once. */
static json_t *
recv_json(const char *dir, const char *file, char **cause)
{
	char *p = hb_fmt("%s/%s", dir, file);
	json_error_t err;
	struct stat st;
	json_t *j = NULL;

	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (NULL);
	}
	if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
		*cause = hb_fmt("refused '%s': not there", file);
	else if (st.st_size > 65536)
		*cause = hb_fmt("refused '%s': larger than 64 KiB", file);
	else if ((j = json_load_file(p, JSON_REJECT_DUPLICATES, &err)) == NULL)
		*cause = hb_fmt("refused '%s': %s", file, err.text);
	else if (!json_is_object(j)) {
		*cause = hb_fmt("refused '%s': not a JSON object", file);
		json_decref(j);
		j = NULL;
	}
	free(p);
	return (j);
}

/* An integer field in [min, max]. */
static int
recv_int(json_t *v, json_int_t min, json_int_t max)
{
	return (json_is_integer(v) && json_integer_value(v) >= min &&
	    json_integer_value(v) <= max);
}

/* A name of either rule (store.c), as fork_of names a desktop there. */
static int
recv_name_like(const char *s)
{
	size_t n = strlen(s);

	return (n > 0 && n <= 64 && s[0] != '-' && s[0] != '.' && s[0] != '_' &&
	    strspn(s,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789-_.") == n);
}

/*
 * desktop.json of the received directory dir, field by field, as a new
 * object of the fields bureau knows: its name is name, its image one of
 * this machine's (*base: that image's base disk, malloc'd); the port and
 * host are given here (the caller's); net_allow is checked but not
 * taken (*net_allow: what it was, malloc'd, or NULL). Any field else,
 * or of another type or range: refused, naming it.
 */
static json_t *
recv_config(const char *dir, const char *name, char **base, char **net_allow,
    char **cause)
{
	json_t *j = recv_json(dir, "desktop.json", cause), *out, *v;
	struct image im = { 0 };
	const char *key, *bad = NULL, *img = NULL;
	char *why = NULL, *real = NULL;

	*base = NULL;
	if (j == NULL)
		return (NULL);
	if ((out = json_object()) == NULL) {
		json_decref(j);
		*cause = hb_fmt("out of memory");
		return (NULL);
	}
	json_object_foreach(j, key, v)
	{
		int ok = 0;

		if (strcmp(key, "name") == 0)
			ok = json_is_string(v) &&
			    strcmp(json_string_value(v), name) == 0;
		else if (strcmp(key, "image") == 0) {
			img = json_string_value(v);
			ok = img != NULL && img[0] == '/' &&
			    (real = realpath(img, NULL)) != NULL &&
			    strcmp(real, img) == 0 &&
			    image_load(img, &im, &why) == 0 &&
			    strchr(im.disk, '/') == NULL &&
			    (*base = hb_fmt("%s/%s", img, im.disk)) != NULL &&
			    access(*base, R_OK) == 0;
			if (!ok && why == NULL)
				why = hb_fmt("its image '%s' is not on this "
				             "machine (build it here: bureau "
				             "image build)",
				    img ? img : "?");
		} else if (strcmp(key, "memory") == 0)
			ok = recv_int(v, 1, 1L << 30);
		else if (strcmp(key, "cpus") == 0)
			ok = recv_int(v, 1, 1024);
		else if (strcmp(key, "disk") == 0 || strcmp(key, "home") == 0)
			ok = recv_int(v, 1, 1LL << 50);
		else if (strcmp(key, "created") == 0)
			ok = recv_int(v, 0, (json_int_t)1 << 62);
		else if (strcmp(key, "net") == 0)
			ok = json_is_string(v) &&
			    (strcmp(json_string_value(v), "internet") == 0 ||
			        strcmp(json_string_value(v), "none") == 0);
		else if (strcmp(key, "net_allow") == 0) {
			/* checked, never taken: the exceptions it opens are
			 * to this machine's networks, the operator's here to
			 * give (receive_into says what it was) */
			ok = json_is_string(v) &&
			    net_allow_check(json_string_value(v), 0, NULL,
			        &why) == 0;
			if (ok && *json_string_value(v) != '\0' &&
			    (*net_allow = strdup(json_string_value(v))) == NULL)
				ok = 0;
			if (ok)
				continue;
		} else if (strcmp(key, "allow") == 0 ||
		    strcmp(key, "approve") == 0) {
			struct policy_list l = { 0 };

			ok = json_is_string(v) &&
			    policy_parse(key, json_string_value(v), &l, &why) ==
			        0;
			policy_list_clear(&l);
		} else if (strcmp(key, "approve_timeout") == 0)
			ok = recv_int(v, 1, 86400);
		else if (strcmp(key, "idle_save") == 0)
			ok = recv_int(v, 0, AGENT_IDLE_SAVE_MAX);
		else if (strcmp(key, "takeover") == 0 ||
		    strcmp(key, "ephemeral") == 0 ||
		    strcmp(key, "agent_made") == 0)
			ok = json_is_boolean(v);
		else if (strcmp(key, "max_forks") == 0)
			ok = recv_int(v, 0, STORE_MAX_FORKS_MAX);
		else if (strcmp(key, "cpu_limit") == 0)
			ok = json_is_number(v) && json_number_value(v) >= 0 &&
			    json_number_value(v) <= 1024;
		else if (strcmp(key, "disk_bps") == 0)
			ok = recv_int(v, 0, STORE_DISK_BPS_MAX);
		else if (strcmp(key, "disk_iops") == 0)
			ok = recv_int(v, 0, STORE_DISK_IOPS_MAX);
		else if (strcmp(key, "net_rate") == 0)
			ok = recv_int(v, 0, STORE_DISK_BPS_MAX);
		else if (strcmp(key, "fork_of") == 0)
			ok = json_is_string(v) &&
			    recv_name_like(json_string_value(v));
		else if (strcmp(key, "port") == 0 || strcmp(key, "host") == 0)
			continue; /* given here */
		else {
			bad = key;
			why = hb_fmt("a field bureau does not know%s",
			    strcmp(key, "kind") == 0 ?
			        " here (an attached desktop has no disks "
			        "to take)" :
			        "");
			break;
		}
		if (!ok) {
			bad = key;
			break;
		}
		json_object_set(out, key, v);
	}
	if (bad == NULL &&
	    (json_object_get(out, "name") == NULL ||
	        json_object_get(out, "image") == NULL ||
	        json_object_get(out, "memory") == NULL ||
	        json_object_get(out, "cpus") == NULL)) {
		bad = "name";
		why = hb_fmt("name, image, memory and cpus are needed");
	}
	if (bad != NULL) {
		*cause = hb_fmt("refused '%s/desktop.json': field '%s': %s",
		    name, bad, why ? why : "not of its type or range");
		json_decref(out);
		out = NULL;
		free(*base);
		*base = NULL;
	}
	image_clear(&im);
	json_decref(j);
	free(why);
	free(real);
	return (out);
}

/* warm-from (a clone not yet started) names a warm state of the image
 * (IMAGE/warm, IMAGE/warm-...), and a saved state's record its own RAM
 * file: the paths a start reads are this machine's image or the
 * directory. */
static int
recv_refs(const char *dir, const char *name, const char *image, char **cause)
{
	static const char *const states[] = { "state.json", "lv.state.json" };
	json_t *j, *v;
	const char *key, *w;
	char *p;
	struct stat st;
	int rv = 0;

	if ((p = hb_fmt("%s/warm-from", dir)) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (lstat(p, &st) == 0) {
		size_t n = strlen(image);

		if ((j = recv_json(dir, "warm-from", cause)) == NULL) {
			free(p);
			return (-1);
		}
		w = json_string_value(json_object_get(j, "warm"));
		if (w == NULL || strncmp(w, image, n) != 0 ||
		    strncmp(w + n, "/warm", 5) != 0 ||
		    strchr(w + n + 1, '/') != NULL ||
		    strspn(w + n + 1,
		        "abcdefghijklmnopqrstuvwxyz0123456789-_.") !=
		        strlen(w + n + 1) ||
		    lstat(w, &st) != 0 || !S_ISDIR(st.st_mode)) {
			*cause = hb_fmt("refused '%s/warm-from': its warm "
			                "state is not one of its image's here",
			    name);
			rv = -1;
		}
		json_object_foreach(j, key, v)
		{
			int ok = strcmp(key, "warm") == 0 ||
			    (strcmp(key, "state_blake2b") == 0 ?
			            json_is_string(v) :
			            recv_int(v, 0, 1LL << 50));

			if (rv == 0 && !ok) {
				*cause = hb_fmt("refused '%s/warm-from': "
				                "field '%s'",
				    name, key);
				rv = -1;
			}
		}
		json_decref(j);
	}
	free(p);
	for (size_t i = 0; rv == 0 && i < 2; i++) {
		if ((p = hb_fmt("%s/%s", dir, states[i])) == NULL) {
			*cause = hb_fmt("out of memory");
			return (-1);
		}
		if (lstat(p, &st) == 0) {
			if ((j = recv_json(dir, states[i], cause)) == NULL)
				rv = -1;
			else if ((v = json_object_get(j, "ram_file")) != NULL &&
			    (!json_is_string(v) ||
			        (strcmp(json_string_value(v), "ram") != 0 &&
			            strcmp(json_string_value(v), "ram.base") !=
			                0))) {
				*cause = hb_fmt(
				    "refused '%s/%s': field "
				    "'ram_file' names no RAM file of "
				    "its directory",
				    name, states[i]);
				rv = -1;
			}
			json_decref(j);
		}
		free(p);
	}
	return (rv);
}

/*
 * Take the directory of desktop name from the tar stream on fd in, for
 * host (a host of this machine): extracted aside into a new 0700
 * directory, each member checked as it comes (only the regular files and
 * directories of store/files.c's table), then checked whole (what tar
 * made; every disk's backing chain; desktop.json field by field; its
 * image here; warm-from; a saved state this host can restore), given a
 * port here (keep_port > 0: that one) and put in place. replace: a record
 * of a desktop on another machine under that name is replaced (the
 * caller ended its forwards). 0, or -1 with *cause naming what was
 * refused and nothing left.
 */
static int
receive_into(const char *name, const char *host, int in, int keep_port,
    int replace, char **cause)
{
	char *home = hb_home(), *tmp = NULL, *got = NULL, *p = NULL;
	char *dst = NULL, *old = NULL, *s = NULL, *base = NULL, *na = NULL;
	static const char *const disks[] = { "system.qcow2", "home.qcow2" };
	json_t *j = NULL;
	const char *img;
	int lk = -1, rv = -1, port = keep_port, local = host_is_local(host);
	struct stat st;

	if (home == NULL ||
	    (tmp = hb_fmt("%s/.receive-%s-XXXXXX", home, name)) == NULL ||
	    (dst = hb_fmt("%s/%s", home, name)) == NULL ||
	    (old = hb_fmt("%s/.replaced-%s-%d", home, name, (int)getpid())) ==
	        NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (!replace && lstat(dst, &st) == 0) {
		*cause = hb_fmt("desktop '%s' exists here", name);
		goto out;
	}
	if (hb_mkdirs(home, 0700) != 0 || mkdtemp(tmp) == NULL) {
		*cause = hb_fmt("cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if ((got = hb_fmt("%s/%s", tmp, name)) == NULL)
		goto oom;
	if (recv_extract(tmp, name, in, cause) != 0 ||
	    store_files_check(got, cause) != 0)
		goto out;
	for (size_t i = 0; i < 2; i++) {
		free(p);
		if ((p = hb_fmt("%s/%s", got, disks[i])) == NULL)
			goto oom;
		if (lstat(p, &st) != 0) {
			*cause = hb_fmt("refused desktop '%s': no %s in what "
			                "came",
			    name, disks[i]);
			goto out;
		}
	}
	if ((j = recv_config(got, name, &base, &na, cause)) == NULL ||
	    store_disks_check(got, base, cause) != 0)
		goto out;
	img = json_string_value(json_object_get(j, "image"));
	if (recv_refs(got, name, img, cause) != 0)
		goto out;
	free(p);
	/* a saved state only the backend it was saved by restores */
	if ((p = hb_fmt("%s/%s", got, local ? "lv.state" : "state")) == NULL)
		goto oom;
	if (lstat(p, &st) == 0) {
		*cause = hb_fmt("it holds a saved state of %s, which host '%s' "
		                "cannot restore",
		    local ? "libvirt" : "bureau's own QEMU", host);
		goto out;
	}
	if (store_lock_all(&lk, cause) != 0 ||
	    (port <= 0 && store_pick_port(&port, cause) != 0))
		goto out;
	if (!local)
		json_object_set_new(j, "host", json_string(host));
	json_object_set_new(j, "port", json_integer(port));
	free(p);
	p = NULL;
	if (store_save_in(got, j, cause) != 0)
		goto out;
	if ((s = hb_fmt("tcp://127.0.0.1:%d\n", port)) == NULL ||
	    (p = hb_fmt("%s/endpoint", got)) == NULL)
		goto oom;
	if (hb_write_file(p, s, strlen(s), 0644, cause) != 0)
		goto out;
	if (replace && lstat(dst, &st) == 0 && rename(dst, old) != 0) {
		*cause = hb_fmt("cannot rename '%s': %s", dst, strerror(errno));
		goto out;
	}
	/* (never over a directory that came meanwhile) */
	if (renameat2(AT_FDCWD, got, AT_FDCWD, dst, RENAME_NOREPLACE) != 0) {
		*cause = hb_fmt("cannot rename '%s': %s", got, strerror(errno));
		if (replace)
			rename(old, dst);
		goto out;
	}
	if (replace)
		hb_rm_tree(old);
	if (na != NULL)
		fprintf(stderr,
		    "bureau receive: '%s' came with --net-allow '%s', not "
		    "taken here: what its guest may reach of this machine's "
		    "networks is this machine's operator's to say (bureau "
		    "config %s --net-allow LIST)\n",
		    name, na, name);
	rv = 0;
	goto out;
oom:
	*cause = hb_fmt("out of memory");
out:
	if (lk >= 0)
		close(lk);
	if (tmp != NULL)
		hb_rm_tree(tmp);
	json_decref(j);
	free(home);
	free(tmp);
	free(got);
	free(dst);
	free(old);
	free(p);
	free(s);
	free(base);
	free(na);
	return (rv);
}

/* `bureau receive NAME --host HOST`: a desktop's directory from stdin
 * (what `move` runs on the machine a desktop goes to). */
int
cmd_receive(int argc, char **argv)
{
	char *cause = NULL;

	if (argc != 4 || strcmp(argv[2], "--host") != 0) {
		usage_err("receive", "NAME --host HOST expected");
		return (2);
	}
	if (store_valid_name(argv[1], &cause) != 0 ||
	    host_valid_name(argv[3], &cause) != 0 ||
	    (!host_is_local(argv[3]) && remote_host(argv[3], &cause) != 0) ||
	    receive_into(argv[1], argv[3], 0, 0, 0, &cause) != 0) {
		if (cause == NULL)
			cause = hb_fmt("host '%s' is not on this machine",
			    argv[3]);
		die_cause("receive", cause);
		return (1);
	}
	printf("received desktop '%s' on host '%s'\n", argv[1], argv[3]);
	return (0);
}

/* Start `bureau WORDS...` on r's machine, its stdin from in and stdout to
 * out, without waiting: its pid, or -1. */
static pid_t
remote_spawn(const struct remote *r, char *const *words, int n, int in, int out)
{
	struct argv a = { 0 };
	pid_t pid = -1;

	ssh_base(r, &a);
	av_add(&a, strdup("-T"));
	av_add(&a, strdup("--"));
	av_add(&a, strdup(r->machine));
	av_add(&a, sh_line("bureau", words, n));
	if (a.v[a.n - 1] != NULL) {
		fflush(NULL);
		if ((pid = fork()) == 0) {
			dup2(in, 0);
			dup2(out, 1);
			close_range(3, ~0U, 0);
			execvp(a.v[0], a.v);
			_exit(255);
		}
	}
	av_clear(&a);
	return (pid);
}

/*
 * `bureau move NAME --to HOST` where NAME or HOST is on another machine:
 * the stopped desktop's directory goes over SSH (`bureau send` and
 * `receive` at either end), and what it leaves is removed only once it
 * arrived. d is locked by the caller, and stopped.
 */
int
remote_move(const struct desktop *d, const char *to, char **cause)
{
	struct remote r = { 0 };
	char *home = hb_home(), *rec = NULL, *old = NULL;
	int pfd[2] = { -1, -1 }, rv = -1, rport, nul = -1;
	int there = d->remote_dir != NULL;
	pid_t a = -1, b = -1;

	if (home == NULL ||
	    (rec = hb_fmt("%s/.record-%s-%d", home, d->name, (int)getpid())) ==
	        NULL ||
	    (old = hb_fmt("%s/.moved-%s-%d", home, d->name, (int)getpid())) ==
	        NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (remote_of(there ? d->host : to, &r, cause) != 0)
		goto out;
	if (!there && remote_host_there(&r, to, cause) != 0)
		goto out;
	if (pipe2(pfd, O_CLOEXEC) != 0 ||
	    (nul = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		*cause = hb_fmt("pipe: %s", strerror(errno));
		goto out;
	}
	if (!there) {
		/* here -> there: tar here | ssh bureau receive there */
		char *w[] = { "receive", d->name, "--host", (char *)to };

		a = send_tar(home, d->name, pfd[1]);
		b = remote_spawn(&r, w, 4, pfd[0], 1);
		close(pfd[0]);
		close(pfd[1]);
		pfd[0] = pfd[1] = -1;
		int oka = wait_ok(a), okb = wait_ok(b);

		if (!oka || !okb) {
			*cause = hb_fmt("the desktop did not arrive on %s "
			                "(said above); it is here as it was",
			    r.machine);
			goto out;
		}
		/* arrived: this directory becomes its record there */
		if (hb_mkdirs(rec, 0700) != 0) {
			*cause = hb_fmt("cannot create '%s': %s", rec,
			    strerror(errno));
			goto out;
		}
		if (remote_record(&r, to, d->name, rec, d->port, &rport,
		        cause) != 0)
			goto out;
		if (rename(d->dir, old) != 0 || rename(rec, d->dir) != 0) {
			*cause = hb_fmt("cannot put its record in place: %s",
			    strerror(errno));
			rename(old, d->dir);
			goto out;
		}
		hb_rm_tree(old);
		remote_record_done("move", d->name, to, &r);
		rv = 0;
		goto out;
	}
	/* there -> here: ssh bureau send there | receive here, into the
	 * record's place (its forwards ended first: their socket is in it) */
	{
		char *w[] = { "send", d->name }, *o2 = NULL;
		char *w2[] = { "rm", (char *)d->name };
		int ok;

		fwd_stop(d);
		b = remote_spawn(&r, w, 2, nul, pfd[1]);
		close(pfd[1]);
		pfd[1] = -1;
		ok = receive_into(d->name, to, pfd[0], d->port, 1, cause) == 0;
		close(pfd[0]);
		pfd[0] = -1;
		if (!wait_ok(b) || !ok) {
			if (*cause == NULL)
				*cause = hb_fmt("the desktop did not come from "
				                "%s (said above)",
				    r.machine);
			/* still there: its forwards again */
			if (remote_forward_launch(d, &o2) != 0)
				free(o2);
			goto out;
		}
		/* here now, whole: gone there */
		if (remote_run(&r, NULL, w2, 2, NULL, &o2) != 0)
			fprintf(stderr,
			    "bureau move: warning: on %s, `bureau rm %s` "
			    "failed: its copy there stays (it is here "
			    "now)\n",
			    r.machine, d->name);
		free(o2);
		rv = 0;
	}
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (nul >= 0)
		close(nul);
	if (rec != NULL)
		hb_rm_tree(rec);
	free(home);
	free(rec);
	free(old);
	remote_clear(&r);
	return (rv);
}

/* The commands sent there as they are. */
static const char *const sent[] = { "start", "stop", "pause", "resume",
	"status", "rm", "snapshot", "restore", "console", "takeover",
	"approvals", "approve", "deny", "answer", "policy", "config", "log",
	NULL };
/* The commands that run here, through the forwards. */
static const char *const here[] = { "call", "screenshot", "mcp", NULL };
/* Options whose value is the next word (not a NAME). */
static const char *const valued[] = { "-n", "--timeout", "--accel", "--reason",
	"--net", "--since", "--export", "--to", "--allow", "--approve",
	"--approve-timeout", "--net-allow", "--idle-save", "-o", "--output",
	NULL };

static int
in(const char *const *set, const char *s)
{
	for (; *set != NULL; set++)
		if (strcmp(*set, s) == 0)
			return (1);
	return (0);
}

/*
 * `bureau fork NAME NEW ...` of a desktop on another machine: forked there
 * by the bureau there (NEW is a desktop there too), and NEW's record made
 * here, with forwards of its own. An ephemeral fork's record goes when a
 * stop here ends it (the bureau there discards it then).
 */
/* store_update's change: an ephemeral fork's record. */
static int
remote_mark_ephemeral(json_t *j, void *arg, char **cause)
{
	(void)arg;
	if (json_object_set_new(j, "ephemeral", json_true()) != 0) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	return (0);
}

static int
remote_fork(const struct desktop *d, int argc, char **argv)
{
	struct desktop c = { 0 };
	struct remote r = { 0 };
	const char *newname = NULL;
	char *cause = NULL, *p = NULL;
	int lk = -1, created = 0, rport, n = 0, eph = 0, rc = 1;

	for (int i = 2; i < argc; i++) {
		eph |= strcmp(argv[i], "--ephemeral") == 0;
		if (argv[i][0] != '-' && !in(valued, argv[i - 1]) && ++n == 2 &&
		    newname == NULL)
			newname = argv[i];
	}
	if (newname == NULL) {
		usage_err("fork", "NAME NEW expected");
		return (2);
	}
	c.name = (char *)newname;
	if (store_valid_name(newname, &cause) != 0 ||
	    remote_of(d->host, &r, &cause) != 0 ||
	    store_lock_all(&lk, &cause) != 0 ||
	    store_create_dir(&c, &created, &cause) != 0 ||
	    store_pick_port(&c.port, &cause) != 0)
		goto fail;
	/* forked there, as asked; its output passed through */
	if (remote_run(&r, NULL, argv + 1, argc - 1, NULL, NULL) != 0) {
		cause = hb_fmt("on %s, `bureau fork` failed (said above)",
		    r.machine);
		goto fail;
	}
	if (remote_record(&r, d->host, newname, c.dir, c.port, &rport,
	        &cause) != 0)
		goto fail;
	/* the record says so: its stop here removes it */
	if (eph && store_update(&c, remote_mark_ephemeral, NULL, &cause) != 0)
		goto fail;
	close(lk);
	lk = -1;
	remote_record_done("fork", newname, d->host, &r);
	rc = 0;
	goto out;
fail:
	die_cause("fork", cause);
	if (created)
		hb_rm_tree(c.dir);
out:
	if (lk >= 0)
		close(lk);
	free(c.dir);
	free(p);
	remote_clear(&r);
	return (rc);
}

/* What a command there prints of its agent's ports is said of this
 * side's (the forwards'). */
static void
remote_ports_here(const struct desktop *d, struct rewrite *rw)
{
	snprintf(rw->from[0], sizeof rw->from[0], "tcp://127.0.0.1:%d",
	    d->remote_port);
	snprintf(rw->to[0], sizeof rw->to[0], "tcp://127.0.0.1:%d", d->port);
	snprintf(rw->from[1], sizeof rw->from[1], "tcp://127.0.0.1:%d",
	    d->remote_port + 1);
	snprintf(rw->to[1], sizeof rw->to[1], "tcp://127.0.0.1:%d",
	    d->port + 1);
	rw->n = 2;
}

int
remote_dispatch(int argc, char **argv, int *rc)
{
	const char *cmd = argv[1], *name = NULL;
	struct desktop *d = NULL;
	struct remote r = { 0 };
	struct rewrite rw = { 0 };
	char *cause = NULL;
	int fork_cmd = strcmp(cmd, "fork") == 0, force = 0;

	if (!in(sent, cmd) && !in(here, cmd) && !fork_cmd)
		return (0);
	for (int i = 2; i < argc && name == NULL; i++)
		if (argv[i][0] != '-' && !in(valued, argv[i - 1]))
			name = argv[i];
	for (int i = 2; i < argc; i++)
		force |= strcmp(argv[i], "--force") == 0;
	if (name == NULL || store_valid_name(name, &cause) != 0 ||
	    desktop_load(name, &d, &cause) != 0 || d->remote_dir == NULL) {
		free(cause);
		desktop_free(d);
		return (0);
	}
	*rc = 1;
	if (fork_cmd) {
		*rc = remote_fork(d, argc, argv);
		desktop_free(d);
		return (1);
	}
	if (in(here, cmd)) {
		if (fwd_ensure(d, &cause) != 0)
			goto fail;
		desktop_free(d);
		return (0); /* the command goes on here, through them */
	}
	for (int i = 2; i < argc; i++)
		if (strcmp(cmd, "log") == 0 &&
		    strncmp(argv[i], "--export", 8) == 0) {
			cause = hb_fmt(
			    "desktop '%s' is on host '%s', another "
			    "machine: its audit trail is there; "
			    "`bureau log %s --export F` there writes "
			    "F there",
			    d->name, d->host, d->name);
			goto fail;
		}
	run_stdin = strcmp(cmd, "answer") == 0 &&
	    strcmp(argv[argc - 1], "-") == 0;
	if (remote_of(d->host, &r, &cause) != 0)
		goto fail;
	/* the forwards first: the endpoint works once start returns */
	if (strcmp(cmd, "start") == 0 && fwd_ensure(d, &cause) != 0) {
		fprintf(stderr, "bureau start: warning: %s\n", cause);
		free(cause);
		cause = NULL;
	}
	/* what it prints of the agent's ports there is said of this side's */
	remote_ports_here(d, &rw);
	*rc = remote_run(&r, NULL, argv + 1, argc - 1, &rw, NULL);
	if (*rc == 255)
		fprintf(stderr,
		    "bureau %s: desktop '%s' is on host '%s' (%s): "
		    "ssh failed\n",
		    cmd, d->name, d->host, r.machine);
	if (strcmp(cmd, "status") == 0 && *rc == 0)
		printf("remote: %s on %s (host '%s'); here: %s, forwards kept "
		       "by pid %d\n",
		    d->remote_dir, r.machine, d->host, d->dir, (int)fwd_pid(d));
	if (strcmp(cmd, "rm") == 0) {
		if (*rc != 0 && force) {
			fprintf(stderr,
			    "bureau rm: --force: removing the record "
			    "here all the same (what is left on %s "
			    "stays there)\n",
			    r.machine);
			*rc = 0;
		}
		if (*rc == 0) {
			fwd_stop(d);
			hb_rm_tree(d->dir);
		}
	} else if (strcmp(cmd, "stop") == 0 && *rc == 0 && d->ephemeral) {
		/* an ephemeral fork: discarded there by its stop */
		fwd_stop(d);
		hb_rm_tree(d->dir);
		printf("its record here is removed too\n");
	} else if (strcmp(cmd, "start") == 0 || strcmp(cmd, "stop") == 0 ||
	    strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0 ||
	    strcmp(cmd, "restore") == 0) {
		remote_note_state(d, &r);
	}
	remote_clear(&r);
	desktop_free(d);
	return (1);
fail:
	die_cause(cmd, cause);
	remote_clear(&r);
	desktop_free(d);
	return (1);
}

/* start --all (this machine's service at boot): a desktop on another
 * machine is the bureau's there, its SSH forwards here come back. */
static int
remote_forward_each(const char *name, void *arg)
{
	struct desktop *d = NULL;
	char *cause = NULL;

	(void)arg;
	if (desktop_load(name, &d, &cause) == 0 && d->remote_dir != NULL &&
	    remote_forward_launch(d, &cause) != 0)
		fprintf(stderr, "bureau: '%s': %s\n", name, cause);
	free(cause);
	desktop_free(d);
	return (0);
}

void
remote_forwards_all(void)
{
	store_each(remote_forward_each, NULL);
}

/*
 * The lifecycle library's transport to a desktop on another machine whose
 * agent there does not answer (desk_set_remote): `bureau WORDS...` there,
 * its output into *said with the agent's ports there said as this side's,
 * the state it left noted here. The exit status (255: ssh failed).
 */
int
remote_desk_run(const struct desktop *d, char *const *words, int n, char **said)
{
	struct remote r = { 0 };
	struct rewrite rw = { 0 };
	char *cause = NULL, *out = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *m;
	int rc;

	*said = NULL;
	if (remote_of(d->host, &r, &cause) != 0) {
		*said = cause;
		return (1);
	}
	if (strcmp(words[0], "start") == 0 && fwd_ensure(d, &cause) != 0) {
		fprintf(stderr, "bureau start: warning: %s\n", cause);
		free(cause);
		cause = NULL;
	}
	remote_ports_here(d, &rw);
	rc = remote_run(&r, NULL, words, n, &rw, &out);
	if ((m = open_memstream(said, &len)) != NULL) {
		for (line = out ? strtok_r(out, "\n", &save) : NULL;
		     line != NULL; line = strtok_r(NULL, "\n", &save)) {
			char *l = hb_fmt("%s\n", line);
			if (l != NULL)
				put_rewritten(m, l, &rw);
			free(l);
		}
		fclose(m);
	}
	free(out);
	if (rc == 0)
		remote_note_state(d, &r);
	remote_clear(&r);
	return (rc);
}
