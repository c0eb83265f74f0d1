/* analyze/imported.c: the analysis of an imported run (`opreview ingest`):
 * measurements of kernels opreview did not run. The tail-first statistics and
 * the regression test work on the source's samples as on any; the rules whose
 * inputs exist run (Nsight Compute's SOL rule on ncu's throughput counters);
 * everything that needs the device model, the pipeline simulation or
 * opreview's own run (quality against a reference, memory envelope,
 * reproducibility, worksheet) is unavailable with that reason. */
#include "analyze_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Nsight Compute's SOL rule (METHODS.md): the busier of compute and memory
 * at >= 60% of peak and >= 10 points above the other names the bound. */
#define SOL_BOUND_PCT 60.0
#define SOL_GAP_PCT 10.0

static const char *const SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
static const char *const SOL_MEMORY[] = {
	"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
	"dram__throughput.avg.pct_of_peak_sustained_elapsed",
	"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", NULL};

static const struct col_ext_counter *ext(const struct col_variant_run *vr, const char *name)
{
	for (int i = 0; i < vr->next; i++)
		if (!strcmp(vr->ext[i].name, name) && vr->ext[i].available)
			return &vr->ext[i];
	return NULL;
}

static const char *source_name(const struct col_run *run)
{
	return !strcmp(run->import.format, "ncu") ? "an Nsight Compute CSV" : "Google Benchmark JSON";
}

int ana_imported_classify(const struct ana_ctx *cx, int b, int v, struct ana_list *out,
			  struct ana_block *ab)
{
	const struct col_block_run *br = &cx->run->blocks[b];
	const struct col_variant_run *vr = &br->v[v];
	const struct col_ext_counter *sm = ext(vr, SOL_COMPUTE), *mem = NULL;
	for (int i = 0; SOL_MEMORY[i] && !mem; i++)
		mem = ext(vr, SOL_MEMORY[i]);
	if (!sm || !mem) {
		snprintf(ab->unclassified[v], ANA_TEXT,
			 "unavailable: imported from %s without the SOL throughputs (%s and a memory "
			 "throughput); no device model to classify by", source_name(cx->run), SOL_COMPUTE);
		return 0;
	}
	int compute = sm->value >= mem->value;
	double hi = compute ? sm->value : mem->value, lo = compute ? mem->value : sm->value;
	if (!(hi >= SOL_BOUND_PCT && hi - lo >= SOL_GAP_PCT)) {
		snprintf(ab->unclassified[v], ANA_TEXT,
			 "no bound: compute %.1f%% and memory %.1f%% of peak (SOL rule: >= 60%% and a "
			 ">= 10 point gap); below 60%% both is latency-bound in Nsight Compute's terms",
			 sm->value, mem->value);
		return 0;
	}
	struct ana_finding *f = ana_list_push(out);
	if (!f)
		return OPR_ENOMEM;
	f->block = b;
	f->variant = v;
	f->cls = compute ? ANA_COMPUTE_BOUND : ANA_GLOBAL_BW_BOUND;
	f->primary = 1;
	f->score = hi / 100;
	snprintf(f->symptom, sizeof f->symptom, "%s throughput %.1f%% of peak, %s %.1f%% (measured by ncu)",
		 compute ? "compute" : "memory", hi, compute ? "memory" : "compute", lo);
	snprintf(f->explanation, sizeof f->explanation,
		 "%s is the busiest unit at %.0f%% of its peak, %.0f points above %s (Nsight Compute's "
		 "SOL rule): %s", compute ? "compute (SM)" : "memory", hi, hi - lo,
		 compute ? "memory" : "compute",
		 compute ? "more work per byte will not help; fewer or cheaper instructions will"
			 : "the kernel moves more bytes than it computes on; reuse or fewer bytes will help");
	snprintf(f->reproduce, sizeof f->reproduce, "ncu --csv --page raw --metrics %s,%s <program>  "
		 "# then opreview ingest ncu", SOL_COMPUTE, mem->name);
	const struct col_ext_counter *e[2] = {compute ? sm : mem, compute ? mem : sm};
	for (int i = 0; i < 2; i++) {
		struct ana_evidence *x = &f->ev[f->nev++];
		snprintf(x->metric, sizeof x->metric, "%s throughput", e[i] == sm ? "compute" : "memory");
		x->value = e[i]->value;
		snprintf(x->unit, sizeof x->unit, "%% of peak");
		x->prov = ANA_IMPORTED;
		if (i == 0)
			snprintf(x->comparison, sizeof x->comparison, "%.1f >= 60, %.1f points above", hi,
				 hi - lo);
		snprintf(x->note, sizeof x->note, "ncu %.100s, mean over the launches%s%.40s", e[i]->name,
			 e[i]->reason[0] ? "; " : "", e[i]->reason);
	}
	/* achieved DRAM bandwidth: the launches' bytes over their median time */
	const struct col_ext_counter *rd = ext(vr, "dram__bytes_read.sum"),
				     *wr = ext(vr, "dram__bytes_write.sum");
	double t = ab->lat[v].p50.estimate;
	if (rd && wr && t > 0) {
		struct ana_evidence *x = &f->ev[f->nev++];
		snprintf(x->metric, sizeof x->metric, "DRAM bandwidth achieved");
		x->value = (rd->value + wr->value) / t;
		snprintf(x->unit, sizeof x->unit, "GB/s");
		x->prov = ANA_DERIVED;
		snprintf(x->note, sizeof x->note, "(dram__bytes_read.sum + dram__bytes_write.sum) / median "
			 "gpu__time_duration.sum");
	}
	ab->primary[v] = f->cls;
	return 0;
}

static struct ana_check *check(struct ana_list *l, int b, int v, const char *name,
			       enum ana_status st, enum ana_prov prov)
{
	struct ana_check *c = ana_list_push(l);
	if (!c)
		return NULL;
	c->block = b;
	c->variant = v;
	snprintf(c->dtype, sizeof c->dtype, "-");
	snprintf(c->name, sizeof c->name, "%s", name);
	c->id = ana_check_id_named(name);
	c->status = st;
	c->prov = prov;
	return c;
}

/* An SLA on a measured percentile: the upper bound of its distribution-free
 * CI within target passes, the lower bound beyond it fails, else WARN. */
static enum ana_status sla(const struct ana_qci *q, double target_ns)
{
	if (!q->available)
		return q->estimate <= target_ns ? ANA_WARN : ANA_FAIL;
	return q->hi <= target_ns ? ANA_PASS : q->lo > target_ns ? ANA_FAIL : ANA_WARN;
}

int ana_imported_checks(const struct ana_ctx *cx, int b, int v, const struct ana_block *ab,
			struct ana_list *cmps, struct ana_list *out)
{
	const struct col_run *run = cx->run;
	const struct col_profile *p = run->profile;
	const struct col_block_run *br = &run->blocks[b];
	const char *src = source_name(run);
	char why[160];
	struct ana_check *c;
	const struct ana_qci *q[2] = {&ab->lat[v].p95, &ab->lat[v].p99};
	const double target[2] = {p->sla.p95_us, p->sla.p99_us};
	const char *names[2] = {"SLA p95", "SLA p99"};
	for (int i = 0; i < 2; i++) {
		if (!isfinite(target[i])) {
			if (!(c = check(out, b, v, names[i], ANA_WARN, ANA_UNAVAILABLE)))
				return OPR_ENOMEM;
			snprintf(c->value, sizeof c->value, "unavailable: no SLA was given to ingest");
			snprintf(c->threshold, sizeof c->threshold, "ingest --sla-p95-us/--sla-p99-us");
			continue;
		}
		if (!(c = check(out, b, v, names[i], sla(q[i], target[i] * 1e3), ANA_IMPORTED)))
			return OPR_ENOMEM;
		snprintf(c->value, sizeof c->value, "%.3f us [%.3f, %.3f] (the kernel's own time)",
			 q[i]->estimate / 1e3, q[i]->lo / 1e3, q[i]->hi / 1e3);
		snprintf(c->threshold, sizeof c->threshold, "<= %g us", target[i]);
		snprintf(c->trigger, sizeof c->trigger, "the kernel's %s above %g us in the source's next run",
			 i ? "p99" : "p95", target[i]);
	}
	if (v == COL_CANDIDATE)
		for (size_t i = 0; i < cmps->n; i++) {
			struct ana_block_cmp *bc = ana_list_at(cmps, i);
			if (bc->block != b || bc->q != 0.95)
				continue;
			enum ana_status st = !bc->available ? ANA_WARN
					     : bc->c.outcome == ANA_CMP_REGRESSION ? ANA_FAIL
					     : bc->c.outcome == ANA_CMP_PASS ? ANA_PASS : ANA_WARN;
			if (!(c = check(out, b, v, "regression p95 (imported)", st, ANA_IMPORTED)))
				return OPR_ENOMEM;
			if (bc->available)
				snprintf(c->value, sizeof c->value, "x%.3f [%.3f, %.3f] p=%.2g%s",
					 bc->c.ratio.ratio, bc->c.ratio.lo, bc->c.ratio.hi,
					 bc->c.p_adjusted, bc->c.underpowered ? " underpowered" : "");
			else
				snprintf(c->value, sizeof c->value, "%s", bc->reason);
			snprintf(c->threshold, sizeof c->threshold, "ratio CI below %.2f",
				 1 + p->sla.max_regression);
			snprintf(c->trigger, sizeof c->trigger, "p95 above %.2f x baseline p95 in the source's "
				 "next run", 1 + p->sla.max_regression);
		}
	/* what only a run of opreview's own gives: unavailable, so never SHIP */
	static const struct {
		const char *name, *what;
	} none[] = {{"numerical quality", "no outputs to hold against a reference"},
		    {"memory envelope", "no plan or device model"},
		    {"reproducibility", "opreview cannot replay a run it did not make"}};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
		if (!(c = check(out, b, v, none[i].name, ANA_WARN, ANA_UNAVAILABLE)))
			return OPR_ENOMEM;
		snprintf(why, sizeof why, "unavailable: imported from %s: %s", src, none[i].what);
		snprintf(c->value, sizeof c->value, "%.95s", why);
		snprintf(c->threshold, sizeof c->threshold, "-");
	}
	for (size_t i = 0; i < out->n; i++) {
		struct ana_check *r = ana_list_at(out, i);
		if (r->block == b && r->variant == v)
			snprintf(r->rollback_to, sizeof r->rollback_to, "baseline: %.140s (imported)",
				 br->block->source[0]);
	}
	return 0;
}
