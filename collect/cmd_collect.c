/* collect/cmd_collect.c: `opreview collect`: run a profile and write its archive. */
#include "collect.h"
#include "../opreview_cmds.h"

#include <unistd.h>

int cmd_collect(int argc, char **argv)
{
	const char *profile = NULL, *out = NULL, *envdir = NULL;
	int force = 0, no_papi = 0, quiet = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "profile", "FILE", "the workload profile (YAML)", &profile},
		{OPR_OPT_PATH, "out", "RUN", "the archive directory to create", &out},
		{OPR_OPT_FLAG, "force", NULL, "replace RUN if it exists (once the new one is complete)", &force},
		{OPR_OPT_PATH, "envelopes", "DIR", "where named envelopes are found", &envdir},
		{OPR_OPT_FLAG, "no-papi", NULL, "do not use PAPI (events recorded as unavailable)", &no_papi},
		{OPR_OPT_FLAG, "quiet", NULL, "no progress on stderr", &quiet},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"collect", "collect --profile FILE --out RUN [--force]",
		"Run every block of the profile (baseline and candidate, interleaved) on the host\n"
		"under PAPI and on the device model, simulate the scheduling pipeline, and write\n"
		"the run archive RUN atomically (manifest.json, samples.csv, counters.csv,\n"
		"pipeline.json, profile.yaml). A profile with `device: cuda` runs the blocks on\n"
		"the GPU instead (CUDA-event samples, PAPI cuda-component counters); only\n"
		"build-cuda/opreview (`make cuda`) can.",
		"Exit status: 0 written, 1 failure, 2 bad usage or profile, 5 RUN exists or is being\n"
		"written by another opreview, 6 the profile names the GPU and this opreview has no\n"
		"CUDA backend (or no GPU), 130/143 interrupted (nothing left behind).", opts};
	struct opr_error err = {0};
	const char *pos[1], **req[] = {&profile, &out, NULL};
	int npos, rc;
	if (opr_cmd_start(&help, argc, argv, pos, 0, &npos, req, 0, "collect: --profile and --out are required",
			  &rc))
		return rc;
	struct opr_output o;
	if ((rc = opr_output_claim(&o, out, OPR_OUT_DIR, COL_ARCHIVE_MARKER, force, &err)))
		goto fail;
	struct col_options co = {profile, envdir, 1.0, !quiet && isatty(2), no_papi};
	struct col_run *run = NULL;
	rc = col_collect(&co, &run, &err);
	if (!rc)
		rc = opr_output_open(&o, &err);
	if (!rc)
		rc = col_archive_write(run, o.tmp, &err);
	col_run_free(run);
	if (!rc)
		rc = opr_output_publish(&o, &err);
fail:
	if (rc)
		opr_output_name(&o, &err);
	opr_output_release(&o);
	if (rc)
		return opr_fail(&err);
	printf("run archive: %s\n", out);
	return OPR_EXIT_OK;
}
