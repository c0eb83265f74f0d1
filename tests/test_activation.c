/* tests/test_activation.c: the activation kernels against the fp64 reference
 * (contiguous, strided views, in place, ranks 0..8, fp32/fp16/bf16) and the
 * exact device counters of the strided operator (real and dry run). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ops/activation_int.h"
#include "../ops/device_int.h"
#include "test_isa.h"

static const enum ops_act all_acts[] = {
	OPS_ACT_RELU, OPS_ACT_GELU_ERF, OPS_ACT_GELU_TANH,
	OPS_ACT_SILU, OPS_ACT_SIGMOID, OPS_ACT_TANH,
};
#define NACTS_TESTED (sizeof all_acts / sizeof all_acts[0])

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	/* xorshift64*: a fixed seed, so failures reproduce */
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ull;
}
static double urand(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

static void test_envelope(struct ops_envelope *e, double shared_kib)
{
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "test-npu");
	snprintf(e->power_mode, sizeof e->power_mode, "nominal");
	e->clock_ghz = 1.0;
	e->clock_scale = 1.0;
	e->cores = 4;
	e->global_bw_gbps = 200.0;
	e->global_capacity_gib = 16.0;
	e->shared_capacity_kib = shared_kib;
	e->shared_bw_gbps = 2000.0;
	e->local_capacity_kib = 64.0;
	e->dma_max_last_dim = 65535;
	e->dma_setup_ns = 50.0;
	e->dma_engines = 2;
	for (int t = 0; t < OPS_NDTYPES; t++)
		e->tops[t] = 10.0;
	e->launch_overhead_us = 2.0;
}

static double thresh(enum ops_dtype t)
{
	return t == OPS_F32 ? 1e-5 : t == OPS_F16 ? 2e-3 : 1.6e-2;
}

static double load(enum ops_dtype t, const void *p, int64_t i)
{
	if (t == OPS_F32)
		return ((const float *)p)[i];
	if (t == OPS_F16)
		return ops_f16_to_f32(((const uint16_t *)p)[i]);
	return ops_bf16_to_f32(((const uint16_t *)p)[i]);
}

static void store(enum ops_dtype t, void *p, int64_t i, float v)
{
	if (t == OPS_F32)
		((float *)p)[i] = v;
	else if (t == OPS_F16)
		((uint16_t *)p)[i] = ops_f32_to_f16(v);
	else
		((uint16_t *)p)[i] = ops_f32_to_bf16(v);
}

/* ---- the fp32 vector kernels ------------------------------------------------- */

static void test_act_f32_accuracy(void **state)
{
	isa_use(state);
	const size_t n = 10007; /* not a multiple of 8: the tail runs too */
	float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
	assert_non_null(x);
	assert_non_null(y);
	assert_non_null(z);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)urand(-8.0, 8.0);
	for (size_t k = 0; k < NACTS_TESTED; k++) {
		enum ops_act a = all_acts[k];
		double num = 0, den = 0;
		memset(y, 0xFF, n * sizeof *y);
		ops_act_f32(a, x, y, n);
		for (size_t i = 0; i < n; i++) {
			double r = ops_act_ref(a, x[i]);
			assert_false(isnan(y[i]));
			num += (y[i] - r) * (y[i] - r);
			den += r * r;
		}
		double rel = sqrt(num / den);
		if (!(rel <= 1e-5))
			fail_msg("%s: rel L2 %.3g > 1e-5", ops_act_name(a), rel);
		/* in place gives the same bits; so does one element at a time
		 * (the tail path) */
		memcpy(z, x, n * sizeof *z);
		ops_act_f32(a, z, z, n);
		assert_memory_equal(y, z, n * sizeof *y);
		for (size_t i = 0; i < 37; i++) {
			float one = NAN;
			ops_act_f32(a, &x[i * 97], &one, 1);
			assert_memory_equal(&one, &y[i * 97], sizeof one);
		}
	}
	free(x);
	free(y);
	free(z);
}

static void test_act_f32_tails_of_the_range(void **state)
{
	isa_use(state);
	/* wide inputs: exp must neither wrap nor lose accuracy */
	float x[64], y[64];
	for (int i = 0; i < 64; i++)
		x[i] = (float)urand(-90.0, 90.0);
	for (size_t k = 0; k < NACTS_TESTED; k++) {
		ops_act_f32(all_acts[k], x, y, 64);
		for (int i = 0; i < 64; i++) {
			double r = ops_act_ref(all_acts[k], x[i]);
			double tol = 1e-6 * fabs(r) + 1e-30;
			/* the fp64 references of both gelus cancel for x < -5
			 * (1 + erf, 1 + tanh): compare to erfc there, or
			 * absolutely */
			if (all_acts[k] == OPS_ACT_GELU_ERF) {
				r = 0.5 * x[i] * erfc(-x[i] / sqrt(2.0));
				tol = 2e-5 * fabs(r) + 1e-37;
			}
			if (all_acts[k] == OPS_ACT_GELU_TANH && x[i] < -5.0f)
				tol = 1e-12;
			if (!(fabs(y[i] - r) <= tol))
				fail_msg("%s(%g) = %g, want %g", ops_act_name(all_acts[k]),
					 x[i], y[i], r);
		}
	}
	float s[4] = { -INFINITY, INFINITY, NAN, 0.25f }, o[4];
	for (size_t k = 0; k < NACTS_TESTED; k++) {
		enum ops_act a = all_acts[k];
		ops_act_f32(a, s, o, 4);
		assert_true(isnan(o[2]));
		assert_false(isnan(o[0]));
		assert_false(isnan(o[1]));
		double lim_neg = a == OPS_ACT_TANH ? -1.0 : 0.0;
		double lim_pos = a == OPS_ACT_TANH || a == OPS_ACT_SIGMOID ? 1.0 : INFINITY;
		assert_true(o[0] == lim_neg);
		assert_true(o[1] == lim_pos);
	}
}

/* Every path computes the same operations in the same order (ops/kern_act.h):
 * the vector paths give the portable path's bits, tails included. */
static void test_act_paths_same_bits(void **state)
{
	(void)state;
	enum { N = 1037 };
	float *x = malloc(N * sizeof *x), *ref = malloc(N * sizeof *ref), *y = malloc(N * sizeof *y);
	int others = 0;

	assert_true(x && ref && y);
	for (int i = 0; i < N; i++)
		x[i] = (float)urand(-30.0, 30.0);
	x[0] = -INFINITY, x[1] = INFINITY, x[2] = NAN, x[3] = -0.0f, x[4] = 1e-40f, x[5] = -100.0f;
	for (size_t k = 0; k < NACTS_TESTED; k++) {
		assert_int_equal(ops_isa_select(OPS_ISA_SCALAR, NULL), 0);
		memset(ref, 0xFF, N * sizeof *ref);
		ops_act_f32(all_acts[k], x, ref, N);
		for (int p = OPS_ISA_SCALAR + 1; p < OPS_NISAS; p++) {
			if (!ops_isa_host_has((enum ops_isa)p))
				continue;
			others++;
			assert_int_equal(ops_isa_select((enum ops_isa)p, NULL), 0);
			for (size_t n = N - 17; n <= N; n += 8) {
				memset(y, 0xFF, N * sizeof *y);
				ops_act_f32(all_acts[k], x, y, n);
				/* (a NaN is a NaN: its sign follows the operand order
				 * of the instructions, which the paths may differ in) */
				for (size_t e = 0; e < n; e++)
					if (memcmp(&y[e], &ref[e], sizeof *y) && !(isnan(y[e]) && isnan(ref[e])))
						fail_msg("%s(%a): path %s gives %a, the portable path %a",
							 ops_act_name(all_acts[k]), (double)x[e],
							 ops_isa_name((enum ops_isa)p), (double)y[e], (double)ref[e]);
			}
		}
	}
	assert_int_equal(ops_isa_select(ops_isa_host_best(), NULL), 0);
	free(x);
	free(ref);
	free(y);
	if (!others)
		SKIP_BECAUSE("this CPU has the portable path only: nothing to compare");
}

/* ---- the strided operator ------------------------------------------------------ */

/* A random view of dims inside a larger buffer: dims laid out in a random
 * order (transposed) with random padding (sliced). Returns the buffer size
 * in elements. */
static int64_t random_layout(int rank, const int64_t *dims, int64_t *stride)
{
	int order[OPS_MAX_RANK];
	for (int i = 0; i < rank; i++)
		order[i] = i;
	for (int i = rank - 1; i > 0; i--) {
		int j = (int)(rnd() % (uint64_t)(i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	int64_t m = 1, extent = 1;
	for (int k = rank - 1; k >= 0; k--) {
		int d = order[k];
		stride[d] = m;
		m *= dims[d] + (int64_t)(rnd() % 3 == 0 ? rnd() % 3 : 0);
	}
	for (int i = 0; i < rank; i++)
		extent += (dims[i] > 0 ? dims[i] - 1 : 0) * stride[i];
	return extent > m ? extent : m;
}

static int64_t offset_of(int rank, const int64_t *dims, const int64_t *stride, int64_t lin)
{
	int64_t off = 0;
	for (int i = rank - 1; i >= 0; i--) {
		off += (lin % dims[i]) * stride[i];
		lin /= dims[i];
	}
	return off;
}

/* Runs one random strided case (real and dry), checks values and counters. */
static void run_case(const struct ops_envelope *env, enum ops_dtype t, enum ops_act a,
		     int rank, const int64_t *dims, int in_place, double *worst)
{
	int64_t xs[OPS_MAX_RANK], ys[OPS_MAX_RANK], n = 1;
	size_t es = ops_dtype_size(t);
	struct opr_error err = { 0 };
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	int64_t xn = random_layout(rank, dims, xs);
	int64_t yn = xn;
	if (in_place)
		memcpy(ys, xs, sizeof xs);
	else
		yn = random_layout(rank, dims, ys);
	unsigned char *x = malloc((size_t)xn * es), *x0 = malloc((size_t)xn * es);
	unsigned char *y = in_place ? x : malloc((size_t)yn * es);
	unsigned char *inview = calloc((size_t)yn, 1);
	assert_non_null(x);
	assert_non_null(x0);
	assert_non_null(y);
	assert_non_null(inview);
	for (int64_t i = 0; i < xn; i++)
		store(t, x, i, (float)urand(-8.0, 8.0));
	memcpy(x0, x, (size_t)xn * es);
	if (!in_place)
		memset(y, 0xFF, (size_t)yn * es);

	struct ops_device *dev, *dry;
	assert_int_equal(ops_device_new(env, 0, &dev, &err), 0);
	assert_int_equal(ops_device_new(env, 1, &dry, &err), 0);
	int rc = ops_activation_strided(dev, a, t, rank, dims, x, xs, y, ys, &err);
	if (rc)
		fail_msg("rank %d: %s", rank, err.msg);
	assert_int_equal(ops_activation_strided(dry, a, t, rank, dims, NULL, xs, NULL, ys, &err), 0);
	assert_memory_equal(ops_device_counters(dev), ops_device_counters(dry),
			    sizeof(struct ops_counters));
	const struct ops_counters *c = ops_device_counters(dev);
	assert_int_equal(c->launches, 1);
	assert_int_equal(c->bytes[OPS_GLOBAL][OPS_SHARED], (uint64_t)n * es);
	assert_int_equal(c->bytes[OPS_SHARED][OPS_GLOBAL], (uint64_t)n * es);
	assert_int_equal(c->elem_ops, (uint64_t)n);

	double num = 0, den = 0;
	for (int64_t l = 0; l < n; l++) {
		int64_t xo = offset_of(rank, dims, xs, l), yo = offset_of(rank, dims, ys, l);
		double r = ops_act_ref(a, load(t, x0, xo));
		double v = load(t, y, yo);
		assert_false(isnan(v));
		num += (v - r) * (v - r);
		den += r * r;
		inview[yo] = 1;
	}
	/* nothing outside the view was written */
	for (int64_t i = 0; i < yn && !in_place; i++)
		if (!inview[i])
			for (size_t b = 0; b < es; b++)
				assert_int_equal(y[(size_t)i * es + b], 0xFF);
	/* a value below the storage dtype's smallest normal cannot be held to
	 * a relative error (fp16 keeps 2^-24 steps there, so a gelu of -7 is
	 * 0): errors count relative to at least that normal, per element */
	double tiny = t == OPS_F16 ? ldexp(1.0, -14) : t == OPS_BF16 ? ldexp(1.0, -126) : 0.0;
	den += (double)n * tiny * tiny;
	double rel = den > 0 ? sqrt(num / den) : sqrt(num);
	if (!(rel <= thresh(t)))
		fail_msg("%s %s rank %d in_place %d: rel L2 %.3g", ops_dtype_name(t),
			 ops_act_name(a), rank, in_place, rel);
	if (rel > *worst)
		*worst = rel;
	ops_device_free(dev);
	ops_device_free(dry);
	if (!in_place)
		free(y);
	free(x);
	free(x0);
	free(inview);
}

static void test_strided_random_views(void **state)
{
	isa_use(state);
	struct ops_envelope env;
	test_envelope(&env, 4.0); /* small SHARED: many tiles, partial ones */
	const enum ops_dtype types[3] = { OPS_F32, OPS_F16, OPS_BF16 };
	for (int ti = 0; ti < 3; ti++) {
		double worst = 0;
		for (int rank = 0; rank <= OPS_MAX_RANK; rank++)
			for (int rep = 0; rep < 4; rep++) {
				int64_t dims[OPS_MAX_RANK];
				for (int i = 0; i < rank; i++)
					dims[i] = 1 + (int64_t)(rnd() % (rank > 5 ? 3 : 7));
				enum ops_act a = all_acts[rnd() % NACTS_TESTED];
				run_case(&env, types[ti], a, rank, dims, rep == 3, &worst);
			}
		print_message("%s: worst rel L2 %.3g\n", ops_dtype_name(types[ti]), worst);
	}
}

static void test_strided_large_last_dim(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 1024.0);
	const int64_t dims[2] = { 2, 70000 }, st[2] = { 70000, 1 };
	struct ops_plan plan = { .double_buffer = 1 };
	plan.p[0] = 100000;
	float *x = malloc(140000 * sizeof *x), *y = malloc(140000 * sizeof *y);
	struct opr_error err = { 0 };
	struct ops_device *dev;
	assert_non_null(x);
	assert_non_null(y);
	for (int i = 0; i < 140000; i++)
		x[i] = (float)urand(-8.0, 8.0);
	memset(y, 0xFF, 140000 * sizeof *y);
	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	assert_int_equal(ops_activation_strided_plan(dev, &plan, OPS_ACT_SILU, OPS_F32, 2, dims,
						     x, st, y, st, &err), 0);
	/* coalesced to [140000]; tile 100000 -> k=0 (140000 > tile), q = 100000:
	 * 2 tiles (100000, 40000); each DMA splits at 65535: tile 0 in 2
	 * transfers, tile 1 in 1, both directions */
	const struct ops_counters *c = ops_device_counters(dev);
	assert_int_equal(c->tiles, 2);
	assert_int_equal(c->transfers, 2 * (2 + 1));
	assert_int_equal(c->splits, 2 * 1);
	assert_int_equal(c->bytes[OPS_GLOBAL][OPS_SHARED], 140000 * 4);
	assert_int_equal(c->bytes[OPS_SHARED][OPS_GLOBAL], 140000 * 4);
	assert_int_equal(c->compute_read_bytes, 140000 * 4);
	assert_int_equal(c->compute_write_bytes, 140000 * 4);
	assert_int_equal(c->peak_shared_bytes, 2 * 100000 * 4);
	for (int i = 0; i < 140000; i++) {
		double r = ops_act_ref(OPS_ACT_SILU, x[i]);
		assert_true(fabs(y[i] - r) <= 1e-6 * fabs(r) + 1e-7);
	}
	/* a transposed view of the same [2, 70000]: no coalescing, rows of 70000
	 * in y, x read with stride 2: one tile per row, split in 2 */
	const int64_t xt[2] = { 1, 2 };
	ops_device_reset(dev);
	memset(y, 0xFF, 140000 * sizeof *y);
	assert_int_equal(ops_activation_strided_plan(dev, &plan, OPS_ACT_TANH, OPS_F32, 2, dims,
						     x, xt, y, st, &err), 0);
	assert_int_equal(c->tiles, 2);
	assert_int_equal(c->transfers, 2 * 2 * 2);
	assert_int_equal(c->splits, 2 * 2);
	for (int r = 0; r < 2; r++)
		for (int j = 0; j < 70000; j += 7) {
			double ref = tanh((double)x[j * 2 + r]);
			assert_true(fabs(y[r * 70000 + j] - ref) <= 1e-6 * fabs(ref) + 1e-7);
		}
	ops_device_free(dev);
	free(x);
	free(y);
}

static void test_strided_exact_counters(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 64.0);
	struct ops_plan plan = { .double_buffer = 0 };
	plan.p[0] = 1536;
	const int64_t dims[2] = { 5, 1000 }, st[2] = { 1000, 1 };
	struct opr_error err = { 0 };
	struct ops_device *dev;
	assert_int_equal(ops_device_new(&env, 1, &dev, &err), 0);
	assert_int_equal(ops_activation_strided_plan(dev, &plan, OPS_ACT_GELU_ERF, OPS_F16, 2,
						     dims, NULL, st, NULL, st, &err), 0);
	/* [5000] in tiles of 1536: 1536 x 3 + 392 */
	const struct ops_counters *c = ops_device_counters(dev);
	assert_int_equal(c->launches, 1);
	assert_int_equal(c->tiles, 4);
	assert_int_equal(c->transfers, 8);
	assert_int_equal(c->splits, 0);
	assert_int_equal(c->bytes[OPS_GLOBAL][OPS_SHARED], 10000);
	assert_int_equal(c->bytes[OPS_SHARED][OPS_GLOBAL], 10000);
	assert_int_equal(c->elem_ops, 5000);
	assert_int_equal(c->peak_shared_bytes, 1536 * 2);
	/* default tile of 64 KiB: two buffers of 16384 fp16 elements fit */
	assert_int_equal(ops_activation_default_tile(&env, OPS_F16), 16384);
	assert_int_equal(ops_activation_default_tile(&env, OPS_F32), 8192);

	/* a sliced view [5, 1000] of rows of 1200 in x, 1100 in y: 1000 < tile,
	 * one full row per tile dim plus a chunk of q = 1 row -> 5 tiles */
	const int64_t xs[2] = { 1200, 1 }, ys[2] = { 1100, 1 };
	ops_device_reset(dev);
	assert_int_equal(ops_activation_strided_plan(dev, &plan, OPS_ACT_RELU, OPS_F32, 2, dims,
						     NULL, xs, NULL, ys, &err), 0);
	assert_int_equal(c->tiles, 5);
	assert_int_equal(c->transfers, 10);
	assert_int_equal(c->bytes[OPS_GLOBAL][OPS_SHARED], 20000);

	/* over capacity: two 64 KiB buffers do not fit in 64 KiB */
	const int64_t bigdims[2] = { 5, 20000 }, bigst[2] = { 20000, 1 };
	plan.p[0] = 16384;
	plan.double_buffer = 1;
	ops_device_reset(dev);
	assert_int_equal(ops_activation_strided_plan(dev, &plan, OPS_ACT_RELU, OPS_F32, 2, bigdims,
						     NULL, bigst, NULL, bigst, &err), OPR_ELIMIT);
	assert_non_null(strstr(err.msg, "exceeds capacity"));
	ops_device_free(dev);
}

static void test_strided_zero_size_and_errors(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 64.0);
	struct opr_error err = { 0 };
	struct ops_device *dev;
	const int64_t dims[3] = { 3, 0, 4 }, st[3] = { 0, 4, 1 };
	float sentinel[4] = { 1.5f, 2.5f, 3.5f, 4.5f };
	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	assert_int_equal(ops_activation_strided(dev, OPS_ACT_RELU, OPS_F32, 3, dims, sentinel, st,
						sentinel, st, &err), 0);
	const struct ops_counters *c = ops_device_counters(dev);
	assert_int_equal(c->launches, 1);
	assert_int_equal(c->tiles, 0);
	assert_int_equal(c->transfers, 0);
	assert_true(sentinel[0] == 1.5f && sentinel[3] == 4.5f);

	/* a zero-size dim anywhere, real and counting-only: one launch, no tile */
	static const int64_t zdims[4][3] = { { 4, 0, 3 }, { 0, 5, 7 }, { 6, 7, 0 }, { 0, 0, 0 } };
	for (int dry = 0; dry < 2; dry++)
		for (int z = 0; z < 4; z++) {
			struct ops_device *dv;
			/* strides as the instance lays them out: a zero dim counts as 1 */
			int64_t d1 = zdims[z][1] ? zdims[z][1] : 1, d2 = zdims[z][2] ? zdims[z][2] : 1;
			const int64_t zst[3] = { d1 * d2, d2, 1 };
			assert_int_equal(ops_device_new(&env, dry, &dv, &err), 0);
			assert_int_equal(ops_activation_strided(dv, OPS_ACT_TANH, OPS_F16, 3, zdims[z],
								dry ? NULL : sentinel, zst,
								dry ? NULL : sentinel, zst, &err), 0);
			assert_int_equal(ops_device_counters(dv)->launches, 1);
			assert_int_equal(ops_device_counters(dv)->tiles, 0);
			assert_int_equal(ops_device_counters(dv)->transfers, 0);
			ops_device_free(dv);
		}
	assert_true(sentinel[0] == 1.5f && sentinel[3] == 4.5f);

	const int64_t big[3] = { INT64_MAX / 4, 8, 2 }, bst[3] = { 16, 2, 1 };
	assert_int_equal(ops_activation_strided(dev, OPS_ACT_RELU, OPS_F32, 3, big, NULL, bst,
						NULL, bst, &err), OPR_EINPUT);
	assert_string_equal(err.msg, "shape product overflows");
	assert_int_equal(ops_activation_strided(dev, OPS_ACT_RELU, OPS_S8, 3, dims, NULL, st,
						NULL, st, &err), OPR_EINPUT);
	assert_int_equal(ops_activation_strided(dev, OPS_ACT_RELU, OPS_F32, 9, big, NULL, bst,
						NULL, bst, &err), OPR_EINPUT);
	ops_device_free(dev);
}

/* One small call on two devices, one with the one-tile path (ops_launch_tile1)
 * and one forced through the general walk: same return code and error, same
 * output bytes, same counters and launch records, bit for bit. */
struct pair {
	struct ops_device *fast, *slow;
};

static void pair_call(struct pair *p, enum ops_act a, enum ops_dtype t, int rank,
		      const int64_t *dims, const int64_t *xs, const int64_t *ys,
		      const struct ops_plan *plan, const unsigned char *x0, int64_t xn,
		      int64_t yn, int in_place)
{
	size_t es = ops_dtype_size(t);
	int dry = ops_device_dry_run(p->fast);
	unsigned char *buf[2][2];
	struct opr_error err[2] = { { 0 }, { 0 } };
	int rc[2];
	for (int d = 0; d < 2; d++) {
		struct ops_device *dev = d ? p->slow : p->fast;
		buf[d][0] = malloc((size_t)xn * es);
		buf[d][1] = in_place ? buf[d][0] : malloc((size_t)yn * es);
		assert_non_null(buf[d][0]);
		assert_non_null(buf[d][1]);
		memcpy(buf[d][0], x0, (size_t)xn * es);
		if (!in_place)
			memset(buf[d][1], 0xA5, (size_t)yn * es); /* poison */
		rc[d] = ops_activation_strided_plan(dev, plan, a, t, rank, dims,
						    dry ? NULL : buf[d][0], xs,
						    dry ? NULL : buf[d][1], ys, &err[d]);
	}
	assert_int_equal(rc[0], rc[1]);
	assert_string_equal(err[0].msg, err[1].msg);
	assert_memory_equal(buf[0][1], buf[1][1], (size_t)yn * es);
	assert_memory_equal(ops_device_counters(p->fast), ops_device_counters(p->slow),
			    sizeof(struct ops_counters));
	size_t nf, ns;
	const struct ops_launch_rec *rf = ops_device_launches(p->fast, &nf);
	const struct ops_launch_rec *rsl = ops_device_launches(p->slow, &ns);
	assert_int_equal(nf, ns);
	if (nf)
		assert_memory_equal(rf, rsl, nf * sizeof *rf);
	for (int d = 0; d < 2; d++) {
		if (!in_place)
			free(buf[d][1]);
		free(buf[d][0]);
	}
}

static void test_tiny_path_equals_general_path(void **state)
{
	(void)state;
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	int fast_used = 0;
	for (int trial = 0; trial < 300; trial++) {
		struct ops_envelope env;
		struct opr_error err = { 0 };
		test_envelope(&env, rnd() % 4 == 0 ? 0.25 : 256.0);
		env.cores = 1 + (int)(rnd() % 4);
		if (rnd() % 2) {
			env.vector_tops = 5.0;
			if (rnd() % 2)
				env.vector_half_tops = 2.0;
		}
		int dry = rnd() % 3 == 0;
		struct pair p;
		assert_int_equal(ops_device_new(&env, dry, &p.fast, &err), 0);
		assert_int_equal(ops_device_new(&env, dry, &p.slow, &err), 0);
		p.slow->tile1_off = 1;
		/* a held SHARED buffer moves the footprint, the peak and what fits */
		struct ops_buf held[2];
		size_t hold = rnd() % 3 == 0 ? (size_t)(1 + rnd() % 200) : 0;
		if (hold) {
			assert_int_equal(ops_buf_alloc(p.fast, OPS_SHARED, hold, &held[0], &err), 0);
			assert_int_equal(ops_buf_alloc(p.slow, OPS_SHARED, hold, &held[1], &err), 0);
		}
		int in_launch = rnd() % 10 == 0;
		if (in_launch) {
			assert_int_equal(ops_launch_begin(p.fast, "outer", 1, &err), 0);
			assert_int_equal(ops_launch_begin(p.slow, "outer", 1, &err), 0);
		}
		int calls = 1 + (int)(rnd() % 4);
		for (int call = 0; call < calls; call++) {
			enum ops_dtype t = dts[rnd() % 3];
			enum ops_act a = all_acts[rnd() % NACTS_TESTED];
			int rank = (int)(rnd() % 4);
			int64_t dims[OPS_MAX_RANK], xs[OPS_MAX_RANK], ys[OPS_MAX_RANK];
			for (int i = 0; i < rank; i++)
				dims[i] = rnd() % 16 == 0 ? 0 : 1 + (int64_t)(rnd() % 6);
			int64_t xn = rank ? random_layout(rank, dims, xs) : 1;
			int in_place = rnd() % 4 == 0;
			int64_t yn = xn;
			if (in_place)
				memcpy(ys, xs, sizeof xs);
			else if (rank)
				yn = random_layout(rank, dims, ys);
			struct ops_plan plan, *pp = NULL;
			if (rnd() % 2) {
				memset(&plan, 0, sizeof plan);
				plan.p[0] = (int64_t)(rnd() % 80);
				plan.double_buffer = (int)(rnd() % 2);
				pp = &plan;
			}
			size_t es = ops_dtype_size(t);
			unsigned char *x0 = malloc((size_t)xn * es);
			assert_non_null(x0);
			for (int64_t i = 0; i < xn; i++)
				store(t, x0, i, (float)urand(-6.0, 6.0));
			pair_call(&p, a, t, rank, dims, xs, ys, pp, x0, xn, yn, in_place);
			/* the same call again (the fast path reuses its modelled record) */
			if (rnd() % 2)
				pair_call(&p, a, t, rank, dims, xs, ys, pp, x0, xn, yn, in_place);
			free(x0);
		}
		fast_used += p.fast->tile1_last.valid;
		if (hold) {
			ops_buf_release(p.fast, &held[0]);
			ops_buf_release(p.slow, &held[1]);
		}
		ops_device_free(p.fast);
		ops_device_free(p.slow);
	}
	/* the comparison is only worth something if the fast path ran */
	assert_true(fast_used > 100);
	print_message("one-tile path taken on %d of 300 devices\n", fast_used);
}

/* f over n elements of dtype t at src into dst, element by element through
 * the fp32 kernel: what a staged tile computes. src and dst may be equal. */
static void apply_ref(enum ops_act a, enum ops_dtype t, const unsigned char *src,
		      unsigned char *dst, int64_t n)
{
	size_t es = ops_dtype_size(t);
	float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
	assert_non_null(f);
	for (int64_t i = 0; i < n; i++)
		f[i] = (float)load(t, src, i);
	ops_act_f32(a, f, f, (size_t)n);
	for (int64_t i = 0; i < n; i++)
		store(t, dst + (size_t)i * es, 0, f[i]);
	free(f);
}

/* A contiguous call is one pass (ops_launch_one_pass): the tile computed
 * straight from x into y, the transfers counted, not made. It must give what
 * the staged walk gives, bit for bit: on random lengths over several tiles,
 * y at every alignment, streamed stores or not, in place, and with x and y
 * overlapping partly (staged tile by tile then, as before); its counters and
 * record equal a dry run's, the record says one_pass, and a strided view's
 * record does not. */
static void test_one_pass_equals_staged(void **state)
{
	isa_use(state);
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	struct ops_envelope env;
	test_envelope(&env, 4.0); /* 512 fp32 elements per tile */
	struct opr_error err = { 0 };
	for (int trial = 0; trial < 200; trial++) {
		enum ops_dtype t = dts[rnd() % 3];
		enum ops_act a = all_acts[rnd() % NACTS_TESTED];
		size_t es = ops_dtype_size(t);
		int64_t tile = ops_activation_default_tile(&env, t);
		/* a third of the calls within one small tile (ops_launch_tile1's,
		 * whose one-pass form computes x straight into y as well) */
		int64_t n = trial % 3 == 0 ? 1 + (int64_t)(rnd() % (OPS_TILE1_MAX_BYTES / es))
					   : 1 + (int64_t)(rnd() % (uint64_t)(4 * tile + 37));
		int mode = (int)(rnd() % 4); /* 0 disjoint, 1 in place, 2 y after x, 3 y before x */
		int64_t shift = mode >= 2 ? 1 + (int64_t)(rnd() % 9) : 0;
		int64_t yoff = (int64_t)(rnd() % 8);
		int64_t total = n + 2 * shift + yoff + 8;
		unsigned char *mem = malloc((size_t)total * es), *want = malloc((size_t)total * es);
		unsigned char *other = malloc((size_t)(n + 16) * es);
		assert_non_null(mem);
		assert_non_null(want);
		assert_non_null(other);
		for (int64_t i = 0; i < total; i++)
			store(t, mem, i, (float)urand(-12.0, 12.0));
		memset(other, 0xA5, (size_t)(n + 16) * es); /* poison */
		unsigned char *x = mem + (size_t)(shift + (mode == 0 ? 0 : yoff)) * es;
		unsigned char *y = mode == 0 ? other + (size_t)yoff * es
			: mode == 1 ? x : mode == 2 ? x + (size_t)shift * es : x - (size_t)shift * es;
		/* the expectation: tile by tile, each read whole before it is written */
		unsigned char *wbase = mode == 0 ? NULL : want;
		memcpy(want, mem, (size_t)total * es);
		unsigned char *wx = mode == 0 ? x : want + (x - mem);
		unsigned char *wy = mode == 0 ? NULL : want + (y - mem);
		unsigned char *expect = mode == 0 ? malloc((size_t)n * es) : NULL;
		for (int64_t c = 0; c < n; c += tile) {
			int64_t m = n - c < tile ? n - c : tile;
			unsigned char *tmp = malloc((size_t)m * es);
			assert_non_null(tmp);
			memcpy(tmp, wx + (size_t)c * es, (size_t)m * es);
			apply_ref(a, t, tmp, tmp, m);
			memcpy((wbase ? wy : expect) + (size_t)c * es, tmp, (size_t)m * es);
			free(tmp);
		}
		struct ops_device *dev, *dry;
		assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
		assert_int_equal(ops_device_new(&env, 1, &dry, &err), 0);
		dev->tile1_off = rnd() % 2;
		dev->stream_min_bytes = rnd() % 2; /* 1: stream every GLOBAL write */
		const int64_t dims[1] = { n }, st[1] = { 1 };
		/* a call before, so that the device has its launch records (the
		 * one-tile path takes only a device that has: a first call walks) */
		assert_int_equal(ops_activation_strided(dev, a, t, 1, dims, other, st, other, st, &err), 0);
		assert_int_equal(ops_activation_strided(dry, a, t, 1, dims, NULL, st, NULL, st, &err), 0);
		ops_device_reset(dev);
		ops_device_reset(dry);
		memset(other, 0xA5, (size_t)(n + 16) * es); /* poison */
		assert_int_equal(ops_activation_strided(dev, a, t, 1, dims, x, st, y, st, &err), 0);
		assert_int_equal(ops_activation_strided(dry, a, t, 1, dims, NULL, st, NULL, st, &err), 0);
		if (mode == 0) {
			assert_memory_equal(y, expect, (size_t)n * es);
			for (int64_t i = 0; i < yoff; i++) /* nothing before y written */
				assert_int_equal(other[i * (int64_t)es], 0xA5);
			for (int64_t i = yoff + n; i < n + 16; i++) /* nor after */
				assert_int_equal(other[i * (int64_t)es], 0xA5);
		} else {
			if (memcmp(mem, want, (size_t)total * es))
				fail_msg("trial %d: %s %s n %lld mode %d shift %lld differs", trial,
					 ops_dtype_name(t), ops_act_name(a), (long long)n, mode,
					 (long long)shift);
		}
		assert_memory_equal(ops_device_counters(dev), ops_device_counters(dry),
				    sizeof(struct ops_counters));
		size_t nr, nd;
		const struct ops_launch_rec *r = ops_device_launches(dev, &nr);
		const struct ops_launch_rec *rd = ops_device_launches(dry, &nd);
		assert_int_equal(nr, 1);
		assert_int_equal(nd, 1);
		assert_memory_equal(r, rd, sizeof *r);
		assert_int_equal(r->one_pass, 1);
		ops_device_free(dev);
		ops_device_free(dry);
		free(expect);
		free(mem);
		free(want);
		free(other);
	}
	/* a strided view is staged: no one-pass record */
	struct ops_device *dev;
	assert_int_equal(ops_device_new(&env, 1, &dev, &err), 0);
	const int64_t dims[1] = { 1000 }, xs[1] = { 2 }, ys[1] = { 1 };
	assert_int_equal(ops_activation_strided(dev, OPS_ACT_RELU, OPS_F32, 1, dims, NULL, xs, NULL,
						ys, &err), 0);
	size_t nr;
	assert_int_equal(ops_device_launches(dev, &nr)->one_pass, 0);
	ops_device_free(dev);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void test_strided_tiny_call_is_cheap(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 256.0);
	struct opr_error err = { 0 };
	struct ops_device *dev;
	float x = 0.75f, y = NAN;
	const int iters = 20000;
	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns();
		for (int i = 0; i < iters; i++) {
			ops_device_reset(dev);
			if (ops_activation_strided(dev, OPS_ACT_SILU, OPS_F32, 0, NULL, &x, NULL,
						   &y, NULL, &err))
				fail_msg("%s", err.msg);
		}
		double per = (now_ns() - t0) / iters;
		if (per < best)
			best = per;
	}
	assert_true(fabs(y - 0.75 / (1 + exp(-0.75))) < 1e-6);
	ops_device_free(dev);
	/* informational only: speed is judged by make bench, never by a test */
	print_message("1-element call: %.0f ns (with a device reset)\n", best);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ISA_TESTS(test_act_f32_accuracy),
		ISA_TESTS(test_act_f32_tails_of_the_range),
		cmocka_unit_test(test_act_paths_same_bits),
		ISA_TESTS(test_strided_random_views),
		cmocka_unit_test(test_strided_large_last_dim),
		cmocka_unit_test(test_strided_exact_counters),
		cmocka_unit_test(test_strided_zero_size_and_errors),
		cmocka_unit_test(test_tiny_path_equals_general_path),
		ISA_TESTS(test_one_pass_equals_staged),
		cmocka_unit_test(test_strided_tiny_call_is_cheap),
	};
	return cmocka_run_group_tests_name("activation", tests, NULL, NULL);
}
