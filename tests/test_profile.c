/* tests/test_profile.c: the profile and envelope loader: the shipped
 * profiles, seeded random profiles read back field by field, the bad-input
 * corpus (fixtures/bad/EXPECT: exact line:col and message), size limits and
 * unreadable paths. Run from the repository root. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../collect/profile.h"

/* ---- helpers --------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void) /* SplitMix64 */
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int64_t rnd_in(int64_t lo, int64_t hi) /* inclusive */
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static void poison_err(struct opr_error *e)
{
	memset(e, 0x5A, sizeof *e);
	e->file[sizeof e->file - 1] = '\0';
	e->msg[sizeof e->msg - 1] = '\0';
}

static char tmpdir[64];

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test_profile.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
	assert_int_equal(fclose(fp), 0);
}

static const char *const owners_yaml =
	"owners:\n"
	"  - {role: kernel-performance-owner, name: k@example.org, key: keys/k.pub}\n";

static const char *const envelope_yaml =
	"clock_ghz: 1.5\ncores: 4\n"
	"global: {bandwidth_gbps: 100, capacity_gib: 8}\n"
	"shared: {capacity_kib: 128, bandwidth_gbps: 1000}\n"
	"local: {capacity_kib: 32}\n"
	"compute_tops: {fp32: 2, fp16: 16, bf16: 16, int8: 32}\n";

/* ---- the shipped profiles ------------------------------------------------- */

static void test_default_profile(void **state)
{
	struct col_profile *p = NULL;
	struct opr_error err;
	char d[256];
	(void)state;

	poison_err(&err);
	assert_int_equal(col_profile_load("fixtures/profiles/default.yaml", NULL, &p, &err), 0);
	assert_non_null(p);
	assert_string_equal(p->name, "resnet-int8-review");
	assert_int_equal(p->version, 1);
	assert_true(p->seed == 42);
	assert_string_equal(p->model_revision, "r2026.11.2");
	assert_string_equal(p->compiler, "tilec 3.2.1");
	assert_string_equal(p->runtime, "npurt 1.8.0");
	assert_string_equal(p->firmware, "fw 2026.10");
	assert_int_equal(p->envelope.cuda_executor, 0); /* the host runs its plans */
	assert_non_null(strstr(p->text, "resnet-int8-review"));
	assert_int_equal(strlen(p->text), p->text_len);

	/* the envelope, from fixtures/envelopes/npu-a.yaml */
	const struct ops_envelope *e = &p->envelope;
	assert_non_null(strstr(p->envelope_source, "envelopes/npu-a.yaml"));
	assert_string_equal(e->name, "npu-a");
	assert_string_equal(e->power_mode, "nominal");
	assert_true(e->clock_scale == 1.0 && e->clock_ghz == 1.2);
	assert_int_equal(e->cores, 8);
	assert_true(e->global_bw_gbps == 900 && e->global_capacity_gib == 32);
	assert_true(e->shared_capacity_kib == 256 && e->shared_bw_gbps == 4096);
	assert_true(e->local_capacity_kib == 64);
	assert_int_equal(e->dma_max_last_dim, 65535);
	assert_true(e->dma_setup_ns == 150);
	assert_int_equal(e->dma_engines, 2);
	assert_int_equal(e->dma_serial, 0); /* default: DMA beside compute */
	assert_true(e->tops[OPS_F32] == 16 && e->tops[OPS_F16] == 128 &&
		    e->tops[OPS_BF16] == 128 && e->tops[OPS_S8] == 256 && e->tops[OPS_U8] == 256);
	assert_true(e->launch_overhead_us == 3.5);

	assert_true(p->sla.p95_us == 900 && p->sla.p99_us == 1500);
	assert_true(p->sla.min_throughput_rps == 2000 && p->sla.max_regression == 0.05);
	assert_true(p->precision.fp32_max_rel_l2 == 1e-5 && p->precision.fp16_max_rel_l2 == 2e-3);
	assert_true(p->precision.bf16_max_rel_l2 == 1.6e-2 && p->precision.int8_max_abs_lsb == 1);
	assert_int_equal(p->traffic.streams, 4);
	assert_string_equal(p->traffic.process, "poisson");
	assert_true(p->traffic.rate_rps == 2500 && p->traffic.batch_timeout_us == 200);
	assert_int_equal(p->traffic.batch_max, 8);
	assert_string_equal(p->traffic.placement, "least-loaded");
	assert_int_equal(p->traffic.requests, 20000);
	assert_true(p->budget.seconds == 40);
	assert_int_equal(p->budget.min_samples, 50);
	assert_int_equal(p->budget.max_samples, 2000);
	assert_true(p->budget.memory_gib > 0);

	assert_int_equal(p->nowners, 3);
	assert_string_equal(p->owners[0].role, "ml-compiler-engineer");
	assert_string_equal(p->owners[1].role, "kernel-performance-owner");
	assert_string_equal(p->owners[2].role, "runtime-systems-engineer");
	assert_string_equal(p->owners[0].key, "../owners/compiler.pub");
	assert_string_equal(p->owners[2].name, "runtime-owner@example.org");
	assert_int_equal(p->nevents, 0);

	assert_int_equal(p->nblocks, 4);
	/* the review across runs: its primary metric and rationale, no history;
	 * every block's shape is synthetic (shape_origin is not given) */
	assert_int_equal(p->primary.given, 1);
	assert_int_equal(p->primary.block, 0);
	assert_int_equal(p->primary.variant, 1);
	assert_int_equal(p->primary.metric, COL_M_P95);
	assert_string_equal(p->history, "");
	assert_int_equal(p->history_window, 20);
	assert_non_null(strstr(p->rationale, "intermediates stay in SHARED;"));
	for (int i = 0; i < p->nblocks; i++) {
		assert_int_equal(p->blocks[i].shape_production, 0);
		assert_string_equal(p->blocks[i].shape_source, "synthetic");
	}
	const struct col_block *b = &p->blocks[0];
	assert_string_equal(b->name, "resnet-stage2-conv");
	assert_int_equal(b->work.group, OPS_G_CONV_BIAS_ACT);
	assert_int_equal(b->work.act, OPS_ACT_RELU);
	assert_int_equal(b->work.dtype, OPS_F16);
	assert_int_equal(b->work.conv.c, 64);
	assert_int_equal(b->work.conv.h, 56);
	assert_int_equal(b->work.conv.pad_w, 1);
	assert_int_equal(b->work.conv.stride_h, 1);
	assert_int_equal(b->work.conv.dil_w, 1);
	assert_int_equal(b->work.conv.groups, 1);
	assert_int_equal(b->line, 44);
	assert_int_equal(b->col, 5);
	assert_int_equal(b->baseline.fused, 0);
	assert_int_equal(b->baseline.plan_auto, 1);
	assert_int_equal(b->candidate.fused, 1);
	assert_int_equal(b->candidate.plan_auto, 0);
	assert_int_equal(b->candidate.plan.fused, 1);
	assert_int_equal(b->candidate.plan.strategy, OPS_STRAT_DIRECT);
	const char *const *names = ops_plan_params(b->work.group);
	assert_int_equal(b->candidate.plan.double_buffer, 0);
	/* the block's traffic overrides the rate only */
	assert_true(b->traffic.rate_rps == 40000 && p->traffic.rate_rps == 2500);
	assert_int_equal(b->traffic.streams, 4);
	assert_int_equal(b->traffic.batch_max, 8);
	assert_true(p->blocks[1].traffic.rate_rps == 2500);
	const int64_t want[] = {32, 8, 56, 32};
	const char *const want_names[] = {"tile_k", "tile_oh", "tile_ow", "tile_c"};
	for (int i = 0; i < 4; i++)
		for (int j = 0; names[j]; j++)
			if (strcmp(names[j], want_names[i]) == 0)
				assert_int_equal(b->candidate.plan.p[j], want[i]);
	memset(d, 'X', sizeof d);
	col_workload_describe(&b->work, d, sizeof d);
	assert_string_equal(d, "conv2d+bias+activation fp16 n1 c64 h56 w56 k64 r3 s3 stride1 pad1 relu");

	b = &p->blocks[1];
	assert_int_equal(b->work.group, OPS_G_QGEMM_DQ_BIAS_ACT);
	assert_int_equal(b->work.act, OPS_ACT_GELU_TANH);
	assert_int_equal(b->work.dtype, OPS_S8);
	assert_int_equal(b->work.gemm.m, 8);
	assert_int_equal(b->work.gemm.n, 64);
	assert_int_equal(b->work.gemm.k, 1048576);
	assert_int_equal(b->work.quant.a, OPS_U8);
	assert_int_equal(b->work.quant.a_zero_point, 3);
	assert_int_equal(b->work.quant.b_per_channel, 1);
	assert_int_equal(b->work.quant.out, OPS_F32);
	assert_true(b->work.quant.a_scale > 0);

	b = &p->blocks[2];
	assert_int_equal(b->work.group, OPS_G_PERMUTE_ACT);
	assert_int_equal(b->work.dtype, OPS_BF16);
	assert_int_equal(b->work.tensor.rank, 2);
	assert_int_equal(b->work.tensor.dims[1], 152064);
	assert_int_equal(b->work.tensor.perm[0], 1);

	b = &p->blocks[3];
	assert_string_equal(b->name, "attention-permute");
	assert_int_equal(b->work.act, OPS_ACT_SILU);
	assert_int_equal(b->work.tensor.rank, 4);
	const int64_t dims[] = {8, 128, 32, 128};
	const int perm[] = {0, 2, 1, 3};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(b->work.tensor.dims[i], dims[i]);
		assert_int_equal(b->work.tensor.perm[i], perm[i]);
	}
	col_workload_describe(&b->work, d, sizeof d);
	assert_string_equal(d, "permute+activation fp16 dims[8,128,32,128] perm(0,2,1,3) silu");
	col_profile_free(p);
	col_profile_free(NULL);
}

static void test_quick_profile(void **state)
{
	struct col_profile *p = NULL;
	struct opr_error err;
	(void)state;

	poison_err(&err);
	assert_int_equal(col_profile_load("fixtures/profiles/quick.yaml", NULL, &p, &err), 0);
	assert_true(p->seed == 7);
	assert_int_equal(p->nblocks, 5);
	assert_int_equal(p->traffic.requests, 2000);
	assert_string_equal(p->traffic.placement, "round-robin");
	assert_true(p->budget.seconds == 1.5);
	assert_int_equal(p->budget.min_samples, 20);
	assert_int_equal(p->budget.max_samples, 200);
	/* defaults where the profile is silent */
	assert_true(p->sla.max_regression == 0.05);
	assert_true(p->precision.fp16_max_rel_l2 == 2e-3);
	const int groups[] = {OPS_G_CONV_BIAS_ACT, OPS_G_QGEMM_DQ_BIAS_ACT, OPS_G_PERMUTE_ACT,
			      OPS_G_PERMUTE_ACT};
	for (int i = 0; i < 4; i++)
		assert_int_equal(p->blocks[i].work.group, groups[i]);
	assert_int_equal(p->blocks[0].work.conv.k, 8);
	assert_int_equal(p->blocks[0].work.conv.pad_h, 1);
	assert_int_equal(p->blocks[0].candidate.plan_auto, 0);
	assert_int_equal(p->blocks[0].candidate.plan.strategy, OPS_STRAT_DIRECT);
	assert_int_equal(p->blocks[1].work.gemm.k, 4096);
	assert_int_equal(p->blocks[2].work.tensor.dims[1], 70000);
	col_profile_free(p);
	/* device: cuda: the planner is told its plans run on the GPU (no
	 * winograd there) */
	p = NULL;
	assert_int_equal(col_profile_load("fixtures/profiles/quick-h200.yaml", NULL, &p, &err), 0);
	assert_int_equal(p->device.kind, COL_DEV_CUDA);
	assert_int_equal(p->envelope.cuda_executor, 1);
	col_profile_free(p);
}

static void test_shipped_envelopes(void **state)
{
	struct ops_envelope env;
	struct opr_error err;
	(void)state;

	memset(&env, 0xA5, sizeof env);
	poison_err(&err);
	assert_int_equal(col_envelope_load("fixtures/envelopes/npu-small.yaml", &env, &err), 0);
	assert_string_equal(env.name, "npu-small");
	assert_int_equal(env.cores, 2);
	assert_true(env.shared_capacity_kib == 64);
	assert_string_equal(env.power_mode, "low");
	assert_true(env.clock_scale == 0.7);
	assert_true(env.global_bw_gbps < 900);
	assert_true(env.tops[OPS_S32] == env.tops[OPS_S8]);
	/* no GLOBAL bandwidth per direction: both unset, the round trip prices it */
	assert_true(env.global_read_bw_gbps == 0 && env.global_write_bw_gbps == 0);
	assert_int_equal(col_envelope_load("fixtures/envelopes/h200.yaml", &env, &err), 0);
	assert_true(env.global_read_bw_gbps == 0 && env.global_write_bw_gbps == 0);
	/* an older host calibration, written before the directions: it loads,
	 * with both unset */
	assert_int_equal(col_envelope_load("fixtures/envelopes/host-example.yaml", &env, &err), 0);
	assert_true(env.global_read_bw_gbps == 0 && env.global_write_bw_gbps == 0);
	/* per direction, as `opreview calibrate` writes them now; one alone */
	char path[128], text[512];
	snprintf(path, sizeof path, "%s/dir.yaml", tmpdir);
	snprintf(text, sizeof text, "%s", envelope_yaml);
	char *g = strstr(text, "capacity_gib");
	assert_non_null(g);
	memmove(g + 31, g, strlen(g) + 1);
	memcpy(g, "read_gbps: 12.5, write_gbps: 7,", 31);
	write_file(path, text);
	assert_int_equal(col_envelope_load(path, &env, &err), 0);
	assert_true(env.global_bw_gbps == 100 && env.global_read_bw_gbps == 12.5 &&
		    env.global_write_bw_gbps == 7);
	memcpy(g, "read_gbps: 12.5,               ", 31);
	write_file(path, text);
	assert_int_equal(col_envelope_load(path, &env, &err), 0);
	assert_true(env.global_read_bw_gbps == 12.5 && env.global_write_bw_gbps == 0);
	for (int f = 0; f < OPS_NKCLASSES; f++)
		assert_true(env.one_pass_share[f] == 0);
	/* one_pass shares, as calibrate writes the qgemm's; 1 is allowed */
	char text2[600];
	snprintf(text2, sizeof text2, "%sone_pass: {qgemm: 0.84, elementwise: 1}\n", text);
	write_file(path, text2);
	assert_int_equal(col_envelope_load(path, &env, &err), 0);
	assert_true(env.one_pass_share[OPS_KC_QGEMM] == 0.84 &&
		    env.one_pass_share[OPS_KC_ELEMENTWISE] == 1 && env.one_pass_share[OPS_KC_CONV] == 0);
}

/* ---- seeded random profiles read back ------------------------------------- */

static void test_random_roundtrip(void **state)
{
	static const char *const dts[] = {"fp32", "fp16", "bf16"};
	static const enum ops_dtype dtv[] = {OPS_F32, OPS_F16, OPS_BF16};
	static const char *const acts[] = {"relu", "gelu", "gelu-tanh", "silu", "sigmoid", "tanh"};
	static const enum ops_act actv[] = {OPS_ACT_RELU, OPS_ACT_GELU_ERF, OPS_ACT_GELU_TANH,
		OPS_ACT_SILU, OPS_ACT_SIGMOID, OPS_ACT_TANH};
	char path[128], envdir[128], envpath[160];
	char *text = malloc(16384);
	(void)state;
	assert_non_null(text);

	rng_state = 20261102;
	snprintf(envdir, sizeof envdir, "%s/envs", tmpdir);
	assert_int_equal(mkdir(envdir, 0700), 0);
	for (int it = 0; it < 60; it++) {
		uint64_t seed = rnd();
		int64_t n = rnd_in(1, 4), c = rnd_in(1, 64) * 2, h = rnd_in(8, 300);
		int64_t w = rnd_in(8, 300), k = rnd_in(1, 512), r = rnd_in(1, 7), s = rnd_in(1, 7);
		int64_t sh = rnd_in(1, 3), sw = rnd_in(1, 3), ph = rnd_in(0, 3), dil = rnd_in(1, 2);
		int64_t m = rnd_in(1, 64), gn = rnd_in(1, 4096), gk = rnd_in(1, 16777216);
		int zp = (int)rnd_in(0, 255), cores = (int)rnd_in(1, 64), rank = (int)rnd_in(1, 8);
		int di = (int)rnd_in(0, 2), ai = (int)rnd_in(0, 5);
		double bw = (double)rnd_in(1, 100000) / 8.0, p95 = (double)rnd_in(1, 100000);
		int64_t dims[8];
		int perm[8];
		for (int i = 0; i < rank; i++) {
			dims[i] = rnd_in(1, 64);
			perm[i] = i;
		}
		for (int i = rank - 1; i > 0; i--) { /* Fisher-Yates */
			int j = (int)rnd_in(0, i), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		char dl[128] = "", pl[64] = "";
		size_t du = 0, pu = 0;
		for (int i = 0; i < rank; i++) {
			du += (size_t)snprintf(dl + du, sizeof dl - du, "%s%lld", i ? ", " : "", (long long)dims[i]);
			pu += (size_t)snprintf(pl + pu, sizeof pl - pu, "%s%d", i ? ", " : "", perm[i]);
		}
		int inline_env = it % 2;
		snprintf(envpath, sizeof envpath, "%s/dev%d.yaml", envdir, it);
		char env[600];
		snprintf(env, sizeof env, "clock_ghz: 1.5\ncores: %d\n"
			 "global: {bandwidth_gbps: %.17g, capacity_gib: 8}\n"
			 "shared: {capacity_kib: 128, bandwidth_gbps: 1000}\nlocal: {capacity_kib: 32}\n"
			 "dma: {max_last_dim: %d}\n"
			 "compute_tops: {fp32: 2, fp16: 16, bf16: 16, int8: 32}\n",
			 cores, bw, 1000 + it);
		if (!inline_env)
			write_file(envpath, env);
		char envblock[800];
		if (inline_env) {
			/* indent the envelope under "envelope:" */
			size_t u = (size_t)snprintf(envblock, sizeof envblock, "envelope:\n  ");
			for (const char *q = env; *q && u + 4 < sizeof envblock; q++) {
				envblock[u++] = *q;
				if (*q == '\n' && q[1])
					envblock[u++] = ' ', envblock[u++] = ' ';
			}
			envblock[u] = '\0';
		} else {
			snprintf(envblock, sizeof envblock, "envelope: dev%d\n", it);
		}
		snprintf(text, 16384,
			 "version: 1\nname: rnd-%d\nseed: %llu\n%s"
			 "sla: {p95_us: %.17g, p99_us: %.17g, min_throughput_rps: 10}\n%s"
			 "blocks:\n"
			 "  - name: c%d\n    group: conv2d+bias+activation\n    activation: %s\n"
			 "    dtype: %s\n    shape: {n: %lld, c: %lld, h: %lld, w: %lld, k: %lld, r: %lld,"
			 " s: %lld, stride_h: %lld, stride_w: %lld, pad: %lld, dilation: %lld, groups: 2}\n"
			 "  - name: q%d\n    group: qgemm\n    dtype: int8\n"
			 "    shape: {m: %lld, n: %lld, k: %lld}\n"
			 "    quant: {a: u8, a_zero_point: %d, b_scales: per-channel, out: int8, out_zero_point: -%d}\n"
			 "    candidate: {fusion: none, plan: {split_k: %d, double_buffer: false}}\n"
			 "  - name: p%d\n    group: permute\n    dtype: %s\n    shape: {dims: [%s], perm: [%s]}\n",
			 it, (unsigned long long)seed, envblock, p95, p95 * 2, owners_yaml, it, acts[ai],
			 dts[di], (long long)n, (long long)c, (long long)(h + 20), (long long)(w + 20),
			 (long long)(k * 2), (long long)r, (long long)s, (long long)sh, (long long)sw,
			 (long long)ph, (long long)dil, it, (long long)m, (long long)gn, (long long)gk, zp,
			 zp / 2, it + 1, it, dts[di], dl, pl);
		snprintf(path, sizeof path, "%s/profiles/p.yaml", tmpdir);
		char pdir[128];
		snprintf(pdir, sizeof pdir, "%s/profiles", tmpdir);
		mkdir(pdir, 0700);
		write_file(path, text);

		struct col_profile *p = NULL;
		struct opr_error err;
		poison_err(&err);
		int rc = col_profile_load(path, envdir, &p, &err);
		if (rc)
			fail_msg("iteration %d: %s:%d:%d: %s\n%s", it, err.file, err.line, err.col,
				 err.msg, text);
		assert_true(p->seed == seed);
		assert_int_equal(p->envelope.cores, cores);
		assert_true(p->envelope.global_bw_gbps == bw);
		assert_int_equal(p->envelope.dma_max_last_dim, 1000 + it);
		assert_int_equal(p->envelope.dma_engines, 1); /* default */
		assert_string_equal(p->envelope_source, inline_env ? "inline" : envpath);
		assert_true(p->sla.p95_us == p95 && p->sla.p99_us == p95 * 2);
		assert_int_equal(p->nblocks, 3);
		const struct ops_conv_shape *cs = &p->blocks[0].work.conv;
		assert_int_equal(p->blocks[0].work.act, actv[ai]);
		assert_int_equal(p->blocks[0].work.dtype, dtv[di]);
		assert_int_equal(cs->n, n);
		assert_int_equal(cs->c, c);
		assert_int_equal(cs->h, h + 20);
		assert_int_equal(cs->w, w + 20);
		assert_int_equal(cs->k, k * 2);
		assert_int_equal(cs->r, r);
		assert_int_equal(cs->s, s);
		assert_int_equal(cs->stride_h, sh);
		assert_int_equal(cs->stride_w, sw);
		assert_int_equal(cs->pad_h, ph);
		assert_int_equal(cs->pad_w, ph);
		assert_int_equal(cs->dil_h, dil);
		assert_int_equal(cs->dil_w, dil);
		assert_int_equal(cs->groups, 2);
		const struct col_block *q = &p->blocks[1];
		assert_int_equal(q->work.group, OPS_G_QGEMM);
		assert_int_equal(q->work.gemm.m, m);
		assert_int_equal(q->work.gemm.n, gn);
		assert_int_equal(q->work.gemm.k, gk);
		assert_int_equal(q->work.quant.a_zero_point, zp);
		assert_int_equal(q->work.quant.out, OPS_S8);
		assert_int_equal(q->work.quant.out_zero_point, -(zp / 2));
		assert_int_equal(q->work.act, OPS_ACT_NONE);
		assert_int_equal(q->candidate.plan_auto, 0);
		assert_int_equal(q->candidate.fused, 0);
		assert_int_equal(q->candidate.plan.split_k, it + 1);
		assert_int_equal(q->candidate.plan.double_buffer, 0);
		const struct ops_tensor_shape *ts = &p->blocks[2].work.tensor;
		assert_int_equal(ts->rank, rank);
		for (int i = 0; i < rank; i++) {
			assert_int_equal(ts->dims[i], dims[i]);
			assert_int_equal(ts->perm[i], perm[i]);
		}
		char d[256];
		memset(d, 'X', sizeof d);
		col_workload_describe(&p->blocks[1].work, d, sizeof d);
		char wantd[256];
		snprintf(wantd, sizeof wantd, "qgemm int8 m%lld n%lld k%lld a=u8 zp%d per-channel out=int8",
			 (long long)m, (long long)gn, (long long)gk, zp);
		assert_string_equal(d, wantd);
		/* a short buffer is cut, never overrun */
		memset(d, 'X', sizeof d);
		col_workload_describe(&p->blocks[0].work, d, 12);
		assert_int_equal(strlen(d), 11);
		assert_int_equal(d[12], 'X');
		col_profile_free(p);
	}
	free(text);
}

/* ---- the bad-input corpus ------------------------------------------------- */

static void test_bad_corpus(void **state)
{
	FILE *fp = fopen("fixtures/bad/EXPECT", "r");
	char line[1024];
	int count = 0;
	(void)state;

	assert_non_null(fp);
	while (fgets(line, sizeof line, fp)) {
		char name[128], path[256];
		int l, c, used = 0;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		assert_int_equal(sscanf(line, "%127s %d:%d %n", name, &l, &c, &used), 3);
		const char *want = line + used;
		assert_true(strlen(want) > 3);
		snprintf(path, sizeof path, "fixtures/bad/%s", name);

		struct opr_error err;
		struct col_profile *p = (struct col_profile *)&err; /* poison: must become NULL */
		struct ops_envelope env;
		int rc;
		poison_err(&err);
		if (strncmp(name, "env-", 4) == 0) {
			rc = col_envelope_load(path, &env, &err);
		} else {
			rc = col_profile_load(path, NULL, &p, &err);
			assert_null(p);
		}
		if (rc != OPR_EINPUT || err.code != OPR_EINPUT || err.line != l || err.col != c ||
		    !strstr(err.msg, want) || strcmp(err.file, path) != 0)
			fail_msg("%s: got rc %d %s:%d:%d: %s; want %d:%d: %s", name, rc, err.file,
				 err.line, err.col, err.msg, l, c, want);
		assert_null(strchr(err.msg, '\n'));
		count++;
	}
	fclose(fp);
	assert_true(count >= 45);

	/* every file of the corpus has an expectation */
	FILE *ls = popen("ls fixtures/bad", "r");
	assert_non_null(ls);
	int files = 0;
	while (fgets(line, sizeof line, ls))
		if (strstr(line, ".yaml"))
			files++;
	pclose(ls);
	assert_int_equal(files, count);
}

/* ---- size limits and unreadable paths ------------------------------------ */

/* A valid profile padded with a trailing comment to exactly size bytes. */
static void write_padded(const char *path, size_t size)
{
	char head[1024];
	int n = snprintf(head, sizeof head,
			 "version: 1\nname: big\nseed: 3\nenvelope:\n  %s"
			 "sla: {p95_us: 1, p99_us: 2, min_throughput_rps: 3}\n%s"
			 "blocks:\n  - {name: a, group: activation, activation: tanh, dtype: fp32,"
			 " shape: {dims: [3]}}\n#",
			 "clock_ghz: 1.5\n  cores: 4\n  global: {bandwidth_gbps: 100, capacity_gib: 8}\n"
			 "  shared: {capacity_kib: 128, bandwidth_gbps: 1000}\n  local: {capacity_kib: 32}\n"
			 "  compute_tops: {fp32: 2, fp16: 16, bf16: 16, int8: 32}\n", owners_yaml);
	assert_true(n > 0 && (size_t)n < size);
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(head, 1, (size_t)n, fp), (size_t)n);
	for (size_t i = (size_t)n; i < size; i++)
		fputc(i + 1 == size ? '\n' : 'x', fp);
	assert_int_equal(fclose(fp), 0);
}

static void test_size_limit(void **state)
{
	char path[128];
	struct col_profile *p = NULL;
	struct opr_error err;
	(void)state;

	snprintf(path, sizeof path, "%s/big.yaml", tmpdir);
	write_padded(path, 10485760);
	poison_err(&err);
	assert_int_equal(col_profile_load(path, NULL, &p, &err), OPR_EINPUT);
	assert_null(p);
	assert_string_equal(err.msg, "profile is 10485760 bytes; the limit is 1048576");
	assert_string_equal(err.file, path);

	/* the limit itself is allowed, one byte more is not */
	write_padded(path, 1048576);
	poison_err(&err);
	assert_int_equal(col_profile_load(path, NULL, &p, &err), 0);
	assert_int_equal(p->text_len, 1048576);
	assert_int_equal(p->blocks[0].work.act, OPS_ACT_TANH);
	col_profile_free(p);
	write_padded(path, 1048577);
	poison_err(&err);
	assert_int_equal(col_profile_load(path, NULL, &p, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "the limit is 1048576"));
}

static void test_unreadable(void **state)
{
	struct col_profile *p = NULL;
	struct ops_envelope env;
	struct opr_error err;
	(void)state;

	poison_err(&err);
	assert_int_equal(col_profile_load("fixtures/profiles/no-such.yaml", NULL, &p, &err), OPR_EINPUT);
	assert_null(p);
	assert_non_null(strstr(err.msg, "cannot open profile: No such file"));
	poison_err(&err);
	assert_int_equal(col_envelope_load("fixtures/profiles", &env, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "cannot open envelope: it is a directory"));
}

/* envelope_dir given explicitly; the same profile fails without it at the
 * position of the envelope's name */
static void test_envelope_dir(void **state)
{
	char dir[128], path[160], text[1024];
	struct col_profile *p = NULL;
	struct opr_error err;
	(void)state;

	snprintf(dir, sizeof dir, "%s/elsewhere", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/mydev.yaml", dir);
	write_file(path, envelope_yaml);
	snprintf(path, sizeof path, "%s/prof.yaml", tmpdir);
	snprintf(text, sizeof text,
		 "version: 1\nname: e\nseed: 18446744073709551615\nenvelope: mydev\n"
		 "sla: {p95_us: 1, p99_us: 2, min_throughput_rps: 3}\n%s"
		 "blocks:\n  - {name: a, group: activation, activation: relu, dtype: bf16,"
		 " shape: {dims: []}}\n", owners_yaml);
	write_file(path, text);
	poison_err(&err);
	assert_int_equal(col_profile_load(path, dir, &p, &err), 0);
	assert_true(p->seed == UINT64_MAX);
	assert_string_equal(p->envelope.name, "mydev");
	assert_int_equal(p->envelope.cores, 4);
	assert_int_equal(p->blocks[0].work.tensor.rank, 0);
	col_profile_free(p);
	poison_err(&err);
	assert_int_equal(col_profile_load(path, NULL, &p, &err), OPR_EINPUT);
	assert_int_equal(err.line, 4);
	assert_int_equal(err.col, 11);
	assert_non_null(strstr(err.msg, "envelope 'mydev' not found"));
}

/* The keys of the review across runs: a production shape with its trace,
 * a synthetic one, the primary metric on the second block's baseline
 * throughput, a history with its window. */
static void test_review_keys(void **state)
{
	char dir[128], path[160], text[2048];
	struct col_profile *p = NULL;
	struct opr_error err;
	(void)state;

	snprintf(dir, sizeof dir, "%s/review", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/mydev.yaml", dir);
	write_file(path, envelope_yaml);
	snprintf(path, sizeof path, "%s/prof.yaml", dir);
	snprintf(text, sizeof text,
		 "version: 1\nname: e\nseed: 1\nenvelope: mydev\n"
		 "sla: {p95_us: 1, p99_us: 2, min_throughput_rps: 3}\n%s"
		 "blocks:\n"
		 "  - {name: a, group: activation, activation: relu, dtype: fp32, shape: {dims: [4]},"
		 " shape_origin: {production: 'serve trace 2026-11-30 / model r7'}}\n"
		 "  - {name: b, group: activation, activation: relu, dtype: fp32, shape: {dims: [4]},"
		 " shape_origin: synthetic}\n"
		 "primary_metric: {block: b, variant: baseline, metric: throughput}\n"
		 "history: {path: runs/h.db, window: 7}\n", owners_yaml);
	write_file(path, text);
	poison_err(&err);
	assert_int_equal(col_profile_load(path, dir, &p, &err), 0);
	assert_int_equal(p->blocks[0].shape_production, 1);
	assert_string_equal(p->blocks[0].shape_source, "serve trace 2026-11-30 / model r7");
	assert_int_equal(p->blocks[1].shape_production, 0);
	assert_int_equal(p->primary.given, 1);
	assert_int_equal(p->primary.block, 1);
	assert_int_equal(p->primary.variant, 0);
	assert_int_equal(p->primary.metric, COL_M_THROUGHPUT);
	assert_string_equal(col_metric_name(p->primary.metric), "throughput");
	assert_int_equal(col_metric_parse("model_time"), COL_M_MODEL_TIME);
	assert_int_equal(col_metric_parse("p90"), -1);
	assert_string_equal(p->history, "runs/h.db");
	assert_int_equal(p->history_window, 7);
	assert_string_equal(p->rationale, "");
	col_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_profile),
		cmocka_unit_test(test_quick_profile),
		cmocka_unit_test(test_shipped_envelopes),
		cmocka_unit_test(test_random_roundtrip),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_envelope_dir),
		cmocka_unit_test(test_review_keys),
	};
	return cmocka_run_group_tests_name("profile", tests, setup_tmp, teardown_tmp);
}
