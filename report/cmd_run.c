/* report/cmd_run.c: `opreview run` (collect + analyze + report into one packet
 * directory, built beside the target and renamed into place when complete) and
 * `opreview report` (re-render a packet from an archive). */
#include "report_int.h"
#include "../opreview_cmds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Analyzes the archive in `archive` and renders the packet into `dir`;
 * `shown` is the archive's path relative to the packet, for the packet's
 * reproduce commands: where the packet is written does not enter it. */
static int analyze_and_render(const char *archive, const char *shown, const char *dir,
			      const char *templates, const char *history, enum ana_verdict *verdict,
			      struct opr_error *err)
{
	struct col_run *run = NULL;
	struct ana_findings *f = NULL;
	json_t *fj = NULL;
	char path[OPR_PATH_MAX];
	int rc = opr_path_join(path, sizeof path, dir, "findings.json", err);
	if (!rc)
		rc = col_archive_load(archive, &run, err);
	if (!rc)
		rc = ana_analyze(run, shown, &f, err);
	if (!rc)
		rc = ana_findings_write(f, path, err);
	if (!rc) {
		json_error_t je;
		fj = json_load_file(path, 0, &je);
		if (!fj)
			rc = opr_error_at(err, OPR_EINTERNAL, path, je.line, je.column, "%s", je.text);
	}
	if (!rc)
		rc = rep_history_trend(history, archive, f, fj, err);
	if (!rc) {
		struct rep_options o = {templates, 0};
		rc = rep_packet(fj, run, archive, dir, &o, err);
	}
	if (!rc)
		*verdict = f->verdict;
	json_decref(fj);
	ana_findings_free(f);
	col_run_free(run);
	return rc;
}

/* The packet of a run: built in o->tmp (the archive in run/, then the
 * analysis and the rendered files) and published by opr_output only when
 * complete. Frees run. */
static int write_packet(struct col_run *run, struct opr_output *o, const char *templates,
			const char *history, enum ana_verdict *v, struct opr_error *err)
{
	char archive[OPR_PATH_MAX];
	int rc = opr_output_open(o, err);
	if (!rc && mkdir(o->tmp, 0777))
		rc = opr_error_set(err, OPR_EIO, "cannot create '%s': %s", o->tmp, strerror(errno));
	if (!rc)
		rc = opr_path_join(archive, sizeof archive, o->tmp, "run", err);
	if (!rc)
		rc = col_archive_write(run, archive, err);
	col_run_free(run);
	if (!rc)
		rc = analyze_and_render(archive, "run", o->tmp, templates, history, v, err);
	if (!rc)
		rc = opr_output_publish(o, err);
	return rc;
}

static int finish(int rc, enum ana_verdict v, const char *dir, struct opr_error *err)
{
	if (rc)
		return opr_fail(err);
	printf("verdict: %s\npacket: %s/packet.md %s/packet.html %s/packet.xlsx\nrun archive: %s/run\n",
	       ana_verdict_name(v), dir, dir, dir, dir);
	return ana_verdict_exit(v);
}

int cmd_run(int argc, char **argv)
{
	const char *profile = NULL, *out = NULL, *templates = NULL, *envdir = NULL, *history = NULL;
	int force = 0, no_papi = 0, quiet = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "profile", "FILE", "the workload profile (YAML)", &profile},
		{OPR_OPT_PATH, "out", "DIR", "the packet directory to create", &out},
		{OPR_OPT_FLAG, "force", NULL, "replace DIR if it exists (only once the new one is complete)", &force},
		{OPR_OPT_PATH, "templates", "DIR", "use a team's own packet templates", &templates},
		{OPR_OPT_PATH, "envelopes", "DIR", "where named envelopes are found", &envdir},
		{OPR_OPT_FLAG, "no-papi", NULL, "do not use PAPI (counters shown as unavailable)", &no_papi},
		{OPR_OPT_FLAG, "quiet", NULL, "no progress on stderr", &quiet},
		{OPR_OPT_PATH, "history", "DB", "add the run to this history and trend it (overrides the profile's)", &history},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"run", "run --profile FILE --out DIR [--force] [--templates DIR] [--history DB]",
		"Collect, analyze and report: runs every block of the profile for real and on the\n"
		"device model, then writes DIR/run (the archive), DIR/findings.json and the packet\n"
		"DIR/packet.md, DIR/packet.html, DIR/packet.xlsx, DIR/owners.json. `device: cuda`\n"
		"in the profile runs the blocks on the GPU (build-cuda/opreview only).",
		"Exit status is the verdict: 0 SHIP, 10 SHIP WITH MITIGATIONS, 11 HOLD, 12 ROLLBACK;\n"
		"1 failure, 2 bad usage or profile, 5 DIR exists without --force or is being written\n"
		"by another opreview; 6 the profile names the GPU and this opreview has no CUDA\n"
		"backend (or no GPU); 130/143 interrupted by SIGINT/SIGTERM. Nothing is written when\n"
		"the profile is bad; an interrupted run leaves no DIR (and nothing beside it).",
		opts};
	struct opr_error err = {0};
	const char *pos[1], **req[] = {&profile, &out, NULL};
	int npos, rc;
	if (opr_cmd_start(&help, argc, argv, pos, 0, &npos, req, 0, "run: --profile and --out are required", &rc))
		return rc;
	struct opr_output o;
	struct col_run *run = NULL;
	enum ana_verdict v = ANA_HOLD;
	struct col_options co = {profile, envdir, 1.0, !quiet && isatty(2), no_papi};
	char hist[1100] = "";
	rc = opr_output_claim(&o, out, OPR_OUT_DIR, REP_PACKET_MARKER, force, &err);
	if (!rc)
		rc = col_collect(&co, &run, &err);
	if (!rc)
		rep_history_path(history, run, hist, sizeof hist);
	if (!rc)
		rc = write_packet(run, &o, templates, hist[0] ? hist : NULL, &v, &err);
	if (rc)
		opr_output_name(&o, &err);
	opr_output_release(&o);
	return finish(rc, v, out, &err);
}

int cmd_report(int argc, char **argv)
{
	const char *out = NULL, *templates = NULL, *history = NULL;
	int force = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "out", "DIR", "the packet directory to create", &out},
		{OPR_OPT_FLAG, "force", NULL, "replace DIR if it exists", &force},
		{OPR_OPT_PATH, "templates", "DIR", "use a team's own packet templates", &templates},
		{OPR_OPT_PATH, "history", "DB", "add the run to this history and trend it (overrides the profile's)", &history},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"report", "report RUN --out DIR [--force] [--templates DIR] [--history DB]",
		"Analyze the run archive RUN and render its packet into DIR (with a copy of RUN\n"
		"in DIR/run, so the packet is complete on its own).",
		"Exit status is the verdict, as for run; 2 also when RUN was altered after it was\n"
		"written (its digests do not match) or is malformed.", opts};
	struct opr_error err = {0};
	const char *pos[1], **req[] = {&out, NULL};
	int npos, rc;
	if (opr_cmd_start(&help, argc, argv, pos, 1, &npos, req, 1, "report: RUN and --out are required", &rc))
		return rc;
	struct opr_output o;
	struct col_run *run = NULL;
	enum ana_verdict v = ANA_HOLD;
	char hist[1100] = "";
	rc = opr_output_claim(&o, out, OPR_OUT_DIR, REP_PACKET_MARKER, force, &err);
	if (!rc)
		rc = col_archive_load(pos[0], &run, &err);
	if (!rc)
		rep_history_path(history, run, hist, sizeof hist);
	if (!rc)
		rc = write_packet(run, &o, templates, hist[0] ? hist : NULL, &v, &err);
	if (rc)
		opr_output_name(&o, &err);
	opr_output_release(&o);
	return finish(rc, v, out, &err);
}
