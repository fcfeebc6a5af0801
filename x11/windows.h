/*
 * x11/windows.h: top-level client windows, as a window manager and its
 * pagers see them: listing, activation, closing, moving and resizing.
 *
 * With an EWMH window manager (one that sets _NET_SUPPORTING_WM_CHECK) the
 * clients are its _NET_CLIENT_LIST and requests go through it
 * (_NET_ACTIVE_WINDOW, _NET_MOVERESIZE_WINDOW), so it keeps its own state
 * right; without one the tree is walked (windows carrying WM_STATE, else
 * the root's mapped children) and windows are driven directly.
 *
 * The handle has its own Display connection and lock, so listing windows
 * never waits behind a screenshot. Thread-safe.
 *
 * Errors: 0 on success; -1 with *cause (malloc'd, the caller frees);
 * X11_WM_GONE when the window is not (or no longer) a top-level client.
 */
#ifndef BUREAU_X11_WINDOWS_H
#define BUREAU_X11_WINDOWS_H

#include <stddef.h>

#define X11_WM_GONE (-2)

struct x11_wm;

struct x11_win_info {
	unsigned long id; /* the client window (not its frame) */
	char *title;      /* UTF-8: _NET_WM_NAME, else WM_NAME; "" */
	char *wm_class;   /* WM_CLASS class part ("XTerm"), or "" */
	char *instance;   /* WM_CLASS instance part ("xterm"), or "" */
	long pid;         /* _NET_WM_PID, 0 when unknown */
	/* The client area in root coordinates (through any frame). */
	int x, y, width, height;
	/* The outer rectangle on screen: the window manager's frame with
	 * its decorations and border, or the window itself. */
	int fx, fy, fwidth, fheight;
	int viewable;  /* mapped and all ancestors mapped */
	int active;    /* _NET_ACTIVE_WINDOW, or holds the focus */
	int deletable; /* WM_PROTOCOLS lists WM_DELETE_WINDOW */
};

/* Connect to display `name` (NULL: $DISPLAY). */
int x11_wm_open(const char *name, struct x11_wm **out, char **cause);
void x11_wm_close(struct x11_wm *wm);

/* The EWMH window manager's name (_NET_WM_NAME of its check window) in a
 * malloc'd string the caller frees, or NULL when none runs. */
char *x11_wm_manager(struct x11_wm *wm);

/* Every top-level client: a malloc'd array of *n entries (free it with
 * x11_wm_list_free). */
int x11_wm_list(struct x11_wm *wm, struct x11_win_info **out, size_t *n,
    char **cause);
void x11_wm_list_free(struct x11_win_info *v, size_t n);

/* One client's details; X11_WM_GONE when id is not a top-level client.
 * Release with x11_wm_info_clear. */
int x11_wm_info(struct x11_wm *wm, unsigned long id, struct x11_win_info *out,
    char **cause);
void x11_wm_info_clear(struct x11_win_info *w);

/*
 * New windows, for a launch: x11_wm_watch starts logging the windows
 * created on the root from now on and fills *mark; x11_wm_created_since
 * says whether window id was created after the mark (window ids are
 * reused, so an id unseen before a launch proves nothing). Each watch is
 * ended by x11_wm_unwatch.
 */
int x11_wm_watch(struct x11_wm *wm, unsigned long *mark, char **cause);
void x11_wm_unwatch(struct x11_wm *wm);
int x11_wm_created_since(struct x11_wm *wm, unsigned long mark,
    unsigned long id);

/* Raise, focus and (EWMH) switch to its desktop. Asynchronous with a
 * window manager: poll x11_wm_info for `active`. */
int x11_wm_activate(struct x11_wm *wm, unsigned long id, char **cause);

/* Ask the client to close (WM_DELETE_WINDOW), or with `kill` disconnect
 * its X client (XKillClient). Fails when the window does not take
 * WM_DELETE_WINDOW and kill is 0. */
int x11_wm_close_window(struct x11_wm *wm, unsigned long id, int kill,
    char **cause);

/* Place the client area's top-left corner at root (x, y). */
int x11_wm_move(struct x11_wm *wm, unsigned long id, int x, int y,
    char **cause);

/* Resize the client area, keeping its top-left corner (size hints such as
 * a terminal's character cells may round the result). */
int x11_wm_resize(struct x11_wm *wm, unsigned long id, int width, int height,
    char **cause);

#endif
