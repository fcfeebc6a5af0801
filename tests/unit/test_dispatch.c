/*
 * Unit tests: request validation in runtime/dispatch.c, the command line in
 * runtime/config.c and the argument helpers in tools/call.c. No X server:
 * the computer tool is never initialised here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "runtime/config.h"
#include "runtime/dispatch.h"
#include "runtime/protocol.h"

static struct bd_config cfg;

static int
setup(void **state)
{
	char *argv[] = { "bureaud", "--listen", "tcp://127.0.0.1:1", NULL };
	char *cause = NULL;

	(void)state;
	assert_int_equal(bd_config_load(&cfg, 3, argv, &cause), 0);
	return (0);
}

static int
teardown(void **state)
{
	(void)state;
	bd_config_clear(&cfg);
	return (0);
}

/* Dispatch text with `load` workers busy; return the parsed reply. */
static json_t *
serve_at(const char *req, int load)
{
	size_t len;
	char *out = bd_dispatch(&cfg, req, strlen(req), load, &len);
	json_t *r;

	assert_non_null(out);
	assert_int_equal(strlen(out), len);
	r = json_loads(out, 0, NULL);
	assert_non_null(r);
	free(out);
	return (r);
}

static json_t *
serve(const char *req)
{
	return (serve_at(req, 1));
}

/* Expect an error with this code whose message contains `word`, with
 * `load` workers busy. */
static void
expect_at(const char *req, int load, const char *code, const char *word)
{
	json_t *r = serve_at(req, load);
	json_t *err = json_object_get(r, "error");

	assert_true(json_is_false(json_object_get(r, "ok")));
	assert_non_null(err);
	assert_string_equal(json_string_value(json_object_get(err, "code")),
	    code);
	if (word != NULL &&
	    strstr(json_string_value(json_object_get(err, "message")), word) ==
	        NULL)
		fail_msg("message '%s' lacks '%s'",
		    json_string_value(json_object_get(err, "message")), word);
	json_decref(r);
}

static void
expect(const char *req, const char *code, const char *word)
{
	expect_at(req, 1, code, word);
}

static void
test_not_json(void **state)
{
	(void)state;
	expect("", "bad_request", "JSON");
	expect("{", "bad_request", "JSON");
	expect("{\"tool\":1,}", "bad_request", "JSON");
	expect("{\"a\":1,\"a\":2}", "bad_request", "duplicate");
	expect("[1]", "bad_request", "object");
	expect("7", "bad_request", "object");
	expect("{\"tool\":\"system\",\"x\":\"\xc3\x28\"}", "bad_request", NULL);
}

static void
test_tool_field(void **state)
{
	(void)state;
	expect("{}", "bad_request", "'tool'");
	expect("{\"tool\":5}", "bad_request", "'tool'");
	expect("{\"tool\":\"saw\"}", "unknown_tool", "saw");
	expect("{\"tool\":\"system\"}", "invalid_argument", "'action'");
	expect("{\"tool\":\"system\",\"action\":\"dance\"}", "unknown_action",
	    "dance");
	/* no display: the computer tool says why instead of crashing */
	expect("{\"tool\":\"computer\",\"action\":\"screenshot\"}", "io_error",
	    "display");
}

static void
test_ping_and_id(void **state)
{
	json_t *r;

	(void)state;
	r = serve("{\"id\":[1,\"x\"],\"tool\":\"system\",\"action\":\"ping\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(json_object_get(r, "output")),
	    "pong");
	assert_int_equal(json_array_size(json_object_get(r, "id")), 2);
	assert_true(json_is_number(json_object_get(r, "elapsed_ms")));
	json_decref(r);
}

static void
test_token(void **state)
{
	json_t *r;

	(void)state;
	cfg.token = strdup("s3cret");
	cfg.token_len = 6;
	expect("{\"tool\":\"system\",\"action\":\"ping\"}", "unauthorized",
	    "token");
	expect("{\"tool\":\"system\",\"action\":\"ping\",\"token\":\"s3cre\"}",
	    "unauthorized", "token");
	expect(
	    "{\"tool\":\"system\",\"action\":\"ping\",\"token\":\"s3cretX\"}",
	    "unauthorized", "token");
	expect("{\"tool\":\"system\",\"action\":\"ping\",\"token\":7}",
	    "unauthorized", "token");
	/* auth comes before the tool is even looked up */
	expect("{\"tool\":\"nope\"}", "unauthorized", "token");
	expect("{\"token\":\"s3cret\",\"token\":\"s3cret\"}", "bad_request",
	    "duplicate field 'token'");
	/* an unauthenticated reply echoes nothing of the request */
	r = serve("{\"id\":\"i1\",\"tool\":\"system\",\"action\":\"ping\","
	          "\"token\":\"bad\"}");
	assert_null(json_object_get(r, "id"));
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(r, "error"), "code")),
	    "unauthorized");
	json_decref(r);
	/* the token is compared as JSON means it: escapes decoded */
	r = serve("{\"id\":\"i2\",\"tool\":\"system\",\"action\":\"ping\","
	          "\"\\u0074oken\":\"s3\\u0063ret\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(json_object_get(r, "id")), "i2");
	json_decref(r);
	r = serve(
	    "{\"tool\":\"system\",\"action\":\"ping\",\"token\":\"s3cret\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	free(cfg.token);
	cfg.token = NULL;
	cfg.token_len = 0;
}

/* Authenticated requests are bounded too: a typed error names the limit. */
static void
test_request_limits(void **state)
{
	size_t cap = 64 + 2 * (size_t)BUREAU_MAX_VALUES, n;
	char *big = malloc(cap), limit[32];

	(void)state;
	assert_non_null(big);
	snprintf(limit, sizeof limit, "%d JSON values", BUREAU_MAX_VALUES);
	n = (size_t)sprintf(big,
	    "{\"tool\":\"system\",\"action\":\"ping\","
	    "\"x\":[");
	for (int i = 0; i < BUREAU_MAX_VALUES; i++)
		n += (size_t)sprintf(big + n, "%s0", i > 0 ? "," : "");
	strcpy(big + n, "]}");
	expect(big, "too_large", limit);
	/* with a token: only its holder learns which limit, wherever the
	 * token stands */
	cfg.token = strdup("s3cret");
	cfg.token_len = 6;
	expect(big, "unauthorized", "token");
	strcpy(big + n, "],\"token\":\"s3cret\"}");
	expect(big, "too_large", limit);
	strcpy(big + n, "],\"token\":\"guess\"}");
	expect(big, "unauthorized", "token");
	free(cfg.token);
	cfg.token = NULL;
	cfg.token_len = 0;
	free(big);

	big = malloc(1024);
	assert_non_null(big);
	n = (size_t)sprintf(big,
	    "{\"tool\":\"system\",\"action\":\"ping\","
	    "\"x\":");
	for (int i = 0; i < 300; i++)
		big[n++] = '[';
	big[n] = '\0';
	expect(big, "bad_request", "128 levels");
	free(big);
}

static int published;
static char last_event[1024];

static void
record_event(const char *topic, const char *json, const void *body,
    size_t bodylen)
{
	(void)body;
	(void)bodylen;
	published++;
	snprintf(last_event, sizeof last_event, "%s %s", topic, json);
}

/* Requests without the token never reach the audit trail. */
static void
test_audit_unauthenticated(void **state)
{
	static const char *refused[] = {
		"{\"tool\":\"system\",\"action\":\"ping\",\"m\":\"mark1\"}",
		"{\"tool\":\"system\",\"action\":\"ping\",\"token\":\"no\","
		"\"m\":\"mark2\"}",
		"{\"tool\":\"system\",\"token\":7}",
		"not json",
		"[1]",
	};
	json_t *r;

	(void)state;
	cfg.tool.publish = record_event;
	cfg.token = strdup("s3cret");
	cfg.token_len = 6;
	published = 0;
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		r = serve(refused[i]);
		assert_true(json_is_false(json_object_get(r, "ok")));
		json_decref(r);
	}
	assert_int_equal(published, 0);
	r = serve("{\"tool\":\"system\",\"action\":\"ping\",\"m\":\"mark3\","
	          "\"token\":\"s3cret\"}");
	json_decref(r);
	assert_int_equal(published, 1);
	assert_non_null(strstr(last_event, "\"tool\":\"system\""));
	assert_non_null(strstr(last_event, "mark3"));
	assert_null(strstr(last_event, "s3cret"));
	free(cfg.token);
	cfg.token = NULL;
	cfg.token_len = 0;
	/* without a token configured every request is served and audited */
	r = serve("not json");
	json_decref(r);
	assert_int_equal(published, 2);
	cfg.tool.publish = NULL;
}

static void
test_policy(void **state)
{
	char *allow[] = { "system.ping", "computer" };

	(void)state;
	cfg.allow = allow;
	cfg.nallow = 2;
	expect("{\"tool\":\"system\",\"action\":\"info\"}", "permission_denied",
	    "system.info");
	assert_true(bd_config_allows(&cfg, "system", "ping"));
	assert_true(bd_config_allows(&cfg, "computer", "left_click"));
	assert_false(bd_config_allows(&cfg, "bash", NULL));
	cfg.allow = NULL;
	cfg.nallow = 0;
	assert_true(bd_config_allows(&cfg, "bash", NULL));
}

/* Policy, the handler and the audit trail must see one action: a request
 * naming another action under a second key was a way past --allow. */
static void
test_action_keys(void **state)
{
	char *allow[] = { "str_replace_based_edit_tool.view",
		"computer.screenshot", "system" };
	char dir[] = "/tmp/bureau-test-XXXXXX", path[64], req[256];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/created", dir);
	cfg.allow = allow;
	cfg.nallow = 3;
	/* the editor acts on "command": "action" beside it is refused */
	snprintf(req, sizeof req,
	    "{\"tool\":\"str_replace_based_edit_tool\","
	    "\"action\":\"view\",\"command\":\"create\",\"path\":\"%s\","
	    "\"file_text\":\"pwned\"}",
	    path);
	expect(req, "bad_request", "'command'");
	expect(req, "bad_request", "'action'");
	assert_int_equal(stat(path, &st), -1);
	/* the same through the alias */
	snprintf(req, sizeof req,
	    "{\"tool\":\"text_editor\","
	    "\"action\":\"view\",\"command\":\"create\",\"path\":\"%s\","
	    "\"file_text\":\"pwned\"}",
	    path);
	expect(req, "bad_request", "'command'");
	assert_int_equal(stat(path, &st), -1);
	/* and "create" alone is checked as create */
	snprintf(req, sizeof req,
	    "{\"tool\":\"text_editor\","
	    "\"command\":\"create\",\"path\":\"%s\",\"file_text\":\"x\"}",
	    path);
	expect(req, "permission_denied", "str_replace_based_edit_tool.create");
	assert_int_equal(stat(path, &st), -1);
	/* "action" where the editor wants "command" */
	expect("{\"tool\":\"text_editor\",\"action\":\"view\","
	       "\"path\":\"/\"}",
	    "bad_request", "'command'");
	assert_int_equal(rmdir(dir), 0);

	/* computer: Anthropic "action" and OpenAI "type" together */
	expect("{\"tool\":\"computer\",\"action\":\"screenshot\","
	       "\"type\":\"click\",\"x\":5,\"y\":5}",
	    "bad_request", "'type'");
	/* "command" names nothing on the computer: "type" is the action,
	 * and policy judges the click (the old code judged "screenshot") */
	expect("{\"tool\":\"computer\",\"command\":\"screenshot\","
	       "\"type\":\"click\",\"x\":5,\"y\":5}",
	    "permission_denied", "computer.click");
	/* allowed actions still reach the tool (no display here) */
	expect("{\"tool\":\"computer\",\"type\":\"screenshot\"}", "io_error",
	    "display");
	expect("{\"tool\":\"computer\",\"action\":\"screenshot\","
	       "\"type\":null}",
	    "io_error", "display");
	cfg.allow = NULL;
	cfg.nallow = 0;

	/* the table makes the errors */
	expect("{\"tool\":\"computer\",\"type\":\"left_click\"}",
	    "unknown_action", "expected one of click, double_click");
	expect("{\"tool\":\"computer\",\"action\":\"click\"}", "unknown_action",
	    "expected one of screenshot, zoom");
	expect("{\"tool\":\"computer\"}", "invalid_argument",
	    "'action' or 'type'");
	expect("{\"tool\":\"computer\",\"type\":7}", "bad_request", "'type'");
	expect("{\"tool\":\"file\",\"action\":\"chmod\"}", "unknown_action",
	    "read, write, list, stat, remove, mkdir, move");
	expect("{\"tool\":\"text_editor\",\"command\":\"delete\"}",
	    "unknown_action",
	    "Unrecognized command delete. The allowed "
	    "commands for the str_replace_based_edit_tool tool are: view, "
	    "create, str_replace, insert, undo_edit");
}

/* The quick-worker reserve judges the resolved action: an OpenAI wait
 * dressed up with another key is still a wait. */
static void
test_quick_reserve(void **state)
{
	int full = cfg.workers;

	(void)state;
	expect_at("{\"tool\":\"computer\",\"command\":\"screenshot\","
	          "\"type\":\"wait\",\"ms\":1}",
	    full, "busy", "workers");
	expect_at("{\"tool\":\"computer\",\"type\":\"wait\"}", full, "busy",
	    "workers");
	expect_at("{\"tool\":\"computer\",\"action\":\"hold_key\"}", full,
	    "busy", "workers");
	expect_at("{\"tool\":\"bash\",\"command\":\"true\"}", full, "busy",
	    "workers");
	expect_at("{\"tool\":\"window\",\"action\":\"launch\"}", full, "busy",
	    "workers");
	/* quick ones pass (and fail later for want of a display) */
	expect_at("{\"tool\":\"computer\",\"type\":\"click\"}", full,
	    "io_error", "display");
	expect_at("{\"tool\":\"computer\",\"action\":\"screenshot\"}", full,
	    "io_error", "display");
	expect_at("{\"tool\":\"system\",\"action\":\"bogus\"}", full,
	    "unknown_action", "ping, info");
}

static void
test_url_local(void **state)
{
	(void)state;
	assert_true(bd_url_is_local("tcp://127.0.0.1:7300"));
	assert_true(bd_url_is_local("tcp://localhost:7300"));
	assert_true(bd_url_is_local("tcp://[::1]:7300"));
	assert_true(bd_url_is_local("ipc:///run/bureau/bureaud.sock"));
	assert_false(bd_url_is_local("tcp://0.0.0.0:7300"));
	assert_false(bd_url_is_local("tcp://*:7300"));
	assert_false(bd_url_is_local("tcp://10.0.2.15:7300"));
	assert_false(bd_url_is_local("ws://127.0.0.1:7300"));
	assert_false(bd_url_is_local("tcp://127.evil.example:1"));
}

static void
test_command_line(void **state)
{
	struct bd_config c;
	char *cause = NULL;
	char *ok[] = { "bureaud", "--listen", "tcp://127.0.0.1:9000", "--scale",
		"1024x768", "--workers", "4", "--max-request", "1M", NULL };
	char *bad_scale[] = { "bureaud", "--scale", "0x0", NULL };
	char *bad_workers[] = { "bureaud", "--workers", "many", NULL };
	char *extra[] = { "bureaud", "stray", NULL };

	(void)state;
	assert_int_equal(bd_config_load(&c, 9, ok, &cause), 0);
	assert_int_equal(c.workers, 4);
	assert_int_equal(c.max_request, 1 << 20);
	assert_int_equal(c.tool.scale, CAP_SCALE_FIXED);
	assert_int_equal(c.tool.scale_w, 1024);
	assert_string_equal(c.events, "tcp://127.0.0.1:9001");
	bd_config_clear(&c);

	assert_int_equal(bd_config_load(&c, 3, bad_scale, &cause), -1);
	assert_non_null(strstr(cause, "0x0"));
	free(cause);
	bd_config_clear(&c);
	cause = NULL;
	assert_int_equal(bd_config_load(&c, 3, bad_workers, &cause), -1);
	assert_non_null(strstr(cause, "workers"));
	free(cause);
	bd_config_clear(&c);
	cause = NULL;
	assert_int_equal(bd_config_load(&c, 2, extra, &cause), -1);
	assert_non_null(strstr(cause, "stray"));
	free(cause);
	bd_config_clear(&c);
}

/* The argument helpers name the field and give the right code. */
static void
test_args(void **state)
{
	struct tool_call call = { 0 };
	long long n;
	double d;
	int a, b, have;
	const char *s;

	(void)state;
	call.req = json_pack("{s:i, s:s, s:f, s:[i,i], s:[i], s:b}", "n", 5,
	    "s", "str", "f", 2.5, "p", 3, 4, "bad", 1, "t", 1);
	call.reply = json_object();
	assert_int_equal(tool_arg_int(&call, "n", 1, 0, 10, 0, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(tool_arg_int(&call, "missing", 0, 0, 10, 7, &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(tool_arg_pair(&call, "p", 1, &a, &b, &have), 0);
	assert_int_equal(a * 10 + b, 34);
	assert_int_equal(tool_arg_num(&call, "f", 1, 0, 3, 0, &d), 0);
	assert_int_equal(tool_arg_str(&call, "s", 1, NULL, &s), 0);
	assert_string_equal(s, "str");

	assert_int_equal(tool_arg_int(&call, "n", 1, 6, 10, 0, &n), BD_EBOUNDS);
	assert_non_null(strstr(call.message, "'n'"));
	free(call.message);
	call.message = NULL;
	call.code = 0;
	assert_int_equal(tool_arg_int(&call, "s", 1, 0, 10, 0, &n), BD_EBADREQ);
	assert_non_null(strstr(call.message, "'s'"));
	free(call.message);
	call.message = NULL;
	call.code = 0;
	assert_int_equal(tool_arg_pair(&call, "bad", 1, &a, &b, &have),
	    BD_EBADREQ);
	free(call.message);
	call.message = NULL;
	call.code = 0;
	assert_int_equal(tool_arg_str(&call, "nope", 1, NULL, &s), BD_EINVAL);
	assert_non_null(strstr(call.message, "'nope'"));
	free(call.message);
	json_decref(call.req);
	json_decref(call.reply);
}

static void
test_base64(void **state)
{
	uint8_t *out;
	size_t len, n;
	char *s;

	(void)state;
	s = tool_b64_encode("hello", 5, &n);
	assert_string_equal(s, "aGVsbG8=");
	assert_int_equal(n, 8);
	assert_int_equal(tool_b64_decode(s, n, &out, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(out, "hello", 5);
	free(out);
	free(s);
	assert_int_equal(tool_b64_decode("aGVsbG8", 7, &out, &len), 0);
	free(out);
	assert_int_equal(tool_b64_decode("a\nGVs bG8=", 10, &out, &len), 0);
	assert_int_equal(len, 5);
	free(out);
	assert_int_equal(tool_b64_decode("!!!!", 4, &out, &len), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_tool_field),
		cmocka_unit_test(test_ping_and_id),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_request_limits),
		cmocka_unit_test(test_audit_unauthenticated),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_action_keys),
		cmocka_unit_test(test_quick_reserve),
		cmocka_unit_test(test_url_local),
		cmocka_unit_test(test_command_line),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_base64),
	};

	return (cmocka_run_group_tests(tests, setup, teardown));
}
