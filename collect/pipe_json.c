/* collect/pipe_json.c: the scheduling simulation's results in pipeline.json:
 * summary statistics, the queue-wait histogram, per-core and per-stream
 * fairness and the batch sweep (per-request arrays stay in memory only). */
#include "collect.h"
#include "jread.h"

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
	/* a GPU run: what the simulation's service times were, and the trace
	 * replayed on the device (a host run writes neither) */
	if (vr->dev_launch_ns && vr->ndev_launch) {
		json_object_set_new(o, "provenance", json_string("simulated"));
		json_object_set_new(o, "service_times",
				    json_pack("{s:s,s:s,s:o}", "provenance", "measured", "method",
					      "each kernel launch of one run on its own between CUDA "
					      "events, the L2 flushed before the run, median of 15; the "
					      "device one server (a launch's blocks cover the SMs)",
					      "launch_ns", darray(vr->dev_launch_ns, vr->ndev_launch)));
	}
	const struct col_replay *rp = &vr->replay;
	if (rp->state == COL_REPLAY_MEASURED) {
		json_t *d = json_pack("{s:s,s:s,s:I,s:I,s:i}", "provenance", "measured", "method",
				      "the simulation's first jobs re-issued by the host at their "
				      "close times, each traffic stream a CUDA stream with its own "
				      "copy of the plan (a CUDA graph), a batch of b requests b "
				      "runs; start and end from CUDA events",
				      "requests", (json_int_t)rp->n, "jobs", (json_int_t)rp->jobs,
				      "streams", rp->streams);
		const struct {
			const char *k;
			double v;
		} g[] = {{"p50_ns", rp->p50_ns}, {"p95_ns", rp->p95_ns}, {"p99_ns", rp->p99_ns},
			 {"max_ns", rp->max_ns}, {"mean_ns", rp->mean_ns},
			 {"wait_p50_ns", rp->wait_p50_ns}, {"wait_p95_ns", rp->wait_p95_ns},
			 {"wait_p99_ns", rp->wait_p99_ns}, {"wait_mean_ns", rp->wait_mean_ns},
			 {"throughput_rps", rp->throughput_rps},
			 {"simulated_p50_ns", rp->sim_p50_ns}, {"simulated_p95_ns", rp->sim_p95_ns},
			 {"simulated_p99_ns", rp->sim_p99_ns},
			 {"simulated_wait_p95_ns", rp->sim_wait_p95_ns},
			 {"simulated_wait_mean_ns", rp->sim_wait_mean_ns}};
		for (size_t i = 0; i < sizeof g / sizeof *g; i++)
			json_object_set_new(d, g[i].k, num(g[i].v));
		json_object_set_new(o, "device_replay", d);
	} else if (rp->state == COL_REPLAY_UNAVAILABLE) {
		json_object_set_new(o, "device_replay", json_pack("{s:s,s:s}", "provenance",
								  "unavailable", "reason", rp->reason));
	}
	return o;
}

static void load_darray(struct col_jr *r, json_t *o, const char *key, double **out, size_t *n,
			size_t max);

/* The optional GPU parts (col_pipe_to_json): absent in a host run's file. */
static void load_device(struct col_jr *r, json_t *j, struct col_variant_run *vr)
{
	json_t *st = json_object_get(j, "service_times");
	if (st) {
		size_t mark = col_jr_enter(r, "service_times");
		load_darray(r, st, "launch_ns", &vr->dev_launch_ns, &vr->ndev_launch,
			    COL_PIPE_MAX_LAUNCHES);
		col_jr_leave(r, mark);
	}
	json_t *d = json_object_get(j, "device_replay");
	if (!d || r->rc)
		return;
	struct col_replay *rp = &vr->replay;
	char prov[32];
	size_t mark = col_jr_enter(r, "device_replay");
	col_jr_str(r, d, "provenance", prov, sizeof prov);
	if (!r->rc && !strcmp(prov, "unavailable")) {
		rp->state = COL_REPLAY_UNAVAILABLE;
		col_jr_str(r, d, "reason", rp->reason, sizeof rp->reason);
	} else if (!r->rc && !strcmp(prov, "measured")) {
		rp->state = COL_REPLAY_MEASURED;
		rp->n = col_jr_int(r, d, "requests", 1, INT64_MAX);
		rp->jobs = col_jr_int(r, d, "jobs", 1, INT64_MAX);
		rp->streams = (int)col_jr_int(r, d, "streams", 1, INT32_MAX);
		rp->p50_ns = col_jr_num(r, d, "p50_ns");
		rp->p95_ns = col_jr_num(r, d, "p95_ns");
		rp->p99_ns = col_jr_num(r, d, "p99_ns");
		rp->max_ns = col_jr_num(r, d, "max_ns");
		rp->mean_ns = col_jr_num(r, d, "mean_ns");
		rp->wait_p50_ns = col_jr_num(r, d, "wait_p50_ns");
		rp->wait_p95_ns = col_jr_num(r, d, "wait_p95_ns");
		rp->wait_p99_ns = col_jr_num(r, d, "wait_p99_ns");
		rp->wait_mean_ns = col_jr_num(r, d, "wait_mean_ns");
		rp->throughput_rps = col_jr_num(r, d, "throughput_rps");
		rp->sim_p50_ns = col_jr_num(r, d, "simulated_p50_ns");
		rp->sim_p95_ns = col_jr_num(r, d, "simulated_p95_ns");
		rp->sim_p99_ns = col_jr_num(r, d, "simulated_p99_ns");
		rp->sim_wait_p95_ns = col_jr_num(r, d, "simulated_wait_p95_ns");
		rp->sim_wait_mean_ns = col_jr_num(r, d, "simulated_wait_mean_ns");
	} else if (!r->rc) {
		col_jr_fail(r, "provenance", "\"measured\" or \"unavailable\"", json_object_get(d, "provenance"));
	}
	col_jr_leave(r, mark);
}

/* A required array of numbers (null: NAN) of at most max elements. */
static void load_darray(struct col_jr *r, json_t *o, const char *key, double **out, size_t *n,
			size_t max)
{
	*out = NULL;
	*n = 0;
	json_t *a = col_jr_arr(r, o, key);
	if (r->rc)
		return;
	if (json_array_size(a) > max) {
		char want[64];
		snprintf(want, sizeof want, "an array of at most %zu numbers", max);
		col_jr_fail(r, key, want, a);
		return;
	}
	*n = json_array_size(a);
	*out = calloc(*n ? *n : 1, sizeof **out);
	if (!*out) {
		r->rc = opr_error_set(r->err, OPR_ENOMEM, "out of memory loading pipeline.json");
		return;
	}
	size_t mark = col_jr_enter(r, key);
	for (size_t i = 0; i < *n; i++)
		(*out)[i] = col_jr_num_at(r, a, i);
	col_jr_leave(r, mark);
}

int col_pipe_from_json(struct col_jr *r, json_t *j, struct col_variant_run *vr)
{
	struct col_pipe_result *p = &vr->pipe;
	memset(p, 0, sizeof *p);
	p->n = (size_t)col_jr_int(r, j, "requests", 0, INT64_MAX);
	p->jobs = (size_t)col_jr_int(r, j, "jobs", 0, INT64_MAX);
	p->streams = (int)col_jr_int(r, j, "streams", 0, INT32_MAX);
	p->cores = (int)col_jr_int(r, j, "cores", 0, INT32_MAX);
	p->p50_ns = col_jr_num(r, j, "p50_ns");
	p->p95_ns = col_jr_num(r, j, "p95_ns");
	p->p99_ns = col_jr_num(r, j, "p99_ns");
	p->max_ns = col_jr_num(r, j, "max_ns");
	p->mean_ns = col_jr_num(r, j, "mean_ns");
	p->wait_p50_ns = col_jr_num(r, j, "wait_p50_ns");
	p->wait_p95_ns = col_jr_num(r, j, "wait_p95_ns");
	p->wait_p99_ns = col_jr_num(r, j, "wait_p99_ns");
	p->wait_max_ns = col_jr_num(r, j, "wait_max_ns");
	p->wait_mean_ns = col_jr_num(r, j, "wait_mean_ns");
	p->throughput_rps = col_jr_num(r, j, "throughput_rps");
	p->makespan_ns = col_jr_num(r, j, "makespan_ns");
	p->jain_cores = col_jr_num(r, j, "jain_cores");
	p->jain_streams = col_jr_num(r, j, "jain_streams");
	p->mean_batch = col_jr_num(r, j, "mean_batch");
	p->little_L = col_jr_num(r, j, "little_L");
	p->little_lambda = col_jr_num(r, j, "little_lambda");
	p->little_W = col_jr_num(r, j, "little_W");
	p->bytes = col_jr_num(r, j, "bytes");
	p->bw_util = col_jr_num(r, j, "bw_util");
	p->overhead_ns = col_jr_num(r, j, "overhead_ns");
	p->service_ns = col_jr_num(r, j, "service_ns");
	p->max_concurrent_bursts = (int)col_jr_int(r, j, "max_concurrent_bursts", 0, INT32_MAX);
	vr->pipe_p95_lo = col_jr_num(r, j, "p95_lo_ns");
	vr->pipe_p95_hi = col_jr_num(r, j, "p95_hi_ns");
	vr->pipe_p99_lo = col_jr_num(r, j, "p99_lo_ns");
	vr->pipe_p99_hi = col_jr_num(r, j, "p99_hi_ns");
	vr->pipe_free_p95_ns = col_jr_num(r, j, "uncontended_p95_ns");
	vr->pipe_free_p99_ns = col_jr_num(r, j, "uncontended_p99_ns");
	vr->pipe_hidden_p95_ns = col_jr_num(r, j, "hidden_p95_ns");
	json_t *h = col_jr_obj(r, j, "wait_hist");
	size_t mark = col_jr_enter(r, "wait_hist");
	size_t ne = 0, n;
	load_darray(r, h, "edges_ns", &p->hist_edges_ns, &ne, 1u << 20);
	json_t *counts = col_jr_arr(r, h, "counts");
	size_t nc = json_array_size(counts);
	if (!r->rc && nc > (1u << 20))
		col_jr_fail(r, "counts", "an array of at most 1048576 counts", counts);
	if (!r->rc && !(p->hist_counts = calloc(nc ? nc : 1, sizeof *p->hist_counts)))
		r->rc = opr_error_set(r->err, OPR_ENOMEM, "out of memory loading pipeline.json");
	size_t m2 = col_jr_enter(r, "counts");
	for (size_t i = 0; !r->rc && i < nc; i++)
		p->hist_counts[i] = (uint64_t)col_jr_int_at(r, counts, i, 0, INT64_MAX);
	col_jr_leave(r, m2);
	if (!r->rc)
		p->hist_bins = nc;
	col_jr_leave(r, mark);
	double *cu = NULL, *cb = NULL;
	load_darray(r, j, "core_util", &cu, &n, COL_PIPE_MAX_CORES);
	if (cu)
		memcpy(p->core_util, cu, n * sizeof *cu);
	load_darray(r, j, "core_busy_ns", &cb, &n, COL_PIPE_MAX_CORES);
	if (cb)
		memcpy(p->core_busy_ns, cb, n * sizeof *cb);
	free(cu);
	free(cb);
	load_darray(r, j, "stream_mean_ns", &p->stream_mean_ns, &n, 1u << 20);
	load_darray(r, j, "stream_p95_ns", &p->stream_p95_ns, &n, 1u << 20);
	json_t *sw = col_jr_arr(r, j, "sweep");
	if (r->rc)
		return r->rc;
	vr->nsweep = json_array_size(sw);
	vr->sweep = calloc(vr->nsweep ? vr->nsweep : 1, sizeof *vr->sweep);
	if (!vr->sweep)
		return r->rc = opr_error_set(r->err, OPR_ENOMEM, "out of memory loading pipeline.json");
	mark = col_jr_enter(r, "sweep");
	for (size_t i = 0; !r->rc && i < vr->nsweep; i++) {
		json_t *w = json_array_get(sw, i);
		struct col_pipe_sweep_row *row = &vr->sweep[i];
		m2 = col_jr_enter_i(r, i);
		row->batch = (int)col_jr_int(r, w, "batch", 0, INT32_MAX);
		row->p50_ns = col_jr_num(r, w, "p50_ns");
		row->p95_ns = col_jr_num(r, w, "p95_ns");
		row->p99_ns = col_jr_num(r, w, "p99_ns");
		row->throughput_rps = col_jr_num(r, w, "throughput_rps");
		row->wait_mean_ns = col_jr_num(r, w, "wait_mean_ns");
		row->wait_p95_ns = col_jr_num(r, w, "wait_p95_ns");
		row->mean_batch = col_jr_num(r, w, "mean_batch");
		row->jain_cores = col_jr_num(r, w, "jain_cores");
		row->bw_util = col_jr_num(r, w, "bw_util");
		col_jr_leave(r, m2);
	}
	col_jr_leave(r, mark);
	load_device(r, j, vr);
	return r->rc;
}
