/* tests/test_gpu_model.c: what a GPU run adds to the model and the pipeline,
 * checked on the CPU host (no GPU needed): the kernel families' costs of a GPU
 * envelope (efficiency, transfer_ns, launch_first_us) against the formula on
 * random hand launches, a host envelope priced as before; the simulation
 * driven by measured launch times (the fused candidates' CUDA-event medians
 * of the H200 archive in fixtures/archive-h200); the device replay's fields
 * through pipeline.json; and the replay absent with its reason in a build
 * without the CUDA backend. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../collect/collect.h"
#include "../collect/jread.h"
#include "../collect/pipeline.h"
#include "../ops/device_int.h"

static uint64_t rng = 0x17b0c0ffeeULL;
static double urand(double lo, double hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (hi - lo) * (double)(rng >> 11) * 0x1.0p-53;
}

static struct ops_envelope gpu_env(void)
{
	struct ops_envelope e;
	memset(&e, 0, sizeof e);
	snprintf(e.name, sizeof e.name, "gpu");
	snprintf(e.power_mode, sizeof e.power_mode, "nominal");
	e.clock_ghz = 1.98;
	e.clock_scale = 1;
	e.cores = 4;
	e.global_bw_gbps = urand(1000, 4000);
	e.global_capacity_gib = 80;
	e.shared_capacity_kib = 227;
	e.shared_bw_gbps = urand(100, 300);
	e.local_capacity_kib = 256;
	e.dma_max_last_dim = 1 << 30;
	e.dma_setup_ns = urand(300, 600);
	e.dma_engines = 64;
	for (int t = 0; t < OPS_NDTYPES; t++)
		e.tops[t] = urand(20, 600);
	e.launch_overhead_us = urand(1, 3);
	return e;
}

/* One launch named name: tiles on cores 0 and 1, each a GLOBAL -> SHARED
 * transfer of bytes[c] and fp32 MACs macs[c] (a dry run). */
static void launch(struct ops_device *dev, const char *name, int db, int alt, const int64_t *elems,
		   const uint64_t *macs)
{
	struct opr_error err = { 0 };
	assert_int_equal(ops_launch_begin(dev, name, db, &err), 0);
	if (alt)
		ops_launch_alt_kernel(dev);
	for (int c = 0; c < 2; c++) {
		struct ops_dma_desc d = { .rank = 1, .shape = { elems[c] }, .src_stride = { 1 },
					  .dst_stride = { 1 }, .elem_bytes = 4 };
		ops_tile_begin(dev, c);
		ops_compute(dev, OPS_F32, macs[c], 0, 0, 0);
		assert_int_equal(ops_dma(dev, OPS_SHARED, NULL, OPS_GLOBAL, NULL, &d, &err), 0);
	}
	assert_int_equal(ops_launch_end(dev, &err), 0);
}

/* The formula of ops/model.c for these launches: per core, C = 2 macs /
 * (tops / cores), S = bytes / shared_bw, G = bytes / (bw / 2 active cores),
 * one transfer; a family with a cost: T_c = efficiency max(C, S, G') +
 * transfer_ns, whatever the buffering, G' = bytes / (bw / cores); else double-buffered max(C, S, G) +
 * setup / engines, single-buffered C + S + G + setup / engines. conv-gemm
 * without a cost of its own has conv's. */
static double expect(const struct ops_envelope *e, enum ops_kernel_class f, int db, int first,
		     const int64_t *elems, const uint64_t *macs)
{
	double best = 0;
	if (f == OPS_KC_CONV_GEMM && !(e->kern[f].efficiency > 0))
		f = OPS_KC_CONV;
	for (int c = 0; c < 2; c++) {
		double bytes = 4.0 * (double)elems[c];
		double C = 2.0 * (double)macs[c] / (e->tops[OPS_F32] * 1e3 / e->cores);
		double S = bytes / e->shared_bw_gbps, G = bytes / (e->global_bw_gbps / 2);
		double t;
		if (e->kern[f].efficiency > 0) /* an SM's share of GLOBAL at most */
			t = e->kern[f].efficiency *
				    fmax(C, fmax(S, bytes / (e->global_bw_gbps / e->cores))) +
			    e->kern[f].transfer_ns;
		else if (db)
			t = fmax(C, fmax(S, G)) + e->dma_setup_ns / e->dma_engines;
		else
			t = C + S + G + e->dma_setup_ns / e->dma_engines;
		best = fmax(best, t);
	}
	double ov = first && e->launch_first_us > 0 ? e->launch_first_us : e->launch_overhead_us;
	return ov * 1e3 + best;
}

static void test_family_pricing(void **state)
{
	(void)state;
	enum { NL = 6 };
	static const char *const names[NL] = { "conv2d+bias+act", "qgemm",	"permute",
					       "permute",	  "activation", "conv2d" };
	static const enum ops_kernel_class fam[NL] = { OPS_KC_CONV,	    OPS_KC_QGEMM,
						       OPS_KC_PERMUTE,	    OPS_KC_PERMUTE_ROWS,
						       OPS_KC_ELEMENTWISE, OPS_KC_CONV_GEMM };
	struct opr_error err = { 0 };
	for (int trial = 0; trial < 24; trial++) {
		struct ops_envelope host = gpu_env(), gpu = host;
		gpu.launch_first_us = urand(3, 8);
		for (int f = 0; f < OPS_NKCLASSES; f++)
			if (trial % NL != f) { /* one family left at the peaks (conv-gemm: conv's) */
				gpu.kern[f].efficiency = urand(0.5, 40);
				gpu.kern[f].transfer_ns = trial / NL % 2 ? urand(0, 2000) : 0;
			}
		for (int pass = 0; pass < 2; pass++) {
			const struct ops_envelope *e = pass ? &gpu : &host;
			struct ops_device *dev = NULL;
			assert_int_equal(ops_device_new(e, 1, &dev, &err), 0);
			int64_t elems[NL][2];
			uint64_t macs[NL][2];
			int db[NL];
			for (int k = 0; k < NL; k++) {
				for (int c = 0; c < 2; c++) {
					elems[k][c] = (int64_t)urand(1000, 500000);
					macs[k][c] = (uint64_t)urand(0, 5e6);
				}
				db[k] = urand(0, 1) < 0.5;
				launch(dev, names[k], db[k],
				       fam[k] == OPS_KC_PERMUTE_ROWS || fam[k] == OPS_KC_CONV_GEMM, elems[k],
				       macs[k]);
			}
			size_t n;
			const struct ops_launch_rec *r = ops_device_launches(dev, &n);
			assert_int_equal(n, NL);
			for (int k = 0; k < NL; k++) {
				double want = expect(e, fam[k], db[k], k == 0, elems[k], macs[k]);
				if (fabs(r[k].model_ns - want) > 1e-9 * want)
					fail_msg("trial %d %s launch %d (%s): model %.6f want %.6f", trial,
						 pass ? "gpu" : "host", k, names[k], r[k].model_ns, want);
			}
			/* a new run starts with a first launch again */
			ops_device_reset(dev);
			launch(dev, names[4], 1, 0, elems[4], macs[4]);
			r = ops_device_launches(dev, &n);
			assert_int_equal(n, 1);
			assert_true(fabs(r[0].overhead_ns - (pass ? gpu.launch_first_us
								  : host.launch_overhead_us) * 1e3) < 1e-9);
			ops_device_free(dev);
		}
	}
}

static void test_family_names(void **state)
{
	(void)state;
	assert_int_equal(ops_kernel_class_of("conv2d", 0), OPS_KC_CONV);
	assert_int_equal(ops_kernel_class_of("conv2d+bias+act", 0), OPS_KC_CONV);
	assert_int_equal(ops_kernel_class_of("conv2d+bias+act", 1), OPS_KC_CONV_GEMM);
	assert_int_equal(ops_kernel_class_of("qgemm+dequant+bias+act", 0), OPS_KC_QGEMM);
	assert_int_equal(ops_kernel_class_of("permute+activation", 0), OPS_KC_PERMUTE);
	assert_int_equal(ops_kernel_class_of("permute", 1), OPS_KC_PERMUTE_ROWS);
	assert_int_equal(ops_kernel_class_of("bias", 0), OPS_KC_ELEMENTWISE);
	assert_int_equal(ops_kernel_class_of("dequant", 1), OPS_KC_ELEMENTWISE);
	for (int f = 0; f < OPS_NKCLASSES; f++)
		assert_true(strcmp(ops_kernel_class_name((enum ops_kernel_class)f), "?") != 0);
	/* the permute kernels: the attention permute keeps rows, the transpose not */
	struct ops_envelope e = gpu_env();
	struct ops_device *dev = NULL;
	struct opr_error err = { 0 };
	e.kern[OPS_KC_PERMUTE_ROWS].efficiency = 1000; /* priced far apart */
	assert_int_equal(ops_device_new(&e, 1, &dev, &err), 0);
	struct ops_permute_job j;
	memset(&j, 0, sizeof j);
	j.rank = 4;
	int64_t d[4] = { 2, 64, 8, 64 };
	int pm[4] = { 0, 2, 1, 3 };
	memcpy(j.dims, d, sizeof d);
	memcpy(j.perm, pm, sizeof pm);
	j.dtype = OPS_F32;
	j.double_buffer = 1;
	assert_int_equal(ops_permute_exec(dev, &j, NULL, NULL, &err), 0);
	size_t n;
	double rows_ns = ops_device_launches(dev, &n)[0].model_ns;
	ops_device_reset(dev);
	j.rank = 2;
	j.dims[0] = 128 * 8;
	j.dims[1] = 128;
	j.perm[0] = 1;
	j.perm[1] = 0;
	assert_int_equal(ops_permute_exec(dev, &j, NULL, NULL, &err), 0);
	double t_ns = ops_device_launches(dev, &n)[0].model_ns;
	ops_device_free(dev);
	/* the same bytes: only the row-copy permute paid its family's cost */
	assert_true(rows_ns > 20 * t_ns);

	/* the conv kernels: the implicit GEMM is conv-gemm, the direct one conv */
	struct ops_workload w;
	memset(&w, 0, sizeof w);
	w.group = OPS_G_CONV_BIAS_ACT;
	w.act = OPS_ACT_RELU;
	w.dtype = OPS_F16;
	w.conv = (struct ops_conv_shape){ 1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1 };
	/* the first fitting plan of each strategy, on the peaks */
	struct ops_envelope g = gpu_env();
	struct ops_plan_eval *alts = NULL;
	size_t nalts = 0;
	struct ops_plan plan[2];
	int have[2] = { 0, 0 };
	assert_int_equal(ops_plan_search(&g, &w, 1, &alts, &nalts, &err), 0);
	for (size_t i = 0; i < nalts; i++) {
		int k = alts[i].plan.strategy == OPS_STRAT_IM2COL ? 1
			: alts[i].plan.strategy == OPS_STRAT_DIRECT ? 0 : -1;
		if (k >= 0 && alts[i].fits && !have[k]) {
			plan[k] = alts[i].plan;
			have[k] = 1;
		}
	}
	free(alts);
	assert_true(have[0] && have[1]);
	double ns[2][2];
	for (int pass = 0; pass < 2; pass++) {
		g.kern[OPS_KC_CONV].efficiency = 1;
		g.kern[OPS_KC_CONV_GEMM].efficiency = pass ? 1000 : 0; /* 0: conv's */
		for (int k = 0; k < 2; k++) {
			struct ops_plan_eval ev;
			assert_int_equal(ops_plan_evaluate(&g, &w, &plan[k], &ev, &err), 0);
			assert_true(ev.fits);
			ns[pass][k] = ev.model_ns;
		}
	}
	assert_true(ns[1][0] == ns[0][0]);     /* the direct plan: conv's cost both times */
	assert_true(ns[1][1] > 20 * ns[0][1]); /* the GEMM plan: its own */
}

/* The H200 archive's fused candidates ran one launch each: their CUDA-event
 * medians are measured per-launch device times. */
static int fixture_launch_ns(const char *block, double *ns)
{
	FILE *f = fopen("fixtures/archive-h200/samples.csv", "r");
	char line[256];
	double *x = NULL;
	size_t n = 0, cap = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char b[64], v[32];
		long long r, t;
		if (sscanf(line, "%63[^,],%31[^,],%lld,%lld", b, v, &r, &t) != 4)
			continue;
		if (strcmp(b, block) || strcmp(v, "candidate"))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			x = realloc(x, cap * sizeof *x);
			assert_non_null(x);
		}
		x[n++] = (double)t;
	}
	fclose(f);
	if (!n) {
		free(x);
		return -1;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && x[k - 1] > x[k]; k--) {
			double t = x[k];
			x[k] = x[k - 1];
			x[k - 1] = t;
		}
	*ns = x[n / 2];
	free(x);
	return 0;
}

static void test_measured_service(void **state)
{
	(void)state;
	struct opr_error err = { 0 };
	static const char *const blocks[] = { "resnet-stage2-conv", "decode-mlp-int8",
					      "lm-head-permute", "attention-permute" };
	for (int b = 0; b < 4; b++) {
		double ns;
		if (fixture_launch_ns(blocks[b], &ns))
			fail_msg("fixtures/archive-h200/samples.csv: no %s candidate", blocks[b]);
		assert_true(ns > 1000 && ns < 1e6);
		struct ops_launch_rec rec;
		memset(&rec, 0, sizeof rec);
		/* a quarter of what 4000 GB/s moves in the measured time */
		rec.global_bytes = (uint64_t)(ns * 1000.0);
		struct col_pipe_launch l[1];
		col_pipe_device_launches(&ns, 1, &rec, 1, l);
		assert_true(l[0].compute_ns == ns && l[0].overhead_ns == 0 && l[0].double_buffer == 1);
		assert_true(l[0].global_bytes == (double)rec.global_bytes);
		struct col_pipe_config c;
		memset(&c, 0, sizeof c);
		c.seed = 42;
		c.streams = 4;
		c.poisson = 0;
		c.rate_rps = 100; /* far apart: nobody waits */
		c.batch_max = 1;
		c.requests = 40;
		c.cores = 132;
		c.global_bw_gbps = 4000;
		c.dma_peak_gbps = 1;
		col_pipe_device_config(&c);
		assert_int_equal(c.cores, 1);
		assert_true(c.dma_peak_gbps == c.global_bw_gbps && c.keep_trace == 1);
		struct col_pipe_result r;
		assert_int_equal(col_pipe_simulate(&c, l, 1, &r, &err), 0);
		/* a lone request takes the measured time (its bytes move faster) */
		for (int64_t q = 0; q < r.n; q++)
			assert_true(fabs(r.latency_ns[q] - ns) < 1e-6 * ns);
		col_pipe_result_release(&r);
		/* loaded to 80% of the one server: requests queue */
		c.poisson = 1;
		c.rate_rps = 0.8e9 / ns;
		c.batch_max = 4;
		c.batch_timeout_us = 100;
		c.requests = 4000;
		assert_int_equal(col_pipe_simulate(&c, l, 1, &r, &err), 0);
		assert_true(r.p95_ns > 1.5 * ns && r.wait_p95_ns > 0);
		int64_t total = 0;
		for (int64_t j = 0; j < r.jobs; j++) {
			assert_true(r.job_b[j] >= 1 && r.job_b[j] <= 4);
			assert_true(r.job_stream[j] >= 0 && r.job_stream[j] < 4);
			if (j)
				assert_true(r.job_close_ns[j] >= r.job_close_ns[j - 1]);
			total += r.job_b[j];
		}
		assert_int_equal(total, r.n);
		for (int64_t q = 0; q < r.n; q++) {
			int64_t j = r.job_of[q];
			assert_true(j >= 0 && j < r.jobs);
			assert_int_equal(r.job_stream[j], r.stream_of[q]);
			/* closed after the request arrived, within the timeout */
			assert_true(r.job_close_ns[j] >= r.arrival_ns[q]);
			assert_true(r.job_close_ns[j] <= r.arrival_ns[q] + 100e3 + 1e-6);
		}
		col_pipe_result_release(&r);
		/* spread evenly when the kernels are not the model's launches */
		struct ops_launch_rec recs[3];
		memset(recs, 0, sizeof recs);
		recs[0].global_bytes = 300;
		recs[1].global_bytes = 600;
		recs[2].global_bytes = 900;
		double two[2] = { ns, 2 * ns };
		struct col_pipe_launch l2[2];
		col_pipe_device_launches(two, 2, recs, 3, l2);
		assert_true(l2[0].global_bytes == 900 && l2[1].global_bytes == 900);
		assert_true(l2[1].compute_ns == 2 * ns);
	}
}

/* A variant's pipeline through pipeline.json and back. */
static void roundtrip(const struct col_variant_run *in, struct col_variant_run *out, json_t **js)
{
	struct opr_error err = { 0 };
	*js = col_pipe_to_json(in);
	assert_non_null(*js);
	struct col_jr r = { "pipeline.json", &err, 0, "" };
	memset(out, 0, sizeof *out);
	if (col_pipe_from_json(&r, *js, out))
		fail_msg("load: %s", err.msg);
}

static void release(struct col_variant_run *vr)
{
	col_pipe_result_release(&vr->pipe);
	free(vr->sweep);
	free(vr->dev_launch_ns);
	memset(vr, 0, sizeof *vr);
}

static void small_pipe(struct col_variant_run *vr, int trace)
{
	struct opr_error err = { 0 };
	struct col_pipe_config c;
	memset(&c, 0, sizeof c);
	c.seed = 3;
	c.streams = 2;
	c.poisson = 1;
	c.rate_rps = 20000;
	c.batch_max = 2;
	c.batch_timeout_us = 20;
	c.requests = 200;
	c.global_bw_gbps = 4000;
	const double ns[2] = { 20000, 5000 };
	struct col_pipe_launch l[2];
	col_pipe_device_launches(ns, 2, NULL, 0, l);
	col_pipe_device_config(&c);
	c.keep_trace = trace;
	memset(vr, 0, sizeof *vr);
	assert_int_equal(col_pipe_simulate(&c, l, 2, &vr->pipe, &err), 0);
	vr->pipe_p95_lo = vr->pipe_p95_hi = vr->pipe_p99_lo = vr->pipe_p99_hi = NAN;
	vr->pipe_free_p95_ns = vr->pipe_free_p99_ns = vr->pipe_hidden_p95_ns = NAN;
}

static void test_replay_json(void **state)
{
	(void)state;
	struct col_variant_run vr, back;
	json_t *js;
	/* a host run: nothing of the device is written */
	small_pipe(&vr, 0);
	roundtrip(&vr, &back, &js);
	assert_null(json_object_get(js, "device_replay"));
	assert_null(json_object_get(js, "service_times"));
	assert_null(json_object_get(js, "provenance"));
	assert_int_equal(back.replay.state, COL_REPLAY_NONE);
	assert_null(back.dev_launch_ns);
	json_decref(js);
	release(&back);
	/* a GPU run with its replay measured */
	double lt[2] = { urand(1e4, 1e5), urand(1e3, 1e4) };
	vr.dev_launch_ns = malloc(sizeof lt);
	assert_non_null(vr.dev_launch_ns);
	memcpy(vr.dev_launch_ns, lt, sizeof lt);
	vr.ndev_launch = 2;
	struct col_replay *rp = &vr.replay;
	rp->state = COL_REPLAY_MEASURED;
	rp->n = 4000;
	rp->jobs = 1234;
	rp->streams = 4;
	double *f[] = { &rp->p50_ns, &rp->p95_ns, &rp->p99_ns, &rp->max_ns, &rp->mean_ns,
			&rp->wait_p50_ns, &rp->wait_p95_ns, &rp->wait_p99_ns, &rp->wait_mean_ns,
			&rp->throughput_rps, &rp->sim_p50_ns, &rp->sim_p95_ns, &rp->sim_p99_ns,
			&rp->sim_wait_p95_ns, &rp->sim_wait_mean_ns };
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		*f[i] = urand(1e3, 1e6);
	roundtrip(&vr, &back, &js);
	assert_string_equal(json_string_value(json_object_get(js, "provenance")), "simulated");
	json_t *d = json_object_get(js, "device_replay");
	assert_string_equal(json_string_value(json_object_get(d, "provenance")), "measured");
	assert_string_equal(json_string_value(json_object_get(json_object_get(js, "service_times"),
							      "provenance")), "measured");
	assert_int_equal(back.replay.state, COL_REPLAY_MEASURED);
	assert_int_equal(back.ndev_launch, 2);
	assert_true(back.dev_launch_ns[0] == lt[0] && back.dev_launch_ns[1] == lt[1]);
	assert_true(back.replay.n == 4000 && back.replay.jobs == 1234 && back.replay.streams == 4);
	double *g[] = { &back.replay.p50_ns, &back.replay.p95_ns, &back.replay.p99_ns,
			&back.replay.max_ns, &back.replay.mean_ns, &back.replay.wait_p50_ns,
			&back.replay.wait_p95_ns, &back.replay.wait_p99_ns, &back.replay.wait_mean_ns,
			&back.replay.throughput_rps, &back.replay.sim_p50_ns, &back.replay.sim_p95_ns,
			&back.replay.sim_p99_ns, &back.replay.sim_wait_p95_ns,
			&back.replay.sim_wait_mean_ns };
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		assert_true(fabs(*g[i] - *f[i]) <= 1e-9 * *f[i]);
	json_decref(js);
	release(&back);
	/* unavailable: the reason and nothing else */
	memset(rp, 0, sizeof *rp);
	rp->state = COL_REPLAY_UNAVAILABLE;
	snprintf(rp->reason, sizeof rp->reason, "no GPU: cudaErrorNoDevice");
	roundtrip(&vr, &back, &js);
	d = json_object_get(js, "device_replay");
	assert_string_equal(json_string_value(json_object_get(d, "provenance")), "unavailable");
	assert_null(json_object_get(d, "p95_ns"));
	assert_int_equal(back.replay.state, COL_REPLAY_UNAVAILABLE);
	assert_string_equal(back.replay.reason, "no GPU: cudaErrorNoDevice");
	json_decref(js);
	release(&back);
	release(&vr);
}

/* Without the backend (this build links ops/cuda_none.c) the replay is
 * absent with the reason, never a number. */
static void test_replay_absent(void **state)
{
	(void)state;
	struct opr_error err = { 0 };
	struct ops_workload w;
	memset(&w, 0, sizeof w);
	w.group = OPS_G_ACTIVATION;
	w.act = OPS_ACT_RELU;
	w.dtype = OPS_F32;
	w.tensor.rank = 1;
	w.tensor.dims[0] = 64;
	struct ops_plan p;
	memset(&p, 0, sizeof p);
	p.double_buffer = 1;
	struct ops_instance *inst = NULL;
	assert_int_equal(ops_instance_new(&w, &p, 5, "absent", &inst, &err), 0);
	struct col_variant_run vr;
	small_pipe(&vr, 1);
	assert_int_equal(col_gpu_replay(NULL, inst, &vr, &err), 0);
	assert_int_equal(vr.replay.state, COL_REPLAY_UNAVAILABLE);
	assert_non_null(strstr(vr.replay.reason, "without the CUDA backend"));
	assert_true(vr.replay.n == 0 && vr.replay.p95_ns == 0);
	release(&vr);
	small_pipe(&vr, 0);
	assert_int_equal(col_gpu_replay(NULL, inst, &vr, &err), 0);
	assert_int_equal(vr.replay.state, COL_REPLAY_UNAVAILABLE);
	assert_string_equal(vr.replay.reason, "the simulation kept no arrival trace");
	release(&vr);
	ops_instance_free(inst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_pricing),
		cmocka_unit_test(test_family_names),
		cmocka_unit_test(test_measured_service),
		cmocka_unit_test(test_replay_json),
		cmocka_unit_test(test_replay_absent),
	};
	return cmocka_run_group_tests_name("gpu-model", tests, NULL, NULL);
}
