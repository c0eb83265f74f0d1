/* collect/archive.c: the run archive on disk, written atomically and read back
 * for analyze and replay. Layout of DIR:
 *   manifest.json  everything but samples: host, profile digest, envelope,
 *                  events, plans, simulated counters, launches, digests
 *   pipeline.json  scheduling simulation per block and variant
 *   samples.csv    block,variant,round,ns (every host sample, in order)
 *   counters.csv   block,variant,provenance,counter,value,available,reason
 *   rounds.csv     block,variant,round,<each host software counter>: one row per
 *                  batch (round) and variant, empty where unavailable
 *   profile.yaml   the profile as given (+ the named envelope file beside it)
 * An imported run (`opreview ingest`) has an "imported" section naming its
 * source file and digest, blocks whose workload is "imported" with only their
 * samples and the source's counters (no plan, model or simulation), and no
 * envelope file.
 * JSON keys are sorted; counts and ns are integers. */
#include "collect.h"
#include "jread.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JSON_FLAGS (JSON_SORT_KEYS | JSON_INDENT(1) | JSON_REAL_PRECISION(17))
#define MAX_ARCHIVE_FILE (512u << 20)

/* ---- writing ---------------------------------------------------------------- */

/* Every key and element goes through put/add: a failed allocation (a NULL
 * value, or the set itself) is remembered in *bad and the builder returns
 * NULL, which write_json reports as out of memory: an archive never loses
 * a key silently. */
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

static json_t *jreal(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *plan_json(enum ops_group g, const struct ops_plan *p)
{
	char desc[256];
	ops_plan_describe(g, p, desc, sizeof desc);
	int bad = 0;
	json_t *params = json_object();
	const char *const *names = ops_plan_params(g);
	for (int i = 0; names && names[i] && i < OPS_PLAN_MAX_PARAMS; i++)
		put(&bad, params, names[i], json_integer(p->p[i]));
	return json_pack("{s:b,s:i,s:o,s:i,s:b,s:s}", "fused", p->fused, "strategy",
			 (int)p->strategy, "params", done(bad, params), "split_k", p->split_k,
			 "double_buffer", p->double_buffer, "describe", desc);
}

static json_t *counters_json(const struct ops_counters *c, int cores)
{
	int bad = 0;
	json_t *o = json_object();
	json_t *bytes = json_object();
	for (int s = 0; s < OPS_NSPACES; s++)
		for (int d = 0; d < OPS_NSPACES; d++) {
			char k[32];
			snprintf(k, sizeof k, "%s->%s", ops_space_name(s), ops_space_name(d));
			put(&bad, bytes, k, json_integer((json_int_t)c->bytes[s][d]));
		}
	put(&bad, o, "dma_bytes", bytes);
	put(&bad, o, "compute_read_bytes", json_integer((json_int_t)c->compute_read_bytes));
	put(&bad, o, "compute_write_bytes", json_integer((json_int_t)c->compute_write_bytes));
	put(&bad, o, "transfers", json_integer((json_int_t)c->transfers));
	put(&bad, o, "splits", json_integer((json_int_t)c->splits));
	put(&bad, o, "launches", json_integer((json_int_t)c->launches));
	put(&bad, o, "tiles", json_integer((json_int_t)c->tiles));
	put(&bad, o, "fallbacks", json_integer((json_int_t)c->fallbacks));
	put(&bad, o, "elem_ops", json_integer((json_int_t)c->elem_ops));
	put(&bad, o, "peak_shared_bytes", json_integer((json_int_t)c->peak_shared_bytes));
	json_t *macs = json_object();
	for (int t = 0; t < OPS_NDTYPES; t++)
		put(&bad, macs, ops_dtype_name(t), json_integer((json_int_t)c->macs[t]));
	put(&bad, o, "macs", macs);
	json_t *cw = json_array();
	for (int i = 0; i < cores && i < OPS_MAX_CORES; i++)
		add(&bad, cw, json_integer((json_int_t)c->core_work[i]));
	put(&bad, o, "core_work", cw);
	return done(bad, o);
}

static json_t *launch_json(const struct ops_launch_rec *r)
{
	return json_pack("{s:s,s:i,s:b,s:b,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
			 "name", r->name, "cores_used", r->cores_used, "double_buffer",
			 r->double_buffer, "one_pass", r->one_pass, "global_bytes", (json_int_t)r->global_bytes,
			 "shared_bytes", (json_int_t)r->shared_bytes, "transfers",
			 (json_int_t)r->transfers, "work", (json_int_t)r->work, "overhead_ns",
			 jreal(r->overhead_ns), "compute_ns", jreal(r->compute_ns), "shared_ns",
			 jreal(r->shared_ns), "global_ns", jreal(r->global_ns), "dma_ns",
			 jreal(r->dma_ns), "imbalance", jreal(r->imbalance), "model_ns",
			 jreal(r->model_ns), "shared_dma_ns", jreal(r->shared_dma_ns));
}

static json_t *alt_json(enum ops_group g, const struct ops_plan_eval *e, double measured_ns,
			const double *vs_choice)
{
	int bad = 0;
	json_t *o = json_pack("{s:o,s:b,s:b,s:s,s:o,s:I,s:I,s:I,s:o}", "plan", plan_json(g, &e->plan),
			      "fits", e->fits, "rejected", e->rejected, "reason", e->reason, "model_ns",
			      jreal(e->model_ns), "launches", (json_int_t)e->launches,
			      "global_bytes", (json_int_t)e->global_bytes, "footprint_bytes",
			      (json_int_t)e->footprint_bytes, "reuse_ratio", jreal(e->reuse_ratio));
	put(&bad, o, "measured_ns", jreal(measured_ns));
	/* the paired rounds (collect.h, alt_vs_choice): only where measured */
	if (vs_choice && isfinite(vs_choice[0])) {
		put(&bad, o, "vs_choice", jreal(vs_choice[0]));
		put(&bad, o, "vs_choice_lo", jreal(vs_choice[1]));
		put(&bad, o, "vs_choice_hi", jreal(vs_choice[2]));
	}
	put(&bad, o, "counters", counters_json(&e->counters, 0));
	return done(bad, o);
}

static json_t *variant_json(const struct col_run *run, const struct col_block_run *br, int v)
{
	int bad = 0;
	const struct col_variant_run *vr = &br->v[v];
	enum ops_group g = br->block->work.group;
	json_t *o = json_object();
	put(&bad, o, "plan", plan_json(g, &vr->plan));
	put(&bad, o, "plan_was_auto", json_boolean(vr->plan_was_auto));
	put(&bad, o, "fell_back", json_boolean(vr->fell_back));
	put(&bad, o, "plan_note", json_string(vr->plan_note));
	json_t *alts = json_array();
	for (size_t i = 0; i < vr->nalts; i++)
		add(&bad, alts, alt_json(g, &vr->alts[i],
					 vr->alt_measured_ns ? vr->alt_measured_ns[i] : NAN,
					 vr->alt_vs_choice ? &vr->alt_vs_choice[3 * i] : NULL));
	put(&bad, o, "alternatives", alts);
	put(&bad, o, "counters", counters_json(&vr->counters, run->profile->envelope.cores));
	json_t *ls = json_array();
	for (size_t i = 0; i < vr->nlaunches; i++)
		add(&bad, ls, launch_json(&vr->launches[i]));
	put(&bad, o, "launches", ls);
	put(&bad, o, "model_ns", jreal(vr->model_ns));
	put(&bad, o, "quality",
			    json_pack("{s:o,s:o,s:b}", "rel_l2", jreal(vr->quality.rel_l2),
				      "max_abs_lsb", jreal(vr->quality.max_abs_lsb), "exact_int",
				      vr->quality.exact_int));
	put(&bad, o, "output_sha256", json_string(vr->output_sha256));
	put(&bad, o, "input_sha256", json_string(vr->input_sha256));
	put(&bad, o, "nsamples", json_integer((json_int_t)vr->nsamples));
	put(&bad, o, "events_per_sample", json_boolean(vr->events_per_sample));
	put(&bad, o, "repro_counters_equal", json_boolean(vr->repro_counters_equal));
	put(&bad, o, "repro_output_stable", json_boolean(vr->repro_output_stable));
	json_t *ev = json_object();
	for (size_t e = 0; e < run->nevents; e++)
		put(&bad, ev, run->events[e].name,
				    run->events[e].available && vr->event_totals
					    ? json_integer(vr->event_totals[e])
					    : json_null());
	put(&bad, o, "event_totals", ev);
	json_t *hc = json_object();
	for (int c = 0; c < COL_NHC; c++)
		put(&bad, hc, run->hc[c].name, run->hc[c].available
							 ? json_integer(vr->hc_totals[c]) : json_null());
	put(&bad, o, "host_counter_totals", hc);
	/* a GPU run: the counting pass's values, one run of the plan each */
	if (vr->gpu_counters) {
		json_t *gc = json_array();
		for (size_t i = 0; i < vr->ngpu_counters; i++) {
			const struct col_gpu_counter *c = &vr->gpu_counters[i];
			add(&bad, gc, json_pack("{s:s,s:b,s:o,s:s}", "name", c->name,
							    "available", c->available, "value",
							    c->available ? json_integer(c->value)
									 : json_null(),
							    "reason", c->reason));
		}
		put(&bad, o, "gpu_counters", gc);
	}
	return done(bad, o);
}

static json_t *gpu_json(const struct col_gpu *d)
{
	char cc[24];
	snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
	return json_pack("{s:s,s:i,s:s,s:s,s:i,s:i,s:i,s:o,s:o,s:I,s:I,s:I,s:s,s:i,s:i,s:s,s:b,s:s}",
			 "kind", "cuda", "index", d->index, "name", d->name, "compute_capability", cc,
			 "sm_count", d->sm_count, "sm_clock_khz", d->sm_clock_khz, "mem_clock_khz",
			 d->mem_clock_khz, "clock_seen_mhz_min", jreal(d->clock_seen_mhz_min),
			 "clock_seen_mhz_max", jreal(d->clock_seen_mhz_max), "l2_bytes",
			 (json_int_t)d->l2_bytes, "shared_per_block_optin_bytes",
			 (json_int_t)d->shared_per_block_optin, "global_bytes",
			 (json_int_t)d->global_bytes, "kernel_driver", d->kernel_driver,
			 "driver_version", d->driver_version,
			 "cuda_runtime_version", d->runtime_version, "papi_version", d->papi_version,
			 "l2_flushed_per_sample", d->l2_flush, "timing",
			 "CUDA events around one run of the plan per sample");
}

static json_t *envelope_json(const struct ops_envelope *e, const char *source)
{
	json_t *tops = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "fp32", jreal(e->tops[OPS_F32]),
				 "fp16", jreal(e->tops[OPS_F16]), "bf16", jreal(e->tops[OPS_BF16]),
				 "int8", jreal(e->tops[OPS_S8]), "vector",
				 e->vector_tops > 0 ? jreal(e->vector_tops) : json_null(),
				 "vector_half",
				 e->vector_half_tops > 0 ? jreal(e->vector_half_tops) : json_null());
	json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:o,s:o,s:o,s:o,s:o,s:I,s:o,s:i,s:b,s:o,s:o}",
			 "name", e->name, "source", source, "power_mode", e->power_mode,
			 "clock_ghz", jreal(e->clock_ghz), "clock_scale", jreal(e->clock_scale),
			 "cores", e->cores, "global_bandwidth_gbps", jreal(e->global_bw_gbps),
			 "global_capacity_gib", jreal(e->global_capacity_gib),
			 "shared_capacity_kib", jreal(e->shared_capacity_kib),
			 "shared_bandwidth_gbps", jreal(e->shared_bw_gbps), "local_capacity_kib",
			 jreal(e->local_capacity_kib), "dma_max_last_dim",
			 (json_int_t)e->dma_max_last_dim, "dma_setup_ns", jreal(e->dma_setup_ns),
			 "dma_engines", e->dma_engines, "dma_serial", e->dma_serial, "compute_tops",
			 tops, "launch_overhead_us", jreal(e->launch_overhead_us));
	/* a GPU envelope's own terms (ops.h), only where it has them: a host
	 * envelope's manifest stays as it was */
	if (o && e->launch_first_us > 0)
		json_object_set_new(o, "launch_first_us", jreal(e->launch_first_us));
	/* GLOBAL per direction (a host calibration), only where it has them */
	if (o && e->global_read_bw_gbps > 0)
		json_object_set_new(o, "global_read_gbps", jreal(e->global_read_bw_gbps));
	if (o && e->global_write_bw_gbps > 0)
		json_object_set_new(o, "global_write_gbps", jreal(e->global_write_bw_gbps));
	/* a host calibration's one-pass shares (ops.h), only where it has them */
	json_t *op = NULL;
	for (int f = 0; o && f < OPS_NKCLASSES; f++) {
		if (!(e->one_pass_share[f] > 0))
			continue;
		if (!op && !(op = json_object()))
			break;
		json_object_set_new(op, ops_kernel_class_name((enum ops_kernel_class)f),
				    jreal(e->one_pass_share[f]));
	}
	if (op)
		json_object_set_new(o, "one_pass", op);
	json_t *k = NULL;
	for (int f = 0; o && f < OPS_NKCLASSES; f++) {
		if (!(e->kern[f].efficiency > 0))
			continue;
		if (!k && !(k = json_object()))
			break;
		json_object_set_new(k, ops_kernel_class_name((enum ops_kernel_class)f),
				    json_pack("{s:o,s:o}", "efficiency", jreal(e->kern[f].efficiency),
					      "transfer_ns", jreal(e->kern[f].transfer_ns)));
	}
	if (k)
		json_object_set_new(o, "kernels", k);
	return o;
}

static json_t *host_json(const struct col_host *h)
{
	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "cpu_model",
			 h->cpu_model, "cpus_online", h->cpus_online, "caches", h->caches,
			 "kernel", h->kernel, "governor", h->governor, "compiler", h->compiler,
			 "cflags", h->cflags, "versions", h->versions, "tool_version",
			 h->tool_version, "git_revision", h->git_revision, "hostname",
			 h->hostname, "mem_total_bytes", (json_int_t)h->mem_total_bytes,
			 "kernel_isa", h->kernel_isa, "kernel_paths", h->kernel_paths);
}

static json_t *manifest_json(const struct col_run *run)
{
	int bad = 0;
	const struct col_profile *p = run->profile;
	char digest[65];
	col_sha256_hex(p->text, p->text_len, digest);
	json_t *m = json_object();
	put(&bad, m, "archive_version", json_integer(COL_ARCHIVE_VERSION));
	put(&bad, m, "started_utc", json_string(run->started_utc));
	put(&bad, m, "host", host_json(&run->host));
	if (run->gpu.present)
		put(&bad, m, "device", gpu_json(&run->gpu));
	put(&bad, m, "profile",
			    json_pack("{s:s,s:s,s:s,s:I,s:s,s:{s:s,s:s,s:s}}", "path", run->profile_origin,
				      "sha256", digest, "name", p->name, "seed",
				      (json_int_t)p->seed, "model_revision", p->model_revision,
				      "metadata", "compiler", p->compiler, "runtime", p->runtime,
				      "firmware", p->firmware));
	if (p->imported[0])
		put(&bad, m, "imported", col_import_json(&run->import));
	json_t *env = p->imported[0]
		? json_pack("{s:s,s:s,s:s}", "name", "none", "source", "none", "reason",
			    "imported: the source's device is not modelled")
		: envelope_json(&p->envelope, p->envelope_source);
	put(&bad, env, "calibrated", json_boolean(p->calibration.present));
	if (p->calibration.present)
		put(&bad, env, "calibration",
				    json_pack("{s:s,s:s,s:s,s:I}", "host", p->calibration.host, "date",
					      p->calibration.date, "cpu", p->calibration.cpu,
					      "cpus_online", (json_int_t)p->calibration.cpus_online));
	put(&bad, m, "envelope", env);
	json_t *ev = json_array();
	for (size_t i = 0; i < run->nevents; i++)
		add(&bad, ev, json_pack("{s:s,s:s,s:b,s:s}", "name", run->events[i].name,
						    "component", run->events[i].component,
						    "available", run->events[i].available,
						    "reason", run->events[i].reason));
	put(&bad, m, "events", ev);
	json_t *hc = json_array();
	for (int c = 0; c < COL_NHC; c++)
		add(&bad, hc, json_pack("{s:s,s:s,s:b,s:s}", "name", run->hc[c].name,
						    "source", run->hc[c].source,
						    "available", run->hc[c].available,
						    "reason", run->hc[c].reason));
	put(&bad, m, "host_counters", hc);
	put(&bad, m, "papi_status", json_string(run->papi_status));
	put(&bad, m, "overhead", json_pack("{s:o,s:o}", "clock_read_ns",
						     jreal(run->clock_read_ns), "papi_read_ns",
						     jreal(run->papi_read_ns)));
	put(&bad, m, "sampling_seconds", jreal(run->sampling_seconds));
	json_t *blocks = json_array();
	for (int i = 0; i < run->nblocks; i++) {
		const struct col_block_run *br = &run->blocks[i];
		char desc[256];
		if (p->imported[0]) {
			json_t *vs = json_object();
			for (int v = 0; v < 2; v++)
				json_object_set_new(vs, col_variant_name(v),
						    json_pack("{s:s,s:I,s:o}", "source", br->block->source[v],
							      "nsamples", (json_int_t)br->v[v].nsamples,
							      "imported_counters",
							      col_ext_counters_json(&br->v[v])));
			json_array_append_new(blocks, json_pack("{s:s,s:s,s:s,s:i,s:i,s:o}", "name",
							       br->block->name, "workload", "imported",
							       "stop_reason", br->stop_reason, "rounds",
							       br->nrounds, "reps_per_round",
							       br->reps_per_round, "variants", vs));
			continue;
		}
		col_workload_describe(&br->block->work, desc, sizeof desc);
		add(&bad, 
			blocks, json_pack("{s:s,s:s,s:s,s:i,s:i,s:{s:o,s:o}}", "name",
					  br->block->name, "workload", desc, "stop_reason",
					  br->stop_reason, "rounds", br->nrounds, "reps_per_round",
					  br->reps_per_round, "variants", "baseline",
					  variant_json(run, br, 0), "candidate",
					  variant_json(run, br, 1)));
	}
	put(&bad, m, "blocks", blocks);
	return done(bad, m);
}

static json_t *pipeline_json(const struct col_run *run)
{
	int bad = 0;
	json_t *blocks = json_array();
	for (int i = 0; i < run->nblocks; i++) {
		const struct col_block_run *br = &run->blocks[i];
		json_t *o = json_pack("{s:s}", "name", br->block->name);
		for (int v = 0; v < 2 && !run->profile->imported[0]; v++)
			put(&bad, o, col_variant_name(v),
					    col_pipe_to_json(&br->v[v]));
		add(&bad, blocks, o);
	}
	return done(bad, json_pack("{s:i,s:o}", "archive_version", COL_ARCHIVE_VERSION, "blocks",
				    done(bad, blocks)));
}

static void samples_csv(const struct col_run *run, struct opr_buf *t)
{
	opr_buf_printf(t, "block,variant,round,ns\n");
	for (int i = 0; i < run->nblocks; i++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *vr = &run->blocks[i].v[v];
			for (size_t k = 0; k < vr->nsamples; k++)
				opr_buf_printf(t, "%s,%s,%d,%" PRId64 "\n", run->blocks[i].block->name,
					    col_variant_name(v), vr->round[k], vr->samples_ns[k]);
		}
}

/* Each batch's host software counters: one row per round and variant, an empty
 * field for an unavailable counter. */
static void rounds_csv(const struct col_run *run, struct opr_buf *t)
{
	opr_buf_printf(t, "block,variant,round");
	for (int c = 0; c < COL_NHC; c++)
		opr_buf_printf(t, ",%s", col_hc_name(c));
	opr_buf_printf(t, "\n");
	for (int i = 0; i < run->nblocks; i++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *vr = &run->blocks[i].v[v];
			for (size_t r = 0; r < vr->nhc_rounds; r++) {
				opr_buf_printf(t, "%s,%s,%zu", run->blocks[i].block->name,
					    col_variant_name(v), r);
				for (int c = 0; c < COL_NHC; c++)
					if (run->hc[c].available)
						opr_buf_printf(t, ",%lld", vr->hc_rounds[r][c]);
					else
						opr_buf_printf(t, ",");
				opr_buf_printf(t, "\n");
			}
		}
}

static void counters_csv(const struct col_run *run, struct opr_buf *t)
{
	opr_buf_printf(t, "block,variant,provenance,counter,value,available,reason\n");
	for (int i = 0; i < run->nblocks; i++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *vr = &run->blocks[i].v[v];
			const char *b = run->blocks[i].block->name, *vn = col_variant_name(v);
			const struct ops_counters *c = &vr->counters;
			if (run->profile->imported[0]) {
				for (int k = 0; k < vr->next; k++)
					if (vr->ext[k].available)
						opr_buf_printf(t, "%s,%s,imported,%s,%.17g,1,\n", b, vn,
							    vr->ext[k].name, vr->ext[k].value);
					else
						opr_buf_printf(t, "%s,%s,imported,%s,,0,\"%s\"\n", b, vn,
							    vr->ext[k].name, vr->ext[k].reason);
				continue;
			}
			for (int s = 0; s < OPS_NSPACES; s++)
				for (int d = 0; d < OPS_NSPACES; d++)
					if (s != d)
						opr_buf_printf(t, "%s,%s,simulated,bytes %s->%s,%" PRIu64 ",1,\n",
							    b, vn, ops_space_name(s), ops_space_name(d),
							    c->bytes[s][d]);
			opr_buf_printf(t, "%s,%s,simulated,transfers,%" PRIu64 ",1,\n", b, vn, c->transfers);
			opr_buf_printf(t, "%s,%s,simulated,splits,%" PRIu64 ",1,\n", b, vn, c->splits);
			opr_buf_printf(t, "%s,%s,simulated,launches,%" PRIu64 ",1,\n", b, vn, c->launches);
			opr_buf_printf(t, "%s,%s,simulated,peak_shared_bytes,%" PRIu64 ",1,\n", b, vn,
				    c->peak_shared_bytes);
			for (size_t e = 0; e < run->nevents; e++) {
				const struct col_event *ev = &run->events[e];
				if (ev->available && vr->event_totals)
					opr_buf_printf(t, "%s,%s,papi,%s,%lld,1,\n", b, vn, ev->name,
						    vr->event_totals[e]);
				else
					opr_buf_printf(t, "%s,%s,papi,%s,,0,\"%s\"\n", b, vn, ev->name,
						    ev->reason);
			}
			for (int k = 0; k < COL_NHC; k++) {
				const struct col_hc_info *h = &run->hc[k];
				if (h->available)
					opr_buf_printf(t, "%s,%s,measured,%s,%lld,1,\"source: %s\"\n", b, vn,
						    h->name, vr->hc_totals[k], h->source);
				else
					opr_buf_printf(t, "%s,%s,measured,%s,,0,\"%s\"\n", b, vn, h->name,
						    h->reason);
			}
		}
}

/* Writes dir/name and records its digest in files (the manifest's "files"). */
static int write_digested(const char *dir, const char *name, const void *data, size_t len,
			  json_t *files, struct opr_error *err)
{
	char path[OPR_PATH_MAX], hex[65];
	int rc = opr_path_join(path, sizeof path, dir, name, err);
	if (!rc)
		rc = opr_write_file(path, data, len, err);
	if (rc)
		return rc;
	col_sha256_hex(data, len, hex);
	if (json_object_set_new(files, name, json_string(hex)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing %s", name);
	return 0;
}

static int write_json(const char *dir, const char *name, json_t *j, json_t *files,
		      struct opr_error *err)
{
	char *s = j ? json_dumps(j, JSON_FLAGS) : NULL;
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "cannot serialise %s", name);
	int rc = write_digested(dir, name, s, strlen(s), files, err);
	free(s);
	return rc;
}

static int write_text(const char *dir, const char *name, struct opr_buf *t, json_t *files,
		      struct opr_error *err)
{
	if (t->oom)
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing %s", name);
	return write_digested(dir, name, t->p ? t->p : "", t->len, files, err);
}

static int copy_envelope(const struct col_profile *p, const char *dir, json_t *files,
			 struct opr_error *err)
{
	if (!strcmp(p->envelope_source, "inline") || p->imported[0])
		return 0;
	char *data;
	size_t len;
	int rc = opr_read_file(p->envelope_source, &data, &len, 1u << 20, err);
	if (rc)
		return rc;
	char src[sizeof p->envelope_source];
	snprintf(src, sizeof src, "%s", p->envelope_source);
	rc = write_digested(dir, basename(src), data, len, files, err);
	free(data);
	return rc;
}

/* The manifest's own digest: SHA-256 of its text with the 64 hex digits of
 * the top-level "manifest_sha256" read as zeros. */
#define SELF_KEY "manifest_sha256"

/* Returns the offset of the 64 digits of the top-level key in text, or -1
 * when it is absent, repeated, or not 64 hex digits. A scan that knows
 * strings and nesting: the same name as a value, inside a string or in a
 * nested object (a profile or an event may be called that) is not it. */
static long self_digest_at(const char *text, size_t len)
{
	long found = -1;
	int depth = 0;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == '"') {
			size_t start = i + 1, k = start;
			while (k < len && text[k] != '"')
				k += text[k] == '\\' ? 2 : 1;
			if (k >= len)
				return -1;
			size_t after = k + 1;
			while (after < len && strchr(" \t\r\n", text[after]))
				after++;
			int is_key = after < len && text[after] == ':';
			if (depth == 1 && is_key && k - start == sizeof SELF_KEY - 1 &&
			    !memcmp(text + start, SELF_KEY, sizeof SELF_KEY - 1)) {
				size_t v = after + 1;
				while (v < len && strchr(" \t\r\n", text[v]))
					v++;
				if (found >= 0 || v + 66 > len || text[v] != '"' || text[v + 65] != '"')
					return -1;
				for (size_t d = v + 1; d < v + 65; d++)
					if (!((text[d] >= '0' && text[d] <= '9') || (text[d] >= 'a' && text[d] <= 'f')))
						return -1;
				found = (long)(v + 1);
			}
			i = k;
		}
	}
	return found;
}

static void self_digest(const char *text, size_t len, long at, char hex[65])
{
	char *copy = malloc(len + 1);
	if (!copy) {
		memset(hex, 'x', 64); /* never equal to a digest: reported as altered */
		hex[64] = '\0';
		return;
	}
	memcpy(copy, text, len + 1);
	memset(copy + at, '0', 64);
	col_sha256_hex(copy, len, hex);
	free(copy);
}

/* Writes m (which gets "files" and "manifest_sha256") as dir/manifest.json. */
static int write_manifest(const char *dir, json_t *m, json_t *files, struct opr_error *err)
{
	static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
	char path[OPR_PATH_MAX], hex[65];
	if (json_object_set(m, "files", files) ||
	    json_object_set_new(m, "manifest_sha256", json_string(zeros)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory building manifest.json");
	char *s = json_dumps(m, JSON_FLAGS);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "cannot serialise manifest.json");
	size_t n = strlen(s);
	long at = self_digest_at(s, n);
	if (at < 0) {
		free(s);
		return opr_error_set(err, OPR_EINTERNAL, "manifest.json: manifest_sha256 not found once");
	}
	self_digest(s, n, at, hex);
	memcpy(s + at, hex, 64);
	int rc = opr_path_join(path, sizeof path, dir, "manifest.json", err);
	if (!rc)
		rc = opr_write_file(path, s, n, err);
	free(s);
	return rc;
}

static int write_contents(const struct col_run *run, const char *dir, struct opr_error *err)
{
	int rc;
	json_t *files = json_object();
	json_t *m = NULL;
	if (!files)
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing the archive");
	json_t *pj = pipeline_json(run);
	rc = write_json(dir, "pipeline.json", pj, files, err);
	json_decref(pj);
	if (rc)
		goto out;
	struct opr_buf t = {0};
	samples_csv(run, &t);
	rc = write_text(dir, "samples.csv", &t, files, err);
	opr_buf_release(&t);
	if (rc)
		goto out;
	struct opr_buf c = {0};
	counters_csv(run, &c);
	rc = write_text(dir, "counters.csv", &c, files, err);
	opr_buf_release(&c);
	if (rc)
		goto out;
	struct opr_buf r = {0};
	rounds_csv(run, &r);
	rc = write_text(dir, "rounds.csv", &r, files, err);
	opr_buf_release(&r);
	if (rc)
		goto out;
	if ((rc = write_digested(dir, "profile.yaml", run->profile->text, run->profile->text_len,
				 files, err)))
		goto out;
	if ((rc = copy_envelope(run->profile, dir, files, err)))
		goto out;
	/* last, with the digests of everything above */
	m = manifest_json(run);
	rc = m ? write_manifest(dir, m, files, err)
	       : opr_error_set(err, OPR_ENOMEM, "cannot serialise manifest.json");
	if (!rc)
		rc = opr_fsync_dir(dir, err);
out:
	json_decref(m);
	json_decref(files);
	return rc;
}

int col_archive_write(const struct col_run *run, const char *dir, struct opr_error *err)
{
	if (mkdir(dir, 0777))
		return opr_error_set(err, errno == EEXIST ? OPR_EEXIST : OPR_EIO, "cannot create '%s': %s",
				     dir, strerror(errno));
	int rc = write_contents(run, dir, err);
	if (rc)
		opr_rmtree(dir);
	return rc;
}

/* A name in "files": a plain file name of the archive folder. */
static int plain_name(const char *name)
{
	return name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 200;
}

static int read_in(const char *dir, const char *name, char **data, size_t *len,
		   struct opr_error *err)
{
	char path[OPR_PATH_MAX];
	int rc = opr_path_join(path, sizeof path, dir, name, err);
	return rc ? rc : opr_read_file(path, data, len, MAX_ARCHIVE_FILE, err);
}

int col_archive_seal(const char *dir, struct opr_error *err)
{
	static const char *const required[] = {"pipeline.json", "samples.csv", "counters.csv",
					       "profile.yaml"};
	char *data = NULL;
	size_t len;
	json_t *m = NULL, *files = NULL;
	int rc = read_in(dir, "manifest.json", &data, &len, err);
	if (rc)
		return rc;
	json_error_t je;
	m = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	free(data);
	data = NULL;
	if (!json_is_object(m)) {
		rc = opr_error_at(err, OPR_EINPUT, "manifest.json", m ? 1 : je.line, m ? 1 : je.column,
				  "%s", m ? "not a JSON object" : je.text);
		goto out;
	}
	/* the files the manifest lists, else those of an archive before digests
	 * (the four and the envelope file named in it) */
	int bad = 0;
	json_t *listed = json_object_get(m, "files");
	files = json_object();
	const char *name;
	json_t *v;
	if (json_is_object(listed)) {
		json_object_foreach(listed, name, v)
			put(&bad, files, name, json_null());
	} else {
		for (size_t i = 0; i < sizeof required / sizeof *required; i++)
			put(&bad, files, required[i], json_null());
		const char *src = json_string_value(json_object_get(json_object_get(m, "envelope"), "source"));
		if (src && strcmp(src, "inline")) {
			char b[OPR_PATH_MAX];
			snprintf(b, sizeof b, "%s", src);
			put(&bad, files, basename(b), json_null());
		}
	}
	json_object_foreach(files, name, v) {
		char hex[65];
		if (!plain_name(name)) {
			rc = opr_error_set(err, OPR_EINPUT, "manifest.json: files: '%s' is not a file name", name);
			goto out;
		}
		if ((rc = read_in(dir, name, &data, &len, err)))
			goto out;
		col_sha256_hex(data, len, hex);
		free(data);
		data = NULL;
		put(&bad, files, name, json_string(hex));
	}
	put(&bad, m, "archive_version", json_integer(COL_ARCHIVE_VERSION));
	if (bad || !files) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory listing the archive's files");
		goto out;
	}
	rc = write_manifest(dir, m, files, err);
out:
	json_decref(files);
	json_decref(m);
	return rc;
}

/* ---- loading ----------------------------------------------------------------
 * First the digests: manifest.json's own, then every file it lists, so an
 * altered archive is refused naming the file before anything is read from it.
 * Then every value strictly: a wrong type, a count out of range, a malformed
 * number or a samples.csv that does not hold rounds x repetitions samples is
 * an error with FILE:LINE:COL or the JSON path, never coerced. */

#define I64 INT64_MAX
#define FILES_CHECKED 16

static int altered(const char *dir, const char *name, const char *why, struct opr_error *err)
{
	return opr_error_set(err, OPR_EINPUT,
			     "%s/%s: the archive was altered: %s; collect it again or restore the file",
			     dir, name, why);
}

/* Checks manifest.json's own digest and each listed file's; on success *m is
 * the parsed manifest (the caller's). */
static int verify(const char *dir, json_t **out, struct opr_error *err)
{
	char *data = NULL, hex[65];
	size_t len;
	json_t *m = NULL;
	int rc = read_in(dir, "manifest.json", &data, &len, err);
	if (rc)
		return rc;
	long at = self_digest_at(data, len);
	if (at < 0) {
		rc = opr_error_set(err, OPR_EINPUT,
				   "%s/manifest.json: no manifest_sha256: not an archive of this opreview "
				   "(version %d) or altered; collect it again", dir, COL_ARCHIVE_VERSION);
		goto out;
	}
	self_digest(data, len, at, hex);
	if (memcmp(hex, data + at, 64)) {
		rc = altered(dir, "manifest.json", "its SHA-256 is not the manifest_sha256 it records", err);
		goto out;
	}
	json_error_t je;
	m = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	if (!m) {
		char path[OPR_PATH_MAX];
		snprintf(path, sizeof path, "%s/manifest.json", dir);
		rc = opr_error_at(err, OPR_EINPUT, path, je.line, je.column, "%s", je.text);
		goto out;
	}
	char mpath[OPR_PATH_MAX];
	snprintf(mpath, sizeof mpath, "%s/manifest.json", dir); /* fits: read_in joined it */
	struct col_jr r = {mpath, err, 0, ""};
	json_int_t version = col_jr_int(&r, m, "archive_version", 0, I64);
	if (!r.rc && version != COL_ARCHIVE_VERSION)
		r.rc = opr_error_set(err, OPR_EINPUT, "%s/manifest.json: archive_version %lld is not %d",
				     dir, (long long)version, COL_ARCHIVE_VERSION);
	json_t *files = col_jr_obj(&r, m, "files");
	static const char *const required[] = {"pipeline.json", "samples.csv", "counters.csv",
					       "profile.yaml"};
	for (size_t i = 0; !r.rc && i < sizeof required / sizeof *required; i++)
		if (!json_object_get(files, required[i]))
			r.rc = opr_error_set(err, OPR_EINPUT, "%s/manifest.json: files: %s is not listed",
					     dir, required[i]);
	if (!r.rc && json_object_size(files) > FILES_CHECKED)
		r.rc = opr_error_set(err, OPR_EINPUT, "%s/manifest.json: files: %zu entries; at most %d",
				     dir, json_object_size(files), FILES_CHECKED);
	const char *name;
	json_t *v;
	size_t mark = col_jr_enter(&r, "files");
	json_object_foreach(files, name, v) {
		char want[65], *fd = NULL;
		size_t flen;
		if (r.rc)
			break;
		col_jr_str(&r, files, name, want, sizeof want);
		if (r.rc)
			break;
		if (!plain_name(name)) {
			r.rc = opr_error_set(err, OPR_EINPUT, "%s/manifest.json: files: '%s' is not a file name",
					     dir, name);
			break;
		}
		if ((r.rc = read_in(dir, name, &fd, &flen, err)))
			break;
		col_sha256_hex(fd, flen, hex);
		free(fd);
		if (strcmp(hex, want)) {
			char why[200];
			snprintf(why, sizeof why, "its SHA-256 is %.12s..., the manifest records %.12s...", hex,
				 want);
			r.rc = altered(dir, name, why, err);
		}
	}
	col_jr_leave(&r, mark);
	rc = r.rc;
out:
	free(data);
	if (rc)
		json_decref(m);
	else
		*out = m;
	return rc;
}

static int load_json(const char *dir, const char *name, json_t **out, struct opr_error *err)
{
	char path[OPR_PATH_MAX];
	int rc = opr_path_join(path, sizeof path, dir, name, err);
	char *data;
	size_t len;
	if (!rc)
		rc = opr_read_file(path, &data, &len, MAX_ARCHIVE_FILE, err);
	if (rc)
		return rc;
	json_error_t je;
	*out = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	free(data);
	if (!*out)
		return opr_error_at(err, OPR_EINPUT, path, je.line, je.column, "%s", je.text);
	return 0;
}

static void load_plan(struct col_jr *r, json_t *o, const char *key, enum ops_group g,
		      struct ops_plan *p)
{
	memset(p, 0, sizeof *p);
	json_t *j = col_jr_obj(r, o, key);
	size_t mark = col_jr_enter(r, key);
	p->fused = col_jr_bool(r, j, "fused");
	p->strategy = (enum ops_strategy)col_jr_int(r, j, "strategy", 0, OPS_NSTRATS - 1);
	p->split_k = (int)col_jr_int(r, j, "split_k", 0, INT32_MAX);
	p->double_buffer = col_jr_bool(r, j, "double_buffer");
	json_t *params = col_jr_obj(r, j, "params");
	size_t m2 = col_jr_enter(r, "params");
	const char *const *names = ops_plan_params(g);
	for (int i = 0; names && names[i] && i < OPS_PLAN_MAX_PARAMS; i++)
		p->p[i] = col_jr_int(r, params, names[i], 0, I64);
	col_jr_leave(r, m2);
	col_jr_leave(r, mark);
}

static void load_counters(struct col_jr *r, json_t *o, const char *key, struct ops_counters *c)
{
	memset(c, 0, sizeof *c);
	json_t *j = col_jr_obj(r, o, key);
	size_t mark = col_jr_enter(r, key);
	json_t *bytes = col_jr_obj(r, j, "dma_bytes");
	size_t m2 = col_jr_enter(r, "dma_bytes");
	for (int s = 0; s < OPS_NSPACES; s++)
		for (int d = 0; d < OPS_NSPACES; d++) {
			char k[32];
			snprintf(k, sizeof k, "%s->%s", ops_space_name(s), ops_space_name(d));
			c->bytes[s][d] = (uint64_t)col_jr_int(r, bytes, k, 0, I64);
		}
	col_jr_leave(r, m2);
	c->compute_read_bytes = (uint64_t)col_jr_int(r, j, "compute_read_bytes", 0, I64);
	c->compute_write_bytes = (uint64_t)col_jr_int(r, j, "compute_write_bytes", 0, I64);
	c->transfers = (uint64_t)col_jr_int(r, j, "transfers", 0, I64);
	c->splits = (uint64_t)col_jr_int(r, j, "splits", 0, I64);
	c->launches = (uint64_t)col_jr_int(r, j, "launches", 0, I64);
	c->tiles = (uint64_t)col_jr_int(r, j, "tiles", 0, I64);
	c->fallbacks = (uint64_t)col_jr_int(r, j, "fallbacks", 0, I64);
	c->elem_ops = (uint64_t)col_jr_int(r, j, "elem_ops", 0, I64);
	c->peak_shared_bytes = (uint64_t)col_jr_int(r, j, "peak_shared_bytes", 0, I64);
	json_t *macs = col_jr_obj(r, j, "macs");
	m2 = col_jr_enter(r, "macs");
	for (int t = 0; t < OPS_NDTYPES; t++)
		c->macs[t] = (uint64_t)col_jr_int(r, macs, ops_dtype_name(t), 0, I64);
	col_jr_leave(r, m2);
	json_t *cw = col_jr_arr(r, j, "core_work");
	m2 = col_jr_enter(r, "core_work");
	for (size_t i = 0; !r->rc && i < json_array_size(cw) && i < OPS_MAX_CORES; i++)
		c->core_work[i] = (uint64_t)col_jr_int_at(r, cw, i, 0, I64);
	col_jr_leave(r, m2);
	col_jr_leave(r, mark);
}

static void load_alt(struct col_jr *r, json_t *a, enum ops_group g, struct ops_plan_eval *e,
		     double *measured_ns, double *vs_choice)
{
	load_plan(r, a, "plan", g, &e->plan);
	e->rejected = col_jr_bool(r, a, "rejected");
	e->fits = col_jr_bool(r, a, "fits");
	col_jr_str(r, a, "reason", e->reason, sizeof e->reason);
	e->model_ns = col_jr_num(r, a, "model_ns");
	e->launches = (uint64_t)col_jr_int(r, a, "launches", 0, I64);
	e->global_bytes = (uint64_t)col_jr_int(r, a, "global_bytes", 0, I64);
	e->footprint_bytes = (uint64_t)col_jr_int(r, a, "footprint_bytes", 0, I64);
	e->reuse_ratio = col_jr_num(r, a, "reuse_ratio");
	/* null when not measured (absent before model validation: the same) */
	*measured_ns = col_jr_num_opt(r, a, "measured_ns", NAN);
	/* absent before the paired rounds were kept, and where not measured */
	vs_choice[0] = col_jr_num_opt(r, a, "vs_choice", NAN);
	vs_choice[1] = col_jr_num_opt(r, a, "vs_choice_lo", NAN);
	vs_choice[2] = col_jr_num_opt(r, a, "vs_choice_hi", NAN);
	if (json_object_get(a, "counters"))
		load_counters(r, a, "counters", &e->counters);
}

static void load_launch(struct col_jr *r, json_t *l, struct ops_launch_rec *x)
{
	col_jr_str(r, l, "name", x->name, sizeof x->name);
	x->cores_used = (int)col_jr_int(r, l, "cores_used", 0, OPS_MAX_CORES);
	x->double_buffer = col_jr_bool(r, l, "double_buffer");
	/* (absent from archives written before them: false and 0, as they ran) */
	x->one_pass = col_jr_bool_opt(r, l, "one_pass", 0);
	x->global_bytes = (uint64_t)col_jr_int(r, l, "global_bytes", 0, I64);
	x->shared_bytes = (uint64_t)col_jr_int(r, l, "shared_bytes", 0, I64);
	x->transfers = (uint64_t)col_jr_int(r, l, "transfers", 0, I64);
	x->work = (uint64_t)col_jr_int(r, l, "work", 0, I64);
	x->overhead_ns = col_jr_num(r, l, "overhead_ns");
	x->compute_ns = col_jr_num(r, l, "compute_ns");
	x->shared_ns = col_jr_num(r, l, "shared_ns");
	x->shared_dma_ns = col_jr_num_opt(r, l, "shared_dma_ns", 0.0);
	x->global_ns = col_jr_num(r, l, "global_ns");
	x->dma_ns = col_jr_num(r, l, "dma_ns");
	x->imbalance = col_jr_num(r, l, "imbalance");
	x->model_ns = col_jr_num(r, l, "model_ns");
}

/* Reads one variant; vr->nsamples is the manifest's count until the samples
 * are loaded (load_samples checks it). */
static void load_variant(struct col_jr *r, json_t *j, const struct col_run *run, enum ops_group g,
			 struct col_variant_run *vr, size_t *nsamples)
{
	load_plan(r, j, "plan", g, &vr->plan);
	vr->plan_was_auto = col_jr_bool(r, j, "plan_was_auto");
	vr->fell_back = col_jr_bool(r, j, "fell_back");
	col_jr_str(r, j, "plan_note", vr->plan_note, sizeof vr->plan_note);
	json_t *alts = col_jr_arr(r, j, "alternatives");
	json_t *ls = col_jr_arr(r, j, "launches");
	if (r->rc)
		return;
	vr->nalts = json_array_size(alts);
	vr->alts = calloc(vr->nalts ? vr->nalts : 1, sizeof *vr->alts);
	vr->alt_measured_ns = calloc(vr->nalts ? vr->nalts : 1, sizeof *vr->alt_measured_ns);
	vr->alt_vs_choice = calloc(vr->nalts ? 3 * vr->nalts : 1, sizeof *vr->alt_vs_choice);
	vr->nlaunches = json_array_size(ls);
	vr->launches = calloc(vr->nlaunches ? vr->nlaunches : 1, sizeof *vr->launches);
	vr->event_totals = calloc(run->nevents ? run->nevents : 1, sizeof(long long));
	if (!vr->alts || !vr->alt_measured_ns || !vr->alt_vs_choice || !vr->launches ||
	    !vr->event_totals) {
		r->rc = opr_error_set(r->err, OPR_ENOMEM, "out of memory loading the archive");
		return;
	}
	size_t mark = col_jr_enter(r, "alternatives");
	for (size_t i = 0; !r->rc && i < vr->nalts; i++) {
		size_t m2 = col_jr_enter_i(r, i);
		load_alt(r, json_array_get(alts, i), g, &vr->alts[i], &vr->alt_measured_ns[i],
			 &vr->alt_vs_choice[3 * i]);
		col_jr_leave(r, m2);
	}
	col_jr_leave(r, mark);
	mark = col_jr_enter(r, "launches");
	for (size_t i = 0; !r->rc && i < vr->nlaunches; i++) {
		size_t m2 = col_jr_enter_i(r, i);
		load_launch(r, json_array_get(ls, i), &vr->launches[i]);
		col_jr_leave(r, m2);
	}
	col_jr_leave(r, mark);
	load_counters(r, j, "counters", &vr->counters);
	vr->model_ns = col_jr_num(r, j, "model_ns");
	json_t *q = col_jr_obj(r, j, "quality");
	mark = col_jr_enter(r, "quality");
	vr->quality.rel_l2 = col_jr_num(r, q, "rel_l2");
	vr->quality.max_abs_lsb = col_jr_num(r, q, "max_abs_lsb");
	vr->quality.exact_int = col_jr_bool(r, q, "exact_int");
	col_jr_leave(r, mark);
	col_jr_str(r, j, "output_sha256", vr->output_sha256, sizeof vr->output_sha256);
	col_jr_str(r, j, "input_sha256", vr->input_sha256, sizeof vr->input_sha256);
	*nsamples = (size_t)col_jr_int(r, j, "nsamples", 0, I64);
	vr->events_per_sample = col_jr_bool(r, j, "events_per_sample");
	vr->repro_counters_equal = col_jr_bool(r, j, "repro_counters_equal");
	vr->repro_output_stable = col_jr_bool(r, j, "repro_output_stable");
	json_t *ev = col_jr_obj(r, j, "event_totals");
	mark = col_jr_enter(r, "event_totals");
	for (size_t e = 0; !r->rc && e < run->nevents; e++) {
		json_t *v = json_object_get(ev, run->events[e].name);
		if (json_is_null(v) && !run->events[e].available)
			continue; /* unavailable: no value, and none shown */
		vr->event_totals[e] = (long long)col_jr_int(r, ev, run->events[e].name, 0, I64);
	}
	col_jr_leave(r, mark);
	/* absent from archives written before host counters (run->hc_recorded 0) */
	json_t *hc = json_object_get(j, "host_counter_totals");
	if (!r->rc && hc && !json_is_object(hc))
		col_jr_fail(r, "host_counter_totals", "an object", hc);
	mark = col_jr_enter(r, "host_counter_totals");
	for (int c = 0; !r->rc && hc && c < COL_NHC; c++) {
		json_t *v = json_object_get(hc, col_hc_name(c));
		if (!run->hc[c].available && (!v || json_is_null(v)))
			continue; /* unavailable: no value */
		vr->hc_totals[c] = (long long)col_jr_int(r, hc, col_hc_name(c), 0, I64);
	}
	col_jr_leave(r, mark);
	/* GPU runs only */
	json_t *gc = json_object_get(j, "gpu_counters");
	if (!r->rc && gc && !json_is_array(gc))
		col_jr_fail(r, "gpu_counters", "an array", gc);
	if (r->rc || !gc)
		return;
	vr->ngpu_counters = json_array_size(gc);
	vr->gpu_counters = calloc(vr->ngpu_counters ? vr->ngpu_counters : 1, sizeof *vr->gpu_counters);
	if (!vr->gpu_counters) {
		r->rc = opr_error_set(r->err, OPR_ENOMEM, "out of memory loading the archive");
		return;
	}
	mark = col_jr_enter(r, "gpu_counters");
	for (size_t i = 0; !r->rc && i < vr->ngpu_counters; i++) {
		struct col_gpu_counter *c = &vr->gpu_counters[i];
		json_t *e = json_array_get(gc, i);
		size_t m2 = col_jr_enter_i(r, i);
		col_jr_str(r, e, "name", c->name, sizeof c->name);
		c->available = col_jr_bool(r, e, "available");
		if (c->available)
			c->value = (long long)col_jr_int(r, e, "value", 0, I64);
		col_jr_str(r, e, "reason", c->reason, sizeof c->reason);
		col_jr_leave(r, m2);
	}
	col_jr_leave(r, mark);
}

static void load_gpu(struct col_jr *r, json_t *d, struct col_gpu *g)
{
	char kind[16];
	col_jr_str(r, d, "kind", kind, sizeof kind);
	if (!r->rc && strcmp(kind, "cuda"))
		r->rc = opr_error_set(r->err, OPR_EINPUT, "%s: device.kind: '%s' is not cuda", r->file,
				      kind);
	g->present = 1;
	g->index = (int)col_jr_int(r, d, "index", 0, COL_DEV_INDEX_MAX);
	col_jr_str(r, d, "name", g->name, sizeof g->name);
	char cc[24];
	col_jr_str(r, d, "compute_capability", cc, sizeof cc);
	if (!r->rc && sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
		r->rc = opr_error_set(r->err, OPR_EINPUT, "%s: device.compute_capability: '%s' is not "
				      "MAJOR.MINOR", r->file, cc);
	g->sm_count = (int)col_jr_int(r, d, "sm_count", 0, INT32_MAX);
	g->sm_clock_khz = (int)col_jr_int(r, d, "sm_clock_khz", 0, INT32_MAX);
	g->mem_clock_khz = (int)col_jr_int(r, d, "mem_clock_khz", 0, INT32_MAX);
	g->clock_seen_mhz_min = col_jr_num(r, d, "clock_seen_mhz_min");
	g->clock_seen_mhz_max = col_jr_num(r, d, "clock_seen_mhz_max");
	g->l2_bytes = col_jr_int(r, d, "l2_bytes", 0, I64);
	g->shared_per_block_optin = col_jr_int(r, d, "shared_per_block_optin_bytes", 0, I64);
	g->global_bytes = col_jr_int(r, d, "global_bytes", 0, I64);
	col_jr_str(r, d, "kernel_driver", g->kernel_driver, sizeof g->kernel_driver);
	g->driver_version = (int)col_jr_int(r, d, "driver_version", 0, INT32_MAX);
	g->runtime_version = (int)col_jr_int(r, d, "cuda_runtime_version", 0, INT32_MAX);
	col_jr_str(r, d, "papi_version", g->papi_version, sizeof g->papi_version);
	g->l2_flush = col_jr_bool(r, d, "l2_flushed_per_sample");
}

static void load_host(struct col_jr *r, json_t *h, struct col_host *ho)
{
	col_jr_str(r, h, "cpu_model", ho->cpu_model, sizeof ho->cpu_model);
	ho->cpus_online = (int)col_jr_int(r, h, "cpus_online", 0, INT32_MAX);
	col_jr_str(r, h, "caches", ho->caches, sizeof ho->caches);
	col_jr_str(r, h, "kernel", ho->kernel, sizeof ho->kernel);
	col_jr_str(r, h, "governor", ho->governor, sizeof ho->governor);
	col_jr_str(r, h, "compiler", ho->compiler, sizeof ho->compiler);
	col_jr_str(r, h, "cflags", ho->cflags, sizeof ho->cflags);
	col_jr_str(r, h, "versions", ho->versions, sizeof ho->versions);
	col_jr_str(r, h, "tool_version", ho->tool_version, sizeof ho->tool_version);
	col_jr_str(r, h, "git_revision", ho->git_revision, sizeof ho->git_revision);
	col_jr_str(r, h, "hostname", ho->hostname, sizeof ho->hostname);
	ho->mem_total_bytes = (uint64_t)col_jr_int(r, h, "mem_total_bytes", 0, I64);
	/* an archive written before the kernel paths were recorded says so */
	if (json_object_get(h, "kernel_isa"))
		col_jr_str(r, h, "kernel_isa", ho->kernel_isa, sizeof ho->kernel_isa);
	else
		snprintf(ho->kernel_isa, sizeof ho->kernel_isa, "unavailable: not in the archive");
	if (json_object_get(h, "kernel_paths"))
		col_jr_str(r, h, "kernel_paths", ho->kernel_paths, sizeof ho->kernel_paths);
	else
		snprintf(ho->kernel_paths, sizeof ho->kernel_paths, "unavailable: not in the archive");
}

/* nsamples[b][v]: the manifest's sample counts, for load_samples. */
static int load_manifest(json_t *m, const char *path, struct col_run *run, size_t nsamples[][2],
			 struct opr_error *err)
{
	struct col_jr r = {path, err, 0, ""};
	char digest[65], recorded[65];
	col_jr_str(&r, m, "started_utc", run->started_utc, sizeof run->started_utc);
	if (run->profile->imported[0]) { /* the source of an imported run */
		json_t *im = col_jr_obj(&r, m, "imported");
		if (!r.rc)
			col_import_load(im, &run->import);
	}
	json_t *prof = col_jr_obj(&r, m, "profile");
	size_t mark = col_jr_enter(&r, "profile");
	col_jr_str(&r, prof, "path", run->profile_origin, sizeof run->profile_origin);
	col_jr_str(&r, prof, "sha256", recorded, sizeof recorded);
	col_jr_leave(&r, mark);
	/* the profile's own digest too (profile.yaml's file digest was checked) */
	col_sha256_hex(run->profile->text, run->profile->text_len, digest);
	if (!r.rc && strcmp(digest, recorded))
		r.rc = opr_error_set(err, OPR_EINPUT, "%s: profile.sha256 is not the digest of "
				     "profile.yaml: the archive was altered", path);
	/* the envelope as the run named it, not the archive's copy */
	json_t *env = col_jr_obj(&r, m, "envelope");
	mark = col_jr_enter(&r, "envelope");
	col_jr_str(&r, env, "source", run->profile->envelope_source, sizeof run->profile->envelope_source);
	col_jr_leave(&r, mark);
	json_t *h = col_jr_obj(&r, m, "host");
	mark = col_jr_enter(&r, "host");
	load_host(&r, h, &run->host);
	col_jr_leave(&r, mark);
	/* a GPU run's device; its profile says device: cuda, and only then */
	json_t *dev = json_object_get(m, "device");
	if (!r.rc && dev && !json_is_object(dev))
		col_jr_fail(&r, "device", "an object", dev);
	if (!r.rc && !dev != (run->profile->device.kind != COL_DEV_CUDA))
		r.rc = opr_error_set(err, OPR_EINPUT, "%s: device: %s, but the profile says device %s",
				     path, dev ? "recorded" : "absent",
				     col_device_kind_name(run->profile->device.kind));
	mark = col_jr_enter(&r, "device");
	if (!r.rc && dev)
		load_gpu(&r, dev, &run->gpu);
	col_jr_leave(&r, mark);
	json_t *ev = col_jr_arr(&r, m, "events");
	if (!r.rc && json_array_size(ev) > COL_MAX_RUN_EVENTS)
		r.rc = opr_error_set(err, OPR_EINPUT, "%s: events: %zu events; at most %d",
				     path, json_array_size(ev), COL_MAX_RUN_EVENTS);
	if (!r.rc)
		run->nevents = json_array_size(ev);
	mark = col_jr_enter(&r, "events");
	for (size_t i = 0; !r.rc && i < run->nevents; i++) {
		json_t *e = json_array_get(ev, i);
		size_t m2 = col_jr_enter_i(&r, i);
		col_jr_str(&r, e, "name", run->events[i].name, sizeof run->events[i].name);
		col_jr_str(&r, e, "component", run->events[i].component, sizeof run->events[i].component);
		run->events[i].available = col_jr_bool(&r, e, "available");
		col_jr_str(&r, e, "reason", run->events[i].reason, sizeof run->events[i].reason);
		col_jr_leave(&r, m2);
	}
	col_jr_leave(&r, mark);
	/* absent from archives written before host counters were recorded */
	json_t *hc = json_object_get(m, "host_counters");
	if (!r.rc && hc && !json_is_array(hc))
		col_jr_fail(&r, "host_counters", "an array", hc);
	run->hc_recorded = json_is_array(hc);
	mark = col_jr_enter(&r, "host_counters");
	for (int c = 0; !r.rc && c < COL_NHC; c++) {
		struct col_hc_info *hi = &run->hc[c];
		json_t *e = NULL;
		size_t at = 0;
		for (size_t i = 0; i < json_array_size(hc) && !e; i++)
			if (json_is_string(json_object_get(json_array_get(hc, i), "name")) &&
			    !strcmp(json_string_value(json_object_get(json_array_get(hc, i), "name")),
				    col_hc_name(c)))
				e = json_array_get(hc, at = i);
		snprintf(hi->name, sizeof hi->name, "%s", col_hc_name(c));
		if (!e) {
			snprintf(hi->reason, sizeof hi->reason, "not recorded: the archive predates "
				 "host software counters");
			continue;
		}
		size_t m2 = col_jr_enter_i(&r, at);
		col_jr_str(&r, e, "source", hi->source, sizeof hi->source);
		hi->available = col_jr_bool(&r, e, "available");
		col_jr_str(&r, e, "reason", hi->reason, sizeof hi->reason);
		col_jr_leave(&r, m2);
	}
	col_jr_leave(&r, mark);
	col_jr_str(&r, m, "papi_status", run->papi_status, sizeof run->papi_status);
	json_t *o = col_jr_obj(&r, m, "overhead");
	mark = col_jr_enter(&r, "overhead");
	run->clock_read_ns = col_jr_num(&r, o, "clock_read_ns");
	run->papi_read_ns = col_jr_num(&r, o, "papi_read_ns");
	col_jr_leave(&r, mark);
	run->sampling_seconds = col_jr_num(&r, m, "sampling_seconds");
	json_t *blocks = col_jr_arr(&r, m, "blocks");
	if (!r.rc && (int)json_array_size(blocks) != run->profile->nblocks)
		r.rc = opr_error_set(err, OPR_EINPUT, "%s: %zu blocks, but the profile has %d",
				     path, json_array_size(blocks), run->profile->nblocks);
	mark = col_jr_enter(&r, "blocks");
	for (int i = 0; !r.rc && i < run->profile->nblocks; i++) {
		json_t *b = json_array_get(blocks, (size_t)i);
		struct col_block_run *br = &run->blocks[i];
		size_t m2 = col_jr_enter_i(&r, (size_t)i);
		char name[COL_NAME_MAX + 1];
		br->block = &run->profile->blocks[i];
		run->nblocks = i + 1;
		col_jr_str(&r, b, "name", name, sizeof name);
		if (!r.rc && strcmp(name, br->block->name))
			r.rc = opr_error_set(err, OPR_EINPUT, "%s: blocks[%d].name: '%s', but the "
					     "profile's block %d is '%s'", path, i, name, i + 1, br->block->name);
		col_jr_str(&r, b, "stop_reason", br->stop_reason, sizeof br->stop_reason);
		br->nrounds = (int)col_jr_int(&r, b, "rounds", 0, INT32_MAX);
		br->reps_per_round = (int)col_jr_int(&r, b, "reps_per_round", 0, INT32_MAX);
		json_t *vs = col_jr_obj(&r, b, "variants");
		size_t m3 = col_jr_enter(&r, "variants");
		for (int v = 0; !r.rc && v < 2; v++) {
			const char *vn = col_variant_name(v);
			json_t *vj = col_jr_obj(&r, vs, vn);
			size_t m4 = col_jr_enter(&r, vn);
			if (run->profile->imported[0]) {
				/* samples and the source's counters only: no plan or model */
				nsamples[i][v] = (size_t)col_jr_int(&r, vj, "nsamples", 0, I64);
				if (!r.rc)
					col_ext_counters_load(json_object_get(vj, "imported_counters"),
							      &br->v[v]);
				col_jr_leave(&r, m4);
				continue;
			}
			load_variant(&r, vj, run, br->block->work.group, &br->v[v], &nsamples[i][v]);
			if (!r.rc && nsamples[i][v] != (size_t)br->nrounds * (size_t)br->reps_per_round)
				r.rc = opr_error_set(err, OPR_EINPUT,
						     "%s: %s: nsamples %zu is not rounds x "
						     "reps_per_round = %d x %d", path, r.path, nsamples[i][v],
						     br->nrounds, br->reps_per_round);
			col_jr_leave(&r, m4);
		}
		col_jr_leave(&r, m3);
		col_jr_leave(&r, m2);
	}
	col_jr_leave(&r, mark);
	return r.rc;
}

static int find_block(const struct col_run *run, const char *name, size_t len)
{
	for (int i = 0; i < run->nblocks; i++)
		if (strlen(run->blocks[i].block->name) == len &&
		    !memcmp(run->blocks[i].block->name, name, len))
			return i;
	return -1;
}

/* A decimal integer in [0, max]: digits only, no sign, no blank, no
 * exponent, no overflow. Returns 0, or -1. */
static int parse_uint(const char *s, size_t len, int64_t max, int64_t *out)
{
	int64_t x = 0;
	if (!len || len > 19)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		int d = s[i] - '0';
		if (x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

/* samples.csv: "block,variant,round,ns", then one row per sample, in order,
 * each variant's rows exactly the manifest's nsamples (rounds x reps_per_round)
 * with rounds 0 .. rounds-1, each round reps_per_round times. */
static int load_samples(const char *dir, struct col_run *run, size_t nsamples[][2],
			struct opr_error *err)
{
	static const char header[] = "block,variant,round,ns\n";
	char path[OPR_PATH_MAX];
	int rc = opr_path_join(path, sizeof path, dir, "samples.csv", err);
	char *data;
	size_t len;
	if (!rc)
		rc = opr_read_file(path, &data, &len, MAX_ARCHIVE_FILE, err);
	if (rc)
		return rc;
	for (int b = 0; b < run->nblocks && !rc; b++)
		for (int v = 0; v < 2 && !rc; v++) {
			struct col_variant_run *vr = &run->blocks[b].v[v];
			size_t n = nsamples[b][v];
			vr->samples_ns = malloc((n ? n : 1) * sizeof *vr->samples_ns);
			vr->round = malloc((n ? n : 1) * sizeof *vr->round);
			if (!vr->samples_ns || !vr->round)
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory loading samples");
		}
	if (!rc && (len < sizeof header - 1 || memcmp(data, header, sizeof header - 1)))
		rc = opr_error_at(err, OPR_EINPUT, path, 1, 1, "expected the header 'block,variant,round,ns'");
	int line = 1;
	const char *p = data + sizeof header - 1, *end = data + len;
	while (!rc && p < end) {
		line++;
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, (int)(end - p) + 1,
					  "the last row does not end with a newline (a cut file?)");
			break;
		}
		/* four fields split at commas; col is 1-based within the line */
		const char *f[4];
		size_t fl[4];
		int nf = 0;
		const char *q = p;
		while (nf < 4) {
			const char *c = memchr(q, ',', (size_t)(eol - q));
			f[nf] = q;
			fl[nf] = (size_t)((c && nf < 3 ? c : eol) - q);
			nf++;
			if (!c || nf == 4)
				break;
			q = c + 1;
		}
		if (nf != 4 || memchr(f[3], ',', fl[3])) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1,
					  "expected 4 fields 'block,variant,round,ns'");
			break;
		}
#define COL(k) ((int)(f[k] - p) + 1)
		int b = find_block(run, f[0], fl[0]);
		int v = fl[1] == 8 && !memcmp(f[1], "baseline", 8)    ? 0
			: fl[1] == 9 && !memcmp(f[1], "candidate", 9) ? 1
								     : -1;
		if (b < 0) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, COL(0),
					  "expected a block of the profile, found '%.*s'", (int)fl[0] > 64 ? 64 : (int)fl[0], f[0]);
			break;
		}
		if (v < 0) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, COL(1),
					  "expected 'baseline' or 'candidate', found '%.*s'",
					  (int)fl[1] > 64 ? 64 : (int)fl[1], f[1]);
			break;
		}
		struct col_block_run *br = &run->blocks[b];
		struct col_variant_run *vr = &br->v[v];
		int64_t round, ns;
		if (parse_uint(f[2], fl[2], INT32_MAX, &round) || round >= br->nrounds) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, COL(2),
					  "expected a round in 0..%d, found '%.*s'", br->nrounds - 1,
					  (int)fl[2] > 32 ? 32 : (int)fl[2], f[2]);
			break;
		}
		if (parse_uint(f[3], fl[3], INT64_MAX, &ns)) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, COL(3),
					  "expected a time in integer nanoseconds, found '%.*s'",
					  (int)fl[3] > 32 ? 32 : (int)fl[3], f[3]);
			break;
		}
		size_t k = vr->nsamples;
		if (k >= nsamples[b][v]) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1,
					  "more %s %s samples than the manifest's %zu", br->block->name,
					  col_variant_name(v), nsamples[b][v]);
			break;
		}
		/* rounds in order, each reps_per_round samples */
		if (br->reps_per_round > 0 && round != (int64_t)(k / (size_t)br->reps_per_round)) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, COL(2),
					  "expected round %zu for sample %zu of %s %s, found %lld",
					  k / (size_t)br->reps_per_round, k + 1, br->block->name,
					  col_variant_name(v), (long long)round);
			break;
		}
#undef COL
		vr->samples_ns[k] = ns;
		vr->round[k] = (int32_t)round;
		vr->nsamples++;
		p = eol + 1;
	}
	for (int b = 0; b < run->nblocks && !rc; b++)
		for (int v = 0; v < 2 && !rc; v++)
			if (run->blocks[b].v[v].nsamples != nsamples[b][v])
				rc = opr_error_at(err, OPR_EINPUT, path, line, 1,
						  "%zu %s %s samples, but the manifest has %d rounds x %d "
						  "repetitions = %zu (a cut file?)",
						  run->blocks[b].v[v].nsamples, run->blocks[b].block->name,
						  col_variant_name(v), run->blocks[b].nrounds,
						  run->blocks[b].reps_per_round, nsamples[b][v]);
	free(data);
	return rc;
}

/* One integer field of a CSV row, the whole field: 0, or -1 when it is not one. */
static int csv_int(const char **p, long long *out, int *empty)
{
	const char *s = *p;
	size_t n = strcspn(s, ",");
	int64_t x = 0;
	*empty = n == 0;
	if (!*empty && parse_uint(s, n, INT64_MAX, &x))
		return -1; /* digits only, as samples.csv's ns */
	*out = (long long)x;
	s += n;
	if (*s == ',')
		s++;
	*p = s;
	return 0;
}

/* rounds.csv: each batch's host counters (hostcount.h), absent from archives
 * written before them (run->hc_recorded is 0 then). */
static int load_rounds(const char *dir, struct col_run *run, struct opr_error *err)
{
	char path[OPR_PATH_MAX];
	char *data, *save = NULL;
	size_t len;
	if (!run->hc_recorded)
		return 0;
	int rc = opr_path_join(path, sizeof path, dir, "rounds.csv", err);
	if (!rc)
		rc = opr_read_file(path, &data, &len, MAX_ARCHIVE_FILE, err);
	if (rc)
		return rc;
	int line = 1;
	char *l = strtok_r(data, "\n", &save); /* header */
	while (!rc && (l = strtok_r(NULL, "\n", &save))) {
		char block[COL_NAME_MAX + 1], variant[16];
		int used = 0, empty;
		long long round, v[COL_NHC];
		line++;
		if (sscanf(l, "%64[^,],%15[^,],%n", block, variant, &used) != 2 || !used) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1, "malformed round row");
			break;
		}
		const char *p = l + used;
		int bad = csv_int(&p, &round, &empty) || empty || round < 0;
		for (int c = 0; c < COL_NHC && !bad; c++)
			bad = csv_int(&p, &v[c], &empty) || (empty == run->hc[c].available);
		if (bad || *p) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, (int)(p - l) + 1,
					  "expected a round and %d counters, empty where unavailable",
					  COL_NHC);
			break;
		}
		int b = find_block(run, block, strlen(block));
		int vi = !strcmp(variant, "baseline") ? 0 : !strcmp(variant, "candidate") ? 1 : -1;
		if (b < 0 || vi < 0) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1, "unknown block or variant '%s,%s'",
					  block, variant);
			break;
		}
		struct col_variant_run *vr = &run->blocks[b].v[vi];
		if ((size_t)round != vr->nhc_rounds || round > run->blocks[b].nrounds) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1, "round %lld out of order", round);
			break;
		}
		if (OPR_GROW(vr->hc_rounds, vr->nhc_rounds, vr->hc_rounds_cap, 64)) {
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory loading rounds");
			break;
		}
		memcpy(vr->hc_rounds[vr->nhc_rounds++], v, sizeof v);
	}
	free(data);
	return rc;
}

static int load_pipeline(const char *dir, struct col_run *run, struct opr_error *err)
{
	json_t *pj;
	int rc = load_json(dir, "pipeline.json", &pj, err);
	if (rc)
		return rc;
	char path[OPR_PATH_MAX];
	snprintf(path, sizeof path, "%s/pipeline.json", dir); /* fits: load_json joined it */
	struct col_jr r = {path, err, 0, ""};
	json_t *blocks = col_jr_arr(&r, pj, "blocks");
	if (!r.rc && (int)json_array_size(blocks) != run->nblocks)
		r.rc = opr_error_set(err, OPR_EINPUT, "%s: %zu blocks, but the profile has %d", path,
				     json_array_size(blocks), run->nblocks);
	size_t mark = col_jr_enter(&r, "blocks");
	for (int i = 0; i < run->nblocks && !r.rc; i++) {
		json_t *b = json_array_get(blocks, (size_t)i);
		size_t m2 = col_jr_enter_i(&r, (size_t)i);
		for (int v = 0; v < 2 && !r.rc && !run->profile->imported[0]; v++) {
			const char *vn = col_variant_name(v);
			json_t *vj = col_jr_obj(&r, b, vn);
			size_t m3 = col_jr_enter(&r, vn);
			if (!r.rc)
				col_pipe_from_json(&r, vj, &run->blocks[i].v[v]);
			col_jr_leave(&r, m3);
		}
		col_jr_leave(&r, m2);
	}
	col_jr_leave(&r, mark);
	json_decref(pj);
	return r.rc;
}

int col_archive_load(const char *dir, struct col_run **out, struct opr_error *err)
{
	struct stat st;
	if (stat(dir, &st))
		return opr_error_set(err, errno == ENOENT || errno == ENOTDIR ? OPR_EINPUT : OPR_EIO,
				     "cannot read run archive '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return opr_error_set(err, OPR_EINPUT, "'%s' is not a run archive: not a directory", dir);
	struct col_run *run = calloc(1, sizeof *run);
	json_t *m = NULL;
	char path[OPR_PATH_MAX];
	size_t (*nsamples)[2] = calloc(COL_MAX_BLOCKS, sizeof *nsamples);
	if (!run || !nsamples) {
		free(run);
		free(nsamples);
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	int rc = verify(dir, &m, err);
	if (!rc)
		rc = opr_path_join(path, sizeof path, dir, "profile.yaml", err);
	if (!rc)
		rc = col_profile_load(path, dir, &run->profile, err);
	if (!rc)
		rc = opr_path_join(path, sizeof path, dir, "manifest.json", err);
	if (!rc)
		rc = load_manifest(m, path, run, nsamples, err);
	if (!rc)
		rc = load_samples(dir, run, nsamples, err);
	if (!rc)
		rc = load_rounds(dir, run, err);
	if (!rc)
		rc = load_pipeline(dir, run, err);
	json_decref(m);
	free(nsamples);
	if (rc) {
		col_run_free(run);
		return rc;
	}
	*out = run;
	return 0;
}
