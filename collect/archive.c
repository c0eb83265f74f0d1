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
 * JSON keys are sorted; counts and ns are integers. */
#include "collect.h"

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

static json_t *alt_json(enum ops_group g, const struct ops_plan_eval *e, double measured_ns)
{
	int bad = 0;
	json_t *o = json_pack("{s:o,s:b,s:b,s:s,s:o,s:I,s:I,s:I,s:o}", "plan", plan_json(g, &e->plan),
			      "fits", e->fits, "rejected", e->rejected, "reason", e->reason, "model_ns",
			      jreal(e->model_ns), "launches", (json_int_t)e->launches,
			      "global_bytes", (json_int_t)e->global_bytes, "footprint_bytes",
			      (json_int_t)e->footprint_bytes, "reuse_ratio", jreal(e->reuse_ratio));
	put(&bad, o, "measured_ns", jreal(measured_ns));
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
						     vr->alt_measured_ns ? vr->alt_measured_ns[i] : NAN));
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
	return done(bad, o);
}

static json_t *envelope_json(const struct ops_envelope *e, const char *source)
{
	json_t *tops = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "fp32", jreal(e->tops[OPS_F32]),
				 "fp16", jreal(e->tops[OPS_F16]), "bf16", jreal(e->tops[OPS_BF16]),
				 "int8", jreal(e->tops[OPS_S8]), "vector",
				 e->vector_tops > 0 ? jreal(e->vector_tops) : json_null(),
				 "vector_half",
				 e->vector_half_tops > 0 ? jreal(e->vector_half_tops) : json_null());
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:o,s:o,s:o,s:o,s:o,s:I,s:o,s:i,s:b,s:o,s:o}",
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
}

static json_t *host_json(const struct col_host *h)
{
	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "cpu_model",
			 h->cpu_model, "cpus_online", h->cpus_online, "caches", h->caches,
			 "kernel", h->kernel, "governor", h->governor, "compiler", h->compiler,
			 "cflags", h->cflags, "versions", h->versions, "tool_version",
			 h->tool_version, "git_revision", h->git_revision, "hostname",
			 h->hostname, "mem_total_bytes", (json_int_t)h->mem_total_bytes);
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
	put(&bad, m, "profile",
			    json_pack("{s:s,s:s,s:s,s:I,s:s,s:{s:s,s:s,s:s}}", "path", run->profile_origin,
				      "sha256", digest, "name", p->name, "seed",
				      (json_int_t)p->seed, "model_revision", p->model_revision,
				      "metadata", "compiler", p->compiler, "runtime", p->runtime,
				      "firmware", p->firmware));
	json_t *env = envelope_json(&p->envelope, p->envelope_source);
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
		for (int v = 0; v < 2; v++)
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

static int write_json(const char *dir, const char *name, json_t *j, struct opr_error *err)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *s = j ? json_dumps(j, JSON_FLAGS) : NULL;
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "cannot serialise %s", name);
	size_t n = strlen(s);
	int rc = col_write_file(path, s, n, err);
	if (!rc)
		rc = 0;
	free(s);
	return rc;
}

static int write_text(const char *dir, const char *name, struct opr_buf *t, struct opr_error *err)
{
	char path[1024];
	if (t->oom)
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing %s", name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return col_write_file(path, t->p ? t->p : "", t->len, err);
}

static int copy_envelope(const struct col_profile *p, const char *dir, struct opr_error *err)
{
	if (!strcmp(p->envelope_source, "inline"))
		return 0;
	char *data;
	size_t len;
	int rc = col_read_file(p->envelope_source, &data, &len, 1u << 20, err);
	if (rc)
		return rc;
	char src[512], path[1024];
	snprintf(src, sizeof src, "%s", p->envelope_source);
	snprintf(path, sizeof path, "%s/%s", dir, basename(src));
	rc = col_write_file(path, data, len, err);
	free(data);
	return rc;
}

static int write_contents(const struct col_run *run, const char *tmp, struct opr_error *err)
{
	char path[1024];
	int rc;
	json_t *m = manifest_json(run);
	rc = write_json(tmp, "manifest.json", m, err);
	json_decref(m);
	if (rc)
		return rc;
	json_t *pj = pipeline_json(run);
	rc = write_json(tmp, "pipeline.json", pj, err);
	json_decref(pj);
	if (rc)
		return rc;
	struct opr_buf t = {0};
	samples_csv(run, &t);
	rc = write_text(tmp, "samples.csv", &t, err);
	opr_buf_release(&t);
	if (rc)
		return rc;
	struct opr_buf c = {0};
	counters_csv(run, &c);
	rc = write_text(tmp, "counters.csv", &c, err);
	opr_buf_release(&c);
	if (rc)
		return rc;
	struct opr_buf r = {0};
	rounds_csv(run, &r);
	rc = write_text(tmp, "rounds.csv", &r, err);
	opr_buf_release(&r);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/profile.yaml", tmp);
	if ((rc = col_write_file(path, run->profile->text, run->profile->text_len, err)))
		return rc;
	if ((rc = copy_envelope(run->profile, tmp, err)))
		return rc;
	return col_fsync_dir(tmp, err);
}

int col_archive_write(const struct col_run *run, const char *dir, int force,
		      struct opr_error *err)
{
	struct stat st;
	if (!stat(dir, &st) && !force)
		return opr_error_set(err, OPR_EEXIST, "'%s' exists; pass --force to replace it", dir);
	char tmp[1024], parent[1024], old[1100];
	snprintf(parent, sizeof parent, "%s", dir);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = '\0';
	else if (slash)
		parent[1] = '\0';
	else
		snprintf(parent, sizeof parent, ".");
	if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dir, (long)getpid()) >= (int)sizeof tmp)
		return opr_error_set(err, OPR_EIO, "path too long: '%s'", dir);
	col_rmtree(tmp);
	int rc = col_mkdirs(tmp, err);
	if (!rc)
		rc = write_contents(run, tmp, err);
	if (rc) {
		col_rmtree(tmp);
		return rc;
	}
	/* replace an old archive only once the new one is complete */
	snprintf(old, sizeof old, "%s.old-%ld", dir, (long)getpid());
	int had_old = !stat(dir, &st);
	if (had_old && rename(dir, old)) {
		col_rmtree(tmp);
		return opr_error_set(err, OPR_EIO, "cannot move '%s' aside: %s", dir, strerror(errno));
	}
	if (rename(tmp, dir)) {
		int e = errno;
		col_rmtree(tmp);
		/* put the old archive back; if that fails too, say where it is */
		if (had_old && rename(old, dir))
			return opr_error_set(err, OPR_EIO, "cannot rename into '%s': %s; the previous archive "
					     "is left at '%s'", dir, strerror(e), old);
		return opr_error_set(err, OPR_EIO, "cannot rename into '%s': %s", dir, strerror(e));
	}
	if (had_old)
		col_rmtree(old);
	return col_fsync_dir(parent, err);
}

/* ---- loading ---------------------------------------------------------------- */

static int load_json(const char *dir, const char *name, json_t **out, struct opr_error *err)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *data;
	size_t len;
	int rc = col_read_file(path, &data, &len, MAX_ARCHIVE_FILE, err);
	if (rc)
		return rc;
	json_error_t je;
	*out = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	free(data);
	if (!*out)
		return opr_error_at(err, OPR_EINPUT, path, je.line, je.column, "%s", je.text);
	return 0;
}

static double jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int64_t jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static void jstr(json_t *o, const char *key, char *buf, size_t len)
{
	json_t *v = json_object_get(o, key);
	snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static void load_plan(json_t *j, enum ops_group g, struct ops_plan *p)
{
	memset(p, 0, sizeof *p);
	p->fused = json_is_true(json_object_get(j, "fused"));
	p->strategy = (enum ops_strategy)jint(j, "strategy");
	p->split_k = (int)jint(j, "split_k");
	p->double_buffer = json_is_true(json_object_get(j, "double_buffer"));
	json_t *params = json_object_get(j, "params");
	const char *const *names = ops_plan_params(g);
	for (int i = 0; names && names[i] && i < OPS_PLAN_MAX_PARAMS; i++)
		p->p[i] = jint(params, names[i]);
}

static void load_counters(json_t *j, struct ops_counters *c)
{
	memset(c, 0, sizeof *c);
	json_t *bytes = json_object_get(j, "dma_bytes");
	for (int s = 0; s < OPS_NSPACES; s++)
		for (int d = 0; d < OPS_NSPACES; d++) {
			char k[32];
			snprintf(k, sizeof k, "%s->%s", ops_space_name(s), ops_space_name(d));
			c->bytes[s][d] = (uint64_t)jint(bytes, k);
		}
	c->compute_read_bytes = (uint64_t)jint(j, "compute_read_bytes");
	c->compute_write_bytes = (uint64_t)jint(j, "compute_write_bytes");
	c->transfers = (uint64_t)jint(j, "transfers");
	c->splits = (uint64_t)jint(j, "splits");
	c->launches = (uint64_t)jint(j, "launches");
	c->tiles = (uint64_t)jint(j, "tiles");
	c->fallbacks = (uint64_t)jint(j, "fallbacks");
	c->elem_ops = (uint64_t)jint(j, "elem_ops");
	c->peak_shared_bytes = (uint64_t)jint(j, "peak_shared_bytes");
	json_t *macs = json_object_get(j, "macs");
	for (int t = 0; t < OPS_NDTYPES; t++)
		c->macs[t] = (uint64_t)jint(macs, ops_dtype_name(t));
	json_t *cw = json_object_get(j, "core_work");
	for (size_t i = 0; i < json_array_size(cw) && i < OPS_MAX_CORES; i++)
		c->core_work[i] = (uint64_t)json_integer_value(json_array_get(cw, i));
}

static int load_variant(json_t *j, const struct col_run *run, enum ops_group g,
			struct col_variant_run *vr, struct opr_error *err)
{
	load_plan(json_object_get(j, "plan"), g, &vr->plan);
	vr->plan_was_auto = json_is_true(json_object_get(j, "plan_was_auto"));
	vr->fell_back = json_is_true(json_object_get(j, "fell_back"));
	jstr(j, "plan_note", vr->plan_note, sizeof vr->plan_note);
	json_t *alts = json_object_get(j, "alternatives");
	vr->nalts = json_array_size(alts);
	vr->alts = calloc(vr->nalts ? vr->nalts : 1, sizeof *vr->alts);
	vr->alt_measured_ns = calloc(vr->nalts ? vr->nalts : 1, sizeof *vr->alt_measured_ns);
	json_t *ls = json_object_get(j, "launches");
	vr->nlaunches = json_array_size(ls);
	vr->launches = calloc(vr->nlaunches ? vr->nlaunches : 1, sizeof *vr->launches);
	vr->event_totals = calloc(run->nevents ? run->nevents : 1, sizeof(long long));
	if (!vr->alts || !vr->alt_measured_ns || !vr->launches || !vr->event_totals)
		return opr_error_set(err, OPR_ENOMEM, "out of memory loading the archive");
	for (size_t i = 0; i < vr->nalts; i++) {
		json_t *a = json_array_get(alts, i);
		struct ops_plan_eval *e = &vr->alts[i];
		load_plan(json_object_get(a, "plan"), g, &e->plan);
		e->rejected = json_is_true(json_object_get(a, "rejected"));
		e->fits = json_is_true(json_object_get(a, "fits"));
		jstr(a, "reason", e->reason, sizeof e->reason);
		e->model_ns = jnum(a, "model_ns");
		e->launches = (uint64_t)jint(a, "launches");
		e->global_bytes = (uint64_t)jint(a, "global_bytes");
		e->footprint_bytes = (uint64_t)jint(a, "footprint_bytes");
		e->reuse_ratio = jnum(a, "reuse_ratio");
		/* absent in archives written before model validation: not measured */
		json_t *mv = json_object_get(a, "measured_ns");
		vr->alt_measured_ns[i] = json_is_number(mv) ? json_number_value(mv) : NAN;
		json_t *ac = json_object_get(a, "counters");
		if (json_is_object(ac))
			load_counters(ac, &e->counters);
	}
	for (size_t i = 0; i < vr->nlaunches; i++) {
		json_t *l = json_array_get(ls, i);
		struct ops_launch_rec *r = &vr->launches[i];
		jstr(l, "name", r->name, sizeof r->name);
		r->cores_used = (int)jint(l, "cores_used");
		r->double_buffer = json_is_true(json_object_get(l, "double_buffer"));
		/* (absent in archives written before it: false, as they ran) */
		r->one_pass = json_is_true(json_object_get(l, "one_pass"));
		r->global_bytes = (uint64_t)jint(l, "global_bytes");
		r->shared_bytes = (uint64_t)jint(l, "shared_bytes");
		r->transfers = (uint64_t)jint(l, "transfers");
		r->work = (uint64_t)jint(l, "work");
		r->overhead_ns = jnum(l, "overhead_ns");
		r->compute_ns = jnum(l, "compute_ns");
		r->shared_ns = jnum(l, "shared_ns");
		/* (absent from archives before the phased model: 0) */
		r->shared_dma_ns = json_is_number(json_object_get(l, "shared_dma_ns"))
					   ? jnum(l, "shared_dma_ns")
					   : 0.0;
		r->global_ns = jnum(l, "global_ns");
		r->dma_ns = jnum(l, "dma_ns");
		r->imbalance = jnum(l, "imbalance");
		r->model_ns = jnum(l, "model_ns");
	}
	load_counters(json_object_get(j, "counters"), &vr->counters);
	vr->model_ns = jnum(j, "model_ns");
	json_t *q = json_object_get(j, "quality");
	vr->quality.rel_l2 = jnum(q, "rel_l2");
	vr->quality.max_abs_lsb = jnum(q, "max_abs_lsb");
	vr->quality.exact_int = json_is_true(json_object_get(q, "exact_int"));
	jstr(j, "output_sha256", vr->output_sha256, sizeof vr->output_sha256);
	jstr(j, "input_sha256", vr->input_sha256, sizeof vr->input_sha256);
	vr->events_per_sample = json_is_true(json_object_get(j, "events_per_sample"));
	vr->repro_counters_equal = json_is_true(json_object_get(j, "repro_counters_equal"));
	vr->repro_output_stable = json_is_true(json_object_get(j, "repro_output_stable"));
	json_t *ev = json_object_get(j, "event_totals");
	for (size_t e = 0; e < run->nevents; e++) {
		json_t *v = json_object_get(ev, run->events[e].name);
		vr->event_totals[e] = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
	}
	json_t *hc = json_object_get(j, "host_counter_totals");
	for (int c = 0; c < COL_NHC; c++) {
		json_t *v = json_object_get(hc, col_hc_name(c));
		vr->hc_totals[c] = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
	}
	return 0;
}

static int load_manifest(json_t *m, struct col_run *run, const char *path, struct opr_error *err)
{
	if (jint(m, "archive_version") != COL_ARCHIVE_VERSION)
		return opr_error_set(err, OPR_EINPUT, "%s: archive_version %lld is not %d", path,
				     (long long)jint(m, "archive_version"), COL_ARCHIVE_VERSION);
	jstr(m, "started_utc", run->started_utc, sizeof run->started_utc);
	jstr(json_object_get(m, "profile"), "path", run->profile_origin, sizeof run->profile_origin);
	/* the envelope as the run named it, not the archive's copy */
	json_t *env = json_object_get(m, "envelope");
	if (json_is_string(json_object_get(env, "source")))
		jstr(env, "source", run->profile->envelope_source, sizeof run->profile->envelope_source);
	json_t *h = json_object_get(m, "host");
	struct col_host *ho = &run->host;
	jstr(h, "cpu_model", ho->cpu_model, sizeof ho->cpu_model);
	ho->cpus_online = (int)jint(h, "cpus_online");
	jstr(h, "caches", ho->caches, sizeof ho->caches);
	jstr(h, "kernel", ho->kernel, sizeof ho->kernel);
	jstr(h, "governor", ho->governor, sizeof ho->governor);
	jstr(h, "compiler", ho->compiler, sizeof ho->compiler);
	jstr(h, "cflags", ho->cflags, sizeof ho->cflags);
	jstr(h, "versions", ho->versions, sizeof ho->versions);
	jstr(h, "tool_version", ho->tool_version, sizeof ho->tool_version);
	jstr(h, "git_revision", ho->git_revision, sizeof ho->git_revision);
	jstr(h, "hostname", ho->hostname, sizeof ho->hostname);
	ho->mem_total_bytes = (uint64_t)jint(h, "mem_total_bytes");
	json_t *ev = json_object_get(m, "events");
	run->nevents = json_array_size(ev) < COL_MAX_RUN_EVENTS ? json_array_size(ev)
								: COL_MAX_RUN_EVENTS;
	for (size_t i = 0; i < run->nevents; i++) {
		json_t *e = json_array_get(ev, i);
		jstr(e, "name", run->events[i].name, sizeof run->events[i].name);
		jstr(e, "component", run->events[i].component, sizeof run->events[i].component);
		run->events[i].available = json_is_true(json_object_get(e, "available"));
		jstr(e, "reason", run->events[i].reason, sizeof run->events[i].reason);
	}
	/* absent from archives written before host counters were recorded */
	json_t *hc = json_object_get(m, "host_counters");
	run->hc_recorded = json_is_array(hc);
	for (int c = 0; c < COL_NHC; c++) {
		struct col_hc_info *hi = &run->hc[c];
		json_t *e = NULL;
		for (size_t i = 0; i < json_array_size(hc) && !e; i++)
			if (json_is_string(json_object_get(json_array_get(hc, i), "name")) &&
			    !strcmp(json_string_value(json_object_get(json_array_get(hc, i), "name")),
				    col_hc_name(c)))
				e = json_array_get(hc, i);
		snprintf(hi->name, sizeof hi->name, "%s", col_hc_name(c));
		if (!e) {
			snprintf(hi->reason, sizeof hi->reason, "not recorded: the archive predates "
				 "host software counters");
			continue;
		}
		jstr(e, "source", hi->source, sizeof hi->source);
		hi->available = json_is_true(json_object_get(e, "available"));
		jstr(e, "reason", hi->reason, sizeof hi->reason);
	}
	jstr(m, "papi_status", run->papi_status, sizeof run->papi_status);
	json_t *o = json_object_get(m, "overhead");
	run->clock_read_ns = jnum(o, "clock_read_ns");
	run->papi_read_ns = jnum(o, "papi_read_ns");
	run->sampling_seconds = jnum(m, "sampling_seconds");
	json_t *blocks = json_object_get(m, "blocks");
	if ((int)json_array_size(blocks) != run->profile->nblocks)
		return opr_error_set(err, OPR_EINPUT, "%s: %zu blocks, but the profile has %d", path,
				     json_array_size(blocks), run->profile->nblocks);
	for (int i = 0; i < run->profile->nblocks; i++) {
		json_t *b = json_array_get(blocks, (size_t)i);
		struct col_block_run *br = &run->blocks[i];
		br->block = &run->profile->blocks[i];
		run->nblocks = i + 1;
		jstr(b, "stop_reason", br->stop_reason, sizeof br->stop_reason);
		br->nrounds = (int)jint(b, "rounds");
		br->reps_per_round = (int)jint(b, "reps_per_round");
		json_t *vs = json_object_get(b, "variants");
		for (int v = 0; v < 2; v++) {
			int rc = load_variant(json_object_get(vs, col_variant_name(v)), run,
					      br->block->work.group, &br->v[v], err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int find_block(const struct col_run *run, const char *name)
{
	for (int i = 0; i < run->nblocks; i++)
		if (!strcmp(run->blocks[i].block->name, name))
			return i;
	return -1;
}

static int load_samples(const char *dir, struct col_run *run, struct opr_error *err)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/samples.csv", dir);
	char *data;
	size_t len;
	int rc = col_read_file(path, &data, &len, MAX_ARCHIVE_FILE, err);
	if (rc)
		return rc;
	size_t cap[COL_MAX_BLOCKS][2] = {{0}};
	int line = 1;
	char *save = NULL;
	char *l = strtok_r(data, "\n", &save); /* header */
	while (!rc && (l = strtok_r(NULL, "\n", &save))) {
		line++;
		char block[COL_NAME_MAX + 1], variant[16];
		int round;
		long long ns;
		if (sscanf(l, "%64[^,],%15[^,],%d,%lld", block, variant, &round, &ns) != 4 || ns < 0) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1, "malformed sample row");
			break;
		}
		int b = find_block(run, block);
		int v = !strcmp(variant, "baseline") ? 0 : !strcmp(variant, "candidate") ? 1 : -1;
		if (b < 0 || v < 0) {
			rc = opr_error_at(err, OPR_EINPUT, path, line, 1, "unknown block or variant '%s,%s'",
					  block, variant);
			break;
		}
		struct col_variant_run *vr = &run->blocks[b].v[v];
		if (vr->nsamples == cap[b][v]) {
			size_t nc = cap[b][v] ? cap[b][v] * 2 : 256;
			int64_t *s = realloc(vr->samples_ns, nc * sizeof *s);
			int32_t *r = s ? realloc(vr->round, nc * sizeof *r) : NULL;
			if (s)
				vr->samples_ns = s;
			if (!r) {
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory loading samples");
				break;
			}
			vr->round = r;
			cap[b][v] = nc;
		}
		vr->samples_ns[vr->nsamples] = ns;
		vr->round[vr->nsamples] = round;
		vr->nsamples++;
	}
	free(data);
	return rc;
}

/* One integer field of a CSV row, the whole field: 0, or -1 when it is not one. */
static int csv_int(const char **p, long long *out, int *empty)
{
	const char *s = *p;
	char *end;
	*empty = *s == ',' || *s == '\0';
	if (*empty) {
		*out = 0;
	} else {
		errno = 0;
		*out = strtoll(s, &end, 10);
		if (errno || end == s || (*end != ',' && *end != '\0'))
			return -1;
		s = end;
	}
	if (*s == ',')
		s++;
	*p = s;
	return 0;
}

/* rounds.csv: each batch's host counters (hostcount.h), absent from archives
 * written before them (run->hc_recorded is 0 then). */
static int load_rounds(const char *dir, struct col_run *run, struct opr_error *err)
{
	char path[1024];
	char *data, *save = NULL;
	size_t len;
	if (!run->hc_recorded)
		return 0;
	snprintf(path, sizeof path, "%s/rounds.csv", dir);
	int rc = col_read_file(path, &data, &len, MAX_ARCHIVE_FILE, err);
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
		int b = find_block(run, block);
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
		if (vr->nhc_rounds == vr->hc_rounds_cap) {
			size_t nc = vr->hc_rounds_cap ? 2 * vr->hc_rounds_cap : 64;
			long long (*r)[COL_NHC] = realloc(vr->hc_rounds, nc * sizeof *r);
			if (!r) {
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory loading rounds");
				break;
			}
			vr->hc_rounds = r;
			vr->hc_rounds_cap = nc;
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
	json_t *blocks = json_object_get(pj, "blocks");
	for (int i = 0; i < run->nblocks && !rc; i++) {
		json_t *b = json_array_get(blocks, (size_t)i);
		for (int v = 0; v < 2 && !rc; v++) {
			struct col_variant_run *vr = &run->blocks[i].v[v];
			rc = col_pipe_from_json(json_object_get(b, col_variant_name(v)), vr, err);
		}
	}
	json_decref(pj);
	return rc;
}

int col_archive_load(const char *dir, struct col_run **out, struct opr_error *err)
{
	struct col_run *run = calloc(1, sizeof *run);
	json_t *m = NULL;
	char path[1024];
	if (!run)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	snprintf(path, sizeof path, "%s/profile.yaml", dir);
	int rc = col_profile_load(path, dir, &run->profile, err);
	if (!rc)
		rc = load_json(dir, "manifest.json", &m, err);
	if (!rc) {
		snprintf(path, sizeof path, "%s/manifest.json", dir);
		rc = load_manifest(m, run, path, err);
	}
	if (!rc)
		rc = load_samples(dir, run, err);
	if (!rc)
		rc = load_rounds(dir, run, err);
	if (!rc)
		rc = load_pipeline(dir, run, err);
	json_decref(m);
	if (rc) {
		col_run_free(run);
		return rc;
	}
	*out = run;
	return 0;
}
