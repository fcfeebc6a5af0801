/*
 * host-bridge/mc/mc_live.c: the live frames of each desktop (mc_rfb.c
 * serves them to noVNC).
 *
 * Frames: an attached desktop's bureaud publishes a JPEG on its events
 * socket whenever its screen changed (at most every 500 ms by default,
 * nothing while it is idle), sealed with a key of its token; one thread
 * per desktop subscribes with the guest token, which the operator's side
 * holds, and keeps the latest frame decoded. The first frame (an idle
 * screen publishes none) comes from the host agent's "screenshot" op.
 */
#include <jansson.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <png.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "common/token.h"
#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

#define EV_NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define EV_TAG   crypto_aead_xchacha20poly1305_ietf_ABYTES

static pthread_mutex_t lives_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live *lives;

/* ---- frames --------------------------------------------------------- */

/* Replace lv's frame; takes px and img. */
static void
live_set(struct live *lv, unsigned char *px, int w, int h, void *img,
    size_t len, const char *mime)
{
	pthread_mutex_lock(&lv->lock);
	free(lv->px);
	free(lv->img);
	lv->px = px;
	lv->w = w;
	lv->h = h;
	lv->img = img;
	lv->imglen = len;
	lv->mime = mime;
	lv->seq++;
	pthread_mutex_unlock(&lv->lock);
}

static int
live_jpeg(struct live *lv, const unsigned char *jpg, size_t len)
{
	tjhandle tj = tjInitDecompress();
	int w, h, sub, cs, rv = -1;
	unsigned char *px = NULL;
	void *copy = NULL;

	if (tj == NULL)
		return (-1);
	if (tjDecompressHeader3(tj, jpg, (unsigned long)len, &w, &h, &sub,
	        &cs) != 0 ||
	    w <= 0 || h <= 0 || w > 8192 || h > 8192 ||
	    (px = malloc((size_t)w * (size_t)h * 4)) == NULL ||
	    (copy = malloc(len)) == NULL ||
	    tjDecompress2(tj, jpg, (unsigned long)len, px, w, 0, h, TJPF_RGBX,
	        0) != 0)
		goto out;
	memcpy(copy, jpg, len);
	live_set(lv, px, w, h, copy, len, "image/jpeg");
	px = NULL;
	copy = NULL;
	rv = 0;
out:
	free(px);
	free(copy);
	tjDestroy(tj);
	return (rv);
}

static int
live_png(struct live *lv, unsigned char *png, size_t len)
{
	png_image im;
	unsigned char *px = NULL;

	memset(&im, 0, sizeof im);
	im.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&im, png, len))
		return (-1);
	im.format = PNG_FORMAT_RGBA;
	if (im.width > 8192 || im.height > 8192 ||
	    (px = malloc(PNG_IMAGE_SIZE(im))) == NULL ||
	    !png_image_finish_read(&im, NULL, px, 0, NULL)) {
		png_image_free(&im);
		free(px);
		return (-1);
	}
	live_set(lv, px, (int)im.width, (int)im.height, png, len, "image/png");
	return (0);
}

/* The screen now, through the host agent: the first frame. */
static int
live_screenshot(struct live *lv, const struct desktop *d)
{
	json_t *r = NULL;
	const char *code, *b64;
	char *cause = NULL;
	unsigned char *png = NULL;
	size_t len, max;
	int rv = -1;

	if (mc_op(d, json_pack("{s:s}", "op", "screenshot"), &r, &code,
	        &cause) != 0)
		goto out;
	b64 = json_string_value(
	    json_object_get(json_object_get(r, "image"), "data"));
	max = b64 ? strlen(b64) / 4 * 3 + 3 : 0;
	if (b64 == NULL || (png = malloc(max)) == NULL ||
	    sodium_base642bin(png, max, b64, strlen(b64), NULL, &len, NULL,
	        sodium_base64_VARIANT_ORIGINAL) != 0)
		goto out;
	if (live_png(lv, png, len) == 0) {
		png = NULL;
		rv = 0;
	}
out:
	free(png);
	free(cause);
	json_decref(r);
	return (rv);
}

/* The events URL of d: its daemon's port + 1 (DESIGN.md), malloc'd. */
static char *
live_events_url(const struct desktop *d)
{
	const char *u = d->url, *colon;
	long port;

	/* A QEMU desktop's host agent relays its daemon's events at the
	 * endpoint's port + 1 (store.h). */
	if (u == NULL && !d->attached && d->port > 0)
		return (hb_fmt("tcp://127.0.0.1:%d", d->port + 1));
	if (u == NULL || strncmp(u, "tcp://", 6) != 0 ||
	    (colon = strrchr(u, ':')) == NULL || colon < u + 6)
		return (NULL);
	port = strtol(colon + 1, NULL, 10);
	if (port <= 0 || port >= 65535)
		return (NULL);
	return (hb_fmt("%.*s:%ld", (int)(colon - u), u, port + 1));
}

/* Where name's frames come from: its desktop, events URL and key. 0, or
 * -1 while the desktop or its token is not there (yet). */
static int
live_source(const char *name, struct desktop **d, char **url,
    unsigned char key[TOKEN_EVENTS_KEY_BYTES])
{
	char *cause = NULL, *tok = NULL, *p;

	*d = NULL;
	*url = NULL;
	if (desktop_load(name, d, &cause) != 0) {
		free(cause);
		return (-1);
	}
	/* An attached desktop's frames come from its daemon, sealed with
	 * the daemon's own token (guest-token); a QEMU desktop's from its
	 * host agent's relay at the endpoint's port + 1, sealed with the
	 * agent token (the daemon's own ports are not for the host). */
	if ((*url = live_events_url(*d)) != NULL &&
	    (p = desktop_path(*d, (*d)->attached ? "guest-token" : "token")) !=
	        NULL) {
		tok = hb_read_file(p);
		free(p);
	}
	if (tok == NULL) {
		free(*url);
		*url = NULL;
		desktop_free(*d);
		*d = NULL;
		return (-1);
	}
	tok[strcspn(tok, " \t\r\n")] = '\0';
	token_events_key(tok, strlen(tok), key);
	sodium_memzero(tok, strlen(tok));
	free(tok);
	return (0);
}

/* Is name's source still url and key (a desktop removed and attached
 * again under its name has another)? */
static int
live_same(const char *name, const char *url,
    const unsigned char key[TOKEN_EVENTS_KEY_BYTES])
{
	struct desktop *d;
	unsigned char k[TOKEN_EVENTS_KEY_BYTES];
	char *u;
	int same;

	if (live_source(name, &d, &u, k) != 0)
		return (1); /* gone for now: keep what there is */
	same = strcmp(u, url) == 0 && sodium_memcmp(k, key, sizeof k) == 0;
	free(u);
	desktop_free(d);
	return (same);
}

/*
 * The live view's one source: a desktop removed and attached again under
 * its name is a new source, and the old one's dialer is closed at once,
 * frames in flight or not (the nng built from third_party/nng closes
 * without waiting for them; Debian's libnng 1.5.2 hung for good there,
 * nanomsg/nng#1636, and the old dialers were kept until idle).
 */
static int
live_dial(nng_socket s, nng_dialer *cur, char **cur_url, const char *url)
{
	nng_dialer d;
	char *u;
	int rv;

	if (*cur_url != NULL && strcmp(*cur_url, url) == 0)
		return (0);
	if ((u = strdup(url)) == NULL)
		return (NNG_ENOMEM);
	if (*cur_url != NULL) {
		nng_dialer_close(*cur);
		free(*cur_url);
		*cur_url = NULL;
	}
	if ((rv = nng_dial(s, url, &d, NNG_FLAG_NONBLOCK)) != 0) {
		free(u);
		return (rv);
	}
	*cur = d;
	*cur_url = u;
	return (0);
}

static void *
live_main(void *arg)
{
	struct live *lv = arg;
	nng_dialer dialer = NNG_DIALER_INITIALIZER;
	char *dialed = NULL; /* the url dialer dials, NULL: none */
	unsigned char key[TOKEN_EVENTS_KEY_BYTES];
	struct desktop *d = NULL;
	char *url = NULL;
	nng_socket s;
	int rv, shot;
	long long checked;

	/* Subscribed before the first screenshot: a change in between is
	 * not lost. */
	if ((rv = nng_sub0_open(&s)) != 0 ||
	    (rv = nng_socket_set(s, NNG_OPT_SUB_SUBSCRIBE, "frame ", 6)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 2000)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 5000)) != 0 ||
	    (rv = nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 64 << 20)) != 0) {
		fprintf(stderr,
		    "bureau mission-control: no live view of '%s': %s\n",
		    lv->name, nng_strerror(rv));
		return (NULL);
	}
again:
	while (live_source(lv->name, &d, &url, key) != 0)
		sleep(2);
	if ((rv = live_dial(s, &dialer, &dialed, url)) != 0)
		fprintf(stderr,
		    "bureau mission-control: no live view of '%s' from %s: "
		    "%s\n",
		    lv->name, url, nng_strerror(rv));
	shot = 1;
	checked = hb_now_ms();
	for (;;) {
		char *buf = NULL;
		size_t len = 0;
		unsigned char *plain;
		unsigned long long plen;

		if (shot)
			shot = live_screenshot(lv, d) != 0;
		if (hb_now_ms() - checked > 5000) {
			checked = hb_now_ms();
			if (!live_same(lv->name, url, key)) {
				free(url);
				desktop_free(d);
				goto again;
			}
		}
		if (nng_recv(s, &buf, &len, NNG_FLAG_ALLOC) != 0)
			continue;
		if (len < 6 + EV_NONCE + EV_TAG ||
		    (plain = malloc(len)) == NULL) {
			nng_free(buf, len);
			continue;
		}
		/* A frame that does not open is not the daemon's (or is a
		 * replaced source's): dropped. */
		if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen,
		        NULL, (unsigned char *)buf + 6 + EV_NONCE,
		        len - 6 - EV_NONCE, (unsigned char *)buf, 6,
		        (unsigned char *)buf + 6, key) == 0) {
			unsigned char *nl = memchr(plain, '\n', plen);
			if (nl != NULL)
				live_jpeg(lv, nl + 1,
				    plen - (size_t)(nl + 1 - plain));
		}
		free(plain);
		nng_free(buf, len);
	}
	return (NULL);
}

/* name's live view, started when new. */
struct live *
mc_live_get(const char *name)
{
	struct live *lv;
	pthread_t t;

	if (strlen(name) >= sizeof lv->name)
		return (NULL);
	pthread_mutex_lock(&lives_lock);
	for (lv = lives; lv != NULL; lv = lv->next)
		if (strcmp(lv->name, name) == 0)
			break;
	if (lv == NULL && (lv = calloc(1, sizeof *lv)) != NULL) {
		strcpy(lv->name, name);
		lv->seq = -1;
		pthread_mutex_init(&lv->lock, NULL);
		if (pthread_create(&t, NULL, live_main, lv) != 0) {
			free(lv);
			lv = NULL;
		} else {
			pthread_detach(t);
			lv->next = lives;
			lives = lv;
		}
	}
	pthread_mutex_unlock(&lives_lock);
	return (lv);
}

long
mc_live_seq(const char *name)
{
	struct live *lv = mc_live_get(name);
	long s;

	if (lv == NULL)
		return (-1);
	pthread_mutex_lock(&lv->lock);
	s = lv->seq;
	pthread_mutex_unlock(&lv->lock);
	return (s);
}

int
mc_live_image(const char *name, void **img, size_t *len, const char **mime,
    long *seq)
{
	struct live *lv = mc_live_get(name);
	int rv = -1;

	if (lv == NULL)
		return (-1);
	pthread_mutex_lock(&lv->lock);
	if (lv->img != NULL && (*img = malloc(lv->imglen)) != NULL) {
		memcpy(*img, lv->img, lv->imglen);
		*len = lv->imglen;
		*mime = lv->mime;
		*seq = lv->seq;
		rv = 0;
	}
	pthread_mutex_unlock(&lv->lock);
	return (rv);
}

/* The unix socket of d's QEMU VNC server (malloc'd), NULL when d is
 * attached or its VM does not run. */
char *
mc_live_vnc_sock(const struct desktop *d)
{
	char *p;
	struct stat st;

	if (d->attached || (p = desktop_path(d, "vnc.sock")) == NULL)
		return (NULL);
	if (stat(p, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		free(p);
		return (NULL);
	}
	return (p);
}

int
mc_live_known(const char *name)
{
	struct desktop *d = NULL;
	char *cause = NULL, *vs;
	int ok;

	if (store_valid_name(name, &cause) != 0 ||
	    desktop_load(name, &d, &cause) != 0) {
		free(cause);
		return (0);
	}
	vs = mc_live_vnc_sock(d);
	ok = (d->attached && store_agent_pid(d) != 0) || vs != NULL;
	free(vs);
	desktop_free(d);
	return (ok);
}
