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

/* What each role signs for (seed 002's ownership split) and the file of the
 * packet that holds it; sign-off records name the file. */
static const struct {
	const char *role, *team, *artifact;
} CLOSURE[] = {
	{"ml-compiler-engineer", "ML compiler engineer", "design rationale + tradeoffs"},
	{"kernel-performance-owner", "kernel performance owner", "profile traces + bottleneck map"},
	{"runtime-systems-engineer", "runtime systems engineer", "test report + closure memo"},
};

struct rb {
	int oom;
};

static json_t *get(json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(get(o, k));
	return s ? s : "";
}

static double num(json_t *o, const char *k)
{
	json_t *v = get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void set(struct rb *r, json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v))
		r->oom = 1;
}

static void setf(struct rb *r, json_t *o, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void setf(struct rb *r, json_t *o, const char *k, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	set(r, o, k, json_string(buf));
}

static json_t *push(struct rb *r, json_t *a)
{
	json_t *o = json_object();
	if (!o || json_array_append_new(a, o)) {
		r->oom = 1;
		return NULL;
	}
	return o;
}

static void push_str(struct rb *r, json_t *a, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void push_str(struct rb *r, json_t *a, const char *fmt, ...)
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
	if (!json_is_true(get(v, "available"))) {
		snprintf(b, n, "unavailable: %s", *str(v, "reason") ? str(v, "reason") : "no value");
		return;
	}
	char val[48], ci[64];
	f_val(val, sizeof val, num(v, "value"), str(v, "unit"));
	f_ci(ci, sizeof ci, num(v, "value"), num(v, "lo"), num(v, "hi"), str(v, "unit"));
	if (!strcmp(ci, "no CI"))
		snprintf(b, n, "%s (%s%s%s)", val, str(v, "provenance"), *str(v, "reason") ? "; no CI: " : "",
			 str(v, "reason"));
	else
		snprintf(b, n, "%s %s (%s)", val, ci, str(v, "provenance"));
}

static void view_primary(struct rb *r, json_t *view, json_t *f)
{
	json_t *pm = get(f, "primary_metric"), *o;
	if (!json_is_object(pm)) { /* findings of an older opreview */
		set(r, view, "primary", json_false());
		return;
	}
	o = json_object();
	set(r, view, "primary", o);
	if (r->oom)
		return;
	char t[512];
	setf(r, o, "label", "%s %s %s", str(pm, "block"), str(pm, "variant"), metric_label(str(pm, "metric")));
	value_text(t, sizeof t, pm);
	setf(r, o, "value", "%s", t);
	json_t *other = get(pm, "other");
	value_text(t, sizeof t, other);
	setf(r, o, "other", "%s %s", str(other, "variant"), t);
	double ratio = num(pm, "ratio_to_other");
	if (isfinite(ratio))
		setf(r, o, "ratio", "x%.2f of the %s", ratio, str(other, "variant"));
	else
		setf(r, o, "ratio", "no ratio (a value is unavailable)");
	setf(r, o, "origin", "%s", json_is_true(get(pm, "given"))
			 ? "named by the profile's primary_metric"
			 : "the default (first block, candidate, p95): the profile names no primary_metric");
}

static void view_trend(struct rb *r, json_t *view, json_t *f)
{
	json_t *t = get(f, "trend");
	if (!json_is_object(t)) {
		set(r, view, "trend", json_false());
		return;
	}
	json_t *o = json_object(), *rows = json_array(), *changes = json_array();
	set(r, view, "trend", o);
	set(r, o, "rows", rows);
	set(r, o, "changes", changes);
	if (r->oom)
		return;
	json_t *k = get(t, "key");
	const char *unit = str(t, "unit"), *me = str(t, "this_run");
	setf(r, o, "history", "%s", str(t, "history"));
	setf(r, o, "series", "%s / %s / %s %s", str(k, "profile"), str(k, "block"), str(k, "variant"),
	     metric_label(str(k, "metric")));
	setf(r, o, "provenance", "%s", str(t, "provenance"));
	setf(r, o, "comparable_on", "host class %s; envelope %s (sha256 %.12s); model revision %s",
	     str(k, "host_class"), str(k, "envelope"), str(k, "envelope_sha256"),
	     *str(k, "model_revision") ? str(k, "model_revision") : "(none)");
	json_int_t apart = json_integer_value(get(t, "apart"));
	if (apart)
		setf(r, o, "apart", "%lld run(s) of the same block and metric on another %s are kept apart, not drawn here.",
		     (long long)apart, str(t, "apart_why"));
	else
		setf(r, o, "apart", "No run of another host class, envelope or model revision is in the history.");
	json_t *pts = get(t, "points"), *p;
	size_t i, npts = json_array_size(pts);
	json_array_foreach(pts, i, p) {
		json_t *row = push(r, rows);
		if (!row)
			return;
		char val[48], ci[64];
		f_val(val, sizeof val, num(p, "value"), unit);
		f_ci(ci, sizeof ci, num(p, "value"), num(p, "lo"), num(p, "hi"), unit);
		setf(r, row, "n", "%zu", i + 1);
		setf(r, row, "started", "%s", str(p, "started_utc"));
		setf(r, row, "digest", "%.12s%s", str(p, "digest"), strcmp(str(p, "digest"), me) ? "" : " (this run)");
		setf(r, row, "value", "%s", val);
		setf(r, row, "ci", "%s", ci);
		setf(r, row, "verdict", "%s", str(p, "verdict"));
		setf(r, row, "mark", "%s", "");
	}
	json_t *c;
	json_array_foreach(get(t, "changes"), i, c) {
		size_t at = (size_t)json_integer_value(get(c, "at"));
		char before[48], after[48];
		f_val(before, sizeof before, num(c, "before"), unit);
		f_val(after, sizeof after, num(c, "after"), unit);
		int worse = !strcmp(str(c, "direction"), "worse");
		push_str(r, changes, "between run %zu and run %zu (%.12s): %s -> %s (%+.1f%%, %s)", at, at + 1,
			 str(c, "digest"), before, after, 100 * num(c, "rel"), worse ? "worse" : "better");
		json_t *row = json_array_get(rows, at);
		if (row)
			setf(r, row, "mark", "%smoved %+.1f%% (%s)%s", worse ? "**" : "*", 100 * num(c, "rel"),
			     worse ? "worse" : "better", worse ? "**" : "*");
	}
	if (!json_is_true(get(t, "tested")))
		setf(r, o, "result", "Change-point test not run: %zu comparable run(s), three are needed.", npts);
	else if (!json_array_size(get(t, "changes")))
		setf(r, o, "result", "No change point over %zu comparable runs.", npts);
	else
		setf(r, o, "result", "%zu change point(s) over %zu comparable runs:", json_array_size(get(t, "changes")),
		     npts);
	setf(r, o, "method", "%s", str(t, "method"));
}

static void view_shapes(struct rb *r, json_t *view, json_t *f)
{
	json_t *a, *b;
	size_t i, synthetic = 0, n = json_array_size(get(f, "blocks")), known = 0;
	json_array_foreach(get(f, "blocks"), i, b)
		known += json_is_string(get(b, "shape_origin"));
	if (!known) { /* findings of an older opreview: the section is left out */
		set(r, view, "shapes", json_false());
		set(r, view, "shapes_present", json_false());
		return;
	}
	a = json_array();
	set(r, view, "shapes", a);
	set(r, view, "shapes_present", json_true());
	json_array_foreach(get(f, "blocks"), i, b) {
		json_t *o = push(r, a);
		if (!o)
			return;
		int prod = !strcmp(str(b, "shape_origin"), "production");
		synthetic += !prod;
		setf(r, o, "name", "%s", str(b, "name"));
		setf(r, o, "origin", "%s", prod ? "production" : "synthetic");
		setf(r, o, "source", "%s", prod ? str(b, "shape_source") : "no production trace named");
	}
	/* every block synthetic, none traced: the note says it all, no table */
	set(r, view, "shapes_table", json_boolean(synthetic < n));
	if (synthetic)
		setf(r, view, "shapes_note",
		     "%zu of %zu block(s) rest on synthetic shapes only: the candidate cannot be SHIP until the kernel "
		     "performance owner validates them on production shapes (shape_origin: {production: TRACE}).",
		     synthetic, n);
	else
		setf(r, view, "shapes_note", "Every block's shape was taken from production.");
}

static size_t count_status(json_t *f, const char *status, const char *variant)
{
	size_t n = 0, i;
	json_t *c;
	json_array_foreach(get(f, "validation"), i, c)
		n += !strcmp(str(c, "status"), status) && (!variant || !strcmp(str(c, "variant"), variant));
	return n;
}

/* Each role's closure artifact: what it covers, drawn from findings. */
static void view_closure(struct rb *r, json_t *view, json_t *f)
{
	json_t *a = json_array();
	set(r, view, "closure", a);
	for (size_t k = 0; k < sizeof CLOSURE / sizeof *CLOSURE && !r->oom; k++) {
		json_t *o = push(r, a), *items = json_array();
		if (!o)
			return;
		set(r, o, "items", items);
		setf(r, o, "role", "%s", CLOSURE[k].role);
		setf(r, o, "team", "%s", CLOSURE[k].team);
		setf(r, o, "artifact", "%s", CLOSURE[k].artifact);
		setf(r, o, "file", "closure/%s.md", CLOSURE[k].role);
		size_t i;
		json_t *x;
		if (k == 0) {
			size_t fused = 0, chosen = 0, rejected = json_array_size(get(f, "rejected_alternatives"));
			json_array_foreach(get(f, "blocks"), i, x) {
				json_t *cand = json_array_get(get(x, "variants"), 1);
				fused += json_is_true(get(cand, "fused"));
			}
			json_array_foreach(get(f, "worksheet"), i, x)
				chosen += !strcmp(str(x, "status"), "chosen");
			push_str(r, items, "fusion groups: %zu of %zu candidate(s) fused (section Fusion and tile-plan worksheet)",
				 fused, json_array_size(get(f, "blocks")));
			push_str(r, items, "tile shapes: %zu chosen, %zu rejected with their reasons (worksheet, rejected alternatives)",
				 chosen, rejected);
			json_array_foreach(get(f, "worksheet"), i, x)
				if (!strcmp(str(x, "status"), "chosen") && !strcmp(str(x, "variant"), "candidate") &&
				    *str(x, "shift"))
					push_str(r, items, "expected bottleneck shift, %s: %s", str(x, "block"),
						 str(x, "shift"));
			const char *why = str(f, "rationale");
			push_str(r, items, "rationale: %s", *why ? why : "none given (the profile's rationale key is empty)");
		} else if (k == 1) {
			push_str(r, items, "profile traces: run/samples.csv (every host sample), run/counters.csv (counters with provenance), run/pipeline.json (pipeline simulation)");
			push_str(r, items, "bottleneck map: %zu finding(s) with evidence (section Bottleneck map)",
				 json_array_size(get(f, "bottlenecks")));
			size_t prod = 0, n = json_array_size(get(f, "blocks"));
			json_array_foreach(get(f, "blocks"), i, x)
				prod += !strcmp(str(x, "shape_origin"), "production");
			push_str(r, items, "production shapes: %zu of %zu block(s)%s", prod, n,
				 prod < n ? "; production-shape validation is this role's open mitigation" : "");
		} else {
			push_str(r, items, "test report: validation matrix %zu PASS, %zu WARN, %zu FAIL (candidate: %zu FAIL)",
				 count_status(f, "PASS", NULL), count_status(f, "WARN", NULL),
				 count_status(f, "FAIL", NULL), count_status(f, "FAIL", "candidate"));
			json_array_foreach(get(f, "validation"), i, x)
				if (!strcmp(str(x, "variant"), "candidate") &&
				    (!strcmp(str(x, "check"), "numerical quality") ||
				     !strcmp(str(x, "check"), "reproducibility")))
					push_str(r, items, "%s %s: %s (%s)", str(x, "block"), str(x, "check"),
						 str(x, "status"), str(x, "value"));
			size_t trig = 0;
			json_array_foreach(get(f, "validation"), i, x)
				trig += !strcmp(str(x, "variant"), "candidate") && *str(x, "trigger");
			push_str(r, items, "closure memo: verdict %s; %zu rollback trigger(s) to watch after release; rollback target: each block's baseline (validation matrix)",
				 str(f, "verdict"), trig);
		}
	}
}

int rep_view_review(json_t *findings, json_t *view)
{
	struct rb r = {0};
	view_primary(&r, view, findings);
	if (!r.oom)
		view_trend(&r, view, findings);
	if (!r.oom)
		view_shapes(&r, view, findings);
	if (!r.oom)
		view_closure(&r, view, findings);
	return r.oom ? OPR_ENOMEM : 0;
}
