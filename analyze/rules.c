/* analyze/rules.c: the bottleneck rules as data (likwid's group files, Nsight
 * Compute's rules: metric, formula, threshold, explanation, source) and their
 * evaluation on one block variant. Inputs are the device model's launch
 * records (simulated), the pipeline simulation (simulated) and the host's
 * quality check (measured); each finding carries that evidence. */
#include "analyze_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A simulated p95 this much above the baseline's is a tail symptom; a
 * counterfactual as far below the candidate's explains it. */
#define TAIL_WORSE 0.02

/* The rules, in class order. SOL-style: a resource busy >= 60% of the
 * modelled busy time and >= 10 points above the next names the bound
 * (Nsight Compute's SOL rule). Every number a rule compares against is its
 * row's limit or second. */
static const struct ana_rule rules[] = {
	{ANA_COMPUTE_BOUND, "u_compute = sum(C) / sum(T - overhead)", "u >= %.2f and >= %.2f above the next",
	 0.60, 0.10, "the cores' MAC/vector units are the busiest resource of the modelled launches",
	 "Nsight Compute SOL rule (>= 60% busy, >= 10 point gap); roofline (Williams et al. 2009)"},
	{ANA_GLOBAL_BW_BOUND, "u_global = sum(G) / sum(T - overhead)", "u >= %.2f and >= %.2f above the next",
	 0.60, 0.10, "GLOBAL (off-chip) transfers dominate the modelled launches: data is re-read instead of reused on chip",
	 "Nsight Compute SOL rule; roofline / ECM transfer terms (kerncraft)"},
	{ANA_ONCHIP_BW_BOUND, "u_shared = sum(S) / sum(T - overhead)", "u >= %.2f and >= %.2f above the next",
	 0.60, 0.10, "SHARED (on-chip) bandwidth dominates: tiles are re-read from the on-chip buffer faster than compute consumes them",
	 "Nsight Compute SOL rule; Timeloop per-level bandwidth slowdown"},
	{ANA_LAUNCH_OVERHEAD_BOUND, "sum(overhead) / sum(T)", "x >= %.2f (primary over a SOL bound above %.2f)",
	 0.30, 0.50, "fixed launch cost is a large share of device time: too many small launches",
	 "XLA GPU cost model (1-5 us per launch); 30% chosen as 'a third of the time is dispatch'"},
	{ANA_QUEUEING_DELAY, "wait_p95 / latency_p95 (pipeline simulation)",
	 "x >= %.2f (a tail symptom's cause when %.2f above the baseline's)", 0.50, 0.10,
	 "requests spend most of their tail latency waiting in the batch window or the runtime queue",
	 "seed 002 tail-latency drivers; queueing share of the tail (Dean & Barroso, The Tail at Scale)"},
	{ANA_CORE_IMBALANCE, "max over launches of (max core work / mean core work); per-core Jain index",
	 "x >= %.2f or Jain < %.2f", 1.25, 0.90,
	 "the kernel ends when its slowest core ends: work is not spread evenly",
	 "Jain, Chiu & Hawe (1984) fairness index; the device model's slowest-core rule"},
	{ANA_MAPPING_FALLBACK, "fallbacks + DMA splits", "x > %.0f", 0, 0,
	 "the plan asked for did not map: a capacity fallback replaced it, or transfers were split at dma.max_last_dim",
	 "architecture: SHARED capacity and DMA descriptor limit of the envelope"},
	{ANA_PRECISION_LOSS, "quality metric / profile threshold", "x > %.2f fails, x > %.2f warns", 1.0, 0.5,
	 "the output's error against the fp64 / exact integer reference exceeds the profile's precision threshold",
	 "profile precision thresholds; seed 002 pitfall: precision wins need quality evidence"},
};

const struct ana_rule *ana_rules(size_t *n)
{
	*n = sizeof rules / sizeof *rules;
	return rules;
}

const struct ana_rule *ana_rule(enum ana_class c)
{
	return &rules[c < ANA_NCLASSES ? c : 0];
}

void ana_rule_threshold(const struct ana_rule *r, char *buf, size_t len)
{
	/* the formats are this file's constants, each with two conversions */
	snprintf(buf, len, r->threshold, r->limit, r->second);
}

static const char *const class_names[ANA_NCLASSES] = {
	"compute-bound", "global-bandwidth-bound", "on-chip-bandwidth-bound",
	"launch-overhead-bound", "queueing delay", "core imbalance", "mapping fallback",
	"precision loss"};

const char *ana_class_name(enum ana_class c)
{
	return c < ANA_NCLASSES ? class_names[c] : "unknown";
}

const char *ana_prov_name(enum ana_prov p)
{
	static const char *const n[] = {"measured", "papi", "simulated", "derived", "unavailable",
		"imported"};
	return p <= ANA_IMPORTED ? n[p] : "unknown";
}

void ana_terms(const struct col_variant_run *vr, struct ana_terms *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < vr->nlaunches; i++) {
		const struct ops_launch_rec *r = &vr->launches[i];
		t->total += r->model_ns;
		t->overhead += r->overhead_ns;
		t->compute += r->compute_ns;
		t->shared += r->shared_ns;
		t->global += r->global_ns;
		t->dma += r->dma_ns;
		if (r->imbalance > t->imbalance)
			t->imbalance = r->imbalance;
	}
	double busy = t->total - t->overhead;
	if (busy > 0) {
		t->u_compute = t->compute / busy;
		t->u_shared = t->shared / busy;
		t->u_global = t->global / busy;
	}
	t->launch_share = t->total > 0 ? t->overhead / t->total : 0;
}

static void add_ev(struct ana_finding *f, const char *metric, double value, const char *unit,
		   enum ana_prov prov, const char *comparison, const char *note)
{
	if (f->nev >= ANA_MAX_EVIDENCE)
		return;
	struct ana_evidence *e = &f->ev[f->nev++];
	snprintf(e->metric, sizeof e->metric, "%s", metric);
	e->value = value;
	snprintf(e->unit, sizeof e->unit, "%s", unit);
	e->prov = prov;
	snprintf(e->comparison, sizeof e->comparison, "%s", comparison);
	snprintf(e->note, sizeof e->note, "%s", note ? note : "");
}

static struct ana_finding *new_finding(struct ana_list *l, int block, int variant,
				       enum ana_class cls, double score, const char *reproduce)
{
	struct ana_finding *f = ana_list_push(l);
	if (!f)
		return NULL;
	f->block = block;
	f->variant = variant;
	f->cls = cls;
	f->score = score;
	snprintf(f->explanation, sizeof f->explanation, "%s", ana_rule(cls)->explanation);
	snprintf(f->reproduce, sizeof f->reproduce, "%s", reproduce);
	return f;
}

/* The SOL decision among compute, SHARED and GLOBAL utilisation. Returns the
 * class or -1 when no resource is clearly the bound. */
static int sol_bound(const struct ana_terms *t, double *second)
{
	double u[3] = {t->u_compute, t->u_global, t->u_shared};
	enum ana_class c[3] = {ANA_COMPUTE_BOUND, ANA_GLOBAL_BW_BOUND, ANA_ONCHIP_BW_BOUND};
	int best = 0;
	for (int i = 1; i < 3; i++)
		if (u[i] > u[best])
			best = i;
	double next = 0;
	for (int i = 0; i < 3; i++)
		if (i != best && u[i] > next)
			next = u[i];
	*second = next;
	const struct ana_rule *r = ana_rule(c[best]);
	if (u[best] >= r->limit && u[best] - next >= r->second)
		return (int)c[best];
	return -1;
}

/* The tail symptom of the candidate in the pipeline simulation, attributed
 * by a counterfactual: the same arrivals with GLOBAL bandwidth uncontended.
 * If the candidate's p95 is worse than the baseline's but would not be
 * without contention, its bursts are the cause (seed 002's mini case). */
int ana_tail_finding(const struct ana_ctx *cx, int b, struct ana_list *out, enum ana_class *primary)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	const struct col_variant_run *A = &br->v[0], *B = &br->v[1];
	double base = A->pipe.p95_ns, cand = B->pipe.p95_ns, free_cand = B->pipe_free_p95_ns;
	if (!(base > 0) || !(cand > base * (1 + TAIL_WORSE)))
		return 0;
	char cmp[64], repro[ANA_TEXT];
	snprintf(repro, sizeof repro, "opreview replay %s --block %s  # re-simulates the pipeline: p95, "
		 "uncontended and hidden p95", cx->archive, br->block->name);
	double hidden = B->pipe_hidden_p95_ns;
	/* contention: the uncontended tail is lower; exposure: the tail with the
	 * transfers hidden is lower; either way a burst explains the symptom when
	 * its counterfactual would not be worse than the baseline */
	int contended = isfinite(free_cand) && free_cand <= base && cand >= free_cand * (1 + TAIL_WORSE);
	int exposed = isfinite(hidden) && hidden <= base && cand >= hidden * (1 + TAIL_WORSE);
	int bursts = contended || exposed;
	double qa = A->pipe.p95_ns > 0 ? A->pipe.wait_p95_ns / A->pipe.p95_ns : 0;
	double qb = B->pipe.p95_ns > 0 ? B->pipe.wait_p95_ns / B->pipe.p95_ns : 0;
	enum ana_class cls = bursts ? ANA_GLOBAL_BW_BOUND
			     : qb > qa + ana_rule(ANA_QUEUEING_DELAY)->second ? ANA_QUEUEING_DELAY : *primary;
	struct ana_finding *f = new_finding(out, b, 1, cls, cand / base, repro);
	if (!f)
		return OPR_ENOMEM;
	snprintf(f->symptom, sizeof f->symptom,
		 "simulated p95 %.1f us vs baseline %.1f us (x%.3f) with %llu launch(es) instead of %llu",
		 cand / 1e3, base / 1e3, cand / base, (unsigned long long)B->counters.launches,
		 (unsigned long long)A->counters.launches);
	if (contended)
		snprintf(f->explanation, sizeof f->explanation,
			 "memory bursts contend for GLOBAL bandwidth: without contention the candidate's p95 would be "
			 "%.1f us, at or below the baseline's %.1f us", free_cand / 1e3, base / 1e3);
	else if (exposed)
		snprintf(f->explanation, sizeof f->explanation,
			 "memory bursts sit on the critical path: each launch loads a batch's inputs in one exposed "
			 "burst before computing; hidden behind compute the p95 would be %.1f us, at or below the "
			 "baseline's %.1f us", hidden / 1e3, base / 1e3);
	snprintf(cmp, sizeof cmp, "%.1f > %.1f", cand / 1e3, base / 1e3);
	add_ev(f, "pipeline p95 (candidate)", cand, "ns", ANA_SIMULATED, cmp, "baseline in the comparison");
	snprintf(cmp, sizeof cmp, "%.1f %s %.1f", free_cand / 1e3, free_cand <= base ? "<=" : ">", base / 1e3);
	add_ev(f, "uncontended p95 (candidate)", free_cand, "ns", ANA_SIMULATED, cmp,
	       "same arrivals, every launch at its DMA peak");
	snprintf(cmp, sizeof cmp, "%.1f %s %.1f", hidden / 1e3, hidden <= base ? "<=" : ">", base / 1e3);
	add_ev(f, "p95 with transfers hidden", hidden, "ns", ANA_SIMULATED, cmp,
	       "same arrivals, every transfer overlapped with compute");
	add_ev(f, "concurrent bursts (max)", B->pipe.max_concurrent_bursts, "", ANA_SIMULATED, "", "");
	add_ev(f, "GLOBAL bandwidth use", B->pipe.bw_util, "fraction", ANA_SIMULATED, "", "");
	snprintf(cmp, sizeof cmp, "%llu < %llu", (unsigned long long)B->counters.launches,
		 (unsigned long long)A->counters.launches);
	add_ev(f, "LAUNCHES", (double)B->counters.launches, "", ANA_SIMULATED, cmp, "");
	snprintf(cmp, sizeof cmp, "%llu vs %llu", (unsigned long long)ops_global_bytes(&B->counters),
		 (unsigned long long)ops_global_bytes(&A->counters));
	add_ev(f, "GLOBAL bytes", (double)ops_global_bytes(&B->counters), "B", ANA_SIMULATED, cmp, "");
	/* the symptom's class is the candidate's primary */
	for (size_t i = 0; i < out->n; i++) {
		struct ana_finding *g = ana_list_at(out, i);
		if (g->block == b && g->variant == 1)
			g->primary = 0;
	}
	f->primary = 1;
	*primary = cls;
	return 0;
}

int ana_classify_variant(const struct ana_ctx *cx, int b, int v, struct ana_list *out,
			 enum ana_class *primary)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	const struct col_variant_run *vr = &br->v[v];
	struct ana_terms t;
	char cmp[64], repro[ANA_TEXT];
	ana_terms(vr, &t);
	snprintf(repro, sizeof repro, "opreview replay %s --block %s  # re-runs both variants: counters, "
		 "outputs, pipeline", cx->archive, br->block->name);
	int found = -1;
	double second;

	/* precision loss first: a wrong answer outranks a slow one */
	double qm, thr;
	const struct ana_rule *R = ana_rule(ANA_PRECISION_LOSS);
	ana_quality_metric(cx->run->profile, br->block, vr, &qm, &thr);
	if (isfinite(qm) && thr > 0 && qm / thr > R->second) {
		double lim = R->limit * thr;
		snprintf(cmp, sizeof cmp, "%.3g %s %.3g", qm, qm > lim ? ">" : "<=", lim);
		struct ana_finding *f = new_finding(out, b, v, ANA_PRECISION_LOSS, qm / thr, repro);
		if (!f)
			return OPR_ENOMEM;
		add_ev(f, ana_quality_name(br->block), qm, "", ANA_MEASURED, cmp,
		       "output vs fp64 / exact integer reference on seeded inputs");
		snprintf(f->symptom, sizeof f->symptom, "output error %.3g against a threshold of %.3g",
			 qm, thr);
		if (qm > lim && found < 0)
			found = ANA_PRECISION_LOSS;
	}
	uint64_t fb = vr->counters.fallbacks, sp = vr->counters.splits;
	if ((double)(fb + sp) > ana_rule(ANA_MAPPING_FALLBACK)->limit) {
		struct ana_finding *f = new_finding(out, b, v, ANA_MAPPING_FALLBACK, (double)(fb + sp), repro);
		if (!f)
			return OPR_ENOMEM;
		/* the comparison is shown for the counters that triggered */
		double lim = ana_rule(ANA_MAPPING_FALLBACK)->limit;
		snprintf(cmp, sizeof cmp, "%llu > %.0f", (unsigned long long)fb, lim);
		add_ev(f, "FALLBACKS", (double)fb, "", ANA_SIMULATED, fb ? cmp : "",
		       vr->fell_back ? vr->plan_note : "");
		snprintf(cmp, sizeof cmp, "%llu > %.0f", (unsigned long long)sp, lim);
		add_ev(f, "DMA_SPLITS", (double)sp, "", ANA_SIMULATED, sp ? cmp : "",
		       "transfers split at dma.max_last_dim");
		add_ev(f, "DMA_TRANSFERS", (double)vr->counters.transfers, "", ANA_SIMULATED, "", "");
		snprintf(f->symptom, sizeof f->symptom,
			 "%llu capacity fallback(s) and %llu split transfer(s) of %llu",
			 (unsigned long long)fb, (unsigned long long)sp,
			 (unsigned long long)vr->counters.transfers);
		if (fb > 0 && found < 0)
			found = ANA_MAPPING_FALLBACK;
	}
	int sol = sol_bound(&t, &second);
	if (sol >= 0) {
		double u = sol == ANA_COMPUTE_BOUND ? t.u_compute
			   : sol == ANA_GLOBAL_BW_BOUND ? t.u_global : t.u_shared;
		struct ana_finding *f = new_finding(out, b, v, sol, u, repro);
		if (!f)
			return OPR_ENOMEM;
		snprintf(cmp, sizeof cmp, "%.2f >= %.2f, next %.2f", u, ana_rule(sol)->limit, second);
		add_ev(f, sol == ANA_COMPUTE_BOUND ? "u_compute" : sol == ANA_GLOBAL_BW_BOUND ? "u_global" : "u_shared",
		       u, "fraction", ANA_SIMULATED, cmp, "device model launch records");
		add_ev(f, "modelled time", t.total, "ns", ANA_SIMULATED, "", "");
		add_ev(f, "GLOBAL bytes", (double)ops_global_bytes(&vr->counters), "B", ANA_SIMULATED, "", "");
		add_ev(f, "on-chip reuse ratio", ops_reuse_ratio(&vr->counters), "", ANA_DERIVED, "", "");
		snprintf(f->symptom, sizeof f->symptom, "%s busy %.0f%% of the modelled launch time",
			 sol == ANA_COMPUTE_BOUND ? "compute" : sol == ANA_GLOBAL_BW_BOUND ? "GLOBAL transfer" : "SHARED transfer",
			 100 * u);
		if (found < 0)
			found = sol;
	}
	R = ana_rule(ANA_LAUNCH_OVERHEAD_BOUND);
	if (t.launch_share >= R->limit) {
		struct ana_finding *f = new_finding(out, b, v, ANA_LAUNCH_OVERHEAD_BOUND, t.launch_share, repro);
		if (!f)
			return OPR_ENOMEM;
		snprintf(cmp, sizeof cmp, "%.2f >= %.2f", t.launch_share, R->limit);
		add_ev(f, "overhead share", t.launch_share, "fraction", ANA_SIMULATED, cmp, "");
		add_ev(f, "LAUNCHES", (double)vr->counters.launches, "", ANA_SIMULATED, "", "");
		add_ev(f, "launch overhead", t.overhead, "ns", ANA_SIMULATED, "", "");
		snprintf(f->symptom, sizeof f->symptom, "%llu launch(es) spend %.0f%% of device time in overhead",
			 (unsigned long long)vr->counters.launches, 100 * t.launch_share);
		if (found < 0 || (found == sol && t.launch_share > R->second))
			found = ANA_LAUNCH_OVERHEAD_BOUND;
	}
	const struct col_pipe_result *pr = &vr->pipe;
	double qshare = pr->p95_ns > 0 ? pr->wait_p95_ns / pr->p95_ns : 0;
	R = ana_rule(ANA_QUEUEING_DELAY);
	if (qshare >= R->limit) {
		struct ana_finding *f = new_finding(out, b, v, ANA_QUEUEING_DELAY, qshare, repro);
		if (!f)
			return OPR_ENOMEM;
		snprintf(cmp, sizeof cmp, "%.2f >= %.2f", qshare, R->limit);
		add_ev(f, "wait p95 / latency p95", qshare, "fraction", ANA_SIMULATED, cmp, "pipeline simulation");
		add_ev(f, "queue wait p95", pr->wait_p95_ns, "ns", ANA_SIMULATED, "", "");
		add_ev(f, "mean batch", pr->mean_batch, "", ANA_SIMULATED, "", "");
		snprintf(f->symptom, sizeof f->symptom, "queue wait is %.0f%% of the simulated p95 latency",
			 100 * qshare);
	}
	R = ana_rule(ANA_CORE_IMBALANCE);
	if (t.imbalance >= R->limit || (pr->n > 0 && pr->jain_cores < R->second)) {
		struct ana_finding *f = new_finding(out, b, v, ANA_CORE_IMBALANCE, t.imbalance, repro);
		if (!f)
			return OPR_ENOMEM;
		snprintf(cmp, sizeof cmp, "%.2f %s %.2f", t.imbalance, t.imbalance >= R->limit ? ">=" : "<",
			 R->limit);
		add_ev(f, "launch imbalance", t.imbalance, "max/mean", ANA_SIMULATED, cmp, "");
		snprintf(cmp, sizeof cmp, "%.3f %s %.2f", pr->jain_cores, pr->jain_cores < R->second ? "<" : ">=",
			 R->second);
		add_ev(f, "Jain index (cores)", pr->jain_cores, "", ANA_SIMULATED, cmp, "pipeline simulation");
		snprintf(f->symptom, sizeof f->symptom, "the slowest core carries %.2fx the mean work",
			 t.imbalance);
	}
	if (found < 0) {
		/* no clear bound: the largest term is named, flagged as balanced */
		found = t.u_compute >= t.u_global && t.u_compute >= t.u_shared ? ANA_COMPUTE_BOUND
			: t.u_global >= t.u_shared ? ANA_GLOBAL_BW_BOUND : ANA_ONCHIP_BW_BOUND;
	}
	*primary = (enum ana_class)found;
	for (size_t i = 0; i < out->n; i++) {
		struct ana_finding *f = ana_list_at(out, i);
		if (f->block == b && f->variant == v && f->cls == *primary)
			f->primary = 1;
	}
	return 0;
}
