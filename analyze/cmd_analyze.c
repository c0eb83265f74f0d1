/* analyze/cmd_analyze.c: `opreview analyze RUN` (findings.json and the verdict)
 * and `opreview replay RUN` (re-run an archive and check it reproduces). */
#include "analyze_int.h"
#include "../opreview_cmds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_analyze(int argc, char **argv)
{
	const char *out = NULL;
	int force = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "out", "FILE", "where to write findings.json (default RUN/findings.json)", &out},
		{OPR_OPT_FLAG, "force", NULL, "replace FILE if it exists", &force},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"analyze", "analyze RUN [--out FILE [--force]]",
		"Read the run archive RUN and write findings.json: tail-first statistics, bottleneck\n"
		"classes with evidence, the fusion and tile-plan worksheet, the validation matrix\n"
		"with rollback triggers, mitigations and the release recommendation.",
		"Exit status is the verdict: 0 SHIP, 10 SHIP WITH MITIGATIONS, 11 HOLD, 12 ROLLBACK;\n"
		"1 failure, 2 bad usage, a malformed archive or one altered after it was written\n"
		"(its digests do not match), 5 FILE exists without --force or is being written by\n"
		"another opreview, 130/143 interrupted.",
		opts};
	struct opr_error err = {0};
	const char *pos[1];
	int npos;
	int rc;
	if (opr_cmd_start(&help, argc, argv, pos, 1, &npos, NULL, 1, "analyze: RUN is required", &rc))
		return rc;
	/* RUN/findings.json is derived from RUN and is replaced whenever RUN is
	 * analyzed again; a file named by --out is the user's: kept without --force */
	char path[OPR_PATH_MAX];
	if ((rc = opr_path_join(path, sizeof path, pos[0], "findings.json", &err)))
		return opr_fail(&err);
	const char *target = out ? out : path;
	struct opr_output o = OPR_OUTPUT_INIT;
	struct col_run *run = NULL;
	struct ana_findings *f = NULL;
	/* the archive first: a RUN that is not one is named as such */
	rc = col_archive_load(pos[0], &run, &err);
	if (!rc)
		rc = opr_output_claim(&o, target, OPR_OUT_FILE, NULL, out ? force : 1, &err);
	if (!rc)
		rc = ana_analyze(run, pos[0], &f, &err);
	if (!rc)
		rc = opr_output_open(&o, &err);
	if (!rc)
		rc = ana_findings_write(f, o.tmp, &err);
	if (!rc)
		rc = opr_output_publish(&o, &err);
	if (rc)
		opr_output_name(&o, &err);
	opr_output_release(&o);
	if (rc) {
		ana_findings_free(f);
		col_run_free(run);
		return opr_fail(&err);
	}
	enum ana_verdict v = f->verdict;
	printf("verdict: %s\nfindings: %s\n", ana_verdict_name(v), target);
	for (int i = 0; i < f->nreasons; i++)
		printf("  - %s\n", f->reasons[i]);
	ana_findings_free(f);
	col_run_free(run);
	return ana_verdict_exit(v);
}

/* Host timing shift of one variant: median(new) / median(old) with a
 * bootstrap CI, pairing the i-th rounds of the two runs. */
static int timing_shift(const struct col_variant_run *old, const struct col_variant_run *new,
			uint64_t seed, struct ana_ratio *r, struct opr_error *err)
{
	size_t n = old->nsamples < new->nsamples ? old->nsamples : new->nsamples;
	size_t per = 8, R = n / per;
	if (R < 2)
		return opr_error_set(err, OPR_EINPUT, "too few samples to compare timings");
	size_t *off = malloc((R + 1) * sizeof *off);
	if (!off)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	for (size_t i = 0; i <= R; i++)
		off[i] = i * per;
	struct ana_rounds rd = {old->samples_ns, new->samples_ns, off, off, R};
	int rc = ana_ratio_ci(&rd, 0.5, 1000, seed, 0.95, r, err);
	free(off);
	return rc;
}

/* The pipeline simulation is seeded and fed by the counted launch records, so
 * a replay gives the archived percentiles again; the archive keeps them as
 * JSON reals, hence the relative tolerance of a round trip. */
/* On a GPU run the simulation is fed by the launches' measured device times
 * instead, which move from run to run as timing does: there its percentiles
 * must agree within GPU_PIPE_TOLERANCE. */
#define GPU_PIPE_TOLERANCE 0.25
static int same_pipeline(const struct col_variant_run *o, const struct col_variant_run *n)
{
	const double a[] = {o->pipe.p95_ns, o->pipe.p99_ns, o->pipe_free_p95_ns, o->pipe_hidden_p95_ns};
	const double b[] = {n->pipe.p95_ns, n->pipe.p99_ns, n->pipe_free_p95_ns, n->pipe_hidden_p95_ns};
	const double tol = o->ndev_launch || n->ndev_launch ? GPU_PIPE_TOLERANCE : 1e-9;
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
		if (isnan(a[i]) && isnan(b[i]))
			continue;
		if (!(fabs(a[i] - b[i]) <= tol * fmax(fabs(a[i]), fabs(b[i]))))
			return 0;
	}
	return o->pipe.n == n->pipe.n;
}

int cmd_replay(int argc, char **argv)
{
	int no_papi = 0;
	const char *block = NULL;
	const struct opr_option opts[] = {
		{OPR_OPT_FLAG, "no-papi", NULL, "do not use PAPI", &no_papi},
		{OPR_OPT_STRING, "block", "NAME", "replay only this block of the archive", &block},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"replay", "replay RUN [--block NAME]",
		"Re-run the archive RUN from its own profile copy and seed, and check that the\n"
		"inputs, output digests and simulated counters are identical (they must be);\n"
		"report the shift of the host timing distribution (median ratio with a 95% CI).\n"
		"--block NAME replays one block: the command each finding of a packet names.",
		"Exit status: 0 reproduced, 4 a digest, counter or pipeline result differs, 1 failure,\n"
		"2 bad usage (or no such block) or RUN altered after it was written (its file digests\n"
		"do not match: the edit is named, not blamed on reproducibility), 6 RUN was collected\n"
		"on a GPU and this opreview has no CUDA backend (or no GPU).",
		opts};
	struct opr_error err = {0};
	const char *pos[1];
	int npos;
	int rc;
	if (opr_cmd_start(&help, argc, argv, pos, 1, &npos, NULL, 1, "replay: RUN is required", &rc))
		return rc;
	struct col_run *old = NULL, *new = NULL;
	char profile[OPR_PATH_MAX];
	rc = opr_path_join(profile, sizeof profile, pos[0], "profile.yaml", &err);
	if (!rc)
		rc = col_archive_load(pos[0], &old, &err);
	struct col_options co = {profile, pos[0], 0.5, 0, no_papi};
	/* a GPU archive re-runs on its GPU: say so before anything runs */
	if (!rc && !col_device_available(old->profile->device.kind))
		rc = opr_error_set(&err, OPR_ENODEV,
				   "%s: the archive was collected on cuda device %d (%s): replaying it "
				   "needs the CUDA backend, which this opreview is built without "
				   "(`make cuda` builds build-cuda/opreview)",
				   pos[0], old->gpu.index, old->gpu.name[0] ? old->gpu.name : "a GPU");
	if (!rc)
		rc = col_collect_block(&co, block, &new, &err);
	if (rc) {
		col_run_free(old);
		return opr_fail(&err);
	}
	int mismatches = 0;
	for (int b = 0, k = 0; b < old->nblocks && k < new->nblocks; b++) {
		/* the replayed blocks, in the archive's order (one with --block) */
		if (strcmp(old->blocks[b].block->name, new->blocks[k].block->name))
			continue;
		const struct col_block_run *nb = &new->blocks[k++];
		for (int v = 0; v < 2; v++) {
			const struct col_variant_run *o = &old->blocks[b].v[v], *n = &nb->v[v];
			int in = !strcmp(o->input_sha256, n->input_sha256);
			int outd = !strcmp(o->output_sha256, n->output_sha256);
			int cnt = !memcmp(&o->counters, &n->counters, sizeof o->counters);
			int pipe = same_pipeline(o, n);
			mismatches += !in + !outd + !cnt + !pipe;
			struct ana_ratio r;
			struct opr_error e2 = {0};
			char shift[128];
			if (timing_shift(o, n, old->profile->seed, &r, &e2))
				snprintf(shift, sizeof shift, "timing: %s", e2.msg);
			else
				snprintf(shift, sizeof shift, "timing median x%.3f [%.3f, %.3f]", r.ratio, r.lo, r.hi);
			printf("%-24s %-9s inputs %s  outputs %s  counters %s  pipeline %s  %s\n",
			       old->blocks[b].block->name, col_variant_name(v), in ? "identical" : "DIFFER",
			       outd ? "identical" : "DIFFER", cnt ? "identical" : "DIFFER",
			       pipe ? "identical" : "DIFFER", shift);
		}
	}
	col_run_free(old);
	col_run_free(new);
	if (mismatches) {
		fprintf(stderr, "opreview: replay: %d mismatch(es): the run did not reproduce\n", mismatches);
		return OPR_EXIT_MISMATCH;
	}
	printf("reproduced: inputs, outputs, simulated counters and pipeline identical\n");
	return OPR_EXIT_OK;
}
