/* collect/pipe_json.c: the scheduling simulation's results in pipeline.json:
 * summary statistics, the queue-wait histogram, per-core and per-stream
 * fairness and the batch sweep (per-request arrays stay in memory only). */
#include "collect.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int col_quantile_ci95(const double *sorted, size_t n, double q, double *lo, double *hi)
{
	size_t r, s;
	*lo = *hi = NAN;
	if (n < 2 || opr_quantile_ci95_ranks(n, q, &r, &s))
		return -1;
	*lo = sorted[r];
	*hi = sorted[s];
	return 0;
}

static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *darray(const double *x, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; x && i < n; i++)
		json_array_append_new(a, num(x[i]));
	return a;
}

json_t *col_pipe_to_json(const struct col_variant_run *vr)
{
	const struct col_pipe_result *r = &vr->pipe;
	json_t *o = json_object();
	json_object_set_new(o, "requests", json_integer(r->n));
	json_object_set_new(o, "jobs", json_integer(r->jobs));
	json_object_set_new(o, "streams", json_integer(r->streams));
	json_object_set_new(o, "cores", json_integer(r->cores));
	const struct {
		const char *k;
		double v;
	} f[] = {{"p50_ns", r->p50_ns}, {"p95_ns", r->p95_ns}, {"p99_ns", r->p99_ns},
		 {"max_ns", r->max_ns}, {"mean_ns", r->mean_ns}, {"wait_p50_ns", r->wait_p50_ns},
		 {"wait_p95_ns", r->wait_p95_ns}, {"wait_p99_ns", r->wait_p99_ns},
		 {"wait_max_ns", r->wait_max_ns}, {"wait_mean_ns", r->wait_mean_ns},
		 {"throughput_rps", r->throughput_rps}, {"makespan_ns", r->makespan_ns},
		 {"jain_cores", r->jain_cores}, {"jain_streams", r->jain_streams},
		 {"mean_batch", r->mean_batch}, {"little_L", r->little_L},
		 {"little_lambda", r->little_lambda}, {"little_W", r->little_W},
		 {"bytes", r->bytes}, {"bw_util", r->bw_util}, {"overhead_ns", r->overhead_ns},
		 {"service_ns", r->service_ns}, {"p95_lo_ns", vr->pipe_p95_lo},
		 {"p95_hi_ns", vr->pipe_p95_hi}, {"p99_lo_ns", vr->pipe_p99_lo},
		 {"p99_hi_ns", vr->pipe_p99_hi}, {"uncontended_p95_ns", vr->pipe_free_p95_ns},
		 {"uncontended_p99_ns", vr->pipe_free_p99_ns},
		 {"hidden_p95_ns", vr->pipe_hidden_p95_ns}};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		json_object_set_new(o, f[i].k, num(f[i].v));
	json_object_set_new(o, "max_concurrent_bursts", json_integer(r->max_concurrent_bursts));
	json_t *counts = json_array();
	for (size_t i = 0; r->hist_counts && i < r->hist_bins; i++)
		json_array_append_new(counts, json_integer(r->hist_counts[i]));
	json_object_set_new(o, "wait_hist", json_pack("{s:o,s:o}", "edges_ns",
						      darray(r->hist_edges_ns, r->hist_edges_ns ? r->hist_bins + 1 : 0),
						      "counts", counts));
	int cores = r->cores > 0 && r->cores <= COL_PIPE_MAX_CORES ? r->cores : 0;
	json_object_set_new(o, "core_util", darray(r->core_util, (size_t)cores));
	json_object_set_new(o, "core_busy_ns", darray(r->core_busy_ns, (size_t)cores));
	json_object_set_new(o, "stream_mean_ns", darray(r->stream_mean_ns, r->stream_mean_ns ? (size_t)r->streams : 0));
	json_object_set_new(o, "stream_p95_ns", darray(r->stream_p95_ns, r->stream_p95_ns ? (size_t)r->streams : 0));
	json_t *sw = json_array();
	for (size_t i = 0; i < vr->nsweep; i++) {
		const struct col_pipe_sweep_row *w = &vr->sweep[i];
		json_array_append_new(sw, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "batch",
						    w->batch, "p50_ns", num(w->p50_ns), "p95_ns",
						    num(w->p95_ns), "p99_ns", num(w->p99_ns),
						    "throughput_rps", num(w->throughput_rps),
						    "wait_mean_ns", num(w->wait_mean_ns), "wait_p95_ns",
						    num(w->wait_p95_ns), "mean_batch", num(w->mean_batch),
						    "jain_cores", num(w->jain_cores), "bw_util",
						    num(w->bw_util)));
	}
	json_object_set_new(o, "sweep", sw);
	return o;
}

static double gnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int load_darray(json_t *a, double **out, size_t *n, size_t max)
{
	*n = json_array_size(a);
	if (*n > max)
		*n = max;
	*out = calloc(*n ? *n : 1, sizeof **out);
	if (!*out)
		return -1;
	for (size_t i = 0; i < *n; i++) {
		json_t *v = json_array_get(a, i);
		(*out)[i] = json_is_number(v) ? json_number_value(v) : NAN;
	}
	return 0;
}

int col_pipe_from_json(json_t *j, struct col_variant_run *vr, struct opr_error *err)
{
	struct col_pipe_result *r = &vr->pipe;
	memset(r, 0, sizeof *r);
	if (!json_is_object(j))
		return opr_error_set(err, OPR_EINPUT, "pipeline.json: missing a variant's results");
	r->n = json_integer_value(json_object_get(j, "requests"));
	r->jobs = json_integer_value(json_object_get(j, "jobs"));
	r->streams = (int)json_integer_value(json_object_get(j, "streams"));
	r->cores = (int)json_integer_value(json_object_get(j, "cores"));
	r->p50_ns = gnum(j, "p50_ns");
	r->p95_ns = gnum(j, "p95_ns");
	r->p99_ns = gnum(j, "p99_ns");
	r->max_ns = gnum(j, "max_ns");
	r->mean_ns = gnum(j, "mean_ns");
	r->wait_p50_ns = gnum(j, "wait_p50_ns");
	r->wait_p95_ns = gnum(j, "wait_p95_ns");
	r->wait_p99_ns = gnum(j, "wait_p99_ns");
	r->wait_max_ns = gnum(j, "wait_max_ns");
	r->wait_mean_ns = gnum(j, "wait_mean_ns");
	r->throughput_rps = gnum(j, "throughput_rps");
	r->makespan_ns = gnum(j, "makespan_ns");
	r->jain_cores = gnum(j, "jain_cores");
	r->jain_streams = gnum(j, "jain_streams");
	r->mean_batch = gnum(j, "mean_batch");
	r->little_L = gnum(j, "little_L");
	r->little_lambda = gnum(j, "little_lambda");
	r->little_W = gnum(j, "little_W");
	r->bytes = gnum(j, "bytes");
	r->bw_util = gnum(j, "bw_util");
	r->overhead_ns = gnum(j, "overhead_ns");
	r->service_ns = gnum(j, "service_ns");
	r->max_concurrent_bursts = (int)json_integer_value(json_object_get(j, "max_concurrent_bursts"));
	vr->pipe_p95_lo = gnum(j, "p95_lo_ns");
	vr->pipe_p95_hi = gnum(j, "p95_hi_ns");
	vr->pipe_p99_lo = gnum(j, "p99_lo_ns");
	vr->pipe_p99_hi = gnum(j, "p99_hi_ns");
	vr->pipe_free_p95_ns = gnum(j, "uncontended_p95_ns");
	vr->pipe_free_p99_ns = gnum(j, "uncontended_p99_ns");
	vr->pipe_hidden_p95_ns = gnum(j, "hidden_p95_ns");
	json_t *h = json_object_get(j, "wait_hist");
	size_t ne, nc;
	double *cu = NULL, *cb = NULL;
	if (load_darray(json_object_get(h, "edges_ns"), &r->hist_edges_ns, &ne, 1u << 20))
		goto oom;
	json_t *counts = json_object_get(h, "counts");
	nc = json_array_size(counts);
	r->hist_counts = calloc(nc ? nc : 1, sizeof *r->hist_counts);
	if (!r->hist_counts)
		goto oom;
	for (size_t i = 0; i < nc; i++)
		r->hist_counts[i] = json_integer_value(json_array_get(counts, i));
	r->hist_bins = nc;
	size_t n;
	if (load_darray(json_object_get(j, "core_util"), &cu, &n, COL_PIPE_MAX_CORES))
		goto oom;
	memcpy(r->core_util, cu, n * sizeof *cu);
	if (load_darray(json_object_get(j, "core_busy_ns"), &cb, &n, COL_PIPE_MAX_CORES))
		goto oom;
	memcpy(r->core_busy_ns, cb, n * sizeof *cb);
	free(cu);
	free(cb);
	cu = cb = NULL;
	if (load_darray(json_object_get(j, "stream_mean_ns"), &r->stream_mean_ns, &n, 1u << 20) ||
	    load_darray(json_object_get(j, "stream_p95_ns"), &r->stream_p95_ns, &n, 1u << 20))
		goto oom;
	json_t *sw = json_object_get(j, "sweep");
	vr->nsweep = json_array_size(sw);
	vr->sweep = calloc(vr->nsweep ? vr->nsweep : 1, sizeof *vr->sweep);
	if (!vr->sweep)
		goto oom;
	for (size_t i = 0; i < vr->nsweep; i++) {
		json_t *w = json_array_get(sw, i);
		struct col_pipe_sweep_row *row = &vr->sweep[i];
		row->batch = (int)json_integer_value(json_object_get(w, "batch"));
		row->p50_ns = gnum(w, "p50_ns");
		row->p95_ns = gnum(w, "p95_ns");
		row->p99_ns = gnum(w, "p99_ns");
		row->throughput_rps = gnum(w, "throughput_rps");
		row->wait_mean_ns = gnum(w, "wait_mean_ns");
		row->wait_p95_ns = gnum(w, "wait_p95_ns");
		row->mean_batch = gnum(w, "mean_batch");
		row->jain_cores = gnum(w, "jain_cores");
		row->bw_util = gnum(w, "bw_util");
	}
	return 0;
oom:
	free(cu);
	free(cb);
	return opr_error_set(err, OPR_ENOMEM, "out of memory loading pipeline.json");
}
