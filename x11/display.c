/*
 * x11/display.c: the connection, XShm capture, the pointer, and the damage
 * thread.
 */
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

#include "x11/clock.h"
#include "x11/x11.h"
#include "x11/xerr.h"

struct x11 {
	pthread_mutex_t lock;
	Display *dpy;
	char *name;
	Window root;
	int width, height;
	struct x11_kbd *kbd;

	/* XShm: one segment the size of the screen, reused by every grab. */
	int use_shm;
	XShmSegmentInfo shm;
	XImage *shm_img;
	size_t shm_len;
	/* When the last grab began (x11_now_ns), and whether the segment's
	 * pages have since been given back (x11_shm_idle); written under
	 * lock, read by the damage thread with atomics. */
	uint64_t grab_ns;
	int shm_cold;
	/* XGetImage fallback: the last image, freed by the next grab. */
	XImage *plain_img;

	int has_fixes;

	/* The damage thread and what it tells the waiters. */
	Display *ddpy;
	pthread_t dthread;
	int dthread_started;
	int wake[2]; /* pipe to the damage thread: 'q' stop, 'k' look at
	                the segment's idle time again */
	pthread_mutex_t dlock;
	pthread_cond_t dcond;
	uint64_t dseq;
	uint64_t dlast_ns;
};

static void
x11_shm_destroy(struct x11 *x)
{
	if (x->shm_img == NULL)
		return;
	XShmDetach(x->dpy, &x->shm);
	XSync(x->dpy, False);
	XDestroyImage(x->shm_img);
	shmdt(x->shm.shmaddr);
	x->shm_img = NULL;
}

/* Make the shared segment. Any failure (remote display, no SysV shm) leaves
 * use_shm 0 and grabs use XGetImage. */
static void
x11_shm_create(struct x11 *x)
{
	Visual *vis = DefaultVisual(x->dpy, DefaultScreen(x->dpy));
	int depth = DefaultDepth(x->dpy, DefaultScreen(x->dpy));
	struct x11_trap trap;

	x->use_shm = 0;
	if (!XShmQueryExtension(x->dpy))
		return;
	x->shm_img = XShmCreateImage(x->dpy, vis, (unsigned)depth, ZPixmap,
	    NULL, &x->shm, (unsigned)x->width, (unsigned)x->height);
	if (x->shm_img == NULL)
		return;
	x->shm_len = (size_t)x->shm_img->bytes_per_line * (size_t)x->height;
	x->shm.shmid = shmget(IPC_PRIVATE, x->shm_len, IPC_CREAT | 0600);
	if (x->shm.shmid < 0)
		goto fail;
	x->shm.shmaddr = x->shm_img->data = shmat(x->shm.shmid, NULL, 0);
	/* Marked for removal at once: the segment goes away with the last
	 * detach, even if bureaud is killed. */
	shmctl(x->shm.shmid, IPC_RMID, NULL);
	if (x->shm.shmaddr == (void *)-1)
		goto fail;
	x->shm.readOnly = False;
	/* A remote display or a server without shared memory refuses the
	 * attach with an X error: fall back to XGetImage. */
	x11_trap_push(&trap, x->dpy);
	XShmAttach(x->dpy, &x->shm);
	if (x11_trap_pop(&trap) != 0) {
		shmdt(x->shm.shmaddr);
		goto fail;
	}
	x->use_shm = 1;
	__atomic_store_n(&x->shm_cold, 0, __ATOMIC_RELAXED);
	return;
fail:
	x->shm_img->data = NULL;
	XDestroyImage(x->shm_img);
	x->shm_img = NULL;
}

static void *x11_damage_main(void *arg);

int
x11_open(const char *name, struct x11 **out, char **cause)
{
	struct x11 *x;
	int ev, err, maj, min;
	Visual *vis;
	int depth;

	if ((x = calloc(1, sizeof *x)) == NULL)
		return (x11_fail(cause, "out of memory"));
	/* Xlib's default handler exits on any X error; a window closing at
	 * the wrong moment raises BadWindow in normal operation. */
	x11_trap_install();
	x->wake[0] = x->wake[1] = -1;
	pthread_mutex_init(&x->lock, NULL);
	pthread_mutex_init(&x->dlock, NULL);
	x11_mono_cond_init(&x->dcond); /* deadlines from x11_now_ns */
	if (name == NULL)
		name = getenv("DISPLAY");
	if (name == NULL || *name == '\0') {
		x11_fail(cause, "no X display: set DISPLAY or --display");
		goto fail;
	}
	if ((x->name = strdup(name)) == NULL) {
		x11_fail(cause, "out of memory");
		goto fail;
	}
	if ((x->dpy = XOpenDisplay(name)) == NULL) {
		x11_fail(cause, "cannot open display '%s'", name);
		goto fail;
	}
	if (!XTestQueryExtension(x->dpy, &ev, &err, &maj, &min)) {
		x11_fail(cause, "display '%s' has no XTEST extension", name);
		goto fail;
	}
	x->root = DefaultRootWindow(x->dpy);
	x->width = DisplayWidth(x->dpy, DefaultScreen(x->dpy));
	x->height = DisplayHeight(x->dpy, DefaultScreen(x->dpy));
	vis = DefaultVisual(x->dpy, DefaultScreen(x->dpy));
	depth = DefaultDepth(x->dpy, DefaultScreen(x->dpy));
	/* capture/ works on B,G,R,X bytes: the layout of a 24/32-bit
	 * TrueColor ZPixmap with these masks on a little-endian client. */
	if ((depth != 24 && depth != 32) || vis->red_mask != 0xff0000 ||
	    vis->green_mask != 0x00ff00 || vis->blue_mask != 0x0000ff) {
		x11_fail(cause,
		    "display '%s' is not 24-bit TrueColor "
		    "(start Xvfb with -screen 0 WxHx24)",
		    name);
		goto fail;
	}
	x->has_fixes = XFixesQueryExtension(x->dpy, &ev, &err);
	x11_shm_create(x);
	if (x11_kbd_new(x->dpy, &x->kbd, cause) != 0)
		goto fail;

	/* The damage thread has its own connection: it blocks in poll() on
	 * it, and must never wait behind a long capture or typing. */
	if ((x->ddpy = XOpenDisplay(name)) == NULL) {
		x11_fail(cause, "cannot open display '%s'", name);
		goto fail;
	}
	if (!XDamageQueryExtension(x->ddpy, &ev, &err)) {
		x11_fail(cause, "display '%s' has no DAMAGE extension", name);
		goto fail;
	}
	if (pipe(x->wake) != 0) {
		x11_fail(cause, "pipe: %s", strerror(errno));
		goto fail;
	}
	x->dlast_ns = x->grab_ns = x11_now_ns();
	if (pthread_create(&x->dthread, NULL, x11_damage_main, x) != 0) {
		x11_fail(cause, "cannot start the damage thread");
		goto fail;
	}
	x->dthread_started = 1;
	*out = x;
	return (0);
fail:
	x11_close(x);
	return (-1);
}

void
x11_close(struct x11 *x)
{
	if (x == NULL)
		return;
	if (x->dthread_started) {
		if (write(x->wake[1], "q", 1) < 0) {
			/* the thread also stops when the display closes */
		}
		pthread_join(x->dthread, NULL);
	}
	if (x->wake[0] >= 0)
		close(x->wake[0]);
	if (x->wake[1] >= 0)
		close(x->wake[1]);
	if (x->ddpy != NULL)
		XCloseDisplay(x->ddpy);
	if (x->dpy != NULL) {
		x11_kbd_free(x->kbd, x->dpy);
		x11_shm_destroy(x);
		if (x->plain_img != NULL)
			XDestroyImage(x->plain_img);
		XCloseDisplay(x->dpy);
	}
	pthread_mutex_destroy(&x->lock);
	pthread_mutex_destroy(&x->dlock);
	pthread_cond_destroy(&x->dcond);
	free(x->name);
	free(x);
}

void
x11_lock(struct x11 *x)
{
	pthread_mutex_lock(&x->lock);
}

void
x11_unlock(struct x11 *x)
{
	pthread_mutex_unlock(&x->lock);
}

Display *
x11_display(struct x11 *x)
{
	return (x->dpy);
}

struct x11_kbd *
x11_kbd(struct x11 *x)
{
	return (x->kbd);
}

const char *
x11_name(struct x11 *x)
{
	return (x->name);
}

void
x11_size(struct x11 *x, int *w, int *h)
{
	pthread_mutex_lock(&x->dlock);
	*w = x->width;
	*h = x->height;
	pthread_mutex_unlock(&x->dlock);
}

static inline uint32_t
x11_blend(uint32_t dst, uint32_t argb)
{
	/* XFixes cursor pixels are premultiplied ARGB. */
	uint32_t a = argb >> 24, inv = 255 - a, out = 0;

	for (int sh = 0; sh < 24; sh += 8) {
		uint32_t s = (argb >> sh) & 0xff, d = (dst >> sh) & 0xff;
		uint32_t v = s + (d * inv + 127) / 255;
		out |= (v > 255 ? 255 : v) << sh;
	}
	return (out);
}

static void
x11_draw_cursor(struct x11 *x, struct cap_image *img)
{
	XFixesCursorImage *ci;
	int x0, y0;

	if (!x->has_fixes || (ci = XFixesGetCursorImage(x->dpy)) == NULL)
		return;
	x0 = ci->x - ci->xhot;
	y0 = ci->y - ci->yhot;
	for (int cy = 0; cy < ci->height; cy++) {
		int py = y0 + cy;
		if (py < 0 || py >= img->height)
			continue;
		uint32_t *row = (uint32_t *)(img->data +
		    (size_t)py * img->stride);
		for (int cx = 0; cx < ci->width; cx++) {
			int px = x0 + cx;
			/* pixels is an array of unsigned long, one per pixel */
			uint32_t argb = (uint32_t)
			                    ci->pixels[cy * ci->width + cx];
			if (px < 0 || px >= img->width || (argb >> 24) == 0)
				continue;
			row[px] = x11_blend(row[px], argb);
		}
	}
	XFree(ci);
}

int
x11_grab(struct x11 *x, int draw_cursor, struct cap_image *img, char **cause)
{
	XImage *xi;
	Window r;
	int gx, gy;
	unsigned int gw, gh, bw, depth;

	/* The screen can change size under us (xrandr, a desktop's display
	 * settings): follow it, with a segment of the new size. */
	if (XGetGeometry(x->dpy, x->root, &r, &gx, &gy, &gw, &gh, &bw,
	        &depth) &&
	    ((int)gw != x->width || (int)gh != x->height)) {
		int had_shm = x->use_shm;

		x11_shm_destroy(x);
		pthread_mutex_lock(&x->dlock);
		x->width = (int)gw;
		x->height = (int)gh;
		pthread_mutex_unlock(&x->dlock);
		if (had_shm)
			x11_shm_create(x);
	}
	__atomic_store_n(&x->grab_ns, x11_now_ns(), __ATOMIC_RELAXED);
	if (x->use_shm && __atomic_load_n(&x->shm_cold, __ATOMIC_RELAXED)) {
		/* the pages come back as the server writes them; the damage
		 * thread starts timing the idle segment again */
		__atomic_store_n(&x->shm_cold, 0, __ATOMIC_RELAXED);
		if (write(x->wake[1], "k", 1) < 0) {
			/* then it gives the pages back only at the next
			 * wake-up: memory, not correctness */
		}
	}
	if (x->use_shm) {
		if (!XShmGetImage(x->dpy, x->root, x->shm_img, 0, 0, AllPlanes))
			return (x11_fail(cause, "XShmGetImage failed on '%s'",
			    x->name));
		xi = x->shm_img;
	} else {
		if (x->plain_img != NULL)
			XDestroyImage(x->plain_img);
		x->plain_img = XGetImage(x->dpy, x->root, 0, 0,
		    (unsigned)x->width, (unsigned)x->height, AllPlanes,
		    ZPixmap);
		if (x->plain_img == NULL)
			return (x11_fail(cause, "XGetImage failed on '%s'",
			    x->name));
		xi = x->plain_img;
	}
	if (xi->bits_per_pixel != 32)
		return (x11_fail(cause,
		    "display '%s' does not use 32 bits "
		    "per pixel",
		    x->name));
	img->data = (uint8_t *)xi->data;
	img->width = x->width;
	img->height = x->height;
	img->stride = xi->bytes_per_line;
	if (draw_cursor)
		x11_draw_cursor(x, img);
	return (0);
}

int
x11_pointer(struct x11 *x, int *px, int *py)
{
	Window r, c;
	int wx, wy;
	unsigned int mask;

	if (!XQueryPointer(x->dpy, x->root, &r, &c, px, py, &wx, &wy, &mask))
		return (-1); /* the pointer is on another screen */
	return (0);
}

int
x11_move(struct x11 *x, int px, int py)
{
	XTestFakeMotionEvent(x->dpy, -1, px, py, CurrentTime);
	XSync(x->dpy, False);
	return (0);
}

int
x11_button(struct x11 *x, int button, int down)
{
	XTestFakeButtonEvent(x->dpy, (unsigned)button, down ? True : False,
	    CurrentTime);
	XSync(x->dpy, False);
	return (0);
}

/* --- damage -------------------------------------------------------------- */

/*
 * The XShm segment (8.3 MB at 1920x1080) is a third of an idle daemon's
 * RSS, and an agent that stopped taking screenshots does not need it. So
 * X11_SHM_IDLE_MS after the last grab its pages are given back to the
 * kernel (MADV_REMOVE frees a shared mapping's backing store, for the X
 * server too; the segment stays attached on both sides), and the next
 * grab has the server fault them in again: on the shared 2-core VM its
 * capture took 11-27 ms instead of 1-5 (load average 7). 30 s is longer
 * than an agent thinks between two steps, so only an agent that went
 * away pays that, once (bench.py prints RSS and that first screenshot).
 * Returns -1 (wait forever), or the ms to wait before looking again.
 * Called from the damage thread only.
 */
#define X11_SHM_IDLE_MS 30000

static int
x11_shm_idle(struct x11 *x)
{
	int64_t idle_ms;
	int wait = -1;

	if (__atomic_load_n(&x->shm_cold, __ATOMIC_RELAXED))
		return (-1);
	idle_ms = (int64_t)(x11_now_ns() -
	              __atomic_load_n(&x->grab_ns, __ATOMIC_RELAXED)) /
	    1000000;
	if (idle_ms < X11_SHM_IDLE_MS)
		return ((int)(X11_SHM_IDLE_MS - idle_ms) + 1);
	/* never wait behind a grab: look again soon */
	if (pthread_mutex_trylock(&x->lock) != 0)
		return (100);
	if (x->use_shm && x->shm_img != NULL && !x->shm_cold) {
		if (madvise(x->shm.shmaddr, x->shm_len, MADV_REMOVE) == 0)
			__atomic_store_n(&x->shm_cold, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&x->lock);
	return (wait);
}

static void *
x11_damage_main(void *arg)
{
	struct x11 *x = arg;
	int ev_base, err_base;
	Damage damage;
	struct pollfd pfd[2];

	XDamageQueryExtension(x->ddpy, &ev_base, &err_base);
	/* NonEmpty + Subtract: one event per burst of drawing, and the
	 * region is cleared so the next change reports again. */
	damage = XDamageCreate(x->ddpy, DefaultRootWindow(x->ddpy),
	    XDamageReportNonEmpty);
	XFlush(x->ddpy);
	pfd[0].fd = ConnectionNumber(x->ddpy);
	pfd[0].events = POLLIN;
	pfd[1].fd = x->wake[0];
	pfd[1].events = POLLIN;
	for (;;) {
		int got = 0;

		while (XPending(x->ddpy) > 0) {
			XEvent e;

			XNextEvent(x->ddpy, &e);
			if (e.type == ev_base + XDamageNotify)
				got = 1;
		}
		if (got) {
			XDamageSubtract(x->ddpy, damage, None, None);
			pthread_mutex_lock(&x->dlock);
			x->dseq++;
			x->dlast_ns = x11_now_ns();
			pthread_cond_broadcast(&x->dcond);
			pthread_mutex_unlock(&x->dlock);
			/* Back to XPending, which flushes the subtract. Never
			 * poll() right after a flush: Xlib may have read
			 * events into its queue while writing, and poll()
			 * would then sleep on an empty socket with events
			 * waiting. Only an empty queue reaches poll(). */
			continue;
		}
		if (poll(pfd, 2, x11_shm_idle(x)) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents != 0) {
			char cmd[16];
			ssize_t n = read(x->wake[0], cmd, sizeof cmd);

			if (n <= 0 || memchr(cmd, 'q', (size_t)n) != NULL)
				break;
		}
		if (pfd[0].revents & (POLLERR | POLLHUP))
			break;
	}
	XDamageDestroy(x->ddpy, damage);
	XSync(x->ddpy, False);
	return (NULL);
}

int
x11_settle(struct x11 *x, uint64_t since_ns, int settle_ms, int timeout_ms)
{
	uint64_t settle = (uint64_t)settle_ms * 1000000u;
	uint64_t limit = since_ns + (uint64_t)timeout_ms * 1000000u;
	int rv;

	pthread_mutex_lock(&x->dlock);
	for (;;) {
		uint64_t quiet = x->dlast_ns > since_ns ? x->dlast_ns :
		                                          since_ns;
		uint64_t now = x11_now_ns(), until = quiet + settle;
		struct timespec ts;

		if (now >= until) {
			rv = 0;
			break;
		}
		if (now >= limit) {
			rv = 1;
			break;
		}
		ts = x11_mono_timespec(until < limit ? until : limit);
		pthread_cond_timedwait(&x->dcond, &x->dlock, &ts);
	}
	pthread_mutex_unlock(&x->dlock);
	return (rv);
}

uint64_t
x11_damage_wait(struct x11 *x, uint64_t seq, int timeout_ms)
{
	uint64_t limit = x11_now_ns() + (uint64_t)timeout_ms * 1000000u, cur;
	struct timespec ts;

	pthread_mutex_lock(&x->dlock);
	ts = x11_mono_timespec(limit);
	while (x->dseq == seq && x11_now_ns() < limit)
		pthread_cond_timedwait(&x->dcond, &x->dlock, &ts);
	cur = x->dseq;
	pthread_mutex_unlock(&x->dlock);
	return (cur);
}
