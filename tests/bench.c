/* tests/bench.c: the `make bench` harness. Times opreview's operators on one
 * core against oneDNN and OpenBLAS on the same inputs, with the machine's FMA
 * peak and copy bandwidth measured in the same run, and writes the table to
 * out/bench.txt and out/bench.json. Times in ns; figures in 1e9 units/s. */
#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>
#include <oneapi/dnnl/dnnl.h>

#include "../ops/activation_int.h"
#include "../ops/isa_int.h"
#include "../ops/ops_int.h"
#include "../ops/qgemm_int.h"

#define SEED 20261130u
#define MAX_SAMPLES 256
#define MAX_ROWS 48
#define MIB ((size_t)1 << 20)

/* ---- timing ------------------------------------------------------------------ */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Median and p95 (nearest rank) of the timed repetitions; with them the
 * times in round order (rounds, NULL where not kept) and the bench_group
 * call they came from (group, 0: none), so that two items timed in one
 * group can be compared round by round. */
struct stats {
	double med_ns, p95_ns, min_ns;
	int reps;
	const double *rounds;
	int group;
};

/* Warm-up calls, then at least min_reps and at most max_reps timed calls,
 * stopping after min_reps once budget_s of timed calls have passed. */
struct timing {
	int warm, min_reps, max_reps;
	double budget_s;
};

/* One call of a benchmarked function; before runs untimed ahead of each call
 * (resets a device's counters, for instance). 0 or a negative opr_code. */
typedef int (*bench_fn)(void *ctx, struct opr_error *err);

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The round-ordered times of every group, kept for the paired ratios
 * (bench_group); 2 MiB, far more than the cases time. */
#define ROUND_POOL (1 << 18)
static double round_pool[ROUND_POOL];
static int round_used;

static const double *rounds_keep(const double *v, int n)
{
	if (n > ROUND_POOL - round_used)
		return NULL;
	double *d = round_pool + round_used;
	memcpy(d, v, sizeof *v * (size_t)n);
	round_used += n;
	return d;
}

static void stats_of(double *v, int n, struct stats *st)
{
	st->rounds = rounds_keep(v, n);
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	st->reps = n;
	st->min_ns = v[0];
	st->med_ns = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
	st->p95_ns = v[(int)ceil(0.95 * n) - 1];
}

/* One benchmarked function with its context. */
struct bench_item {
	bench_fn fn, before;
	void *ctx;
};

#define BENCH_MAX_ITEMS 12

/* Times n items interleaved: every round runs each item once, so load from
 * other processes falls on all of them alike and their ratios stay fair.
 * tm->warm untimed rounds first; then rounds until every item has min_reps
 * and the rounds took budget_s, or max_reps rounds. st[i] for item i. */
static int bench_group(const struct bench_item *it, int n, const struct timing *tm,
		       struct stats *st, struct opr_error *err)
{
	static double v[BENCH_MAX_ITEMS][MAX_SAMPLES];
	double spent = 0.0;
	int rounds = 0, rc, max = tm->max_reps < MAX_SAMPLES ? tm->max_reps : MAX_SAMPLES;

	if (n < 1 || n > BENCH_MAX_ITEMS)
		return opr_error_set(err, OPR_EINTERNAL, "bench group of %d items", n);
	for (int w = 0; w < tm->warm; w++)
		for (int i = 0; i < n; i++) {
			if (it[i].before && (rc = it[i].before(it[i].ctx, err)) < 0)
				return rc;
			if ((rc = it[i].fn(it[i].ctx, err)) < 0)
				return rc;
		}
	while (rounds < max && (rounds < tm->min_reps || spent < tm->budget_s * 1e9)) {
		for (int i = 0; i < n; i++) {
			if (it[i].before && (rc = it[i].before(it[i].ctx, err)) < 0)
				return rc;
			double t0 = now_ns();
			rc = it[i].fn(it[i].ctx, err);
			double t1 = now_ns();
			if (rc < 0)
				return rc;
			v[i][rounds] = t1 - t0;
			spent += t1 - t0;
		}
		rounds++;
	}
	static int groups;
	groups++;
	for (int i = 0; i < n; i++) {
		stats_of(v[i], rounds, &st[i]);
		st[i].group = groups;
	}
	return 0;
}

static int bench_time(bench_fn fn, bench_fn before, void *ctx, const struct timing *tm,
		      struct stats *st, struct opr_error *err)
{
	struct bench_item it = { fn, before, ctx };
	return bench_group(&it, 1, tm, st, err);
}

/* ---- the result table ----------------------------------------------------------- */

enum check {
	CHECK_NONE,     /* information only */
	CHECK_RATIO_GE, /* peer time / our time >= bound (throughput ratio) */
	CHECK_TIME_LE,  /* our median <= bound ns */
	CHECK_VALUE_LT, /* row.value < bound */
};

struct row {
	char name[48];
	struct stats ours;
	double work;            /* flops, bytes or ops of one call (0: no figure) */
	const char *unit;       /* of work / ns: "GFLOP/s", "GB/s", "GOPS" */
	int has_peer;
	char peer[40];
	struct stats peer_st;
	double peer_work;       /* 0: same as work */
	enum check check;
	double bound;
	double value;           /* CHECK_VALUE_LT */
	char target[40];
	int has_diff;
	double maxdiff;         /* max |ours - peer| (or - reference) */
	char note[400];
	int is_e2e;             /* an `opreview run`: rss_kib and exit_code set */
	long rss_kib;
	long exit_code;
};

static struct row rows[MAX_ROWS];
static int nrows;

/* A new zeroed row at the end of the table (owned by the table). */
static struct row *row_add(const char *name)
{
	if (nrows >= MAX_ROWS) {
		fprintf(stderr, "bench: too many rows\n");
		exit(1);
	}
	struct row *r = &rows[nrows++];
	memset(r, 0, sizeof *r);
	snprintf(r->name, sizeof r->name, "%s", name);
	return r;
}

/* The targets of the cases the host kernel path decides (issue 15): on the
 * AVX-512 path the new ones; on the AVX2 path of an AVX-512 host (OPREVIEW_ISA
 * =avx2) no ratio below what that path gave before the AVX-512 kernels
 * (conv 0.39, qgemm 0.42, gelu-tanh 0.81, silu 0.90 x onednn, relu 0.83,
 * permute 0.62 x memcpy); on an AVX2-only host the earlier targets; the
 * portable path has none (information only). */
enum tgt { TGT_CONV, TGT_QGEMM, TGT_GELU, TGT_SILU, TGT_RELU, TGT_PERMUTE, TGT_CONV_BF16,
	   TGT_FP16, TGT_N };
static const double TARGETS[3][TGT_N] = {
	/* avx512 */            { 1.0, 1.2, 1.0, 1.0, 0.95, 0.8, 1.0, 0.7 },
	/* avx2, avx512 host */ { 0.39, 0.42, 0.81, 0.90, 0.83, 0.62, 0, 0 },
	/* avx2-only host */    { 0.5, 0.5, 1.0, 1.0, 0.85, 0.4, 0, 0 },
};

static void row_target(struct row *r, enum tgt t, const char *peer)
{
	enum ops_isa isa = ops_isa_active();
	int set = isa == OPS_ISA_AVX512 ? 0 : isa != OPS_ISA_AVX2 ? -1
		  : ops_isa_host_has(OPS_ISA_AVX512) ? 1 : 2;
	double b = set < 0 ? 0.0 : TARGETS[set][t];

	if (b <= 0.0) {
		r->check = CHECK_NONE;
		return;
	}
	r->check = CHECK_RATIO_GE;
	r->bound = b;
	snprintf(r->target, sizeof r->target, ">= %.2f x %s", b, peer);
}

/* ours/peer throughput from the two times (work per ns each side; without
 * work figures, the inverse ratio of the times). */
static double ratio_of(const struct row *r, double ours_ns, double peer_ns)
{
	if (!r->has_peer || ours_ns <= 0 || peer_ns <= 0)
		return NAN;
	double pw = r->peer_work > 0 ? r->peer_work : r->work;
	if (r->work > 0 && pw > 0)
		return (r->work / ours_ns) / (pw / peer_ns);
	return peer_ns / ours_ns;
}

static double row_ratio(const struct row *r)
{
	return ratio_of(r, r->ours.med_ns, r->peer_st.med_ns);
}

/* The same ratio on the fastest repetitions: less sensitive to other load. */
static double row_ratio_min(const struct row *r)
{
	return ratio_of(r, r->ours.min_ns, r->peer_st.min_ns);
}

/* The ratio round by round, where ours and the peer ran in the same
 * rounds of one group: the median of the rounds' ratios and a 95%
 * confidence interval for it from the order statistics (ranks n/2 -+
 * 0.98 sqrt(n), distribution-free). Load that slows one round slows both
 * sides of it, which the ratio of the two medians does not see. Returns 0
 * where the two were not timed together (or too few rounds: n < 12). */
struct paired {
	double med, lo, hi;
	int n;
};

static int row_paired(const struct row *r, struct paired *pr)
{
	const struct stats *a = &r->ours, *b = &r->peer_st;
	int n = a->reps;

	if (!r->has_peer || !a->rounds || !b->rounds || !a->group || a->group != b->group ||
	    b->reps != n || n < 12)
		return 0;
	double *q = malloc(sizeof *q * (size_t)n);
	if (!q)
		return 0;
	for (int i = 0; i < n; i++)
		q[i] = ratio_of(r, a->rounds[i], b->rounds[i]);
	qsort(q, (size_t)n, sizeof *q, cmp_double);
	int lo = (int)floor(0.5 * n - 0.98 * sqrt((double)n)), hi = (int)ceil(0.5 * n + 0.98 * sqrt((double)n));
	pr->n = n;
	pr->med = n % 2 ? q[n / 2] : 0.5 * (q[n / 2 - 1] + q[n / 2]);
	pr->lo = q[lo < 0 ? 0 : lo];
	pr->hi = q[hi > n - 1 ? n - 1 : hi];
	free(q);
	return 1;
}

/* 1 PASS, 0 MISS, -1 no target. */
static int row_verdict(const struct row *r)
{
	switch (r->check) {
	case CHECK_RATIO_GE: {
		double q = row_ratio(r);
		return q >= r->bound;
	}
	case CHECK_TIME_LE:
		return r->ours.reps > 0 && r->ours.med_ns <= r->bound;
	case CHECK_VALUE_LT:
		return r->value < r->bound;
	case CHECK_NONE:
		break;
	}
	return -1;
}

static void fmt_fig(char *buf, size_t len, double work, const char *unit, double ns)
{
	if (work > 0 && ns > 0 && unit)
		snprintf(buf, len, "%.2f %s", work / ns, unit);
	else
		snprintf(buf, len, "-");
}

/* Relative spread of a timing, (p95 - median) / median, as the noise figure. */
static double spread(const struct stats *s)
{
	return s->med_ns > 0 ? (s->p95_ns - s->med_ns) / s->med_ns : 0.0;
}

static void print_table(FILE *f)
{
	fprintf(f, "%-30s %13s %13s  %-26s %13s %13s %16s %16s %9s  %-18s %-7s %10s\n",
		"case", "ours med ns", "ours p95 ns", "peer", "peer med ns", "peer p95 ns",
		"ours", "peer", "ours/peer", "target", "verdict", "max|diff|");
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		char of[32], pf[32], om[24], op[24], pm[24], pp[24], q[16], d[16];
		int v = row_verdict(r);

		/* a row with no timing (a peer unavailable here) shows none */
		snprintf(om, sizeof om, "-");
		snprintf(op, sizeof op, "-");
		if (r->ours.reps > 0) {
			snprintf(om, sizeof om, "%.0f", r->ours.med_ns);
			snprintf(op, sizeof op, "%.0f", r->ours.p95_ns);
		}

		fmt_fig(of, sizeof of, r->work, r->unit, r->ours.med_ns);
		if (r->has_peer) {
			fmt_fig(pf, sizeof pf, r->peer_work > 0 ? r->peer_work : r->work, r->unit,
				r->peer_st.med_ns);
			snprintf(pm, sizeof pm, "%.0f", r->peer_st.med_ns);
			snprintf(pp, sizeof pp, "%.0f", r->peer_st.p95_ns);
			/* a value-checked row shows its value there */
			snprintf(q, sizeof q, "%.4g",
				 r->check == CHECK_VALUE_LT ? r->value : row_ratio(r));
		} else {
			snprintf(pf, sizeof pf, "-");
			snprintf(pm, sizeof pm, "-");
			snprintf(pp, sizeof pp, "-");
			snprintf(q, sizeof q, "-");
		}
		if (r->has_diff)
			snprintf(d, sizeof d, "%.3g", r->maxdiff);
		else
			snprintf(d, sizeof d, "-");
		fprintf(f, "%-30s %13s %13s  %-26s %13s %13s %16s %16s %9s  %-18s %-7s %10s\n",
			r->name, om, op, r->has_peer ? r->peer : "-", pm, pp,
			of, pf, q, r->check == CHECK_NONE ? "-" : r->target,
			v < 0 ? "-" : v ? "PASS" : "MISS", d);
	}
	fprintf(f, "\nnotes (reps = timed repetitions; noise = (p95 - median) / median; peers "
		   "timed interleaved with ours, one call each per round):\n");
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		fprintf(f, "  %-30s reps %d, noise %.1f%%", r->name, r->ours.reps,
			100.0 * spread(&r->ours));
		if (r->has_peer && r->check == CHECK_VALUE_LT)
			fprintf(f, "; peer reps %d, noise %.1f%%; ours/peer time on min times %.4f",
				r->peer_st.reps, 100.0 * spread(&r->peer_st),
				r->ours.min_ns / r->peer_st.min_ns);
		else if (r->has_peer) {
			struct paired pr;

			fprintf(f, "; peer reps %d, noise %.1f%%; ratio on min times %.3f",
				r->peer_st.reps, 100.0 * spread(&r->peer_st), row_ratio_min(r));
			if (row_paired(r, &pr))
				fprintf(f, "; paired ratio %.3f, 95%% CI %.3f..%.3f (median of %d "
					   "rounds' ratios)", pr.med, pr.lo, pr.hi, pr.n);
		}
		fprintf(f, "%s%s\n", r->note[0] ? "; " : "", r->note);
	}
}

/* New JSON references, stolen by the object they are set into. */
static json_t *stats_json(const struct stats *s)
{
	return json_pack("{s:f, s:f, s:f, s:i}", "median_ns", s->med_ns, "p95_ns", s->p95_ns,
			 "min_ns", s->min_ns, "reps", s->reps);
}

/* JSON numbers cannot be NaN: absent values become null. */
static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int write_json(const char *path, json_t *meta)
{
	json_t *arr = json_array(), *root;
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		int v = row_verdict(r);
		json_t *o = json_object();
		json_object_set_new(o, "case", json_string(r->name));
		json_object_set_new(o, "ours", stats_json(&r->ours));
		json_object_set_new(o, "work", json_real(r->work));
		json_object_set_new(o, "unit", r->unit ? json_string(r->unit) : json_null());
		json_object_set_new(o, "figure", num_or_null(r->work > 0 && r->ours.med_ns > 0
							     ? r->work / r->ours.med_ns : NAN));
		if (r->has_peer) {
			double pw = r->peer_work > 0 ? r->peer_work : r->work;
			json_object_set_new(o, "peer_name", json_string(r->peer));
			json_object_set_new(o, "peer", stats_json(&r->peer_st));
			json_object_set_new(o, "peer_figure",
					    num_or_null(pw > 0 ? pw / r->peer_st.med_ns : NAN));
			json_object_set_new(o, "ratio", num_or_null(row_ratio(r)));
			json_object_set_new(o, "ratio_min", num_or_null(row_ratio_min(r)));
			struct paired pr;

			if (row_paired(r, &pr))
				json_object_set_new(o, "paired_ratio",
						    json_pack("{s:f, s:f, s:f, s:i}", "median", pr.med,
							      "ci95_lo", pr.lo, "ci95_hi", pr.hi,
							      "rounds", pr.n));
		}
		if (r->check != CHECK_NONE) {
			json_object_set_new(o, "target", json_string(r->target));
			json_object_set_new(o, "pass", json_boolean(v == 1));
		}
		if (r->check == CHECK_VALUE_LT)
			json_object_set_new(o, "value", num_or_null(r->value));
		if (r->has_diff)
			json_object_set_new(o, "max_abs_diff", num_or_null(r->maxdiff));
		if (r->is_e2e) {
			json_object_set_new(o, "wall_s", json_real(r->ours.med_ns / 1e9));
			json_object_set_new(o, "peak_rss_kib", json_integer(r->rss_kib));
			json_object_set_new(o, "exit", json_integer(r->exit_code));
		}
		json_object_set_new(o, "note", json_string(r->note));
		json_array_append_new(arr, o);
	}
	root = json_pack("{s:o, s:o}", "machine", meta, "cases", arr);
	int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(root);
	return rc;
}

/* ---- shared helpers -------------------------------------------------------------- */

/* The reference envelope npu-a of fixtures/envelopes/npu-a.yaml: the plans the
 * planner picks for it are the plans opreview runs by default. */
static void bench_envelope(struct ops_envelope *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "npu-a");
	snprintf(e->power_mode, sizeof e->power_mode, "nominal");
	e->clock_ghz = 1.2;
	e->clock_scale = 1.0;
	e->cores = 8;
	e->global_bw_gbps = 900;
	e->global_capacity_gib = 32;
	e->shared_capacity_kib = 256;
	e->shared_bw_gbps = 4096;
	e->local_capacity_kib = 64;
	e->dma_max_last_dim = 65535;
	e->dma_setup_ns = 150;
	e->dma_engines = 2;
	e->tops[OPS_F32] = 16;
	e->tops[OPS_F16] = 128;
	e->tops[OPS_BF16] = 128;
	e->tops[OPS_S8] = 256;
	e->tops[OPS_U8] = 256;
	e->tops[OPS_S32] = 256;
	e->launch_overhead_us = 3.5;
}

static struct ops_envelope env;

/* 64-byte aligned, touched (so page faults are not timed); caller frees. */
static void *big_alloc(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
	if (p)
		memset(p, 0x3c, bytes);
	return p;
}

static double max_abs_diff_f32(const float *a, const float *b, size_t n)
{
	double m = 0.0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);
		if (!(d <= m)) /* NaN propagates as infinity */
			m = isnan(d) ? INFINITY : d;
	}
	return m;
}

/* An opreview operator call: the group's run on a real device, i.e.
 * ops_instance_run without the output poisoning (a harness check of the
 * tests, a memset of the whole output that is not part of the operator). */
struct op_run {
	struct ops_device *dev;
	struct ops_instance *inst;
	const struct ops_group_impl *impl;
};

static int op_before(void *ctx, struct opr_error *err)
{
	(void)err;
	ops_device_reset(((struct op_run *)ctx)->dev);
	return 0;
}

static int op_call(void *ctx, struct opr_error *err)
{
	struct op_run *r = ctx;
	return r->impl->run(r->dev, r->inst, err);
}

/* Prepares an instance under plan (NULL: the planner's choice for env, as
 * `opreview run` with plan: auto), runs it once through ops_instance_run
 * (outputs poisoned first) and returns it in *r with a real device. */
static int op_setup(const struct ops_workload *w, const struct ops_plan *plan,
		    const char *block, struct op_run *r, char *desc, size_t desc_len,
		    struct opr_error *err)
{
	struct ops_plan chosen;
	char reason[160];
	int fell_back = 0, rc;

	memset(r, 0, sizeof *r);
	if (!plan) {
		rc = ops_plan_resolve(&env, w, NULL, 0, &chosen, &fell_back, reason,
				      sizeof reason, err);
		if (rc < 0)
			return rc;
		plan = &chosen;
	}
	if (desc)
		ops_plan_describe(w->group, plan, desc, desc_len);
	if ((rc = ops_device_new(&env, 0, &r->dev, err)) < 0)
		return rc;
	if ((rc = ops_instance_new(w, plan, SEED, block, &r->inst, err)) < 0)
		goto fail;
	r->impl = ops_group_impl(w->group);
	if ((rc = ops_instance_run(r->dev, r->inst, err)) < 0)
		goto fail;
	return 0;
fail:
	ops_instance_free(r->inst);
	ops_device_free(r->dev);
	memset(r, 0, sizeof *r);
	return rc;
}

static void op_release(struct op_run *r)
{
	ops_instance_free(r->inst);
	ops_device_free(r->dev);
	memset(r, 0, sizeof *r);
}

/* The data of an instance's tensor (owned by the instance), or NULL. */
static const void *op_tensor(struct op_run *r, const char *name)
{
	struct ops_tensor *t = ops_instance_tensor(r->inst, name);
	return t ? t->data : NULL;
}

/* ---- oneDNN ------------------------------------------------------------------------ */

static dnnl_engine_t dn_eng;
static dnnl_stream_t dn_stream;

static const char *dn_status_name(dnnl_status_t s)
{
	switch (s) {
	case dnnl_out_of_memory: return "out of memory";
	case dnnl_invalid_arguments: return "invalid arguments";
	case dnnl_unimplemented: return "no implementation for it on this cpu (unimplemented)";
	case dnnl_iterator_ends: return "iterator ends";
	case dnnl_runtime_error: return "runtime error";
	case dnnl_not_required: return "not required";
	default: return "status unknown";
	}
}

#define DN_TRY(call, what)                                                          \
	do {                                                                        \
		dnnl_status_t s_ = (call);                                          \
		if (s_ != dnnl_success) {                                           \
			rc = opr_error_set(err, OPR_EINTERNAL,                      \
					   "onednn '%s' failed: %s", what,              \
					   dn_status_name(s_));                             \
			goto out;                                                   \
		}                                                                   \
	} while (0)

/* A oneDNN primitive ready to run: its descriptor, the primitive, its
 * arguments' memories and the host buffers it owns; dn_prim_free releases
 * everything (a zeroed one is fine). */
struct dn_prim {
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	int nargs;
	dnnl_exec_arg_t args[4];
	dnnl_memory_t mem[4];
	void *buf[2];
	char impl[64];
};

static void dn_prim_free(struct dn_prim *p)
{
	dnnl_primitive_destroy(p->prim);
	dnnl_primitive_desc_destroy(p->pd);
	for (int i = 0; i < 4; i++)
		dnnl_memory_destroy(p->mem[i]);
	free(p->buf[0]);
	free(p->buf[1]);
	memset(p, 0, sizeof *p);
}

static int dn_call(void *ctx, struct opr_error *err)
{
	struct dn_prim *p = ctx;
	if (dnnl_primitive_execute(p->prim, dn_stream, p->nargs, p->args) != dnnl_success ||
	    dnnl_stream_wait(dn_stream) != dnnl_success)
		return opr_error_set(err, OPR_EINTERNAL, "onednn 'execute' failed");
	return 0;
}

/* The primitive of p->pd with the memories p->mem[0..n-1] as the arguments
 * named in kinds. */
static int dn_finish(struct dn_prim *p, int n, const int *kinds, struct opr_error *err)
{
	int rc = 0;
	DN_TRY(dnnl_primitive_create(&p->prim, p->pd), "primitive");
	p->nargs = n;
	for (int i = 0; i < n; i++)
		p->args[i] = (dnnl_exec_arg_t){ kinds[i], p->mem[i] };
out:
	return rc;
}

static void dn_impl_name(const_dnnl_primitive_desc_t pd, char *buf, size_t len)
{
	const char *s = NULL;
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s)
		s = "?";
	snprintf(buf, len, "%s", s);
}

/* A reorder primitive from md a to md b. */
static int dn_reorder_prim(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b,
			   dnnl_primitive_t *out, struct opr_error *err)
{
	dnnl_primitive_desc_t pd = NULL;
	int rc = 0;

	DN_TRY(dnnl_reorder_primitive_desc_create(&pd, a, dn_eng, b, dn_eng, NULL), "reorder");
	DN_TRY(dnnl_primitive_create(out, pd), "reorder");
out:
	dnnl_primitive_desc_destroy(pd);
	return rc;
}

/* Reorders src (memory of md smd at sp) into a new memory of md dmd; *out
 * is destroyed by the caller. */
static int dn_reorder(const dnnl_memory_desc_t *smd, void *sp, const dnnl_memory_desc_t *dmd,
		      dnnl_memory_t *out, struct opr_error *err)
{
	dnnl_primitive_t prim = NULL;
	dnnl_memory_t sm = NULL;
	int rc = 0;

	*out = NULL;
	DN_TRY(dnnl_memory_create(&sm, smd, dn_eng, sp), "memory");
	DN_TRY(dnnl_memory_create(out, dmd, dn_eng, DNNL_MEMORY_ALLOCATE), "memory");
	if ((rc = dn_reorder_prim(smd, dmd, &prim, err)) < 0)
		goto out;
	dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, sm }, { DNNL_ARG_TO, *out } };
	DN_TRY(dnnl_primitive_execute(prim, dn_stream, 2, a), "reorder");
	DN_TRY(dnnl_stream_wait(dn_stream), "reorder");
out:
	if (rc < 0 && *out) {
		dnnl_memory_destroy(*out);
		*out = NULL;
	}
	dnnl_primitive_destroy(prim);
	dnnl_memory_destroy(sm);
	return rc;
}

/* ---- machine limits ------------------------------------------------------------------ */

static volatile float sink_f;

/* Twelve independent FMA chains: enough to cover the FMA latency (4-5
 * cycles) times two FMA pipes. acc = acc * m + c converges to c / (1 - m),
 * no overflow and no subnormals. 12 chains * 8 lanes * 2 flops per iteration. */
#define FMA_CHAINS 12
#define FMA_FLOPS_PER_ITER (FMA_CHAINS * 8 * 2)

struct fma_ctx {
	int64_t iters;
};

/* (AVX2 code in a binary built for baseline x86-64: case_limits runs it only
 * on a host that has AVX2) */
__attribute__((target("avx2,fma"))) static int fma_call(void *ctx, struct opr_error *err)
{
	(void)err;
	int64_t iters = ((struct fma_ctx *)ctx)->iters;
	float s = sink_f;
	__m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-3f);
	__m256 a0 = _mm256_set1_ps(s), a1 = _mm256_set1_ps(s + 1), a2 = _mm256_set1_ps(s + 2);
	__m256 a3 = _mm256_set1_ps(s + 3), a4 = _mm256_set1_ps(s + 4), a5 = _mm256_set1_ps(s + 5);
	__m256 a6 = _mm256_set1_ps(s + 6), a7 = _mm256_set1_ps(s + 7), a8 = _mm256_set1_ps(s + 8);
	__m256 a9 = _mm256_set1_ps(s + 9), a10 = _mm256_set1_ps(s + 10);
	__m256 a11 = _mm256_set1_ps(s + 11);

	for (int64_t i = 0; i < iters; i++) {
		a0 = _mm256_fmadd_ps(a0, m, c);
		a1 = _mm256_fmadd_ps(a1, m, c);
		a2 = _mm256_fmadd_ps(a2, m, c);
		a3 = _mm256_fmadd_ps(a3, m, c);
		a4 = _mm256_fmadd_ps(a4, m, c);
		a5 = _mm256_fmadd_ps(a5, m, c);
		a6 = _mm256_fmadd_ps(a6, m, c);
		a7 = _mm256_fmadd_ps(a7, m, c);
		a8 = _mm256_fmadd_ps(a8, m, c);
		a9 = _mm256_fmadd_ps(a9, m, c);
		a10 = _mm256_fmadd_ps(a10, m, c);
		a11 = _mm256_fmadd_ps(a11, m, c);
	}
	a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
			   _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
	a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
	sink_f = _mm256_cvtss_f32(a0) * 0.0f;
	return 0;
}

struct copy_ctx {
	float *dst;
	const float *src, *src2;
	size_t n; /* elements */
};

static int copy_call(void *ctx, struct opr_error *err)
{
	struct copy_ctx *c = ctx;
	(void)err;
	memcpy(c->dst, c->src, c->n * sizeof(float));
	return 0;
}

/* STREAM triad a = b + s * c, 8 floats at a time (explicit FMA: the build
 * disables contraction). */
__attribute__((target("avx2,fma"))) static int triad_call(void *ctx, struct opr_error *err)
{
	struct copy_ctx *c = ctx;
	__m256 s = _mm256_set1_ps(3.0f);
	(void)err;
	for (size_t i = 0; i < c->n; i += 8)
		_mm256_store_ps(c->dst + i, _mm256_fmadd_ps(s, _mm256_load_ps(c->src2 + i),
							    _mm256_load_ps(c->src + i)));
	return 0;
}

static double copy_gbps; /* measured 256 MiB memcpy bandwidth (read + write) */

static int case_limits(struct opr_error *err)
{
	struct fma_ctx fc = { 4000000 };
	struct timing t_fma = { 2, 11, 31, 1.0 };
	struct timing t_mem = { 2, 9, 21, 1.5 };
	struct row *r;
	int rc;

	int avx2 = ops_isa_host_has(OPS_ISA_AVX2); /* fma_call and triad_call need it */
	if (avx2) {
		r = row_add("peak AVX2 FMA (12 chains)");
		if ((rc = bench_time(fma_call, NULL, &fc, &t_fma, &r->ours, err)) < 0)
			return rc;
		r->work = (double)fc.iters * FMA_FLOPS_PER_ITER;
		r->unit = "GFLOP/s";
		snprintf(r->note, sizeof r->note, "%lld iterations of 12 independent ymm FMA chains",
			 (long long)fc.iters);
	}

	size_t n = 256 * MIB / sizeof(float);
	float *a = big_alloc(n * sizeof(float)), *b = big_alloc(n * sizeof(float));
	float *c = big_alloc(n * sizeof(float));
	if (!a || !b || !c) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the stream buffers");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		b[i] = (float)(i & 1023);
		c[i] = 1.0f / (float)((i & 7) + 1);
	}
	struct copy_ctx cc = { a, b, c, n };
	r = row_add("memcpy 256 MiB");
	if ((rc = bench_time(copy_call, NULL, &cc, &t_mem, &r->ours, err)) < 0)
		goto out;
	r->work = 2.0 * (double)(n * sizeof(float));
	r->unit = "GB/s";
	copy_gbps = r->work / r->ours.med_ns;
	snprintf(r->note, sizeof r->note, "bytes read + written (STREAM convention)");
	if (memcmp(a, b, n * sizeof(float))) {
		rc = opr_error_set(err, OPR_EINTERNAL, "memcpy check failed");
		goto out;
	}

	rc = 0;
	if (!avx2)
		goto out;
	r = row_add("stream triad 3 x 256 MiB");
	if ((rc = bench_time(triad_call, NULL, &cc, &t_mem, &r->ours, err)) < 0)
		goto out;
	r->work = 3.0 * (double)(n * sizeof(float));
	r->unit = "GB/s";
	r->has_diff = 1;
	r->maxdiff = 0.0;
	for (size_t i = 0; i < n; i += 4099) {
		double d = fabs((double)a[i] - ((double)b[i] + 3.0 * (double)c[i]));
		r->maxdiff = d > r->maxdiff ? d : r->maxdiff;
	}
	snprintf(r->note, sizeof r->note, "a = b + 3 c, fp32; diff against fp64 on a sample");
	rc = 0;
out:
	free(a);
	free(b);
	free(c);
	return rc;
}

/* ---- conv2d ------------------------------------------------------------------------- */

/* The shape of the conv case running: [CV_N, CV_C, CV_H, CV_W] -> CV_K
 * channels, CV_R x CV_R at unit stride, padded to keep the size: the 3x3
 * cases' shape, or the one case_conv_1x1 sets while it runs. */
static struct cv_shape {
	int64_t n, c, h, w, k, r;
} cv = { 1, 64, 56, 56, 64, 3 };
#define CV_N cv.n
#define CV_C cv.c
#define CV_H cv.h
#define CV_W cv.w
#define CV_K cv.k
#define CV_R cv.r

/* How oneDNN's convolution takes the bench's NCHW x and OIHW w: in those
 * user layouts; src and dst NHWC with the weights in the primitive's
 * layout; or every tensor in the layout the primitive prefers (format
 * "any": nChw16c-style blocks), the fastest direct kernels it has. Inputs
 * are reordered into the primitive's layouts and its output back to NCHW
 * outside the timed calls. */
enum dn_layout { DN_USER, DN_NHWC, DN_BLOCKED };

/* oneDNN's convolution of the bench's shape in dtype dt by algorithm alg
 * (direct or winograd) with the tensors laid out as lay says; the primitive
 * owns copies of x and w (NCHW and OIHW of dt) and its output memory.
 * A configuration oneDNN has no kernel for fails with its status. */
static int dn_conv_new(enum dn_layout lay, dnnl_alg_kind_t alg, dnnl_data_type_t dt,
		       const void *x, const void *w, struct dn_prim *p, struct opr_error *err)
{
	static const int kinds[3] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST };
	static const dnnl_format_tag_t act[3] = { dnnl_nchw, dnnl_nhwc, dnnl_format_tag_any };
	dnnl_memory_desc_t xu, wu, smd, wmd, dmd;
	dnnl_convolution_desc_t cd;
	dnnl_dims_t sd = { CV_N, CV_C, CV_H, CV_W }, wd = { CV_K, CV_C, CV_R, CV_R };
	dnnl_dims_t dd = { CV_N, CV_K, CV_H, CV_W };
	dnnl_dims_t strides = { 1, 1 }, pad = { CV_R / 2, CV_R / 2 };
	int rc = 0;

	memset(p, 0, sizeof *p);
	DN_TRY(dnnl_memory_desc_init_by_tag(&xu, 4, sd, dt, dnnl_nchw), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&wu, 4, wd, dt, dnnl_oihw), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&smd, 4, sd, dt, act[lay]), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dt,
					    lay == DN_USER ? dnnl_oihw : dnnl_format_tag_any),
	       "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&dmd, 4, dd, dt, act[lay]), "memory desc");
	DN_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &smd, &wmd,
						  NULL, &dmd, strides, pad, pad),
	       "convolution desc");
	DN_TRY(dnnl_primitive_desc_create(&p->pd, &cd, NULL, dn_eng, NULL), "convolution pd");
	dn_impl_name(p->pd, p->impl, sizeof p->impl);
	if ((rc = dn_reorder(&xu, (void *)x, dnnl_primitive_desc_query_md(p->pd, dnnl_query_src_md, 0),
			     &p->mem[0], err)) < 0 ||
	    (rc = dn_reorder(&wu, (void *)w,
			     dnnl_primitive_desc_query_md(p->pd, dnnl_query_weights_md, 0),
			     &p->mem[1], err)) < 0)
		goto out;
	DN_TRY(dnnl_memory_create(&p->mem[2], dnnl_primitive_desc_query_md(p->pd, dnnl_query_dst_md, 0),
				  dn_eng, DNNL_MEMORY_ALLOCATE), "memory");
	rc = dn_finish(p, 3, kinds, err);
out:
	if (rc < 0)
		dn_prim_free(p);
	return rc;
}

/* The last output of dn_conv_new's primitive as NCHW fp32 (bf16 widened). */
static int dn_conv_output(const struct dn_prim *p, dnnl_data_type_t dt, float *y,
			  struct opr_error *err)
{
	dnnl_memory_desc_t yu;
	dnnl_memory_t out = NULL;
	dnnl_dims_t dd = { CV_N, CV_K, CV_H, CV_W };
	size_t ny = (size_t)CV_N * CV_K * CV_H * CV_W;
	void *ys = NULL, *yn = NULL;
	int rc = 0;

	DN_TRY(dnnl_memory_desc_init_by_tag(&yu, 4, dd, dt, dnnl_nchw), "memory desc");
	DN_TRY(dnnl_memory_get_data_handle(p->mem[2], &ys), "memory handle");
	if ((rc = dn_reorder(dnnl_primitive_desc_query_md(p->pd, dnnl_query_dst_md, 0), ys, &yu,
			     &out, err)) < 0)
		goto out;
	DN_TRY(dnnl_memory_get_data_handle(out, &yn), "memory handle");
	if (dt == dnnl_bf16)
		ops_to_f32(OPS_BF16, yn, y, ny);
	else
		memcpy(y, yn, ny * sizeof *y);
out:
	dnnl_memory_destroy(out);
	return rc;
}

/* The planner's best fitting plan of strategy st (*found = 0: none). The
 * search marks every plan but the chosen one "rejected"; the ones that fit
 * are those whose dry run completed (at least one launch counted). */
static int best_plan_of(const struct ops_workload *w, enum ops_strategy st,
			struct ops_plan *out, int *found, struct opr_error *err)
{
	struct ops_plan_eval *ev = NULL;
	size_t n = 0;
	int rc = ops_plan_search(&env, w, 0, &ev, &n, err);

	*found = 0;
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n && !*found; i++)
		if (ev[i].launches > 0 && ev[i].plan.strategy == st) {
			*out = ev[i].plan;
			*found = 1;
		}
	free(ev);
	return 0;
}

/* The best direct plan the planner measured for w, or where it has none a
 * plain double-buffered direct one (the ops' defaults take its tiles). */
static int direct_plan_of(const struct ops_workload *w, struct ops_plan *p, struct opr_error *err)
{
	int found, rc = best_plan_of(w, OPS_STRAT_DIRECT, p, &found, err);

	if (rc < 0 || found)
		return rc;
	memset(p, 0, sizeof *p);
	p->strategy = OPS_STRAT_DIRECT;
	p->double_buffer = 1;
	return 0;
}

/* The oneDNN convolutions a case times beside ours: its direct kernels in
 * each layout (the fastest of them is the target's peer) and, where
 * oneDNN has it for the shape and dtype, its Winograd kernel (F(2x2, 3x3):
 * 2.25x fewer multiplies, other rounding), which is the peer of ours
 * (F(4x4, 3x3)) and, where it is faster, the target's peer. */
enum { DN_VAR_USER, DN_VAR_NHWC, DN_VAR_BLOCKED, DN_VAR_WINOGRAD, DN_NVAR };
static const struct dn_var {
	const char *name;
	enum dn_layout lay;
	dnnl_alg_kind_t alg;
} dn_vars[DN_NVAR] = {
	[DN_VAR_USER] = { "nchw/oihw", DN_USER, dnnl_convolution_direct },
	[DN_VAR_NHWC] = { "nhwc+any", DN_NHWC, dnnl_convolution_direct },
	[DN_VAR_BLOCKED] = { "blocked", DN_BLOCKED, dnnl_convolution_direct },
	[DN_VAR_WINOGRAD] = { "winograd", DN_BLOCKED, dnnl_convolution_winograd },
};

struct dn_set {
	struct dn_prim p[DN_NVAR];
	int ok[DN_NVAR];
	struct opr_error e[DN_NVAR];
	struct stats st[DN_NVAR];
	float *y[DN_NVAR];
	int best; /* the fastest direct variant */
};

/* Every variant of dn_vars for dtype dt (first: the first one to try; the
 * fp32 case has all four, bf16 the last three); one that oneDNN cannot
 * build is kept with its error. Fails only where no direct variant builds. */
static int dn_set_new(struct dn_set *ds, int first, dnnl_data_type_t dt, const void *x,
		      const void *w, struct opr_error *err)
{
	int any = 0;

	memset(ds, 0, sizeof *ds);
	ds->best = -1;
	for (int v = first; v < DN_NVAR; v++) {
		ds->ok[v] = dn_conv_new(dn_vars[v].lay, dn_vars[v].alg, dt, x, w, &ds->p[v],
					&ds->e[v]) == 0;
		any |= ds->ok[v] && dn_vars[v].alg == dnnl_convolution_direct;
	}
	if (!any)
		return opr_error_set(err, OPR_EINTERNAL, "no onednn direct convolution: %.300s",
				     ds->e[first].msg);
	return 0;
}

/* After the timing: each variant's stats from the group's (gst, at the
 * slots dn_set_items gave), its output as NCHW fp32, and the fastest
 * direct variant. */
static int dn_set_done(struct dn_set *ds, const struct stats *gst, const int *slot,
		       dnnl_data_type_t dt, struct opr_error *err)
{
	size_t ny = (size_t)CV_N * CV_K * CV_H * CV_W;
	int rc;

	for (int v = 0; v < DN_NVAR; v++) {
		if (!ds->ok[v])
			continue;
		ds->st[v] = gst[slot[v]];
		if (!(ds->y[v] = malloc(ny * sizeof(float))))
			return opr_error_set(err, OPR_ENOMEM, "out of memory for the conv outputs");
		if ((rc = dn_conv_output(&ds->p[v], dt, ds->y[v], err)) < 0)
			return rc;
		if (dn_vars[v].alg == dnnl_convolution_direct &&
		    (ds->best < 0 || ds->st[v].med_ns < ds->st[ds->best].med_ns))
			ds->best = v;
	}
	return 0;
}

/* A row per variant tried: its time and impl, or why oneDNN has none. */
static void dn_set_rows(const struct dn_set *ds, int first, const char *prefix, double flops)
{
	size_t ny = (size_t)CV_N * CV_K * CV_H * CV_W;

	for (int v = first; v < DN_NVAR; v++) {
		char name[48];
		snprintf(name, sizeof name, "%s %s", prefix, dn_vars[v].name);
		struct row *r = row_add(name);
		if (!ds->ok[v]) {
			snprintf(r->note, sizeof r->note, "unavailable: %.300s", ds->e[v].msg);
			continue;
		}
		r->ours = ds->st[v];
		r->work = flops;
		r->unit = "GFLOP/s";
		r->has_diff = v != ds->best;
		if (r->has_diff)
			r->maxdiff = max_abs_diff_f32(ds->y[v], ds->y[ds->best], ny);
		snprintf(r->note, sizeof r->note, "impl %s; %s%s", ds->p[v].impl,
			 dn_vars[v].lay == DN_USER ? "user layouts" :
			 dn_vars[v].lay == DN_NHWC ? "src, dst nhwc, weights its own, reordered untimed" :
			 "every tensor in its own layout, reordered untimed",
			 r->has_diff ? "; diff vs the fastest direct one" : "; the fastest direct one");
	}
}

/* The items of the variants that built, from items[n] on; returns the new n. */
static int dn_set_items(struct dn_set *ds, struct bench_item *items, int n, int *slot)
{
	for (int v = 0; v < DN_NVAR; v++)
		if (ds->ok[v]) {
			slot[v] = n;
			items[n++] = (struct bench_item){ dn_call, NULL, &ds->p[v] };
		}
	return n;
}

static void dn_set_free(struct dn_set *ds)
{
	for (int v = 0; v < DN_NVAR; v++) {
		dn_prim_free(&ds->p[v]);
		free(ds->y[v]);
	}
}

/* A conv row of ours against a peer: GFLOP/s of the direct convolution's
 * flops, and the largest |difference| of the two NCHW fp32 outputs. */
static struct row *conv_row_vs(const char *name, const struct stats *ours, const char *peer,
			       const struct stats *peer_st, double flops, const float *y,
			       const float *ypeer)
{
	struct row *r = row_add(name);

	r->ours = *ours;
	r->work = flops;
	r->unit = "GFLOP/s";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "%s", peer);
	r->peer_st = *peer_st;
	r->has_diff = 1;
	r->maxdiff = max_abs_diff_f32(y, ypeer, (size_t)CV_N * CV_K * CV_H * CV_W);
	return r;
}

/* The Winograd row: ours against oneDNN's Winograd kernel where it has one
 * (information: no target). */
static void dn_winograd_row(const struct dn_set *ds, const char *name, const struct stats *ours,
			    const float *y, double flops)
{
	const int v = DN_VAR_WINOGRAD;

	if (!ds->ok[v])
		return;
	struct row *r = conv_row_vs(name, ours, "onednn winograd", &ds->st[v], flops, y, ds->y[v]);
	snprintf(r->note, sizeof r->note,
		 "information, no target: ours F(4x4, 3x3) (4x fewer multiplies), onednn impl %s "
		 "(F(2x2, 3x3), 2.25x fewer); GFLOP/s counted as direct ones", ds->p[v].impl);
}

/* The bench's winograd plans, largest first (0 where i is past them).
 * Pinned: npu-a's 256 KiB SHARED fits only winograd plans of 16 channels a
 * block (U's blocks are 36 values a filter), which repeat the input
 * transform 4x; these tiles fit a host's L2 (the first 2 MiB, the second
 * 1 MiB: half the rows of V and M; the others U's block of 32 channels)
 * and are the ones a host profile would pin. Single-buffered: two U blocks
 * would pass the L2. (On a 1 MiB L2 the first three ran within the noise
 * of each other on bf16 storage, the caches flushed before each call.) */
static int wino_pin(int i, struct ops_plan *p)
{
	static const int64_t oh_c[][2] = { { 8, 64 }, { 4, 64 }, { 8, 32 }, { 4, 32 } };

	if (i < 0 || i >= (int)(sizeof oh_c / sizeof oh_c[0]))
		return 0;
	memset(p, 0, sizeof *p);
	p->strategy = OPS_STRAT_WINOGRAD;
	p->p[0] = 64;
	p->p[1] = oh_c[i][0];
	p->p[2] = CV_W;
	p->p[3] = oh_c[i][1];
	p->double_buffer = 0;
	return 1;
}

/* op_setup of w on the first winograd pin that runs, on npu-a with SHARED
 * as large as this host's L2 (its device only: the envelope is restored);
 * < 0 with the last pin's error in err where none does. */
static int wino_setup(const struct ops_workload *w, const char *block, struct op_run *r,
		      char *desc, size_t desc_len, struct opr_error *err)
{
	const double shk = env.shared_capacity_kib;
	struct ops_plan p;
	int rc = OPR_ELIMIT;

	if (ops_l2_bytes(0) > 0)
		env.shared_capacity_kib = fmax(shk, (double)ops_l2_bytes(0) / 1024.0);
	for (int pin = 0; rc < 0 && wino_pin(pin, &p); pin++)
		rc = op_setup(w, &p, block, r, desc, desc_len, err);
	env.shared_capacity_kib = shk;
	return rc;
}

static int case_conv(struct opr_error *err)
{
	static const char *const sname[OPS_NSTRATS] = {
		"untiled", "direct", "im2col", "winograd"
	};
	struct timing t_untiled = { 1, 5, 15, 2.0 }, t_group = { 3, 15, 61, 3.0 };
	struct ops_workload w;
	struct op_run run[OPS_NSTRATS];
	struct dn_set ds;
	struct bench_item items[BENCH_MAX_ITEMS];
	struct stats st[OPS_NSTRATS], gst[BENCH_MAX_ITEMS];
	struct opr_error serr[OPS_NSTRATS];
	char desc[OPS_NSTRATS][128];
	size_t ny = (size_t)CV_N * CV_K * CV_H * CV_W;
	double flops = 2.0 * CV_N * CV_K * CV_H * CV_W * CV_C * 9;
	int rc = 0, best = -1, any = -1, ni = 0, failed[OPS_NSTRATS] = { 0 };
	int slot[OPS_NSTRATS], dslot[DN_NVAR];

	memset(serr, 0, sizeof serr);
	memset(run, 0, sizeof run);
	memset(&ds, 0, sizeof ds);
	memset(st, 0, sizeof st);
	memset(&w, 0, sizeof w);
	w.group = OPS_G_CONV;
	w.dtype = OPS_F32;
	w.conv = (struct ops_conv_shape){ .n = CV_N, .c = CV_C, .h = CV_H, .w = CV_W, .k = CV_K,
					  .r = 3, .s = 3, .stride_h = 1, .stride_w = 1,
					  .pad_h = 1, .pad_w = 1, .dil_h = 1, .dil_w = 1,
					  .groups = 1 };
	for (int s = 0; s < OPS_NSTRATS; s++) {
		struct ops_plan p;
		int found;

		/* a strategy that fails is reported in its row; the others go on */
		int bad;
		if (s == OPS_STRAT_WINOGRAD) {
			bad = wino_setup(&w, "bench-conv", &run[s], desc[s], sizeof desc[s],
					 &serr[s]) < 0;
		} else {
			if ((rc = best_plan_of(&w, (enum ops_strategy)s, &p, &found, err)) < 0)
				goto out;
			if (!found) { /* the strategy's default tiles */
				memset(&p, 0, sizeof p);
				p.strategy = (enum ops_strategy)s;
				p.double_buffer = 1;
			}
			bad = op_setup(&w, &p, "bench-conv", &run[s], desc[s], sizeof desc[s],
				       &serr[s]) < 0;
		}
		if (bad) {
			failed[s] = 1;
			continue;
		}
		if (any < 0)
			any = s;
	}
	if (any < 0) {
		rc = opr_error_set(err, OPR_EINTERNAL, "no conv2d strategy ran: %.300s",
				   serr[OPS_STRAT_DIRECT].msg);
		goto out;
	}
	if (!failed[OPS_STRAT_UNTILED] &&
	    bench_time(op_call, op_before, &run[OPS_STRAT_UNTILED], &t_untiled,
		       &st[OPS_STRAT_UNTILED], &serr[OPS_STRAT_UNTILED]) < 0)
		failed[OPS_STRAT_UNTILED] = 1;
	if ((rc = dn_set_new(&ds, DN_VAR_USER, dnnl_f32, op_tensor(&run[any], "x"),
			     op_tensor(&run[any], "w"), err)) < 0)
		goto out;
	/* the tiled strategies and the oneDNN variants, interleaved */
	for (int s = OPS_STRAT_DIRECT; s < OPS_NSTRATS; s++)
		if (!failed[s]) {
			slot[s] = ni;
			items[ni++] = (struct bench_item){ op_call, op_before, &run[s] };
		}
	ni = dn_set_items(&ds, items, ni, dslot);
	if ((rc = bench_group(items, ni, &t_group, gst, err)) < 0)
		goto out;
	for (int s = OPS_STRAT_DIRECT; s < OPS_NSTRATS; s++)
		if (!failed[s]) {
			st[s] = gst[slot[s]];
			if (best < 0 || st[s].med_ns < st[best].med_ns)
				best = s;
		}
	if ((rc = dn_set_done(&ds, gst, dslot, dnnl_f32, err)) < 0)
		goto out;

	for (int s = 0; s < OPS_NSTRATS; s++) {
		char name[48];
		snprintf(name, sizeof name, "conv2d fp32 %s", sname[s]);
		struct row *r = row_add(name);
		r->ours = st[s];
		r->work = flops;
		r->unit = "GFLOP/s";
		if (failed[s]) {
			snprintf(r->note, sizeof r->note, "FAILED: %.300s", serr[s].msg);
			continue;
		}
		r->has_diff = 1;
		r->maxdiff = max_abs_diff_f32(ops_instance_output(run[s].inst, NULL), ds.y[ds.best],
					      ny);
		snprintf(r->note, sizeof r->note, "plan %s; diff vs onednn %s%s", desc[s],
			 dn_vars[ds.best].name, s ? "; timed interleaved with onednn" : "");
	}
	dn_set_rows(&ds, DN_VAR_USER, "onednn conv", flops);
	if (best < 0) {
		rc = opr_error_set(err, OPR_EINTERNAL, "no tiled conv2d strategy ran: %.300s",
				   serr[OPS_STRAT_DIRECT].msg);
		goto out;
	}
	const float *yb = ops_instance_output(run[best].inst, NULL);
	/* the peer: oneDNN's fastest, its Winograd kernel included where ours
	 * is one of the strategies timed */
	int peer = ds.best;
	if (ds.ok[DN_VAR_WINOGRAD] && !failed[OPS_STRAT_WINOGRAD] &&
	    ds.st[DN_VAR_WINOGRAD].med_ns < ds.st[peer].med_ns)
		peer = DN_VAR_WINOGRAD;
	char pname[48];
	snprintf(pname, sizeof pname, "onednn %s", dn_vars[peer].name);
	struct row *r = conv_row_vs("conv2d fp32 best vs onednn", &st[best], pname, &ds.st[peer],
				    flops, yb, ds.y[ds.best]);
	row_target(r, TGT_CONV, "onednn");
	snprintf(r->note, sizeof r->note,
		 "ours = %s [1,64,56,56] -> 64, 3x3 pad 1, path %s; peer = onednn's fastest "
		 "convolution (direct in every layout, and winograd), impl %s; diff vs its "
		 "fastest direct one", sname[best],
		 ops_kfam_path(best == OPS_STRAT_IM2COL ? OPS_KF_GEMM : OPS_KF_CONV),
		 ds.p[peer].impl);
	if (!failed[OPS_STRAT_DIRECT]) {
		snprintf(pname, sizeof pname, "onednn %s", dn_vars[ds.best].name);
		r = conv_row_vs("conv2d fp32 direct vs onednn direct", &st[OPS_STRAT_DIRECT], pname,
				&ds.st[ds.best], flops,
				ops_instance_output(run[OPS_STRAT_DIRECT].inst, NULL), ds.y[ds.best]);
		snprintf(r->note, sizeof r->note,
			 "information, no target: direct against direct, onednn impl %s",
			 ds.p[ds.best].impl);
	}
	if (!failed[OPS_STRAT_WINOGRAD])
		dn_winograd_row(&ds, "conv2d fp32 winograd vs winograd", &st[OPS_STRAT_WINOGRAD],
				ops_instance_output(run[OPS_STRAT_WINOGRAD].inst, NULL), flops);

	if (!failed[OPS_STRAT_UNTILED]) {
		r = conv_row_vs("conv2d tiled vs untiled", &st[best], "opreview untiled",
				&st[OPS_STRAT_UNTILED], flops, yb,
				ops_instance_output(run[OPS_STRAT_UNTILED].inst, NULL));
		r->check = CHECK_RATIO_GE;
		r->bound = 4.0;
		snprintf(r->target, sizeof r->target, ">= 4 x untiled");
		snprintf(r->note, sizeof r->note, "tiled = %s (untiled timed on its own)",
			 sname[best]);
	}
out:
	for (int s = 0; s < OPS_NSTRATS; s++)
		op_release(&run[s]);
	dn_set_free(&ds);
	return rc;
}

/* oneDNN as a caller holding the NCHW tensors runs it: x reordered into
 * the layout of conv's primitive, the convolution, y reordered back to
 * NCHW, all three in the timed call (the dn_set variants reorder outside
 * it). The chain owns its NCHW x and y; conv stays the set's. */
struct dn_chain {
	const struct dn_prim *conv;
	dnnl_primitive_t rx, ry;
	dnnl_memory_t xu, yu;
	dnnl_exec_arg_t ax[2], ay[2];
};

static void dn_chain_free(struct dn_chain *c)
{
	dnnl_primitive_destroy(c->rx);
	dnnl_primitive_destroy(c->ry);
	dnnl_memory_destroy(c->xu);
	dnnl_memory_destroy(c->yu);
	memset(c, 0, sizeof *c);
}

static int dn_chain_new(struct dn_chain *c, const struct dn_prim *conv, dnnl_data_type_t dt,
			const void *x, struct opr_error *err)
{
	dnnl_memory_desc_t xu, yu;
	dnnl_dims_t sd = { CV_N, CV_C, CV_H, CV_W }, dd = { CV_N, CV_K, CV_H, CV_W };
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(conv->pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(conv->pd, dnnl_query_dst_md, 0);
	void *xh = NULL;
	int rc = 0;

	memset(c, 0, sizeof *c);
	c->conv = conv;
	DN_TRY(dnnl_memory_desc_init_by_tag(&xu, 4, sd, dt, dnnl_nchw), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&yu, 4, dd, dt, dnnl_nchw), "memory desc");
	DN_TRY(dnnl_memory_create(&c->xu, &xu, dn_eng, DNNL_MEMORY_ALLOCATE), "memory");
	DN_TRY(dnnl_memory_create(&c->yu, &yu, dn_eng, DNNL_MEMORY_ALLOCATE), "memory");
	DN_TRY(dnnl_memory_get_data_handle(c->xu, &xh), "memory handle");
	memcpy(xh, x, dnnl_memory_desc_get_size(&xu));
	if ((rc = dn_reorder_prim(&xu, smd, &c->rx, err)) < 0 ||
	    (rc = dn_reorder_prim(dmd, &yu, &c->ry, err)) < 0)
		goto out;
	c->ax[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, c->xu };
	c->ax[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, conv->mem[0] };
	c->ay[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, conv->mem[2] };
	c->ay[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, c->yu };
out:
	if (rc < 0)
		dn_chain_free(c);
	return rc;
}

static int dn_chain_call(void *ctx, struct opr_error *err)
{
	struct dn_chain *c = ctx;

	if (dnnl_primitive_execute(c->rx, dn_stream, 2, c->ax) != dnnl_success ||
	    dnnl_primitive_execute(c->conv->prim, dn_stream, c->conv->nargs, c->conv->args) !=
		    dnnl_success ||
	    dnnl_primitive_execute(c->ry, dn_stream, 2, c->ay) != dnnl_success ||
	    dnnl_stream_wait(dn_stream) != dnnl_success)
		return opr_error_set(err, OPR_EINTERNAL, "onednn 'execute' failed");
	return 0;
}

/* ---- conv2d bf16 / fp16 -------------------------------------------------------------
 * The same shape with bf16 storage against oneDNN's bf16 convolution (nhwc,
 * weights in its layout, bf16 in and out, fp32 accumulation), and ours with
 * fp16 storage against ours with fp32, all four timed interleaved. */

static int case_conv_half(struct opr_error *err)
{
	static const enum ops_dtype dts[3] = { OPS_BF16, OPS_F16, OPS_F32 };
	/* MAX_SAMPLES rounds (about 1.3 s here): on the Intel AMX host the
	 * items' times spread 27-44% from median to p95, and the bf16 row's
	 * median ratio over 61 rounds moved 0.94-1.01 between runs of the
	 * whole bench (more rounds steady the medians; they move no ratio) */
	struct timing t_group = { 3, 15, MAX_SAMPLES, 3.0 };
	struct ops_workload w;
	struct op_run run[4]; /* bf16, fp16, fp32 direct; bf16 winograd */
	struct dn_set ds;
	struct bench_item items[BENCH_MAX_ITEMS];
	struct stats gst[BENCH_MAX_ITEMS];
	char desc[4][128];
	size_t ny = (size_t)CV_N * CV_K * CV_H * CV_W;
	double flops = 2.0 * CV_N * CV_K * CV_H * CV_W * CV_C * 9;
	float *yo = NULL, *ych = NULL, *ywi = NULL;
	struct dn_chain ch;
	struct opr_error werr = { 0 };
	int rc = 0, ni = 3, dslot[DN_NVAR], chslot = -1, wslot = -1;

	memset(run, 0, sizeof run);
	memset(&ds, 0, sizeof ds);
	memset(&ch, 0, sizeof ch);
	memset(&w, 0, sizeof w);
	w.group = OPS_G_CONV;
	w.conv = (struct ops_conv_shape){ .n = CV_N, .c = CV_C, .h = CV_H, .w = CV_W, .k = CV_K,
					  .r = 3, .s = 3, .stride_h = 1, .stride_w = 1,
					  .pad_h = 1, .pad_w = 1, .dil_h = 1, .dil_w = 1,
					  .groups = 1 };
	for (int d = 0; d < 3; d++) {
		struct ops_plan p;

		w.dtype = dts[d];
		if ((rc = direct_plan_of(&w, &p, err)) < 0)
			goto out;
		if ((rc = op_setup(&w, &p, "bench-conv-half", &run[d], desc[d], sizeof desc[d],
				   err)) < 0)
			goto out;
		items[d] = (struct bench_item){ op_call, op_before, &run[d] };
	}
	/* bf16 on the winograd strategy too (fp32 inside; the largest of the
	 * fp32 case's pins this host's L2 holds): where the host has no AMX it
	 * is our fastest bf16 3x3 convolution, and the row takes the faster */
	w.dtype = OPS_BF16;
	if (wino_setup(&w, "bench-conv-half", &run[3], desc[3], sizeof desc[3], &werr) == 0) {
		wslot = ni;
		items[ni++] = (struct bench_item){ op_call, op_before, &run[3] };
	}
	/* oneDNN's bf16 kernels from nhwc on (its nchw bf16 path is a reference one) */
	if ((rc = dn_set_new(&ds, DN_VAR_NHWC, dnnl_bf16, op_tensor(&run[0], "x"),
			     op_tensor(&run[0], "w"), err)) < 0)
		goto out;
	ni = dn_set_items(&ds, items, ni, dslot);
	/* the blocked kernel again with its reorders from and to NCHW timed */
	if (ds.ok[DN_VAR_BLOCKED]) {
		if ((rc = dn_chain_new(&ch, &ds.p[DN_VAR_BLOCKED], dnnl_bf16, op_tensor(&run[0], "x"),
				       err)) < 0)
			goto out;
		chslot = ni;
		items[ni++] = (struct bench_item){ dn_chain_call, NULL, &ch };
	}
	if ((rc = bench_group(items, ni, &t_group, gst, err)) < 0)
		goto out;
	if ((rc = dn_set_done(&ds, gst, dslot, dnnl_bf16, err)) < 0)
		goto out;
	if (!(yo = malloc(ny * sizeof *yo)) || !(ych = malloc(ny * sizeof *ych)) ||
	    !(ywi = malloc(ny * sizeof *ywi))) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the bf16 conv outputs");
		goto out;
	}
	ops_to_f32(OPS_BF16, ops_instance_output(run[0].inst, NULL), yo, ny);
	dn_set_rows(&ds, DN_VAR_NHWC, "onednn conv bf16", flops);
	const int wbest = wslot >= 0 && gst[wslot].med_ns < gst[0].med_ns;
	if (wslot >= 0)
		ops_to_f32(OPS_BF16, ops_instance_output(run[3].inst, NULL), ywi, ny);
	const struct stats *bst = wbest ? &gst[wslot] : &gst[0];
	const float *yb = wbest ? ywi : yo;

	struct row *r = row_add("conv2d bf16 vs onednn bf16");
	r->ours = *bst;
	r->work = flops;
	r->unit = "GFLOP/s";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "onednn bf16 %s", dn_vars[ds.best].name);
	r->peer_st = ds.st[ds.best];
	row_target(r, TGT_CONV_BF16, "onednn");
	r->has_diff = 1;
	r->maxdiff = max_abs_diff_f32(yb, ds.y[ds.best], ny);
	snprintf(r->note, sizeof r->note,
		 "peer = onednn's fastest bf16 convolution, impl %s; ours the faster of direct and "
		 "winograd, here %s %s, path %s (%s); diff vs onednn's bf16 y", ds.p[ds.best].impl,
		 wbest ? "winograd (fp32 inside)" : "direct", desc[wbest ? 3 : 0],
		 ops_kfam_path(OPS_KF_CONV),
		 wbest ? "bf16 widened as it comes in, y rounded once" :
		 ops_kern->conv_bf16_ready && ops_kern->conv_bf16_ready() ?
		 "bf16 on amx tiles, fp32 sums" : "bf16 widened to fp32, fp32 FMA");
	r = conv_row_vs("conv2d bf16 direct vs onednn bf16", &gst[0], "onednn bf16 fastest",
			&ds.st[ds.best], flops, yo, ds.y[ds.best]);
	snprintf(r->note, sizeof r->note, "information, no target: ours direct %s (%s)", desc[0],
		 ops_kern->conv_bf16_ready && ops_kern->conv_bf16_ready() ?
		 "bf16 on amx tiles, fp32 sums" : "bf16 widened to fp32, fp32 FMA");
	if (wslot >= 0) {
		r = conv_row_vs("conv2d bf16 winograd vs onednn bf16", &gst[wslot],
				"onednn bf16 fastest", &ds.st[ds.best], flops, ywi, ds.y[ds.best]);
		snprintf(r->note, sizeof r->note,
			 "information, no target: ours %s, F(4x4, 3x3) in fp32 on bf16 storage",
			 desc[3]);
	} else {
		r = row_add("conv2d bf16 winograd vs onednn bf16");
		snprintf(r->note, sizeof r->note, "FAILED: %.300s", werr.msg);
	}
	dn_winograd_row(&ds, "conv2d bf16 vs winograd", bst, yb, flops);
	if (chslot >= 0) {
		void *yh = NULL;

		if (dnnl_memory_get_data_handle(ch.yu, &yh) != dnnl_success) {
			rc = opr_error_set(err, OPR_EINTERNAL, "onednn 'memory handle' failed");
			goto out;
		}
		ops_to_f32(OPS_BF16, yh, ych, ny);
		r = conv_row_vs("conv2d bf16 vs onednn from nchw", bst, "onednn blocked+reorders",
				&gst[chslot], flops, yo, ych);
		snprintf(r->note, sizeof r->note,
			 "information, no target: onednn's blocked kernel (%s) with its reorders of x "
			 "from and y to nchw in the timed call, as a caller holding nchw tensors runs "
			 "it (the target's peer reorders outside it)", ds.p[DN_VAR_BLOCKED].impl);
	}

	r = row_add("conv2d fp16 vs ours fp32");
	r->ours = gst[1];
	r->work = flops;
	r->unit = "GFLOP/s";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "opreview conv2d fp32");
	r->peer_st = gst[2];
	row_target(r, TGT_FP16, "ours fp32");
	snprintf(r->note, sizeof r->note, "fp16 plan %s; fp32 plan %s; conversions %s", desc[1],
		 desc[2], ops_kfam_path(OPS_KF_CONVERT));
out:
	for (int d = 0; d < 4; d++)
		op_release(&run[d]);
	dn_chain_free(&ch);
	dn_set_free(&ds);
	free(yo);
	free(ych);
	free(ywi);
	return rc;
}

/* ---- conv2d bf16 1x1 ---------------------------------------------------------------
 * Two unpadded 1x1 convs of a bottleneck block at 56x56 in bf16 (256 -> 64
 * and 64 -> 256: ours on the AMX 1x1 GEMM) against oneDNN's bf16
 * convolution in its own layouts (brgconv_1x1), timed interleaved:
 * information, no target. */
static int conv_1x1_one(int64_t c, int64_t k, struct opr_error *err)
{
	struct timing t_group = { 3, 15, 61, 2.0 };
	struct ops_workload w;
	struct ops_plan p;
	struct op_run run;
	struct dn_set ds;
	struct bench_item items[BENCH_MAX_ITEMS];
	struct stats gst[BENCH_MAX_ITEMS];
	char desc[128], name[64];
	int rc, ni, dslot[DN_NVAR];
	float *yo = NULL;

	cv = (struct cv_shape){ 1, c, 56, 56, k, 1 };
	size_t ny = (size_t)CV_N * CV_K * CV_H * CV_W;
	double flops = 2.0 * CV_N * CV_K * CV_H * CV_W * CV_C;

	memset(&run, 0, sizeof run);
	memset(&ds, 0, sizeof ds);
	memset(&w, 0, sizeof w);
	w.group = OPS_G_CONV;
	w.dtype = OPS_BF16;
	w.conv = (struct ops_conv_shape){ .n = CV_N, .c = CV_C, .h = CV_H, .w = CV_W, .k = CV_K,
					  .r = 1, .s = 1, .stride_h = 1, .stride_w = 1,
					  .dil_h = 1, .dil_w = 1, .groups = 1 };
	if ((rc = direct_plan_of(&w, &p, err)) < 0)
		goto out;
	if ((rc = op_setup(&w, &p, "bench-conv-1x1", &run, desc, sizeof desc, err)) < 0)
		goto out;
	items[0] = (struct bench_item){ op_call, op_before, &run };
	if ((rc = dn_set_new(&ds, DN_VAR_NHWC, dnnl_bf16, op_tensor(&run, "x"),
			     op_tensor(&run, "w"), err)) < 0)
		goto out;
	ni = dn_set_items(&ds, items, 1, dslot);
	if ((rc = bench_group(items, ni, &t_group, gst, err)) < 0)
		goto out;
	if ((rc = dn_set_done(&ds, gst, dslot, dnnl_bf16, err)) < 0)
		goto out;
	if (!(yo = malloc(ny * sizeof *yo))) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the 1x1 conv's output");
		goto out;
	}
	ops_to_f32(OPS_BF16, ops_instance_output(run.inst, NULL), yo, ny);
	snprintf(name, sizeof name, "conv2d bf16 1x1 %lld->%lld", (long long)c, (long long)k);
	char pname[48];
	snprintf(pname, sizeof pname, "onednn bf16 %s", dn_vars[ds.best].name);
	struct row *r = conv_row_vs(name, &gst[0], pname, &ds.st[ds.best], flops, yo,
				    ds.y[ds.best]);
	snprintf(r->note, sizeof r->note,
		 "information, no target: [1,%lld,56,56] -> %lld, 1x1 unpadded; ours %s, path %s; "
		 "peer = onednn's fastest direct bf16 convolution in its own layouts (reorders "
		 "untimed), impl %s; diff vs its bf16 y", (long long)c, (long long)k, desc,
		 ops_kfam_path(OPS_KF_CONV), ds.p[ds.best].impl);
out:
	op_release(&run);
	dn_set_free(&ds);
	free(yo);
	return rc;
}

static int case_conv_1x1(struct opr_error *err)
{
	static const int64_t shapes[][2] = { { 256, 64 }, { 64, 256 } };
	struct cv_shape keep = cv;
	int rc = 0;

	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && rc == 0; i++)
		rc = conv_1x1_one(shapes[i][0], shapes[i][1], err);
	cv = keep;
	return rc;
}

/* ---- activation ----------------------------------------------------------------------- */

#define ACT_N ((int64_t)64 * 1024 * 1024 / 4) /* 64 MiB of fp32 */

/* oneDNN eltwise forward inference on x into y (n fp32, both caller's). */
static int dn_eltwise_new(dnnl_alg_kind_t alg, float alpha, const float *x, float *y,
			  int64_t n, struct dn_prim *p, struct opr_error *err)
{
	static const int kinds[2] = { DNNL_ARG_SRC, DNNL_ARG_DST };
	dnnl_memory_desc_t md;
	dnnl_eltwise_desc_t ed;
	dnnl_dims_t d = { n };
	int rc = 0;

	memset(p, 0, sizeof *p);
	DN_TRY(dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_f32, dnnl_a), "memory desc");
	DN_TRY(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &md, alpha, 0.0f),
	       "eltwise desc");
	DN_TRY(dnnl_primitive_desc_create(&p->pd, &ed, NULL, dn_eng, NULL), "eltwise pd");
	dn_impl_name(p->pd, p->impl, sizeof p->impl);
	DN_TRY(dnnl_memory_create(&p->mem[0], &md, dn_eng, (void *)x), "memory");
	DN_TRY(dnnl_memory_create(&p->mem[1], &md, dn_eng, y), "memory");
	rc = dn_finish(p, 2, kinds, err);
out:
	if (rc < 0)
		dn_prim_free(p);
	return rc;
}

/* One call of ops_activation_strided on a single element, repeated calls
 * times per timed sample. */
struct one_ctx {
	struct ops_device *dev;
	int rank, calls;
	int64_t dims[1], stride[1];
	float x, y;
};

static int one_before(void *ctx, struct opr_error *err)
{
	(void)err;
	ops_device_reset(((struct one_ctx *)ctx)->dev);
	return 0;
}

static int one_call(void *ctx, struct opr_error *err)
{
	struct one_ctx *o = ctx;
	for (int i = 0; i < o->calls; i++) {
		int rc = ops_activation_strided(o->dev, OPS_ACT_GELU_TANH, OPS_F32, o->rank, o->dims,
						&o->x, o->stride, &o->y, o->stride, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int case_one_element(struct opr_error *err)
{
	struct one_ctx o;
	struct timing tm = { 3, 31, 101, 0.5 };
	int rc;

	memset(&o, 0, sizeof o);
	if ((rc = ops_device_new(&env, 0, &o.dev, err)) < 0)
		return rc;
	o.calls = 2000;
	o.dims[0] = 1;
	o.stride[0] = 1;
	o.x = 0.75f;
	for (int rank = 0; rank <= 1; rank++) {
		struct row *r = row_add(rank ? "activation 1 elem, rank 1" : "activation 1 elem, rank 0");
		o.rank = rank;
		o.y = NAN;
		if ((rc = bench_time(one_call, one_before, &o, &tm, &r->ours, err)) < 0)
			goto out;
		r->ours.med_ns /= o.calls;
		r->ours.p95_ns /= o.calls;
		r->ours.min_ns /= o.calls;
		r->check = CHECK_TIME_LE;
		r->bound = 100.0;
		snprintf(r->target, sizeof r->target, "<= 100 ns/call");
		r->has_diff = 1;
		r->maxdiff = fabs((double)o.y - ops_act_ref(OPS_ACT_GELU_TANH, (double)o.x));
		snprintf(r->note, sizeof r->note,
			 "gelu-tanh, fp32, one device for all calls, %d calls per sample, "
			 "times per call (min %.0f ns); diff vs fp64", o.calls, r->ours.min_ns);
	}
out:
	ops_device_free(o.dev);
	return rc;
}

static int case_activation(struct opr_error *err)
{
	static const struct { enum ops_act act; dnnl_alg_kind_t alg; float alpha; } acts[] = {
		{ OPS_ACT_RELU, dnnl_eltwise_relu, 0.0f },
		{ OPS_ACT_GELU_TANH, dnnl_eltwise_gelu_tanh, 0.0f },
		{ OPS_ACT_SILU, dnnl_eltwise_swish, 1.0f },
	};
	struct timing tm = { 2, 11, 41, 3.0 };
	struct ops_workload w;
	struct op_run run, dry;
	struct dn_prim dn;
	size_t bytes = (size_t)ACT_N * sizeof(float);
	float *y2 = big_alloc(bytes), *y3 = big_alloc(bytes);
	char desc[128];
	int rc = 0;

	memset(&run, 0, sizeof run);
	memset(&dn, 0, sizeof dn);
	if (!y2 || !y3) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the activation outputs");
		goto out;
	}
	memset(&w, 0, sizeof w);
	w.group = OPS_G_ACTIVATION;
	w.dtype = OPS_F32;
	w.tensor.rank = 1;
	w.tensor.dims[0] = ACT_N;
	for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
		int relu = acts[i].act == OPS_ACT_RELU;
		struct stats gst[4];
		struct bench_item items[4];
		char name[48];

		w.act = acts[i].act;
		if ((rc = op_setup(&w, NULL, "bench-act", &run, desc, sizeof desc, err)) < 0)
			goto out;
		const float *x = op_tensor(&run, "x");
		const float *y = ops_instance_output(run.inst, NULL);
		struct copy_ctx cc = { y3, x, NULL, (size_t)ACT_N };

		if ((rc = dn_eltwise_new(acts[i].alg, acts[i].alpha, x, y2, ACT_N, &dn, err)) < 0)
			goto out;
		items[0] = (struct bench_item){ op_call, op_before, &run };
		items[1] = (struct bench_item){ dn_call, NULL, &dn };
		if (relu) {
			/* the same instance on a count-only device: the counting cost */
			dry = run;
			if ((rc = ops_device_new(&env, 1, &dry.dev, err)) < 0)
				goto out;
			items[2] = (struct bench_item){ copy_call, NULL, &cc };
			items[3] = (struct bench_item){ op_call, op_before, &dry };
		}
		rc = bench_group(items, relu ? 4 : 2, &tm, gst, err);
		if (relu)
			ops_device_free(dry.dev);
		if (rc < 0)
			goto out;

		if (relu) {
			struct row *r = row_add("relu 64 MiB vs memcpy");
			r->ours = gst[0];
			r->work = 2.0 * (double)bytes;
			r->unit = "GB/s";
			r->has_peer = 1;
			snprintf(r->peer, sizeof r->peer, "memcpy 64 MiB");
			r->peer_st = gst[2];
			row_target(r, TGT_RELU, "memcpy");
			r->has_diff = 1;
			r->maxdiff = 0.0;
			for (int64_t e = 0; e < ACT_N; e++) {
				double d = fabs((double)y[e] - (x[e] > 0.0f ? (double)x[e] : 0.0));
				if (!(d <= r->maxdiff))
					r->maxdiff = isnan(d) ? INFINITY : d;
			}
			snprintf(r->note, sizeof r->note,
				 "plan %s, path %s; bytes read + written; the 256 MiB memcpy gave "
				 "%.2f GB/s, ours/that %.3f; diff vs fmax(x, 0)",
				 desc, ops_kfam_path(OPS_KF_ACT), copy_gbps, copy_gbps > 0
				 ? (r->work / gst[0].med_ns) / copy_gbps : NAN);

			struct row *ri = row_add("instrumentation overhead");
			ri->ours = gst[3];
			ri->has_peer = 1;
			snprintf(ri->peer, sizeof ri->peer, "real relu 64 MiB run");
			ri->peer_st = gst[0];
			ri->check = CHECK_VALUE_LT;
			ri->value = gst[3].med_ns / gst[0].med_ns;
			ri->bound = 0.02;
			snprintf(ri->target, sizeof ri->target, "dry/real < 2%%");
			snprintf(ri->note, sizeof ri->note,
				 "ours = the relu instance on a count-only device (the counting "
				 "cost), peer = the real run; the ratio column shows dry/real");
		}
		snprintf(name, sizeof name, "%s 64 MiB vs onednn", ops_act_name(acts[i].act));
		struct row *r = row_add(name);
		r->ours = gst[0];
		r->work = 2.0 * (double)bytes;
		r->unit = "GB/s";
		r->has_peer = 1;
		snprintf(r->peer, sizeof r->peer, "onednn eltwise %s",
			 acts[i].act == OPS_ACT_SILU ? "swish a=1" : ops_act_name(acts[i].act));
		r->peer_st = gst[1];
		if (!relu)
			row_target(r, acts[i].act == OPS_ACT_SILU ? TGT_SILU : TGT_GELU, "onednn");
		r->has_diff = 1;
		r->maxdiff = max_abs_diff_f32(y, y2, (size_t)ACT_N);
		snprintf(r->note, sizeof r->note, "plan %s, path %s; onednn impl %s", desc,
			 ops_kfam_path(OPS_KF_ACT), dn.impl);
		dn_prim_free(&dn);
		op_release(&run);
	}
out:
	dn_prim_free(&dn);
	op_release(&run);
	free(y2);
	free(y3);
	return rc;
}

/* ---- qgemm ---------------------------------------------------------------------------- */

#define QG_M 8
#define QG_N 64
#define QG_K ((int64_t)1 << 20)

/* oneDNN matmul u8 (M,K) x s8 (K,N) -> s32 on opreview's a and b (b is
 * stored [N][K], i.e. (K,N) in tag ba) into c (caller's). any_b: weights in
 * the primitive's preferred layout, reordered here, untimed. */
static int dn_matmul_new(int any_b, const uint8_t *a, const int8_t *b, int32_t *c,
			 struct dn_prim *p, struct opr_error *err)
{
	static const int kinds[3] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST };
	dnnl_memory_desc_t amd, bmd, umd, cmd;
	dnnl_matmul_desc_t md;
	dnnl_dims_t ad = { QG_M, QG_K }, bd = { QG_K, QG_N }, cd = { QG_M, QG_N };
	int rc = 0;

	memset(p, 0, sizeof *p);
	DN_TRY(dnnl_memory_desc_init_by_tag(&amd, 2, ad, dnnl_u8, dnnl_ab), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&umd, 2, bd, dnnl_s8, dnnl_ba), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_s8,
					    any_b ? dnnl_format_tag_any : dnnl_ba), "memory desc");
	DN_TRY(dnnl_memory_desc_init_by_tag(&cmd, 2, cd, dnnl_s32, dnnl_ab), "memory desc");
	DN_TRY(dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd), "matmul desc");
	DN_TRY(dnnl_primitive_desc_create(&p->pd, &md, NULL, dn_eng, NULL), "matmul pd");
	dn_impl_name(p->pd, p->impl, sizeof p->impl);
	const dnnl_memory_desc_t *pbmd = dnnl_primitive_desc_query_md(p->pd, dnnl_query_weights_md, 0);
	if (dnnl_memory_desc_equal(pbmd, &umd)) {
		DN_TRY(dnnl_memory_create(&p->mem[1], &umd, dn_eng, (void *)b), "memory");
	} else if ((rc = dn_reorder(&umd, (void *)b, pbmd, &p->mem[1], err)) < 0) {
		goto out;
	}
	DN_TRY(dnnl_memory_create(&p->mem[0], &amd, dn_eng, (void *)a), "memory");
	DN_TRY(dnnl_memory_create(&p->mem[2], &cmd, dn_eng, c), "memory");
	rc = dn_finish(p, 3, kinds, err);
out:
	if (rc < 0)
		dn_prim_free(p);
	return rc;
}

struct sgemm_ctx {
	const float *a, *b;
	float *c;
};

static int sgemm_call(void *ctx, struct opr_error *err)
{
	struct sgemm_ctx *s = ctx;
	(void)err;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, QG_M, QG_N, (blasint)QG_K, 1.0f,
		    s->a, (blasint)QG_K, s->b, (blasint)QG_K, 0.0f, s->c, QG_N);
	return 0;
}

static int case_qgemm(struct opr_error *err)
{
	struct ops_workload w;
	struct op_run run;
	struct dn_prim dn[2];
	struct stats gst[4];
	struct bench_item items[4];
	struct timing tm = { 2, 11, 41, 4.0 };
	char desc[128];
	int32_t c[2][QG_M * QG_N];
	float *af = NULL, *bf = NULL, cf[QG_M * QG_N];
	double ops = 2.0 * QG_M * QG_N * (double)QG_K;
	int rc, dn_best;

	memset(dn, 0, sizeof dn);
	memset(&w, 0, sizeof w);
	w.group = OPS_G_QGEMM;
	w.dtype = OPS_S8;
	w.gemm = (struct ops_gemm_shape){ QG_M, QG_N, QG_K };
	w.quant = (struct ops_quant){ .a = OPS_U8, .a_zero_point = 0, .a_scale = 0.02f,
				      .b_per_channel = 1, .out = OPS_F32 };
	if ((rc = op_setup(&w, NULL, "bench-qgemm", &run, desc, sizeof desc, err)) < 0)
		return rc;
	/* oneDNN's u8 x s8 path on AVX2 (no VNNI) multiplies with vpmaddubsw,
	 * whose int16 pair sums saturate at 32767 (255 * 127 * 2 = 64770 does
	 * not fit), so its s32 result is not exact on full-range B. B is mapped
	 * to 7 bits (-64..63, pair sums <= 32640) so both sides are exact and
	 * comparable; opreview is exact on the full range. */
	struct ops_tensor *tb = ops_instance_tensor(run.inst, "b");
	if (!tb) {
		rc = opr_error_set(err, OPR_EINTERNAL, "qgemm instance lacks tensor 'b'");
		goto out;
	}
	for (int64_t i = 0; i < tb->count; i++) {
		int8_t *bv = tb->data;
		bv[i] = (int8_t)(((int)bv[i] + 128) / 2 - 64);
	}
	/* (what the instance keeps from B, its packed copy, is derived again) */
	if ((rc = ops_instance_input_changed(run.inst, "b", err)) < 0)
		goto out;
	if ((rc = ops_instance_run(run.dev, run.inst, err)) < 0)
		goto out;
	const uint8_t *a = op_tensor(&run, "a");
	const int8_t *b = op_tensor(&run, "b");
	const float *sb = op_tensor(&run, "scale_b");
	const float *y = ops_instance_output(run.inst, NULL);
	if (!a || !b || !sb) {
		rc = opr_error_set(err, OPR_EINTERNAL, "qgemm instance lacks its tensors");
		goto out;
	}
	for (int v = 0; v < 2; v++) {
		for (int i = 0; i < QG_M * QG_N; i++)
			c[v][i] = INT32_MIN;
		if ((rc = dn_matmul_new(v, a, b, c[v], &dn[v], err)) < 0)
			goto out;
	}
	/* OpenBLAS sgemm on the same values in fp32, a reference point only */
	af = malloc((size_t)QG_M * QG_K * sizeof(float));
	bf = malloc((size_t)QG_N * QG_K * sizeof(float));
	if (!af || !bf) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the sgemm operands");
		goto out;
	}
	for (size_t i = 0; i < (size_t)QG_M * QG_K; i++)
		af[i] = (float)a[i];
	for (size_t i = 0; i < (size_t)QG_N * QG_K; i++)
		bf[i] = (float)b[i];
	struct sgemm_ctx sc = { af, bf, cf };
	items[0] = (struct bench_item){ op_call, op_before, &run };
	items[1] = (struct bench_item){ dn_call, NULL, &dn[0] };
	items[2] = (struct bench_item){ dn_call, NULL, &dn[1] };
	items[3] = (struct bench_item){ sgemm_call, NULL, &sc };
	if ((rc = bench_group(items, 4, &tm, gst, err)) < 0)
		goto out;
	dn_best = gst[2].med_ns < gst[1].med_ns;

	const int64_t *acc = ops_qgemm_last_acc(run.inst);
	if (!acc) {
		rc = opr_error_set(err, OPR_EINTERNAL, "qgemm instance has no accumulators");
		goto out;
	}
	double acc_diff = 0.0, y_diff = 0.0, other = 0.0, rel = 0.0;
	for (int i = 0; i < QG_M; i++)
		for (int j = 0; j < QG_N; j++) {
			int e = i * QG_N + j;
			double d = fabs((double)acc[e] - (double)c[dn_best][e]);
			double d2 = fabs((double)acc[e] - (double)c[!dn_best][e]);
			double yr = (double)(float)((double)w.quant.a_scale * (double)sb[j] *
						    (double)c[dn_best][e]);
			double dy = fabs((double)y[e] - yr);
			double dr = fabs((double)cf[e] - (double)acc[e]) / fmax(1.0, fabs((double)acc[e]));
			acc_diff = d > acc_diff ? d : acc_diff;
			other = d2 > other ? d2 : other;
			y_diff = !(dy <= y_diff) ? (isnan(dy) ? INFINITY : dy) : y_diff;
			rel = !(dr <= rel) ? (isnan(dr) ? INFINITY : dr) : rel;
		}
	struct row *r = row_add("qgemm u8.s8 8x64x2^20");
	r->ours = gst[0];
	r->work = ops;
	r->unit = "GOPS";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "onednn matmul s32 %s", dn_best ? "b any" : "b ba");
	r->peer_st = gst[1 + dn_best];
	row_target(r, TGT_QGEMM, "onednn");
	r->has_diff = 1;
	r->maxdiff = acc_diff;
	snprintf(r->note, sizeof r->note,
		 "plan %s, path %s; B mapped to 7 bits (see the source); ours timed with the dequant to "
		 "fp32 in the same launch (y diff vs onednn s32 dequantised %.3g); diff = s32 "
		 "accumulators; onednn impl %s; other B layout %.0f ns (%s, diff %.3g)", desc,
		 ops_kfam_path(OPS_KF_QGEMM), y_diff, dn[dn_best].impl, gst[1 + !dn_best].med_ns, dn[!dn_best].impl, other);

	r = row_add("qgemm vs openblas sgemm fp32");
	r->ours = gst[0];
	r->work = ops;
	r->unit = "GOPS";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "openblas sgemm (fp32)");
	r->peer_st = gst[3];
	r->has_diff = 1;
	r->maxdiff = rel;
	snprintf(r->note, sizeof r->note,
		 "reference point: no int8 gemm in this openblas; B fp32 [N][K] (256 MiB), "
		 "peer figure in GFLOP/s; diff = max relative error of the fp32 sums");
	rc = 0;
out:
	free(af);
	free(bf);
	dn_prim_free(&dn[0]);
	dn_prim_free(&dn[1]);
	op_release(&run);
	return rc;
}

/* ---- permute ------------------------------------------------------------------------------ */

#define PM_R 4096
#define PM_C 70000

struct omat_ctx {
	const float *x;
	float *y;
};

static int omat_call(void *ctx, struct opr_error *err)
{
	struct omat_ctx *o = ctx;
	(void)err;
	cblas_somatcopy(CblasRowMajor, CblasTrans, PM_R, PM_C, 1.0f, o->x, PM_C, o->y, PM_R);
	return 0;
}

static int case_permute(struct opr_error *err)
{
	struct ops_workload w;
	struct op_run run;
	struct stats gst[3];
	struct bench_item items[3];
	struct timing tm = { 1, 5, 11, 5.0 };
	size_t n = (size_t)PM_R * PM_C, bytes = n * sizeof(float);
	float *y2 = NULL, *y3 = NULL;
	char desc[128];
	int rc;

	memset(&w, 0, sizeof w);
	w.group = OPS_G_PERMUTE;
	w.dtype = OPS_F32;
	w.tensor.rank = 2;
	w.tensor.dims[0] = PM_R;
	w.tensor.dims[1] = PM_C;
	w.tensor.perm[0] = 1;
	w.tensor.perm[1] = 0;
	if ((rc = op_setup(&w, NULL, "bench-permute", &run, desc, sizeof desc, err)) < 0)
		return rc;
	const float *x = op_tensor(&run, "x");
	const float *y = ops_instance_output(run.inst, NULL);
	y2 = big_alloc(bytes);
	y3 = big_alloc(bytes);
	if (!y2 || !y3) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the permute peer outputs");
		goto out;
	}
	memset(y3, 0xFF, bytes);
	struct copy_ctx cc = { y2, x, NULL, n };
	struct omat_ctx oc = { x, y3 };
	items[0] = (struct bench_item){ op_call, op_before, &run };
	items[1] = (struct bench_item){ copy_call, NULL, &cc };
	items[2] = (struct bench_item){ omat_call, NULL, &oc };
	if ((rc = bench_group(items, 3, &tm, gst, err)) < 0)
		goto out;
	/* exact check of ours against the definition y[c][r] = x[r][c] */
	double diff = 0.0;
	for (size_t rr = 0; rr < PM_R; rr++)
		for (size_t col = 0; col < PM_C; col++) {
			double d = fabs((double)y[col * PM_R + rr] - (double)x[rr * PM_C + col]);
			diff = !(d <= diff) ? (isnan(d) ? INFINITY : d) : diff;
		}
	struct row *r = row_add("permute [4096,70000] (1,0)");
	r->ours = gst[0];
	r->work = 2.0 * (double)bytes;
	r->unit = "GB/s";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "memcpy 1.07 GiB");
	r->peer_st = gst[1];
	row_target(r, TGT_PERMUTE, "memcpy");
	r->has_diff = 1;
	r->maxdiff = diff;
	snprintf(r->note, sizeof r->note,
		 "plan %s, path %s; fp32; bytes read + written; diff vs y[c][r] = x[r][c]; the "
		 "256 MiB memcpy gave %.2f GB/s", desc, ops_kfam_path(OPS_KF_PERMUTE), copy_gbps);

	r = row_add("permute vs openblas somatcopy");
	r->ours = gst[0];
	r->work = 2.0 * (double)bytes;
	r->unit = "GB/s";
	r->has_peer = 1;
	snprintf(r->peer, sizeof r->peer, "cblas_somatcopy trans");
	r->peer_st = gst[2];
	r->has_diff = 1;
	r->maxdiff = max_abs_diff_f32(y, y3, n);
	snprintf(r->note, sizeof r->note, "information only (no target)");
	rc = 0;
out:
	free(y2);
	free(y3);
	op_release(&run);
	return rc;
}

/* ---- end to end (measured by bench.sh) ------------------------------------------------------ */

/* --e2e NAME WALL_S RSS_KIB EXIT LIMIT_S: one `opreview run` measured by the
 * script; exit 0, 10, 11 and 12 are verdicts, anything else a failure. */
static int add_e2e(char **argv, struct opr_error *err)
{
	char *end;
	double wall = strtod(argv[1], &end), limit;
	long rss, code;

	if (*end || wall < 0)
		return opr_error_set(err, OPR_EUSAGE, "--e2e wall time '%s' is not a number", argv[1]);
	rss = strtol(argv[2], &end, 10);
	if (*end)
		return opr_error_set(err, OPR_EUSAGE, "--e2e rss '%s' is not an integer", argv[2]);
	code = strtol(argv[3], &end, 10);
	if (*end)
		return opr_error_set(err, OPR_EUSAGE, "--e2e exit '%s' is not an integer", argv[3]);
	limit = strtod(argv[4], &end);
	if (*end || limit <= 0)
		return opr_error_set(err, OPR_EUSAGE, "--e2e limit '%s' is not a number", argv[4]);
	char name[48];
	snprintf(name, sizeof name, "opreview run %s", argv[0]);
	struct row *r = row_add(name);
	int ok = code == 0 || (code >= 10 && code <= 12);
	r->ours.med_ns = r->ours.p95_ns = r->ours.min_ns = wall * 1e9;
	r->ours.reps = 1;
	r->is_e2e = 1;
	r->rss_kib = rss;
	r->exit_code = code;
	r->check = CHECK_TIME_LE;
	r->bound = ok ? limit * 1e9 : -1.0; /* a failed run misses */
	snprintf(r->target, sizeof r->target, "< %g s", limit);
	snprintf(r->note, sizeof r->note, "wall %.2f s, peak RSS %.1f MiB, exit %ld%s", wall,
		 (double)rss / 1024.0, code, ok ? "" : " (failed)");
	return 0;
}

/* --exec CMD ARGS...: runs CMD (its stdout goes to our stderr) and prints
 * "WALL_S MAXRSS_KIB EXIT" from the wall clock and getrusage of the child,
 * for systems without GNU time. */
static int exec_child(char **argv)
{
	struct rusage ru;
	int status;
	double t0 = now_ns();
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "bench: fork failed: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		dup2(2, 1);
		execvp(argv[0], argv);
		fprintf(stderr, "bench: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		fprintf(stderr, "bench: wait failed: %s\n", strerror(errno));
		return 1;
	}
	printf("%.3f %ld %d\n", (now_ns() - t0) / 1e9, ru.ru_maxrss,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: bench [--out DIR] [--only limits|conv|convhalf|conv1x1|act|one|qgemm|permute|none]\n"
		   "             [--e2e NAME WALL_S RSS_KIB EXIT LIMIT_S]...\n"
		   "       bench --exec CMD [ARG]...\n");
}

/* The peers' thread pools take their sizes from the environment as their
 * libraries load, before main: a run without OMP_NUM_THREADS and
 * OPENBLAS_NUM_THREADS at 1 executes itself again with them, so that the
 * table's "single thread" is true however it is started (started without
 * them, oneDNN took both cores of a 2-core host and its bf16 conv read
 * twice as fast as ours single-threaded). Returns only on failure. */
static int single_thread_env(char **argv)
{
	const char *omp = getenv("OMP_NUM_THREADS"), *obl = getenv("OPENBLAS_NUM_THREADS");

	if (omp && !strcmp(omp, "1") && obl && !strcmp(obl, "1"))
		return 0;
	if (setenv("OMP_NUM_THREADS", "1", 1) < 0 || setenv("OPENBLAS_NUM_THREADS", "1", 1) < 0)
		return -1;
	execv("/proc/self/exe", argv);
	return -1;
}

int main(int argc, char **argv)
{
	struct opr_error err = { 0 };
	const char *outdir = "out", *only = NULL;
	double load0[3] = { 0, 0, 0 }, load1[3] = { 0, 0, 0 };
	char path[512];
	int rc = 0, failures = 0;

	if (argc > 2 && !strcmp(argv[1], "--exec"))
		return exec_child(argv + 2);
	if (single_thread_env(argv) < 0) {
		fprintf(stderr, "bench: cannot run again with OMP_NUM_THREADS=1: %s\n",
			strerror(errno));
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			outdir = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--e2e") && i + 5 < argc) {
			i += 5; /* added after the operator cases, in order */
		} else if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	bench_envelope(&env);
	if (getloadavg(load0, 3) < 0)
		load0[0] = NAN;
	if (dnnl_engine_create(&dn_eng, dnnl_cpu, 0) != dnnl_success ||
	    dnnl_stream_create(&dn_stream, dn_eng, dnnl_stream_default_flags) != dnnl_success) {
		fprintf(stderr, "bench: onednn engine could not be created\n");
		return 1;
	}
	double t0 = now_ns();
	static const struct { const char *name; int (*fn)(struct opr_error *); } cases[] = {
		{ "limits", case_limits }, { "conv", case_conv }, { "convhalf", case_conv_half },
		{ "conv1x1", case_conv_1x1 },
		{ "act", case_activation },
		{ "one", case_one_element }, { "qgemm", case_qgemm }, { "permute", case_permute },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		if (only && strcmp(only, cases[c].name))
			continue;
		fprintf(stderr, "bench: %s...\n", cases[c].name);
		if (cases[c].fn(&err) < 0) {
			/* reported in the table; the other cases still run */
			char name[48];
			snprintf(name, sizeof name, "case '%s'", cases[c].name);
			struct row *r = row_add(name);
			r->check = CHECK_VALUE_LT; /* always MISS */
			r->value = 1.0;
			snprintf(r->target, sizeof r->target, "runs");
			snprintf(r->note, sizeof r->note, "FAILED: %.300s", err.msg);
			fprintf(stderr, "bench: case '%s' failed: %s\n", cases[c].name, err.msg);
			failures++;
			memset(&err, 0, sizeof err);
		}
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--e2e") && i + 5 < argc) {
			if ((rc = add_e2e(argv + i + 1, &err)) < 0) {
				opr_error_print(&err, stderr);
				goto out;
			}
			i += 5;
		}
	double secs = (now_ns() - t0) / 1e9;
	if (getloadavg(load1, 3) < 0)
		load1[0] = NAN;

	const char *omp = getenv("OMP_NUM_THREADS"), *obl = getenv("OPENBLAS_NUM_THREADS");
	char head[1024];
	time_t now = time(NULL);
	char when[32];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	snprintf(head, sizeof head,
		 "opreview bench %s: single thread (OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s, "
		 "openblas threads %d, core %s), onednn %d.%d.%d cpu engine\n"
		 "load average 1 min: %.2f at start, %.2f at end; operator cases took %.1f s\n"
		 "ours = the operator's run on a real opreview device under the plan noted "
		 "(the planner's choice for envelope npu-a unless said), outputs checked once "
		 "after a poisoned run; peers run on the same input buffers\n"
		 "figures are work / median time; ours/peer is the throughput ratio\n"
		 "ours ran the host kernel path %s (the host has %s; OPREVIEW_ISA forces one); "
		 "the notes name each row's path and onednn's implementation\n\n",
		 when, omp ? omp : "unset", obl ? obl : "unset", openblas_get_num_threads(),
		 openblas_get_corename(), dnnl_version()->major, dnnl_version()->minor,
		 dnnl_version()->patch, load0[0], load1[0], secs, ops_isa_name(ops_isa_active()),
		 ops_isa_name(ops_isa_host_best()));

	fputs(head, stdout);
	print_table(stdout);
	if (mkdir(outdir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "bench: cannot create '%s': %s\n", outdir, strerror(errno));
		rc = 1;
		goto out;
	}
	snprintf(path, sizeof path, "%s/bench.txt", outdir);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench: cannot write '%s': %s\n", path, strerror(errno));
		rc = 1;
		goto out;
	}
	fputs(head, f);
	print_table(f);
	if (fclose(f) != 0) {
		fprintf(stderr, "bench: cannot write '%s'\n", path);
		rc = 1;
		goto out;
	}
	json_t *meta = json_pack("{s:s, s:s, s:s, s:i, s:s, s:f, s:f, s:f, s:f, s:s, s:s}", "date", when,
				 "omp_num_threads", omp ? omp : "unset",
				 "openblas_num_threads", obl ? obl : "unset",
				 "openblas_threads", openblas_get_num_threads(),
				 "openblas_core", openblas_get_corename(),
				 "load_start", isfinite(load0[0]) ? load0[0] : -1.0,
				 "load_end", isfinite(load1[0]) ? load1[0] : -1.0,
				 "seconds", secs, "copy_gbps", copy_gbps,
				 "kernel_isa", ops_isa_name(ops_isa_active()),
				 "host_best_isa", ops_isa_name(ops_isa_host_best()));
	snprintf(path, sizeof path, "%s/bench.json", outdir);
	if (!meta || write_json(path, meta) < 0) {
		fprintf(stderr, "bench: cannot write '%s'\n", path);
		rc = 1;
		goto out;
	}
	printf("\nwritten: %s/bench.txt %s/bench.json\n", outdir, outdir);
	rc = failures ? 1 : 0;
out:
	dnnl_stream_destroy(dn_stream);
	dnnl_engine_destroy(dn_eng);
	return rc < 0 ? 1 : rc;
}
