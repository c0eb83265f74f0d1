/* report/svg.c: the HTML page's charts as inline SVG written directly (real
 * <text>, viewBox, fixed number formatting so output is deterministic): latency
 * percentiles with CI whiskers, queue-wait histograms, rooflines against the
 * envelope and fusion before/after bars. Inputs are findings.json values. */
#include "template.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 640.0
#define H 360.0
#define ML 72.0  /* left margin: y tick labels and axis title */
#define MR 20.0
#define MT 44.0  /* top: chart title and legend */
#define MB 56.0  /* bottom: x tick labels and axis title */
#define BASE_COLOR "#4c72b0"
#define CAND_COLOR "#dd8452"

struct chart {
	struct rep_buf *b;
	int id;          /* figure number, for unique element ids */
	double x0, x1;   /* data range (log10 of it when log) */
	double y0, y1;
	int xlog, ylog;
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

/* Text for XML content and attributes. */
static void xml(struct rep_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': rep_buf_puts(b, "&amp;"); break;
		case '<': rep_buf_puts(b, "&lt;"); break;
		case '>': rep_buf_puts(b, "&gt;"); break;
		case '"': rep_buf_puts(b, "&quot;"); break;
		case '\'': rep_buf_puts(b, "&#39;"); break;
		default: rep_buf_add(b, s, 1);
		}
	}
}

static double px(const struct chart *c, double x)
{
	double v = c->xlog ? log10(x) : x;
	return ML + (v - c->x0) / (c->x1 - c->x0) * (W - ML - MR);
}

static double py(const struct chart *c, double y)
{
	double v = c->ylog ? log10(y) : y;
	return H - MB - (v - c->y0) / (c->y1 - c->y0) * (H - MT - MB);
}

/* Tick step 1, 2 or 5 x 10^k giving about five ticks over span. */
static double nice_step(double span)
{
	double raw = span / 5.0, p = pow(10.0, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}

static void tick_label(char *t, size_t n, double v)
{
	if (fabs(v) >= 1e6)
		snprintf(t, n, "%.4gM", v / 1e6);
	else if (fabs(v) >= 1e4)
		snprintf(t, n, "%.4gk", v / 1e3);
	else if (v != 0 && fabs(v) < 1e-2)
		snprintf(t, n, "%.0e", v);
	else if (v == floor(v))
		snprintf(t, n, "%.0f", v);
	else
		snprintf(t, n, "%.2g", v);
}

static void open_svg(struct chart *c, const char *title, const char *desc)
{
	struct rep_buf *b = c->b;
	rep_buf_printf(b, "<figure class=\"chart\" id=\"chart-%d\">\n", c->id);
	rep_buf_printf(b, "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-labelledby=\"chart-%d-t chart-%d-d\" "
		       "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, c->id, c->id);
	rep_buf_printf(b, "<title id=\"chart-%d-t\">", c->id);
	xml(b, title);
	rep_buf_printf(b, "</title>\n<desc id=\"chart-%d-d\">", c->id);
	xml(b, desc);
	rep_buf_puts(b, "</desc>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
	rep_buf_printf(b, "<text x=\"%.1f\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">",
		       W / 2);
	xml(b, title);
	rep_buf_puts(b, "</text>\n");
}

static void close_svg(struct chart *c, const char *caption)
{
	rep_buf_puts(c->b, "</svg>\n<figcaption>");
	xml(c->b, caption);
	rep_buf_puts(c->b, "</figcaption>\n</figure>\n");
}

static void text_at(struct rep_buf *b, double x, double y, const char *anchor, const char *s)
{
	rep_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
	xml(b, s);
	rep_buf_puts(b, "</text>\n");
}

static void legend(struct chart *c, const char *const *names, const char *const *colors, int n)
{
	double x = W - MR - 130.0 * n;
	for (int i = 0; i < n; i++, x += 130.0) {
		rep_buf_printf(c->b, "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", x,
			       colors[i]);
		text_at(c->b, x + 16, 38, "start", names[i]);
	}
}

/* Frame, y ticks (linear or decades) and axis titles; x ticks are the
 * caller's when categorical (xcat), else drawn here. */
static void axes(struct chart *c, const char *xtitle, const char *ytitle, int xcat)
{
	struct rep_buf *b = c->b;
	char t[32];
	rep_buf_printf(b, "<g stroke=\"#888\" stroke-width=\"1\" fill=\"none\"><path d=\"M%.1f %.1fV%.1fH%.1f\"/></g>\n",
		       ML, MT, H - MB, W - MR);
	for (int axis = 0; axis < 2; axis++) {
		int lg = axis ? c->ylog : c->xlog;
		double lo = axis ? c->y0 : c->x0, hi = axis ? c->y1 : c->x1;
		if (axis == 0 && xcat)
			continue;
		double step = lg ? 1.0 : nice_step(hi - lo);
		for (double v = ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step) {
			double val = lg ? pow(10.0, v) : v;
			tick_label(t, sizeof t, fabs(val) < 1e-12 ? 0.0 : val);
			if (axis) {
				double y = py(c, val);
				rep_buf_printf(b, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#e0e0e0\"/>\n", ML, y, W - MR);
				text_at(b, ML - 6, y + 4, "end", t);
			} else {
				double x = px(c, val);
				rep_buf_printf(b, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#e0e0e0\"/>\n", x, MT, H - MB);
				text_at(b, x, H - MB + 16, "middle", t);
			}
		}
	}
	text_at(b, ML + (W - ML - MR) / 2, H - 12, "middle", xtitle);
	rep_buf_printf(b, "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">",
		       MT + (H - MT - MB) / 2, MT + (H - MT - MB) / 2);
	xml(b, ytitle);
	rep_buf_puts(b, "</text>\n");
}

static json_t *variant_of(json_t *block, const char *name)
{
	json_t *v;
	size_t i;
	json_array_foreach(get(block, "variants"), i, v)
		if (!strcmp(str(v, "variant"), name))
			return v;
	return NULL;
}

static const char *const VNAMES[2] = { "baseline", "candidate" };
static const char *const VCOLORS[2] = { BASE_COLOR, CAND_COLOR };

/* (a) host latency quantiles with bootstrap CI whiskers, both variants. */
static void chart_latency(struct rep_buf *b, int id, json_t *blk)
{
	static const char *const qs[] = { "p50", "p90", "p95", "p99" };
	json_t *v[2] = { variant_of(blk, "baseline"), variant_of(blk, "candidate") };
	double top = 0;
	for (int k = 0; k < 2; k++)
		for (int q = 0; q < 4; q++) {
			json_t *x = get(get(v[k], "latency"), qs[q]);
			double hi = num(x, "hi_ns"), val = isfinite(hi) ? hi : num(x, "value_ns");
			if (isfinite(val))
				top = fmax(top, val / 1e3);
		}
	if (!(top > 0))
		top = 1;
	struct chart c = { b, id, 0, 4, 0, 0, 0, 0 };
	double step = nice_step(top * 1.1);
	c.y1 = ceil(top * 1.1 / step) * step;
	char title[256], desc[512];
	snprintf(title, sizeof title, "%s: host latency percentiles", str(blk, "name"));
	snprintf(desc, sizeof desc, "Bars: p50, p90, p95 and p99 of host latency in microseconds for "
		 "baseline and candidate; whiskers: distribution-free 95%% confidence intervals; a hatched "
		 "outline marks a percentile without a CI.");
	open_svg(&c, title, desc);
	axes(&c, "percentile", "latency (us)", 1);
	legend(&c, VNAMES, VCOLORS, 2);
	for (int q = 0; q < 4; q++) {
		double xc = px(&c, q + 0.5);
		text_at(b, xc, H - MB + 16, "middle", qs[q]);
		for (int k = 0; k < 2; k++) {
			json_t *x = get(get(v[k], "latency"), qs[q]);
			double val = num(x, "value_ns") / 1e3;
			if (!isfinite(val))
				continue;
			double bw = (W - ML - MR) / 4 * 0.3, x0 = xc - bw + k * bw;
			int avail = json_is_true(get(x, "available"));
			rep_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s>"
				       "<title>%s %s: %.1f us%s</title></rect>\n",
				       x0, py(&c, val), bw - 2, py(&c, 0) - py(&c, val),
				       avail ? VCOLORS[k] : "none",
				       avail ? "" : " stroke-dasharray=\"4 2\" stroke=\"#555\"", VNAMES[k], qs[q], val,
				       avail ? "" : " (no CI: not enough samples)");
			double lo = num(x, "lo_ns") / 1e3, hi = num(x, "hi_ns") / 1e3;
			if (avail && isfinite(lo) && isfinite(hi)) {
				double xm = x0 + (bw - 2) / 2;
				rep_buf_printf(b, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
					       "stroke=\"#222\" stroke-width=\"1.5\"/>\n",
					       xm, py(&c, lo), py(&c, hi), xm - 5, py(&c, lo), xm + 5, xm - 5,
					       py(&c, hi), xm + 5);
			}
		}
	}
	close_svg(&c, "Host latency percentiles, baseline vs candidate, with distribution-free (binomial order-statistic) 95% CIs.");
}

/* (b) queue-wait histogram of the pipeline simulation, both variants. */
static void chart_wait_hist(struct rep_buf *b, int id, json_t *blk)
{
	json_t *h[2];
	size_t nb = 0;
	double top = 0;
	for (int k = 0; k < 2; k++) {
		h[k] = get(get(variant_of(blk, VNAMES[k]), "pipeline"), "wait_hist");
		json_t *counts = get(h[k], "counts");
		if (!nb || json_array_size(counts) < nb)
			nb = json_array_size(counts);
		for (size_t i = 0; i < json_array_size(counts); i++)
			top = fmax(top, json_number_value(json_array_get(counts, i)));
	}
	json_t *edges = get(h[0], "edges_us");
	if (json_array_size(edges) < nb + 1)
		nb = json_array_size(edges) ? json_array_size(edges) - 1 : 0;
	if (!(top > 0))
		top = 1;
	struct chart c = { b, id, 0, nb ? (double)nb : 1, 0, 0, 0, 0 };
	double step = nice_step(top * 1.1);
	c.y1 = ceil(top * 1.1 / step) * step;
	char title[256], t[64];
	snprintf(title, sizeof title, "%s: queue-wait histogram", str(blk, "name"));
	open_svg(&c, title, "Requests per queue-wait bin of the scheduling pipeline simulation, "
		 "baseline and candidate side by side.");
	axes(&c, "queue wait (us, bin lower edge)", "requests", 1);
	legend(&c, VNAMES, VCOLORS, 2);
	double bw = (W - ML - MR) / (nb ? (double)nb : 1) * 0.4;
	for (size_t i = 0; i < nb; i++) {
		double xc = px(&c, (double)i + 0.5);
		/* about eight labels, so they never overlap */
		if (i % (nb / 8 + 1) == 0) {
			snprintf(t, sizeof t, "%.0f", json_number_value(json_array_get(edges, i)));
			text_at(b, px(&c, (double)i), H - MB + 16, "middle", t);
		}
		for (int k = 0; k < 2; k++) {
			double n = json_number_value(json_array_get(get(h[k], "counts"), i));
			rep_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
				       "<title>%s: %.0f requests</title></rect>\n",
				       xc - bw + k * bw, py(&c, n), bw - 1, py(&c, 0) - py(&c, n), VCOLORS[k],
				       VNAMES[k], n);
		}
	}
	if (nb) {
		snprintf(t, sizeof t, "%.0f", json_number_value(json_array_get(edges, nb)));
		text_at(b, px(&c, (double)nb), H - MB + 16, "middle", t);
	}
	close_svg(&c, "Queue-wait distribution (pipeline simulation): a heavier right tail means more queueing delay.");
}

/* compute_tops key of a block's dtype: integer types use the int8 roof. */
static const char *tops_key(const char *dtype)
{
	if (!strcmp(dtype, "fp16") || !strcmp(dtype, "bf16") || !strcmp(dtype, "fp32"))
		return dtype;
	return "int8";
}

/* (c) roofline (Williams, Waterman & Patterson 2009): attainable =
 * min(compute roof, bandwidth x intensity); intensity I = 2 MACs / GLOBAL
 * bytes (ops/byte); TOPS at I = bw_gbps x I / 1000; achieved = 2 MACs /
 * model_ns / 1000 TOPS. */
static void chart_roofline(struct rep_buf *b, int id, json_t *blk, json_t *env)
{
	double roof = num(get(env, "compute_tops"), tops_key(str(blk, "dtype")));
	double bw = num(env, "global_bandwidth_gbps");
	double ix[2] = { NAN, NAN }, ay[2] = { NAN, NAN };
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY;
	for (int k = 0; k < 2; k++) {
		json_t *v = variant_of(blk, VNAMES[k]);
		double macs = num(v, "macs"), gb = num(v, "global_bytes"), t = num(v, "model_ns");
		if (gb > 0 && t > 0 && macs > 0) {
			ix[k] = 2 * macs / gb;
			ay[k] = 2 * macs / t / 1000.0;
			xmin = fmin(xmin, ix[k]);
			xmax = fmax(xmax, ix[k]);
			ymin = fmin(ymin, ay[k]);
		}
	}
	char title[256];
	snprintf(title, sizeof title, "%s: roofline (%s)", str(blk, "name"), str(blk, "dtype"));
	if (!(roof > 0) || !(bw > 0) || !isfinite(xmin)) {
		struct chart c = { b, id, 0, 1, 0, 1, 0, 0 };
		open_svg(&c, title, "Roofline unavailable: the envelope or the block lacks MACs, bytes or time.");
		text_at(b, W / 2, H / 2, "middle", "roofline unavailable: missing envelope or counters");
		close_svg(&c, "Roofline unavailable.");
		return;
	}
	double ridge = roof * 1000.0 / bw;
	xmin = fmin(xmin, ridge);
	xmax = fmax(xmax, ridge);
	struct chart c = { b, id, floor(log10(xmin / 4)), ceil(log10(xmax * 4)), 0, 0, 1, 1 };
	double ylo = fmin(ymin, bw * pow(10.0, c.x0) / 1000.0);
	c.y0 = floor(log10(ylo));
	c.y1 = ceil(log10(roof * 2));
	if (c.y1 <= c.y0)
		c.y1 = c.y0 + 1;
	char desc[512];
	snprintf(desc, sizeof desc, "Log-log roofline of the envelope: compute roof %.1f TOPS, GLOBAL "
		 "bandwidth roof %.1f GB/s, ridge at %.1f ops/byte; points: baseline and candidate at "
		 "their arithmetic intensity and modelled throughput.", roof, bw, ridge);
	open_svg(&c, title, desc);
	axes(&c, "arithmetic intensity (ops per GLOBAL byte, log)", "attainable TOPS (log)", 0);
	legend(&c, VNAMES, VCOLORS, 2);
	double xl = pow(10.0, c.x0), xr = pow(10.0, c.x1);
	rep_buf_printf(b, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1f\" fill=\"none\" stroke=\"#333\" "
		       "stroke-width=\"2\"/>\n", px(&c, xl), py(&c, bw * xl / 1000.0), px(&c, ridge),
		       py(&c, roof), px(&c, xr), py(&c, roof));
	char t[128];
	snprintf(t, sizeof t, "compute roof %.1f TOPS", roof);
	text_at(b, px(&c, xr) - 4, py(&c, roof) - 6, "end", t);
	snprintf(t, sizeof t, "GLOBAL %.0f GB/s", bw);
	text_at(b, px(&c, xl) + 6, py(&c, bw * xl / 1000.0) - 8, "start", t);
	for (int k = 0; k < 2; k++) {
		if (!isfinite(ix[k]))
			continue;
		rep_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"#222\">"
			       "<title>%s: %.1f ops/byte, %.3f TOPS</title></circle>\n",
			       px(&c, ix[k]), py(&c, ay[k]), VCOLORS[k], VNAMES[k], ix[k], ay[k]);
	}
	close_svg(&c, "Roofline: distance below the roof is headroom; left of the ridge the block is bandwidth-limited.");
}

/* (d) fusion before/after: candidate / baseline for GLOBAL bytes, launches
 * and pipeline p95, per block; baseline = 1. */
static void chart_fusion(struct rep_buf *b, int id, json_t *blocks)
{
	static const char *const mnames[3] = { "GLOBAL bytes", "launches", "pipeline p95" };
	static const char *const mcolors[3] = { "#55a868", "#8172b2", "#c44e52" };
	size_t nb = json_array_size(blocks);
	double r[64][3], top = 1.0;
	if (nb > 64)
		nb = 64;
	for (size_t i = 0; i < nb; i++) {
		json_t *blk = json_array_get(blocks, i);
		json_t *bv = variant_of(blk, "baseline"), *cv = variant_of(blk, "candidate");
		r[i][0] = num(cv, "global_bytes") / num(bv, "global_bytes");
		r[i][1] = num(cv, "launches") / num(bv, "launches");
		r[i][2] = num(get(cv, "pipeline"), "p95_us") / num(get(bv, "pipeline"), "p95_us");
		for (int m = 0; m < 3; m++)
			if (isfinite(r[i][m]))
				top = fmax(top, r[i][m]);
	}
	struct chart c = { b, id, 0, nb ? (double)nb : 1, 0, 0, 0, 0 };
	double step = nice_step(top * 1.15);
	c.y1 = ceil(top * 1.15 / step) * step;
	open_svg(&c, "Fusion before/after (candidate / baseline)",
		 "Per block, candidate divided by baseline for GLOBAL bytes, launches and simulated "
		 "pipeline p95; the line at 1 is the baseline; below 1 is better.");
	axes(&c, "block", "candidate / baseline", 1);
	legend(&c, mnames, mcolors, 3);
	rep_buf_printf(b, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#222\" stroke-dasharray=\"6 3\"/>\n", ML,
		       py(&c, 1.0), W - MR);
	double bw = (W - ML - MR) / (nb ? (double)nb : 1) * 0.25;
	char t[64];
	for (size_t i = 0; i < nb; i++) {
		double xc = px(&c, (double)i + 0.5);
		text_at(b, xc, H - MB + 16, "middle", str(json_array_get(blocks, i), "name"));
		for (int m = 0; m < 3; m++) {
			if (!isfinite(r[i][m]))
				continue;
			double x0 = xc - 1.5 * bw + m * bw;
			rep_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
				       "<title>%s: x%.3f</title></rect>\n",
				       x0, py(&c, r[i][m]), bw - 2, py(&c, 0) - py(&c, r[i][m]), mcolors[m],
				       mnames[m], r[i][m]);
			snprintf(t, sizeof t, "%.2f", r[i][m]);
			text_at(b, x0 + (bw - 2) / 2, py(&c, r[i][m]) - 4, "middle", t);
		}
	}
	close_svg(&c, "Fusion effect: fewer launches and less GLOBAL traffic do not guarantee a better tail.");
}

/* (e) model validation: modelled against measured time per plan, log-log,
 * with the line y = x (a perfect model) and the +-30% band around it. */
static void chart_model(struct rep_buf *b, int id, json_t *mv)
{
	json_t *rows = get(mv, "rows"), *r;
	double lo = INFINITY, hi = -INFINITY;
	size_t i;
	json_array_foreach(rows, i, r) {
		double m = num(r, "model_ns") / 1e3, t = num(r, "measured_ns") / 1e3;
		if (m > 0 && t > 0 && isfinite(m) && isfinite(t)) {
			lo = fmin(lo, fmin(m, t));
			hi = fmax(hi, fmax(m, t));
		}
	}
	if (!isfinite(lo))
		return;
	struct chart c = { b, id, floor(log10(lo / 1.5)), ceil(log10(hi * 1.5)), 0, 0, 1, 1 };
	if (c.x1 <= c.x0)
		c.x1 = c.x0 + 1;
	c.y0 = c.x0;
	c.y1 = c.x1;
	open_svg(&c, "Model validation: modelled vs measured time",
		 "Log-log scatter of each plan's modelled time against its measured host time; "
		 "the diagonal is a perfect model, the dashed lines are +-30%; points below the "
		 "diagonal are plans the model thinks faster than they are.");
	axes(&c, "measured host time (us, log)", "modelled time (us, log)", 0);
	legend(&c, VNAMES, VCOLORS, 2);
	double e0 = pow(10.0, c.x0), e1 = pow(10.0, c.x1);
	rep_buf_printf(b, "<path d=\"M%.1f %.1fL%.1f %.1f\" stroke=\"#222\" stroke-width=\"1.5\"/>\n",
		       px(&c, e0), py(&c, e0), px(&c, e1), py(&c, e1));
	for (int k = 0; k < 2; k++) {
		double f = k ? 1.3 : 0.7, a = e0, z = e1;
		if (f > 1)
			z = e1 / f;
		else
			a = e0 / f;
		rep_buf_printf(b, "<path d=\"M%.1f %.1fL%.1f %.1f\" stroke=\"#888\" stroke-dasharray=\"5 3\"/>\n",
			       px(&c, a), py(&c, a * f), px(&c, z), py(&c, z * f));
	}
	json_array_foreach(rows, i, r) {
		double m = num(r, "model_ns") / 1e3, t = num(r, "measured_ns") / 1e3;
		if (!(m > 0 && t > 0 && isfinite(m) && isfinite(t)))
			continue;
		int cand = !strcmp(str(r, "variant"), "candidate");
		int ran = json_is_null(get(r, "alternative"));
		rep_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" fill-opacity=\"%s\" "
			       "stroke=\"#222\"><title>", px(&c, t), py(&c, m), ran ? 6 : 4, VCOLORS[cand],
			       ran ? "1" : "0.5");
		xml(b, str(r, "block"));
		rep_buf_printf(b, " %s: modelled %.1f us, measured %.1f us (x%.2f)</title></circle>\n",
			       VNAMES[cand], m, t, m / t);
	}
	close_svg(&c, "Model validation: large points are the plans each variant ran (run samples), "
		      "small ones the planner's alternatives timed briefly.");
}

/* (f) the primary metric over the history's comparable runs: points with CI
 * whiskers, the fitted levels of asv's step detection as a dashed line, and
 * a marker where a change point was found. */
static void chart_trend(struct rep_buf *b, int id, json_t *t)
{
	json_t *pts = get(t, "points"), *p;
	size_t n = json_array_size(pts), i;
	int rate = !strcmp(str(t, "unit"), "1/s");
	double scale = rate ? 1.0 : 1e3, top = 0, bot = INFINITY;
	json_array_foreach(pts, i, p) {
		double v = num(p, "value") / scale, hi = num(p, "hi") / scale, lo = num(p, "lo") / scale;
		/* a whisker far above the points would flatten them: clip at 3x */
		double cap = 3 * v;
		top = fmax(top, fmin(isfinite(hi) ? hi : v, cap));
		bot = fmin(bot, isfinite(lo) ? lo : v);
	}
	if (!(top > 0))
		top = 1;
	if (!isfinite(bot) || bot < 0)
		bot = 0;
	struct chart c = { b, id, 0.5, (double)n + 0.5, 0, 0, 0, 0 };
	double step = nice_step(top * 1.1);
	c.y1 = ceil(top * 1.1 / step) * step;
	json_t *k = get(t, "key");
	char title[256], desc[512], yt[64];
	snprintf(title, sizeof title, "Trend: %s %s %s", str(k, "block"), str(k, "variant"), str(k, "metric"));
	snprintf(desc, sizeof desc, "The primary metric over %zu comparable runs, oldest first, with 95%% "
		 "confidence intervals; dashed: the levels of asv's step detection; red rings: change points.", n);
	snprintf(yt, sizeof yt, "%s (%s)", str(k, "metric"), rate ? "per s" : "us");
	open_svg(&c, title, desc);
	axes(&c, "run (oldest first)", yt, 1);
	json_array_foreach(pts, i, p) {
		char lab[16];
		snprintf(lab, sizeof lab, "%zu", i + 1);
		text_at(b, px(&c, (double)i + 1), H - MB + 16, "middle", lab);
	}
	json_t *st;
	json_array_foreach(get(t, "steps"), i, st) {
		double lv = num(st, "level") / scale;
		json_int_t a = json_integer_value(get(st, "from")), z = json_integer_value(get(st, "to"));
		if (isfinite(lv) && lv <= c.y1)
			rep_buf_printf(b, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#888\" stroke-dasharray=\"6 3\"/>\n",
				       px(&c, (double)a + 0.6), py(&c, lv), px(&c, (double)z + 0.4));
	}
	json_array_foreach(pts, i, p) {
		double v = num(p, "value") / scale, lo = num(p, "lo") / scale, hi = num(p, "hi") / scale;
		double x = px(&c, (double)i + 1);
		if (!isfinite(v))
			continue;
		if (isfinite(lo) && isfinite(hi))
			rep_buf_printf(b, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"#222\"/>\n",
				       x, py(&c, lo), py(&c, fmin(hi, c.y1)), x - 4, py(&c, lo), x + 4, x - 4,
				       py(&c, fmin(hi, c.y1)), x + 4);
		int moved = json_is_true(get(p, "change"));
		rep_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>run %zu: %.1f%s</title></circle>\n",
			       x, py(&c, v), CAND_COLOR, i + 1, v, rate ? " per s" : " us");
		if (moved)
			rep_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"10\" fill=\"none\" stroke=\"#c00\" "
				       "stroke-width=\"2\"><title>change point</title></circle>\n", x, py(&c, v));
	}
	close_svg(&c, "Trend of the primary metric over the history's comparable runs (asv step detection).");
}

int rep_svg_charts(json_t *findings, char **html, int *ncharts, struct opr_error *err)
{
	struct rep_buf b = { 0 };
	json_t *blocks = get(findings, "blocks"), *env = get(findings, "envelope"), *blk;
	int id = 0;
	size_t i;
	rep_buf_puts(&b, "");
	json_array_foreach(blocks, i, blk)
		chart_latency(&b, ++id, blk);
	json_array_foreach(blocks, i, blk)
		chart_wait_hist(&b, ++id, blk);
	json_array_foreach(blocks, i, blk)
		chart_roofline(&b, ++id, blk, env);
	if (json_array_size(blocks))
		chart_fusion(&b, ++id, blocks);
	json_t *mv = get(findings, "model_validation");
	if (json_is_true(get(mv, "calibrated")) && json_array_size(get(mv, "rows")))
		chart_model(&b, ++id, mv);
	json_t *trend = get(findings, "trend");
	if (json_array_size(get(trend, "points")))
		chart_trend(&b, ++id, trend);
	char *s = rep_buf_take(&b);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	*html = s;
	*ncharts = id;
	return 0;
}
