/*
 * host-bridge/vm/netkeeper.c: a desktop's own network namespace, and the
 * one way into its guest's daemon (`bureau net-keeper DIR`, run by the
 * QEMU backend as the host agent's child; not a command for people).
 *
 * Before, passt ran in the host's namespace and forwarded the guest's
 * bureaud to a port on the host's 127.0.0.1: any local process that
 * learned the guest token (readable inside the desktop) reached the
 * daemon past the host agent's policy, approvals, takeover and audit;
 * and passt's sockets reached whatever the host reaches: its own
 * services, 169.254.169.254 (a cloud's metadata and credentials), the
 * private networks around it. Now:
 *
 *   pasta --config-net -- sh -c 'read x'   a new network namespace (and
 *        user namespace) with the host's address and routes, its traffic
 *        carried by pasta as the host's own sockets; the shell holds the
 *        namespace until the keeper's end of its stdin closes
 *   nft -f DIR/net.nft      in that namespace: what the guest may reach
 *        (qemu_net.c writes it); the keeper fails rather than run without
 *   passt --fd 3 ...        in that namespace: the guest's link (fd 3, a
 *        socketpair whose other end is QEMU's), forwarding the guest's
 *        daemon to that namespace's 127.0.0.1, where no host process is
 *   the relay               the keeper itself, in that namespace: nng
 *        devices from ipc://DIR/guest.sock and ipc://DIR/guest-events.sock
 *        (the desktop's 0700 directory: its owner alone) to the forward
 *
 * It writes "ok" to stdout once all of this runs, or "error: WHY"; it
 * ends (taking pasta and passt with it) when either of them ends (passt
 * does when QEMU's end of the link closes), or on SIGTERM. Like QEMU it
 * has a session of its own and outlives a host agent that is killed: the
 * next agent adopts both (agent_vm.c). SIGHUP
 * loads DIR/net.nft again (`bureau policy NAME --net-allow`); SIGUSR1
 * dials the guest's daemon anew (qemu_net_redial: after a restore).
 *
 * pasta runs as root when the keeper does (--runas 0): Debian 12's pasta
 * (2023-03) drops to nobody first and then cannot open /dev/net/tun
 * (mode 0600 on some hosts) nor write the new namespace's uid_map. It
 * still drops its capabilities and seccomp-filters itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/qemu_int.h"

/* How long pasta may take to give the namespace its address and route. */
#define NK_NET_WAIT_MS 15000

struct nk {
	const char *dir;
	pid_t pasta, holder, passt;
	int hold_w;  /* the holder's stdin: closed, it ends */
	int nsfd;    /* the namespace */
	int usfd;    /* its user namespace, without root (nk_enter); or -1 */
	int entered; /* the keeper itself is in them (its children too) */
	nng_socket rep, req, sub, pub;
	nng_dialer dreq, dsub; /* to the guest's daemon */
};

static void nk_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line on stdout, the readiness pipe the backend reads. */
static void
nk_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(1, buf, (size_t)n) < 0) {
		/* the backend gave up waiting: nothing to tell */
	}
	fprintf(stderr, "bureau net-keeper: %.*s", n, buf);
}

static void
nk_kill(pid_t *pid)
{
	int st;

	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(*pid, &st, WNOHANG) != 0)
			break;
		if (i == 99) {
			kill(*pid, SIGKILL);
			waitpid(*pid, &st, 0);
		}
		usleep(20000);
	}
	*pid = 0;
}

/* A child that dies with the keeper, its stderr the keeper's. */
static void
nk_child(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* an ignored signal stays ignored across exec, and pasta takes
	 * SIGPIPE's old disposition not being the default as an error
	 * ("Couldn't install signal handlers") */
	signal(SIGPIPE, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
}

/* The one child of parent, as this namespace sees it (0 when none). */
static pid_t
nk_child_of(pid_t parent)
{
	char path[64], buf[64];
	FILE *f;
	long v = 0;

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent,
	    (int)parent);
	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(buf, sizeof buf, f) != NULL)
			v = strtol(buf, NULL, 10);
		fclose(f);
	}
	return (v > 0 ? (pid_t)v : 0);
}

/* pasta with a holder in its namespace, which says when it runs. */
static int
nk_pasta(struct nk *k)
{
	int in[2], out[2];
	char buf[32] = "";
	ssize_t n = 0;
	long long deadline = hb_now_ms() + NK_NET_WAIT_MS;

	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
		nk_say("error: pipe: %s", strerror(errno));
		return (-1);
	}
	if ((k->pasta = fork()) == 0) {
		char *argv[32];
		int a = 0;

		nk_child();
		dup2(in[0], 0);
		dup2(out[1], 1);
		argv[a++] = "pasta";
		if (geteuid() == 0) {
			argv[a++] = "--runas";
			argv[a++] = "0";
		}
		argv[a++] = "-f";
		argv[a++] = "-q";
		argv[a++] = "--config-net";
		/* the namespace's gateway is the real one, not the host */
		argv[a++] = "--no-map-gw";
		argv[a++] = "-4";
		/* no port of the host into the namespace, nor back */
		argv[a++] = "-t";
		argv[a++] = "none";
		argv[a++] = "-u";
		argv[a++] = "none";
		argv[a++] = "-T";
		argv[a++] = "none";
		argv[a++] = "-U";
		argv[a++] = "none";
		/* DNS sent there goes to the host's resolver, whatever it
		 * is (a loopback one included): net.nft sends all of the
		 * guest's DNS there */
		argv[a++] = "--dns-forward";
		argv[a++] = NET_DNS_ADDR;
		argv[a++] = "--";
		argv[a++] = "/bin/sh";
		argv[a++] = "-c";
		argv[a++] = "echo $$; read x";
		argv[a] = NULL;
		execvp("pasta", argv);
		fprintf(stderr, "bureau net-keeper: cannot run 'pasta': %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	k->hold_w = in[1];
	if (k->pasta < 0) {
		close(out[0]);
		nk_say("error: fork: %s", strerror(errno));
		return (-1);
	}
	/* the holder's pid, once pasta made the namespace and runs it */
	while (hb_now_ms() < deadline && n < (ssize_t)sizeof buf - 1) {
		struct pollfd pf = { .fd = out[0], .events = POLLIN };
		ssize_t r;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		if ((r = read(out[0], buf + n, sizeof buf - 1 - (size_t)n)) <=
		    0)
			break;
		n += r;
		if (memchr(buf, '\n', (size_t)n) != NULL)
			break;
	}
	close(out[0]);
	buf[n] = '\0';
	/* its word says it runs; the pid it said is 1 (pasta gives it a
	 * pid namespace too): ours is pasta's child's */
	if (n > 0)
		k->holder = nk_child_of(k->pasta);
	if (k->holder <= 0) {
		nk_say("error: pasta did not make the desktop's network "
		       "namespace (see %s/net.log)",
		    k->dir);
		return (-1);
	}
	return (0);
}

/* Has the namespace (seen through the holder) a default route yet? */
static int
nk_routed(pid_t holder)
{
	char path[64], line[256];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof path, "/proc/%d/net/route", (int)holder);
	if ((f = fopen(path, "re")) == NULL)
		return (0);
	while (!found && fgets(line, sizeof line, f) != NULL) {
		char ifn[32];
		unsigned long dst;

		if (sscanf(line, "%31s %lx", ifn, &dst) == 2 && dst == 0)
			found = 1;
	}
	fclose(f);
	return (found);
}

/*
 * Into the desktop's network namespace. A keeper without root has pasta
 * make a user namespace too, whose root owns the network namespace:
 * only as that root may it load rules there (and join it at all), so it
 * enters the user namespace first (single-threaded: before the relay's
 * threads). Its files outside stay the user's own.
 */
static int
nk_enter(const struct nk *k)
{
	if (k->usfd >= 0 && !k->entered && setns(k->usfd, CLONE_NEWUSER) != 0)
		return (-1);
	return (setns(k->nsfd, CLONE_NEWNET));
}

/* nft -f DIR/net.nft in the namespace; 0 when it loaded. */
static int
nk_nft(struct nk *k)
{
	char path[4096];
	pid_t pid;
	int st = 0;

	snprintf(path, sizeof path, "%s/net.nft", k->dir);
	if ((pid = fork()) == 0) {
		nk_child();
		if (nk_enter(k) != 0) {
			fprintf(stderr, "bureau net-keeper: setns: %s\n",
			    strerror(errno));
			_exit(126);
		}
		dup2(2, 1);
		execlp("nft", "nft", "-f", path, (char *)NULL);
		fprintf(stderr, "bureau net-keeper: cannot run 'nft': %s\n",
		    strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		nk_say("error: the guest's network rules (%s) did not load "
		       "(see %s/net.log; is nftables installed?)",
		    path, k->dir);
		return (-1);
	}
	return (0);
}

/* passt in the namespace, on fd 3 (QEMU's link); its log in DIR. */
static int
nk_passt(struct nk *k)
{
	char log[4096], t1[48], t2[48];

	snprintf(log, sizeof log, "%s/passt.log", k->dir);
	snprintf(t1, sizeof t1, "127.0.0.1/%d:%d", GUEST_API_PORT,
	    GUEST_API_PORT);
	snprintf(t2, sizeof t2, "127.0.0.1/%d:%d", GUEST_EVENTS_PORT,
	    GUEST_EVENTS_PORT);
	if ((k->passt = fork()) == 0) {
		int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		nk_child();
		if (nk_enter(k) != 0)
			_exit(126);
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		fcntl(QEMU_NET_FD, F_SETFD, 0);
		/* The guest keeps the addresses it always had (10.0.2.15/24,
		 * gateway 10.0.2.2); --no-map-gw: that gateway is not the
		 * namespace's loopback. */
		execlp("passt", "passt", "-f", "-q", "--no-map-gw", "-4", "-a",
		    "10.0.2.15", "-n", "24", "-g", "10.0.2.2", "-D", "10.0.2.3",
		    "--fd", "3", "-t", t1, "-t", t2, (char *)NULL);
		fprintf(stderr, "cannot run 'passt': %s\n", strerror(errno));
		_exit(127);
	}
	if (k->passt < 0) {
		nk_say("error: fork: %s", strerror(errno));
		return (-1);
	}
	return (0);
}

static int
nk_open(nng_socket *s, int (*open_raw)(nng_socket *), const char *what)
{
	int rv;

	if ((rv = open_raw(s)) != 0 ||
	    (rv = nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, 0)) != 0) {
		nk_say("error: %s: %s", what, nng_strerror(rv));
		return (-1);
	}
	return (0);
}

static int
nk_dial(nng_socket s, const char *url, nng_dialer *dp)
{
	nng_dialer d;
	int rv;

	if ((rv = nng_dialer_create(&d, s, url)) != 0 ||
	    (rv = nng_dialer_set_ms(d, NNG_OPT_RECONNMINT, 50)) != 0 ||
	    (rv = nng_dialer_set_ms(d, NNG_OPT_RECONNMAXT, 250)) != 0 ||
	    (rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK)) != 0) {
		nk_say("error: dial %s: %s", url, nng_strerror(rv));
		return (-1);
	}
	*dp = d;
	return (0);
}

/* Dial the guest's daemon and its events (again: the old dials go). */
static int
nk_dial_guest(struct nk *k, int again)
{
	if (again) {
		nng_dialer_close(k->dreq);
		nng_dialer_close(k->dsub);
	}
	return (nk_dial(k->req, "tcp://127.0.0.1:" STR(GUEST_API_PORT),
	            &k->dreq) != 0 ||
	            nk_dial(k->sub, "tcp://127.0.0.1:" STR(GUEST_EVENTS_PORT),
	                &k->dsub) != 0 ?
	        -1 :
	        0);
}

static void *
nk_device(void *arg)
{
	nng_socket *pair = arg;

	nng_device(pair[0], pair[1]);
	return (NULL);
}

/* The relay: the keeper already in the namespace, nng not yet used. */
static int
nk_relay(struct nk *k)
{
	char api[4200], ev[4200];
	static nng_socket pairs[2][2];
	pthread_t t;
	int rv;

	snprintf(api, sizeof api, "ipc://%s/guest.sock", k->dir);
	snprintf(ev, sizeof ev, "ipc://%s/guest-events.sock", k->dir);
	unlink(api + 6);
	unlink(ev + 6);
	if (nk_open(&k->rep, nng_rep0_open_raw, "rep") != 0 ||
	    nk_open(&k->req, nng_req0_open_raw, "req") != 0 ||
	    nk_open(&k->sub, nng_sub0_open_raw, "sub") != 0 ||
	    nk_open(&k->pub, nng_pub0_open_raw, "pub") != 0)
		return (-1);
	if ((rv = nng_listen(k->rep, api, NULL, 0)) != 0 ||
	    (rv = nng_listen(k->pub, ev, NULL, 0)) != 0) {
		nk_say("error: listen on %s: %s", api, nng_strerror(rv));
		return (-1);
	}
	chmod(api + 6, 0600);
	chmod(ev + 6, 0600);
	/* the guest's daemon: redialled every 50-250 ms until it listens
	 * (a boot), and again after a restore */
	if (nk_dial_guest(k, 0) != 0)
		return (-1);
	pairs[0][0] = k->rep;
	pairs[0][1] = k->req;
	pairs[1][0] = k->sub;
	pairs[1][1] = k->pub;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, nk_device, pairs[i]) != 0 ||
		    pthread_detach(t) != 0) {
			nk_say("error: thread: %s", strerror(errno));
			return (-1);
		}
	return (0);
}

static void
nk_end(struct nk *k)
{
	nk_kill(&k->passt);
	if (k->hold_w >= 0)
		close(k->hold_w);
	k->hold_w = -1;
	nk_kill(&k->pasta);
	/* its sockets stay: a keeper started after this one (a restore
	 * that fell back to a boot) listens on the same paths */
}

/* Until SIGTERM, or pasta or passt ends; SIGHUP reloads the rules. */
static int
nk_loop(struct nk *k, const sigset_t *sigs)
{
	for (;;) {
		siginfo_t si;
		int st;
		pid_t r;

		if (sigwaitinfo(sigs, &si) < 0)
			continue;
		if (si.si_signo == SIGUSR1) {
			/* the guest runs again (a restore): see
			 * qemu_net_redial */
			if (nk_dial_guest(k, 1) != 0)
				return (1);
			continue;
		}
		if (si.si_signo == SIGHUP) {
			if (nk_nft(k) == 0)
				fprintf(stderr,
				    "bureau net-keeper: rules "
				    "reloaded\n");
			continue;
		}
		if (si.si_signo != SIGCHLD)
			return (0);
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			if (r == k->pasta || r == k->passt) {
				fprintf(stderr,
				    "bureau net-keeper: %s ended (status "
				    "%d)\n",
				    r == k->pasta ? "pasta" : "passt", st);
				if (r == k->pasta)
					k->pasta = 0;
				else
					k->passt = 0;
				return (1);
			}
		}
	}
}

int
vm_net_keeper_main(int argc, char **argv)
{
	struct nk k = { .hold_w = -1, .nsfd = -1, .usfd = -1 };
	sigset_t sigs;
	char ns[64];
	int rv = 1;

	if (argc != 2) {
		fprintf(stderr,
		    "usage: bureau net-keeper DIR (run by the "
		    "host agent)\n");
		return (2);
	}
	k.dir = argv[1];
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGCHLD);
	/* blocked before any thread, so that only sigwaitinfo takes them */
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (nk_pasta(&k) != 0)
		goto out;
	for (long long dl = hb_now_ms() + NK_NET_WAIT_MS; !nk_routed(k.holder);
	     usleep(20000))
		if (hb_now_ms() > dl) {
			nk_say("error: pasta gave the desktop's namespace no "
			       "route within %d s (see %s/net.log)",
			    NK_NET_WAIT_MS / 1000, k.dir);
			goto out;
		}
	snprintf(ns, sizeof ns, "/proc/%d/ns/net", (int)k.holder);
	if ((k.nsfd = open(ns, O_RDONLY | O_CLOEXEC)) < 0) {
		nk_say("error: %s: %s", ns, strerror(errno));
		goto out;
	}
	snprintf(ns, sizeof ns, "/proc/%d/ns/user", (int)k.holder);
	if (geteuid() != 0 && (k.usfd = open(ns, O_RDONLY | O_CLOEXEC)) < 0) {
		nk_say("error: %s: %s", ns, strerror(errno));
		goto out;
	}
	if (nk_nft(&k) != 0 || nk_passt(&k) != 0)
		goto out;
	close(QEMU_NET_FD); /* passt holds the link now */
	if (nk_enter(&k) != 0) {
		nk_say("error: setns: %s", strerror(errno));
		goto out;
	}
	k.entered = 1;
	if (nk_relay(&k) != 0)
		goto out;
	nk_say("ok");
	close(1);
	open("/dev/null", O_WRONLY);
	rv = nk_loop(&k, &sigs);
out:
	nk_end(&k);
	return (rv);
}
