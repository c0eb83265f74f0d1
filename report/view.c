/* report/view.c: the template context of the packet. Templates cannot format,
 * so every number of findings.json becomes a display string here: times in
 * us/ms, bytes in IEC units, ratios with their CIs, provenance tags, status
 * badges; unavailable values say why instead of showing 0. */
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reading findings and writing the view: rep_vget, rep_vstr, rep_vnum, rep_vset,
 * rep_vsetf, rep_vsets, rep_vpush (view_util.c, shared with view_review.c). */

/* ---- formatting (fixed precision: the packet is byte-reproducible) ---- */

static void f_us(char *b, size_t n, double us)
{
	if (!isfinite(us))
		snprintf(b, n, "n/a");
	else if (fabs(us) >= 10000.0)
		snprintf(b, n, "%.2f ms", us / 1000.0);
	else
		snprintf(b, n, "%.1f us", us);
}

static void f_bytes(char *b, size_t n, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	if (!isfinite(v)) {
		snprintf(b, n, "n/a");
		return;
	}
	while (fabs(v) >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(b, n, "%.0f B", v);
	else
		snprintf(b, n, "%.2f %s", v, unit[u]);
}

/* Integers with thousands separators: 115,605,504. */
static void f_count(char *b, size_t n, double v)
{
	if (!isfinite(v)) {
		snprintf(b, n, "n/a");
		return;
	}
	if (fabs(v) >= 1e18 || v != floor(v)) {
		snprintf(b, n, "%.6g", v);
		return;
	}
	char digits[32];
	snprintf(digits, sizeof digits, "%.0f", fabs(v));
	size_t len = strlen(digits), k = 0;
	char out[48];
	if (v < 0)
		out[k++] = '-';
	for (size_t i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			out[k++] = ',';
		out[k++] = digits[i];
	}
	out[k] = '\0';
	snprintf(b, n, "%s", out);
}

static void f_fixed(char *b, size_t n, double v, int prec)
{
	if (isfinite(v))
		snprintf(b, n, "%.*f", prec, v);
	else
		snprintf(b, n, "n/a");
}

/* "x1.08 [1.05, 1.11]" */
static void f_ratio_ci(char *b, size_t n, double r, double lo, double hi)
{
	if (!isfinite(r))
		snprintf(b, n, "n/a");
	else if (isfinite(lo) && isfinite(hi))
		snprintf(b, n, "x%.2f [%.2f, %.2f]", r, lo, hi);
	else
		snprintf(b, n, "x%.2f", r);
}

/* A quantile with its CI: "402.9 us [398.1, 407.5]" or the reason it is missing. */
static void f_quantile(char *b, size_t n, json_t *q)
{
	double v = rep_vnum(q, "value_ns") / 1e3, lo = rep_vnum(q, "lo_ns") / 1e3, hi = rep_vnum(q, "hi_ns") / 1e3;
	if (!json_is_true(rep_vget(q, "available"))) {
		const char *why = rep_vstr(q, "reason");
		/* findings.json keeps the whole reason */
		snprintf(b, n, "%s", !*why || !strncmp(why, "too few samples", 15) ? "too few samples" : why);
		return;
	}
	char vs[32];
	f_us(vs, sizeof vs, v);
	/* the CI in the value's unit: "18.88 ms [18.80, 19.53]" */
	if (isfinite(lo) && isfinite(hi) && fabs(v) >= 10000.0)
		snprintf(b, n, "%s [%.2f, %.2f]", vs, lo / 1000.0, hi / 1000.0);
	else if (isfinite(lo) && isfinite(hi))
		snprintf(b, n, "%s [%.1f, %.1f]", vs, lo, hi);
	else
		snprintf(b, n, "%s", vs);
}

/* A status as text: failures and warnings stand out, passes do not. */
static const char *badge(const char *status)
{
	if (!strcmp(status, "FAIL") || !strcmp(status, "REGRESSION") || !strcmp(status, "HOLD") ||
	    !strcmp(status, "ROLLBACK"))
		return "**";
	if (!strcmp(status, "WARN") || !strcmp(status, "INCONCLUSIVE") ||
	    !strcmp(status, "SHIP WITH MITIGATIONS"))
		return "*";
	return "";
}

static void set_badge(struct rep_vb *vb, json_t *o, const char *k, const char *status)
{
	/* raw Markdown: the status words hold no special characters */
	const char *m = badge(status);
	rep_vsetf(vb, o, k, "%s%s%s", m, status, m);
}

/* A code span that survives a table cell: backticks longer than any run in s,
 * and '|' escaped (GFM splits cells before it parses code spans). Raw Markdown. */
static void set_code(struct rep_vb *vb, json_t *o, const char *k, const char *s)
{
	int run = 0, longest = 0;
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	char fence[8] = "";
	int nf = longest + 1 < 7 ? longest + 1 : 7;
	memset(fence, '`', (size_t)nf);
	fence[nf] = '\0';
	struct opr_buf b = { 0 };
	opr_buf_puts(&b, fence);
	if (s[0] == '`')
		opr_buf_puts(&b, " ");
	for (const char *p = s; *p; p++) {
		if (*p == '|')
			opr_buf_puts(&b, "\\|");
		else if (*p == '\n' || *p == '\r')
			opr_buf_puts(&b, " ");
		else
			opr_buf_add(&b, p, 1);
	}
	if (*s && s[strlen(s) - 1] == '`')
		opr_buf_puts(&b, " ");
	opr_buf_puts(&b, fence);
	char *t = opr_buf_take(&b);
	if (!t) {
		vb->oom = 1;
		return;
	}
	rep_vsets(vb, o, k, t);
	free(t);
}

/* ---- sections of the view ---- */

static json_t *variant_of(json_t *block, const char *name)
{
	json_t *vs = rep_vget(block, "variants"), *v;
	size_t i;
	json_array_foreach(vs, i, v)
		if (!strcmp(rep_vstr(v, "variant"), name))
			return v;
	return NULL;
}

static json_t *comparison_of(json_t *block, const char *metric)
{
	json_t *cs = rep_vget(block, "comparisons"), *c;
	size_t i;
	json_array_foreach(cs, i, c)
		if (!strcmp(rep_vstr(c, "metric"), metric))
			return c;
	return NULL;
}

static void comparison_text(char *b, size_t n, json_t *c)
{
	if (!c) {
		snprintf(b, n, "not compared");
	} else if (!json_is_true(rep_vget(c, "available"))) {
		snprintf(b, n, "unavailable: %s", rep_vstr(c, "reason"));
	} else {
		char r[64];
		f_ratio_ci(r, sizeof r, rep_vnum(c, "ratio"), rep_vnum(c, "lo"), rep_vnum(c, "hi"));
		snprintf(b, n, "%s %s", r, rep_vstr(c, "outcome"));
	}
}

/* "3 → 1": before/after of one number of the two variants. */
static void arrow(char *b, size_t n, const char *x, const char *y)
{
	snprintf(b, n, "%s \u2192 %s", x, y);
}

/* The block's first-screen line: status and what did not pass, the host
 * p95 with its CI, launches, reuse, GLOBAL traffic, pipeline p95. */
static void view_block_summary(struct rep_vb *vb, json_t *o, json_t *blk, json_t *base, json_t *cand)
{
	char a[160], c[160], t[400];
	arrow(t, sizeof t, rep_vstr(base, "primary_bottleneck"), rep_vstr(cand, "primary_bottleneck"));
	rep_vsets(vb, o, "primary_shift", t);
	json_t *p95c = comparison_of(blk, "p95");
	comparison_text(t, sizeof t, p95c);
	/* an unavailable ratio's reason is the check's, named in the line */
	rep_vsets(vb, o, "p95_ratio", p95c && !json_is_true(rep_vget(p95c, "available")) ? "no ratio" : t);
	f_count(a, sizeof a, rep_vnum(base, "launches"));
	f_count(c, sizeof c, rep_vnum(cand, "launches"));
	arrow(t, sizeof t, a, c);
	rep_vsets(vb, o, "launches", t);
	f_fixed(a, sizeof a, rep_vnum(base, "reuse_ratio"), 1);
	f_fixed(c, sizeof c, rep_vnum(cand, "reuse_ratio"), 1);
	arrow(t, sizeof t, a, c);
	rep_vsets(vb, o, "reuse", t);
	f_bytes(a, sizeof a, rep_vnum(base, "global_bytes"));
	f_bytes(c, sizeof c, rep_vnum(cand, "global_bytes"));
	arrow(t, sizeof t, a, c);
	rep_vsets(vb, o, "global_bytes", t);
	f_us(a, sizeof a, rep_vnum(rep_vget(base, "pipeline"), "p95_us"));
	f_us(c, sizeof c, rep_vnum(rep_vget(cand, "pipeline"), "p95_us"));
	arrow(t, sizeof t, a, c);
	rep_vsets(vb, o, "pipeline_p95", t);
	f_count(a, sizeof a, rep_vnum(blk, "launch_reduction"));
	f_us(c, sizeof c, rep_vnum(blk, "launch_overhead_saved_us"));
	if (!strcmp(rep_vstr(blk, "group"), "imported"))
		rep_vsets(vb, o, "launch_reduction", "launches unavailable: an imported run has no device model");
	else
		rep_vsetf(vb, o, "launch_reduction", "%s launch(es) fewer, %s launch overhead saved", a, c);
	/* the primary metric: the host p95 of each variant with its CI */
	f_quantile(a, sizeof a, rep_vget(rep_vget(base, "latency"), "p95"));
	f_quantile(c, sizeof c, rep_vget(rep_vget(cand, "latency"), "p95"));
	arrow(t, sizeof t, a, c);
	if (!strcmp(a, c) && !json_is_true(rep_vget(rep_vget(rep_vget(base, "latency"), "p95"), "available")))
		snprintf(t, sizeof t, "%s in both variants", a); /* "too few samples → too few samples" */
	rep_vsets(vb, o, "p95_host", t);
	/* the block's status and what did not pass, from the analysis */
	const char *st = rep_vstr(blk, "status");
	set_badge(vb, o, "status", *st ? st : "n/a");
	struct opr_buf ab = { 0 };
	json_t *att = rep_vget(blk, "attention"), *x;
	size_t ai;
	/* the failures first, then the warnings: the worst is read first */
	for (int fails = 1; fails >= 0; fails--)
		json_array_foreach(att, ai, x) {
			if (fails != !strcmp(rep_vstr(x, "status"), "FAIL"))
				continue;
			const char *m = badge(rep_vstr(x, "status"));
			char *chk = rep_md_escape(rep_vstr(x, "check"), 0), *val = rep_md_escape(rep_vstr(x, "value"), 0);
			if (!chk || !val) {
				vb->oom = 1;
			} else {
				opr_buf_printf(&ab, "%s%s%s%s %s: %s", ab.len ? "; " : "", m, rep_vstr(x, "status"), m, chk,
					       val);
			}
			free(chk);
			free(val);
		}
	char *attn = opr_buf_take(&ab);
	if (!attn) {
		vb->oom = 1;
		return;
	}
	rep_vsets(vb, o, "attention", attn);
	free(attn);

}

/* One variant's tail-first statistics, pipeline results and batch sweep. */
static void view_variant(struct rep_vb *vb, json_t *var, json_t *stats, json_t *pipes, json_t *sweep)
{
	char a[160], c[160], t[400];
	const char *vn = rep_vstr(var, "variant");
	json_t *lat = rep_vget(var, "latency"), *s = rep_vpush(vb, stats);
	if (!s)
		return;
	rep_vsets(vb, s, "variant", vn);
	f_count(t, sizeof t, rep_vnum(lat, "n"));
	rep_vsets(vb, s, "n", t);
	const char *qs[] = { "p50", "p90", "p95", "p99" };
	for (int k = 0; k < 4; k++) {
		f_quantile(t, sizeof t, rep_vget(lat, qs[k]));
		rep_vsets(vb, s, qs[k], t);
	}
	/* the median without its CI: the table is tail first */
	f_us(t, sizeof t, rep_vnum(rep_vget(lat, "p50"), "value_ns") / 1e3);
	rep_vsets(vb, s, "p50_value", t);
	f_us(t, sizeof t, rep_vnum(lat, "mean_ns") / 1e3);
	rep_vsets(vb, s, "mean", t);
	f_us(t, sizeof t, rep_vnum(lat, "max_ns") / 1e3);
	rep_vsets(vb, s, "max", t);

	json_t *pl = rep_vget(var, "pipeline"), *p = rep_vpush(vb, pipes);
	if (!p)
		return;
	rep_vsets(vb, p, "variant", vn);
	const char *pk[] = { "p50_us", "p95_us", "p99_us", "max_us", "wait_p50_us", "wait_p95_us",
			     "wait_p99_us" };
	const char *pn[] = { "p50", "p95", "p99", "max", "wait_p50", "wait_p95", "wait_p99" };
	for (int k = 0; k < 7; k++) {
		f_us(t, sizeof t, rep_vnum(pl, pk[k]));
		rep_vsets(vb, p, pn[k], t);
	}
	if (isfinite(rep_vnum(pl, "p95_lo_us")))
		rep_vsetf(vb, p, "p95_ci", "[%.1f, %.1f]", rep_vnum(pl, "p95_lo_us"), rep_vnum(pl, "p95_hi_us"));
	f_fixed(a, sizeof a, rep_vnum(pl, "throughput_rps"), 1);
	rep_vsetf(vb, p, "throughput", "%s rps", a);
	f_fixed(t, sizeof t, rep_vnum(pl, "jain_cores"), 3);
	rep_vsets(vb, p, "jain_cores", t);
	f_fixed(t, sizeof t, rep_vnum(pl, "jain_streams"), 3);
	rep_vsets(vb, p, "jain_streams", t);
	f_fixed(t, sizeof t, 100 * rep_vnum(pl, "bw_util"), 0);
	rep_vsetf(vb, p, "bw_util", "%s%%", t);
	f_fixed(t, sizeof t, rep_vnum(pl, "mean_batch"), 2);
	rep_vsets(vb, p, "mean_batch", t);
	f_count(t, sizeof t, rep_vnum(pl, "requests"));
	rep_vsets(vb, p, "requests", t);
	/* L = lambda W with lambda in rps and W in us: the product is
	 * lambda * W * 1e-6 requests in the system */
	f_fixed(a, sizeof a, rep_vnum(pl, "little_L"), 2);
	f_fixed(c, sizeof c, rep_vnum(pl, "little_lambda_rps"), 0);
	rep_vsetf(vb, p, "little", "L = %s = %s rps x %.1f us", a, c, rep_vnum(pl, "little_W_us"));
	json_t *sw = rep_vget(pl, "sweep"), *row;
	size_t i;
	json_array_foreach(sw, i, row) {
		json_t *r = rep_vpush(vb, sweep);
		if (!r)
			return;
		rep_vsets(vb, r, "variant", vn);
		f_count(t, sizeof t, rep_vnum(row, "batch"));
		rep_vsets(vb, r, "batch", t);
		const char *sk[] = { "p50_us", "p95_us", "p99_us", "wait_mean_us" };
		const char *sn[] = { "p50", "p95", "p99", "wait_mean" };
		for (int k = 0; k < 4; k++) {
			f_us(t, sizeof t, rep_vnum(row, sk[k]));
			rep_vsets(vb, r, sn[k], t);
		}
		f_fixed(a, sizeof a, rep_vnum(row, "throughput_rps"), 1);
		rep_vsetf(vb, r, "throughput", "%s rps", a);
	}
}

/* The block's candidate / baseline comparisons per percentile. */
static void view_comparisons(struct rep_vb *vb, json_t *cmps, json_t *blk)
{
	char a[160], t[400];
	json_t *cl = rep_vget(blk, "comparisons"), *cmp;
	size_t i;
	json_array_foreach(cl, i, cmp) {
		json_t *r = rep_vpush(vb, cmps);
		if (!r)
			return;
		rep_vsets(vb, r, "metric", rep_vstr(cmp, "metric"));
		rep_vset(vb, r, "tail", json_boolean(strcmp(rep_vstr(cmp, "metric"), "p50") != 0));
		if (json_is_true(rep_vget(cmp, "available")))
			rep_vsetf(vb, r, "p_adj", "%.2g", rep_vnum(cmp, "p_adjusted"));
		else
			rep_vsets(vb, r, "p_adj", "-");
		if (json_is_true(rep_vget(cmp, "available"))) {
			f_ratio_ci(t, sizeof t, rep_vnum(cmp, "ratio"), rep_vnum(cmp, "lo"), rep_vnum(cmp, "hi"));
			rep_vsets(vb, r, "ratio", t);
			rep_vsetf(vb, r, "p", "%.2g (adjusted %.2g)", rep_vnum(cmp, "p_mwu"), rep_vnum(cmp, "p_adjusted"));
			f_fixed(a, sizeof a, 100 * rep_vnum(cmp, "mde"), 1);
			rep_vsetf(vb, r, "mde", "%s%%", a);
			const char *note = rep_vstr(cmp, "note");
			rep_vsetf(vb, r, "note", "%s%s%s", json_is_true(rep_vget(cmp, "underpowered")) ? "underpowered" : "",
			     json_is_true(rep_vget(cmp, "underpowered")) && *note ? "; " : "", note);
		} else {
			rep_vsets(vb, r, "ratio", "unavailable");
			rep_vsets(vb, r, "p", "-");
			rep_vsets(vb, r, "mde", "-");
			rep_vsets(vb, r, "note", rep_vstr(cmp, "reason"));
		}
		set_badge(vb, r, "outcome", rep_vstr(cmp, "outcome"));
	}
}

static void view_block(struct rep_vb *vb, json_t *out, json_t *blk)
{
	json_t *o = rep_vpush(vb, out);
	if (!o)
		return;
	json_t *base = variant_of(blk, "baseline"), *cand = variant_of(blk, "candidate");
	char a[160], c[160];
	const char *keys[] = { "name", "group", "dtype", "activation", "workload", "stop_reason" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		rep_vsets(vb, o, keys[i], rep_vstr(blk, keys[i]));
	f_count(a, sizeof a, rep_vnum(blk, "rounds"));
	f_count(c, sizeof c, rep_vnum(blk, "reps_per_round"));
	rep_vsetf(vb, o, "sampling", "%s rounds x %s reps", a, c);
	json_t *noise = rep_vget(blk, "noise");
	if (json_is_true(rep_vget(noise, "available")))
		rep_vsetf(vb, o, "noise", "floor %.1f%%, round CV %.1f%%, MDE %.1f%%",
		     100 * rep_vnum(noise, "floor"), 100 * rep_vnum(noise, "cv"), 100 * rep_vnum(noise, "mde"));
	else
		rep_vsetf(vb, o, "noise", "unavailable: %s", rep_vstr(noise, "reason"));

	view_block_summary(vb, o, blk, base, cand);
	if (vb->oom)
		return;
	/* tail-first statistics of both variants */
	json_t *stats = json_array(), *pipes = json_array(), *sweep = json_array(), *cmps = json_array();
	rep_vset(vb, o, "stats", stats);
	rep_vset(vb, o, "pipeline", pipes);
	rep_vset(vb, o, "sweep", sweep);
	rep_vset(vb, o, "comparisons", cmps);
	if (vb->oom)
		return;
	json_t *vars[2] = { base, cand };
	for (int v = 0; v < 2 && !vb->oom; v++)
		if (vars[v])
			view_variant(vb, vars[v], stats, pipes, sweep);
	if (!vb->oom)
		view_comparisons(vb, cmps, blk);
	/* a GPU run: the trace replayed on the device beside the simulation */
	json_t *rep = json_array();
	rep_vset(vb, o, "device_replay", rep);
	for (int v = 0; v < 2 && !vb->oom; v++) {
		json_t *d = rep_vget(rep_vget(vars[v], "pipeline"), "device_replay");
		if (!d)
			continue;
		json_t *r = rep_vpush(vb, rep);
		if (!r)
			return;
		char t[400], m[64], x[64];
		rep_vsets(vb, r, "variant", rep_vstr(vars[v], "variant"));
		json_t *lt = rep_vget(d, "service_launch_us"), *e;
		size_t i;
		t[0] = 0;
		json_array_foreach(lt, i, e) {
			size_t len = strlen(t);
			snprintf(t + len, sizeof t - len, "%s%.1f", i ? " + " : "", json_number_value(e));
		}
		if (t[0])
			rep_vsetf(vb, r, "service", "%s us (measured)", t);
		else
			rep_vsets(vb, r, "service", "the model's (simulated)");
		if (strcmp(rep_vstr(d, "provenance"), "measured")) {
			rep_vsetf(vb, r, "tail", "unavailable: %s", rep_vstr(d, "reason"));
			continue;
		}
		json_t *sim = rep_vget(d, "simulated");
		const char *k[] = { "p50_us", "p95_us", "p99_us", "wait_p95_us" };
		const char *n[] = { "p50", "p95", "p99", "wait_p95" };
		for (int q = 0; q < 4; q++) {
			f_us(m, sizeof m, rep_vnum(d, k[q]));
			f_us(x, sizeof x, rep_vnum(sim, k[q]));
			rep_vsetf(vb, r, n[q], "%s / %s", m, x);
		}
		f_count(m, sizeof m, rep_vnum(d, "requests"));
		f_count(x, sizeof x, rep_vnum(d, "streams"));
		rep_vsetf(vb, r, "tail", "%s requests on %s CUDA streams", m, x);
		rep_vset(vb, r, "measured", json_true());
	}
}

static void evidence_text(char *b, size_t n, json_t *e)
{
	char v[64];
	double x = rep_vnum(e, "value");
	const char *unit = rep_vstr(e, "unit");
	if (!isfinite(x))
		snprintf(v, sizeof v, "unavailable");
	else if (!strcmp(unit, "ns"))
		f_us(v, sizeof v, x / 1e3);
	else if (!strcmp(unit, "bytes"))
		f_bytes(v, sizeof v, x);
	else if (!strcmp(unit, "count"))
		f_count(v, sizeof v, x);
	else if (!strcmp(unit, "ratio"))
		snprintf(v, sizeof v, "%.2f", x);
	else
		snprintf(v, sizeof v, "%.4g %s", x, unit);
	const char *cmp = rep_vstr(e, "comparison"), *note = rep_vstr(e, "note");
	snprintf(b, n, "%s = %s (%s%s%s%s%s)", rep_vstr(e, "metric"), v, rep_vstr(e, "provenance"),
		 *cmp ? "; " : "", cmp, *note ? "; " : "", note);
}

/* The senior review's answer for a candidate's primary class x of block blk,
 * with its evidence list (taken). A block whose candidate passes has no
 * symptom to explain at length, and a warning's question is its
 * mitigation's: only the blocks that fail are answered, the first at length
 * and every other in a line (its evidence is in findings.json and the
 * workbook), so the packet does not grow with the number of failures. */
static void bottleneck_answer(struct rep_vb *vb, json_t *view, json_t *answers, json_t *x, json_t *blk,
			      json_t *elist)
{
	json_t *a = rep_vpush(vb, answers);
	if (!a) {
		json_decref(elist);
		return;
	}
	rep_vsets(vb, a, "block", rep_vstr(x, "block"));
	rep_vsets(vb, a, "variant", rep_vstr(x, "variant"));
	rep_vsets(vb, a, "class", rep_vstr(x, "class"));
	int fails = !strcmp(rep_vstr(blk, "status"), "FAIL");
	int full = fails && !json_is_true(rep_vget(view, "findings_full"));
	rep_vset(vb, a, "full", json_boolean(full));
	rep_vset(vb, a, "brief", json_boolean(fails && !full));
	if (full)
		rep_vset(vb, view, "findings_full", json_true());
	else if (fails)
		rep_vset(vb, view, "findings_brief", json_true());
	rep_vsets(vb, a, "symptom", rep_vstr(x, "symptom"));
	rep_vsets(vb, a, "explanation", rep_vstr(x, "explanation"));
	rep_vset(vb, a, "evidence", elist);
	set_code(vb, a, "reproduce", rep_vstr(x, "reproduce"));
}

static void view_bottlenecks(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *map = json_array(), *answers = json_array();
	rep_vset(vb, view, "bottleneck_map", map);
	rep_vset(vb, view, "findings", answers);
	if (vb->oom)
		return;
	json_t *bl = rep_vget(f, "bottlenecks"), *x;
	size_t i;
	json_array_foreach(bl, i, x) {
		json_t *o = rep_vpush(vb, map);
		if (!o)
			return;
		const char *block = rep_vstr(x, "block"), *variant = rep_vstr(x, "variant");
		int primary = json_is_true(rep_vget(x, "primary"));
		rep_vsets(vb, o, "block", block);
		rep_vsets(vb, o, "variant", variant);
		rep_vsets(vb, o, "class", rep_vstr(x, "class"));
		rep_vsets(vb, o, "rank", primary ? "primary" : "secondary");
		rep_vset(vb, o, "secondary", json_boolean(!primary));
		if (!primary) {
			/* a secondary class is named below the map, with its score */
			const char *had = rep_vstr(view, "secondary_classes");
			rep_vsetf(vb, view, "secondary_classes", "%s%s%s %s: %s (%.2f)", had, *had ? "; " : "", block,
			     variant, rep_vstr(x, "class"), rep_vnum(x, "score"));
		}
		char t[2048], e1[400];
		f_fixed(t, sizeof t, rep_vnum(x, "score"), 2);
		rep_vsets(vb, o, "score", t);
		struct opr_buf eb = { 0 };
		json_t *ev = rep_vget(x, "evidence"), *e;
		size_t k;
		json_t *elist = json_array();
		json_array_foreach(ev, k, e) {
			evidence_text(e1, sizeof e1, e);
			if (k)
				opr_buf_puts(&eb, "; ");
			opr_buf_puts(&eb, e1);
			json_t *r = json_object();
			if (!r || json_array_append_new(elist, r)) {
				vb->oom = 1;
				break;
			}
			rep_vsets(vb, r, "text", e1);
		}
		char *joined = opr_buf_take(&eb);
		if (!joined) {
			vb->oom = 1;
			json_decref(elist);
			return;
		}
		rep_vsets(vb, o, "evidence", joined);
		free(joined);
		/* the map shows the evidence that decided the class; the rest is
		 * in the candidates' answers, findings.json and the workbook */
		json_t *e0 = json_array_get(ev, 0);
		if (e0) {
			/* the comparison without the note: the map is one line a row */
			json_t *bare = json_deep_copy(e0);
			if (!bare || json_object_set_new(bare, "note", json_string(""))) {
				json_decref(bare);
				vb->oom = 1;
				json_decref(elist);
				return;
			}
			evidence_text(t, sizeof t, bare);
			json_decref(bare);
			rep_vsets(vb, o, "deciding", t);
		} else {
			rep_vsets(vb, o, "deciding", "");
		}
		while (json_array_size(elist) > 4)
			json_array_remove(elist, json_array_size(elist) - 1);
		/* the block's p95 comparison, the symptom the class must explain */
		json_t *blk = NULL, *b;
		size_t j;
		json_array_foreach(rep_vget(f, "blocks"), j, b)
			if (!strcmp(rep_vstr(b, "name"), block))
				blk = b;
		comparison_text(t, sizeof t, !strcmp(variant, "candidate") ? comparison_of(blk, "p95") : NULL);
		rep_vsets(vb, o, "comparison", !strcmp(variant, "candidate") ? t : "baseline");
		if (!primary || strcmp(variant, "candidate")) {
			json_decref(elist);
			continue;
		}
		bottleneck_answer(vb, view, answers, x, blk, elist);
	}
}

static void view_worksheet(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *rows = json_array(), *w;
	rep_vset(vb, view, "worksheet", rows);
	size_t i;
	size_t hidden = 0;
	json_array_foreach(rep_vget(f, "worksheet"), i, w) {
		/* the plans that ran; the shown alternatives are under Rejected
		 * alternatives, every row in findings.json and the workbook */
		if (strcmp(rep_vstr(w, "status"), "chosen")) {
			hidden++;
			continue;
		}
		json_t *o = rep_vpush(vb, rows);
		if (!o)
			return;
		char a[64], c[64];
		rep_vsets(vb, o, "block", rep_vstr(w, "block"));
		rep_vsets(vb, o, "variant", rep_vstr(w, "variant"));
		rep_vsets(vb, o, "group", rep_vstr(w, "group"));
		set_code(vb, o, "plan", rep_vstr(w, "plan"));
		rep_vsets(vb, o, "fused", json_is_true(rep_vget(w, "fused")) ? "yes" : "no");
		f_bytes(a, sizeof a, rep_vnum(w, "footprint_bytes"));
		f_bytes(c, sizeof c, rep_vnum(w, "capacity_bytes"));
		rep_vsetf(vb, o, "footprint", "%s / %s", a, c);
		rep_vsets(vb, o, "footprint_only", a);
		rep_vsets(vb, view, "capacity", c);
		f_bytes(a, sizeof a, rep_vnum(w, "global_bytes"));
		rep_vsets(vb, o, "global_bytes", a);
		f_fixed(a, sizeof a, rep_vnum(w, "reuse_ratio"), 1);
		rep_vsets(vb, o, "reuse", a);
		f_count(a, sizeof a, rep_vnum(w, "launches"));
		rep_vsets(vb, o, "launches", a);
		f_us(a, sizeof a, rep_vnum(w, "launch_overhead_saved_us"));
		rep_vsets(vb, o, "saved", a);
		f_us(a, sizeof a, rep_vnum(w, "model_us"));
		rep_vsets(vb, o, "model", isfinite(rep_vnum(w, "model_us")) ? a : "not modelled");
		rep_vsets(vb, o, "expected", rep_vstr(w, "expected_bottleneck"));
		/* "X -> X" is no shift: said so, in fewer words */
		const char *sh = rep_vstr(w, "shift"), *to = strstr(sh, " -> ");
		if (to && strlen(to + 4) == (size_t)(to - sh) && !strncmp(sh, to + 4, (size_t)(to - sh)))
			rep_vsets(vb, o, "shift", "none");
		else
			rep_vsets(vb, o, "shift", sh);
		set_badge(vb, o, "status", rep_vstr(w, "status"));
		/* "auto: 'PLAN', fastest of ..." names the plan the row shows */
		const char *why = rep_vstr(w, "reason"), *cut = strstr(why, "', ");
		if (!strncmp(why, "auto: '", 7) && cut) {
			/* and its modelled time, the row's own column */
			const char *paren = strstr(cut + 3, " (");
			rep_vsetf(vb, o, "reason", "auto: %.*s", paren ? (int)(paren - cut - 3) : (int)strlen(cut + 3),
			     cut + 3);
		}
		else
			rep_vsets(vb, o, "reason", why);
	}
	if (hidden)
		rep_vsetf(vb, view, "worksheet_more", "The plans that ran; the %zu alternatives the planner evaluated, with "
		     "why each was rejected, are in findings.json and the workbook's Worksheet sheet.", hidden);
}

/* The row of list whose k1 and k2 fields equal v1 and v2 (NULL if none). */
static json_t *find_row(json_t *list, const char *k1, const char *v1, const char *k2,
			const char *v2)
{
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o)
		if (!strcmp(rep_vstr(o, k1), v1) && !strcmp(rep_vstr(o, k2), v2))
			return o;
	return NULL;
}

/* A counter's name for the packet's tables: the provenance column and the
 * section's words say that PAPI counters are sums over the samples. */
static void counter_label(char *b, size_t n, const char *name)
{
	static const char sum[] = " (sum over samples)";
	size_t len = strlen(name), k = sizeof sum - 1;
	if (len > k && !strcmp(name + len - k, sum))
		snprintf(b, n, "%.*s", (int)(len - k), name);
	else
		snprintf(b, n, "%s", name);
}

/* The header of a pivot table whose columns follow the data: the fixed first
 * columns (first, a Markdown row start such as "| Counter | Provenance |", nfirst
 * of them), then a column per block, and the delimiter row; set as view[key]. */
static void pivot_head(struct rep_vb *vb, json_t *view, const char *key, json_t *blocks,
		       const char *first, size_t nfirst)
{
	struct opr_buf ph = { 0 };
	size_t i, nb = 0;
	json_t *b;
	opr_buf_puts(&ph, first);
	json_array_foreach(blocks, i, b) {
		char *e = rep_md_escape(rep_vstr(b, "name"), 0);
		opr_buf_printf(&ph, " %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
		nb++;
	}
	opr_buf_puts(&ph, "\n|");
	for (size_t k = 0; k < nb + nfirst; k++)
		opr_buf_puts(&ph, " --- |");
	char *head = opr_buf_take(&ph);
	if (!head) {
		vb->oom = 1;
		return;
	}
	rep_vsets(vb, view, key, head);
	free(head);
}

/* 1 when name is not in seen yet (then it is added), 0 when it is, -1 when out
 * of memory: a pivot's rows, one per counter name. */
static int first_time(json_t *seen, const char *name)
{
	size_t j;
	json_t *y;
	json_array_foreach(seen, j, y)
		if (!strcmp(json_string_value(y), name))
			return 0;
	return json_array_append_new(seen, json_string(name)) ? -1 : 1;
}

/* Per sample in the tail (>= p95) beside the rest: whether the slow samples are
 * the preempted or faulting ones. Unavailable counters are in the list below the
 * counters table already, so only the measured ones get a row here. */
/* The host counters per tail sample as a matrix: a row per counter, a
 * column per block. */
static void tail_pivot(struct rep_vb *vb, json_t *view, json_t *rows, json_t *f)
{
	json_t *x;
	size_t i;
	/* the same as a matrix: a row per counter, a column per block, each cell
	 * tail / rest per sample, baseline -> candidate; the shares and sample
	 * counts stay in findings.json and the workbook */
	json_t *pivot = json_array(), *b;
	rep_vset(vb, view, "host_tail_pivot", pivot);
	pivot_head(vb, view, "host_tail_pivot_head", rep_vget(f, "blocks"),
		   "| Counter (tail / rest per sample) |", 1);
	json_t *seen = json_array();
	rep_vset(vb, view, "host_tail_names", seen);
	if (vb->oom)
		return;
	json_array_foreach(rows, i, x) {
		size_t j;
		int fresh = first_time(seen, rep_vstr(x, "counter"));
		if (fresh < 0) {
			vb->oom = 1;
			return;
		}
		if (!fresh)
			continue;
		int zero = 1;
		json_t *z0;
		json_array_foreach(rows, j, z0)
			if (!strcmp(rep_vstr(z0, "counter"), rep_vstr(x, "counter")))
				zero &= atof(rep_vstr(z0, "tail")) == 0 && atof(rep_vstr(z0, "rest")) == 0;
		if (zero) {
			const char *had = rep_vstr(view, "host_tail_zero");
			rep_vsetf(vb, view, "host_tail_zero", "%s%s%s", had, *had ? ", " : "", rep_vstr(x, "counter"));
			continue;
		}
		struct opr_buf r = { 0 };
		char *e = rep_md_escape(rep_vstr(x, "counter"), 0);
		opr_buf_printf(&r, "| %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
		json_array_foreach(rep_vget(f, "blocks"), j, b) {
			json_t *bv = NULL, *cv = NULL, *z;
			size_t k;
			json_array_foreach(rows, k, z)
				if (!strcmp(rep_vstr(z, "block"), rep_vstr(b, "name")) &&
				    !strcmp(rep_vstr(z, "counter"), rep_vstr(x, "counter")))
					*(strcmp(rep_vstr(z, "variant"), "candidate") ? &bv : &cv) = z;
			if (bv && cv)
				opr_buf_printf(&r, " %s / %s \u2192 %s / %s |", rep_vstr(bv, "tail"), rep_vstr(bv, "rest"),
					       rep_vstr(cv, "tail"), rep_vstr(cv, "rest"));
			else
				opr_buf_puts(&r, " - |");
		}
		char *row = opr_buf_take(&r);
		json_t *o = rep_vpush(vb, pivot);
		if (!row || !o) {
			free(row);
			vb->oom = 1;
			return;
		}
		rep_vsets(vb, o, "row", row);
		free(row);
	}
}

/* Below the matrix: the call each host counter is read with. */
static void tail_sources(struct rep_vb *vb, json_t *view, json_t *rows)
{
	json_t *x;
	size_t i;
	/* each counter's source once (the rows are per sample; their sums are in
	 * findings.json and the workbook's Counters sheet). Raw Markdown: the
	 * sources are code spans */
	struct opr_buf sb = { 0 };
	json_t *named = json_array(), *calls = json_array();
	json_array_foreach(rows, i, x) {
		/* grouped by the call: "getrusage(RUSAGE_THREAD).ru_nvcsw" is
		 * getrusage(RUSAGE_THREAD), its field is the counter's name */
		const char *src = rep_vstr(x, "source"), *close = strchr(src, ')');
		int call_len = close ? (int)(close - src + 1) : (int)strlen(src);
		char call[160];
		snprintf(call, sizeof call, "%.*s", call_len, src);
		int fresh = *call ? first_time(calls, call) : 0;
		if (fresh < 0)
			vb->oom = 1;
		if (fresh <= 0)
			continue;
		opr_buf_printf(&sb, "%s`%s`", sb.len ? "; " : "", call);
		json_t *y;
		size_t j, n = 0;
		json_array_foreach(rows, j, y) {
			const char *s2 = rep_vstr(y, "source");
			int add = first_time(named, rep_vstr(y, "counter"));
			if (add < 0)
				vb->oom = 1;
			if (add > 0 && !strncmp(s2, call, (size_t)call_len) &&
			    (s2[call_len] == '\0' || s2[call_len] == '.'))
				opr_buf_printf(&sb, "%s%s", n++ ? ", " : " ", rep_vstr(y, "counter"));
			else if (add > 0)
				json_array_remove(named, json_array_size(named) - 1);
		}
	}
	json_decref(named);
	json_decref(calls);
	char *srcs = opr_buf_take(&sb);
	vb->oom |= !srcs;
	rep_vsets(vb, view, "host_tail_sources", srcs ? srcs : "");
	free(srcs);
}

static void view_tail_counters(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *rows = json_array(), *x;
	size_t i;
	rep_vset(vb, view, "host_tail", rows);
	if (vb->oom)
		return;
	json_array_foreach(rep_vget(f, "host_counters_tail"), i, x) {
		if (!json_is_true(rep_vget(x, "available")))
			continue;
		json_t *o = rep_vpush(vb, rows);
		if (!o)
			return;
		char a[48], b[48], c[48], d[48];
		int prec = strcmp(rep_vstr(x, "counter"), "thread-cpu-ns") ? 3 : 0;
		f_fixed(a, sizeof a, rep_vnum(x, "tail_per_sample"), prec);
		f_fixed(b, sizeof b, rep_vnum(x, "rest_per_sample"), prec);
		f_fixed(c, sizeof c, 100.0 * rep_vnum(x, "tail_share"), 0);
		f_fixed(d, sizeof d, 100.0 * rep_vnum(x, "rest_share"), 0);
		rep_vsets(vb, o, "block", rep_vstr(x, "block"));
		rep_vsets(vb, o, "variant", rep_vstr(x, "variant"));
		rep_vsets(vb, o, "counter", rep_vstr(x, "counter"));
		rep_vsets(vb, o, "tail", a);
		rep_vsets(vb, o, "rest", b);
		rep_vsetf(vb, o, "tail_share", "%s%%", c);
		rep_vsetf(vb, o, "rest_share", "%s%%", d);
		rep_vsetf(vb, o, "samples", "%.0f / %.0f", rep_vnum(x, "tail_samples"), rep_vnum(x, "rest_samples"));
		rep_vsets(vb, o, "source", rep_vstr(x, "source"));
	}
	tail_pivot(vb, view, rows, f);
	tail_sources(vb, view, rows);
	/* the table only when it has rows; else one line that says why not */
	if (json_array_size(rows))
		rep_vset(vb, view, "host_tail_present", json_true());
	else if (json_array_size(rep_vget(f, "host_counters_tail")))
		rep_vsets(vb, view, "host_tail_absent", "unavailable on this host (the reasons are "
		     "in the list below)");
	else
		rep_vsets(vb, view, "host_tail_absent", "not recorded: these findings predate them");
}

/* Whether a and b are "HEAD: details" with the same HEAD and other details. */
static int same_head(const char *a, const char *b)
{
	const char *ca = strstr(a, ": "), *cb = strstr(b, ": ");
	return ca && cb && ca - a == cb - b && !strncmp(a, b, (size_t)(ca - a)) && strcmp(a, b);
}

/* Folds mitigation x into row o of the same action: "HEAD: B1 details1; B2
 * details2" as the title, the effect's HEAD alone (each block's details are
 * in findings.json and the workbook). */
static void merge_by_head(struct rep_vb *vb, json_t *o, json_t *x)
{
	const char *t = rep_vstr(o, "title"), *c = strstr(t, ": ");
	if (!json_is_true(rep_vget(o, "merged"))) {
		rep_vsets(vb, o, "expected_was", rep_vstr(o, "expected"));
		const char *e = rep_vstr(o, "expected_was"), *ce = strstr(e, ": ");
		rep_vsetf(vb, o, "expected", "%.*s (each block's details: findings.json)", (int)(ce - e), e);
		rep_vsetf(vb, o, "title", "%.*s: %s %s", (int)(c - t), t, rep_vstr(o, "block"), c + 2);
		rep_vset(vb, o, "merged", json_true());
		t = rep_vstr(o, "title");
	}
	rep_vsetf(vb, o, "title", "%s; %s %s", t, rep_vstr(x, "block"), strstr(rep_vstr(x, "title"), ": ") + 2);
	rep_vsetf(vb, o, "block", "%s, %s", rep_vstr(o, "block"), rep_vstr(x, "block"));
}

/* Whether the host counter name has a measured row in the tail table. */
static int host_tail_has(json_t *f, const char *name)
{
	json_t *x;
	size_t i;
	json_array_foreach(rep_vget(f, "host_counters_tail"), i, x)
		if (json_is_true(rep_vget(x, "available")) && !strcmp(rep_vstr(x, "counter"), name))
			return 1;
	return 0;
}

/* The validation checks, one row each (the matrix is built from findings by
 * view_matrix; these rows are the template's flat list). */
static void view_validation_rows(struct rep_vb *vb, json_t *val, json_t *f)
{
	json_t *x;
	size_t i;
	json_array_foreach(rep_vget(f, "validation"), i, x) {
		json_t *o = rep_vpush(vb, val);
		if (!o)
			return;
		const char *k[] = { "block", "variant", "dtype", "check", "value", "threshold",
				    "provenance", "trigger", "rollback_to" };
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++)
			rep_vsets(vb, o, k[j], rep_vstr(x, k[j]));
		set_badge(vb, o, "status", rep_vstr(x, "status"));
	}
}

/* The mitigations, and the rows of their table: one row for an action
 * several blocks share. */
static void view_mitigation_rows(struct rep_vb *vb, json_t *view, json_t *mit, json_t *f)
{
	json_t *x;
	size_t i;
	json_array_foreach(rep_vget(f, "mitigations"), i, x) {
		json_t *o = rep_vpush(vb, mit);
		if (!o)
			return;
		const char *k[] = { "block", "title", "owner_role", "expected", "validation", "rollback" };
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++)
			rep_vsets(vb, o, k[j], rep_vstr(x, k[j]));
		/* a boundary that is the block's rollback target is named, not
		 * repeated: the plan is in the validation matrix beside it */
		json_t *vr;
		size_t vi;
		json_array_foreach(rep_vget(f, "validation"), vi, vr)
			if (!strcmp(rep_vstr(vr, "block"), rep_vstr(x, "block")) &&
			    !strcmp(rep_vstr(vr, "rollback_to"), rep_vstr(x, "rollback"))) {
				rep_vsets(vb, o, "rollback", "its baseline (validation matrix)");
				break;
			}
		const char *name = "unassigned";
		json_t *ow;
		size_t j;
		json_array_foreach(rep_vget(f, "owners"), j, ow)
			if (!strcmp(rep_vstr(ow, "role"), rep_vstr(x, "owner_role")))
				name = rep_vstr(ow, "name");
		rep_vsets(vb, o, "owner_name", name);
	}
	/* the table's rows: a mitigation proposed alike for several blocks is
	 * one row naming them; its rollback boundary is then each block's own */
	json_t *mg = json_array();
	rep_vset(vb, view, "mitigations_grouped", mg);
	if (vb->oom)
		return;
	json_array_foreach(mit, i, x) {
		json_t *o = NULL, *y;
		size_t j;
		json_array_foreach(mg, j, y)
			if (!strcmp(rep_vstr(y, "title"), rep_vstr(x, "title")) &&
			    !strcmp(rep_vstr(y, "owner_role"), rep_vstr(x, "owner_role")) &&
			    !strcmp(rep_vstr(y, "expected"), rep_vstr(x, "expected")) &&
			    !strcmp(rep_vstr(y, "validation"), rep_vstr(x, "validation")))
				o = y;
		if (!o)
			json_array_foreach(mg, j, y)
				if (same_head(rep_vstr(y, "title"), rep_vstr(x, "title")) &&
				    same_head(json_is_true(rep_vget(y, "merged")) ? rep_vstr(y, "expected_was")
										  : rep_vstr(y, "expected"),
					      rep_vstr(x, "expected")) &&
				    !strcmp(rep_vstr(y, "owner_role"), rep_vstr(x, "owner_role")) &&
				    !strcmp(rep_vstr(y, "validation"), rep_vstr(x, "validation"))) {
					/* one action with a number per block ("sample until
					 * ...: 511 rounds"): one row naming each block's
					 * number; the rest of each effect is in findings.json */
					merge_by_head(vb, y, x);
					o = y;
					break;
				}
		if (o && json_is_true(rep_vget(o, "merged"))) {
			if (strcmp(rep_vstr(o, "rollback"), rep_vstr(x, "rollback")))
				rep_vsets(vb, o, "rollback", "each block's baseline (validation matrix)");
			else if (!strcmp(rep_vstr(x, "rollback"), "its baseline (validation matrix)"))
				rep_vsets(vb, o, "rollback", "each block's baseline (validation matrix)");
			continue;
		}
		if (o) {
			rep_vsetf(vb, o, "block", "%s, %s", rep_vstr(o, "block"), rep_vstr(x, "block"));
			if (strcmp(rep_vstr(o, "rollback"), rep_vstr(x, "rollback")))
				rep_vsets(vb, o, "rollback", "each block's baseline (validation matrix)");
			else if (!strcmp(rep_vstr(x, "rollback"), "its baseline (validation matrix)"))
				rep_vsets(vb, o, "rollback", "each block's baseline (validation matrix)");
			continue;
		}
		if (!(o = json_deep_copy(x)) || json_array_append_new(mg, o)) {
			vb->oom = 1;
			return;
		}
	}
	/* when every boundary is the block's baseline, that is said once below
	 * the table instead of in a column */
	int own_baseline = 1;
	json_array_foreach(mg, i, x)
		own_baseline &= !strcmp(rep_vstr(x, "rollback"), "its baseline (validation matrix)") ||
				!strcmp(rep_vstr(x, "rollback"), "each block's baseline (validation matrix)");
	rep_vset(vb, view, "mitigations_rollback_column", json_boolean(!own_baseline));
}

/* The rejected alternatives the packet shows, and a line for the rest. */
static void view_rejected_rows(struct rep_vb *vb, json_t *view, json_t *rej, json_t *f)
{
	json_t *x;
	size_t i;
	size_t rej_hidden = 0;
	json_array_foreach(rep_vget(f, "rejected_alternatives"), i, x) {
		/* the closest alternatives of the blocks that fail: where a reviewer
		 * asks "why not another plan" (a warning's question is its
		 * mitigation's). At most REJ_PER_BLOCK a block and REJ_SHOWN in all,
		 * so the packet stays short however many blocks fail */
		enum { REJ_PER_BLOCK = 2, REJ_SHOWN = 4 };
		json_t *blk = NULL, *y;
		size_t j, same = 0;
		json_array_foreach(rep_vget(f, "blocks"), j, y)
			if (!strcmp(rep_vstr(y, "name"), rep_vstr(x, "block")))
				blk = y;
		json_array_foreach(rej, j, y)
			same += !strcmp(rep_vstr(y, "block"), rep_vstr(x, "block"));
		if (json_is_false(rep_vget(x, "shown")) || strcmp(rep_vstr(blk, "status"), "FAIL") ||
		    same >= REJ_PER_BLOCK || json_array_size(rej) >= REJ_SHOWN) {
			rej_hidden++;
			continue;
		}
		json_t *o = rep_vpush(vb, rej);
		if (!o)
			return;
		rep_vsets(vb, o, "block", rep_vstr(x, "block"));
		rep_vsets(vb, o, "variant", *rep_vstr(x, "variant") ? rep_vstr(x, "variant") : "-");
		set_code(vb, o, "plan", rep_vstr(x, "plan"));
		rep_vsets(vb, o, "reason", rep_vstr(x, "reason"));
	}
	rep_vset(vb, view, "rejected_any", json_boolean(json_array_size(rej) > 0));
	if (rej_hidden)
		rep_vsetf(vb, view, "rejected_more", json_array_size(rej)
			  ? "The failing blocks' closest alternatives, above; %zu more, with their reasons, in "
			    "findings.json and the workbook."
			  : "%zu rejected plans, with their reasons, in findings.json and the workbook (listed here "
			    "only for a block that fails).", rej_hidden);
}

/* The counters: available ones a row per block and counter (then a matrix, a
 * column per block), unavailable ones once per reason. */
/* The events missing for one reason in the same places: one row naming them. */
static void view_unavailable_grouped(struct rep_vb *vb, json_t *view, json_t *cun)
{
	json_t *x;
	size_t i;
	/* and the events missing for one reason in the same places: one row */
	json_t *grouped = json_array();
	rep_vset(vb, view, "counters_unavailable_grouped", grouped);
	if (vb->oom)
		return;
	json_array_foreach(cun, i, x) {
		json_t *o = NULL, *y;
		size_t j;
		json_array_foreach(grouped, j, y)
			if (!strcmp(rep_vstr(y, "reason"), rep_vstr(x, "reason")) && !strcmp(rep_vstr(y, "block"), rep_vstr(x, "block")) &&
			    !strcmp(rep_vstr(y, "variant"), rep_vstr(x, "variant")))
				o = y;
		if (o) {
			rep_vsetf(vb, o, "names", "%s, %s", rep_vstr(o, "names"), rep_vstr(x, "name"));
			continue;
		}
		if (!(o = rep_vpush(vb, grouped)))
			return;
		rep_vsets(vb, o, "block", rep_vstr(x, "block"));
		rep_vsets(vb, o, "variant", rep_vstr(x, "variant"));
		rep_vsets(vb, o, "names", rep_vstr(x, "name"));
		rep_vsets(vb, o, "reason", rep_vstr(x, "reason"));
	}
}

/* The available counters as a matrix: a row per counter, a column per block. */
static void view_counter_pivot(struct rep_vb *vb, json_t *view, json_t *cav, json_t *f)
{
	json_t *x;
	size_t i;
	/* the same as a matrix: a row per counter, a column per block, each cell
	 * baseline -> candidate (raw Markdown: the columns follow the data) */
	json_t *pivot = json_array(), *blocks = rep_vget(f, "blocks"), *b;
	rep_vset(vb, view, "counters_pivot", pivot);
	pivot_head(vb, view, "counters_pivot_head", blocks, "| Counter | Provenance |", 2);
	json_t *seen = json_array();
	rep_vset(vb, view, "counters_names", seen);
	if (vb->oom)
		return;
	json_array_foreach(cav, i, x) {
		size_t j;
		int fresh = first_time(seen, rep_vstr(x, "name"));
		if (fresh < 0) {
			vb->oom = 1;
			return;
		}
		if (!fresh)
			continue;
		/* a counter that is 0 everywhere is named once, below the table */
		int zero = 1;
		json_t *z;
		json_array_foreach(cav, j, z)
			if (!strcmp(rep_vstr(z, "name"), rep_vstr(x, "name")))
				zero &= !strcmp(rep_vstr(z, "baseline"), "0") && !strcmp(rep_vstr(z, "candidate"), "0");
		if (zero) {
			const char *had = rep_vstr(view, "counters_zero");
			rep_vsetf(vb, view, "counters_zero", "%s%s%s", had, *had ? ", " : "", rep_vstr(x, "name"));
			continue;
		}
		struct opr_buf r = { 0 };
		char *e = rep_md_escape(rep_vstr(x, "name"), 0), *pv = rep_md_escape(rep_vstr(x, "provenance"), 0);
		opr_buf_printf(&r, "| %s | %s |", e ? e : "", pv ? pv : "");
		vb->oom |= !e || !pv;
		free(e);
		free(pv);
		json_array_foreach(blocks, j, b) {
			json_t *c = find_row(cav, "block", rep_vstr(b, "name"), "name", rep_vstr(x, "name"));
			if (c)
				opr_buf_printf(&r, " %s \u2192 %s |", rep_vstr(c, "baseline"), rep_vstr(c, "candidate"));
			else
				opr_buf_puts(&r, " - |");
		}
		char *row = opr_buf_take(&r);
		json_t *o = rep_vpush(vb, pivot);
		if (!row || !o) {
			free(row);
			vb->oom = 1;
			return;
		}
		rep_vsets(vb, o, "row", row);
		free(row);
	}
}

static void view_counter_rows(struct rep_vb *vb, json_t *view, json_t *cav, json_t *cun, json_t *f)
{
	json_t *x;
	size_t i;
	size_t sde_hidden = 0, other_hidden = 0, host_hidden = 0;
	json_array_foreach(rep_vget(f, "counters"), i, x) {
		int avail = json_is_true(rep_vget(x, "available")) && isfinite(rep_vnum(x, "value"));
		const char *cn = rep_vstr(x, "name");
		int elsewhere = !strcmp(cn, "launches") || !strcmp(cn, "modelled time ns") ||
				!strcmp(cn, "host samples") || !strcmp(cn, "peak SHARED bytes");
		if (avail && elsewhere) {
			/* shown by the summary, the worksheet and the statistics */
			other_hidden++;
			continue;
		}
		char hl[128];
		counter_label(hl, sizeof hl, cn);
		if (avail && host_tail_has(f, hl)) {
			/* a host software counter: per sample in the tail table,
			 * with its source; its sums in the workbook */
			host_hidden++;
			continue;
		}
		if (avail && !strncmp(cn, "sde:::", 6)) {
			/* the simulated counters read back through PAPI: the
			 * validation's SDE check compares them; rows in the workbook */
			sde_hidden++;
			continue;
		}
		if (avail) {
			/* one row per block and counter: baseline beside candidate */
			int cand = !strcmp(rep_vstr(x, "variant"), "candidate");
			char label[128];
			counter_label(label, sizeof label, rep_vstr(x, "name"));
			json_t *o = find_row(cav, "block", rep_vstr(x, "block"), "name", label);
			if (!o && !(o = rep_vpush(vb, cav)))
				return;
			char a[64], bare[128];
			f_count(a, sizeof a, rep_vnum(x, "value"));
			counter_label(bare, sizeof bare, rep_vstr(x, "name"));
			rep_vsets(vb, o, "block", rep_vstr(x, "block"));
			rep_vsets(vb, o, "name", bare);
			rep_vsets(vb, o, cand ? "candidate" : "baseline", a);
			if (!json_is_string(rep_vget(o, cand ? "baseline" : "candidate")))
				rep_vsets(vb, o, cand ? "baseline" : "candidate", "-");
			if (!strcmp(rep_vstr(x, "provenance"), "measured") && *rep_vstr(x, "source"))
				rep_vsetf(vb, o, "provenance", "measured: %s", rep_vstr(x, "source"));
			else
				rep_vsets(vb, o, "provenance", rep_vstr(x, "provenance"));
			continue;
		}
		/* an event the host lacks is missing everywhere for one reason:
		 * list it once, with where it is missing */
		const char *why = *rep_vstr(x, "reason") ? rep_vstr(x, "reason") : "no reason recorded";
		char bare[128];
		counter_label(bare, sizeof bare, rep_vstr(x, "name"));
		json_t *o = find_row(cun, "name", bare, "reason", why);
		if (o) {
			if (strcmp(rep_vstr(o, "block"), rep_vstr(x, "block")))
				rep_vsets(vb, o, "block", "every block");
			if (strcmp(rep_vstr(o, "variant"), rep_vstr(x, "variant")))
				rep_vsets(vb, o, "variant", "both");
			continue;
		}
		if (!(o = rep_vpush(vb, cun)))
			return;
		rep_vsets(vb, o, "block", rep_vstr(x, "block"));
		rep_vsets(vb, o, "variant", rep_vstr(x, "variant"));
		rep_vsets(vb, o, "name", bare);
		rep_vsets(vb, o, "reason", why);
	}
	if (sde_hidden + other_hidden + host_hidden) {
		char hs[96] = "";
		if (host_hidden)
			snprintf(hs, sizeof hs, "; %zu host software counters' sums, per sample below", host_hidden);
		rep_vsetf(vb, view, "counters_more", "%zu more rows (%zu the SDE read-back sde:::opreview::*, which the "
		     "validation matrix checks%s): findings.json, the workbook's Counters sheet.",
		     sde_hidden + other_hidden + host_hidden, sde_hidden, hs);
	}
	view_unavailable_grouped(vb, view, cun);
	view_counter_pivot(vb, view, cav, f);
}

static void view_rule_rows(struct rep_vb *vb, json_t *rules, json_t *f)
{
	json_t *x;
	size_t i;
	json_array_foreach(rep_vget(f, "rules"), i, x) {
		json_t *o = rep_vpush(vb, rules);
		if (!o)
			return;
		const char *k[] = { "class", "formula", "threshold", "explanation", "source" };
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++)
			rep_vsets(vb, o, k[j], rep_vstr(x, k[j]));
	}
}

static void view_lists(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *val = json_array(), *mit = json_array(), *rej = json_array(), *cav = json_array(),
	       *cun = json_array(), *rules = json_array();
	rep_vset(vb, view, "validation", val);
	rep_vset(vb, view, "mitigations", mit);
	rep_vset(vb, view, "rejected", rej);
	rep_vset(vb, view, "counters", cav);
	rep_vset(vb, view, "counters_unavailable", cun);
	rep_vset(vb, view, "rules", rules);
	if (vb->oom)
		return;
	view_validation_rows(vb, val, f);
	view_mitigation_rows(vb, view, mit, f);
	view_rejected_rows(vb, view, rej, f);
	view_counter_rows(vb, view, cav, cun, f);
	view_tail_counters(vb, view, f);
	view_rule_rows(vb, rules, f);
}

static void kv(struct rep_vb *vb, json_t *a, const char *key, const char *value)
{
	json_t *o = rep_vpush(vb, a);
	if (!o)
		return;
	rep_vsets(vb, o, "key", key);
	rep_vsets(vb, o, "value", value && *value ? value : "not recorded");
}

/* The host kernel path: the ISA, and each family's path without its details
 * ("conv2d avx512 (fma, 12x32 direct)" is "conv2d avx512"); when every family
 * runs the ISA, that is said once. The details are in findings.json and the
 * workbook's Environment sheet. */
static void kernel_path_text(char *b, size_t n, const char *isa, const char *per)
{
	char fam[512] = "";
	size_t k = 0;
	int depth = 0, same = 1;
	for (const char *p = per; *p && k + 1 < sizeof fam; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth -= depth > 0;
		else if (!depth && !(*p == ' ' && (p[1] == '(' || p[1] == ';' || !p[1])))
			fam[k++] = *p;
	}
	fam[k] = '\0';
	/* every "family path" pair of fam ends in the ISA's name */
	size_t il = strlen(isa);
	for (const char *p = fam; *p && same;) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		same = il && len > il && !strncmp(p + len - il, isa, il) && p[len - il - 1] == ' ';
		p += len;
		while (*p == ';' || *p == ' ')
			p++;
	}
	if (!*per)
		snprintf(b, n, "%s; per family: unavailable", *isa ? isa : "unavailable");
	else if (same && *isa)
		snprintf(b, n, "%s, every family", isa);
	else
		snprintf(b, n, "%s; per family: %s", *isa ? isa : "unavailable", fam);
}

/* The SLA, precision thresholds, traffic and batching the run was judged by. */
static void view_input_rows(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *sla = rep_vget(f, "sla"), *pr = rep_vget(f, "precision"), *tr = rep_vget(f, "traffic"),
	       *imp = rep_vget(f, "imported");
	char a[512];
	json_t *in = json_array();
	rep_vset(vb, view, "sla_rows", in);
	if (vb->oom)
		return;
	if (imp && !isfinite(rep_vnum(sla, "p95_us"))) {
		snprintf(a, sizeof a, "unavailable: no SLA was given to ingest; regression <= %.1f%% over baseline",
			 100 * rep_vnum(sla, "max_regression"));
		kv(vb, in, "SLA", a);
	} else {
		char p95[32], p99[32];
		f_us(p95, sizeof p95, rep_vnum(sla, "p95_us"));
		f_us(p99, sizeof p99, rep_vnum(sla, "p99_us"));
		snprintf(a, sizeof a, "p95 <= %s, p99 <= %s, throughput >= %.0f rps, regression <= %.1f%% over baseline",
			 p95, p99, rep_vnum(sla, "min_throughput_rps"), 100 * rep_vnum(sla, "max_regression"));
		kv(vb, in, "SLA", a);
	}
	if (imp) {
		kv(vb, in, "precision, traffic",
		   "unavailable: an imported run has no outputs to check and no pipeline simulation");
		return;
	}
	snprintf(a, sizeof a, "rel L2 fp32 %.3g, fp16 %.3g, bf16 %.3g; int8 %.3g LSB", rep_vnum(pr, "fp32_max_rel_l2"),
		 rep_vnum(pr, "fp16_max_rel_l2"), rep_vnum(pr, "bf16_max_rel_l2"), rep_vnum(pr, "int8_max_abs_lsb"));
	kv(vb, in, "precision", a);
	snprintf(a, sizeof a, "%.0f streams, %s arrivals at %.0f rps, %.0f requests",
		 rep_vnum(tr, "streams"), rep_vstr(tr, "process"), rep_vnum(tr, "rate_rps"), rep_vnum(tr, "requests"));
	kv(vb, in, "traffic", a);
	snprintf(a, sizeof a, "max %.0f, timeout %.0f us, placement %s", rep_vnum(tr, "batch_max"),
		 rep_vnum(tr, "batch_timeout_us"), rep_vstr(tr, "placement"));
	kv(vb, in, "batching", a);
}

/* The hardware envelope the device model ran on. */
static void view_envelope_rows(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *env = rep_vget(f, "envelope"), *imp = rep_vget(f, "imported");
	char a[512];
	json_t *en = json_array();
	rep_vset(vb, view, "envelope_rows", en);
	if (vb->oom)
		return;
	rep_vsets(vb, view, "envelope_name", rep_vstr(env, "name"));
	if (imp) {
		rep_vsets(vb, view, "power_mode", "not modelled");
		kv(vb, en, "device model", "unavailable: an imported run's device is not modelled");
		kv(vb, en, "measured on", rep_vstr(imp, "device"));
		return;
	}
	rep_vsets(vb, view, "power_mode", rep_vstr(env, "power_mode"));
	kv(vb, en, "source", rep_vstr(env, "source"));
	snprintf(a, sizeof a, "%.0f at %.2f GHz", rep_vnum(env, "cores"), rep_vnum(env, "clock_ghz"));
	kv(vb, en, "cores", a);
	snprintf(a, sizeof a, "GLOBAL %.1f GB/s; SHARED %.0f KiB at %.1f GB/s; LOCAL %.0f KiB",
		 rep_vnum(env, "global_bandwidth_gbps"), rep_vnum(env, "shared_capacity_kib"),
		 rep_vnum(env, "shared_bandwidth_gbps"), rep_vnum(env, "local_capacity_kib"));
	kv(vb, en, "memory", a);
	snprintf(a, sizeof a, "%.0f engine%s, %.0f ns setup, last dim <= %.0f%s",
		 rep_vnum(env, "dma_engines"), rep_vnum(env, "dma_engines") == 1 ? "" : "s",
		 rep_vnum(env, "dma_setup_ns"), rep_vnum(env, "dma_max_last_dim"),
		 json_is_true(rep_vget(env, "dma_serial"))
			 ? "; serial (copies on the computing thread: never overlapped)"
			 : "");
	kv(vb, en, "DMA", a);
	json_t *tops = rep_vget(env, "compute_tops");
	/* %.3g: a calibrated host runs at hundredths of a TOPS */
	snprintf(a, sizeof a, "fp32 %.3g, fp16 %.3g, bf16 %.3g, int8 %.3g", rep_vnum(tops, "fp32"),
		 rep_vnum(tops, "fp16"), rep_vnum(tops, "bf16"), rep_vnum(tops, "int8"));
	kv(vb, en, "compute TOPS", a);
	if (isfinite(rep_vnum(tops, "vector"))) {
		if (isfinite(rep_vnum(tops, "vector_half")))
			snprintf(a, sizeof a, "%.3g (fp16/bf16 data: %.3g)", rep_vnum(tops, "vector"),
				 rep_vnum(tops, "vector_half"));
		else
			snprintf(a, sizeof a, "%.3g", rep_vnum(tops, "vector"));
		kv(vb, en, "vector (element-wise) TOPS", a);
	}
	f_us(a, sizeof a, rep_vnum(env, "launch_overhead_us"));
	kv(vb, en, "launch overhead", a);
}

/* The host (and GPU) the blocks ran on, and what measuring cost. */
static void view_host_rows(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *host = rep_vget(f, "host"), *ov = rep_vget(f, "overhead"), *imp = rep_vget(f, "imported");
	char a[512], c[128];
	json_t *hr = json_array();
	rep_vset(vb, view, "host_rows", hr);
	if (vb->oom)
		return;
	const char *hk[] = { "cpu_model", "caches", "kernel", "governor", "compiler", "cflags",
			     "kernel_isa", "kernel_paths", "versions", "tool_version",
			     "git_revision", "hostname" };
	const char *hn[] = { "CPU", "caches", "kernel", "governor", "compiler", "flags",
			     "host kernel path", "kernel path per family", "libraries", "opreview",
			     "git revision", "host name" };
	for (size_t i = 0; i < sizeof hk / sizeof hk[0]; i++) {
		if (i == 0) {
			f_count(c, sizeof c, rep_vnum(host, "cpus_online"));
			snprintf(a, sizeof a, "%s, %s CPUs online; %s", rep_vstr(host, hk[0]), c, rep_vstr(host, "caches"));
			kv(vb, hr, hn[0], a);
		} else if (!strcmp(hk[i], "caches")) {
			continue;
		} else if (!strcmp(hk[i], "kernel")) {
			snprintf(a, sizeof a, "%s; governor %s", rep_vstr(host, "kernel"), rep_vstr(host, "governor"));
			kv(vb, hr, hn[i], a);
		} else if (!strcmp(hk[i], "governor") || !strcmp(hk[i], "kernel_paths")) {
			continue;
		} else if (!strcmp(hk[i], "kernel_isa")) {
			/* findings written before the kernel paths were recorded */
			const char *isa = rep_vstr(host, "kernel_isa"), *per = rep_vstr(host, "kernel_paths");
			if (!*isa && !*per)
				snprintf(a, sizeof a, "unavailable: not in these findings");
			else
				kernel_path_text(a, sizeof a, isa, per);
			kv(vb, hr, "host kernel path", a);
		} else if (!strcmp(hk[i], "compiler")) {
			snprintf(a, sizeof a, "%s %s", rep_vstr(host, "compiler"), rep_vstr(host, "cflags"));
			kv(vb, hr, hn[i], a);
		} else if (!strcmp(hk[i], "cflags")) {
			continue;
		} else if (!strcmp(hk[i], "tool_version")) {
			snprintf(a, sizeof a, "%s (git %s)", rep_vstr(host, "tool_version"), rep_vstr(host, "git_revision"));
			kv(vb, hr, hn[i], a);
		} else if (strcmp(hk[i], "git_revision") && strcmp(hk[i], "hostname")) {
			const char *hv = rep_vstr(host, hk[i]);
			/* findings written before the kernel paths were recorded */
			if (!*hv && !strncmp(hk[i], "kernel_", 7))
				hv = "unavailable: not in these findings";
			kv(vb, hr, hn[i], hv);
		}
	}
	f_bytes(c, sizeof c, rep_vnum(host, "mem_total_bytes"));
	snprintf(a, sizeof a, "%s, %s", rep_vstr(host, "hostname"),
		 imp ? "memory unavailable: the source does not give it" : c);
	kv(vb, hr, "host name, memory", a);
	/* a GPU run: the device that ran the blocks */
	json_t *dev = rep_vget(f, "device");
	if (json_is_object(dev)) {
		double dv = rep_vnum(dev, "driver_version"), rv = rep_vnum(dev, "cuda_runtime_version");
		snprintf(a, sizeof a, "%s (cuda device %.0f, compute capability %s)", rep_vstr(dev, "name"),
			 rep_vnum(dev, "index"), rep_vstr(dev, "compute_capability"));
		kv(vb, hr, "GPU", a);
		snprintf(a, sizeof a, "%.0f SMs, SHARED %.0f KiB per block, L2 %.0f MiB", rep_vnum(dev, "sm_count"),
			 rep_vnum(dev, "shared_per_block_optin_bytes") / 1024, rep_vnum(dev, "l2_bytes") / 1048576);
		kv(vb, hr, "GPU resources", a);
		snprintf(a, sizeof a, "SM %.0f MHz rated, %.0f-%.0f MHz seen (sm__cycles_elapsed over the "
			 "median time); memory %.0f MHz", rep_vnum(dev, "sm_clock_khz") / 1000,
			 rep_vnum(dev, "clock_seen_mhz_min"), rep_vnum(dev, "clock_seen_mhz_max"),
			 rep_vnum(dev, "mem_clock_khz") / 1000);
		kv(vb, hr, "GPU clocks", a);
		snprintf(a, sizeof a, "driver %s (CUDA API %.0f.%.0f), CUDA runtime %.0f.%.0f, PAPI %s",
			 rep_vstr(dev, "kernel_driver"), floor(dv / 1000), fmod(dv, 1000) / 10, floor(rv / 1000),
			 fmod(rv, 1000) / 10, rep_vstr(dev, "papi_version"));
		kv(vb, hr, "GPU software", a);
		kv(vb, hr, "GPU timing", json_is_true(rep_vget(dev, "l2_flushed_per_sample"))
						 ? "CUDA events, one run a sample, L2 flushed before each"
						 : "CUDA events, one run a sample, L2 warm");
	}
	/* without PAPI its read cost was not measured: never a 0 */
	if (imp)
		snprintf(a, sizeof a, "unavailable: opreview took no samples itself (PAPI: %s)",
			 rep_vstr(f, "papi_status"));
	else if (!strcmp(rep_vstr(f, "papi_status"), "ok"))
		snprintf(a, sizeof a, "clock read %.1f ns, PAPI read %.1f ns", rep_vnum(ov, "clock_read_ns"),
			 rep_vnum(ov, "papi_read_ns"));
	else
		snprintf(a, sizeof a, "clock read %.1f ns, PAPI read unavailable (PAPI: %s)",
			 rep_vnum(ov, "clock_read_ns"), rep_vstr(f, "papi_status"));
	kv(vb, hr, "measurement overhead", a);
}

/* How to run the review again and replay its archive. */
static void view_reproduce(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *rp = rep_vget(f, "reproduce"), *host = rep_vget(f, "host");
	char a[512];
	json_t *r = json_object();
	rep_vset(vb, view, "reproduce", r);
	if (vb->oom)
		return;
	set_code(vb, r, "command", rep_vstr(rp, "command"));
	set_code(vb, r, "replay", rep_vstr(rp, "replay"));
	f_fixed(a, sizeof a, rep_vnum(rp, "seed"), 0);
	rep_vsets(vb, r, "seed", a);
	rep_vsets(vb, r, "started_utc", rep_vstr(rp, "started_utc"));
	rep_vsets(vb, r, "archive", rep_vstr(f, "archive"));
	rep_vsets(vb, r, "tool_version", rep_vstr(host, "tool_version"));
	rep_vsets(vb, r, "git_revision", rep_vstr(host, "git_revision"));
}

static void view_inputs(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *p = rep_vget(f, "profile"), *meta = rep_vget(p, "metadata");
	char a[512];
	json_t *prof = json_object();
	rep_vset(vb, view, "profile", prof);
	if (vb->oom)
		return;
	rep_vsets(vb, prof, "name", rep_vstr(p, "name"));
	rep_vsets(vb, prof, "path", rep_vstr(p, "path"));
	rep_vsets(vb, prof, "sha256", rep_vstr(p, "sha256"));
	f_fixed(a, sizeof a, rep_vnum(p, "seed"), 0);
	rep_vsets(vb, prof, "seed", a);
	rep_vsets(vb, prof, "model_revision", rep_vstr(p, "model_revision"));
	rep_vsets(vb, prof, "compiler", rep_vstr(meta, "compiler"));
	rep_vsets(vb, prof, "runtime", rep_vstr(meta, "runtime"));
	rep_vsets(vb, prof, "firmware", rep_vstr(meta, "firmware"));
	/* an imported run: the source, and no model, traffic or quality inputs */
	json_t *imp = rep_vget(f, "imported");
	if (json_is_object(imp)) {
		json_t *io = json_object();
		rep_vset(vb, view, "imported", io);
		if (vb->oom)
			return;
		const char *ik[] = {"format", "path", "sha256", "tool", "device", "date_from"};
		for (size_t i = 0; i < sizeof ik / sizeof *ik; i++)
			rep_vsets(vb, io, ik[i], rep_vstr(imp, ik[i]));
	}
	view_input_rows(vb, view, f);
	view_envelope_rows(vb, view, f);
	view_host_rows(vb, view, f);
	view_reproduce(vb, view, f);
}

static void view_owners(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *own = json_array(), *sign = json_array();
	rep_vset(vb, view, "ownership", own);
	rep_vset(vb, view, "signoff", sign);
	if (vb->oom)
		return;
	for (size_t i = 0; i < sizeof REP_OWNERSHIP / sizeof REP_OWNERSHIP[0]; i++) {
		const char *name = "unassigned";
		json_t *ow;
		size_t j;
		json_array_foreach(rep_vget(f, "owners"), j, ow)
			if (!strcmp(rep_vstr(ow, "role"), REP_OWNERSHIP[i].role))
				name = rep_vstr(ow, "name");
		json_t *o = rep_vpush(vb, own), *s = rep_vpush(vb, sign);
		if (!o || !s)
			return;
		rep_vsets(vb, o, "team", REP_OWNERSHIP[i].team);
		rep_vsets(vb, o, "role", REP_OWNERSHIP[i].role);
		rep_vsets(vb, o, "name", name);
		rep_vsets(vb, o, "responsibility", REP_OWNERSHIP[i].responsibility);
		rep_vsets(vb, o, "artifact", REP_OWNERSHIP[i].artifact);
		rep_vsets(vb, s, "role", REP_OWNERSHIP[i].role);
		rep_vsets(vb, s, "name", name);
	}
}

/* The first screen's owner actions: each role's mitigations, in the
 * ownership order; a role with none is told what its sign-off covers. */
static void view_owner_actions(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *acts = json_array();
	rep_vset(vb, view, "owner_actions", acts);
	if (vb->oom)
		return;
	for (size_t i = 0; i < sizeof REP_OWNERSHIP / sizeof REP_OWNERSHIP[0]; i++) {
		const char *name = "unassigned";
		json_t *ow, *m;
		size_t j;
		json_array_foreach(rep_vget(f, "owners"), j, ow)
			if (!strcmp(rep_vstr(ow, "role"), REP_OWNERSHIP[i].role))
				name = rep_vstr(ow, "name");
		json_t *o = rep_vpush(vb, acts), *todo = json_array();
		if (!o)
			return;
		rep_vsets(vb, o, "role", REP_OWNERSHIP[i].role);
		rep_vsets(vb, o, "name", name);
		rep_vset(vb, o, "todo", todo);
		if (vb->oom)
			return;
		json_array_foreach(rep_vget(f, "mitigations"), j, m) {
			if (strcmp(rep_vstr(m, "owner_role"), REP_OWNERSHIP[i].role))
				continue;
			/* one line per action, with every block it applies to */
			json_t *t = find_row(todo, "title", rep_vstr(m, "title"), "title", rep_vstr(m, "title"));
			if (t) {
				rep_vsetf(vb, t, "block", "%s, %s", rep_vstr(t, "block"), rep_vstr(m, "block"));
				continue;
			}
			if (!(t = rep_vpush(vb, todo)))
				return;
			rep_vsets(vb, t, "block", rep_vstr(m, "block"));
			rep_vsets(vb, t, "title", rep_vstr(m, "title"));
			rep_vsets(vb, t, "expected", rep_vstr(m, "expected"));
		}
		rep_vsetf(vb, o, "none", "no mitigation to carry out; review the %s and sign", REP_OWNERSHIP[i].artifact);
	}
}

/* The validation matrix: a row per block and variant, a column per check
 * (in the order the analysis ran them), each cell the status and value;
 * the rollback target beside it and the triggers below. The header and the
 * rows are raw Markdown built here, since the columns follow the data. */
/* The validation matrix's columns: a check each, the check table's order
 * first, then any check it does not name. */
struct matrix_cols {
	const char *id[32], *name[32];
	size_t n;
};

static void matrix_columns(json_t *f, struct matrix_cols *mc)
{
	json_t *val = rep_vget(f, "validation"), *x;
	size_t i;
	mc->n = 0;
	json_array_foreach(rep_vget(rep_vget(f, "check_rules"), "checks"), i, x) {
		size_t j;
		json_t *c;
		json_array_foreach(val, j, c)
			if (!strcmp(rep_vstr(c, "id"), rep_vstr(x, "id")) && mc->n < 32) {
				mc->id[mc->n] = rep_vstr(x, "id");
				mc->name[mc->n++] = rep_vstr(c, "check");
				break;
			}
	}
	json_array_foreach(val, i, x) {
		const char *id = *rep_vstr(x, "id") ? rep_vstr(x, "id") : rep_vstr(x, "check");
		size_t k = 0;
		while (k < mc->n && strcmp(mc->id[k], id))
			k++;
		if (k == mc->n && mc->n < 32) {
			mc->id[mc->n] = id;
			mc->name[mc->n++] = rep_vstr(x, "check");
		}
	}
}

/* Its header (raw Markdown: the columns follow the data). */
static void matrix_head(struct rep_vb *vb, json_t *view, const struct matrix_cols *mc)
{
	struct opr_buf h = { 0 };
	opr_buf_puts(&h, "| Block | Variant |");
	for (size_t k = 0; k < mc->n; k++) {
		char *e = rep_md_escape(mc->name[k], 0);
		opr_buf_printf(&h, " %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
	}
	opr_buf_puts(&h, " Rollback target |\n|");
	for (size_t k = 0; k < mc->n + 3; k++)
		opr_buf_puts(&h, " --- |");
	char *head = opr_buf_take(&h);
	if (!head) {
		vb->oom = 1;
		return;
	}
	rep_vsets(vb, view, "matrix_head", head);
	free(head);
}

/* One row: block blk, the baseline (v 0) or the candidate (v 1), a cell per
 * column and the rollback target. */
static void matrix_row(struct rep_vb *vb, json_t *rows, json_t *val, json_t *blk, int v,
		       const struct matrix_cols *mc)
{
	const char *vn = v ? "candidate" : "baseline";
	struct opr_buf r = { 0 };
	const char *target = "";
	json_t *c;
	size_t j;
	/* (the dtype of the rows is the workload's, named in Inputs) */
	json_array_foreach(val, j, c)
		if (!strcmp(rep_vstr(c, "block"), rep_vstr(blk, "name")) && !strcmp(rep_vstr(c, "variant"), vn))
			target = rep_vstr(c, "rollback_to");
	char *bn = rep_md_escape(rep_vstr(blk, "name"), 0);
	opr_buf_printf(&r, "| %s | %s |", bn ? bn : "", vn);
	vb->oom |= !bn;
	free(bn);
	for (size_t k = 0; k < mc->n; k++) {
		json_t *cell = NULL;
		json_array_foreach(val, j, c) {
			const char *id = *rep_vstr(c, "id") ? rep_vstr(c, "id") : rep_vstr(c, "check");
			if (!strcmp(rep_vstr(c, "block"), rep_vstr(blk, "name")) && !strcmp(rep_vstr(c, "variant"), vn) &&
			    !strcmp(id, mc->id[k]))
				cell = c;
		}
		if (!cell) {
			opr_buf_puts(&r, " - |");
			continue;
		}
		const char *stv = rep_vstr(cell, "status"), *m = badge(stv);
		/* a passing baseline cell is its status: the values the
		 * candidate is held against are in its own cells */
		int bare = !v && !strcmp(stv, "PASS");
		char *e = rep_md_escape(bare ? "" : rep_vstr(cell, "value"), 0);
		opr_buf_printf(&r, " %s%s%s%s%s |", m, stv, m, bare ? "" : " ", e ? e : "");
		vb->oom |= !e;
		free(e);
	}
	char *tg = rep_md_escape(v ? target : "-", 0); /* the baseline is the target */
	opr_buf_printf(&r, " %s |", tg ? tg : "");
	vb->oom |= !tg;
	free(tg);
	char *row = opr_buf_take(&r);
	json_t *o = rep_vpush(vb, rows);
	if (!row || !o) {
		free(row);
		vb->oom = 1;
		return;
	}
	rep_vsets(vb, o, "row", row);
	free(row);
}

/* The candidate's rollback triggers, each text once with the checks that
 * watch it, and its blocks when not every block shares it. */
static void view_triggers(struct rep_vb *vb, json_t *trig, json_t *f)
{
	size_t nblocks = json_array_size(rep_vget(f, "blocks")), i;
	json_t *x;
	json_array_foreach(rep_vget(f, "validation"), i, x) {
		if (strcmp(rep_vstr(x, "variant"), "candidate") || !*rep_vstr(x, "trigger"))
			continue;
		json_t *o = find_row(trig, "trigger", rep_vstr(x, "trigger"), "trigger", rep_vstr(x, "trigger"));
		if (!o) {
			if (!(o = rep_vpush(vb, trig)))
				return;
			rep_vsets(vb, o, "check", rep_vstr(x, "check"));
			rep_vsets(vb, o, "trigger", rep_vstr(x, "trigger"));
			rep_vset(vb, o, "n", json_integer(0));
			rep_vsets(vb, o, "blocks", rep_vstr(x, "block"));
		}
		if (!strstr(rep_vstr(o, "check"), rep_vstr(x, "check")))
			rep_vsetf(vb, o, "check", "%s, %s", rep_vstr(o, "check"), rep_vstr(x, "check"));
		if (!strstr(rep_vstr(o, "blocks"), rep_vstr(x, "block"))) {
			rep_vsetf(vb, o, "blocks", "%s, %s", rep_vstr(o, "blocks"), rep_vstr(x, "block"));
			rep_vset(vb, o, "n", json_integer(json_integer_value(rep_vget(o, "n")) + 1));
		} else if (!json_integer_value(rep_vget(o, "n"))) {
			rep_vset(vb, o, "n", json_integer(1));
		}
	}
	json_array_foreach(trig, i, x)
		if ((size_t)json_integer_value(rep_vget(x, "n")) == nblocks)
			rep_vsets(vb, x, "blocks", "");
}

/* The validation matrix: a row per block and variant, a column per check,
 * the rollback target beside it, and the triggers below. */
static void view_matrix(struct rep_vb *vb, json_t *view, json_t *f)
{
	struct matrix_cols mc;
	size_t i;
	json_t *x, *rows = json_array(), *trig = json_array();
	rep_vset(vb, view, "matrix", rows);
	rep_vset(vb, view, "triggers", trig);
	if (vb->oom)
		return;
	matrix_columns(f, &mc);
	matrix_head(vb, view, &mc);
	if (vb->oom)
		return;
	json_array_foreach(rep_vget(f, "blocks"), i, x)
		for (int v = 0; v < 2 && !vb->oom; v++)
			matrix_row(vb, rows, rep_vget(f, "validation"), x, v, &mc);
	if (vb->oom)
		return;
	view_triggers(vb, trig, f);
}

/* Model validation: modelled vs measured per plan, the run's error and the
 * planner's check; without a host envelope the reason it is unvalidated. */
static void view_model(struct rep_vb *vb, json_t *view, json_t *f)
{
	json_t *mv = rep_vget(f, "model_validation"), *o = json_object(), *rows = json_array(),
	       *pl = json_array(), *x;
	rep_vset(vb, view, "model", o);
	rep_vset(vb, o, "rows", rows);
	rep_vset(vb, o, "planner", pl);
	if (!json_is_object(mv)) {
		rep_vset(vb, o, "calibrated", json_false());
		rep_vsets(vb, o, "reason", "this findings file has no model validation (written before it existed)");
		return;
	}
	int cal = json_is_true(rep_vget(mv, "calibrated"));
	rep_vset(vb, o, "calibrated", json_boolean(cal));
	rep_vsets(vb, o, "envelope", rep_vstr(mv, "envelope"));
	if (!cal) {
		rep_vsets(vb, o, "reason", rep_vstr(mv, "reason"));
		return;
	}
	json_t *c = rep_vget(mv, "calibration");
	rep_vsetf(vb, o, "calibration", "envelope '%s' calibrated on host '%s' (%s, %.0f CPUs) at %s",
	     rep_vstr(mv, "envelope"), rep_vstr(c, "host"), rep_vstr(c, "cpu"), rep_vnum(c, "cpus_online"), rep_vstr(c, "date"));
	double med = rep_vnum(mv, "median_abs_error"), worst = rep_vnum(mv, "worst_abs_error");
	json_t *w = rep_vget(mv, "worst");
	char a[64], b[64];
	if (isfinite(med)) {
		rep_vsetf(vb, o, "median_error", "%.1f%%", 100 * med);
		rep_vsetf(vb, o, "worst_error", "%.1f%%", 100 * worst);
		rep_vsetf(vb, o, "summary",
		     "On this host the model's median error is %.1f%% and its worst %.1f%% "
		     "(%s, %s: modelled/measured x%.2f, the model's largest term %s). %s (%.0f%%).",
		     100 * med, 100 * worst, rep_vstr(w, "block"), rep_vstr(w, "variant"), rep_vnum(w, "ratio"),
		     rep_vstr(w, "dominant_term"),
		     json_is_true(rep_vget(mv, "trusted")) ? "Within the limit the model is trusted to on this machine"
						     : "Beyond the limit: treat modelled times on this machine as indicative only",
		     100 * rep_vnum(mv, "trust_limit"));
	} else {
		rep_vsets(vb, o, "median_error", "n/a");
		rep_vsets(vb, o, "worst_error", "n/a");
		rep_vsets(vb, o, "summary", "No plan has both a modelled and a measured time.");
	}
	size_t i;
	json_array_foreach(rep_vget(mv, "rows"), i, x) {
		json_t *r = rep_vpush(vb, rows);
		if (!r)
			return;
		rep_vsets(vb, r, "block", rep_vstr(x, "block"));
		rep_vsets(vb, r, "variant", rep_vstr(x, "variant"));
		set_code(vb, r, "plan", rep_vstr(x, "plan"));
		json_t *alt = rep_vget(x, "alternative");
		if (json_is_integer(alt))
			rep_vsetf(vb, r, "source", "alternative #%lld%s", (long long)json_integer_value(alt),
			     json_is_true(rep_vget(x, "ran")) ? " (ran)" : "");
		else
			rep_vsets(vb, r, "source", "run samples (median)");
		f_us(a, sizeof a, rep_vnum(x, "model_ns") / 1e3);
		rep_vsets(vb, r, "modelled", a);
		f_us(b, sizeof b, rep_vnum(x, "measured_ns") / 1e3);
		rep_vsets(vb, r, "measured", b);
		f_fixed(a, sizeof a, rep_vnum(x, "ratio"), 2);
		rep_vsetf(vb, r, "ratio", "x%s", a);
		rep_vsetf(vb, r, "error", "%.1f%%", 100 * rep_vnum(x, "abs_error"));
		rep_vsets(vb, r, "dominant", rep_vstr(x, "dominant_term"));
		rep_vsets(vb, r, "counted", json_is_true(rep_vget(x, "counted")) ? "yes" : "no (same plan as the run)");
	}
	json_array_foreach(rep_vget(mv, "planner"), i, x) {
		json_t *r = rep_vpush(vb, pl);
		if (!r)
			return;
		rep_vsets(vb, r, "block", rep_vstr(x, "block"));
		rep_vsets(vb, r, "variant", rep_vstr(x, "variant"));
		rep_vsetf(vb, r, "candidates", "%.0f", rep_vnum(x, "candidates"));
		f_fixed(a, sizeof a, rep_vnum(x, "kendall_tau"), 2);
		rep_vsets(vb, r, "tau", isfinite(rep_vnum(x, "kendall_tau")) ? a : "n/a (one candidate)");
		set_code(vb, r, "choice", rep_vstr(x, "choice_plan"));
		set_code(vb, r, "best", rep_vstr(x, "best_plan"));
		f_us(a, sizeof a, rep_vnum(x, "choice_ns") / 1e3);
		f_us(b, sizeof b, rep_vnum(x, "best_ns") / 1e3);
		rep_vsetf(vb, r, "times", "%s / %s", a, b);
		double sd = rep_vnum(x, "slowdown");
		json_t *ci = rep_vget(x, "slowdown_ci95");
		if (json_is_array(ci) && json_is_number(json_array_get(ci, 0)) &&
		    json_is_number(json_array_get(ci, 1)))
			/* paired rounds: the CI, and whether the choice is
			 * measurably slower than the best at all */
			rep_vsetf(vb, r, "slowdown", "%+.1f%% (95%% CI %+.1f%% to %+.1f%%%s)", 100 * sd,
				  100 * json_number_value(json_array_get(ci, 0)),
				  100 * json_number_value(json_array_get(ci, 1)),
				  json_is_true(rep_vget(x, "measurably_slower")) ? ""
										  : "; not measurably slower");
		else
			rep_vsetf(vb, r, "slowdown", "%+.1f%%", 100 * sd);
		rep_vsetf(vb, r, "verdict", "%s %.0f%%", !isfinite(sd) ? "n/a:" : json_is_true(rep_vget(x, "within")) ? "within" : "beyond",
		     100 * rep_vnum(x, "limit"));
	}
}

int rep_view_new(json_t *findings, json_t **view, struct opr_error *err)
{
	if (!json_is_object(findings))
		return opr_error_set(err, OPR_EINPUT, "findings must be a JSON object");
	json_t *ver = rep_vget(findings, "findings_version");
	if (!json_is_integer(ver) || json_integer_value(ver) != 1)
		return opr_error_set(err, OPR_EINPUT, "findings: 'findings_version' must be 1");
	const char *lists[] = { "blocks", "bottlenecks", "worksheet", "validation", "mitigations",
				"rejected_alternatives", "counters", "owners" };
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		if (!json_is_array(rep_vget(findings, lists[i])))
			return opr_error_set(err, OPR_EINPUT, "findings: '%s' must be a list", lists[i]);
	const char *verdict = rep_vstr(findings, "verdict");
	if (!*verdict)
		return opr_error_set(err, OPR_EINPUT, "findings: 'verdict' is missing");

	struct rep_vb vb = { 0 };
	json_t *v = json_object();
	if (!v)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	rep_vsets(&vb, v, "verdict", verdict);
	set_badge(&vb, v, "verdict_badge", verdict);
	rep_vsetf(&vb, v, "exit_code", "%.0f", rep_vnum(findings, "exit_code"));
	json_t *reasons = json_array(), *more = json_array(), *r;
	rep_vset(&vb, v, "reasons", reasons);
	rep_vset(&vb, v, "more_reasons", more);
	size_t i;
	json_array_foreach(rep_vget(findings, "reasons"), i, r) {
		const char *t = json_string_value(r) ? json_string_value(r) : "";
		if (!i)
			rep_vsets(&vb, v, "reason", t);
		if (!vb.oom && json_array_append_new(i ? more : reasons, json_string(t)))
			vb.oom = 1;
	}
	rep_vset(&vb, v, "more_reasons_any", json_boolean(json_array_size(more) > 0));
	if (*rep_vstr(findings, "rationale"))
		rep_vsets(&vb, v, "rationale", rep_vstr(findings, "rationale"));
	rep_vset(&vb, v, "mitigations_any", json_boolean(json_array_size(rep_vget(findings, "mitigations")) > 0));
	rep_vsets(&vb, v, "papi_status", rep_vstr(findings, "papi_status"));
	view_inputs(&vb, v, findings);
	json_t *blocks = json_array(), *b;
	rep_vset(&vb, v, "blocks", blocks);
	json_array_foreach(rep_vget(findings, "blocks"), i, b)
		if (!vb.oom)
			view_block(&vb, blocks, b);
	json_t *bv;
	json_array_foreach(blocks, i, bv)
		if (json_array_size(rep_vget(bv, "device_replay")))
			rep_vset(&vb, v, "device_replay_present", json_true());
	if (!vb.oom)
		view_bottlenecks(&vb, v, findings);
	if (!vb.oom)
		view_worksheet(&vb, v, findings);
	if (!vb.oom)
		view_lists(&vb, v, findings);
	if (!vb.oom)
		view_owners(&vb, v, findings);
	if (!vb.oom)
		view_model(&vb, v, findings);
	if (!vb.oom)
		view_owner_actions(&vb, v, findings);
	if (!vb.oom)
		view_matrix(&vb, v, findings);
	if (!vb.oom && rep_view_review(findings, v))
		vb.oom = 1;
	if (vb.oom) {
		json_decref(v);
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	*view = v;
	return 0;
}
