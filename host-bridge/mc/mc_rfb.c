/*
 * host-bridge/mc/mc_rfb.c: the live view over the WebSocket /vnc/NAME, for
 * noVNC: an RFB server of mc_live.c's frames for an attached desktop, a
 * bridge to QEMU's own VNC server for a QEMU desktop.
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/utf8.h"
#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

#define TILE   64
#define IN_MAX (1 << 20)

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

/* The session thread's last word: a Close, unless the viewer's side has
 * ended already; civetweb then calls rfb_close. Written without r->lock,
 * which rfb_data needs to go on reading the viewer's Close; the
 * connection stays valid, as rfb_close joins this thread before it
 * returns. */
static void
rfb_end(struct rfb *r)
{
	int closed;

	pthread_mutex_lock(&r->lock);
	closed = r->closed;
	pthread_mutex_unlock(&r->lock);
	if (!closed)
		mg_websocket_write(r->c, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE,
		    "", 0);
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
		utf8_encode((uint32_t)u, text);
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

/* What changed since the viewer's copy, as one FramebufferUpdate in *msg
 * (malloc'd, *len bytes): 1 when there is one, 0 when nothing changed, -1
 * to end the session. Called with lv->lock held; the caller writes it
 * after letting go, since a write to a viewer that does not read waits
 * (up to request_timeout_ms, mc.c) and the lock is the frame's: the
 * desktop's new frames, its API rows and its other viewers need it. */
static int
rfb_update(struct rfb *r, unsigned char **msg, size_t *len)
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

	*msg = NULL;
	*len = 0;
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
	*msg = out;
	*len = (size_t)(o - out);
	r->want = 0;
	r->incremental = 1;
	return (1);
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
			unsigned char *msg = NULL;
			size_t mlen = 0;

			pthread_mutex_lock(&r->lv->lock);
			if (r->lv->px != NULL &&
			    (!r->incremental || r->lv->seq != r->sent))
				send = rfb_update(r, &msg, &mlen);
			pthread_mutex_unlock(&r->lv->lock);
			if (send > 0 && rfb_write(r, msg, mlen) != 0)
				send = -1;
			free(msg);
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
	rfb_end(r);
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
	rfb_end(r);
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

/* mc_request checked the session and the desktop; a view past
 * MC_STREAMS_MAX is refused (civetweb then calls no other handler). */
static int
rfb_connect(const struct mg_connection *c, void *cb)
{
	(void)c;
	(void)cb;
	return (mc_stream_enter() == 0 ? 0 : 1);
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
		if ((vs = mc_live_vnc_sock(r->d)) == NULL ||
		    (r->ufd = vnc_dial(vs)) < 0)
			goto fail;
		fn = vnc_main;
	} else if ((r->lv = mc_live_get(r->d->name)) == NULL)
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
	mc_stream_leave(); /* admitted by rfb_connect */
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
mc_rfb_register(struct mg_context *ctx)
{
	mg_set_websocket_handler(ctx, "/vnc", rfb_connect, rfb_ready, rfb_data,
	    rfb_close, NULL);
}
