/* tests/cuda/test_cuda.c: the CUDA backend on the GPU host: every kernel
 * against the host's fp64 / exact references on seeded inputs, outputs
 * poisoned first; launch counts of fused and unfused groups; the grid-limit
 * splits; and the cuda component's DRAM bytes against the closed form.
 * Built and run by `make test-cuda` only; without a GPU every test skips. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../collect/collect.h"
#include "../../ops/cuda/cuda.h"
#include "../../ops/ops_int.h"

#include "../skip.h"
#include "gpu.h"

static double threshold(enum ops_dtype t)
{
	/* the host tests' bounds: fp32 arithmetic, then one rounding to the
	 * storage dtype (fp16 2^-11, bf16 2^-8 relative) with margin */
	return t == OPS_F32 ? 1e-5 : t == OPS_F16 ? 2e-3 : 1.6e-2;
}

/* Runs w under plan on the GPU (checked) and returns its quality; *launches
 * gets the kernel launches. Fails the test on any error. */
static struct ops_quality run_gpu(const struct ops_workload *w, const struct ops_plan *plan,
				  const char *block, int *launches)
{
	struct opr_error err = { 0 };
	struct ops_instance *inst = NULL;
	struct ops_cuda_inst *gi = NULL;
	struct ops_quality q;

	memset(&q, 0, sizeof q);
	if (ops_instance_new(w, plan, 20261201, block, &inst, &err) < 0)
		fail_msg("%s: instance: %s", block, err.msg);
	if (ops_cuda_inst_new(cu, inst, &gi, &err) < 0)
		fail_msg("%s: cuda instance: %s", block, err.msg);
	if (ops_cuda_inst_run_checked(gi, &err) < 0)
		fail_msg("%s: run: %s", block, err.msg);
	if (ops_instance_quality(inst, &q, &err) < 0)
		fail_msg("%s: quality: %s", block, err.msg);
	if (launches)
		*launches = ops_cuda_inst_launches(gi);
	ops_cuda_inst_free(gi);
	ops_instance_free(inst);
	return q;
}

static struct ops_plan plan_of(int fused, enum ops_strategy s, int64_t p0, int64_t p1, int64_t p2,
			       int64_t p3, int db)
{
	struct ops_plan p;
	memset(&p, 0, sizeof p);
	p.fused = fused;
	p.strategy = s;
	p.p[0] = p0;
	p.p[1] = p1;
	p.p[2] = p2;
	p.p[3] = p3;
	p.double_buffer = db;
	return p;
}

/* ---- activation --------------------------------------------------------------- */

static void test_activation_contiguous(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	static const int64_t sizes[] = { 1, 7, 1000003, 3 * 65536 };
	(void)state;
	NEED_GPU();
	for (int di = 0; di < 3; di++)
		for (int a = OPS_ACT_RELU; a < OPS_NACTS; a++)
			for (int si = 0; si < 4; si++)
				for (int db = 0; db < 6; db++) {
					/* the envelope's default tile, one under a block's
					 * share and one split over several blocks (the tail
					 * block ragged), each single- and double-buffered */
					static const int64_t tiles[] = { 0, 1000, 20008 };
					struct ops_workload w;
					memset(&w, 0, sizeof w);
					w.group = OPS_G_ACTIVATION;
					w.act = (enum ops_act)a;
					w.dtype = dts[di];
					w.tensor.rank = 1;
					w.tensor.dims[0] = sizes[si];
					struct ops_plan p = plan_of(0, OPS_STRAT_DIRECT, tiles[db / 2], 0, 0, 0, db % 2);
					struct ops_quality q = run_gpu(&w, &p, "act", NULL);
					if (!(q.rel_l2 <= threshold(dts[di])))
						fail_msg("%s %s n=%lld db=%d: rel L2 %.3g", ops_act_name(w.act),
							 ops_dtype_name(w.dtype), (long long)sizes[si], db,
							 q.rel_l2);
				}
}

static void test_activation_ranks(void **state)
{
	(void)state;
	NEED_GPU();
	/* rank 0 (one element) to 8, and a zero-size dim */
	for (int rank = 0; rank <= 8; rank++)
		for (int zero = 0; zero <= 1; zero++) {
			struct ops_workload w;
			memset(&w, 0, sizeof w);
			w.group = OPS_G_ACTIVATION;
			w.act = OPS_ACT_GELU_TANH;
			w.dtype = OPS_BF16;
			w.tensor.rank = rank;
			for (int i = 0; i < rank; i++)
				w.tensor.dims[i] = 2 + (i % 3);
			if (zero && rank > 0)
				w.tensor.dims[rank / 2] = 0;
			struct ops_quality q = run_gpu(&w, NULL, "act-rank", NULL);
			assert_true(q.rel_l2 <= threshold(OPS_BF16));
		}
}

/* Bits of element e of a host buffer of dtype t, as float. */
static double elem(enum ops_dtype t, const void *p, int64_t e)
{
	float f;
	ops_to_f32(t, (const char *)p + e * (int64_t)ops_dtype_size(t), &f, 1);
	return f;
}

/* y = act(x) through strided views: transposed, sliced with gaps, rank 8
 * with permuted strides, in place. Every viewed element is checked against
 * ops_act_ref; every element outside the view must keep its poison. */
static void strided_case(enum ops_dtype t, enum ops_act a, int rank, const int64_t *dims,
			 const int64_t *xs, const int64_t *ys, int64_t xcount, int64_t ycount,
			 int inplace)
{
	struct opr_error err = { 0 };
	const size_t es = ops_dtype_size(t);
	float *fx = malloc(sizeof *fx * (size_t)xcount);
	void *x = malloc(es * (size_t)xcount), *y = inplace ? x : malloc(es * (size_t)ycount);
	void *x0 = malloc(es * (size_t)xcount);
	char *seen = calloc((size_t)ycount, 1);
	assert_non_null(fx);
	assert_non_null(x);
	assert_non_null(y);
	assert_non_null(x0);
	assert_non_null(seen);
	ops_rng_fill_f32(ops_rng_key(7, "strided", ops_act_name(a)), fx, (size_t)xcount, -6.0f, 6.0f);
	ops_from_f32(t, fx, x, (size_t)xcount);
	memcpy(x0, x, es * (size_t)xcount);
	if (!inplace)
		memset(y, 0xFF, es * (size_t)ycount);
	if (ops_cuda_activation_strided(cu, a, t, rank, dims, x, xs, y, ys, &err) < 0)
		fail_msg("strided: %s", err.msg);
	int64_t n = 1, idx[OPS_MAX_RANK] = { 0 };
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	for (int64_t e = 0; e < n; e++) {
		int64_t xo = 0, yo = 0, r = e;
		for (int d = rank - 1; d >= 0; d--) {
			idx[d] = r % dims[d];
			r /= dims[d];
			xo += idx[d] * xs[d];
			yo += idx[d] * ys[d];
		}
		double ref = ops_act_ref(a, elem(t, x0, xo)), v = elem(t, y, yo);
		double tol = threshold(t) * (fabs(ref) + 1e-3);
		if (!(fabs(v - ref) <= tol))
			fail_msg("%s %s rank %d: element %lld = %.9g, reference %.9g", ops_act_name(a),
				 ops_dtype_name(t), rank, (long long)e, v, ref);
		seen[yo] = 1;
	}
	if (!inplace)
		for (int64_t e = 0; e < ycount; e++)
			if (!seen[e]) {
				const unsigned char *b = (const unsigned char *)y + e * (int64_t)es;
				for (size_t k = 0; k < es; k++)
					if (b[k] != 0xFF)
						fail_msg("element %lld outside the view was written",
							 (long long)e);
			}
	free(fx);
	free(x0);
	free(seen);
	if (!inplace)
		free(y);
	free(x);
}

static void test_activation_strided(void **state)
{
	(void)state;
	NEED_GPU();
	for (int a = OPS_ACT_RELU; a < OPS_NACTS; a++) {
		/* transposed [37,53] view of a [53,37] tensor into a sliced y */
		int64_t d2[] = { 37, 53 }, xs2[] = { 1, 37 }, ys2[] = { 60, 1 };
		strided_case(OPS_F32, (enum ops_act)a, 2, d2, xs2, ys2, 37 * 53, 37 * 60, 0);
		strided_case(OPS_F16, (enum ops_act)a, 2, d2, xs2, ys2, 37 * 53, 37 * 60, 0);
		strided_case(OPS_BF16, (enum ops_act)a, 2, d2, xs2, ys2, 37 * 53, 37 * 60, 0);
	}
	/* rank 8, strides permuted (dims reversed in memory), y every other element */
	int64_t d8[8] = { 2, 3, 2, 3, 2, 2, 3, 5 }, xs8[8], ys8[8], m = 1;
	for (int i = 0; i < 8; i++) {
		xs8[i] = m;
		m *= d8[i];
	}
	int64_t my = 2;
	for (int i = 7; i >= 0; i--) {
		ys8[i] = my;
		my *= d8[i];
	}
	strided_case(OPS_F32, OPS_ACT_SILU, 8, d8, xs8, ys8, m, my, 0);
	/* in place over a contiguous [1000, 77] and a sliced rank 3 */
	int64_t dc[] = { 1000, 77 }, sc[] = { 77, 1 };
	strided_case(OPS_F32, OPS_ACT_GELU_ERF, 2, dc, sc, sc, 77000, 77000, 1);
	int64_t d3[] = { 4, 5, 6 }, s3[] = { 100, 12, 2 };
	strided_case(OPS_BF16, OPS_ACT_TANH, 3, d3, s3, s3, 400, 400, 1);
	/* rank 0 and zero-size */
	strided_case(OPS_F32, OPS_ACT_SIGMOID, 0, d3, s3, s3, 1, 1, 0);
	int64_t dz[] = { 4, 0, 6 };
	strided_case(OPS_F32, OPS_ACT_RELU, 3, dz, s3, s3, 1, 1, 0);
}

/* ---- permute ------------------------------------------------------------------- */

static void permute_case(enum ops_dtype t, int rank, const int64_t *dims, const int *perm, int act,
			 int fused, int64_t tile)
{
	struct ops_workload w;
	int launches = 0;
	memset(&w, 0, sizeof w);
	w.group = act ? OPS_G_PERMUTE_ACT : OPS_G_PERMUTE;
	w.act = act ? OPS_ACT_SILU : OPS_ACT_NONE;
	w.dtype = t;
	w.tensor.rank = rank;
	for (int i = 0; i < rank; i++) {
		w.tensor.dims[i] = dims[i];
		w.tensor.perm[i] = perm[i];
	}
	struct ops_plan p = plan_of(fused, OPS_STRAT_DIRECT, tile, tile, 0, 0, 1);
	struct ops_quality q = run_gpu(&w, &p, "permute", &launches);
	if (act) {
		if (!(q.rel_l2 <= threshold(t)))
			fail_msg("permute+act %s rank %d: rel L2 %.3g", ops_dtype_name(t), rank, q.rel_l2);
		assert_int_equal(launches, fused ? 1 : 2);
	} else {
		if (q.rel_l2 != 0.0)
			fail_msg("permute %s rank %d: rel L2 %.3g (must be exact)", ops_dtype_name(t),
				 rank, q.rel_l2);
		assert_int_equal(launches, 1);
	}
}

static void test_permute_ranks(void **state)
{
	static const enum ops_dtype dts[] = { OPS_S8, OPS_U8, OPS_F16, OPS_BF16, OPS_F32 };
	struct ops_xoshiro g;
	(void)state;
	NEED_GPU();
	ops_xoshiro_seed(&g, 16);
	for (int rank = 1; rank <= 8; rank++)
		for (int rep = 0; rep < 6; rep++) {
			int64_t dims[8];
			int perm[8];
			for (int i = 0; i < rank; i++) {
				dims[i] = 1 + (int64_t)(ops_xoshiro_next(&g) % (rank > 4 ? 4 : 9));
				perm[i] = i;
			}
			for (int i = rank - 1; i > 0; i--) {
				int j = (int)(ops_xoshiro_next(&g) % (uint64_t)(i + 1)), tmp = perm[i];
				perm[i] = perm[j];
				perm[j] = tmp;
			}
			enum ops_dtype t = dts[(rank + rep) % 5];
			permute_case(t, rank, dims, perm, 0, 1, rep % 2 ? 64 : 32);
			if (t == OPS_F16 || t == OPS_BF16 || t == OPS_F32) {
				permute_case(t, rank, dims, perm, 1, 1, 32);
				permute_case(t, rank, dims, perm, 1, 0, 64);
			}
		}
}

/* Where the GPU's limits bite: a last dimension above 65535, more than
 * 65535 tiles in grid y (the transpose's b tiles: [2100000,3] (1,0)),
 * 2^16 and more in grid x ([3,2100000]), more than 65535 outer
 * indices in grid z, more than 65535 rows of a row copy. */
static void test_permute_limits(void **state)
{
	(void)state;
	NEED_GPU();
	int64_t d1[] = { 4096, 70000 };
	int p1[] = { 1, 0 };
	permute_case(OPS_F32, 2, d1, p1, 0, 1, 64);
	int64_t d2[] = { 3, 2100000 }, d2b[] = { 2100000, 3 };
	permute_case(OPS_F32, 2, d2, p1, 0, 1, 32);
	permute_case(OPS_F32, 2, d2b, p1, 0, 1, 32);
	int64_t d3[] = { 70000, 2, 3 };
	int p3[] = { 0, 2, 1 };
	permute_case(OPS_F16, 3, d3, p3, 0, 1, 32);
	int64_t d4[] = { 70000, 3, 8 };
	int p4[] = { 1, 0, 2 };
	permute_case(OPS_F32, 3, d4, p4, 0, 1, 32);
	int64_t d5[] = { 2, 3, 70001 };
	permute_case(OPS_BF16, 3, d5, p4, 1, 1, 32);
	/* short rows, several a block (2 of 2048 bytes), more row groups
	 * than grid y holds: 132000 rows */
	int64_t d6[] = { 1, 1100, 120, 2048 };
	int p6[] = { 0, 2, 1, 3 };
	permute_case(OPS_S8, 4, d6, p6, 0, 1, 32);
}

/* The transpose's vector path (16-byte loads and stores, or 8/4 where a
 * 32-wide tile holds fewer elements a pass): dims and strides multiples of
 * the vector width, partial edge tiles, every element size, an outer
 * dimension, the activation fused into the store and not. */
static void test_permute_vector(void **state)
{
	(void)state;
	NEED_GPU();
	int p2[] = { 1, 0 }, p3[] = { 0, 2, 1 };
	int64_t d1[] = { 200, 132 }, d2[] = { 72, 136 }, d3[] = { 48, 80 }, d4[] = { 5, 96, 40 };
	for (int ts = 32; ts <= 64; ts += 32) {
		permute_case(OPS_F32, 2, d1, p2, 0, 1, ts);
		permute_case(OPS_BF16, 2, d2, p2, 0, 1, ts);
		permute_case(OPS_U8, 2, d3, p2, 0, 1, ts);
		permute_case(OPS_F32, 3, d4, p3, 0, 1, ts);
		permute_case(OPS_F32, 2, d1, p2, 1, 1, ts);
		permute_case(OPS_F16, 2, d2, p2, 1, 0, ts);
	}
	/* row copies of short rows, several a block: the attention heads'
	 * (0,2,1,3) with head_dim 128 in fp16 (16 vectors a row), 12 floats
	 * (3 vectors: 85 rows a block, one thread idle), fused and not */
	int p4[] = { 0, 2, 1, 3 };
	int64_t d5[] = { 3, 7, 5, 128 }, d6[] = { 3, 7, 5, 12 };
	permute_case(OPS_F16, 4, d5, p4, 0, 1, 32);
	permute_case(OPS_F16, 4, d5, p4, 1, 1, 32);
	permute_case(OPS_F16, 4, d5, p4, 1, 0, 32);
	permute_case(OPS_F32, 4, d6, p4, 1, 1, 32);
	permute_case(OPS_BF16, 4, d6, p4, 0, 1, 32);
}

/* ---- qgemm ----------------------------------------------------------------------- */

static void qgemm_case(enum ops_group grp, enum ops_dtype a, int zp, int per_channel,
		       enum ops_dtype out, int64_t m, int64_t n, int64_t k, int64_t tn, int64_t kk,
		       int split, int fused)
{
	struct ops_workload w;
	int launches = 0;
	memset(&w, 0, sizeof w);
	w.group = grp;
	w.dtype = OPS_S8;
	w.act = grp == OPS_G_QGEMM_DQ_BIAS_ACT && out == OPS_F32 ? OPS_ACT_GELU_ERF : OPS_ACT_NONE;
	w.gemm.m = m;
	w.gemm.n = n;
	w.gemm.k = k;
	w.quant.a = a;
	w.quant.a_zero_point = zp;
	w.quant.a_scale = 0.02f;
	w.quant.b_per_channel = per_channel;
	w.quant.out = out;
	w.quant.out_zero_point = out == OPS_S8 ? 3 : 0;
	struct ops_plan p = plan_of(fused, OPS_STRAT_DIRECT, tn, kk, split, 0, 1);
	struct ops_quality q = run_gpu(&w, &p, "qgemm", &launches);
	if (!q.exact_int)
		fail_msg("qgemm %s zp %d m=%lld n=%lld k=%lld kk=%lld split %d: accumulators not exact",
			 ops_dtype_name(a), zp, (long long)m, (long long)n, (long long)k, (long long)kk,
			 split);
	if (out == OPS_S8) {
		if (q.max_abs_lsb != 0.0)
			fail_msg("qgemm requant: max |diff| %g LSB", q.max_abs_lsb);
	} else if (!(q.rel_l2 <= 1e-6)) {
		fail_msg("qgemm dequant: rel L2 %.3g", q.rel_l2);
	}
	int want = grp == OPS_G_QGEMM || fused ? 1 : out == OPS_S8 ? 2 : 4;
	assert_int_equal(launches, want);
}

static void test_qgemm(void **state)
{
	(void)state;
	NEED_GPU();
	/* the target shape: exact at K = 2^20 (int32 would overflow: accb 8) */
	qgemm_case(OPS_G_QGEMM, OPS_U8, 0, 0, OPS_F32, 8, 64, 1 << 20, 64, 4096, 132, 1);
	qgemm_case(OPS_G_QGEMM, OPS_U8, 128, 1, OPS_F32, 8, 64, 1 << 20, 64, 65536, 16, 1);
	qgemm_case(OPS_G_QGEMM, OPS_S8, -5, 1, OPS_S8, 8, 64, 1 << 20, 64, 2048, 132, 1);
	/* unaligned K, odd m and n, several n tiles and row groups */
	qgemm_case(OPS_G_QGEMM, OPS_S8, 7, 0, OPS_F32, 3, 5, 1003, 0, 0, 1, 1);
	qgemm_case(OPS_G_QGEMM, OPS_U8, 200, 1, OPS_S8, 17, 70, 4096 + 16, 64, 512, 5, 1);
	qgemm_case(OPS_G_QGEMM, OPS_S8, 0, 1, OPS_F32, 33, 129, 777, 32, 64, 3, 1);
	/* parts longer than one exact int32 chunk (65536), the last one ragged,
	 * under small K tiles; the u8 worst case for the int32 bound (zp 255) */
	qgemm_case(OPS_G_QGEMM, OPS_U8, 255, 1, OPS_F32, 8, 64, 200000, 64, 256, 3, 1);
	/* the fused group, fused and unfused */
	for (int fused = 0; fused <= 1; fused++) {
		qgemm_case(OPS_G_QGEMM_DQ_BIAS_ACT, OPS_U8, 3, 1, OPS_F32, 8, 64, 1 << 18, 64, 4096, 64,
			   fused);
		qgemm_case(OPS_G_QGEMM_DQ_BIAS_ACT, OPS_S8, -1, 0, OPS_S8, 9, 40, 50000, 16, 8192, 7,
			   fused);
	}
}

/* ---- conv2d ---------------------------------------------------------------------- */

static int conv_split_k; /* the plan's split_k in conv_case (0: the default) */

static void conv_case(enum ops_group grp, enum ops_dtype t, enum ops_strategy s, int fused,
		      const struct ops_conv_shape *sh)
{
	struct ops_workload w;
	int launches = 0;
	memset(&w, 0, sizeof w);
	w.group = grp;
	w.dtype = t;
	w.act = grp == OPS_G_CONV_BIAS_ACT ? OPS_ACT_SILU : OPS_ACT_NONE;
	w.conv = *sh;
	struct ops_plan p = plan_of(fused, s, 8, 4, 32, 16, 1);
	p.split_k = conv_split_k;
	struct ops_quality q = run_gpu(&w, &p, "conv", &launches);
	if (!(q.rel_l2 <= threshold(t)))
		fail_msg("conv %s strategy %d fused %d n%lld c%lld %lldx%lld k%lld r%lld s%lld "
			 "stride %lld pad %lld dil %lld groups %lld: rel L2 %.3g",
			 ops_dtype_name(t), (int)s, fused, (long long)sh->n, (long long)sh->c,
			 (long long)sh->h, (long long)sh->w, (long long)sh->k, (long long)sh->r,
			 (long long)sh->s, (long long)sh->stride_h, (long long)sh->pad_h,
			 (long long)sh->dil_h, (long long)sh->groups, q.rel_l2);
	assert_int_equal(launches, grp == OPS_G_CONV || fused ? 1 : 3);
}

static void test_conv(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	/* n c h w k r s  stride_h stride_w pad_h pad_w dil_h dil_w groups */
	static const struct ops_conv_shape shapes[] = {
		{ 2, 8, 13, 11, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1 },
		{ 1, 6, 17, 15, 10, 3, 3, 1, 1, 2, 2, 2, 2, 1 },
		{ 2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4 },
		{ 1, 16, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16 },
		{ 1, 64, 7, 7, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1 },
		{ 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1 },
		{ 1, 3, 20, 30, 70, 5, 3, 2, 1, 2, 1, 1, 2, 1 },
		/* M = 36864 pixels: enough blocks for the 64-row tiles */
		{ 4, 4, 96, 96, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1 },
	};
	(void)state;
	NEED_GPU();
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int di = 0; di < 3; di++)
			for (int s = OPS_STRAT_UNTILED; s < OPS_STRAT_WINOGRAD; s++) {
				conv_case(OPS_G_CONV, dts[di], (enum ops_strategy)s, 1, &shapes[si]);
				if (si % 2 == 0)
					for (int f = 0; f <= 1; f++)
						conv_case(OPS_G_CONV_BIAS_ACT, dts[di], (enum ops_strategy)s, f,
							  &shapes[si]);
			}
	/* winograd has no CUDA kernel: refused with the reason, never run as
	 * another strategy */
	{
		struct ops_workload w;
		struct opr_error err = { 0 };
		struct ops_instance *inst = NULL;
		struct ops_cuda_inst *gi = NULL;

		memset(&w, 0, sizeof w);
		w.group = OPS_G_CONV;
		w.dtype = OPS_F32;
		w.conv = shapes[5]; /* [1,64,56,56] -> 64 3x3 */
		struct ops_plan p = plan_of(0, OPS_STRAT_WINOGRAD, 64, 8, 56, 64, 1);
		assert_int_equal(ops_instance_new(&w, &p, 20261201, "conv", &inst, &err), 0);
		int rc = ops_cuda_inst_new(cu, inst, &gi, &err);
		if (rc == 0)
			rc = ops_cuda_inst_run_checked(gi, &err);
		assert_int_equal(rc, OPR_ELIMIT);
		assert_non_null(strstr(err.msg, "winograd"));
		ops_cuda_inst_free(gi);
		ops_instance_free(inst);
	}
	/* the implicit GEMM's split-K as the plan names it (the default above
	 * splits only an FFMA grid of fewer tiles than SMs): 1 and 3 parts, and
	 * more parts than K steps (clamped) */
	static const int splits[] = { 1, 3, 1000 };
	for (int k = 0; k < 3; k++) {
		conv_split_k = splits[k];
		for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si += 2)
			for (int di = 0; di < 3; di++) {
				conv_case(OPS_G_CONV, dts[di], OPS_STRAT_IM2COL, 1, &shapes[si]);
				conv_case(OPS_G_CONV_BIAS_ACT, dts[di], OPS_STRAT_IM2COL, 1, &shapes[si]);
			}
	}
	conv_split_k = 0;
}

static void test_conv_paths(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	(void)state;
	NEED_GPU();
	/* the tensor-core kernel's own paths (im2col, FFMA for fp32 beside
	 * them): group channels over two and three 64-channel chunks, the last
	 * partial (C 80, and C 130: K 1170, stride 2, no padding; the packed
	 * weights zero past the group's channels), a second tile of output
	 * channels (k 72);
	 * 128-row tiles with the weights resident and a persistent grid of two
	 * tiles a block (n 10: 280 tiles); groups with a dilation along h
	 * only; each split into 3 parts of 16-channel chunks as well */
	static const struct ops_conv_shape mshapes[] = {
		{ 3, 80, 20, 22, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1 },
		{ 2, 130, 9, 10, 20, 3, 3, 2, 2, 0, 0, 1, 1, 1 },
		{ 10, 48, 56, 56, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1 },
		{ 2, 64, 15, 9, 64, 3, 3, 1, 1, 1, 1, 3, 1, 2 },
		/* the epilogue's 16-byte rows (tile and row widths multiples of 8):
		 * 1x32 tiles whose second one ends past the row (56 = 32 + 24),
		 * and 4x8 tiles past the last row (11) with a second tile of
		 * output channels (k 72) */
		{ 1, 64, 9, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1 },
		{ 1, 64, 11, 40, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1 },
	};
	for (int k = 0; k < 2; k++) {
		conv_split_k = k ? 3 : 0;
		for (size_t si = 0; si < sizeof mshapes / sizeof mshapes[0]; si++)
			for (int di = 0; di < 3; di++) {
				conv_case(OPS_G_CONV, dts[di], OPS_STRAT_IM2COL, 1, &mshapes[si]);
				conv_case(OPS_G_CONV_BIAS_ACT, dts[di], OPS_STRAT_IM2COL, 1, &mshapes[si]);
			}
	}
	conv_split_k = 0;
}

/* ---- counters -------------------------------------------------------------------- */

struct cnt_ctx {
	struct ops_cuda_inst *gi;
};

static int cnt_prepare(void *ctx, struct opr_error *err)
{
	(void)ctx;
	if (ops_cuda_flush_l2(cu, err) < 0)
		return -1;
	return ops_cuda_sync(cu, err);
}

static int cnt_run(void *ctx, struct opr_error *err)
{
	struct cnt_ctx *c = ctx;
	int rc = ops_cuda_inst_launch(c->gi, err);
	return rc < 0 ? rc : ops_cuda_sync(cu, err);
}

/* A streaming activation touches each byte once: the DRAM bytes read agree
 * with the closed form (n * 4) within 2%. Writes reach DRAM when the L2
 * (write-back) evicts them, so up to the L2's size of the output may still
 * be in it when the kernel ends: on 64 MiB the H200 showed 0.63 of the bytes
 * written, hence 1 GiB here, written bytes within [n*4 - L2, n*4] +- 2%. */
static void test_counters_streaming(void **state)
{
	struct opr_error err = { 0 };
	struct ops_instance *inst = NULL;
	struct ops_cuda_inst *gi = NULL;
	struct col_gpu_counter c[2];
	const char *names[2] = { "cuda:::dram__bytes_read:stat=sum:device=0",
				 "cuda:::dram__bytes_write:stat=sum:device=0" };
	struct ops_workload w;
	(void)state;
	NEED_GPU();
	memset(&w, 0, sizeof w);
	w.group = OPS_G_ACTIVATION;
	w.act = OPS_ACT_RELU;
	w.dtype = OPS_F32;
	w.tensor.rank = 1;
	w.tensor.dims[0] = 256 << 20; /* 1 GiB */
	assert_int_equal(ops_instance_new(&w, NULL, 1, "cnt", &inst, &err), 0);
	assert_int_equal(ops_cuda_inst_new(cu, inst, &gi, &err), 0);
	struct cnt_ctx ctx = { gi };
	if (col_gpu_count(names, 2, cnt_prepare, cnt_run, &ctx, c, &err) < 0)
		fail_msg("count: %s", err.msg);
	if (!c[0].available) {
		print_message("skipped: %s\n", c[0].reason);
		ops_cuda_inst_free(gi);
		ops_instance_free(inst);
		skip();
	}
	const double want = 4.0 * (256 << 20), l2 = (double)ops_cuda_info(cu)->l2_bytes;
	print_message("dram read %lld, write %lld, closed form %.0f each, L2 %.0f\n", c[0].value,
		      c[1].value, want, l2);
	assert_true(fabs(c[0].value / want - 1) <= 0.02);
	assert_true(c[1].available);
	assert_true(c[1].value >= 0.98 * (want - l2) && c[1].value <= 1.02 * want);
	ops_cuda_inst_free(gi);
	ops_instance_free(inst);
}

/* The planner at the H200's size: a 132-core envelope plans every group. */
static void test_envelope_plans(void **state)
{
	struct opr_error err = { 0 };
	struct ops_envelope env;
	struct ops_plan_eval *ev = NULL;
	size_t n = 0;
	struct ops_workload w;
	(void)state;
	NEED_GPU();
	ops_cuda_envelope(cu, &env);
	assert_int_equal(env.cores, ops_cuda_info(cu)->sm_count);
	memset(&w, 0, sizeof w);
	w.group = OPS_G_QGEMM;
	w.dtype = OPS_S8;
	w.gemm.m = 8;
	w.gemm.n = 64;
	w.gemm.k = 1 << 20;
	w.quant.a = OPS_U8;
	w.quant.out = OPS_F32;
	if (ops_plan_search(&env, &w, 1, &ev, &n, &err) < 0)
		fail_msg("plan search: %s", err.msg);
	assert_true(n > 0 && ev[0].fits);
	free(ev);
}

/* ---- calibration probes --------------------------------------------------------- */

/* Every probe gives finite positive values; the measured rates stay under
 * the device's rated peaks (HBM from the memory clock and bus width, the
 * compute rates from Hopper's per-SM throughputs at the SM clock,
 * ops_cuda_envelope) and the HBM copy reaches at least a third of its
 * rating, the L2 copy beats it, and the launch cost is between 0.5 and 20 us. */
static void test_probes(void **state)
{
	struct opr_error err = { 0 };
	struct ops_envelope rated;
	double v[3], med[OPS_CUDA_NPROBES];
	(void)state;
	NEED_GPU();
	ops_cuda_envelope(cu, &rated);
	for (int p = 0; p < OPS_CUDA_NPROBES; p++) {
		if (ops_cuda_probe(cu, (enum ops_cuda_probe)p, 1, 3, v, &err) < 0)
			fail_msg("probe %d: %s", p, err.msg);
		for (int s = 0; s < 3; s++)
			assert_true(isfinite(v[s]) && v[s] > 0);
		med[p] = v[0] < v[1] ? (v[1] < v[2] ? v[1] : v[0] < v[2] ? v[2] : v[0])
				     : (v[0] < v[2] ? v[0] : v[1] < v[2] ? v[2] : v[1]);
		print_message("probe %d (%s): %.4g\n", p, ops_cuda_probe_method((enum ops_cuda_probe)p), med[p]);
	}
	assert_true(med[OPS_CUDA_P_COPY] <= 1.02 * rated.global_bw_gbps);
	assert_true(med[OPS_CUDA_P_COPY] >= rated.global_bw_gbps / 3);
	assert_true(med[OPS_CUDA_P_L2] > med[OPS_CUDA_P_COPY]);
	assert_true(med[OPS_CUDA_P_FP32] <= 1.02 * rated.tops[OPS_F32]);
	assert_true(med[OPS_CUDA_P_FP16] <= 1.02 * rated.tops[OPS_F16]);
	assert_true(med[OPS_CUDA_P_INT8] <= 1.02 * rated.tops[OPS_S8]);
	assert_true(med[OPS_CUDA_P_LAUNCH] > 0.5 && med[OPS_CUDA_P_LAUNCH] < 20);
}

/* argv[1], when given: run only the tests whose name matches it (cmocka's
 * pattern: * and ?), e.g. test_conv */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_activation_contiguous),
		cmocka_unit_test(test_activation_ranks),
		cmocka_unit_test(test_activation_strided),
		cmocka_unit_test(test_permute_ranks),
		cmocka_unit_test(test_permute_limits),
		cmocka_unit_test(test_permute_vector),
		cmocka_unit_test(test_qgemm),
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_conv_paths),
		cmocka_unit_test(test_counters_streaming),
		cmocka_unit_test(test_envelope_plans),
		cmocka_unit_test(test_probes),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests_name("cuda", tests, group_setup, group_teardown);
}
