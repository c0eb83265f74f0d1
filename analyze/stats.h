/* analyze/stats.h: the statistics of the analyzer: tail quantiles with
 * distribution-free confidence intervals, baseline-vs-candidate ratio CIs from a
 * round bootstrap, rank tests, noise floor, false discovery control, SLA gate. */
#ifndef ANALYZE_STATS_H
#define ANALYZE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "../opreview.h"

/*
 * Sampling design. The collector runs baseline (A) and candidate (B) interleaved
 * in randomised rounds; round r holds k_r >= 1 consecutive samples of A and k_r of
 * B (the two counts may differ). Samples are int64 nanoseconds in collection order.
 * Round r of A is a[a_off[r] .. a_off[r + 1]), of B b[b_off[r] .. b_off[r + 1]);
 * a_off and b_off hold nrounds + 1 entries, a_off[0] = b_off[0] = 0 and strictly
 * increase. Nothing here is owned: the caller keeps the arrays alive.
 */
struct ana_rounds {
	const int64_t *a;
	const int64_t *b;
	const size_t *a_off;
	const size_t *b_off;
	size_t nrounds;
};

/*
 * Quantile definition used everywhere in opreview: Hyndman & Fan type 7 (the
 * default of R and NumPy): with 0-based sorted x[0..n), h = (n - 1) q,
 * Q(q) = x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]).
 * sorted must be ascending, n >= 1, 0 <= q <= 1; returns NaN otherwise.
 */
double ana_quantile(const int64_t *sorted, size_t n, double q);
double ana_quantile_f64(const double *sorted, size_t n, double q);

/* A distribution-free CI of the q-quantile: [X(r), X(s)] (1-based order
 * statistics). K ~ Binomial(n, q) counts samples at or below the true quantile;
 * r is the largest rank with P(K < r) <= (1 - conf)/2 and s the smallest with
 * P(K >= s) <= (1 - conf)/2, so coverage P(r <= K < s) >= conf with both tails
 * bounded (equal-tailed, as asv's quantile_ci and MLPerf do). */
struct ana_qci {
	int available;      /* 1 when both endpoints exist (n >= min_n) */
	double q;
	double conf;
	size_t n;
	double estimate;    /* ana_quantile(sorted, n, q), ns */
	double lo;          /* X(r), ns; NaN when !available */
	double hi;          /* X(s), ns; NaN when !available */
	size_t r;           /* 1-based rank of lo; 0 when !available */
	size_t s;           /* 1-based rank of hi; 0 when !available */
	double coverage;    /* achieved P(r <= K < s); NaN when !available */
	size_t min_n;       /* smallest n giving a two-sided CI at q, conf */
	const char *reason; /* static text when !available, else NULL */
};

/* Fills *out for the ascending array sorted[0..n). n up to 10^6 and beyond
 * costs O(sqrt n) (the binomial tails are walked in log space from a few
 * standard deviations out). Too few samples is not an error: available = 0.
 * Returns 0, or OPR_EINPUT for q or conf outside (0, 1) or n = 0. */
int ana_quantile_ci(const int64_t *sorted, size_t n, double q, double conf,
		    struct ana_qci *out, struct opr_error *err);

/* Smallest n for which the equal-tailed CI above exists:
 * max(q, 1 - q)^n <= (1 - conf)/2 (then [X(1), X(n)] is the widest CI).
 * 0 when q or conf is outside (0, 1). */
size_t ana_min_samples(double q, double conf);

/* Baseline-vs-candidate effect as a ratio stat_q(B) / stat_q(A) with a percentile
 * bootstrap CI (Kalibera & Jones, hierarchical: rounds, then samples in rounds). */
struct ana_ratio {
	double q;
	double conf;
	size_t nboot;
	uint64_t seed;
	double base_ns;     /* Q_q of all of A */
	double cand_ns;     /* Q_q of all of B */
	double ratio;       /* cand_ns / base_ns */
	double lo;          /* CI of the ratio */
	double hi;
};

/* Resamples round indices with replacement (A and B of one round together: they
 * ran side by side, so shared drift cancels), then within each drawn round k_r
 * samples of A and k_r of B with replacement; ratio of the q-quantiles per
 * replicate; CI = type-7 quantiles (1-conf)/2 and (1+conf)/2 of the replicates.
 * Deterministic for a seed (xoshiro256** seeded by splitmix64). Returns 0,
 * OPR_EINPUT on a bad design or parameter, OPR_ENOMEM. */
int ana_ratio_ci(const struct ana_rounds *rounds, double q, size_t nboot,
		 uint64_t seed, double conf, struct ana_ratio *out,
		 struct opr_error *err);

/* Mann-Whitney U test, two-sided, normal approximation with tie correction and
 * continuity correction. *u is U of a (number of pairs a > b, ties count 1/2).
 * p = 1 when every value ties. Returns 0, OPR_EINPUT (empty), OPR_ENOMEM. */
int ana_mann_whitney(const int64_t *a, size_t na, const int64_t *b, size_t nb,
		     double *u, double *p, struct opr_error *err);

/* Two-sample Kolmogorov-Smirnov: D = sup |F_a - F_b|, asymptotic p with
 * Stephens' small-sample factor. Conservative on discrete (tied) data.
 * Returns 0, OPR_EINPUT (empty), OPR_ENOMEM. */
int ana_ks(const int64_t *a, size_t na, const int64_t *b, size_t nb,
	   double *d, double *p, struct opr_error *err);

/* Noise floor of the run from an A/A split of the baseline. */
struct ana_noise {
	size_t nrounds;
	double aa_ratio;    /* Q_q(odd rounds of A) / Q_q(even rounds of A) */
	double aa_lo;       /* its bootstrap CI */
	double aa_hi;
	double floor;       /* (aa_hi - aa_lo) / 2: the noise floor, a fraction */
	double round_cv;    /* c: coefficient of variation of per-round medians of A */
	double mde;         /* 2.8 sqrt(2 / R) c: minimum detectable effect */
};

/* Splits the baseline rounds into even and odd (both span the whole run),
 * bootstraps the A/A ratio as ana_ratio_ci does (halves resampled independently)
 * and computes the MDE. Needs >= 4 rounds. Returns 0, OPR_EINPUT, OPR_ENOMEM. */
int ana_noise_floor(const struct ana_rounds *rounds, double q, size_t nboot,
		    uint64_t seed, double conf, struct ana_noise *out,
		    struct opr_error *err);

/* Benjamini-Hochberg: adjusted[i] = min over j with p_(j) >= p_i of
 * min(1, n p_(j) / rank_j); reject[i] = adjusted[i] <= alpha. Either output may
 * be NULL. Returns 0, OPR_EINPUT (a p outside [0, 1] or NaN), OPR_ENOMEM. */
int ana_bh(const double *pvalues, size_t n, double alpha, double *adjusted,
	   int *reject, struct opr_error *err);

/* The three outcomes of a comparison against a regression threshold t. */
enum ana_outcome {
	ANA_CMP_PASS = 0,         /* ratio CI entirely below 1 + t */
	ANA_CMP_INCONCLUSIVE = 1, /* CI straddles 1 + t, or not significant: add rounds */
	ANA_CMP_REGRESSION = 2,   /* CI entirely above 1 + t and adjusted p < alpha */
};

/* Settings of a comparison. */
struct ana_compare_opts {
	double q;           /* the quantile compared, e.g. 0.95 */
	double threshold;   /* regression allowed, fraction: 0.05 = 5% */
	double alpha;       /* significance level of the rank test, e.g. 0.05 */
	double conf;        /* CI level, e.g. 0.95 */
	size_t nboot;       /* bootstrap replicates, e.g. 2000 */
	uint64_t seed;
};

/* One baseline-vs-candidate comparison: magnitude and significance both. */
struct ana_comparison {
	struct ana_ratio ratio;
	struct ana_noise noise;
	double p_mwu;
	double p_ks;
	double p_rank;      /* min(p_mwu, p_ks), as Chromium Pinpoint does */
	double p_adjusted;  /* after BH across comparisons; = p_rank alone */
	enum ana_outcome outcome;
	int faster;         /* ratio CI entirely below 1 */
	int significant;    /* p_adjusted < alpha */
	int underpowered;   /* noise.mde > threshold */
	const char *reason; /* static text explaining the outcome */
};

/* Measures everything for one comparison (ratio CI, rank tests, noise floor),
 * sets p_adjusted = p_rank and classifies. Returns 0, OPR_EINPUT, OPR_ENOMEM. */
int ana_compare_rounds(const struct ana_rounds *rounds,
		       const struct ana_compare_opts *opts,
		       struct ana_comparison *out, struct opr_error *err);

/* (Re)classifies c from c->ratio, c->p_adjusted and c->noise: call after
 * replacing p_adjusted with the BH value across all comparisons of a run. */
void ana_classify(struct ana_comparison *c, const struct ana_compare_opts *opts);

/* MLPerf LoadGen early stopping for an SLA "the p-quantile <= target". */
struct ana_sla {
	int supported;      /* n >= min_n: the claim holds at confidence conf */
	size_t min_n;       /* h + t, h smallest with I_p(h, 1 + t) <= 1 - conf */
	double p_value;     /* P(Binomial(n, 1 - p) <= t): chance of so few overs if
			     * the true p-quantile were exactly the target */
};

/* n samples of which t_over exceeded the target. Returns 0, OPR_EINPUT
 * (p or conf outside (0, 1), t_over > n). */
int ana_sla_early_stop(size_t n, size_t t_over, double p, double conf,
		       struct ana_sla *out, struct opr_error *err);

/* Jain's fairness index J = (sum x)^2 / (n sum x^2), in [1/n, 1]. 1 when every
 * x is 0 (equal shares), NaN when n = 0. */
double ana_jain(const double *x, size_t n);

#endif
