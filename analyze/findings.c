/* analyze/findings.c: findings.json (schema: fixtures/findings/SCHEMA.md),
 * the one file report/ reads. Keys sorted; unavailable values are null with a
 * reason, never 0. */
#include "analyze_int.h"

#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every key and element goes through put/add: a failed allocation (a NULL
 * value, or the set itself) is remembered in *bad, and the builder then
 * returns NULL, so out of memory reaches ana_findings_write as an error
 * instead of a findings.json with keys missing. */
static void put(int *bad, json_t *o, const char *k, json_t *v)
{
	if (json_object_set_new(o, k, v))
		*bad = 1;
}

static void add(int *bad, json_t *a, json_t *v)
{
	if (json_array_append_new(a, v))
		*bad = 1;
}

static json_t *done(int bad, json_t *o)
{
	if (!bad && o)
		return o;
	json_decref(o);
	return NULL;
}

static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *qci_json(const struct ana_qci *q)
{
	if (!q->available)
		return json_pack("{s:o,s:o,s:o,s:b,s:s}", "value_ns", num(q->estimate), "lo_ns",
				 json_null(), "hi_ns", json_null(), "available", 0, "reason",
				 q->reason ? q->reason : "not enough samples");
	return json_pack("{s:o,s:o,s:o,s:b,s:n}", "value_ns", num(q->estimate), "lo_ns", num(q->lo),
			 "hi_ns", num(q->hi), "available", 1, "reason");
}

static json_t *latency_json(const struct ana_latency *l)
{
	return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)l->n, "mean_ns",
			 num(l->mean_ns), "max_ns", num(l->max_ns), "p50", qci_json(&l->p50), "p90",
			 qci_json(&l->p90), "p95", qci_json(&l->p95), "p99", qci_json(&l->p99));
}

/* A GPU run's pipeline: the service times the simulation used (measured)
 * and the trace replayed on the device (measured) beside the simulation's
 * values for the same requests (simulated); unavailable with the reason
 * where the archive has no replay. */
static json_t *device_pipe_json(const struct col_variant_run *vr)
{
	int bad = 0;
	const struct col_replay *rp = &vr->replay;
	json_t *o = json_object(), *lt = json_array();
	for (size_t i = 0; vr->dev_launch_ns && i < vr->ndev_launch; i++)
		add(&bad, lt, num(vr->dev_launch_ns[i] / 1e3));
	put(&bad, o, "service_times_provenance",
	    json_string(vr->ndev_launch ? "measured" : "simulated"));
	put(&bad, o, "service_launch_us", vr->ndev_launch ? lt : (json_decref(lt), json_null()));
	if (rp->state == COL_REPLAY_MEASURED) {
		put(&bad, o, "provenance", json_string("measured"));
		put(&bad, o, "requests", json_integer((json_int_t)rp->n));
		put(&bad, o, "jobs", json_integer((json_int_t)rp->jobs));
		put(&bad, o, "streams", json_integer(rp->streams));
		put(&bad, o, "p50_us", num(rp->p50_ns / 1e3));
		put(&bad, o, "p95_us", num(rp->p95_ns / 1e3));
		put(&bad, o, "p99_us", num(rp->p99_ns / 1e3));
		put(&bad, o, "max_us", num(rp->max_ns / 1e3));
		put(&bad, o, "wait_p95_us", num(rp->wait_p95_ns / 1e3));
		put(&bad, o, "wait_mean_us", num(rp->wait_mean_ns / 1e3));
		put(&bad, o, "throughput_rps", num(rp->throughput_rps));
		put(&bad, o, "simulated", json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "provenance",
						    "simulated", "p50_us", num(rp->sim_p50_ns / 1e3),
						    "p95_us", num(rp->sim_p95_ns / 1e3), "p99_us",
						    num(rp->sim_p99_ns / 1e3), "wait_p95_us",
						    num(rp->sim_wait_p95_ns / 1e3), "wait_mean_us",
						    num(rp->sim_wait_mean_ns / 1e3)));
	} else {
		put(&bad, o, "provenance", json_string("unavailable"));
		put(&bad, o, "reason",
		    json_string(rp->state == COL_REPLAY_UNAVAILABLE
					? rp->reason
					: "the archive has no replay on the device (it predates it)"));
	}
	return done(bad, o);
}

static json_t *pipe_json(const struct col_variant_run *vr, int gpu)
{
	int bad = 0;
	const struct col_pipe_result *r = &vr->pipe;
	json_t *edges = json_array(), *counts = json_array(), *cu = json_array(), *sw = json_array();
	for (size_t i = 0; r->hist_edges_ns && i <= r->hist_bins; i++)
		add(&bad, edges, num(r->hist_edges_ns[i] / 1e3));
	for (size_t i = 0; r->hist_counts && i < r->hist_bins; i++)
		add(&bad, counts, json_integer(r->hist_counts[i]));
	for (int i = 0; i < r->cores && i < COL_PIPE_MAX_CORES; i++)
		add(&bad, cu, num(r->core_util[i]));
	for (size_t i = 0; i < vr->nsweep; i++) {
		const struct col_pipe_sweep_row *w = &vr->sweep[i];
		add(&bad, sw, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o}", "batch", w->batch,
						    "p50_us", num(w->p50_ns / 1e3), "p95_us",
						    num(w->p95_ns / 1e3), "p99_us", num(w->p99_ns / 1e3),
						    "throughput_rps", num(w->throughput_rps),
						    "wait_mean_us", num(w->wait_mean_ns / 1e3)));
	}
	json_t *o = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "requests", (json_int_t)r->n,
			      "p50_us", num(r->p50_ns / 1e3), "p95_us", num(r->p95_ns / 1e3),
			      "p99_us", num(r->p99_ns / 1e3), "max_us", num(r->max_ns / 1e3),
			      "mean_us", num(r->mean_ns / 1e3), "wait_p50_us",
			      num(r->wait_p50_ns / 1e3), "wait_p95_us", num(r->wait_p95_ns / 1e3),
			      "wait_p99_us", num(r->wait_p99_ns / 1e3), "throughput_rps",
			      num(r->throughput_rps));
	put(&bad, o, "p95_lo_us", num(vr->pipe_p95_lo / 1e3));
	put(&bad, o, "p95_hi_us", num(vr->pipe_p95_hi / 1e3));
	put(&bad, o, "p99_lo_us", num(vr->pipe_p99_lo / 1e3));
	put(&bad, o, "p99_hi_us", num(vr->pipe_p99_hi / 1e3));
	put(&bad, o, "uncontended_p95_us", num(vr->pipe_free_p95_ns / 1e3));
	put(&bad, o, "uncontended_p99_us", num(vr->pipe_free_p99_ns / 1e3));
	put(&bad, o, "hidden_p95_us", num(vr->pipe_hidden_p95_ns / 1e3));
	put(&bad, o, "bytes", num(r->bytes));
	put(&bad, o, "jain_cores", num(r->jain_cores));
	put(&bad, o, "jain_streams", num(r->jain_streams));
	put(&bad, o, "bw_util", num(r->bw_util));
	put(&bad, o, "mean_batch", num(r->mean_batch));
	put(&bad, o, "max_concurrent_bursts", json_integer(r->max_concurrent_bursts));
	put(&bad, o, "little_L", num(r->little_L));
	/* the simulation counts arrivals per ns; the packet speaks of rps */
	put(&bad, o, "little_lambda_rps", num(r->little_lambda * 1e9));
	put(&bad, o, "little_W_us", num(r->little_W / 1e3));
	put(&bad, o, "wait_hist", json_pack("{s:o,s:o}", "edges_us", edges, "counts", counts));
	put(&bad, o, "core_util", cu);
	put(&bad, o, "sweep", sw);
	if (gpu)
		put(&bad, o, "device_replay", device_pipe_json(vr));
	return done(bad, o);
}

static uint64_t macs_total(const struct ops_counters *c)
{
	uint64_t m = 0;
	for (int t = 0; t < OPS_NDTYPES; t++)
		m += c->macs[t];
	return m;
}

/* An imported variant: its samples' statistics, the source's name and
 * counters; what only a run of opreview's own has is null with the reason. */
static json_t *imported_variant_json(const struct ana_findings *f, int b, int v)
{
	int bad = 0;
	const struct col_block_run *br = &f->run->blocks[b];
	const struct col_variant_run *vr = &br->v[v];
	const struct ana_block *ab = &f->blocks[b];
	const char *why = "unavailable: imported run (no group, plan or device model)";
	json_t *o = json_object();
	put(&bad, o, "variant", json_string(col_variant_name(v)));
	put(&bad, o, "source", json_string(br->block->source[v]));
	put(&bad, o, "plan", json_string(why));
	put(&bad, o, "fused", json_false());
	put(&bad, o, "plan_was_auto", json_false());
	put(&bad, o, "fell_back", json_false());
	put(&bad, o, "plan_note", json_string(why));
	put(&bad, o, "latency", latency_json(&ab->lat[v]));
	static const char *const model[] = {"model_ns", "launches", "global_bytes", "shared_bytes",
		"transfers", "splits", "footprint_bytes", "reuse_ratio", "macs", "elem_ops", NULL};
	for (int i = 0; model[i]; i++)
		put(&bad, o, model[i], json_null());
	put(&bad, o, "unavailable_reason", json_string(why));
	put(&bad, o, "quality", json_pack("{s:n,s:n,s:b,s:n,s:s}", "rel_l2", "max_abs_lsb",
						    "exact_int", 0, "threshold", "metric",
						    "unavailable: no outputs in the source"));
	put(&bad, o, "output_sha256", json_string(""));
	put(&bad, o, "input_sha256", json_string(""));
	put(&bad, o, "primary_bottleneck",
			    json_string(ab->unclassified[v][0] ? ab->unclassified[v]
							       : ana_class_name(ab->primary[v])));
	put(&bad, o, "pipeline", json_null());
	put(&bad, o, "imported_counters", col_ext_counters_json(vr));
	return done(bad, o);
}

static json_t *variant_json(const struct ana_findings *f, int b, int v)
{
	int bad = 0;
	if (f->run->profile->imported[0])
		return imported_variant_json(f, b, v);
	const struct col_block_run *br = &f->run->blocks[b];
	const struct col_variant_run *vr = &br->v[v];
	const struct ops_counters *c = &vr->counters;
	char plan[160];
	ops_plan_describe(br->block->work.group, &vr->plan, plan, sizeof plan);
	double qv, qt;
	ana_quality_metric(f->run->profile, br->block, vr, &qv, &qt);
	json_t *o = json_object();
	put(&bad, o, "variant", json_string(col_variant_name(v)));
	put(&bad, o, "plan", json_string(plan));
	put(&bad, o, "fused", json_boolean(vr->plan.fused));
	put(&bad, o, "plan_was_auto", json_boolean(vr->plan_was_auto));
	put(&bad, o, "fell_back", json_boolean(vr->fell_back));
	put(&bad, o, "plan_note", json_string(vr->plan_note));
	put(&bad, o, "latency", latency_json(&f->blocks[b].lat[v]));
	put(&bad, o, "model_ns", num(vr->model_ns));
	put(&bad, o, "launches", json_integer((json_int_t)c->launches));
	put(&bad, o, "global_bytes", json_integer((json_int_t)ops_global_bytes(c)));
	put(&bad, o, "shared_bytes",
			    json_integer((json_int_t)(c->bytes[OPS_GLOBAL][OPS_SHARED] +
						      c->bytes[OPS_SHARED][OPS_GLOBAL] +
						      c->compute_read_bytes + c->compute_write_bytes)));
	put(&bad, o, "transfers", json_integer((json_int_t)c->transfers));
	put(&bad, o, "splits", json_integer((json_int_t)c->splits));
	put(&bad, o, "footprint_bytes", json_integer((json_int_t)c->peak_shared_bytes));
	put(&bad, o, "reuse_ratio", num(ops_reuse_ratio(c)));
	put(&bad, o, "macs", json_integer((json_int_t)macs_total(c)));
	put(&bad, o, "elem_ops", json_integer((json_int_t)c->elem_ops));
	put(&bad, o, "quality",
			    json_pack("{s:o,s:o,s:b,s:o,s:s}", "rel_l2", num(vr->quality.rel_l2),
				      "max_abs_lsb", num(vr->quality.max_abs_lsb), "exact_int",
				      vr->quality.exact_int, "threshold", num(qt), "metric",
				      ana_quality_name(br->block)));
	put(&bad, o, "output_sha256", json_string(vr->output_sha256));
	put(&bad, o, "input_sha256", json_string(vr->input_sha256));
	put(&bad, o, "primary_bottleneck", json_string(ana_class_name(f->blocks[b].primary[v])));
	put(&bad, o, "pipeline", pipe_json(vr, f->run->gpu.present));
	return done(bad, o);
}

static const char *outcome_name(enum ana_outcome o)
{
	return o == ANA_CMP_PASS ? "PASS" : o == ANA_CMP_REGRESSION ? "REGRESSION" : "INCONCLUSIVE";
}

static json_t *comparisons_json(const struct ana_findings *f, int b)
{
	int bad = 0;
	json_t *a = json_array();
	for (size_t i = 0; i < f->ncmp; i++) {
		const struct ana_block_cmp *c = &f->cmp[i];
		if (c->block != b)
			continue;
		char metric[8];
		snprintf(metric, sizeof metric, "p%.0f", c->q * 100);
		if (!c->available) {
			add(&bad, a, json_pack("{s:s,s:b,s:s,s:s}", "metric", metric, "available", 0,
							   "reason", c->reason, "outcome", "INCONCLUSIVE"));
			continue;
		}
		add(&bad, 
			a, json_pack("{s:s,s:b,s:n,s:o,s:o,s:o,s:o,s:o,s:s,s:b,s:b,s:o,s:s}", "metric", metric,
				     "available", 1, "reason", "ratio", num(c->c.ratio.ratio), "lo",
				     num(c->c.ratio.lo), "hi", num(c->c.ratio.hi), "p_mwu", num(c->c.p_mwu),
				     "p_adjusted", num(c->c.p_adjusted), "outcome", outcome_name(c->c.outcome),
				     "faster", c->c.faster, "underpowered", c->c.underpowered, "mde",
				     num(c->c.noise.mde), "note", c->c.reason ? c->c.reason : ""));
	}
	return done(bad, a);
}

static json_t *blocks_json(const struct ana_findings *f)
{
	int bad = 0;
	json_t *a = json_array();
	for (int b = 0; b < f->run->nblocks; b++) {
		const struct col_block_run *br = &f->run->blocks[b];
		const struct ana_block *ab = &f->blocks[b];
		const struct ops_workload *w = &br->block->work;
		char desc[256];
		int imp = f->run->profile->imported[0] != 0;
		if (imp)
			snprintf(desc, sizeof desc, "imported: %s vs %s", br->block->source[0],
				 br->block->source[1]);
		else
			col_workload_describe(w, desc, sizeof desc);
		int has_act = w->group == OPS_G_ACTIVATION || w->group == OPS_G_CONV_BIAS_ACT ||
			      w->group == OPS_G_QGEMM_DQ_BIAS_ACT || w->group == OPS_G_PERMUTE_ACT;
		json_t *noise = ab->noise.nrounds
					? json_pack("{s:o,s:o,s:o,s:b,s:n}", "floor", num(ab->noise.floor), "cv",
						    num(ab->noise.round_cv), "mde", num(ab->noise.mde),
						    "available", 1, "reason")
					: json_pack("{s:n,s:n,s:n,s:b,s:s}", "floor", "cv", "mde", "available", 0,
						    "reason", "fewer than 4 rounds");
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:o,s:o,s:o}", "name", br->block->name,
				      "group", imp ? "imported" : ops_group_name(w->group), "dtype",
				      imp ? "-" : w->group == OPS_G_QGEMM || w->group == OPS_G_QGEMM_DQ_BIAS_ACT
					      ? "int8" : ops_dtype_name(w->dtype),
				      "activation", imp ? "-" : has_act ? ops_act_name(w->act) : "none", "workload", desc,
				      "stop_reason", br->stop_reason, "rounds", br->nrounds, "reps_per_round",
				      br->reps_per_round, "launch_reduction", imp ? json_null() : num(ab->launch_reduction),
				      "launch_overhead_saved_us", imp ? json_null() : num(ab->launch_overhead_saved_ns / 1e3),
				      "noise", noise);
		json_t *vs = json_array();
		for (int v = 0; v < 2; v++)
			add(&bad, vs, variant_json(f, b, v));
		put(&bad, o, "variants", vs);
		put(&bad, o, "comparisons", comparisons_json(f, b));
		/* the block's own verdict: its candidate's worst check, and the
		 * checks that did not pass (the packet's first screen) */
		enum ana_status worst = ANA_PASS;
		json_t *att = json_array();
		for (size_t i = 0; i < f->nchecks; i++) {
			const struct ana_check *c = &f->checks[i];
			if (c->block != b || c->variant != COL_CANDIDATE || c->status == ANA_PASS)
				continue;
			if (c->status > worst)
				worst = c->status;
			add(&bad, att, json_pack("{s:s,s:s,s:s,s:s}", "id", ana_check_rule(c->id)->key,
							     "check", c->name, "status",
							     ana_status_name(c->status), "value", c->value));
		}
		put(&bad, o, "status", json_string(ana_status_name(worst)));
		put(&bad, o, "attention", att);
		put(&bad, o, "shape_origin",
		    json_string(br->block->shape_production ? "production" : "synthetic"));
		put(&bad, o, "shape_source", json_string(br->block->shape_source));
		add(&bad, a, o);
	}
	return done(bad, a);
}

static const char *bname(const struct ana_findings *f, int b)
{
	return f->run->blocks[b].block->name;
}

static json_t *bottlenecks_json(const struct ana_findings *f)
{
	int bad = 0;
	json_t *a = json_array();
	for (size_t i = 0; i < f->nfind; i++) {
		const struct ana_finding *x = &f->find[i];
		json_t *ev = json_array();
		for (int k = 0; k < x->nev; k++) {
			const struct ana_evidence *e = &x->ev[k];
			add(&bad, ev, json_pack("{s:s,s:o,s:s,s:s,s:s,s:s}", "metric", e->metric,
							    "value", num(e->value), "unit", e->unit,
							    "provenance", ana_prov_name(e->prov),
							    "comparison", e->comparison, "note", e->note));
		}
		add(&bad, a, json_pack("{s:s,s:s,s:s,s:b,s:o,s:s,s:s,s:s,s:o}", "block",
						   bname(f, x->block), "variant", col_variant_name(x->variant),
						   "class", ana_class_name(x->cls), "primary", x->primary,
						   "score", num(x->score), "symptom", x->symptom,
						   "explanation", x->explanation, "reproduce", x->reproduce,
						   "evidence", ev));
	}
	return done(bad, a);
}

static json_t *worksheet_json(const struct ana_findings *f, json_t *rejected)
{
	int bad = 0;
	json_t *a = json_array();
	for (size_t i = 0; i < f->nws; i++) {
		const struct ana_worksheet_row *w = &f->ws[i];
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b,s:b,s:b,s:I,s:I,s:I,s:o,s:I,s:o,s:o,s:s,s:s,s:s,s:s}",
				      "block", bname(f, w->block), "variant", col_variant_name(w->variant),
				      "group", w->group, "plan", w->plan, "fused", w->fused, "fits", w->fits,
				      "shown", w->shown,
				      "footprint_bytes", (json_int_t)w->footprint_bytes, "capacity_bytes",
				      (json_int_t)w->capacity_bytes, "global_bytes",
				      (json_int_t)w->global_bytes, "reuse_ratio", num(w->reuse_ratio),
				      "launches", (json_int_t)w->launches, "launch_overhead_saved_us",
				      num(w->launch_overhead_saved_ns / 1e3), "model_us",
				      num(w->model_ns / 1e3), "expected_bottleneck", w->expected_bottleneck,
				      "shift", w->shift, "status", w->chosen ? "chosen" : "rejected",
				      "reason", w->reason);
		add(&bad, a, o);
		if (!w->chosen)
			add(&bad, rejected, json_pack("{s:s,s:s,s:s,s:s,s:b}", "block",
								  bname(f, w->block), "variant",
								  col_variant_name(w->variant), "plan",
								  w->plan, "reason", w->reason, "shown", w->shown));
	}
	return done(bad, a);
}

static json_t *validation_json(const struct ana_findings *f)
{
	int bad = 0;
	json_t *a = json_array();
	for (size_t i = 0; i < f->nchecks; i++) {
		const struct ana_check *c = &f->checks[i];
		add(&bad, a, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "block",
						   bname(f, c->block), "variant",
						   col_variant_name(c->variant), "id",
						   ana_check_rule(c->id)->key, "dtype", c->dtype,
						   "check", c->name, "status", ana_status_name(c->status),
						   "value", c->value, "threshold", c->threshold,
						   "provenance", ana_prov_name(c->prov), "trigger",
						   c->trigger, "rollback_to", c->rollback_to));
	}
	return done(bad, a);
}

static json_t *mitigations_json(const struct ana_findings *f)
{
	int bad = 0;
	json_t *a = json_array();
	for (size_t i = 0; i < f->nmit; i++) {
		const struct ana_mitigation *m = &f->mit[i];
		add(&bad, a, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "block", bname(f, m->block),
						   "title", m->title, "owner_role", m->owner_role,
						   "expected", m->expected, "validation", m->validation,
						   "rollback", m->rollback));
	}
	return done(bad, a);
}

/* One counter of one variant; source says where the value came from (the device
 * model, a PAPI component, a clock or a system call). */
static void counter_row(int *bad, json_t *a, const char *b, const char *v, const char *name,
			double value, const char *prov, const char *source, int available,
			const char *reason)
{
	add(bad, a, json_pack("{s:s,s:s,s:s,s:o,s:s,s:s,s:b,s:s}", "block", b,
					   "variant", v, "name", name, "value",
					   available ? num(value) : json_null(), "provenance",
					   available ? prov : "unavailable", "source", source,
					   "available", available, "reason", reason ? reason : ""));
}

static json_t *counters_json(const struct ana_findings *f)
{
	int bad = 0;
	json_t *a = json_array();
	const struct col_run *run = f->run;
	const char *model = "device model, one execution";
	for (int b = 0; b < run->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *vr = &run->blocks[b].v[v];
			const struct ops_counters *c = &vr->counters;
			const char *bn = bname(f, b), *vn = col_variant_name(v);
			if (run->profile->imported[0]) {
				/* the source's counters, per sample; its samples */
				for (int k = 0; k < vr->next; k++) {
					const struct col_ext_counter *x = &vr->ext[k];
					char name[128];
					snprintf(name, sizeof name, "%s%s%s%s", x->name, x->unit[0] ? " (" : "",
						 x->unit, x->unit[0] ? ")" : "");
					counter_row(&bad, a, bn, vn, name, x->value, "imported", run->import.path,
						    x->available, x->reason);
				}
				counter_row(&bad, a, bn, vn, "imported samples", (double)vr->nsamples, "imported",
					    run->import.path, 1, NULL);
				continue;
			}
			for (int s = 0; s < OPS_NSPACES; s++)
				for (int d = 0; d < OPS_NSPACES; d++) {
					if (s == d || (!c->bytes[s][d] && (s == OPS_LOCAL || d == OPS_LOCAL)))
						continue;
					char k[48];
					snprintf(k, sizeof k, "bytes %s->%s", ops_space_name(s), ops_space_name(d));
					counter_row(&bad, a, bn, vn, k, (double)c->bytes[s][d], "simulated", model, 1,
						    NULL);
				}
			counter_row(&bad, a, bn, vn, "DMA transfers", (double)c->transfers, "simulated", model, 1,
				    NULL);
			counter_row(&bad, a, bn, vn, "DMA splits", (double)c->splits, "simulated", model, 1, NULL);
			counter_row(&bad, a, bn, vn, "launches", (double)c->launches, "simulated", model, 1, NULL);
			counter_row(&bad, a, bn, vn, "MACs", (double)macs_total(c), "simulated", model, 1, NULL);
			counter_row(&bad, a, bn, vn, "peak SHARED bytes", (double)c->peak_shared_bytes,
				    "simulated", model, 1, NULL);
			counter_row(&bad, a, bn, vn, "modelled time ns", vr->model_ns, "simulated", model, 1,
				    NULL);
			counter_row(&bad, a, bn, vn, run->gpu.present ? "GPU samples" : "host samples",
				    (double)vr->nsamples, "measured",
				    run->gpu.present ? "CUDA events" : "CLOCK_MONOTONIC", 1, NULL);
			/* a GPU run: the counting pass, one run each, beside the model's
			 * GLOBAL bytes (read = GLOBAL->*, written = *->GLOBAL) */
			uint64_t gr = 0, gw = 0;
			for (int d = 0; d < OPS_NSPACES; d++) {
				gr += c->bytes[OPS_GLOBAL][d];
				gw += c->bytes[d][OPS_GLOBAL];
			}
			for (size_t e = 0; e < vr->ngpu_counters; e++) {
				const struct col_gpu_counter *g = &vr->gpu_counters[e];
				char name[160], why[COL_REASON_MAX + 96];
				const uint64_t sim = strstr(g->name, "dram__bytes_read") ? gr
						   : strstr(g->name, "dram__bytes_write") ? gw : 0;
				snprintf(name, sizeof name, "%s (one run)", g->name);
				if (sim && g->available)
					snprintf(why, sizeof why, "simulated GLOBAL bytes %llu, hardware/simulated %.4f",
						 (unsigned long long)sim, (double)g->value / (double)sim);
				else
					snprintf(why, sizeof why, "%s", g->reason);
				counter_row(&bad, a, bn, vn, name, (double)g->value, "papi", "PAPI cuda component",
					    g->available, why);
			}
			for (size_t e = 0; e < run->nevents; e++) {
				const struct col_event *ev = &run->events[e];
				char name[128], src[64];
				snprintf(name, sizeof name, "%s (sum over samples)", ev->name);
				snprintf(src, sizeof src, "PAPI %s", ev->component[0] ? ev->component : "-");
				counter_row(&bad, a, bn, vn, name, (double)(vr->event_totals ? vr->event_totals[e] : 0),
					    "papi", src, ev->available && vr->event_totals, ev->reason);
			}
			for (int k = 0; k < COL_NHC; k++) {
				const struct col_hc_info *h = &run->hc[k];
				char name[96];
				snprintf(name, sizeof name, "%s (sum over samples)", col_hc_name(k));
				counter_row(&bad, a, bn, vn, name, (double)vr->hc_totals[k], "measured",
					    h->source[0] ? h->source : "-", h->available, h->reason);
			}
		}
	return done(bad, a);
}

/* The host software counters per tail sample against the rest (ana_tail_counters). */
static json_t *tail_counters_json(const struct ana_findings *f)
{
	json_t *a = json_array();
	const struct col_run *run = f->run;
	for (int b = 0; b < run->nblocks && a; b++)
		for (int v = 0; v < 2; v++) {
			struct ana_tail_counter t[COL_NHC];
			if (ana_tail_counters(run, b, v, t)) {
				json_decref(a);
				return NULL;
			}
			for (int c = 0; c < COL_NHC; c++) {
				const struct col_hc_info *h = &run->hc[c];
				json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:s,s:I,s:I,s:o,s:o,s:o,s:o}",
						      "block", bname(f, b), "variant", col_variant_name(v),
						      "counter", col_hc_name(c), "source", h->source,
						      "provenance", t[c].available ? "measured" : "unavailable",
						      "available", t[c].available, "reason", h->reason,
						      "tail_samples", (json_int_t)t[c].tail_samples,
						      "rest_samples", (json_int_t)t[c].rest_samples,
						      "tail_per_sample", num(t[c].tail_per_sample),
						      "rest_per_sample", num(t[c].rest_per_sample),
						      "tail_share", num(t[c].tail_share),
						      "rest_share", num(t[c].rest_share));
				if (!o || json_array_append_new(a, o)) {
					json_decref(a);
					return NULL;
				}
			}
		}
	return a;
}

static json_t *rules_json(void)
{
	size_t n;
	const struct ana_rule *r = ana_rules(&n);
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char thr[128];
		ana_rule_threshold(&r[i], thr, sizeof thr);
		if (json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:f,s:f,s:s,s:s}", "class",
						       ana_class_name(r[i].cls), "formula", r[i].formula,
						       "threshold", thr, "limit", r[i].limit, "second",
						       r[i].second, "explanation", r[i].explanation,
						       "source", r[i].source))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* The check and verdict tables, as analyze/analyze.c applies them. */
static json_t *check_rules_json(void)
{
	size_t n, nv;
	const struct ana_check_rule *r = ana_check_rules(&n);
	const struct ana_verdict_rule *v = ana_verdict_rules(&nv);
	json_t *checks = json_array(), *verdicts = json_array();
	json_t *o = json_pack("{s:o,s:o}", "checks", checks, "verdicts", verdicts);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(
			    checks, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:s}", "id", r[i].key, "name",
					      r[i].name, "pass", r[i].pass, "warn", r[i].warn, "fail",
					      r[i].fail, "on_fail",
					      r[i].on_fail == ANA_GATES_NOTHING
						      ? "gates nothing"
						      : ana_verdict_name((enum ana_verdict)r[i].on_fail),
					      "limit", r[i].limit, "source", r[i].source)))
			goto oom;
	for (size_t i = 0; i < nv; i++)
		if (json_array_append_new(verdicts, json_pack("{s:s,s:s}", "verdict",
							      ana_verdict_name(v[i].verdict), "when",
							      v[i].when)))
			goto oom;
	return o;
oom:
	json_decref(o);
	return NULL;
}

static json_t *context_json(const struct ana_findings *f)
{
	int bad = 0;
	const struct col_run *run = f->run;
	const struct col_profile *p = run->profile;
	const struct ops_envelope *e = &p->envelope;
	const struct col_host *h = &run->host;
	char digest[65], cmd[1200], replay[700];
	col_sha256_hex(p->text, p->text_len, digest);
	json_t *o = json_object();
	put(&bad, o, "profile",
			    json_pack("{s:s,s:s,s:s,s:I,s:s,s:{s:s,s:s,s:s}}", "name", p->name, "path",
				      run->profile_origin, "sha256", digest, "seed", (json_int_t)p->seed,
				      "model_revision", p->model_revision, "metadata", "compiler",
				      p->compiler, "runtime", p->runtime, "firmware", p->firmware));
	put(&bad, o, "sla", json_pack("{s:o,s:o,s:o,s:o}", "p95_us", num(p->sla.p95_us), "p99_us",
						num(p->sla.p99_us), "min_throughput_rps",
						num(p->sla.min_throughput_rps), "max_regression",
						num(p->sla.max_regression)));
	put(&bad, o, "precision",
			    json_pack("{s:o,s:o,s:o,s:o}", "fp32_max_rel_l2", num(p->precision.fp32_max_rel_l2),
				      "fp16_max_rel_l2", num(p->precision.fp16_max_rel_l2), "bf16_max_rel_l2",
				      num(p->precision.bf16_max_rel_l2), "int8_max_abs_lsb",
				      num(p->precision.int8_max_abs_lsb)));
	put(&bad, o, "traffic",
			    json_pack("{s:i,s:s,s:o,s:i,s:o,s:s,s:I}", "streams", p->traffic.streams, "process",
				      p->traffic.process, "rate_rps", num(p->traffic.rate_rps), "batch_max",
				      p->traffic.batch_max, "batch_timeout_us", num(p->traffic.batch_timeout_us),
				      "placement", p->traffic.placement, "requests",
				      (json_int_t)p->traffic.requests));
	put(&bad, 
		o, "envelope",
		json_pack("{s:s,s:s,s:s,s:o,s:i,s:o,s:o,s:o,s:o,s:I,s:o,s:i,s:b,s:{s:o,s:o,s:o,s:o,s:o,s:o},s:o}", "name",
			  e->name, "source", p->envelope_source, "power_mode", e->power_mode, "clock_ghz",
			  num(e->clock_ghz), "cores", e->cores, "global_bandwidth_gbps", num(e->global_bw_gbps),
			  "shared_capacity_kib", num(e->shared_capacity_kib), "shared_bandwidth_gbps",
			  num(e->shared_bw_gbps), "local_capacity_kib", num(e->local_capacity_kib),
			  "dma_max_last_dim", (json_int_t)e->dma_max_last_dim, "dma_setup_ns",
			  num(e->dma_setup_ns), "dma_engines", e->dma_engines, "dma_serial", e->dma_serial,
			  "compute_tops", "fp32",
			  num(e->tops[OPS_F32]), "fp16", num(e->tops[OPS_F16]), "bf16", num(e->tops[OPS_BF16]),
			  "int8", num(e->tops[OPS_S8]), "vector", num(e->vector_tops > 0 ? e->vector_tops : NAN),
			  "vector_half", num(e->vector_half_tops > 0 ? e->vector_half_tops : NAN),
			  "launch_overhead_us", num(e->launch_overhead_us)));
	put(&bad, json_object_get(o, "envelope"), "calibrated",
			    json_boolean(p->calibration.present));
	/* GLOBAL per direction, only where the envelope prices it so (ops.h) */
	if (e->global_read_bw_gbps > 0)
		put(&bad, json_object_get(o, "envelope"), "global_read_gbps", num(e->global_read_bw_gbps));
	if (e->global_write_bw_gbps > 0)
		put(&bad, json_object_get(o, "envelope"), "global_write_gbps",
		    num(e->global_write_bw_gbps));
	/* the one-pass shares a host calibration measured (ops.h), only where
	 * it has them */
	json_t *op = json_object();
	for (int fam = 0; fam < OPS_NKCLASSES; fam++)
		if (e->one_pass_share[fam] > 0)
			put(&bad, op, ops_kernel_class_name((enum ops_kernel_class)fam),
			    num(e->one_pass_share[fam]));
	if (json_object_size(op))
		put(&bad, json_object_get(o, "envelope"), "one_pass", op);
	else
		json_decref(op);
	if (p->imported[0]) {
		/* nothing of these exists for a run opreview did not make: no zeros */
		static const char *const none[] = {"envelope", "precision", "traffic"};
		for (int i = 0; i < 3; i++)
			put(&bad, o, none[i],
					    json_pack("{s:s,s:b,s:s}", "name", "none", "available", 0,
						      "reason", "unavailable: an imported run has no device "
						      "model, quality check or pipeline simulation"));
	}
	put(&bad, o, "host",
			    json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "cpu_model",
				      h->cpu_model, "cpus_online", h->cpus_online, "caches", h->caches,
				      "kernel", h->kernel, "governor", h->governor, "compiler", h->compiler,
				      "cflags", h->cflags, "versions", h->versions, "tool_version",
				      h->tool_version, "git_revision", h->git_revision, "hostname",
				      h->hostname, "mem_total_bytes", (json_int_t)h->mem_total_bytes,
				      "kernel_isa", h->kernel_isa, "kernel_paths", h->kernel_paths));
	if (run->gpu.present) {
		const struct col_gpu *g = &run->gpu;
		char cc[24];
		snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
		put(&bad, 
			o, "device",
			json_pack("{s:s,s:i,s:s,s:s,s:i,s:i,s:i,s:o,s:o,s:I,s:I,s:s,s:i,s:i,s:s,s:b}", "kind",
				  "cuda", "index", g->index, "name", g->name, "compute_capability", cc,
				  "sm_count", g->sm_count, "sm_clock_khz", g->sm_clock_khz,
				  "mem_clock_khz", g->mem_clock_khz, "clock_seen_mhz_min",
				  num(g->clock_seen_mhz_min > 0 ? g->clock_seen_mhz_min : NAN),
				  "clock_seen_mhz_max",
				  num(g->clock_seen_mhz_max > 0 ? g->clock_seen_mhz_max : NAN), "l2_bytes",
				  (json_int_t)g->l2_bytes, "shared_per_block_optin_bytes",
				  (json_int_t)g->shared_per_block_optin, "kernel_driver", g->kernel_driver,
				  "driver_version",
				  g->driver_version, "cuda_runtime_version", g->runtime_version,
				  "papi_version", g->papi_version, "l2_flushed_per_sample", g->l2_flush));
	}
	put(&bad, o, "papi_status", json_string(run->papi_status));
	if (p->imported[0])
		put(&bad, o, "imported", col_import_json(&run->import));
	put(&bad, o, "overhead", json_pack("{s:o,s:o}", "clock_read_ns", num(run->clock_read_ns),
						     "papi_read_ns", num(run->papi_read_ns)));
	if (p->imported[0])
		snprintf(cmd, sizeof cmd, "opreview ingest %s %s --baseline '%s' --candidate '%s' --out DIR",
			 p->imported, run->import.path, p->blocks[0].source[0], p->blocks[0].source[1]);
	else
		snprintf(cmd, sizeof cmd, "opreview run --profile %s --out DIR", run->profile_origin);
	if (p->imported[0])
		snprintf(replay, sizeof replay, "unavailable: opreview did not run an imported run's "
			 "kernels, so it cannot replay them (re-run the source's tool)");
	else
		snprintf(replay, sizeof replay, "opreview replay %s", f->archive_dir);
	put(&bad, o, "reproduce", json_pack("{s:s,s:s,s:I,s:s}", "command", cmd, "replay", replay,
						      "seed", (json_int_t)p->seed, "started_utc",
						      run->started_utc));
	json_t *owners = json_array();
	for (int i = 0; i < p->nowners; i++)
		add(&bad, owners, json_pack("{s:s,s:s,s:s}", "role", p->owners[i].role, "name",
							p->owners[i].name, "key", p->owners[i].key));
	put(&bad, o, "owners", owners);
	return done(bad, o);
}

/* "model_validation": modelled vs measured per plan, the error over the run
 * and the planner's check; {calibrated: false, reason} without a host
 * envelope. Times in ns, errors as fractions. */
static json_t *model_validation_json(const struct ana_findings *f)
{
	int bad = 0;
	const struct ana_model_validation *mv = &f->model;
	const struct col_profile *p = f->run->profile;
	json_t *o = json_object();
	put(&bad, o, "calibrated", json_boolean(mv->calibrated));
	put(&bad, o, "envelope", json_string(p->envelope.name));
	if (!mv->calibrated) {
		put(&bad, o, "reason", json_string(mv->reason));
		return done(bad, o);
	}
	put(&bad, o, "calibration",
			    json_pack("{s:s,s:s,s:s,s:I}", "host", p->calibration.host, "date",
				      p->calibration.date, "cpu", p->calibration.cpu, "cpus_online",
				      (json_int_t)p->calibration.cpus_online));
	json_t *rows = json_array();
	for (size_t i = 0; i < mv->nrows; i++) {
		const struct ana_model_row *r = &mv->rows[i];
		json_t *t = json_object();
		for (int k = 0; k < ANA_NTERMS; k++) {
			static const char *const keys[] = {"overhead_ns", "compute_ns", "shared_ns",
							   "global_ns", "dma_ns"};
			put(&bad, t, keys[k], num(r->terms[k]));
		}
		add(&bad, 
			rows, json_pack("{s:s,s:s,s:s,s:o,s:b,s:b,s:o,s:o,s:o,s:o,s:s,s:o,s:s}", "block",
					bname(f, r->block), "variant", col_variant_name(r->variant),
					"plan", r->plan, "alternative",
					r->alt >= 0 ? json_integer(r->alt) : json_null(), "ran", r->ran,
					"counted", r->counted, "model_ns", num(r->model_ns),
					"measured_ns", num(r->measured_ns), "ratio", num(r->ratio),
					"abs_error", num(fabs(r->ratio - 1.0)), "dominant_term",
					ana_term_name(r->dominant), "terms", t, "measured_by",
					r->alt >= 0 ? "alternative" : "samples"));
	}
	put(&bad, o, "rows", rows);
	put(&bad, o, "median_abs_error", num(mv->median_abs_error));
	put(&bad, o, "trusted", json_boolean(mv->trusted));
	put(&bad, o, "trust_limit", num(ana_check_rule(ANA_CHK_MODEL_ERROR)->limit));
	put(&bad, o, "worst_abs_error", num(mv->worst_abs_error));
	if (mv->worst >= 0) {
		const struct ana_model_row *w = &mv->rows[mv->worst];
		put(&bad, o, "worst",
				    json_pack("{s:s,s:s,s:s,s:o,s:s}", "block", bname(f, w->block),
					      "variant", col_variant_name(w->variant), "plan", w->plan,
					      "ratio", num(w->ratio), "dominant_term",
					      ana_term_name(w->dominant)));
	} else {
		put(&bad, o, "worst", json_null());
	}
	json_t *pl = json_array();
	for (size_t i = 0; i < mv->nplanner; i++) {
		const struct ana_planner_row *r = &mv->planner[i];
		add(&bad, 
			pl, json_pack("{s:s,s:s,s:i,s:o,s:s,s:o,s:s,s:o,s:o,s:b,s:o}", "block", bname(f, r->block),
				      "variant", col_variant_name(r->variant), "candidates",
				      r->candidates, "kendall_tau", num(r->tau), "choice_plan",
				      r->choice_plan, "choice_ns", num(r->choice_ns), "best_plan",
				      r->best_plan, "best_ns", num(r->best_ns), "slowdown",
				      num(r->slowdown), "within", r->within, "limit",
				      num(ana_check_rule(ANA_CHK_PLANNER)->limit)));
		/* from paired rounds: the slowdown's 95% CI, and whether the
		 * choice is measurably slower than the best (the CI above 0) */
		if (r->paired) {
			json_t *x = json_array_get(pl, json_array_size(pl) - 1);
			put(&bad, x, "paired", json_true());
			put(&bad, x, "slowdown_ci95", json_pack("[o,o]", num(r->slowdown_lo), num(r->slowdown_hi)));
			put(&bad, x, "measurably_slower", json_boolean(r->slowdown_lo > 0));
		}
	}
	put(&bad, o, "planner", pl);
	return done(bad, o);
}

int ana_findings_write(const struct ana_findings *f, const char *path, struct opr_error *err)
{
	int bad = 0;
	json_t *o = context_json(f);
	json_t *rejected = json_array();
	put(&bad, o, "findings_version", json_integer(ANA_FINDINGS_VERSION));
	put(&bad, o, "verdict", json_string(ana_verdict_name(f->verdict)));
	put(&bad, o, "exit_code", json_integer(ana_verdict_exit(f->verdict)));
	json_t *reasons = json_array();
	for (int i = 0; i < f->nreasons; i++)
		add(&bad, reasons, json_string(f->reasons[i]));
	put(&bad, o, "reasons", reasons);
	put(&bad, o, "archive", json_string(f->archive_dir));
	put(&bad, o, "blocks", blocks_json(f));
	put(&bad, o, "bottlenecks", bottlenecks_json(f));
	put(&bad, o, "worksheet", worksheet_json(f, rejected));
	put(&bad, o, "rejected_alternatives", rejected);
	put(&bad, o, "validation", validation_json(f));
	put(&bad, o, "mitigations", mitigations_json(f));
	put(&bad, o, "counters", counters_json(f));
	json_t *tail = tail_counters_json(f);
	if (!tail) {
		json_decref(o);
		return opr_error_set(err, OPR_ENOMEM, "out of memory for the tail counters");
	}
	put(&bad, o, "host_counters_tail", tail);
	put(&bad, o, "rules", rules_json());
	put(&bad, o, "check_rules", check_rules_json());
	put(&bad, o, "model_validation", model_validation_json(f));
	put(&bad, o, "primary_metric", ana_primary_json(f));
	put(&bad, o, "synthetic_blocks", json_integer(f->synthetic_blocks));
	put(&bad, o, "rationale", json_string(f->run->profile->rationale));
	if (bad || !o) {
		json_decref(o);
		return opr_error_set(err, OPR_ENOMEM, "out of memory building findings");
	}
	char *s = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	json_decref(o);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "cannot serialise findings");
	/* the caller writes into its opr_output's temporary name */
	int rc = opr_write_file(path, s, strlen(s), err);
	free(s);
	return rc;
}
