/* analyze/cmd_history.c: `opreview history add --db FILE RUN...` (analyze
 * each archive and record it, keyed by its digest) and `opreview history show
 * --db FILE` (the trend of one metric over comparable runs, with its change
 * points). */
#include "analyze_int.h"
#include "../opreview_cmds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_RUNS 256

static void history_usage(FILE *fp)
{
	fprintf(fp, "usage: opreview history add --db FILE RUN...\n"
		    "   or: opreview history show --db FILE [--block B] [--variant V] [--metric M]\n"
		    "                             [--last N] [--run DIGEST]\n\n"
		    "The history of runs in an SQLite database: 'add' records each archive's key\n"
		    "results (per block and variant: p50/p95/p99 with CIs, throughput, modelled time,\n"
		    "pipeline p95, available counters; the verdict), keyed by the archive's digest,\n"
		    "so adding it twice changes nothing. 'show' prints one metric over the runs\n"
		    "comparable with the latest one (same profile, host class, envelope and model\n"
		    "revision) with the change points of asv's step detection.\n\n"
		    "Exit status: 0 success, 1 failure, 2 bad usage, a bad archive or database.\n"
		    "'opreview history add --help' and 'opreview history show --help' list the options.\n");
}

/* Analyzes one archive and adds it; prints what happened. */
static int add_one(struct ana_history *h, const char *dir, struct opr_error *err)
{
	struct col_run *run = NULL;
	struct ana_findings *f = NULL;
	char digest[65];
	int added = 0;
	int rc = col_archive_load(dir, &run, err);
	if (!rc)
		rc = ana_analyze(run, dir, &f, err);
	if (!rc)
		rc = ana_history_add(h, dir, f, &added, err);
	if (!rc)
		rc = ana_archive_digest(dir, digest, err);
	if (!rc)
		printf("%s %.12s %s\n", added ? "added" : "present", digest, dir);
	ana_findings_free(f);
	col_run_free(run);
	return rc;
}

static int history_add(int argc, char **argv)
{
	const char *db = NULL;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "db", "FILE", "the history database (created when missing)", &db},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"history add", "history add --db FILE RUN...",
		"Analyze each run archive RUN and record its key results in the history FILE,\n"
		"one transaction per archive. An archive already there (same digest) is left as it is.",
		"Exit status: 0 success, 1 failure, 2 bad usage, a bad archive or database.", opts};
	struct opr_error err = {0};
	const char *pos[MAX_RUNS];
	int npos;
	const char **req[] = {&db, NULL};
	int rc;
	if (opr_cmd_start(&help, argc, argv, pos, MAX_RUNS, &npos, req, 1,
			  "history add: --db and at least one RUN are required", &rc))
		return rc;
	struct ana_history *h = NULL;
	if ((rc = ana_history_open(db, &h, &err)))
		return opr_fail(&err);
	for (int i = 0; i < npos && !rc; i++)
		rc = add_one(h, pos[i], &err);
	ana_history_close(h);
	return rc ? opr_fail(&err) : OPR_EXIT_OK;
}

static void f_value(char *b, size_t n, double v, const char *unit)
{
	if (!isfinite(v))
		snprintf(b, n, "n/a");
	else if (!strcmp(unit, "ns"))
		snprintf(b, n, "%.1f us", v / 1e3);
	else if (!strcmp(unit, "1/s"))
		snprintf(b, n, "%.1f /s", v);
	else
		snprintf(b, n, "%.6g", v);
}

static void f_ci(char *b, size_t n, double lo, double hi, const char *unit)
{
	double s = !strcmp(unit, "ns") ? 1e3 : 1;
	if (isfinite(lo) && isfinite(hi))
		snprintf(b, n, "[%.1f, %.1f]", lo / s, hi / s);
	else
		snprintf(b, n, "no CI");
}

/* The block, variant and metric of the reference run's primary metric
 * ("block/variant/metric"), for show's defaults. */
static void split_primary(const char *pm, char *block, char *variant, char *metric)
{
	const char *a = strchr(pm, '/'), *b = a ? strchr(a + 1, '/') : NULL;
	if (!a || !b)
		return;
	snprintf(block, 64, "%.*s", (int)(a - pm), pm);
	snprintf(variant, 16, "%.*s", (int)(b - a - 1), a + 1);
	snprintf(metric, 48, "%s", b + 1);
}

static int history_show(int argc, char **argv)
{
	const char *db = NULL, *block = NULL, *variant = NULL, *metric = NULL, *last = NULL,
		   *ref = NULL;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "db", "FILE", "the history database", &db},
		{OPR_OPT_STRING, "block", "NAME", "the block (default: the primary metric's)", &block},
		{OPR_OPT_STRING, "variant", "V", "baseline or candidate (default: the primary metric's)", &variant},
		{OPR_OPT_STRING, "metric", "M",
		 "p50, p95, p99, throughput, model_time, pipeline_p95 or papi:EVENT (default: the primary metric)",
		 &metric},
		{OPR_OPT_STRING, "last", "N", "the newest N comparable runs (default 20)", &last},
		{OPR_OPT_STRING, "run", "DIGEST", "the reference run (a digest prefix; default the latest)", &ref},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"history show", "history show --db FILE [--block B] [--variant V] [--metric M] [--last N] [--run DIGEST]",
		"Print one metric over the runs comparable with the reference run (same profile, host\n"
		"class, envelope and model revision; others are counted, never mixed in), oldest first,\n"
		"with the change points of asv's step detection (asv/step_detect.py).",
		"Exit status: 0 success, 1 failure, 2 bad usage, no such run or a bad database.", opts};
	struct opr_error err = {0};
	const char *pos[1];
	int npos;
	const char **req[] = {&db, NULL};
	int rc;
	if (opr_cmd_start(&help, argc, argv, pos, 0, &npos, req, 0, "history show: --db is required", &rc))
		return rc;
	long nlast = 20;
	if (last) {
		char *end;
		nlast = strtol(last, &end, 10);
		if (*end || nlast < 1 || nlast > ANA_CP_MAX)
			rc = opr_error_set(&err, OPR_EUSAGE, "history show: --last must be 1 to %d", ANA_CP_MAX);
	}
	if (!rc && ref && (!*ref || strspn(ref, "0123456789abcdef") != strlen(ref)))
		rc = opr_error_set(&err, OPR_EUSAGE, "history show: --run takes a digest (or a prefix of one) in lowercase hex");
	struct stat st;
	if (!rc && stat(db, &st))
		rc = opr_error_set(&err, OPR_EINPUT, "history show: no history database '%s'", db);
	if (rc)
		return opr_fail(&err);
	struct ana_history *h = NULL;
	struct ana_trend t;
	if ((rc = ana_history_open(db, &h, &err)))
		return opr_fail(&err);
	char b[64] = "", v[16] = "candidate", m[48] = "p95", pm[160] = "";
	if ((rc = ana_history_primary(h, ref, pm, sizeof pm, &err))) {
		ana_history_close(h);
		return opr_fail(&err);
	}
	split_primary(pm, b, v, m);
	rc = ana_history_trend(h, ref, block ? block : b, variant ? variant : v, metric ? metric : m,
			       (size_t)nlast, &t, &err);
	if (rc) {
		ana_history_close(h);
		return opr_fail(&err);
	}
	const struct ana_series_key *k = &t.key;
	printf("history: %s (schema %d)\n", db, ana_history_schema(h));
	printf("series: %s / %s / %s %s (%s, %s)\n", k->profile, k->block, k->variant, k->metric,
	       t.value_provenance[0] ? t.value_provenance : "no values", t.unit);
	printf("comparable on: host class %s; envelope %s (sha256 %.12s); model revision %s\n",
	       k->host_class, k->envelope, k->envelope_sha256, k->model_revision);
	if (t.apart)
		printf("kept apart: %zu run(s) of another %s\n", t.apart, t.apart_why);
	printf("%3s  %-20s  %-12s  %-12s  %-22s  %s\n", "#", "started (UTC)", "digest", "value",
	       "95% CI", "verdict");
	for (size_t i = 0; i < t.n; i++) {
		const struct ana_trend_point *p = &t.pts[i];
		char val[32], ci[48], mark[96] = "";
		f_value(val, sizeof val, p->value, t.unit);
		f_ci(ci, sizeof ci, p->lo, p->hi, t.unit);
		for (size_t c = 0; t.cp_done && c < t.cp.nchanges; c++)
			if (t.cp.changes[c].at == i)
				snprintf(mark, sizeof mark, "  <- moved %+.1f%% (%s)", 100 * t.cp.changes[c].rel,
					 t.cp.changes[c].worse ? "worse" : "better");
		printf("%3zu  %-20s  %.12s  %-12s  %-22s  %s%s\n", i + 1, p->started_utc, p->digest, val, ci,
		       p->verdict, mark);
	}
	if (!t.cp_done)
		printf("change points: not tested (%zu run(s); asv's step detection needs 3)\n", t.n);
	else if (!t.cp.nchanges)
		printf("change points: none (asv step detection, steps above 5%% and the segments' error)\n");
	else
		printf("change points: %zu (asv step detection, steps above 5%% and the segments' error)\n",
		       t.cp.nchanges);
	ana_trend_release(&t);
	ana_history_close(h);
	return OPR_EXIT_OK;
}

int cmd_history(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "add"))
		return history_add(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return history_show(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		history_usage(stdout);
		return OPR_EXIT_OK;
	}
	if (argc >= 2)
		fprintf(stderr, "opreview: history: '%s' is not a history command (add, show)\n", argv[1]);
	else
		fprintf(stderr, "opreview: history: add or show is required\n");
	return OPR_EXIT_USAGE;
}
