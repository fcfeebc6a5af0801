/*
 * common/action.c: policy lists, action keys and audit summaries shared by
 * bureaud and the host agent (see action.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/action.h"

void
action_list_free(char **items, int n)
{
	for (int i = 0; i < n; i++)
		free(items[i]);
	free(items);
}

/*
 * The tools bureaud serves and their actions, by the names requests and
 * policies use: what a policy item may name. tools/ holds the entry
 * tables the daemon dispatches on; this copy lets the host side, which
 * links no tool, refuse a name no request can match (`--approve exec2`
 * would approve nothing). tests/unit/test_action.c checks the two agree.
 */
static const char *const acts_computer[] = { "screenshot", "zoom",
	"cursor_position", "mouse_move", "left_click", "right_click",
	"middle_click", "double_click", "triple_click", "left_click_drag",
	"left_mouse_down", "left_mouse_up", "scroll", "type", "key", "hold_key",
	"wait", "click", "drag", "keypress", "move", NULL };
static const char *const acts_system[] = { "ping", "info", "sync", "set_clock",
	NULL };
static const char *const acts_none[] = { NULL };
static const char *const acts_process[] = { "start", "list", "output", "signal",
	"wait", NULL };
static const char *const acts_file[] = { "read", "write", "list", "stat",
	"remove", "mkdir", "move", NULL };
static const char *const acts_editor[] = { "view", "create", "str_replace",
	"insert", "undo_edit", NULL };
static const char *const acts_window[] = { "list", "activate", "close", "move",
	"resize", "launch", NULL };
static const char *const acts_clipboard[] = { "get", "set", NULL };
static const char *const acts_accessibility[] = { "tree", "find", "do",
	"set_text", NULL };
/* The host agent's own tool: the agent asks its operator. */
static const char *const acts_operator[] = { "ask", NULL };

const struct action_tool action_tools[] = {
	{ "computer", NULL, acts_computer, 0 },
	{ "system", NULL, acts_system, 0 },
	{ "bash", NULL, acts_none, 0 },
	{ "process", NULL, acts_process, 0 },
	{ "file", NULL, acts_file, 0 },
	{ ACTION_EDITOR, "text_editor", acts_editor, 0 },
	{ "window", NULL, acts_window, 0 },
	{ "clipboard", NULL, acts_clipboard, 0 },
	{ "accessibility", NULL, acts_accessibility, 0 },
	{ "operator", NULL, acts_operator, 1 },
	{ NULL, NULL, NULL, 0 },
};

/*
 * The action classes (DESIGN.md, "The desktop's host agent"): each a
 * list of "tool" or "tool.action" items, matched as a policy's items are.
 * A class may name an action no tool has yet (system.fork): it matches
 * once the action exists.
 */
static const char *const class_exec[] = { "bash", "process.start",
	"process.signal", "window.launch", NULL };
static const char *const class_input[] = { "computer.mouse_move",
	"computer.left_click", "computer.right_click", "computer.middle_click",
	"computer.double_click", "computer.triple_click",
	"computer.left_click_drag", "computer.left_mouse_down",
	"computer.left_mouse_up", "computer.scroll", "computer.type",
	"computer.key", "computer.hold_key", "computer.click", "computer.drag",
	"computer.keypress", "computer.move", "accessibility.do",
	"accessibility.set_text", NULL };
static const char *const class_write[] = { "file.write", "file.remove",
	"file.mkdir", "file.move", ACTION_EDITOR ".create",
	ACTION_EDITOR ".str_replace", ACTION_EDITOR ".insert",
	ACTION_EDITOR ".undo_edit", NULL };
static const char *const class_clipboard[] = { "clipboard.set", NULL };
static const char *const class_windows[] = { "window.activate", "window.close",
	"window.move", "window.resize", "window.launch", NULL };
static const char *const class_fork[] = { "system.fork", NULL };

const struct action_class action_classes[] = {
	{ "exec", class_exec },
	{ "input", class_input },
	{ "write", class_write },
	{ "clipboard", class_clipboard },
	{ "windows", class_windows },
	{ "fork", class_fork },
	{ NULL, NULL },
};

/* What an agent may still do while an operator has taken over: look, and
 * ask the operator (who is there). */
static const char *const look_items[] = { "computer.screenshot",
	"computer.zoom", "computer.cursor_position", "window.list",
	"accessibility.tree", "accessibility.find", "system.ping",
	"system.info", "operator.ask", NULL };

static const struct action_tool *
tool_named(const char *name, size_t len)
{
	for (const struct action_tool *t = action_tools; t->name != NULL; t++)
		if ((strlen(t->name) == len &&
		        strncmp(t->name, name, len) == 0) ||
		    (t->alias != NULL && strlen(t->alias) == len &&
		        strncmp(t->alias, name, len) == 0))
			return (t);
	return (NULL);
}

static const struct action_class *
class_named(const char *name)
{
	for (const struct action_class *c = action_classes; c->name != NULL;
	     c++)
		if (strcmp(c->name, name) == 0)
			return (c);
	return (NULL);
}

static int
action_item_ok(const char *s)
{
	int dots = 0;

	if (*s == '.' || *s == '\0')
		return (0);
	for (; *s != '\0'; s++) {
		if (*s == '.') {
			if (++dots > 1 || s[1] == '\0')
				return (0);
		} else if (!((*s >= 'a' && *s <= 'z') ||
		               (*s >= '0' && *s <= '9') || *s == '_' ||
		               *s == '*'))
			return (0);
	}
	return (1);
}

/* Append ", name" (or "name" first) to buf of size, cut, never overrun. */
static void
add_name(char *buf, size_t size, const char *name)
{
	size_t off = strlen(buf);

	snprintf(buf + off, size - off, "%s%s", off > 0 ? ", " : "", name);
}

static int
tool_has(const struct action_tool *t, const char *action)
{
	for (const char *const *a = t->actions; *a != NULL; a++)
		if (strcmp(*a, action) == 0)
			return (1);
	return (0);
}

/*
 * The item tok as stored (malloc'd): the editor's alias by its name, as
 * requests are matched. NULL with *cause (NULL when out of memory) when
 * it names no class, tool or action of a tool.
 */
static char *
item_resolve(const char *what, const char *tok, char **cause)
{
	const struct action_tool *t;
	const char *dot = strchr(tok, '.');
	char names[512] = "", classes[128] = "", *r;

	if (!action_item_ok(tok)) {
		if (asprintf(cause,
		        "invalid %s item '%s': expected a class, tool, "
		        "tool.action or tool.*",
		        what, tok) < 0)
			*cause = NULL;
		return (NULL);
	}
	t = tool_named(tok, dot != NULL ? (size_t)(dot - tok) : strlen(tok));
	if (t == NULL && dot == NULL && class_named(tok) != NULL)
		return (strdup(tok));
	if (t == NULL) {
		for (const struct action_class *c = action_classes;
		     c->name != NULL; c++)
			add_name(classes, sizeof classes, c->name);
		for (t = action_tools; t->name != NULL; t++)
			add_name(names, sizeof names, t->name);
		if (asprintf(cause,
		        "unknown %s item '%s': expected a class (%s), a tool "
		        "(%s), tool.action or tool.*",
		        what, tok, classes, names) < 0)
			*cause = NULL;
		return (NULL);
	}
	if (dot != NULL && strcmp(dot + 1, "*") != 0 && !tool_has(t, dot + 1)) {
		for (const char *const *a = t->actions; *a != NULL; a++)
			add_name(names, sizeof names, *a);
		if (asprintf(cause, "unknown %s item '%s': tool '%s' has %s%s",
		        what, tok, t->name,
		        names[0] != '\0' ? "actions " : "no actions",
		        names) < 0)
			*cause = NULL;
		return (NULL);
	}
	if (asprintf(&r, "%s%s", t->name, dot != NULL ? dot : "") < 0)
		return (NULL);
	return (r);
}

int
action_list_add(char ***items, int *n, const char *what, const char *s,
    char **cause)
{
	char *copy = strdup(s), *tok, *save = NULL;

	*cause = NULL;
	if (copy == NULL)
		goto oom;
	for (tok = strtok_r(copy, ", \t", &save); tok != NULL;
	     tok = strtok_r(NULL, ", \t", &save)) {
		char **grown, *item;

		if ((item = item_resolve(what, tok, cause)) == NULL) {
			free(copy);
			if (*cause == NULL)
				*cause = strdup("out of memory");
			return (-1);
		}
		if ((grown = realloc(*items,
		         sizeof *grown * (size_t)(*n + 1))) == NULL) {
			free(item);
			goto oom;
		}
		*items = grown;
		grown[(*n)++] = item;
	}
	free(copy);
	return (0);
oom:
	free(copy);
	*cause = strdup("out of memory");
	return (-1);
}

/* Does the item a ("tool", "tool.action", "tool.*") name tool/action? */
static int
item_matches(const char *a, const char *tool, const char *action)
{
	size_t tl = strlen(tool);

	if (strcmp(a, tool) == 0)
		return (1);
	return (strncmp(a, tool, tl) == 0 && a[tl] == '.' &&
	    (strcmp(a + tl + 1, "*") == 0 ||
	        (action != NULL && strcmp(a + tl + 1, action) == 0)));
}

int
action_in_class(const char *cls, const char *tool, const char *action)
{
	const struct action_class *c = class_named(cls);

	if (c == NULL)
		return (0);
	for (const char *const *p = c->items; *p != NULL; p++)
		if (item_matches(*p, tool, action))
			return (1);
	return (0);
}

int
action_listed(char *const *items, int n, const char *tool, const char *action)
{
	for (int i = 0; i < n; i++) {
		/* A tool's name beats a class's (clipboard: the whole tool,
		 * get too, as before classes: wider, never narrower). */
		if (item_matches(items[i], tool, action))
			return (1);
		if (strchr(items[i], '.') == NULL &&
		    tool_named(items[i], strlen(items[i])) == NULL &&
		    action_in_class(items[i], tool, action))
			return (1);
	}
	return (0);
}

int
action_is_look(const char *tool, const char *action)
{
	if (action == NULL)
		return (0);
	for (const char *const *p = look_items; *p != NULL; p++)
		if (item_matches(*p, tool, action))
			return (1);
	return (0);
}

int
action_keys_present(json_t *req, const char *const *keys, int n,
    const char **present)
{
	int np = 0;

	for (int i = 0; i < n; i++) {
		json_t *v = json_object_get(req, keys[i]);
		if (v != NULL && !json_is_null(v))
			present[np++] = keys[i];
	}
	return (np);
}

json_t *
action_summary(json_t *req, const char *akey)
{
	char buf[ACTION_SUMMARY_MAX + 8];
	size_t off = 0;
	const char *key;
	json_t *v;

	buf[0] = '\0';
	json_object_foreach(req, key, v)
	{
		char val[ACTION_SUMMARY_VALUE + 8];
		int w;

		if (strcmp(key, "token") == 0 || strcmp(key, "id") == 0 ||
		    strcmp(key, "tool") == 0 ||
		    (akey != NULL && strcmp(key, akey) == 0))
			continue;
		if (json_is_string(v) && strcmp(key, "data") == 0) {
			snprintf(val, sizeof val, "<%zu base64 chars>",
			    json_string_length(v));
		} else if (json_is_string(v)) {
			size_t n = json_string_length(v);
			size_t k = n > ACTION_SUMMARY_VALUE ?
			    ACTION_SUMMARY_VALUE :
			    n;
			/* cut at a UTF-8 boundary */
			while (k > 0 && k < n &&
			    ((unsigned char)json_string_value(v)[k] & 0xc0) ==
			        0x80)
				k--;
			snprintf(val, sizeof val, "%.*s%s", (int)k,
			    json_string_value(v), k < n ? "..." : "");
		} else {
			char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			snprintf(val, sizeof val, "%.*s%s",
			    ACTION_SUMMARY_VALUE, d != NULL ? d : "?",
			    d != NULL && strlen(d) > ACTION_SUMMARY_VALUE ?
			        "..." :
			        "");
			free(d);
		}
		w = snprintf(buf + off, sizeof buf - off, "%s%s=%s",
		    off > 0 ? " " : "", key, val);
		if (w < 0 || (size_t)w >= sizeof buf - off) {
			strcpy(buf + ACTION_SUMMARY_MAX, "...");
			break;
		}
		off += (size_t)w;
	}
	/* the cut above may split a character: json_string would fail */
	v = json_string(buf);
	return (v != NULL ? v : json_string("(summary not UTF-8)"));
}
