/* tests/test_qgemm.c: the INT8 quantised GEMM and its fused group: exact
 * kernel and accumulators on seeded random shapes and at K = 2^22 extremes,
 * requant/dequant against independent references, counters against their
 * closed forms, dry run == real run, fused == unfused, input checks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/qgemm_int.h"
#include "test_isa.h"

/* xorshift64*: the test's own seeded generator */
static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ull;
}
static int64_t rint_in(int64_t lo, int64_t hi) /* inclusive */
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static void envelope(struct ops_envelope *e, int cores, double shared_kib, int64_t max_last)
{
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "test-npu");
	snprintf(e->power_mode, sizeof e->power_mode, "nominal");
	e->clock_ghz = 1.2;
	e->clock_scale = 1.0;
	e->cores = cores;
	e->global_bw_gbps = 900;
	e->global_capacity_gib = 32;
	e->shared_capacity_kib = shared_kib;
	e->shared_bw_gbps = 4096;
	e->local_capacity_kib = 64;
	e->dma_max_last_dim = max_last;
	e->dma_setup_ns = 150;
	e->dma_engines = 2;
	for (int t = 0; t < OPS_NDTYPES; t++)
		e->tops[t] = 64;
	e->tops[OPS_S8] = e->tops[OPS_U8] = 256;
	e->launch_overhead_us = 3.5;
}

static void workload(struct ops_workload *w, enum ops_group g, int64_t m, int64_t n, int64_t k,
		     enum ops_dtype a, int32_t zp, int per_channel, enum ops_dtype out,
		     enum ops_act act)
{
	memset(w, 0, sizeof *w);
	w->group = g;
	w->act = act;
	w->dtype = OPS_S8;
	w->gemm.m = m;
	w->gemm.n = n;
	w->gemm.k = k;
	w->quant.a = a;
	w->quant.a_zero_point = zp;
	w->quant.a_scale = 1.0f / 64;
	w->quant.b_per_channel = per_channel;
	w->quant.out = out;
	w->quant.out_scale = 0; /* default: the spread of the random output */
	w->quant.out_zero_point = out == OPS_S8 ? (int32_t)rint_in(-20, 20) : 0;
}

static void plan_of(struct ops_plan *p, int64_t tn, int64_t kk, int split, int fused, int db)
{
	memset(p, 0, sizeof *p);
	p->fused = fused;
	p->strategy = OPS_STRAT_DIRECT;
	p->p[0] = tn;
	p->p[1] = kk;
	p->p[2] = split;
	p->split_k = split;
	p->double_buffer = db;
}

/* Plain scalar sum over the instance's tensors, independent of the module. */
static int64_t acc_of(const struct ops_workload *w, const void *a, const int8_t *b, int64_t i,
		      int64_t j)
{
	int64_t s = 0, k = w->gemm.k;
	for (int64_t q = 0; q < k; q++) {
		int64_t av = w->quant.a == OPS_U8 ? ((const uint8_t *)a)[i * k + q]
						  : ((const int8_t *)a)[i * k + q];
		s += (av - w->quant.a_zero_point) * b[j * k + q];
	}
	return s;
}

static uint64_t global_bytes(const struct ops_counters *c)
{
	uint64_t g = 0;
	for (int s = 0; s < OPS_NSPACES; s++)
		for (int d = 0; d < OPS_NSPACES; d++)
			if (s == OPS_GLOBAL || d == OPS_GLOBAL)
				g += c->bytes[s][d];
	return g;
}

/* ---- the kernel ----------------------------------------------------------- */

/* A kernel call's m x tn sums and B's column sums against exact int64 ones:
 * A rows lda apart, B columns ldb apart, kk terms each. */
static void check_tile(enum ops_dtype at, const uint8_t *a, int64_t lda, const int8_t *b,
		       int64_t ldb, int64_t m, int64_t tn, int64_t kk, const int32_t *c,
		       const int32_t *cs)
{
	for (int64_t j = 0; j < tn; j++) {
		int64_t sb = 0;
		for (int64_t q = 0; q < kk; q++)
			sb += b[j * ldb + q];
		assert_int_equal(cs[j], sb);
		for (int64_t i = 0; i < m; i++) {
			int64_t r = 0;
			for (int64_t q = 0; q < kk; q++)
				r += (at == OPS_U8 ? (int64_t)a[i * lda + q]
						   : (int64_t)(int8_t)a[i * lda + q]) * b[j * ldb + q];
			assert_int_equal(c[i * tn + j], r);
		}
	}
}

static void test_kernel_random(void **state)
{
	isa_use(state);
	int16_t *a16 = aligned_alloc(64, 24 * OPS_QGEMM_KC * 2);
	assert_non_null(a16);
	for (int it = 0; it < 60; it++) {
		int64_t m = rint_in(1, 24), tn = rint_in(1, 40);
		int64_t kk = it < 6 ? (int64_t[]){1, 15, 16, 1023, 1024, 1025}[it] : rint_in(1, 3000);
		enum ops_dtype at = it % 2 ? OPS_U8 : OPS_S8;
		uint8_t *a = malloc((size_t)(m * kk));
		int8_t *b = malloc((size_t)(tn * kk));
		int32_t *c = malloc((size_t)(m * tn) * 4), *cs = malloc((size_t)tn * 4);
		assert_true(a && b && c && cs);
		for (int64_t e = 0; e < m * kk; e++)
			a[e] = (uint8_t)rnd();
		for (int64_t e = 0; e < tn * kk; e++)
			b[e] = (int8_t)rnd();
		memset(c, 0xA5, (size_t)(m * tn) * 4);
		memset(cs, 0xA5, (size_t)tn * 4);
		ops_qgemm_kernel(at, a, b, m, tn, kk, c, a16);
		ops_qgemm_colsum(b, tn, kk, cs);
		check_tile(at, a, kk, b, kk, m, tn, kk, c, cs);
		free(a);
		free(b);
		free(c);
		free(cs);
	}
	free(a16);
}

/* The in-place form: K tiles read out of wider rows (lda, ldb > kk), with
 * B's column sums from the same pass, on random shapes, at full range. */
static void test_kernel_strided_colsum(void **state)
{
	isa_use(state);
	int16_t *a16 = aligned_alloc(64, 24 * OPS_QGEMM_KC * 2);
	assert_non_null(a16);
	int vnni = ops_kfam_isa(OPS_KF_QGEMM) == OPS_ISA_AVX512;
	for (int it = 0; it < 40; it++) {
		/* the VNNI kernel at both its chunks, whatever this host's L1D */
		if (vnni)
			assert_int_equal(ops_avx512_qgemm_chunk_force(it % 2 ? 2048 : 4096), 0);
		int64_t m = rint_in(1, 17), tn = rint_in(1, 35), kk = rint_in(1, 9000);
		int64_t lda = kk + rint_in(0, 70), ldb = kk + rint_in(0, 70);
		enum ops_dtype at = it % 2 ? OPS_U8 : OPS_S8;
		uint8_t *a = malloc((size_t)(m * lda));
		int8_t *b = malloc((size_t)(tn * ldb));
		int32_t *c = malloc((size_t)(m * tn) * 4), *cs = malloc((size_t)tn * 4);
		assert_true(a && b && c && cs);
		for (int64_t e = 0; e < m * lda; e++)
			a[e] = (uint8_t)rnd();
		for (int64_t e = 0; e < tn * ldb; e++)
			b[e] = (int8_t)rnd();
		memset(c, 0xA5, (size_t)(m * tn) * 4);
		memset(cs, 0xA5, (size_t)tn * 4);
		ops_qgemm_kernel_ld(at, a, lda, b, ldb, m, tn, kk, c, cs, a16);
		check_tile(at, a, lda, b, ldb, m, tn, kk, c, cs);
		free(a);
		free(b);
		free(c);
		free(cs);
	}
	free(a16);
}

/* The largest K tile at the worst products: 65536 * 255 * -128 still fits. */
static void test_kernel_tile_bound(void **state)
{
	isa_use(state);
	int64_t kk = OPS_QGEMM_MAX_TILE_KK, m = 3, tn = 2;
	int16_t *a16 = aligned_alloc(64, (size_t)m * OPS_QGEMM_KC * 2);
	uint8_t *a = malloc((size_t)(m * kk));
	int8_t *b = malloc((size_t)(tn * kk));
	int32_t c[6], cs[2];
	assert_true(a16 && a && b);
	assert_true((int64_t)kk * 255 * 128 <= INT32_MAX);
	memset(a, 255, (size_t)(m * kk));
	memset(b, 0x80, (size_t)(tn * kk));
	memset(c, 0x5A, sizeof c);
	ops_qgemm_kernel(OPS_U8, a, b, m, tn, kk, c, a16);
	for (int e = 0; e < 6; e++)
		assert_int_equal(c[e], -(int64_t)kk * 255 * 128);
	ops_qgemm_colsum(b, tn, kk, cs);
	assert_int_equal(cs[0], -128 * kk);
	memset(a, 0x80, (size_t)(m * kk)); /* s8 -128 */
	ops_qgemm_kernel(OPS_S8, a, b, m, tn, kk, c, a16);
	for (int e = 0; e < 6; e++)
		assert_int_equal(c[e], (int64_t)kk * 128 * 128);
	free(a16);
	free(a);
	free(b);
}

/* The packed layout (qgemm_int.h) at the documented addresses, the bytes
 * past k zero, on every path (the packing is portable C), at both chunks. */
static void test_pack_layout(void **state)
{
	(void)state;
	for (int it = 0; it < 24; it++) {
		int64_t kc = it % 2 ? 2048 : 4096, n = rint_in(1, 100), tn = rint_in(1, n);
		int64_t k = it < 4 ? (int64_t[]){1, 64, 2048, 4097}[it] : rint_in(1, 10000);
		int64_t kp = (k + kc - 1) / kc * kc;
		uint64_t bytes = ops_qgemm_packed_bytes(n, k, kc);
		int8_t *b = malloc((size_t)(n * k)), *bp = malloc((size_t)bytes);
		assert_true(b && bp);
		assert_int_equal(bytes, (uint64_t)(n * kp));
		for (int64_t e = 0; e < n * k; e++)
			b[e] = (int8_t)rnd();
		memset(bp, 0x5A, (size_t)bytes);
		ops_qgemm_pack_b(b, n, k, tn, kc, bp);
		for (int64_t j = 0; j < n; j++) {
			int64_t j0 = j / tn * tn, w = n - j0 < tn ? n - j0 : tn, jj = j - j0;
			int64_t g = jj / 32 * 32, G = w - g < 32 ? w - g : 32, i = jj - g;
			for (int64_t q = 0; q < kp; q++) {
				int64_t t = q % kc / 4;
				int64_t at = j0 * kp + q / kc * w * kc + g * kc + t * 4 * G + 4 * i +
					     q % 4;
				assert_int_equal(bp[at], q < k ? b[j * k + q] : 0);
			}
		}
		free(b);
		free(bp);
	}
}

/* The packed form against exact sums: K ranges from any quad (k0 a
 * multiple of 4) through chunk edges and B's end, every n tile, with and
 * without the column sums, outputs poisoned. Skipped where the path reads B
 * in place only. */
static void test_kernel_packed(void **state)
{
	isa_use(state);
	if (!ops_qgemm_pack_chunk())
		SKIP_BECAUSE("the %s int8 gemm reads B in place (no packed form)",
			     ops_isa_name(ops_kfam_isa(OPS_KF_QGEMM)));
	/* both chunks the path takes (by L1D's size), whatever this host's is */
	for (int it = 0; it < 80; it++) {
		assert_int_equal(ops_avx512_qgemm_chunk_force(it < 40 ? 2048 : 4096), 0);
		int64_t kc = ops_qgemm_pack_chunk();
		assert_int_equal(kc, it < 40 ? 2048 : 4096);
		int64_t m = rint_in(1, 19), n = rint_in(1, 70), tn = rint_in(1, n);
		int64_t k = it % 40 < 4 ? (int64_t[]){64, kc, kc + 1, 2 * kc + 63}[it % 40]
					: rint_in(1, 12000);
		int64_t kp = (k + kc - 1) / kc * kc;
		enum ops_dtype at = it % 2 ? OPS_U8 : OPS_S8;
		uint8_t *a = malloc((size_t)(m * k));
		int8_t *b = malloc((size_t)(n * k)), *bp = malloc((size_t)ops_qgemm_packed_bytes(n, k, kc));
		int32_t *c = malloc((size_t)(m * tn) * 4), *cs = malloc((size_t)tn * 4);
		assert_true(a && b && bp && c && cs);
		for (int64_t e = 0; e < m * k; e++)
			a[e] = (uint8_t)rnd();
		for (int64_t e = 0; e < n * k; e++)
			b[e] = (int8_t)rnd();
		ops_qgemm_pack_b(b, n, k, tn, kc, bp);
		for (int64_t j0 = 0; j0 < n; j0 += tn) {
			int64_t w = n - j0 < tn ? n - j0 : tn;
			int64_t k0 = 4 * rint_in(0, (k - 1) / 4), kk = rint_in(1, k - k0);
			int with_cs = (int)(rnd() % 2);
			memset(c, 0xA5, (size_t)(m * tn) * 4);
			memset(cs, 0xA5, (size_t)tn * 4);
			ops_qgemm_kernel_packed(at, a + k0, k, bp + j0 * kp, w, k0, m, kk, c,
						with_cs ? cs : NULL);
			if (!with_cs) /* the sums the check wants, from the in-place pass */
				ops_qgemm_colsum_ld(b + j0 * k + k0, k, w, kk, cs);
			check_tile(at, a + k0, k, b + j0 * k + k0, k, m, w, kk, c, cs);
		}
		free(a);
		free(b);
		free(bp);
		free(c);
		free(cs);
	}
}

/* The packed form at the range's extremes, where an int32 lane holds the
 * largest sums it must: kk = OPS_QGEMM_MAX_TILE_KK of 255 x -128, of
 * 255 x 127 and (s8 A) -128 x -128, over 8 + 3 rows and 32 + 7 columns,
 * from one K offset that is no chunk edge. */
static void test_kernel_packed_full_range(void **state)
{
	isa_use(state);
	if (!ops_qgemm_pack_chunk())
		SKIP_BECAUSE("the %s int8 gemm reads B in place (no packed form)",
			     ops_isa_name(ops_kfam_isa(OPS_KF_QGEMM)));
	const int64_t m = 11, n = 39, kk = OPS_QGEMM_MAX_TILE_KK, k0 = 100, k = k0 + kk;
	const struct { enum ops_dtype at; uint8_t a; int8_t b; } cases[] = {
		{ OPS_U8, 255, -128 }, { OPS_U8, 255, 127 }, { OPS_S8, 0x80, -128 },
	};
	uint8_t *a = malloc((size_t)(m * k));
	int8_t *b = malloc((size_t)(n * k));
	int64_t kc = ops_qgemm_pack_chunk();
	int8_t *bp = malloc((size_t)ops_qgemm_packed_bytes(n, k, kc));
	int32_t *c = malloc((size_t)(m * n) * 4), *cs = malloc((size_t)n * 4);
	assert_true(a && b && bp && c && cs);
	for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
		int64_t av = cases[t].at == OPS_U8 ? cases[t].a : (int8_t)cases[t].a;
		memset(a, cases[t].a, (size_t)(m * k));
		memset(b, cases[t].b, (size_t)(n * k));
		ops_qgemm_pack_b(b, n, k, n, kc, bp);
		memset(c, 0xA5, (size_t)(m * n) * 4);
		memset(cs, 0xA5, (size_t)n * 4);
		ops_qgemm_kernel_packed(cases[t].at, a + k0, k, bp, n, k0, m, kk, c, cs);
		for (int64_t e = 0; e < m * n; e++)
			assert_int_equal(c[e], kk * av * cases[t].b);
		for (int64_t j = 0; j < n; j++)
			assert_int_equal(cs[j], kk * cases[t].b);
	}
	free(a);
	free(b);
	free(bp);
	free(c);
	free(cs);
}

/* ---- whole runs ----------------------------------------------------------- */

/* Runs inst on a real and a dry device; checks quality, the exact
 * accumulators against the test's own sums, the counters against the closed
 * forms, and dry == real. Returns the real device's counters. */
static void run_checked(const struct ops_envelope *env, struct ops_instance *inst,
			struct ops_counters *out)
{
	struct opr_error err;
	struct ops_device *dev, *dry;
	struct ops_quality q;
	const struct ops_workload *w = &inst->work;
	const struct ops_counters *c, *cd;
	uint64_t tr = 0, sp = 0;
	const int64_t *acc;
	int one = w->group == OPS_G_QGEMM || inst->plan.fused;

	memset(&err, 0, sizeof err);
	assert_int_equal(ops_device_new(env, 0, &dev, &err), 0);
	assert_int_equal(ops_device_new(env, 1, &dry, &err), 0);
	if (ops_instance_run(dev, inst, &err))
		fail_msg("run: %s", err.msg);
	assert_int_equal(ops_instance_run(dry, inst, &err), 0);
	c = ops_device_counters(dev);
	cd = ops_device_counters(dry);
	assert_memory_equal(c, cd, sizeof *c);

	assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
	assert_int_equal(q.exact_int, 1);
	if (w->quant.out == OPS_F32) {
		assert_true(q.rel_l2 <= 1e-5);
	} else {
		assert_true(q.max_abs_lsb <= 1.0);
		assert_true(q.max_abs_lsb == 0.0);
	}
	/* the accumulators against the test's own sums at sampled points */
	acc = ops_qgemm_last_acc(inst);
	assert_non_null(acc);
	for (int s = 0; s < 6; s++) {
		int64_t i = rint_in(0, w->gemm.m - 1), j = rint_in(0, w->gemm.n - 1);
		assert_int_equal(acc[i * w->gemm.n + j],
				 acc_of(w, ops_instance_tensor(inst, "a")->data,
					ops_instance_tensor(inst, "b")->data, i, j));
	}
	/* closed forms */
	assert_int_equal(global_bytes(c), ops_qgemm_global_bytes(w, &inst->plan));
	assert_int_equal(ops_qgemm_transfers(env, w, &inst->plan, &tr, &sp, &err), 0);
	assert_int_equal(c->transfers, tr);
	assert_int_equal(c->splits, sp);
	assert_int_equal(c->launches, one ? 1 : w->quant.out == OPS_F32 ? 4 : 2);
	{
		struct ops_qgemm_tiles t;
		assert_int_equal(ops_qgemm_tiles_get(w, &inst->plan, env->cores, &t, &err), 0);
		assert_int_equal(c->macs[w->quant.a],
				 (uint64_t)(w->gemm.m * w->gemm.n * w->gemm.k));
		assert_int_equal(c->tiles, (uint64_t)(t.ntn * t.parts +
						       (one ? 0 : (w->quant.out == OPS_F32 ? 3 : 1) * t.ntn)));
		/* partials of the split parts travel SHARED->SHARED */
		assert_int_equal(c->bytes[OPS_SHARED][OPS_SHARED],
				 (uint64_t)((t.parts - 1) * w->gemm.m * w->gemm.n *
					    ops_qgemm_acc_bytes(w)));
	}
	if (out)
		*out = *c;
	ops_device_free(dev);
	ops_device_free(dry);
}

static void test_random_shapes(void **state)
{
	isa_use(state);
	struct opr_error err;
	struct ops_envelope env;

	memset(&err, 0, sizeof err);
	for (int it = 0; it < 48; it++) {
		int big = it % 12 == 11;
		int64_t m = big ? rint_in(1, 3) : rint_in(1, 64), n = big ? rint_in(1, 4) : rint_in(1, 64);
		int64_t k = big ? rint_in(65000, 200000) : rint_in(1, 5000);
		enum ops_dtype at = rnd() % 2 ? OPS_U8 : OPS_S8;
		int32_t zp = at == OPS_U8 ? (int32_t)rint_in(0, 255) : (int32_t)rint_in(-128, 127);
		enum ops_group g = rnd() % 2 ? OPS_G_QGEMM : OPS_G_QGEMM_DQ_BIAS_ACT;
		enum ops_dtype out = rnd() % 3 ? OPS_F32 : OPS_S8;
		enum ops_act act = g == OPS_G_QGEMM_DQ_BIAS_ACT && out == OPS_F32
			? (enum ops_act)rint_in(0, OPS_NACTS - 1) : OPS_ACT_NONE;
		int64_t tn = rint_in(0, n), kk = rint_in(0, k < OPS_QGEMM_MAX_TILE_KK ? k : OPS_QGEMM_MAX_TILE_KK);
		struct ops_workload w;
		struct ops_plan p;
		struct ops_instance *inst;

		if (it % 4 == 0)
			zp = 0;
		workload(&w, g, m, n, k, at, zp, (int)(rnd() % 2), out, act);
		plan_of(&p, tn, kk, (int)rint_in(1, 8), (int)(rnd() % 2), (int)(rnd() % 2));
		envelope(&env, 8, 1 << 16, rnd() % 2 ? 65535 : rint_in(7, 3000));
		if (ops_instance_new(&w, &p, rnd(), "blk", &inst, &err))
			fail_msg("new: %s", err.msg);
		run_checked(&env, inst, NULL);
		ops_instance_free(inst);
	}
}

/* K = 2^22 with every input at its extreme: |a - zp| = 255, b = -128, under
 * K tiles of several lengths. */
static void test_k22_extremes(void **state)
{
	isa_use(state);
	const struct { enum ops_dtype a; int av, zp, out; } cases[] = {
		{OPS_U8, 255, 0, OPS_F32},
		{OPS_U8, 0, 255, OPS_S8},
		{OPS_S8, -128, 127, OPS_F32},
		{OPS_S8, 127, -128, OPS_F32},
	};
	const int64_t k = 1 << 22;
	struct opr_error err;
	struct ops_envelope env;

	memset(&err, 0, sizeof err);
	envelope(&env, 4, 1 << 16, 65535);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int64_t m = 1 + (int64_t)(c % 2), n = 2 - (int64_t)(c % 2);
		int64_t expect = (int64_t)(cases[c].av - cases[c].zp) * -128 * k;
		struct ops_workload w;
		struct ops_plan p;
		struct ops_instance *inst;
		struct ops_tensor *ta, *tb;
		struct ops_quality q;
		struct ops_device *dev;
		const int64_t *acc;

		workload(&w, OPS_G_QGEMM, m, n, k, cases[c].a, cases[c].zp, 1,
			 (enum ops_dtype)cases[c].out, OPS_ACT_NONE);
		w.quant.out_scale = 1e6f; /* keeps an s8 output inside the range */
		w.quant.out_zero_point = 0;
		/* K tiles of 2^16, 256 and 1000 (the host sums 256 and 65 of
		 * those in one int32 call, 65536 and 65000 worst-case products)
		 * and 4099 (15 a call, the last group short) */
		plan_of(&p, 0, (int64_t[]){OPS_QGEMM_MAX_TILE_KK, 256, 1000, 4099}[c], (int)c + 1, 1, 1);
		assert_int_equal(ops_instance_new(&w, &p, 7, "k22", &inst, &err), 0);
		ta = ops_instance_tensor(inst, "a");
		tb = ops_instance_tensor(inst, "b");
		memset(ta->data, cases[c].av & 0xFF, (size_t)(m * k));
		memset(tb->data, 0x80, (size_t)(n * k));
		assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
		assert_int_equal(ops_instance_run(dev, inst, &err), 0);
		acc = ops_qgemm_last_acc(inst);
		assert_non_null(acc);
		assert_true(llabs(expect) > INT32_MAX);
		for (int64_t e = 0; e < m * n; e++)
			assert_int_equal(acc[e], expect);
		assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
		assert_int_equal(q.exact_int, 1);
		if (cases[c].out == OPS_F32) {
			const float *y = ops_instance_output(inst, NULL);
			const float *sc = ops_instance_tensor(inst, "scale_b")->data;
			assert_true(q.rel_l2 <= 1e-7);
			for (int64_t e = 0; e < m * n; e++)
				assert_true(y[e] == (float)((double)(1.0f / 64) * sc[e % n] * (double)expect));
		} else {
			assert_true(q.max_abs_lsb == 0.0);
		}
		ops_device_free(dev);
		ops_instance_free(inst);
	}
}

/* Fused and unfused give the same bytes; fused has one launch, less GLOBAL. */
/* The table of an AVX-512 CPU without VNNI: the AVX-512 table with the
 * AVX2 path's int8 GEMM pair, and a path string that says so (no AVX-512
 * needed: nothing runs). */
static void test_no_vnni_table(void **state)
{
	(void)state;
	const struct ops_kern *t = ops_kern_avx512_without_vnni();

	assert_int_equal(t->isa, OPS_ISA_AVX512);
	assert_ptr_equal(t->qgemm, ops_kern_avx2.qgemm);
	assert_ptr_equal(t->qgemm_colsum, ops_kern_avx2.qgemm_colsum);
	assert_ptr_equal(t->conv_direct, ops_kern_avx512.conv_direct);
	assert_ptr_equal(t->conv_gemm, ops_kern_avx512.conv_gemm);
	assert_ptr_equal(t->act_f32, ops_kern_avx512.act_f32);
	assert_ptr_equal(t->stream_bytes, ops_kern_avx512.stream_bytes);
	assert_non_null(strstr(t->path[OPS_KF_QGEMM], "avx2"));
	assert_non_null(strstr(t->path[OPS_KF_QGEMM], "no vnni"));
	assert_string_equal(t->path[OPS_KF_CONV], ops_kern_avx512.path[OPS_KF_CONV]);
}

/* The AVX2 table of a CPU with AVX-VNNI: the AVX2 table with the vpdpbusd
 * int8 GEMM and a path string that says so, what selecting avx2 gives on
 * such a host; elsewhere avx2 is the plain table. */
static void test_avx_vnni_table(void **state)
{
	(void)state;
	const struct ops_kern *t = ops_kern_avx2_with_vnni();

	assert_int_equal(t->isa, OPS_ISA_AVX2);
	assert_ptr_not_equal(t->qgemm, ops_kern_avx2.qgemm);
	assert_ptr_equal(t->qgemm_colsum, ops_kern_avx2.qgemm_colsum);
	assert_null(t->qgemm_packed);
	assert_ptr_equal(t->conv_direct, ops_kern_avx2.conv_direct);
	assert_ptr_equal(t->act_f32, ops_kern_avx2.act_f32);
	assert_non_null(strstr(t->path[OPS_KF_QGEMM], "avx-vnni"));
	assert_string_equal(t->path[OPS_KF_CONV], ops_kern_avx2.path[OPS_KF_CONV]);
	if (!ops_isa_host_has(OPS_ISA_AVX2))
		return;
	assert_int_equal(ops_isa_select(OPS_ISA_AVX2, NULL), 0);
	assert_ptr_equal(ops_kern, ops_isa_host_has_avx_vnni() ? t : &ops_kern_avx2);
	assert_int_equal(ops_kfam_isa(OPS_KF_QGEMM), OPS_ISA_AVX2);
	assert_int_equal(ops_isa_select(ops_isa_host_best(), NULL), 0);
}

static void test_fused_vs_unfused(void **state)
{
	(void)state;
	struct opr_error err;
	struct ops_envelope env;

	memset(&err, 0, sizeof err);
	envelope(&env, 8, 1 << 14, 4096);
	for (int it = 0; it < 6; it++) {
		enum ops_dtype out = it % 3 == 2 ? OPS_S8 : OPS_F32;
		enum ops_act act = out == OPS_F32 ? (it % 2 ? OPS_ACT_GELU_TANH : OPS_ACT_RELU)
						 : OPS_ACT_NONE;
		struct ops_workload w;
		struct ops_plan pf, pu;
		struct ops_instance *f, *u;
		struct ops_counters cf, cu;
		size_t bf, bu;

		workload(&w, OPS_G_QGEMM_DQ_BIAS_ACT, rint_in(1, 16), rint_in(1, 48),
			 rint_in(3000, 20000), it % 2 ? OPS_U8 : OPS_S8, it % 2 ? 3 : -5, it % 2,
			 out, act);
		plan_of(&pf, 16, 2048, it % 4 + 1, 1, 1);
		pu = pf;
		pu.fused = 0;
		assert_int_equal(ops_instance_new(&w, &pf, 11, "fu", &f, &err), 0);
		assert_int_equal(ops_instance_new(&w, &pu, 11, "fu", &u, &err), 0);
		run_checked(&env, f, &cf);
		run_checked(&env, u, &cu);
		{
			const void *yf = ops_instance_output(f, &bf), *yu = ops_instance_output(u, &bu);
			assert_int_equal(bf, bu);
			assert_memory_equal(yf, yu, bf);
		}
		assert_int_equal(cf.launches, 1);
		assert_true(cu.launches > cf.launches);
		assert_true(global_bytes(&cf) < global_bytes(&cu));
		assert_int_equal(cf.elem_ops, cu.elem_ops);
		ops_instance_free(f);
		ops_instance_free(u);
	}
}

static void test_check_errors(void **state)
{
	(void)state;
	struct opr_error err;
	struct ops_workload w;
	struct ops_instance *inst;
	struct ops_plan p;
	struct ops_envelope env;
	struct ops_device *dev;

	memset(&err, 0, sizeof err);
	workload(&w, OPS_G_QGEMM, 2, 2, OPS_QGEMM_MAX_K + 1, OPS_U8, 0, 0, OPS_F32, OPS_ACT_NONE);
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	assert_string_equal(err.msg, "k 16777217 exceeds the supported maximum 16777216");
	w.gemm.k = 16;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), 0);
	w.quant.a_zero_point = 256;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	w.quant.a = OPS_S8;
	w.quant.a_zero_point = -129;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	w.quant.a_zero_point = -128;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), 0);
	w.quant.a = OPS_F16;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	w.quant.a = OPS_S8;
	w.gemm.m = 0;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	w.gemm.m = 4097;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	w.gemm.m = 2;
	w.quant.out = OPS_S8;
	w.quant.out_zero_point = 128;
	assert_int_equal(ops_impl_qgemm.check(&w, &err), OPR_EINPUT);
	w.quant.out_zero_point = 0;
	w.group = OPS_G_QGEMM_DQ_BIAS_ACT;
	w.act = OPS_ACT_RELU;
	assert_int_equal(ops_impl_qgemm_dq_bias_act.check(&w, &err), OPR_EINPUT);
	/* a tile_kk above the exact bound is refused when run */
	w.act = OPS_ACT_NONE;
	w.gemm.k = 70000;
	plan_of(&p, 0, OPS_QGEMM_MAX_TILE_KK + 1, 1, 1, 0);
	envelope(&env, 2, 1 << 16, 65535);
	assert_int_equal(ops_instance_new(&w, &p, 1, "e", &inst, &err), 0);
	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	assert_int_equal(ops_instance_run(dev, inst, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "tile_kk"));
	ops_device_free(dev);
	/* over SHARED capacity: OPR_ELIMIT from the device */
	plan_of(&inst->plan, 0, 65536, 1, 1, 1);
	envelope(&env, 2, 64, 65535);
	assert_int_equal(ops_device_new(&env, 1, &dev, &err), 0);
	assert_int_equal(ops_instance_run(dev, inst, &err), OPR_ELIMIT);
	ops_device_free(dev);
	ops_instance_free(inst);
}

static void test_plans(void **state)
{
	(void)state;
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan plans[400];
	size_t np;

	envelope(&env, 8, 256, 65535);
	workload(&w, OPS_G_QGEMM_DQ_BIAS_ACT, 8, 64, 1 << 20, OPS_U8, 3, 1, OPS_F32,
		 OPS_ACT_GELU_TANH);
	np = ops_impl_qgemm_dq_bias_act.plans(&env, &w, 1, plans, 400);
	assert_true(np >= 50);
	for (size_t i = 0; i < np; i++) {
		assert_int_equal(plans[i].fused, 1);
		assert_true(plans[i].p[0] >= 1 && plans[i].p[0] <= 64);
		assert_true(plans[i].p[1] >= 1 && plans[i].p[1] <= OPS_QGEMM_MAX_TILE_KK);
		assert_true(plans[i].p[2] >= 1 && plans[i].p[2] <= env.cores);
		assert_int_equal(plans[i].split_k, plans[i].p[2]);
		for (size_t j = 0; j < i; j++)
			assert_true(memcmp(&plans[i], &plans[j], sizeof plans[i]) != 0);
	}
	/* under a cap (the planner takes 64) the fitting ones come first, and
	 * they include the full-width n tile and every split */
	np = ops_impl_qgemm_dq_bias_act.plans(&env, &w, 1, plans, 64);
	assert_int_equal(np, 64);
	{
		int seen64 = 0, splits = 0;
		for (size_t i = 0; i < np; i++) {
			if (plans[i].p[0] == 64)
				seen64 = 1;
			if (plans[i].p[0] == 64 && plans[i].p[1] == 1024 && plans[i].double_buffer)
				splits |= 1 << plans[i].p[2];
		}
		assert_true(seen64);
		assert_int_equal(splits, (1 << 1) | (1 << 2) | (1 << 4) | (1 << 8));
		/* the first one fits 256 KiB: (8 + 64) * 1024 * 2 + partials */
		assert_true(plans[0].double_buffer && plans[0].p[0] == 64 && plans[0].p[1] == 1024);
	}
	assert_int_equal(ops_impl_qgemm_dq_bias_act.plans(&env, &w, 1, plans, 5), 5);
	/* tiny shapes clamp: n = 3, k = 100 */
	w.gemm.n = 3;
	w.gemm.k = 100;
	np = ops_impl_qgemm_dq_bias_act.plans(&env, &w, 0, plans, 400);
	assert_int_equal(np, 2); /* tile_n 3, tile_kk 100, split 1, db 1/0 */
	assert_int_equal(plans[0].p[0], 3);
	assert_int_equal(plans[0].p[1], 100);
}

/* The planner over this group for the profile's decode block: every
 * candidate evaluated by dry run, the best fits and splits K over cores. */
static void test_plan_search(void **state)
{
	(void)state;
	struct opr_error err;
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan_eval *ev = NULL;
	size_t n = 0;

	memset(&err, 0, sizeof err);
	envelope(&env, 8, 256, 65535);
	workload(&w, OPS_G_QGEMM_DQ_BIAS_ACT, 8, 64, 1 << 20, OPS_U8, 3, 1, OPS_F32,
		 OPS_ACT_GELU_TANH);
	if (ops_plan_search(&env, &w, 1, &ev, &n, &err))
		fail_msg("search: %s", err.msg);
	assert_true(n > 10);
	assert_int_equal(ev[0].rejected, 0);
	assert_int_equal(ev[0].launches, 1);
	assert_true(ev[0].plan.split_k > 1);
	assert_true(ev[0].footprint_bytes <= 256 * 1024);
	assert_int_equal(ev[0].global_bytes, ops_qgemm_global_bytes(&w, &ev[0].plan));
	for (size_t i = 1; i < n; i++)
		if (!ev[i].rejected)
			assert_true(ev[i].model_ns >= ev[0].model_ns);
	free(ev);
}

/* B rewritten between runs and said so (ops_instance_input_changed): the
 * next run derives again what it kept from B (the packed copy, where the
 * path packs) and its accumulators are the new B's exact ones; unchanged,
 * a run reuses the copy and gives the same ones again. */
static void test_packed_weights_changed(void **state)
{
	isa_use(state);
	struct opr_error err;
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan p;
	struct ops_instance *inst;
	int64_t *first = malloc(8 * 24 * sizeof *first);

	memset(&err, 0, sizeof err);
	assert_non_null(first);
	envelope(&env, 4, 1 << 16, 65535);
	workload(&w, OPS_G_QGEMM, 8, 24, 9000, OPS_U8, 3, 1, OPS_F32, OPS_ACT_NONE);
	plan_of(&p, 16, 1024, 2, 0, 1);
	if (ops_instance_new(&w, &p, 77, "blk", &inst, &err))
		fail_msg("new: %s", err.msg);
	run_checked(&env, inst, NULL);
	memcpy(first, ops_qgemm_last_acc(inst), 8 * 24 * sizeof *first);
	run_checked(&env, inst, NULL);
	assert_memory_equal(first, ops_qgemm_last_acc(inst), 8 * 24 * sizeof *first);
	struct ops_tensor *tb = ops_instance_tensor(inst, "b");
	int8_t *b = tb->data;
	for (int64_t e = 0; e < tb->count; e++)
		b[e] = (int8_t)rnd();
	assert_int_equal(ops_instance_input_changed(inst, "b", &err), 0);
	run_checked(&env, inst, NULL);
	assert_memory_not_equal(first, ops_qgemm_last_acc(inst), 8 * 24 * sizeof *first);
	ops_instance_free(inst);
	free(first);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ISA_TESTS_NO_VNNI(test_kernel_random),
		ISA_TESTS_NO_VNNI(test_kernel_strided_colsum),
		ISA_TESTS_NO_VNNI(test_kernel_tile_bound),
		cmocka_unit_test(test_pack_layout),
		ISA_TESTS_NO_VNNI(test_kernel_packed),
		ISA_TESTS_NO_VNNI(test_kernel_packed_full_range),
		ISA_TESTS_NO_VNNI(test_packed_weights_changed),
		ISA_TESTS_NO_VNNI(test_random_shapes),
		ISA_TESTS_NO_VNNI(test_k22_extremes),
		cmocka_unit_test(test_no_vnni_table),
		cmocka_unit_test(test_avx_vnni_table),
		cmocka_unit_test(test_fused_vs_unfused),
		cmocka_unit_test(test_check_errors),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_plan_search),
	};
	return cmocka_run_group_tests_name("qgemm", tests, NULL, NULL);
}
