/* tests/test_markdown.c: the Markdown and HTML packet: the golden packet.md of
 * fixtures/findings/sample.json (unified diff on failure; regenerated only with
 * OPREVIEW_GOLDEN=regenerate, see tests/golden.sh), the cmark-gfm check (tables,
 * task list, stranded rows), escaping round trips through cmark-gfm on seeded
 * random text, the self-contained HTML page and its SVG charts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../report/report_int.h"

#define SAMPLE "fixtures/findings/sample.json"
#define GOLDEN "fixtures/golden/packet.md"
#define TEMPLATES "templates"

static uint64_t rng_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static json_t *load_sample(void)
{
	json_error_t je;
	json_t *f = json_load_file(SAMPLE, JSON_REJECT_DUPLICATES, &je);
	if (!f)
		fail_msg("%s:%d: %s (run from the repository root)", SAMPLE, je.line, je.text);
	return f;
}

static char *render_md(json_t *f)
{
	char *md = NULL;
	struct opr_error err;
	memset(&err, 0, sizeof err);
	if (rep_markdown(f, TEMPLATES, &md, &err))
		fail_msg("rep_markdown: %s:%d:%d: %s", err.file, err.line, err.col, err.msg);
	assert_non_null(md);
	return md;
}

static char *render_html(const char *md, json_t *f)
{
	char *html = NULL;
	struct opr_error err;
	memset(&err, 0, sizeof err);
	if (rep_html(md, f, &html, &err))
		fail_msg("rep_html: %s", err.msg);
	assert_non_null(html);
	return html;
}

static char *read_all(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	struct opr_buf b = { 0 };
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		opr_buf_add(&b, chunk, n);
	fclose(fp);
	return opr_buf_take(&b);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* ---- golden ---- */

static void write_file(const char *path, const char *s)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(s, 1, strlen(s), fp), strlen(s));
	assert_int_equal(fclose(fp), 0);
}

static void test_golden(void **state)
{
	(void)state;
	json_t *f = load_sample();
	char *md = render_md(f);
	const char *mode = getenv("OPREVIEW_GOLDEN");
	if (mode && !strcmp(mode, "regenerate")) {
		write_file(GOLDEN, md);
		fprintf(stderr, "regenerated %s\n", GOLDEN);
	}
	char *want = read_all(GOLDEN);
	if (!want)
		fail_msg("%s is missing: run `make golden`", GOLDEN);
	if (strcmp(want, md)) {
		char a[] = "/tmp/opr-golden-XXXXXX", b[] = "/tmp/opr-actual-XXXXXX";
		int fa = mkstemp(a), fb = mkstemp(b);
		assert_true(fa >= 0 && fb >= 0);
		close(fa);
		close(fb);
		write_file(a, want);
		write_file(b, md);
		char cmd[256];
		snprintf(cmd, sizeof cmd, "diff -u %s %s >&2", a, b);
		if (system(cmd) == -1)
			fprintf(stderr, "cannot run diff\n");
		unlink(a);
		unlink(b);
		fail_msg("packet.md differs from %s (diff above; `make golden` regenerates it)", GOLDEN);
	}
	free(want);
	free(md);
	json_decref(f);
}

/* ---- the Markdown packet ---- */

static void test_packet_structure(void **state)
{
	(void)state;
	json_t *f = load_sample();
	char *md = render_md(f);
	int tables = -1;
	struct opr_error err;
	assert_int_equal(rep_markdown_check(md, &tables, &err), 0);
	/* the first screen: no table before the owners' actions; then the
	 * matrix, mitigations, trend, bottleneck map, worksheet and rejected
	 * plans, pipeline, statistics 2, counters 2, production shapes, inputs
	 * 4, ownership (the rules are in findings.json and the workbook) */
	assert_int_equal(tables, 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + 2 + 1 + 4 + 1);
	/* sections in the order a reviewer digs */
	const char *order[] = { "# Fusion and tiling review: resnet-int8-review — HOLD\n",
				"**Primary metric: resnet-stage2-conv candidate p95** = 435.1 us \\[430.0, 441.2\\] (measured)",
				"\n**HOLD** (exit code 11): resnet-stage2-conv candidate: p95 regresses",
				"\n- **resnet-stage2-conv** — **FAIL** regression p95 (host)",
				"\nWhat each owner must do now:\n",
				"\n- **kernel-performance-owner** (kernel-owner@example.org):\n"
				"  - resnet-stage2-conv: stagger the fused kernel's GLOBAL loads",
				"## Validation matrix with rollback triggers", "## Mitigation proposal with owners",
				"## Trend", "## Bottleneck map", "## Fusion and tile-plan worksheet",
				"### Rejected alternatives", "## Pipeline results", "## Tail-first statistics",
				"## Model validation", "## Counters", "## Production shapes", "## Inputs",
				"### Host environment", "## How to reproduce", "## Rules applied",
				"## Closure artifacts", "## Ownership", "## Sign-off" };
	const char *at = md;
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		const char *p = strstr(at, order[i]);
		if (!p)
			fail_msg("'%s' missing or out of order", order[i]);
		at = p;
	}
	assert_true(!strncmp(md, order[0], strlen(order[0])));
	/* the decision comes before any table */
	assert_true(strstr(md, "\n| ") > strstr(md, "Then every owner approves or rejects"));
	/* the validation matrix: a row per block and variant, a column per check */
	assert_non_null(strstr(md, "| Block | Variant | numerical quality | SLA p95 | SLA p99 | throughput |"));
	assert_non_null(strstr(md, "| resnet-stage2-conv | candidate | PASS rel\\_l2 vs fp64 0.00034 | "
				   "PASS 688.9 us \\[671.5, 706.0\\] |"));
	assert_non_null(strstr(md, "| **FAIL** x1.080 \\[1.050, 1.110\\] p=6e-05 |"));
	/* a passing baseline cell is its status; the candidate's cells carry values */
	assert_int_equal(count(md, "\n| resnet-stage2-conv | baseline | PASS | PASS | "), 1);
	assert_int_equal(count(md, "\n| resnet-stage2-conv | candidate | PASS rel"), 1);
	assert_int_equal(count(md, "\n| decode-mlp-int8 | baseline | PASS | PASS | "), 1);
	assert_int_equal(count(md, "\n| decode-mlp-int8 | candidate | PASS max"), 1);
	/* the trend: four runs, the last one moved (worse), the rest apart */
	assert_non_null(strstr(md, "| 4 | 2026-11-28T09:00:00Z | c7d5a2e9f013 (this run) | 435.1 us | \\[430.0, 441.2\\] | HOLD | **moved +8.5% (worse)** |"));
	assert_non_null(strstr(md, "2 run(s) of the same block and metric on another host class are kept apart"));
	assert_non_null(strstr(md, "| decode-mlp-int8 | synthetic | no production trace named |"));
	assert_non_null(strstr(md, "- kernel performance owner: profile traces + bottleneck map, "
				   "`closure/kernel-performance-owner.md`\n"));
	assert_non_null(strstr(md, "\nThe change: fuse bias and relu into the conv epilogue"));
	/* one sign-off checkbox per role, with the owner's name */
	assert_non_null(strstr(md, "- [ ] ml-compiler-engineer — compiler-owner@example.org\n"));
	assert_int_equal(count(md, "\n- [ ] "), 3);
	/* the summary line of the fused conv: fewer launches, less traffic, worse p95 */
	assert_non_null(strstr(md, "p95 402.9 us \\[398.1, 407.5\\] → 435.1 us \\[430.0, 441.2\\], "
				   "x1.08 \\[1.05, 1.11\\] REGRESSION; launches 3 → 1"));
	assert_non_null(strstr(md, "pipeline p95 612.4 us → 688.9 us"));
	/* unavailable counters carry their reason, never a 0, listed once where
	 * they are missing everywhere for the same reason */
	assert_non_null(strstr(md, "| every block | both | PAPI\\_TOT\\_CYC, PAPI\\_L1\\_DCM | "
				   "no hardware performance counters in this virtual machine |"));
	assert_null(strstr(md, "PAPI\\_TOT\\_CYC (sum over samples) | 0 |"));
	assert_non_null(strstr(md, "| decode-mlp-int8 | p99 | unavailable | *INCONCLUSIVE* | - | - | "
				   "not enough samples (n=40 \\< 100) |"));
	/* the reproduce commands as code spans */
	assert_non_null(strstr(md, "- Run: `opreview run --profile fixtures/profiles/default.yaml --out DIR`"));
	free(md);
	json_decref(f);
}

static void test_check_catches_broken_table(void **state)
{
	(void)state;
	const char *md = "# t\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\n| 3 | 4 |\n";
	int tables = -5;
	struct opr_error err;
	memset(&err, 0, sizeof err);
	assert_int_equal(rep_markdown_check(md, &tables, &err), OPR_EINPUT);
	assert_int_equal(err.line, 7);
	assert_int_equal(err.col, 1);
	assert_int_equal(tables, -5);
	assert_int_equal(rep_markdown_check("| a |\n| --- |\n| x \\| y |\n\n| b |\n| - |\n", &tables, &err), 0);
	assert_int_equal(tables, 2);
}

/* Seeded random values with Markdown's special characters, rendered through
 * a template into a paragraph and a table cell, then through cmark-gfm: the
 * HTML text must be the value itself (HTML-escaped), with the table intact. */
static void test_escape_roundtrip(void **state)
{
	(void)state;
	static const char alphabet[] = "aZ09 -+.|\\*_`[]<>#~&:/w@!()=\"'";
	uint64_t seed = 0x5eed0003;
	for (int round = 0; round < 300; round++) {
		char s[48];
		size_t n = 1 + rng_next(&seed) % 40;
		for (size_t i = 0; i < n; i++)
			s[i] = alphabet[rng_next(&seed) % (sizeof alphabet - 1)];
		s[n] = '\0';
		/* cmark trims a cell's and a paragraph's outer spaces */
		while (n && s[n - 1] == ' ')
			s[--n] = '\0';
		size_t lead = strspn(s, " ");
		if (!s[lead])
			continue;
		json_t *ctx = json_pack("{s:s}", "v", s + lead);
		char *md = NULL, *html = NULL;
		struct opr_error err;
		assert_int_equal(rep_template_render_string("{{v}}\n\n| h |\n| --- |\n| {{v}} |\n", "t", NULL,
							    ctx, &md, &err), 0);
		assert_int_equal(rep_md_to_html(md, &html, &err), 0);
		struct opr_buf want = { 0 };
		for (const char *p = s + lead; *p; p++) {
			if (*p == '&')
				opr_buf_puts(&want, "&amp;");
			else if (*p == '<')
				opr_buf_puts(&want, "&lt;");
			else if (*p == '>')
				opr_buf_puts(&want, "&gt;");
			else if (*p == '"')
				opr_buf_puts(&want, "&quot;");
			else
				opr_buf_add(&want, p, 1);
		}
		char *w = opr_buf_take(&want), expect[512];
		snprintf(expect, sizeof expect, "<p>%s</p>\n<table>", w);
		if (strncmp(html, expect, strlen(expect)))
			fail_msg("paragraph: value '%s' md '%s' gave '%s'", s + lead, md, html);
		snprintf(expect, sizeof expect, "<tbody>\n<tr>\n<td>%s</td>\n</tr>\n</tbody>", w);
		if (!strstr(html, expect))
			fail_msg("cell: value '%s' md '%s' gave '%s'", s + lead, md, html);
		assert_null(strstr(html, "href="));
		free(w);
		free(md);
		free(html);
		json_decref(ctx);
	}
}

/* Seeded perturbations of the sample: the formatted values follow the data. */
static void test_values_follow_findings(void **state)
{
	(void)state;
	uint64_t seed = 0x5eed0004;
	for (int round = 0; round < 8; round++) {
		json_t *f = load_sample();
		json_t *cand = json_array_get(json_object_get(json_array_get(json_object_get(f, "blocks"), 0),
							      "variants"), 1);
		double p95 = 100.0 + (double)(rng_next(&seed) % 2000000) / 1000.0;
		long long launches = 1 + (long long)(rng_next(&seed) % 5000);
		long long bytes = 1 + (long long)(rng_next(&seed) % 4000000000LL);
		json_object_set_new(json_object_get(cand, "pipeline"), "p95_us", json_real(p95));
		json_object_set_new(cand, "launches", json_integer(launches));
		json_object_set_new(cand, "global_bytes", json_integer(bytes));
		char *md = render_md(f);
		char want[256], us[32], by[32];
		if (p95 >= 10000.0)
			snprintf(us, sizeof us, "%.2f ms", p95 / 1000.0);
		else
			snprintf(us, sizeof us, "%.1f us", p95);
		snprintf(want, sizeof want, "pipeline p95 612.4 us → %s", us);
		if (!strstr(md, want))
			fail_msg("'%s' missing", want);
		if (launches < 1000)
			snprintf(want, sizeof want, "launches 3 → %lld;", launches);
		else
			snprintf(want, sizeof want, "launches 3 → %lld,%03lld;", launches / 1000,
				 launches % 1000);
		if (!strstr(md, want))
			fail_msg("'%s' missing", want);
		double v = (double)bytes;
		const char *unit[] = { "B", "KiB", "MiB", "GiB" };
		int u = 0;
		while (v >= 1024.0 && u < 3) {
			v /= 1024.0;
			u++;
		}
		if (u)
			snprintf(by, sizeof by, "→ %.2f %s", v, unit[u]);
		else
			snprintf(by, sizeof by, "→ %.0f B", v);
		if (!strstr(md, by))
			fail_msg("'%s' missing", by);
		int tables = 0;
		struct opr_error err;
		assert_int_equal(rep_markdown_check(md, &tables, &err), 0);
		assert_int_equal(tables, 17);
		free(md);
		json_decref(f);
	}
}

static void test_bad_findings(void **state)
{
	(void)state;
	json_t *f = load_sample();
	char *md = (char *)"poison";
	struct opr_error err;
	memset(&err, 0, sizeof err);
	assert_int_equal(rep_markdown(f, "/nonexistent-templates", &md, &err), OPR_EIO);
	assert_string_equal(md, "poison");
	json_object_set_new(f, "blocks", json_string("x"));
	assert_int_equal(rep_markdown(f, TEMPLATES, &md, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "'blocks'"));
	json_object_set_new(f, "findings_version", json_integer(2));
	assert_int_equal(rep_markdown(f, TEMPLATES, &md, &err), OPR_EINPUT);
	assert_string_equal(md, "poison");
	json_decref(f);
}

/* ---- HTML ---- */

static void test_html_self_contained(void **state)
{
	(void)state;
	json_t *f = load_sample();
	char *md = render_md(f);
	char *html = render_html(md, f);
	assert_true(!strncmp(html, "<!DOCTYPE html>", 15));
	assert_non_null(strstr(html, "<title>Fusion and tiling review: resnet-int8-review — HOLD</title>"));
	const char *banned[] = { "http://", "https://", "src=", "<link", "<script", "@import", "url(",
				 "mailto:", "raw HTML omitted" };
	for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
		if (strstr(html, banned[i]))
			fail_msg("html contains '%s'", banned[i]);
	for (const char *p = strstr(html, "href="); p; p = strstr(p + 1, "href="))
		assert_true(!strncmp(p, "href=\"#", 7));
	/* 2 blocks: latency, wait histogram, roofline each, plus fusion and trend */
	assert_int_equal(count(html, "<svg "), 8);
	assert_int_equal(count(html, "</svg>"), 8);
	assert_int_equal(count(html, "<svg viewBox=\"0 0 640 360\""), 8);
	assert_int_equal(count(html, "<title id=\"chart-"), 8);
	assert_non_null(strstr(html, "<section id=\"charts\">\n<h2>Charts</h2>"));
	assert_true(strstr(html, "<h2>Charts</h2>") < strstr(html, "<h2>Inputs</h2>"));
	/* tables (all 17) scroll inside a wrapper; none of the sample's has more
	 * than 8 rows, so none is collapsed; css for print and phones */
	assert_int_equal(count(html, "<div class=\"table-wrap\"><table>"), 17);
	assert_int_equal(count(html, "<table>"), 17);
	assert_int_equal(count(html, "<details class=\"long\">"), 0);
	/* a table of 9 rows is collapsed, saying so; one of 8 is not */
	for (int rows = 8; rows <= 9; rows++) {
		struct opr_buf t = { 0 };
		opr_buf_puts(&t, "# t\n\n| a |\n| --- |\n");
		for (int k = 0; k < rows; k++)
			opr_buf_printf(&t, "| %d |\n", k);
		char *tmd = opr_buf_take(&t), *th = render_html(tmd, NULL);
		assert_int_equal(count(th, "<details class=\"long\"><summary>Show the table (9 rows)</summary>"
					   "<div class=\"table-wrap\"><table>"), rows == 9);
		assert_int_equal(count(th, "</table></div></details>"), rows == 9);
		free(tmd);
		free(th);
	}
	/* the decision is on the first screen: before any table or chart */
	assert_true(strstr(html, "What each owner must do now") < strstr(html, "<table>"));
	assert_true(strstr(html, "What each owner must do now") < strstr(html, "<svg "));
	assert_non_null(strstr(html, "@media print"));
	assert_non_null(strstr(html, "@media (max-width:640px)"));
	assert_non_null(strstr(html, "max-width:100%"));
	/* three disabled task-list checkboxes */
	assert_int_equal(count(html, "<input type=\"checkbox\" disabled=\"\" />"), 3);
	/* deterministic */
	char *again = render_html(md, f);
	assert_string_equal(html, again);
	free(again);
	free(html);
	free(md);
	json_decref(f);
}

/* The roofline points sit at I = 2 MACs / GLOBAL bytes and 2 MACs / model_ns,
 * computed here independently from the sample's numbers. */
static void test_svg_values(void **state)
{
	(void)state;
	json_t *f = load_sample();
	char *charts = NULL;
	int n = 0;
	struct opr_error err;
	assert_int_equal(rep_svg_charts(f, &charts, &n, &err), 0);
	assert_int_equal(n, 8);
	/* the trend: four points, the last ringed as the change point */
	assert_non_null(strstr(charts, "Trend: resnet-stage2-conv candidate p95"));
	assert_non_null(strstr(charts, "<title>run 4: 435.1 us</title></circle>\n<circle"));
	assert_int_equal(count(charts, "<title>change point</title>"), 1);
	json_t *blk, *v;
	size_t i, k;
	json_array_foreach(json_object_get(f, "blocks"), i, blk) {
		json_array_foreach(json_object_get(blk, "variants"), k, v) {
			double macs = json_number_value(json_object_get(v, "macs"));
			double gb = json_number_value(json_object_get(v, "global_bytes"));
			double t = json_number_value(json_object_get(v, "model_ns"));
			char want[128];
			snprintf(want, sizeof want, "<title>%s: %.1f ops/byte, %.3f TOPS</title>",
				 json_string_value(json_object_get(v, "variant")), 2 * macs / gb,
				 2 * macs / t / 1000.0);
			if (!strstr(charts, want))
				fail_msg("roofline point '%s' missing", want);
		}
	}
	/* fusion ratios of the conv block: bytes 1081344/2958336, launches 1/3 */
	assert_non_null(strstr(charts, "<title>GLOBAL bytes: x0.366</title>"));
	assert_non_null(strstr(charts, "<title>launches: x0.333</title>"));
	assert_non_null(strstr(charts, "<title>pipeline p95: x1.125</title>"));
	/* the qgemm p99 has no CI: drawn dashed, said so */
	assert_non_null(strstr(charts, "candidate p99: 1270.2 us (no CI: not enough samples)"));
	/* a name with XML specials is escaped */
	json_object_set_new(json_array_get(json_object_get(f, "blocks"), 0), "name",
			    json_string("a<b>&\"c\""));
	free(charts);
	assert_int_equal(rep_svg_charts(f, &charts, &n, &err), 0);
	assert_non_null(strstr(charts, "a&lt;b&gt;&amp;&quot;c&quot;: host latency percentiles"));
	assert_null(strstr(charts, "a<b>"));
	free(charts);
	json_decref(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_packet_structure),
		cmocka_unit_test(test_check_catches_broken_table),
		cmocka_unit_test(test_escape_roundtrip),
		cmocka_unit_test(test_values_follow_findings),
		cmocka_unit_test(test_bad_findings),
		cmocka_unit_test(test_html_self_contained),
		cmocka_unit_test(test_svg_values),
	};
	return cmocka_run_group_tests_name("markdown", tests, NULL, NULL);
}
