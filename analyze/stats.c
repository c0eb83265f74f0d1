/* analyze/stats.c: quantiles and their distribution-free CIs, the round bootstrap
 * of baseline-vs-candidate ratios, rank tests, noise floor and MDE, Benjamini-
 * Hochberg, and MLPerf LoadGen's early-stopping SLA gate. Samples are int64 ns. */
#include "stats.h"
#include "../ops/ops.h" /* ops_xoshiro */

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

/* ---- random numbers: ops_xoshiro (ops/rng.c) ---- */

/* Uniform in [0, bound), bound >= 1, without modulo bias: Lemire's
 * multiply-shift with rejection of the short low range. */
static size_t rng_below(struct ops_xoshiro *g, size_t bound)
{
	uint64_t b = (uint64_t)bound;
	uint64_t x = ops_xoshiro_next(g) >> 32;
	uint64_t m;

	if (b <= UINT32_MAX) {
		m = x * b;
		if ((uint32_t)m < (uint32_t)b) {
			uint32_t reject_below = (uint32_t)(-(uint32_t)b) % (uint32_t)b;

			while ((uint32_t)m < reject_below) {
				x = ops_xoshiro_next(g) >> 32;
				m = x * b;
			}
		}
		return (size_t)(m >> 32);
	}
	/* Rounds of more than 2^32 samples do not occur; keep it correct anyway. */
	for (;;) {
		uint64_t v = ops_xoshiro_next(g);
		uint64_t lim = UINT64_MAX - UINT64_MAX % b;

		if (v < lim)
			return (size_t)(v % b);
	}
}

/* ---- quantiles: Hyndman & Fan type 7 ---- */

double ana_quantile(const int64_t *sorted, size_t n, double q)
{
	return opr_quantile_type7_i64(sorted, n, q);
}

double ana_quantile_f64(const double *sorted, size_t n, double q)
{
	return opr_quantile_type7(sorted, n, q);
}

static int cmp_i64(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	return (a > b) - (a < b);
}

static int cmp_f64(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/* Places the k-th smallest (0-based) of x[0..n) at x[k], smaller or equal
 * before it and greater or equal after it (Hoare partition, median-of-3 pivot). */
static void select_k(int64_t *x, size_t n, size_t k)
{
	ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

	while (hi > lo) {
		ptrdiff_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		int64_t a = x[lo], b = x[mid], c = x[hi], pivot;

		if (a > b) {
			int64_t t = a;

			a = b;
			b = t;
		}
		pivot = c < a ? a : (c > b ? b : c);
		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				int64_t t = x[i];

				x[i++] = x[j];
				x[j--] = t;
			}
		}
		if (kk <= j)
			hi = j;
		else if (kk >= i)
			lo = i;
		else
			return;
	}
}

/* Type-7 q-quantile of the unsorted x[0..n) (reordered in place), O(n). */
static double quantile_select(int64_t *x, size_t n, double q)
{
	double h = (double)(n - 1) * q, f;
	size_t i = (size_t)h;
	int64_t lo, next;

	if (i >= n - 1)
		i = n - 1;
	select_k(x, n, i);
	lo = x[i];
	f = h - (double)i;
	if (f <= 0.0 || i + 1 >= n)
		return (double)lo;
	next = x[i + 1];
	for (size_t j = i + 2; j < n; j++)
		if (x[j] < next)
			next = x[j];
	return (double)lo + f * ((double)next - (double)lo);
}

/* ---- distribution-free quantile CI (asv statistics.quantile_ci, MLPerf) ----
 *
 * For continuous data, K = #{X_i <= xi_q} ~ Binomial(n, q) and
 * P(X(r) <= xi_q < X(s)) = P(r <= K <= s - 1). We take the equal-tailed pair:
 * r the largest rank with P(K <= r - 1) <= a2 and s the smallest with
 * P(K >= s) <= a2, a2 = (1 - conf) / 2. Both exist iff (1 - q)^n <= a2 and
 * q^n <= a2, which gives ana_min_samples.
 *
 * The tails are walked from 15 standard deviations (+ 40 for the Poisson-like
 * skew at q near 0 or 1) beyond the mean towards it, one pmf at a time in log
 * space: log pmf(k + 1) = log pmf(k) + log((n - k) / (k + 1)) + log(q / (1 - q)).
 * The mass left out beyond the start is below 1e-40, and the walk costs
 * O(sqrt(n q (1 - q))) steps, so n = 10^6 needs no normal approximation.
 */

static double log_binom_pmf(double n, double k, double lq, double l1q)
{
	return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + k * lq +
	       (n - k) * l1q;
}

size_t ana_min_samples(double q, double conf)
{
	return opr_min_samples(q, conf);
}

int ana_quantile_ci(const int64_t *sorted, size_t n, double q, double conf,
		    struct ana_qci *out, struct opr_error *err)
{
	double a2, dn, lq, l1q, lratio, mean, sd, span, lp, cum;
	double low_tail = 0.0, high_tail = 0.0;
	size_t k, kstart, r = 0, s = 0;

	if (!out)
		return opr_error_set(err, OPR_EINTERNAL, "quantile ci: 'out' is NULL");
	if (!sorted || n == 0)
		return opr_error_set(err, OPR_EINPUT, "quantile ci: no samples");
	if (!(q > 0.0 && q < 1.0))
		return opr_error_set(err, OPR_EINPUT,
				     "quantile ci: 'q' %g is outside (0, 1)", q);
	if (!(conf > 0.0 && conf < 1.0))
		return opr_error_set(err, OPR_EINPUT,
				     "quantile ci: 'conf' %g is outside (0, 1)", conf);

	out->q = q;
	out->conf = conf;
	out->n = n;
	out->estimate = ana_quantile(sorted, n, q);
	out->min_n = ana_min_samples(q, conf);
	out->available = 0;
	out->lo = out->hi = out->coverage = NAN;
	out->r = out->s = 0;
	out->reason = NULL;
	if (n < out->min_n) {
		out->reason = "too few samples for a two-sided distribution-free ci";
		return 0;
	}

	a2 = (1.0 - conf) / 2.0;
	dn = (double)n;
	lq = log(q);
	l1q = log1p(-q);
	lratio = lq - l1q;
	mean = dn * q;
	sd = sqrt(dn * q * (1.0 - q));
	span = 15.0 * sd + 40.0;

	/* lower tail: cum = P(K <= k) */
	kstart = mean - span <= 0.0 ? 0 : (size_t)(mean - span);
	lp = log_binom_pmf(dn, (double)kstart, lq, l1q);
	cum = 0.0;
	for (k = kstart; k < n; k++) {
		cum += exp(lp);
		if (cum > a2)
			break;
		r = k + 1;
		low_tail = cum;
		lp += log((dn - (double)k) / ((double)k + 1.0)) + lratio;
	}
	/* upper tail: cum = P(K >= k) */
	kstart = mean + span >= dn ? n : (size_t)ceil(mean + span);
	lp = log_binom_pmf(dn, (double)kstart, lq, l1q);
	cum = 0.0;
	for (k = kstart; k >= 1; k--) {
		cum += exp(lp);
		if (cum > a2)
			break;
		s = k;
		high_tail = cum;
		lp += log((double)k / (dn - (double)k + 1.0)) - lratio;
	}
	if (r == 0 || s == 0 || r >= s) {
		/* only at a boundary that pow and lgamma round differently */
		out->reason = "too few samples for a two-sided distribution-free ci";
		return 0;
	}
	out->available = 1;
	out->r = r;
	out->s = s;
	out->lo = (double)sorted[r - 1];
	out->hi = (double)sorted[s - 1];
	out->coverage = 1.0 - low_tail - high_tail;
	return 0;
}

/* ---- round design ---- */

static int check_side(const int64_t *x, const size_t *off, size_t nrounds,
		      const char *name, struct opr_error *err)
{
	if (!x || !off)
		return opr_error_set(err, OPR_EINPUT, "rounds: '%s' samples missing",
				     name);
	if (off[0] != 0)
		return opr_error_set(err, OPR_EINPUT,
				     "rounds: '%s' offsets must start at 0", name);
	for (size_t r = 0; r < nrounds; r++) {
		if (off[r + 1] <= off[r])
			return opr_error_set(err, OPR_EINPUT,
					     "rounds: '%s' round %zu is empty or offsets decrease",
					     name, r);
		for (size_t i = off[r]; i < off[r + 1]; i++)
			if (x[i] < 0)
				return opr_error_set(err, OPR_EINPUT,
						     "rounds: '%s' sample %zu is negative",
						     name, i);
	}
	return 0;
}

static int check_rounds(const struct ana_rounds *rr, size_t min_rounds,
			int need_b, struct opr_error *err)
{
	int rc;

	if (!rr)
		return opr_error_set(err, OPR_EINPUT, "rounds: no design given");
	if (rr->nrounds < min_rounds)
		return opr_error_set(err, OPR_EINPUT,
				     "rounds: %zu rounds, at least %zu needed",
				     rr->nrounds, min_rounds);
	rc = check_side(rr->a, rr->a_off, rr->nrounds, "baseline", err);
	if (rc == 0 && need_b)
		rc = check_side(rr->b, rr->b_off, rr->nrounds, "candidate", err);
	return rc;
}

static int check_q_conf(const char *who, double q, double conf, size_t nboot,
			struct opr_error *err)
{
	if (!(q >= 0.0 && q <= 1.0))
		return opr_error_set(err, OPR_EINPUT, "%s: 'q' %g is outside [0, 1]",
				     who, q);
	if (!(conf > 0.0 && conf < 1.0))
		return opr_error_set(err, OPR_EINPUT,
				     "%s: 'conf' %g is outside (0, 1)", who, conf);
	if (nboot < 2)
		return opr_error_set(err, OPR_EINPUT,
				     "%s: 'nboot' %zu, at least 2 needed", who, nboot);
	return 0;
}

/* ---- hierarchical bootstrap (Kalibera & Jones, "Rigorous benchmarking in
 * reasonable time", ISMM 2013): level 1 resamples rounds with replacement,
 * level 2 resamples the k_r samples of each drawn round with replacement. ---- */

/* One side of a ratio: the rounds it may draw (ids into off; NULL = 0..nids-1). */
struct boot_side {
	const int64_t *x;
	const size_t *off;
	const size_t *ids;
	size_t nids;
	int64_t *buf;       /* room for every draw of one replicate */
	size_t cap;
};

static size_t side_round(const struct boot_side *sd, size_t j)
{
	return sd->ids ? sd->ids[j] : j;
}

static int side_alloc(struct boot_side *sd, struct opr_error *err)
{
	size_t maxk = 0;

	for (size_t j = 0; j < sd->nids; j++) {
		size_t r = side_round(sd, j), k = sd->off[r + 1] - sd->off[r];

		if (k > maxk)
			maxk = k;
	}
	if (maxk != 0 && sd->nids > SIZE_MAX / sizeof(int64_t) / maxk)
		return opr_error_set(err, OPR_ENOMEM, "bootstrap: design too large");
	sd->cap = sd->nids * maxk;
	sd->buf = malloc(sd->cap * sizeof(int64_t));
	if (!sd->buf)
		return opr_error_set(err, OPR_ENOMEM,
				     "bootstrap: out of memory for %zu samples", sd->cap);
	return 0;
}

/* Draws the samples of the rounds js[0..nj) into sd->buf; returns the count. */
static size_t side_fill(struct boot_side *sd, const size_t *js, size_t nj,
			struct ops_xoshiro *g)
{
	size_t m = 0;

	for (size_t i = 0; i < nj; i++) {
		size_t r = side_round(sd, js[i]);
		size_t o = sd->off[r], k = sd->off[r + 1] - o;

		for (size_t t = 0; t < k; t++)
			sd->buf[m++] = sd->x[o + rng_below(g, k)];
	}
	return m;
}

/* Type-7 quantile of every sample of the side's rounds (no resampling). */
static double side_full_quantile(struct boot_side *sd, double q)
{
	size_t m = 0;

	for (size_t j = 0; j < sd->nids; j++) {
		size_t r = side_round(sd, j);

		for (size_t i = sd->off[r]; i < sd->off[r + 1]; i++)
			sd->buf[m++] = sd->x[i];
	}
	return quantile_select(sd->buf, m, q);
}

static double safe_ratio(double num, double den)
{
	if (den > 0.0)
		return num / den;
	return num > 0.0 ? INFINITY : 1.0;
}

/* Bootstraps Q_q(num) / Q_q(den). paired: both sides have the same rounds and
 * draw the same round indices (the rounds ran side by side); otherwise each side
 * draws its own. Fills ratio, lo, hi and the two point quantiles. */
static int boot_ratio(struct boot_side *num, struct boot_side *den, int paired,
		      double q, size_t nboot, uint64_t seed, double conf,
		      double *num_q, double *den_q, double *ratio, double *lo,
		      double *hi, struct opr_error *err)
{
	struct ops_xoshiro g;
	double *reps = NULL;
	size_t *js_num = NULL, *js_den = NULL;
	int rc;

	if (nboot > SIZE_MAX / sizeof(*reps))
		return opr_error_set(err, OPR_ENOMEM, "bootstrap: %zu replicates", nboot);
	rc = side_alloc(num, err);
	if (rc)
		return rc;
	rc = side_alloc(den, err);
	if (rc)
		goto free_num;
	reps = malloc(nboot * sizeof(*reps));
	js_num = malloc((num->nids ? num->nids : 1) * sizeof(*js_num));
	js_den = paired ? js_num : malloc((den->nids ? den->nids : 1) * sizeof(*js_den));
	if (!reps || !js_num || !js_den) {
		rc = opr_error_set(err, OPR_ENOMEM,
				   "bootstrap: out of memory for %zu replicates", nboot);
		goto free_all;
	}

	*num_q = side_full_quantile(num, q);
	*den_q = side_full_quantile(den, q);
	if (!(*den_q > 0.0)) {
		rc = opr_error_set(err, OPR_EINPUT,
				   "bootstrap: baseline quantile %g is not positive", *den_q);
		goto free_all;
	}
	*ratio = *num_q / *den_q;

	ops_xoshiro_seed(&g, seed);
	for (size_t b = 0; b < nboot; b++) {
		size_t mn, md;

		for (size_t j = 0; j < num->nids; j++)
			js_num[j] = rng_below(&g, num->nids);
		if (!paired)
			for (size_t j = 0; j < den->nids; j++)
				js_den[j] = rng_below(&g, den->nids);
		mn = side_fill(num, js_num, num->nids, &g);
		md = side_fill(den, js_den, den->nids, &g);
		reps[b] = safe_ratio(quantile_select(num->buf, mn, q),
				     quantile_select(den->buf, md, q));
	}
	qsort(reps, nboot, sizeof(*reps), cmp_f64);
	*lo = ana_quantile_f64(reps, nboot, (1.0 - conf) / 2.0);
	*hi = ana_quantile_f64(reps, nboot, (1.0 + conf) / 2.0);
	rc = 0;
free_all:
	if (js_den != js_num)
		free(js_den);
	free(js_num);
	free(reps);
	free(den->buf);
	den->buf = NULL;
free_num:
	free(num->buf);
	num->buf = NULL;
	return rc;
}

int ana_ratio_ci(const struct ana_rounds *rounds, double q, size_t nboot,
		 uint64_t seed, double conf, struct ana_ratio *out,
		 struct opr_error *err)
{
	struct boot_side sa, sb;
	int rc;

	if (!out)
		return opr_error_set(err, OPR_EINTERNAL, "ratio ci: 'out' is NULL");
	rc = check_q_conf("ratio ci", q, conf, nboot, err);
	if (rc == 0)
		rc = check_rounds(rounds, 2, 1, err);
	if (rc)
		return rc;
	sa = (struct boot_side){ rounds->a, rounds->a_off, NULL, rounds->nrounds,
				 NULL, 0 };
	sb = (struct boot_side){ rounds->b, rounds->b_off, NULL, rounds->nrounds,
				 NULL, 0 };
	out->q = q;
	out->conf = conf;
	out->nboot = nboot;
	out->seed = seed;
	return boot_ratio(&sb, &sa, 1, q, nboot, seed, conf, &out->cand_ns,
			  &out->base_ns, &out->ratio, &out->lo, &out->hi, err);
}

/* ---- rank tests (Google Benchmark compare.py: MWU; Chromium Pinpoint:
 * min(KS, MWU) because MWU misses changes in spread, KS struggles with ties) ---- */

/* Sorted copies of a and b; caller frees both (also on error). */
static int sorted_copies(const int64_t *a, size_t na, const int64_t *b, size_t nb,
			 int64_t **sa, int64_t **sb, const char *who,
			 struct opr_error *err)
{
	*sa = *sb = NULL;
	if (!a || !b || na == 0 || nb == 0)
		return opr_error_set(err, OPR_EINPUT, "%s: a sample set is empty", who);
	*sa = malloc(na * sizeof(int64_t));
	*sb = malloc(nb * sizeof(int64_t));
	if (!*sa || !*sb)
		return opr_error_set(err, OPR_ENOMEM, "%s: out of memory", who);
	memcpy(*sa, a, na * sizeof(int64_t));
	memcpy(*sb, b, nb * sizeof(int64_t));
	qsort(*sa, na, sizeof(int64_t), cmp_i64);
	qsort(*sb, nb, sizeof(int64_t), cmp_i64);
	return 0;
}

/* U = R_a - na (na + 1) / 2 with mid-ranks for ties; under H0 U has mean
 * na nb / 2 and variance na nb / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))),
 * t the size of each tie group; z = (|U - mean| - 1/2) / sd, p = erfc(z / sqrt 2). */
static void mwu_sorted(const int64_t *a, size_t na, const int64_t *b, size_t nb,
		       double *u, double *p)
{
	double ra = 0.0, ties = 0.0, pos = 0.0, N = (double)(na + nb);
	double dna = (double)na, dnb = (double)nb, mean, var, z;
	size_t i = 0, j = 0;

	while (i < na || j < nb) {
		int64_t v = (j >= nb || (i < na && a[i] <= b[j])) ? a[i] : b[j];
		size_t ca = 0, cb = 0;
		double t;

		while (i < na && a[i] == v) {
			i++;
			ca++;
		}
		while (j < nb && b[j] == v) {
			j++;
			cb++;
		}
		t = (double)(ca + cb);
		ra += (double)ca * (pos + (t + 1.0) / 2.0);
		ties += t * t * t - t;
		pos += t;
	}
	*u = ra - dna * (dna + 1.0) / 2.0;
	mean = dna * dnb / 2.0;
	var = dna * dnb / 12.0 * ((N + 1.0) - (N > 1.0 ? ties / (N * (N - 1.0)) : 0.0));
	if (!(var > 0.0)) {
		*p = 1.0;
		return;
	}
	z = (fabs(*u - mean) - 0.5) / sqrt(var);
	if (z < 0.0)
		z = 0.0;
	*p = erfc(z / sqrt(2.0));
	if (*p > 1.0)
		*p = 1.0;
}

/* Kolmogorov distribution tail Q(lambda) = 2 sum_{j>=1} (-1)^(j-1) exp(-2 j^2
 * lambda^2); for small lambda the equivalent 1 - sqrt(2 pi) / lambda
 * sum_{j>=1} exp(-(2j-1)^2 pi^2 / (8 lambda^2)) converges faster. */
static double kolmogorov_q(double lambda)
{
	double sum = 0.0;

	if (!(lambda > 0.0))
		return 1.0;
	if (lambda < 1.18) {
		double c = PI * PI / (8.0 * lambda * lambda);

		for (int j = 1; j <= 20; j++) {
			double o = 2.0 * j - 1.0;

			sum += exp(-o * o * c);
		}
		sum = 1.0 - sqrt(2.0 * PI) / lambda * sum;
	} else {
		double sign = 1.0;

		for (int j = 1; j <= 100; j++) {
			double term = exp(-2.0 * j * j * lambda * lambda);

			sum += sign * term;
			sign = -sign;
			if (term < 1e-17)
				break;
		}
		sum *= 2.0;
	}
	return sum < 0.0 ? 0.0 : (sum > 1.0 ? 1.0 : sum);
}

/* D over the merged distinct values; p from Q((sqrt(m) + 0.12 + 0.11 / sqrt(m))
 * D), m = na nb / (na + nb) (Stephens 1970, the factor scipy's asymptotic
 * mode and Numerical Recipes also use). */
static void ks_sorted(const int64_t *a, size_t na, const int64_t *b, size_t nb,
		      double *d, double *p)
{
	size_t i = 0, j = 0;
	double dmax = 0.0, en;

	while (i < na && j < nb) {
		int64_t v = a[i] <= b[j] ? a[i] : b[j];
		double diff;

		while (i < na && a[i] == v)
			i++;
		while (j < nb && b[j] == v)
			j++;
		diff = fabs((double)i / (double)na - (double)j / (double)nb);
		if (diff > dmax)
			dmax = diff;
	}
	/* once one side is exhausted the gap only closes */
	*d = dmax;
	en = sqrt((double)na * (double)nb / ((double)na + (double)nb));
	*p = kolmogorov_q((en + 0.12 + 0.11 / en) * dmax);
}

int ana_mann_whitney(const int64_t *a, size_t na, const int64_t *b, size_t nb,
		     double *u, double *p, struct opr_error *err)
{
	int64_t *sa, *sb;
	double uu, pp;
	int rc = sorted_copies(a, na, b, nb, &sa, &sb, "mann-whitney", err);

	if (rc == 0) {
		mwu_sorted(sa, na, sb, nb, &uu, &pp);
		if (u)
			*u = uu;
		if (p)
			*p = pp;
	}
	free(sa);
	free(sb);
	return rc;
}

int ana_ks(const int64_t *a, size_t na, const int64_t *b, size_t nb, double *d,
	   double *p, struct opr_error *err)
{
	int64_t *sa, *sb;
	double dd, pp;
	int rc = sorted_copies(a, na, b, nb, &sa, &sb, "kolmogorov-smirnov", err);

	if (rc == 0) {
		ks_sorted(sa, na, sb, nb, &dd, &pp);
		if (d)
			*d = dd;
		if (p)
			*p = pp;
	}
	free(sa);
	free(sb);
	return rc;
}

/* ---- noise floor and minimum detectable effect ---- */

/* c = sd / mean of the per-round type-7 medians of the baseline (sample sd). */
static int round_cv(const struct ana_rounds *rr, double *cv, struct opr_error *err)
{
	size_t maxk = 0, R = rr->nrounds;
	double sum = 0.0, sum2 = 0.0, mean;
	double *med = malloc(R * sizeof(*med));
	int64_t *buf;

	for (size_t r = 0; r < R; r++)
		if (rr->a_off[r + 1] - rr->a_off[r] > maxk)
			maxk = rr->a_off[r + 1] - rr->a_off[r];
	buf = malloc(maxk * sizeof(*buf));
	if (!med || !buf) {
		free(med);
		free(buf);
		return opr_error_set(err, OPR_ENOMEM, "noise floor: out of memory");
	}
	for (size_t r = 0; r < R; r++) {
		size_t k = rr->a_off[r + 1] - rr->a_off[r];

		memcpy(buf, rr->a + rr->a_off[r], k * sizeof(*buf));
		med[r] = quantile_select(buf, k, 0.5);
		sum += med[r];
	}
	mean = sum / (double)R;
	for (size_t r = 0; r < R; r++)
		sum2 += (med[r] - mean) * (med[r] - mean);
	*cv = mean > 0.0 ? sqrt(sum2 / (double)(R - 1)) / mean : 0.0;
	free(buf);
	free(med);
	return 0;
}

int ana_noise_floor(const struct ana_rounds *rounds, double q, size_t nboot,
		    uint64_t seed, double conf, struct ana_noise *out,
		    struct opr_error *err)
{
	struct boot_side odd, even;
	size_t *ids = NULL, R, nodd, neven;
	double qn, qd;
	int rc;

	if (!out)
		return opr_error_set(err, OPR_EINTERNAL, "noise floor: 'out' is NULL");
	rc = check_q_conf("noise floor", q, conf, nboot, err);
	if (rc == 0)
		rc = check_rounds(rounds, 4, 0, err);
	if (rc)
		return rc;
	R = rounds->nrounds;
	ids = malloc(R * sizeof(*ids));
	if (!ids)
		return opr_error_set(err, OPR_ENOMEM, "noise floor: out of memory");
	/* ids[0 .. neven) = 0, 2, 4, ...; ids[neven .. R) = 1, 3, 5, ... */
	neven = (R + 1) / 2;
	nodd = R / 2;
	for (size_t r = 0; r < R; r++)
		ids[(r % 2) ? neven + r / 2 : r / 2] = r;
	even = (struct boot_side){ rounds->a, rounds->a_off, ids, neven, NULL, 0 };
	odd = (struct boot_side){ rounds->a, rounds->a_off, ids + neven, nodd, NULL, 0 };
	out->nrounds = R;
	rc = boot_ratio(&odd, &even, 0, q, nboot, seed, conf, &qn, &qd,
			&out->aa_ratio, &out->aa_lo, &out->aa_hi, err);
	free(ids);
	if (rc)
		return rc;
	out->floor = (out->aa_hi - out->aa_lo) / 2.0;
	rc = round_cv(rounds, &out->round_cv, err);
	if (rc)
		return rc;
	/* MDE = (z_{1-alpha/2} + z_{power}) sqrt(2 / R) c = 2.8 sqrt(2 / R) c for
	 * alpha 0.05 and power 0.8 (1.96 + 0.84): the two-sample comparison of R
	 * round means each with coefficient of variation c. */
	out->mde = 2.8 * sqrt(2.0 / (double)R) * out->round_cv;
	return 0;
}

/* ---- Benjamini-Hochberg (1995) false discovery rate ---- */

struct pidx {
	double p;
	size_t i;
};

static int cmp_pidx(const void *pa, const void *pb)
{
	const struct pidx *a = pa, *b = pb;

	if (a->p != b->p)
		return (a->p > b->p) - (a->p < b->p);
	return (a->i > b->i) - (a->i < b->i);
}

int ana_bh(const double *pvalues, size_t n, double alpha, double *adjusted,
	   int *reject, struct opr_error *err)
{
	struct pidx *v;
	double run = 1.0;

	if (n == 0)
		return 0;
	if (!pvalues)
		return opr_error_set(err, OPR_EINPUT, "benjamini-hochberg: no p-values");
	for (size_t i = 0; i < n; i++)
		if (!(pvalues[i] >= 0.0 && pvalues[i] <= 1.0))
			return opr_error_set(err, OPR_EINPUT,
					     "benjamini-hochberg: p-value %zu (%g) is outside [0, 1]",
					     i, pvalues[i]);
	v = malloc(n * sizeof(*v));
	if (!v)
		return opr_error_set(err, OPR_ENOMEM, "benjamini-hochberg: out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = (struct pidx){ pvalues[i], i };
	qsort(v, n, sizeof(*v), cmp_pidx);
	/* adjusted p_(k) = min_{j >= k} min(1, n p_(j) / j), ranks 1-based */
	for (size_t k = n; k >= 1; k--) {
		double a = v[k - 1].p * (double)n / (double)k;

		if (a < run)
			run = a;
		if (adjusted)
			adjusted[v[k - 1].i] = run;
		if (reject)
			reject[v[k - 1].i] = run <= alpha;
	}
	free(v);
	return 0;
}

/* ---- the comparison: magnitude (ratio CI vs 1 + t) and significance ---- */

void ana_classify(struct ana_comparison *c, const struct ana_compare_opts *opts)
{
	double limit = 1.0 + opts->threshold;

	c->faster = c->ratio.hi < 1.0;
	c->significant = c->p_adjusted < opts->alpha;
	c->underpowered = c->noise.mde > opts->threshold;
	if (c->ratio.lo > limit) {
		if (c->significant) {
			c->outcome = ANA_CMP_REGRESSION;
			c->reason = "ratio ci above 1 + threshold and rank test significant";
		} else {
			c->outcome = ANA_CMP_INCONCLUSIVE;
			c->reason = "ratio ci above 1 + threshold but rank test not significant";
		}
	} else if (c->ratio.hi < limit) {
		c->outcome = ANA_CMP_PASS;
		c->reason = c->faster ? "ratio ci entirely below 1: faster"
				      : "ratio ci below 1 + threshold";
	} else {
		c->outcome = ANA_CMP_INCONCLUSIVE;
		c->reason = "ratio ci straddles 1 + threshold: add rounds";
	}
}

int ana_compare_rounds(const struct ana_rounds *rounds,
		       const struct ana_compare_opts *opts,
		       struct ana_comparison *out, struct opr_error *err)
{
	const struct ana_rounds *rr = rounds;
	size_t na, nb;
	int64_t *sa, *sb;
	double u, d;
	int rc;

	if (!opts || !out)
		return opr_error_set(err, OPR_EINTERNAL, "compare: 'opts' or 'out' is NULL");
	if (!(opts->threshold >= 0.0) || !(opts->alpha > 0.0 && opts->alpha < 1.0))
		return opr_error_set(err, OPR_EINPUT,
				     "compare: 'threshold' %g or 'alpha' %g out of range",
				     opts->threshold, opts->alpha);
	rc = ana_ratio_ci(rr, opts->q, opts->nboot, opts->seed, opts->conf,
			  &out->ratio, err);
	if (rc)
		return rc;
	/* a different stream for the A/A split, still fixed by the seed */
	rc = ana_noise_floor(rr, opts->q, opts->nboot,
			     opts->seed ^ 0x6a09e667f3bcc909ULL, opts->conf,
			     &out->noise, err);
	if (rc)
		return rc;
	na = rr->a_off[rr->nrounds];
	nb = rr->b_off[rr->nrounds];
	rc = sorted_copies(rr->a, na, rr->b, nb, &sa, &sb, "compare", err);
	if (rc == 0) {
		mwu_sorted(sa, na, sb, nb, &u, &out->p_mwu);
		ks_sorted(sa, na, sb, nb, &d, &out->p_ks);
		out->p_rank = out->p_mwu < out->p_ks ? out->p_mwu : out->p_ks;
		out->p_adjusted = out->p_rank;
		ana_classify(out, opts);
	}
	free(sa);
	free(sb);
	return rc;
}

/* ---- MLPerf LoadGen early stopping (loadgen/early_stopping.cc) ----
 *
 * With t of n samples over the target, "the p-quantile <= target at confidence
 * c" holds once n >= h + t, h the smallest with I_p(h, 1 + t) <= 1 - c.
 * I_p(h, t + 1) = P(Binomial(h + t, p) >= h) = P(Binomial(h + t, 1 - p) <= t):
 * the chance of seeing at most t overs if the true quantile sat at the target.
 */

/* P(Binomial(n, 1 - p) <= t), summed in log space from j = 0:
 * log term(j + 1) = log term(j) + log((n - j) / (j + 1)) + log((1 - p) / p). */
static double binom_cdf_over(size_t n, size_t t, double p)
{
	double lt = (double)n * log(p), lr = log1p(-p) - log(p), lse = lt;

	for (size_t j = 0; j < t && j < n; j++) {
		lt += log(((double)n - (double)j) / ((double)j + 1.0)) + lr;
		lse = lse > lt ? lse + log1p(exp(lt - lse)) : lt + log1p(exp(lse - lt));
	}
	return t >= n ? 1.0 : exp(lse);
}

int ana_sla_early_stop(size_t n, size_t t_over, double p, double conf,
		       struct ana_sla *out, struct opr_error *err)
{
	double limit;
	size_t lo, hi;

	if (!out)
		return opr_error_set(err, OPR_EINTERNAL, "early stop: 'out' is NULL");
	if (!(p > 0.0 && p < 1.0) || !(conf > 0.0 && conf < 1.0))
		return opr_error_set(err, OPR_EINPUT,
				     "early stop: 'p' %g or 'conf' %g is outside (0, 1)",
				     p, conf);
	if (t_over > n)
		return opr_error_set(err, OPR_EINPUT,
				     "early stop: %zu samples over target but only %zu samples",
				     t_over, n);
	limit = 1.0 - conf;
	/* the cdf falls with n: find the first n >= t + 1 (h >= 1) at or below limit */
	lo = t_over;
	hi = t_over + 1;
	while (binom_cdf_over(hi, t_over, p) > limit) {
		if (hi > SIZE_MAX / 4)
			return opr_error_set(err, OPR_ELIMIT,
					     "early stop: no sample count supports the claim");
		lo = hi;
		hi *= 2;
	}
	/* invariant: cdf(lo) > limit (or lo = t), cdf(hi) <= limit */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (binom_cdf_over(mid, t_over, p) > limit)
			lo = mid;
		else
			hi = mid;
	}
	out->min_n = hi;
	out->supported = n >= hi;
	out->p_value = binom_cdf_over(n, t_over, p);
	return 0;
}

/* ---- fairness ---- */

double ana_jain(const double *x, size_t n)
{
	double s = 0.0, s2 = 0.0;

	if (!x || n == 0)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	if (s2 == 0.0)
		return 1.0;
	return s * s / ((double)n * s2);
}
