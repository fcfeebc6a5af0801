/*
 * common/action: policy lists and how a request names its tool and action,
 * judged the same way by bureaud (runtime/) and by the host agent
 * (host-bridge/agent/), which enforces the operator's policy in front of
 * it. One source, compiled into both, so the two can never judge one
 * request differently. Pure functions over jansson values; no allocation
 * but the lists and the summary.
 */
#ifndef BUREAU_COMMON_ACTION_H
#define BUREAU_COMMON_ACTION_H

#include <jansson.h>

/* The editor's name, as bureaud matches it (text_editor is its alias). */
#define ACTION_EDITOR "str_replace_based_edit_tool"

/* A tool bureaud serves: its name, another name requests may use, its
 * actions (NULL-terminated; none for bash). The table ends with a NULL
 * name. */
struct action_tool {
	const char *name;
	const char *alias;
	const char *const *actions;
	int host; /* served by the host agent, never by bureaud (operator) */
};
extern const struct action_tool action_tools[];

/* An action class: a name standing for "tool" and "tool.action" items
 * (NULL-terminated). The table ends with a NULL name. */
struct action_class {
	const char *name;
	const char *const *items;
};
extern const struct action_class action_classes[];

/*
 * Add the items of the policy list s to (*items)[0..*n), each malloc'd:
 * bureaud's --allow syntax, items separated by commas, spaces or tabs,
 * each a class (exec, input, write, clipboard, windows, fork), "tool",
 * "tool.action" or "tool.*" of a tool and action bureaud has; the
 * editor's alias text_editor is stored as its name. An empty string adds
 * nothing. -1 with a cause (malloc'd, or NULL when even that failed):
 * "invalid WHAT item 'X': ..." for a malformed item, "unknown WHAT item
 * 'X': ..." with the valid names for one that names nothing, or "out of
 * memory"; the items added before stay, for the caller to free with
 * action_list_free.
 */
int action_list_add(char ***items, int *n, const char *what, const char *s,
    char **cause);
void action_list_free(char **items, int n);

/*
 * Does a policy list (action_list_add's items, n of them) name tool and
 * action, by a tool item or a class? action NULL: the tool has none
 * (bash), and only "tool" or "tool.*" match. A name that is a tool's and
 * a class's (clipboard) is the whole tool. An empty list matches
 * nothing: the callers decide what that means (bureaud: allow all).
 */
int action_listed(char *const *items, int n, const char *tool,
    const char *action);

/* Is tool/action in class cls (0 for an unknown class)? */
int action_in_class(const char *cls, const char *tool, const char *action);

/* May an agent do this while an operator has taken over (only look:
 * computer screenshot, zoom, cursor_position; window list; accessibility
 * tree, find; system ping, info)? */
int action_is_look(const char *tool, const char *action);

/*
 * The keys among keys[0..n) that req holds with a value other than null
 * (null counts as missing, as everywhere in the protocol), in that order,
 * into present[] (borrowed; at most n). Returns how many.
 */
int action_keys_present(json_t *req, const char *const *keys, int n,
    const char **present);

/*
 * A short summary of req's arguments for an audit trail, without
 * secrets: the token, the id, the tool and the field akey (the one naming
 * the action, carried apart; NULL: none) are left out, base64 "data" is
 * given by its length, long values are cut (at a UTF-8 boundary), the
 * whole at ACTION_SUMMARY_MAX bytes. A new JSON string (the caller
 * decrefs); never NULL but when out of memory.
 */
#define ACTION_SUMMARY_MAX   240
#define ACTION_SUMMARY_VALUE 60
json_t *action_summary(json_t *req, const char *akey);

#endif
