/* opreview_util.c: the helpers every folder shares (opreview.h): the one text
 * buffer, the one array growth rule and the one clock. */
#include "opreview.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the text buffer ---- */

static int buf_reserve(struct opr_buf *b, size_t extra)
{
	if (b->oom)
		return -1;
	if (extra < SIZE_MAX - b->len - 1 && b->len + extra + 1 <= b->cap)
		return 0;
	if (extra >= SIZE_MAX - b->len - 1) {
		b->oom = 1;
		return -1;
	}
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > SIZE_MAX / 2) {
			b->oom = 1;
			return -1;
		}
		cap *= 2;
	}
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void opr_buf_add(struct opr_buf *b, const char *s, size_t n)
{
	if (buf_reserve(b, n))
		return;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void opr_buf_puts(struct opr_buf *b, const char *s)
{
	opr_buf_add(b, s, strlen(s));
}

void opr_buf_printf(struct opr_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if (buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *opr_buf_take(struct opr_buf *b)
{
	if (!b->oom && !b->p)
		opr_buf_add(b, "", 0);
	if (b->oom) {
		opr_buf_release(b);
		return NULL;
	}
	char *p = b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void opr_buf_release(struct opr_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}

/* ---- array growth ---- */

int opr_grow(void *slot, size_t *cap, size_t first, size_t size)
{
	void *items;
	memcpy(&items, slot, sizeof items);
	size_t nc = *cap ? *cap : first;
	if (*cap) {
		if (nc > SIZE_MAX / 2)
			return -1;
		nc *= 2;
	}
	if (!size || nc > SIZE_MAX / size)
		return -1;
	void *p = realloc(items, nc * size);
	if (!p)
		return -1;
	memcpy(slot, &p, sizeof p);
	*cap = nc;
	return 0;
}

/* ---- quantiles and their CIs ---- */

double opr_quantile_type7(const double *sorted, size_t n, double q)
{
	if (!sorted || n == 0 || !(q >= 0.0 && q <= 1.0))
		return NAN;
	double h = (double)(n - 1) * q;
	size_t i = (size_t)h;
	if (i >= n - 1)
		return sorted[n - 1];
	double f = h - (double)i;
	return sorted[i] + f * (sorted[i + 1] - sorted[i]);
}

double opr_quantile_type7_i64(const int64_t *sorted, size_t n, double q)
{
	if (!sorted || n == 0 || !(q >= 0.0 && q <= 1.0))
		return NAN;
	double h = (double)(n - 1) * q;
	size_t i = (size_t)h;
	if (i >= n - 1)
		return (double)sorted[n - 1];
	double f = h - (double)i;
	return (double)sorted[i] + f * ((double)sorted[i + 1] - (double)sorted[i]);
}

double opr_quantile_nearest_rank(const double *sorted, size_t n, double q)
{
	if (!sorted || n == 0 || !(q >= 0.0 && q <= 1.0))
		return NAN;
	size_t k = (size_t)ceil(q * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return sorted[k - 1];
}

int opr_quantile_ci95_ranks(size_t n, double q, size_t *r, size_t *s)
{
	double half = 1.96 * sqrt((double)n * q * (1 - q));
	double lo = floor((double)n * q - half), hi = ceil((double)n * q + half);
	if (n == 0 || lo < 0 || hi > (double)n - 1)
		return -1;
	*r = (size_t)lo;
	*s = (size_t)hi;
	return 0;
}

size_t opr_min_samples(double q, double conf)
{
	double m, a2, est;
	size_t n;

	if (!(q > 0.0 && q < 1.0) || !(conf > 0.0 && conf < 1.0))
		return 0;
	m = q > 0.5 ? q : 1.0 - q;
	a2 = (1.0 - conf) / 2.0;
	est = ceil(log(a2) / log(m));
	n = est < 1.0 ? 1 : (size_t)est;
	/* log division can land one off an exact boundary: settle with pow */
	while (n > 1 && pow(m, (double)(n - 1)) <= a2)
		n--;
	while (pow(m, (double)n) > a2)
		n++;
	return n;
}

/* ---- the clock ---- */

int64_t opr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
