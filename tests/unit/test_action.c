/*
 * Unit tests: common/action.c, the policy lists (parsed and matched),
 * action keys and audit summary that bureaud and the host agent share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/action.h"
#include "tools/tool.h"

static void
test_list_add(void **state)
{
	char **items = NULL, *cause = NULL;
	int n = 0;

	(void)state;
	assert_int_equal(action_list_add(&items, &n, "allow", "", &cause), 0);
	assert_int_equal(n, 0);
	assert_int_equal(action_list_add(&items, &n, "allow",
	                     "bash, computer.screenshot,,file.*\tsystem",
	                     &cause),
	    0);
	assert_int_equal(n, 4);
	assert_string_equal(items[0], "bash");
	assert_string_equal(items[1], "computer.screenshot");
	assert_string_equal(items[2], "file.*");
	assert_string_equal(items[3], "system");
	/* a second list adds to the first (bureaud's repeated --allow) */
	assert_int_equal(
	    action_list_add(&items, &n, "allow", "text_editor.view", &cause),
	    0);
	assert_int_equal(n, 5);
	/* the editor's alias is stored by its name, as requests match */
	assert_string_equal(items[4], "str_replace_based_edit_tool.view");
	assert_true(action_listed(items, n, "file", "write"));
	action_list_free(items, n);
}

static void
test_list_refused(void **state)
{
	static const char *const bad[] = { "computer.click!", "Bash", ".x",
		"x.", "a.b.c", "bash,file.wr-ite", "computer..click", NULL };
	static const char *const unknown[] = { "exec2", "bash,computer.clik",
		"nosuchtool.*", "bash.run", "exec.start", NULL };
	char **items = NULL, *cause = NULL;
	int n = 0;

	(void)state;
	for (int i = 0; bad[i] != NULL; i++) {
		assert_int_equal(
		    action_list_add(&items, &n, "--allow", bad[i], &cause), -1);
		assert_non_null(strstr(cause, "invalid --allow item '"));
		assert_non_null(strstr(cause,
		    "': expected a class, tool, tool.action or tool.*"));
		free(cause);
		cause = NULL;
	}
	/* well formed but naming nothing bureaud has: refused with what
	 * there is, never kept to match nothing (issue 19) */
	for (int i = 0; unknown[i] != NULL; i++) {
		assert_int_equal(action_list_add(&items, &n, "--approve",
		                     unknown[i], &cause),
		    -1);
		assert_non_null(strstr(cause, "unknown --approve item '"));
		free(cause);
		cause = NULL;
	}
	action_list_add(&items, &n, "--approve", "exec2", &cause);
	assert_non_null(strstr(cause,
	    "a class (exec, input, write, "
	    "clipboard, windows, fork)"));
	assert_non_null(strstr(cause, "a tool (computer, system, bash, "));
	free(cause);
	action_list_add(&items, &n, "--approve", "computer.clik", &cause);
	assert_non_null(strstr(cause,
	    "tool 'computer' has actions "
	    "screenshot, zoom, cursor_position, "));
	free(cause);
	action_list_add(&items, &n, "--approve", "bash.run", &cause);
	assert_non_null(strstr(cause, "tool 'bash' has no actions"));
	free(cause);
	/* the items before the bad one stay, for the caller to free */
	assert_int_equal(n, 2);
	assert_string_equal(items[0], "bash");
	assert_string_equal(items[1], "bash");
	action_list_free(items, n);
}

/* The classes of DESIGN.md: each names what it says, and nothing else. */
static void
test_classes(void **state)
{
	char **items = NULL, *cause = NULL;
	int n = 0;

	(void)state;
	assert_int_equal(
	    action_list_add(&items, &n, "--approve", "exec", &cause), 0);
	assert_true(action_listed(items, n, "bash", NULL));
	assert_true(action_listed(items, n, "process", "start"));
	assert_true(action_listed(items, n, "process", "signal"));
	assert_true(action_listed(items, n, "window", "launch"));
	assert_false(action_listed(items, n, "process", "list"));
	assert_false(action_listed(items, n, "window", "activate"));
	assert_false(action_listed(items, n, "computer", "left_click"));
	action_list_free(items, n);
	items = NULL;
	n = 0;
	assert_int_equal(action_list_add(&items, &n, "--allow",
	                     "input,write,windows", &cause),
	    0);
	assert_true(action_listed(items, n, "computer", "left_click"));
	assert_true(action_listed(items, n, "computer", "click"));
	assert_true(action_listed(items, n, "computer", "type"));
	assert_false(action_listed(items, n, "computer", "screenshot"));
	assert_true(action_listed(items, n, "file", "write"));
	assert_true(action_listed(items, n, "file", "remove"));
	assert_false(action_listed(items, n, "file", "read"));
	assert_true(
	    action_listed(items, n, "str_replace_based_edit_tool", "insert"));
	assert_false(
	    action_listed(items, n, "str_replace_based_edit_tool", "view"));
	assert_true(action_listed(items, n, "window", "close"));
	assert_false(action_listed(items, n, "window", "list"));
	assert_false(action_listed(items, n, "bash", NULL));
	action_list_free(items, n);
	/* clipboard is a tool's name and a class's: the whole tool */
	items = NULL;
	n = 0;
	assert_int_equal(
	    action_list_add(&items, &n, "--allow", "clipboard", &cause), 0);
	assert_true(action_listed(items, n, "clipboard", "get"));
	assert_true(action_listed(items, n, "clipboard", "set"));
	action_list_free(items, n);
	assert_true(action_in_class("clipboard", "clipboard", "set"));
	assert_false(action_in_class("clipboard", "clipboard", "get"));
	assert_false(action_in_class("nosuch", "bash", NULL));
}

static void
test_look(void **state)
{
	(void)state;
	assert_true(action_is_look("computer", "screenshot"));
	assert_true(action_is_look("computer", "zoom"));
	assert_true(action_is_look("computer", "cursor_position"));
	assert_true(action_is_look("window", "list"));
	assert_true(action_is_look("system", "ping"));
	assert_true(action_is_look("system", "info"));
	assert_false(action_is_look("computer", "left_click"));
	assert_false(action_is_look("computer", NULL));
	assert_false(action_is_look("bash", NULL));
	assert_false(action_is_look("clipboard", "set"));
	assert_false(action_is_look("process", "start"));
	assert_false(action_is_look("window", "launch"));
	assert_false(action_is_look("file", "write"));
	assert_false(action_is_look("system", "sync"));
}

/* common/'s table of tools and actions is the daemon's own: every tool
 * and action of tools/' entry tables, and nothing else. */
static void
test_table_is_the_daemons(void **state)
{
	const struct action_tool *t;
	int ntools = 0;

	(void)state;
	for (const struct tool_entry *const *e = tool_table; *e != NULL; e++) {
		int nacts = 0, nours = 0;

		ntools++;
		for (t = action_tools; t->name != NULL; t++)
			if (strcmp(t->name, (*e)->name) == 0)
				break;
		assert_non_null(t->name);
		if ((*e)->alias != NULL)
			assert_string_equal(t->alias, (*e)->alias);
		for (const struct tool_action *a = (*e)->actions;
		     a != NULL && a->name != NULL; a++) {
			int found = 0;

			/* computer's OpenAI actions share some names */
			for (const struct tool_action *b = (*e)->actions;
			     b != a; b++)
				if (strcmp(b->name, a->name) == 0)
					found = -1;
			if (found < 0)
				continue;
			nacts++;
			for (const char *const *o = t->actions; *o != NULL; o++)
				if (strcmp(*o, a->name) == 0)
					found = 1;
			if (!found)
				fail_msg("%s.%s missing from common/action.c",
				    (*e)->name, a->name);
		}
		for (const char *const *o = t->actions; *o != NULL; o++)
			nours++;
		assert_int_equal(nours, nacts);
	}
	/* every tool of ours is the daemon's, but the host agent's own */
	for (t = action_tools; t->name != NULL; t++)
		if (!t->host)
			ntools--;
	assert_int_equal(ntools, 0);
}

static void
test_listed(void **state)
{
	char *items[] = { "computer.screenshot", "bash", "file.*",
		"str_replace_based_edit_tool.view" };

	(void)state;
	assert_true(action_listed(items, 4, "computer", "screenshot"));
	assert_false(action_listed(items, 4, "computer", "left_click"));
	assert_false(action_listed(items, 4, "computer", NULL));
	assert_true(action_listed(items, 4, "bash", NULL));
	assert_true(action_listed(items, 4, "file", "write"));
	assert_true(action_listed(items, 4, "file", NULL));
	assert_true(
	    action_listed(items, 4, "str_replace_based_edit_tool", "view"));
	assert_false(
	    action_listed(items, 4, "str_replace_based_edit_tool", "create"));
	/* a prefix of a tool's name is not the tool */
	assert_false(action_listed(items, 4, "comp", "screenshot"));
	assert_false(action_listed(items, 4, "bas", NULL));
	assert_false(action_listed(items, 4, "computers", "screenshot"));
	assert_false(action_listed(items, 0, "bash", NULL));
}

static void
test_keys_present(void **state)
{
	static const char *const keys[] = { "action", "command", "type" };
	const char *present[3];
	json_t *r;

	(void)state;
	r = json_loads("{\"action\":\"click\",\"type\":null,\"command\":7}", 0,
	    NULL);
	assert_int_equal(action_keys_present(r, keys, 3, present), 2);
	assert_string_equal(present[0], "action");
	assert_string_equal(present[1], "command");
	json_decref(r);
	/* null counts as missing, as in the protocol */
	r = json_loads("{\"action\":null,\"type\":\"click\"}", 0, NULL);
	assert_int_equal(action_keys_present(r, keys, 3, present), 1);
	assert_string_equal(present[0], "type");
	json_decref(r);
}

static void
test_summary(void **state)
{
	json_t *r, *s;
	char big[200];

	(void)state;
	r = json_pack("{s:s, s:s, s:s, s:i, s:s, s:[i,i]}", "token", "SECRET",
	    "tool", "computer", "action", "left_click", "id", 4, "data",
	    "QUJDRA==", "coordinate", 1, 2);
	s = action_summary(r, "action");
	assert_non_null(strstr(json_string_value(s), "coordinate=[1,2]"));
	assert_non_null(strstr(json_string_value(s), "data=<8 base64 chars>"));
	assert_null(strstr(json_string_value(s), "SECRET"));
	assert_null(strstr(json_string_value(s), "left_click"));
	assert_null(strstr(json_string_value(s), "id="));
	json_decref(s);
	/* akey NULL: the action stays in the summary */
	s = action_summary(r, NULL);
	assert_non_null(strstr(json_string_value(s), "action=left_click"));
	json_decref(s);
	json_decref(r);
	/* a long value is cut at a character's boundary, the whole bounded */
	memset(big, 0, sizeof big);
	for (int i = 0; i < 59; i++)
		big[i] = 'a';
	strcat(big, "\xc3\xa9\xc3\xa9");
	r = json_pack("{s:s}", "text", big);
	s = action_summary(r, NULL);
	assert_non_null(s);
	assert_string_equal(json_string_value(s),
	    "text=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "...");
	json_decref(s);
	json_decref(r);
	r = json_object();
	for (int i = 0; i < 40; i++) {
		char k[16];
		snprintf(k, sizeof k, "k%02d", i);
		json_object_set_new(r, k, json_string("0123456789"));
	}
	s = action_summary(r, NULL);
	assert_true(strlen(json_string_value(s)) <= ACTION_SUMMARY_MAX + 3);
	json_decref(s);
	json_decref(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_add),
		cmocka_unit_test(test_list_refused),
		cmocka_unit_test(test_listed),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_look),
		cmocka_unit_test(test_table_is_the_daemons),
		cmocka_unit_test(test_keys_present),
		cmocka_unit_test(test_summary),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
