/*
 * common/action.c: policy matching, action keys and audit summaries shared
 * by bureaud and the host agent (see action.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/action.h"

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
