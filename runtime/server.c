/*
 * runtime/server.c: nng REP workers and the PUB socket.
 */
#include <errno.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/token.h"
#include "runtime/dispatch.h"
#include "runtime/log.h"
#include "runtime/server.h"

/* How long SIGTERM waits for a worker that ignores tool_shutdown(). */
#define BD_STOP_WAIT_S 5

struct bd_worker {
	struct bd_server *srv;
	pthread_t thread;
	int started;
	nng_ctx ctx;
	nng_aio *aio;
};

struct bd_server {
	struct bd_config *cfg;
	nng_socket sock;
	/* 0 once bd_server_stop began: a worker then stops. An operation
	 * that starts on a context after nng_close fails at once (nng 1.11
	 * looks contexts up by id; Debian's 1.5.2 panicked there, which a
	 * lock around every operation used to prevent). */
	atomic_int open;
	int nworkers;
	struct bd_worker *workers;
	atomic_int busy; /* workers inside a request */
};

static struct {
	pthread_mutex_t lock;
	nng_socket sock;
	int open;
	int sealed; /* encrypt events with key */
	unsigned char key[TOKEN_EVENTS_KEY_BYTES];
} bd_events = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int
bd_nng_fail(char **cause, const char *what, const char *url, int rv)
{
	if (asprintf(cause, "%s '%s': %s", what, url, nng_strerror(rv)) < 0)
		*cause = NULL;
	return (-1);
}

int
bd_events_open(const char *url, const char *token, size_t token_len,
    char **cause)
{
	int rv;

	if (url == NULL || *url == '\0')
		return (0);
	if (token != NULL) {
		/* The events carry typed text, shell commands, clipboard
		 * contents and the screen: only holders of the token may
		 * read them, wherever the socket listens. */
		if (sodium_init() < 0) {
			*cause = strdup("cannot initialise libsodium");
			return (-1);
		}
		token_events_key(token, token_len, bd_events.key);
		bd_events.sealed = 1;
	}
	if ((rv = nng_pub0_open(&bd_events.sock)) != 0)
		return (bd_nng_fail(cause, "cannot open events socket for", url,
		    rv));
	if ((rv = nng_listen(bd_events.sock, url, NULL, 0)) != 0) {
		nng_close(bd_events.sock);
		return (
		    bd_nng_fail(cause, "cannot listen for events on", url, rv));
	}
	pthread_mutex_lock(&bd_events.lock);
	bd_events.open = 1;
	pthread_mutex_unlock(&bd_events.lock);
	bd_info("events on %s (%s)", url,
	    bd_events.sealed ? "encrypted with the token's key" :
	                       "plain: no token");
	return (0);
}

void
bd_events_rekey(const char *token, size_t token_len)
{
	pthread_mutex_lock(&bd_events.lock);
	if (bd_events.sealed)
		token_events_key(token, token_len, bd_events.key);
	pthread_mutex_unlock(&bd_events.lock);
}

void
bd_events_close(void)
{
	pthread_mutex_lock(&bd_events.lock);
	if (bd_events.open)
		nng_close(bd_events.sock);
	bd_events.open = 0;
	sodium_memzero(bd_events.key, sizeof bd_events.key);
	bd_events.sealed = 0;
	pthread_mutex_unlock(&bd_events.lock);
}

/* "<topic> " in clear (SUB filters on it), then a random nonce and the
 * XChaCha20-Poly1305 ciphertext of the rest, with the clear prefix as
 * associated data so a message cannot be moved to another topic. */
static int
bd_events_seal(nng_msg *msg, const char *topic, size_t tl, const char *json,
    size_t jl, const void *body, size_t bodylen)
{
	size_t plen = jl + (body != NULL ? 1 + bodylen : 0), off;
	size_t clen = plen + crypto_aead_xchacha20poly1305_ietf_ABYTES;
	unsigned char *plain, *out;
	unsigned long long outlen;

	if ((plain = malloc(plen > 0 ? plen : 1)) == NULL)
		return (-1);
	memcpy(plain, json, jl);
	if (body != NULL) {
		plain[jl] = '\n';
		memcpy(plain + jl + 1, body, bodylen);
	}
	off = tl + 1;
	if (nng_msg_realloc(msg,
	        off + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + clen) !=
	    0) {
		free(plain);
		return (-1);
	}
	out = nng_msg_body(msg);
	memcpy(out, topic, tl);
	out[tl] = ' ';
	randombytes_buf(out + off,
	    crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + off +
	        crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
	    &outlen, plain, plen, out, off, NULL, out + off, bd_events.key);
	/* the copy holds what was typed or shown; free does not clear */
	sodium_memzero(plain, plen);
	free(plain);
	return (0);
}

void
bd_events_publish(const char *topic, const char *json, const void *body,
    size_t bodylen)
{
	size_t tl = strlen(topic), jl = strlen(json);
	nng_msg *msg;
	int rv;

	if (nng_msg_alloc(&msg, 0) != 0)
		return;
	/* Under the lock: the key is wiped when the socket closes. Sealing
	 * a frame takes well under a millisecond. */
	pthread_mutex_lock(&bd_events.lock);
	if (!bd_events.open)
		rv = -1;
	else if (bd_events.sealed)
		rv = bd_events_seal(msg, topic, tl, json, jl, body, bodylen);
	else
		rv = nng_msg_append(msg, topic, tl) != 0 ||
		        nng_msg_append(msg, " ", 1) != 0 ||
		        nng_msg_append(msg, json, jl) != 0 ||
		        (body != NULL &&
		            (nng_msg_append(msg, "\n", 1) != 0 ||
		                nng_msg_append(msg, body, bodylen) != 0)) ?
		    -1 :
		    0;
	/* PUB never blocks: a slow subscriber loses messages, not us. The
	 * send takes the message only when it succeeds. */
	if (rv != 0 || nng_sendmsg(bd_events.sock, msg, NNG_FLAG_NONBLOCK) != 0)
		nng_msg_free(msg);
	pthread_mutex_unlock(&bd_events.lock);
}

/* Start the worker's receive or send unless the server is stopping:
 * then 0. */
static int
bd_worker_submit(struct bd_worker *w, int send)
{
	if (!atomic_load(&w->srv->open))
		return (0);
	if (send)
		nng_ctx_send(w->ctx, w->aio);
	else
		nng_ctx_recv(w->ctx, w->aio);
	return (1);
}

static void *
bd_worker_main(void *arg)
{
	struct bd_worker *w = arg;
	const struct bd_config *cfg = w->srv->cfg;

	for (;;) {
		nng_msg *msg, *out;
		nng_pipe pipe;
		struct bd_reply reply;
		int rv, load;

		/* Waiting for a request costs nothing: no bound. */
		nng_aio_set_timeout(w->aio, NNG_DURATION_INFINITE);
		if (!bd_worker_submit(w, 0))
			break;
		nng_aio_wait(w->aio);
		if ((rv = nng_aio_result(w->aio)) != 0) {
			if (rv == NNG_ECLOSED || !atomic_load(&w->srv->open))
				break;
			bd_warn("receive failed: %s", nng_strerror(rv));
			continue;
		}
		msg = nng_aio_get_msg(w->aio);
		pipe = nng_msg_get_pipe(msg);
		load = atomic_fetch_add(&w->srv->busy, 1) + 1;
		rv = bd_dispatch_reply(cfg, nng_msg_body(msg), nng_msg_len(msg),
		    load, &reply);
		atomic_fetch_sub(&w->srv->busy, 1);
		nng_msg_free(msg);
		if (rv != 0)
			continue;
		/* The text goes straight into the message, the image's base64
		 * written in place (runtime/reply.h). */
		rv = nng_msg_alloc(&out, bd_reply_size(&reply));
		if (rv == 0)
			bd_reply_write(&reply, nng_msg_body(out));
		bd_reply_clear(&reply);
		if (rv != 0)
			continue;
		/* A reply waits only while an earlier reply on the same
		 * connection is still being written, i.e. when the peer has
		 * several requests in flight and does not read. Unbounded,
		 * that wait held the worker for good: a few such peers took
		 * every worker and the daemon answered no one. Bounded, the
		 * worker is back after reply_timeout_ms, and the peer that
		 * stopped reading is disconnected, which also frees the
		 * replies stuck in its connection and its queued requests. */
		nng_aio_set_timeout(w->aio, cfg->reply_timeout_ms);
		nng_aio_set_msg(w->aio, out);
		if (!bd_worker_submit(w, 1)) {
			nng_msg_free(nng_aio_get_msg(w->aio));
			break;
		}
		nng_aio_wait(w->aio);
		if ((rv = nng_aio_result(w->aio)) != 0) {
			/* nng did not take the msg */
			nng_msg_free(out);
			if (rv == NNG_ECLOSED || !atomic_load(&w->srv->open))
				break;
			if (rv == NNG_ETIMEDOUT) {
				bd_warn("a client has not read its replies for "
				        "%d ms: disconnecting it",
				    cfg->reply_timeout_ms);
				nng_pipe_close(pipe); /* gone already: ENOENT */
			}
		}
	}
	return (NULL);
}

int
bd_server_start(struct bd_config *cfg, struct bd_server **out, char **cause)
{
	struct bd_server *srv;
	int rv;

	if ((srv = calloc(1, sizeof *srv)) == NULL)
		return (-1);
	srv->cfg = cfg;
	if ((rv = nng_rep0_open(&srv->sock)) != 0) {
		bd_nng_fail(cause, "cannot open socket for", "rep", rv);
		free(srv);
		return (-1);
	}
	atomic_init(&srv->open, 1);
	/* nng drops a larger message and closes that connection; the
	 * daemon never allocates for it. */
	nng_socket_set_size(srv->sock, NNG_OPT_RECVMAXSZ, cfg->max_request);
	for (int i = 0; i < cfg->nlisten; i++) {
		const char *url = cfg->listen[i];

		if ((rv = nng_listen(srv->sock, url, NULL, 0)) != 0) {
			if (cfg->listen_default &&
			    strncmp(url, "ipc://", 6) == 0) {
				bd_warn("not listening on %s: %s", url,
				    nng_strerror(rv));
				continue;
			}
			bd_nng_fail(cause, "cannot listen on", url, rv);
			goto fail;
		}
		bd_info("listening on %s", url);
	}
	srv->nworkers = cfg->workers;
	if ((srv->workers = calloc((size_t)srv->nworkers,
	         sizeof *srv->workers)) == NULL)
		goto fail;
	for (int i = 0; i < srv->nworkers; i++) {
		struct bd_worker *w = &srv->workers[i];

		w->srv = srv;
		if ((rv = nng_ctx_open(&w->ctx, srv->sock)) != 0 ||
		    (rv = nng_aio_alloc(&w->aio, NULL, NULL)) != 0) {
			bd_nng_fail(cause, "cannot open context on", "rep", rv);
			goto fail;
		}
		if (pthread_create(&w->thread, NULL, bd_worker_main, w) != 0) {
			*cause = strdup("cannot start a worker thread");
			goto fail;
		}
		w->started = 1;
	}
	*out = srv;
	return (0);
fail:
	bd_server_stop(srv);
	return (-1);
}

int
bd_server_stop(struct bd_server *srv)
{
	struct timespec ts;

	if (srv == NULL)
		return (0);
	if (atomic_exchange(&srv->open, 0))
		nng_close(srv->sock);
	/* The caller has called tool_shutdown(): waits and shell commands
	 * return within a few hundred ms. A handler that does not honour it
	 * must still not hold up SIGTERM for minutes: after a few seconds
	 * leave it to exit(), and tell the caller so that no tool is torn
	 * down under it. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += BD_STOP_WAIT_S;
	for (int i = 0; i < srv->nworkers; i++) {
		struct bd_worker *w = &srv->workers[i];

		if (w->started &&
		    pthread_timedjoin_np(w->thread, NULL, &ts) != 0) {
			bd_warn("a worker is still busy after %d s; exiting "
			        "without it",
			    BD_STOP_WAIT_S);
			return (-1); /* its memory goes with the process */
		}
		if (w->aio != NULL)
			nng_aio_free(w->aio);
	}
	free(srv->workers);
	free(srv);
	return (0);
}
