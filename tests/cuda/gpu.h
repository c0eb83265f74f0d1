/* tests/cuda/gpu.h: the one GPU the CUDA tests share, opened once per group
 * (cmocka group setup), and NEED_GPU(), which reports a test skipped with
 * the reason where no GPU could be opened: never passed. Include after
 * <cmocka.h>, ops/cuda/cuda.h and tests/skip.h. */
#ifndef TESTS_CUDA_GPU_H
#define TESTS_CUDA_GPU_H

static struct ops_cuda *cu;
static char no_gpu[256];

static int group_setup(void **state)
{
	struct opr_error err = { 0 };
	(void)state;
	if (ops_cuda_new(0, &cu, &err) < 0) {
		snprintf(no_gpu, sizeof no_gpu, "%s", err.msg);
		cu = NULL;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	ops_cuda_free(cu);
	return 0;
}

#define NEED_GPU()                                         \
	do {                                               \
		if (!cu)                                   \
			SKIP_BECAUSE("no GPU: %s", no_gpu); \
	} while (0)

#endif
