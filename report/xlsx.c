/* report/xlsx.c: packet.xlsx from findings.json (a jansson tree) and the
 * archive's samples.csv, through libxlsxwriter (the only file that includes it).
 * Nine sheets of stored values, no formulas; native charts; byte-reproducible. */
#include "report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xlsxwriter.h>

/* Data flow: every sheet is a table whose header is row 0 (frozen, repeated
 * when printed, autofiltered). Chart data is written as values below the main
 * table of the sheet that holds the chart, so a filter never hides it.
 * Units follow the findings keys: *_ns in ns, *_us in us, bytes as integers.
 * A value that findings marks null or unavailable is left as an empty cell,
 * never 0. Determinism: the creation time is pinned to `created`, and
 * libxlsxwriter writes zip entries in a fixed order with fixed times.
 * The file is written to a temporary name beside `path`, synced, then renamed,
 * so a failed run never leaves a half-written packet.xlsx. */

#define XLSX_MAX_ROWS 1048576u  /* rows in a sheet, header included */
#define XLSX_MAX_STR 32767u     /* characters in a cell */
#define SAMPLES_LINE_MAX 1024   /* one samples.csv line */
#define CHART_ROWS 16           /* rows a default 480x288 chart covers */
#define CHART_COLS 8

/* Number formats, one lxw_format each. */
enum fmt {
	F_TEXT,  /* plain text */
	F_WRAP,  /* long text, wrapped */
	F_NS,    /* #,##0 nanoseconds */
	F_US,    /* #,##0.000 microseconds */
	F_RATIO, /* 0.000 */
	F_BYTES, /* #,##0 */
	F_COUNT, /* #,##0 */
	F_INT,   /* 0: seeds, exit codes, rounds */
	F_NUM,   /* #,##0.000 other reals */
	F_SCI,   /* 0.00E+00: p-values, relative errors */
	F_RPS,   /* #,##0.0 requests per second */
	F_UNIT,  /* chosen from the sibling "unit" key (evidence) */
	F_KEY,   /* chosen from the key name and the value */
	NFMT
};

struct xw {
	lxw_workbook *wb;
	lxw_error lerr; /* first failed libxlsxwriter call, LXW_NO_ERROR if none */
	lxw_format *fmt[NFMT];
	lxw_format *head, *pass, *warn, *fail;
};

/* Where a column takes its value from: the row's objects, in order. */
struct col {
	const char *head;
	int src;          /* index into the row's objects */
	const char *key;  /* dotted path in that object; NULL: written by the caller */
	enum fmt f;
	double width;
};
#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))

static void note(struct xw *x, lxw_error e)
{
	if (e != LXW_NO_ERROR && x->lerr == LXW_NO_ERROR)
		x->lerr = e;
}

/* The value at a dotted path ("latency.p95.value_ns"), or NULL. Borrowed. */
static json_t *jget(json_t *o, const char *path)
{
	char key[64];
	while (o && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof key)
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		path += n + (dot != NULL);
	}
	return o;
}

static const char *jstr(json_t *o, const char *path)
{
	json_t *v = jget(o, path);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jnum(json_t *o, const char *path, double *out)
{
	json_t *v = jget(o, path);
	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return 1;
}

static size_t jlen(json_t *o, const char *path)
{
	json_t *a = jget(o, path);
	return json_is_array(a) ? json_array_size(a) : 0;
}

/* The element of array `arr` whose `key` equals `val`, or NULL. Borrowed. */
static json_t *find_by(json_t *arr, const char *key, const char *val)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		const char *s = jstr(e, key);
		if (s && !strcmp(s, val))
			return e;
	}
	return NULL;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int is_integral(double v)
{
	return v == (double)(long long)v;
}

/* Format for a number named `key` (a findings key or a counter name). */
static enum fmt fmt_for_key(const char *key, double v)
{
	if (ends_with(key, "_bytes") || !strncmp(key, "bytes", 5))
		return F_BYTES;
	if (ends_with(key, "_us"))
		return F_US;
	if (ends_with(key, "_ns"))
		return is_integral(v) || v >= 1000 ? F_NS : F_NUM;
	if (ends_with(key, "ratio") || ends_with(key, "regression"))
		return F_RATIO;
	if (!strcmp(key, "seed") || !strcmp(key, "exit_code") || !strcmp(key, "findings_version"))
		return F_INT;
	if (ends_with(key, "_rps"))
		return F_RPS;
	if (ends_with(key, "rel_l2"))
		return F_SCI;
	return is_integral(v) ? F_COUNT : F_NUM;
}

static enum fmt fmt_for_unit(const char *unit, double v)
{
	if (!unit)
		return is_integral(v) ? F_COUNT : F_NUM;
	if (!strcmp(unit, "ns"))
		return F_NS;
	if (!strcmp(unit, "us"))
		return F_US;
	if (!strcmp(unit, "ratio"))
		return F_RATIO;
	if (!strcmp(unit, "bytes") || !strcmp(unit, "B"))
		return F_BYTES;
	return is_integral(v) ? F_COUNT : F_NUM;
}

static void put_num(struct xw *x, lxw_worksheet *ws, lxw_row_t r, lxw_col_t c, double v, enum fmt f)
{
	note(x, worksheet_write_number(ws, r, c, v, x->fmt[f]));
}

/* Text, cut at XLSX_MAX_STR characters on a UTF-8 boundary. NULL: empty cell. */
static void put_str(struct xw *x, lxw_worksheet *ws, lxw_row_t r, lxw_col_t c, const char *s,
		    lxw_format *fmt)
{
	if (!s || !*s)
		return;
	size_t n = 0, chars = 0;
	while (s[n] && chars < XLSX_MAX_STR) {
		n++;
		while ((s[n] & 0xC0) == 0x80)
			n++;
		chars++;
	}
	if (!s[n]) {
		note(x, worksheet_write_string(ws, r, c, s, fmt));
		return;
	}
	char *cut = malloc(n + 1);
	if (!cut) {
		note(x, LXW_ERROR_MEMORY_MALLOC_FAILED);
		return;
	}
	memcpy(cut, s, n);
	cut[n] = '\0';
	note(x, worksheet_write_string(ws, r, c, cut, fmt));
	free(cut);
}

/* One JSON value into a cell: numbers with format f, strings, booleans;
 * null or missing leaves the cell empty. key and unit choose F_KEY/F_UNIT. */
static void put_json(struct xw *x, lxw_worksheet *ws, lxw_row_t r, lxw_col_t c, json_t *v,
		     enum fmt f, const char *key, const char *unit)
{
	if (json_is_number(v)) {
		double d = json_number_value(v);
		if (f == F_KEY)
			f = fmt_for_key(key ? key : "", d);
		else if (f == F_UNIT)
			f = fmt_for_unit(unit, d);
		put_num(x, ws, r, c, d, f);
	} else if (json_is_string(v)) {
		put_str(x, ws, r, c, json_string_value(v), x->fmt[f == F_WRAP ? F_WRAP : F_TEXT]);
	} else if (json_is_boolean(v)) {
		note(x, worksheet_write_boolean(ws, r, c, json_is_true(v), x->fmt[F_TEXT]));
	}
}

static void write_head(struct xw *x, lxw_worksheet *ws, lxw_row_t r, lxw_col_t c0,
		       const struct col *cols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_str(x, ws, r, c0 + (lxw_col_t)i, cols[i].head, x->head);
}

static void write_row(struct xw *x, lxw_worksheet *ws, lxw_row_t r, lxw_col_t c0,
		      const struct col *cols, size_t n, json_t *const *objs)
{
	for (size_t i = 0; i < n; i++) {
		if (!cols[i].key)
			continue;
		json_t *o = objs[cols[i].src];
		put_json(x, ws, r, c0 + (lxw_col_t)i, jget(o, cols[i].key), cols[i].f, cols[i].key,
			 jstr(o, "unit"));
	}
}

static void set_widths(struct xw *x, lxw_worksheet *ws, lxw_col_t c0, const struct col *cols,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		lxw_col_t c = c0 + (lxw_col_t)i;
		lxw_format *f = cols[i].f == F_WRAP ? x->fmt[F_WRAP] : NULL;
		note(x, worksheet_set_column(ws, c, c, cols[i].width, f));
	}
}

/* Frozen header row, autofilter over the main table, printing landscape one
 * page wide with the header repeated. */
static void finish_sheet(struct xw *x, lxw_worksheet *ws, lxw_row_t last_row, lxw_col_t first_col,
			 lxw_col_t last_col)
{
	worksheet_freeze_panes(ws, 1, 0);
	note(x, worksheet_autofilter(ws, 0, first_col, last_row, last_col));
	worksheet_set_landscape(ws);
	worksheet_fit_to_pages(ws, 1, 0);
	note(x, worksheet_repeat_rows(ws, 0, 0));
}

static lxw_chart *new_chart(struct xw *x, uint8_t type, const char *title, const char *xname,
			    const char *yname)
{
	lxw_chart *ch = workbook_add_chart(x->wb, type);
	if (!ch) {
		note(x, LXW_ERROR_MEMORY_MALLOC_FAILED);
		return NULL;
	}
	chart_title_set_name(ch, title);
	chart_axis_set_name(ch->x_axis, xname);
	chart_axis_set_name(ch->y_axis, yname);
	chart_legend_set_position(ch, LXW_CHART_LEGEND_BOTTOM);
	chart_show_hidden_data(ch);
	return ch;
}

/* A series over rows r0..r1 of sheet `sheet`: categories (or x values) in
 * column cc, values in column vc. libxlsxwriter quotes the sheet name in the
 * references it writes ('Sheet name'!$A$1) when the name needs it. */
static lxw_chart_series *add_series(struct xw *x, lxw_chart *ch, const char *name,
				    const char *sheet, lxw_row_t r0, lxw_row_t r1, lxw_col_t cc,
				    lxw_col_t vc)
{
	lxw_chart_series *s = chart_add_series(ch, NULL, NULL);
	if (!s) {
		note(x, LXW_ERROR_MEMORY_MALLOC_FAILED);
		return NULL;
	}
	chart_series_set_categories(s, sheet, r0, cc, r1, cc);
	chart_series_set_values(s, sheet, r0, vc, r1, vc);
	/* a name beginning with '=' would be read as a reference */
	if (name && name[0] != '=')
		chart_series_set_name(s, name);
	return s;
}

static void insert_chart(struct xw *x, lxw_worksheet *ws, lxw_chart *ch, lxw_row_t r, lxw_col_t c)
{
	if (ch)
		note(x, worksheet_insert_chart(ws, r, c, ch));
}

/* ---- Summary --------------------------------------------------------------- */

struct kv {
	const char *label;
	const char *path;
	enum fmt f;
};

static const struct kv summary_kv[] = {
	{"profile", "profile.name", F_TEXT},
	{"profile path", "profile.path", F_TEXT},
	{"profile sha256", "profile.sha256", F_TEXT},
	{"seed", "profile.seed", F_INT},
	{"model revision", "profile.model_revision", F_TEXT},
	{"compiler", "profile.metadata.compiler", F_TEXT},
	{"runtime", "profile.metadata.runtime", F_TEXT},
	{"firmware", "profile.metadata.firmware", F_TEXT},
	{"envelope", "envelope.name", F_TEXT},
	{"envelope source", "envelope.source", F_TEXT},
	{"power mode", "envelope.power_mode", F_TEXT},
	{"clock (GHz)", "envelope.clock_ghz", F_NUM},
	{"cores", "envelope.cores", F_COUNT},
	{"global bandwidth (GB/s)", "envelope.global_bandwidth_gbps", F_NUM},
	{"shared capacity (KiB)", "envelope.shared_capacity_kib", F_NUM},
	{"launch overhead (us)", "envelope.launch_overhead_us", F_US},
	{"SLA p95 (us)", "sla.p95_us", F_US},
	{"SLA p99 (us)", "sla.p99_us", F_US},
	{"SLA min throughput (rps)", "sla.min_throughput_rps", F_RPS},
	{"SLA max regression", "sla.max_regression", F_RATIO},
	{"archive", "archive", F_TEXT},
	{"started (UTC)", "reproduce.started_utc", F_TEXT},
	{"reproduce", "reproduce.command", F_TEXT},
	{"replay", "reproduce.replay", F_TEXT},
	{"PAPI", "papi_status", F_TEXT},
};

/* Per-block line; objects: block, baseline variant, candidate variant, p95 comparison. */
static const struct col summary_blocks[] = {
	{"block", 0, "name", F_TEXT, 16},
	{"group", 0, "group", F_TEXT, 28},
	{"dtype", 0, "dtype", F_TEXT, 7},
	{"status", 0, "status", F_TEXT, 8},
	{"host p95 before (ns)", 1, "latency.p95.value_ns", F_NS, 14},
	{"host p95 after (ns)", 2, "latency.p95.value_ns", F_NS, 14},
	{"bottleneck (baseline)", 1, "primary_bottleneck", F_TEXT, 24},
	{"bottleneck (candidate)", 2, "primary_bottleneck", F_TEXT, 24},
	{"p95 ratio", 3, "ratio", F_RATIO, 10},
	{"p95 ratio lo", 3, "lo", F_RATIO, 11},
	{"p95 ratio hi", 3, "hi", F_RATIO, 11},
	{"p95 outcome", 3, "outcome", F_TEXT, 14},
	{"p95 unavailable because", 3, "reason", F_TEXT, 24},
	{"launches before", 1, "launches", F_COUNT, 10},
	{"launches after", 2, "launches", F_COUNT, 10},
	{"reuse before", 1, "reuse_ratio", F_RATIO, 10},
	{"reuse after", 2, "reuse_ratio", F_RATIO, 10},
	{"global bytes before", 1, "global_bytes", F_BYTES, 14},
	{"global bytes after", 2, "global_bytes", F_BYTES, 14},
};

static const char *const pcts[] = {"p50", "p90", "p95", "p99"};

static void block_objs(json_t *b, json_t *objs[4])
{
	objs[0] = b;
	objs[1] = find_by(jget(b, "variants"), "variant", "baseline");
	objs[2] = find_by(jget(b, "variants"), "variant", "candidate");
	objs[3] = find_by(jget(b, "comparisons"), "metric", "p95");
}

static void sheet_summary(struct xw *x, lxw_worksheet *ws, json_t *f, size_t samples,
			  size_t samples_dropped)
{
	static const struct col kv_cols[] = {{"item", 0, NULL, F_TEXT, 24},
					     {"value", 0, NULL, F_WRAP, 60}};
	const char *name = "Summary";
	write_head(x, ws, 0, 0, kv_cols, NCOLS(kv_cols));
	set_widths(x, ws, 0, kv_cols, NCOLS(kv_cols));

	lxw_row_t r = 1;
	const char *verdict = jstr(f, "verdict");
	lxw_format *vf = x->fail;
	if (verdict && !strcmp(verdict, "SHIP"))
		vf = x->pass;
	else if (verdict && (!strcmp(verdict, "SHIP WITH MITIGATIONS") || !strcmp(verdict, "HOLD")))
		vf = x->warn;
	put_str(x, ws, r, 0, "verdict", NULL);
	put_str(x, ws, r++, 1, verdict ? verdict : "(missing)", vf);
	put_str(x, ws, r, 0, "exit code", NULL);
	put_json(x, ws, r++, 1, jget(f, "exit_code"), F_INT, NULL, NULL);
	size_t i;
	json_t *e;
	json_array_foreach(jget(f, "reasons"), i, e) {
		put_str(x, ws, r, 0, "reason", NULL);
		put_json(x, ws, r++, 1, e, F_WRAP, NULL, NULL);
	}
	/* what each owner must do now, on the first screen as in the packet */
	json_array_foreach(jget(f, "mitigations"), i, e) {
		char act[512];
		snprintf(act, sizeof act, "%s: %s", jstr(e, "block") ? jstr(e, "block") : "",
			 jstr(e, "title") ? jstr(e, "title") : "");
		put_str(x, ws, r, 0, jstr(e, "owner_role") ? jstr(e, "owner_role") : "owner", NULL);
		put_str(x, ws, r++, 1, act, x->fmt[F_WRAP]);
	}
	for (i = 0; i < NCOLS(summary_kv); i++) {
		put_str(x, ws, r, 0, summary_kv[i].label, NULL);
		put_json(x, ws, r++, 1, jget(f, summary_kv[i].path), summary_kv[i].f, NULL, NULL);
	}
	put_str(x, ws, r, 0, "samples on sheet", NULL);
	put_num(x, ws, r++, 1, (double)samples, F_COUNT);
	if (samples_dropped) {
		put_str(x, ws, r, 0, "samples not shown", NULL);
		put_num(x, ws, r++, 1, (double)samples_dropped, F_COUNT);
	}

	/* per-block lines, beside the key/value list, sharing the header row */
	const lxw_col_t bc = 3;
	json_t *blocks = jget(f, "blocks");
	size_t nb = jlen(f, "blocks");
	write_head(x, ws, 0, bc, summary_blocks, NCOLS(summary_blocks));
	set_widths(x, ws, bc, summary_blocks, NCOLS(summary_blocks));
	json_array_foreach(blocks, i, e) {
		json_t *objs[4];
		block_objs(e, objs);
		write_row(x, ws, (lxw_row_t)(1 + i), bc, summary_blocks, NCOLS(summary_blocks), objs);
	}
	finish_sheet(x, ws, (lxw_row_t)nb, bc, bc + (lxw_col_t)NCOLS(summary_blocks) - 1);

	/* chart data: latency percentiles (us) per block, below the block lines */
	static const struct col lat_cols[] = {
		{"block", 0, NULL, F_TEXT, 0}, {"percentile", 0, NULL, F_TEXT, 0},
		{"baseline (us)", 0, NULL, F_US, 0}, {"candidate (us)", 0, NULL, F_US, 0}};
	lxw_row_t lr = (lxw_row_t)nb + 3;
	put_str(x, ws, lr - 1, bc, "latency percentiles (chart data)", x->head);
	write_head(x, ws, lr, bc, lat_cols, NCOLS(lat_cols));
	const lxw_col_t cc = bc + (lxw_col_t)NCOLS(summary_blocks) + 1;
	json_array_foreach(blocks, i, e) {
		json_t *objs[4];
		block_objs(e, objs);
		lxw_row_t r0 = lr + 1 + (lxw_row_t)(i * NCOLS(pcts));
		for (size_t p = 0; p < NCOLS(pcts); p++) {
			char path[32];
			double v;
			put_str(x, ws, r0 + (lxw_row_t)p, bc, jstr(e, "name"), NULL);
			put_str(x, ws, r0 + (lxw_row_t)p, bc + 1, pcts[p], NULL);
			snprintf(path, sizeof path, "latency.%s.value_ns", pcts[p]);
			for (int k = 0; k < 2; k++)
				if (jnum(objs[1 + k], path, &v))
					put_num(x, ws, r0 + (lxw_row_t)p, bc + 2 + (lxw_col_t)k, v / 1e3, F_US);
		}
		char title[160];
		snprintf(title, sizeof title, "%s: latency percentiles", jstr(e, "name") ? jstr(e, "name") : "?");
		lxw_chart *ch = new_chart(x, LXW_CHART_COLUMN, title, "percentile", "us");
		if (!ch)
			continue;
		lxw_row_t r1 = r0 + (lxw_row_t)NCOLS(pcts) - 1;
		add_series(x, ch, "baseline", name, r0, r1, bc + 1, bc + 2);
		add_series(x, ch, "candidate", name, r0, r1, bc + 1, bc + 3);
		insert_chart(x, ws, ch, (lxw_row_t)(1 + CHART_ROWS * (i / 2)),
			     cc + (lxw_col_t)(CHART_COLS * (i % 2)));
	}
}

/* ---- Findings: one row per evidence item ------------------------------------ */

static const struct col findings_cols[] = {
	{"block", 0, "block", F_TEXT, 16},
	{"variant", 0, "variant", F_TEXT, 10},
	{"class", 0, "class", F_TEXT, 24},
	{"primary", 0, "primary", F_TEXT, 8},
	{"score", 0, "score", F_RATIO, 8},
	{"symptom", 0, "symptom", F_WRAP, 30},
	{"explanation", 0, "explanation", F_WRAP, 40},
	{"evidence metric", 1, "metric", F_TEXT, 20},
	{"value", 1, "value", F_UNIT, 14},
	{"unit", 1, "unit", F_TEXT, 8},
	{"provenance", 1, "provenance", F_TEXT, 12},
	{"comparison", 1, "comparison", F_TEXT, 18},
	{"note", 1, "note", F_WRAP, 30},
	{"reproduce", 0, "reproduce", F_TEXT, 40},
};

static void sheet_findings(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	write_head(x, ws, 0, 0, findings_cols, NCOLS(findings_cols));
	set_widths(x, ws, 0, findings_cols, NCOLS(findings_cols));
	lxw_row_t r = 1;
	size_t i, k;
	json_t *b, *ev;
	json_array_foreach(jget(f, "bottlenecks"), i, b) {
		json_t *objs[2] = {b, NULL};
		if (!jlen(b, "evidence")) /* still one row, with empty evidence */
			write_row(x, ws, r++, 0, findings_cols, NCOLS(findings_cols), objs);
		json_array_foreach(jget(b, "evidence"), k, ev) {
			objs[1] = ev;
			write_row(x, ws, r++, 0, findings_cols, NCOLS(findings_cols), objs);
		}
	}
	finish_sheet(x, ws, r - 1, 0, (lxw_col_t)NCOLS(findings_cols) - 1);
	/* the rules the findings came from, below them (the packet points here) */
	static const struct col rule_cols[] = {
		{"rule (class)", 0, "class", F_TEXT, 0},     {"formula", 0, "formula", F_WRAP, 0},
		{"threshold", 0, "threshold", F_TEXT, 0},   {"limit", 0, "limit", F_NUM, 0},
		{"second", 0, "second", F_NUM, 0},          {"explanation", 0, "explanation", F_WRAP, 0},
		{"source", 0, "source", F_WRAP, 0},
	};
	r++;
	write_head(x, ws, r++, 0, rule_cols, NCOLS(rule_cols));
	json_array_foreach(jget(f, "rules"), i, b) {
		json_t *objs[1] = {b};
		write_row(x, ws, r++, 0, rule_cols, NCOLS(rule_cols), objs);
	}
	static const struct col check_cols[] = {
		{"check", 0, "name", F_TEXT, 0}, {"pass", 0, "pass", F_WRAP, 0},
		{"warn", 0, "warn", F_WRAP, 0},  {"fail", 0, "fail", F_WRAP, 0},
		{"a candidate FAIL", 0, "on_fail", F_TEXT, 0}, {"limit", 0, "limit", F_NUM, 0},
		{"source", 0, "source", F_WRAP, 0},
	};
	r++;
	write_head(x, ws, r++, 0, check_cols, NCOLS(check_cols));
	json_array_foreach(jget(f, "check_rules.checks"), i, b) {
		json_t *objs[1] = {b};
		write_row(x, ws, r++, 0, check_cols, NCOLS(check_cols), objs);
	}
	json_array_foreach(jget(f, "check_rules.verdicts"), i, b) {
		put_str(x, ws, r, 0, jstr(b, "verdict") ? jstr(b, "verdict") : "", x->head);
		put_str(x, ws, r++, 1, jstr(b, "when") ? jstr(b, "when") : "", x->fmt[F_WRAP]);
	}
}

/* ---- Worksheet: fusion and tile plans, fusion and roofline charts ------------ */

static const struct col worksheet_cols[] = {
	{"block", 0, "block", F_TEXT, 16},
	{"variant", 0, "variant", F_TEXT, 10},
	{"group", 0, "group", F_TEXT, 28},
	{"plan", 0, "plan", F_TEXT, 40},
	{"fused", 0, "fused", F_TEXT, 7},
	{"footprint bytes", 0, "footprint_bytes", F_BYTES, 14},
	{"capacity bytes", 0, "capacity_bytes", F_BYTES, 14},
	{"global bytes", 0, "global_bytes", F_BYTES, 14},
	{"reuse ratio", 0, "reuse_ratio", F_RATIO, 10},
	{"launches", 0, "launches", F_COUNT, 9},
	{"launch overhead saved (us)", 0, "launch_overhead_saved_us", F_US, 14},
	{"model (us)", 0, "model_us", F_US, 12},
	{"expected bottleneck", 0, "expected_bottleneck", F_TEXT, 24},
	{"shift", 0, "shift", F_TEXT, 30},
	{"status", 0, "status", F_TEXT, 9},
	{"reason", 0, "reason", F_WRAP, 40},
};

/* Fusion before/after; objects: block, baseline, candidate. The ratio
 * columns (candidate / baseline, 1.0 = no change) are the chart's series. */
static const struct col fusion_cols[] = {
	{"block", 0, "name", F_TEXT, 0},
	{"global bytes before", 1, "global_bytes", F_BYTES, 0},
	{"global bytes after", 2, "global_bytes", F_BYTES, 0},
	{"launches before", 1, "launches", F_COUNT, 0},
	{"launches after", 2, "launches", F_COUNT, 0},
	{"p95 before (ns)", 1, "latency.p95.value_ns", F_NS, 0},
	{"p95 after (ns)", 2, "latency.p95.value_ns", F_NS, 0},
	{"bytes after/before", 0, NULL, F_RATIO, 0},
	{"launches after/before", 0, NULL, F_RATIO, 0},
	{"p95 after/before", 0, NULL, F_RATIO, 0},
};

/* Roofline (Williams, Waterman, Patterson, CACM 2009): attainable
 * GOPS = min(peak_GOPS, bandwidth_GBps * I), I = ops / global byte.
 * ops = 2 * macs + elem_ops (a MAC is a multiply and an add); the achieved
 * point is ops / model_ns (GOPS, the simulated device time) so it is
 * comparable with the envelope's roof; peak = compute_tops[dtype] * 1000. */
static const struct col roof_cols[] = {
	{"block/variant", 0, NULL, F_TEXT, 0},
	{"dtype", 0, NULL, F_TEXT, 0},
	{"ops", 0, NULL, F_COUNT, 0},
	{"global bytes", 0, NULL, F_BYTES, 0},
	{"intensity (ops/B)", 0, NULL, F_NUM, 0},
	{"achieved (GOPS)", 0, NULL, F_NUM, 0},
};

static const char *tops_key(const char *dtype)
{
	if (!dtype)
		return NULL;
	if (!strcmp(dtype, "fp32") || !strcmp(dtype, "fp16") || !strcmp(dtype, "bf16"))
		return dtype;
	if (!strcmp(dtype, "int8") || !strcmp(dtype, "u8") || !strcmp(dtype, "s8"))
		return "int8";
	return NULL;
}

static void roofline(struct xw *x, lxw_worksheet *ws, json_t *f, lxw_row_t r, lxw_col_t chart_col,
		     lxw_row_t chart_row)
{
	const char *name = "Worksheet";
	json_t *blocks = jget(f, "blocks");
	size_t nb = jlen(f, "blocks"), i;
	json_t *b;
	put_str(x, ws, r - 1, 0, "roofline (chart data)", x->head);
	write_head(x, ws, r, 0, roof_cols, NCOLS(roof_cols));
	double imin = 0, imax = 0;
	lxw_chart *ch = nb ? new_chart(x, LXW_CHART_SCATTER_STRAIGHT, "roofline (simulated device time)",
				       "intensity (ops per global byte)", "GOPS")
			   : NULL;
	/* points: all baselines, then all candidates, so each variant is one range */
	for (int v = 0; v < 2; v++) {
		lxw_row_t r0 = r + 1 + (lxw_row_t)(v * nb);
		json_array_foreach(blocks, i, b) {
			json_t *objs[4];
			block_objs(b, objs);
			json_t *vo = objs[1 + v];
			char label[160];
			double macs, elem = 0, bytes, model;
			lxw_row_t rr = r0 + (lxw_row_t)i;
			snprintf(label, sizeof label, "%s %s", jstr(b, "name") ? jstr(b, "name") : "?",
				 v ? "candidate" : "baseline");
			put_str(x, ws, rr, 0, label, NULL);
			put_str(x, ws, rr, 1, jstr(b, "dtype"), NULL);
			if (!jnum(vo, "macs", &macs) || !jnum(vo, "global_bytes", &bytes) || bytes <= 0)
				continue;
			jnum(vo, "elem_ops", &elem);
			double ops = 2 * macs + elem, in = ops / bytes;
			put_num(x, ws, rr, 2, ops, F_COUNT);
			put_num(x, ws, rr, 3, bytes, F_BYTES);
			put_num(x, ws, rr, 4, in, F_NUM);
			if (jnum(vo, "model_ns", &model) && model > 0)
				put_num(x, ws, rr, 5, ops / model, F_NUM);
			if (in > 0 && (imin == 0 || in < imin))
				imin = in;
			if (in > imax)
				imax = in;
		}
		if (ch) {
			lxw_chart_series *s = add_series(x, ch, v ? "candidate" : "baseline", name, r0,
							 r0 + (lxw_row_t)nb - 1, 4, 5);
			if (s) {
				lxw_chart_line none = {.none = LXW_TRUE};
				chart_series_set_line(s, &none);
				chart_series_set_marker_type(s, v ? LXW_CHART_MARKER_DIAMOND
								  : LXW_CHART_MARKER_CIRCLE);
				chart_series_set_marker_size(s, 8);
			}
		}
	}
	/* roofs: one per dtype present, three points (left end, ridge, right end) */
	lxw_row_t rr = r + 1 + (lxw_row_t)(2 * nb) + 1;
	static const struct col roof_head[] = {
		{"roof", 0, NULL, F_TEXT, 0}, {"dtype", 0, NULL, F_TEXT, 0},
		{"peak (GOPS)", 0, NULL, F_NUM, 0}, {"bandwidth (GB/s)", 0, NULL, F_NUM, 0},
		{"intensity (ops/B)", 0, NULL, F_NUM, 0}, {"attainable (GOPS)", 0, NULL, F_NUM, 0}};
	write_head(x, ws, rr++, 0, roof_head, NCOLS(roof_head));
	double bw;
	int have_bw = jnum(f, "envelope.global_bandwidth_gbps", &bw) && bw > 0;
	static const char *const dtypes[] = {"fp32", "fp16", "bf16", "int8"};
	for (size_t d = 0; d < NCOLS(dtypes) && have_bw; d++) {
		int used = 0;
		json_array_foreach(blocks, i, b) {
			const char *k = tops_key(jstr(b, "dtype"));
			used |= k && !strcmp(k, dtypes[d]);
		}
		char path[48];
		double tops;
		snprintf(path, sizeof path, "envelope.compute_tops.%s", dtypes[d]);
		if (!used || !jnum(f, path, &tops) || tops <= 0)
			continue;
		double peak = tops * 1e3, ridge = peak / bw;
		double lo = (imin > 0 && imin < ridge ? imin : ridge) / 4;
		double hi = (imax > ridge ? imax : ridge) * 4;
		double xs[3] = {lo, ridge, hi}, ys[3] = {bw * lo, peak, peak};
		char label[32];
		snprintf(label, sizeof label, "roof %s", dtypes[d]);
		for (int p = 0; p < 3; p++) {
			put_str(x, ws, rr + (lxw_row_t)p, 0, label, NULL);
			put_str(x, ws, rr + (lxw_row_t)p, 1, dtypes[d], NULL);
			put_num(x, ws, rr + (lxw_row_t)p, 2, peak, F_NUM);
			put_num(x, ws, rr + (lxw_row_t)p, 3, bw, F_NUM);
			put_num(x, ws, rr + (lxw_row_t)p, 4, xs[p], F_NUM);
			put_num(x, ws, rr + (lxw_row_t)p, 5, ys[p], F_NUM);
		}
		if (ch)
			add_series(x, ch, label, name, rr, rr + 2, 4, 5);
		rr += 3;
	}
	if (ch) {
		chart_axis_set_log_base(ch->x_axis, 10);
		chart_axis_set_log_base(ch->y_axis, 10);
		insert_chart(x, ws, ch, chart_row, chart_col);
	}
}

static void sheet_worksheet(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	const char *name = "Worksheet";
	write_head(x, ws, 0, 0, worksheet_cols, NCOLS(worksheet_cols));
	set_widths(x, ws, 0, worksheet_cols, NCOLS(worksheet_cols));
	size_t i, n = jlen(f, "worksheet");
	json_t *e;
	json_array_foreach(jget(f, "worksheet"), i, e)
		write_row(x, ws, (lxw_row_t)(1 + i), 0, worksheet_cols, NCOLS(worksheet_cols), &e);
	const lxw_col_t last = (lxw_col_t)NCOLS(worksheet_cols) - 1;
	finish_sheet(x, ws, (lxw_row_t)n, 0, last);

	lxw_row_t fr = (lxw_row_t)n + 3;
	json_t *blocks = jget(f, "blocks");
	size_t nb = jlen(f, "blocks");
	put_str(x, ws, fr - 1, 0, "fusion before/after (chart data)", x->head);
	write_head(x, ws, fr, 0, fusion_cols, NCOLS(fusion_cols));
	json_array_foreach(blocks, i, e) {
		json_t *objs[4];
		block_objs(e, objs);
		lxw_row_t r = fr + 1 + (lxw_row_t)i;
		write_row(x, ws, r, 0, fusion_cols, NCOLS(fusion_cols), objs);
		static const char *const keys[] = {"global_bytes", "launches", "latency.p95.value_ns"};
		for (size_t k = 0; k < NCOLS(keys); k++) {
			double a, bv;
			if (jnum(objs[1], keys[k], &a) && jnum(objs[2], keys[k], &bv) && a > 0)
				put_num(x, ws, r, (lxw_col_t)(7 + k), bv / a, F_RATIO);
		}
	}
	const lxw_col_t cc = last + 2;
	/* a chart without series is not valid, so none without blocks */
	lxw_chart *ch = nb ? new_chart(x, LXW_CHART_COLUMN,
				       "fusion: candidate / baseline (1.0 = baseline)", "block",
				       "after / before")
			   : NULL;
	if (ch) {
		lxw_row_t r0 = fr + 1, r1 = fr + (lxw_row_t)nb;
		add_series(x, ch, "global bytes", name, r0, r1, 0, 7);
		add_series(x, ch, "launches", name, r0, r1, 0, 8);
		add_series(x, ch, "p95 latency", name, r0, r1, 0, 9);
	}
	insert_chart(x, ws, ch, 1, cc);

	roofline(x, ws, f, fr + (lxw_row_t)nb + 4, cc, 1 + CHART_ROWS);
}

/* ---- Validation ---------------------------------------------------------------- */

static const struct col validation_cols[] = {
	{"block", 0, "block", F_TEXT, 16},
	{"variant", 0, "variant", F_TEXT, 10},
	{"dtype", 0, "dtype", F_TEXT, 7},
	{"check", 0, "check", F_TEXT, 20},
	{"status", 0, "status", F_TEXT, 8},
	{"value", 0, "value", F_TEXT, 22},
	{"threshold", 0, "threshold", F_TEXT, 14},
	{"provenance", 0, "provenance", F_TEXT, 12},
	{"trigger", 0, "trigger", F_WRAP, 40},
	{"rollback target", 0, "rollback_to", F_WRAP, 30},
};

static void sheet_validation(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	write_head(x, ws, 0, 0, validation_cols, NCOLS(validation_cols));
	set_widths(x, ws, 0, validation_cols, NCOLS(validation_cols));
	size_t i, n = jlen(f, "validation");
	json_t *e;
	json_array_foreach(jget(f, "validation"), i, e)
		write_row(x, ws, (lxw_row_t)(1 + i), 0, validation_cols, NCOLS(validation_cols), &e);
	finish_sheet(x, ws, (lxw_row_t)n, 0, (lxw_col_t)NCOLS(validation_cols) - 1);
	/* status colours: PASS green, WARN amber, FAIL red (cell-equals rules) */
	static const char *const word[] = {"\"PASS\"", "\"WARN\"", "\"FAIL\""};
	lxw_format *fill[] = {x->pass, x->warn, x->fail};
	lxw_row_t last = n ? (lxw_row_t)n : 1;
	for (int k = 0; k < 3; k++) {
		lxw_conditional_format cf = {.type = LXW_CONDITIONAL_TYPE_CELL,
					     .criteria = LXW_CONDITIONAL_CRITERIA_EQUAL_TO,
					     .value_string = (char *)word[k],
					     .format = fill[k]};
		note(x, worksheet_conditional_format_range(ws, 1, 4, last, 4, &cf));
	}
}

/* ---- Pipeline: results, batch sweep, queue-wait histograms ---------------------- */

/* objects: block, variant */
static const struct col pipeline_cols[] = {
	{"block", 0, "name", F_TEXT, 16},
	{"variant", 1, "variant", F_TEXT, 10},
	{"requests", 1, "pipeline.requests", F_COUNT, 10},
	{"p50 (us)", 1, "pipeline.p50_us", F_US, 11},
	{"p95 (us)", 1, "pipeline.p95_us", F_US, 11},
	{"p99 (us)", 1, "pipeline.p99_us", F_US, 11},
	{"max (us)", 1, "pipeline.max_us", F_US, 11},
	{"mean (us)", 1, "pipeline.mean_us", F_US, 11},
	{"wait p50 (us)", 1, "pipeline.wait_p50_us", F_US, 11},
	{"wait p95 (us)", 1, "pipeline.wait_p95_us", F_US, 11},
	{"wait p99 (us)", 1, "pipeline.wait_p99_us", F_US, 11},
	{"throughput (rps)", 1, "pipeline.throughput_rps", F_RPS, 12},
	{"Jain cores", 1, "pipeline.jain_cores", F_RATIO, 9},
	{"Jain streams", 1, "pipeline.jain_streams", F_RATIO, 9},
	{"bandwidth util", 1, "pipeline.bw_util", F_RATIO, 9},
	{"mean batch", 1, "pipeline.mean_batch", F_RATIO, 9},
	{"Little L", 1, "pipeline.little_L", F_RATIO, 9},
	{"Little lambda (rps)", 1, "pipeline.little_lambda_rps", F_RPS, 12},
	{"Little W (us)", 1, "pipeline.little_W_us", F_US, 11},
};

/* objects: block, variant, sweep row */
static const struct col sweep_cols[] = {
	{"block", 0, "name", F_TEXT, 0},
	{"variant", 1, "variant", F_TEXT, 0},
	{"batch", 2, "batch", F_COUNT, 0},
	{"p50 (us)", 2, "p50_us", F_US, 0},
	{"p95 (us)", 2, "p95_us", F_US, 0},
	{"p99 (us)", 2, "p99_us", F_US, 0},
	{"throughput (rps)", 2, "throughput_rps", F_RPS, 0},
	{"wait mean (us)", 2, "wait_mean_us", F_US, 0},
};

static const struct col hist_cols[] = {
	{"block", 0, NULL, F_TEXT, 0}, {"variant", 0, NULL, F_TEXT, 0},
	{"bin (us)", 0, NULL, F_TEXT, 0}, {"from (us)", 0, NULL, F_US, 0},
	{"to (us)", 0, NULL, F_US, 0}, {"requests", 0, NULL, F_COUNT, 0},
};

static void sheet_pipeline(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	const char *name = "Pipeline";
	json_t *blocks = jget(f, "blocks");
	size_t i, k, j;
	json_t *b, *v, *e;
	write_head(x, ws, 0, 0, pipeline_cols, NCOLS(pipeline_cols));
	set_widths(x, ws, 0, pipeline_cols, NCOLS(pipeline_cols));
	lxw_row_t r = 1;
	json_array_foreach(blocks, i, b) {
		json_array_foreach(jget(b, "variants"), k, v) {
			json_t *objs[2] = {b, v};
			write_row(x, ws, r++, 0, pipeline_cols, NCOLS(pipeline_cols), objs);
		}
	}
	const lxw_col_t last = (lxw_col_t)NCOLS(pipeline_cols) - 1;
	finish_sheet(x, ws, r - 1, 0, last);

	r += 2;
	put_str(x, ws, r - 1, 0, "batch sweep", x->head);
	write_head(x, ws, r++, 0, sweep_cols, NCOLS(sweep_cols));
	json_array_foreach(blocks, i, b) {
		json_array_foreach(jget(b, "variants"), k, v) {
			json_array_foreach(jget(v, "pipeline.sweep"), j, e) {
				json_t *objs[3] = {b, v, e};
				write_row(x, ws, r++, 0, sweep_cols, NCOLS(sweep_cols), objs);
			}
		}
	}

	r += 2;
	put_str(x, ws, r - 1, 0, "queue-wait histograms (chart data)", x->head);
	write_head(x, ws, r++, 0, hist_cols, NCOLS(hist_cols));
	int nchart = 0;
	json_array_foreach(blocks, i, b) {
		json_array_foreach(jget(b, "variants"), k, v) {
			json_t *edges = jget(v, "pipeline.wait_hist.edges_us");
			json_t *counts = jget(v, "pipeline.wait_hist.counts");
			size_t nbins = json_array_size(counts);
			if (!nbins || json_array_size(edges) != nbins + 1)
				continue;
			lxw_row_t r0 = r;
			for (j = 0; j < nbins; j++, r++) {
				double lo = json_number_value(json_array_get(edges, j));
				double hi = json_number_value(json_array_get(edges, j + 1));
				char bin[64];
				snprintf(bin, sizeof bin, "%g-%g", lo, hi);
				put_str(x, ws, r, 0, jstr(b, "name"), NULL);
				put_str(x, ws, r, 1, jstr(v, "variant"), NULL);
				put_str(x, ws, r, 2, bin, NULL);
				put_num(x, ws, r, 3, lo, F_US);
				put_num(x, ws, r, 4, hi, F_US);
				put_json(x, ws, r, 5, json_array_get(counts, j), F_COUNT, NULL, NULL);
			}
			char title[200];
			snprintf(title, sizeof title, "queue wait: %s %s", jstr(b, "name") ? jstr(b, "name") : "?",
				 jstr(v, "variant") ? jstr(v, "variant") : "?");
			lxw_chart *ch = new_chart(x, LXW_CHART_COLUMN, title, "wait (us)", "requests");
			if (!ch)
				continue;
			add_series(x, ch, "requests", name, r0, r - 1, 2, 5);
			chart_set_series_gap(ch, 10);
			chart_legend_set_position(ch, LXW_CHART_LEGEND_NONE);
			insert_chart(x, ws, ch, (lxw_row_t)(1 + CHART_ROWS * (nchart / 2)),
				     last + 2 + (lxw_col_t)(CHART_COLS * (nchart % 2)));
			nchart++;
		}
	}
}

/* ---- Samples: block, variant, round, ns from samples.csv ------------------------ */

/* Writes the rows of csv (header "block,variant,round,ns"); at most
 * XLSX_MAX_ROWS - 1 rows fit, *dropped counts the rest. */
static int sheet_samples(struct xw *x, lxw_worksheet *ws, const char *csv, size_t *written,
			 size_t *dropped, struct opr_error *err)
{
	static const struct col cols[] = {
		{"block", 0, NULL, F_TEXT, 16}, {"variant", 0, NULL, F_TEXT, 10},
		{"round", 0, NULL, F_INT, 8}, {"ns", 0, NULL, F_NS, 14}};
	write_head(x, ws, 0, 0, cols, NCOLS(cols));
	set_widths(x, ws, 0, cols, NCOLS(cols));
	*written = *dropped = 0;
	int line = 0;
	const char *p = csv;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char buf[SAMPLES_LINE_MAX];
		line++;
		if (n && p[n - 1] == '\r')
			n--;
		if (n >= sizeof buf)
			return opr_error_at(err, OPR_EINPUT, "samples.csv", line, 1, "line too long");
		memcpy(buf, p, n);
		buf[n] = '\0';
		p = nl ? nl + 1 : NULL;
		if (line == 1) {
			if (strcmp(buf, "block,variant,round,ns"))
				return opr_error_at(err, OPR_EINPUT, "samples.csv", 1, 1,
						    "expected header 'block,variant,round,ns'");
			continue;
		}
		if (!n)
			continue;
		char *f[4], *s = buf;
		int nf = 0;
		for (; nf < 4 && s; nf++) {
			f[nf] = s;
			s = strchr(s, ',');
			if (s)
				*s++ = '\0';
		}
		if (nf != 4 || s)
			return opr_error_at(err, OPR_EINPUT, "samples.csv", line, 1,
					    "expected 4 fields 'block,variant,round,ns'");
		char *end;
		long round = strtol(f[2], &end, 10);
		if (!*f[2] || *end || round < 0)
			return opr_error_at(err, OPR_EINPUT, "samples.csv", line, (int)(f[2] - buf) + 1,
					    "round '%s' is not a non-negative integer", f[2]);
		double ns = strtod(f[3], &end);
		if (!*f[3] || *end || !(ns >= 0))
			return opr_error_at(err, OPR_EINPUT, "samples.csv", line, (int)(f[3] - buf) + 1,
					    "sample '%s' is not a non-negative number of ns", f[3]);
		if (*written >= XLSX_MAX_ROWS - 1) {
			(*dropped)++;
			continue;
		}
		lxw_row_t r = (lxw_row_t)(1 + *written);
		put_str(x, ws, r, 0, f[0], NULL);
		put_str(x, ws, r, 1, f[1], NULL);
		put_num(x, ws, r, 2, (double)round, F_INT);
		put_num(x, ws, r, 3, ns, F_NS);
		(*written)++;
		if (x->lerr != LXW_NO_ERROR)
			break;
	}
	finish_sheet(x, ws, (lxw_row_t)*written, 0, (lxw_col_t)NCOLS(cols) - 1);
	return 0;
}

/* ---- Counters ------------------------------------------------------------------- */

static const struct col counter_cols[] = {
	{"block", 0, "block", F_TEXT, 16},
	{"variant", 0, "variant", F_TEXT, 10},
	{"name", 0, "name", F_TEXT, 26},
	{"value", 0, NULL, F_KEY, 16},
	{"provenance", 0, "provenance", F_TEXT, 12},
	{"available", 0, "available", F_TEXT, 10},
	{"reason", 0, "reason", F_WRAP, 40},
};

static void sheet_counters(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	write_head(x, ws, 0, 0, counter_cols, NCOLS(counter_cols));
	set_widths(x, ws, 0, counter_cols, NCOLS(counter_cols));
	size_t i, n = jlen(f, "counters");
	json_t *e;
	json_array_foreach(jget(f, "counters"), i, e) {
		lxw_row_t r = (lxw_row_t)(1 + i);
		write_row(x, ws, r, 0, counter_cols, NCOLS(counter_cols), &e);
		/* an unavailable counter keeps an empty value, whatever was stored */
		if (!json_is_false(jget(e, "available")))
			put_json(x, ws, r, 3, jget(e, "value"), F_KEY, jstr(e, "name"), NULL);
	}
	finish_sheet(x, ws, (lxw_row_t)n, 0, (lxw_col_t)NCOLS(counter_cols) - 1);
}

/* ---- Environment: every scalar under these keys, flattened --------------------- */

static void env_flatten(struct xw *x, lxw_worksheet *ws, lxw_row_t *r, const char *section,
			const char *prefix, json_t *v)
{
	if (json_is_object(v)) {
		const char *k;
		json_t *c;
		json_object_foreach(v, k, c) {
			char key[256];
			snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
			env_flatten(x, ws, r, section, key, c);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c) {
			char key[256];
			snprintf(key, sizeof key, "%s[%zu]", prefix, i);
			env_flatten(x, ws, r, section, key, c);
		}
	} else {
		const char *leaf = strrchr(prefix, '.');
		put_str(x, ws, *r, 0, section, NULL);
		put_str(x, ws, *r, 1, *prefix ? prefix : section, NULL);
		put_json(x, ws, *r, 2, v, F_KEY, leaf ? leaf + 1 : *prefix ? prefix : section, NULL);
		(*r)++;
	}
}

static void sheet_environment(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	static const struct col cols[] = {
		{"section", 0, NULL, F_TEXT, 14}, {"key", 0, NULL, F_TEXT, 30}, {"value", 0, NULL, F_WRAP, 70}};
	static const char *const sections[] = {
		"host", "profile", "imported", "envelope", "overhead", "papi_status", "sla", "precision",
		"traffic", "reproduce", "owners", "archive", "findings_version"};
	write_head(x, ws, 0, 0, cols, NCOLS(cols));
	set_widths(x, ws, 0, cols, NCOLS(cols));
	lxw_row_t r = 1;
	for (size_t i = 0; i < NCOLS(sections); i++) {
		json_t *v = jget(f, sections[i]);
		if (v)
			env_flatten(x, ws, &r, sections[i], "", v);
	}
	finish_sheet(x, ws, r - 1, 0, (lxw_col_t)NCOLS(cols) - 1);
}

/* ---- Model: model validation, modelled vs measured per plan; the planner -------- */

static const struct col model_cols[] = {
	{"block", 0, "block", F_TEXT, 18},
	{"variant", 0, "variant", F_TEXT, 10},
	{"plan", 0, "plan", F_WRAP, 44},
	{"measured by", 0, "measured_by", F_TEXT, 12},
	{"alternative", 0, "alternative", F_INT, 11},
	{"modelled ns", 0, "model_ns", F_NS, 14},
	{"measured ns", 0, "measured_ns", F_NS, 14},
	{"modelled / measured", 0, "ratio", F_RATIO, 12},
	{"|ratio - 1|", 0, "abs_error", F_RATIO, 11},
	{"largest model term", 0, "dominant_term", F_TEXT, 16},
	{"counted", 0, "counted", F_TEXT, 8},
};

static const struct col planner_cols[] = {
	{"block", 0, "block", F_TEXT, 18},
	{"variant", 0, "variant", F_TEXT, 10},
	{"planner's choice", 0, "choice_plan", F_WRAP, 44},
	{"measured plans", 0, "candidates", F_INT, 12},
	{"choice ns", 0, "choice_ns", F_NS, 14},
	{"best ns", 0, "best_ns", F_NS, 14},
	{"slowdown", 0, "slowdown", F_RATIO, 12},
	{"Kendall tau", 0, "kendall_tau", F_RATIO, 11},
	{"best measured plan", 0, "best_plan", F_WRAP, 44},
};

/* Rows per plan, then the summary and the planner table below; without a
 * host envelope, one row saying why the model is unvalidated. */
static void sheet_model(struct xw *x, lxw_worksheet *ws, json_t *f)
{
	json_t *mv = jget(f, "model_validation"), *e;
	write_head(x, ws, 0, 0, model_cols, NCOLS(model_cols));
	set_widths(x, ws, 0, model_cols, NCOLS(model_cols));
	size_t i, n = jlen(mv, "rows");
	json_array_foreach(jget(mv, "rows"), i, e)
		write_row(x, ws, (lxw_row_t)(1 + i), 0, model_cols, NCOLS(model_cols), &e);
	finish_sheet(x, ws, (lxw_row_t)n, 0, (lxw_col_t)NCOLS(model_cols) - 1);
	lxw_row_t r = (lxw_row_t)n + 2;
	put_str(x, ws, r, 0, "calibrated", x->head);
	put_json(x, ws, r++, 1, json_is_object(mv) ? jget(mv, "calibrated") : json_false(), F_TEXT,
		 NULL, NULL);
	if (!json_is_true(jget(mv, "calibrated"))) {
		put_str(x, ws, r, 0, "reason", x->head);
		put_str(x, ws, r, 1, json_is_object(mv) ? jstr(mv, "reason") : "no model validation in findings",
			x->fmt[F_TEXT]);
		return;
	}
	put_str(x, ws, r, 0, "median |ratio - 1|", x->head);
	put_json(x, ws, r++, 1, jget(mv, "median_abs_error"), F_RATIO, NULL, NULL);
	put_str(x, ws, r, 0, "worst |ratio - 1|", x->head);
	put_json(x, ws, r++, 1, jget(mv, "worst_abs_error"), F_RATIO, NULL, NULL);
	r++;
	write_head(x, ws, r++, 0, planner_cols, NCOLS(planner_cols));
	json_array_foreach(jget(mv, "planner"), i, e)
		write_row(x, ws, r++, 0, planner_cols, NCOLS(planner_cols), &e);
}

/* ---- Trend (only with a history) --------------------------------------------- */

static const struct col trend_cols[] = {
	{"run", 0, NULL, F_INT, 6},
	{"started (UTC)", 0, "started_utc", F_TEXT, 22},
	{"digest", 0, "digest", F_TEXT, 20},
	{"value", 0, "value", F_NUM, 14},
	{"CI low", 0, "lo", F_NUM, 14},
	{"CI high", 0, "hi", F_NUM, 14},
	{"verdict", 0, "verdict", F_TEXT, 22},
	{"change point", 0, "change", F_TEXT, 12},
};

/* The primary metric per comparable run (values in the series' unit: ns,
 * or per second for throughput) and a native line chart of it. */
static void sheet_trend(struct xw *x, lxw_worksheet *ws, json_t *t)
{
	json_t *pts = jget(t, "points"), *p;
	size_t i, n = json_array_size(pts);
	write_head(x, ws, 0, 0, trend_cols, NCOLS(trend_cols));
	set_widths(x, ws, 0, trend_cols, NCOLS(trend_cols));
	json_array_foreach(pts, i, p) {
		put_num(x, ws, (lxw_row_t)(1 + i), 0, (double)(i + 1), F_INT);
		write_row(x, ws, (lxw_row_t)(1 + i), 0, trend_cols, NCOLS(trend_cols), &p);
	}
	finish_sheet(x, ws, (lxw_row_t)n, 0, (lxw_col_t)NCOLS(trend_cols) - 1);
	lxw_row_t r = (lxw_row_t)n + 2;
	static const char *const keys[] = {"key.profile", "key.block", "key.variant", "key.metric", "unit",
					   "provenance", "key.host_class", "key.envelope", "key.model_revision",
					   "method", "apart_why"};
	for (size_t k = 0; k < NCOLS(keys); k++) {
		put_str(x, ws, r, 0, keys[k], x->head);
		put_str(x, ws, r++, 1, jstr(t, keys[k]) ? jstr(t, keys[k]) : "", x->fmt[F_TEXT]);
	}
	put_str(x, ws, r, 0, "runs kept apart", x->head);
	put_json(x, ws, r++, 1, jget(t, "apart"), F_INT, NULL, NULL);
	if (!n)
		return;
	char title[160];
	snprintf(title, sizeof title, "%s %s %s over runs", jstr(t, "key.block") ? jstr(t, "key.block") : "",
		 jstr(t, "key.variant") ? jstr(t, "key.variant") : "", jstr(t, "key.metric") ? jstr(t, "key.metric") : "");
	lxw_chart *ch = new_chart(x, LXW_CHART_LINE, title, "run (oldest first)", jstr(t, "unit"));
	if (!ch)
		return;
	lxw_chart_series *sv = add_series(x, ch, "value", "Trend", 1, (lxw_row_t)n, 0, 3);
	add_series(x, ch, "CI low", "Trend", 1, (lxw_row_t)n, 0, 4);
	add_series(x, ch, "CI high", "Trend", 1, (lxw_row_t)n, 0, 5);
	if (sv)
		chart_series_set_marker_type(sv, LXW_CHART_MARKER_CIRCLE);
	insert_chart(x, ws, ch, r + 1, 0);
}

/* ---- the workbook --------------------------------------------------------------- */

static lxw_format *new_format(struct xw *x, const char *num, int wrap)
{
	lxw_format *fm = workbook_add_format(x->wb);
	if (!fm) {
		note(x, LXW_ERROR_MEMORY_MALLOC_FAILED);
		return NULL;
	}
	if (num)
		format_set_num_format(fm, num);
	if (wrap)
		format_set_text_wrap(fm);
	format_set_align(fm, LXW_ALIGN_VERTICAL_TOP);
	return fm;
}

static lxw_format *status_format(struct xw *x, lxw_color_t bg, lxw_color_t fg)
{
	lxw_format *fm = new_format(x, NULL, 0);
	if (fm) {
		format_set_bg_color(fm, bg);
		format_set_font_color(fm, fg);
	}
	return fm;
}

static void add_formats(struct xw *x)
{
	static const char *const num[NFMT] = {
		[F_NS] = "#,##0", [F_US] = "#,##0.000", [F_RATIO] = "0.000", [F_BYTES] = "#,##0",
		[F_COUNT] = "#,##0", [F_INT] = "0", [F_NUM] = "#,##0.000", [F_SCI] = "0.00E+00",
		[F_RPS] = "#,##0.0"};
	for (int i = 0; i < NFMT; i++)
		x->fmt[i] = new_format(x, num[i], i == F_WRAP);
	x->head = new_format(x, NULL, 1);
	if (x->head) {
		format_set_bold(x->head);
		format_set_bottom(x->head, LXW_BORDER_THIN);
		format_set_bg_color(x->head, 0xD9E1F2);
	}
	/* Excel's "good / neutral / bad" fills */
	x->pass = status_format(x, 0xC6EFCE, 0x006100);
	x->warn = status_format(x, 0xFFEB9C, 0x9C5700);
	x->fail = status_format(x, 0xFFC7CE, 0x9C0006);
}

static const char *const sheet_names[] = {"Summary", "Findings", "Worksheet", "Validation",
					  "Pipeline", "Samples", "Counters", "Environment", "Model"};

/* Creates the temporary file tmp beside the output (mode 0666 less the umask,
 * as a plain fopen would), so that a directory that cannot take it fails
 * here with errno rather than inside libxlsxwriter. */
static int make_temp(const char *tmp, const char *path, struct opr_error *err)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0)
		return opr_error_set(err, OPR_EIO, "cannot create workbook '%s': %s", path, strerror(errno));
	close(fd);
	return 0;
}

/* fsync(tmp) then rename(tmp, path). */
static int commit_temp(const char *tmp, const char *path, struct opr_error *err)
{
	int fd = open(tmp, O_RDONLY);
	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return opr_error_set(err, OPR_EIO, "cannot sync workbook '%s': %s", path, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) != 0)
		return opr_error_set(err, OPR_EIO, "cannot rename workbook to '%s': %s", path,
				     strerror(errno));
	return 0;
}

/* workbook_close with libxlsxwriter's own stderr lines silenced: on a failed
 * write it prints two or three lines and returns a zip error code that no
 * longer says why. The cause is errno as the failed write left it (the
 * library reads it the same way for its "System error" line), else the file
 * system's free space: the caller then reports one line with the cause. */
static lxw_error close_quietly(lxw_workbook *wb, const char *tmp, int *cause)
{
	fflush(stderr);
	int saved = dup(2);
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (saved >= 0 && devnull >= 0)
		dup2(devnull, 2);
	errno = 0;
	lxw_error e = workbook_close(wb);
	int c = errno;
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (devnull >= 0)
		close(devnull);
	if (e != LXW_NO_ERROR && !c) {
		struct statvfs vfs;
		char dir[OPR_PATH_MAX];
		snprintf(dir, sizeof dir, "%s", tmp);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		if (!statvfs(slash ? dir : ".", &vfs) && vfs.f_bavail == 0)
			c = ENOSPC;
	}
	*cause = c;
	return e;
}

int rep_xlsx(json_t *findings, const char *samples_csv, const char *path, time_t created,
	     struct opr_error *err)
{
	if (!json_is_object(findings))
		return opr_error_set(err, OPR_EINPUT, "findings: expected an object");
	json_t *ver = json_object_get(findings, "findings_version");
	if (!json_is_integer(ver) || json_integer_value(ver) != 1)
		return opr_error_set(err, OPR_EINPUT, "findings: unsupported 'findings_version' (expected 1)");
	if (!path || !*path)
		return opr_error_set(err, OPR_EUSAGE, "xlsx: no output path");

	size_t tlen = strlen(path) + 32;
	char *tmp = malloc(tlen);
	if (!tmp)
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing workbook '%s'", path);
	snprintf(tmp, tlen, "%s.tmp-%ld", path, (long)getpid());
	int rc = make_temp(tmp, path, err);
	if (rc) {
		free(tmp);
		return rc;
	}

	struct xw x = {.lerr = LXW_NO_ERROR};
	x.wb = workbook_new(tmp);
	if (!x.wb) {
		rc = opr_error_set(err, OPR_ENOMEM, "cannot create workbook '%s'", path);
		goto out;
	}
	lxw_doc_properties props = {
		.title = "opreview review packet",
		.subject = (char *)(jstr(findings, "verdict") ? jstr(findings, "verdict") : ""),
		.author = "opreview " OPR_VERSION,
		.comments = "stored values; every unavailable value is an empty cell",
		.created = created,
	};
	note(&x, workbook_set_properties(x.wb, &props));
	add_formats(&x);
	lxw_worksheet *ws[NCOLS(sheet_names)];
	for (size_t i = 0; i < NCOLS(sheet_names); i++) {
		ws[i] = workbook_add_worksheet(x.wb, sheet_names[i]);
		if (!ws[i])
			note(&x, LXW_ERROR_MEMORY_MALLOC_FAILED);
	}
	json_t *trend = json_object_get(findings, "trend");
	lxw_worksheet *tws = json_is_object(trend) ? workbook_add_worksheet(x.wb, "Trend") : NULL;
	if (json_is_object(trend) && !tws)
		note(&x, LXW_ERROR_MEMORY_MALLOC_FAILED);
	if (x.lerr != LXW_NO_ERROR)
		goto lxw_fail;

	size_t written = 0, dropped = 0;
	rc = sheet_samples(&x, ws[5], samples_csv, &written, &dropped, err);
	if (rc) {
		lxw_workbook_free(x.wb);
		goto out;
	}
	sheet_summary(&x, ws[0], findings, written, dropped);
	sheet_findings(&x, ws[1], findings);
	sheet_worksheet(&x, ws[2], findings);
	sheet_validation(&x, ws[3], findings);
	sheet_pipeline(&x, ws[4], findings);
	sheet_counters(&x, ws[6], findings);
	sheet_environment(&x, ws[7], findings);
	sheet_model(&x, ws[8], findings);
	if (tws)
		sheet_trend(&x, tws, trend);
	if (x.lerr != LXW_NO_ERROR)
		goto lxw_fail;

	int cause = 0;
	lxw_error e = close_quietly(x.wb, tmp, &cause); /* frees the workbook */
	if (e != LXW_NO_ERROR && cause)
		rc = opr_error_set(err, OPR_EIO, "cannot write workbook '%s': %s", path, strerror(cause));
	else if (e != LXW_NO_ERROR)
		rc = opr_error_set(err, OPR_EIO, "cannot write workbook '%s': %s", path, lxw_strerror(e));
	else
		rc = commit_temp(tmp, path, err);
	goto out;

lxw_fail:
	lxw_workbook_free(x.wb);
	if (x.lerr == LXW_ERROR_MEMORY_MALLOC_FAILED)
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory building workbook '%s'", path);
	else
		rc = opr_error_set(err, OPR_EINTERNAL, "cannot build workbook '%s': %s", path,
				   lxw_strerror(x.lerr));
out:
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}
