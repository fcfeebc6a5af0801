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
	assert_string_equal(items[4], "text_editor.view");
	assert_true(action_listed(items, n, "file", "write"));
	action_list_free(items, n);
}

static void
test_list_refused(void **state)
{
	static const char *const bad[] = { "computer.click!", "Bash", ".x",
		"x.", "a.b.c", "bash,file.wr-ite", "computer..click", NULL };
	char **items = NULL, *cause = NULL;
	int n = 0;

	(void)state;
	for (int i = 0; bad[i] != NULL; i++) {
		assert_int_equal(
		    action_list_add(&items, &n, "--allow", bad[i], &cause), -1);
		assert_non_null(strstr(cause, "invalid --allow item '"));
		assert_non_null(
		    strstr(cause, "': expected tool, tool.action or tool.*"));
		free(cause);
		cause = NULL;
	}
	/* the items before the bad one stay, for the caller to free */
	assert_int_equal(n, 1);
	assert_string_equal(items[0], "bash");
	action_list_free(items, n);
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
		cmocka_unit_test(test_keys_present),
		cmocka_unit_test(test_summary),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
