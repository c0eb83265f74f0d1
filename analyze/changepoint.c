/* analyze/changepoint.c: where a metric's series over runs moved. The method
 * is asv's step detection (airspeed velocity, asv/step_detect.py:
 * detect_steps and detect_regressions), chosen over E-Divisive because a
 * review's history is short (three runs must already show a step) and each
 * point carries its own CI, which asv uses as the point's weight:
 *
 *   1. Fit a piecewise-constant function by the weighted L1 Potts problem
 *        argmin_{k,{j},{mu}}  gamma k + sum_r sum_{i in r} w_i |y_i - mu_r|
 *      solved exactly by dynamic programming (Friedrich et al. 2008,
 *      "Complexity Penalized M-Estimation: Fast Computation", JCGS 17(1)),
 *      mu_r the weighted median of a segment.
 *   2. Choose gamma by asv's information criterion (after Yao 1988, Schwarz
 *      criterion): minimise beta k + ln(sigma_0 + s(rho)) over the fits,
 *      beta = 4 ln(n) / n, s the weighted L1 residual with AR(1) correlation
 *      rho fitted in [-1, 1], sigma_0 asv's noise floor (0.1 x the smallest
 *      jump between levels, or 0.001 x the smallest level with <= 2 levels).
 *   3. Report a regression (an upward step of a lower-is-better series) as
 *      asv's detect_regressions does: the step must exceed max(the segments'
 *      mean L1 error, threshold x level); a short segment (< 2 points) counts
 *      only if the series does not come back to the earlier level.
 *
 * Where opreview differs from asv: gamma is searched on a fixed logarithmic
 * grid wider than asv's golden-section bracket, and rho on a 0.05 grid (asv
 * uses golden-section search for both); the fit is exact, not asv's
 * windowed approximation (histories here are at most ANA_CP_MAX points).
 * Improvements are found by the same rule on the reciprocal series (a
 * downward step of y is an upward step of 1/y). Weights: w_i = 1 / CI width,
 * normalised by the median weight; a point without CI gets the median. */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fit {
	size_t n;
	const double *y, *w;
	double *mu, *dist; /* [l * n + r], l <= r */
};

static int cmp_pair(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* asv's weighted_median: the first value where the running weight passes
 * half the total; the mean of the two values when it lands exactly on it. */
static double wmedian(double *pairs, size_t m)
{
	double total = 0, sum = 0, acc = 0;
	size_t k = 0;
	for (size_t i = 0; i < m; i++)
		total += pairs[2 * i + 1];
	double mid = total / 2;
	for (size_t i = 0; i < m; i++) {
		sum += pairs[2 * i + 1];
		if (sum > mid) {
			acc += pairs[2 * i];
			k++;
			break;
		} else if (sum == mid) {
			acc += pairs[2 * i];
			k++;
		}
	}
	return k ? acc / (double)k : pairs[0];
}

static int fit_init(struct fit *f, const double *y, const double *w, size_t n)
{
	f->n = n;
	f->y = y;
	f->w = w;
	f->mu = malloc(n * n * sizeof *f->mu);
	f->dist = malloc(n * n * sizeof *f->dist);
	double *pairs = malloc(2 * n * sizeof *pairs);
	if (!f->mu || !f->dist || !pairs) {
		free(pairs);
		return -1;
	}
	for (size_t l = 0; l < n; l++)
		for (size_t r = l; r < n; r++) {
			size_t m = r - l + 1;
			for (size_t i = 0; i < m; i++) {
				pairs[2 * i] = y[l + i];
				pairs[2 * i + 1] = w[l + i];
			}
			qsort(pairs, m, 2 * sizeof *pairs, cmp_pair);
			double mu = wmedian(pairs, m), d = 0;
			for (size_t i = l; i <= r; i++)
				d += w[i] * fabs(y[i] - mu);
			f->mu[l * n + r] = mu;
			f->dist[l * n + r] = d;
		}
	free(pairs);
	return 0;
}

static void fit_release(struct fit *f)
{
	free(f->mu);
	free(f->dist);
}

/* Exact Potts solution for one gamma: right[] exclusive ends, *k segments. */
static void potts(const struct fit *f, double gamma, double *B, size_t *p, size_t *right, size_t *k)
{
	size_t n = f->n;
	B[0] = -gamma;
	for (size_t r = 0; r < n; r++) {
		B[r + 1] = INFINITY;
		for (size_t l = 0; l <= r; l++) {
			double b = B[l] + gamma + f->dist[l * n + r];
			if (b <= B[r + 1]) {
				B[r + 1] = b;
				p[r] = l;
			}
		}
	}
	size_t cnt = 0, r = n;
	while (r > 0) {
		right[cnt++] = r;
		r = p[r - 1];
	}
	for (size_t i = 0; i < cnt / 2; i++) {
		size_t t = right[i];
		right[i] = right[cnt - 1 - i];
		right[cnt - 1 - i] = t;
	}
	*k = cnt;
}

/* asv's sigma_star: |E_0| w_0 + sum_{j>0} w_j |E_j - rho E_{j-1}|. */
static double sigma_star(const struct fit *f, const size_t *right, size_t k, double rho)
{
	size_t l = 0;
	double prev = 0, s = 0;
	for (size_t j = 0; j < k; j++) {
		double v = f->mu[l * f->n + right[j] - 1];
		for (size_t i = l; i < right[j]; i++) {
			double e = f->y[i] - v;
			s += f->w[i] * (i == 0 ? fabs(e) : fabs(e - rho * prev));
			prev = e;
		}
		l = right[j];
	}
	return s;
}

static int detect_steps(const double *y, const double *w, size_t n, struct ana_step *steps,
			size_t *nsteps)
{
	struct fit f;
	if (fit_init(&f, y, w, n)) {
		fit_release(&f);
		return -1;
	}
	double *B = malloc((n + 1) * sizeof *B);
	size_t *p = malloc(n * sizeof *p), *right = malloc(n * sizeof *right),
	       *best = malloc(n * sizeof *best);
	if (!B || !p || !right || !best) {
		free(B), free(p), free(right), free(best);
		fit_release(&f);
		return -1;
	}
	double beta = 4 * log((double)n) / (double)n;
	double gamma0 = f.dist[n - 1];
	if (gamma0 == 0)
		gamma0 = 1.0;
	double best_obj = INFINITY;
	size_t best_k = 0;
	/* asv brackets x = ln(gamma / gamma0) in [ln(0.1 / n), 0]; the grid
	 * covers a decade more on either side */
	double a = log(0.01 / (double)n), b = log(10.0);
	for (int g = 0; g <= 240; g++) {
		double gamma = gamma0 * exp(a + (b - a) * g / 240.0);
		size_t k;
		potts(&f, gamma, B, p, right, &k);
		double s = INFINITY;
		for (int ri = 0; ri <= 40; ri++) {
			double v = sigma_star(&f, right, k, -1.0 + ri * 0.05);
			if (v < s)
				s = v;
		}
		double s0;
		if (k > 2) {
			s0 = INFINITY;
			size_t l = 0;
			for (size_t j = 0; j + 1 < k; j++) {
				double d = fabs(f.mu[right[j] * n + right[j + 1] - 1] - f.mu[l * n + right[j] - 1]);
				if (d < s0)
					s0 = d;
				l = right[j];
			}
			s0 *= 0.1;
		} else {
			s0 = INFINITY;
			size_t l = 0;
			for (size_t j = 0; j < k; j++) {
				double v = fabs(f.mu[l * n + right[j] - 1]);
				if (v < s0)
					s0 = v;
				l = right[j];
			}
			s0 *= 0.001;
		}
		if (!(s0 > 1e-300))
			s0 = 1e-300;
		double obj = beta * (double)k + log(s0 + s);
		if (obj < best_obj) {
			best_obj = obj;
			best_k = k;
			memcpy(best, right, k * sizeof *best);
		}
	}
	size_t l = 0;
	for (size_t j = 0; j < best_k; j++) {
		size_t r = best[j];
		double mn = INFINITY;
		for (size_t i = l; i < r; i++)
			if (y[i] < mn)
				mn = y[i];
		steps[j] = (struct ana_step){l, r, f.mu[l * n + r - 1], mn,
					     fabs(f.dist[l * n + r - 1] / (double)(r - l))};
		l = r;
	}
	*nsteps = best_k;
	free(B), free(p), free(right), free(best);
	fit_release(&f);
	return 0;
}

/* asv's detect_regressions (min_size 2): upward steps after which the
 * series stays worse. Appends ana_change entries (at = first index after
 * the step) in series order. */
static size_t regressions(const struct ana_step *st, size_t k, double threshold,
			  struct ana_change *out)
{
	size_t nout = 0;
	if (!k)
		return 0;
	double best_v = st[k - 1].value, tb_v = st[k - 1].value, tb_err = st[k - 1].err;
	size_t prev_l = 0;
	int have_prev = 0, short_prev = 0;
	double sp_v = 0, sp_err = 0;
	for (size_t jj = k; jj-- > 0;) {
		const struct ana_step *s = &st[jj];
		double step = fmax(fmax(s->err, tb_err), threshold * s->value);
		if (tb_v > s->value + step) {
			if (s->right - s->left < 2) {
				short_prev = 1;
				sp_v = tb_v;
				sp_err = tb_err;
			}
			out[nout++] = (struct ana_change){have_prev ? prev_l : s->right, s->value, best_v, 0, 1};
			tb_v = s->value;
			tb_err = s->err;
		} else if (short_prev) {
			if (sp_v <= s->value + step) {
				nout--;
				tb_v = sp_v;
				tb_err = sp_err;
			}
			short_prev = 0;
		}
		prev_l = s->left;
		have_prev = 1;
		if (s->value < best_v)
			best_v = s->value;
	}
	for (size_t i = 0; i < nout / 2; i++) {
		struct ana_change t = out[i];
		out[i] = out[nout - 1 - i];
		out[nout - 1 - i] = t;
	}
	return nout;
}

static int cmp_change(const void *a, const void *b)
{
	const struct ana_change *x = a, *y = b;
	return (x->at > y->at) - (x->at < y->at);
}

int ana_changepoints(const double *y_in, const double *ci_width, size_t n, double threshold,
		     int higher_is_better, struct ana_changes *out, struct opr_error *err)
{
	memset(out, 0, sizeof *out);
	if (n > ANA_CP_MAX)
		return opr_error_set(err, OPR_EINPUT, "a series of %zu points is longer than %d", n, ANA_CP_MAX);
	if (n == 0)
		return 0;
	double y[ANA_CP_MAX], w[ANA_CP_MAX], wv[ANA_CP_MAX];
	size_t nw = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(y_in[i] > 0) || !isfinite(y_in[i]))
			return opr_error_set(err, OPR_EINPUT, "point %zu of the series is not a positive number", i);
		/* lower is better throughout: a throughput becomes time per sample */
		y[i] = higher_is_better ? 1.0 / y_in[i] : y_in[i];
		w[i] = NAN;
		if (ci_width && ci_width[i] > 0 && isfinite(ci_width[i])) {
			double cw = higher_is_better ? ci_width[i] / (y_in[i] * y_in[i]) : ci_width[i];
			wv[nw++] = w[i] = 1.0 / cw;
		}
	}
	double med = 1.0;
	if (nw) {
		for (size_t i = 1; i < nw; i++) /* insertion sort: nw <= ANA_CP_MAX */
			for (size_t j = i; j > 0 && wv[j - 1] > wv[j]; j--) {
				double t = wv[j];
				wv[j] = wv[j - 1];
				wv[j - 1] = t;
			}
		med = nw % 2 ? wv[nw / 2] : (wv[nw / 2 - 1] + wv[nw / 2]) / 2;
		if (med == 0)
			med = 1.0;
	}
	for (size_t i = 0; i < n; i++)
		w[i] = isfinite(w[i]) ? w[i] / med : 1.0;
	if (detect_steps(y, w, n, out->steps, &out->nsteps))
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	out->nchanges = regressions(out->steps, out->nsteps, threshold, out->changes);
	/* improvements: the same rule on the reciprocal series */
	double r[ANA_CP_MAX];
	for (size_t i = 0; i < n; i++)
		r[i] = 1.0 / y[i];
	struct ana_step rs[ANA_CP_MAX];
	size_t nrs;
	struct ana_change rc[ANA_CP_MAX];
	if (detect_steps(r, w, n, rs, &nrs))
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	size_t nrc = regressions(rs, nrs, threshold, rc);
	for (size_t i = 0; i < nrc && out->nchanges < ANA_CP_MAX; i++) {
		rc[i].worse = 0;
		rc[i].before = 1.0 / rc[i].before;
		rc[i].after = 1.0 / rc[i].after;
		out->changes[out->nchanges++] = rc[i];
	}
	qsort(out->changes, out->nchanges, sizeof *out->changes, cmp_change);
	for (size_t i = 0; i < out->nchanges; i++) {
		struct ana_change *c = &out->changes[i];
		if (higher_is_better) { /* back to the series' own unit */
			c->before = 1.0 / c->before;
			c->after = 1.0 / c->after;
			c->worse = !c->worse ? 0 : 1;
		}
		c->rel = c->after / c->before - 1.0;
	}
	for (size_t j = 0; j < out->nsteps && higher_is_better; j++) {
		out->steps[j].value = 1.0 / out->steps[j].value;
		out->steps[j].min = NAN;
		out->steps[j].err = NAN;
	}
	return 0;
}
