/*
 * host-bridge/vm/ready.c: see ready.h. A desktop is ready when an agent's
 * first screenshot shows it: the daemon answering is not enough, the X
 * session draws seconds (under TCG a minute) later.
 */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/ready.h"

/* A screenshot whose grey levels vary less than this (standard deviation,
 * 0-255) is one colour: a blank or not yet drawn screen. The pointer alone
 * on a blank screen stays near 3. */
#define DRAWN_STDDEV  6.0
#define SETTLE_MAX_MS 3000
/* How long a booted session's drawn screen may go without a window manager,
 * or with a window still black, before it is taken as it is (an image whose
 * session has no window manager, a window that is black on purpose). */
#define SESSION_WAIT_MS 20000
/* A window whose part of the screen is this dark and this even (grey
 * levels: mean, standard deviation) has not drawn yet: an X window shows
 * black between its map and its first paint (seen for seconds in the Xfce
 * panel's plugins under TCG). A terminal's black has its prompt and cursor. */
#define BLACK_MEAN   4.0
#define BLACK_STDDEV 2.0
/* How long a clone's guest may take to read its own identity. */
#define IDENTITY_WAIT_MS 90000

bureau_client *
vm_guest_client(const struct desktop *d, const char *token, double timeout,
    char **cause)
{
	char *tokp = desktop_path(d, "guest-token"), *own = NULL;
	char *gp = desktop_path(d, "guest.json");
	bureau_client *bc = NULL;
	json_t *g = NULL;
	const char *url;

	if (tokp == NULL || gp == NULL)
		*cause = hb_fmt("out of memory");
	else if ((g = json_load_file(gp, 0, NULL)) == NULL ||
	    (url = json_string_value(json_object_get(g, "url"))) == NULL)
		*cause = hb_fmt("no guest address in '%s' (is its host agent "
		                "running?)",
		    gp);
	else if (token == NULL && (own = hb_read_file(tokp)) == NULL)
		*cause = hb_fmt("cannot read '%s': %s", tokp, strerror(errno));
	else {
		if (own != NULL)
			own[strcspn(own, "\r\n")] = '\0';
		if (bureau_connect(url, token ? token : own, timeout, &bc) != 0)
			*cause = hb_fmt("cannot make a client for '%s'", url);
	}
	if (own != NULL)
		sodium_memzero(own, strlen(own));
	free(tokp);
	free(own);
	free(gp);
	json_decref(g);
	return (bc);
}

/*
 * A restored guest wakes with the token it had (a clone: the warm
 * desktop's). It re-reads its identity from fw_cfg on the VM generation
 * change (bureau-identity, from the kernel's vmgenid line) and SIGHUPs
 * bureaud: wait until the daemon takes this desktop's new guest token,
 * then check that it refuses the one it had (the warm state's, or
 * guest-token.old: the agent makes a new one at every start).
 */
static int
vm_identity_wait(const struct vm_backend *vm, const struct desktop *d,
    int clone, char **cause)
{
	long long deadline = hb_now_ms() + IDENTITY_WAIT_MS;
	bureau_client *bc = NULL, *old = NULL;
	char *op = clone ? NULL : desktop_path(d, "guest-token.old");
	char *wt = clone ? (vm->warm_token ? vm->warm_token(d) : NULL) :
	    op           ? hb_read_file(op) :
	                   NULL;
	int rc = BUREAU_ECONNECT, rv = -1;

	if ((bc = vm_guest_client(d, NULL, 2.0, cause)) == NULL)
		goto out;
	while (hb_now_ms() < deadline) {
		if (vm->pid(d) == 0) {
			*cause = hb_fmt("qemu exited while the clone took its "
			                "identity");
			goto out;
		}
		rc = bureau_call_timeout(bc,
		    "{\"tool\":\"system\",\"action\":\"ping\"}", 2.0, NULL);
		if (rc == 0)
			break;
		usleep(rc == BUREAU_EUNAUTH ? 50000 : 200000);
	}
	if (rc != 0) {
		*cause = hb_fmt("its daemon did not take its own token within "
		                "%d s (%s): an image without bureau-identity?",
		    IDENTITY_WAIT_MS / 1000,
		    rc == BUREAU_EUNAUTH ? "it still holds the one it had" :
		                           bureau_client_error(bc));
		goto out;
	}
	if (wt != NULL)
		wt[strcspn(wt, "\r\n")] = '\0';
	if (wt != NULL && wt[0] != '\0') {
		if ((old = vm_guest_client(d, wt, 2.0, cause)) == NULL)
			goto out;
		rc = bureau_call_timeout(old,
		    "{\"tool\":\"system\",\"action\":\"ping\"}", 5.0, NULL);
		if (rc != BUREAU_EUNAUTH) {
			*cause = hb_fmt("its daemon did not refuse the warm "
			                "state's token (%s)",
			    rc == 0 ? "it answered" : bureau_client_error(old));
			goto out;
		}
	}
	rv = 0;
out:
	if (wt != NULL)
		sodium_memzero(wt, strlen(wt));
	free(wt);
	free(op);
	bureau_close(bc);
	bureau_close(old);
	return (rv);
}

/* The guest holds its new token: the old one opens nothing now. */
static void
vm_forget_old_token(const struct desktop *d)
{
	char *p = desktop_path(d, "guest-token.old");

	if (p != NULL)
		unlink(p);
	free(p);
}

/* A fork that has not run yet (it still has its parent's guest token to
 * refuse): its saved state is all it is. */
static int
vm_unborn_fork(const struct desktop *d)
{
	char *p = desktop_path(d, "guest-token.old");
	int r = d->fork_of != NULL && p != NULL && access(p, F_OK) == 0;

	free(p);
	return (r);
}

int
vm_launch(const struct vm_backend *vm, const struct desktop *d,
    const struct image *im, const char *accel, int *restored, char **fallback,
    char **cause)
{
	char *why = NULL, *c2 = NULL;
	int clone = vm->cloned != NULL && vm->cloned(d);

	*restored = 0;
	*fallback = NULL;
	if (clone || vm->saved(d)) {
		long long t0 = hb_now_ms();

		if (vm->restore(d, im, accel, &why) == 0) {
			long long t1 = hb_now_ms();

			if (vm_identity_wait(vm, d, clone, &why) == 0) {
				if (!clone)
					fprintf(stderr,
					    "bureau: desktop '%s' restored "
					    "from its saved state in %.2f s, "
					    "took its new token %.2f s later\n",
					    d->name, (t1 - t0) / 1000.0,
					    (hb_now_ms() - t1) / 1000.0);
				else
					fprintf(stderr,
					    "bureau: desktop '%s' restored "
					    "from "
					    "the image's warm state in %.2f s, "
					    "took its own identity %.2f s "
					    "later\n",
					    d->name, (t1 - t0) / 1000.0,
					    (hb_now_ms() - t1) / 1000.0);
				*restored = 1;
				vm_forget_old_token(d);
				return (0);
			}
			/* Never a clone that answers to another's token. */
			vm->kill(d, &c2);
			free(c2);
		}
		/* A fork is its parent as it ran: booting its disks (written
		 * to while the parent ran, never shut down) is no copy of
		 * anything. It fails, its state kept. */
		if (vm_unborn_fork(d)) {
			*cause = hb_fmt(
			    "fork '%s' cannot be restored (%s): a "
			    "fork is its parent as it ran, and does "
			    "not boot instead",
			    d->name, why ? why : "unknown error");
			free(why);
			return (-1);
		}
		*fallback = why != NULL ? why : hb_fmt("unknown error");
		if (clone && *fallback != NULL) {
			char *w = hb_fmt("it is a clone of the image's warm "
			                 "state: %s",
			    *fallback);
			if (w != NULL) {
				free(*fallback);
				*fallback = w;
			}
		}
		vm->discard(d);
	}
	if (vm->start(d, im, accel, cause) != 0)
		return (-1);
	vm_forget_old_token(d); /* a boot reads the new one from fw_cfg */
	return (0);
}

/* A call's reply as JSON (NULL when none); *rc the call's result. */
static json_t *
call_json(bureau_client *bc, const char *req, double timeout, int *rc)
{
	char *reply = NULL;
	json_t *j;

	*rc = bureau_call_timeout(bc, req, timeout, &reply);
	j = reply ? json_loads(reply, 0, NULL) : NULL;
	bureau_free(reply);
	return (j);
}

/* A screenshot in grey levels, decoded at 1/4 size; sx, sy map
 * screenshot coordinates into it. */
struct gray {
	unsigned char *px;
	int w, h;
	double sx, sy;
};

/* Mean and standard deviation of the grey levels in [x0,x1) x [y0,y1). */
static void
gray_stats(const struct gray *g, int x0, int y0, int x1, int y1, double *mean,
    double *sd)
{
	double sum = 0, sq = 0, n = (double)(x1 - x0) * (y1 - y0);

	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++) {
			double v = g->px[(size_t)y * g->w + x];

			sum += v;
			sq += v * v;
		}
	*mean = sum / n;
	*sd = sqrt(fmax(0, sq / n - *mean * *mean));
}

/*
 * Grey-level spread of a screenshot (a JPEG), or -1 when it cannot be
 * read; *g gets its grey levels (the caller frees g->px), *frame the
 * screen's frame counter.
 */
static double
shot_stddev(json_t *reply, long long *frame, struct gray *g)
{
	json_t *img = json_object_get(reply, "image");
	const char *b64 = json_string_value(json_object_get(img, "data"));
	unsigned char *jpg = NULL;
	size_t b64len, len = 0;
	int w, h, sub, cs;
	double mean, rv = -1;
	tjhandle tj = NULL;

	*frame = json_integer_value(json_object_get(img, "frame"));
	free(g->px);
	memset(g, 0, sizeof *g);
	if (b64 == NULL)
		return (-1);
	b64len = strlen(b64);
	if ((jpg = malloc(b64len / 4 * 3 + 3)) == NULL ||
	    sodium_base642bin(jpg, b64len / 4 * 3 + 3, b64, b64len, NULL, &len,
	        NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
		goto out;
	if ((tj = tjInitDecompress()) == NULL ||
	    tjDecompressHeader3(tj, jpg, (unsigned long)len, &w, &h, &sub,
	        &cs) != 0)
		goto out;
	g->w = TJSCALED(w, ((tjscalingfactor){ 1, 4 }));
	g->h = TJSCALED(h, ((tjscalingfactor){ 1, 4 }));
	if (g->w <= 0 || g->h <= 0 ||
	    (g->px = malloc((size_t)g->w * g->h)) == NULL ||
	    tjDecompress2(tj, jpg, (unsigned long)len, g->px, g->w, 0, g->h,
	        TJPF_GRAY, 0) != 0)
		goto out;
	g->sx = (double)g->w / w;
	g->sy = (double)g->h / h;
	gray_stats(g, 0, 0, g->w, g->h, &mean, &rv);
out:
	if (rv < 0) {
		free(g->px);
		memset(g, 0, sizeof *g);
	}
	if (tj != NULL)
		tjDestroy(tj);
	free(jpg);
	return (rv);
}

/*
 * Whether a booted session is whole: its window manager runs (a session's
 * windows can be drawn before it frames and moves them: in a TCG boot the
 * minimal image's terminal was up a second before openbox) and none of
 * its visible windows is still black in the screenshot g.
 */
static int
session_whole(bureau_client *bc, const struct gray *g)
{
	int rc, whole = 0;
	json_t *j = call_json(bc, "{\"tool\":\"window\",\"action\":\"list\"}",
	    10.0, &rc);
	const char *wm = json_string_value(
	    json_object_get(j, "window_manager"));
	json_t *win;
	size_t i;

	if (rc != 0 || wm == NULL || *wm == '\0' || g->px == NULL)
		goto out;
	whole = 1;
	json_array_foreach(json_object_get(j, "windows"), i, win)
	{
		double x = json_number_value(json_object_get(win, "x"));
		double y = json_number_value(json_object_get(win, "y"));
		double ww = json_number_value(json_object_get(win, "width"));
		double wh = json_number_value(json_object_get(win, "height"));
		int x0, y0, x1, y1;
		double mean, sd;

		if (!json_is_true(json_object_get(win, "visible")))
			continue;
		x0 = (int)fmax(0, ceil(x * g->sx));
		y0 = (int)fmax(0, ceil(y * g->sy));
		x1 = (int)fmin(g->w, floor((x + ww) * g->sx));
		y1 = (int)fmin(g->h, floor((y + wh) * g->sy));
		/* Too small to tell, or the whole screen (a desktop window:
		 * its wallpaper may be black; the screen's own spread says
		 * whether anything is drawn). */
		if (x1 - x0 < 4 || y1 - y0 < 4 ||
		    (double)(x1 - x0) * (y1 - y0) >= 0.9 * g->w * g->h)
			continue;
		gray_stats(g, x0, y0, x1, y1, &mean, &sd);
		if (mean < BLACK_MEAN && sd < BLACK_STDDEV) {
			whole = 0;
			break;
		}
	}
out:
	json_decref(j);
	return (whole);
}

/* The clock step, on its own thread beside the screenshots. */
struct clock_job {
	bureau_client *bc;
	double step;
	char *cause;
	int rv;
};

static void *
clock_run(void *arg)
{
	struct clock_job *j = arg;

	j->rv = vm_guest_clock(j->bc, &j->step, &j->cause);
	return (NULL);
}

int
vm_ready_wait(const struct vm_backend *vm, const struct desktop *d,
    bureau_client *bc, int restored, long long deadline_ms, struct vm_ready *r,
    char **cause)
{
	/* A restored session drew before it was saved: what it shows now is
	 * what its agent left, one colour or not (a full-screen terminal). */
	double need = restored ? 0 : DRAWN_STDDEV;
	long long t0 = hb_now_ms(), prev_frame = -1, frame = -1, drawn_at = 0;
	long long drawn_for;
	double sd = -1;
	int rc, answered = 0, clocking = 0, settled;
	struct clock_job cj = { .bc = bc, .rv = -1 };
	struct gray g = { 0 };
	pthread_t ct;

	memset(r, 0, sizeof *r);
	while (hb_now_ms() < deadline_ms) {
		json_t *j;

		if (vm->pid(d) == 0) {
			*cause = hb_fmt("qemu exited while desktop '%s' %s",
			    d->name, answered ? "drew its session" : "started");
			if (clocking)
				pthread_join(ct, NULL);
			free(cj.cause);
			free(g.px);
			return (-1);
		}
		if (!answered) {
			j = call_json(bc,
			    "{\"tool\":\"system\",\"action\":\"ping\"}", 2.0,
			    &rc);
			json_decref(j);
			if (rc == BUREAU_ECONNECT || rc == BUREAU_ENOREPLY) {
				usleep(250000);
				continue;
			}
			if (rc != 0) {
				*cause = hb_fmt("the daemon refused the ping: "
				                "%s",
				    bureau_client_error(bc));
				return (-1);
			}
			answered = 1;
			r->daemon_ms = hb_now_ms() - t0;
			/* Stepped while the screenshots are taken: each is a
			 * request of its own to a TCG guest, whose first run
			 * of any code path is slow (60 ms for this one after
			 * a restore), and the daemon serves them at once. */
			clocking = pthread_create(&ct, NULL, clock_run, &cj) ==
			    0;
		}
		j = call_json(bc,
		    "{\"tool\":\"computer\",\"action\":\"screenshot\","
		    "\"format\":\"jpeg\",\"quality\":50}",
		    10.0, &rc);
		sd = rc == 0 ? shot_stddev(j, &frame, &g) : -1;
		json_decref(j);
		if (sd >= need && drawn_at == 0)
			drawn_at = hb_now_ms();
		if (sd < need)
			drawn_at = 0;
		/* Settled: the same frame twice; a screen that never stands
		 * still (a blinking cursor, a clock with seconds) is taken
		 * as it is once it has been drawn for SETTLE_MAX_MS. A
		 * restored screen is the one that was saved, whole (the X
		 * server's framebuffer is guest RAM): its first screenshot
		 * is the ready one. A booted one is ready once its session
		 * is whole too, or has been drawn for SESSION_WAIT_MS. */
		drawn_for = hb_now_ms() - drawn_at;
		settled = frame == prev_frame || drawn_for >= SETTLE_MAX_MS;
		if (sd >= need &&
		    (restored ||
		        (settled &&
		            (drawn_for >= SESSION_WAIT_MS ||
		                session_whole(bc, &g))))) {
			r->drawn_ms = hb_now_ms() - t0;
			break;
		}
		prev_frame = sd >= need ? frame : -1;
		usleep(sd >= need ? 200000 : 500000);
	}
	if (clocking)
		pthread_join(ct, NULL);
	free(g.px);
	if (r->drawn_ms == 0) {
		free(cj.cause);
		*cause = !answered ?
		    hb_fmt("the daemon did not answer") :
		    sd < 0 ?
		    hb_fmt("the daemon answered but gave no screenshot") :
		    hb_fmt("the session did not draw (the screen stays one "
		           "colour: grey levels vary by %.1f)",
		        sd);
		return (-1);
	}
	if (cj.rv == 0) {
		r->clock_step_s = cj.step;
		r->clock_stepped = 1;
	} else {
		fprintf(stderr,
		    "bureau: warning: the guest's clock of '%s' was not set "
		    "to the host's: %s\n",
		    d->name, cj.cause ? cj.cause : "unknown error");
		free(cj.cause);
	}
	return (0);
}

long long
vm_boot_stall_ms(const char *accel)
{
	const char *e = getenv("BUREAU_BOOT_STALL_S");
	char *cause = NULL;
	long v;

	if (e != NULL && *e != '\0' &&
	    hb_parse_int("BUREAU_BOOT_STALL_S", e, 1, 86400, &v, &cause) == 0)
		return (v * 1000LL);
	free(cause);
	return (strcmp(accel, "kvm") == 0 ? 30000 : 90000);
}

int
vm_boot_stalled(const struct desktop *d, struct vm_boot_watch *w,
    long long silent_ms, char **last)
{
	char *p = desktop_path(d, "console.log"), *text = NULL;
	char *rp = desktop_path(d, "run.json");
	json_t *run = rp ? json_load_file(rp, 0, NULL) : NULL;
	long long now = hb_now_ms();
	struct stat st;
	int stalled = 0;

	*last = NULL;
	if (w->changed_ms == 0)
		w->changed_ms = now;
	if (json_is_true(json_object_get(run, "restored")))
		w->done = 1;
	if (w->done || p == NULL || stat(p, &st) != 0)
		goto out;
	if (st.st_size != w->size) {
		w->size = st.st_size;
		w->changed_ms = now;
		/* The serial getty's prompt: the boot reached its login
		 * services; what comes next (X) prints nothing here. */
		if ((text = hb_read_file(p)) != NULL &&
		    strstr(text, " login: ") != NULL)
			w->done = 1;
		goto out;
	}
	if (now - w->changed_ms < silent_ms)
		goto out;
	stalled = 1;
	if ((text = hb_read_file(p)) != NULL) {
		size_t n = strlen(text);
		char *nl;

		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
			text[--n] = '\0';
		nl = strrchr(text, '\n');
		*last = strdup(nl ? nl + 1 : text);
		/* A console line for a terminal: no escapes. */
		for (char *c = *last; c != NULL && *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = ' ';
	}
out:
	json_decref(run);
	free(rp);
	free(text);
	free(p);
	return (stalled);
}

int
vm_guest_sync(bureau_client *bc, char **cause)
{
	int rc = bureau_call_timeout(bc,
	    "{\"tool\":\"system\",\"action\":\"ping\"}", 5.0, NULL);

	/* A daemon that does not answer at once (still booting, or hung)
	 * will not sync either: do not hold up the save for it. */
	if (rc == 0)
		rc = bureau_call_timeout(bc,
		    "{\"tool\":\"system\",\"action\":\"sync\"}", 120.0, NULL);

	/* An older bureaud: its shell. */
	if (rc == BUREAU_EUNKNOWN_ACTION)
		rc = bureau_call_timeout(bc,
		    "{\"tool\":\"bash\",\"command\":\"sync\",\"timeout\":110}",
		    120.0, NULL);
	if (rc != 0) {
		*cause = hb_fmt("%s", bureau_client_error(bc));
		return (-1);
	}
	return (0);
}

int
vm_guest_clock(bureau_client *bc, double *step, char **cause)
{
	struct timespec ts;
	char req[128];
	json_t *j;
	int rc;

	/* First the daemon answering at all, up to 30 s (a restored guest
	 * under TCG on two loaded cores took more than 20 s), so that the
	 * time sent is not one that waited in a queue. (The callers hold no
	 * lock of the VM meanwhile: desk_own_clock.) */
	j = call_json(bc, "{\"tool\":\"system\",\"action\":\"ping\"}", 30.0,
	    &rc);
	json_decref(j);
	if (rc != 0) {
		*cause = hb_fmt("%s", bureau_client_error(bc));
		return (-1);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(req, sizeof req,
	    "{\"tool\":\"system\",\"action\":\"set_clock\",\"time_ns\":%lld}",
	    (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	j = call_json(bc, req, 10.0, &rc); /* (it answered just now) */
	if (rc != 0) {
		*cause = rc == BUREAU_EUNKNOWN_ACTION ?
		    hb_fmt("its bureaud has no 'system set_clock' (an older "
		           "image)") :
		    hb_fmt("%s", bureau_client_error(bc));
		json_decref(j);
		return (-1);
	}
	*step = json_real_value(json_object_get(j, "stepped_s"));
	json_decref(j);
	return (0);
}
