/* tests/test_workload.c: prepared instances (seeded inputs, poisoned outputs,
 * quality), the group table and the planner (dry-run evaluation, ranking,
 * rejection over capacity and the mapping fallback). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/activation_int.h"

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

static struct ops_workload act_workload(enum ops_dtype t, enum ops_act a, int rank,
					const int64_t *dims)
{
	struct ops_workload w;
	memset(&w, 0, sizeof w);
	w.group = OPS_G_ACTIVATION;
	w.act = a;
	w.dtype = t;
	w.tensor.rank = rank;
	for (int i = 0; i < rank; i++)
		w.tensor.dims[i] = dims[i];
	return w;
}

static void test_instance_quality_per_dtype(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 32.0);
	const int64_t dims[3] = { 7, 13, 129 };
	const enum ops_dtype types[3] = { OPS_F32, OPS_F16, OPS_BF16 };
	const double limit[3] = { 1e-5, 2e-3, 1.6e-2 };
	const enum ops_act acts[6] = { OPS_ACT_RELU, OPS_ACT_GELU_ERF, OPS_ACT_GELU_TANH,
				       OPS_ACT_SILU, OPS_ACT_SIGMOID, OPS_ACT_TANH };
	struct opr_error err = { 0 };
	struct ops_device *dev;
	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	for (int ti = 0; ti < 3; ti++)
		for (int ai = 0; ai < 6; ai++) {
			struct ops_workload w = act_workload(types[ti], acts[ai], 3, dims);
			struct ops_instance *inst;
			struct ops_quality q;
			assert_int_equal(ops_instance_new(&w, NULL, 42, "blk", &inst, &err), 0);
			assert_int_equal(ops_instance_run(dev, inst, &err), 0);
			assert_int_equal(ops_instance_quality(inst, &q, &err), 0);
			if (!(q.rel_l2 <= limit[ti]))
				fail_msg("%s %s: rel L2 %.3g", ops_dtype_name(types[ti]),
					 ops_act_name(acts[ai]), q.rel_l2);
			ops_instance_free(inst);
		}
	ops_device_free(dev);
}

static void test_instance_inputs_and_determinism(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 32.0);
	const int64_t dims[2] = { 33, 517 };
	struct ops_workload w = act_workload(OPS_F16, OPS_ACT_GELU_TANH, 2, dims);
	struct opr_error err = { 0 };
	struct ops_instance *a, *b, *c;
	struct ops_device *dev;
	size_t na, nb;

	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	assert_int_equal(ops_instance_new(&w, NULL, 7, "blk", &a, &err), 0);
	assert_int_equal(ops_instance_new(&w, NULL, 7, "blk", &b, &err), 0);
	assert_int_equal(ops_instance_new(&w, NULL, 8, "blk", &c, &err), 0);
	struct ops_tensor *xa = ops_instance_tensor(a, "x"), *xc = ops_instance_tensor(c, "x");
	assert_non_null(xa);
	assert_non_null(xc);
	assert_null(ops_instance_tensor(a, "nope"));
	assert_int_equal(xa->count, 33 * 517);
	assert_int_equal((uintptr_t)xa->data % 64, 0);
	/* inputs in [-8, 8], never zero, and the output poisoned before a run */
	const uint16_t *h = xa->data;
	for (int64_t i = 0; i < xa->count; i++) {
		float v = ops_f16_to_f32(h[i]);
		assert_true(v >= -8.0f && v <= 8.0f && v != 0.0f);
	}
	const uint16_t *ya = ops_instance_output(a, &na);
	assert_int_equal(na, (size_t)xa->count * 2);
	for (size_t i = 0; i < na / 2; i++)
		assert_int_equal(ya[i], 0xFFFF);

	assert_int_equal(ops_instance_run(dev, a, &err), 0);
	assert_int_equal(ops_instance_run(dev, b, &err), 0);
	const void *yb = ops_instance_output(b, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(ya, yb, na);
	assert_memory_not_equal(xa->data, xc->data, (size_t)xa->count * 2);
	/* a timed rerun does not poison, and rewrites the same output */
	uint16_t *yw = (uint16_t *)ops_instance_output(b, NULL);
	yw[5] = 0x1234;
	assert_int_equal(ops_instance_run_timed(dev, b, &err), 0);
	assert_memory_equal(ya, yb, na);
	struct ops_device *tiny0;
	struct ops_envelope small0;
	test_envelope(&small0, 0.001);
	assert_int_equal(ops_device_new(&small0, 0, &tiny0, &err), 0);
	yw[5] = 0x1234; /* a failing timed run leaves the output as it was */
	assert_int_equal(ops_instance_run_timed(tiny0, b, &err), OPR_ELIMIT);
	assert_int_equal(yw[5], 0x1234);
	ops_device_free(tiny0);

	/* a rerun poisons first: a run that fails before writing leaves NaN */
	struct ops_envelope small;
	struct ops_device *tiny;
	test_envelope(&small, 0.001);
	assert_int_equal(ops_device_new(&small, 0, &tiny, &err), 0);
	assert_int_equal(ops_instance_run(tiny, a, &err), OPR_ELIMIT);
	for (size_t i = 0; i < na / 2; i++)
		assert_int_equal(ya[i], 0xFFFF);
	struct ops_quality q;
	assert_int_equal(ops_instance_quality(a, &q, &err), 0);
	assert_true(isnan(q.rel_l2));

	ops_device_free(tiny);
	ops_device_free(dev);
	ops_instance_free(a);
	ops_instance_free(b);
	ops_instance_free(c);
	ops_instance_free(NULL);
}

static void test_instance_checks_and_groups(void **state)
{
	(void)state;
	struct opr_error err = { 0 };
	struct ops_instance *inst;
	const int64_t dims[3] = { INT64_MAX / 2, 3, 5 };
	struct ops_workload w = act_workload(OPS_F32, OPS_ACT_RELU, 3, dims);
	assert_int_equal(ops_instance_new(&w, NULL, 1, "b", &inst, &err), OPR_EINPUT);
	assert_string_equal(err.msg, "shape product overflows");
	assert_null(inst);
	w.tensor.dims[0] = 4;
	w.act = OPS_ACT_NONE;
	assert_int_equal(ops_instance_new(&w, NULL, 1, "b", &inst, &err), OPR_EINPUT);
	w.act = OPS_ACT_RELU;
	w.dtype = OPS_S8;
	assert_int_equal(ops_instance_new(&w, NULL, 1, "b", &inst, &err), OPR_EINPUT);
	w.dtype = OPS_F32;
	w.tensor.rank = 9;
	assert_int_equal(ops_instance_new(&w, NULL, 1, "b", &inst, &err), OPR_EINPUT);
	w.tensor.rank = 3;
	assert_int_equal(ops_workload_bytes(&w), 2 * 60 * 4);
	w.dtype = OPS_BF16;
	assert_int_equal(ops_workload_bytes(&w), 2 * 60 * 2 + 60 * 4);

	assert_ptr_equal(ops_group_impl(OPS_G_ACTIVATION), &ops_impl_activation);
	const char *const *params = ops_plan_params(OPS_G_ACTIVATION);
	assert_string_equal(params[0], "tile_elems");
	assert_null(params[1]);
	/* a group whose file is not linked reports "not implemented yet" */
	for (int g = 0; g < OPS_NGROUPS; g++) {
		if (ops_group_impl((enum ops_group)g))
			continue;
		struct ops_workload o;
		memset(&o, 0, sizeof o);
		o.group = (enum ops_group)g;
		assert_int_equal(ops_instance_new(&o, NULL, 1, "b", &inst, &err), OPR_ENOTIMPL);
		assert_non_null(strstr(err.msg, "is not implemented yet"));
		assert_non_null(strstr(err.msg, ops_group_name((enum ops_group)g)));
	}

	struct ops_plan p = { .fused = 1, .strategy = OPS_STRAT_DIRECT, .double_buffer = 1 };
	char buf[128];
	p.p[0] = 4096;
	ops_plan_describe(OPS_G_ACTIVATION, &p, buf, sizeof buf);
	assert_string_equal(buf, "direct tile_elems=4096 double-buffered fused");
	p.p[0] = 0;
	p.double_buffer = 0;
	p.fused = 0;
	ops_plan_describe(OPS_G_ACTIVATION, &p, buf, sizeof buf);
	assert_string_equal(buf, "direct tile_elems=auto single-buffered unfused");
	ops_plan_describe(OPS_G_ACTIVATION, &p, buf, 8);
	assert_int_equal(strlen(buf), 7); /* truncated, terminated */
	assert_memory_equal(buf, "direct ", 7);
}

static void test_rel_l2(void **state)
{
	(void)state;
	const float y[3] = { 1.0f, 2.0f, 2.0f };
	const double ref[3] = { 1.0, 2.0, 3.0 };
	const double zero[3] = { 0, 0, 0 };
	const int8_t yi[3] = { 1, -2, 3 };
	assert_true(fabs(ops_rel_l2(OPS_F32, y, ref, 3) - 1.0 / sqrt(14.0)) < 1e-15);
	assert_true(fabs(ops_rel_l2(OPS_F32, y, zero, 3) - 3.0) < 1e-15);
	assert_true(ops_rel_l2(OPS_F32, y, ref, 2) == 0.0);
	const double refi[3] = { 1, -2, 4 };
	assert_true(fabs(ops_rel_l2(OPS_S8, yi, refi, 3) - 1.0 / sqrt(21.0)) < 1e-15);
	const uint16_t hb[2] = { ops_f32_to_bf16(1.5f), ops_f32_to_bf16(-3.0f) };
	const double refb[2] = { 1.5, -3.0 };
	assert_true(ops_rel_l2(OPS_BF16, hb, refb, 2) == 0.0);
}

/* ---- the planner ----------------------------------------------------------------- */

static void test_plan_evaluate_matches_a_real_run(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 64.0);
	const int64_t dims[2] = { 100, 1000 };
	struct ops_workload w = act_workload(OPS_F32, OPS_ACT_SIGMOID, 2, dims);
	struct ops_plan p = { .strategy = OPS_STRAT_DIRECT, .double_buffer = 1 };
	struct ops_plan_eval ev;
	struct opr_error err = { 0 };
	p.p[0] = 4096;
	assert_int_equal(ops_plan_evaluate(&env, &w, &p, &ev, &err), 0);
	assert_false(ev.rejected);
	assert_int_equal(ev.launches, 1);
	assert_int_equal(ev.global_bytes, 2 * 100000 * 4);
	assert_int_equal(ev.footprint_bytes, 2 * 4096 * 4);
	assert_true(ev.reuse_ratio == 1.0);
	assert_true(ev.model_ns > 2000.0); /* at least the launch overhead */
	assert_int_equal(ev.counters.tiles, (100000 + 4095) / 4096);

	struct ops_device *dev;
	struct ops_instance *inst;
	assert_int_equal(ops_device_new(&env, 0, &dev, &err), 0);
	assert_int_equal(ops_instance_new(&w, &p, 3, "blk", &inst, &err), 0);
	assert_int_equal(ops_instance_run(dev, inst, &err), 0);
	assert_memory_equal(ops_device_counters(dev), &ev.counters, sizeof ev.counters);
	assert_true(ops_device_model_ns(dev) == ev.model_ns);
	ops_instance_free(inst);

	/* a planning instance has no data and refuses a real device */
	assert_int_equal(ops_instance_new_dry(&w, &p, &inst, &err), 0);
	assert_true(inst->dry);
	assert_null(inst->t[0].data);
	assert_int_equal(ops_instance_run(dev, inst, &err), OPR_EINTERNAL);
	ops_instance_free(inst);
	ops_device_free(dev);
}

static void test_plan_search_ranks_and_rejects(void **state)
{
	(void)state;
	struct ops_envelope env;
	test_envelope(&env, 64.0);
	const int64_t dims[1] = { 1 << 18 };
	struct ops_workload w = act_workload(OPS_F32, OPS_ACT_RELU, 1, dims);
	struct ops_plan_eval *ev;
	struct opr_error err = { 0 };
	size_t n, over = 0;

	assert_int_equal(ops_plan_search(&env, &w, 1, &ev, &n, &err), 0);
	assert_true(n >= 4);
	assert_false(ev[0].rejected);
	assert_non_null(strstr(ev[0].reason, "chosen"));
	assert_int_equal(ev[0].plan.fused, 1);
	int seen_over = 0;
	for (size_t i = 1; i < n; i++) {
		assert_true(ev[i].rejected);
		if (strstr(ev[i].reason, "exceeds capacity")) {
			seen_over = 1;
			over++;
			/* over-capacity plans would need more than 64 KiB */
			int64_t need = ev[i].plan.p[0] * 4 * (ev[i].plan.double_buffer ? 2 : 1);
			assert_true(need > 64 * 1024);
		} else {
			/* fitting alternatives: slower, ranked, before every
			 * over-capacity one */
			assert_false(seen_over);
			assert_non_null(strstr(ev[i].reason, "slower:"));
			assert_true(ev[i].model_ns >= ev[i - 1].model_ns);
			assert_true(ev[i].footprint_bytes <= 64 * 1024);
		}
	}
	assert_true(over >= 1);
	free(ev);

	/* a pinned plan over capacity: rejected, and resolve falls back */
	struct ops_plan big = { .strategy = OPS_STRAT_DIRECT, .double_buffer = 1 };
	struct ops_plan chosen;
	struct ops_plan_eval one;
	char reason[400];
	int fell;
	big.p[0] = 65536;
	assert_int_equal(ops_plan_evaluate(&env, &w, &big, &one, &err), 0);
	assert_true(one.rejected);
	assert_non_null(strstr(one.reason, "SHARED footprint"));
	assert_int_equal(ops_plan_resolve(&env, &w, &big, 0, &chosen, &fell, reason, sizeof reason,
					  &err), 0);
	assert_int_equal(fell, 1);
	assert_non_null(strstr(reason, "mapping fallback"));
	assert_non_null(strstr(reason, "exceeds capacity"));
	assert_int_equal(chosen.fused, 0);
	assert_int_equal(ops_plan_evaluate(&env, &w, &chosen, &one, &err), 0);
	assert_false(one.rejected);

	/* a pinned plan that fits is kept; auto picks the best */
	struct ops_plan fit = big;
	fit.p[0] = 2048;
	assert_int_equal(ops_plan_resolve(&env, &w, &fit, 0, &chosen, &fell, reason, sizeof reason,
					  &err), 0);
	assert_int_equal(fell, 0);
	assert_int_equal(chosen.p[0], 2048);
	assert_int_equal(ops_plan_resolve(&env, &w, NULL, 1, &chosen, &fell, reason, sizeof reason,
					  &err), 0);
	assert_int_equal(fell, 0);
	assert_non_null(strstr(reason, "auto"));

	/* nothing fits in a SHARED of 16 bytes */
	struct ops_envelope tiny;
	test_envelope(&tiny, 16.0 / 1024.0);
	assert_int_equal(ops_plan_resolve(&tiny, &w, NULL, 0, &chosen, &fell, reason,
					  sizeof reason, &err), OPR_ELIMIT);
	assert_non_null(strstr(err.msg, "no plan"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_instance_quality_per_dtype),
		cmocka_unit_test(test_instance_inputs_and_determinism),
		cmocka_unit_test(test_instance_checks_and_groups),
		cmocka_unit_test(test_rel_l2),
		cmocka_unit_test(test_plan_evaluate_matches_a_real_run),
		cmocka_unit_test(test_plan_search_ranks_and_rejects),
	};
	return cmocka_run_group_tests_name("workload", tests, NULL, NULL);
}
