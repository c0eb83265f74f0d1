/* analyze/primary.c: the values a review leads with and a history trends: a
 * block's latency percentile (host clock, distribution-free 95% CI),
 * throughput (samples per second, derived from the median and its CI) or
 * modelled time (device model, no CI). */
#include "analyze_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void ana_value_eval(const struct ana_findings *f, int block, int variant, int metric,
		    struct ana_value *out)
{
	memset(out, 0, sizeof *out);
	out->block = block;
	out->variant = variant;
	out->metric = metric;
	out->value = out->lo = out->hi = NAN;
	snprintf(out->unit, sizeof out->unit, "ns");
	if (block < 0 || block >= f->run->nblocks || variant < 0 || variant > 1) {
		snprintf(out->reason, sizeof out->reason, "no such block or variant");
		out->prov = ANA_UNAVAILABLE;
		return;
	}
	const struct ana_latency *l = &f->blocks[block].lat[variant];
	const struct ana_qci *q = NULL;
	switch (metric) {
	case COL_M_P95:
		q = &l->p95;
		break;
	case COL_M_P99:
		q = &l->p99;
		break;
	case COL_M_THROUGHPUT:
		/* one sample is one execution: rate = 1 / median time; the median's
		 * CI bounds map to the rate's CI bounds, swapped (1/x decreases) */
		snprintf(out->unit, sizeof out->unit, "1/s");
		out->higher_is_better = 1;
		if (!l->n || !(l->p50.estimate > 0)) {
			snprintf(out->reason, sizeof out->reason, "no host samples");
			out->prov = ANA_UNAVAILABLE;
			return;
		}
		out->available = 1;
		out->prov = ANA_DERIVED;
		out->value = 1e9 / l->p50.estimate;
		if (l->p50.available) {
			out->lo = 1e9 / l->p50.hi;
			out->hi = 1e9 / l->p50.lo;
		}
		return;
	case COL_M_MODEL_TIME: {
		double m = f->run->blocks[block].v[variant].model_ns;
		if (!(m > 0)) {
			snprintf(out->reason, sizeof out->reason, "%s",
				 f->run->profile->imported[0] ? "no modelled time: an imported run has no device model"
							      : "no modelled time (no device model for this run)");
			out->prov = ANA_UNAVAILABLE;
			return;
		}
		out->available = 1;
		out->prov = ANA_SIMULATED;
		out->value = m;
		return;
	}
	default:
		snprintf(out->reason, sizeof out->reason, "unknown metric");
		out->prov = ANA_UNAVAILABLE;
		return;
	}
	if (!l->n) {
		snprintf(out->reason, sizeof out->reason, "no host samples");
		out->prov = ANA_UNAVAILABLE;
		return;
	}
	out->available = 1;
	out->prov = f->run->profile->imported[0] ? ANA_IMPORTED : ANA_MEASURED;
	out->value = q->estimate;
	if (q->available) {
		out->lo = q->lo;
		out->hi = q->hi;
	} else {
		snprintf(out->reason, sizeof out->reason, "%s", q->reason ? q->reason : "too few samples for a CI");
	}
}

static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *ana_value_json(const struct ana_findings *f, const struct ana_value *v)
{
	json_t *o = json_object();
	json_object_set_new(o, "block", json_string(v->block >= 0 && v->block < f->run->nblocks
						    ? f->run->blocks[v->block].block->name : ""));
	json_object_set_new(o, "variant", json_string(col_variant_name(v->variant)));
	json_object_set_new(o, "metric", json_string(col_metric_name(v->metric)));
	json_object_set_new(o, "available", json_boolean(v->available));
	json_object_set_new(o, "reason", v->reason[0] ? json_string(v->reason) : json_null());
	json_object_set_new(o, "value", num(v->value));
	json_object_set_new(o, "lo", num(v->lo));
	json_object_set_new(o, "hi", num(v->hi));
	json_object_set_new(o, "unit", json_string(v->unit));
	json_object_set_new(o, "provenance", json_string(ana_prov_name(v->prov)));
	json_object_set_new(o, "higher_is_better", json_boolean(v->higher_is_better));
	return o;
}

/* "primary_metric": the profile's choice (or the default), its value with
 * CI, and the other variant's for the ratio the packet leads with. */
json_t *ana_primary_json(const struct ana_findings *f)
{
	json_t *o = ana_value_json(f, &f->primary);
	json_object_set_new(o, "given", json_boolean(f->run->profile->primary.given));
	json_object_set_new(o, "other", ana_value_json(f, &f->primary_base));
	double r = f->primary.available && f->primary_base.available && f->primary_base.value > 0
			   ? f->primary.value / f->primary_base.value : NAN;
	json_object_set_new(o, "ratio_to_other", num(r));
	return o;
}
