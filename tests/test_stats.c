/* tests/test_stats.c: the analyzer's statistics: quantile CIs and their coverage,
 * the round bootstrap on planted effects, rank tests, BH, the SLA gate, Jain. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analyze/stats.h"

/* ---- seeded test data: splitmix64 and Box-Muller normals ---- */

struct trng {
	uint64_t x;
};

static uint64_t t_next(struct trng *g)
{
	uint64_t z = (g->x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double t_unif(struct trng *g)
{
	return ((double)(t_next(g) >> 11) + 0.5) / 9007199254740992.0;
}

static double t_normal(struct trng *g)
{
	double u1 = t_unif(g), u2 = t_unif(g);

	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int cmp64(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	return (a > b) - (a < b);
}

/* lognormal ns: scale * exp(sigma N) */
static void fill_lognormal(struct trng *g, int64_t *x, size_t n, double scale,
			   double sigma)
{
	for (size_t i = 0; i < n; i++)
		x[i] = (int64_t)llround(scale * exp(sigma * t_normal(g)));
}

/* ---- quantiles ---- */

static void test_quantile_type7(void **state)
{
	const int64_t x[5] = { 10, 20, 30, 40, 50 };
	const double xd[5] = { 10, 20, 30, 40, 50 };

	(void)state;
	assert_true(ana_quantile(x, 5, 0.0) == 10.0);
	assert_true(ana_quantile(x, 5, 1.0) == 50.0);
	assert_true(ana_quantile(x, 5, 0.5) == 30.0);
	assert_true(fabs(ana_quantile(x, 5, 0.9) - 46.0) < 1e-12);  /* h = 3.6 */
	assert_true(fabs(ana_quantile(x, 5, 0.95) - 48.0) < 1e-12); /* h = 3.8 */
	assert_true(fabs(ana_quantile(x, 5, 0.3) - 22.0) < 1e-12);  /* h = 1.2 */
	assert_true(fabs(ana_quantile_f64(xd, 5, 0.95) - 48.0) < 1e-12);
	assert_true(ana_quantile(x, 1, 0.99) == 10.0);
	assert_true(isnan(ana_quantile(x, 0, 0.5)));
	assert_true(isnan(ana_quantile(x, 5, 1.5)));
}

/* The shared definitions by name (opreview.h): nearest rank, the normal
 * ranks of a 95% CI, the one growth rule and the text buffer. */
static void test_shared_definitions(void **state)
{
	const double xd[5] = { 10, 20, 30, 40, 50 };
	(void)state;
	/* nearest rank: the ceil(q n)-th smallest */
	assert_true(opr_quantile_nearest_rank(xd, 5, 0.5) == 30.0);  /* ceil 2.5 = 3 */
	assert_true(opr_quantile_nearest_rank(xd, 5, 0.95) == 50.0); /* ceil 4.75 = 5 */
	assert_true(opr_quantile_nearest_rank(xd, 5, 0.2) == 10.0);  /* ceil 1.0 = 1 */
	assert_true(opr_quantile_nearest_rank(xd, 5, 0.0) == 10.0);
	assert_true(isnan(opr_quantile_nearest_rank(xd, 0, 0.5)));
	assert_true(opr_quantile_type7(xd, 5, 0.3) == ana_quantile_f64(xd, 5, 0.3));
	/* n = 1000, q = 0.95: n q = 950, 1.96 sqrt(47.5) = 13.51 -> [936, 964] */
	size_t r = 0, t = 0;
	assert_int_equal(opr_quantile_ci95_ranks(1000, 0.95, &r, &t), 0);
	assert_int_equal(r, 936);
	assert_int_equal(t, 964);
	/* n = 20, q = 0.99: the upper rank leaves the sample */
	assert_int_equal(opr_quantile_ci95_ranks(20, 0.99, &r, &t), -1);
	/* growth: 16, 32, 64 ... with the contents kept */
	int *a = NULL;
	size_t n = 0, cap = 0;
	for (int i = 0; i < 100; i++) {
		assert_int_equal(OPR_GROW(a, n, cap, 16), 0);
		a[n++] = 3 * i;
	}
	assert_int_equal(cap, 128);
	for (int i = 0; i < 100; i++)
		assert_int_equal(a[i], 3 * i);
	size_t huge = (size_t)-1 / 2 + 1;
	assert_int_equal(opr_grow(&a, &huge, 16, sizeof *a), -1); /* would overflow */
	assert_non_null(a);
	free(a);
	struct opr_buf b = { 0 };
	for (int i = 0; i < 300; i++)
		opr_buf_printf(&b, "%d,", i);
	opr_buf_puts(&b, "end");
	char *text = opr_buf_take(&b);
	assert_non_null(text);
	assert_int_equal(strncmp(text, "0,1,2,", 6), 0);
	assert_non_null(strstr(text, ",299,end"));
	free(text);
	struct opr_buf e = { 0 };
	char *empty = opr_buf_take(&e);
	assert_string_equal(empty, "");
	free(empty);
}

/*
 * Minimum n of an equal-tailed 95% CI: max(q, 1 - q)^n <= 0.025.
 * p95: 0.95^71 = 0.0262 > 0.025 >= 0.95^72 = 0.0249, so 72.
 * p99: 0.99^367 = 0.025010 > 0.025 >= 0.99^368 = 0.024760, so 368: the rule of
 * thumb "367" is ln 0.025 / ln 0.99 = 367.03 rounded down, and at n = 367 the
 * upper tail P(K = n) exceeds 2.5%, so [X(1), X(367)] is not a 95% equal-tailed CI.
 */
static void test_min_samples(void **state)
{
	(void)state;
	assert_int_equal(ana_min_samples(0.95, 0.95), 72);
	assert_int_equal(ana_min_samples(0.99, 0.95), 368);
	assert_true(pow(0.99, 367) > 0.025 && pow(0.99, 368) <= 0.025);
	assert_int_equal(ana_min_samples(0.5, 0.95), 6);   /* 0.5^6 = 0.0156 */
	assert_int_equal(ana_min_samples(0.05, 0.95), 72); /* symmetric in q */
	assert_int_equal(ana_min_samples(0.99, 0.99), 528); /* 0.99^n <= 0.005 */
	assert_int_equal(ana_min_samples(1.0, 0.95), 0);
	assert_int_equal(ana_min_samples(0.5, 1.0), 0);
}

static void poison_qci(struct ana_qci *c)
{
	memset(c, 0xa5, sizeof(*c));
}

static void test_quantile_ci_availability(void **state)
{
	static const double qs[2] = { 0.95, 0.99 };
	int64_t *x = malloc(400 * sizeof(*x));
	struct trng g = { 11 };
	struct opr_error err = { 0 };
	struct ana_qci c;

	(void)state;
	assert_non_null(x);
	fill_lognormal(&g, x, 400, 1e6, 0.3);
	qsort(x, 400, sizeof(*x), cmp64);
	for (int i = 0; i < 2; i++) {
		size_t m = ana_min_samples(qs[i], 0.95);

		poison_qci(&c);
		assert_int_equal(ana_quantile_ci(x, m - 1, qs[i], 0.95, &c, &err), 0);
		assert_int_equal(c.available, 0);
		assert_non_null(c.reason);
		assert_int_equal(c.min_n, m);
		assert_true(isnan(c.lo) && isnan(c.hi));
		assert_true(c.estimate == ana_quantile(x, m - 1, qs[i]));

		poison_qci(&c);
		assert_int_equal(ana_quantile_ci(x, m, qs[i], 0.95, &c, &err), 0);
		assert_int_equal(c.available, 1);
		assert_null(c.reason);
		/* at the minimum the upper end is the maximum */
		assert_int_equal(c.s, m);
		assert_true(c.hi == (double)x[m - 1]);
		assert_true(c.lo == (double)x[c.r - 1]);
		assert_true(c.lo <= c.estimate && c.estimate <= c.hi);
		assert_true(c.coverage >= 0.95 && c.coverage < 1.0);
	}
	assert_int_equal(ana_quantile_ci(x, 400, 1.0, 0.95, &c, &err), OPR_EINPUT);
	assert_int_equal(err.code, OPR_EINPUT);
	assert_int_equal(ana_quantile_ci(x, 0, 0.5, 0.95, &c, &err), OPR_EINPUT);
	free(x);
}

/* Independent reference: r, s from the full binomial pmf summed in order. */
static void brute_ranks(size_t n, double q, double conf, size_t *r, size_t *s,
			double *cov)
{
	double a2 = (1.0 - conf) / 2.0, cum = 0.0, low = 0.0, high = 0.0;
	double *pmf = malloc((n + 1) * sizeof(*pmf));

	assert_non_null(pmf);
	for (size_t k = 0; k <= n; k++)
		pmf[k] = exp(lgamma((double)n + 1) - lgamma((double)k + 1) -
			     lgamma((double)(n - k) + 1) + (double)k * log(q) +
			     (double)(n - k) * log(1 - q));
	*r = 0;
	for (size_t k = 0; k < n; k++) {
		cum += pmf[k]; /* P(K <= k) */
		if (cum <= a2) {
			*r = k + 1;
			low = cum;
		}
	}
	*s = 0;
	cum = 0.0;
	for (size_t k = n; k >= 1; k--) {
		cum += pmf[k]; /* P(K >= k) */
		if (cum <= a2) {
			*s = k;
			high = cum;
		}
	}
	*cov = 1.0 - low - high;
	free(pmf);
}

static void test_quantile_ci_ranks_exact(void **state)
{
	static const size_t ns[] = { 10, 80, 368, 500, 2000, 20000 };
	static const double qs[] = { 0.01, 0.05, 0.5, 0.9, 0.95, 0.99 };
	static const double confs[] = { 0.9, 0.95, 0.99 };
	int64_t *x = malloc(20000 * sizeof(*x));
	struct trng g = { 12 };
	struct ana_qci c;
	int compared = 0;

	(void)state;
	assert_non_null(x);
	fill_lognormal(&g, x, 20000, 1e6, 0.4);
	qsort(x, 20000, sizeof(*x), cmp64);
	/* hand-computed: Binomial(10, 1/2), a2 = 0.05: P(K <= 1) = 11/1024 <= a2 <
	 * P(K <= 2) = 56/1024, so r = 2; symmetric s = 9; coverage 1 - 22/1024 */
	poison_qci(&c);
	assert_int_equal(ana_quantile_ci(x, 10, 0.5, 0.9, &c, NULL), 0);
	assert_int_equal(c.r, 2);
	assert_int_equal(c.s, 9);
	assert_true(fabs(c.coverage - (1.0 - 22.0 / 1024.0)) < 1e-12);
	assert_true(c.lo == (double)x[1] && c.hi == (double)x[8]);

	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (size_t j = 0; j < sizeof(qs) / sizeof(qs[0]); j++)
			for (size_t k = 0; k < sizeof(confs) / sizeof(confs[0]); k++) {
				size_t r, s;
				double cov;

				if (ns[i] < ana_min_samples(qs[j], confs[k]))
					continue;
				brute_ranks(ns[i], qs[j], confs[k], &r, &s, &cov);
				poison_qci(&c);
				assert_int_equal(ana_quantile_ci(x, ns[i], qs[j], confs[k],
								 &c, NULL), 0);
				assert_int_equal(c.available, 1);
				assert_int_equal(c.r, r);
				assert_int_equal(c.s, s);
				assert_true(fabs(c.coverage - cov) < 1e-9);
				compared++;
			}
	assert_true(compared >= 50);
	free(x);
}

static void test_quantile_ci_large_n(void **state)
{
	const size_t n = 1000000;
	int64_t *x = malloc(n * sizeof(*x));
	struct ana_qci c;
	double mean = 0.99 * (double)n, sd = sqrt((double)n * 0.99 * 0.01);

	(void)state;
	assert_non_null(x);
	for (size_t i = 0; i < n; i++)
		x[i] = (int64_t)(3 * i + 1); /* already sorted, distinct */
	poison_qci(&c);
	assert_int_equal(ana_quantile_ci(x, n, 0.99, 0.95, &c, NULL), 0);
	assert_int_equal(c.available, 1);
	/* normal approximation: K in mean -/+ 1.96 sd (+1 for the rank convention) */
	assert_true(fabs((double)c.r - (mean - 1.96 * sd)) < 4.0);
	assert_true(fabs((double)c.s - (mean + 1.96 * sd + 1.0)) < 4.0);
	assert_true(c.coverage >= 0.95 && c.coverage < 0.952);
	assert_true(c.lo == (double)x[c.r - 1] && c.hi == (double)x[c.s - 1]);
	free(x);
}

/* Coverage of the distribution-free CI: true p95 of a lognormal. */
static void test_quantile_ci_coverage(void **state)
{
	const size_t n = 1000;
	const double scale = 1e6, sigma = 0.5;
	const double truth = scale * exp(sigma * 1.6448536269514722);
	int64_t *x = malloc(n * sizeof(*x));
	struct trng g = { 2024 };
	int inside = 0;

	(void)state;
	assert_non_null(x);
	for (int t = 0; t < 200; t++) {
		struct ana_qci c;

		fill_lognormal(&g, x, n, scale, sigma);
		qsort(x, n, sizeof(*x), cmp64);
		poison_qci(&c);
		assert_int_equal(ana_quantile_ci(x, n, 0.95, 0.95, &c, NULL), 0);
		assert_int_equal(c.available, 1);
		if (c.lo <= truth && truth <= c.hi)
			inside++;
	}
	print_message("# p95 CI coverage: %d of 200 (nominal 95%%)\n", inside);
	assert_true(inside >= 180);
	free(x);
}

/* ---- planted effects on interleaved rounds ---- */

struct design {
	int64_t *a, *b;
	size_t *a_off, *b_off;
	struct ana_rounds rr;
};

/* R rounds of k samples each side; per round a shared drift exp(0.03 N), a
 * per-side round jitter exp(0.01 N), per sample exp(0.06 N); B scaled by effect. */
static void make_design(struct design *d, struct trng *g, size_t R, size_t k,
			double effect)
{
	d->a = malloc(R * k * sizeof(int64_t));
	d->b = malloc(R * k * sizeof(int64_t));
	d->a_off = malloc((R + 1) * sizeof(size_t));
	d->b_off = malloc((R + 1) * sizeof(size_t));
	assert_true(d->a && d->b && d->a_off && d->b_off);
	for (size_t r = 0; r <= R; r++)
		d->a_off[r] = d->b_off[r] = r * k;
	for (size_t r = 0; r < R; r++) {
		double drift = exp(0.03 * t_normal(g));
		double ja = exp(0.01 * t_normal(g)), jb = exp(0.01 * t_normal(g));

		for (size_t i = 0; i < k; i++) {
			d->a[r * k + i] = (int64_t)llround(1e6 * drift * ja *
							   exp(0.06 * t_normal(g)));
			d->b[r * k + i] = (int64_t)llround(1e6 * effect * drift * jb *
							   exp(0.06 * t_normal(g)));
		}
	}
	d->rr = (struct ana_rounds){ d->a, d->b, d->a_off, d->b_off, R };
}

static void free_design(struct design *d)
{
	free(d->a);
	free(d->b);
	free(d->a_off);
	free(d->b_off);
}

static const struct ana_compare_opts opts95 = {
	.q = 0.95, .threshold = 0.05, .alpha = 0.05, .conf = 0.95,
	.nboot = 1000, .seed = 7,
};

/* Runs 100 seeded comparisons with B = effect * A in distribution; returns how
 * many came out `want`, and how many passed and had the true ratio in the CI. */
static int count_outcome(double effect, uint64_t seed, enum ana_outcome want,
			 int *npass, int *ncovered)
{
	struct trng g = { seed };
	int hits = 0, pass = 0, covered = 0;

	for (int t = 0; t < 100; t++) {
		struct design d;
		struct ana_comparison c;
		struct ana_compare_opts o = opts95;
		struct opr_error err = { 0 };
		size_t R = 40 + (size_t)(t_next(&g) % 21);

		make_design(&d, &g, R, 10, effect);
		memset(&c, 0xa5, sizeof(c));
		o.seed = seed + (uint64_t)t;
		assert_int_equal(ana_compare_rounds(&d.rr, &o, &c, &err), 0);
		assert_true(c.outcome == ANA_CMP_PASS || c.outcome == ANA_CMP_INCONCLUSIVE ||
			    c.outcome == ANA_CMP_REGRESSION);
		assert_true(c.ratio.lo <= c.ratio.ratio && c.ratio.ratio <= c.ratio.hi);
		assert_int_equal(c.underpowered, 0); /* MDE about 2% at R 40-60 */
		hits += c.outcome == want;
		pass += c.outcome == ANA_CMP_PASS;
		covered += c.ratio.lo <= effect && effect <= c.ratio.hi;
		free_design(&d);
	}
	*npass = pass;
	*ncovered = covered;
	return hits;
}

static void test_planted_regression(void **state)
{
	int pass, covered, hits = count_outcome(1.10, 1000, ANA_CMP_REGRESSION, &pass,
						&covered);

	(void)state;
	print_message("# 10%% p95 regression flagged in %d of 100, ratio CI covers "
		      "1.10 in %d\n", hits, covered);
	assert_true(hits >= 95);
	assert_int_equal(pass, 0);
	assert_true(covered >= 85);
}

static void test_aa_false_alarms(void **state)
{
	int pass, covered, hits = count_outcome(1.0, 5000, ANA_CMP_REGRESSION, &pass,
						&covered);

	(void)state;
	print_message("# A/A flagged in %d of 100, passed in %d, ratio CI covers 1 "
		      "in %d\n", hits, pass, covered);
	assert_true(hits <= 5);
	assert_true(pass >= 80);
	assert_true(covered >= 85);
}

static void test_ratio_ci_deterministic(void **state)
{
	struct trng g = { 77 };
	struct design d;
	struct ana_ratio r1, r2, r3;
	struct opr_error err = { 0 };
	double qa, qb;
	int64_t *sa, *sb;
	size_t n;

	(void)state;
	make_design(&d, &g, 50, 8, 1.2);
	memset(&r1, 0xa5, sizeof(r1));
	memset(&r2, 0x5a, sizeof(r2));
	assert_int_equal(ana_ratio_ci(&d.rr, 0.99, 500, 42, 0.95, &r1, &err), 0);
	assert_int_equal(ana_ratio_ci(&d.rr, 0.99, 500, 42, 0.95, &r2, &err), 0);
	assert_int_equal(ana_ratio_ci(&d.rr, 0.99, 500, 43, 0.95, &r3, &err), 0);
	assert_memory_equal(&r1.ratio, &r2.ratio, sizeof(double));
	assert_memory_equal(&r1.lo, &r2.lo, sizeof(double));
	assert_memory_equal(&r1.hi, &r2.hi, sizeof(double));
	assert_true(r1.lo != r3.lo || r1.hi != r3.hi);
	/* the point estimate is the ratio of full-sample type-7 quantiles */
	n = 400;
	sa = malloc(n * sizeof(*sa));
	sb = malloc(n * sizeof(*sb));
	assert_true(sa && sb);
	memcpy(sa, d.a, n * sizeof(*sa));
	memcpy(sb, d.b, n * sizeof(*sb));
	qsort(sa, n, sizeof(*sa), cmp64);
	qsort(sb, n, sizeof(*sb), cmp64);
	qa = ana_quantile(sa, n, 0.99);
	qb = ana_quantile(sb, n, 0.99);
	assert_true(r1.base_ns == qa && r1.cand_ns == qb);
	assert_true(fabs(r1.ratio - qb / qa) < 1e-12);
	assert_true(r1.lo < r1.ratio && r1.ratio < r1.hi);
	assert_true(r1.lo > 1.05 && r1.hi < 1.40); /* planted 1.2 */
	free(sa);
	free(sb);

	/* bad designs */
	d.a_off[3] = d.a_off[2];
	assert_int_equal(ana_ratio_ci(&d.rr, 0.95, 500, 1, 0.95, &r1, &err), OPR_EINPUT);
	assert_int_equal(err.code, OPR_EINPUT);
	assert_non_null(strstr(err.msg, "round 2"));
	d.a_off[3] = 24;
	d.rr.nrounds = 1;
	assert_int_equal(ana_ratio_ci(&d.rr, 0.95, 500, 1, 0.95, &r1, &err), OPR_EINPUT);
	d.rr.nrounds = 50;
	assert_int_equal(ana_ratio_ci(&d.rr, 0.95, 1, 1, 0.95, &r1, &err), OPR_EINPUT);
	assert_int_equal(ana_ratio_ci(&d.rr, 0.95, 500, 1, 0.95, &r1, &err), 0);
	free_design(&d);
}

/* Per-round medians known by construction: round r = { m_r - 1, m_r, m_r + 1 }. */
static void test_noise_floor_mde(void **state)
{
	enum { R = 8, K = 3 };
	static const double med[R] = { 1000, 1100, 900, 1050, 950, 1000, 1020, 980 };
	int64_t a[R * K];
	size_t off[R + 1];
	struct ana_rounds rr;
	struct ana_noise nf;
	struct opr_error err = { 0 };
	double mean = 0.0, ss = 0.0, c;

	(void)state;
	for (size_t r = 0; r < R; r++) {
		off[r] = r * K;
		a[r * K + 0] = (int64_t)med[r] + 1;
		a[r * K + 1] = (int64_t)med[r] - 1;
		a[r * K + 2] = (int64_t)med[r];
		mean += med[r] / R;
	}
	off[R] = R * K;
	for (size_t r = 0; r < R; r++)
		ss += (med[r] - mean) * (med[r] - mean);
	c = sqrt(ss / (R - 1)) / mean;
	rr = (struct ana_rounds){ a, NULL, off, NULL, R }; /* baseline only */
	memset(&nf, 0xa5, sizeof(nf));
	assert_int_equal(ana_noise_floor(&rr, 0.5, 400, 3, 0.95, &nf, &err), 0);
	assert_int_equal(nf.nrounds, R);
	assert_true(fabs(nf.round_cv - c) < 1e-12);
	assert_true(fabs(nf.mde - 2.8 * sqrt(2.0 / R) * c) < 1e-12);
	/* type-7 medians of the 12 samples of the odd rounds (979 .. 1101):
	 * (1001 + 1049) / 2, of the even rounds (899 .. 1021): (951 + 999) / 2 */
	assert_true(fabs(nf.aa_ratio - 1025.0 / 975.0) < 1e-12);
	assert_true(nf.aa_lo <= nf.aa_ratio && nf.aa_ratio <= nf.aa_hi);
	assert_true(fabs(nf.floor - (nf.aa_hi - nf.aa_lo) / 2.0) < 1e-15);
	assert_true(nf.floor > 0.0 && nf.floor < 0.2);
	rr.nrounds = 3;
	assert_int_equal(ana_noise_floor(&rr, 0.5, 400, 3, 0.95, &nf, &err), OPR_EINPUT);
}

static void test_classify(void **state)
{
	struct ana_comparison c;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.noise.mde = 0.02;
	c.ratio.lo = 1.07;
	c.ratio.hi = 1.12;
	c.p_adjusted = 0.001;
	ana_classify(&c, &opts95);
	assert_int_equal(c.outcome, ANA_CMP_REGRESSION);
	assert_int_equal(c.significant, 1);
	assert_int_equal(c.underpowered, 0);
	c.p_adjusted = 0.2; /* magnitude without significance */
	ana_classify(&c, &opts95);
	assert_int_equal(c.outcome, ANA_CMP_INCONCLUSIVE);
	c.ratio.lo = 1.01; /* straddles 1.05 */
	c.p_adjusted = 0.001;
	ana_classify(&c, &opts95);
	assert_int_equal(c.outcome, ANA_CMP_INCONCLUSIVE);
	assert_non_null(c.reason);
	c.ratio.lo = 1.01;
	c.ratio.hi = 1.04;
	ana_classify(&c, &opts95);
	assert_int_equal(c.outcome, ANA_CMP_PASS);
	assert_int_equal(c.faster, 0);
	c.ratio.lo = 0.90;
	c.ratio.hi = 0.97;
	c.noise.mde = 0.08;
	ana_classify(&c, &opts95);
	assert_int_equal(c.outcome, ANA_CMP_PASS);
	assert_int_equal(c.faster, 1);
	assert_int_equal(c.underpowered, 1);
}

/* ---- rank tests ---- */

static void test_mann_whitney(void **state)
{
	const int64_t a1[3] = { 1, 1, 2 }, b1[3] = { 1, 2, 2 };
	const int64_t a2[3] = { 1, 2, 3 }, b2[3] = { 4, 5, 6 };
	enum { N = 500 };
	int64_t *x = malloc(N * sizeof(*x)), *y = malloc(N * sizeof(*y));
	struct trng g = { 99 };
	struct opr_error err = { 0 };
	double u = -1, p = -1;

	(void)state;
	assert_true(x && y);
	/* ties: mid-ranks 2,2,2,5,5,5; R_a = 9, U = 3, var = 0.75 (7 - 48/30) = 4.05,
	 * z = (1.5 - 0.5) / sqrt(4.05) */
	assert_int_equal(ana_mann_whitney(a1, 3, b1, 3, &u, &p, &err), 0);
	assert_true(u == 3.0);
	assert_true(fabs(p - 0.6192567541768621) < 1e-12);
	assert_int_equal(ana_mann_whitney(a2, 3, b2, 3, &u, &p, &err), 0);
	assert_true(u == 0.0);
	assert_true(p < 0.1);

	fill_lognormal(&g, x, N, 1e6, 0.2);
	u = p = -1;
	assert_int_equal(ana_mann_whitney(x, N, x, N, &u, &p, &err), 0);
	assert_true(u == N * N / 2.0);
	assert_true(p > 0.999);
	for (size_t i = 0; i < N; i++)
		y[i] = (int64_t)llround((double)x[(i * 7) % N] * 1.10);
	fill_lognormal(&g, x, N, 1e6, 0.2);
	assert_int_equal(ana_mann_whitney(x, N, y, N, &u, &p, &err), 0);
	assert_true(p < 0.001);
	assert_true(u < N * N / 2.0); /* a is the smaller */
	assert_int_equal(ana_mann_whitney(x, 0, y, N, &u, &p, &err), OPR_EINPUT);
	free(x);
	free(y);
}

static void test_ks(void **state)
{
	const int64_t a1[4] = { 1, 2, 3, 4 }, b1[4] = { 3, 4, 5, 6 };
	enum { N = 500 };
	int64_t *x = malloc(N * sizeof(*x)), *y = malloc(N * sizeof(*y));
	struct trng g = { 5 };
	struct opr_error err = { 0 };
	double d = -1, p = -1, pm;

	(void)state;
	assert_true(x && y);
	/* D = 1/2; lambda = (sqrt 2 + 0.12 + 0.11 / sqrt 2) / 2 = 0.80600 */
	assert_int_equal(ana_ks(a1, 4, b1, 4, &d, &p, &err), 0);
	assert_true(d == 0.5);
	assert_true(fabs(p - 0.5344157192165071) < 1e-9);

	fill_lognormal(&g, x, N, 1e6, 0.2);
	assert_int_equal(ana_ks(x, N, x, N, &d, &p, &err), 0);
	assert_true(d == 0.0 && p == 1.0);
	for (size_t i = 0; i < N; i++)
		y[i] = (int64_t)llround((double)x[i] * 1.10);
	fill_lognormal(&g, x, N, 1e6, 0.2);
	assert_int_equal(ana_ks(x, N, y, N, &d, &p, &err), 0);
	assert_true(p < 0.001 && d > 0.15);
	/* a change in spread with the same median: KS sees it, MWU does not
	 * (why Pinpoint takes the smaller of the two p-values) */
	for (size_t i = 0; i < N; i++) {
		x[i] = (int64_t)llround(1e6 + 1e4 * t_normal(&g));
		y[i] = (int64_t)llround(1e6 + 4e4 * t_normal(&g));
	}
	assert_int_equal(ana_ks(x, N, y, N, &d, &p, &err), 0);
	assert_int_equal(ana_mann_whitney(x, N, y, N, NULL, &pm, &err), 0);
	print_message("# spread change: KS p %.3g, MWU p %.3g\n", p, pm);
	assert_true(p < 0.001);
	assert_true(pm > 0.01);
	free(x);
	free(y);
}

/* ---- Benjamini-Hochberg ---- */

static void test_bh(void **state)
{
	const double p[5] = { 0.01, 0.04, 0.03, 0.005, 0.20 };
	/* sorted 0.005 0.01 0.03 0.04 0.2 -> n p / k = 0.025 0.025 0.05 0.05 0.2 */
	const double want[5] = { 0.025, 0.05, 0.05, 0.025, 0.2 };
	const int want_rej[5] = { 1, 1, 1, 1, 0 };
	const double p2[3] = { 0.021, 0.02, 0.5 };
	/* n p / k = 0.06 (0.02, k 1), 0.0315 (0.021, k 2), 0.5: running minimum
	 * from the top lowers the first to 0.0315 */
	const double want2[3] = { 0.0315, 0.0315, 0.5 };
	const double bad[2] = { 0.1, 1.5 };
	double adj[5];
	int rej[5];
	struct opr_error err = { 0 };

	(void)state;
	for (int i = 0; i < 5; i++) {
		adj[i] = NAN;
		rej[i] = -1;
	}
	assert_int_equal(ana_bh(p, 5, 0.05, adj, rej, &err), 0);
	for (int i = 0; i < 5; i++) {
		assert_true(fabs(adj[i] - want[i]) < 1e-12);
		assert_int_equal(rej[i], want_rej[i]);
	}
	for (int i = 0; i < 5; i++) {
		adj[i] = NAN;
		rej[i] = -1;
	}
	assert_int_equal(ana_bh(p2, 3, 0.03, adj, rej, &err), 0);
	for (int i = 0; i < 3; i++)
		assert_true(fabs(adj[i] - want2[i]) < 1e-12);
	assert_int_equal(rej[0], 0);
	assert_int_equal(rej[1], 0);
	assert_int_equal(ana_bh(p2, 3, 0.04, adj, rej, &err), 0);
	assert_int_equal(rej[0], 1);
	assert_int_equal(rej[1], 1);
	assert_int_equal(rej[2], 0);
	assert_int_equal(ana_bh(bad, 2, 0.05, adj, rej, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "outside"));
}

/* ---- SLA early stopping, MLPerf LoadGen numbers from METHODS ---- */

static void test_sla_early_stop(void **state)
{
	static const size_t t[3] = { 0, 1, 5 }, want[3] = { 459, 662, 1307 };
	struct ana_sla s;
	struct opr_error err = { 0 };

	(void)state;
	for (int i = 0; i < 3; i++) {
		memset(&s, 0xa5, sizeof(s));
		assert_int_equal(ana_sla_early_stop(want[i], t[i], 0.99, 0.99, &s, &err), 0);
		assert_int_equal(s.min_n, want[i]);
		assert_int_equal(s.supported, 1);
		assert_true(s.p_value <= 0.01);
		assert_int_equal(ana_sla_early_stop(want[i] - 1, t[i], 0.99, 0.99, &s, &err), 0);
		assert_int_equal(s.min_n, want[i]);
		assert_int_equal(s.supported, 0);
		assert_true(s.p_value > 0.01);
	}
	/* t = 0: p^n <= 1 - c exactly */
	assert_int_equal(ana_sla_early_stop(1000, 0, 0.99, 0.99, &s, &err), 0);
	assert_true(fabs(s.p_value - pow(0.99, 1000)) < 1e-15);
	/* many overs: needs about t / (1 - p) samples and more */
	assert_int_equal(ana_sla_early_stop(100, 100, 0.99, 0.99, &s, &err), 0);
	assert_int_equal(s.supported, 0);
	assert_true(s.min_n > 10000 && s.min_n < 13000);
	assert_int_equal(ana_sla_early_stop(5, 6, 0.99, 0.99, &s, &err), OPR_EINPUT);
	assert_int_equal(ana_sla_early_stop(5, 1, 1.0, 0.99, &s, &err), OPR_EINPUT);
}

static void test_jain(void **state)
{
	double eq[6] = { 3, 3, 3, 3, 3, 3 }, one[8] = { 0 }, v[4] = { 1, 2, 3, 4 };
	double zero[3] = { 0, 0, 0 };

	(void)state;
	one[5] = 7.5;
	assert_true(fabs(ana_jain(eq, 6) - 1.0) < 1e-15);
	assert_true(fabs(ana_jain(one, 8) - 1.0 / 8.0) < 1e-15);
	assert_true(fabs(ana_jain(v, 4) - 100.0 / 120.0) < 1e-15);
	assert_true(ana_jain(zero, 3) == 1.0);
	assert_true(isnan(ana_jain(v, 0)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantile_type7),
		cmocka_unit_test(test_shared_definitions),
		cmocka_unit_test(test_min_samples),
		cmocka_unit_test(test_quantile_ci_availability),
		cmocka_unit_test(test_quantile_ci_ranks_exact),
		cmocka_unit_test(test_quantile_ci_large_n),
		cmocka_unit_test(test_quantile_ci_coverage),
		cmocka_unit_test(test_ratio_ci_deterministic),
		cmocka_unit_test(test_noise_floor_mde),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_planted_regression),
		cmocka_unit_test(test_aa_false_alarms),
		cmocka_unit_test(test_mann_whitney),
		cmocka_unit_test(test_ks),
		cmocka_unit_test(test_bh),
		cmocka_unit_test(test_sla_early_stop),
		cmocka_unit_test(test_jain),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
