/* tests/test_analyze.c: the analyzer end to end on crafted runs built in
 * memory: each bottleneck class against its neighbours, planted effects in
 * interleaved host samples, the verdict rules, seed 002's mini case, the
 * worksheet, BH across blocks, and the golden findings.json of fixtures/archive
 * (OPREVIEW_GOLDEN=regenerate rewrites it, see tests/golden.sh). */
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

#define ARCHIVE "fixtures/archive"
#define GOLDEN "fixtures/golden/findings.json"

/* The synthetic envelope's launch overhead (us) and SHARED capacity (KiB). */
#define OVERHEAD_US 2.0
#define CAPACITY_KIB 256.0
#define FP16_THR 1e-2

/* |a - b| <= eps, with both values in the failure message */
#define assert_near(a, b, eps)                                                        \
	do {                                                                          \
		double a_ = (a), b_ = (b);                                            \
		if (!(fabs(a_ - b_) <= (eps)))                                        \
			fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);           \
	} while (0)

/* ---- seeded data: splitmix64 and Box-Muller normals ---- */

struct trng {
	uint64_t x;
};

static uint64_t t_next(struct trng *g)
{
	uint64_t z = (g->x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double t_normal(struct trng *g)
{
	double u1 = ((double)(t_next(g) >> 11) + 0.5) / 9007199254740992.0;
	double u2 = ((double)(t_next(g) >> 11) + 0.5) / 9007199254740992.0;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- builders of a run in memory ---- */

/* One modelled launch: its terms (ns). busy 0: single-buffered, the busy time
 * is the sum of the terms; otherwise the launch's busy time as given (a
 * double-buffered launch overlaps its terms). */
struct launch_spec {
	double overhead, compute, shared, global, dma, imbalance, busy;
};

static const struct launch_spec NEUTRAL = {100, 400, 300, 300, 0, 1.0, 0};

static void set_launches(struct col_variant_run *vr, const struct launch_spec *l, size_t n)
{
	free(vr->launches);
	vr->launches = calloc(n, sizeof *vr->launches);
	assert_non_null(vr->launches);
	vr->nlaunches = n;
	vr->model_ns = 0;
	for (size_t i = 0; i < n; i++) {
		struct ops_launch_rec *r = &vr->launches[i];
		snprintf(r->name, sizeof r->name, "launch%zu", i);
		r->cores_used = 4;
		r->double_buffer = l[i].busy > 0;
		r->global_bytes = 1u << 20;
		r->shared_bytes = 1u << 21;
		r->transfers = 8;
		r->work = 1000000;
		r->overhead_ns = l[i].overhead;
		r->compute_ns = l[i].compute;
		r->shared_ns = l[i].shared;
		r->global_ns = l[i].global;
		r->dma_ns = l[i].dma;
		r->imbalance = l[i].imbalance;
		double busy = l[i].busy > 0 ? l[i].busy : l[i].compute + l[i].shared + l[i].global + l[i].dma;
		r->model_ns = l[i].overhead + busy;
		vr->model_ns += r->model_ns;
	}
	vr->counters.launches = n;
	vr->counters.transfers = 8 * n;
}

/* The simulated pipeline of a variant: p95 and its CI, the queue-wait share
 * of the p95, and the two counterfactuals equal to the p95 (no attribution). */
static void set_pipe(struct col_variant_run *vr, double p95_ns, double wait_share)
{
	struct col_pipe_result *r = &vr->pipe;
	r->n = 1000;
	r->jobs = 600;
	r->streams = 1;
	r->cores = 4;
	r->p50_ns = 0.5 * p95_ns;
	r->p95_ns = p95_ns;
	r->p99_ns = 1.5 * p95_ns;
	r->max_ns = 2 * p95_ns;
	r->mean_ns = 0.6 * p95_ns;
	r->wait_p95_ns = wait_share * p95_ns;
	r->throughput_rps = 1000;
	r->jain_cores = 1.0;
	r->jain_streams = 1.0;
	r->mean_batch = 1.6;
	r->bw_util = 0.2;
	r->max_concurrent_bursts = 1;
	vr->pipe_p95_lo = 0.95 * p95_ns;
	vr->pipe_p95_hi = 1.05 * p95_ns;
	vr->pipe_p99_lo = 0.95 * r->p99_ns;
	vr->pipe_p99_hi = 1.05 * r->p99_ns;
	vr->pipe_free_p95_ns = p95_ns;
	vr->pipe_free_p99_ns = r->p99_ns;
	vr->pipe_hidden_p95_ns = p95_ns;
	free(vr->sweep);
	vr->nsweep = 4;
	vr->sweep = calloc(vr->nsweep, sizeof *vr->sweep);
	assert_non_null(vr->sweep);
	for (size_t i = 0; i < vr->nsweep; i++) {
		vr->sweep[i].batch = (int)i + 1;
		vr->sweep[i].p95_ns = p95_ns * (0.8 + 0.1 * (double)i);
		vr->sweep[i].p50_ns = 0.5 * vr->sweep[i].p95_ns;
		vr->sweep[i].p99_ns = 1.5 * vr->sweep[i].p95_ns;
		vr->sweep[i].throughput_rps = 1000;
	}
}

static void set_plan(struct ops_plan *p, int fused, int64_t tile_k, int double_buffer)
{
	memset(p, 0, sizeof *p);
	p->fused = fused;
	p->strategy = OPS_STRAT_DIRECT;
	p->p[0] = tile_k;
	p->p[1] = 4;
	p->p[2] = 16;
	p->p[3] = 8;
	p->double_buffer = double_buffer;
}

/* A variant with nothing to report: balanced launch terms, good quality,
 * reproducible, comfortable SLA, no samples. */
static void neutral_variant(struct col_variant_run *vr, int v)
{
	set_plan(&vr->plan, v, 8, 0);
	snprintf(vr->plan_note, sizeof vr->plan_note, "%s plan of the test", col_variant_name(v));
	set_launches(vr, &NEUTRAL, 1);
	vr->counters.bytes[OPS_GLOBAL][OPS_SHARED] = 1u << 20;
	vr->counters.bytes[OPS_SHARED][OPS_GLOBAL] = 1u << 19;
	vr->counters.compute_read_bytes = 4u << 20;
	vr->counters.compute_write_bytes = 1u << 19;
	vr->counters.macs[OPS_F16] = 1000000;
	vr->counters.elem_ops = 2048;
	vr->counters.peak_shared_bytes = 64 * 1024;
	vr->quality.rel_l2 = 1e-4;
	vr->repro_counters_equal = 1;
	vr->repro_output_stable = 1;
	memset(vr->input_sha256, 'a', 64);
	memset(vr->output_sha256, v ? 'c' : 'b', 64);
	set_pipe(vr, 400e3, 0.25);
}

/* A run of nblocks conv2d+bias+activation fp16 blocks, every variant neutral.
 * Freed with col_run_free. */
static struct col_run *new_run(int nblocks)
{
	static const char text[] = "# a synthetic profile built by test_analyze\n";
	struct col_run *run = calloc(1, sizeof *run);
	struct col_profile *p = calloc(1, sizeof *p);
	assert_non_null(run);
	assert_non_null(p);
	run->profile = p;
	p->text = malloc(sizeof text);
	assert_non_null(p->text);
	memcpy(p->text, text, sizeof text);
	p->text_len = sizeof text - 1;
	snprintf(p->name, sizeof p->name, "synthetic");
	snprintf(p->path, sizeof p->path, "synthetic.yaml");
	p->version = 1;
	p->seed = 1234;
	struct ops_envelope *e = &p->envelope;
	snprintf(e->name, sizeof e->name, "npu-test");
	snprintf(e->power_mode, sizeof e->power_mode, "nominal");
	e->clock_ghz = 1.0;
	e->clock_scale = 1.0;
	e->cores = 4;
	e->global_bw_gbps = 100;
	e->global_capacity_gib = 8;
	e->shared_capacity_kib = CAPACITY_KIB;
	e->shared_bw_gbps = 400;
	e->local_capacity_kib = 64;
	e->dma_max_last_dim = 65536;
	e->dma_setup_ns = 100;
	e->dma_engines = 2;
	e->tops[OPS_F32] = 2;
	e->tops[OPS_F16] = 8;
	e->tops[OPS_BF16] = 8;
	e->tops[OPS_S8] = 16;
	e->tops[OPS_U8] = 16;
	e->launch_overhead_us = OVERHEAD_US;
	snprintf(p->envelope_source, sizeof p->envelope_source, "inline");
	p->sla = (struct col_sla){1000, 2000, 0, 0.05};
	p->precision = (struct col_precision){1e-5, FP16_THR, 2e-2, 1};
	p->traffic.streams = 1;
	snprintf(p->traffic.process, sizeof p->traffic.process, "poisson");
	p->traffic.rate_rps = 1000;
	p->traffic.batch_max = 4;
	p->traffic.batch_timeout_us = 100;
	snprintf(p->traffic.placement, sizeof p->traffic.placement, "round-robin");
	p->traffic.requests = 1000;
	p->nblocks = nblocks;
	run->nblocks = nblocks;
	snprintf(run->profile_origin, sizeof run->profile_origin, "synthetic.yaml");
	snprintf(run->papi_status, sizeof run->papi_status, "disabled by --no-papi");
	for (int b = 0; b < nblocks; b++) {
		struct col_block *blk = &p->blocks[b];
		snprintf(blk->name, sizeof blk->name, "blk%d", b);
		blk->work.group = OPS_G_CONV_BIAS_ACT;
		blk->work.act = OPS_ACT_RELU;
		blk->work.dtype = OPS_F16;
		blk->work.conv = (struct ops_conv_shape){1, 8, 16, 16, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1};
		blk->traffic = p->traffic;
		/* production shapes, so the verdict rules below are not held back
		 * by the synthetic-shape rule (tested on its own) */
		blk->shape_production = 1;
		snprintf(blk->shape_source, sizeof blk->shape_source, "trace t-%d", b);
		struct col_block_run *br = &run->blocks[b];
		br->block = blk;
		snprintf(br->stop_reason, sizeof br->stop_reason, "synthetic");
		for (int v = 0; v < 2; v++)
			neutral_variant(&br->v[v], v);
	}
	return run;
}

#define ROUNDS 20
#define PER_ROUND 20

/* Interleaved host samples of block b: ROUNDS rounds of PER_ROUND samples of
 * each variant, a drift per round shared by both (the collector's design),
 * lognormal noise of sigma 0.04; the candidate's samples are scaled by ratio. */
static void set_samples(struct col_run *run, int b, double ratio, uint64_t seed)
{
	struct trng g = {seed};
	struct col_block_run *br = &run->blocks[b];
	size_t n = ROUNDS * PER_ROUND;
	for (int v = 0; v < 2; v++) {
		struct col_variant_run *vr = &br->v[v];
		free(vr->samples_ns);
		free(vr->round);
		vr->samples_ns = malloc(n * sizeof *vr->samples_ns);
		vr->round = malloc(n * sizeof *vr->round);
		assert_non_null(vr->samples_ns);
		assert_non_null(vr->round);
		vr->nsamples = n;
	}
	for (int r = 0; r < ROUNDS; r++) {
		double drift = exp(0.02 * t_normal(&g));
		for (int v = 0; v < 2; v++)
			for (int k = 0; k < PER_ROUND; k++) {
				size_t i = (size_t)r * PER_ROUND + (size_t)k;
				double x = 100000.0 * drift * exp(0.04 * t_normal(&g)) * (v ? ratio : 1.0);
				br->v[v].samples_ns[i] = (int64_t)llround(x);
				br->v[v].round[i] = r;
			}
	}
	br->nrounds = ROUNDS;
	br->reps_per_round = PER_ROUND;
}

/* ---- queries on findings ---- */

static struct ana_findings *analyze(const struct col_run *run)
{
	struct opr_error err = {0};
	struct ana_findings *f = NULL;
	if (ana_analyze(run, "runs/synthetic", &f, &err))
		fail_msg("ana_analyze: %s", err.msg);
	assert_non_null(f);
	return f;
}

static const struct ana_finding *finding(const struct ana_findings *f, int b, int v, int cls)
{
	for (size_t i = 0; i < f->nfind; i++)
		if (f->find[i].block == b && f->find[i].variant == v && (int)f->find[i].cls == cls)
			return &f->find[i];
	return NULL;
}

static const struct ana_finding *primary_finding(const struct ana_findings *f, int b, int v)
{
	const struct ana_finding *p = NULL;
	int n = 0;
	for (size_t i = 0; i < f->nfind; i++)
		if (f->find[i].block == b && f->find[i].variant == v && f->find[i].primary) {
			p = &f->find[i];
			n++;
		}
	assert_true(n <= 1);
	return p;
}

static const struct ana_evidence *evidence(const struct ana_finding *x, const char *metric)
{
	for (int i = 0; i < x->nev; i++)
		if (!strcmp(x->ev[i].metric, metric))
			return &x->ev[i];
	return NULL;
}

static const struct ana_check *check_of(const struct ana_findings *f, int b, int v, const char *name)
{
	for (size_t i = 0; i < f->nchecks; i++)
		if (f->checks[i].block == b && f->checks[i].variant == v && !strcmp(f->checks[i].name, name))
			return &f->checks[i];
	return NULL;
}

static int has_reason(const struct ana_findings *f, const char *needle)
{
	for (int i = 0; i < f->nreasons; i++)
		if (strstr(f->reasons[i], needle))
			return 1;
	return 0;
}

static int count_status(const struct ana_findings *f, int v, enum ana_status st)
{
	int n = 0;
	for (size_t i = 0; i < f->nchecks; i++)
		n += f->checks[i].variant == v && f->checks[i].status == st;
	return n;
}

/* ---- bottleneck classes against their neighbours ---- */

struct cls_case {
	const char *name;
	struct launch_spec l;
	double wait_share, jain, rel_l2;
	uint64_t fallbacks, splits;
	int cls;                   /* the class that must be found, -1: none */
	const char *metric;        /* one of its evidence rows */
	const char *comparison;
	enum ana_prov prov;
	double score;
	int primary;               /* 1: cls is the variant's primary */
	int absent[4];             /* classes that must not be found; -1 ends */
};

static const struct cls_case CASES[] = {
	{"compute 70%", {50, 700, 100, 100, 100, 1, 0}, 0.25, 1, 1e-4, 0, 0, ANA_COMPUTE_BOUND,
	 "u_compute", "0.70 >= 0.60, next 0.10", ANA_SIMULATED, 0.70, 1,
	 {ANA_GLOBAL_BW_BOUND, ANA_ONCHIP_BW_BOUND, ANA_LAUNCH_OVERHEAD_BOUND, -1}},
	{"global 70%", {50, 200, 50, 700, 50, 1, 0}, 0.25, 1, 1e-4, 0, 0, ANA_GLOBAL_BW_BOUND,
	 "u_global", "0.70 >= 0.60, next 0.20", ANA_SIMULATED, 0.70, 1,
	 {ANA_COMPUTE_BOUND, ANA_ONCHIP_BW_BOUND, ANA_LAUNCH_OVERHEAD_BOUND, -1}},
	{"global 59% is not bound", {50, 200, 110, 590, 100, 1, 0}, 0.25, 1, 1e-4, 0, 0, -1,
	 NULL, NULL, ANA_SIMULATED, 0, 0,
	 {ANA_GLOBAL_BW_BOUND, ANA_COMPUTE_BOUND, ANA_ONCHIP_BW_BOUND, -1}},
	{"global 64% next 55%: 9-point gap", {50, 550, 100, 640, 0, 1, 1000}, 0.25, 1, 1e-4, 0, 0, -1,
	 NULL, NULL, ANA_SIMULATED, 0, 0,
	 {ANA_GLOBAL_BW_BOUND, ANA_COMPUTE_BOUND, ANA_ONCHIP_BW_BOUND, -1}},
	{"global 66% next 55%: 11-point gap", {50, 550, 100, 660, 0, 1, 1000}, 0.25, 1, 1e-4, 0, 0,
	 ANA_GLOBAL_BW_BOUND, "u_global", "0.66 >= 0.60, next 0.55", ANA_SIMULATED, 0.66, 1,
	 {ANA_COMPUTE_BOUND, ANA_ONCHIP_BW_BOUND, -1, -1}},
	{"shared 70%", {50, 200, 700, 50, 50, 1, 0}, 0.25, 1, 1e-4, 0, 0, ANA_ONCHIP_BW_BOUND,
	 "u_shared", "0.70 >= 0.60, next 0.20", ANA_SIMULATED, 0.70, 1,
	 {ANA_COMPUTE_BOUND, ANA_GLOBAL_BW_BOUND, ANA_LAUNCH_OVERHEAD_BOUND, -1}},
	{"overhead 33%", {500, 400, 300, 300, 0, 1, 0}, 0.25, 1, 1e-4, 0, 0, ANA_LAUNCH_OVERHEAD_BOUND,
	 "overhead share", "0.33 >= 0.30", ANA_SIMULATED, 500.0 / 1500, 1,
	 {ANA_COMPUTE_BOUND, ANA_GLOBAL_BW_BOUND, ANA_ONCHIP_BW_BOUND, -1}},
	{"overhead 29% is not bound", {400, 400, 300, 300, 0, 1, 0}, 0.25, 1, 1e-4, 0, 0, -1,
	 NULL, NULL, ANA_SIMULATED, 0, 0, {ANA_LAUNCH_OVERHEAD_BOUND, -1, -1, -1}},
	{"queue wait 60% of p95", {100, 400, 300, 300, 0, 1, 0}, 0.60, 1, 1e-4, 0, 0, ANA_QUEUEING_DELAY,
	 "wait p95 / latency p95", "0.60 >= 0.50", ANA_SIMULATED, 0.60, 0,
	 {ANA_CORE_IMBALANCE, ANA_LAUNCH_OVERHEAD_BOUND, -1, -1}},
	{"queue wait 40% of p95", {100, 400, 300, 300, 0, 1, 0}, 0.40, 1, 1e-4, 0, 0, -1,
	 NULL, NULL, ANA_SIMULATED, 0, 0, {ANA_QUEUEING_DELAY, -1, -1, -1}},
	{"slowest core 1.30x", {100, 400, 300, 300, 0, 1.30, 0}, 0.25, 0.95, 1e-4, 0, 0, ANA_CORE_IMBALANCE,
	 "launch imbalance", "1.30 >= 1.25", ANA_SIMULATED, 1.30, 0, {ANA_QUEUEING_DELAY, -1, -1, -1}},
	{"slowest core 1.20x, Jain 0.95", {100, 400, 300, 300, 0, 1.20, 0}, 0.25, 0.95, 1e-4, 0, 0, -1,
	 NULL, NULL, ANA_SIMULATED, 0, 0, {ANA_CORE_IMBALANCE, -1, -1, -1}},
	{"Jain 0.85 over cores", {100, 400, 300, 300, 0, 1.0, 0}, 0.25, 0.85, 1e-4, 0, 0, ANA_CORE_IMBALANCE,
	 "launch imbalance", "1.00 < 1.25", ANA_SIMULATED, 1.0, 0, {-1, -1, -1, -1}},
	{"a capacity fallback", {100, 400, 300, 300, 0, 1, 0}, 0.25, 1, 1e-4, 1, 0, ANA_MAPPING_FALLBACK,
	 "FALLBACKS", "1 > 0", ANA_SIMULATED, 1, 1, {ANA_PRECISION_LOSS, -1, -1, -1}},
	{"split transfers only", {100, 400, 300, 300, 0, 1, 0}, 0.25, 1, 1e-4, 0, 3, ANA_MAPPING_FALLBACK,
	 "DMA_SPLITS", "3 > 0", ANA_SIMULATED, 3, 0, {-1, -1, -1, -1}},
	{"no fallback, no split", {100, 400, 300, 300, 0, 1, 0}, 0.25, 1, 1e-4, 0, 0, -1,
	 NULL, NULL, ANA_SIMULATED, 0, 0, {ANA_MAPPING_FALLBACK, ANA_PRECISION_LOSS, -1, -1}},
	{"rel L2 twice the threshold", {50, 700, 100, 100, 100, 1, 0}, 0.25, 1, 2e-2, 0, 0, ANA_PRECISION_LOSS,
	 "relative L2 error", "0.02 > 0.01", ANA_MEASURED, 2.0, 1, {-1, -1, -1, -1}},
	{"rel L2 at 0.7 of the threshold warns", {100, 400, 300, 300, 0, 1, 0}, 0.25, 1, 7e-3, 0, 0,
	 ANA_PRECISION_LOSS, "relative L2 error", "0.007 <= 0.01", ANA_MEASURED, 0.7, 0, {-1, -1, -1, -1}},
	{"rel L2 at 0.4 of the threshold", {100, 400, 300, 300, 0, 1, 0}, 0.25, 1, 4e-3, 0, 0, -1,
	 NULL, NULL, ANA_MEASURED, 0, 0, {ANA_PRECISION_LOSS, -1, -1, -1}},
};

/* A failed expectation of a class case names the case. */
#define CASE_TRUE(c, cond)                                                  \
	do {                                                                \
		if (!(cond))                                                \
			fail_msg("case '%s': %s does not hold", (c)->name, #cond); \
	} while (0)

static void test_classes(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
		const struct cls_case *c = &CASES[k];
		struct col_run *run = new_run(1);
		struct col_variant_run *vr = &run->blocks[0].v[1];
		set_launches(vr, &c->l, 1);
		vr->pipe.wait_p95_ns = c->wait_share * vr->pipe.p95_ns;
		vr->pipe.jain_cores = c->jain;
		vr->quality.rel_l2 = c->rel_l2;
		vr->counters.fallbacks = c->fallbacks;
		vr->fell_back = c->fallbacks > 0;
		vr->counters.splits = c->splits;
		struct ana_findings *f = analyze(run);
		/* the neutral baseline reports nothing */
		for (size_t i = 0; i < f->nfind; i++)
			CASE_TRUE(c, f->find[i].variant == 1);
		if (c->cls >= 0) {
			const struct ana_finding *x = finding(f, 0, 1, c->cls);
			if (!x)
				fail_msg("case '%s': no '%s' finding", c->name, ana_class_name(c->cls));
			const struct ana_evidence *e = evidence(x, c->metric);
			if (!e)
				fail_msg("case '%s': no '%s' evidence", c->name, c->metric);
			if (strcmp(e->comparison, c->comparison))
				fail_msg("case '%s': comparison '%s', expected '%s'", c->name, e->comparison,
					 c->comparison);
			CASE_TRUE(c, e->prov == c->prov);
			CASE_TRUE(c, fabs(x->score - c->score) <= 1e-9);
			CASE_TRUE(c, x->symptom[0] != '\0');
			CASE_TRUE(c, x->explanation[0] != '\0');
			CASE_TRUE(c, strstr(x->reproduce, "opreview replay runs/synthetic") != NULL);
			CASE_TRUE(c, x->primary == c->primary);
			if (c->primary)
				CASE_TRUE(c, (int)f->blocks[0].primary[1] == c->cls);
		}
		for (int i = 0; i < 4 && c->absent[i] >= 0; i++)
			if (finding(f, 0, 1, c->absent[i]))
				fail_msg("case '%s': unexpected '%s' finding", c->name, ana_class_name(c->absent[i]));
		ana_findings_free(f);
		col_run_free(run);
	}
}

/* Below the SOL threshold the largest term is still named as the primary,
 * without a finding (the rule's "no clear bound"). */
static void test_unbound_primary(void **state)
{
	(void)state;
	struct col_run *run = new_run(1);
	static const struct launch_spec l = {50, 200, 110, 590, 100, 1, 0};
	set_launches(&run->blocks[0].v[1], &l, 1);
	struct ana_findings *f = analyze(run);
	assert_int_equal(f->blocks[0].primary[1], ANA_GLOBAL_BW_BOUND);
	assert_int_equal(f->blocks[0].primary[0], ANA_COMPUTE_BOUND);
	assert_null(primary_finding(f, 0, 1));
	ana_findings_free(f);
	col_run_free(run);
}

/* ---- planted effects in the host samples through the whole analyzer ---- */

static void test_host_regression_holds(void **state)
{
	(void)state;
	struct col_run *run = new_run(1);
	set_samples(run, 0, 1.10, 0xa11ce);
	struct ana_findings *f = analyze(run);
	const struct ana_check *c = check_of(f, 0, 1, "regression p95 (host)");
	assert_non_null(c);
	assert_int_equal(c->status, ANA_FAIL);
	assert_int_equal(c->prov, ANA_MEASURED);
	assert_string_equal(c->threshold, "ratio CI below 1.05");
	assert_non_null(strstr(c->rollback_to, "baseline: "));
	/* the comparison behind it: a ratio near 1.10 with its CI above 1.05 */
	int seen = 0;
	for (size_t i = 0; i < f->ncmp; i++) {
		if (f->cmp[i].q != 0.95)
			continue;
		seen = 1;
		assert_true(f->cmp[i].available);
		assert_int_equal(f->cmp[i].c.outcome, ANA_CMP_REGRESSION);
		assert_true(f->cmp[i].c.ratio.ratio > 1.07 && f->cmp[i].c.ratio.ratio < 1.13);
		assert_true(f->cmp[i].c.ratio.lo > 1.05);
	}
	assert_true(seen);
	/* the simulated checks pass: the hold comes from the host samples */
	assert_int_equal(check_of(f, 0, 1, "regression (modelled)")->status, ANA_PASS);
	assert_int_equal(check_of(f, 0, 1, "regression p95 (pipeline)")->status, ANA_PASS);
	assert_int_equal(f->verdict, ANA_HOLD);
	assert_int_equal(ana_verdict_exit(f->verdict), 11);
	assert_true(has_reason(f, "blk0: candidate fails regression p95 (host)"));
	assert_int_equal(f->blocks[0].lat[1].n, ROUNDS * PER_ROUND);
	assert_true(f->blocks[0].lat[1].p95.estimate > 1.05 * f->blocks[0].lat[0].p95.estimate);
	ana_findings_free(f);
	col_run_free(run);
}

static void test_host_aa_no_fail(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct col_run *run = new_run(1);
		set_samples(run, 0, 1.0, 0xaa00 + seed);
		struct ana_findings *f = analyze(run);
		const struct ana_check *c = check_of(f, 0, 1, "regression p95 (host)");
		assert_non_null(c);
		assert_int_not_equal(c->status, ANA_FAIL);
		assert_true(f->blocks[0].noise.nrounds >= 4);
		assert_int_not_equal(f->verdict, ANA_HOLD);
		assert_int_not_equal(f->verdict, ANA_ROLLBACK);
		ana_findings_free(f);
		col_run_free(run);
	}
}

/* ---- verdict rules (README "Verdict") ---- */

static void test_verdict_ship(void **state)
{
	(void)state;
	struct col_run *run = new_run(1);
	set_samples(run, 0, 1.0, 0x5417);
	struct ana_findings *f = analyze(run);
	assert_int_equal(count_status(f, 1, ANA_FAIL), 0);
	assert_int_equal(count_status(f, 1, ANA_WARN), 0);
	assert_int_equal(check_of(f, 0, 1, "regression p95 (host)")->status, ANA_PASS);
	assert_int_equal(f->nmit, 0);
	assert_int_equal(f->verdict, ANA_SHIP);
	assert_int_equal(ana_verdict_exit(f->verdict), 0);
	assert_string_equal(ana_verdict_name(f->verdict), "SHIP");
	assert_true(has_reason(f, "every candidate check passes"));
	ana_findings_free(f);
	col_run_free(run);
}

/* A candidate validated only on synthetic shapes cannot be SHIP: the same
 * run as test_verdict_ship with the block's shape synthetic is SHIP WITH
 * MITIGATIONS, the mitigation production-shape validation owned by the
 * kernel performance owner; the primary metric is the default. */
static void test_verdict_synthetic_shapes(void **state)
{
	(void)state;
	struct col_run *run = new_run(2);
	set_samples(run, 0, 1.0, 0x5417);
	set_samples(run, 1, 1.0, 0x5418);
	run->profile->blocks[1].shape_production = 0;
	snprintf(run->profile->blocks[1].shape_source, sizeof run->profile->blocks[1].shape_source, "synthetic");
	run->profile->primary = (struct col_primary){0, 1, COL_M_P95, 0};
	struct ana_findings *f = analyze(run);
	assert_int_equal(count_status(f, 1, ANA_FAIL), 0);
	assert_int_equal(count_status(f, 1, ANA_WARN), 0);
	assert_int_equal(f->synthetic_blocks, 1);
	assert_int_equal(f->nmit, 1);
	assert_int_equal(f->mit[0].block, 1);
	assert_string_equal(f->mit[0].owner_role, "kernel-performance-owner");
	assert_non_null(strstr(f->mit[0].title, "production shapes"));
	assert_int_equal(f->verdict, ANA_SHIP_WITH_MITIGATIONS);
	assert_true(has_reason(f, "not SHIP: 1 of 2 blocks rest on synthetic shapes only"));
	/* the primary metric: blk0's candidate p95 with its CI, measured */
	assert_true(f->primary.available);
	assert_int_equal(f->primary.block, 0);
	assert_int_equal(f->primary.prov, ANA_MEASURED);
	assert_true(f->primary.value == f->blocks[0].lat[1].p95.estimate);
	assert_true(f->primary.lo <= f->primary.value && f->primary.value <= f->primary.hi);
	assert_int_equal(f->primary_base.variant, 0);
	/* throughput is the inverse median, its CI the inverted median CI */
	struct ana_value tp;
	ana_value_eval(f, 0, 1, COL_M_THROUGHPUT, &tp);
	assert_true(fabs(tp.value - 1e9 / f->blocks[0].lat[1].p50.estimate) < 1e-9 * tp.value);
	assert_true(fabs(tp.lo - 1e9 / f->blocks[0].lat[1].p50.hi) < 1e-9 * tp.value);
	assert_int_equal(tp.prov, ANA_DERIVED);
	ana_findings_free(f);

	/* with every block from production it ships */
	run->profile->blocks[1].shape_production = 1;
	f = analyze(run);
	assert_int_equal(f->synthetic_blocks, 0);
	assert_int_equal(f->nmit, 0);
	assert_int_equal(f->verdict, ANA_SHIP);
	ana_findings_free(f);
	col_run_free(run);
}

static void test_verdict_warn(void **state)
{
	(void)state;
	/* a quality WARN: the error is above half the threshold, below it */
	struct col_run *run = new_run(1);
	set_samples(run, 0, 1.0, 0x5417);
	run->blocks[0].v[1].quality.rel_l2 = 0.7 * FP16_THR;
	struct ana_findings *f = analyze(run);
	assert_int_equal(check_of(f, 0, 1, "numerical quality")->status, ANA_WARN);
	assert_int_equal(count_status(f, 1, ANA_FAIL), 0);
	assert_int_equal(count_status(f, 1, ANA_WARN), 1);
	assert_int_equal(f->verdict, ANA_SHIP_WITH_MITIGATIONS);
	assert_int_equal(ana_verdict_exit(f->verdict), 10);
	ana_findings_free(f);
	col_run_free(run);

	/* an SLA WARN: the p95 CI straddles the target, both variants alike */
	run = new_run(1);
	set_samples(run, 0, 1.0, 0x5417);
	for (int v = 0; v < 2; v++) {
		set_pipe(&run->blocks[0].v[v], 990e3, 0.25);
		run->blocks[0].v[v].pipe_p95_hi = 1010e3;
	}
	f = analyze(run);
	assert_int_equal(check_of(f, 0, 1, "SLA p95")->status, ANA_WARN);
	assert_int_equal(count_status(f, 1, ANA_FAIL), 0);
	assert_int_equal(f->verdict, ANA_SHIP_WITH_MITIGATIONS);
	ana_findings_free(f);
	col_run_free(run);
}

static void test_verdict_precision_rollback(void **state)
{
	(void)state;
	/* faster everywhere: host samples, modelled time, simulated p95 */
	struct col_run *run = new_run(1);
	set_samples(run, 0, 0.80, 0xfa57);
	struct col_variant_run *B = &run->blocks[0].v[1];
	static const struct launch_spec fast = {100, 250, 200, 200, 0, 1, 0};
	set_launches(B, &fast, 1);
	set_pipe(B, 300e3, 0.25);
	B->quality.rel_l2 = 2 * FP16_THR;
	struct ana_findings *f = analyze(run);
	assert_int_equal(check_of(f, 0, 1, "numerical quality")->status, ANA_FAIL);
	assert_int_equal(check_of(f, 0, 1, "regression p95 (host)")->status, ANA_PASS);
	assert_int_equal(check_of(f, 0, 1, "regression (modelled)")->status, ANA_PASS);
	assert_int_equal(check_of(f, 0, 1, "regression p95 (pipeline)")->status, ANA_PASS);
	assert_int_equal(f->verdict, ANA_ROLLBACK);
	assert_int_equal(ana_verdict_exit(f->verdict), 12);
	assert_true(has_reason(f, "blk0: candidate fails numerical quality"));
	assert_int_equal(f->blocks[0].primary[1], ANA_PRECISION_LOSS);
	int keep_wide = 0;
	for (size_t i = 0; i < f->nmit; i++)
		keep_wide |= !strcmp(f->mit[i].owner_role, "runtime-systems-engineer") &&
			     strstr(f->mit[i].title, "wider type") != NULL;
	assert_true(keep_wide);
	ana_findings_free(f);
	col_run_free(run);
}

static void test_verdict_repro_rollback(void **state)
{
	(void)state;
	for (int which = 0; which < 2; which++) {
		struct col_run *run = new_run(1);
		set_samples(run, 0, 1.0, 0x5417);
		if (which)
			run->blocks[0].v[1].repro_output_stable = 0;
		else
			run->blocks[0].v[1].repro_counters_equal = 0;
		struct ana_findings *f = analyze(run);
		const struct ana_check *c = check_of(f, 0, 1, "reproducibility");
		assert_int_equal(c->status, ANA_FAIL);
		assert_non_null(strstr(c->value, which ? "CHANGED" : "DIFFER"));
		assert_int_equal(f->verdict, ANA_ROLLBACK);
		assert_int_equal(ana_verdict_exit(f->verdict), 12);
		assert_true(has_reason(f, "candidate fails reproducibility"));
		ana_findings_free(f);
		col_run_free(run);
	}
	/* a baseline that does not reproduce does not decide the candidate's fate */
	struct col_run *run = new_run(1);
	set_samples(run, 0, 1.0, 0x5417);
	run->blocks[0].v[0].repro_output_stable = 0;
	struct ana_findings *f = analyze(run);
	assert_int_equal(check_of(f, 0, 0, "reproducibility")->status, ANA_FAIL);
	assert_int_equal(f->verdict, ANA_SHIP);
	ana_findings_free(f);
	col_run_free(run);
}

/* ---- seed 002's mini case ---- */

/* A conv2d+bias+activation block: the baseline runs three launches, the fused
 * candidate one launch with fewer GLOBAL bytes, yet a worse simulated p95.
 * free/hidden: the candidate's counterfactual p95s (ns); the baseline's is
 * 400 us, the candidate's 520 us. */
static struct col_run *mini_case(double free_p95, double hidden_p95)
{
	struct col_run *run = new_run(1);
	struct col_variant_run *A = &run->blocks[0].v[0], *B = &run->blocks[0].v[1];
	static const struct launch_spec unfused[3] = {
		{2000, 3000, 500, 4000, 500, 1, 0},
		{2000, 1000, 500, 3000, 500, 1, 0},
		{2000, 1000, 500, 3000, 500, 1, 0},
	};
	static const struct launch_spec fused = {2000, 7000, 1000, 3000, 0, 1, 0};
	set_launches(A, unfused, 3);
	A->counters.bytes[OPS_GLOBAL][OPS_SHARED] = 3u << 20;
	A->counters.bytes[OPS_SHARED][OPS_GLOBAL] = 3u << 19;
	set_launches(B, &fused, 1);
	B->counters.bytes[OPS_GLOBAL][OPS_SHARED] = 1u << 20;
	B->counters.bytes[OPS_SHARED][OPS_GLOBAL] = 1u << 19;
	B->counters.peak_shared_bytes = 200 * 1024;
	set_pipe(A, 400e3, 0.25);
	set_pipe(B, 520e3, 0.25);
	B->pipe_free_p95_ns = free_p95;
	B->pipe_hidden_p95_ns = hidden_p95;
	B->pipe.max_concurrent_bursts = 4;
	B->pipe.bw_util = 0.7;

	/* the planner's alternatives: the chosen plan and a rejected one each */
	A->nalts = 2;
	A->alts = calloc(A->nalts, sizeof *A->alts);
	B->nalts = 2;
	B->alts = calloc(B->nalts, sizeof *B->alts);
	assert_non_null(A->alts);
	assert_non_null(B->alts);
	A->alts[0].plan = A->plan;
	A->alts[0].fits = 1;
	A->alts[0].launches = 3;
	A->alts[0].footprint_bytes = 64 * 1024;
	A->alts[0].global_bytes = 9u << 19;
	A->alts[0].model_ns = A->model_ns;
	A->alts[0].reuse_ratio = 2.0;
	snprintf(A->alts[0].reason, sizeof A->alts[0].reason, "best modelled time");
	set_plan(&A->alts[1].plan, 0, 64, 0);
	A->alts[1].rejected = 1;
	A->alts[1].launches = 2; /* bias folded into the convolution */
	A->alts[1].footprint_bytes = 512 * 1024;
	A->alts[1].global_bytes = 3u << 19;
	A->alts[1].model_ns = 20000;
	snprintf(A->alts[1].reason, sizeof A->alts[1].reason, "footprint 512 KiB over the SHARED capacity");
	B->alts[0].plan = B->plan;
	B->alts[0].fits = 1;
	B->alts[1].fits = 1;
	B->alts[0].launches = 1;
	B->alts[0].footprint_bytes = 200 * 1024;
	B->alts[0].global_bytes = 3u << 19;
	B->alts[0].model_ns = B->model_ns;
	B->alts[0].reuse_ratio = 4.0;
	set_plan(&B->alts[1].plan, 1, 4, 1);
	B->alts[1].rejected = 1;
	B->alts[1].launches = 1;
	B->alts[1].footprint_bytes = 160 * 1024;
	B->alts[1].global_bytes = 3u << 19;
	B->alts[1].model_ns = 13000;
	snprintf(B->alts[1].reason, sizeof B->alts[1].reason, "slower modelled time");
	return run;
}

static void test_mini_case_bursts(void **state)
{
	(void)state;
	/* uncontended and hidden p95 at or below the baseline's */
	struct col_run *run = mini_case(390e3, 380e3);
	struct ana_findings *f = analyze(run);
	const struct ana_finding *x = primary_finding(f, 0, 1);
	assert_non_null(x);
	assert_int_equal(x->cls, ANA_GLOBAL_BW_BOUND);
	assert_int_equal(f->blocks[0].primary[1], ANA_GLOBAL_BW_BOUND);
	assert_non_null(strstr(x->explanation, "burst"));
	assert_non_null(strstr(x->symptom, "1 launch(es) instead of 3"));
	assert_near(x->score, 1.3, 1e-9);
	const struct ana_evidence *e = evidence(x, "uncontended p95 (candidate)");
	assert_non_null(e);
	assert_string_equal(e->comparison, "390.0 <= 400.0");
	assert_int_equal(e->prov, ANA_SIMULATED);
	e = evidence(x, "pipeline p95 (candidate)");
	assert_non_null(e);
	assert_string_equal(e->comparison, "520.0 > 400.0");
	e = evidence(x, "LAUNCHES");
	assert_non_null(e);
	assert_string_equal(e->comparison, "1 < 3");
	e = evidence(x, "GLOBAL bytes");
	assert_non_null(e);
	assert_near(e->value, (double)((1u << 20) + (1u << 19)), 0);
	assert_non_null(strstr(e->comparison, " vs "));
	/* the launch rule alone called the fused launch compute-bound: kept, not primary */
	const struct ana_finding *cb = finding(f, 0, 1, ANA_COMPUTE_BOUND);
	assert_non_null(cb);
	assert_int_equal(cb->primary, 0);
	/* the pipeline regression fails, the host has no samples to judge */
	const struct ana_check *c = check_of(f, 0, 1, "regression p95 (pipeline)");
	assert_int_equal(c->status, ANA_FAIL);
	assert_string_equal(c->value, "x1.300 (520.0 us vs 400.0 us)");
	assert_int_equal(check_of(f, 0, 1, "regression p95 (host)")->status, ANA_WARN);
	assert_int_equal(f->verdict, ANA_HOLD);
	/* a mitigation owned by the runtime or the kernel owner */
	int owned = 0, runtime = 0, kernel = 0;
	for (size_t i = 0; i < f->nmit; i++) {
		const struct ana_mitigation *m = &f->mit[i];
		assert_int_equal(m->block, 0);
		runtime |= !strcmp(m->owner_role, "runtime-systems-engineer");
		kernel |= !strcmp(m->owner_role, "kernel-performance-owner");
		owned |= runtime || kernel;
		assert_non_null(strstr(m->rollback, "baseline: "));
		assert_true(m->validation[0] != '\0');
	}
	assert_true(owned);
	assert_true(runtime && kernel);
	ana_findings_free(f);
	col_run_free(run);

	/* exposure alone (hidden below the baseline, uncontended not) still names bursts */
	run = mini_case(450e3, 380e3);
	f = analyze(run);
	x = primary_finding(f, 0, 1);
	assert_int_equal(x->cls, ANA_GLOBAL_BW_BOUND);
	assert_non_null(strstr(x->explanation, "critical path"));
	ana_findings_free(f);
	col_run_free(run);
}

static void test_mini_case_not_bursts(void **state)
{
	(void)state;
	/* the counterfactuals are worse than the baseline too: not the bursts */
	struct col_run *run = mini_case(450e3, 440e3);
	struct ana_findings *f = analyze(run);
	const struct ana_finding *x = primary_finding(f, 0, 1);
	assert_non_null(x);
	assert_non_null(strstr(x->symptom, "simulated p95 520.0 us vs baseline 400.0 us"));
	assert_int_not_equal(x->cls, ANA_GLOBAL_BW_BOUND);
	assert_int_equal(x->cls, ANA_COMPUTE_BOUND);
	for (size_t i = 0; i < f->nfind; i++)
		assert_null(strstr(f->find[i].explanation, "burst"));
	assert_string_equal(evidence(x, "uncontended p95 (candidate)")->comparison, "450.0 > 400.0");
	assert_int_equal(check_of(f, 0, 1, "regression p95 (pipeline)")->status, ANA_FAIL);
	for (size_t i = 0; i < f->nmit; i++)
		assert_null(strstr(f->mit[i].title, "concurrent fused launches"));
	ana_findings_free(f);
	col_run_free(run);

	/* a tail within 2% of the baseline is no symptom at all */
	run = mini_case(390e3, 380e3);
	set_pipe(&run->blocks[0].v[1], 405e3, 0.25);
	f = analyze(run);
	for (size_t i = 0; i < f->nfind; i++)
		assert_null(strstr(f->find[i].symptom, "simulated p95"));
	ana_findings_free(f);
	col_run_free(run);
}

/* ---- worksheet ---- */

static void test_worksheet(void **state)
{
	(void)state;
	struct col_run *run = mini_case(390e3, 380e3);
	struct ana_findings *f = analyze(run);
	const struct col_block_run *br = &run->blocks[0];
	assert_int_equal(f->nws, 4);
	double overhead = OVERHEAD_US * 1e3;
	uint64_t lb = br->v[0].counters.launches;
	assert_int_equal(lb, 3);
	int chosen = 0, rejected = 0;
	for (size_t i = 0; i < f->nws; i++) {
		const struct ana_worksheet_row *w = &f->ws[i];
		const struct col_variant_run *vr = &br->v[w->variant];
		const struct ops_plan_eval *e = &vr->alts[i % 2];
		assert_int_equal(w->block, 0);
		assert_int_equal(w->variant, (int)(i / 2));
		assert_string_equal(w->group, "conv2d+bias+activation");
		assert_int_equal(w->capacity_bytes, (uint64_t)(CAPACITY_KIB * 1024));
		assert_int_equal(w->footprint_bytes, e->footprint_bytes);
		assert_int_equal(w->global_bytes, e->global_bytes);
		assert_int_equal(w->launches, e->launches);
		assert_int_equal(w->fused, e->plan.fused);
		assert_near(w->launch_overhead_saved_ns,
				    ((double)lb - (double)w->launches) * overhead, 1e-9);
		assert_near(w->model_ns, e->model_ns, 1e-9);
		assert_int_equal(w->chosen, i % 2 == 0);
		if (w->chosen) {
			chosen++;
			assert_string_equal(w->reason, vr->plan_note);
		} else {
			rejected++;
			assert_string_equal(w->reason, e->reason);
		}
		assert_non_null(strstr(w->shift, " -> "));
		assert_non_null(strstr(w->shift, w->expected_bottleneck));
	}
	assert_int_equal(chosen, 2);
	assert_int_equal(rejected, 2);
	/* the oversized rejected plan does not fit; the fused chosen plan saves two launches */
	assert_string_equal(f->ws[1].expected_bottleneck, "does not fit");
	assert_true(f->ws[1].footprint_bytes > f->ws[1].capacity_bytes);
	assert_true(f->ws[2].footprint_bytes <= f->ws[2].capacity_bytes);
	assert_near(f->ws[2].launch_overhead_saved_ns, 4000, 1e-9);
	assert_near(f->ws[0].launch_overhead_saved_ns, 0, 1e-9);
	assert_near(f->ws[1].launch_overhead_saved_ns, 2000, 1e-9);
	assert_string_not_equal(f->ws[3].expected_bottleneck, "does not fit");
	/* the block's own saving: launches_base - launches_candidate */
	assert_near(f->blocks[0].launch_reduction, 2, 1e-12);
	assert_near(f->blocks[0].launch_overhead_saved_ns, 2 * overhead, 1e-9);
	ana_findings_free(f);
	col_run_free(run);
}

/* ---- BH across blocks ---- */

static void test_bh_across_blocks(void **state)
{
	(void)state;
	struct col_run *run = new_run(3);
	set_samples(run, 0, 1.10, 0xb0);
	set_samples(run, 1, 1.00, 0xb1);
	set_samples(run, 2, 1.02, 0xb2);
	struct ana_findings *f = analyze(run);
	double raw[16], adj[16];
	size_t n = 0;
	int greater = 0;
	for (size_t i = 0; i < f->ncmp; i++) {
		const struct ana_block_cmp *c = &f->cmp[i];
		assert_true(c->available);
		assert_true(n < 16);
		raw[n++] = c->c.p_rank;
		assert_true(c->c.p_adjusted >= c->c.p_rank);
		assert_true(c->c.p_adjusted <= 1.0);
		greater |= c->c.p_adjusted > c->c.p_rank;
	}
	assert_int_equal(n, 9);
	assert_true(greater);
	/* one BH over the whole run, not one per block */
	struct opr_error err = {0};
	assert_int_equal(ana_bh(raw, n, 0.05, adj, NULL, &err), 0);
	for (size_t i = 0; i < n; i++)
		assert_near(f->cmp[i].c.p_adjusted, adj[i], 1e-15);
	ana_findings_free(f);
	col_run_free(run);
}

/* ---- golden findings.json of a fixed archive ---- */

static char *read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	size_t k;
	while ((k = fread(s + n, 1, cap - n, fp)) > 0) {
		n += k;
		if (n == cap) {
			cap *= 2;
			s = realloc(s, cap);
			assert_non_null(s);
		}
	}
	fclose(fp);
	*len = n;
	return s;
}

static void write_findings(const char *path)
{
	struct opr_error err = {0};
	struct col_run *run = NULL;
	struct ana_findings *f = NULL;
	if (col_archive_load(ARCHIVE, &run, &err))
		fail_msg("cannot load %s: %s", ARCHIVE, err.msg);
	if (ana_analyze(run, ARCHIVE, &f, &err))
		fail_msg("ana_analyze: %s", err.msg);
	if (ana_findings_write(f, path, &err))
		fail_msg("ana_findings_write: %s", err.msg);
	ana_findings_free(f);
	col_run_free(run);
}

static void temp_path(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/opr-%s-XXXXXX", tag);
	int fd = mkstemp(buf);
	assert_true(fd >= 0);
	close(fd);
}

static void test_golden_findings(void **state)
{
	(void)state;
	char a[64], b[64];
	temp_path(a, sizeof a, "findings-a");
	temp_path(b, sizeof b, "findings-b");
	/* analyze is byte-deterministic on a fixed archive */
	write_findings(a);
	write_findings(b);
	size_t na, nb, ng;
	char *x = read_all(a, &na), *y = read_all(b, &nb);
	assert_non_null(x);
	assert_non_null(y);
	assert_true(na > 1000);
	assert_int_equal(na, nb);
	assert_memory_equal(x, y, na);
	free(y);
	const char *mode = getenv("OPREVIEW_GOLDEN");
	if (mode && !strcmp(mode, "regenerate")) {
		write_findings(GOLDEN);
		fprintf(stderr, "regenerated %s\n", GOLDEN);
	}
	char *g = read_all(GOLDEN, &ng);
	if (!g) {
		unlink(a);
		unlink(b);
		fail_msg("%s is missing: run `make golden`", GOLDEN);
	}
	int same = ng == na && !memcmp(g, x, na);
	if (!same) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "diff -u %s %s >&2", GOLDEN, a);
		if (system(cmd) == -1)
			fprintf(stderr, "cannot run diff\n");
	}
	unlink(a);
	unlink(b);
	free(g);
	free(x);
	if (!same)
		fail_msg("findings.json differs from %s (diff above; `make golden` regenerates it)", GOLDEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_unbound_primary),
		cmocka_unit_test(test_host_regression_holds),
		cmocka_unit_test(test_host_aa_no_fail),
		cmocka_unit_test(test_verdict_ship),
		cmocka_unit_test(test_verdict_warn),
		cmocka_unit_test(test_verdict_synthetic_shapes),
		cmocka_unit_test(test_verdict_precision_rollback),
		cmocka_unit_test(test_verdict_repro_rollback),
		cmocka_unit_test(test_mini_case_bursts),
		cmocka_unit_test(test_mini_case_not_bursts),
		cmocka_unit_test(test_worksheet),
		cmocka_unit_test(test_bh_across_blocks),
		cmocka_unit_test(test_golden_findings),
	};
	return cmocka_run_group_tests_name("analyze", tests, NULL, NULL);
}
