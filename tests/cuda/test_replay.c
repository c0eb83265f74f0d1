/* tests/cuda/test_replay.c: the pipeline on the device (ops/cuda/replay.cu):
 * each launch's device time of one run, and the replay of a job trace on
 * CUDA streams (jobs on one stream run one after another, jobs issued apart
 * start no earlier than issued and take what a run takes, a trace from the
 * simulation replays every request). Built and run by `make test-cuda`
 * only; without a GPU every test skips. */
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
#include "../../collect/pipeline.h"
#include "../../ops/cuda/cuda.h"

#include "../skip.h"
#include "gpu.h"

/* permute+silu bf16 [64, 32768] (1,0), unfused: two kernel launches */
static struct ops_instance *permute_inst(int fused)
{
	struct ops_workload w;
	struct ops_plan_eval e;
	struct ops_envelope env;
	struct opr_error err = { 0 };
	struct ops_instance *inst = NULL;
	memset(&w, 0, sizeof w);
	w.group = OPS_G_PERMUTE_ACT;
	w.act = OPS_ACT_SILU;
	w.dtype = OPS_BF16;
	w.tensor.rank = 2;
	w.tensor.dims[0] = 64;
	w.tensor.dims[1] = 32768;
	w.tensor.perm[0] = 1;
	ops_cuda_envelope(cu, &env);
	struct ops_plan p;
	memset(&p, 0, sizeof p);
	p.fused = fused;
	p.strategy = OPS_STRAT_DIRECT;
	p.double_buffer = 1;
	if (ops_plan_evaluate(&env, &w, &p, &e, &err) < 0)
		fail_msg("plan: %s", err.msg);
	if (ops_instance_new(&w, &p, 20261202, "replay", &inst, &err) < 0)
		fail_msg("instance: %s", err.msg);
	return inst;
}

static void test_launch_times(void **state)
{
	(void)state;
	NEED_GPU();
	struct opr_error err = { 0 };
	for (int fused = 0; fused < 2; fused++) {
		struct ops_instance *inst = permute_inst(fused);
		struct ops_cuda_inst *gi = NULL;
		double ns[8], whole[15];
		int n = 0;
		if (ops_cuda_inst_new(cu, inst, &gi, &err) < 0 ||
		    ops_cuda_inst_run_checked(gi, &err) < 0)
			fail_msg("run: %s", err.msg);
		if (ops_cuda_inst_launch_times(gi, cu, 15, ns, 8, &n, &err) < 0)
			fail_msg("launch times: %s", err.msg);
		assert_int_equal(n, ops_cuda_inst_launches(gi));
		assert_int_equal(n, fused ? 1 : 2);
		double sum = 0;
		for (int i = 0; i < n; i++) {
			assert_true(ns[i] > 0 && isfinite(ns[i]));
			sum += ns[i];
		}
		/* the launches one by one against the whole run between two events */
		if (ops_cuda_time(cu, &gi, 1, 15, 1, whole, &err) < 0)
			fail_msg("time: %s", err.msg);
		double lo = whole[0];
		for (int i = 1; i < 15; i++)
			lo = fmin(lo, whole[i]);
		print_message("%s: launches %.1f us in all, the run %.1f us (min of 15)\n",
			      fused ? "fused" : "unfused", sum / 1e3, lo / 1e3);
		assert_true(sum > 0.5 * lo && sum < 3.0 * lo + 20000);
		ops_cuda_inst_free(gi);
		ops_instance_free(inst);
	}
}

static void test_replay_streams(void **state)
{
	(void)state;
	NEED_GPU();
	struct opr_error err = { 0 };
	struct ops_instance *inst = permute_inst(1);
	struct ops_cuda_inst *gi = NULL;
	double one[15];
	if (ops_cuda_inst_new(cu, inst, &gi, &err) < 0 || ops_cuda_time(cu, &gi, 1, 15, 0, one, &err) < 0)
		fail_msg("time: %s", err.msg);
	double t1 = one[0];
	for (int i = 1; i < 15; i++)
		t1 = fmin(t1, one[i]);
	ops_cuda_inst_free(gi);
	/* a burst of 12 jobs at t = 0 on one stream, then 12 jobs 1 ms apart
	 * alternating over two streams, of 1..3 runs each */
	enum { NB = 12, NS = 12, NJ = NB + NS };
	struct ops_cuda_replay_job jobs[NJ];
	double start[NJ], end[NJ];
	for (int j = 0; j < NB; j++)
		jobs[j] = (struct ops_cuda_replay_job){ 0.0, 0, 1 + j % 3 };
	for (int j = 0; j < NS; j++)
		jobs[NB + j] = (struct ops_cuda_replay_job){ 5e6 + 1e6 * j, j % 2, 1 + j % 3 };
	if (ops_cuda_replay(cu, inst, 2, jobs, NJ, start, end, &err) < 0)
		fail_msg("replay: %s", err.msg);
	for (int j = 0; j < NJ; j++) {
		assert_true(isfinite(start[j]) && isfinite(end[j]));
		assert_true(end[j] > start[j]);
		/* the jobs' runs take what runs take (warm L2: at least half of a
		 * warm run each, at most a generous bound) */
		double d = end[j] - start[j];
		assert_true(d > 0.5 * t1 * jobs[j].runs);
		assert_true(d < 20.0 * t1 * jobs[j].runs + 200000);
	}
	/* the burst is served in order on its stream, one job after another */
	for (int j = 1; j < NB; j++)
		assert_true(start[j] >= end[j - 1] - 1000);
	/* spaced jobs start no earlier than issued (the reference event is
	 * recorded before the host's clock starts: a few us of slack) */
	for (int j = NB; j < NJ; j++)
		assert_true(start[j] >= jobs[j].issue_ns - 50000);
	/* a job issued 1 ms after the previous one, on an idle GPU, waits
	 * little: under a millisecond after its issue time */
	for (int j = NB + 1; j < NJ; j++)
		assert_true(start[j] < jobs[j].issue_ns + 1e6);
	print_message("one run %.1f us; burst of %d jobs done at %.1f us\n", t1 / 1e3, NB,
		      end[NB - 1] / 1e3);
	ops_instance_free(inst);
}

/* A trace from the simulation, replayed: every request of the replayed jobs
 * gets a latency and the per-stream order holds. */
static void test_replay_trace(void **state)
{
	(void)state;
	NEED_GPU();
	struct opr_error err = { 0 };
	struct col_pipe_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.seed = 17;
	cfg.streams = 3;
	cfg.poisson = 1;
	cfg.rate_rps = 5000;
	cfg.batch_max = 4;
	cfg.batch_timeout_us = 100;
	cfg.least_loaded = 1;
	cfg.requests = 600;
	cfg.global_bw_gbps = 4000;
	const double ns[1] = { 60000 };
	struct col_pipe_launch l[1];
	col_pipe_device_launches(ns, 1, NULL, 0, l);
	col_pipe_device_config(&cfg);
	struct col_pipe_result r;
	if (col_pipe_simulate(&cfg, l, 1, &r, &err))
		fail_msg("simulate: %s", err.msg);
	struct ops_cuda_replay_job *jobs = calloc((size_t)r.jobs, sizeof *jobs);
	double *start = calloc((size_t)r.jobs, sizeof *start), *end = calloc((size_t)r.jobs, sizeof *end);
	assert_non_null(jobs);
	int64_t total = 0;
	for (int64_t j = 0; j < r.jobs; j++) {
		jobs[j] = (struct ops_cuda_replay_job){ r.job_close_ns[j], r.job_stream[j], r.job_b[j] };
		total += r.job_b[j];
		if (j)
			assert_true(r.job_close_ns[j] >= r.job_close_ns[j - 1]);
	}
	assert_int_equal(total, r.n);
	struct ops_instance *inst = permute_inst(1);
	if (ops_cuda_replay(cu, inst, cfg.streams, jobs, (size_t)r.jobs, start, end, &err) < 0)
		fail_msg("replay: %s", err.msg);
	for (int64_t q = 0; q < r.n; q++) {
		int64_t j = r.job_of[q];
		assert_true(j >= 0 && j < r.jobs);
		/* a request is served after it arrived */
		assert_true(end[j] > r.arrival_ns[q]);
	}
	for (int64_t j = 0; j < r.jobs; j++)
		for (int64_t k = j + 1; k < r.jobs; k++)
			if (r.job_stream[k] == r.job_stream[j]) {
				assert_true(start[k] >= end[j] - 1000);
				break;
			}
	free(jobs);
	free(start);
	free(end);
	col_pipe_result_release(&r);
	ops_instance_free(inst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch_times),
		cmocka_unit_test(test_replay_streams),
		cmocka_unit_test(test_replay_trace),
	};
	return cmocka_run_group_tests_name("cuda-replay", tests, group_setup, group_teardown);
}
