/* tests/test_calibrate.c: `opreview calibrate` and model validation: the
 * calibrated envelope loads with its metadata, the envelope file is written
 * atomically and never over an existing one without force, a bad calibration
 * key is refused, Kendall's tau on known rankings, and the model-validation
 * numbers of a crafted run (seeded random times) are exactly the expected
 * ratios, terms, tau and planner slowdown; an uncalibrated run says why. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../collect/calibrate.h"

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/opr-cal-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	opr_rmtree(tmpdir);
	return 0;
}

static uint64_t rng_state = 0x1234abcdULL;
static double urand(double lo, double hi)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* calibrate --quick writes an envelope the loader accepts, with positive
 * finite values, cores 1 and the calibration metadata; a second write without
 * force is refused and the file is unchanged; with force it is replaced. */
static void test_calibrated_envelope_loads(void **state)
{
	(void)state;
	struct col_cal_options o = {1, "host-test"};
	struct ops_envelope env, back;
	struct col_calibration cal, cback;
	struct opr_error err = {0};
	char *text = NULL, path[128];
	memset(&back, 0xA5, sizeof back);
	memset(&cback, 0xA5, sizeof cback);
	assert_int_equal(col_calibrate(&o, &env, &cal, &err), 0);
	assert_int_equal(col_calibration_yaml(&env, &cal, &text, &err), 0);
	snprintf(path, sizeof path, "%s/h.yaml", tmpdir);
	assert_int_equal(col_write_atomic(path, text, 0, &err), 0);
	assert_int_equal(col_envelope_load_cal(path, &back, &cback, &err), 0);
	assert_string_equal(back.name, "host-test");
	assert_int_equal(back.cores, 1);
	assert_int_equal(back.dma_serial, 1); /* copies on the computing thread */
	double v[] = {back.clock_ghz, back.global_bw_gbps, back.global_capacity_gib,
		      back.shared_capacity_kib, back.shared_bw_gbps, back.local_capacity_kib,
		      back.dma_setup_ns, back.tops[OPS_F32], back.tops[OPS_F16],
		      back.tops[OPS_BF16], back.tops[OPS_S8], back.launch_overhead_us};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		assert_true(isfinite(v[i]) && v[i] > 0);
	assert_true(back.tops[OPS_U8] == back.tops[OPS_S8]);
	assert_true(cback.present);
	/* 13 values, and the qgemm's one-pass share where its run was bound by
	 * its stream (a path with VNNI; not on the portable or AVX2 path) */
	const struct col_cal_value *share = col_cal_find(&cback, "qgemm_one_pass_share");
	assert_int_equal(cback.nv, share ? 14 : 13);
	if (share) {
		assert_true(share->median > 0 && share->median < 2 && share->samples >= 3 &&
			    share->samples <= 5 && share->method[0]);
		double want = share->median < 1 ? share->median : 1;
		assert_true(fabs(back.one_pass_share[OPS_KC_QGEMM] - want) <= 1e-5 * want);
	} else {
		assert_true(back.one_pass_share[OPS_KC_QGEMM] == 0);
	}
	for (int f = 0; f < OPS_NKCLASSES; f++)
		if (f != OPS_KC_QGEMM)
			assert_true(back.one_pass_share[f] == 0);
	assert_true(back.vector_half_tops > 0 && back.vector_tops > 0);
	assert_true(cback.cpus_online >= 1);
	/* the samples taken again (descheduled) are counted and read back */
	assert_true(cal.retried >= 0 && cback.retried == cal.retried);
	assert_true(cback.host[0] && cback.date[0]);
	static const char *const keys[] = {"fp32_tops", "int8_peak_tops", "fp16_tops", "bf16_tops", "int8_tops",
		"global_bandwidth_gbps", "global_read_gbps", "global_write_gbps",
		"shared_bandwidth_gbps", "dma_setup_ns",
		"launch_overhead_us"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct col_cal_value *c = col_cal_find(&cback, keys[i]);
		assert_non_null(c);
		assert_true(c->median > 0 && isfinite(c->median) && c->spread >= 0);
		/* 5 samples each with --quick; the kernels' rates are sampled
		 * in interleaved rounds over a second, at least 5 */
		if (strstr(keys[i], "_tops") && strcmp(keys[i], "fp32_tops") &&
		    strcmp(keys[i], "int8_peak_tops"))
			assert_true(c->samples >= 5 && c->samples <= 64);
		else
			assert_int_equal(c->samples, 5);
		assert_true(c->method[0] != '\0');
	}
	/* the envelope's values are the medians (printed to 6 digits) */
	assert_true(fabs(col_cal_find(&cback, "global_bandwidth_gbps")->median - back.global_bw_gbps) <=
		    1e-5 * back.global_bw_gbps);
	assert_true(fabs(col_cal_find(&cback, "int8_tops")->median - back.tops[OPS_S8]) <=
		    1e-5 * back.tops[OPS_S8]);
	/* GLOBAL per direction: the read stream's median, and a write rate
	 * (each sample the round trip's cost beyond the read of its round) */
	double rd = back.global_read_bw_gbps, wr = back.global_write_bw_gbps;
	assert_true(rd > 0 && isfinite(wr) && wr > 0);
	assert_true(fabs(col_cal_find(&cback, "global_read_gbps")->median - rd) <= 1e-5 * rd);
	assert_true(fabs(col_cal_find(&cback, "global_write_gbps")->median - wr) <= 1e-5 * wr);
	/* one sample a round, but for a round whose read came out below half
	 * its round trip (contended) */
	assert_true(col_cal_find(&cback, "global_write_gbps")->samples >= 1 &&
		    col_cal_find(&cback, "global_write_gbps")->samples <= 5);
	/* no overwrite without force */
	assert_int_equal(col_write_atomic(path, "name: x\n", 0, &err), OPR_EEXIST);
	char *again = NULL;
	size_t len;
	assert_int_equal(opr_read_file(path, &again, &len, 1 << 20, &err), 0);
	assert_string_equal(again, text);
	free(again);
	assert_int_equal(col_write_atomic(path, "name: x\n", 1, &err), 0);
	assert_int_equal(opr_read_file(path, &again, &len, 1 << 20, &err), 0);
	assert_string_equal(again, "name: x\n");
	free(again);
	/* an uncalibrated envelope loads with present = 0 */
	assert_int_equal(col_envelope_load_cal("fixtures/envelopes/npu-a.yaml", &back, &cback, &err), 0);
	assert_false(cback.present);
	free(text);
}

/* A GPU's calibrated envelope (calibrate --device cuda writes it; values
 * crafted here, no GPU needed) loads back with device cuda, its gpu line,
 * cores = SMs, the L2 and int8 mma values recorded beside the envelope's,
 * and dma.engines 64; and the plain build refuses to measure a GPU. */
static void test_gpu_envelope_roundtrip(void **state)
{
	(void)state;
	static const char *const keys[] = {"global_bandwidth_gbps", "l2_bandwidth_gbps",
		"shared_bandwidth_gbps", "fp32_tops", "fp16_tops", "bf16_tops", "int8_tops",
		"int8_mma_tops", "vector_tops", "vector_half_tops", "launch_overhead_us",
		"dma_setup_ns"};
	struct ops_envelope env, back;
	struct col_calibration cal, cback;
	struct opr_error err = {0};
	char *text = NULL, path[128];
	memset(&env, 0, sizeof env);
	memset(&cal, 0, sizeof cal);
	snprintf(env.name, sizeof env.name, "gpu-test");
	env.clock_ghz = 1.98;
	env.cores = 132;
	env.global_bw_gbps = urand(3000, 4500);
	env.global_capacity_gib = 139.8;
	env.shared_capacity_kib = 227;
	env.shared_bw_gbps = urand(100, 300);
	env.local_capacity_kib = 256;
	env.dma_max_last_dim = 2147483647;
	env.dma_setup_ns = urand(500, 900);
	env.dma_engines = 64;
	for (int t = 0; t < OPS_NDTYPES; t++)
		env.tops[t] = urand(10, 700);
	env.vector_tops = urand(5, 40);
	env.vector_half_tops = urand(5, 40);
	env.launch_overhead_us = urand(1, 3);
	/* the GPU-only terms: the first launch, and some kernel families */
	env.launch_first_us = urand(3, 6);
	env.kern[OPS_KC_CONV].efficiency = urand(5, 40);
	env.kern[OPS_KC_QGEMM].efficiency = urand(1, 2);
	env.kern[OPS_KC_QGEMM].transfer_ns = urand(500, 1500);
	env.kern[OPS_KC_PERMUTE_ROWS].efficiency = urand(2, 20);
	cal.present = 1;
	cal.device = COL_DEV_CUDA;
	snprintf(cal.host, sizeof cal.host, "gpu-host");
	snprintf(cal.date, sizeof cal.date, "2026-12-01T21:00:00Z");
	snprintf(cal.cpu, sizeof cal.cpu, "some CPU");
	snprintf(cal.gpu, sizeof cal.gpu, "NVIDIA H200, 132 SMs, cc 9.0");
	cal.cpus_online = 16;
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		double x[3] = {urand(1, 2), urand(1, 2), urand(1, 2)};
		col_cal_record(&cal, keys[i], x, 3, "a probe");
	}
	assert_int_equal(cal.nv, 12);
	assert_int_equal(col_calibration_yaml(&env, &cal, &text, &err), 0);
	snprintf(path, sizeof path, "%s/gpu.yaml", tmpdir);
	assert_int_equal(col_write_atomic(path, text, 0, &err), 0);
	if (col_envelope_load_cal(path, &back, &cback, &err))
		fail_msg("load: %s", err.msg);
	assert_int_equal(back.cores, 132);
	assert_int_equal(back.dma_engines, 64);
	assert_int_equal(back.dma_serial, 0);
	assert_true(back.dma_max_last_dim == 2147483647);
	assert_true(fabs(back.global_bw_gbps / env.global_bw_gbps - 1) < 1e-5);
	assert_true(fabs(back.launch_first_us / env.launch_first_us - 1) < 1e-5);
	for (int f = 0; f < OPS_NKCLASSES; f++) {
		if (env.kern[f].efficiency > 0)
			assert_true(fabs(back.kern[f].efficiency / env.kern[f].efficiency - 1) < 1e-5);
		else
			assert_true(back.kern[f].efficiency == 0);
		assert_true(fabs(back.kern[f].transfer_ns - env.kern[f].transfer_ns) <=
			    1e-5 * env.kern[f].transfer_ns);
	}
	assert_true(fabs(back.dma_setup_ns / env.dma_setup_ns - 1) < 1e-5);
	assert_true(fabs(back.tops[OPS_F16] / env.tops[OPS_F16] - 1) < 1e-5);
	assert_true(cback.present);
	assert_int_equal(cback.device, COL_DEV_CUDA);
	assert_string_equal(cback.gpu, cal.gpu);
	assert_int_equal(cback.nv, 12);
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const struct col_cal_value *c = col_cal_find(&cback, keys[i]), *o = col_cal_find(&cal, keys[i]);
		assert_non_null(c);
		assert_true(fabs(c->median / o->median - 1) < 1e-5);
		assert_int_equal(c->samples, 3);
	}
	free(text);
	/* the plain build has no backend: measuring the GPU is refused */
	struct col_cal_options o = {1, "gpu"};
	assert_int_equal(col_calibrate_gpu(&o, 0, &env, &cal, &err), OPR_ENODEV);
	assert_non_null(strstr(err.msg, "without the CUDA backend"));
}

/* An unknown value name under calibration.values is an error at its key. */
static void test_calibration_unknown_key(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/bad.yaml", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("name: bad\nclock_ghz: 1\ncores: 1\n"
	      "global: {bandwidth_gbps: 10, capacity_gib: 1}\n"
	      "shared: {capacity_kib: 512, bandwidth_gbps: 80}\nlocal: {capacity_kib: 32}\n"
	      "compute_tops: {fp32: 0.1, fp16: 0.05, bf16: 0.05, int8: 0.05}\n"
	      "calibration:\n  host: h\n  date: d\n  values:\n"
	      "    fp99_tops: {median: 1, spread: 0.1, samples: 3}\n", f);
	fclose(f);
	struct ops_envelope env;
	struct col_calibration cal;
	struct opr_error err = {0};
	assert_int_equal(col_envelope_load_cal(path, &env, &cal, &err), OPR_EINPUT);
	assert_int_equal(err.line, 12);
	assert_int_equal(err.col, 5);
	assert_non_null(strstr(err.msg, "unknown key 'fp99_tops'"));
}

static void test_kendall_tau(void **state)
{
	(void)state;
	double x[] = {1, 2, 3, 4, 5}, up[] = {10, 20, 30, 40, 50}, down[] = {50, 40, 30, 20, 10},
	       swap[] = {10, 20, 30, 50, 40};
	assert_true(ana_kendall_tau(x, up, 5) == 1.0);
	assert_true(ana_kendall_tau(x, down, 5) == -1.0);
	assert_true(fabs(ana_kendall_tau(x, swap, 5) - 0.8) < 1e-12); /* (9 - 1) / 10 */
	assert_true(isnan(ana_kendall_tau(x, up, 1)));
}

/* A crafted run on a calibrated envelope: one block, two variants, each with
 * four fitting alternatives and one over capacity. Model and measured times
 * are seeded random values; baseline's measured order follows the model
 * (tau 1, the planner's choice is the best: slowdown 0), candidate's is
 * reversed (tau -1, slowdown = slowest / fastest - 1). */
static void test_validation_known_run(void **state)
{
	(void)state;
	struct col_run *run = calloc(1, sizeof *run);
	struct col_profile *p = calloc(1, sizeof *p);
	assert_non_null(run);
	assert_non_null(p);
	run->profile = p;
	p->calibration.present = 1;
	snprintf(p->calibration.host, sizeof p->calibration.host, "hostA");
	snprintf(run->host.hostname, sizeof run->host.hostname, "hostA");
	snprintf(p->envelope.name, sizeof p->envelope.name, "hostA-env");
	p->envelope.cores = 1;
	p->envelope.clock_scale = 1;
	p->envelope.tops[OPS_S8] = 0.05;
	p->envelope.global_bw_gbps = 10;
	p->envelope.shared_bw_gbps = 100;
	p->envelope.dma_engines = 1;
	p->envelope.launch_overhead_us = 1;
	p->nblocks = run->nblocks = 1;
	snprintf(p->blocks[0].name, sizeof p->blocks[0].name, "blk");
	p->blocks[0].work.group = OPS_G_QGEMM;
	struct col_block_run *br = &run->blocks[0];
	br->block = &p->blocks[0];
	double ran_model[2], ran_meas[2], alt_model[2][4], alt_meas[2][4];
	for (int v = 0; v < 2; v++) {
		struct col_variant_run *vr = &br->v[v];
		vr->nalts = 5;
		vr->alts = calloc(5, sizeof *vr->alts);
		vr->alt_measured_ns = calloc(5, sizeof *vr->alt_measured_ns);
		vr->launches = calloc(1, sizeof *vr->launches);
		vr->samples_ns = calloc(3, sizeof *vr->samples_ns);
		assert_non_null(vr->alts);
		assert_non_null(vr->alt_measured_ns);
		assert_non_null(vr->launches);
		assert_non_null(vr->samples_ns);
		double m = 1000, t = 1000;
		for (int i = 0; i < 4; i++) {
			m += urand(10, 500); /* increasing: the planner's order */
			t += urand(10, 500);
			alt_model[v][i] = m;
			alt_meas[v][v ? 3 - i : i] = t;
		}
		for (int i = 0; i < 4; i++) {
			vr->alts[i].plan.p[0] = 16 * (i + 1);
			vr->alts[i].model_ns = alt_model[v][i];
			vr->alts[i].rejected = i > 0;
			vr->alts[i].fits = 1;
			snprintf(vr->alts[i].reason, sizeof vr->alts[i].reason, i ? "slower: x" : "chosen");
			vr->alts[i].counters.macs[OPS_S8] = 1000000;
			vr->alt_measured_ns[i] = alt_meas[v][i];
		}
		/* over capacity: measured by mistake, still never counted */
		vr->alts[4].plan.p[0] = 999;
		vr->alts[4].rejected = 1;
		snprintf(vr->alts[4].reason, sizeof vr->alts[4].reason, "over capacity");
		vr->alt_measured_ns[4] = 1.0;
		vr->plan = vr->alts[0].plan;
		ran_model[v] = urand(2000, 9000);
		ran_meas[v] = urand(2000, 9000);
		vr->model_ns = ran_model[v];
		vr->nlaunches = 1;
		vr->launches[0].overhead_ns = 0.1 * ran_model[v];
		vr->launches[0].global_ns = 0.6 * ran_model[v];
		vr->launches[0].compute_ns = 0.3 * ran_model[v];
		vr->launches[0].model_ns = ran_model[v];
		vr->nsamples = 3;
		vr->samples_ns[0] = (int64_t)ran_meas[v];
		vr->samples_ns[1] = (int64_t)ran_meas[v] + 5000;
		vr->samples_ns[2] = (int64_t)ran_meas[v] - 700;
		ran_meas[v] = (double)(int64_t)ran_meas[v];
	}
	struct ana_model_validation mv;
	struct opr_error err = {0};
	assert_int_equal(ana_model_validate(run, &mv, &err), 0);
	assert_true(mv.calibrated);
	assert_int_equal(mv.nrows, 10); /* per variant: the run + 4 alternatives */
	double errs[8];
	int ne = 0;
	for (size_t i = 0; i < mv.nrows; i++) {
		const struct ana_model_row *r = &mv.rows[i];
		int v = r->variant;
		if (r->alt < 0) {
			assert_true(r->ran && r->counted);
			assert_true(r->measured_ns == ran_meas[v]);
			assert_true(r->ratio == ran_model[v] / ran_meas[v]);
			assert_int_equal(r->dominant, ANA_T_GLOBAL);
		} else {
			assert_true(r->alt >= 0 && r->alt < 4);
			assert_int_equal(r->ran, r->alt == 0);
			assert_int_equal(r->counted, r->alt != 0);
			assert_true(r->ratio == alt_model[v][r->alt] / alt_meas[v][r->alt]);
			assert_int_equal(r->dominant, ANA_T_COMPUTE);
		}
		if (r->counted)
			errs[ne++] = fabs(r->ratio - 1.0);
	}
	assert_int_equal(ne, 8); /* per variant: the run and alternatives 1..3 */
	/* median of eight values: the mean of the 4th and 5th smallest */
	for (int i = 0; i < ne; i++)
		for (int j = i + 1; j < ne; j++)
			if (errs[j] < errs[i]) {
				double t = errs[i];
				errs[i] = errs[j];
				errs[j] = t;
			}
	assert_true(mv.median_abs_error == 0.5 * (errs[3] + errs[4]));
	assert_true(mv.worst_abs_error == errs[7]);
	assert_int_equal(mv.nplanner, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct ana_planner_row *r = &mv.planner[i];
		assert_int_equal(r->candidates, 4);
		if (r->variant == 0) {
			assert_true(r->tau == 1.0);
			assert_true(r->slowdown == 0.0);
		} else {
			assert_true(r->tau == -1.0);
			assert_true(r->choice_ns == alt_meas[1][0]);
			assert_true(r->best_ns == alt_meas[1][3]);
			assert_true(r->slowdown == alt_meas[1][0] / alt_meas[1][3] - 1.0);
			assert_true(r->slowdown > 0);
		}
	}
	ana_model_validation_release(&mv);

	/* paired rounds (collect.h, alt_vs_choice): the best is the plan the
	 * choice was slowest against, round by round, whatever the unpaired
	 * medians say; the slowdown its median ratio - 1 with the CI. Variant 0:
	 * alternative 2 beat the choice by 4% (CI 1-7%); variant 1: no plan beat
	 * it (every ratio <= 1), so the choice is the best, slowdown 0 */
	static const double vs[2][5][3] = {
		{{1, 1, 1}, {1.02, 0.99, 1.05}, {1.04, 1.01, 1.07}, {0.97, 0.9, 1.1}, {NAN, NAN, NAN}},
		{{1, 1, 1}, {0.98, 0.95, 1.01}, {0.9, 0.8, 1.0}, {0.99, 0.97, 1.03}, {5, 5, 5}},
	};
	for (int v = 0; v < 2; v++) {
		br->v[v].alt_vs_choice = calloc(15, sizeof(double));
		assert_non_null(br->v[v].alt_vs_choice);
		memcpy(br->v[v].alt_vs_choice, vs[v], sizeof vs[v]);
	}
	assert_int_equal(ana_model_validate(run, &mv, &err), 0);
	assert_int_equal(mv.nplanner, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct ana_planner_row *r = &mv.planner[i];
		assert_true(r->paired);
		if (r->variant == 0) {
			assert_true(fabs(r->slowdown - 0.04) < 1e-12);
			assert_true(fabs(r->slowdown_lo - 0.01) < 1e-12 && fabs(r->slowdown_hi - 0.07) < 1e-12);
			assert_true(r->best_ns == alt_meas[0][2]);
		} else {
			/* the over-capacity plan (alts[4], ratio 5) never counts */
			assert_true(r->slowdown == 0.0 && r->slowdown_lo == 0.0 && r->slowdown_hi == 0.0);
			assert_true(r->best_ns == alt_meas[1][0]);
		}
		assert_true(r->within);
	}
	ana_model_validation_release(&mv);
	for (int v = 0; v < 2; v++) {
		free(br->v[v].alt_vs_choice);
		br->v[v].alt_vs_choice = NULL;
	}

	/* calibrated on the GPU, run on the host (same host name): unvalidated */
	p->calibration.device = COL_DEV_CUDA;
	assert_int_equal(ana_model_validate(run, &mv, &err), 0);
	assert_false(mv.calibrated);
	assert_int_equal(mv.nrows, 0);
	assert_non_null(strstr(mv.reason, "calibrated on the GPU (device cuda), but the blocks ran on the host"));
	ana_model_validation_release(&mv);
	/* ... and on the GPU with an envelope of the GPU: validated */
	p->device.kind = COL_DEV_CUDA;
	assert_int_equal(ana_model_validate(run, &mv, &err), 0);
	assert_true(mv.calibrated);
	ana_model_validation_release(&mv);
	p->calibration.device = p->device.kind = COL_DEV_HOST;

	/* calibrated on another host: unvalidated, with the reason */
	snprintf(run->host.hostname, sizeof run->host.hostname, "hostB");
	assert_int_equal(ana_model_validate(run, &mv, &err), 0);
	assert_false(mv.calibrated);
	assert_int_equal(mv.nrows, 0);
	assert_non_null(strstr(mv.reason, "calibrated on 'hostA', not on this run's host 'hostB'"));
	ana_model_validation_release(&mv);

	/* a target description: unvalidated, never silent */
	p->calibration.present = 0;
	snprintf(p->envelope.name, sizeof p->envelope.name, "npu-a");
	assert_int_equal(ana_model_validate(run, &mv, &err), 0);
	assert_false(mv.calibrated);
	assert_true(isnan(mv.median_abs_error));
	assert_string_equal(mv.reason, "the envelope 'npu-a' is a target description, not measured "
				       "on this host: modelled times are unvalidated");
	ana_model_validation_release(&mv);
	run->profile = NULL;
	free(p);
	col_run_free(run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calibrated_envelope_loads),
		cmocka_unit_test(test_calibration_unknown_key),
		cmocka_unit_test(test_gpu_envelope_roundtrip),
		cmocka_unit_test(test_kendall_tau),
		cmocka_unit_test(test_validation_known_run),
	};
	return cmocka_run_group_tests_name("calibrate", tests, setup, teardown);
}
