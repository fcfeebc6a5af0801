/*
 * host-bridge/store/policy: what a desktop's host agent lets a request do
 * (desktop.json's allow and approve lists, which the store keeps). Pure
 * functions over jansson values, shared by the agent and the CLI (which
 * checks a policy before sending it).
 *
 * A policy list has bureaud's --allow syntax (common/action.h): comma-
 * separated items, each a class (exec, input, write, clipboard, windows,
 * fork), "tool" (every action of it), "tool.action" or "tool.*"; a name
 * bureaud does not have is refused. The editor's alias text_editor is
 * stored as its name, str_replace_based_edit_tool, as bureaud matches
 * names.
 */
#ifndef BUREAU_HB_POLICY_H
#define BUREAU_HB_POLICY_H

#include <jansson.h>

#include "common/action.h"

#define POLICY_EDITOR ACTION_EDITOR

struct policy_list {
	char **items;
	int n;
};

/* Parse s into *out (policy_list_clear it); what names the option in the
 * error. An empty string is an empty list. */
int policy_parse(const char *what, const char *s, struct policy_list *out,
    char **cause);
void policy_list_clear(struct policy_list *l);

/* The list as "a,b,c" (malloc'd). */
char *policy_format(const struct policy_list *l);

/* Does an item of l name tool (and action)? An empty list matches
 * nothing: for --allow the caller treats empty as "everything". */
int policy_matches(const struct policy_list *l, const char *tool,
    const char *action);

/*
 * The tool (its canonical name, or the request's own when unknown) and
 * action of req, resolved as bureaud's dispatcher does: "action", else
 * "command", else "type"; bash has none. Unlike the dispatcher, a request
 * that names its action under two keys the daemon reads differently is
 * refused, so the agent and the daemon can never judge different
 * actions: computer takes exactly one of "action", "type" (OpenAI) and
 * "command"; the editor's "command" may not come with an "action". The
 * strings are borrowed from req. -1 with a cause naming the fields.
 */
int policy_resolve(json_t *req, const char **tool, const char **action,
    char **cause);

/* Is this request input to the desktop (everything in computer but
 * screenshot, zoom and cursor_position)? Takeover refuses these. */
int policy_is_input(const char *tool, const char *action);

#endif
