/*
 * Unit tests: desktop.json's one writer (store/store_write.c; issue 39).
 * store_update is a read, a change and a write under an flock of the
 * desktop's directory: processes changing different fields at once (the
 * host agent persisting the policy, `bureau config`, a move) never lose
 * each other's changes, and the file is whole at every moment (written as
 * a new file and renamed). store_save writes it whole; a desktop's files
 * are made by store_create_dir and store_secrets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

static char home[] = "/tmp/bureau-store.XXXXXX";

/* store_update's change: field (arg) one higher. */
static int
bump(json_t *cfg, void *arg, char **cause)
{
	const char *key = arg;

	(void)cause;
	return (json_object_set_new(cfg, key,
	    json_integer(json_integer_value(json_object_get(cfg, key)) + 1)));
}

static struct desktop *
made(const char *name)
{
	struct desktop *d = calloc(1, sizeof *d);
	char *cause = NULL;
	int created = 0;
	json_t *cfg;

	assert_non_null(d);
	d->name = strdup(name);
	d->port = 7310;
	assert_int_equal(store_create_dir(d, &created, &cause), 0);
	assert_true(created);
	assert_int_equal(store_secrets(d, &cause), 0);
	cfg = json_pack("{s:s, s:s, s:i, s:i, s:i}", "name", name, "image",
	    "/nonexistent", "memory", 1536, "cpus", 2, "port", d->port);
	assert_int_equal(store_save(d, cfg, &cause), 0);
	json_decref(cfg);
	return (d);
}

static void
test_update_loses_nothing(void **state)
{
	enum { N = 300, WRITERS = 4 };
	static const char *const keys[WRITERS] = { "a", "b", "c", "d" };
	struct desktop *d = made("upd");
	char *p = desktop_path(d, "desktop.json");
	pid_t kids[WRITERS];
	json_t *j;

	(void)state;
	for (int w = 0; w < WRITERS; w++) {
		if ((kids[w] = fork()) == 0) {
			char *cause = NULL;
			for (int i = 0; i < N; i++)
				if (store_update(d, bump, (void *)keys[w],
				        &cause) != 0)
					_exit(1);
			_exit(0);
		}
		assert_true(kids[w] > 0);
	}
	/* a reader meanwhile always finds the file whole */
	for (int i = 0; i < 200; i++) {
		json_error_t jerr;
		json_t *r = json_load_file(p, 0, &jerr);
		assert_non_null(r);
		assert_string_equal(
		    json_string_value(json_object_get(r, "name")), "upd");
		json_decref(r);
	}
	for (int w = 0; w < WRITERS; w++) {
		int st = 0;
		assert_int_equal(waitpid(kids[w], &st, 0), kids[w]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_non_null(j = json_load_file(p, 0, NULL));
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(
		    json_integer_value(json_object_get(j, keys[w])), N);
	/* the other fields as they were */
	assert_int_equal(json_integer_value(json_object_get(j, "memory")),
	    1536);
	json_decref(j);
	free(p);
	desktop_free(d);
}

static int
refuse(json_t *cfg, void *arg, char **cause)
{
	(void)cfg;
	(void)arg;
	*cause = strdup("no");
	return (-1);
}

static void
test_update_refused_changes_nothing(void **state)
{
	struct desktop *d = made("ref");
	char *p = desktop_path(d, "desktop.json"), *before, *after;
	char *cause = NULL;

	(void)state;
	before = hb_read_file(p);
	assert_int_equal(store_update(d, refuse, NULL, &cause), -1);
	assert_string_equal(cause, "no");
	after = hb_read_file(p);
	assert_string_equal(before, after);
	free(cause);
	free(before);
	free(after);
	free(p);
	desktop_free(d);
}

static void
test_secrets(void **state)
{
	struct desktop *d = made("sec");
	char *t = desktop_path(d, "token"), *g = desktop_path(d, "guest-token");
	char *e = desktop_path(d, "endpoint"), *tok, *gtok, *ep;
	struct stat st;

	(void)state;
	tok = hb_read_file(t);
	gtok = hb_read_file(g);
	ep = hb_read_file(e);
	assert_int_equal(strlen(tok), 64);
	assert_int_equal(strlen(gtok), 64);
	/* the agent's token is never the guest's */
	assert_string_not_equal(tok, gtok);
	assert_string_equal(ep, "tcp://127.0.0.1:7310\n");
	assert_int_equal(stat(t, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(g, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(d->dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	free(tok);
	free(gtok);
	free(ep);
	free(t);
	free(g);
	free(e);
	desktop_free(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_loses_nothing),
		cmocka_unit_test(test_update_refused_changes_nothing),
		cmocka_unit_test(test_secrets),
	};
	int rc;

	if (mkdtemp(home) == NULL)
		return (1);
	setenv("BUREAU_HOME", home, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	hb_rm_tree(home);
	return (rc);
}
