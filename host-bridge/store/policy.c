/*
 * host-bridge/agent/policy.c: policy lists and how a request names its
 * action.
 */
#include <stdlib.h>
#include <string.h>

#include "common/action.h"
#include "host-bridge/store/policy.h"
#include "host-bridge/util/util.h"

void
policy_list_clear(struct policy_list *l)
{
	action_list_free(l->items, l->n);
	l->items = NULL;
	l->n = 0;
}

int
policy_parse(const char *what, const char *s, struct policy_list *out,
    char **cause)
{
	out->items = NULL;
	out->n = 0;
	if (action_list_add(&out->items, &out->n, what, s, cause) != 0) {
		policy_list_clear(out);
		return (-1);
	}
	return (0);
}

char *
policy_format(const struct policy_list *l)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < l->n; i++)
		len += strlen(l->items[i]) + 1;
	if ((s = malloc(len)) == NULL)
		return (NULL);
	s[0] = '\0';
	for (int i = 0; i < l->n; i++) {
		if (i > 0)
			strcat(s, ",");
		strcat(s, l->items[i]);
	}
	return (s);
}

/* bureaud's own matching (common/action.c). */
int
policy_matches(const struct policy_list *l, const char *tool,
    const char *action)
{
	return (action_listed(l->items, l->n, tool, action));
}

int
policy_resolve(json_t *req, const char **toolp, const char **actionp,
    char **cause)
{
	static const char *const keys[] = { "action", "command", "type" };
	json_t *t = json_object_get(req, "tool"), *v;
	const char *tool, *action = NULL, *present[3];
	int np;

	*toolp = NULL;
	*actionp = NULL;
	if (t == NULL) {
		*cause = hb_fmt("missing field 'tool'");
		return (-1);
	}
	if (!json_is_string(t)) {
		*cause = hb_fmt("field 'tool' must be a string");
		return (-1);
	}
	tool = json_string_value(t);
	if (strcmp(tool, "text_editor") == 0)
		tool = POLICY_EDITOR;
	*toolp = tool;
	if (strcmp(tool, "bash") == 0)
		return (0); /* its "command" is a shell line, not an action */
	/* Present as bureaud's dispatcher counts them: null is missing. */
	np = action_keys_present(req, keys, 3, present);
	if (strcmp(tool, "computer") == 0 && np > 1) {
		*cause = hb_fmt("fields '%s' and '%s' both name the action of "
		                "tool 'computer': give one",
		    present[0], present[1]);
		return (-1);
	} else if (strcmp(tool, POLICY_EDITOR) == 0 &&
	    action_keys_present(req, keys, 2, present) == 2) {
		*cause = hb_fmt("fields 'action' and 'command' both name the "
		                "action of tool '%s': give 'command'",
		    POLICY_EDITOR);
		return (-1);
	}
	/* The dispatcher's order: the first of these that is a string. */
	for (size_t i = 0; i < 3 && action == NULL; i++)
		if (json_is_string(v = json_object_get(req, keys[i])))
			action = json_string_value(v);
	*actionp = action;
	return (0);
}

int
policy_is_input(const char *tool, const char *action)
{
	if (strcmp(tool, "computer") != 0)
		return (0);
	if (action == NULL)
		return (1); /* refused by the daemon anyway; never let it by */
	return (strcmp(action, "screenshot") != 0 &&
	    strcmp(action, "zoom") != 0 &&
	    strcmp(action, "cursor_position") != 0);
}
