/* analyze/analyze.c: from a loaded run to findings: tail-first statistics of
 * the host samples, candidate-vs-baseline comparisons with BH control, the
 * bottleneck rules, the fusion and tile-plan worksheet, the validation matrix
 * with rollback triggers, mitigations and the verdict (rules in README
 * "Verdict"). */
#include "analyze_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CONF 0.95
#define ALPHA 0.05
#define NBOOT 2000
#define WS_SHOWN_FIT 1   /* fitting alternatives of the candidate in the packet */
#define WS_SHOWN_UNFIT 1 /* plans over capacity of the candidate in the packet */

void *ana_list_push(struct ana_list *l)
{
	if (l->n == l->cap && opr_grow(&l->items, &l->cap, 16, l->size))
		return NULL;
	void *e = (char *)l->items + l->n * l->size;
	memset(e, 0, l->size);
	l->n++;
	return e;
}

void *ana_list_at(const struct ana_list *l, size_t i)
{
	return (char *)l->items + i * l->size;
}

/* The validation checks, in id order (README "Verdict" is these rows). */
static const struct ana_check_rule check_rules[] = {
	{ANA_CHK_QUALITY, "quality", "numerical quality", "error <= half the profile's threshold",
	 "error above half the threshold, within it", "error above the threshold, or not finite",
	 ANA_ROLLBACK, 0, "profile precision thresholds; the warning share is the precision-loss rule's second"},
	{ANA_CHK_SLA_P95, "sla_p95", "SLA p95", "the simulated p95's CI within the SLA",
	 "the CI straddles the SLA", "the CI above the SLA", ANA_HOLD, 0,
	 "profile sla.p95_us; distribution-free CI of the pipeline simulation"},
	{ANA_CHK_SLA_P99, "sla_p99", "SLA p99", "the simulated p99's CI within the SLA",
	 "the CI straddles the SLA", "the CI above the SLA", ANA_HOLD, 0,
	 "profile sla.p99_us; distribution-free CI of the pipeline simulation"},
	{ANA_CHK_THROUGHPUT, "throughput", "SLA throughput", "simulated throughput >= the SLA", "-",
	 "below the SLA at the offered load", ANA_HOLD, 0, "profile sla.min_throughput_rps"},
	{ANA_CHK_REG_HOST, "regression_host", "regression p95 (host)",
	 "the p95 ratio's CI below 1 + max_regression", "inconclusive, or too few samples to compare",
	 "the ratio's CI above 1 + max_regression, rank test significant after BH", ANA_HOLD, 0,
	 "profile sla.max_regression; round bootstrap ratio CI (Kalibera & Jones), Mann-Whitney, BH"},
	{ANA_CHK_REG_MODEL, "regression_model", "regression (modelled)",
	 "modelled time <= (1 + max_regression) x baseline", "-", "beyond it", ANA_HOLD, 0,
	 "profile sla.max_regression; the device model"},
	{ANA_CHK_REG_PIPE, "regression_pipeline", "regression p95 (pipeline)",
	 "simulated p95 <= (1 + max_regression) x baseline", "-", "beyond it", ANA_HOLD, 0,
	 "profile sla.max_regression; the pipeline simulation"},
	{ANA_CHK_MEMORY, "memory", "memory envelope", "peak SHARED within capacity, no fallback",
	 "a capacity fallback replaced the pinned plan", "peak SHARED over capacity", ANA_HOLD, 0,
	 "envelope shared_capacity_kib"},
	{ANA_CHK_REPRO, "reproducibility", "reproducibility",
	 "dry-run counters identical, output digest stable", "-", "either differs", ANA_ROLLBACK, 0,
	 "seeded inputs; count-only dry run"},
	{ANA_CHK_SDE, "sde", "counters via PAPI SDE", "every SDE event = simulated x runs", "-",
	 "an event differs", ANA_HOLD, 0, "PAPI SDE (sde:::opreview::*) read around the samples"},
	{ANA_CHK_MODEL_ERROR, "model_error", "model error on this host",
	 "median |modelled / measured - 1| within the limit", "-",
	 "beyond it: modelled times are indicative only", ANA_GATES_NOTHING, 0.30,
	 "calibrated envelope; the model's own report (ECM: ~20% on Haswell)"},
	{ANA_CHK_PLANNER, "planner", "planner choice on this host",
	 "the chosen plan measured within the limit of the best measured", "-", "beyond it",
	 ANA_GATES_NOTHING, 0.10, "calibrated envelope; measured alternatives"},
};

const struct ana_check_rule *ana_check_rules(size_t *n)
{
	*n = sizeof check_rules / sizeof *check_rules;
	return check_rules;
}

const struct ana_check_rule *ana_check_rule(enum ana_check_id id)
{
	return &check_rules[id < ANA_NCHECKS ? id : 0];
}

enum ana_check_id ana_check_id_named(const char *name)
{
	if (!strcmp(name, "regression p95 (imported)"))
		return ANA_CHK_REG_HOST;
	for (size_t i = 0; i < sizeof check_rules / sizeof *check_rules; i++)
		if (!strcmp(check_rules[i].name, name))
			return check_rules[i].id;
	return ANA_CHK_SDE; /* a check of no row: a HOLD when it fails */
}

/* Most severe first; verdict() applies them in this order. */
static const struct ana_verdict_rule verdict_rules[] = {
	{ANA_ROLLBACK, "a candidate check whose FAIL rolls back fails (numerical quality, reproducibility)"},
	{ANA_HOLD, "any other candidate check fails; or a check warns and no mitigation is known"},
	{ANA_SHIP_WITH_MITIGATIONS, "no candidate check fails, and a check warns or a mitigation is proposed: "
				    "the mitigations table lists at least one"},
	{ANA_SHIP, "every candidate check passes and nothing needs mitigating"},
};

const struct ana_verdict_rule *ana_verdict_rules(size_t *n)
{
	*n = sizeof verdict_rules / sizeof *verdict_rules;
	return verdict_rules;
}

const char *ana_status_name(enum ana_status s)
{
	return s == ANA_PASS ? "PASS" : s == ANA_WARN ? "WARN" : "FAIL";
}

const char *ana_verdict_name(enum ana_verdict v)
{
	static const char *const n[] = {"SHIP", "SHIP WITH MITIGATIONS", "HOLD", "ROLLBACK"};
	return v <= ANA_ROLLBACK ? n[v] : "HOLD";
}

int ana_verdict_exit(enum ana_verdict v)
{
	static const int codes[] = {OPR_EXIT_OK, OPR_EXIT_SHIP_MITIGATE, OPR_EXIT_HOLD,
				    OPR_EXIT_ROLLBACK};
	return v <= ANA_ROLLBACK ? codes[v] : OPR_EXIT_HOLD;
}

static int is_requant(const struct col_block *b)
{
	return (b->work.group == OPS_G_QGEMM || b->work.group == OPS_G_QGEMM_DQ_BIAS_ACT) &&
	       b->work.quant.out == OPS_S8;
}

const char *ana_quality_name(const struct col_block *b)
{
	return is_requant(b) ? "max |error| (LSB)" : "relative L2 error";
}

void ana_quality_metric(const struct col_profile *p, const struct col_block *b,
			const struct col_variant_run *vr, double *value, double *threshold)
{
	if (is_requant(b)) {
		*value = vr->quality.max_abs_lsb;
		*threshold = p->precision.int8_max_abs_lsb;
		return;
	}
	*value = vr->quality.rel_l2;
	switch (b->work.dtype) {
	case OPS_F16:
		*threshold = p->precision.fp16_max_rel_l2;
		break;
	case OPS_BF16:
		*threshold = p->precision.bf16_max_rel_l2;
		break;
	default:
		/* fp32 storage and dequantised int8 (fp32 output) */
		*threshold = p->precision.fp32_max_rel_l2;
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ---- statistics ------------------------------------------------------------- */

static int latency_stats(const struct col_variant_run *vr, struct ana_latency *l,
			 struct opr_error *err)
{
	memset(l, 0, sizeof *l);
	l->n = vr->nsamples;
	if (!l->n)
		return 0;
	int64_t *s = malloc(l->n * sizeof *s);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	memcpy(s, vr->samples_ns, l->n * sizeof *s);
	qsort(s, l->n, sizeof *s, cmp_i64);
	int rc = ana_quantile_ci(s, l->n, 0.50, CONF, &l->p50, err);
	if (!rc)
		rc = ana_quantile_ci(s, l->n, 0.90, CONF, &l->p90, err);
	if (!rc)
		rc = ana_quantile_ci(s, l->n, 0.95, CONF, &l->p95, err);
	if (!rc)
		rc = ana_quantile_ci(s, l->n, 0.99, CONF, &l->p99, err);
	double sum = 0;
	for (size_t i = 0; i < l->n; i++)
		sum += (double)s[i];
	l->mean_ns = sum / (double)l->n;
	l->max_ns = (double)s[l->n - 1];
	free(s);
	return rc;
}

/* Regroups the samples by round: the collector stores samples in order with
 * their round index, both variants sharing round numbers. */
struct round_design {
	int64_t *a, *b;
	size_t *a_off, *b_off;
	struct ana_rounds r;
};

static void design_free(struct round_design *d)
{
	free(d->a);
	free(d->b);
	free(d->a_off);
	free(d->b_off);
}

static int build_rounds(const struct col_block_run *br, struct round_design *d,
			struct opr_error *err)
{
	const struct col_variant_run *A = &br->v[0], *B = &br->v[1];
	memset(d, 0, sizeof *d);
	int32_t maxr = -1;
	for (size_t i = 0; i < A->nsamples; i++)
		if (A->round[i] > maxr)
			maxr = A->round[i];
	for (size_t i = 0; i < B->nsamples; i++)
		if (B->round[i] > maxr)
			maxr = B->round[i];
	size_t R = (size_t)(maxr + 1);
	d->a = malloc((A->nsamples + 1) * sizeof *d->a);
	d->b = malloc((B->nsamples + 1) * sizeof *d->b);
	d->a_off = calloc(R + 1, sizeof *d->a_off);
	d->b_off = calloc(R + 1, sizeof *d->b_off);
	if (!d->a || !d->b || !d->a_off || !d->b_off)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	/* keep only rounds where both variants have samples (counting sort) */
	size_t *ca = calloc(R + 1, sizeof *ca), *cb = calloc(R + 1, sizeof *cb);
	if (!ca || !cb) {
		free(ca);
		free(cb);
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < A->nsamples; i++)
		ca[A->round[i]]++;
	for (size_t i = 0; i < B->nsamples; i++)
		cb[B->round[i]]++;
	size_t nr = 0, na = 0, nb = 0;
	for (size_t r = 0; r < R; r++) {
		if (!ca[r] || !cb[r])
			continue;
		for (size_t i = 0; i < A->nsamples; i++)
			if ((size_t)A->round[i] == r)
				d->a[na++] = A->samples_ns[i];
		for (size_t i = 0; i < B->nsamples; i++)
			if ((size_t)B->round[i] == r)
				d->b[nb++] = B->samples_ns[i];
		nr++;
		d->a_off[nr] = na;
		d->b_off[nr] = nb;
	}
	free(ca);
	free(cb);
	d->r = (struct ana_rounds){d->a, d->b, d->a_off, d->b_off, nr};
	return 0;
}

static int compare_block(const struct ana_ctx *cx, int b, struct ana_list *cmps,
			 struct ana_block *ab, struct opr_error *err)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	struct round_design d;
	int rc = build_rounds(br, &d, err);
	if (rc) {
		design_free(&d);
		return rc;
	}
	static const double qs[] = {0.50, 0.95, 0.99};
	for (size_t i = 0; i < 3 && !rc; i++) {
		struct ana_block_cmp *c = ana_list_push(cmps);
		if (!c) {
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
			break;
		}
		c->block = b;
		c->q = qs[i];
		size_t need = ana_min_samples(qs[i], CONF);
		if (d.r.nrounds < 4 || br->v[0].nsamples < need || br->v[1].nsamples < need) {
			snprintf(c->reason, sizeof c->reason,
				 "not enough samples: %zu and %zu, %zu rounds; p%.0f needs %zu per variant",
				 br->v[0].nsamples, br->v[1].nsamples, d.r.nrounds, 100 * qs[i], need);
			continue;
		}
		struct ana_compare_opts o = {qs[i], cx->run->profile->sla.max_regression, ALPHA, CONF,
					     NBOOT, cx->run->profile->seed + (uint64_t)b * 7919 + i};
		struct opr_error e2 = {0};
		if (ana_compare_rounds(&d.r, &o, &c->c, &e2)) {
			snprintf(c->reason, sizeof c->reason, "%s", e2.msg);
			continue;
		}
		c->available = 1;
	}
	if (!rc && d.r.nrounds >= 4) {
		struct opr_error e2 = {0};
		if (ana_noise_floor(&d.r, 0.5, NBOOT, cx->run->profile->seed, CONF, &ab->noise, &e2))
			ab->noise.nrounds = 0;
	}
	design_free(&d);
	return rc;
}

/* Benjamini-Hochberg across every available comparison of the run, then the
 * outcomes are re-derived with the adjusted p-values. */
static int adjust_all(struct ana_list *cmps, double threshold, struct opr_error *err)
{
	size_t n = 0;
	double *p = malloc((cmps->n + 1) * sizeof *p), *adj = malloc((cmps->n + 1) * sizeof *adj);
	if (!p || !adj) {
		free(p);
		free(adj);
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < cmps->n; i++) {
		struct ana_block_cmp *c = ana_list_at(cmps, i);
		if (c->available)
			p[n++] = c->c.p_rank;
	}
	int rc = n ? ana_bh(p, n, ALPHA, adj, NULL, err) : 0;
	for (size_t i = 0, k = 0; !rc && i < cmps->n; i++) {
		struct ana_block_cmp *c = ana_list_at(cmps, i);
		if (!c->available)
			continue;
		c->c.p_adjusted = adj[k++];
		struct ana_compare_opts o = {c->q, threshold, ALPHA, CONF, NBOOT, 0};
		ana_classify(&c->c, &o);
	}
	free(p);
	free(adj);
	return rc;
}

/* ---- worksheet --------------------------------------------------------------- */

/* Roofline expectation of a plan: arithmetic intensity against the machine
 * balance of the envelope, and launch overhead against the rest. */
static const char *expected_class(const struct ops_envelope *env, enum ops_dtype dt,
				  const struct ops_counters *c, uint64_t global_bytes,
				  uint64_t launches, double model_ns)
{
	uint64_t work = c->elem_ops;
	for (int t = 0; t < OPS_NDTYPES; t++)
		work += 2 * c->macs[t];
	double overhead = (double)launches * env->launch_overhead_us * 1e3;
	if (model_ns > 0 && overhead / model_ns >= ana_rule(ANA_LAUNCH_OVERHEAD_BOUND)->limit)
		return ana_class_name(ANA_LAUNCH_OVERHEAD_BOUND);
	double rate = env->tops[dt == OPS_U8 ? OPS_S8 : dt] * 1e12 * env->clock_scale;
	double balance = rate / (env->global_bw_gbps * 1e9); /* ops per byte */
	double ai = global_bytes ? (double)work / (double)global_bytes : INFINITY;
	return ana_class_name(ai < balance ? ANA_GLOBAL_BW_BOUND : ANA_COMPUTE_BOUND);
}

static int worksheet_block(const struct ana_ctx *cx, int b, const struct ana_block *ab,
			   struct ana_list *ws, struct ana_list *rejected)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	const struct ops_envelope *env = &cx->run->profile->envelope;
	enum ops_group g = br->block->work.group;
	enum ops_dtype dt = g == OPS_G_QGEMM || g == OPS_G_QGEMM_DQ_BIAS_ACT ? br->block->work.quant.a
									     : br->block->work.dtype;
	double base_overhead = (double)br->v[0].counters.launches * env->launch_overhead_us * 1e3;
	for (int v = 0; v < 2; v++) {
		const struct col_variant_run *vr = &br->v[v];
		int shown_fit = 0, shown_unfit = 0;
		for (size_t i = 0; i < vr->nalts; i++) {
			const struct ops_plan_eval *e = &vr->alts[i];
			struct ana_worksheet_row *w = ana_list_push(ws);
			if (!w)
				return OPR_ENOMEM;
			w->block = b;
			w->variant = v;
			snprintf(w->group, sizeof w->group, "%s", ops_group_name(g));
			ops_plan_describe(g, &e->plan, w->plan, sizeof w->plan);
			w->fused = e->plan.fused;
			w->footprint_bytes = e->footprint_bytes;
			w->capacity_bytes = (uint64_t)(env->shared_capacity_kib * 1024);
			/* the planner's ops_global_bytes / ops_reuse_ratio: the
			 * definitions the variant's evidence uses too */
			w->global_bytes = e->global_bytes;
			w->reuse_ratio = e->reuse_ratio;
			w->launches = e->launches;
			w->launch_overhead_saved_ns =
				base_overhead - (double)e->launches * env->launch_overhead_us * 1e3;
			w->model_ns = e->model_ns;
			snprintf(w->expected_bottleneck, sizeof w->expected_bottleneck, "%s",
				 !e->fits ? "does not fit"
					 : expected_class(env, dt, &vr->counters, e->global_bytes,
							  e->launches, e->model_ns));
			snprintf(w->shift, sizeof w->shift, "%s -> %s", ana_class_name(ab->primary[0]),
				 w->expected_bottleneck);
			w->chosen = ops_plan_equal(&e->plan, &vr->plan);
			w->fits = e->fits;
			/* the packet shows the chosen plan, the best few fitting
			 * alternatives and the first plans that did not fit; the
			 * rest stay in findings.json and the workbook */
			w->shown = w->chosen || (v == COL_CANDIDATE &&
						 (e->fits ? shown_fit++ < WS_SHOWN_FIT
							  : shown_unfit++ < WS_SHOWN_UNFIT));
			if (w->chosen)
				snprintf(w->reason, sizeof w->reason, "%s",
					 vr->plan_note[0] ? vr->plan_note : "chosen");
			else if (!strncmp(e->reason, "chosen: ", 8))
				snprintf(w->reason, sizeof w->reason, "the planner's best (%s); not run: %s",
					 e->reason + 8, vr->fell_back ? "a fallback replaced the pinned plan"
								    : "the profile pins another plan");
			else
				snprintf(w->reason, sizeof w->reason, "%s", e->reason);
			if (!w->chosen && rejected) {
				struct ana_worksheet_row *r = ana_list_push(rejected);
				if (!r)
					return OPR_ENOMEM;
				*r = *w;
			}
		}
	}
	return 0;
}

/* ---- validation matrix -------------------------------------------------------- */

static struct ana_check *check(struct ana_list *l, int b, int v, const char *dtype,
			       enum ana_check_id id, enum ana_status st, enum ana_prov prov)
{
	struct ana_check *c = ana_list_push(l);
	if (!c)
		return NULL;
	c->block = b;
	c->variant = v;
	c->id = id;
	snprintf(c->dtype, sizeof c->dtype, "%s", dtype);
	snprintf(c->name, sizeof c->name, "%s", ana_check_rule(id)->name);
	c->status = st;
	c->prov = prov;
	return c;
}

static void rollback_target(const struct col_block_run *br, char *buf, size_t len)
{
	char plan[160];
	if (br->block->source[0][0]) { /* imported: the source's baseline, no plan */
		snprintf(buf, len, "baseline: %s (imported)", br->block->source[0]);
		return;
	}
	ops_plan_describe(br->block->work.group, &br->v[0].plan, plan, sizeof plan);
	snprintf(buf, len, "baseline: %s", plan);
}

/* SLA on a simulated percentile: the upper bound of its CI within target
 * passes, the lower bound beyond it fails, otherwise WARN (inconclusive). */
static enum ana_status sla_status(double lo, double est, double hi, double target)
{
	if (!isfinite(lo) || !isfinite(hi))
		return est <= target ? ANA_WARN : ANA_FAIL;
	return hi <= target ? ANA_PASS : lo > target ? ANA_FAIL : ANA_WARN;
}

#define OOM_IF(x)                        \
	do {                             \
		if (!(x))                \
			return OPR_ENOMEM; \
	} while (0)

/* The device model's counters read back through PAPI (sde:::opreview::*)
 * over the sampled runs must equal the simulated counters of one run times
 * the number of runs: the same numbers by two paths. No row when PAPI could
 * not read them (the counters section says why). */
static int sde_agreement(const struct col_run *run, const struct col_variant_run *vr,
			 const char *dt, int b, int v, struct ana_list *out)
{
	const struct ops_counters *c = &vr->counters;
	uint64_t gread = 0, gwrite = 0;
	for (int s = 0; s < OPS_NSPACES; s++) {
		gread += c->bytes[OPS_GLOBAL][s];
		gwrite += c->bytes[s][OPS_GLOBAL];
	}
	const struct {
		const char *event;
		uint64_t per_run;
	} want[] = {{"sde:::opreview::LAUNCHES", c->launches},
		    {"sde:::opreview::DMA_TRANSFERS", c->transfers},
		    {"sde:::opreview::DMA_SPLITS", c->splits},
		    {"sde:::opreview::GLOBAL_READ_BYTES", gread},
		    {"sde:::opreview::GLOBAL_WRITE_BYTES", gwrite}};
	int checked = 0, agree = 0;
	char first_bad[96] = "";
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
		for (size_t e = 0; e < run->nevents; e++) {
			if (strcmp(run->events[e].name, want[k].event) || !run->events[e].available ||
			    !vr->event_totals || !vr->nsamples)
				continue;
			long long got = vr->event_totals[e];
			long long expect = (long long)(want[k].per_run * vr->nsamples);
			checked++;
			if (got == expect)
				agree++;
			else if (!first_bad[0])
				snprintf(first_bad, sizeof first_bad, "%s %lld vs %lld", want[k].event + 16,
					 got, expect);
		}
	if (!checked)
		return 0;
	struct ana_check *r = check(out, b, v, dt, ANA_CHK_SDE,
				    agree == checked ? ANA_PASS : ANA_FAIL, ANA_PAPI);
	if (!r)
		return OPR_ENOMEM;
	if (agree == checked)
		snprintf(r->value, sizeof r->value, "%d/%d = simulated x %zu", agree, checked, vr->nsamples);
	else
		snprintf(r->value, sizeof r->value, "%d of %d agree; %s", agree, checked, first_bad);
	snprintf(r->threshold, sizeof r->threshold, "equal");
	snprintf(r->trigger, sizeof r->trigger, "SDE counters of a canary run differ from the archive's");
	return 0;
}

static int checks_variant(const struct ana_ctx *cx, int b, int v, struct ana_list *cmps,
			  struct ana_list *out)
{
	const struct col_profile *p = cx->run->profile;
	const struct col_block_run *br = &cx->run->blocks[b];
	const struct col_variant_run *vr = &br->v[v];
	enum ops_group g = br->block->work.group;
	const char *dt = g == OPS_G_QGEMM || g == OPS_G_QGEMM_DQ_BIAS_ACT ? "int8"
			 : ops_dtype_name(br->block->work.dtype);
	char target[160];
	rollback_target(br, target, sizeof target);
	struct ana_check *c;

	double qv, qt;
	ana_quality_metric(p, br->block, vr, &qv, &qt);
	const struct ana_rule *pl = ana_rule(ANA_PRECISION_LOSS);
	enum ana_status qs = !isfinite(qv) || qv > pl->limit * qt ? ANA_FAIL
			     : qv > pl->second * qt ? ANA_WARN : ANA_PASS;
	OOM_IF(c = check(out, b, v, dt, ANA_CHK_QUALITY, qs, ANA_MEASURED));
	snprintf(c->value, sizeof c->value, is_requant(br->block) ? "%.3g LSB" : "rel L2 %.3g", qv);
	snprintf(c->threshold, sizeof c->threshold, "<= %.3g", qt);
	snprintf(c->trigger, sizeof c->trigger, "%s above %.3g on canary shadow outputs",
		 ana_quality_name(br->block), qt);

	const struct col_pipe_result *pr = &vr->pipe;
	OOM_IF(c = check(out, b, v, dt, ANA_CHK_SLA_P95,
			 sla_status(vr->pipe_p95_lo, pr->p95_ns, vr->pipe_p95_hi, p->sla.p95_us * 1e3),
			 ANA_SIMULATED));
	snprintf(c->value, sizeof c->value, "%.1f us [%.1f, %.1f]", pr->p95_ns / 1e3,
		 vr->pipe_p95_lo / 1e3, vr->pipe_p95_hi / 1e3);
	snprintf(c->threshold, sizeof c->threshold, "<= %.0f us", p->sla.p95_us);
	snprintf(c->trigger, sizeof c->trigger, "serving p95 above %.0f us for 5 minutes in canary",
		 p->sla.p95_us);
	OOM_IF(c = check(out, b, v, dt, ANA_CHK_SLA_P99,
			 sla_status(vr->pipe_p99_lo, pr->p99_ns, vr->pipe_p99_hi, p->sla.p99_us * 1e3),
			 ANA_SIMULATED));
	snprintf(c->value, sizeof c->value, "%.1f us [%.1f, %.1f]", pr->p99_ns / 1e3,
		 vr->pipe_p99_lo / 1e3, vr->pipe_p99_hi / 1e3);
	snprintf(c->threshold, sizeof c->threshold, "<= %.0f us", p->sla.p99_us);
	snprintf(c->trigger, sizeof c->trigger, "serving p99 above %.0f us for 5 minutes in canary",
		 p->sla.p99_us);
	if (p->sla.min_throughput_rps > 0) {
		OOM_IF(c = check(out, b, v, dt, ANA_CHK_THROUGHPUT,
				 pr->throughput_rps >= p->sla.min_throughput_rps ? ANA_PASS : ANA_FAIL,
				 ANA_SIMULATED));
		snprintf(c->value, sizeof c->value, "%.0f rps", pr->throughput_rps);
		snprintf(c->threshold, sizeof c->threshold, ">= %.0f rps", p->sla.min_throughput_rps);
		snprintf(c->trigger, sizeof c->trigger, "throughput below %.0f rps at the offered load",
			 p->sla.min_throughput_rps);
	}
	if (v == COL_CANDIDATE) {
		double thr = p->sla.max_regression;
		for (size_t i = 0; i < cmps->n; i++) {
			struct ana_block_cmp *bc = ana_list_at(cmps, i);
			if (bc->block != b || bc->q != 0.95)
				continue;
			enum ana_status st = !bc->available ? ANA_WARN
					     : bc->c.outcome == ANA_CMP_REGRESSION ? ANA_FAIL
					     : bc->c.outcome == ANA_CMP_PASS ? ANA_PASS : ANA_WARN;
			OOM_IF(c = check(out, b, v, dt, ANA_CHK_REG_HOST, st, ANA_MEASURED));
			if (bc->available)
				snprintf(c->value, sizeof c->value, "x%.3f [%.3f, %.3f] p=%.2g%s",
					 bc->c.ratio.ratio, bc->c.ratio.lo, bc->c.ratio.hi,
					 bc->c.p_adjusted, bc->c.underpowered ? " underpowered" : "");
			else
				snprintf(c->value, sizeof c->value, "%s", bc->reason);
			snprintf(c->threshold, sizeof c->threshold, "ratio CI below %.2f", 1 + thr);
		}
		double mr = br->v[0].model_ns > 0 ? vr->model_ns / br->v[0].model_ns : NAN;
		OOM_IF(c = check(out, b, v, dt, ANA_CHK_REG_MODEL,
				 isfinite(mr) && mr <= 1 + thr ? ANA_PASS : ANA_FAIL, ANA_SIMULATED));
		snprintf(c->value, sizeof c->value, "x%.3f (%.1f vs %.1f us)", mr, vr->model_ns / 1e3,
			 br->v[0].model_ns / 1e3);
		snprintf(c->threshold, sizeof c->threshold, "<= %.2f", 1 + thr);
		double pr95 = br->v[0].pipe.p95_ns > 0 ? pr->p95_ns / br->v[0].pipe.p95_ns : NAN;
		OOM_IF(c = check(out, b, v, dt, ANA_CHK_REG_PIPE,
				 isfinite(pr95) && pr95 <= 1 + thr ? ANA_PASS : ANA_FAIL, ANA_SIMULATED));
		snprintf(c->value, sizeof c->value, "x%.3f (%.1f vs %.1f us)", pr95, pr->p95_ns / 1e3,
			 br->v[0].pipe.p95_ns / 1e3);
		snprintf(c->threshold, sizeof c->threshold, "<= %.2f", 1 + thr);
	}
	for (size_t i = 0; v == COL_CANDIDATE && i < out->n; i++) {
		struct ana_check *r = ana_list_at(out, i);
		if (r->block == b && r->variant == v &&
		    (r->id == ANA_CHK_REG_HOST || r->id == ANA_CHK_REG_MODEL || r->id == ANA_CHK_REG_PIPE))
			snprintf(r->trigger, sizeof r->trigger,
				 "p95 above %.2f x baseline p95 in canary", 1 + p->sla.max_regression);
	}
	uint64_t cap = (uint64_t)(p->envelope.shared_capacity_kib * 1024);
	enum ana_status ms = vr->counters.peak_shared_bytes > cap ? ANA_FAIL
			     : vr->fell_back || vr->counters.fallbacks ? ANA_WARN : ANA_PASS;
	OOM_IF(c = check(out, b, v, dt, ANA_CHK_MEMORY, ms, ANA_SIMULATED));
	snprintf(c->value, sizeof c->value, "%.1f KiB, %llu fallback(s)",
		 (double)vr->counters.peak_shared_bytes / 1024,
		 (unsigned long long)(vr->counters.fallbacks));
	snprintf(c->threshold, sizeof c->threshold, "<= %.0f KiB, no fallback", p->envelope.shared_capacity_kib);
	snprintf(c->trigger, sizeof c->trigger, "any mapping fallback or SHARED over capacity at load");
	enum ana_status rs = vr->repro_counters_equal && vr->repro_output_stable ? ANA_PASS : ANA_FAIL;
	OOM_IF(c = check(out, b, v, dt, ANA_CHK_REPRO, rs, ANA_SIMULATED));
	if (rs == ANA_PASS)
		snprintf(c->value, sizeof c->value, "identical");
	else
		snprintf(c->value, sizeof c->value, "counters %s, digest %s",
			 vr->repro_counters_equal ? "identical" : "DIFFER",
			 vr->repro_output_stable ? "stable" : "CHANGED");
	snprintf(c->threshold, sizeof c->threshold, "identical");
	snprintf(c->trigger, sizeof c->trigger, "opreview replay reports a digest or counter mismatch");
	if (sde_agreement(cx->run, vr, dt, b, v, out))
		return OPR_ENOMEM;
	for (size_t i = 0; i < out->n; i++) {
		struct ana_check *r = ana_list_at(out, i);
		if (r->block == b && r->variant == v)
			snprintf(r->rollback_to, sizeof r->rollback_to, "%s", target);
	}
	return 0;
}

/* ---- mitigations and verdict ---------------------------------------------------- */

static int mitigation(struct ana_list *l, int b, const char *role, const char *title,
		      const char *expected, const char *validation, const char *rollback)
{
	struct ana_mitigation *m = ana_list_push(l);
	if (!m)
		return OPR_ENOMEM;
	m->block = b;
	snprintf(m->owner_role, sizeof m->owner_role, "%s", role);
	snprintf(m->title, sizeof m->title, "%s", title);
	snprintf(m->expected, sizeof m->expected, "%s", expected);
	snprintf(m->validation, sizeof m->validation, "%s", validation);
	snprintf(m->rollback, sizeof m->rollback, "%s", rollback);
	return 0;
}

/* The best batch size of the candidate's sweep by simulated p95. */
static const struct col_pipe_sweep_row *best_batch(const struct col_variant_run *vr)
{
	const struct col_pipe_sweep_row *best = NULL;
	for (size_t i = 0; i < vr->nsweep; i++)
		if (!best || vr->sweep[i].p95_ns < best->p95_ns)
			best = &vr->sweep[i];
	return best;
}

static int mitigations_block(const struct ana_ctx *cx, int b, const struct ana_block *ab,
			     struct ana_list *mit)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	const struct col_variant_run *A = &br->v[0], *B = &br->v[1];
	char target[160], exp[160], val[160], title[128];
	rollback_target(br, target, sizeof target);
	int rc = 0;
	double p95r = A->pipe.p95_ns > 0 ? B->pipe.p95_ns / A->pipe.p95_ns : 1;
	if (p95r > 1 + cx->run->profile->sla.max_regression && B->counters.launches < A->counters.launches) {
		/* the mini case: fusion cut launches, but its bursts hurt the tail */
		double base = A->pipe.p95_ns, cap = cx->run->profile->envelope.shared_capacity_kib * 1024;
		snprintf(val, sizeof val, "re-run the pipeline at the block's traffic; p95 at most %.2f x baseline",
			 1 + cx->run->profile->sla.max_regression);
		if (B->pipe_free_p95_ns < B->pipe.p95_ns && B->pipe_free_p95_ns <= base) {
			snprintf(exp, sizeof exp, "p95 toward %.1f us uncontended (simulated; now %.1f us, baseline %.1f us)",
				 B->pipe_free_p95_ns / 1e3, B->pipe.p95_ns / 1e3, base / 1e3);
			rc = mitigation(mit, b, "runtime-systems-engineer",
					"cap concurrent fused launches per memory channel so their bursts stop overlapping",
					exp, val, target);
		}
		const struct ops_plan_eval *hid = NULL;
		for (size_t i = 0; i < B->nalts; i++) {
			const struct ops_plan_eval *e = &B->alts[i];
			if (e->fits && e->plan.fused && e->plan.double_buffer && (double)e->footprint_bytes <= cap &&
			    (!hid || e->model_ns < hid->model_ns))
				hid = e;
		}
		if (!rc && hid && B->pipe_hidden_p95_ns <= base) {
			char plan[160];
			ops_plan_describe(br->block->work.group, &hid->plan, plan, sizeof plan);
			snprintf(title, sizeof title, "double-buffer the fused launch with a smaller tile: '%s'", plan);
			snprintf(exp, sizeof exp,
				 "%.1f KiB SHARED, %.1f us modelled; with the burst hidden the current plan's simulated p95 is %.1f us",
				 (double)hid->footprint_bytes / 1024, hid->model_ns / 1e3, B->pipe_hidden_p95_ns / 1e3);
			rc = mitigation(mit, b, "kernel-performance-owner", title, exp, val, target);
		}
		const struct col_pipe_sweep_row *bb = best_batch(B);
		if (!rc && bb && bb->p95_ns < B->pipe.p95_ns) {
			snprintf(title, sizeof title, "cap the batch at %d for this block: smaller batches, smaller bursts",
				 bb->batch);
			snprintf(exp, sizeof exp, "simulated p95 %.1f us at %.0f rps (now %.1f us, baseline %.1f us)",
				 bb->p95_ns / 1e3, bb->throughput_rps, B->pipe.p95_ns / 1e3, base / 1e3);
			rc = mitigation(mit, b, "runtime-systems-engineer", title, exp, val, target);
		}
	}
	if (!rc && ab->primary[0] == ANA_LAUNCH_OVERHEAD_BOUND && !B->plan.fused) {
		snprintf(exp, sizeof exp, "%.0f launch(es) fewer per request (modelled)",
			 (double)A->counters.launches - 1);
		rc = mitigation(mit, b, "ml-compiler-engineer", "fuse the operator group into one launch",
				exp, "fused equals unfused within the precision threshold", target);
	}
	if (!rc && (B->fell_back || B->counters.fallbacks)) {
		char plan[160] = "the best fitting plan";
		if (B->nalts)
			ops_plan_describe(br->block->work.group, &B->alts[0].plan, plan, sizeof plan);
		snprintf(exp, sizeof exp, "no fallback: pin '%s'", plan);
		rc = mitigation(mit, b, "ml-compiler-engineer", "pin a tile plan that fits the SHARED capacity",
				exp, "memory envelope check passes; counters unchanged on replay", target);
	}
	if (!rc && ab->primary[1] == ANA_PRECISION_LOSS)
		rc = mitigation(mit, b, "runtime-systems-engineer",
				"keep the wider type (fp32 accumulation / storage) for this block",
				"quality back within the profile's threshold",
				"numerical quality check passes on seeded inputs", target);
	if (!rc && ab->primary[1] == ANA_QUEUEING_DELAY) {
		const struct col_pipe_sweep_row *bb = best_batch(B);
		snprintf(exp, sizeof exp, "batch %d: simulated p95 %.1f us", bb ? bb->batch : 1,
			 bb ? bb->p95_ns / 1e3 : NAN);
		rc = mitigation(mit, b, "runtime-systems-engineer", "retune the batch policy (max batch, timeout)",
				exp, "pipeline sweep at the SLA rate", target);
	}
	if (!rc && ab->primary[1] == ANA_CORE_IMBALANCE)
		rc = mitigation(mit, b, "kernel-performance-owner",
				"rebalance tiles over cores (split-K or a tile count divisible by the cores)",
				"slowest core closer to the mean; modelled time down",
				"core imbalance rule clears", target);
	return rc;
}

/* A warning is an open question: its mitigation is what would settle it, so
 * that SHIP WITH MITIGATIONS always names one. Inconclusive host comparisons
 * get the rounds that would resolve max_regression, from the minimum
 * detectable effect MDE = 2.8 sqrt(2 / R) c (METHODS.md): R' = 2 (2.8 c / d)^2,
 * and the sampling budget that buys them at the run's rate. */
static int warn_mitigation(const struct ana_ctx *cx, const struct ana_check *c,
			   const struct ana_block *ab, const struct ana_list *cmps,
			   struct ana_list *mit)
{
	const struct col_profile *p = cx->run->profile;
	const struct col_block_run *br = &cx->run->blocks[c->block];
	char target[160], title[128], exp[160], val[160];
	rollback_target(br, target, sizeof target);
	double d = p->sla.max_regression;
	if (c->prov == ANA_UNAVAILABLE) {
		/* evidence that could not be had here (an imported run): the
		 * mitigation is to get it */
		snprintf(title, sizeof title, "obtain the missing evidence of '%s'", c->name);
		snprintf(exp, sizeof exp, "%.150s", c->value);
		snprintf(val, sizeof val, "%s PASS on a run opreview makes of this block", c->name);
		return mitigation(mit, c->block, "runtime-systems-engineer", title, exp, val, target);
	}
	switch (c->id) {
	case ANA_CHK_REG_HOST: {
		const struct ana_block_cmp *bc = NULL;
		for (size_t i = 0; i < cmps->n; i++) {
			const struct ana_block_cmp *x = ana_list_at(cmps, i);
			if (x->block == c->block && x->q == 0.95)
				bc = x;
		}
		size_t have = br->v[0].nsamples < br->v[1].nsamples ? br->v[0].nsamples
								     : br->v[1].nsamples;
		size_t rounds = (size_t)(br->nrounds > 0 ? br->nrounds : 1);
		double cv = bc && bc->available ? bc->c.noise.round_cv : ab->noise.round_cv;
		double need_r = cv > 0 && d > 0 ? ceil(2.0 * pow(2.8 * cv / d, 2)) : 0;
		size_t need = ana_min_samples(0.95, CONF);
		size_t want_rounds = (size_t)need_r > rounds ? (size_t)need_r : rounds;
		size_t per_round = br->reps_per_round > 0 ? (size_t)br->reps_per_round : 1;
		if (want_rounds * per_round < need)
			want_rounds = (need + per_round - 1) / per_round;
		if (want_rounds <= rounds)
			want_rounds = 2 * rounds; /* resolved by power, not by count: double it */
		double secs = p->budget.seconds / (p->nblocks ? p->nblocks : 1) *
			      (double)want_rounds / (double)rounds;
		snprintf(title, sizeof title, "sample until the p95 comparison decides: %zu rounds per variant "
			 "(now %zu)", want_rounds, rounds);
		snprintf(exp, sizeof exp, "p95 ratio CI narrow enough to resolve %.1f%%: about %.0f s of "
			 "sampling for this block (budget.seconds %.0f over %d blocks now; %zu samples)",
			 100 * d, secs, p->budget.seconds, p->nblocks, have);
		snprintf(val, sizeof val, "regression p95 (host) PASS or FAIL on the longer run");
		return mitigation(mit, c->block, "kernel-performance-owner", title, exp, val, target);
	}
	case ANA_CHK_SLA_P95:
	case ANA_CHK_SLA_P99: {
		const struct col_variant_run *vr = &br->v[c->variant];
		int p99 = c->id == ANA_CHK_SLA_P99;
		double est = p99 ? vr->pipe.p99_ns : vr->pipe.p95_ns;
		double lo = p99 ? vr->pipe_p99_lo : vr->pipe_p95_lo, hi = p99 ? vr->pipe_p99_hi : vr->pipe_p95_hi;
		double tgt = (p99 ? p->sla.p99_us : p->sla.p95_us) * 1e3;
		double half = isfinite(lo) && isfinite(hi) ? 0.5 * (hi - lo) : NAN;
		double gap = fabs(est - tgt);
		/* the CI's half-width shrinks as 1/sqrt(n): n' = n (half / gap)^2 */
		double n2 = isfinite(half) && gap > 0 ? ceil((double)vr->pipe.n * pow(half / gap, 2)) : NAN;
		snprintf(title, sizeof title, "settle the simulated %s against the SLA: %s requests",
			 p99 ? "p99" : "p95", isfinite(n2) ? "more" : "a longer simulation with more");
		if (isfinite(n2))
			snprintf(exp, sizeof exp, "traffic.requests >= %.0f (now %zu) puts the CI on one side of %.0f us",
				 n2, vr->pipe.n, tgt / 1e3);
		else
			snprintf(exp, sizeof exp, "a CI at all (now %zu requests) to hold against %.0f us",
				 vr->pipe.n, tgt / 1e3);
		snprintf(val, sizeof val, "SLA %s PASS on the longer simulation", p99 ? "p99" : "p95");
		return mitigation(mit, c->block, "runtime-systems-engineer", title, exp, val, target);
	}
	case ANA_CHK_QUALITY:
		snprintf(exp, sizeof exp, "error back under %.2f of the threshold, or accepted in writing",
			 ana_rule(ANA_PRECISION_LOSS)->second);
		return mitigation(mit, c->block, "runtime-systems-engineer",
				  "check the candidate's numerical quality on more seeds and on canary shadow outputs",
				  exp, "numerical quality PASS on every seed", target);
	default:
		return 0; /* the memory warning has its own mitigation (pin a plan that fits) */
	}
}

/* Seed 002's pitfall "optimizing synthetic kernels without production-shape
 * validation": a block whose shape is synthetic has not been validated where
 * the candidate will run, so it carries a mitigation (and the candidate
 * cannot be SHIP) until the block names a production trace. */
static int shape_mitigation(const struct ana_ctx *cx, int b, struct ana_list *mit)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	if (br->block->shape_production)
		return 0;
	char target[160];
	rollback_target(br, target, sizeof target);
	return mitigation(mit, b, "kernel-performance-owner",
			  "validate on production shapes: this block's shape is synthetic",
			  "the candidate's checks hold on a shape taken from a production trace",
			  "re-run with shape_origin {production: TRACE} and the trace's shape; every candidate check passes",
			  target);
}

static void add_reason(struct ana_findings *f, const char *fmt, const char *a, const char *b)
{
	if (f->nreasons >= 8)
		return;
	snprintf(f->reasons[f->nreasons++], ANA_TEXT, fmt, a, b);
}

/* "BLOCK: candidate fails CHECK: VALUE; primary class: CLASS" */
static void add_fail_reason(struct ana_findings *f, const struct ana_check *c)
{
	if (f->nreasons >= 8)
		return;
	const struct ana_block *ab = &f->blocks[c->block];
	snprintf(f->reasons[f->nreasons++], ANA_TEXT, "%s: candidate fails %s: %s; primary class: %s",
		 f->run->blocks[c->block].block->name, c->name, c->value,
		 ab->unclassified[COL_CANDIDATE][0] ? "none"
						    : ana_class_name(ab->primary[COL_CANDIDATE]));
}

/* Verdict rules (README "Verdict"):
 *  ROLLBACK  the candidate fails numerical quality or reproducibility;
 *  HOLD      any other candidate check FAILs;
 *  SHIP WITH MITIGATIONS  no FAIL, but a WARN or a mitigation proposed;
 *  SHIP      every candidate check PASSes and nothing needs mitigating. */
static void verdict(struct ana_findings *f)
{
	int rollback = 0, hold = 0, warn = 0;
	for (size_t i = 0; i < f->nchecks; i++) {
		const struct ana_check *c = &f->checks[i];
		if (c->variant != COL_CANDIDATE || c->status == ANA_PASS)
			continue;
		int on_fail = ana_check_rule(c->id)->on_fail;
		if (c->status == ANA_FAIL && on_fail == ANA_ROLLBACK) {
			rollback = 1;
			add_fail_reason(f, c);
		} else if (c->status == ANA_FAIL && on_fail == ANA_HOLD) {
			hold = 1;
			add_fail_reason(f, c);
		} else if (c->status == ANA_WARN) {
			warn = 1;
		}
	}
	if (rollback)
		f->verdict = ANA_ROLLBACK;
	else if (hold)
		f->verdict = ANA_HOLD;
	else if (warn && !f->nmit) {
		/* a warning nobody knows how to close is not a mitigated ship */
		f->verdict = ANA_HOLD;
		add_reason(f, "%s%s", "a candidate check warns and no mitigation is known", "");
	} else if (warn || f->nmit) {
		f->verdict = ANA_SHIP_WITH_MITIGATIONS;
		add_reason(f, "%s%s", "no candidate check fails; the mitigations below close what remains", "");
	} else {
		f->verdict = ANA_SHIP;
		add_reason(f, "%s%s", "every candidate check passes", "");
	}
}

static void *detach(struct ana_list *l, size_t *n)
{
	*n = l->n;
	return l->items;
}

int ana_analyze(const struct col_run *run, const char *archive_dir, struct ana_findings **out,
		struct opr_error *err)
{
	struct ana_findings *f = calloc(1, sizeof *f);
	if (!f)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	f->run = run;
	snprintf(f->archive_dir, sizeof f->archive_dir, "%s", archive_dir);
	struct ana_ctx cx = {run, archive_dir};
	/* an imported run: no group, plan, model or simulation (analyze/imported.c) */
	int imp = run->profile->imported[0] != 0;
	struct ana_list cmps = {.size = sizeof(struct ana_block_cmp)},
			finds = {.size = sizeof(struct ana_finding)},
			ws = {.size = sizeof(struct ana_worksheet_row)},
			checks = {.size = sizeof(struct ana_check)},
			mit = {.size = sizeof(struct ana_mitigation)};
	int rc = 0;
	for (int b = 0; b < run->nblocks && !rc; b++) {
		struct ana_block *ab = &f->blocks[b];
		const struct col_block_run *br = &run->blocks[b];
		for (int v = 0; v < 2 && !rc; v++) {
			rc = latency_stats(&br->v[v], &ab->lat[v], err);
			if (!rc && (imp ? ana_imported_classify(&cx, b, v, &finds, ab)
					: ana_classify_variant(&cx, b, v, &finds, &ab->primary[v])))
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
			ab->reuse[v] = ops_reuse_ratio(&br->v[v].counters);
		}
		if (!rc && !imp && ab->primary[1] != ANA_PRECISION_LOSS &&
		    ana_tail_finding(&cx, b, &finds, &ab->primary[1]))
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		ab->launch_reduction = (double)br->v[0].counters.launches - (double)br->v[1].counters.launches;
		ab->launch_overhead_saved_ns =
			ab->launch_reduction * run->profile->envelope.launch_overhead_us * 1e3;
		if (!rc)
			rc = compare_block(&cx, b, &cmps, ab, err);
	}
	if (!rc)
		rc = adjust_all(&cmps, run->profile->sla.max_regression, err);
	for (int b = 0; b < run->nblocks && !rc && imp; b++) {
		size_t first = checks.n;
		if (ana_imported_checks(&cx, b, 0, &f->blocks[b], &cmps, &checks) ||
		    ana_imported_checks(&cx, b, 1, &f->blocks[b], &cmps, &checks) ||
		    shape_mitigation(&cx, b, &mit))
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		for (size_t i = first; i < checks.n && !rc; i++) {
			const struct ana_check *c = ana_list_at(&checks, i);
			if (c->variant == COL_CANDIDATE && c->status == ANA_WARN &&
			    warn_mitigation(&cx, c, &f->blocks[b], &cmps, &mit))
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		}
		f->synthetic_blocks += !run->blocks[b].block->shape_production;
	}
	for (int b = 0; b < run->nblocks && !rc && !imp; b++) {
		size_t first = checks.n;
		if (worksheet_block(&cx, b, &f->blocks[b], &ws, NULL) ||
		    checks_variant(&cx, b, 0, &cmps, &checks) || checks_variant(&cx, b, 1, &cmps, &checks) ||
		    mitigations_block(&cx, b, &f->blocks[b], &mit) || shape_mitigation(&cx, b, &mit))
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		for (size_t i = first; i < checks.n && !rc; i++) {
			const struct ana_check *c = ana_list_at(&checks, i);
			if (c->variant == COL_CANDIDATE && c->status == ANA_WARN &&
			    warn_mitigation(&cx, c, &f->blocks[b], &cmps, &mit))
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		}
		f->synthetic_blocks += !run->blocks[b].block->shape_production;
	}
	f->cmp = detach(&cmps, &f->ncmp);
	f->find = detach(&finds, &f->nfind);
	f->ws = detach(&ws, &f->nws);
	f->checks = detach(&checks, &f->nchecks);
	f->mit = detach(&mit, &f->nmit);
	if (rc) {
		ana_findings_free(f);
		return rc;
	}
	if ((rc = ana_model_validate(run, &f->model, err))) {
		ana_findings_free(f);
		return rc;
	}
	verdict(f);
	if (imp)
		add_reason(f, "imported from %s: numerical quality, memory envelope and reproducibility "
			   "are unavailable (opreview did not run the kernels), so it cannot be SHIP%s",
			   run->import.path, "");
	if (f->synthetic_blocks && f->verdict == ANA_SHIP_WITH_MITIGATIONS) {
		char n[48];
		snprintf(n, sizeof n, "%d of %d", f->synthetic_blocks, run->nblocks);
		add_reason(f, "not SHIP: %s blocks rest on synthetic shapes only%s", n,
			   "; production-shape validation is owned by the kernel performance owner");
	}
	const struct col_primary *pm = &run->profile->primary;
	ana_value_eval(f, pm->block, pm->variant, pm->metric, &f->primary);
	ana_value_eval(f, pm->block, 1 - pm->variant, pm->metric, &f->primary_base);
	*out = f;
	return 0;
}

void ana_findings_free(struct ana_findings *f)
{
	if (!f)
		return;
	free(f->cmp);
	free(f->find);
	free(f->ws);
	free(f->checks);
	free(f->mit);
	ana_model_validation_release(&f->model);
	free(f);
}
