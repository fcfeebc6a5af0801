/*
 * tools/accessibility.c: the accessibility tool (DESIGN.md, "The
 * accessibility tool"): what a screen reader sees, through AT-SPI
 * (libatspi), so an agent finds a control by role and name instead of by
 * pixels. Actions: tree, find, do, set_text.
 *
 * libatspi is not thread-safe: every call runs under one lock. The daemon
 * runs no GLib main loop, so the D-Bus signals libatspi subscribes to are
 * dispatched at the start of each request: its cache (each application's
 * roles, names, states, interfaces and children, loaded in one call when
 * the application appears) follows the applications' own change events
 * as a screen reader's does. Clearing it for every tree made a desktop
 * with a Chromium page cost 0.98 s instead of 0.xx s (249 nodes). A node's id
 * is a number this daemon gives the element (its application's bus name and
 * object path) the first time it is seen: the same element keeps its id for as
 * long as it lives (and the daemon runs).
 *
 * libatspi is loaded only here; a session without an accessibility bus
 * gets a clear error, and a later request tries again (the bus may start
 * after the daemon).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* libatspi's headers declare some functions without prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <atspi/atspi.h>
#pragma GCC diagnostic pop

#include "tools/computer.h"
#include "tools/tool.h"
#include "x11/windows.h"

#define AX_NODES_DEFAULT 2000
#define AX_NODES_MAX     20000
#define AX_DEPTH_MAX     128
#define AX_TEXT_MAX      4096       /* characters of a node's text */
#define AX_SET_MAX       (1u << 20) /* bytes of set_text's text */
#define AX_IDS_MAX       200000     /* elements remembered; then forgotten */

static struct {
	pthread_mutex_t lock;
	int inited;         /* atspi_init succeeded */
	GHashTable *by_key; /* "bus\npath" -> id (GINT_TO_POINTER) */
	GPtrArray *by_id;   /* id -> AtspiAccessible (ref'd), [0] unused */
	GEnumClass *states;
	struct x11_wm *wm;
	char *wm_cause;
} ax = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* How screen coordinates map to the screenshot's. */
struct ax_geo {
	int sw, sh, dw, dh;
};

/* A walk: its budget and, for find, the filter. */
struct ax_walk {
	struct ax_geo geo;
	long budget;
	int truncated;
	/* find */
	int flat;
	json_t *found;
	const char *role, *name, *name_contains, *state;
};

static void
ax_forget(void)
{
	if (ax.by_key != NULL)
		g_hash_table_destroy(ax.by_key);
	if (ax.by_id != NULL)
		g_ptr_array_free(ax.by_id, TRUE);
	ax.by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
	    NULL);
	ax.by_id = g_ptr_array_new_with_free_func(
	    (GDestroyNotify)g_object_unref);
	g_ptr_array_add(ax.by_id, NULL); /* ids start at 1 */
}

/* The element's id, given on first sight. */
static long
ax_id(AtspiAccessible *a)
{
	AtspiObject *o = ATSPI_OBJECT(a);
	char *key;
	gpointer v;

	if (o->app == NULL || o->app->bus_name == NULL || o->path == NULL)
		return (0);
	key = g_strdup_printf("%s\n%s", o->app->bus_name, o->path);
	if ((v = g_hash_table_lookup(ax.by_key, key)) != NULL) {
		g_free(key);
		return (GPOINTER_TO_INT(v));
	}
	if (ax.by_id->len >= AX_IDS_MAX)
		ax_forget();
	g_ptr_array_add(ax.by_id, g_object_ref(a));
	g_hash_table_insert(ax.by_key, key,
	    GINT_TO_POINTER((int)ax.by_id->len - 1));
	return ((long)ax.by_id->len - 1);
}

/* Connect to the accessibility bus once it is there; 0, or the code set
 * with tool_fail. Called with ax.lock held. */
static int
ax_ready(struct tool_call *call)
{
	int rv;

	if (ax.inited) {
		/* What the bus sent since: libatspi's cache signals. */
		while (g_main_context_iteration(NULL, FALSE))
			;
		return (0);
	}
	if (getenv("DBUS_SESSION_BUS_ADDRESS") == NULL &&
	    getenv("XDG_RUNTIME_DIR") == NULL)
		return (tool_fail(call, BD_ENOTFOUND,
		    "no accessibility bus: the daemon has no D-Bus session "
		    "($DBUS_SESSION_BUS_ADDRESS is not set); run it in the "
		    "desktop's session, with at-spi2-core installed"));
	rv = atspi_init();
	if (rv != 0 && rv != 1) {
		atspi_exit();
		return (tool_fail(call, BD_ENOTFOUND,
		    "no accessibility bus: AT-SPI could not connect (is "
		    "at-spi2-core installed and the session's D-Bus "
		    "running?)"));
	}
	/* A call to an application that hangs fails in 2 s, not 25. */
	atspi_set_timeout(2000, 15000);
	ax.inited = 1;
	if (ax.by_key == NULL)
		ax_forget();
	if (ax.states == NULL)
		ax.states = g_type_class_ref(ATSPI_TYPE_STATE_TYPE);
	return (0);
}

static json_t *
ax_states(AtspiAccessible *a)
{
	AtspiStateSet *ss = atspi_accessible_get_state_set(a);
	GArray *st = ss != NULL ? atspi_state_set_get_states(ss) : NULL;
	json_t *arr = json_array();

	for (guint i = 0; st != NULL && i < st->len; i++) {
		GEnumValue *v = g_enum_get_value(ax.states,
		    g_array_index(st, AtspiStateType, i));

		if (v != NULL)
			json_array_append_new(arr, json_string(v->value_nick));
	}
	if (st != NULL)
		g_array_free(st, TRUE);
	if (ss != NULL)
		g_object_unref(ss);
	return (arr);
}

static int
ax_has_state(AtspiAccessible *a, const char *name)
{
	GEnumValue *v = g_enum_get_value_by_nick(ax.states, name);
	AtspiStateSet *ss;
	int has;

	if (v == NULL || (ss = atspi_accessible_get_state_set(a)) == NULL)
		return (0);
	has = atspi_state_set_contains(ss, (AtspiStateType)v->value);
	g_object_unref(ss);
	return (has);
}

/* Screen rectangle to screenshot space. */
static json_t *
ax_bounds(AtspiAccessible *a, const struct ax_geo *g)
{
	AtspiComponent *c = atspi_accessible_get_component_iface(a);
	AtspiRect *r;
	json_t *b = NULL;

	if (c == NULL)
		return (NULL);
	r = atspi_component_get_extents(c, ATSPI_COORD_TYPE_SCREEN, NULL);
	if (r != NULL && r->width >= 0 && r->height >= 0) {
		long x = (long)r->x * g->dw / g->sw,
		     y = (long)r->y * g->dh / g->sh;
		long x2 = ((long)r->x + r->width) * g->dw / g->sw;
		long y2 = ((long)r->y + r->height) * g->dh / g->sh;

		b = json_pack("[I, I, I, I]", (json_int_t)x, (json_int_t)y,
		    (json_int_t)(x2 - x), (json_int_t)(y2 - y));
	}
	g_free(r);
	g_object_unref(c);
	return (b);
}

/* The element's action names (not GetActions in one call: its first
 * field is the localized name, "Click" where do needs "click"). */
static json_t *
ax_actions(AtspiAccessible *a)
{
	AtspiAction *ac = atspi_accessible_get_action_iface(a);
	json_t *arr = json_array();
	gint n;

	if (ac == NULL)
		return (arr);
	n = atspi_action_get_n_actions(ac, NULL);
	for (gint i = 0; i < n && i < 32; i++) {
		gchar *name = atspi_action_get_action_name(ac, i, NULL);

		if (name != NULL &&
		    json_array_append_new(arr, json_string(name)) != 0)
			json_array_append_new(arr, json_string(""));
		g_free(name);
	}
	g_object_unref(ac);
	return (arr);
}

/* A string of the accessible, or "" (libatspi's may be NULL). */
static json_t *
ax_str(gchar *s)
{
	json_t *j = json_string(s != NULL ? s : "");

	g_free(s);
	return (j != NULL ? j : json_string(""));
}

/* One node's fields (no children). */
static json_t *
ax_node(AtspiAccessible *a, const struct ax_geo *g)
{
	json_t *n = json_object(), *b;
	AtspiText *t;
	AtspiValue *v;

	json_object_set_new(n, "id", json_integer(ax_id(a)));
	json_object_set_new(n, "role",
	    ax_str(atspi_accessible_get_role_name(a, NULL)));
	json_object_set_new(n, "name",
	    ax_str(atspi_accessible_get_name(a, NULL)));
	json_object_set_new(n, "states", ax_states(a));
	if ((b = ax_bounds(a, g)) != NULL)
		json_object_set_new(n, "bounds", b);
	/* A text node's text: a leaf's, or an editable one's (a container's
	 * text is its children's, with a placeholder for each: Chromium's
	 * document holds the whole page). */
	if ((atspi_accessible_get_child_count(a, NULL) == 0 ||
	        ax_has_state(a, "editable")) &&
	    (t = atspi_accessible_get_text_iface(a)) != NULL) {
		/* One call for the whole text (-1: to the end), cut here. */
		gchar *txt = atspi_text_get_text(t, 0, -1, NULL);

		if (txt != NULL && g_utf8_validate(txt, -1, NULL) &&
		    g_utf8_strlen(txt, -1) > AX_TEXT_MAX)
			*g_utf8_offset_to_pointer(txt, AX_TEXT_MAX) = '\0';
		if (txt != NULL && *txt != '\0')
			json_object_set_new(n, "text", ax_str(txt));
		else
			g_free(txt);
		g_object_unref(t);
	}
	if ((v = atspi_accessible_get_value_iface(a)) != NULL) {
		json_object_set_new(n, "value",
		    json_real(atspi_value_get_current_value(v, NULL)));
		g_object_unref(v);
	}
	json_object_set_new(n, "actions", ax_actions(a));
	return (n);
}

static int
ax_matches(AtspiAccessible *a, const struct ax_walk *w)
{
	gchar *s;
	int ok = 1;

	if (w->role != NULL) {
		s = atspi_accessible_get_role_name(a, NULL);
		ok = s != NULL && strcasecmp(s, w->role) == 0;
		g_free(s);
	}
	if (ok && (w->name != NULL || w->name_contains != NULL)) {
		s = atspi_accessible_get_name(a, NULL);
		if (s == NULL)
			ok = 0;
		else if (w->name != NULL)
			ok = strcmp(s, w->name) == 0;
		else
			ok = strcasestr(s, w->name_contains) != NULL;
		g_free(s);
	}
	if (ok && w->state != NULL)
		ok = ax_has_state(a, w->state);
	return (ok);
}

/* The subtree at a, depth levels deep (tree), or its matches appended to
 * w->found (find). */
static json_t *
ax_walk(AtspiAccessible *a, int depth, struct ax_walk *w)
{
	json_t *n = NULL, *kids = NULL;
	gint count;

	if (w->budget <= 0) {
		w->truncated = 1;
		return (NULL);
	}
	w->budget--;
	if (w->flat) {
		if (ax_matches(a, w))
			json_array_append_new(w->found, ax_node(a, &w->geo));
	} else {
		n = ax_node(a, &w->geo);
		kids = json_array();
	}
	count = atspi_accessible_get_child_count(a, NULL);
	if (depth > 0)
		for (gint i = 0; i < count && w->budget > 0; i++) {
			AtspiAccessible *c =
			    atspi_accessible_get_child_at_index(a, i, NULL);
			json_t *cj;

			if (c == NULL)
				continue;
			cj = ax_walk(c, depth - 1, w);
			if (cj != NULL)
				json_array_append_new(kids, cj);
			g_object_unref(c);
		}
	/* Children left unread: the depth or the budget ran out. */
	if (count > 0 && (depth <= 0 || w->budget <= 0))
		w->truncated = 1;
	if (n != NULL)
		json_object_set_new(n, "children", kids);
	return (n);
}

static int
ax_geo(struct tool_call *call, struct ax_geo *g)
{
	const char *display, *cause;

	if (tool_computer_geometry(&g->sw, &g->sh, &g->dw, &g->dh, &display,
	        &cause) != 0 ||
	    g->sw <= 0 || g->sh <= 0)
		return (tool_fail(call, BD_EINTERNAL,
		    "no screen to place the elements on: %s", cause));
	return (0);
}

/*
 * The top-level elements of X window id: the frames of the application
 * whose process owns it, the one named as the window is titled first (or
 * all of them when none is). A new array of ref'd accessibles.
 */
static int
ax_window_roots(struct tool_call *call, long long wid, GPtrArray **out)
{
	struct x11_win_info wi = { 0 };
	AtspiAccessible *desk;
	GPtrArray *all = g_ptr_array_new_with_free_func(
	    (GDestroyNotify)g_object_unref);
	GPtrArray *named = g_ptr_array_new_with_free_func(
	    (GDestroyNotify)g_object_unref);
	char *cause = NULL;
	int rv;

	if (ax.wm == NULL)
		return (
		    tool_fail(call, BD_EINTERNAL, "cannot look windows up: %s",
		        ax.wm_cause ? ax.wm_cause : "no display"));
	rv = x11_wm_info(ax.wm, (unsigned long)wid, &wi, &cause);
	if (rv != 0) {
		rv = tool_fail(call,
		    rv == X11_WM_GONE ? BD_ENOTFOUND : BD_EINTERNAL,
		    "invalid window '%lld': %s", wid,
		    rv == X11_WM_GONE ? "no such top-level window (window "
		                        "list has them)" :
		        cause         ? cause :
		                        "?");
		free(cause);
		g_ptr_array_free(all, TRUE);
		g_ptr_array_free(named, TRUE);
		return (rv);
	}
	desk = atspi_get_desktop(0);
	for (gint i = 0,
	          n = desk ? atspi_accessible_get_child_count(desk, NULL) : 0;
	     i < n; i++) {
		AtspiAccessible *app = atspi_accessible_get_child_at_index(desk,
		    i, NULL);

		if (app == NULL)
			continue;
		if (wi.pid > 0 &&
		    (long)atspi_accessible_get_process_id(app, NULL) ==
		        wi.pid) {
			for (gint k = 0,
			          m = atspi_accessible_get_child_count(app,
			              NULL);
			     k < m; k++) {
				AtspiAccessible *f =
				    atspi_accessible_get_child_at_index(app, k,
				        NULL);
				gchar *nm;

				if (f == NULL)
					continue;
				nm = atspi_accessible_get_name(f, NULL);
				if (nm != NULL && strcmp(nm, wi.title) == 0)
					g_ptr_array_add(named, g_object_ref(f));
				g_ptr_array_add(all, f);
				g_free(nm);
			}
		}
		g_object_unref(app);
	}
	if (desk != NULL)
		g_object_unref(desk);
	x11_wm_info_clear(&wi);
	if (named->len > 0) {
		g_ptr_array_free(all, TRUE);
		*out = named;
	} else {
		g_ptr_array_free(named, TRUE);
		*out = all;
	}
	if ((*out)->len == 0) {
		g_ptr_array_free(*out, TRUE);
		*out = NULL;
		return (tool_fail(call, BD_ENOTFOUND,
		    "window '%lld' has no accessible elements: its program "
		    "does not speak AT-SPI (or its pid is unknown)",
		    wid));
	}
	return (0);
}

/* tree and find: walk the desktop, or one window's elements. */
static int
ax_read(struct tool_call *call, int flat)
{
	struct ax_walk w = { .flat = flat };
	long long wid = 0, depth, maxn;
	GPtrArray *roots = NULL;
	json_t *nodes = json_array();

	if (tool_arg_int(call, "window", 0, 1, 0xffffffffLL, 0, &wid) != 0 ||
	    tool_arg_int(call, "depth", 0, 0, AX_DEPTH_MAX, AX_DEPTH_MAX,
	        &depth) != 0 ||
	    tool_arg_int(call, "max_nodes", 0, 1, AX_NODES_MAX,
	        AX_NODES_DEFAULT, &maxn) != 0)
		goto fail;
	if (flat &&
	    (tool_arg_str(call, "role", 0, NULL, &w.role) != 0 ||
	        tool_arg_str(call, "name", 0, NULL, &w.name) != 0 ||
	        tool_arg_str(call, "name_contains", 0, NULL,
	            &w.name_contains) != 0 ||
	        tool_arg_str(call, "state", 0, NULL, &w.state) != 0))
		goto fail;
	if (flat && w.name != NULL && w.name_contains != NULL) {
		tool_fail(call, BD_EINVAL,
		    "fields 'name' and 'name_contains' both filter the name: "
		    "give one");
		goto fail;
	}
	if (ax_geo(call, &w.geo) != 0)
		goto fail;
	pthread_mutex_lock(&ax.lock);
	if (ax_ready(call) != 0)
		goto unlock;
	if (flat && w.state != NULL &&
	    g_enum_get_value_by_nick(ax.states, w.state) == NULL) {
		tool_fail(call, BD_EINVAL,
		    "invalid state '%.64s': not an AT-SPI state name (such "
		    "as focused, showing, checked, enabled)",
		    w.state);
		goto unlock;
	}
	w.budget = maxn;
	w.found = nodes;
	if (wid != 0) {
		if (ax_window_roots(call, wid, &roots) != 0)
			goto unlock;
	} else {
		roots = g_ptr_array_new_with_free_func(
		    (GDestroyNotify)g_object_unref);
		g_ptr_array_add(roots, atspi_get_desktop(0));
	}
	for (guint i = 0; i < roots->len; i++) {
		AtspiAccessible *r = g_ptr_array_index(roots, i);
		json_t *t;

		/* The desktop itself is no element: its applications are the
		 * first level. */
		if (wid == 0) {
			gint n = atspi_accessible_get_child_count(r, NULL);

			for (gint k = 0; k < n && w.budget > 0; k++) {
				AtspiAccessible *app =
				    atspi_accessible_get_child_at_index(r, k,
				        NULL);

				if (app == NULL)
					continue;
				if ((t = ax_walk(app, (int)depth, &w)) != NULL)
					json_array_append_new(nodes, t);
				g_object_unref(app);
			}
		} else if ((t = ax_walk(r, (int)depth, &w)) != NULL)
			json_array_append_new(nodes, t);
	}
	g_ptr_array_free(roots, TRUE);
	pthread_mutex_unlock(&ax.lock);
	tool_set_json(call, "nodes", nodes);
	tool_set_bool(call, "truncated", w.truncated);
	tool_set_int(call, "count", maxn - w.budget);
	return (0);
unlock:
	pthread_mutex_unlock(&ax.lock);
fail:
	json_decref(nodes);
	return (call->code);
}

static int
ax_tree(struct tool_call *call)
{
	return (ax_read(call, 0));
}

static int
ax_find(struct tool_call *call)
{
	return (ax_read(call, 1));
}

/* The element of "id", ref'd; NULL after tool_fail. With ax.lock held. */
static AtspiAccessible *
ax_lookup(struct tool_call *call, long long *idp)
{
	long long id;
	AtspiAccessible *a;
	GHashTable *attrs;
	GError *err = NULL;

	if (tool_arg_int(call, "id", 1, 1, 0x7fffffffLL, 0, &id) != 0)
		return (NULL);
	*idp = id;
	if (ax.by_id == NULL || id >= (long long)ax.by_id->len ||
	    (a = g_ptr_array_index(ax.by_id, (guint)id)) == NULL) {
		tool_fail(call, BD_ENOTFOUND,
		    "invalid id '%lld': no such element (ids come from tree "
		    "and find)",
		    id);
		return (NULL);
	}
	/* Gone: its application no longer answers for it (attributes are
	 * never cached: this asks the application). */
	attrs = atspi_accessible_get_attributes(a, &err);
	if (attrs != NULL)
		g_hash_table_unref(attrs);
	if (err != NULL ||
	    atspi_accessible_get_role(a, NULL) == ATSPI_ROLE_INVALID) {
		tool_fail(call, BD_ENOTFOUND,
		    "invalid id '%lld': the element is gone%s%s", id,
		    err ? ": " : "", err ? err->message : "");
		if (err != NULL)
			g_error_free(err);
		return (NULL);
	}
	return (g_object_ref(a));
}

static int
ax_do(struct tool_call *call)
{
	const char *want = NULL;
	AtspiAccessible *a = NULL;
	AtspiAction *ac = NULL;
	GError *err = NULL;
	long long id = 0;
	gint n, pick = -1;
	gchar *name = NULL;
	int rv = 0;

	if (tool_arg_str(call, "name", 0, NULL, &want) != 0)
		return (call->code);
	pthread_mutex_lock(&ax.lock);
	if (ax_ready(call) != 0 || (a = ax_lookup(call, &id)) == NULL) {
		rv = call->code;
		goto out;
	}
	if ((ac = atspi_accessible_get_action_iface(a)) == NULL ||
	    (n = atspi_action_get_n_actions(ac, NULL)) <= 0) {
		rv = tool_fail(call, BD_EINVAL,
		    "element '%lld' has no actions (a click at the centre of "
		    "its bounds may do)",
		    id);
		goto out;
	}
	for (gint i = 0; i < n && pick < 0; i++) {
		gchar *nm = atspi_action_get_action_name(ac, i, NULL);

		if (want == NULL || (nm != NULL && strcmp(nm, want) == 0))
			pick = i;
		g_free(nm);
	}
	if (pick < 0) {
		json_t *names = ax_actions(a);
		char *list = json_dumps(names, JSON_COMPACT);

		rv = tool_fail(call, BD_EINVAL,
		    "invalid name '%.64s': element '%lld' has the actions %s",
		    want, id, list ? list : "?");
		free(list);
		json_decref(names);
		goto out;
	}
	name = atspi_action_get_action_name(ac, pick, NULL);
	if (!atspi_action_do_action(ac, pick, &err)) {
		rv = tool_fail(call, BD_EIO,
		    "element '%lld' did not do '%s': %s", id, name ? name : "?",
		    err ? err->message : "refused");
		goto out;
	}
	tool_set_str(call, "done", name ? name : "");
	tool_set_int(call, "element", id);
out:
	if (err != NULL)
		g_error_free(err);
	g_free(name);
	if (ac != NULL)
		g_object_unref(ac);
	if (a != NULL)
		g_object_unref(a);
	pthread_mutex_unlock(&ax.lock);
	return (rv);
}

static int
ax_set_text(struct tool_call *call)
{
	const char *text;
	size_t len;
	AtspiAccessible *a = NULL;
	AtspiEditableText *et = NULL;
	GError *err = NULL;
	long long id = 0;
	int rv = 0;

	if (tool_arg_strn(call, "text", 1, AX_SET_MAX, &text, &len) != 0)
		return (call->code);
	if (memchr(text, '\0', len) != NULL)
		return (tool_fail(call, BD_EINVAL,
		    "invalid text: it holds a NUL character"));
	pthread_mutex_lock(&ax.lock);
	if (ax_ready(call) != 0 || (a = ax_lookup(call, &id)) == NULL) {
		rv = call->code;
		goto out;
	}
	if ((et = atspi_accessible_get_editable_text_iface(a)) == NULL) {
		rv = tool_fail(call, BD_EINVAL,
		    "element '%lld' is not editable text (find state "
		    "editable)",
		    id);
		goto out;
	}
	if (!atspi_editable_text_set_text_contents(et, text, &err)) {
		rv = tool_fail(call, BD_EIO,
		    "element '%lld' did not take the text: %s", id,
		    err ? err->message : "refused");
		goto out;
	}
	tool_set_int(call, "element", id);
out:
	if (err != NULL)
		g_error_free(err);
	if (et != NULL)
		g_object_unref(et);
	if (a != NULL)
		g_object_unref(a);
	pthread_mutex_unlock(&ax.lock);
	return (rv);
}

static int
ax_init(const struct tool_config *cfg, char **cause)
{
	const char *name = cfg->display;

	/* Windows are looked up for "window"; AT-SPI itself connects on the
	 * first request. */
	if (x11_wm_open(name, &ax.wm, cause) != 0) {
		/* kept for the window field's error (the fuzzer found it
		 * leaked when it was copied) */
		ax.wm_cause = *cause;
		*cause = NULL;
	}
	return (0);
}

static void
ax_fini(void)
{
	pthread_mutex_lock(&ax.lock);
	if (ax.by_key != NULL)
		g_hash_table_destroy(ax.by_key);
	if (ax.by_id != NULL)
		g_ptr_array_free(ax.by_id, TRUE);
	ax.by_key = NULL;
	ax.by_id = NULL;
	if (ax.states != NULL)
		g_type_class_unref(ax.states);
	ax.states = NULL;
	if (ax.inited)
		atspi_exit();
	ax.inited = 0;
	pthread_mutex_unlock(&ax.lock);
	x11_wm_close(ax.wm);
	ax.wm = NULL;
	free(ax.wm_cause);
	ax.wm_cause = NULL;
}

/* Applications answer over D-Bus: quick for a small tree, not promised. */
static const struct tool_action ax_actions_table[] = {
	{ "tree", "action", ax_tree, 0 },
	{ "find", "action", ax_find, 0 },
	{ "do", "action", ax_do, 0 },
	{ "set_text", "action", ax_set_text, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_accessibility_entry = {
	.name = "accessibility",
	.init = ax_init,
	.fini = ax_fini,
	.actions = ax_actions_table,
};
