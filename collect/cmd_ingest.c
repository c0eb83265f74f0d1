/* collect/cmd_ingest.c: `opreview ingest`: Google Benchmark JSON or Nsight
 * Compute CSV in, a run archive out (provenance imported). */
#include "collect.h"
#include "../opreview_cmds.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Block and profile names go into file names: [A-Za-z0-9._-]+, as in a profile. */
static int name_ok(const char *flag, const char *s, struct opr_error *err)
{
	if (!s)
		return 0;
	if (!*s || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
			   strlen(s) || strlen(s) >= COL_NAME_MAX)
		return opr_error_set(err, OPR_EUSAGE, "ingest: --%s '%s' must be 1 to %d of "
				     "[A-Za-z0-9._-]", flag, s, COL_NAME_MAX - 1);
	return 0;
}

static int positive(const char *flag, const char *s, double *out, struct opr_error *err)
{
	char *end;
	if (!s)
		return 0;
	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out) || *out <= 0)
		return opr_error_set(err, OPR_EUSAGE, "ingest: --%s must be a positive number, not '%s'",
				     flag, s);
	return 0;
}

int cmd_ingest(int argc, char **argv)
{
	const char *out = NULL, *base = NULL, *cand = NULL, *block = NULL, *name = NULL, *rev = NULL;
	const char *p95 = NULL, *p99 = NULL, *rps = NULL, *owners = NULL, *prod = NULL;
	int force = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_STRING, "baseline", "NAME", "the source's benchmark or kernel that is the baseline", &base},
		{OPR_OPT_STRING, "candidate", "NAME", "the source's benchmark or kernel that is the candidate", &cand},
		{OPR_OPT_STRING, "out", "RUN", "the archive directory to create", &out},
		{OPR_OPT_FLAG, "force", NULL, "replace RUN if it exists (once the new one is complete)", &force},
		{OPR_OPT_STRING, "block", "NAME", "the block's name (default: imported)", &block},
		{OPR_OPT_STRING, "name", "NAME", "the profile's name, which keys the history (default: imported-FORMAT)", &name},
		{OPR_OPT_STRING, "model-revision", "REV", "the model revision the measurement belongs to (default: unknown)", &rev},
		{OPR_OPT_STRING, "sla-p95-us", "US", "the SLA's p95 target (with --sla-p99-us and --min-throughput-rps)", &p95},
		{OPR_OPT_STRING, "sla-p99-us", "US", "the SLA's p99 target", &p99},
		{OPR_OPT_STRING, "min-throughput-rps", "RPS", "the SLA's throughput floor", &rps},
		{OPR_OPT_STRING, "owners-from", "PROFILE", "sign-off by the owners of PROFILE (a packet needs them)", &owners},
		{OPR_OPT_STRING, "production", "TRACE", "the measured shapes came from production TRACE (default: synthetic)", &prod},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"ingest", "ingest gbench|ncu FILE --baseline NAME --candidate NAME --out RUN [--force]",
		"Turn measurements taken outside opreview into a run archive RUN that analyze,\n"
		"report, compare and history read: gbench FILE is Google Benchmark JSON\n"
		"(--benchmark_format=json with --benchmark_repetitions=N), each repetition's\n"
		"real_time per iteration one sample, user counters and cpu_time imported\n"
		"counters; ncu FILE is Nsight Compute CSV (ncu --csv --page raw), each profiled\n"
		"launch's gpu__time_duration.sum one sample, dram__bytes_read.sum,\n"
		"dram__bytes_write.sum and the SOL throughputs imported counters. Kernels match\n"
		"by their whole name or by the function name before '('. The archive records the\n"
		"source's path and sha256; it has no group, shape, plan or device model, so the\n"
		"model's checks are unavailable with that reason.",
		"Exit status: 0 written, 1 failure, 2 bad usage or bad input (FILE:LINE:COL),\n"
		"5 RUN exists or is being written by another opreview, 130/143 interrupted\n"
		"(nothing left behind).", opts};
	struct opr_error err = {0};
	const char *pos[2];
	int npos = 0;
	double sla[3] = {NAN, NAN, NAN};
	const char **req[] = {&out, &base, &cand, NULL};
	int rc;
	if (opr_cmd_start(&help, argc, argv, pos, 2, &npos, req, 2, "ingest: a format, a FILE, --baseline, "
			  "--candidate and --out are required", &rc))
		return rc;
	if (strcmp(pos[0], "gbench") && strcmp(pos[0], "ncu"))
		rc = opr_error_set(&err, OPR_EUSAGE, "ingest: unknown format '%s' (want gbench|ncu)", pos[0]);
	if (!rc && !strcmp(base, cand))
		rc = opr_error_set(&err, OPR_EUSAGE, "ingest: --baseline and --candidate name the same '%s'",
				   base);
	if (!rc && (!p95 != !p99 || !p95 != !rps))
		rc = opr_error_set(&err, OPR_EUSAGE, "ingest: --sla-p95-us, --sla-p99-us and "
				   "--min-throughput-rps go together");
	if (!rc && !(rc = name_ok("name", name, &err)))
		rc = name_ok("block", block, &err);
	if (!rc && !(rc = positive("sla-p95-us", p95, &sla[0], &err)) &&
	    !(rc = positive("sla-p99-us", p99, &sla[1], &err)))
		rc = positive("min-throughput-rps", rps, &sla[2], &err);
	if (!rc && sla[1] < sla[0])
		rc = opr_error_set(&err, OPR_EUSAGE, "ingest: --sla-p99-us %g is below --sla-p95-us %g",
				   sla[1], sla[0]);
	if (rc)
		return opr_fail(&err);
	struct opr_output out_claim;
	struct col_run *run = NULL;
	if ((rc = opr_output_claim(&out_claim, out, OPR_OUT_DIR, COL_ARCHIVE_MARKER, force, &err)))
		goto fail;
	struct col_ingest_options o = {pos[0], pos[1], name, block, base, cand, rev,
				       sla[0], sla[1], sla[2], owners, prod};
	rc = col_ingest(&o, &run, &err);
	if (!rc)
		rc = opr_output_open(&out_claim, &err);
	if (!rc)
		rc = col_archive_write(run, out_claim.tmp, &err);
	if (!rc)
		rc = opr_output_publish(&out_claim, &err);
	if (!rc)
		printf("run archive: %s (imported from %s, %zu baseline and %zu candidate samples)\n", out,
		       pos[1], run->blocks[0].v[0].nsamples, run->blocks[0].v[1].nsamples);
	col_run_free(run);
fail:
	if (rc)
		opr_output_name(&out_claim, &err);
	opr_output_release(&out_claim);
	if (rc)
		return opr_fail(&err);
	return OPR_EXIT_OK;
}
