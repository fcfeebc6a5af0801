/*
 * Unit tests: desktop names (store_valid_name) and the table of a desktop
 * directory's names (store/files.h). A new desktop's name is a DNS label
 * (it becomes the guest's hostname) and never one of the store's own
 * files; a desktop already there under a name of the older rule (capitals,
 * '_', '.') keeps it (issue 38, item 2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-bridge/store/files.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"

static char home[] = "/tmp/bureau-names.XXXXXX";

static int
valid(const char *name)
{
	char *cause = NULL;
	int rv = store_valid_name(name, &cause);

	if (rv != 0) {
		/* the message quotes the name */
		assert_non_null(cause);
		assert_non_null(strstr(cause, name));
		free(cause);
	} else
		assert_null(cause);
	return (rv == 0);
}

static void
test_new_names(void **state)
{
	char n63[64], n64[65];

	(void)state;
	memset(n63, 'a', 63);
	n63[63] = '\0';
	memset(n64, 'a', 64);
	n64[64] = '\0';
	assert_true(valid("work"));
	assert_true(valid("a"));
	assert_true(valid("7"));
	assert_true(valid("web-2"));
	assert_true(valid("0day"));
	assert_true(valid(n63));
	assert_false(valid(n64));
	assert_false(valid(""));
	assert_false(valid("Work"));
	assert_false(valid("work_1"));
	assert_false(valid("work.1"));
	assert_false(valid("-work"));
	assert_false(valid("work-"));
	assert_false(valid("wörk"));
	assert_false(valid("a b"));
	assert_false(valid("a/b"));
	assert_false(valid(".."));
	assert_false(valid("."));
	assert_false(valid(".lock"));
	assert_false(valid("x\ny"));
}

/* The store's own files are never names, not even where they are
 * there (a desktop.json planted in images/ changes nothing). */
static void
test_own_names(void **state)
{
	char *p;
	FILE *f;

	(void)state;
	assert_false(valid("images"));
	assert_false(valid("keys"));
	assert_false(valid("hosts.json"));
	assert_false(valid("mission-control.token"));
	p = hb_fmt("%s/images", home);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
	p = hb_fmt("%s/images/desktop.json", home);
	assert_non_null(f = fopen(p, "w"));
	fclose(f);
	assert_false(valid("images"));
	unlink(p);
	free(p);
	p = hb_fmt("%s/images", home);
	rmdir(p);
	free(p);
	/* hosts.json is a file: never a desktop there */
	p = hb_fmt("%s/hosts.json", home);
	assert_non_null(f = fopen(p, "w"));
	fputs("{}", f);
	fclose(f);
	assert_false(valid("hosts.json"));
	unlink(p);
	free(p);
}

/* A desktop of the older rule keeps its name, and loads; a name of that
 * rule with no desktop there is refused, as is a symlink to one. */
static void
test_old_names(void **state)
{
	struct desktop *d = NULL;
	char *cause = NULL, *dir, *cfg, *link;
	FILE *f;

	(void)state;
	assert_false(valid("Work_1"));
	dir = hb_fmt("%s/Work_1", home);
	cfg = hb_fmt("%s/Work_1/desktop.json", home);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_false(valid("Work_1")); /* a directory, no desktop.json */
	assert_non_null(f = fopen(cfg, "w"));
	fputs("{\"name\": \"Work_1\", \"image\": \"/nonexistent\", "
	      "\"memory\": 1024, \"cpus\": 1, \"port\": 7310}\n",
	    f);
	fclose(f);
	assert_true(valid("Work_1"));
	assert_int_equal(desktop_load("Work_1", &d, &cause), 0);
	assert_string_equal(d->name, "Work_1");
	assert_int_equal(d->port, 7310);
	desktop_free(d);
	/* still nothing of the older rule beyond it */
	assert_false(valid("Work_2"));
	link = hb_fmt("%s/Work_3", home);
	assert_int_equal(symlink(dir, link), 0);
	assert_false(valid("Work_3"));
	unlink(link);
	unlink(cfg);
	rmdir(dir);
	free(link);
	free(dir);
	free(cfg);
}

static void
test_table(void **state)
{
	const struct store_file *f;

	(void)state;
	assert_non_null(f = store_file_find("desktop.json"));
	assert_true(f->flags & SF_SENT);
	assert_non_null(f = store_file_find("system.L0a1b.qcow2"));
	assert_true(
	    (f->flags & (SF_QCOW2 | SF_LAYER)) == (SF_QCOW2 | SF_LAYER));
	assert_non_null(f = store_file_find("home.Lff.qcow2"));
	assert_non_null(f = store_file_find("audit"));
	assert_true(f->flags & SF_DIR);
	assert_non_null(f = store_file_find("audit/12.png"));
	assert_false(f->flags & SF_DIR);
	assert_non_null(f = store_file_find("qemu.pid"));
	assert_false(f->flags & SF_SENT);
	assert_null(store_file_find("system.L.qcow2"));
	assert_null(store_file_find("system.LAB.qcow2"));
	assert_null(store_file_find("system.L0a.qcow2x"));
	assert_null(store_file_find("audit/12.png/x"));
	assert_null(store_file_find("audit/.png"));
	assert_null(store_file_find("audit/12345678901234567890.png"));
	assert_null(store_file_find("audit/1a.png"));
	assert_null(store_file_find("desktop.json.tmp"));
	assert_null(store_file_find("../desktop.json"));
	assert_null(store_file_find(""));
	/* every entry names itself once: no two entries match one name */
	for (const struct store_file *a = store_files; a->name; a++)
		for (const struct store_file *b = a + 1; b->name; b++)
			assert_false(strcmp(a->name, b->name) == 0);
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(home) == NULL)
		return (-1);
	return (setenv("BUREAU_HOME", home, 1));
}

static int
teardown(void **state)
{
	(void)state;
	return (rmdir(home));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_names),
		cmocka_unit_test(test_own_names),
		cmocka_unit_test(test_old_names),
		cmocka_unit_test(test_table),
	};

	return (cmocka_run_group_tests(tests, setup, teardown));
}
