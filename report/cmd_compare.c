/* report/cmd_compare.c: `opreview compare A B`: two run archives side by
 * side with the tail-first statistics of one run's baseline-vs-candidate
 * comparison, here between the runs (B over A per block and variant: p95,
 * p99, then p50, each a ratio with a round-bootstrap CI and the rank tests).
 * Runs of another host, envelope, workload or major tool version are not
 * comparable: refused with exit 2 and the reasons, unless --force, and then
 * the report's first lines say so. */
#include "report.h"
#include "../opreview_cmds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CMP_NBOOT 2000

/* "0.1.0" -> "0" */
static void major(const char *v, char *buf, size_t n)
{
	size_t k = strcspn(v, ".");
	snprintf(buf, n, "%.*s", (int)k, v);
}

static void add_reason(struct opr_buf *b, int *n, const char *what, const char *x, const char *y)
{
	opr_buf_printf(b, "%s%s differs ('%s' vs '%s')", (*n)++ ? "; " : "", what, x, y);
}

/* Why A and B are not comparable ("" when they are). */
static void comparability(const struct col_run *a, const struct col_run *b, struct opr_buf *why,
			  int *n)
{
	char ha[256], hb[256], ea[65], eb[65], ma[16], mb[16];
	/* as the history keys them: an ncu import's host is its device */
	if (!strcmp(a->import.format, "ncu"))
		snprintf(ha, sizeof ha, "imported ncu: %s", a->import.device);
	else
		snprintf(ha, sizeof ha, "%s / %d cpus", a->host.cpu_model, a->host.cpus_online);
	if (!strcmp(b->import.format, "ncu"))
		snprintf(hb, sizeof hb, "imported ncu: %s", b->import.device);
	else
		snprintf(hb, sizeof hb, "%s / %d cpus", b->host.cpu_model, b->host.cpus_online);
	if (strcmp(ha, hb))
		add_reason(why, n, "host", ha, hb);
	ana_envelope_digest(&a->profile->envelope, ea);
	ana_envelope_digest(&b->profile->envelope, eb);
	if (strcmp(ea, eb)) {
		char x[128], y[128];
		snprintf(x, sizeof x, "%s, sha256 %.12s", a->profile->envelope.name, ea);
		snprintf(y, sizeof y, "%s, sha256 %.12s", b->profile->envelope.name, eb);
		add_reason(why, n, "envelope", x, y);
	}
	char wa[4096] = "", wb[4096] = "";
	size_t ua = 0, ub = 0;
	for (int i = 0; i < a->nblocks && ua < sizeof wa; i++) {
		char d[256];
		col_workload_describe(&a->blocks[i].block->work, d, sizeof d);
		ua += (size_t)snprintf(wa + ua, sizeof wa - ua, "%s%s: %s", i ? "; " : "", a->blocks[i].block->name, d);
	}
	for (int i = 0; i < b->nblocks && ub < sizeof wb; i++) {
		char d[256];
		col_workload_describe(&b->blocks[i].block->work, d, sizeof d);
		ub += (size_t)snprintf(wb + ub, sizeof wb - ub, "%s%s: %s", i ? "; " : "", b->blocks[i].block->name, d);
	}
	if (strcmp(wa, wb)) {
		/* name the first block that differs rather than both whole lists */
		int i = 0;
		while (i < a->nblocks && i < b->nblocks && !strcmp(a->blocks[i].block->name, b->blocks[i].block->name)) {
			char x[256], y[256];
			col_workload_describe(&a->blocks[i].block->work, x, sizeof x);
			col_workload_describe(&b->blocks[i].block->work, y, sizeof y);
			if (strcmp(x, y))
				break;
			i++;
		}
		char x[300], y[300];
		if (i < a->nblocks)
			col_workload_describe(&a->blocks[i].block->work, x, sizeof x);
		else
			snprintf(x, sizeof x, "(no block %d)", i + 1);
		if (i < b->nblocks)
			col_workload_describe(&b->blocks[i].block->work, y, sizeof y);
		else
			snprintf(y, sizeof y, "(no block %d)", i + 1);
		add_reason(why, n, "workload", x, y);
	}
	/* imported runs have no workload description: their sources are it */
	char sa[600], sb[600];
	snprintf(sa, sizeof sa, "%s %s vs %s", a->profile->imported[0] ? a->profile->imported : "collected",
		 a->profile->blocks[0].source[0], a->profile->blocks[0].source[1]);
	snprintf(sb, sizeof sb, "%s %s vs %s", b->profile->imported[0] ? b->profile->imported : "collected",
		 b->profile->blocks[0].source[0], b->profile->blocks[0].source[1]);
	if ((a->profile->imported[0] || b->profile->imported[0]) && strcmp(sa, sb))
		add_reason(why, n, "imported source", sa, sb);
	major(a->host.tool_version, ma, sizeof ma);
	major(b->host.tool_version, mb, sizeof mb);
	if (strcmp(ma, mb))
		add_reason(why, n, "major tool version", a->host.tool_version, b->host.tool_version);
}

/* One variant's samples grouped by round, in the order they were taken. */
struct grouped {
	int64_t *x;
	size_t *off;
	size_t nrounds;
};

static int group(const struct col_variant_run *vr, struct grouped *g)
{
	g->x = malloc((vr->nsamples + 1) * sizeof *g->x);
	g->off = malloc((vr->nsamples + 2) * sizeof *g->off);
	g->nrounds = 0;
	if (!g->x || !g->off)
		return -1;
	g->off[0] = 0;
	for (size_t i = 0; i < vr->nsamples; i++) {
		if (i && vr->round[i] != vr->round[i - 1])
			g->off[++g->nrounds] = i;
		g->x[i] = vr->samples_ns[i];
	}
	if (vr->nsamples)
		g->off[++g->nrounds] = vr->nsamples;
	return 0;
}

static void f_us(char *b, size_t n, const struct ana_qci *q)
{
	if (!isfinite(q->estimate))
		snprintf(b, n, "n/a");
	else if (q->available)
		snprintf(b, n, "%.1f us [%.1f, %.1f]", q->estimate / 1e3, q->lo / 1e3, q->hi / 1e3);
	else
		snprintf(b, n, "%.1f us (no CI: %s)", q->estimate / 1e3, q->reason ? q->reason : "too few samples");
}

static const char *outcome(const struct ana_comparison *c)
{
	if (c->outcome == ANA_CMP_REGRESSION)
		return "**REGRESSION**";
	if (c->outcome == ANA_CMP_PASS)
		return c->faster ? "PASS (faster)" : "PASS";
	return "*INCONCLUSIVE*";
}

/* The rows of one block's variant: B over A at p95, p99, p50. */
static int compare_variant(struct opr_buf *out, const struct ana_findings *fa, int ba,
			   const struct ana_findings *fb, int bb, int v, double threshold,
			   uint64_t seed, struct opr_error *err)
{
	const struct col_variant_run *A = &fa->run->blocks[ba].v[v], *B = &fb->run->blocks[bb].v[v];
	const struct ana_latency *la = &fa->blocks[ba].lat[v], *lb = &fb->blocks[bb].lat[v];
	struct grouped ga = {0}, gb = {0};
	int rc = 0;
	if (group(A, &ga) || group(B, &gb)) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		goto out;
	}
	/* the i-th round of A beside the i-th round of B: the runs were not
	 * interleaved, so resampling pairs them only for the bootstrap's shape */
	size_t R = ga.nrounds < gb.nrounds ? ga.nrounds : gb.nrounds;
	struct ana_rounds rd = {ga.x, gb.x, ga.off, gb.off, R};
	static const double qs[] = {0.95, 0.99, 0.50};
	const struct ana_qci *qa[] = {&la->p95, &la->p99, &la->p50}, *qb[] = {&lb->p95, &lb->p99, &lb->p50};
	for (int i = 0; i < 3; i++) {
		char xa[96], xb[96], ratio[96] = "n/a", p[32] = "n/a";
		const char *oc = "*INCONCLUSIVE*";
		f_us(xa, sizeof xa, qa[i]);
		f_us(xb, sizeof xb, qb[i]);
		size_t need = ana_min_samples(qs[i], 0.95);
		struct ana_comparison c;
		struct ana_compare_opts o = {qs[i], threshold, 0.05, 0.95, CMP_NBOOT, seed + (uint64_t)i};
		struct opr_error e2 = {0};
		if (R < 4 || A->nsamples < need || B->nsamples < need) {
			snprintf(ratio, sizeof ratio, "not enough samples (%zu, %zu; %zu rounds; p%.0f needs %zu)",
				 A->nsamples, B->nsamples, R, 100 * qs[i], need);
		} else if (ana_compare_rounds(&rd, &o, &c, &e2)) {
			if (e2.code == OPR_ENOMEM) {
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
				goto out;
			}
			snprintf(ratio, sizeof ratio, "%s", e2.msg);
		} else {
			snprintf(ratio, sizeof ratio, "x%.3f [%.3f, %.3f]", c.ratio.ratio, c.ratio.lo, c.ratio.hi);
			snprintf(p, sizeof p, "%.3g", c.p_rank);
			oc = outcome(&c);
		}
		opr_buf_printf(out, "| %s | %s | p%.0f | %s | %s | %s | %s | %s |\n",
			       fa->run->blocks[ba].block->name, col_variant_name(v), 100 * qs[i], xa, xb,
			       ratio, p, oc);
	}
out:
	free(ga.x);
	free(ga.off);
	free(gb.x);
	free(gb.off);
	return rc;
}

static int write_report(struct opr_buf *out, const char *pa, const char *pb,
			const struct ana_findings *fa, const struct ana_findings *fb,
			const char *why, struct opr_error *err)
{
	const struct col_run *a = fa->run, *b = fb->run;
	opr_buf_printf(out, "# Comparison: %s -> %s\n\n", pa, pb);
	if (*why)
		opr_buf_printf(out, "**NOT COMPARABLE: compared only because --force was given.** %s.\n"
			       "The ratios below mix those differences into the effect.\n\n", why);
	else
		opr_buf_printf(out, "Comparable: same host class, envelope, workload and major tool version.\n\n");
	opr_buf_printf(out, "| | A | B |\n| --- | --- | --- |\n");
	opr_buf_printf(out, "| archive | %s | %s |\n| started (UTC) | %s | %s |\n", pa, pb, a->started_utc,
		       b->started_utc);
	opr_buf_printf(out, "| host | %s / %d cpus | %s / %d cpus |\n", a->host.cpu_model, a->host.cpus_online,
		       b->host.cpu_model, b->host.cpus_online);
	opr_buf_printf(out, "| envelope | %s | %s |\n| model revision | %s | %s |\n| tool | %s (%s) | %s (%s) |\n",
		       a->profile->envelope.name, b->profile->envelope.name, a->profile->model_revision,
		       b->profile->model_revision, a->host.tool_version, a->host.git_revision,
		       b->host.tool_version, b->host.git_revision);
	opr_buf_printf(out, "| verdict | %s | %s |\n\n", ana_verdict_name(fa->verdict), ana_verdict_name(fb->verdict));
	opr_buf_printf(out, "B over A, tail first (host clock, measured; distribution-free 95%% CIs of each "
		       "percentile; ratio CI from a %d-replicate round bootstrap; p = min(Mann-Whitney, KS); "
		       "regression threshold %.0f%%):\n\n",
		       CMP_NBOOT, 100 * b->profile->sla.max_regression);
	opr_buf_printf(out, "| block | variant | metric | A | B | B / A [95%% CI] | p | outcome |\n"
		       "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
	int shown = 0, rc = 0;
	for (int i = 0; i < a->nblocks && !rc; i++)
		for (int j = 0; j < b->nblocks && !rc; j++) {
			if (strcmp(a->blocks[i].block->name, b->blocks[j].block->name))
				continue;
			shown++;
			for (int v = 0; v < 2 && !rc; v++)
				rc = compare_variant(out, fa, i, fb, j, v, b->profile->sla.max_regression,
						     b->profile->seed + (uint64_t)i * 7919 + (uint64_t)v * 31, err);
		}
	if (!rc && !shown)
		opr_buf_printf(out, "\nNo block is in both runs.\n");
	return rc;
}

int cmd_compare(int argc, char **argv)
{
	const char *out = NULL;
	int force = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_FLAG, "force", NULL, "compare runs that are not comparable (the report says so first)", &force},
		{OPR_OPT_PATH, "out", "FILE", "also write the report (Markdown) to FILE", &out},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"compare", "compare A B [--force] [--out FILE]",
		"Compare the run archives A and B block by block, tail first: for each variant B's\n"
		"p95, p99 and p50 over A's as a ratio with a round-bootstrap CI, the rank tests and\n"
		"the outcome against B's regression threshold. Prints Markdown on stdout.",
		"Runs from a different host (CPU model and count), envelope, workload or major tool\n"
		"version are not comparable: exit 2 with the reasons, unless --force; then the\n"
		"report opens with NOT COMPARABLE and the reasons.\n"
		"Exit status: 0 compared, 1 failure, 2 bad usage, a bad archive or not comparable.",
		opts};
	struct opr_error err = {0};
	const char *pos[2];
	int npos;
	int rc;
	if (opr_cmd_start(&help, argc, argv, pos, 2, &npos, NULL, 2, "compare: A and B are required", &rc))
		return rc;
	struct col_run *a = NULL, *b = NULL;
	struct ana_findings *fa = NULL, *fb = NULL;
	struct opr_buf why = {0}, md = {0};
	char *text = NULL;
	int nwhy = 0;
	/* FILE is replaced as before (--force here means "compare anyway"), but
	 * atomically and by one compare at a time */
	struct opr_output o = OPR_OUTPUT_INIT;
	if (out && (rc = opr_output_claim(&o, out, OPR_OUT_FILE, NULL, 1, &err)))
		goto out;
	if ((rc = col_archive_load(pos[0], &a, &err)) || (rc = col_archive_load(pos[1], &b, &err)))
		goto out;
	comparability(a, b, &why, &nwhy);
	if (why.oom) {
		rc = opr_error_set(&err, OPR_ENOMEM, "out of memory");
		goto out;
	}
	if (nwhy && !force) {
		rc = opr_error_set(&err, OPR_EINPUT, "compare: '%s' and '%s' are not comparable: %s (pass --force to compare anyway)",
				   pos[0], pos[1], why.p);
		goto out;
	}
	if ((rc = ana_analyze(a, pos[0], &fa, &err)) || (rc = ana_analyze(b, pos[1], &fb, &err)) ||
	    (rc = write_report(&md, pos[0], pos[1], fa, fb, nwhy ? why.p : "", &err)))
		goto out;
	if (!(text = opr_buf_take(&md))) {
		rc = opr_error_set(&err, OPR_ENOMEM, "out of memory");
		goto out;
	}
	fputs(text, stdout);
	if (out && !(rc = opr_output_open(&o, &err)) &&
	    !(rc = opr_write_file(o.tmp, text, strlen(text), &err)))
		rc = opr_output_publish(&o, &err);
out:
	if (rc)
		opr_output_name(&o, &err);
	opr_output_release(&o);
	free(text);
	opr_buf_release(&md);
	opr_buf_release(&why);
	ana_findings_free(fa);
	ana_findings_free(fb);
	col_run_free(a);
	col_run_free(b);
	return rc ? opr_fail(&err) : OPR_EXIT_OK;
}
