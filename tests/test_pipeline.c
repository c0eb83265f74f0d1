/* tests/test_pipeline.c: the scheduling pipeline simulation: determinism,
 * Little's law, work conservation, utilisation bounds, M/D/1, batching,
 * placement fairness, and fusion bursts under contention (seed 002's case). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../collect/pipeline.h"

static struct col_pipe_config base_config(void)
{
	struct col_pipe_config c;
	memset(&c, 0, sizeof c);
	c.seed = 0x5eed0002;
	c.streams = 4;
	c.poisson = 1;
	c.rate_rps = 20000;
	c.batch_max = 8;
	c.batch_timeout_us = 50;
	c.least_loaded = 1;
	c.requests = 20000;
	c.cores = 4;
	c.global_bw_gbps = 100;
	c.dma_peak_gbps = 0;
	c.hist_bins = 16;
	return c;
}

/* The unfused variant: four streaming (double-buffered) launches, each
 * compute-bound alone (2.5 us of transfer under 10 us of compute). */
static const struct col_pipe_launch UNFUSED[4] = {
	{ 5000, 10000, 250000, 1 }, { 5000, 10000, 250000, 1 },
	{ 5000, 10000, 250000, 1 }, { 5000, 10000, 250000, 1 },
};
/* The fused variant: one launch, the same compute, 20% less traffic (the
 * intermediates stay on chip), but staged in one burst before computing. */
static const struct col_pipe_launch FUSED[1] = {
	{ 5000, 40000, 800000, 0 },
};

/* Poisons a result so a field the simulation forgets to write shows. */
static void poison(struct col_pipe_result *r)
{
	memset(r, 0xa5, sizeof *r);
}

static void simulate_ok(const struct col_pipe_config *c, const struct col_pipe_launch *l,
			size_t nl, struct col_pipe_result *r)
{
	struct opr_error err = { 0 };
	poison(r);
	int rc = col_pipe_simulate(c, l, nl, r, &err);
	if (rc)
		fail_msg("simulate: %s", err.msg);
	assert_int_equal(r->n, c->requests);
	for (int64_t i = 0; i < r->n; i++) {
		assert_true(isfinite(r->latency_ns[i]) && isfinite(r->wait_ns[i]));
		assert_true(r->wait_ns[i] >= 0);
		assert_true(r->latency_ns[i] > r->wait_ns[i]);
		assert_true(r->stream_of[i] >= 0 && r->stream_of[i] < c->streams);
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void test_rejects_bad_inputs(void **state)
{
	(void)state;
	struct col_pipe_config good = base_config();
	struct col_pipe_config c;
	struct col_pipe_result r;
	struct opr_error err;
#define EXPECT_BAD(mutation, needle, l, nl)                                        \
	do {                                                                       \
		c = good;                                                          \
		mutation;                                                          \
		memset(&err, 0, sizeof err);                                       \
		poison(&r);                                                        \
		assert_int_equal(col_pipe_simulate(&c, l, nl, &r, &err), OPR_EINPUT); \
		assert_int_equal(err.code, OPR_EINPUT);                            \
		assert_non_null(strstr(err.msg, needle));                          \
		assert_null(r.latency_ns);                                         \
	} while (0)
	EXPECT_BAD(c.rate_rps = 0, "'rate_rps'", UNFUSED, 4);
	EXPECT_BAD(c.rate_rps = NAN, "'rate_rps'", UNFUSED, 4);
	EXPECT_BAD(c.cores = 0, "'cores'", UNFUSED, 4);
	EXPECT_BAD(c.cores = COL_PIPE_MAX_CORES + 1, "'cores'", UNFUSED, 4);
	EXPECT_BAD(c.streams = 0, "'streams'", UNFUSED, 4);
	EXPECT_BAD(c.requests = 0, "'requests'", UNFUSED, 4);
	EXPECT_BAD(c.requests = 10000001, "'requests'", UNFUSED, 4);
	EXPECT_BAD(c.batch_max = 0, "'batch_max'", UNFUSED, 4);
	EXPECT_BAD(c.batch_timeout_us = -1, "'batch_timeout_us'", UNFUSED, 4);
	EXPECT_BAD(c.global_bw_gbps = 0, "'global_bw_gbps'", UNFUSED, 4);
	EXPECT_BAD(c.dma_peak_gbps = -5, "'dma_peak_gbps'", UNFUSED, 4);
	EXPECT_BAD((void)0, "'launches'", UNFUSED, 0);
	struct col_pipe_launch neg = { 1000, -1, 10, 1 };
	EXPECT_BAD((void)0, "launch 0", &neg, 1);
	struct col_pipe_launch none = { 0, 0, 0, 1 };
	EXPECT_BAD((void)0, "no time", &none, 1);
	double w[4] = { 1, 2, 0, 1 };
	EXPECT_BAD(c.stream_weight = w, "'stream_weight[2]'", UNFUSED, 4);
#undef EXPECT_BAD
	/* the sweep validates too and leaves nothing to free */
	struct col_pipe_sweep_row *rows = (void *)&err;
	size_t nrows = 99;
	c = good;
	c.cores = 0;
	assert_int_equal(col_pipe_sweep(&c, UNFUSED, 4, &rows, &nrows, &err), OPR_EINPUT);
	assert_null(rows);
	assert_int_equal(nrows, 0);
	col_pipe_result_release(NULL);
}

static void test_deterministic(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	struct col_pipe_result a, b, d;
	simulate_ok(&c, UNFUSED, 4, &a);
	simulate_ok(&c, UNFUSED, 4, &b);
	size_t bytes = (size_t)a.n * sizeof(double);
	assert_memory_equal(a.latency_ns, b.latency_ns, bytes);
	assert_memory_equal(a.wait_ns, b.wait_ns, bytes);
	assert_memory_equal(a.hist_counts, b.hist_counts, a.hist_bins * sizeof(int64_t));
	assert_true(a.p95_ns == b.p95_ns && a.makespan_ns == b.makespan_ns);
	c.seed ^= 1;
	simulate_ok(&c, UNFUSED, 4, &d);
	assert_memory_not_equal(a.latency_ns, d.latency_ns, bytes);
	assert_true(a.makespan_ns != d.makespan_ns);
	col_pipe_result_release(&a);
	col_pipe_result_release(&b);
	col_pipe_result_release(&d);
	assert_null(a.latency_ns);
}

/* Quantiles, histogram and per-stream figures against recomputation. */
static void test_statistics(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.requests = 5003; /* not a multiple of the streams */
	struct col_pipe_result r;
	simulate_ok(&c, UNFUSED, 4, &r);
	size_t n = (size_t)r.n;
	double *v = malloc(n * sizeof *v);
	assert_non_null(v);
	memcpy(v, r.latency_ns, n * sizeof *v);
	qsort(v, n, sizeof *v, cmp_d);
	assert_true(r.p50_ns == v[(size_t)ceil(0.50 * n) - 1]);
	assert_true(r.p95_ns == v[(size_t)ceil(0.95 * n) - 1]);
	assert_true(r.p99_ns == v[(size_t)ceil(0.99 * n) - 1]);
	assert_true(r.max_ns == v[n - 1]);
	assert_true(r.p50_ns < r.p95_ns && r.p95_ns <= r.p99_ns);

	int64_t total = 0;
	for (size_t k = 0; k < r.hist_bins; k++) {
		assert_true(r.hist_edges_ns[k] < r.hist_edges_ns[k + 1]);
		total += r.hist_counts[k];
	}
	assert_int_equal(total, r.n);
	assert_true(r.hist_edges_ns[0] == 0 && r.hist_edges_ns[r.hist_bins] == r.wait_max_ns);
	/* recount bin by bin from the edges */
	for (size_t k = 0; k < r.hist_bins; k++) {
		int64_t cnt = 0;
		for (size_t i = 0; i < n; i++) {
			double w = r.wait_ns[i];
			int last = k + 1 == r.hist_bins;
			if (w >= r.hist_edges_ns[k] &&
			    (w < r.hist_edges_ns[k + 1] || (last && w == r.hist_edges_ns[k + 1])))
				cnt++;
		}
		assert_int_equal(cnt, r.hist_counts[k]);
	}

	int64_t per = 0;
	for (int s = 0; s < c.streams; s++) {
		double sum = 0;
		int64_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (r.stream_of[i] == s) {
				sum += r.latency_ns[i];
				m++;
			}
		assert_int_equal(m, r.stream_n[s]);
		assert_true(fabs(sum / (double)m - r.stream_mean_ns[s]) <= 1e-9 * sum / (double)m);
		assert_true(r.stream_p95_ns[s] > 0 && r.stream_p95_ns[s] <= r.max_ns);
		per += m;
	}
	assert_int_equal(per, r.n);
	assert_true(r.stream_n[0] - r.stream_n[3] == 1); /* remainder to the first */
	assert_true(r.jain_streams > 0.95 && r.jain_streams <= 1.0);

	/* nobody waits (uniform, gaps longer than service, batch 1): bin 0 */
	struct col_pipe_result z;
	c.poisson = 0;
	c.batch_max = 1;
	c.rate_rps = 1000;
	c.requests = 500;
	simulate_ok(&c, UNFUSED, 4, &z);
	assert_true(z.wait_max_ns == 0 && z.hist_edges_ns[z.hist_bins] == 0);
	assert_int_equal(z.hist_counts[0], z.n);
	assert_true(z.mean_ns == 60000 && z.p99_ns == 60000);
	col_pipe_result_release(&z);

	double x1[4] = { 5, 5, 5, 5 }, x2[4] = { 7, 0, 0, 0 }, x3[3] = { 1, 2, 3 };
	assert_true(fabs(col_pipe_jain(x1, 4) - 1.0) < 1e-15);
	assert_true(fabs(col_pipe_jain(x2, 4) - 0.25) < 1e-15);
	assert_true(fabs(col_pipe_jain(x3, 3) - 36.0 / 42.0) < 1e-15);
	free(v);
	col_pipe_result_release(&r);
}

static void test_little_law(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.rate_rps = 30000;
	struct col_pipe_result r;
	simulate_ok(&c, UNFUSED, 4, &r);
	double lw = r.little_lambda * r.little_W;
	assert_true(r.little_L > 1.0); /* a loaded system: many in flight */
	assert_true(fabs(r.little_L - lw) <= 0.02 * lw);
	assert_true(fabs(r.little_lambda * 1e9 - c.rate_rps) < 0.03 * c.rate_rps);
	col_pipe_result_release(&r);
}

/* Without contention (cores * P <= G) a job of b requests takes exactly
 * sum_i overhead_i + b * sum_i per-request time, so the total busy time is
 * jobs * sum(overhead) + n * sum(per-request): checked to rounding. */
static void test_work_conservation(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.cores = 3;
	c.dma_peak_gbps = 40;
	c.global_bw_gbps = 120;
	const struct col_pipe_launch l[3] = {
		{ 3000, 2000, 400000, 0 },  /* single: 10 us transfer + 2 us */
		{ 1000, 9000, 200000, 1 },  /* double, compute-bound: 9 us */
		{ 2000, 0, 120000, 1 },     /* transfer only: 3 us */
	};
	double per_req = (2000 + 400000 / 40.0) + 9000 + 120000 / 40.0;
	struct col_pipe_result r;
	simulate_ok(&c, l, 3, &r);
	double busy = 0;
	int64_t jobs = 0;
	for (int k = 0; k < c.cores; k++) {
		busy += r.core_busy_ns[k];
		jobs += r.core_jobs[k];
		assert_true(r.core_util[k] > 0 && r.core_util[k] <= 1.0);
	}
	assert_int_equal(jobs, r.jobs);
	double expect = (double)r.jobs * 6000 + (double)r.n * per_req;
	assert_true(fabs(busy - expect) <= 1e-9 * expect);
	assert_true(fabs(r.service_ns - busy) <= 1e-9 * busy);
	assert_true(fabs(r.overhead_ns - (double)r.jobs * 6000) < 1e-6);
	assert_true(fabs(r.bytes - (double)r.n * 720000) <= 1e-9 * r.bytes);
	assert_true(r.max_concurrent_bursts >= 2 && r.max_concurrent_bursts <= 3);

	/* with contention (G = P) the same work takes longer, but never longer
	 * than with every transfer at G / cores */
	c.global_bw_gbps = 40;
	struct col_pipe_result q;
	simulate_ok(&c, l, 3, &q);
	double qbusy = 0;
	for (int k = 0; k < c.cores; k++)
		qbusy += q.core_busy_ns[k];
	double slow = (2000 + 3 * 400000 / 40.0) + 9000 + 3 * 120000 / 40.0;
	assert_true(qbusy > (double)q.jobs * 6000 + (double)q.n * per_req);
	assert_true(qbusy < (double)q.jobs * 6000 + (double)q.n * slow);
	assert_true(fabs(q.service_ns - qbusy) <= 1e-9 * qbusy);
	col_pipe_result_release(&r);
	col_pipe_result_release(&q);
}

/* Overloaded and transfer-only: a core is busy exactly when it transfers, so
 * the bandwidth is busy whenever any core is; neither exceeds 1. */
static void test_utilisation_bounds(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.rate_rps = 400000;
	const struct col_pipe_launch l[2] = { { 0, 0, 150000, 1 }, { 0, 0, 100000, 0 } };
	struct col_pipe_result r;
	simulate_ok(&c, l, 2, &r);
	for (int k = 0; k < c.cores; k++)
		assert_true(r.core_util[k] > 0.9 && r.core_util[k] <= 1.0);
	assert_true(r.bw_util > 0.95 && r.bw_util <= 1.0 + 1e-12);
	assert_int_equal(r.max_concurrent_bursts, 4);
	assert_true(r.jain_cores > 0.99 && r.jain_cores <= 1.0);
	col_pipe_result_release(&r);
}

/* 1 core, 1 stream, Poisson, batch 1, constant service S: M/D/1, whose mean
 * queue wait is rho S / (2 (1 - rho)) (Pollaczek-Khinchine). */
static void test_md1(void **state)
{
	(void)state;
	const double S = 20000; /* ns */
	const double rhos[2] = { 0.5, 0.7 };
	for (int k = 0; k < 2; k++) {
		struct col_pipe_config c = base_config();
		c.streams = 1;
		c.cores = 1;
		c.batch_max = 1;
		c.requests = 300000;
		c.rate_rps = rhos[k] / S * 1e9;
		const struct col_pipe_launch l = { 4000, S - 4000, 0, 1 };
		struct col_pipe_result r;
		simulate_ok(&c, &l, 1, &r);
		double expect = rhos[k] * S / (2 * (1 - rhos[k]));
		assert_true(fabs(r.wait_mean_ns - expect) < 0.04 * expect);
		assert_true(fabs(r.mean_ns - r.wait_mean_ns - S) < 1e-6);
		assert_true(fabs(r.core_util[0] - rhos[k]) < 0.01);
		col_pipe_result_release(&r);
	}
}

/* Uniform arrivals make batch sizes exact: min(batch_max, floor(T / g) + 1). */
static void test_batching(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.poisson = 0;
	c.streams = 2;
	c.rate_rps = 20000;     /* 10k per stream: gap 100 us */
	c.requests = 4000;
	c.batch_max = 16;
	const double timeouts[3] = { 50, 350, 5000 };
	const double expect[3] = { 1, 4, 16 };
	for (int k = 0; k < 3; k++) {
		c.batch_timeout_us = timeouts[k];
		struct col_pipe_result r;
		simulate_ok(&c, UNFUSED, 4, &r);
		assert_true(fabs(r.mean_batch - expect[k]) < 1e-9);
		col_pipe_result_release(&r);
	}
	/* Poisson: a larger timeout gives larger batches and longer waits */
	c.poisson = 1;
	double prev_batch = 0, prev_wait = 0;
	for (int k = 0; k < 3; k++) {
		c.batch_timeout_us = timeouts[k];
		struct col_pipe_result r;
		simulate_ok(&c, UNFUSED, 4, &r);
		assert_true(r.mean_batch > prev_batch && r.mean_batch <= c.batch_max);
		assert_true(r.wait_mean_ns > prev_wait);
		prev_batch = r.mean_batch;
		prev_wait = r.wait_mean_ns;
		col_pipe_result_release(&r);
	}
}

/* Imbalanced traffic: stream 0 carries 3x the rate of stream 1, uniform, and
 * both close a batch every 100 us (timeout 80 us): stream 0's batches hold 3
 * requests, stream 1's one, and they alternate. Round-robin binds the big
 * batches to core 0; least-loaded sends each to the less busy core. */
static void test_placement_fairness(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	double w[2] = { 3, 1 };
	c.poisson = 0;
	c.streams = 2;
	c.stream_weight = w;
	c.rate_rps = 40000;     /* 30k and 10k: gaps 33.3 us and 100 us */
	c.requests = 8000;
	c.cores = 2;
	c.batch_max = 64;
	c.batch_timeout_us = 80;
	struct col_pipe_result rr, ll;
	c.least_loaded = 0;
	simulate_ok(&c, UNFUSED, 4, &rr);
	c.least_loaded = 1;
	simulate_ok(&c, UNFUSED, 4, &ll);
	assert_int_equal(rr.stream_n[0], 6000);
	assert_true(fabs(rr.mean_batch - 2.0) < 1e-9);
	/* busy per job: 20 us overhead + b * 40 us: 140 vs 60 us per 100 us */
	assert_true(fabs(rr.core_util[0] / rr.core_util[1] - 140.0 / 60.0) < 0.01);
	double j = (140.0 + 60) * (140 + 60) / (2 * (140.0 * 140 + 60 * 60));
	assert_true(fabs(rr.jain_cores - j) < 0.005);
	assert_true(ll.jain_cores > 0.999);
	assert_true(rr.core_jobs[0] == rr.core_jobs[1]);
	col_pipe_result_release(&rr);
	col_pipe_result_release(&ll);
}

/* Seed 002's mini case: fusion cuts launch overhead (1 launch instead of 4)
 * and traffic (20% less), yet its exposed burst, scaled by the batch and
 * overlapping other cores' bursts, makes the tail worse under load; alone it
 * wins. Why the parameters make sense: the unfused launches stream their
 * operands (double-buffered, 2.5 us of transfer under 10 us of compute, so a
 * 4x contention stretch is still hidden); the fused launch keeps its
 * intermediates in SHARED, leaving no room for a second buffer, so it stages
 * its 800 kB (8 us alone) before computing. 5 us launch overhead and 100 GB/s
 * are typical of an accelerator runtime and its off-chip memory. Checked on
 * three seeds so the result is not one lucky arrival sequence. */
static void test_fusion_burst_contention(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct col_pipe_config c = base_config();
		struct col_pipe_result a, b;
		c.seed = seed * 0x9e3779b97f4a7c15ULL;

		/* 4 streams, heavy load: cores ~75% busy */
		c.rate_rps = 60000;
		simulate_ok(&c, UNFUSED, 4, &a);
		simulate_ok(&c, FUSED, 1, &b);
		print_message("seed %llu heavy: p95 unfused %.1f fused %.1f us\n",
			      (unsigned long long)seed, a.p95_ns / 1e3, b.p95_ns / 1e3);
		assert_true(b.overhead_ns / (double)b.n < 0.5 * a.overhead_ns / (double)a.n);
		assert_true(b.bytes < 0.85 * a.bytes);
		assert_true(a.max_concurrent_bursts >= 3 && b.max_concurrent_bursts >= 3);
		assert_true(b.p95_ns > 1.15 * a.p95_ns);
		assert_true(b.p99_ns > 1.15 * a.p99_ns);
		col_pipe_result_release(&a);
		col_pipe_result_release(&b);

		/* the same load with ample bandwidth: no stretch, fusion wins */
		c.global_bw_gbps = 1e6;
		simulate_ok(&c, UNFUSED, 4, &a);
		simulate_ok(&c, FUSED, 1, &b);
		assert_true(b.p95_ns < a.p95_ns && b.mean_ns < a.mean_ns);
		col_pipe_result_release(&a);
		col_pipe_result_release(&b);
		c.global_bw_gbps = 100;

		/* moderate load: the mean still favours fusion, the tail does not */
		c.rate_rps = 20000;
		simulate_ok(&c, UNFUSED, 4, &a);
		simulate_ok(&c, FUSED, 1, &b);
		print_message("seed %llu moderate: mean %.1f / %.1f, p95 %.1f / %.1f us\n",
			      (unsigned long long)seed, a.mean_ns / 1e3, b.mean_ns / 1e3,
			      a.p95_ns / 1e3, b.p95_ns / 1e3);
		assert_true(b.mean_ns < a.mean_ns);
		assert_true(b.p95_ns > 1.03 * a.p95_ns);
		col_pipe_result_release(&a);
		col_pipe_result_release(&b);

		/* one stream at low load: no overlap, the fused variant is faster */
		c.streams = 1;
		c.rate_rps = 500;
		simulate_ok(&c, UNFUSED, 4, &a);
		simulate_ok(&c, FUSED, 1, &b);
		assert_true(b.max_concurrent_bursts <= 2);
		assert_true(b.p95_ns < 0.97 * a.p95_ns);
		assert_true(b.mean_ns < 0.97 * a.mean_ns);
		col_pipe_result_release(&a);
		col_pipe_result_release(&b);
	}
}

static void test_sweep(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.requests = 4000;
	c.batch_max = 4;
	struct col_pipe_sweep_row *rows = NULL;
	size_t nrows = 0;
	struct opr_error err = { 0 };
	int rc = col_pipe_sweep(&c, UNFUSED, 4, &rows, &nrows, &err);
	if (rc)
		fail_msg("sweep: %s", err.msg);
	assert_int_equal(nrows, 4);
	for (size_t k = 0; k < nrows; k++) {
		assert_int_equal(rows[k].batch, (int)k + 1);
		assert_true(rows[k].mean_batch >= 1 && rows[k].mean_batch <= rows[k].batch);
		assert_true(rows[k].p50_ns <= rows[k].p95_ns && rows[k].p95_ns <= rows[k].p99_ns);
		assert_true(rows[k].throughput_rps > 0);
	}
	assert_true(rows[0].mean_batch == 1.0);
	struct col_pipe_result r;
	c.batch_max = 3;
	simulate_ok(&c, UNFUSED, 4, &r);
	assert_true(rows[2].p95_ns == r.p95_ns && rows[2].wait_mean_ns == r.wait_mean_ns);
	col_pipe_result_release(&r);
	free(rows);
}

/* The profile's default traffic, 20000 requests x 4 launches: fast enough
 * to run for every variant and every sweep row. */
static void test_speed_profile_scale(void **state)
{
	(void)state;
	struct col_pipe_config c = base_config();
	c.rate_rps = 2500;
	c.batch_timeout_us = 200;
	struct col_pipe_result r;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	simulate_ok(&c, UNFUSED, 4, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* informational only: speed is judged by make bench, never by a test */
	print_message("20000 requests x 4 launches: %.1f ms\n", ms);
	assert_true(r.throughput_rps > 2000 && r.throughput_rps < 3000);
	col_pipe_result_release(&r);
}

/* The profile maps onto the configuration; both variants of a block share
 * the seed (same arrivals), other blocks do not. */
static void test_config_from_profile(void **state)
{
	(void)state;
	struct col_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->seed = 77;
	p->traffic.streams = 3;
	snprintf(p->traffic.process, sizeof p->traffic.process, "uniform");
	p->traffic.rate_rps = 1234;
	p->traffic.batch_max = 5;
	p->traffic.batch_timeout_us = 150;
	snprintf(p->traffic.placement, sizeof p->traffic.placement, "round-robin");
	p->traffic.requests = 999;
	p->envelope.cores = 6;
	p->envelope.global_bw_gbps = 321;
	p->envelope.dma_engines = 2;
	snprintf(p->blocks[0].name, sizeof p->blocks[0].name, "blk-a");
	snprintf(p->blocks[1].name, sizeof p->blocks[1].name, "blk-b");
	p->blocks[0].traffic = p->traffic;
	p->blocks[1].traffic = p->traffic;
	struct col_pipe_config a, a2, b;
	memset(&a, 0x5a, sizeof a);
	col_pipe_config_from_profile(p, &p->blocks[0], &a);
	col_pipe_config_from_profile(p, &p->blocks[0], &a2);
	col_pipe_config_from_profile(p, &p->blocks[1], &b);
	assert_int_equal(a.streams, 3);
	assert_int_equal(a.poisson, 0);
	assert_true(a.rate_rps == 1234 && a.batch_timeout_us == 150);
	assert_int_equal(a.batch_max, 5);
	assert_int_equal(a.least_loaded, 0);
	assert_int_equal(a.requests, 999);
	assert_int_equal(a.cores, 6);
	/* a core's DMA peak: its engines at the fair per-core share */
	assert_true(a.global_bw_gbps == 321 && fabs(a.dma_peak_gbps - 321.0 * 2 / 6) < 1e-9);
	assert_null(a.stream_weight);
	assert_true(a.seed == a2.seed && a.seed != b.seed);
	snprintf(p->traffic.process, sizeof p->traffic.process, "poisson");
	snprintf(p->traffic.placement, sizeof p->traffic.placement, "least-loaded");
	p->blocks[0].traffic = p->traffic;
	p->blocks[0].traffic.rate_rps = 4321; /* a block's own traffic wins */
	col_pipe_config_from_profile(p, &p->blocks[0], &a);
	assert_true(a.rate_rps == 4321);
	assert_int_equal(a.poisson, 1);
	assert_int_equal(a.least_loaded, 1);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rejects_bad_inputs),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_statistics),
		cmocka_unit_test(test_little_law),
		cmocka_unit_test(test_work_conservation),
		cmocka_unit_test(test_utilisation_bounds),
		cmocka_unit_test(test_md1),
		cmocka_unit_test(test_batching),
		cmocka_unit_test(test_placement_fairness),
		cmocka_unit_test(test_fusion_burst_contention),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_speed_profile_scale),
		cmocka_unit_test(test_config_from_profile),
	};
	return cmocka_run_group_tests_name("pipeline", tests, NULL, NULL);
}
