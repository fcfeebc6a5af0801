/*
 * nng_close never hangs: the close stress test of the nng that bureau
 * links (third_party/nng, DESIGN.md "Dependencies").
 *
 * Debian 12's libnng 1.5.2 could wait for good in nng_close when a
 * connection closed with a message in flight (nanomsg/nng#1543, #1636,
 * #1813), and with it every later close of the process. Each cycle here
 * opens a fresh pair of sockets, gets messages moving (large ones, so
 * that a close lands in the middle of one), then closes both sides in a
 * random order while they move:
 *
 *   - REQ/REP: the client's request is in flight (a large one being
 *     sent), or its reply is (a large one being read), the REP side
 *     replying in a thread of its own; half the clients use a context
 *     and an aio, as libbureau and bureaud do, closed with the receive
 *     still pending;
 *   - PUB/SUB: the publisher sends large messages without a pause from
 *     a thread of its own, the subscriber reads some or none;
 *   - a REQ socket closed while its dialer is still connecting, with no
 *     descriptor left behind (nc_dial_close);
 *
 * over tcp and ipc. A watchdog ends the process, naming the cycle and the
 * step, if any step takes longer than BUREAU_NNG_CLOSE_LIMIT_S (30 s:
 * a hang, never a slow machine); run.sh's own limit and stacks are the
 * second line. BUREAU_NNG_CLOSE_CYCLES sets the cycles per case (default
 * 1000: 6000 in all); the sanitized build runs the same.
 */
#include <dirent.h>
#include <errno.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Up to 2 MiB a message: a loopback write of that takes several rounds,
 * so closes land inside one. */
#define NC_BIG (2u << 20)

/* --- the watchdog ------------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	char step[160]; /* what the main thread is doing now */
	struct timespec since;
	int limit_s;
} nc_dog = { .lock = PTHREAD_MUTEX_INITIALIZER };

static double
nc_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec + t.tv_nsec / 1e9);
}

static void
nc_step(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&nc_dog.lock);
	va_start(ap, fmt);
	vsnprintf(nc_dog.step, sizeof nc_dog.step, fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &nc_dog.since);
	pthread_mutex_unlock(&nc_dog.lock);
}

static void *
nc_watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		double age;

		sleep(1);
		pthread_mutex_lock(&nc_dog.lock);
		age = nc_now() -
		    (nc_dog.since.tv_sec + nc_dog.since.tv_nsec / 1e9);
		if (nc_dog.step[0] != '\0' && age > nc_dog.limit_s) {
			fprintf(stderr,
			    "FAIL test_nng_close: stuck for %.0f s in: %s\n",
			    age, nc_dog.step);
			printf("[  FAILED  ] nng_close hung: %s\n",
			    nc_dog.step);
			fflush(NULL);
			abort(); /* run.sh and gdb see the threads' stacks */
		}
		pthread_mutex_unlock(&nc_dog.lock);
	}
	return (NULL);
}

/* --- helpers ------------------------------------------------------------ */

static unsigned
nc_rand(unsigned *seed, unsigned n)
{
	return (n == 0 ? 0 : (unsigned)rand_r(seed) % n);
}

static int
nc_cycles(void)
{
	const char *v = getenv("BUREAU_NNG_CLOSE_CYCLES");
	int n = v != NULL ? atoi(v) : 0;

	return (n > 0 ? n : 1000);
}

/* Listen on a fresh address of the transport; the URL to dial in url. */
static void
nc_listen(nng_socket s, int ipc, int cycle, char *url, size_t len)
{
	nng_listener l;
	int port = 0;

	if (ipc) {
		snprintf(url, len, "ipc:///tmp/bureau-nngclose-%d-%d",
		    (int)getpid(), cycle);
		assert_int_equal(nng_listen(s, url, &l, 0), 0);
		return;
	}
	assert_int_equal(nng_listen(s, "tcp://127.0.0.1:0", &l, 0), 0);
	assert_int_equal(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port),
	    0);
	snprintf(url, len, "tcp://127.0.0.1:%d", port);
}

static void
nc_opts(nng_socket s)
{
	assert_int_equal(nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 0), 0);
	assert_int_equal(nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 10), 0);
	assert_int_equal(nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 50), 0);
}

/* A message of n bytes (contents do not matter, the size does). */
static nng_msg *
nc_msg(size_t n)
{
	nng_msg *m;

	assert_int_equal(nng_msg_alloc(&m, n), 0);
	if (n > 0)
		memset(nng_msg_body(m), 'x', n);
	return (m);
}

/* The other side of a pair: replies (REP) or publishes (PUB) until its
 * socket is closed under it. */
struct nc_peer {
	nng_socket s;
	int pub;
	unsigned seed;
	atomic_long moved; /* messages sent */
};

static void *
nc_peer_run(void *arg)
{
	struct nc_peer *p = arg;
	nng_msg *m;

	for (;;) {
		if (!p->pub) {
			if (nng_recvmsg(p->s, &m, 0) != 0)
				break;
			nng_msg_free(m);
		}
		m = nc_msg(
		    nc_rand(&p->seed, 4) == 0 ? 16 : nc_rand(&p->seed, NC_BIG));
		/* fails only once the socket is closed (PUB drops what no
		 * subscriber takes) */
		if (nng_sendmsg(p->s, m, 0) != 0) {
			nng_msg_free(m);
			break;
		}
		atomic_fetch_add(&p->moved, 1);
		if (p->pub)
			nng_msleep(1);
	}
	return (NULL);
}

/* Close a and b (one of them may be the peer's) in this order, each under
 * the watchdog. */
static void
nc_close2(const char *what, int cycle, nng_socket a, const char *an,
    nng_socket b, const char *bn)
{
	nc_step("%s cycle %d: nng_close(%s) with messages in flight", what,
	    cycle, an);
	nng_close(a);
	nc_step("%s cycle %d: nng_close(%s) after the %s", what, cycle, bn, an);
	nng_close(b);
}

static void
nc_join(const char *what, int cycle, pthread_t t)
{
	nc_step("%s cycle %d: the peer thread to end after its close", what,
	    cycle);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* --- REQ/REP ------------------------------------------------------------ */

static void
nc_reqrep(int ipc)
{
	const char *what = ipc ? "req/rep ipc" : "req/rep tcp";
	int n = nc_cycles(), replied = 0;
	unsigned seed = 0x5eed1u + (unsigned)ipc;

	for (int i = 0; i < n; i++) {
		struct nc_peer peer = { .pub = 0, .seed = seed + (unsigned)i };
		nng_socket req;
		nng_aio *aio = NULL;
		nng_ctx ctx;
		pthread_t t;
		char url[96];
		int use_ctx = nc_rand(&seed, 2), rv;
		nng_msg *m;

		nc_step("%s cycle %d: open and connect", what, i);
		assert_int_equal(nng_rep0_open(&peer.s), 0);
		nc_opts(peer.s);
		nc_listen(peer.s, ipc, i, url, sizeof url);
		assert_int_equal(nng_req0_open(&req), 0);
		nc_opts(req);
		assert_int_equal(nng_socket_set_ms(req, NNG_OPT_REQ_RESENDTIME,
		                     NNG_DURATION_INFINITE),
		    0);
		assert_int_equal(nng_dial(req, url, NULL, 0), 0);
		assert_int_equal(pthread_create(&t, NULL, nc_peer_run, &peer),
		    0);

		/* One to three requests; the last is left in flight. */
		for (int k = nc_rand(&seed, 3); k >= 0; k--) {
			size_t size = nc_rand(&seed, 3) == 0 ?
			    nc_rand(&seed, NC_BIG) :
			    16;

			nc_step("%s cycle %d: request of %zu bytes", what, i,
			    size);
			if (use_ctx) {
				assert_int_equal(nng_ctx_open(&ctx, req), 0);
				assert_int_equal(
				    nng_aio_alloc(&aio, NULL, NULL), 0);
				nng_aio_set_timeout(aio, 10000);
				nng_aio_set_msg(aio, nc_msg(size));
				nng_ctx_send(ctx, aio);
				nng_aio_wait(aio);
				assert_int_equal(nng_aio_result(aio), 0);
				nng_ctx_recv(ctx, aio);
				if (k > 0) {
					nng_aio_wait(aio);
					if (nng_aio_result(aio) == 0) {
						nng_msg_free(
						    nng_aio_get_msg(aio));
						replied++;
					}
					nng_aio_free(aio);
					nng_ctx_close(ctx);
					aio = NULL;
				}
			} else {
				m = nc_msg(size);
				if (k == 0) {
					/* the last one: send without
					 * waiting for the reply */
					if (nng_sendmsg(req, m, 0) != 0)
						nng_msg_free(m);
				} else {
					assert_int_equal(nng_sendmsg(req, m, 0),
					    0);
					if (nng_recvmsg(req, &m, 0) == 0) {
						nng_msg_free(m);
						replied++;
					}
				}
			}
		}
		/* A moment for the reply to be on its way, sometimes. */
		if (nc_rand(&seed, 2))
			nng_msleep(nc_rand(&seed, 3));
		if (nc_rand(&seed, 2))
			nc_close2(what, i, req, "req", peer.s, "rep");
		else
			nc_close2(what, i, peer.s, "rep", req, "req");
		if (aio != NULL) {
			nc_step("%s cycle %d: the pending aio after the close",
			    what, i);
			nng_aio_wait(aio);
			rv = nng_aio_result(aio);
			if (rv == 0)
				nng_msg_free(nng_aio_get_msg(aio));
			nng_aio_free(aio);
		}
		nc_join(what, i, t);
	}
	nc_step("");
	printf("# %s: %d cycles, %d replies read before a close\n", what, n,
	    replied);
	assert_true(replied > 0); /* the pairs did talk */
}

/* --- PUB/SUB ------------------------------------------------------------ */

static void
nc_pubsub(int ipc)
{
	const char *what = ipc ? "pub/sub ipc" : "pub/sub tcp";
	int n = nc_cycles();
	long got = 0;
	unsigned seed = 0x5eed2u + (unsigned)ipc;

	for (int i = 0; i < n; i++) {
		struct nc_peer peer = { .pub = 1, .seed = seed + (unsigned)i };
		nng_socket sub;
		pthread_t t;
		char url[96];
		nng_msg *m;

		nc_step("%s cycle %d: open and connect", what, i);
		assert_int_equal(nng_pub0_open(&peer.s), 0);
		nc_opts(peer.s);
		nc_listen(peer.s, ipc, i, url, sizeof url);
		assert_int_equal(nng_sub0_open(&sub), 0);
		nc_opts(sub);
		assert_int_equal(
		    nng_socket_set(sub, NNG_OPT_SUB_SUBSCRIBE, "", 0), 0);
		assert_int_equal(
		    nng_socket_set_ms(sub, NNG_OPT_RECVTIMEO, 2000), 0);
		assert_int_equal(nng_dial(sub, url, NULL, 0), 0);
		assert_int_equal(pthread_create(&t, NULL, nc_peer_run, &peer),
		    0);
		for (int k = nc_rand(&seed, 3); k > 0; k--) {
			nc_step("%s cycle %d: receive", what, i);
			if (nng_recvmsg(sub, &m, 0) == 0) {
				nng_msg_free(m);
				got++;
			}
		}
		if (nc_rand(&seed, 2))
			nng_msleep(nc_rand(&seed, 3));
		if (nc_rand(&seed, 2))
			nc_close2(what, i, sub, "sub", peer.s, "pub");
		else
			nc_close2(what, i, peer.s, "pub", sub, "sub");
		nc_join(what, i, t);
	}
	nc_step("");
	printf("# %s: %d cycles, %ld messages received before a close\n", what,
	    n, got);
	assert_true(got > 0);
}

/* --- a close while the dialer is connecting ---------------------------- */

static int
nc_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return (n - 1); /* the directory's own */
}

/*
 * A socket closed while its dialer's new connection exchanges the SP
 * headers leaves no descriptor behind. nng 1.11 kept it for good when the
 * close landed after the header's send had completed and before its
 * callback asked for the peer's: the receive began on the aio the close
 * had closed, failed without calling back, and nothing reaped the pipe
 * (third_party/nng/BUREAU.md, fix 4). bureau's clients close a socket
 * right after a failed call, when the dialer has often just redialled
 * (CI's client_bt_req_close_cycles saw one such descriptor in about one
 * run in nine). With the old code this case left dozens of descriptors
 * in 1000 cycles over tcp (39 to 68 in three runs) and 6 to 12 over ipc.
 */
static void
nc_dial_close(int ipc)
{
	const char *what = ipc ? "dial/close ipc" : "dial/close tcp";
	int n = nc_cycles(), before, after, waited = 0;
	unsigned seed = 0x5eed3u + (unsigned)ipc;
	nng_socket rep, req;
	char url[96];

	nc_step("%s: listen", what);
	assert_int_equal(nng_rep0_open(&rep), 0);
	nc_listen(rep, ipc, -1, url, sizeof url);
	/* one whole cycle first: nng makes its poller's descriptors once */
	assert_int_equal(nng_req0_open(&req), 0);
	assert_int_equal(nng_dial(req, url, NULL, 0), 0);
	nng_close(req);
	nng_msleep(100);
	before = nc_fds();
	for (int i = 0; i < n; i++) {
		nc_step("%s cycle %d: dial, then close", what, i);
		assert_int_equal(nng_req0_open(&req), 0);
		assert_int_equal(nng_dial(req, url, NULL, NNG_FLAG_NONBLOCK),
		    0);
		/* a connection over loopback is made within microseconds:
		 * half the closes land in the first 60, half in 200 */
		usleep(nc_rand(&seed, nc_rand(&seed, 2) ? 60 : 200));
		nng_close(req);
	}
	/* the listener's side of the last connections closes on nng's
	 * threads just after; a leak is a descriptor that stays */
	nc_step("%s: descriptors back to %d", what, before);
	while ((after = nc_fds()) > before && waited < 10000) {
		nng_msleep(50);
		waited += 50;
	}
	nc_step("");
	nng_close(rep);
	printf("# %s: %d cycles, descriptors %d -> %d\n", what, n, before,
	    after);
	assert_true(after <= before);
}

/*
 * Under ASan this test judges hangs, memory errors and undefined
 * behaviour, not leaks: nng 1.11 loses some of what was in flight when a
 * socket closes under it (LeakSanitizer, 300 cycles a case: 46 to 70
 * blocks, all messages this test handed to nng, still there after
 * nng_fini). That is nng's, reported in third_party/nng/BUREAU.md;
 * bureau's own leaks are judged by the other sanitized tests and the
 * soak. Descriptors are counted here (nc_dial_close).
 */
const char *__asan_default_options(void) __attribute__((used));
const char *
__asan_default_options(void)
{
	return ("detect_leaks=0");
}

static void
test_reqrep_tcp(void **state)
{
	(void)state;
	nc_reqrep(0);
}

static void
test_reqrep_ipc(void **state)
{
	(void)state;
	nc_reqrep(1);
}

static void
test_pubsub_tcp(void **state)
{
	(void)state;
	nc_pubsub(0);
}

static void
test_pubsub_ipc(void **state)
{
	(void)state;
	nc_pubsub(1);
}

static void
test_dial_close_tcp(void **state)
{
	(void)state;
	nc_dial_close(0);
}

static void
test_dial_close_ipc(void **state)
{
	(void)state;
	nc_dial_close(1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reqrep_tcp),
		cmocka_unit_test(test_reqrep_ipc),
		cmocka_unit_test(test_pubsub_tcp),
		cmocka_unit_test(test_pubsub_ipc),
		cmocka_unit_test(test_dial_close_tcp),
		cmocka_unit_test(test_dial_close_ipc),
	};
	const char *v = getenv("BUREAU_NNG_CLOSE_LIMIT_S");
	pthread_t dog;
	int rv;

	nc_dog.limit_s = v != NULL && atoi(v) > 0 ? atoi(v) : 30;
	if (pthread_create(&dog, NULL, nc_watchdog, NULL) != 0)
		return (1);
	pthread_detach(dog);
	rv = cmocka_run_group_tests(tests, NULL, NULL);
	nng_fini();
	return (rv);
}
