/*
 * Unit tests: a desktop's limits (host-bridge/vm/limits.c): --cpu-limit's
 * parser (a decimal number of cores from 0.05 to the desktop's vCPUs,
 * nothing else: no unit, sign games, exponents' overflow, NaN or blanks),
 * and the read-back of a process that is in no cgroup of bureau's (this
 * test's own): every limit named as not enforced, no cgroup claimed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-bridge/vm/limits.h"

static void
cpu_is(const char *s, int cpus, long want)
{
	char *cause = NULL;
	long v = -1;

	if (limits_parse_cpu("--cpu-limit", s, cpus, &v, &cause) != 0)
		fail_msg("'%s' refused: %s", s, cause);
	if (v != want)
		fail_msg("'%s' read as %ld milli-cores, not %ld", s, v, want);
}

static void
cpu_refused(const char *s, int cpus)
{
	char *cause = NULL;
	long v = -1;

	if (limits_parse_cpu("--cpu-limit", s, cpus, &v, &cause) == 0)
		fail_msg("'%s' taken as %ld", s, v);
	assert_non_null(strstr(cause, "--cpu-limit"));
	assert_int_equal(v, -1);
	free(cause);
}

static void
test_cpu_limit(void **state)
{
	(void)state;
	cpu_is("0.5", 2, 500);
	cpu_is("2", 2, 2000);
	cpu_is("0.05", 1, 50);
	cpu_is("1.2345", 4, 1235); /* rounded to a milli-core */
	cpu_refused("2.001", 2);   /* more than its vCPUs */
	cpu_refused("0.04", 2);
	cpu_refused("0", 2);
	cpu_refused("-1", 2);
	cpu_refused("", 2);
	cpu_refused("1c", 2);
	cpu_refused(" 1", 2);
	cpu_refused("1 ", 2);
	cpu_refused("nan", 2);
	cpu_refused("inf", 2);
	cpu_refused("1e999", 2);
	cpu_refused("1e0", 2);
	cpu_refused("0x1", 2);
	cpu_refused("1.5.", 2);
	cpu_refused(".5", 2);
	cpu_refused(NULL, 2);
}

static void
test_no_cgroup_of_ours(void **state)
{
	json_t *j = limits_cg_json(getpid());
	const char *ne;

	(void)state;
	assert_non_null(j);
	assert_null(json_object_get(j, "cgroup"));
	assert_null(json_object_get(j, "cpu"));
	ne = json_string_value(json_object_get(j, "not_enforced"));
	assert_non_null(ne);
	assert_string_equal(ne, "cpu, memory, pids");
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_limit),
		cmocka_unit_test(test_no_cgroup_of_ours),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
