/* tests/test_papi_cuda.c: GPU counters through PAPI's cuda component
 * (collect/papi_cuda.c) on a host whose PAPI may lack it: every event is
 * then unavailable with the reason and the work is never run; with the
 * component (the GPU host's PAPI) the pass runs the work once per event. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <papi.h>
#include <string.h>

#include "../collect/papi.h"
#include "skip.h"

static int runs, prepares;

static int count_prepare(void *ctx, struct opr_error *err)
{
	(void)ctx;
	(void)err;
	prepares++;
	return 0;
}

static int count_run(void *ctx, struct opr_error *err)
{
	(void)ctx;
	(void)err;
	runs++;
	return 0;
}

static int fail_run(void *ctx, struct opr_error *err)
{
	(void)ctx;
	return opr_error_set(err, OPR_EIO, "the work failed");
}

static int has_cuda_component(void)
{
	if (PAPI_is_initialized() == PAPI_NOT_INITED &&
	    PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
		return 0;
	return PAPI_get_component_index("cuda") >= 0;
}

static void test_defaults_are_qualified(void **state)
{
	const char *const *n = col_gpu_default_events();
	size_t k = 0;
	(void)state;
	for (; n[k]; k++) {
		assert_true(strncmp(n[k], "cuda:::", 7) == 0);
		assert_non_null(strstr(n[k], ":device=0"));
		assert_non_null(strstr(n[k], ":stat="));
	}
	assert_int_equal(k, 7);
	assert_non_null(strstr(n[0], "dram__bytes_read"));
	assert_non_null(strstr(n[1], "dram__bytes_write"));
}

static void test_without_component(void **state)
{
	struct opr_error err = { 0 };
	struct col_gpu_counter c[7];
	const char *const *n = col_gpu_default_events();
	(void)state;
	if (has_cuda_component())
		skip(); /* this PAPI has the component: test-cuda covers it */
	runs = prepares = 0;
	assert_int_equal(col_gpu_count(n, 7, count_prepare, count_run, NULL, c, &err), 0);
	assert_int_equal(runs, 0);
	assert_int_equal(prepares, 0);
	for (int i = 0; i < 7; i++) {
		assert_string_equal(c[i].name, n[i]);
		assert_int_equal(c[i].available, 0);
		assert_non_null(strstr(c[i].reason, "no cuda component"));
	}
}

static void test_bad_name_and_failing_work(void **state)
{
	struct opr_error err = { 0 };
	struct col_gpu_counter c[1];
	char longname[200];
	const char *names[1] = { longname };
	(void)state;
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	assert_int_equal(col_gpu_count(names, 1, NULL, count_run, NULL, c, &err), OPR_EINPUT);
	if (!has_cuda_component())
		SKIP_BECAUSE("this PAPI build has no cuda component: a failing counted "
			     "run needs one (the work never runs without it)");
	names[0] = "cuda:::dram__bytes_read:stat=sum:device=0";
	assert_int_equal(col_gpu_count(names, 1, NULL, fail_run, NULL, c, &err), OPR_EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_qualified),
		cmocka_unit_test(test_without_component),
		cmocka_unit_test(test_bad_name_and_failing_work),
	};
	return cmocka_run_group_tests_name("papi_cuda", tests, NULL, NULL);
}
