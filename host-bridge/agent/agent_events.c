/*
 * host-bridge/agent/agent_events.c: the daemon's events, relayed to the agent's
 * own subscribers under the agent token's key.
 */
#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/agent/agent_int.h"
#include "host-bridge/util/util.h"

/* What one event may weigh (a frame is a JPEG of the screen). */
#define AG_EVENT_MAX (32u << 20)

/*
 * The daemon's events, opened with the guest token's key and sealed
 * again with the agent token's on the desktop's events port (the
 * endpoint's port + 1): subscribers need the agent token, never the
 * guest's, and what does not open (forged, altered, or sealed with
 * another key) is dropped here.
 */
static void *
ag_relay_main(void *arg)
{
	struct agent *ag = arg;
	const size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	const size_t tb = crypto_aead_xchacha20poly1305_ietf_ABYTES;

	for (;;) {
		nng_msg *m;
		unsigned char *body, *sp, *plain, *out;
		unsigned long long plen, olen;
		size_t len, ad;
		int rv;

		if ((rv = nng_recvmsg(ag->sub, &m, 0)) != 0) {
			if (rv == NNG_ECLOSED)
				return (NULL);
			continue;
		}
		body = nng_msg_body(m);
		len = nng_msg_len(m);
		sp = memchr(body, ' ', len < 16 ? len : 16);
		if (sp == NULL ||
		    (ad = (size_t)(sp - body) + 1) + nb + tb > len) {
			nng_msg_free(m);
			continue;
		}
		plain = malloc(len);
		out = malloc(len);
		if (plain == NULL || out == NULL ||
		    crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen,
		        NULL, body + ad + nb, len - ad - nb, body, ad,
		        body + ad, ag->key_guest) != 0) {
			free(plain);
			free(out);
			nng_msg_free(m);
			continue;
		}
		memcpy(out, body, ad);
		randombytes_buf(out + ad, nb);
		crypto_aead_xchacha20poly1305_ietf_encrypt(out + ad + nb, &olen,
		    plain, plen, body, ad, NULL, out + ad, ag->key_agent);
		sodium_memzero(plain, plen);
		free(plain);
		nng_msg_clear(m);
		if (nng_msg_append(m, out, ad + nb + olen) != 0 ||
		    nng_sendmsg(ag->pub, m, NNG_FLAG_NONBLOCK) != 0)
			nng_msg_free(m);
		free(out);
	}
}

void
ag_relay_start(struct agent *ag)
{
	int rv = NNG_ENOMEM;

	if (ag->guest_events == NULL)
		return;
	if ((ag->pub_url = hb_fmt("tcp://127.0.0.1:%d", ag->d->port + 1)) ==
	        NULL ||
	    (rv = nng_sub0_open(&ag->sub)) != 0 ||
	    (rv = nng_socket_set(ag->sub, NNG_OPT_SUB_SUBSCRIBE, "", 0)) != 0 ||
	    (rv = nng_socket_set_size(ag->sub, NNG_OPT_RECVMAXSZ,
	         AG_EVENT_MAX)) != 0 ||
	    (rv = nng_dial(ag->sub, ag->guest_events, NULL,
	         NNG_FLAG_NONBLOCK)) != 0 ||
	    (rv = nng_pub0_open(&ag->pub)) != 0 ||
	    (rv = nng_listen(ag->pub, ag->pub_url, NULL, 0)) != 0 ||
	    (rv = pthread_create(&ag->relay, NULL, ag_relay_main, ag)) != 0) {
		fprintf(stderr,
		    "bureau agent: no events relay from %s to %s: %s\n",
		    ag->guest_events, ag->pub_url ? ag->pub_url : "?",
		    rv > 0 ? strerror(rv) : nng_strerror(rv));
		return;
	}
	fprintf(stderr, "bureau agent: events of %s relayed on %s\n",
	    ag->guest_events, ag->pub_url);
}

char *
ag_events_of(const char *url)
{
	const char *colon = strrchr(url, ':');
	long port;
	char *end;

	if (strncmp(url, "tcp://", 6) != 0 || colon == NULL)
		return (NULL);
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65534)
		return (NULL);
	return (hb_fmt("%.*s:%ld", (int)(colon - url), url, port + 1));
}
