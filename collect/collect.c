/* collect/collect.c: one collection: plan each block's variants, run them once
 * on the device model for exact counters and quality, then sample host time in
 * randomised interleaved rounds under PAPI, and simulate the scheduling
 * pipeline. Times are integer ns from CLOCK_MONOTONIC; no sample is dropped. */
#include "collect.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* An equal-tailed 95% CI of p99 needs 0.99^n <= 0.025, i.e. n >= 368 (METHODS.md's
 * 367 rounds ln 0.025 / ln 0.99 = 367.03 down) */
#define CI_TARGET 0.02      /* stop when p95's CI is within +-2% */

/* Reps per round by the slower variant's body time: a body above above_ns
 * gets reps per round (first match), so the clock and PAPI reads stay small
 * against short bodies while long ones are sampled one by one. */
static const struct {
	int64_t above_ns;
	int reps;
} REPS_RULE[] = {{200000, 1}, {20000, 4}, {0, 16}};
#define WARMUP_NS 20000000LL

const char *col_variant_name(int v)
{
	return v == COL_BASELINE ? "baseline" : "candidate";
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Relative half-width of the distribution-free 95% CI of the q-quantile, with
 * the normal approximation of the binomial ranks (n q +- 1.96 sqrt(n q (1-q)));
 * the analyzer computes the exact interval. Returns INFINITY when n is too
 * small for a two-sided interval. */
static double quantile_ci_rel(const int64_t *x, size_t n, double q, int64_t *scratch)
{
	size_t lo, hi;
	if (n < 10 || opr_quantile_ci95_ranks(n, q, &lo, &hi))
		return INFINITY;
	memcpy(scratch, x, n * sizeof *x);
	qsort(scratch, n, sizeof *scratch, cmp_i64);
	double mid = opr_quantile_type7_i64(scratch, n, q);
	if (mid <= 0)
		return INFINITY;
	double a = (double)scratch[lo], b = (double)scratch[hi];
	return fmax(mid - a, b - mid) / mid;
}

int col_sample_push(struct col_variant_run *vr, size_t *cap, int64_t ns, int32_t round,
		    struct opr_error *err)
{
	/* two arrays of one length: the second grows to the first's capacity */
	if (vr->nsamples == *cap) {
		size_t c1 = *cap, c2 = *cap;
		if (opr_grow(&vr->samples_ns, &c1, 256, sizeof *vr->samples_ns) ||
		    opr_grow(&vr->round, &c2, 256, sizeof *vr->round))
			return opr_error_set(err, OPR_ENOMEM, "out of memory storing samples");
		*cap = c1;
	}
	vr->samples_ns[vr->nsamples] = ns;
	vr->round[vr->nsamples] = round;
	vr->nsamples++;
	return 0;
}

/* Appends plan to the variant's evaluated alternatives unless it is there. */
static int add_alt(const struct col_profile *p, const struct col_block *b,
		   const struct ops_plan *plan, const char *why, struct col_variant_run *vr,
		   struct opr_error *err)
{
	for (size_t i = 0; i < vr->nalts; i++)
		if (ops_plan_equal(&vr->alts[i].plan, plan))
			return 0;
	struct ops_plan_eval *a = realloc(vr->alts, (vr->nalts + 1) * sizeof *a);
	if (!a)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	vr->alts = a;
	struct ops_plan_eval *e = &vr->alts[vr->nalts];
	int rc = ops_plan_evaluate(&p->envelope, &b->work, plan, e, err);
	if (rc)
		return rc;
	e->rejected = !e->fits;
	if (e->fits)
		snprintf(e->reason, sizeof e->reason, "%s", why);
	vr->nalts++;
	return 0;
}

/* Chooses the plan of one variant: the planner's best for "auto", the pinned
 * plan when it fits, else the best fitting plan (a mapping fallback). */
static int plan_variant(const struct col_profile *p, const struct col_block *b,
			const struct col_variant *v, struct col_variant_run *vr,
			struct opr_error *err)
{
	int rc = ops_plan_search(&p->envelope, &b->work, v->fused, &vr->alts, &vr->nalts, err);
	if (!rc) {
		vr->plan_was_auto = v->plan_auto;
		rc = ops_plan_resolve(&p->envelope, &b->work, v->plan_auto ? NULL : &v->plan, v->fused,
				      &vr->plan, &vr->fell_back, vr->plan_note, sizeof vr->plan_note, err);
	}
	/* a block no plan fits is a profile error: point at the variant */
	if (rc == OPR_ELIMIT && err) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		return opr_error_at(err, rc, p->path, v->line > 0 ? v->line : b->line,
				    v->line > 0 ? v->col : b->col, "block '%s' %s: %s", b->name,
				    v == &b->baseline ? "baseline" : "candidate", msg);
	}
	/* the worksheet lists the plan that ran and a pinned one that did not
	 * fit, even when the planner's own enumeration did not produce them */
	if (!rc && !v->plan_auto) {
		struct ops_plan pinned = v->plan;
		pinned.fused = v->fused;
		rc = add_alt(p, b, &pinned, "pinned in the profile", vr, err);
	}
	if (!rc)
		rc = add_alt(p, b, &vr->plan, "the plan that ran", vr, err);
	return rc;
}

/* One digest over every input tensor, in declaration order: the proof that
 * a replay saw bit-identical inputs. */
static void digest_inputs(const struct ops_instance *inst, char out[65])
{
	crypto_hash_sha256_state st;
	unsigned char h[crypto_hash_sha256_BYTES];
	static const char hex[] = "0123456789abcdef";
	crypto_hash_sha256_init(&st);
	for (size_t i = 0; i < ops_instance_ntensors(inst); i++) {
		const char *name;
		size_t bytes;
		int is_output;
		const void *d = ops_instance_tensor_at(inst, i, &name, &bytes, &is_output);
		if (is_output || !d)
			continue;
		crypto_hash_sha256_update(&st, (const unsigned char *)name, strlen(name) + 1);
		crypto_hash_sha256_update(&st, d, bytes);
	}
	crypto_hash_sha256_final(&st, h);
	for (size_t i = 0; i < sizeof h; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[64] = '\0';
}

/* A count-only dry run must give exactly the counters of the real run. */
static int check_dry_run(const struct col_profile *p, struct ops_instance *inst,
			 struct col_variant_run *vr, struct opr_error *err)
{
	struct ops_device *dry = NULL;
	int rc = ops_device_new(&p->envelope, 1, &dry, err);
	if (rc)
		return rc;
	if (vr->fell_back)
		ops_note_fallback(dry);
	rc = ops_instance_run(dry, inst, err);
	if (!rc)
		vr->repro_counters_equal =
			!memcmp(ops_device_counters(dry), &vr->counters, sizeof vr->counters);
	ops_device_free(dry);
	/* the dry run poisoned the output: run for real again so it is valid */
	return rc;
}

/* One real execution on a fresh device: exact counters, launch records,
 * quality and the output digest. */
static int characterise(const struct col_profile *p, struct ops_instance *inst,
			struct col_variant_run *vr, struct opr_error *err)
{
	struct ops_device *dev = NULL;
	int rc = ops_device_new(&p->envelope, 0, &dev, err);
	if (rc)
		return rc;
	if (vr->fell_back)
		ops_note_fallback(dev);
	rc = ops_instance_run(dev, inst, err);
	if (rc)
		goto out_dev;
	vr->counters = *ops_device_counters(dev);
	size_t n;
	const struct ops_launch_rec *l = ops_device_launches(dev, &n);
	vr->launches = malloc((n ? n : 1) * sizeof *l);
	if (!vr->launches) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		goto out_dev;
	}
	memcpy(vr->launches, l, n * sizeof *l);
	vr->nlaunches = n;
	vr->model_ns = ops_device_model_ns(dev);
	rc = ops_instance_quality(inst, &vr->quality, err);
	if (rc)
		goto out_dev;
	size_t bytes;
	const void *y = ops_instance_output(inst, &bytes);
	col_sha256_hex(y, bytes, vr->output_sha256);
	rc = check_dry_run(p, inst, vr, err);
out_dev:
	ops_device_free(dev);
	return rc;
}


/* Host times of one plan spread by ~11% (interquartile range / median) on a
 * shared 2-vCPU VM, so the median of 15 rounds was ~3.5% uncertain and the
 * best of four near-tied plans looked 5-10% ahead of the planner's choice by
 * chance alone; 41 rounds bring that to ~2%. */
#define ALT_ROUNDS 41          /* rounds over the measured alternatives ... */
#define ALT_NS 5000000000LL    /* ... or 5 s per variant, whichever comes first */
#define ALT_MAX (COL_MEASURED_ALTS + 1)

/* One phase of measure_alts: the n plans' instances made with plan `phase`
 * first and the rest in turn, warmed up, then timed in rounds (each in a new
 * seeded order) up to this phase's share of the rounds and of the time
 * (ALT_ROUNDS and ALT_NS split evenly; 3 rounds in all at least).
 * There are as many phases as plans, so each plan is made first once: the
 * same plan made twice measured 2-3% slower (0-8.5% in 15 runs of
 * attention-permute alone) as the copy made first, a gap a driver making
 * instances the same way did not show and whose cause is not found; made
 * first in every run, the choice carried it against every alternative. */
static int alt_phase(const struct col_block *b, uint64_t seed, const struct col_variant_run *vr,
		     const size_t *idx, int n, int phase, struct ops_device *dev,
		     struct ops_instance **inst, int64_t (*t)[ALT_ROUNDS], int *rounds,
		     uint64_t *rng, struct opr_error *err)
{
	const int end = (phase + 1) * ALT_ROUNDS / n, least = (phase + 1) * 3 / n;
	int rc = 0;

	for (int c = 0; c < n && !rc; c++) {
		const int k = (phase + c) % n;
		rc = ops_instance_new(&b->work, &vr->alts[idx[k]].plan, seed, b->name, &inst[k], err);
		for (int w = 0; w < 2 && !rc; w++) /* warm-up */
			rc = ops_instance_run_timed(dev, inst[k], err);
	}
	/* the phase's share of the time, from when its instances are ready */
	const int64_t until = opr_now_ns() + ALT_NS / n;
	while (!rc && *rounds < end && (*rounds < least || opr_now_ns() < until)) {
		int order[ALT_MAX];
		ops_shuffle_order(order, n, rng);
		for (int k = 0; k < n && !rc; k++) {
			ops_device_reset(dev);
			int64_t t0 = opr_now_ns();
			rc = ops_instance_run_timed(dev, inst[order[k]], err);
			t[order[k]][*rounds] = opr_now_ns() - t0;
		}
		(*rounds)++;
	}
	return rc;
}

/* On a calibrated envelope, times the planner's top COL_MEASURED_ALTS fitting
 * plans and the plan that ran, in as many phases as plans (alt_phase: each
 * plan's instance made first in one), each run interleaved in rounds (each
 * round in a new seeded order, METHODS.md "Interleave") so drift of the host
 * falls on every plan alike; the median ns of each. The
 * model-validation section compares these with the plans' modelled times
 * (analyze/validate.c). */
static int measure_alts(const struct col_profile *p, const struct col_block *b,
			struct col_variant_run *vr, struct opr_error *err)
{
	vr->alt_measured_ns = malloc((vr->nalts ? vr->nalts : 1) * sizeof *vr->alt_measured_ns);
	if (!vr->alt_measured_ns)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	for (size_t i = 0; i < vr->nalts; i++)
		vr->alt_measured_ns[i] = NAN;
	/* only an envelope measured where the blocks run is validated here */
	if (!p->calibration.present || p->calibration.device != COL_DEV_HOST)
		return 0;
	size_t idx[ALT_MAX];
	struct ops_instance *inst[ALT_MAX] = {NULL};
	struct ops_device *dev = NULL;
	int64_t t[ALT_MAX][ALT_ROUNDS];
	int n = 0, fitting = 0, rc = 0, rounds = 0;
	for (size_t i = 0; i < vr->nalts && n < ALT_MAX; i++) {
		const struct ops_plan_eval *e = &vr->alts[i];
		if (!e->fits)
			continue;
		int top = fitting++ < COL_MEASURED_ALTS;
		if (top || ops_plan_equal(&e->plan, &vr->plan))
			idx[n++] = i;
	}
	rc = ops_device_new(&p->envelope, 0, &dev, err);
	uint64_t rng = p->seed ^ 0x616c7473ULL;
	for (int phase = 0; phase < n && !rc; phase++) {
		rc = alt_phase(b, p->seed, vr, idx, n, phase, dev, inst, t, &rounds, &rng, err);
		for (int k = 0; k < n; k++) {
			ops_instance_free(inst[k]);
			inst[k] = NULL;
		}
	}
	/* paired: the choice (idx[0], the first fitting plan) over each plan,
	 * round by round, so that what drifts between rounds cancels */
	vr->alt_vs_choice = malloc((vr->nalts ? vr->nalts : 1) * 3 * sizeof *vr->alt_vs_choice);
	if (!rc && !vr->alt_vs_choice)
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
	for (size_t i = 0; vr->alt_vs_choice && i < 3 * vr->nalts; i++)
		vr->alt_vs_choice[i] = NAN;
	for (int k = 0; k < n && !rc && rounds > 0; k++) {
		double q[ALT_ROUNDS], *o = &vr->alt_vs_choice[3 * idx[k]];
		for (int i = 0; i < rounds; i++)
			q[i] = t[k][i] > 0 ? (double)t[0][i] / (double)t[k][i] : NAN;
		qsort(q, (size_t)rounds, sizeof q[0], cmp_double);
		o[0] = rounds % 2 ? q[rounds / 2] : 0.5 * (q[rounds / 2 - 1] + q[rounds / 2]);
		if (col_quantile_ci95(q, (size_t)rounds, 0.5, &o[1], &o[2]))
			o[1] = o[2] = NAN;
	}
	for (int k = 0; k < n && !rc && rounds > 0; k++) {
		qsort(t[k], (size_t)rounds, sizeof t[k][0], cmp_i64);
		vr->alt_measured_ns[idx[k]] = rounds % 2 ? (double)t[k][rounds / 2]
					 : 0.5 * ((double)t[k][rounds / 2 - 1] + (double)t[k][rounds / 2]);
	}
	for (int k = 0; k < n; k++)
		ops_instance_free(inst[k]);
	ops_device_free(dev);
	return rc;
}

struct sampler {
	struct col_papi *papi;
	struct col_hostcount *hc;        /* host software counters, NULL only on OOM paths */
	size_t nevents;
	long long *before, *after;
	int64_t *scratch;
	size_t scratch_cap;
};

/* Room for the host counters of rounds [0, n): one batch per round per variant. */
static int hc_rounds_grow(struct col_variant_run *vr, size_t n, struct opr_error *err)
{
	while (vr->nhc_rounds < n) {
		if (OPR_GROW(vr->hc_rounds, vr->nhc_rounds, vr->hc_rounds_cap, 64))
			return opr_error_set(err, OPR_ENOMEM, "out of memory");
		memset(vr->hc_rounds[vr->nhc_rounds++], 0, sizeof *vr->hc_rounds);
	}
	return 0;
}

/* Runs `reps` timed executions of one variant; PAPI read around the batch
 * (or around each sample when per_sample). */
static int run_batch(struct sampler *s, struct ops_device *dev, struct ops_instance *inst,
		     struct col_variant_run *vr, size_t *cap, int reps, int32_t round,
		     struct opr_error *err)
{
	long long hc0[COL_NHC], hc1[COL_NHC];
	int rc = 0;
	if ((rc = hc_rounds_grow(vr, (size_t)round + 1, err)))
		return rc;
	/* the sde:::opreview::* events read the bound device: this batch's */
	ops_sde_bind(dev);
	if (s->papi && (rc = col_papi_read(s->papi, s->before, err)))
		goto out;
	col_hostcount_read(s->hc, hc0);
	for (int i = 0; i < reps; i++) {
		int64_t t0 = opr_now_ns();
		rc = ops_instance_run_timed(dev, inst, err);
		int64_t t1 = opr_now_ns();
		if (rc || (rc = col_sample_push(vr, cap, t1 - t0, round, err)))
			goto out;
	}
	col_hostcount_read(s->hc, hc1);
	for (int c = 0; c < COL_NHC; c++) {
		vr->hc_rounds[round][c] = hc1[c] - hc0[c];
		vr->hc_totals[c] += hc1[c] - hc0[c];
	}
	if (s->papi) {
		if ((rc = col_papi_read(s->papi, s->after, err)))
			goto out;
		for (size_t e = 0; e < s->nevents; e++)
			vr->event_totals[e] += s->after[e] - s->before[e];
	}
out:
	ops_sde_bind(NULL);
	return rc;
}

static int enough(struct sampler *s, const struct col_variant_run *vr, int64_t need)
{
	if ((int64_t)vr->nsamples < need)
		return 0;
	return quantile_ci_rel(vr->samples_ns, vr->nsamples, 0.95, s->scratch) <= CI_TARGET;
}

int64_t col_samples_needed(const struct col_profile *p)
{
	/* a p99 claim needs its two-sided CI: the analyzer's count, asked of
	 * the same definition */
	const int64_t p99_min = (int64_t)opr_min_samples(0.99, 0.95);
	return p->budget.min_samples > p99_min ? p->budget.min_samples : p99_min;
}

int col_p95_ci_enough(const struct col_variant_run *vr, int64_t need, int64_t **scratch,
		      size_t *scratch_cap, struct opr_error *err)
{
	if ((int64_t)vr->nsamples < need)
		return 0;
	if (vr->nsamples > *scratch_cap) {
		int64_t *p = realloc(*scratch, vr->nsamples * 2 * sizeof *p);
		if (!p)
			return opr_error_set(err, OPR_ENOMEM, "out of memory");
		*scratch = p;
		*scratch_cap = vr->nsamples * 2;
	}
	return quantile_ci_rel(vr->samples_ns, vr->nsamples, 0.95, *scratch) <= CI_TARGET;
}

static int grow_scratch(struct sampler *s, size_t n, struct opr_error *err)
{
	if (n <= s->scratch_cap)
		return 0;
	int64_t *p = realloc(s->scratch, n * 2 * sizeof *p);
	if (!p)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	s->scratch = p;
	s->scratch_cap = n * 2;
	return 0;
}

static int sample_block(const struct col_run *run, struct sampler *s, struct col_block_run *br,
			struct ops_instance *inst[2], double budget_s, int progress,
			uint64_t *rng, struct opr_error *err)
{
	const struct col_profile *p = run->profile;
	struct ops_device *dev[2] = {NULL, NULL};
	size_t cap[2] = {0, 0};
	int rc = 0;
	for (int v = 0; v < 2; v++) {
		if ((rc = ops_device_new(&p->envelope, 0, &dev[v], err)))
			goto out;
		br->v[v].event_totals = calloc(run->nevents ? run->nevents : 1, sizeof(long long));
		if (!br->v[v].event_totals) {
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
			goto out;
		}
	}
	/* warm-up: caches, page faults, branch predictors */
	int64_t t_first[2] = {0, 0};
	for (int v = 0; v < 2; v++) {
		int64_t t0 = opr_now_ns(), t = t0;
		int runs = 0;
		while (runs < 3 || (t - t0 < WARMUP_NS && runs < 1000)) {
			if ((rc = ops_instance_run_timed(dev[v], inst[v], err)))
				goto out;
			runs++;
			t = opr_now_ns();
		}
		t_first[v] = (t - t0) / runs;
	}
	/* reps per round: short bodies get several per round so the clock and
	 * PAPI reads stay small against them; long ones one each */
	int64_t t_run = t_first[0] > t_first[1] ? t_first[0] : t_first[1];
	int reps = REPS_RULE[sizeof REPS_RULE / sizeof REPS_RULE[0] - 1].reps;
	for (size_t k = 0; k < sizeof REPS_RULE / sizeof REPS_RULE[0]; k++)
		if (t_run > REPS_RULE[k].above_ns) {
			reps = REPS_RULE[k].reps;
			break;
		}
	br->reps_per_round = reps;
	for (int v = 0; v < 2; v++)
		br->v[v].events_per_sample = reps == 1;
	/* a p99 claim needs its two-sided CI: the analyzer's count, asked of
	 * the same definition */
	const int64_t p99_min = (int64_t)opr_min_samples(0.99, 0.95);
	int64_t need = p->budget.min_samples > p99_min ? p->budget.min_samples : p99_min;
	int64_t deadline = opr_now_ns() + (int64_t)(budget_s * 1e9);
	int round = 0;
	for (;;) {
		int first = (int)(ops_splitmix64(rng) & 1); /* randomised A B / B A */
		for (int k = 0; k < 2; k++) {
			int v = k ? 1 - first : first;
			if ((rc = run_batch(s, dev[v], inst[v], &br->v[v], &cap[v], reps, round, err)))
				goto out;
		}
		round++;
		size_t n = br->v[0].nsamples > br->v[1].nsamples ? br->v[0].nsamples
								  : br->v[1].nsamples;
		if ((rc = grow_scratch(s, n, err)))
			goto out;
		int64_t t = opr_now_ns();
		if (progress && round % 16 == 0)
			fprintf(stderr, "\ropreview: %-24s baseline %6zu  candidate %6zu samples  %5.1f s left ",
				br->block->name, br->v[0].nsamples, br->v[1].nsamples,
				(double)(deadline - t) / 1e9);
		if ((int64_t)br->v[0].nsamples >= p->budget.max_samples &&
		    (int64_t)br->v[1].nsamples >= p->budget.max_samples) {
			snprintf(br->stop_reason, sizeof br->stop_reason,
				 "max_samples %lld reached", (long long)p->budget.max_samples);
			break;
		}
		if (round % 4 == 0 && enough(s, &br->v[0], need) && enough(s, &br->v[1], need)) {
			snprintf(br->stop_reason, sizeof br->stop_reason,
				 "p95 95%% CI within +-2%% with >= %lld samples per variant",
				 (long long)need);
			break;
		}
		if (t >= deadline) {
			if ((int64_t)br->v[0].nsamples < p99_min || (int64_t)br->v[1].nsamples < p99_min)
				snprintf(br->stop_reason, sizeof br->stop_reason,
					 "budget spent before %d samples per variant: too few for a p99 claim",
					 (int)p99_min);
			else
				snprintf(br->stop_reason, sizeof br->stop_reason,
					 "budget spent before p95's CI reached +-2%%");
			break;
		}
	}
	if (progress)
		fprintf(stderr, "\r%90s\r", "");
	br->nrounds = round;
out:
	ops_device_free(dev[0]);
	ops_device_free(dev[1]);
	return rc;
}

/* Turns the device model's launch records into the pipeline's service
 * description: per launch, overhead, on-chip time and GLOBAL bytes. */
static int pipeline_cis(struct col_variant_run *vr, struct opr_error *err)
{
	size_t n = (size_t)vr->pipe.n;
	vr->pipe_p95_lo = vr->pipe_p95_hi = vr->pipe_p99_lo = vr->pipe_p99_hi = NAN;
	if (!n || !vr->pipe.latency_ns)
		return 0;
	double *s = malloc(n * sizeof *s);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	memcpy(s, vr->pipe.latency_ns, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_double);
	col_quantile_ci95(s, n, 0.95, &vr->pipe_p95_lo, &vr->pipe_p95_hi);
	col_quantile_ci95(s, n, 0.99, &vr->pipe_p99_lo, &vr->pipe_p99_hi);
	free(s);
	return 0;
}

/* Two counterfactuals, all else equal (same arrivals, same launches): without
 * bandwidth contention (enough GLOBAL bandwidth for every core's DMA peak at
 * once), and with every transfer hidden behind compute. */
static int uncontended(const struct col_pipe_config *cfg, const struct col_pipe_launch *l,
		       struct col_variant_run *vr, struct opr_error *err)
{
	struct col_pipe_config free_cfg = *cfg;
	struct col_pipe_result r;
	free_cfg.global_bw_gbps = cfg->dma_peak_gbps * cfg->cores;
	int rc = col_pipe_simulate(&free_cfg, l, vr->nlaunches, &r, err);
	if (rc)
		return rc;
	vr->pipe_free_p95_ns = r.p95_ns;
	vr->pipe_free_p99_ns = r.p99_ns;
	col_pipe_result_release(&r);
	struct col_pipe_launch *hidden = malloc((vr->nlaunches ? vr->nlaunches : 1) * sizeof *hidden);
	if (!hidden)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	for (size_t i = 0; i < vr->nlaunches; i++) {
		hidden[i] = l[i];
		hidden[i].double_buffer = 1;
	}
	rc = col_pipe_simulate(cfg, hidden, vr->nlaunches, &r, err);
	free(hidden);
	if (rc)
		return rc;
	vr->pipe_hidden_p95_ns = r.p95_ns;
	col_pipe_result_release(&r);
	return 0;
}

/* Both variants' queue-wait histograms over the same bins (linear over
 * [0, the larger maximum wait]) so they can be compared bin by bin. */
static void common_hist(struct col_block_run *br)
{
	double top = 0;
	for (int v = 0; v < 2; v++)
		top = fmax(top, br->v[v].pipe.wait_max_ns);
	for (int v = 0; v < 2; v++) {
		struct col_pipe_result *r = &br->v[v].pipe;
		size_t nb = r->hist_bins;
		if (!nb || !r->hist_edges_ns || !r->hist_counts || !r->wait_ns)
			continue;
		for (size_t i = 0; i <= nb; i++)
			r->hist_edges_ns[i] = top * (double)i / (double)nb;
		memset(r->hist_counts, 0, nb * sizeof *r->hist_counts);
		for (int64_t k = 0; k < r->n; k++) {
			size_t i = top > 0 ? (size_t)(r->wait_ns[k] / top * (double)nb) : 0;
			r->hist_counts[i < nb ? i : nb - 1]++;
		}
	}
}

/* A GPU run's simulation (col_pipe_device_launches): the measured launch
 * times, one server, the trace kept for the replay on the device. */
static int simulate_gpu(struct col_pipe_config *cfg, struct col_variant_run *vr,
			struct opr_error *err)
{
	const size_t n = vr->ndev_launch;
	struct col_pipe_launch *l = calloc(n, sizeof *l);
	if (!l)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	col_pipe_device_launches(vr->dev_launch_ns, n, vr->launches, vr->nlaunches, l);
	col_pipe_device_config(cfg);
	int rc = col_pipe_simulate(cfg, l, n, &vr->pipe, err);
	cfg->keep_trace = 0;
	if (!rc)
		rc = pipeline_cis(vr, err);
	if (!rc)
		rc = uncontended(cfg, l, vr, err);
	if (!rc)
		rc = col_pipe_sweep(cfg, l, n, &vr->sweep, &vr->nsweep, err);
	free(l);
	return rc;
}

static int simulate_pipeline(const struct col_profile *p, struct col_block_run *br,
			     struct opr_error *err)
{
	for (int v = 0; v < 2; v++) {
		struct col_variant_run *vr = &br->v[v];
		struct col_pipe_config cfg;
		col_pipe_config_from_profile(p, br->block, &cfg);
		if (vr->dev_launch_ns && vr->ndev_launch) {
			int rc = simulate_gpu(&cfg, vr, err);
			if (rc)
				return rc;
			continue;
		}
		struct col_pipe_launch *l = calloc(vr->nlaunches ? vr->nlaunches : 1, sizeof *l);
		if (!l)
			return opr_error_set(err, OPR_ENOMEM, "out of memory");
		for (size_t i = 0; i < vr->nlaunches; i++) {
			const struct ops_launch_rec *r = &vr->launches[i];
			l[i].overhead_ns = r->overhead_ns;
			/* The pipeline places a job on one core: the launch's on-chip
			 * time per core, over cores_used cores, becomes one core's
			 * time; the model says whether the (contended) transfer
			 * overlaps it. */
			int cores = r->cores_used > 0 ? r->cores_used : 1;
			l[i].compute_ns = ops_model_onchip_ns(&p->envelope, r, &l[i].double_buffer) *
					  cores;
			l[i].global_bytes = (double)r->global_bytes;
		}
		int rc = col_pipe_simulate(&cfg, l, vr->nlaunches, &vr->pipe, err);
		if (!rc)
			rc = pipeline_cis(vr, err);
		if (!rc)
			rc = uncontended(&cfg, l, vr, err);
		if (!rc)
			rc = col_pipe_sweep(&cfg, l, vr->nlaunches, &vr->sweep, &vr->nsweep, err);
		free(l);
		if (rc)
			return rc;
	}
	return 0;
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int open_papi(struct col_run *run, struct sampler *s, int no_papi, struct opr_error *err)
{
	const char *names[COL_MAX_RUN_EVENTS];
	size_t n = 0;
	for (const char *const *d = col_papi_default_events(); *d && n < COL_MAX_RUN_EVENTS; d++)
		names[n++] = *d;
	for (int i = 0; i < run->profile->nevents && n < COL_MAX_RUN_EVENTS; i++)
		names[n++] = run->profile->events[i];
	if (no_papi) {
		for (size_t i = 0; i < n; i++) {
			snprintf(run->events[i].name, sizeof run->events[i].name, "%s", names[i]);
			snprintf(run->events[i].reason, sizeof run->events[i].reason,
				 "PAPI disabled by --no-papi");
		}
		run->nevents = n;
		snprintf(run->papi_status, sizeof run->papi_status, "disabled by --no-papi");
		return 0;
	}
	int rc = col_papi_open(names, n, &s->papi, err);
	if (rc)
		return rc;
	size_t ne;
	const struct col_event *ev = col_papi_events(s->papi, &ne);
	run->nevents = ne < COL_MAX_RUN_EVENTS ? ne : COL_MAX_RUN_EVENTS;
	memcpy(run->events, ev, run->nevents * sizeof *ev);
	s->nevents = run->nevents;
	s->before = calloc(s->nevents + 1, sizeof *s->before);
	s->after = calloc(s->nevents + 1, sizeof *s->after);
	if (!s->before || !s->after)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	snprintf(run->papi_status, sizeof run->papi_status, "%s", col_papi_status(s->papi));
	if ((rc = col_papi_start(s->papi, err)))
		return rc;
	rc = col_papi_read_cost(s->papi, 200, &run->papi_read_ns, err);
	return rc;
}

static int check_memory(const struct col_profile *p, const struct col_block *b,
			struct opr_error *err)
{
	uint64_t need = 2 * ops_workload_bytes(&b->work); /* baseline and candidate */
	double cap = p->budget.memory_gib * 1073741824.0;
	if ((double)need > cap)
		return opr_error_at(err, OPR_ELIMIT, p->path, b->line, b->col,
				    "block '%s' needs %.3g GiB of host memory; the cap is %.3g GiB (budget.memory_gib)",
				    b->name, (double)need / 1073741824.0, p->budget.memory_gib);
	return 0;
}

static int collect_block(struct col_run *run, struct sampler *s, struct col_gpu_ctx *gpu,
			 struct col_block_run *br, double budget_s, int progress, uint64_t *rng,
			 struct opr_error *err)
{
	const struct col_profile *p = run->profile;
	const struct col_block *b = br->block;
	struct ops_instance *inst[2] = {NULL, NULL};
	struct col_gpu_inst *gi[2] = {NULL, NULL};
	int rc = check_memory(p, b, err);
	if (rc)
		return rc;
	for (int v = 0; v < 2 && !rc; v++) {
		const struct col_variant *var = v ? &b->candidate : &b->baseline;
		rc = plan_variant(p, b, var, &br->v[v], err);
		if (!rc)
			rc = ops_instance_new(&b->work, &br->v[v].plan, p->seed, b->name, &inst[v], err);
		if (!rc)
			rc = characterise(p, inst[v], &br->v[v], err);
		if (!rc)
			digest_inputs(inst[v], br->v[v].input_sha256);
		/* on the GPU, quality and the output digest are the GPU's */
		if (!rc && gpu)
			rc = col_gpu_prepare(gpu, inst[v], &br->v[v], &gi[v], err);
	}
	if (gpu) {
		if (!rc)
			rc = col_gpu_sample(run, gpu, br, gi, budget_s, progress, rng, err);
		for (int v = 0; v < 2 && !rc; v++)
			rc = col_gpu_launch_times(gpu, gi[v], &br->v[v], err);
		col_gpu_inst_free(gi[0]);
		col_gpu_inst_free(gi[1]);
		if (!rc)
			rc = simulate_pipeline(p, br, err);
		if (!rc)
			common_hist(br);
		for (int v = 0; v < 2 && !rc; v++)
			rc = col_gpu_replay(gpu, inst[v], &br->v[v], err);
		for (int v = 0; v < 2 && !rc; v++)
			rc = col_gpu_measure_alts(p, gpu, b, &br->v[v], err);
		ops_instance_free(inst[0]);
		ops_instance_free(inst[1]);
		return rc;
	}
	if (!rc)
		rc = sample_block(run, s, br, inst, budget_s, progress, rng, err);
	for (int v = 0; v < 2 && !rc; v++) {
		size_t bytes;
		char d[65];
		const void *y = ops_instance_output(inst[v], &bytes);
		col_sha256_hex(y, bytes, d);
		br->v[v].repro_output_stable = !strcmp(d, br->v[v].output_sha256);
	}
	if (!rc)
		rc = simulate_pipeline(p, br, err);
	if (!rc)
		common_hist(br);
	for (int v = 0; v < 2 && !rc; v++)
		rc = measure_alts(p, b, &br->v[v], err);
	ops_instance_free(inst[0]);
	ops_instance_free(inst[1]);
	return rc;
}

int col_collect(const struct col_options *opt, struct col_run **out, struct opr_error *err)
{
	return col_collect_block(opt, NULL, out, err);
}

int col_collect_block(const struct col_options *opt, const char *only, struct col_run **out,
		      struct opr_error *err)
{
	struct col_run *run = calloc(1, sizeof *run);
	struct sampler s = {0};
	struct col_gpu_ctx *gpu = NULL;
	if (!run)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	int rc = col_profile_load(opt->profile_path, opt->envelope_dir, &run->profile, err);
	if (rc)
		goto fail;
	if (run->profile->imported[0]) {
		rc = opr_error_at(err, OPR_EINPUT, opt->profile_path, 1, 1,
				  "an imported profile names measurements taken outside opreview: "
				  "opreview cannot collect or replay it");
		goto fail;
	}
	snprintf(run->profile_origin, sizeof run->profile_origin, "%s", opt->profile_path);
	if ((rc = col_device_check(run->profile, err)))
		goto fail;
	col_host_detect(&run->host);
	utc_now(run->started_utc, sizeof run->started_utc);
	run->clock_read_ns = col_clock_read_cost_ns();
	ops_sde_register();
	if ((rc = col_hostcount_open(&s.hc, err)))
		goto fail;
	memcpy(run->hc, col_hostcount_info(s.hc), sizeof run->hc);
	run->hc_recorded = 1;
	if (run->profile->device.kind == COL_DEV_CUDA) {
		/* the host's event sets would count the host waiting on the GPU:
		 * listed unavailable; the GPU's come from the counting pass */
		if ((rc = col_gpu_open(run, &gpu, err)) || (rc = open_papi(run, &s, 1, err)))
			goto fail;
		for (size_t i = 0; i < run->nevents; i++)
			snprintf(run->events[i].reason, sizeof run->events[i].reason,
				 "not read: the blocks ran on cuda device %d; its counters are PAPI's "
				 "cuda component's", run->profile->device.index);
		snprintf(run->papi_status, sizeof run->papi_status,
			 "host event sets not read (device cuda); GPU counters: PAPI %s cuda component",
			 run->gpu.papi_version);
	} else if ((rc = open_papi(run, &s, opt->no_papi, err))) {
		goto fail;
	}
	const struct col_profile *p = run->profile;
	int nrun = 0;
	for (int i = 0; i < p->nblocks; i++)
		nrun += !only || !strcmp(p->blocks[i].name, only);
	if (!nrun) {
		rc = opr_error_set(err, OPR_EUSAGE, "no block '%s' in '%s'", only,
				   opt->profile_path);
		goto fail;
	}
	double scale = opt->budget_scale > 0 ? opt->budget_scale : 1.0;
	double per_block = p->budget.seconds * scale / (p->nblocks ? p->nblocks : 1);
	uint64_t rng = p->seed ^ 0x6f70726576696577ULL; /* round orders */
	int64_t t0 = opr_now_ns();
	for (int i = 0; i < p->nblocks; i++) {
		if (only && strcmp(p->blocks[i].name, only))
			continue;
		struct col_block_run *br = &run->blocks[run->nblocks];
		br->block = &p->blocks[i];
		run->nblocks++;
		if ((rc = collect_block(run, &s, gpu, br, per_block, opt->progress, &rng, err)))
			goto fail;
	}
	run->sampling_seconds = (double)(opr_now_ns() - t0) / 1e9;
	/* the totals of the last batch are read here: an error is the run's */
	if (s.papi && (rc = col_papi_stop(s.papi, s.after, err)))
		goto fail;
	col_papi_close(s.papi);
	col_hostcount_close(s.hc);
	col_gpu_close(gpu);
	free(s.before);
	free(s.after);
	free(s.scratch);
	*out = run;
	return 0;
fail:
	col_papi_close(s.papi);
	col_hostcount_close(s.hc);
	col_gpu_close(gpu);
	free(s.before);
	free(s.after);
	free(s.scratch);
	col_run_free(run);
	return rc;
}

static void variant_release(struct col_variant_run *vr)
{
	free(vr->alts);
	free(vr->alt_measured_ns);
	free(vr->alt_vs_choice);
	free(vr->launches);
	free(vr->samples_ns);
	free(vr->round);
	free(vr->event_totals);
	free(vr->hc_rounds);
	free(vr->gpu_counters);
	col_pipe_result_release(&vr->pipe);
	free(vr->sweep);
	free(vr->dev_launch_ns);
}

void col_run_free(struct col_run *run)
{
	if (!run)
		return;
	for (int i = 0; i < run->nblocks; i++)
		for (int v = 0; v < 2; v++)
			variant_release(&run->blocks[i].v[v]);
	col_profile_free(run->profile);
	free(run);
}
