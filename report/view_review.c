/* report/view_review.c: the parts of the packet's view about the review
 * across runs: the primary metric the packet leads with, the trend over the
 * history (findings' "trend", present when a history was given), where each
 * block's shape came from, and each owner role's closure artifact. Display
 * strings only, as in view.c; unavailable values say why. */
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void push_str(struct rep_vb *r, json_t *a, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void push_str(struct rep_vb *r, json_t *a, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (json_array_append_new(a, json_string(buf)))
		r->oom = 1;
}

/* A value in its unit: latencies in us (ms past 10 ms), rates per second. */
static void f_val(char *b, size_t n, double v, const char *unit)
{
	if (!isfinite(v))
		snprintf(b, n, "n/a");
	else if (!strcmp(unit, "1/s"))
		snprintf(b, n, "%.1f /s", v);
	else if (fabs(v) >= 1e7)
		snprintf(b, n, "%.2f ms", v / 1e6);
	else
		snprintf(b, n, "%.1f us", v / 1e3);
}

/* The CI in the unit f_val gives the value v: "10.84 ms [10.74, 10.87]". */
static void f_ci(char *b, size_t n, double v, double lo, double hi, const char *unit)
{
	if (!isfinite(lo) || !isfinite(hi)) {
		snprintf(b, n, "no CI");
		return;
	}
	if (!strcmp(unit, "1/s"))
		snprintf(b, n, "[%.1f, %.1f]", lo, hi);
	else if (fabs(v) >= 1e7)
		snprintf(b, n, "[%.2f, %.2f]", lo / 1e6, hi / 1e6);
	else
		snprintf(b, n, "[%.1f, %.1f]", lo / 1e3, hi / 1e3);
}

static const char *metric_label(const char *m)
{
	if (!strcmp(m, "model_time"))
		return "modelled time";
	return m;
}

/* "653.3 us [532.7, 4535.0] (measured)" or "unavailable: why". */
static void value_text(char *b, size_t n, json_t *v)
{
	if (!json_is_true(rep_vget(v, "available"))) {
		snprintf(b, n, "unavailable: %s", *rep_vstr(v, "reason") ? rep_vstr(v, "reason") : "no value");
		return;
	}
	char val[48], ci[64];
	f_val(val, sizeof val, rep_vnum(v, "value"), rep_vstr(v, "unit"));
	f_ci(ci, sizeof ci, rep_vnum(v, "value"), rep_vnum(v, "lo"), rep_vnum(v, "hi"), rep_vstr(v, "unit"));
	if (!strcmp(ci, "no CI"))
		snprintf(b, n, "%s (%s%s%s)", val, rep_vstr(v, "provenance"), *rep_vstr(v, "reason") ? "; no CI: " : "",
			 rep_vstr(v, "reason"));
	else
		snprintf(b, n, "%s %s (%s)", val, ci, rep_vstr(v, "provenance"));
}

static void view_primary(struct rep_vb *r, json_t *view, json_t *f)
{
	json_t *pm = rep_vget(f, "primary_metric"), *o;
	if (!json_is_object(pm)) { /* findings of an older opreview */
		rep_vset(r, view, "primary", json_false());
		return;
	}
	o = json_object();
	rep_vset(r, view, "primary", o);
	if (r->oom)
		return;
	char t[512];
	rep_vsetf(r, o, "label", "%s %s %s", rep_vstr(pm, "block"), rep_vstr(pm, "variant"), metric_label(rep_vstr(pm, "metric")));
	value_text(t, sizeof t, pm);
	rep_vsetf(r, o, "value", "%s", t);
	json_t *other = rep_vget(pm, "other");
	value_text(t, sizeof t, other);
	rep_vsetf(r, o, "other", "%s %s", rep_vstr(other, "variant"), t);
	double ratio = rep_vnum(pm, "ratio_to_other");
	if (isfinite(ratio))
		rep_vsetf(r, o, "ratio", "x%.2f of the %s", ratio, rep_vstr(other, "variant"));
	else
		rep_vsetf(r, o, "ratio", "no ratio (a value is unavailable)");
	rep_vsetf(r, o, "origin", "%s", json_is_true(rep_vget(pm, "given"))
			 ? "the profile's primary_metric"
			 : "the default (first block, candidate, p95): the profile names none");
}

static void view_trend(struct rep_vb *r, json_t *view, json_t *f)
{
	json_t *t = rep_vget(f, "trend");
	if (!json_is_object(t)) {
		rep_vset(r, view, "trend", json_false());
		return;
	}
	json_t *o = json_object(), *rows = json_array(), *changes = json_array();
	rep_vset(r, view, "trend", o);
	rep_vset(r, o, "rows", rows);
	rep_vset(r, o, "changes", changes);
	if (r->oom)
		return;
	json_t *k = rep_vget(t, "key");
	const char *unit = rep_vstr(t, "unit"), *me = rep_vstr(t, "this_run");
	rep_vsetf(r, o, "history", "%s", rep_vstr(t, "history"));
	rep_vsetf(r, o, "series", "%s / %s / %s %s", rep_vstr(k, "profile"), rep_vstr(k, "block"), rep_vstr(k, "variant"),
	     metric_label(rep_vstr(k, "metric")));
	rep_vsetf(r, o, "provenance", "%s", rep_vstr(t, "provenance"));
	rep_vsetf(r, o, "comparable_on", "host class %s; envelope %s (sha256 %.12s); model revision %s",
	     rep_vstr(k, "host_class"), rep_vstr(k, "envelope"), rep_vstr(k, "envelope_sha256"),
	     *rep_vstr(k, "model_revision") ? rep_vstr(k, "model_revision") : "(none)");
	json_int_t apart = json_integer_value(rep_vget(t, "apart"));
	if (apart)
		rep_vsetf(r, o, "apart", "%lld run(s) of the same block and metric on another %s are kept apart, not drawn here.",
		     (long long)apart, rep_vstr(t, "apart_why"));
	else
		rep_vsetf(r, o, "apart", "No run of another host class, envelope or model revision is in the history.");
	json_t *pts = rep_vget(t, "points"), *p;
	size_t i, npts = json_array_size(pts);
	json_array_foreach(pts, i, p) {
		json_t *row = rep_vpush(r, rows);
		if (!row)
			return;
		char val[48], ci[64];
		f_val(val, sizeof val, rep_vnum(p, "value"), unit);
		f_ci(ci, sizeof ci, rep_vnum(p, "value"), rep_vnum(p, "lo"), rep_vnum(p, "hi"), unit);
		rep_vsetf(r, row, "n", "%zu", i + 1);
		rep_vsetf(r, row, "started", "%s", rep_vstr(p, "started_utc"));
		rep_vsetf(r, row, "digest", "%.12s%s", rep_vstr(p, "digest"), strcmp(rep_vstr(p, "digest"), me) ? "" : " (this run)");
		rep_vsetf(r, row, "value", "%s", val);
		rep_vsetf(r, row, "ci", "%s", ci);
		rep_vsetf(r, row, "verdict", "%s", rep_vstr(p, "verdict"));
		rep_vsetf(r, row, "mark", "%s", "");
	}
	json_t *c;
	json_array_foreach(rep_vget(t, "changes"), i, c) {
		size_t at = (size_t)json_integer_value(rep_vget(c, "at"));
		char before[48], after[48];
		f_val(before, sizeof before, rep_vnum(c, "before"), unit);
		f_val(after, sizeof after, rep_vnum(c, "after"), unit);
		int worse = !strcmp(rep_vstr(c, "direction"), "worse");
		push_str(r, changes, "between run %zu and run %zu (%.12s): %s -> %s (%+.1f%%, %s)", at, at + 1,
			 rep_vstr(c, "digest"), before, after, 100 * rep_vnum(c, "rel"), worse ? "worse" : "better");
		json_t *row = json_array_get(rows, at);
		if (row)
			rep_vsetf(r, row, "mark", "%smoved %+.1f%% (%s)%s", worse ? "**" : "*", 100 * rep_vnum(c, "rel"),
			     worse ? "worse" : "better", worse ? "**" : "*");
	}
	if (!json_is_true(rep_vget(t, "tested")))
		rep_vsetf(r, o, "result", "Change-point test not run: %zu comparable run(s), three are needed.", npts);
	else if (!json_array_size(rep_vget(t, "changes")))
		rep_vsetf(r, o, "result", "No change point over %zu comparable runs.", npts);
	else
		rep_vsetf(r, o, "result", "%zu change point(s) over %zu comparable runs:", json_array_size(rep_vget(t, "changes")),
		     npts);
	rep_vsetf(r, o, "method", "%s", rep_vstr(t, "method"));
}

static void view_shapes(struct rep_vb *r, json_t *view, json_t *f)
{
	json_t *a, *b;
	size_t i, synthetic = 0, n = json_array_size(rep_vget(f, "blocks")), known = 0;
	json_array_foreach(rep_vget(f, "blocks"), i, b)
		known += json_is_string(rep_vget(b, "shape_origin"));
	if (!known) { /* findings of an older opreview: the section is left out */
		rep_vset(r, view, "shapes", json_false());
		rep_vset(r, view, "shapes_present", json_false());
		return;
	}
	a = json_array();
	rep_vset(r, view, "shapes", a);
	rep_vset(r, view, "shapes_present", json_true());
	json_array_foreach(rep_vget(f, "blocks"), i, b) {
		json_t *o = rep_vpush(r, a);
		if (!o)
			return;
		int prod = !strcmp(rep_vstr(b, "shape_origin"), "production");
		synthetic += !prod;
		rep_vsetf(r, o, "name", "%s", rep_vstr(b, "name"));
		rep_vsetf(r, o, "origin", "%s", prod ? "production" : "synthetic");
		rep_vsetf(r, o, "source", "%s", prod ? rep_vstr(b, "shape_source") : "no production trace named");
	}
	/* every block synthetic, none traced: the note says it all, no table */
	rep_vset(r, view, "shapes_table", json_boolean(synthetic < n));
	if (synthetic)
		rep_vsetf(r, view, "shapes_note",
		     "%zu of %zu block(s) rest on synthetic shapes only: the candidate cannot be SHIP until the kernel "
		     "performance owner validates them on production shapes (shape_origin: {production: TRACE}).",
		     synthetic, n);
	else
		rep_vsetf(r, view, "shapes_note", "Every block's shape was taken from production.");
}

static size_t count_status(json_t *f, const char *status, const char *variant)
{
	size_t n = 0, i;
	json_t *c;
	json_array_foreach(rep_vget(f, "validation"), i, c)
		n += !strcmp(rep_vstr(c, "status"), status) && (!variant || !strcmp(rep_vstr(c, "variant"), variant));
	return n;
}

/* Each role's closure artifact: what it covers, drawn from findings. */
static void view_closure(struct rep_vb *r, json_t *view, json_t *f)
{
	json_t *a = json_array();
	rep_vset(r, view, "closure", a);
	for (size_t k = 0; k < (size_t)REP_NROLES && !r->oom; k++) {
		json_t *o = rep_vpush(r, a), *items = json_array();
		if (!o)
			return;
		rep_vset(r, o, "items", items);
		rep_vsetf(r, o, "role", "%s", REP_OWNERSHIP[k].role);
		rep_vsetf(r, o, "team", "%s", REP_OWNERSHIP[k].team);
		rep_vsetf(r, o, "artifact", "%s", REP_OWNERSHIP[k].artifact);
		rep_vsetf(r, o, "file", "closure/%s.md", REP_OWNERSHIP[k].role);
		size_t i;
		json_t *x;
		if (k == 0) {
			size_t fused = 0, chosen = 0, rejected = json_array_size(rep_vget(f, "rejected_alternatives"));
			json_array_foreach(rep_vget(f, "blocks"), i, x) {
				json_t *cand = json_array_get(rep_vget(x, "variants"), 1);
				fused += json_is_true(rep_vget(cand, "fused"));
			}
			json_array_foreach(rep_vget(f, "worksheet"), i, x)
				chosen += !strcmp(rep_vstr(x, "status"), "chosen");
			push_str(r, items, "fusion groups: %zu of %zu candidate(s) fused (section Fusion and tile-plan worksheet)",
				 fused, json_array_size(rep_vget(f, "blocks")));
			push_str(r, items, "tile shapes: %zu chosen, %zu rejected with their reasons (worksheet, rejected alternatives)",
				 chosen, rejected);
			json_array_foreach(rep_vget(f, "worksheet"), i, x)
				if (!strcmp(rep_vstr(x, "status"), "chosen") && !strcmp(rep_vstr(x, "variant"), "candidate") &&
				    *rep_vstr(x, "shift"))
					push_str(r, items, "expected bottleneck shift, %s: %s", rep_vstr(x, "block"),
						 rep_vstr(x, "shift"));
			const char *why = rep_vstr(f, "rationale");
			push_str(r, items, "rationale: %s", *why ? why : "none given (the profile's rationale key is empty)");
		} else if (k == 1) {
			push_str(r, items, "profile traces: run/samples.csv (every host sample), run/counters.csv (counters with provenance), run/pipeline.json (pipeline simulation)");
			push_str(r, items, "bottleneck map: %zu finding(s) with evidence (section Bottleneck map)",
				 json_array_size(rep_vget(f, "bottlenecks")));
			size_t prod = 0, n = json_array_size(rep_vget(f, "blocks"));
			json_array_foreach(rep_vget(f, "blocks"), i, x)
				prod += !strcmp(rep_vstr(x, "shape_origin"), "production");
			push_str(r, items, "production shapes: %zu of %zu block(s)%s", prod, n,
				 prod < n ? "; production-shape validation is this role's open mitigation" : "");
		} else {
			push_str(r, items, "test report: validation matrix %zu PASS, %zu WARN, %zu FAIL (candidate: %zu FAIL)",
				 count_status(f, "PASS", NULL), count_status(f, "WARN", NULL),
				 count_status(f, "FAIL", NULL), count_status(f, "FAIL", "candidate"));
			json_array_foreach(rep_vget(f, "validation"), i, x)
				if (!strcmp(rep_vstr(x, "variant"), "candidate") &&
				    (!strcmp(rep_vstr(x, "check"), "numerical quality") ||
				     !strcmp(rep_vstr(x, "check"), "reproducibility")))
					push_str(r, items, "%s %s: %s (%s)", rep_vstr(x, "block"), rep_vstr(x, "check"),
						 rep_vstr(x, "status"), rep_vstr(x, "value"));
			size_t trig = 0;
			json_array_foreach(rep_vget(f, "validation"), i, x)
				trig += !strcmp(rep_vstr(x, "variant"), "candidate") && *rep_vstr(x, "trigger");
			push_str(r, items, "closure memo: verdict %s; %zu rollback trigger(s) to watch after release; rollback target: each block's baseline (validation matrix)",
				 rep_vstr(f, "verdict"), trig);
		}
	}
}

int rep_view_review(json_t *findings, json_t *view)
{
	struct rep_vb r = {0};
	view_primary(&r, view, findings);
	if (!r.oom)
		view_trend(&r, view, findings);
	if (!r.oom)
		view_shapes(&r, view, findings);
	if (!r.oom)
		view_closure(&r, view, findings);
	return r.oom ? OPR_ENOMEM : 0;
}
