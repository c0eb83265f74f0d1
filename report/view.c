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

/* The ownership split of the packet (seed 002, "Ownership split"): team,
 * responsibility and closure artifact per sign-off role. */
static const struct {
	const char *role, *team, *responsibility, *artifact;
} OWNERSHIP[] = {
	{ "ml-compiler-engineer", "ML compiler engineer", "mechanism and architecture intent",
	  "design rationale + tradeoffs" },
	{ "kernel-performance-owner", "kernel performance owner", "mapping, runtime, and execution",
	  "profile traces + bottleneck map" },
	{ "runtime-systems-engineer", "runtime systems engineer", "correctness, risk, and signoff",
	  "test report + closure memo" },
};

struct vb {
	int oom;
};

/* ---- reading findings ---- */

static json_t *get(json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(get(o, k));
	return s ? s : "";
}

/* A number or NAN when missing or null. */
static double num(json_t *o, const char *k)
{
	json_t *v = get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* ---- writing the view ---- */

static void set(struct vb *vb, json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v))
		vb->oom = 1;
}

static void setf(struct vb *vb, json_t *o, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void setf(struct vb *vb, json_t *o, const char *k, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	set(vb, o, k, json_string(buf));
}

static void sets(struct vb *vb, json_t *o, const char *k, const char *s)
{
	set(vb, o, k, json_string(s ? s : ""));
}

static json_t *push(struct vb *vb, json_t *a)
{
	json_t *o = json_object();
	if (!o || json_array_append_new(a, o)) {
		vb->oom = 1;
		return NULL;
	}
	return o;
}

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
	double v = num(q, "value_ns") / 1e3, lo = num(q, "lo_ns") / 1e3, hi = num(q, "hi_ns") / 1e3;
	if (!json_is_true(get(q, "available"))) {
		const char *why = str(q, "reason");
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

static void set_badge(struct vb *vb, json_t *o, const char *k, const char *status)
{
	/* raw Markdown: the status words hold no special characters */
	const char *m = badge(status);
	setf(vb, o, k, "%s%s%s", m, status, m);
}

/* A code span that survives a table cell: backticks longer than any run in s,
 * and '|' escaped (GFM splits cells before it parses code spans). Raw Markdown. */
static void set_code(struct vb *vb, json_t *o, const char *k, const char *s)
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
	sets(vb, o, k, t);
	free(t);
}

/* ---- sections of the view ---- */

static json_t *variant_of(json_t *block, const char *name)
{
	json_t *vs = get(block, "variants"), *v;
	size_t i;
	json_array_foreach(vs, i, v)
		if (!strcmp(str(v, "variant"), name))
			return v;
	return NULL;
}

static json_t *comparison_of(json_t *block, const char *metric)
{
	json_t *cs = get(block, "comparisons"), *c;
	size_t i;
	json_array_foreach(cs, i, c)
		if (!strcmp(str(c, "metric"), metric))
			return c;
	return NULL;
}

static void comparison_text(char *b, size_t n, json_t *c)
{
	if (!c) {
		snprintf(b, n, "not compared");
	} else if (!json_is_true(get(c, "available"))) {
		snprintf(b, n, "unavailable: %s", str(c, "reason"));
	} else {
		char r[64];
		f_ratio_ci(r, sizeof r, num(c, "ratio"), num(c, "lo"), num(c, "hi"));
		snprintf(b, n, "%s %s", r, str(c, "outcome"));
	}
}

/* "3 → 1": before/after of one number of the two variants. */
static void arrow(char *b, size_t n, const char *x, const char *y)
{
	snprintf(b, n, "%s \u2192 %s", x, y);
}

/* The block's first-screen line: status and what did not pass, the host
 * p95 with its CI, launches, reuse, GLOBAL traffic, pipeline p95. */
static void view_block_summary(struct vb *vb, json_t *o, json_t *blk, json_t *base, json_t *cand)
{
	char a[160], c[160], t[400];
	arrow(t, sizeof t, str(base, "primary_bottleneck"), str(cand, "primary_bottleneck"));
	sets(vb, o, "primary_shift", t);
	comparison_text(t, sizeof t, comparison_of(blk, "p95"));
	sets(vb, o, "p95_ratio", t);
	f_count(a, sizeof a, num(base, "launches"));
	f_count(c, sizeof c, num(cand, "launches"));
	arrow(t, sizeof t, a, c);
	sets(vb, o, "launches", t);
	f_fixed(a, sizeof a, num(base, "reuse_ratio"), 1);
	f_fixed(c, sizeof c, num(cand, "reuse_ratio"), 1);
	arrow(t, sizeof t, a, c);
	sets(vb, o, "reuse", t);
	f_bytes(a, sizeof a, num(base, "global_bytes"));
	f_bytes(c, sizeof c, num(cand, "global_bytes"));
	arrow(t, sizeof t, a, c);
	sets(vb, o, "global_bytes", t);
	f_us(a, sizeof a, num(get(base, "pipeline"), "p95_us"));
	f_us(c, sizeof c, num(get(cand, "pipeline"), "p95_us"));
	arrow(t, sizeof t, a, c);
	sets(vb, o, "pipeline_p95", t);
	f_count(a, sizeof a, num(blk, "launch_reduction"));
	f_us(c, sizeof c, num(blk, "launch_overhead_saved_us"));
	if (!strcmp(str(blk, "group"), "imported"))
		sets(vb, o, "launch_reduction", "launches unavailable: an imported run has no device model");
	else
		setf(vb, o, "launch_reduction", "%s launch(es) fewer, %s launch overhead saved", a, c);
	/* the primary metric: the host p95 of each variant with its CI */
	f_quantile(a, sizeof a, get(get(base, "latency"), "p95"));
	f_quantile(c, sizeof c, get(get(cand, "latency"), "p95"));
	arrow(t, sizeof t, a, c);
	sets(vb, o, "p95_host", t);
	/* the block's status and what did not pass, from the analysis */
	const char *st = str(blk, "status");
	set_badge(vb, o, "status", *st ? st : "n/a");
	struct opr_buf ab = { 0 };
	json_t *att = get(blk, "attention"), *x;
	size_t ai;
	json_array_foreach(att, ai, x) {
		const char *m = badge(str(x, "status"));
		char *chk = rep_md_escape(str(x, "check"), 0), *val = rep_md_escape(str(x, "value"), 0);
		if (!chk || !val) {
			vb->oom = 1;
		} else {
			opr_buf_printf(&ab, "%s%s%s%s %s: %s", ai ? "; " : "", m, str(x, "status"), m, chk, val);
		}
		free(chk);
		free(val);
	}
	char *attn = opr_buf_take(&ab);
	if (!attn) {
		vb->oom = 1;
		return;
	}
	sets(vb, o, "attention", attn);
	free(attn);

}

/* One variant's tail-first statistics, pipeline results and batch sweep. */
static void view_variant(struct vb *vb, json_t *var, json_t *stats, json_t *pipes, json_t *sweep)
{
	char a[160], c[160], t[400];
	const char *vn = str(var, "variant");
	json_t *lat = get(var, "latency"), *s = push(vb, stats);
	if (!s)
		return;
	sets(vb, s, "variant", vn);
	f_count(t, sizeof t, num(lat, "n"));
	sets(vb, s, "n", t);
	const char *qs[] = { "p50", "p90", "p95", "p99" };
	for (int k = 0; k < 4; k++) {
		f_quantile(t, sizeof t, get(lat, qs[k]));
		sets(vb, s, qs[k], t);
	}
	/* the median without its CI: the table is tail first */
	f_us(t, sizeof t, num(get(lat, "p50"), "value_ns") / 1e3);
	sets(vb, s, "p50_value", t);
	f_us(t, sizeof t, num(lat, "mean_ns") / 1e3);
	sets(vb, s, "mean", t);
	f_us(t, sizeof t, num(lat, "max_ns") / 1e3);
	sets(vb, s, "max", t);

	json_t *pl = get(var, "pipeline"), *p = push(vb, pipes);
	if (!p)
		return;
	sets(vb, p, "variant", vn);
	const char *pk[] = { "p50_us", "p95_us", "p99_us", "max_us", "wait_p50_us", "wait_p95_us",
			     "wait_p99_us" };
	const char *pn[] = { "p50", "p95", "p99", "max", "wait_p50", "wait_p95", "wait_p99" };
	for (int k = 0; k < 7; k++) {
		f_us(t, sizeof t, num(pl, pk[k]));
		sets(vb, p, pn[k], t);
	}
	if (isfinite(num(pl, "p95_lo_us")))
		setf(vb, p, "p95_ci", "[%.1f, %.1f]", num(pl, "p95_lo_us"), num(pl, "p95_hi_us"));
	f_fixed(a, sizeof a, num(pl, "throughput_rps"), 1);
	setf(vb, p, "throughput", "%s rps", a);
	f_fixed(t, sizeof t, num(pl, "jain_cores"), 3);
	sets(vb, p, "jain_cores", t);
	f_fixed(t, sizeof t, num(pl, "jain_streams"), 3);
	sets(vb, p, "jain_streams", t);
	f_fixed(t, sizeof t, 100 * num(pl, "bw_util"), 0);
	setf(vb, p, "bw_util", "%s%%", t);
	f_fixed(t, sizeof t, num(pl, "mean_batch"), 2);
	sets(vb, p, "mean_batch", t);
	f_count(t, sizeof t, num(pl, "requests"));
	sets(vb, p, "requests", t);
	/* L = lambda W with lambda in rps and W in us: the product is
	 * lambda * W * 1e-6 requests in the system */
	f_fixed(a, sizeof a, num(pl, "little_L"), 2);
	f_fixed(c, sizeof c, num(pl, "little_lambda_rps"), 0);
	setf(vb, p, "little", "L = %s = %s rps x %.1f us", a, c, num(pl, "little_W_us"));
	json_t *sw = get(pl, "sweep"), *row;
	size_t i;
	json_array_foreach(sw, i, row) {
		json_t *r = push(vb, sweep);
		if (!r)
			return;
		sets(vb, r, "variant", vn);
		f_count(t, sizeof t, num(row, "batch"));
		sets(vb, r, "batch", t);
		const char *sk[] = { "p50_us", "p95_us", "p99_us", "wait_mean_us" };
		const char *sn[] = { "p50", "p95", "p99", "wait_mean" };
		for (int k = 0; k < 4; k++) {
			f_us(t, sizeof t, num(row, sk[k]));
			sets(vb, r, sn[k], t);
		}
		f_fixed(a, sizeof a, num(row, "throughput_rps"), 1);
		setf(vb, r, "throughput", "%s rps", a);
	}
}

/* The block's candidate / baseline comparisons per percentile. */
static void view_comparisons(struct vb *vb, json_t *cmps, json_t *blk)
{
	char a[160], t[400];
	json_t *cl = get(blk, "comparisons"), *cmp;
	size_t i;
	json_array_foreach(cl, i, cmp) {
		json_t *r = push(vb, cmps);
		if (!r)
			return;
		sets(vb, r, "metric", str(cmp, "metric"));
		set(vb, r, "tail", json_boolean(strcmp(str(cmp, "metric"), "p50") != 0));
		if (json_is_true(get(cmp, "available")))
			setf(vb, r, "p_adj", "%.2g", num(cmp, "p_adjusted"));
		else
			sets(vb, r, "p_adj", "-");
		if (json_is_true(get(cmp, "available"))) {
			f_ratio_ci(t, sizeof t, num(cmp, "ratio"), num(cmp, "lo"), num(cmp, "hi"));
			sets(vb, r, "ratio", t);
			setf(vb, r, "p", "%.2g (adjusted %.2g)", num(cmp, "p_mwu"), num(cmp, "p_adjusted"));
			f_fixed(a, sizeof a, 100 * num(cmp, "mde"), 1);
			setf(vb, r, "mde", "%s%%", a);
			const char *note = str(cmp, "note");
			setf(vb, r, "note", "%s%s%s", json_is_true(get(cmp, "underpowered")) ? "underpowered" : "",
			     json_is_true(get(cmp, "underpowered")) && *note ? "; " : "", note);
		} else {
			sets(vb, r, "ratio", "unavailable");
			sets(vb, r, "p", "-");
			sets(vb, r, "mde", "-");
			sets(vb, r, "note", str(cmp, "reason"));
		}
		set_badge(vb, r, "outcome", str(cmp, "outcome"));
	}
}

static void view_block(struct vb *vb, json_t *out, json_t *blk)
{
	json_t *o = push(vb, out);
	if (!o)
		return;
	json_t *base = variant_of(blk, "baseline"), *cand = variant_of(blk, "candidate");
	char a[160], c[160];
	const char *keys[] = { "name", "group", "dtype", "activation", "workload", "stop_reason" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		sets(vb, o, keys[i], str(blk, keys[i]));
	f_count(a, sizeof a, num(blk, "rounds"));
	f_count(c, sizeof c, num(blk, "reps_per_round"));
	setf(vb, o, "sampling", "%s rounds x %s reps", a, c);
	json_t *noise = get(blk, "noise");
	if (json_is_true(get(noise, "available")))
		setf(vb, o, "noise", "floor %.1f%%, round CV %.1f%%, MDE %.1f%%",
		     100 * num(noise, "floor"), 100 * num(noise, "cv"), 100 * num(noise, "mde"));
	else
		setf(vb, o, "noise", "unavailable: %s", str(noise, "reason"));

	view_block_summary(vb, o, blk, base, cand);
	if (vb->oom)
		return;
	/* tail-first statistics of both variants */
	json_t *stats = json_array(), *pipes = json_array(), *sweep = json_array(), *cmps = json_array();
	set(vb, o, "stats", stats);
	set(vb, o, "pipeline", pipes);
	set(vb, o, "sweep", sweep);
	set(vb, o, "comparisons", cmps);
	if (vb->oom)
		return;
	json_t *vars[2] = { base, cand };
	for (int v = 0; v < 2 && !vb->oom; v++)
		if (vars[v])
			view_variant(vb, vars[v], stats, pipes, sweep);
	if (!vb->oom)
		view_comparisons(vb, cmps, blk);
}

static void evidence_text(char *b, size_t n, json_t *e)
{
	char v[64];
	double x = num(e, "value");
	const char *unit = str(e, "unit");
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
	const char *cmp = str(e, "comparison"), *note = str(e, "note");
	snprintf(b, n, "%s = %s (%s%s%s%s%s)", str(e, "metric"), v, str(e, "provenance"),
		 *cmp ? "; " : "", cmp, *note ? "; " : "", note);
}

static void view_bottlenecks(struct vb *vb, json_t *view, json_t *f)
{
	json_t *map = json_array(), *answers = json_array();
	set(vb, view, "bottleneck_map", map);
	set(vb, view, "findings", answers);
	if (vb->oom)
		return;
	json_t *bl = get(f, "bottlenecks"), *x;
	size_t i;
	json_array_foreach(bl, i, x) {
		json_t *o = push(vb, map);
		if (!o)
			return;
		const char *block = str(x, "block"), *variant = str(x, "variant");
		int primary = json_is_true(get(x, "primary"));
		sets(vb, o, "block", block);
		sets(vb, o, "variant", variant);
		sets(vb, o, "class", str(x, "class"));
		sets(vb, o, "rank", primary ? "primary" : "secondary");
		set(vb, o, "secondary", json_boolean(!primary));
		if (!primary) {
			/* a secondary class is named below the map, with its score */
			const char *had = str(view, "secondary_classes");
			setf(vb, view, "secondary_classes", "%s%s%s %s: %s (%.2f)", had, *had ? "; " : "", block,
			     variant, str(x, "class"), num(x, "score"));
		}
		char t[2048], e1[400];
		f_fixed(t, sizeof t, num(x, "score"), 2);
		sets(vb, o, "score", t);
		struct opr_buf eb = { 0 };
		json_t *ev = get(x, "evidence"), *e;
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
			sets(vb, r, "text", e1);
		}
		char *joined = opr_buf_take(&eb);
		if (!joined) {
			vb->oom = 1;
			json_decref(elist);
			return;
		}
		sets(vb, o, "evidence", joined);
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
			sets(vb, o, "deciding", t);
		} else {
			sets(vb, o, "deciding", "");
		}
		while (json_array_size(elist) > 4)
			json_array_remove(elist, json_array_size(elist) - 1);
		/* the block's p95 comparison, the symptom the class must explain */
		json_t *blk = NULL, *b;
		size_t j;
		json_array_foreach(get(f, "blocks"), j, b)
			if (!strcmp(str(b, "name"), block))
				blk = b;
		comparison_text(t, sizeof t, !strcmp(variant, "candidate") ? comparison_of(blk, "p95") : NULL);
		sets(vb, o, "comparison", !strcmp(variant, "candidate") ? t : "baseline");
		if (!primary || strcmp(variant, "candidate")) {
			json_decref(elist);
			continue;
		}
		json_t *a = push(vb, answers);
		if (!a) {
			json_decref(elist);
			return;
		}
		sets(vb, a, "block", block);
		sets(vb, a, "variant", variant);
		sets(vb, a, "class", str(x, "class"));
		/* a block whose candidate passes every check has no symptom to
		 * explain at length: its answer is one line */
		/* the blocks that fail: a warning's question is its mitigation's */
		int full = !strcmp(str(blk, "status"), "FAIL");
		set(vb, a, "full", json_boolean(full));
		if (full)
			set(vb, view, "findings_full", json_true());
		sets(vb, a, "symptom", str(x, "symptom"));
		sets(vb, a, "explanation", str(x, "explanation"));
		set(vb, a, "evidence", elist);
		set_code(vb, a, "reproduce", str(x, "reproduce"));
	}
}

static void view_worksheet(struct vb *vb, json_t *view, json_t *f)
{
	json_t *rows = json_array(), *w;
	set(vb, view, "worksheet", rows);
	size_t i;
	size_t hidden = 0;
	json_array_foreach(get(f, "worksheet"), i, w) {
		/* the plans that ran; the shown alternatives are under Rejected
		 * alternatives, every row in findings.json and the workbook */
		if (strcmp(str(w, "status"), "chosen")) {
			hidden++;
			continue;
		}
		json_t *o = push(vb, rows);
		if (!o)
			return;
		char a[64], c[64];
		sets(vb, o, "block", str(w, "block"));
		sets(vb, o, "variant", str(w, "variant"));
		sets(vb, o, "group", str(w, "group"));
		set_code(vb, o, "plan", str(w, "plan"));
		sets(vb, o, "fused", json_is_true(get(w, "fused")) ? "yes" : "no");
		f_bytes(a, sizeof a, num(w, "footprint_bytes"));
		f_bytes(c, sizeof c, num(w, "capacity_bytes"));
		setf(vb, o, "footprint", "%s / %s", a, c);
		sets(vb, o, "footprint_only", a);
		sets(vb, view, "capacity", c);
		f_bytes(a, sizeof a, num(w, "global_bytes"));
		sets(vb, o, "global_bytes", a);
		f_fixed(a, sizeof a, num(w, "reuse_ratio"), 1);
		sets(vb, o, "reuse", a);
		f_count(a, sizeof a, num(w, "launches"));
		sets(vb, o, "launches", a);
		f_us(a, sizeof a, num(w, "launch_overhead_saved_us"));
		sets(vb, o, "saved", a);
		f_us(a, sizeof a, num(w, "model_us"));
		sets(vb, o, "model", isfinite(num(w, "model_us")) ? a : "not modelled");
		sets(vb, o, "expected", str(w, "expected_bottleneck"));
		sets(vb, o, "shift", str(w, "shift"));
		set_badge(vb, o, "status", str(w, "status"));
		/* "auto: 'PLAN', fastest of ..." names the plan the row shows */
		const char *why = str(w, "reason"), *cut = strstr(why, "', ");
		if (!strncmp(why, "auto: '", 7) && cut) {
			/* and its modelled time, the row's own column */
			const char *paren = strstr(cut + 3, " (");
			setf(vb, o, "reason", "auto: %.*s", paren ? (int)(paren - cut - 3) : (int)strlen(cut + 3),
			     cut + 3);
		}
		else
			sets(vb, o, "reason", why);
	}
	if (hidden)
		setf(vb, view, "worksheet_more", "The plans that ran; %zu alternatives the planner evaluated are in "
		     "findings.json and on the workbook's Worksheet sheet (the closest ones below).", hidden);
}

/* The row of list whose k1 and k2 fields equal v1 and v2 (NULL if none). */
static json_t *find_row(json_t *list, const char *k1, const char *v1, const char *k2,
			const char *v2)
{
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o)
		if (!strcmp(str(o, k1), v1) && !strcmp(str(o, k2), v2))
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

/* Per sample in the tail (>= p95) beside the rest: whether the slow samples are
 * the preempted or faulting ones. Unavailable counters are in the list below the
 * counters table already, so only the measured ones get a row here. */
static void view_tail_counters(struct vb *vb, json_t *view, json_t *f)
{
	json_t *rows = json_array(), *x;
	size_t i;
	set(vb, view, "host_tail", rows);
	if (vb->oom)
		return;
	json_array_foreach(get(f, "host_counters_tail"), i, x) {
		if (!json_is_true(get(x, "available")))
			continue;
		json_t *o = push(vb, rows);
		if (!o)
			return;
		char a[48], b[48], c[48], d[48];
		int prec = strcmp(str(x, "counter"), "thread-cpu-ns") ? 3 : 0;
		f_fixed(a, sizeof a, num(x, "tail_per_sample"), prec);
		f_fixed(b, sizeof b, num(x, "rest_per_sample"), prec);
		f_fixed(c, sizeof c, 100.0 * num(x, "tail_share"), 0);
		f_fixed(d, sizeof d, 100.0 * num(x, "rest_share"), 0);
		sets(vb, o, "block", str(x, "block"));
		sets(vb, o, "variant", str(x, "variant"));
		sets(vb, o, "counter", str(x, "counter"));
		sets(vb, o, "tail", a);
		sets(vb, o, "rest", b);
		setf(vb, o, "tail_share", "%s%%", c);
		setf(vb, o, "rest_share", "%s%%", d);
		setf(vb, o, "samples", "%.0f / %.0f", num(x, "tail_samples"), num(x, "rest_samples"));
		sets(vb, o, "source", str(x, "source"));
	}
	/* the same as a matrix: a row per counter, a column per block, each cell
	 * tail / rest per sample, baseline -> candidate; the shares and sample
	 * counts stay in findings.json and the workbook */
	json_t *pivot = json_array(), *b;
	set(vb, view, "host_tail_pivot", pivot);
	struct opr_buf ph = { 0 };
	opr_buf_puts(&ph, "| Counter (tail / rest per sample) |");
	size_t nb = 0;
	json_array_foreach(get(f, "blocks"), i, b) {
		char *e = rep_md_escape(str(b, "name"), 0);
		opr_buf_printf(&ph, " %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
		nb++;
	}
	opr_buf_puts(&ph, "\n|");
	for (size_t k = 0; k < nb + 1; k++)
		opr_buf_puts(&ph, " --- |");
	char *phead = opr_buf_take(&ph);
	if (!phead) {
		vb->oom = 1;
		return;
	}
	sets(vb, view, "host_tail_pivot_head", phead);
	free(phead);
	json_t *seen = json_array();
	set(vb, view, "host_tail_names", seen);
	if (vb->oom)
		return;
	json_array_foreach(rows, i, x) {
		size_t j;
		json_t *y;
		int dup = 0;
		json_array_foreach(seen, j, y)
			dup |= !strcmp(json_string_value(y), str(x, "counter"));
		if (dup)
			continue;
		if (json_array_append_new(seen, json_string(str(x, "counter")))) {
			vb->oom = 1;
			return;
		}
		int zero = 1;
		json_t *z0;
		json_array_foreach(rows, j, z0)
			if (!strcmp(str(z0, "counter"), str(x, "counter")))
				zero &= atof(str(z0, "tail")) == 0 && atof(str(z0, "rest")) == 0;
		if (zero) {
			const char *had = str(view, "host_tail_zero");
			setf(vb, view, "host_tail_zero", "%s%s%s", had, *had ? ", " : "", str(x, "counter"));
			continue;
		}
		struct opr_buf r = { 0 };
		char *e = rep_md_escape(str(x, "counter"), 0);
		opr_buf_printf(&r, "| %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
		json_array_foreach(get(f, "blocks"), j, b) {
			json_t *bv = NULL, *cv = NULL, *z;
			size_t k;
			json_array_foreach(rows, k, z)
				if (!strcmp(str(z, "block"), str(b, "name")) &&
				    !strcmp(str(z, "counter"), str(x, "counter")))
					*(strcmp(str(z, "variant"), "candidate") ? &bv : &cv) = z;
			if (bv && cv)
				opr_buf_printf(&r, " %s / %s \u2192 %s / %s |", str(bv, "tail"), str(bv, "rest"),
					       str(cv, "tail"), str(cv, "rest"));
			else
				opr_buf_puts(&r, " - |");
		}
		char *row = opr_buf_take(&r);
		json_t *o = push(vb, pivot);
		if (!row || !o) {
			free(row);
			vb->oom = 1;
			return;
		}
		sets(vb, o, "row", row);
		free(row);
	}
	/* the table only when it has rows; else one line that says why not */
	if (json_array_size(rows))
		set(vb, view, "host_tail_present", json_true());
	else if (json_array_size(get(f, "host_counters_tail")))
		sets(vb, view, "host_tail_absent", "unavailable on this host (the reasons are "
		     "in the list below)");
	else
		sets(vb, view, "host_tail_absent", "not recorded: these findings predate them");
}

static void view_lists(struct vb *vb, json_t *view, json_t *f)
{
	json_t *val = json_array(), *mit = json_array(), *rej = json_array(), *cav = json_array(),
	       *cun = json_array(), *rules = json_array(), *x;
	set(vb, view, "validation", val);
	set(vb, view, "mitigations", mit);
	set(vb, view, "rejected", rej);
	set(vb, view, "counters", cav);
	set(vb, view, "counters_unavailable", cun);
	set(vb, view, "rules", rules);
	if (vb->oom)
		return;
	size_t i;
	json_array_foreach(get(f, "validation"), i, x) {
		json_t *o = push(vb, val);
		if (!o)
			return;
		const char *k[] = { "block", "variant", "dtype", "check", "value", "threshold",
				    "provenance", "trigger", "rollback_to" };
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++)
			sets(vb, o, k[j], str(x, k[j]));
		set_badge(vb, o, "status", str(x, "status"));
	}
	json_array_foreach(get(f, "mitigations"), i, x) {
		json_t *o = push(vb, mit);
		if (!o)
			return;
		const char *k[] = { "block", "title", "owner_role", "expected", "validation", "rollback" };
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++)
			sets(vb, o, k[j], str(x, k[j]));
		const char *name = "unassigned";
		json_t *ow;
		size_t j;
		json_array_foreach(get(f, "owners"), j, ow)
			if (!strcmp(str(ow, "role"), str(x, "owner_role")))
				name = str(ow, "name");
		sets(vb, o, "owner_name", name);
	}
	/* the table's rows: a mitigation proposed alike for several blocks is
	 * one row naming them; its rollback boundary is then each block's own */
	json_t *mg = json_array();
	set(vb, view, "mitigations_grouped", mg);
	if (vb->oom)
		return;
	json_array_foreach(mit, i, x) {
		json_t *o = NULL, *y;
		size_t j;
		json_array_foreach(mg, j, y)
			if (!strcmp(str(y, "title"), str(x, "title")) &&
			    !strcmp(str(y, "owner_role"), str(x, "owner_role")) &&
			    !strcmp(str(y, "expected"), str(x, "expected")) &&
			    !strcmp(str(y, "validation"), str(x, "validation")))
				o = y;
		if (o) {
			setf(vb, o, "block", "%s, %s", str(o, "block"), str(x, "block"));
			if (strcmp(str(o, "rollback"), str(x, "rollback")))
				sets(vb, o, "rollback", "each block's baseline (validation matrix)");
			continue;
		}
		if (!(o = json_deep_copy(x)) || json_array_append_new(mg, o)) {
			vb->oom = 1;
			return;
		}
	}
	size_t rej_hidden = 0;
	json_array_foreach(get(f, "rejected_alternatives"), i, x) {
		/* the closest alternatives of the blocks that did not pass: where a
		 * reviewer asks "why not another plan" */
		json_t *blk = NULL, *y;
		size_t j;
		json_array_foreach(get(f, "blocks"), j, y)
			if (!strcmp(str(y, "name"), str(x, "block")))
				blk = y;
		if (json_is_false(get(x, "shown")) || !strcmp(str(blk, "status"), "PASS")) {
			rej_hidden++;
			continue;
		}
		json_t *o = push(vb, rej);
		if (!o)
			return;
		sets(vb, o, "block", str(x, "block"));
		sets(vb, o, "variant", *str(x, "variant") ? str(x, "variant") : "-");
		set_code(vb, o, "plan", str(x, "plan"));
		sets(vb, o, "reason", str(x, "reason"));
	}
	set(vb, view, "rejected_any", json_boolean(json_array_size(rej) > 0));
	if (rej_hidden)
		setf(vb, view, "rejected_more", "%zu more rejected plans (the passing blocks' among them), with "
		     "their reasons, are in findings.json and on the workbook's Worksheet sheet.", rej_hidden);
	size_t sde_hidden = 0, other_hidden = 0;
	json_array_foreach(get(f, "counters"), i, x) {
		int avail = json_is_true(get(x, "available")) && isfinite(num(x, "value"));
		const char *cn = str(x, "name");
		int elsewhere = !strcmp(cn, "launches") || !strcmp(cn, "modelled time ns") ||
				!strcmp(cn, "host samples") || !strcmp(cn, "peak SHARED bytes");
		if (avail && elsewhere) {
			/* shown by the summary, the worksheet and the statistics */
			other_hidden++;
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
			int cand = !strcmp(str(x, "variant"), "candidate");
			char label[128];
			counter_label(label, sizeof label, str(x, "name"));
			json_t *o = find_row(cav, "block", str(x, "block"), "name", label);
			if (!o && !(o = push(vb, cav)))
				return;
			char a[64], bare[128];
			f_count(a, sizeof a, num(x, "value"));
			counter_label(bare, sizeof bare, str(x, "name"));
			sets(vb, o, "block", str(x, "block"));
			sets(vb, o, "name", bare);
			sets(vb, o, cand ? "candidate" : "baseline", a);
			if (!json_is_string(get(o, cand ? "baseline" : "candidate")))
				sets(vb, o, cand ? "baseline" : "candidate", "-");
			if (!strcmp(str(x, "provenance"), "measured") && *str(x, "source"))
				setf(vb, o, "provenance", "measured: %s", str(x, "source"));
			else
				sets(vb, o, "provenance", str(x, "provenance"));
			continue;
		}
		/* an event the host lacks is missing everywhere for one reason:
		 * list it once, with where it is missing */
		const char *why = *str(x, "reason") ? str(x, "reason") : "no reason recorded";
		char bare[128];
		counter_label(bare, sizeof bare, str(x, "name"));
		json_t *o = find_row(cun, "name", bare, "reason", why);
		if (o) {
			if (strcmp(str(o, "block"), str(x, "block")))
				sets(vb, o, "block", "every block");
			if (strcmp(str(o, "variant"), str(x, "variant")))
				sets(vb, o, "variant", "both");
			continue;
		}
		if (!(o = push(vb, cun)))
			return;
		sets(vb, o, "block", str(x, "block"));
		sets(vb, o, "variant", str(x, "variant"));
		sets(vb, o, "name", bare);
		sets(vb, o, "reason", why);
	}
	/* and the events missing for one reason in the same places: one row */
	json_t *grouped = json_array();
	set(vb, view, "counters_unavailable_grouped", grouped);
	if (vb->oom)
		return;
	json_array_foreach(cun, i, x) {
		json_t *o = NULL, *y;
		size_t j;
		json_array_foreach(grouped, j, y)
			if (!strcmp(str(y, "reason"), str(x, "reason")) && !strcmp(str(y, "block"), str(x, "block")) &&
			    !strcmp(str(y, "variant"), str(x, "variant")))
				o = y;
		if (o) {
			setf(vb, o, "names", "%s, %s", str(o, "names"), str(x, "name"));
			continue;
		}
		if (!(o = push(vb, grouped)))
			return;
		sets(vb, o, "block", str(x, "block"));
		sets(vb, o, "variant", str(x, "variant"));
		sets(vb, o, "names", str(x, "name"));
		sets(vb, o, "reason", str(x, "reason"));
	}
	/* the same as a matrix: a row per counter, a column per block, each cell
	 * baseline -> candidate (raw Markdown: the columns follow the data) */
	json_t *pivot = json_array(), *blocks = get(f, "blocks"), *b;
	set(vb, view, "counters_pivot", pivot);
	struct opr_buf ph = { 0 };
	opr_buf_puts(&ph, "| Counter | Provenance |");
	size_t nb = 0;
	json_array_foreach(blocks, i, b) {
		char *e = rep_md_escape(str(b, "name"), 0);
		opr_buf_printf(&ph, " %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
		nb++;
	}
	opr_buf_puts(&ph, "\n|");
	for (size_t k = 0; k < nb + 2; k++)
		opr_buf_puts(&ph, " --- |");
	char *phead = opr_buf_take(&ph);
	if (!phead) {
		vb->oom = 1;
		return;
	}
	sets(vb, view, "counters_pivot_head", phead);
	free(phead);
	json_t *seen = json_array();
	set(vb, view, "counters_names", seen);
	if (vb->oom)
		return;
	json_array_foreach(cav, i, x) {
		size_t j;
		json_t *y;
		int dup = 0;
		json_array_foreach(seen, j, y)
			dup |= !strcmp(json_string_value(y), str(x, "name"));
		if (dup)
			continue;
		if (json_array_append_new(seen, json_string(str(x, "name")))) {
			vb->oom = 1;
			return;
		}
		/* a counter that is 0 everywhere is named once, below the table */
		int zero = 1;
		json_t *z;
		json_array_foreach(cav, j, z)
			if (!strcmp(str(z, "name"), str(x, "name")))
				zero &= !strcmp(str(z, "baseline"), "0") && !strcmp(str(z, "candidate"), "0");
		if (zero) {
			const char *had = str(view, "counters_zero");
			setf(vb, view, "counters_zero", "%s%s%s", had, *had ? ", " : "", str(x, "name"));
			continue;
		}
		struct opr_buf r = { 0 };
		char *e = rep_md_escape(str(x, "name"), 0), *pv = rep_md_escape(str(x, "provenance"), 0);
		opr_buf_printf(&r, "| %s | %s |", e ? e : "", pv ? pv : "");
		vb->oom |= !e || !pv;
		free(e);
		free(pv);
		json_array_foreach(blocks, j, b) {
			json_t *c = find_row(cav, "block", str(b, "name"), "name", str(x, "name"));
			if (c)
				opr_buf_printf(&r, " %s \u2192 %s |", str(c, "baseline"), str(c, "candidate"));
			else
				opr_buf_puts(&r, " - |");
		}
		char *row = opr_buf_take(&r);
		json_t *o = push(vb, pivot);
		if (!row || !o) {
			free(row);
			vb->oom = 1;
			return;
		}
		sets(vb, o, "row", row);
		free(row);
	}
	if (sde_hidden + other_hidden)
		setf(vb, view, "counters_more", "In findings.json and the workbook's Counters sheet: %zu more rows, "
		     "%zu of them the SDE read-back (sde:::opreview::*) the validation matrix checks.",
		     sde_hidden + other_hidden, sde_hidden);
	view_tail_counters(vb, view, f);
	json_array_foreach(get(f, "rules"), i, x) {
		json_t *o = push(vb, rules);
		if (!o)
			return;
		const char *k[] = { "class", "formula", "threshold", "explanation", "source" };
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++)
			sets(vb, o, k[j], str(x, k[j]));
	}
}

static void kv(struct vb *vb, json_t *a, const char *key, const char *value)
{
	json_t *o = push(vb, a);
	if (!o)
		return;
	sets(vb, o, "key", key);
	sets(vb, o, "value", value && *value ? value : "not recorded");
}

static void view_inputs(struct vb *vb, json_t *view, json_t *f)
{
	json_t *p = get(f, "profile"), *meta = get(p, "metadata"), *sla = get(f, "sla"),
	       *pr = get(f, "precision"), *tr = get(f, "traffic"), *env = get(f, "envelope"),
	       *host = get(f, "host"), *rp = get(f, "reproduce"), *ov = get(f, "overhead");
	char a[512], c[128];
	json_t *prof = json_object();
	set(vb, view, "profile", prof);
	if (vb->oom)
		return;
	sets(vb, prof, "name", str(p, "name"));
	sets(vb, prof, "path", str(p, "path"));
	sets(vb, prof, "sha256", str(p, "sha256"));
	f_fixed(a, sizeof a, num(p, "seed"), 0);
	sets(vb, prof, "seed", a);
	sets(vb, prof, "model_revision", str(p, "model_revision"));
	sets(vb, prof, "compiler", str(meta, "compiler"));
	sets(vb, prof, "runtime", str(meta, "runtime"));
	sets(vb, prof, "firmware", str(meta, "firmware"));
	/* an imported run: the source, and no model, traffic or quality inputs */
	json_t *imp = get(f, "imported");
	if (json_is_object(imp)) {
		json_t *io = json_object();
		set(vb, view, "imported", io);
		if (vb->oom)
			return;
		const char *ik[] = {"format", "path", "sha256", "tool", "device", "date_from"};
		for (size_t i = 0; i < sizeof ik / sizeof *ik; i++)
			sets(vb, io, ik[i], str(imp, ik[i]));
	}

	json_t *in = json_array();
	set(vb, view, "sla_rows", in);
	if (vb->oom)
		return;
	if (imp && !isfinite(num(sla, "p95_us"))) {
		snprintf(a, sizeof a, "unavailable: no SLA was given to ingest; regression <= %.1f%% over baseline",
			 100 * num(sla, "max_regression"));
		kv(vb, in, "SLA", a);
	} else {
		char p95[32], p99[32];
		f_us(p95, sizeof p95, num(sla, "p95_us"));
		f_us(p99, sizeof p99, num(sla, "p99_us"));
		snprintf(a, sizeof a, "p95 <= %s, p99 <= %s, throughput >= %.0f rps, regression <= %.1f%% over baseline",
			 p95, p99, num(sla, "min_throughput_rps"), 100 * num(sla, "max_regression"));
		kv(vb, in, "SLA", a);
	}
	if (imp) {
		kv(vb, in, "precision, traffic",
		   "unavailable: an imported run has no outputs to check and no pipeline simulation");
		goto envelope;
	}
	snprintf(a, sizeof a, "rel L2 fp32 %.3g, fp16 %.3g, bf16 %.3g; int8 %.3g LSB", num(pr, "fp32_max_rel_l2"),
		 num(pr, "fp16_max_rel_l2"), num(pr, "bf16_max_rel_l2"), num(pr, "int8_max_abs_lsb"));
	kv(vb, in, "precision", a);
	snprintf(a, sizeof a, "%.0f streams, %s arrivals at %.0f rps, %.0f requests",
		 num(tr, "streams"), str(tr, "process"), num(tr, "rate_rps"), num(tr, "requests"));
	kv(vb, in, "traffic", a);
	snprintf(a, sizeof a, "max %.0f, timeout %.0f us, placement %s", num(tr, "batch_max"),
		 num(tr, "batch_timeout_us"), str(tr, "placement"));
	kv(vb, in, "batching", a);

envelope:;
	json_t *en = json_array();
	set(vb, view, "envelope_rows", en);
	if (vb->oom)
		return;
	sets(vb, view, "envelope_name", str(env, "name"));
	if (imp) {
		sets(vb, view, "power_mode", "not modelled");
		kv(vb, en, "device model", "unavailable: an imported run's device is not modelled");
		kv(vb, en, "measured on", str(imp, "device"));
		goto host;
	}
	sets(vb, view, "power_mode", str(env, "power_mode"));
	kv(vb, en, "source", str(env, "source"));
	snprintf(a, sizeof a, "%.0f at %.2f GHz", num(env, "cores"), num(env, "clock_ghz"));
	kv(vb, en, "cores", a);
	snprintf(a, sizeof a, "GLOBAL %.1f GB/s; SHARED %.0f KiB at %.1f GB/s; LOCAL %.0f KiB",
		 num(env, "global_bandwidth_gbps"), num(env, "shared_capacity_kib"),
		 num(env, "shared_bandwidth_gbps"), num(env, "local_capacity_kib"));
	kv(vb, en, "memory", a);
	snprintf(a, sizeof a, "%.0f engine%s, %.0f ns setup, last dim <= %.0f%s",
		 num(env, "dma_engines"), num(env, "dma_engines") == 1 ? "" : "s",
		 num(env, "dma_setup_ns"), num(env, "dma_max_last_dim"),
		 json_is_true(get(env, "dma_serial"))
			 ? "; serial (copies on the computing thread: never overlapped)"
			 : "");
	kv(vb, en, "DMA", a);
	json_t *tops = get(env, "compute_tops");
	/* %.3g: a calibrated host runs at hundredths of a TOPS */
	snprintf(a, sizeof a, "fp32 %.3g, fp16 %.3g, bf16 %.3g, int8 %.3g", num(tops, "fp32"),
		 num(tops, "fp16"), num(tops, "bf16"), num(tops, "int8"));
	kv(vb, en, "compute TOPS", a);
	if (isfinite(num(tops, "vector"))) {
		if (isfinite(num(tops, "vector_half")))
			snprintf(a, sizeof a, "%.3g (fp16/bf16 data: %.3g)", num(tops, "vector"),
				 num(tops, "vector_half"));
		else
			snprintf(a, sizeof a, "%.3g", num(tops, "vector"));
		kv(vb, en, "vector (element-wise) TOPS", a);
	}
	f_us(a, sizeof a, num(env, "launch_overhead_us"));
	kv(vb, en, "launch overhead", a);

host:;
	json_t *hr = json_array();
	set(vb, view, "host_rows", hr);
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
			f_count(c, sizeof c, num(host, "cpus_online"));
			snprintf(a, sizeof a, "%s, %s CPUs online; %s", str(host, hk[0]), c, str(host, "caches"));
			kv(vb, hr, hn[0], a);
		} else if (!strcmp(hk[i], "caches")) {
			continue;
		} else if (!strcmp(hk[i], "kernel")) {
			snprintf(a, sizeof a, "%s; governor %s", str(host, "kernel"), str(host, "governor"));
			kv(vb, hr, hn[i], a);
		} else if (!strcmp(hk[i], "governor") || !strcmp(hk[i], "kernel_paths")) {
			continue;
		} else if (!strcmp(hk[i], "kernel_isa")) {
			/* findings written before the kernel paths were recorded */
			const char *isa = str(host, "kernel_isa"), *per = str(host, "kernel_paths");
			if (!*isa && !*per)
				snprintf(a, sizeof a, "unavailable: not in these findings");
			else
				snprintf(a, sizeof a, "%s; per family: %s", *isa ? isa : "unavailable",
					 *per ? per : "unavailable");
			kv(vb, hr, "host kernel path", a);
		} else if (!strcmp(hk[i], "compiler")) {
			snprintf(a, sizeof a, "%s %s", str(host, "compiler"), str(host, "cflags"));
			kv(vb, hr, hn[i], a);
		} else if (!strcmp(hk[i], "cflags")) {
			continue;
		} else if (!strcmp(hk[i], "tool_version")) {
			snprintf(a, sizeof a, "%s (git %s)", str(host, "tool_version"), str(host, "git_revision"));
			kv(vb, hr, hn[i], a);
		} else if (strcmp(hk[i], "git_revision") && strcmp(hk[i], "hostname")) {
			const char *hv = str(host, hk[i]);
			/* findings written before the kernel paths were recorded */
			if (!*hv && !strncmp(hk[i], "kernel_", 7))
				hv = "unavailable: not in these findings";
			kv(vb, hr, hn[i], hv);
		}
	}
	f_bytes(c, sizeof c, num(host, "mem_total_bytes"));
	snprintf(a, sizeof a, "%s, %s", str(host, "hostname"),
		 imp ? "memory unavailable: the source does not give it" : c);
	kv(vb, hr, "host name, memory", a);
	/* a GPU run: the device that ran the blocks */
	json_t *dev = get(f, "device");
	if (json_is_object(dev)) {
		double dv = num(dev, "driver_version"), rv = num(dev, "cuda_runtime_version");
		snprintf(a, sizeof a, "%s (cuda device %.0f, compute capability %s)", str(dev, "name"),
			 num(dev, "index"), str(dev, "compute_capability"));
		kv(vb, hr, "GPU", a);
		snprintf(a, sizeof a, "%.0f SMs, SHARED %.0f KiB per block, L2 %.0f MiB", num(dev, "sm_count"),
			 num(dev, "shared_per_block_optin_bytes") / 1024, num(dev, "l2_bytes") / 1048576);
		kv(vb, hr, "GPU resources", a);
		snprintf(a, sizeof a, "SM %.0f MHz rated, %.0f-%.0f MHz seen (sm__cycles_elapsed over the "
			 "median time); memory %.0f MHz", num(dev, "sm_clock_khz") / 1000,
			 num(dev, "clock_seen_mhz_min"), num(dev, "clock_seen_mhz_max"),
			 num(dev, "mem_clock_khz") / 1000);
		kv(vb, hr, "GPU clocks", a);
		snprintf(a, sizeof a, "driver %s (CUDA API %.0f.%.0f), CUDA runtime %.0f.%.0f, PAPI %s",
			 str(dev, "kernel_driver"), floor(dv / 1000), fmod(dv, 1000) / 10, floor(rv / 1000),
			 fmod(rv, 1000) / 10, str(dev, "papi_version"));
		kv(vb, hr, "GPU software", a);
		kv(vb, hr, "GPU timing", json_is_true(get(dev, "l2_flushed_per_sample"))
						 ? "CUDA events, one run a sample, L2 flushed before each"
						 : "CUDA events, one run a sample, L2 warm");
	}
	/* without PAPI its read cost was not measured: never a 0 */
	if (imp)
		snprintf(a, sizeof a, "unavailable: opreview took no samples itself (PAPI: %s)",
			 str(f, "papi_status"));
	else if (!strcmp(str(f, "papi_status"), "ok"))
		snprintf(a, sizeof a, "clock read %.1f ns, PAPI read %.1f ns", num(ov, "clock_read_ns"),
			 num(ov, "papi_read_ns"));
	else
		snprintf(a, sizeof a, "clock read %.1f ns, PAPI read unavailable (PAPI: %s)",
			 num(ov, "clock_read_ns"), str(f, "papi_status"));
	kv(vb, hr, "measurement overhead", a);

	json_t *r = json_object();
	set(vb, view, "reproduce", r);
	if (vb->oom)
		return;
	set_code(vb, r, "command", str(rp, "command"));
	set_code(vb, r, "replay", str(rp, "replay"));
	f_fixed(a, sizeof a, num(rp, "seed"), 0);
	sets(vb, r, "seed", a);
	sets(vb, r, "started_utc", str(rp, "started_utc"));
	sets(vb, r, "archive", str(f, "archive"));
	sets(vb, r, "tool_version", str(host, "tool_version"));
	sets(vb, r, "git_revision", str(host, "git_revision"));
}

static void view_owners(struct vb *vb, json_t *view, json_t *f)
{
	json_t *own = json_array(), *sign = json_array();
	set(vb, view, "ownership", own);
	set(vb, view, "signoff", sign);
	if (vb->oom)
		return;
	for (size_t i = 0; i < sizeof OWNERSHIP / sizeof OWNERSHIP[0]; i++) {
		const char *name = "unassigned";
		json_t *ow;
		size_t j;
		json_array_foreach(get(f, "owners"), j, ow)
			if (!strcmp(str(ow, "role"), OWNERSHIP[i].role))
				name = str(ow, "name");
		json_t *o = push(vb, own), *s = push(vb, sign);
		if (!o || !s)
			return;
		sets(vb, o, "team", OWNERSHIP[i].team);
		sets(vb, o, "role", OWNERSHIP[i].role);
		sets(vb, o, "name", name);
		sets(vb, o, "responsibility", OWNERSHIP[i].responsibility);
		sets(vb, o, "artifact", OWNERSHIP[i].artifact);
		sets(vb, s, "role", OWNERSHIP[i].role);
		sets(vb, s, "name", name);
	}
}

/* The first screen's owner actions: each role's mitigations, in the
 * ownership order; a role with none is told what its sign-off covers. */
static void view_owner_actions(struct vb *vb, json_t *view, json_t *f)
{
	json_t *acts = json_array();
	set(vb, view, "owner_actions", acts);
	if (vb->oom)
		return;
	for (size_t i = 0; i < sizeof OWNERSHIP / sizeof OWNERSHIP[0]; i++) {
		const char *name = "unassigned";
		json_t *ow, *m;
		size_t j;
		json_array_foreach(get(f, "owners"), j, ow)
			if (!strcmp(str(ow, "role"), OWNERSHIP[i].role))
				name = str(ow, "name");
		json_t *o = push(vb, acts), *todo = json_array();
		if (!o)
			return;
		sets(vb, o, "role", OWNERSHIP[i].role);
		sets(vb, o, "name", name);
		set(vb, o, "todo", todo);
		if (vb->oom)
			return;
		json_array_foreach(get(f, "mitigations"), j, m) {
			if (strcmp(str(m, "owner_role"), OWNERSHIP[i].role))
				continue;
			/* one line per action, with every block it applies to */
			json_t *t = find_row(todo, "title", str(m, "title"), "title", str(m, "title"));
			if (t) {
				setf(vb, t, "block", "%s, %s", str(t, "block"), str(m, "block"));
				continue;
			}
			if (!(t = push(vb, todo)))
				return;
			sets(vb, t, "block", str(m, "block"));
			sets(vb, t, "title", str(m, "title"));
			sets(vb, t, "expected", str(m, "expected"));
		}
		setf(vb, o, "none", "no mitigation to carry out; review the %s and sign", OWNERSHIP[i].artifact);
	}
}

/* The validation matrix: a row per block and variant, a column per check
 * (in the order the analysis ran them), each cell the status and value;
 * the rollback target beside it and the triggers below. The header and the
 * rows are raw Markdown built here, since the columns follow the data. */
static void view_matrix(struct vb *vb, json_t *view, json_t *f)
{
	const char *cols[32];
	const char *names[32];
	size_t ncol = 0, i;
	json_t *x, *rows = json_array(), *trig = json_array();
	set(vb, view, "matrix", rows);
	set(vb, view, "triggers", trig);
	if (vb->oom)
		return;
	json_t *val = get(f, "validation");
	/* the check table's order first, then any check it does not name */
	json_array_foreach(get(get(f, "check_rules"), "checks"), i, x) {
		size_t j;
		json_t *c;
		json_array_foreach(val, j, c)
			if (!strcmp(str(c, "id"), str(x, "id")) && ncol < 32) {
				cols[ncol] = str(x, "id");
				names[ncol++] = str(c, "check");
				break;
			}
	}
	json_array_foreach(val, i, x) {
		const char *id = *str(x, "id") ? str(x, "id") : str(x, "check");
		size_t k = 0;
		while (k < ncol && strcmp(cols[k], id))
			k++;
		if (k == ncol && ncol < 32) {
			cols[ncol] = id;
			names[ncol++] = str(x, "check");
		}
	}
	struct opr_buf h = { 0 };
	opr_buf_puts(&h, "| Block | Variant |");
	for (size_t k = 0; k < ncol; k++) {
		char *e = rep_md_escape(names[k], 0);
		opr_buf_printf(&h, " %s |", e ? e : "");
		vb->oom |= !e;
		free(e);
	}
	opr_buf_puts(&h, " Rollback target |\n|");
	for (size_t k = 0; k < ncol + 3; k++)
		opr_buf_puts(&h, " --- |");
	char *head = opr_buf_take(&h);
	if (!head) {
		vb->oom = 1;
		return;
	}
	sets(vb, view, "matrix_head", head);
	free(head);
	json_array_foreach(get(f, "blocks"), i, x) {
		for (int v = 0; v < 2; v++) {
			const char *vn = v ? "candidate" : "baseline";
			struct opr_buf r = { 0 };
			const char *dtype = "", *target = "";
			json_t *c;
			size_t j;
			json_array_foreach(val, j, c)
				if (!strcmp(str(c, "block"), str(x, "name")) && !strcmp(str(c, "variant"), vn)) {
					dtype = str(c, "dtype");
					target = str(c, "rollback_to");
				}
			(void)dtype; /* the workload in Inputs names it */
			char *bn = rep_md_escape(str(x, "name"), 0);
			opr_buf_printf(&r, "| %s | %s |", bn ? bn : "", vn);
			vb->oom |= !bn;
			free(bn);
			for (size_t k = 0; k < ncol; k++) {
				json_t *cell = NULL;
				json_array_foreach(val, j, c) {
					const char *id = *str(c, "id") ? str(c, "id") : str(c, "check");
					if (!strcmp(str(c, "block"), str(x, "name")) && !strcmp(str(c, "variant"), vn) &&
					    !strcmp(id, cols[k]))
						cell = c;
				}
				if (!cell) {
					opr_buf_puts(&r, " - |");
					continue;
				}
				const char *stv = str(cell, "status"), *m = badge(stv);
				/* a passing baseline cell is its status: the values the
				 * candidate is held against are in its own cells */
				int bare = !v && !strcmp(stv, "PASS");
				char *e = rep_md_escape(bare ? "" : str(cell, "value"), 0);
				opr_buf_printf(&r, " %s%s%s%s%s |", m, stv, m, bare ? "" : " ", e ? e : "");
				vb->oom |= !e;
				free(e);
			}
			char *tg = rep_md_escape(v ? target : "-", 0); /* the baseline is the target */
			opr_buf_printf(&r, " %s |", tg ? tg : "");
			vb->oom |= !tg;
			free(tg);
			char *row = opr_buf_take(&r);
			json_t *o = push(vb, rows);
			if (!row || !o) {
				free(row);
				vb->oom = 1;
				return;
			}
			sets(vb, o, "row", row);
			free(row);
		}
	}
	/* the candidate's rollback triggers, each text once with the checks
	 * that watch it, and its blocks when not every block shares it */
	size_t nblocks = json_array_size(get(f, "blocks"));
	json_array_foreach(val, i, x) {
		if (strcmp(str(x, "variant"), "candidate") || !*str(x, "trigger"))
			continue;
		json_t *o = find_row(trig, "trigger", str(x, "trigger"), "trigger", str(x, "trigger"));
		if (!o) {
			if (!(o = push(vb, trig)))
				return;
			sets(vb, o, "check", str(x, "check"));
			sets(vb, o, "trigger", str(x, "trigger"));
			set(vb, o, "n", json_integer(0));
			sets(vb, o, "blocks", str(x, "block"));
		}
		if (!strstr(str(o, "check"), str(x, "check")))
			setf(vb, o, "check", "%s, %s", str(o, "check"), str(x, "check"));
		if (!strstr(str(o, "blocks"), str(x, "block"))) {
			setf(vb, o, "blocks", "%s, %s", str(o, "blocks"), str(x, "block"));
			set(vb, o, "n", json_integer(json_integer_value(get(o, "n")) + 1));
		} else if (!json_integer_value(get(o, "n"))) {
			set(vb, o, "n", json_integer(1));
		}
	}
	json_array_foreach(trig, i, x)
		if ((size_t)json_integer_value(get(x, "n")) == nblocks)
			sets(vb, x, "blocks", "");
}

/* Model validation: modelled vs measured per plan, the run's error and the
 * planner's check; without a host envelope the reason it is unvalidated. */
static void view_model(struct vb *vb, json_t *view, json_t *f)
{
	json_t *mv = get(f, "model_validation"), *o = json_object(), *rows = json_array(),
	       *pl = json_array(), *x;
	set(vb, view, "model", o);
	set(vb, o, "rows", rows);
	set(vb, o, "planner", pl);
	if (!json_is_object(mv)) {
		set(vb, o, "calibrated", json_false());
		sets(vb, o, "reason", "this findings file has no model validation (written before it existed)");
		return;
	}
	int cal = json_is_true(get(mv, "calibrated"));
	set(vb, o, "calibrated", json_boolean(cal));
	sets(vb, o, "envelope", str(mv, "envelope"));
	if (!cal) {
		sets(vb, o, "reason", str(mv, "reason"));
		return;
	}
	json_t *c = get(mv, "calibration");
	setf(vb, o, "calibration", "envelope '%s' calibrated on host '%s' (%s, %.0f CPUs) at %s",
	     str(mv, "envelope"), str(c, "host"), str(c, "cpu"), num(c, "cpus_online"), str(c, "date"));
	double med = num(mv, "median_abs_error"), worst = num(mv, "worst_abs_error");
	json_t *w = get(mv, "worst");
	char a[64], b[64];
	if (isfinite(med)) {
		setf(vb, o, "median_error", "%.1f%%", 100 * med);
		setf(vb, o, "worst_error", "%.1f%%", 100 * worst);
		setf(vb, o, "summary",
		     "On this host the model's median error is %.1f%% and its worst %.1f%% "
		     "(%s, %s: modelled/measured x%.2f, the model's largest term %s). %s (%.0f%%).",
		     100 * med, 100 * worst, str(w, "block"), str(w, "variant"), num(w, "ratio"),
		     str(w, "dominant_term"),
		     json_is_true(get(mv, "trusted")) ? "Within the limit the model is trusted to on this machine"
						     : "Beyond the limit: treat modelled times on this machine as indicative only",
		     100 * num(mv, "trust_limit"));
	} else {
		sets(vb, o, "median_error", "n/a");
		sets(vb, o, "worst_error", "n/a");
		sets(vb, o, "summary", "No plan has both a modelled and a measured time.");
	}
	size_t i;
	json_array_foreach(get(mv, "rows"), i, x) {
		json_t *r = push(vb, rows);
		if (!r)
			return;
		sets(vb, r, "block", str(x, "block"));
		sets(vb, r, "variant", str(x, "variant"));
		set_code(vb, r, "plan", str(x, "plan"));
		json_t *alt = get(x, "alternative");
		if (json_is_integer(alt))
			setf(vb, r, "source", "alternative #%lld%s", (long long)json_integer_value(alt),
			     json_is_true(get(x, "ran")) ? " (ran)" : "");
		else
			sets(vb, r, "source", "run samples (median)");
		f_us(a, sizeof a, num(x, "model_ns") / 1e3);
		sets(vb, r, "modelled", a);
		f_us(b, sizeof b, num(x, "measured_ns") / 1e3);
		sets(vb, r, "measured", b);
		f_fixed(a, sizeof a, num(x, "ratio"), 2);
		setf(vb, r, "ratio", "x%s", a);
		setf(vb, r, "error", "%.1f%%", 100 * num(x, "abs_error"));
		sets(vb, r, "dominant", str(x, "dominant_term"));
		sets(vb, r, "counted", json_is_true(get(x, "counted")) ? "yes" : "no (same plan as the run)");
	}
	json_array_foreach(get(mv, "planner"), i, x) {
		json_t *r = push(vb, pl);
		if (!r)
			return;
		sets(vb, r, "block", str(x, "block"));
		sets(vb, r, "variant", str(x, "variant"));
		setf(vb, r, "candidates", "%.0f", num(x, "candidates"));
		f_fixed(a, sizeof a, num(x, "kendall_tau"), 2);
		sets(vb, r, "tau", isfinite(num(x, "kendall_tau")) ? a : "n/a (one candidate)");
		set_code(vb, r, "choice", str(x, "choice_plan"));
		set_code(vb, r, "best", str(x, "best_plan"));
		f_us(a, sizeof a, num(x, "choice_ns") / 1e3);
		f_us(b, sizeof b, num(x, "best_ns") / 1e3);
		setf(vb, r, "times", "%s / %s", a, b);
		double sd = num(x, "slowdown");
		setf(vb, r, "slowdown", "%+.1f%%", 100 * sd);
		setf(vb, r, "verdict", "%s %.0f%%", !isfinite(sd) ? "n/a:" : json_is_true(get(x, "within")) ? "within" : "beyond",
		     100 * num(x, "limit"));
	}
}

int rep_view_new(json_t *findings, json_t **view, struct opr_error *err)
{
	if (!json_is_object(findings))
		return opr_error_set(err, OPR_EINPUT, "findings must be a JSON object");
	json_t *ver = get(findings, "findings_version");
	if (!json_is_integer(ver) || json_integer_value(ver) != 1)
		return opr_error_set(err, OPR_EINPUT, "findings: 'findings_version' must be 1");
	const char *lists[] = { "blocks", "bottlenecks", "worksheet", "validation", "mitigations",
				"rejected_alternatives", "counters", "owners" };
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		if (!json_is_array(get(findings, lists[i])))
			return opr_error_set(err, OPR_EINPUT, "findings: '%s' must be a list", lists[i]);
	const char *verdict = str(findings, "verdict");
	if (!*verdict)
		return opr_error_set(err, OPR_EINPUT, "findings: 'verdict' is missing");

	struct vb vb = { 0 };
	json_t *v = json_object();
	if (!v)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	sets(&vb, v, "verdict", verdict);
	set_badge(&vb, v, "verdict_badge", verdict);
	setf(&vb, v, "exit_code", "%.0f", num(findings, "exit_code"));
	json_t *reasons = json_array(), *more = json_array(), *r;
	set(&vb, v, "reasons", reasons);
	set(&vb, v, "more_reasons", more);
	size_t i;
	json_array_foreach(get(findings, "reasons"), i, r) {
		const char *t = json_string_value(r) ? json_string_value(r) : "";
		if (!i)
			sets(&vb, v, "reason", t);
		if (!vb.oom && json_array_append_new(i ? more : reasons, json_string(t)))
			vb.oom = 1;
	}
	set(&vb, v, "more_reasons_any", json_boolean(json_array_size(more) > 0));
	if (*str(findings, "rationale"))
		sets(&vb, v, "rationale", str(findings, "rationale"));
	set(&vb, v, "mitigations_any", json_boolean(json_array_size(get(findings, "mitigations")) > 0));
	sets(&vb, v, "papi_status", str(findings, "papi_status"));
	view_inputs(&vb, v, findings);
	json_t *blocks = json_array(), *b;
	set(&vb, v, "blocks", blocks);
	json_array_foreach(get(findings, "blocks"), i, b)
		if (!vb.oom)
			view_block(&vb, blocks, b);
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
