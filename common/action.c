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

int
action_list_add(char ***items, int *n, const char *what, const char *s,
    char **cause)
{
	char *copy = strdup(s), *tok, *save = NULL;

	if (copy == NULL)
		goto oom;
	for (tok = strtok_r(copy, ", \t", &save); tok != NULL;
	     tok = strtok_r(NULL, ", \t", &save)) {
		char **grown;

		if (!action_item_ok(tok)) {
			if (asprintf(cause,
			        "invalid %s item '%s': expected tool, "
			        "tool.action or tool.*",
			        what, tok) < 0)
				*cause = NULL;
			free(copy);
			return (-1);
		}
		if ((grown = realloc(*items,
		         sizeof *grown * (size_t)(*n + 1))) == NULL)
			goto oom;
		*items = grown;
		if ((grown[*n] = strdup(tok)) == NULL)
			goto oom;
		(*n)++;
	}
	free(copy);
	return (0);
oom:
	free(copy);
	*cause = strdup("out of memory");
	return (-1);
}

int
action_listed(char *const *items, int n, const char *tool, const char *action)
{
	size_t tl = strlen(tool);

	for (int i = 0; i < n; i++) {
		const char *a = items[i];

		if (strcmp(a, tool) == 0)
			return (1);
		if (strncmp(a, tool, tl) == 0 && a[tl] == '.' &&
		    (strcmp(a + tl + 1, "*") == 0 ||
		        (action != NULL && strcmp(a + tl + 1, action) == 0)))
			return (1);
	}
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
