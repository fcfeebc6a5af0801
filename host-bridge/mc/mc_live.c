/*
 * host-bridge/mc/mc_live.c: the live view of each desktop, and the RFB
 * (VNC) server that gives it to noVNC over the WebSocket /vnc/NAME.
 *
 * Frames: an attached desktop's bureaud publishes a JPEG on its events
 * socket whenever its screen changed (at most every 500 ms by default,
 * nothing while it is idle), sealed with a key of its token; one thread
 * per desktop subscribes with the guest token, which the operator's side
 * holds, and keeps the latest frame decoded. The first frame (an idle
 * screen publishes none) comes from the host agent's "screenshot" op.
 *
 * The RFB server is written here, not taken from libvncserver: it serves
 * those frames, not a framebuffer of its own, it must drop the viewer's
 * input until the operator takes over and then hand it to the host agent
 * as computer actions, and all it needs is the protocol's handshake with
 * security None (the WebSocket is already authenticated), raw rectangles
 * and the DesktopSize pseudo-encoding (RFC 6143).
 */
#include <civetweb.h>
#include <jansson.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <png.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

#define EV_CONTEXT "bureau-events-v1"
#define EV_NONCE   crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define EV_TAG     crypto_aead_xchacha20poly1305_ietf_ABYTES
#define TILE       64
#define IN_MAX     (1 << 20)

struct live {
	char name[72];
	pthread_mutex_t lock; /* everything below */
	long seq;             /* -1: no frame yet */
	int w, h;
	unsigned char *px; /* RGBX */
	void *img;         /* the frame as received (JPEG or PNG) */
	size_t imglen;
	const char *mime;
	struct live *next;
};

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

	/* A QEMU desktop's daemon events are forwarded to the host at its
	 * port + 1 (store.h). */
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
    unsigned char key[32])
{
	char *cause = NULL, *tok = NULL, *p;

	*d = NULL;
	*url = NULL;
	if (desktop_load(name, d, &cause) != 0) {
		free(cause);
		return (-1);
	}
	if ((*url = live_events_url(*d)) != NULL &&
	    (p = desktop_path(*d, "guest-token")) != NULL) {
		tok = hb_read_file(p);
		free(p);
		/* A QEMU desktop without a host agent: its token is the
		 * daemon's own. */
		if (tok == NULL && !(*d)->attached &&
		    (p = desktop_path(*d, "token")) != NULL) {
			tok = hb_read_file(p);
			free(p);
		}
	}
	if (tok == NULL) {
		free(*url);
		*url = NULL;
		desktop_free(*d);
		*d = NULL;
		return (-1);
	}
	tok[strcspn(tok, " \t\r\n")] = '\0';
	crypto_generichash(key, 32, (unsigned char *)tok, strlen(tok),
	    (const unsigned char *)EV_CONTEXT, strlen(EV_CONTEXT));
	sodium_memzero(tok, strlen(tok));
	free(tok);
	return (0);
}

/* Is name's source still url and key (a desktop removed and attached
 * again under its name has another)? */
static int
live_same(const char *name, const char *url, const unsigned char key[32])
{
	struct desktop *d;
	unsigned char k[32];
	char *u;
	int same;

	if (live_source(name, &d, &u, k) != 0)
		return (1); /* gone for now: keep what there is */
	same = strcmp(u, url) == 0 && sodium_memcmp(k, key, 32) == 0;
	free(u);
	desktop_free(d);
	return (same);
}

static void *
live_main(void *arg)
{
	struct live *lv = arg;
	unsigned char key[32];
	struct desktop *d = NULL;
	char *url = NULL;
	nng_socket s;
	int rv, shot;
	long long checked;

again:
	while (live_source(lv->name, &d, &url, key) != 0)
		sleep(2);
	/* Subscribed before the first screenshot: a change in between is
	 * not lost. */
	if ((rv = nng_sub0_open(&s)) != 0 ||
	    (rv = nng_socket_set(s, NNG_OPT_SUB_SUBSCRIBE, "frame ", 6)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 2000)) != 0 ||
	    (rv = nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 64 << 20)) != 0 ||
	    (rv = nng_dial(s, url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
		fprintf(stderr,
		    "bureau mission-control: no live view of '%s' from %s: "
		    "%s\n",
		    lv->name, url, nng_strerror(rv));
		return (NULL);
	}
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
				nng_close(s);
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
		/* A frame that does not open is not the daemon's: dropped. */
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
static struct live *
live_get(const char *name)
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
	struct live *lv = live_get(name);
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
	struct live *lv = live_get(name);
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
static char *
live_vnc_sock(const struct desktop *d)
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
	vs = live_vnc_sock(d);
	ok = (d->attached && store_agent_pid(d) != 0) || vs != NULL;
	free(vs);
	desktop_free(d);
	return (ok);
}

/* ---- the RFB server ---------------------------------------------------- */

struct rfb {
	struct mg_connection *c;
	struct live *lv;
	struct desktop *d;
	pthread_t thread;
	pthread_mutex_t lock; /* in, closed */
	pthread_cond_t cond;
	unsigned char *in;
	size_t inlen;
	int closed;
	/* the session thread's own */
	int phase, minor;
	int rs, gs, bs, be; /* the viewer's 32-bit pixel format */
	int resize_ok, want, incremental;
	long sent;
	unsigned char *shadow; /* what the viewer has */
	int sw, sh;
	int buttons, mods, tk;
	long long tk_at;
	int px, py;
	/* a QEMU desktop: its VNC server's socket, bridged */
	int ufd;
	unsigned char *pin; /* the viewer's bytes not yet whole messages */
	size_t pinlen;
};

static int
rfb_write(struct rfb *r, const void *buf, size_t len)
{
	return (
	    mg_websocket_write(r->c, MG_WEBSOCKET_OPCODE_BINARY, buf, len) > 0 ?
	        0 :
	        -1);
}

static void
put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void
put32(unsigned char *p, unsigned long v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Is the operator in control (asked of the agent at most twice a
 * second)? */
static int
rfb_taken_over(struct rfb *r)
{
	json_t *st = NULL;
	const char *code;
	char *cause = NULL;

	if (hb_now_ms() - r->tk_at < 500)
		return (r->tk);
	r->tk_at = hb_now_ms();
	r->tk = mc_op(r->d, json_pack("{s:s}", "op", "state"), &st, &code,
	            &cause) == 0 &&
	    json_is_true(json_object_get(st, "takeover"));
	json_decref(st);
	free(cause);
	return (r->tk);
}

/* One computer action of the operator, through the host agent. */
static void
rfb_input(struct rfb *r, json_t *action)
{
	json_t *rep = NULL;
	const char *code;
	char *cause = NULL;

	if (action == NULL)
		return;
	json_object_set_new(action, "tool", json_string("computer"));
	if (mc_op(r->d,
	        json_pack("{s:s, s:o}", "op", "input", "request", action), &rep,
	        &code, &cause) != 0)
		fprintf(stderr, "bureau mission-control: input to '%s': %s\n",
		    r->d->name, cause);
	json_decref(rep);
	free(cause);
}

static void
rfb_pointer(struct rfb *r, int mask, int x, int y)
{
	int down = mask & ~r->buttons, up = r->buttons & ~mask;

	if (x != r->px || y != r->py || down || up)
		rfb_input(r,
		    json_pack("{s:s, s:[i,i]}", "action", "mouse_move",
		        "coordinate", x, y));
	r->px = x;
	r->py = y;
	if (down & 1)
		rfb_input(r, json_pack("{s:s}", "action", "left_mouse_down"));
	if (up & 1)
		rfb_input(r, json_pack("{s:s}", "action", "left_mouse_up"));
	if (down & 2)
		rfb_input(r,
		    json_pack("{s:s, s:[i,i]}", "action", "middle_click",
		        "coordinate", x, y));
	if (down & 4)
		rfb_input(r,
		    json_pack("{s:s, s:[i,i]}", "action", "right_click",
		        "coordinate", x, y));
	if (down & (8 | 16))
		rfb_input(r,
		    json_pack("{s:s, s:[i,i], s:s, s:i}", "action", "scroll",
		        "coordinate", x, y, "scroll_direction",
		        down & 8 ? "up" : "down", "scroll_amount", 1));
	r->buttons = mask;
}

/* X keysym names xdotool knows, for the keys that type no text. */
static const char *
rfb_keyname(unsigned long k)
{
	static const struct {
		unsigned long sym;
		const char *name;
	} t[] = { { 0xff08, "BackSpace" }, { 0xff09, "Tab" },
		{ 0xff0d, "Return" }, { 0xff1b, "Escape" },
		{ 0xffff, "Delete" }, { 0xff50, "Home" }, { 0xff51, "Left" },
		{ 0xff52, "Up" }, { 0xff53, "Right" }, { 0xff54, "Down" },
		{ 0xff55, "Page_Up" }, { 0xff56, "Page_Down" },
		{ 0xff57, "End" }, { 0xff63, "Insert" }, { 0xff8d, "KP_Enter" },
		{ 0, NULL } };
	static char fk[8];

	for (int i = 0; t[i].name != NULL; i++)
		if (t[i].sym == k)
			return (t[i].name);
	if (k >= 0xffbe && k <= 0xffc9) {
		snprintf(fk, sizeof fk, "F%lu", k - 0xffbe + 1);
		return (fk);
	}
	return (NULL);
}

enum { M_SHIFT = 1, M_CTRL = 2, M_ALT = 4, M_SUPER = 8 };

static void
rfb_key(struct rfb *r, int down, unsigned long k)
{
	int m = k == 0xffe1 || k == 0xffe2                           ? M_SHIFT :
	    k == 0xffe3 || k == 0xffe4                               ? M_CTRL :
	    k == 0xffe9 || k == 0xffea || k == 0xffe7 || k == 0xffe8 ? M_ALT :
	    k == 0xffeb || k == 0xffec                               ? M_SUPER :
	                                                               0;
	const char *name;
	char text[8] = { 0 }, combo[64];
	unsigned long u = 0;

	if (m != 0) {
		r->mods = down ? r->mods | m : r->mods & ~m;
		return;
	}
	if (!down)
		return;
	if ((k >= 0x20 && k <= 0x7e) || (k >= 0xa0 && k <= 0xff))
		u = k;
	else if (k >= 0x01000100 && k <= 0x0110ffff)
		u = k - 0x01000000;
	if (u != 0 && (r->mods & (M_CTRL | M_ALT | M_SUPER)) == 0) {
		/* UTF-8 of u: the text the viewer typed. */
		if (u < 0x80)
			text[0] = (char)u;
		else if (u < 0x800) {
			text[0] = (char)(0xc0 | (u >> 6));
			text[1] = (char)(0x80 | (u & 0x3f));
		} else if (u < 0x10000) {
			text[0] = (char)(0xe0 | (u >> 12));
			text[1] = (char)(0x80 | ((u >> 6) & 0x3f));
			text[2] = (char)(0x80 | (u & 0x3f));
		} else {
			text[0] = (char)(0xf0 | (u >> 18));
			text[1] = (char)(0x80 | ((u >> 12) & 0x3f));
			text[2] = (char)(0x80 | ((u >> 6) & 0x3f));
			text[3] = (char)(0x80 | (u & 0x3f));
		}
		rfb_input(r,
		    json_pack("{s:s, s:s}", "action", "type", "text", text));
		return;
	}
	if (u == 0x20)
		name = "space";
	else if (u != 0 && u < 0x80) {
		text[0] = (char)u;
		name = text;
	} else if ((name = rfb_keyname(k)) == NULL)
		return; /* a key we cannot name: dropped */
	snprintf(combo, sizeof combo, "%s%s%s%s%s",
	    r->mods & M_CTRL ? "ctrl+" : "", r->mods & M_ALT ? "alt+" : "",
	    r->mods & M_SUPER ? "super+" : "",
	    r->mods & M_SHIFT && u == 0 ? "shift+" : "", name);
	rfb_input(r, json_pack("{s:s, s:s}", "action", "key", "text", combo));
}

/* Consume one complete message from in[0..n); its length, 0 when more
 * bytes are needed, -1 to end the session. */
static long
rfb_message(struct rfb *r, const unsigned char *in, size_t n)
{
	unsigned long len;

	switch (in[0]) {
	case 0: /* SetPixelFormat */
		if (n < 20)
			return (0);
		if (in[4] != 32 || !in[7]) {
			fprintf(stderr,
			    "bureau mission-control: viewer asked for %d-bit "
			    "pixels: only 32-bit true colour is served\n",
			    in[4]);
			return (-1);
		}
		r->be = in[6];
		r->rs = in[14];
		r->gs = in[15];
		r->bs = in[16];
		free(r->shadow); /* everything again, in the new format */
		r->shadow = NULL;
		return (20);
	case 2: /* SetEncodings */
		if (n < 4)
			return (0);
		len = 4 + 4 * (((unsigned long)in[2] << 8) | in[3]);
		if (n < len)
			return (0);
		for (unsigned long i = 4; i < len; i += 4)
			if ((int)(((unsigned long)in[i] << 24) |
			        ((unsigned long)in[i + 1] << 16) |
			        ((unsigned long)in[i + 2] << 8) | in[i + 3]) ==
			    -223)
				r->resize_ok = 1;
		return ((long)len);
	case 3: /* FramebufferUpdateRequest */
		if (n < 10)
			return (0);
		r->want = 1;
		r->incremental = r->incremental && in[1];
		return (10);
	case 4: /* KeyEvent: dropped unless the operator took over */
		if (n < 8)
			return (0);
		if (rfb_taken_over(r))
			rfb_key(r, in[1],
			    ((unsigned long)in[4] << 24) |
			        ((unsigned long)in[5] << 16) |
			        ((unsigned long)in[6] << 8) | in[7]);
		return (8);
	case 5: /* PointerEvent: likewise */
		if (n < 6)
			return (0);
		if (rfb_taken_over(r))
			rfb_pointer(r, in[1], (in[2] << 8) | in[3],
			    (in[4] << 8) | in[5]);
		return (6);
	case 6: /* ClientCutText: the viewer's clipboard, never forwarded */
		if (n < 8)
			return (0);
		len = ((unsigned long)in[4] << 24) |
		    ((unsigned long)in[5] << 16) | ((unsigned long)in[6] << 8) |
		    in[7];
		/* A negative length is the extended clipboard's (its
		 * payload is that many bytes). */
		if (len & 0x80000000UL)
			len = 0x100000000UL - len;
		if (len > IN_MAX)
			return (-1);
		return (n < 8 + len ? 0 : (long)(8 + len));
	}
	fprintf(stderr, "bureau mission-control: unknown RFB message %d\n",
	    in[0]);
	return (-1);
}

/* Send what changed since the viewer's copy; 1 when sent, 0 when
 * nothing changed, -1 on a failed write. Called with lv->lock held. */
static int
rfb_update(struct rfb *r)
{
	struct live *lv = r->lv;
	int w = lv->w, h = lv->h,
	    full = r->shadow == NULL || !r->incremental || r->sw != w ||
	    r->sh != h;
	int tx = (w + TILE - 1) / TILE, ty = (h + TILE - 1) / TILE, n = 0;
	int resize = r->sw != w || r->sh != h;
	int bx0 = w, by0 = h, bx1 = 0, by1 = 0;
	unsigned char *out, *o;
	size_t cap = 4 + 12 + (size_t)tx * ty * 12 + (size_t)w * h * 4;
	/* The bits no colour uses are sent set: noVNC 1.3's raw decoder
	 * means to make every pixel opaque but only does so for the first
	 * rectangle of an update, so later ones would show transparent. */
	unsigned long pad = 0xffffffffUL &
	    ~((0xffUL << r->rs) | (0xffUL << r->gs) | (0xffUL << r->bs));
	int rv;

	if (resize && !r->resize_ok && r->shadow != NULL)
		return (-1); /* the viewer cannot follow a new size */
	if ((out = malloc(cap)) == NULL)
		return (-1);
	o = out + 4;
	if (resize && r->resize_ok && r->sw != 0) {
		put16(o, 0);
		put16(o + 2, 0);
		put16(o + 4, (unsigned)w);
		put16(o + 6, (unsigned)h);
		put32(o + 8, (unsigned long)-223);
		o += 12;
		n++;
	}
	/* The changed tiles' bounding box, sent as one raw rectangle:
	 * noVNC 1.3 mis-draws the later rectangles of an update (its raw
	 * decoder and its render queue ignore the data's offset). */
	for (int j = 0; j < ty; j++)
		for (int i = 0; i < tx; i++) {
			int x0 = i * TILE, y0 = j * TILE;
			int cw = x0 + TILE > w ? w - x0 : TILE;
			int ch = y0 + TILE > h ? h - y0 : TILE, same = !full;

			for (int y = y0; same && y < y0 + ch; y++)
				same = memcmp(lv->px + ((size_t)y * w + x0) * 4,
				           r->shadow + ((size_t)y * w + x0) * 4,
				           (size_t)cw * 4) == 0;
			if (same)
				continue;
			bx0 = x0 < bx0 ? x0 : bx0;
			by0 = y0 < by0 ? y0 : by0;
			bx1 = x0 + cw > bx1 ? x0 + cw : bx1;
			by1 = y0 + ch > by1 ? y0 + ch : by1;
		}
	if (bx1 > bx0) {
		put16(o, (unsigned)bx0);
		put16(o + 2, (unsigned)by0);
		put16(o + 4, (unsigned)(bx1 - bx0));
		put16(o + 6, (unsigned)(by1 - by0));
		put32(o + 8, 0); /* raw */
		o += 12;
		for (int y = by0; y < by1; y++) {
			const unsigned char *p = lv->px +
			    ((size_t)y * w + bx0) * 4;
			for (int x = bx0; x < bx1; x++, p += 4, o += 4) {
				unsigned long v = pad |
				    ((unsigned long)p[0] << r->rs) |
				    ((unsigned long)p[1] << r->gs) |
				    ((unsigned long)p[2] << r->bs);
				if (r->be)
					put32(o, v);
				else {
					o[0] = (unsigned char)v;
					o[1] = (unsigned char)(v >> 8);
					o[2] = (unsigned char)(v >> 16);
					o[3] = (unsigned char)(v >> 24);
				}
			}
		}
		n++;
	}
	r->sent = lv->seq;
	if (n == 0) {
		free(out);
		return (0);
	}
	out[0] = 0;
	out[1] = 0;
	put16(out + 2, (unsigned)n);
	if (r->sw != w || r->sh != h || r->shadow == NULL) {
		free(r->shadow);
		r->shadow = malloc((size_t)w * h * 4);
		r->sw = w;
		r->sh = h;
	}
	if (r->shadow != NULL)
		memcpy(r->shadow, lv->px, (size_t)w * h * 4);
	rv = rfb_write(r, out, (size_t)(o - out));
	free(out);
	r->want = 0;
	r->incremental = 1;
	return (rv == 0 ? 1 : -1);
}

static int
rfb_server_init(struct rfb *r)
{
	unsigned char m[24 + 64];
	const char *name = r->d->name;
	size_t nl = strlen(name) > 64 ? 64 : strlen(name);
	long long until = hb_now_ms() + 15000;

	/* The first frame may still be on its way. */
	for (;;) {
		pthread_mutex_lock(&r->lv->lock);
		if (r->lv->px != NULL)
			break;
		pthread_mutex_unlock(&r->lv->lock);
		if (hb_now_ms() > until)
			return (-1);
		usleep(50000);
	}
	put16(m, (unsigned)r->lv->w);
	put16(m + 2, (unsigned)r->lv->h);
	pthread_mutex_unlock(&r->lv->lock);
	memset(m + 4, 0, 16);
	m[4] = 32; /* bits per pixel */
	m[5] = 24; /* depth */
	m[6] = 0;  /* little-endian */
	m[7] = 1;  /* true colour */
	put16(m + 8, 255);
	put16(m + 10, 255);
	put16(m + 12, 255);
	m[14] = 16;
	m[15] = 8;
	m[16] = 0;
	r->rs = 16;
	r->gs = 8;
	r->bs = 0;
	put32(m + 20, nl);
	memcpy(m + 24, name, nl);
	return (rfb_write(r, m, 24 + nl));
}

/* Handshake steps: the next phase, 0 for more bytes, -1 to end. */
static long
rfb_handshake(struct rfb *r, const unsigned char *in, size_t n)
{
	static const unsigned char types[] = { 1, 1 }, ok[] = { 0, 0, 0, 0 };

	switch (r->phase) {
	case 0: /* the viewer's version */
		if (n < 12)
			return (0);
		if (memcmp(in, "RFB 003.", 8) != 0)
			return (-1);
		r->minor = atoi((const char *)in + 8) >= 8 ? 8 :
		    atoi((const char *)in + 8) == 7        ? 7 :
		                                             3;
		if (r->minor == 3) {
			/* 3.3: the server picks None, no result follows */
			if (rfb_write(r, "\0\0\0\1", 4) != 0)
				return (-1);
			r->phase = 2;
		} else {
			if (rfb_write(r, types, 2) != 0)
				return (-1);
			r->phase = 1;
		}
		return (12);
	case 1: /* the security type it chose */
		if (in[0] != 1)
			return (-1);
		if (r->minor == 8 && rfb_write(r, ok, 4) != 0)
			return (-1);
		r->phase = 2;
		return (1);
	case 2: /* ClientInit */
		if (rfb_server_init(r) != 0)
			return (-1);
		r->phase = 3;
		return (1);
	}
	return (-1);
}

static void *
rfb_main(void *arg)
{
	struct rfb *r = arg;
	unsigned char *buf = NULL;
	size_t n = 0;

	if (rfb_write(r, "RFB 003.008\n", 12) != 0)
		goto out;
	for (;;) {
		long used;
		int send = 0;

		pthread_mutex_lock(&r->lock);
		if (r->inlen > 0) {
			unsigned char *nb = realloc(buf, n + r->inlen);
			if (nb == NULL) {
				pthread_mutex_unlock(&r->lock);
				goto out;
			}
			buf = nb;
			memcpy(buf + n, r->in, r->inlen);
			n += r->inlen;
			r->inlen = 0;
		}
		if (r->closed) {
			pthread_mutex_unlock(&r->lock);
			goto out;
		}
		pthread_mutex_unlock(&r->lock);
		while (n > 0) {
			used = r->phase < 3 ? rfb_handshake(r, buf, n) :
			                      rfb_message(r, buf, n);
			if (used < 0)
				goto out;
			if (used == 0)
				break;
			memmove(buf, buf + used, n - (size_t)used);
			n -= (size_t)used;
		}
		if (r->phase == 3 && r->want) {
			pthread_mutex_lock(&r->lv->lock);
			if (r->lv->px != NULL &&
			    (!r->incremental || r->lv->seq != r->sent))
				send = rfb_update(r);
			pthread_mutex_unlock(&r->lv->lock);
			if (send < 0)
				goto out;
		}
		pthread_mutex_lock(&r->lock);
		if (r->inlen == 0 && !r->closed) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 40 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&r->cond, &r->lock, &ts);
		}
		pthread_mutex_unlock(&r->lock);
	}
out:
	free(buf);
	/* Ends the WebSocket: civetweb then calls rfb_close. */
	pthread_mutex_lock(&r->lock);
	if (!r->closed)
		mg_websocket_write(r->c, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE,
		    "", 0);
	pthread_mutex_unlock(&r->lock);
	return (NULL);
}

/* ---- a QEMU desktop: its own VNC server, bridged ------------------------- */

/*
 * The length of the viewer's next whole message in in[0..n) once the
 * handshake is through, 0 when more bytes are needed, -1 when it is not
 * one this bridge knows; *input says it is the viewer's keyboard, pointer
 * or clipboard. QEMU's own messages are included (its extended key event
 * is input).
 */
static long
vnc_client_len(const unsigned char *in, size_t n, int *input)
{
	unsigned long len;

	*input = 0;
	switch (in[0]) {
	case 0:
		return (n < 20 ? 0 : 20);
	case 2:
		if (n < 4)
			return (0);
		len = 4 + 4 * (((unsigned long)in[2] << 8) | in[3]);
		return (n < len ? 0 : (long)len);
	case 3:
		return (n < 10 ? 0 : 10);
	case 4:
		*input = 1;
		return (n < 8 ? 0 : 8);
	case 5:
		*input = 1;
		return (n < 6 ? 0 : 6);
	case 6:
		*input = 1;
		if (n < 8)
			return (0);
		len = ((unsigned long)in[4] << 24) |
		    ((unsigned long)in[5] << 16) | ((unsigned long)in[6] << 8) |
		    in[7];
		/* A negative length is the extended clipboard's (its
		 * payload is that many bytes). */
		if (len & 0x80000000UL)
			len = 0x100000000UL - len;
		if (len > IN_MAX)
			return (-1);
		return (n < 8 + len ? 0 : (long)(8 + len));
	case 150: /* EnableContinuousUpdates */
		return (n < 10 ? 0 : 10);
	case 248: /* ClientFence */
		if (n < 9)
			return (0);
		return (n < 9 + (size_t)in[8] ? 0 : (long)(9 + in[8]));
	case 251: /* SetDesktopSize */
		if (n < 8)
			return (0);
		len = 8 + 16 * (unsigned long)in[6];
		return (n < len ? 0 : (long)len);
	case 255: /* QEMU: 0 is the extended key event */
		if (n < 2)
			return (0);
		if (in[1] != 0)
			return (-1);
		*input = 1;
		return (n < 12 ? 0 : 12);
	}
	return (-1);
}

/* Bytes from the viewer: whole messages go on to QEMU, its input only
 * while the operator has taken over. 0, or -1 to end the session. */
static int
vnc_from_viewer(struct rfb *r, const char *data, size_t len)
{
	unsigned char *nb;
	size_t off = 0;

	if (r->pinlen + len > IN_MAX ||
	    (nb = realloc(r->pin, r->pinlen + len + 1)) == NULL)
		return (-1);
	r->pin = nb;
	memcpy(r->pin + r->pinlen, data, len);
	r->pinlen += len;
	while (off < r->pinlen) {
		const unsigned char *m = r->pin + off;
		size_t n = r->pinlen - off;
		long used;
		int input = 0;

		/* The handshake: version (12), the security type (1: QEMU's
		 * socket offers None), ClientInit (1). */
		if (r->phase == 0)
			used = n < 12 ? 0 : 12;
		else if (r->phase == 1)
			used = m[0] == 1 ? 1 : -1;
		else if (r->phase == 2)
			used = 1;
		else
			used = vnc_client_len(m, n, &input);
		if (used < 0) {
			fprintf(stderr,
			    "bureau mission-control: '%s': the viewer sent an "
			    "RFB message this bridge does not pass (type %d)\n",
			    r->d->name, m[0]);
			return (-1);
		}
		if (used == 0)
			break;
		if (r->phase == 0 && memcmp(m, "RFB 003.003", 11) == 0)
			r->phase++; /* 3.3: the server picks the type */
		if (r->phase < 3)
			r->phase++;
		if ((!input || rfb_taken_over(r)) &&
		    send(r->ufd, m, (size_t)used, MSG_NOSIGNAL) != used)
			return (-1);
		off += (size_t)used;
	}
	memmove(r->pin, r->pin + off, r->pinlen - off);
	r->pinlen -= off;
	return (0);
}

/* QEMU's side, as it comes, to the viewer. */
static void *
vnc_main(void *arg)
{
	struct rfb *r = arg;
	unsigned char buf[65536];
	ssize_t n;

	while ((n = read(r->ufd, buf, sizeof buf)) > 0)
		if (rfb_write(r, buf, (size_t)n) != 0)
			break;
	pthread_mutex_lock(&r->lock);
	if (!r->closed)
		mg_websocket_write(r->c, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE,
		    "", 0);
	pthread_mutex_unlock(&r->lock);
	return (NULL);
}

static int
vnc_dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		return (-1);
	strcpy(sa.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return (-1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

static int
rfb_connect(const struct mg_connection *c, void *cb)
{
	(void)c;
	(void)cb;
	return (0); /* mc_request checked the session and the desktop */
}

static void
rfb_ready(struct mg_connection *c, void *cb)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	struct rfb *r = calloc(1, sizeof *r);
	char *cause = NULL, *vs = NULL;
	void *(*fn)(void *) = rfb_main;

	(void)cb;
	if (r == NULL)
		return;
	r->c = c;
	r->ufd = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	if (desktop_load(ri->local_uri + 5, &r->d, &cause) != 0)
		goto fail;
	if (!r->d->attached) {
		/* A QEMU desktop: its own VNC server shows it, boot
		 * included. */
		if ((vs = live_vnc_sock(r->d)) == NULL ||
		    (r->ufd = vnc_dial(vs)) < 0)
			goto fail;
		fn = vnc_main;
	} else if ((r->lv = live_get(r->d->name)) == NULL)
		goto fail;
	if (pthread_create(&r->thread, NULL, fn, r) != 0)
		goto fail;
	free(vs);
	mg_set_user_connection_data(c, r);
	return;
fail:
	/* No session data: rfb_data ends the WebSocket on its first
	 * message. */
	if (r->ufd >= 0)
		close(r->ufd);
	free(vs);
	free(cause);
	desktop_free(r->d);
	free(r);
}

static int
rfb_data(struct mg_connection *c, int bits, char *data, size_t len, void *cb)
{
	struct rfb *r = mg_get_user_connection_data(c);
	int op = bits & 0x0f, ok = 1;

	(void)cb;
	if (r == NULL)
		return (0);
	if (op == MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE)
		return (0);
	if (op != MG_WEBSOCKET_OPCODE_BINARY &&
	    op != MG_WEBSOCKET_OPCODE_CONTINUATION)
		return (1);
	if (r->ufd >= 0)
		return (vnc_from_viewer(r, data, len) == 0);
	pthread_mutex_lock(&r->lock);
	if (r->inlen + len > IN_MAX) {
		ok = 0;
	} else {
		unsigned char *nb = realloc(r->in, r->inlen + len);
		if (nb == NULL)
			ok = 0;
		else {
			r->in = nb;
			memcpy(r->in + r->inlen, data, len);
			r->inlen += len;
		}
	}
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return (ok);
}

static void
rfb_close(const struct mg_connection *c, void *cb)
{
	struct rfb *r = mg_get_user_connection_data(c);

	(void)cb;
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	r->closed = 1;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (r->ufd >= 0)
		shutdown(r->ufd, SHUT_RDWR); /* ends vnc_main's read */
	pthread_join(r->thread, NULL);
	if (r->ufd >= 0)
		close(r->ufd);
	free(r->pin);
	free(r->in);
	free(r->shadow);
	desktop_free(r->d);
	free(r);
}

void
mc_live_register(struct mg_context *ctx)
{
	mg_set_websocket_handler(ctx, "/vnc", rfb_connect, rfb_ready, rfb_data,
	    rfb_close, NULL);
}
