/*
 * Unit tests: folding a fork's disk layers back (host-bridge/vm/disks.c's
 * disks_collapse), on real qcow2 chains made and read with qemu-img and
 * qemu-io: data of both the layer and the top survive in the one file
 * left; a layer another desktop shares (two links) or under a top that
 * holds snapshots stays; the layer's own snapshots come back with it.
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

#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/disks.h"

static char dir[64];

static int
is_layer(const char *name)
{
	return (strncmp(name, "system.L", 8) == 0 ||
	    strncmp(name, "home.L", 6) == 0);
}

static int
sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return (system(cmd));
}

/* base <- system.Laaaa (0x11 at 0) <- system.qcow2 (0x22 at 1M), and a
 * home.qcow2 without a backing file. */
static int
setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/bureau-disks.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sh("cd %s && qemu-img create -q -f qcow2 base.qcow2 "
	                    "16M && qemu-img create -q -f qcow2 -F qcow2 -b "
	                    "%s/base.qcow2 system.Laaaa.qcow2 16M && qemu-io "
	                    "-c 'write -P 0x11 0 64k' system.Laaaa.qcow2 "
	                    ">/dev/null && qemu-img create -q -f qcow2 -F "
	                    "qcow2 -b system.Laaaa.qcow2 system.qcow2 16M && "
	                    "qemu-io -c 'write -P 0x22 1M 64k' system.qcow2 "
	                    ">/dev/null && qemu-img create -q -f qcow2 "
	                    "home.qcow2 16M",
	                     dir, dir),
	    0);
	return (0);
}

static int
teardown(void **state)
{
	(void)state;
	sh("rm -rf %s", dir);
	return (0);
}

static int
reads(const char *file, int pattern, const char *off)
{
	return (sh("cd %s && qemu-io -r -c 'read -P 0x%x %s 64k' %s | grep -q "
	           "'^read 65536/65536'",
	    dir, pattern, off, file));
}

static void
test_folds_back(void **state)
{
	struct desktop d = { .name = "t", .dir = dir };
	char *cause = NULL, p[128];

	(void)state;
	assert_int_equal(disks_collapse(&d, is_layer, &cause), 0);
	assert_null(cause);
	snprintf(p, sizeof p, "%s/system.Laaaa.qcow2", dir);
	assert_int_equal(access(p, F_OK), -1); /* folded into the disk */
	assert_int_equal(reads("system.qcow2", 0x11, "0"), 0);
	assert_int_equal(reads("system.qcow2", 0x22, "1M"), 0);
	/* under it now: the image's base, not a layer */
	assert_int_equal(sh("cd %s && qemu-img info -U system.qcow2 | grep -q "
	                    "'backing file: %s/base.qcow2'",
	                     dir, dir),
	    0);
}

static void
test_shared_layer_stays(void **state)
{
	struct desktop d = { .name = "t", .dir = dir };
	char *cause = NULL, p[128], q[128];
	struct stat st;

	(void)state;
	snprintf(p, sizeof p, "%s/system.Laaaa.qcow2", dir);
	snprintf(q, sizeof q, "%s/other-link.qcow2", dir);
	assert_int_equal(link(p, q), 0); /* a fork's link to it */
	assert_int_equal(disks_collapse(&d, is_layer, &cause), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(reads("system.qcow2", 0x22, "1M"), 0);
	assert_int_equal(sh("cd %s && qemu-img info -U system.qcow2 | grep -q "
	                    "'backing file: system.Laaaa.qcow2'",
	                     dir),
	    0);
}

static void
test_top_with_snapshots_stays(void **state)
{
	struct desktop d = { .name = "t", .dir = dir };
	char *cause = NULL, p[128];

	(void)state;
	assert_int_equal(
	    sh("cd %s && qemu-img snapshot -c after system.qcow2", dir), 0);
	assert_int_equal(disks_collapse(&d, is_layer, &cause), 0);
	snprintf(p, sizeof p, "%s/system.Laaaa.qcow2", dir);
	assert_int_equal(access(p, F_OK), 0); /* a commit would lose "after" */
}

static void
test_layer_snapshots_come_back(void **state)
{
	struct desktop d = { .name = "t", .dir = dir };
	char *cause = NULL;

	(void)state;
	/* taken before the fork: in the layer */
	assert_int_equal(sh("cd %s && qemu-img snapshot -c before "
	                    "system.Laaaa.qcow2",
	                     dir),
	    0);
	assert_int_equal(disks_collapse(&d, is_layer, &cause), 0);
	assert_int_equal(sh("cd %s && qemu-img snapshot -l system.qcow2 | grep "
	                    "-q before",
	                     dir),
	    0);
	assert_int_equal(
	    sh("cd %s && qemu-img snapshot -a before system.qcow2 "
	       "&& qemu-io -r -c 'read -P 0 1M 64k' system.qcow2 | "
	       "grep -q '^read 65536/65536'",
	        dir),
	    0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_folds_back, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_shared_layer_stays, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_top_with_snapshots_stays,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_snapshots_come_back,
		    setup, teardown),
	};

	if (system("command -v qemu-img >/dev/null && command -v qemu-io "
	           ">/dev/null") != 0) {
		printf("skipped: qemu-img and qemu-io not installed (make "
		       "deps)\n");
		return (0);
	}
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
