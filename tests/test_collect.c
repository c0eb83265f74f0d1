/* tests/test_collect.c: the collector on fixtures/profiles/quick.yaml with a
 * small budget: determinism of everything but host timings for a seed, what a
 * different seed changes, the archive round trip (down to identical findings),
 * the archive's refusal to overwrite, PAPI events with and without PAPI, and the
 * host software counters that come without it (per batch, tied to tail samples). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../collect/collect.h"
#include "skip.h"

#define QUICK "fixtures/profiles/quick.yaml"
#define ENVELOPES "fixtures/envelopes"
#define BUDGET 0.2

/* The two runs of the same seed without PAPI, shared by several tests. */
static struct col_run *run_a, *run_b;
static char tmpdir[64];

static struct col_run *collect(const char *profile, const char *envelope_dir, int no_papi)
{
	struct col_options o = {profile, envelope_dir, BUDGET, 0, no_papi};
	struct opr_error err = {0};
	struct col_run *run = NULL;
	if (col_collect(&o, &run, &err))
		fail_msg("col_collect %s: %s", profile, err.msg);
	assert_non_null(run);
	return run;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/opr-collect-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	struct col_options o = {QUICK, NULL, BUDGET, 0, 1};
	struct opr_error err = {0};
	if (col_collect(&o, &run_a, &err) || col_collect(&o, &run_b, &err)) {
		print_error("col_collect %s: %s\n", QUICK, err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	col_run_free(run_a);
	col_run_free(run_b);
	opr_rmtree(tmpdir);
	return 0;
}

/* ---- comparisons of the deterministic parts ---- */

static void same_counters(const struct ops_counters *x, const struct ops_counters *y, int cores)
{
	for (int s = 0; s < OPS_NSPACES; s++)
		for (int d = 0; d < OPS_NSPACES; d++)
			assert_int_equal(x->bytes[s][d], y->bytes[s][d]);
	assert_int_equal(x->compute_read_bytes, y->compute_read_bytes);
	assert_int_equal(x->compute_write_bytes, y->compute_write_bytes);
	assert_int_equal(x->transfers, y->transfers);
	assert_int_equal(x->splits, y->splits);
	assert_int_equal(x->launches, y->launches);
	assert_int_equal(x->tiles, y->tiles);
	assert_int_equal(x->fallbacks, y->fallbacks);
	for (int t = 0; t < OPS_NDTYPES; t++)
		assert_int_equal(x->macs[t], y->macs[t]);
	assert_int_equal(x->elem_ops, y->elem_ops);
	assert_int_equal(x->peak_shared_bytes, y->peak_shared_bytes);
	for (int c = 0; c < cores && c < OPS_MAX_CORES; c++)
		assert_int_equal(x->core_work[c], y->core_work[c]);
}

/* Doubles equal bit for bit, or both NaN. */
static void same_double(double x, double y)
{
	if (isnan(x) && isnan(y))
		return;
	if (memcmp(&x, &y, sizeof x))
		fail_msg("%.17g != %.17g", x, y);
}

static void same_launches(const struct col_variant_run *x, const struct col_variant_run *y)
{
	assert_int_equal(x->nlaunches, y->nlaunches);
	for (size_t i = 0; i < x->nlaunches; i++) {
		const struct ops_launch_rec *a = &x->launches[i], *b = &y->launches[i];
		assert_string_equal(a->name, b->name);
		assert_int_equal(a->cores_used, b->cores_used);
		assert_int_equal(a->double_buffer, b->double_buffer);
		assert_int_equal(a->global_bytes, b->global_bytes);
		assert_int_equal(a->shared_bytes, b->shared_bytes);
		assert_int_equal(a->transfers, b->transfers);
		assert_int_equal(a->work, b->work);
		same_double(a->overhead_ns, b->overhead_ns);
		same_double(a->compute_ns, b->compute_ns);
		same_double(a->shared_ns, b->shared_ns);
		same_double(a->global_ns, b->global_ns);
		same_double(a->dma_ns, b->dma_ns);
		same_double(a->imbalance, b->imbalance);
		same_double(a->model_ns, b->model_ns);
	}
	same_double(x->model_ns, y->model_ns);
}

/* The summary of the pipeline simulation (what the archive keeps). */
static void same_pipe_summary(const struct col_variant_run *x, const struct col_variant_run *y)
{
	const struct col_pipe_result *a = &x->pipe, *b = &y->pipe;
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->jobs, b->jobs);
	assert_int_equal(a->streams, b->streams);
	assert_int_equal(a->cores, b->cores);
	same_double(a->p50_ns, b->p50_ns);
	same_double(a->p95_ns, b->p95_ns);
	same_double(a->p99_ns, b->p99_ns);
	same_double(a->max_ns, b->max_ns);
	same_double(a->mean_ns, b->mean_ns);
	same_double(a->wait_p50_ns, b->wait_p50_ns);
	same_double(a->wait_p95_ns, b->wait_p95_ns);
	same_double(a->wait_p99_ns, b->wait_p99_ns);
	same_double(a->throughput_rps, b->throughput_rps);
	same_double(a->jain_cores, b->jain_cores);
	same_double(a->jain_streams, b->jain_streams);
	same_double(a->mean_batch, b->mean_batch);
	same_double(a->bw_util, b->bw_util);
	same_double(a->bytes, b->bytes);
	assert_int_equal(a->max_concurrent_bursts, b->max_concurrent_bursts);
	for (int c = 0; c < a->cores && c < COL_PIPE_MAX_CORES; c++)
		same_double(a->core_util[c], b->core_util[c]);
	assert_int_equal(a->hist_bins, b->hist_bins);
	assert_non_null(a->hist_counts);
	assert_non_null(b->hist_counts);
	for (size_t i = 0; i < a->hist_bins; i++) {
		assert_int_equal(a->hist_counts[i], b->hist_counts[i]);
		same_double(a->hist_edges_ns[i], b->hist_edges_ns[i]);
	}
	same_double(a->hist_edges_ns[a->hist_bins], b->hist_edges_ns[b->hist_bins]);
	same_double(x->pipe_p95_lo, y->pipe_p95_lo);
	same_double(x->pipe_p95_hi, y->pipe_p95_hi);
	same_double(x->pipe_p99_lo, y->pipe_p99_lo);
	same_double(x->pipe_p99_hi, y->pipe_p99_hi);
	same_double(x->pipe_free_p95_ns, y->pipe_free_p95_ns);
	same_double(x->pipe_free_p99_ns, y->pipe_free_p99_ns);
	same_double(x->pipe_hidden_p95_ns, y->pipe_hidden_p95_ns);
	assert_int_equal(x->nsweep, y->nsweep);
	for (size_t i = 0; i < x->nsweep; i++) {
		assert_int_equal(x->sweep[i].batch, y->sweep[i].batch);
		same_double(x->sweep[i].p50_ns, y->sweep[i].p50_ns);
		same_double(x->sweep[i].p95_ns, y->sweep[i].p95_ns);
		same_double(x->sweep[i].p99_ns, y->sweep[i].p99_ns);
		same_double(x->sweep[i].throughput_rps, y->sweep[i].throughput_rps);
		same_double(x->sweep[i].wait_mean_ns, y->sweep[i].wait_mean_ns);
	}
}

/* Everything of a variant but its host samples, event totals and pipeline. */
static void same_variant(const struct col_variant_run *x, const struct col_variant_run *y, int cores)
{
	assert_memory_equal(&x->plan, &y->plan, sizeof x->plan);
	assert_int_equal(x->plan_was_auto, y->plan_was_auto);
	assert_int_equal(x->fell_back, y->fell_back);
	assert_string_equal(x->plan_note, y->plan_note);
	assert_int_equal(x->nalts, y->nalts);
	for (size_t i = 0; i < x->nalts; i++) {
		const struct ops_plan_eval *a = &x->alts[i], *b = &y->alts[i];
		assert_memory_equal(&a->plan, &b->plan, sizeof a->plan);
		assert_int_equal(a->rejected, b->rejected);
		assert_string_equal(a->reason, b->reason);
		same_double(a->model_ns, b->model_ns);
		assert_int_equal(a->launches, b->launches);
		assert_int_equal(a->global_bytes, b->global_bytes);
		assert_int_equal(a->footprint_bytes, b->footprint_bytes);
		same_double(a->reuse_ratio, b->reuse_ratio);
	}
	same_counters(&x->counters, &y->counters, cores);
	same_launches(x, y);
	same_double(x->quality.rel_l2, y->quality.rel_l2);
	same_double(x->quality.max_abs_lsb, y->quality.max_abs_lsb);
	assert_int_equal(x->quality.exact_int, y->quality.exact_int);
	assert_string_equal(x->input_sha256, y->input_sha256);
	assert_string_equal(x->output_sha256, y->output_sha256);
	assert_int_equal(x->repro_counters_equal, y->repro_counters_equal);
	assert_int_equal(x->repro_output_stable, y->repro_output_stable);
}

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (int i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return 0;
	return 1;
}

/* ---- the same seed twice ---- */

static void test_same_seed(void **state)
{
	(void)state;
	int cores = run_a->profile->envelope.cores;
	assert_int_equal(run_a->nblocks, run_a->profile->nblocks);
	assert_int_equal(run_a->nblocks, run_b->nblocks);
	assert_true(run_a->nblocks >= 5);
	for (int b = 0; b < run_a->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *x = &run_a->blocks[b].v[v], *y = &run_b->blocks[b].v[v];
			/* the run did something real */
			assert_true(is_hex64(x->input_sha256));
			assert_true(is_hex64(x->output_sha256));
			assert_true(x->counters.launches > 0);
			assert_true(x->nlaunches == x->counters.launches);
			assert_true(x->model_ns > 0);
			assert_true(x->nsamples >= 1);
			assert_int_equal(x->pipe.n, run_a->blocks[b].block->traffic.requests);
			assert_true(x->pipe.p95_ns > 0 && x->pipe.p95_ns <= x->pipe.p99_ns);
			assert_true(x->repro_counters_equal && x->repro_output_stable);
			same_variant(x, y, cores);
			same_pipe_summary(x, y);
			/* the full latency vectors too, not only their quantiles */
			assert_non_null(x->pipe.latency_ns);
			assert_memory_equal(x->pipe.latency_ns, y->pipe.latency_ns,
					    (size_t)x->pipe.n * sizeof *x->pipe.latency_ns);
		}
	/* both variants of a block run on the same inputs */
	for (int b = 0; b < run_a->nblocks; b++)
		assert_string_equal(run_a->blocks[b].v[0].input_sha256, run_a->blocks[b].v[1].input_sha256);
}

/* ---- another seed ---- */

static void test_other_seed(void **state)
{
	(void)state;
	char *text;
	size_t len;
	struct opr_error err = {0};
	assert_int_equal(opr_read_file(QUICK, &text, &len, 1u << 20, &err), 0);
	char *seed = strstr(text, "\nseed: 7\n");
	assert_non_null(seed);
	seed[7] = '9';
	char path[128];
	snprintf(path, sizeof path, "%s/quick-seed9.yaml", tmpdir);
	assert_int_equal(opr_write_file(path, text, len, &err), 0);
	free(text);
	struct col_run *r = collect(path, ENVELOPES, 1);
	assert_int_equal(r->profile->seed, 9);
	assert_int_equal(r->nblocks, run_a->nblocks);
	for (int b = 0; b < r->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *x = &run_a->blocks[b].v[v], *y = &r->blocks[b].v[v];
			assert_string_not_equal(x->input_sha256, y->input_sha256);
			assert_string_not_equal(x->output_sha256, y->output_sha256);
			same_counters(&x->counters, &y->counters, r->profile->envelope.cores);
			same_launches(x, y);
		}
	col_run_free(r);
}

/* ---- the archive ---- */

static char *read_all(const char *path, size_t *len)
{
	char *data = NULL;
	struct opr_error err = {0};
	if (opr_read_file(path, &data, len, 64u << 20, &err))
		fail_msg("%s", err.msg);
	return data;
}

static void findings_of(const struct col_run *run, const char *path)
{
	struct opr_error err = {0};
	struct ana_findings *f = NULL;
	if (ana_analyze(run, "archive", &f, &err) || ana_findings_write(f, path, &err))
		fail_msg("analyze: %s", err.msg);
	ana_findings_free(f);
}

static void test_archive_round_trip(void **state)
{
	(void)state;
	char dir[128];
	struct opr_error err = {0};
	struct col_run *r = NULL;
	snprintf(dir, sizeof dir, "%s/archive", tmpdir);
	assert_int_equal(col_archive_write(run_a, dir, &err), 0);
	if (col_archive_load(dir, &r, &err))
		fail_msg("col_archive_load: %s", err.msg);
	const struct col_profile *p = run_a->profile, *q = r->profile;
	assert_string_equal(p->name, q->name);
	assert_int_equal(p->seed, q->seed);
	assert_int_equal(p->text_len, q->text_len);
	assert_memory_equal(p->text, q->text, p->text_len);
	assert_string_equal(p->envelope.name, q->envelope.name);
	same_double(p->envelope.global_bw_gbps, q->envelope.global_bw_gbps);
	same_double(p->envelope.launch_overhead_us, q->envelope.launch_overhead_us);
	same_double(p->sla.p95_us, q->sla.p95_us);
	same_double(p->sla.max_regression, q->sla.max_regression);
	assert_string_equal(run_a->profile_origin, r->profile_origin);
	assert_string_equal(run_a->started_utc, r->started_utc);
	assert_string_equal(run_a->papi_status, r->papi_status);
	assert_string_equal(run_a->host.cpu_model, r->host.cpu_model);
	assert_int_equal(run_a->host.cpus_online, r->host.cpus_online);
	assert_int_equal(run_a->nevents, r->nevents);
	for (size_t e = 0; e < r->nevents; e++) {
		assert_string_equal(run_a->events[e].name, r->events[e].name);
		assert_int_equal(run_a->events[e].available, r->events[e].available);
		assert_string_equal(run_a->events[e].reason, r->events[e].reason);
	}
	assert_int_equal(r->hc_recorded, 1);
	for (int c = 0; c < COL_NHC; c++) {
		assert_string_equal(run_a->hc[c].name, r->hc[c].name);
		assert_string_equal(run_a->hc[c].source, r->hc[c].source);
		assert_int_equal(run_a->hc[c].available, r->hc[c].available);
		assert_string_equal(run_a->hc[c].reason, r->hc[c].reason);
	}
	for (int b = 0; b < r->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *a = &run_a->blocks[b].v[v], *c = &r->blocks[b].v[v];
			assert_int_equal(a->nhc_rounds, c->nhc_rounds);
			assert_int_equal(a->nhc_rounds, (size_t)run_a->blocks[b].nrounds);
			for (int k = 0; k < COL_NHC; k++)
				assert_int_equal(a->hc_totals[k], c->hc_totals[k]);
			for (size_t i = 0; i < a->nhc_rounds; i++)
				for (int k = 0; k < COL_NHC; k++)
					assert_int_equal(a->hc_rounds[i][k], run_a->hc[k].available
										     ? c->hc_rounds[i][k] : 0);
		}
	assert_int_equal(run_a->nblocks, r->nblocks);
	for (int b = 0; b < r->nblocks; b++) {
		const struct col_block_run *x = &run_a->blocks[b], *y = &r->blocks[b];
		assert_string_equal(x->block->name, y->block->name);
		assert_string_equal(x->stop_reason, y->stop_reason);
		assert_int_equal(x->nrounds, y->nrounds);
		assert_int_equal(x->reps_per_round, y->reps_per_round);
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *a = &x->v[v], *c = &y->v[v];
			same_variant(a, c, q->envelope.cores);
			same_pipe_summary(a, c);
			assert_int_equal(a->nsamples, c->nsamples);
			assert_memory_equal(a->samples_ns, c->samples_ns, a->nsamples * sizeof *a->samples_ns);
			assert_memory_equal(a->round, c->round, a->nsamples * sizeof *a->round);
			assert_int_equal(a->events_per_sample, c->events_per_sample);
		}
	}
	/* what analyze makes of the loaded run is what it makes of the live one */
	char fa[160], fb[160];
	size_t na, nb;
	snprintf(fa, sizeof fa, "%s/findings-live.json", tmpdir);
	snprintf(fb, sizeof fb, "%s/findings-loaded.json", tmpdir);
	findings_of(run_a, fa);
	findings_of(r, fb);
	char *sa = read_all(fa, &na), *sb = read_all(fb, &nb);
	if (na != nb || memcmp(sa, sb, na)) {
		char cmd[400];
		snprintf(cmd, sizeof cmd, "diff -u %s %s | head -40 >&2", fa, fb);
		if (system(cmd) == -1)
			fprintf(stderr, "cannot run diff\n");
		fail_msg("findings of the loaded archive differ from the live run's");
	}
	free(sa);
	free(sb);
	col_run_free(r);
}

/* Names in tmpdir that start with prefix. */
static int count_prefixed(const char *prefix)
{
	DIR *d = opendir(tmpdir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/* Writes run_a to dir the way `collect` does (opr_output around
 * col_archive_write). */
static int collect_into(const char *dir, int force, struct opr_error *err)
{
	struct opr_output o;
	int rc = opr_output_claim(&o, dir, OPR_OUT_DIR, COL_ARCHIVE_MARKER, force, err);
	if (!rc)
		rc = opr_output_open(&o, err);
	if (!rc)
		rc = col_archive_write(run_a, o.tmp, err);
	if (!rc)
		rc = opr_output_publish(&o, err);
	opr_output_release(&o);
	return rc;
}

static void test_archive_exists(void **state)
{
	(void)state;
	char dir[128], marker[160], manifest[160];
	struct opr_error err = {0};
	struct stat st;
	snprintf(dir, sizeof dir, "%s/existing", tmpdir);
	snprintf(marker, sizeof marker, "%s/marker", dir);
	snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
	assert_int_equal(opr_mkdirs(dir, &err), 0);
	assert_int_equal(opr_write_file(marker, "x", 1, &err), 0);
	/* refused without force, nothing touched */
	assert_int_equal(collect_into(dir, 0, &err), OPR_EEXIST);
	assert_int_equal(err.code, OPR_EEXIST);
	assert_non_null(strstr(err.msg, "exists"));
	assert_int_equal(stat(marker, &st), 0);
	assert_int_not_equal(stat(manifest, &st), 0);
	/* a folder that is not an archive is refused even with force */
	assert_int_equal(collect_into(dir, 1, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "not an opreview output"));
	assert_int_equal(stat(marker, &st), 0);
	/* an archive (it holds manifest.json) is replaced whole with force */
	assert_int_equal(opr_write_file(manifest, "{}", 2, &err), 0);
	if (collect_into(dir, 1, &err))
		fail_msg("%s", err.msg);
	assert_int_not_equal(stat(marker, &st), 0);
	assert_int_equal(stat(manifest, &st), 0);
	assert_int_equal(count_prefixed("existing."), 0); /* no .tmp-, .old- or lock left */
	struct col_run *r = NULL;
	assert_int_equal(col_archive_load(dir, &r, &err), 0);
	assert_int_equal(r->nblocks, run_a->nblocks);
	col_run_free(r);
	/* col_archive_write itself never writes into an existing folder */
	assert_int_equal(col_archive_write(run_a, dir, &err), OPR_EEXIST);
}

/* ---- PAPI events ---- */

static void test_no_papi_events(void **state)
{
	(void)state;
	assert_string_equal(run_a->papi_status, "disabled by --no-papi");
	assert_true(run_a->nevents >= 1);
	int task_clock = 0;
	for (size_t e = 0; e < run_a->nevents; e++) {
		const struct col_event *ev = &run_a->events[e];
		assert_true(ev->name[0] != '\0');
		assert_int_equal(ev->available, 0);
		assert_string_equal(ev->reason, "PAPI disabled by --no-papi");
		task_clock |= !strcmp(ev->name, "perf::TASK-CLOCK");
	}
	assert_true(task_clock);
}

/* Whether PAPI can count perf::TASK-CLOCK here, asked of PAPI itself (Debian's
 * PAPI 7.0 drops its whole perf_event component where libpfm4 finds no CPU PMU). */
static int papi_task_clock(char *why, size_t len)
{
	const char *names[1] = {"perf::TASK-CLOCK"};
	struct col_papi *p = NULL;
	struct opr_error err = {0};
	assert_int_equal(col_papi_open(names, 1, &p, &err), 0);
	const struct col_event *ev = col_papi_events(p, NULL);
	int ok = ev[0].available;
	snprintf(why, len, "perf::TASK-CLOCK is unavailable: %s", ev[0].reason);
	col_papi_close(p);
	return ok;
}

static void test_papi_on(void **state)
{
	(void)state;
	struct col_run *r = collect(QUICK, NULL, 0);
	char why[256];
	/* a host without a CPU PMU (this kind of VM) cannot count hardware presets */
	int no_pmu = !col_cpu_pmu_present(), has_clock = papi_task_clock(why, sizeof why);
	assert_string_equal(r->papi_status, "ok");
	int task_clock = -1, presets = 0;
	for (size_t e = 0; e < r->nevents; e++) {
		const struct col_event *ev = &r->events[e];
		if (!ev->available)
			assert_true(strlen(ev->reason) > 0);
		if (!strncmp(ev->name, "PAPI_", 5)) {
			presets++;
			if (no_pmu)
				assert_int_equal(ev->available, 0);
		}
		if (!strcmp(ev->name, "perf::TASK-CLOCK"))
			task_clock = (int)e;
	}
	assert_true(presets > 0);
	assert_true(task_clock >= 0);
	assert_int_equal(r->events[task_clock].available, has_clock);
	/* the simulated side does not depend on PAPI */
	for (int b = 0; b < r->nblocks; b++)
		for (int v = 0; v < 2; v++)
			same_variant(&run_a->blocks[b].v[v], &r->blocks[b].v[v], r->profile->envelope.cores);
	if (!has_clock) {
		/* the unavailable path: a reason, and no value in the archive */
		assert_true(strlen(r->events[task_clock].reason) > 0);
		col_run_free(r);
		SKIP_BECAUSE("%s", why);
	}
	for (int b = 0; b < r->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *vr = &r->blocks[b].v[v];
			assert_non_null(vr->event_totals);
			assert_true(vr->event_totals[task_clock] > 0);
		}
	col_run_free(r);
}

/* An independent probe: can perf_event_open count a software event here? */
static int raw_sw_countable(unsigned long long config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof a;
	a.config = config;
	a.disabled = 1;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The host counters count what they name: sleeps are voluntary switches, first
 * touches of fresh pages minor faults, a busy loop CPU time. */
static void test_host_counters(void **state)
{
	(void)state;
	struct col_hostcount *h = NULL;
	struct opr_error err = {0};
	long long v0[COL_NHC], v1[COL_NHC];
	assert_int_equal(col_hostcount_open(&h, &err), 0);
	const struct col_hc_info *hi = col_hostcount_info(h);
	for (int c = 0; c < COL_NHC; c++) {
		assert_string_equal(hi[c].name, col_hc_name(c));
		assert_true(hi[c].source[0] != '\0');
		assert_int_equal(hi[c].available, hi[c].reason[0] == '\0');
	}
	/* getrusage and the thread CPU clock exist on every Linux */
	for (int c = COL_HC_CSW_VOLUNTARY; c <= COL_HC_CPU_NS; c++)
		assert_int_equal(hi[c].available, 1);
	assert_int_equal(hi[COL_HC_MIGRATIONS].available,
			 raw_sw_countable(PERF_COUNT_SW_CPU_MIGRATIONS));
	if (!hi[COL_HC_MIGRATIONS].available)
		assert_non_null(strstr(hi[COL_HC_MIGRATIONS].reason, "perf_event_open refused"));

	col_hostcount_read(h, v0);
	for (int i = 0; i < 3; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	enum { PAGES = 64 };
	long page = sysconf(_SC_PAGESIZE);
	volatile char *m = mmap(NULL, (size_t)(PAGES * page), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	for (int i = 0; i < PAGES; i++)
		m[(long)i * page] = (char)i;
	double t0 = thread_cpu_ns();
	volatile double x = 1.0;
	while (thread_cpu_ns() - t0 < 5e6)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 1e-9;
	double burnt = thread_cpu_ns() - t0;
	col_hostcount_read(h, v1);
	munmap((void *)m, (size_t)(PAGES * page));
	assert_true(v1[COL_HC_CSW_VOLUNTARY] - v0[COL_HC_CSW_VOLUNTARY] >= 3);
	assert_true(v1[COL_HC_FAULTS_MINOR] - v0[COL_HC_FAULTS_MINOR] >= PAGES);
	assert_true(v1[COL_HC_FAULTS_MAJOR] >= v0[COL_HC_FAULTS_MAJOR]);
	assert_true(v1[COL_HC_CSW_INVOLUNTARY] >= v0[COL_HC_CSW_INVOLUNTARY]);
	assert_true((double)(v1[COL_HC_CPU_NS] - v0[COL_HC_CPU_NS]) >= burnt);
	assert_true((double)(v1[COL_HC_CPU_NS] - v0[COL_HC_CPU_NS]) < burnt + 5e7);
	if (hi[COL_HC_MIGRATIONS].available)
		assert_true(v1[COL_HC_MIGRATIONS] >= v0[COL_HC_MIGRATIONS]);
	else
		assert_int_equal(v1[COL_HC_MIGRATIONS], 0);
	col_hostcount_close(h);
	col_hostcount_close(NULL);
}

/* A collection records every batch's counters: they sum to the totals, there is a
 * batch per round, and the sampling's own page faults and CPU time show. */
static void test_host_counters_per_batch(void **state)
{
	(void)state;
	for (int b = 0; b < run_a->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *vr = &run_a->blocks[b].v[v];
			assert_int_equal(vr->nhc_rounds, (size_t)run_a->blocks[b].nrounds);
			long long sum[COL_NHC] = {0};
			for (size_t r = 0; r < vr->nhc_rounds; r++)
				for (int c = 0; c < COL_NHC; c++) {
					assert_true(vr->hc_rounds[r][c] >= 0);
					sum[c] += vr->hc_rounds[r][c];
				}
			for (int c = 0; c < COL_NHC; c++)
				assert_int_equal(sum[c], vr->hc_totals[c]);
			/* CPU time of the batches: some, and no more than their wall time
			 * (the samples' plus the counter reads around each batch); how much
			 * less depends on the host's load, so no lower bound */
			double wall = 0;
			for (size_t k = 0; k < vr->nsamples; k++)
				wall += (double)vr->samples_ns[k];
			assert_true(vr->hc_totals[COL_HC_CPU_NS] > 0);
			assert_true((double)vr->hc_totals[COL_HC_CPU_NS] <
				    wall + 2e5 * (double)vr->nhc_rounds);
		}
}

/* Tail attribution on a run whose numbers are known: 40 samples in 20 rounds of 2;
 * the slowest two (the p95 and above) share round 7, which had 3 involuntary
 * switches; round 2 had 1. */
static void test_tail_counters(void **state)
{
	(void)state;
	struct col_run *r = calloc(1, sizeof *r);
	assert_non_null(r);
	r->nblocks = 1;
	r->hc_recorded = 1;
	for (int c = 0; c < COL_NHC; c++)
		r->hc[c].available = c != COL_HC_MIGRATIONS;
	struct col_variant_run *vr = &r->blocks[0].v[0];
	vr->nsamples = 40;
	vr->samples_ns = calloc(40, sizeof *vr->samples_ns);
	vr->round = calloc(40, sizeof *vr->round);
	vr->nhc_rounds = 20;
	vr->hc_rounds = calloc(20, sizeof *vr->hc_rounds);
	assert_true(vr->samples_ns && vr->round && vr->hc_rounds);
	for (int k = 0; k < 40; k++) {
		vr->round[k] = k / 2;
		vr->samples_ns[k] = 1000 + k % 7; /* the body: 1000..1006 ns */
	}
	vr->samples_ns[14] = 5000;
	vr->samples_ns[15] = 4000;
	vr->hc_rounds[7][COL_HC_CSW_INVOLUNTARY] = 3;
	vr->hc_rounds[2][COL_HC_CSW_INVOLUNTARY] = 1;
	for (int i = 0; i < 20; i++)
		vr->hc_rounds[i][COL_HC_FAULTS_MINOR] = 2;
	struct ana_tail_counter t[COL_NHC];
	assert_int_equal(ana_tail_counters(r, 0, 0, t), 0);
	const struct ana_tail_counter *c = &t[COL_HC_CSW_INVOLUNTARY];
	assert_int_equal(c->available, 1);
	/* p95 of 40 by nearest rank is the 38th smallest: 1006 ns; samples at or above
	 * it are the two slow ones and the body's 1006 ns samples (k % 7 == 6: 6, 13,
	 * 20, 27, 34) */
	assert_int_equal(c->tail_samples, 7);
	assert_int_equal(c->rest_samples, 33);
	/* tail: samples 14, 15 carry 3/2 each, sample 6 (round 3), 13 (round 6), ...: 0 */
	same_double(c->tail_per_sample, 3.0 / 7.0);
	same_double(c->tail_share, 2.0 / 7.0);
	/* rest: samples 4 and 5 (round 2) carry 1/2 each */
	same_double(c->rest_per_sample, 1.0 / 33.0);
	same_double(c->rest_share, 2.0 / 33.0);
	same_double(t[COL_HC_FAULTS_MINOR].tail_per_sample, 1.0);
	same_double(t[COL_HC_FAULTS_MINOR].rest_share, 1.0);
	assert_int_equal(t[COL_HC_MIGRATIONS].available, 0);
	assert_true(isnan(t[COL_HC_MIGRATIONS].tail_per_sample));
	/* an archive from before host counters: nothing available */
	r->hc_recorded = 0;
	assert_int_equal(ana_tail_counters(r, 0, 0, t), 0);
	for (int k = 0; k < COL_NHC; k++)
		assert_int_equal(t[k].available, 0);
	free(vr->samples_ns);
	free(vr->round);
	free(vr->hc_rounds);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed),
		cmocka_unit_test(test_other_seed),
		cmocka_unit_test(test_archive_round_trip),
		cmocka_unit_test(test_archive_exists),
		cmocka_unit_test(test_no_papi_events),
		cmocka_unit_test(test_papi_on),
		cmocka_unit_test(test_host_counters),
		cmocka_unit_test(test_host_counters_per_batch),
		cmocka_unit_test(test_tail_counters),
	};
	return cmocka_run_group_tests_name("collect", tests, setup, teardown);
}
