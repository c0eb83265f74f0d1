/* analyze/tail_counters.c: the host's software counters tied to the tail samples.
 * Each batch (one round's reps of one variant) has its context switches, page faults,
 * CPU time and migrations (collect/hostcount.h); a sample is charged its batch's counts
 * divided by the batch's samples. Tail = samples at or above the variant's p95, so the
 * packet can say whether the slow samples are the preempted or faulting ones. */
#include "analyze.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The p95 sample by nearest rank, ceil(0.95 n) (Hyndman & Fan type 1). */
static int64_t p95_sample(const int64_t *ns, size_t n, int *ok)
{
	int64_t *s = malloc(n * sizeof *s);
	*ok = s != NULL;
	if (!s)
		return 0;
	memcpy(s, ns, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_i64);
	size_t k = (size_t)ceil(0.95 * (double)n);
	int64_t t = s[k ? k - 1 : 0];
	free(s);
	return t;
}

int ana_tail_counters(const struct col_run *run, int b, int v, struct ana_tail_counter out[COL_NHC])
{
	const struct col_variant_run *vr = &run->blocks[b].v[v];
	int ok;
	memset(out, 0, COL_NHC * sizeof *out);
	for (int c = 0; c < COL_NHC; c++) {
		out[c].block = b;
		out[c].variant = v;
		out[c].counter = (enum col_hc)c;
		out[c].tail_per_sample = out[c].rest_per_sample = NAN;
		out[c].tail_share = out[c].rest_share = NAN;
	}
	if (!run->hc_recorded || !vr->nsamples || !vr->hc_rounds)
		return 0;
	int64_t thr = p95_sample(vr->samples_ns, vr->nsamples, &ok);
	size_t *per_round = calloc(vr->nhc_rounds ? vr->nhc_rounds : 1, sizeof *per_round);
	if (!ok || !per_round) {
		free(per_round);
		return OPR_ENOMEM;
	}
	for (size_t k = 0; k < vr->nsamples; k++)
		if ((size_t)vr->round[k] < vr->nhc_rounds)
			per_round[vr->round[k]]++;
	double sum[2][COL_NHC] = {{0}}, any[2][COL_NHC] = {{0}};
	size_t cnt[2] = {0, 0};
	for (size_t k = 0; k < vr->nsamples; k++) {
		size_t r = (size_t)vr->round[k];
		if (r >= vr->nhc_rounds)
			continue; /* a sample without its batch's counters */
		int tail = vr->samples_ns[k] >= thr;
		cnt[tail]++;
		for (int c = 0; c < COL_NHC; c++) {
			sum[tail][c] += (double)vr->hc_rounds[r][c] / (double)per_round[r];
			any[tail][c] += vr->hc_rounds[r][c] > 0;
		}
	}
	free(per_round);
	for (int c = 0; c < COL_NHC; c++) {
		if (!run->hc[c].available)
			continue;
		struct ana_tail_counter *t = &out[c];
		t->available = 1;
		t->tail_samples = cnt[1];
		t->rest_samples = cnt[0];
		if (cnt[1]) {
			t->tail_per_sample = sum[1][c] / (double)cnt[1];
			t->tail_share = any[1][c] / (double)cnt[1];
		}
		if (cnt[0]) {
			t->rest_per_sample = sum[0][c] / (double)cnt[0];
			t->rest_share = any[0][c] / (double)cnt[0];
		}
	}
	return 0;
}
