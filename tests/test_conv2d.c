/* tests/test_conv2d.c: conv2d and conv2d+bias+activation against the fp64
 * reference over random shapes, dtypes and strategies; the direct strategy's
 * GLOBAL bytes against their closed form; dry == real counters; fused vs
 * unfused; capacity refusal; the microkernels against scalar loops; the
 * winograd strategy on every path and where it is offered. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/conv2d_int.h"
#include "../ops/device_int.h"
#include "../ops/isa_int.h"
#include "test_isa.h"

/* A small accelerator: 4 cores, 256 KiB SHARED, 64 KiB LOCAL. */
static void test_env(struct ops_envelope *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "test-npu");
	snprintf(e->power_mode, sizeof e->power_mode, "nominal");
	e->clock_ghz = 1.2;
	e->clock_scale = 1.0;
	e->cores = 4;
	e->global_bw_gbps = 900;
	e->global_capacity_gib = 32;
	e->shared_capacity_kib = 256;
	e->shared_bw_gbps = 4096;
	e->local_capacity_kib = 64;
	e->dma_max_last_dim = 65535;
	e->dma_setup_ns = 150;
	e->dma_engines = 2;
	e->tops[OPS_F32] = 16;
	e->tops[OPS_F16] = 128;
	e->tops[OPS_BF16] = 128;
	e->tops[OPS_S8] = 256;
	e->tops[OPS_U8] = 256;
	e->launch_overhead_us = 3.5;
}

/* xorshift64*: the test's own seeded generator for shapes and plans. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static int64_t rnd(int64_t lo, int64_t hi)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return lo + (int64_t)((x * 0x2545F4914F6CDD1Dull >> 33) % (uint64_t)(hi - lo + 1));
}

static double threshold(enum ops_dtype t)
{
	return t == OPS_F32 ? 1e-5 : t == OPS_F16 ? 2e-3 : 1.6e-2;
}

static uint64_t global_bytes(const struct ops_counters *c)
{
	uint64_t b = 0;
	int s, d;

	for (s = 0; s < OPS_NSPACES; s++)
		for (d = 0; d < OPS_NSPACES; d++)
			b += c->bytes[s][d] * (uint64_t)((s == OPS_GLOBAL) + (d == OPS_GLOBAL));
	return b;
}

static void set_conv(struct ops_workload *w, enum ops_group g, enum ops_dtype t,
		     int64_t n, int64_t c, int64_t h, int64_t wd, int64_t k,
		     int64_t r, int64_t s, int64_t stride, int64_t pad, int64_t dil,
		     int64_t groups)
{
	memset(w, 0, sizeof *w);
	w->group = g;
	w->dtype = t;
	w->act = OPS_ACT_RELU;
	w->conv.n = n; w->conv.c = c; w->conv.h = h; w->conv.w = wd;
	w->conv.k = k; w->conv.r = r; w->conv.s = s;
	w->conv.stride_h = stride; w->conv.stride_w = stride;
	w->conv.pad_h = pad; w->conv.pad_w = pad;
	w->conv.dil_h = dil; w->conv.dil_w = dil;
	w->conv.groups = groups;
}

static void set_plan(struct ops_plan *p, enum ops_strategy st, int fused,
		     int64_t tk, int64_t toh, int64_t tow, int64_t tc, int db)
{
	memset(p, 0, sizeof *p);
	p->strategy = st;
	p->fused = fused;
	p->p[0] = tk; p->p[1] = toh; p->p[2] = tow; p->p[3] = tc;
	p->double_buffer = db;
}

/* Runs a workload under a plan on a fresh device; returns the instance
 * (caller frees) and copies the counters out. */
static struct ops_instance *run_one(const struct ops_envelope *env,
				    const struct ops_workload *w,
				    const struct ops_plan *p, int dry,
				    struct ops_counters *cnt, double *model_ns,
				    size_t *nlaunch)
{
	struct ops_device *dev = NULL;
	struct ops_instance *inst = NULL;
	struct opr_error err = { 0 };
	int rc;

	rc = ops_device_new(env, dry, &dev, &err);
	assert_int_equal(rc, 0);
	rc = ops_instance_new(w, p, 7, "conv-test", &inst, &err);
	if (rc != 0)
		print_error("instance: %s\n", err.msg);
	assert_int_equal(rc, 0);
	rc = ops_instance_run(dev, inst, &err);
	if (rc != 0)
		print_error("run: %s\n", err.msg);
	assert_int_equal(rc, 0);
	if (cnt)
		*cnt = *ops_device_counters(dev);
	if (model_ns)
		*model_ns = ops_device_model_ns(dev);
	if (nlaunch)
		(void)ops_device_launches(dev, nlaunch);
	ops_device_free(dev);
	return inst;
}

/* A random valid shape: stride 1-3, pad 0-2, dilation 1-2, r/s 1-5,
 * groups 1, 2 or depthwise. */
static void random_shape(struct ops_workload *w, enum ops_group g, enum ops_dtype t)
{
	for (;;) {
		int64_t kind = rnd(0, 2), groups, cpg, kpg, c, k;
		struct ops_conv_dims d;

		groups = kind == 0 ? 1 : kind == 1 ? 2 : rnd(1, 6);
		cpg = kind == 2 ? 1 : rnd(1, 6);
		kpg = kind == 2 ? 1 : rnd(1, 20);
		c = cpg * groups;
		k = kpg * groups;
		set_conv(w, g, t, rnd(1, 2), c, rnd(1, 13), rnd(1, 13), k, rnd(1, 5),
			 rnd(1, 5), 1, 0, 1, groups);
		w->conv.stride_h = rnd(1, 3);
		w->conv.stride_w = rnd(1, 3);
		w->conv.pad_h = rnd(0, 2);
		w->conv.pad_w = rnd(0, 2);
		w->conv.dil_h = rnd(1, 2);
		w->conv.dil_w = rnd(1, 2);
		w->act = (enum ops_act)rnd(0, OPS_NACTS - 1);
		if (ops_conv_dims_get(w, &d, NULL) == 0)
			return;
	}
}

static void test_random_shapes_vs_reference(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	struct ops_envelope env;
	int iter, di, st;

	isa_use(state);
	test_env(&env);
	for (iter = 0; iter < 150; iter++) {
		for (di = 0; di < 3; di++) {
			struct ops_workload w;
			struct ops_conv_dims d;
			enum ops_group g = iter % 3 == 0 ? OPS_G_CONV : OPS_G_CONV_BIAS_ACT;

			random_shape(&w, g, dts[di]);
			assert_int_equal(ops_conv_dims_get(&w, &d, NULL), 0);
			for (st = OPS_STRAT_UNTILED; st < OPS_NSTRATS; st++) {
				struct ops_plan p;
				struct ops_instance *inst;
				struct ops_quality q;
				struct opr_error err = { 0 };

				if (st == OPS_STRAT_WINOGRAD && ops_conv_wino_refusal(&d, w.dtype))
					continue; /* (test_winograd has its shapes) */
				/* random tiles, partial ones included */
				set_plan(&p, (enum ops_strategy)st, (int)rnd(0, 1),
					 rnd(1, d.kpg), rnd(1, d.oh), rnd(1, d.ow),
					 rnd(1, d.cpg), (int)rnd(0, 1));
				inst = run_one(&env, &w, &p, 0, NULL, NULL, NULL);
				assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
				if (!(q.rel_l2 <= threshold(dts[di])))
					print_error("iter %d dtype %s strategy %d: rel_l2 %g "
						    "(n%lld c%lld h%lld w%lld k%lld r%lld s%lld g%lld)\n",
						    iter, ops_dtype_name(dts[di]), st, q.rel_l2,
						    (long long)d.n, (long long)d.c, (long long)d.h,
						    (long long)d.w, (long long)d.k, (long long)d.r,
						    (long long)d.s, (long long)d.groups);
				assert_true(q.rel_l2 <= threshold(dts[di]));
				ops_instance_free(inst);
			}
		}
	}
}

/* A hand-written 1x1 conv with known values: y = sum_c x*w exactly. */
static void test_known_values(void **state)
{
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan p;
	struct ops_instance *inst;
	const float *x, *wt, *y;
	size_t bytes;
	int st, i, kk;

	(void)state;
	test_env(&env);
	set_conv(&w, OPS_G_CONV, OPS_F32, 1, 3, 2, 5, 2, 1, 1, 1, 0, 1, 1);
	for (st = OPS_STRAT_UNTILED; st < OPS_STRAT_WINOGRAD; st++) { /* (a 1x1 filter) */
		set_plan(&p, (enum ops_strategy)st, 0, 0, 0, 0, 0, 1);
		inst = run_one(&env, &w, &p, 0, NULL, NULL, NULL);
		x = ops_instance_tensor(inst, "x")->data;
		wt = ops_instance_tensor(inst, "w")->data;
		y = ops_instance_output(inst, &bytes);
		assert_int_equal(bytes, 2 * 10 * sizeof(float));
		for (kk = 0; kk < 2; kk++)
			for (i = 0; i < 10; i++) {
				float e = x[i] * wt[kk * 3];

				e = e + x[10 + i] * wt[kk * 3 + 1];
				e = e + x[20 + i] * wt[kk * 3 + 2];
				assert_float_equal(y[kk * 10 + i], e, 1e-6);
			}
		ops_instance_free(inst);
	}
}

/* The simulated GLOBAL bytes of tiled plans equal the closed form, with
 * padding, strides, dilation, groups, partial tiles, fused and unfused. */
static void test_global_bytes_closed_form(void **state)
{
	struct ops_envelope env;
	int iter;

	(void)state;
	test_env(&env);
	for (iter = 0; iter < 24; iter++) {
		struct ops_workload w;
		struct ops_conv_dims d;
		struct ops_plan p;
		struct ops_counters cnt;
		struct ops_instance *inst;
		enum ops_group g = iter % 2 ? OPS_G_CONV_BIAS_ACT : OPS_G_CONV;
		uint64_t expect;

		random_shape(&w, g, iter % 3 == 0 ? OPS_F16 : OPS_F32);
		assert_int_equal(ops_conv_dims_get(&w, &d, NULL), 0);
		set_plan(&p, iter % 4 < 2 ? OPS_STRAT_DIRECT : OPS_STRAT_IM2COL,
			 (int)rnd(0, 1), rnd(1, d.kpg), rnd(1, d.oh), rnd(1, d.ow),
			 rnd(1, d.cpg), 1);
		inst = run_one(&env, &w, &p, 1, &cnt, NULL, NULL);
		expect = ops_conv_direct_global_bytes(&w, &p);
		assert_true(expect > 0);
		assert_int_equal(global_bytes(&cnt), expect);
		/* GLOBAL traffic is at least the compulsory minimum */
		assert_true(expect >= (uint64_t)(d.n * d.k * d.oh * d.ow) * ops_dtype_size(w.dtype));
		ops_instance_free(inst);
	}
	/* a worked case: 1x4x8x8 -> 4, 3x3 pad 1, tiles 2 x 4 x 8 x 4, fp32:
	 * x: 2 k-tiles * 4 ch * rows (5+5) * cols 8 * 4 B = 2560
	 * w: 2 oh-tiles * 4*4*9 * 4 B = 1152; y: 4*8*8*4 = 1024 */
	{
		struct ops_workload w;
		struct ops_plan p;

		set_conv(&w, OPS_G_CONV, OPS_F32, 1, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1);
		set_plan(&p, OPS_STRAT_DIRECT, 0, 2, 4, 8, 4, 0);
		assert_int_equal(ops_conv_direct_global_bytes(&w, &p), 2560 + 1152 + 1024);
	}
}

/* The untiled strategy reads every operand from GLOBAL at every use:
 * 2 * es per valid tap, plus y once. */
static void test_untiled_bytes(void **state)
{
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_conv_dims d;
	struct ops_plan p;
	struct ops_counters cnt;
	struct ops_instance *inst;
	int64_t ni, ko, oy, ox, c, i, j;
	uint64_t taps = 0, es = 2;

	(void)state;
	test_env(&env);
	set_conv(&w, OPS_G_CONV, OPS_F16, 2, 4, 7, 9, 6, 3, 2, 2, 1, 2, 2);
	assert_int_equal(ops_conv_dims_get(&w, &d, NULL), 0);
	for (ni = 0; ni < d.n; ni++)
	for (ko = 0; ko < d.k; ko++)
	for (oy = 0; oy < d.oh; oy++)
	for (ox = 0; ox < d.ow; ox++)
	for (c = 0; c < d.cpg; c++)
	for (i = 0; i < d.r; i++)
	for (j = 0; j < d.s; j++) {
		int64_t iy = oy * d.sh - d.ph + i * d.dh, ix = ox * d.sw - d.pw + j * d.dw;

		taps += iy >= 0 && iy < d.h && ix >= 0 && ix < d.w;
	}
	set_plan(&p, OPS_STRAT_UNTILED, 0, 0, 0, 0, 0, 0);
	inst = run_one(&env, &w, &p, 1, &cnt, NULL, NULL);
	assert_int_equal(global_bytes(&cnt), taps * 2 * es + (uint64_t)(d.n * d.k * d.oh * d.ow) * es);
	assert_int_equal(cnt.macs[OPS_F16], taps);
	assert_int_equal(cnt.launches, 1);
	ops_instance_free(inst);
}

/* A dry run counts exactly what a real run counts. */
static void test_dry_equals_real(void **state)
{
	struct ops_envelope env;
	int st, fused;

	(void)state;
	test_env(&env);
	for (st = OPS_STRAT_UNTILED; st < OPS_STRAT_WINOGRAD; st++) /* (stride 2) */
		for (fused = 0; fused < 2; fused++) {
			struct ops_workload w;
			struct ops_plan p;
			struct ops_counters real, dry;
			double mr, md;
			size_t nr, nd;
			struct ops_instance *a, *b;

			set_conv(&w, OPS_G_CONV_BIAS_ACT, fused ? OPS_BF16 : OPS_F32,
				 2, 6, 11, 10, 10, 3, 3, 2, 1, 1, 2);
			w.act = OPS_ACT_GELU_TANH;
			set_plan(&p, (enum ops_strategy)st, fused, 3, 2, 4, 2, fused);
			a = run_one(&env, &w, &p, 0, &real, &mr, &nr);
			b = run_one(&env, &w, &p, 1, &dry, &md, &nd);
			assert_memory_equal(&real, &dry, sizeof real);
			assert_true(mr == md);
			assert_int_equal(nr, nd);
			assert_int_equal(real.launches, fused ? 1 : 3);
			ops_instance_free(a);
			ops_instance_free(b);
		}
}

/* Fused and unfused agree within the dtype's threshold; fused needs one
 * launch instead of three and less GLOBAL traffic. */
static void test_fused_vs_unfused(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	struct ops_envelope env;
	int di;

	(void)state;
	test_env(&env);
	for (di = 0; di < 3; di++) {
		struct ops_workload w;
		struct ops_plan pf, pu;
		struct ops_counters cf, cu;
		struct ops_instance *a, *b;
		const void *yf, *yu;
		size_t bytes, n, i;
		double num = 0.0, den = 0.0;

		set_conv(&w, OPS_G_CONV_BIAS_ACT, dts[di], 1, 8, 12, 12, 24, 3, 3, 1, 1, 1, 1);
		w.act = OPS_ACT_SILU;
		set_plan(&pf, OPS_STRAT_DIRECT, 1, 16, 4, 12, 8, 1);
		pu = pf;
		pu.fused = 0;
		a = run_one(&env, &w, &pf, 0, &cf, NULL, NULL);
		b = run_one(&env, &w, &pu, 0, &cu, NULL, NULL);
		yf = ops_instance_output(a, &bytes);
		yu = ops_instance_output(b, NULL);
		n = bytes / ops_dtype_size(dts[di]);
		{
			float *ff = malloc(n * sizeof *ff), *fu = malloc(n * sizeof *fu);

			assert_non_null(ff);
			assert_non_null(fu);
			ops_to_f32(dts[di], yf, ff, n);
			ops_to_f32(dts[di], yu, fu, n);
			for (i = 0; i < n; i++) {
				num += ((double)ff[i] - fu[i]) * ((double)ff[i] - fu[i]);
				den += (double)fu[i] * fu[i];
			}
			free(ff);
			free(fu);
		}
		assert_true(den > 0.0);
		assert_true(sqrt(num / den) <= threshold(dts[di]));
		assert_int_equal(cf.launches, 1);
		assert_int_equal(cu.launches, 3);
		assert_true(global_bytes(&cf) < global_bytes(&cu));
		assert_int_equal(global_bytes(&cf), ops_conv_direct_global_bytes(&w, &pf));
		assert_int_equal(global_bytes(&cu), ops_conv_direct_global_bytes(&w, &pu));
		ops_instance_free(a);
		ops_instance_free(b);
	}
}

/* A plan whose SHARED footprint exceeds the capacity is refused. */
static void test_over_capacity(void **state)
{
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan p;
	struct ops_device *dev = NULL;
	struct ops_instance *inst = NULL;
	struct opr_error err = { 0 };
	struct ops_plan_eval ev;

	(void)state;
	test_env(&env);
	set_conv(&w, OPS_G_CONV, OPS_F32, 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1);
	/* patch alone: 64 ch * 58 * 58 * 4 B = 861 KiB > 256 KiB */
	set_plan(&p, OPS_STRAT_DIRECT, 0, 64, 56, 56, 64, 1);
	assert_int_equal(ops_device_new(&env, 1, &dev, &err), 0);
	assert_int_equal(ops_instance_new(&w, &p, 1, "cap", &inst, &err), 0);
	assert_int_equal(ops_instance_run(dev, inst, &err), OPR_ELIMIT);
	assert_non_null(strstr(err.msg, "SHARED"));
	ops_instance_free(inst);
	ops_device_free(dev);
	/* the planner rejects it with that reason, and accepts a small tile */
	assert_int_equal(ops_plan_evaluate(&env, &w, &p, &ev, &err), 0);
	assert_true(ev.rejected);
	set_plan(&p, OPS_STRAT_DIRECT, 0, 16, 4, 56, 32, 1);
	assert_int_equal(ops_plan_evaluate(&env, &w, &p, &ev, &err), 0);
	assert_false(ev.rejected);
	assert_true(ev.footprint_bytes <= 256 * 1024);
}

/* Shape checks: the subject named, stride/dilation 0 read as 1. */
static void test_check(void **state)
{
	const struct ops_group_impl *impl = &ops_impl_conv;
	struct ops_workload w;
	struct ops_conv_dims d;
	struct opr_error err = { 0 };

	(void)state;
	set_conv(&w, OPS_G_CONV, OPS_F32, 1, 6, 9, 9, 4, 3, 3, 0, 0, 0, 4);
	assert_int_equal(impl->check(&w, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "'groups'"));
	w.conv.groups = 2;
	assert_int_equal(impl->check(&w, &err), 0);
	assert_int_equal(ops_conv_dims_get(&w, &d, &err), 0);
	assert_int_equal(d.sh, 1);
	assert_int_equal(d.dw, 1);
	assert_int_equal(d.oh, 7);
	w.conv.r = 11;
	assert_int_equal(impl->check(&w, &err), OPR_EINPUT);
	w.conv.r = 3;
	w.conv.k = 0;
	assert_int_equal(impl->check(&w, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "'k'"));
	w.conv.k = 4;
	w.conv.pad_h = -1;
	assert_int_equal(impl->check(&w, &err), OPR_EINPUT);
	w.conv.pad_h = 0;
	w.dtype = OPS_S8;
	assert_int_equal(impl->check(&w, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "'s8'"));
	w.dtype = OPS_F16;
	w.conv.n = (int64_t)1 << 30;
	w.conv.c = (int64_t)1 << 30;
	assert_int_equal(impl->check(&w, &err), OPR_EINPUT);
}

/* The microkernels against scalar sums on random data. */
/* The chosen path's two microkernels against fp64 sums: the direct one with
 * its block of pixels and one or two weight panels, the GEMM one with one or
 * two column panels, set and then accumulated into rows of a wider matrix. */
static void test_microkernels(void **state)
{
	enum { NT = 40, LDO = 40 };
	float x[600], wp[2][16 * NT], a[6 * NT], b[2][16 * NT];
	float out[OPS_KERN_MAX_PB * 32], big[6 * LDO];
	const float *pix[OPS_KERN_MAX_PB];
	int32_t off[NT];
	int i, p, k;

	isa_use(state);
	const struct ops_kern *kn = ops_kern;
	const int NW = kn->gemm_nw;
	assert_true(NW == 16 || NW == 32);
	for (i = 0; i < 600; i++)
		x[i] = (float)rnd(-1000, 1000) / 1000.0f;
	for (i = 0; i < 16 * NT; i++)
		for (k = 0; k < 2; k++) {
			wp[k][i] = (float)rnd(-1000, 1000) / 1000.0f;
			b[k][i] = (float)rnd(-1000, 1000) / 1000.0f;
		}
	for (i = 0; i < 6 * NT; i++)
		a[i] = (float)rnd(-1000, 1000) / 1000.0f;
	for (i = 0; i < NT; i++)
		off[i] = (int32_t)rnd(0, 300);
	/* one panel, then two where the path has that kernel; pixels 13
	 * apart, then one apart (the unit-stride run of a row) */
	for (int two = 0; two < 2; two++) {
		const int PB = kn->direct_pb[two], KW = two ? 32 : 16;

		if (two && PB == 0)
			break;
		assert_true(PB >= 1 && PB <= OPS_KERN_MAX_PB);
		for (int step = 13; step >= 1; step -= 12) {
			for (p = 0; p < PB; p++)
				pix[p] = x + p * step;
			memset(out, 0xFF, sizeof out);
			kn->conv_direct(pix, off, NT, wp[0], two ? wp[1] - wp[0] : 0, out);
			for (p = 0; p < PB; p++)
				for (k = 0; k < KW; k++) {
					double e = 0.0;

					for (i = 0; i < NT; i++)
						e += (double)pix[p][off[i]] * wp[k / 16][16 * i + k % 16];
					assert_float_equal(out[p * KW + k], e, 1e-4);
				}
		}
	}
	/* into rows LDO apart: set, then accumulated a second time */
	memset(big, 0xFF, sizeof big);
	kn->conv_gemm(a, b[0], b[1] - b[0], NT, big, LDO, 0);
	for (p = 0; p < 6; p++)
		for (k = NW; k < LDO; k++)
			assert_true(isnan(big[p * LDO + k]));
	kn->conv_gemm(a, b[0], b[1] - b[0], NT, big, LDO, 1);
	for (p = 0; p < 6; p++)
		for (k = 0; k < NW; k++) {
			double e = 0.0;

			for (i = 0; i < NT; i++)
				e += (double)a[6 * i + p] * b[k / 16][16 * i + k % 16];
			assert_float_equal(big[p * LDO + k], 2.0 * e, 2e-4);
		}
}

/* A kernel's 17 output rows of ldo floats, poisoned with NaN before the
 * call: row k < nk, pixel q < nq is want(ctx, k, q) (fp64) within 1e-4, every
 * other element still NaN. */
static void check_rows_n(const float *out, int ldo, int nk, int nq,
			 double (*want)(const void *ctx, int k, int q), const void *ctx, int nrow)
{
	for (int k = 0; k < nrow; k++)
		for (int q = 0; q < ldo; q++) {
			if (k >= nk || q >= nq)
				assert_true(isnan(out[k * ldo + q]));
			else
				assert_float_equal(out[k * ldo + q], want(ctx, k, q), 1e-4);
		}
}

static void check_rows(const float *out, int ldo, int nk, int nq,
		       double (*want)(const void *ctx, int k, int q), const void *ctx)
{
	check_rows_n(out, ldo, nk, nq, want, ctx, 17);
}

/* The fp64 sums the three kernels' tests expect (their inputs). */
struct px_case {
	const float *x, *wp;
	const int32_t *off;
	int nt, ldw;
};
static double px_want(const void *ctx, int k, int q)
{
	const struct px_case *c = ctx;
	double e = 0.0;
	for (int i = 0; i < c->nt; i++)
		e += (double)c->x[c->off[i] + q] * c->wp[k * c->ldw + i];
	return e;
}

struct bf16_case {
	const uint16_t *x, *a;
	const int32_t *off;
	int nterm;
	int64_t lda;
};
static double bf16_want(const void *ctx, int k, int q)
{
	const struct bf16_case *c = ctx;
	double e = 0.0;
	for (int i = 0; i < c->nterm; i++)
		e += (double)ops_bf16_to_f32(c->x[c->off[i] + q]) *
		     ops_bf16_to_f32(c->a[k * c->lda + i]);
	return e;
}

struct pairs_case {
	const uint16_t *x, *a;
	const int32_t *toff;
	int nc, ntap;
	int64_t np;
};
static double pairs_want(const void *ctx, int k, int q)
{
	const struct pairs_case *c = ctx;
	double e = 0.0;
	for (int ch = 0; ch < c->nc; ch++)
		for (int t = 0; t < c->ntap; t++)
			e += (double)ops_bf16_to_f32(c->x[ch * c->np + c->toff[t] + q]) *
			     ops_bf16_to_f32(c->a[(((ch / 32) * c->ntap + t) * 16 + k) * 32 + ch % 32]);
	return e;
}

/* The path's pixel-vector direct kernel (where it has one) against fp64
 * sums: runs of 1 to 100 pixels (whole vectors, masked tails, several
 * blocks), 1 to 16 channels, rows ldo apart; 23 terms, and 601 (a 3x3
 * filter over 66 channels and one more: the kernel sums its terms in
 * chunks, the last one partial); weight rows ldw apart, more than the term
 * count; nothing written past a row's nq pixels or a channel's row,
 * nothing read past x[off[i] + nq - 1] (the input ends there, so ASan sees
 * any read beyond). */
static void test_px_kernel(void **state)
{
	enum { LDO = 112, NQMAX = 100, NTMAX = 601, LDW = NTMAX + 3 };
	float *wp, *x, *out;
	int32_t off[NTMAX];
	int i;

	isa_use(state);
	if (!ops_kern->conv_direct_px)
		SKIP_BECAUSE("the %s path has no pixel-vector conv kernel",
			     ops_isa_name(ops_isa_active()));
	wp = malloc(sizeof *wp * 16 * LDW);
	assert_non_null(wp);
	for (i = 0; i < 16 * LDW; i++)
		wp[i] = (float)rnd(-1000, 1000) / 1000.0f;
	out = malloc(sizeof *out * 17 * LDO);
	assert_non_null(out);
	for (int nt = 23; nt <= NTMAX; nt += NTMAX - 23)
	for (int nq = 1; nq <= NQMAX; nq += nq < 20 ? (nt > 23 ? 5 : 1) : 7) {
		int span = 0;

		for (i = 0; i < nt; i++) {
			off[i] = (int32_t)rnd(0, 150);
			if (off[i] > span)
				span = off[i];
		}
		/* the input ends at the largest offset + nq */
		x = malloc(sizeof *x * (size_t)(span + nq));
		assert_non_null(x);
		for (i = 0; i < span + nq; i++)
			x[i] = (float)rnd(-1000, 1000) / 1000.0f;
		for (int nk = 1; nk <= 16; nk += nk < 9 ? 1 : 7) {
			memset(out, 0xFF, sizeof *out * 17 * LDO);
			ops_kern->conv_direct_px(x, off, nt, wp, LDW, nk, nq, out, LDO);
			const struct px_case c = { x, wp, off, nt, LDW };
			check_rows(out, LDO, nk, nq, px_want, &c);
		}
		free(x);
	}
	free(out);
	free(wp);
}

/* The lanes kernel against fp64 sums: runs of 1 to 100 pixels (whole
 * blocks of 28 or 14, a row's remainder, several blocks a row), 1 to 9
 * rows (more than one group of blocks), 1 to 32 channels (one weight
 * vector, and two LDV floats apart: LDV is not 16 * nterm, so a kernel
 * that took the second vector's weights from anywhere else fails), with
 * and without the bias; 23 terms, and 601 (summed in chunks, the last one
 * partial); rows of x LDX apart and of y LDR apart, channels LDK apart.
 * Nothing is written outside the rows' nq pixels of the nk channels
 * (poisoned with NaN), and nothing read past x[(nrow-1)*LDX + off[i] +
 * nq - 1] (the input ends there, so ASan sees any read beyond). */
static void test_lanes_kernel(void **state)
{
	enum { NQMAX = 100, NTMAX = 601, LDX = 37, LDR = 104, NRMAX = 9, LDK = NRMAX * LDR + 5,
	       LDV = 16 * NTMAX + 48, NKMAX = 32 };
	static const int nqs[] = { 1, 2, 3, 4, 5, 7, 13, 14, 15, 16, 17, 27, 28, 29, 31, 45, 56, 57, 100 };
	static const int nks[] = { 1, 5, 15, 16, 17, 24, 31, 32 };
	float *wp, *x, *y, bias[NKMAX];
	int32_t off[NTMAX];
	int i, n = 0;

	isa_use(state);
	if (!ops_kern->conv_direct_lanes)
		SKIP_BECAUSE("the %s path has no channels-along-lanes conv kernel",
			     ops_isa_name(ops_isa_active()));
	wp = malloc(sizeof *wp * 2 * LDV);
	y = malloc(sizeof *y * (NKMAX + 1) * LDK);
	assert_non_null(wp);
	assert_non_null(y);
	for (i = 0; i < 2 * LDV; i++)
		wp[i] = (float)rnd(-1000, 1000) / 1000.0f;
	for (i = 0; i < NKMAX; i++)
		bias[i] = (float)rnd(-1000, 1000) / 100.0f;
	for (int nt = 23; nt <= NTMAX; nt += NTMAX - 23)
	for (size_t iq = 0; iq < sizeof nqs / sizeof nqs[0]; iq++)
	for (size_t ik = 0; ik < sizeof nks / sizeof nks[0]; ik++, n++) {
		int nq = nqs[iq], nk = nks[ik], nrow = n % 3 == 0 ? 1 : n % 3 == 1 ? 3 : NRMAX;
		const float *b = n & 1 ? bias : NULL;
		int span = 0;

		for (i = 0; i < nt; i++) {
			off[i] = (int32_t)rnd(0, 150);
			if (off[i] > span)
				span = off[i];
		}
		/* the input ends at the last row's largest offset + nq */
		x = malloc(sizeof *x * (size_t)((nrow - 1) * LDX + span + nq));
		assert_non_null(x);
		for (i = 0; i < (nrow - 1) * LDX + span + nq; i++)
			x[i] = (float)rnd(-1000, 1000) / 1000.0f;
		memset(y, 0xFF, sizeof *y * (NKMAX + 1) * LDK);
		ops_kern->conv_direct_lanes(x, LDX, off, nt, wp, LDV, nk, nrow, nq, b, y, LDK, LDR);
		for (int k = 0; k < NKMAX + 1; k++)
			for (int e = 0; e < LDK; e++) {
				int r = e / LDR, q = e % LDR;
				double want = b && k < NKMAX ? b[k] : 0.0;

				if (k >= nk || r >= nrow || q >= nq) {
					assert_true(isnan(y[k * LDK + e]));
					continue;
				}
				for (i = 0; i < nt; i++)
					want += (double)x[r * LDX + off[i] + q] *
						wp[(k / 16) * LDV + 16 * i + k % 16];
				assert_float_equal(y[k * LDK + e], want, 1e-4);
			}
		free(x);
	}
	free(y);
	free(wp);
}

/* The bf16 kernel on AMX tiles (where the host runs it) against fp64 sums
 * of the bf16 inputs: odd term counts (the A rows zero past nterm), 1 to
 * 16 channels, runs of 1 to 150 pixels; poisoned outputs stay poisoned
 * past each row's nq pixels and past nk rows. */
static void test_bf16_kernel(void **state)
{
	enum { LDO = 160, NQMAX = 150 };
	const struct ops_kern *kn;

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_direct_bf16 || !kn->conv_bf16_ready || !kn->conv_bf16_ready())
		SKIP_BECAUSE("the %s path runs no bf16 conv kernel on this host (AMX-BF16 "
			     "with the OS's tile state)", ops_isa_name(ops_isa_active()));
	float *out = malloc(sizeof *out * 17 * LDO);
	assert_non_null(out);
	for (int nterm = 1; nterm <= 75; nterm += 37) {
		int64_t lda = (nterm + 31) / 32 * 32;
		uint16_t *a = calloc((size_t)(16 * lda), sizeof *a);
		int32_t *off = malloc(sizeof *off * (size_t)nterm);
		int span = 0;

		assert_non_null(a);
		assert_non_null(off);
		for (int i = 0; i < nterm; i++) {
			off[i] = (int32_t)rnd(0, 200);
			if (off[i] > span)
				span = off[i];
		}
		for (int k = 0; k < 16; k++)
			for (int i = 0; i < nterm; i++)
				a[k * lda + i] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
		for (int nq = 1; nq <= NQMAX; nq += nq < 40 ? 13 : 37) {
			/* the input ends at the largest offset + nq */
			uint16_t *x = malloc(sizeof *x * (size_t)(span + nq));

			assert_non_null(x);
			for (int i = 0; i < span + nq; i++)
				x[i] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
			for (int nk = 1; nk <= 16; nk += 5) {
				memset(out, 0xFF, sizeof *out * 17 * LDO);
				kn->conv_direct_bf16(x, off, nterm, a, lda, nk, nq, out, LDO);
				const struct bf16_case c = { x, a, off, nterm, lda };
				check_rows(out, LDO, nk, nq, bf16_want, &c);
			}
			free(x);
		}
		free(a);
		free(off);
	}
	free(out);
}

/* The channel-pair bf16 kernel (where the host runs it): the packing puts
 * channel 2*pair + j of position p at xp[(pair*plane + p)*2 + j] and zeros
 * past nc; the kernel against fp64 sums over channel blocks and taps for
 * 1 to 70 channels (one to three 32-channel blocks, odd counts), 1 to 9
 * taps, runs of 1 to 150 pixels and 1 to 16 output channels; poisoned
 * outputs stay poisoned past nq and nk. The packed buffer is as long as the
 * contract asks (the largest tap offset + nq rounded up to 16), no more. */
static void test_bf16_pairs_kernel(void **state)
{
	enum { LDO = 160, NQMAX = 150 };
	const struct ops_kern *kn;

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_bf16_pairs || !kn->conv_bf16_ready || !kn->conv_bf16_ready())
		SKIP_BECAUSE("the %s path runs no channel-pair bf16 conv kernel on this host "
			     "(AMX-BF16 with the OS's tile state)", ops_isa_name(ops_isa_active()));
	float *out = malloc(sizeof *out * 17 * LDO);
	assert_non_null(out);
	for (int nc = 1; nc <= 70; nc += 23) {
		int ncb = (nc + 31) / 32, ntap = (int)rnd(1, 9), span = 0;
		int64_t npair = 16 * ncb;
		int32_t toff[9];
		uint16_t *a = calloc((size_t)(ncb * ntap * 512), sizeof *a);

		assert_non_null(a);
		for (int t = 0; t < ntap; t++) {
			toff[t] = (int32_t)rnd(0, 90);
			span = toff[t] > span ? toff[t] : span;
		}
		for (int cb = 0; cb < ncb; cb++)
			for (int t = 0; t < ntap; t++)
				for (int k = 0; k < 16; k++)
					for (int c = 0; c < 32 && 32 * cb + c < nc; c++)
						a[((cb * ntap + t) * 16 + k) * 32 + c] =
							ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
		for (int nq = 1; nq <= NQMAX; nq += nq < 40 ? 13 : 37) {
			int64_t np = span + (nq + 15) / 16 * 16, plane = np + 3;
			uint16_t *x = malloc(sizeof *x * (size_t)(nc * np));
			uint16_t *xp = malloc(sizeof *xp * (size_t)(npair * plane * 2));

			assert_non_null(x);
			assert_non_null(xp);
			for (int64_t i = 0; i < nc * np; i++)
				x[i] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
			memset(xp, 0xFF, sizeof *xp * (size_t)(npair * plane * 2));
			kn->conv_bf16_pack_pairs(x, np, nc, np, xp, plane, npair);
			for (int64_t pr = 0; pr < npair; pr++)
				for (int64_t q = 0; q < plane; q++)
					for (int j = 0; j < 2; j++) {
						uint16_t v = xp[(pr * plane + q) * 2 + j];
						int64_t c = 2 * pr + j;

						if (q >= np)
							assert_int_equal(v, 0xFFFF); /* not written */
						else
							assert_int_equal(v, c < nc ? x[c * np + q] : 0);
					}
			for (int nk = 1; nk <= 16; nk += 5) {
				memset(out, 0xFF, sizeof *out * 17 * LDO);
				kn->conv_bf16_pairs(xp, plane, ncb, toff, ntap, a, nk, nq, out, LDO);
				const struct pairs_case c = { x, a, toff, nc, ntap, np };
				check_rows(out, LDO, nk, nq, pairs_want, &c);
			}
			free(x);
			free(xp);
		}
		free(a);
	}
	free(out);
}

struct cl_case {
	const uint16_t *xn, *b, *b2;
	const int32_t *toff;
	int nc, ntap, ncol;
	int64_t cbs, rp, cs;
};
static double cl_want(const void *ctx, int k, int q)
{
	const struct cl_case *c = ctx;
	int64_t r = q / c->ncol, col = q % c->ncol;
	double e = 0.0;

	for (int ch = 0; ch < c->nc; ch++)
		for (int t = 0; t < c->ntap; t++) {
			int64_t p = r * c->rp + col * c->cs + c->toff[t];
			int cb = ch / 32, cc = ch % 32;

			const uint16_t *bk = k < 16 ? c->b : c->b2;

			e += (double)ops_bf16_to_f32(c->xn[(cb * c->cbs + p) * 32 + cc]) *
			     ops_bf16_to_f32(bk[((cb * c->ntap + t) * 16 + cc / 2) * 32 +
						2 * (k % 16) + cc % 2]);
		}
	return e;
}

/* The channel-last bf16 kernel (where the host runs it) against fp64 sums:
 * 1 to 70 channels (one to three 32-channel blocks, the channels past nc
 * zero in xn and b as the contract says), 1 to 9 taps at random offsets,
 * column steps 1 and 2, 1 to 5 rows of 1 to 45 outputs (pieces of every
 * width m from 1 to 16, an overlapping last piece, groups of four pieces
 * and a partial one, of two pieces and one alone), 1 to 32 output channels
 * (one weight vector, and two: b2 from its own buffer); poisoned outputs
 * stay poisoned past the nr x ncol outputs and nk. Each call mixes jobs of
 * one and of two vectors. The input holds the positions read and no
 * more. */
static void test_bf16_cl_kernel(void **state)
{
	enum { LDO = 240, LDY = 5 * 48, NK = 33 };
	static const int cols[] = { 1, 7, 14, 16, 17, 28, 33, 45, 47 };
	static const int nks[] = { 1, 6, 11, 16, 17, 24, 32 };
	const struct ops_kern *kn;

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_bf16_cl || !kn->conv_bf16_ready || !kn->conv_bf16_ready())
		SKIP_BECAUSE("the %s path runs no channel-last bf16 conv kernel on this host "
			     "(AMX-BF16 with the OS's tile state)", ops_isa_name(ops_isa_active()));
	float *out = malloc(sizeof *out * NK * LDO), *out2 = malloc(sizeof *out2 * NK * LDO);
	uint16_t *yb = malloc(sizeof *yb * NK * LDY);
	assert_non_null(out);
	assert_non_null(out2);
	assert_non_null(yb);
	for (int nc = 1; nc <= 70; nc += 23)
	for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++) {
		int ncb = (nc + 31) / 32, ntap = (int)rnd(1, 9), ncol = cols[ci];
		int64_t cs = (int64_t)rnd(1, 2), nr = rnd(1, 5), span = 0;
		int64_t rp = (ncol - 1) * cs + 1 + rnd(0, 6), cbs;
		int32_t toff[9];

		if (nr * ncol > LDO)
			nr = LDO / ncol;
		if (ncol == 47) {
			/* unit stride, rows 50 apart: the piece of flat
			 * positions 48..63 starts between rows 0 and 1 */
			cs = 1;
			rp = 50;
			nr = 2 + nr % 3;
		}
		for (int t = 0; t < ntap; t++) {
			toff[t] = (int32_t)rnd(0, 40);
			span = toff[t] > span ? toff[t] : span;
		}
		cbs = (nr - 1) * rp + (ncol - 1) * cs + span + 1;
		uint16_t *xn = malloc(sizeof *xn * (size_t)(ncb * cbs * 32));
		uint16_t *b = calloc((size_t)(ncb * ntap * 512), sizeof *b);
		uint16_t *b2 = calloc((size_t)(ncb * ntap * 512), sizeof *b2);

		assert_non_null(xn);
		assert_non_null(b);
		assert_non_null(b2);
		for (int64_t i = 0; i < ncb * cbs * 32; i++)
			xn[i] = (i % 32) + 32 * (i / (cbs * 32)) < nc ?
				ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f) : 0;
		for (int ch = 0; ch < nc; ch++)
			for (int t = 0; t < ntap; t++)
				for (int k = 0; k < 16; k++) {
					int64_t e = (((ch / 32) * ntap + t) * 16 + (ch % 32) / 2) * 32 +
						    2 * k + ch % 2;

					b[e] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
					b2[e] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
				}
		for (size_t ki = 0; ki < sizeof nks / sizeof nks[0]; ki++) {
			int nk = nks[ki], nk2 = nk > 16 ? nk - 16 : nk + 16;
			const struct cl_case c = { xn, b, b2, toff, nc, ntap, ncol, cbs, rp, cs };
			/* the same block narrower, with the other number of
			 * vectors: another tile width and mode in the call */
			int64_t ncol2 = ncol / 2 + 1, nr2 = nr > 1 ? nr - 1 : 1;
			const struct cl_case c2 = { xn, b, b2, toff, nc, ntap, (int)ncol2, cbs, rp, cs };

			/* three jobs in one call: sums into out, rounded into y,
			 * the narrower block into out2 (y's own rounding checked
			 * against out's sums) */
			memset(out, 0xFF, sizeof *out * NK * LDO);
			memset(out2, 0xFF, sizeof *out2 * NK * LDO);
			memset(yb, 0xFF, sizeof *yb * NK * LDY);
			struct ops_cl_job jobs[3] = {
				{ xn, b, nk > 16 ? b2 : NULL, out, NULL, nk, nr, ncol },
				{ xn, b, nk > 16 ? b2 : NULL, NULL, yb, nk, nr, ncol },
				{ xn, b, nk2 > 16 ? b2 : NULL, out2, NULL, nk2, nr2, ncol2 },
			};
			/* y's rows apart by more than a row, or (every other
			 * nk) adjacent, as whole rows of an image are: the
			 * pieces then run over the rows' ends at unit stride */
			int64_t ldyr = ki % 2 ? ncol + 3 : ncol;

			kn->conv_bf16_cl(jobs, 3, cbs, ncb, toff, ntap, rp, cs, LDO, LDY, ldyr);
			check_rows_n(out, LDO, nk, (int)(nr * ncol), cl_want, &c, NK);
			check_rows_n(out2, LDO, nk2, (int)(nr2 * ncol2), cl_want, &c2, NK);
			for (int k = 0; k < NK; k++)
				for (int64_t i = 0; i < LDY; i++) {
					int64_t r = i / ldyr, col = i % ldyr;

					if (k < nk && r < nr && col < ncol)
						assert_int_equal(yb[k * LDY + i],
								 ops_f32_to_bf16(out[k * LDO + r * ncol + col]));
					else
						assert_int_equal(yb[k * LDY + i], 0xFFFF);
				}
		}
		free(xn);
		free(b);
		free(b2);
	}
	free(out);
	free(out2);
	free(yb);
}

/* The 1x1 GEMM kernel (where the host runs it) against fp64 sums of the
 * same bf16 inputs: channel counts below, at and past a 32-channel block,
 * plane sizes with partial 16- and 32-position blocks, output channel
 * counts with a lone or partial last vector; y poisoned first, with a
 * guard row after its nk rows that must stay untouched. Tolerance: the
 * bf16 rounding of y (2^-9 of it) and fp32 accumulation over nc terms. */
static void test_bf16_gemm_kernel(void **state)
{
	static const int ncs[] = { 1, 17, 32, 40, 64, 100 };
	static const int nqs[] = { 1, 15, 16, 17, 31, 32, 33, 100 };
	static const int nks[] = { 1, 15, 16, 17, 32, 33, 48, 70 };
	const struct ops_kern *kn;

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_bf16_gemm || !kn->conv_bf16_ready || !kn->conv_bf16_ready())
		SKIP_BECAUSE("the %s path runs no 1x1 bf16 GEMM kernel on this host "
			     "(AMX-BF16 with the OS's tile state)", ops_isa_name(ops_isa_active()));
	for (size_t ci = 0; ci < sizeof ncs / sizeof ncs[0]; ci++)
	for (size_t qi = 0; qi < sizeof nqs / sizeof nqs[0]; qi++) {
		int nc = ncs[ci], nq = nqs[qi], ncb = (nc + 31) / 32;
		uint16_t *x = malloc(sizeof *x * (size_t)(nc * nq));
		uint16_t *buf = aligned_alloc(64, sizeof *buf * 2048 * (size_t)ncb);

		assert_non_null(x);
		assert_non_null(buf);
		for (int i = 0; i < nc * nq; i++)
			x[i] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
		for (size_t ki = 0; ki < sizeof nks / sizeof nks[0]; ki++) {
			int nk = nks[ki], nv = (nk + 15) / 16;
			uint16_t *w = malloc(sizeof *w * (size_t)(nk * nc));
			uint16_t *a = calloc((size_t)(nv * ncb * 512), sizeof *a);
			uint16_t *y = malloc(sizeof *y * (size_t)((nk + 1) * nq));

			assert_non_null(w);
			assert_non_null(a);
			assert_non_null(y);
			for (int k = 0; k < nk; k++)
				for (int c = 0; c < nc; c++) {
					w[k * nc + c] = ops_f32_to_bf16((float)rnd(-1000, 1000) / 1000.0f);
					a[((k / 16) * ncb + c / 32) * 512 + (k % 16) * 32 + c % 32] =
						w[k * nc + c];
				}
			memset(y, 0xFF, sizeof *y * (size_t)((nk + 1) * nq));
			kn->conv_bf16_gemm(x, nc, nq, a, nk, y, buf);
			for (int k = 0; k < nk; k++)
				for (int q = 0; q < nq; q++) {
					double e = 0.0, mag = 0.0;

					for (int c = 0; c < nc; c++) {
						double t = (double)ops_bf16_to_f32(x[c * nq + q]) *
							   ops_bf16_to_f32(w[k * nc + c]);
						e += t;
						mag += fabs(t);
					}
					double got = ops_bf16_to_f32(y[k * nq + q]);
					double tol = ldexp(fabs(e), -8) + 2e-5 * mag + 1e-30;

					if (fabs(got - e) > tol)
						print_error("nc %d nq %d nk %d: y[%d][%d] = %.9g, want %.9g\n",
							    nc, nq, nk, k, q, got, e);
					assert_true(fabs(got - e) <= tol);
				}
			for (int q = 0; q < nq; q++)
				assert_int_equal(y[nk * nq + q], 0xFFFF);
			free(w);
			free(a);
			free(y);
		}
		free(x);
		free(buf);
	}
}

/* The fp32 1x1 GEMM kernel (where the path has one) against fp64 sums:
 * channel counts 1, 17 and 64, plane sizes with partial 16- and
 * 32-position blocks, output channel counts around its blocks of 6; y
 * poisoned first, a guard row after its nk rows untouched. */
static void test_f32_gemm_kernel(void **state)
{
	static const int ncs[] = { 1, 17, 64 };
	static const int nqs[] = { 1, 15, 16, 17, 31, 32, 33, 100 };
	static const int nks[] = { 1, 5, 6, 7, 12, 13 };
	const struct ops_kern *kn;

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_f32_gemm)
		SKIP_BECAUSE("the %s path has no fp32 1x1 GEMM kernel", ops_isa_name(ops_isa_active()));
	for (size_t ci = 0; ci < sizeof ncs / sizeof ncs[0]; ci++)
	for (size_t qi = 0; qi < sizeof nqs / sizeof nqs[0]; qi++)
	for (size_t ki = 0; ki < sizeof nks / sizeof nks[0]; ki++) {
		int nc = ncs[ci], nq = nqs[qi], nk = nks[ki];
		float *x = malloc(sizeof *x * (size_t)(nc * nq)), *w = malloc(sizeof *w * (size_t)(nk * nc));
		float *y = malloc(sizeof *y * (size_t)((nk + 1) * nq));

		assert_non_null(x);
		assert_non_null(w);
		assert_non_null(y);
		for (int i = 0; i < nc * nq; i++)
			x[i] = (float)rnd(-1000, 1000) / 1000.0f;
		for (int i = 0; i < nk * nc; i++)
			w[i] = (float)rnd(-1000, 1000) / 1000.0f;
		memset(y, 0xFF, sizeof *y * (size_t)((nk + 1) * nq));
		kn->conv_f32_gemm(x, nc, nq, w, nk, y);
		for (int k = 0; k < nk; k++)
			for (int q = 0; q < nq; q++) {
				double e = 0.0;

				for (int c = 0; c < nc; c++)
					e += (double)x[c * nq + q] * w[k * nc + c];
				assert_float_equal(y[k * nq + q], e, 1e-4);
			}
		for (int q = 0; q < nq; q++)
			assert_true(isnan(y[nk * nq + q]));
		free(x);
		free(w);
		free(y);
	}
}

/* The channel-last kernel's rounding into y (where the host runs it)
 * against the scalar rounding of the same call's fp32 sums, bit for bit:
 * sums near the bottom of the normal range and below it (inputs near
 * 2^-66, weights near 2^-60), NaN and infinite sums among ordinary ones,
 * for 1, 16, 17 and 32 channels. */
static void test_bf16_cl_rounding(void **state)
{
	enum { NR = 2, NCOL = 28, LDO = 64, NQ = NR * NCOL };
	static const int nks[] = { 1, 16, 17, 32 };
	const struct ops_kern *kn;
	int32_t toff[1] = { 0 };
	uint16_t xn[NQ * 32], b[512], b2[512], y[32 * NQ];
	float out[32 * LDO];

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_bf16_cl || !kn->conv_bf16_ready || !kn->conv_bf16_ready())
		SKIP_BECAUSE("the %s path runs no channel-last bf16 conv kernel on this host "
			     "(AMX-BF16 with the OS's tile state)", ops_isa_name(ops_isa_active()));
	for (int tiny = 0; tiny < 2; tiny++)
	for (size_t ki = 0; ki < sizeof nks / sizeof nks[0]; ki++) {
		int nk = nks[ki];
		float sx = tiny ? ldexpf(1.0f, -66) : 1.0f, sw = tiny ? ldexpf(1.0f, -60) : 1.0f;

		for (int i = 0; i < NQ * 32; i++)
			xn[i] = ops_f32_to_bf16(sx * (float)rnd(-8, 8));
		for (int i = 0; i < 512; i++) {
			b[i] = ops_f32_to_bf16(sw * (float)rnd(-8, 8));
			b2[i] = ops_f32_to_bf16(sw * (float)rnd(-8, 8));
		}
		if (!tiny) {
			xn[3 * 32 + 5] = ops_f32_to_bf16(NAN);
			xn[10 * 32 + 7] = ops_f32_to_bf16(INFINITY);
			xn[20 * 32 + 9] = ops_f32_to_bf16(INFINITY);
			xn[20 * 32 + 10] = ops_f32_to_bf16(-INFINITY);
		}
		memset(out, 0xFF, sizeof out);
		memset(y, 0xFF, sizeof y);
		struct ops_cl_job jobs[2] = {
			{ xn, b, nk > 16 ? b2 : NULL, out, NULL, nk, NR, NCOL },
			{ xn, b, nk > 16 ? b2 : NULL, NULL, y, nk, NR, NCOL },
		};
		kn->conv_bf16_cl(jobs, 2, NQ, 1, toff, 1, NCOL, 1, LDO, NQ, NCOL);
		for (int k = 0; k < nk; k++)
			for (int q = 0; q < NQ; q++) {
				float v = out[k * LDO + q];

				if (y[k * NQ + q] != ops_f32_to_bf16(v))
					print_error("tiny %d nk %d: channel %d output %d: sum %a gave "
						    "%#x, the scalar rounding %#x\n", tiny, nk, k, q,
						    (double)v, y[k * NQ + q], ops_f32_to_bf16(v));
				assert_int_equal(y[k * NQ + q], ops_f32_to_bf16(v));
			}
		for (int i = nk * NQ; i < 32 * NQ; i++)
			assert_int_equal(y[i], 0xFFFF);
	}
}

/* The channel-last kernel's row packing (where the host runs it): every
 * channel count 1..32 (32 the most often: it has a path of its own), valid
 * ranges that start before, at and after the row's first position and end
 * before, at and past its last, rows of 1 to 45 positions (partial
 * 16-position blocks); the rest of dst poisoned.
 * The source holds [lo, hi) of each channel row and nothing more, so a
 * read outside it is a heap overflow under ASan. */
static void test_bf16_cl_row(void **state)
{
	enum { NMAX = 45 };
	const struct ops_kern *kn;

	isa_use(state);
	kn = ops_kern;
	if (!kn->conv_bf16_cl_row || !kn->conv_bf16_ready || !kn->conv_bf16_ready())
		SKIP_BECAUSE("the %s path runs no channel-last bf16 conv kernel on this host "
			     "(AMX-BF16 with the OS's tile state)", ops_isa_name(ops_isa_active()));
	uint16_t *dst = malloc(sizeof *dst * (NMAX + 1) * 32);
	assert_non_null(dst);
	/* all 32 channels take the 8-position path where the run allows:
	 * more draws of them */
	for (int nc = 1; nc <= 32; nc++)
	for (int draw = 0; draw < (nc == 32 ? 40 : 3); draw++) {
		int64_t n = rnd(1, NMAX), lo = rnd(0, 3) ? rnd(0, 5) : 0;
		int64_t hi = rnd(0, 3) ? n - rnd(0, 5) : n + rnd(0, 3), lds;

		if (hi < lo)
			hi = lo + rnd(0, 2);
		lds = hi - lo + rnd(0, 4);
		uint16_t *src = malloc(sizeof *src * (size_t)((nc - 1) * lds + (hi - lo) + 1));

		assert_non_null(src);
		for (int64_t i = 0; i < (nc - 1) * lds + (hi - lo); i++)
			src[i] = (uint16_t)rnd(1, 0xfffe);
		memset(dst, 0xFF, sizeof *dst * (NMAX + 1) * 32);
		kn->conv_bf16_cl_row(src, lds, nc, lo, hi, n, dst);
		for (int64_t p = 0; p <= NMAX; p++)
			for (int c = 0; c < 32; c++) {
				uint16_t want = p >= n ? 0xFFFF :
						c < nc && p >= lo && p < hi ? src[c * lds + p - lo] : 0;

				assert_int_equal(dst[p * 32 + c], want);
			}
		free(src);
	}
	free(dst);
}

/* An instance keeps what it derived from its weights across runs (the
 * channel-last bf16 kernel's B tiles, the 1x1 GEMM's A tiles, the fp32
 * Winograd strategy's U): after its weights change, and the writer says
 * so (ops_instance_input_changed), the next run must use the new ones.
 * Three runs of one instance, the weights rewritten between them (one
 * element, then all), each against the fp64 reference of the weights it
 * ran with; the counters of every run equal; a notice for an input the
 * instance lacks, or for its output, refused. A bf16 3x3 conv, an
 * unpadded bf16 1x1 one, an fp32 3x3 one under the Winograd strategy. */
static void test_kept_weights_follow(void **state)
{
	static const struct {
		enum ops_dtype dt;
		int64_t r;
		enum ops_strategy st;
	} cases[] = { { OPS_BF16, 3, OPS_STRAT_DIRECT }, { OPS_BF16, 1, OPS_STRAT_DIRECT },
		      { OPS_F32, 3, OPS_STRAT_WINOGRAD } };
	struct ops_envelope env;

	isa_use(state);
	test_env(&env);
	env.shared_capacity_kib = 4096;
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		int64_t r = cases[ci].r;
		enum ops_dtype dt = cases[ci].dt;
		struct ops_workload w;
		struct ops_plan p;
		struct ops_quality q;
		struct ops_counters c0, c;
		struct opr_error err = { 0 };
		struct ops_device *dev = NULL;
		struct ops_instance *a;

		set_conv(&w, OPS_G_CONV, dt, 1, 40, 9, 31, 20, r, r, 1, r / 2, 1, 1);
		set_plan(&p, cases[ci].st, 0, 16, 4, 14, 40, 1);
		assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
		assert_int_equal(ops_instance_new(&w, &p, 5, "conv-test", &a, &err), 0);
		struct ops_tensor *tw = ops_instance_tensor(a, "w");
		assert_non_null(tw);
		for (int run = 0; run < 3; run++) {
			for (int64_t i = 0; i < (run == 1 ? 1 : run == 2 ? tw->count : 0); i++) {
				int64_t e = run == 1 ? 7 : i;
				float v = dt == OPS_F32 ? ((float *)tw->data)[e] :
					  ops_bf16_to_f32(((uint16_t *)tw->data)[e]);

				v = run == 1 ? -v + 0.5f : 0.25f - v;
				if (dt == OPS_F32)
					((float *)tw->data)[e] = v;
				else
					((uint16_t *)tw->data)[e] = ops_f32_to_bf16(v);
			}
			if (run > 0) /* the writer's notice (ops_int.h) */
				assert_int_equal(ops_instance_input_changed(a, "w", &err), 0);
			ops_device_reset(dev);
			assert_int_equal(ops_instance_run(dev, a, &err), 0);
			assert_int_equal(ops_instance_quality(a, &q, &err), 0);
			if (!(q.rel_l2 <= threshold(dt)))
				print_error("case %zu run %d: rel_l2 %g\n", ci, run, q.rel_l2);
			assert_true(q.rel_l2 <= threshold(dt));
			c = *ops_device_counters(dev);
			if (run == 0)
				c0 = c;
			assert_memory_equal(&c, &c0, sizeof c);
		}
		assert_int_equal(ops_instance_input_changed(a, "v", &err), OPR_EINPUT);
		assert_int_equal(ops_instance_input_changed(a, "y", &err), OPR_EINPUT);
		ops_instance_free(a);
		ops_device_free(dev);
	}
}

/* A one-pass launch whose tiles write y themselves replays its first
 * counted launch's counting on its repeats (ops_launch_memo): a run after
 * a reset and two in a row give the counters and records of a dry
 * device's counted runs, byte for byte, and outputs that pass the
 * reference (each run's poisoned first); bf16 on the channel-last kernel
 * (stride 1 and 2, its 1x1 GEMM), fp32 and fp16 on the pixel-vector and
 * lanes kernels (a 1x1 on a plane of 460, fp32's GEMM), each unfused and
 * fused with bias and SiLU; a change of plan counts again. Launches the
 * path does not replay (stride 2 off the channel-last kernel, paths
 * without these kernels) count every run, with the same counters. */
static void test_launch_memo(void **state)
{
	/* c, h, w, k, tile_k, tile_oh, tile_ow, stride, filter (3: padded by
	 * 1; 1: unpadded, the 1x1 GEMM at unit stride) */
	static const int64_t shapes[][9] = {
		{ 64, 56, 56, 64, 16, 8, 28, 1, 3 }, { 40, 9, 31, 20, 16, 4, 14, 1, 3 },
		{ 33, 20, 18, 48, 32, 5, 18, 1, 3 }, { 64, 56, 56, 128, 32, 4, 14, 2, 3 },
		{ 256, 14, 14, 64, 32, 7, 14, 1, 1 }, { 40, 9, 10, 80, 16, 3, 10, 1, 1 },
		{ 24, 23, 20, 12, 6, 5, 20, 1, 1 },
	};
	static const enum ops_dtype dts[] = { OPS_BF16, OPS_F32, OPS_F16 };
	struct ops_envelope env;
	int replayed = 0, cl;

	isa_use(state);
	cl = ops_kern->conv_bf16_cl && ops_kern->conv_bf16_ready && ops_kern->conv_bf16_ready();
	test_env(&env);
	env.shared_capacity_kib = 8192;
	env.launch_first_us = 20.0; /* a run's first launch is another record */
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
	for (int di = 0; di < 3; di++)
	for (int fused = 0; fused < 2; fused++) {
		const int64_t *sh = shapes[si];
		/* which launches replay: bf16 on the channel-last kernel (and
		 * its 1x1 GEMM), fp32 and fp16 on the pixel-vector and lanes
		 * kernels (and the fp32 1x1 GEMM), which take unit stride */
		const int memo = dts[di] == OPS_BF16 ? cl : ops_kern->conv_direct_px && sh[7] == 1;
		struct ops_workload w;
		struct ops_plan p;
		struct opr_error err = { 0 };
		struct ops_device *dev = NULL, *dry = NULL;
		struct ops_instance *a, *b;
		struct ops_quality q;

		if (dts[di] == OPS_BF16 && !cl)
			continue;
		set_conv(&w, fused ? OPS_G_CONV_BIAS_ACT : OPS_G_CONV, dts[di], 1, sh[0], sh[1],
			 sh[2], sh[3], sh[8], sh[8], sh[7], sh[8] / 2, 1, 1);
		w.act = OPS_ACT_SILU;
		set_plan(&p, OPS_STRAT_DIRECT, fused, sh[4], sh[5], sh[6], sh[0], 1);
		assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
		assert_int_equal(ops_device_new(&env, 1, &dry, &err), 0);
		assert_int_equal(ops_instance_new(&w, &p, 11, "conv-test", &a, &err), 0);
		assert_int_equal(ops_instance_new(&w, &p, 11, "conv-test", &b, &err), 0);
		/* runs 0 (counted), reset, 1 (replayed), 2 (counted: not the
		 * first launch), 3 (replayed) */
		for (int run = 0; run < 4; run++) {
			if (run == 1) {
				ops_device_reset(dev);
				ops_device_reset(dry);
			}
			assert_int_equal(ops_instance_run(dev, a, &err), 0);
			assert_int_equal(ops_instance_run(dry, b, &err), 0);
			assert_int_equal(ops_instance_quality(a, &q, &err), 0);
			if (!(q.rel_l2 <= threshold(dts[di])))
				print_error("shape %zu %s fused %d run %d: rel_l2 %g\n", si,
					    ops_dtype_name(dts[di]), fused, run, q.rel_l2);
			assert_true(q.rel_l2 <= threshold(dts[di]));
			assert_int_equal(ops_device_replays(dev),
					 !memo ? 0 : run == 0 ? 0 : run < 3 ? 1 : 2);

			size_t nr, nd;
			const struct ops_launch_rec *rr = ops_device_launches(dev, &nr);
			const struct ops_launch_rec *rd = ops_device_launches(dry, &nd);

			assert_int_equal(nr, nd);
			assert_memory_equal(rr, rd, nr * sizeof *rr);
			assert_memory_equal(ops_device_counters(dev), ops_device_counters(dry),
					    sizeof(struct ops_counters));
		}
		/* another plan on the same instance: counted, then replayed */
		ops_instance_free(b);
		p.p[1] = sh[5] > 1 ? sh[5] - 1 : 2;
		a->plan = p; /* (ops_int.h: the instance's plan, changed in place) */
		assert_int_equal(ops_instance_new(&w, &p, 11, "conv-test", &b, &err), 0);
		for (int run = 0; run < 2; run++) {
			ops_device_reset(dev);
			ops_device_reset(dry);
			assert_int_equal(ops_instance_run(dev, a, &err), 0);
			assert_int_equal(ops_instance_run(dry, b, &err), 0);
			assert_int_equal(ops_instance_quality(a, &q, &err), 0);
			assert_true(q.rel_l2 <= threshold(dts[di]));
			assert_int_equal(ops_device_replays(dev), memo ? 2 + run : 0);
			assert_memory_equal(ops_device_counters(dev), ops_device_counters(dry),
					    sizeof(struct ops_counters));
		}
		replayed += memo;
		ops_instance_free(a);
		ops_instance_free(b);
		ops_device_free(dev);
		ops_device_free(dry);
	}
	if (!replayed)
		SKIP_BECAUSE("the %s path has none of the one-pass kernels whose launches replay "
			     "(channel-last bf16, fp32 pixel-vector and lanes)",
			     ops_isa_name(ops_isa_active()));
}

/* A real run of w under p and its dry run: rel_l2 within the dtype's
 * threshold (the fp64 reference, the outputs poisoned first), counters and
 * modelled time equal to the dry run's. Returns the real run's instance
 * (caller frees), its counters in *real and its quality in *q; what names
 * the case on failure. */
static struct ops_instance *check_real_dry(const struct ops_envelope *env,
					   const struct ops_workload *w, const struct ops_plan *p,
					   const char *what, struct ops_counters *real,
					   struct ops_quality *q)
{
	struct ops_counters dry;
	struct opr_error err = { 0 };
	double mr, md;
	struct ops_instance *a = run_one(env, w, p, 0, real, &mr, NULL);
	struct ops_instance *b = run_one(env, w, p, 1, &dry, &md, NULL);

	assert_int_equal(ops_instance_quality(a, q, &err), 0);
	if (!(q->rel_l2 <= threshold(w->dtype)))
		print_error("%s: rel_l2 %g\n", what, q->rel_l2);
	assert_true(q->rel_l2 <= threshold(w->dtype));
	assert_memory_equal(real, &dry, sizeof dry);
	assert_true(mr == md);
	ops_instance_free(b);
	return a;
}

/* Direct plans on the shapes the pixel-vector and bf16 kernels take apart:
 * unit stride along w with rows of 1 to 70 pixels (several 48- and 64-pixel
 * blocks, masked tails), stride 2 along h only (row by row), a row longer
 * than one kernel call, channels and filters that are no multiple of 16 or
 * 32, padding, dilation, groups, depthwise, two channel blocks of the
 * channel-pair bf16 kernel at stride 2 and dilation 2; all three dtypes, fused and not,
 * on each path: against the fp64 reference (outputs poisoned first), and
 * the counters and modelled time of the real run equal the dry run's, so
 * the host's kernel choice leaves the accelerator's figures alone. */
static void test_direct_shapes(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	/* n, c, h, w, k, r, s, stride_h, pad, dil, groups, tile k/oh/ow/c */
	static const int64_t sh[][15] = {
		{ 1, 19, 9, 70, 37, 3, 3, 1, 1, 1, 1, 37, 4, 70, 19 },
		{ 1, 17, 12, 30, 33, 3, 3, 1, 1, 1, 1, 20, 5, 28, 8 },
		{ 2, 6, 11, 41, 10, 5, 3, 2, 2, 1, 2, 3, 3, 41, 3 },
		{ 1, 12, 9, 33, 12, 3, 3, 1, 2, 2, 12, 1, 9, 17, 1 },
		{ 1, 3, 3, 1100, 5, 1, 3, 1, 1, 1, 1, 5, 2, 1100, 3 },
		{ 1, 64, 10, 56, 64, 3, 3, 1, 1, 1, 1, 16, 8, 28, 64 },
		{ 1, 40, 11, 30, 20, 3, 3, 2, 2, 2, 1, 20, 3, 30, 20 },
	};
	struct ops_envelope env;

	isa_use(state);
	test_env(&env);
	env.shared_capacity_kib = 4096;
	for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++)
		for (int di = 0; di < 3; di++)
			for (int fused = 0; fused < 2; fused++) {
				const int64_t *v = sh[i];
				struct ops_workload w;
				struct ops_plan p;
				struct ops_counters real;
				struct ops_quality q;
				char what[64];

				set_conv(&w, fused ? OPS_G_CONV_BIAS_ACT : OPS_G_CONV, dts[di],
					 v[0], v[1], v[2], v[3], v[4], v[5], v[6], 1, v[8], v[9],
					 v[10]);
				w.conv.stride_h = v[7];
				w.act = OPS_ACT_SILU;
				set_plan(&p, OPS_STRAT_DIRECT, fused, v[11], v[12], v[13], v[14],
					 fused);
				snprintf(what, sizeof what, "shape %zu %s fused %d", i,
					 ops_dtype_name(dts[di]), fused);
				ops_instance_free(check_real_dry(&env, &w, &p, what, &real, &q));
			}
}

/* One real run of a one-pass launch (seed 11) and its dry run: the conv
 * launch one_pass as wanted (the unfused bias and activation launches
 * never), rel_l2 within the dtype's threshold (the fp64 reference, the
 * outputs poisoned first), counters and modelled time equal to the dry
 * run's. what: the case, for the message on failure. */
static void check_one_pass_run(const struct ops_envelope *env, const struct ops_workload *w,
			       const struct ops_plan *p, int one_pass, const char *what)
{
	struct ops_counters real, dry;
	struct ops_quality q;
	struct opr_error err = { 0 };
	struct ops_device *dev = NULL;
	struct ops_instance *a, *b;
	const struct ops_launch_rec *rec;
	double mr, md;
	size_t nr;

	assert_int_equal(ops_device_new(env, 0, &dev, &err), 0);
	assert_int_equal(ops_instance_new(w, p, 11, "conv-test", &a, &err), 0);
	assert_int_equal(ops_instance_run(dev, a, &err), 0);
	real = *ops_device_counters(dev);
	mr = ops_device_model_ns(dev);
	rec = ops_device_launches(dev, &nr);
	assert_true(nr >= 1);
	if (rec[0].one_pass != one_pass)
		print_error("%s: one_pass %d\n", what, rec[0].one_pass);
	assert_int_equal(rec[0].one_pass, one_pass);
	for (size_t l = 1; l < nr; l++) /* the unfused bias and activation */
		assert_int_equal(rec[l].one_pass, 0);
	ops_device_free(dev);
	b = run_one(env, w, p, 1, &dry, &md, NULL);
	assert_int_equal(ops_instance_quality(a, &q, &err), 0);
	if (!(q.rel_l2 <= threshold(w->dtype)))
		print_error("%s: rel_l2 %g\n", what, q.rel_l2);
	assert_true(q.rel_l2 <= threshold(w->dtype));
	assert_memory_equal(&real, &dry, sizeof real);
	assert_true(mr == md);
	ops_instance_free(a);
	ops_instance_free(b);
}

/* One-pass launches (ops/conv2d.c): the input padded once into bands read
 * in place by every tile. Padding on every border, tiles that do not divide
 * the output (in h and in w), odd sizes, strides, dilation, groups, two
 * channel blocks (of 20: the channel-pair bf16 kernel with a block that is
 * no multiple of 32), 5-wide filters (one copy of the pairs) and fused bias
 * + activation, all dtypes, direct and im2col, on each path: against the
 * fp64 reference with poisoned outputs, the conv launch marked one_pass,
 * counters and modelled time equal to the dry run's. A plan whose bands
 * would repeat most columns (ow-tiles of one pixel under a 5-wide dilated
 * filter) keeps the staged path: not one_pass, and still right. The last
 * five take the fp32 channels-along-lanes kernel where the path has one:
 * rows of 61 and 30 pixels (whole 28-pixel blocks and remainders), 21
 * channels (16 + 5), two images, two groups; then k-tiles of 16 channels
 * that the host pairs across tiles (48 channels: a pair and one alone; two
 * groups of 20: a vector of 4 with the one before), and k-tiles of 48 over
 * 80 channels with two channel blocks (a pair split across two tiles).
 * The next four take the AMX channel-last kernel off unit stride where the
 * path has it: strides 2 and 3 (with dilation 2), two 32-channel blocks, a
 * 1x1 downsample over two images, a 5x5 filter over two groups. Then
 * three 1x1 convs at unit stride without padding, the AMX 1x1 GEMM where
 * the path has it (unfused; fused, the channel-last kernel): planes of 63
 * and 65 positions (partial blocks), a partial last output vector, two
 * images over two groups of 20 channels, 100 channels in four channel
 * blocks to 70 outputs; a 1x1 conv padded by 1, which is no GEMM; and
 * two on planes of 460 and 420 positions, where fp32 takes the path's 1x1
 * GEMM too (unfused): 28 outputs (blocks of 6 and a partial one), two
 * images over two groups of 16 channels to 6. */
static void test_one_pass(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	/* n, c, h, w, k, r, s, stride, pad, dil, groups, tile k/oh/ow/c, one pass */
	static const int64_t sh[][16] = {
		{ 1, 8, 13, 29, 19, 3, 3, 1, 1, 1, 1, 16, 5, 12, 8, 1 },
		{ 2, 40, 9, 31, 20, 3, 3, 1, 2, 1, 1, 16, 4, 14, 20, 1 },
		{ 1, 6, 11, 17, 9, 5, 5, 2, 2, 1, 3, 2, 3, 5, 1, 1 },
		{ 1, 36, 10, 23, 17, 5, 5, 1, 2, 2, 1, 17, 4, 9, 36, 1 },
		{ 1, 4, 7, 7, 4, 3, 3, 1, 1, 1, 4, 1, 3, 3, 1, 1 },
		{ 1, 24, 12, 27, 21, 3, 3, 2, 1, 1, 1, 16, 3, 7, 24, 1 },
		{ 1, 3, 40, 120, 2, 3, 5, 1, 4, 2, 1, 2, 2, 1, 3, 0 },
		{ 2, 12, 9, 61, 21, 3, 3, 1, 1, 1, 1, 21, 4, 61, 12, 1 },
		{ 1, 8, 6, 30, 6, 3, 3, 1, 1, 1, 2, 3, 3, 30, 4, 1 },
		{ 1, 12, 9, 30, 48, 3, 3, 1, 1, 1, 1, 16, 4, 28, 12, 1 },
		{ 1, 10, 8, 29, 40, 3, 3, 1, 1, 1, 2, 16, 3, 29, 5, 1 },
		{ 1, 16, 7, 31, 80, 3, 3, 1, 1, 1, 1, 48, 4, 31, 8, 1 },
		{ 1, 64, 15, 33, 40, 3, 3, 2, 1, 1, 1, 32, 4, 8, 32, 1 },
		{ 1, 32, 14, 29, 24, 3, 3, 3, 1, 2, 1, 16, 2, 5, 32, 1 },
		{ 2, 48, 9, 20, 64, 1, 1, 2, 0, 1, 1, 32, 5, 10, 48, 1 },
		{ 1, 32, 11, 40, 32, 5, 5, 2, 2, 1, 2, 16, 3, 9, 16, 1 },
		{ 1, 64, 7, 9, 24, 1, 1, 1, 0, 1, 1, 16, 3, 9, 64, 1 },
		{ 2, 40, 5, 13, 48, 1, 1, 1, 0, 1, 2, 16, 2, 13, 20, 1 },
		{ 1, 100, 6, 6, 70, 1, 1, 1, 0, 1, 1, 32, 4, 6, 32, 1 },
		{ 1, 32, 6, 7, 16, 1, 1, 1, 1, 1, 1, 16, 4, 9, 32, 1 },
		{ 1, 40, 20, 23, 28, 1, 1, 1, 0, 1, 1, 16, 4, 23, 40, 1 },
		{ 2, 32, 21, 20, 12, 1, 1, 1, 0, 1, 2, 6, 3, 20, 16, 1 },
	};
	struct ops_envelope env;

	isa_use(state);
	test_env(&env);
	env.shared_capacity_kib = 4096;
	for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++)
	for (int di = 0; di < 3; di++)
	for (int fused = 0; fused < 2; fused++)
	for (int st = OPS_STRAT_DIRECT; st <= OPS_STRAT_IM2COL; st++) {
		const int64_t *v = sh[i];
		struct ops_workload w;
		struct ops_plan p;
		char what[96];

		set_conv(&w, fused ? OPS_G_CONV_BIAS_ACT : OPS_G_CONV, dts[di], v[0], v[1], v[2],
			 v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]);
		w.act = OPS_ACT_GELU_TANH;
		set_plan(&p, (enum ops_strategy)st, fused, v[11], v[12], v[13], v[14], (int)(i & 1));
		snprintf(what, sizeof what, "shape %zu %s fused %d strategy %d", i,
			 ops_dtype_name(dts[di]), fused, st);
		check_one_pass_run(&env, &w, &p, (int)v[15], what);
	}
}

/* The one-pass kernels' runs of output channels (kruns_of) on random
 * shapes: 17 to 90 channels a group, one or two groups, k-tiles of 8, 16,
 * 24, 32, 40, 48 or 80 (odd multiples of 16 pair across tiles, the others
 * within), 3x3 and 1x3 filters at unit stride (the fp32 lanes and the AMX
 * channel-last kernels where the path has them), fused bias and GELU or
 * not: against the fp64 reference with poisoned outputs, the launch one
 * pass, counters and modelled time equal to the dry run's. */
static void test_one_pass_k_runs(void **state)
{
	static const int64_t tks[] = { 8, 16, 24, 32, 40, 48, 80 };
	static const enum ops_dtype dts[] = { OPS_F32, OPS_BF16 };
	struct ops_envelope env;

	isa_use(state);
	test_env(&env);
	env.shared_capacity_kib = 4096;
	for (int iter = 0; iter < 24; iter++)
	for (int di = 0; di < 2; di++) {
		int64_t groups = rnd(1, 2), kpg = rnd(17, 90), cpg = rnd(1, 40), s = rnd(0, 1) ? 3 : 1;
		int64_t h = rnd(3, 9), wd = rnd(5, 33), tk = tks[rnd(0, 6)];
		int fused = (int)rnd(0, 1);
		struct ops_workload w;
		struct ops_plan p;
		char what[128];

		set_conv(&w, fused ? OPS_G_CONV_BIAS_ACT : OPS_G_CONV, dts[di], 1, cpg * groups, h,
			 wd, kpg * groups, 3, s, 1, 1, 1, groups);
		w.act = OPS_ACT_GELU_TANH;
		set_plan(&p, OPS_STRAT_DIRECT, fused, tk, rnd(1, h), rnd(1, wd), cpg, (int)rnd(0, 1));
		snprintf(what, sizeof what, "iter %d %s: k %lld x %lld groups, tile_k %lld, "
			 "filter 3x%lld, fused %d", iter, ops_dtype_name(dts[di]), (long long)kpg,
			 (long long)groups, (long long)tk, (long long)s, fused);
		check_one_pass_run(&env, &w, &p, 1, what);
	}
}

/* plans() offers both tiled strategies, the fitting ones first, and the
 * planner ranks a tiled plan above the untiled one. */
static void test_plans(void **state)
{
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan cand[64];
	struct ops_plan_eval *ev = NULL;
	struct opr_error err = { 0 };
	size_t n, i, ne;
	int have[OPS_NSTRATS] = { 0 };

	(void)state;
	test_env(&env);
	set_conv(&w, OPS_G_CONV_BIAS_ACT, OPS_F16, 1, 32, 20, 20, 32, 3, 3, 1, 1, 1, 1);
	n = ops_impl_conv_bias_act.plans(&env, &w, 1, cand, 64);
	assert_true(n > 3 && n <= 64);
	for (i = 0; i < n; i++) {
		have[cand[i].strategy]++;
		assert_int_equal(cand[i].fused, 1);
	}
	assert_int_equal(have[OPS_STRAT_UNTILED], 1);
	assert_true(have[OPS_STRAT_DIRECT] > 0 && have[OPS_STRAT_IM2COL] > 0);
	assert_int_equal(ops_impl_conv.plans(&env, &w, 0, cand, 2), 2);
	assert_int_equal(ops_plan_search(&env, &w, 1, &ev, &ne, &err), 0);
	assert_true(ne > 0);
	assert_false(ev[0].rejected);
	assert_int_not_equal(ev[0].plan.strategy, OPS_STRAT_UNTILED);
	assert_int_equal(ev[0].launches, 1);
	free(ev);
}

/* The winograd strategy (ops/conv_wino.c) on each path: shapes whose
 * output is no multiple of the 4x4 Winograd tile and plan tiles that are
 * none either (the last Winograd tiles half outside, discarded), padding 0,
 * 1 and 2, two groups, two images, channel counts off the 16-lane padding,
 * several channel and k blocks (the sums added across channel blocks in
 * the output domain), more than a chunk's 64 Winograd tiles in one plan
 * tile (a chunk ending mid-row), a 1x1 image, and the ResNet stage-2
 * shape; fused bias + SiLU and unfused; fp32, fp16 and bf16 storage (fp32
 * inside). Against the fp64 reference with the outputs poisoned (the
 * dtype's threshold), counters and modelled time equal to the dry run's,
 * GLOBAL bytes equal to the closed form; and a second run after the weights
 * changed, and the writer said so, follows them (U is kept with the
 * weights' data and version it came from). */
static void test_winograd(void **state)
{
	static const enum ops_dtype dts[] = { OPS_F32, OPS_F16, OPS_BF16 };
	/* n, c, h, w, k, pad, groups, tile k/oh/ow/c */
	static const int64_t sh[][11] = {
		{ 2, 19, 13, 11, 37, 1, 1, 20, 5, 7, 8 },
		{ 1, 5, 7, 9, 3, 0, 1, 3, 7, 9, 5 },
		{ 1, 6, 10, 10, 6, 2, 2, 3, 4, 4, 3 },
		{ 1, 3, 1, 1, 4, 1, 1, 4, 1, 1, 3 },
		{ 1, 33, 20, 70, 17, 1, 1, 17, 20, 70, 33 },
		{ 1, 64, 56, 56, 64, 1, 1, 64, 8, 56, 64 },
	};
	struct ops_envelope env;

	isa_use(state);
	test_env(&env);
	env.shared_capacity_kib = 65536;
	for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++)
		for (int f = 0; f < 6; f++) {
			const int64_t *v = sh[i];
			const int fused = f % 2;
			const enum ops_dtype dt = dts[f / 2];
			struct ops_workload w;
			struct ops_plan p;
			struct ops_counters real;
			struct ops_quality q;
			struct opr_error err = { 0 };
			struct ops_device *dev = NULL;
			struct ops_instance *a;
			char what[48];

			set_conv(&w, fused ? OPS_G_CONV_BIAS_ACT : OPS_G_CONV, dt, v[0], v[1], v[2],
				 v[3], v[4], 3, 3, 1, v[5], 1, v[6]);
			w.act = OPS_ACT_SILU;
			set_plan(&p, OPS_STRAT_WINOGRAD, fused, v[7], v[8], v[9], v[10], 1);
			snprintf(what, sizeof what, "shape %zu fused %d %s", i, fused,
				 ops_dtype_name(dt));
			a = check_real_dry(&env, &w, &p, what, &real, &q);
			assert_true(q.rel_l2 > 0.0); /* the Winograd sums, not a copy of the reference */
			assert_int_equal(global_bytes(&real), ops_conv_direct_global_bytes(&w, &p));
			/* new weights, the same instance: U follows */
			struct ops_tensor *tw = ops_instance_tensor(a, "w");
			float *wf = malloc(sizeof *wf * (size_t)tw->count);
			assert_non_null(wf);
			ops_to_f32(dt, tw->data, wf, (size_t)tw->count);
			for (int64_t e = 0; e < tw->count; e++)
				wf[e] = -0.5f * wf[e] + 0.25f;
			ops_from_f32(dt, wf, tw->data, (size_t)tw->count);
			free(wf);
			assert_int_equal(ops_instance_input_changed(a, "w", &err), 0);
			assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
			assert_int_equal(ops_instance_run(dev, a, &err), 0);
			assert_int_equal(ops_instance_quality(a, &q, &err), 0);
			assert_true(q.rel_l2 <= threshold(dt));
			ops_device_free(dev);
			ops_instance_free(a);
		}
}

/* Where winograd is offered and where a pinned one is refused: the planner
 * lists it for 3x3 stride-1 convolutions (fp32, fp16 and bf16), not for a
 * 5x5 filter, stride 2 or dilation 2, and not where the plans run on a CUDA
 * GPU; a pinned winograd plan that cannot run falls back with the reason;
 * with 64 output channels only k blocks of 64 are offered, and they are in
 * a list of 64. */
static void test_winograd_offered(void **state)
{
	struct ops_envelope env;
	struct ops_workload w;
	struct ops_plan cand[64], chosen, pin;
	struct opr_error err = { 0 };
	char reason[160];
	int fell = 0;

	(void)state;
	test_env(&env);
	env.shared_capacity_kib = 65536;
	static const int64_t cases[][4] = { /* dtype, r, stride, dil; offered */
		{ OPS_F32, 3, 1, 1 }, { OPS_F16, 3, 1, 1 }, { OPS_BF16, 3, 1, 1 },
		{ OPS_F32, 5, 1, 1 }, { OPS_F32, 3, 2, 1 }, { OPS_F32, 3, 1, 2 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int cuda = 0; cuda < 2; cuda++) {
			size_t n, m, have = 0;

			set_conv(&w, OPS_G_CONV, (enum ops_dtype)cases[i][0], 1, 16, 20, 20, 16,
				 cases[i][1], cases[i][1], cases[i][2], 1, cases[i][3], 1);
			env.cuda_executor = cuda;
			n = ops_impl_conv.plans(&env, &w, 0, cand, 64);
			for (m = 0; m < n; m++)
				have += cand[m].strategy == OPS_STRAT_WINOGRAD;
			const int offered = i < 3 && !cuda;
			if (offered)
				assert_true(have > 0);
			else
				assert_int_equal(have, 0);
			set_plan(&pin, OPS_STRAT_WINOGRAD, 0, 16, 8, 20, 16, 1);
			assert_int_equal(ops_plan_resolve(&env, &w, &pin, 0, &chosen, &fell, reason,
							  sizeof reason, &err), 0);
			assert_int_equal(fell, !offered);
			assert_int_equal(chosen.strategy == OPS_STRAT_WINOGRAD, offered);
			if (fell)
				assert_non_null(strstr(reason, "winograd"));
		}
	/* 64 output channels: only k blocks of 64 (a smaller one transforms
	 * the input again per block), and within a list of 64 candidates */
	size_t n, have = 0;
	env.cuda_executor = 0;
	set_conv(&w, OPS_G_CONV_BIAS_ACT, OPS_F32, 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1);
	n = ops_impl_conv_bias_act.plans(&env, &w, 1, cand, 64);
	for (size_t m = 0; m < n; m++)
		if (cand[m].strategy == OPS_STRAT_WINOGRAD) {
			have++;
			assert_int_equal(cand[m].p[0], 64);
		}
	assert_true(have > 0);
}

/* With a DMA last dimension of at most 4 elements the transfers are split,
 * the results and the GLOBAL bytes stay the same. */
static void test_dma_splits(void **state)
{
	struct ops_envelope env;
	int st;

	(void)state;
	test_env(&env);
	env.dma_max_last_dim = 4;
	for (st = OPS_STRAT_UNTILED; st < OPS_NSTRATS; st++) {
		struct ops_workload w;
		struct ops_plan p;
		struct ops_counters cnt;
		struct ops_instance *inst;
		struct ops_quality q;
		struct opr_error err = { 0 };

		enum ops_dtype dt = st == OPS_STRAT_WINOGRAD ? OPS_BF16 : OPS_F16;
		set_conv(&w, OPS_G_CONV_BIAS_ACT, dt, 1, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1);
		set_plan(&p, (enum ops_strategy)st, 1, 7, 3, 9, 5, 1);
		inst = run_one(&env, &w, &p, 0, &cnt, NULL, NULL);
		assert_true(cnt.splits > 0);
		assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
		assert_true(q.rel_l2 <= threshold(dt));
		if (st != OPS_STRAT_UNTILED)
			assert_int_equal(global_bytes(&cnt), ops_conv_direct_global_bytes(&w, &p));
		ops_instance_free(inst);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ISA_TESTS(test_microkernels),
		ISA_TESTS(test_px_kernel),
		ISA_TESTS(test_lanes_kernel),
		ISA_TESTS(test_bf16_kernel),
		ISA_TESTS(test_bf16_pairs_kernel),
		ISA_TESTS(test_bf16_cl_kernel),
		ISA_TESTS(test_bf16_cl_rounding),
		ISA_TESTS(test_bf16_gemm_kernel),
		ISA_TESTS(test_f32_gemm_kernel),
		ISA_TESTS(test_bf16_cl_row),
		ISA_TESTS_NO_AMX(test_kept_weights_follow),
		ISA_TESTS(test_launch_memo),
		ISA_TESTS_NO_AMX(test_direct_shapes),
		ISA_TESTS_NO_AMX(test_one_pass),
		ISA_TESTS_NO_AMX(test_one_pass_k_runs),
		ISA_TESTS(test_winograd),
		cmocka_unit_test(test_winograd_offered),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_known_values),
		ISA_TESTS_NO_AMX(test_random_shapes_vs_reference),
		cmocka_unit_test(test_global_bytes_closed_form),
		cmocka_unit_test(test_untiled_bytes),
		cmocka_unit_test(test_dry_equals_real),
		cmocka_unit_test(test_fused_vs_unfused),
		cmocka_unit_test(test_over_capacity),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_dma_splits),
	};

	return cmocka_run_group_tests_name("conv2d", tests, NULL, NULL);
}
