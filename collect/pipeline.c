/* collect/pipeline.c: the scheduling pipeline simulation, a deterministic
 * discrete-event simulation (event heap plus a fluid model of the shared
 * global bandwidth) of streams -> batches -> runtime queue -> cores.
 *
 * The model (times in ns, bytes, GB/s == bytes/ns):
 *
 *  Arrivals. Stream s gets the share w_s / sum(w) of rate_rps and of the
 *  requests (even split without weights; the remainder of requests goes to
 *  the first streams). Poisson: gaps -ln(u) / lambda_s, u uniform in (0, 1]
 *  from the stream's own xoshiro256** generator seeded by SplitMix64 of
 *  (seed, s), so a stream's arrivals do not depend on the others. Uniform:
 *  arrival k at (s / streams + k) / lambda_s (phases staggered over streams).
 *
 *  Batching, per stream. The first request of an empty batch opens it; the
 *  batch closes at the arrival of its batch_max-th request or batch_timeout
 *  after it opened (its oldest request has waited the timeout), whichever is
 *  first. A closed batch is one job in the runtime queue (FIFO).
 *
 *  Placement. least-loaded: whenever a core is free and jobs wait, the head
 *  job goes to the free core with the least busy time so far (lowest index
 *  on ties). round-robin: job j (in queue order) is bound to core j mod cores
 *  when it is queued and waits for that core even if others are idle.
 *
 *  Service. A job of b requests runs the launches in order on its core. For
 *  launch i: an overhead phase of overhead_i (no traffic); then a transfer of
 *  D_i = b * global_bytes_i and compute C_i = b * compute_i. Double-buffered:
 *  both start together and the launch ends when both are done,
 *      T_i = overhead_i + max(C_i, X_i);
 *  single-buffered: compute starts when the transfer is done,
 *      T_i = overhead_i + X_i + C_i,
 *  where X_i is the transfer's duration under contention. The whole demand
 *  D_i of a launch is issued when its overhead ends (the DMA queue is filled
 *  at launch start: a fused launch's traffic is one burst).
 *
 *  Shared bandwidth (fluid processor sharing with a per-launch cap). With n
 *  transfers in flight each is served at
 *      r(n) = min(P, G / n)            P = dma_peak_gbps (P = G when 0)
 *  so a launch alone moves at P, and overlapping bursts slow each other once
 *  n * P > G. Between two events the rates are constant, so the next transfer
 *  to finish is the one with the least remaining bytes: it ends at
 *      t + min_k(remaining_k) / r(n).
 *  This is the fluid limit of a round-robin memory controller (Kleinrock's
 *  processor sharing); work-conserving: the bytes served per ns are
 *  min(n * P, G). Nothing else couples the cores: the slowdown of a launch
 *  comes only from other launches' transfers overlapping its own.
 *
 *  Why bursts can cost tail latency. A double-buffered launch hides its
 *  transfer behind compute as long as X_i <= C_i, so contention that
 *  stretches X_i by up to n is free until it exceeds C_i. A launch that must
 *  stage its operands first (single-buffered, typically a fused group whose
 *  intermediates fill SHARED so no second buffer fits) exposes the whole
 *  stretched burst: T = overhead + X + C with X = D / r(n). Fusing removes
 *  overheads and intermediate traffic (lower D, fewer launches), yet at high
 *  load the exposed, batch-scaled burst overlaps other cores' bursts and the
 *  stretch lands on the critical path, and queueing amplifies the longer,
 *  more variable service into p95. In this work-conserving model a burst
 *  that is hidden as well as the spread traffic is never worse: the effect
 *  needs exposure plus overlap, which is what the simulation measures.
 *
 *  Statistics. Quantiles are exact order statistics of the n simulated values
 *  (nearest rank, the ceil(p n)-th smallest). Jain's fairness index
 *  J = (sum x)^2 / (n sum x^2) (Jain, Chiu, Hawe 1984) over core busy time and
 *  over per-stream mean latency. Little's law L = lambda W (Little 1961) is
 *  checked over the arrival window [0, T_a], T_a = last arrival: L is the
 *  time-average of the number in system, integrated event by event,
 *  lambda = n / T_a, W = mean latency. Same seed and inputs: identical
 *  results, bit for bit (ties between events break by insertion order). */
#include "pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers: ops_xoshiro (ops/rng.c), one stream each ---- */

static void rng_seed(struct ops_xoshiro *r, uint64_t seed, uint64_t stream)
{
	ops_xoshiro_seed(r, seed ^ (0xd1b54a32d192ed03ULL * (stream + 1)));
}

/* Uniform in (0, 1]: never 0, so -log(u) is finite. */
static double rng_unit(struct ops_xoshiro *r)
{
	return (double)((ops_xoshiro_next(r) >> 11) + 1) * 0x1.0p-53;
}

/* ---- event heap --------------------------------------------------------- */

enum ev_type { EV_ARRIVAL, EV_TIMEOUT, EV_OVERHEAD_END, EV_COMPUTE_END };

struct event {
	double t;
	uint64_t seq;     /* insertion order: breaks ties deterministically */
	int type;
	int32_t who;      /* stream or core */
	uint64_t gen;     /* batch generation, for stale timeouts */
};

struct heap {
	struct event *e;
	size_t n, cap;
	uint64_t seq;
};

static int ev_before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct heap *h, double t, int type, int32_t who, uint64_t gen)
{
	if (OPR_GROW(h->e, h->n, h->cap, 64))
		return OPR_ENOMEM;
	struct event ev = { t, h->seq++, type, who, gen };
	size_t i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!ev_before(&ev, &h->e[p]))
			break;
		h->e[i] = h->e[p];
		i = p;
	}
	h->e[i] = ev;
	return 0;
}

static struct event heap_pop(struct heap *h)
{
	struct event top = h->e[0];
	struct event last = h->e[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && ev_before(&h->e[c + 1], &h->e[c]))
			c++;
		if (!ev_before(&h->e[c], &last))
			break;
		h->e[i] = h->e[c];
		i = c;
	}
	if (h->n)
		h->e[i] = last;
	return top;
}

/* ---- simulation state ----------------------------------------------------- */

struct job {
	int64_t head;     /* first request (linked through sim.next_req) */
	int32_t b;        /* requests */
	int32_t core;     /* round-robin: bound core; else where it ran */
	int32_t stream;
	int64_t next;     /* queue link */
	double start;
	double close;     /* when the batch closed */
};

struct stream_state {
	struct ops_xoshiro rng;
	double lambda;    /* arrivals per ns */
	double phase;     /* uniform: first arrival */
	int64_t quota, sent;
	int64_t head, tail;  /* open batch, -1 when empty */
	int32_t count;
	uint64_t gen;
};

struct core_state {
	int64_t job;      /* -1: idle */
	size_t launch;
	int xfer;         /* transfer in flight */
	int compute;      /* compute pending (scheduled or waiting for data) */
	double remaining; /* bytes of the transfer */
	double compute_ns;/* of the current launch */
	double job_start;
};

struct sim {
	const struct col_pipe_config *cfg;
	const struct col_pipe_launch *l;
	size_t nl;
	struct col_pipe_result *out;
	struct heap h;
	double now;
	double *arrival;
	int64_t *next_req;
	struct job *jobs;
	int64_t njobs, narrived, ndone;
	struct stream_state *st;
	struct core_state core[COL_PIPE_MAX_CORES];
	int64_t qhead[COL_PIPE_MAX_CORES], qtail[COL_PIPE_MAX_CORES]; /* [0] for least-loaded */
	int rr_next;
	int active[COL_PIPE_MAX_CORES];  /* cores with a transfer in flight */
	int nactive;
	double peak, bw;
	double in_system;       /* requests arrived and not completed */
	double area;            /* integral of in_system over [0, last arrival] */
	double last_arrival;
};

static double xfer_rate(const struct sim *s)
{
	double share = s->bw / s->nactive;
	return share < s->peak ? share : s->peak;
}

/* Moves the clock to t: transfers progress at the common rate, the
 * number-in-system integral grows while arrivals are still coming. */
static void advance(struct sim *s, double t)
{
	double dt = t - s->now;
	if (dt <= 0)
		return;
	if (s->nactive) {
		double moved = xfer_rate(s) * dt;
		for (int k = 0; k < s->nactive; k++)
			s->core[s->active[k]].remaining -= moved;
	}
	if (s->narrived < s->out->n)
		s->area += s->in_system * dt;
	s->now = t;
}

static int dispatch(struct sim *s);
static int begin_launch(struct sim *s, int c);

static int enqueue_job(struct sim *s, int64_t j)
{
	int q = 0;
	if (!s->cfg->least_loaded) {
		s->jobs[j].core = s->rr_next;
		q = s->rr_next;
		s->rr_next = (s->rr_next + 1) % s->cfg->cores;
	}
	s->jobs[j].next = -1;
	if (s->qtail[q] < 0)
		s->qhead[q] = j;
	else
		s->jobs[s->qtail[q]].next = j;
	s->qtail[q] = j;
	return dispatch(s);
}

static int close_batch(struct sim *s, int stream)
{
	struct stream_state *st = &s->st[stream];
	int64_t j = s->njobs++;
	s->jobs[j].head = st->head;
	s->jobs[j].b = st->count;
	s->jobs[j].core = -1;
	s->jobs[j].stream = stream;
	s->jobs[j].close = s->now;
	st->head = st->tail = -1;
	st->count = 0;
	st->gen++;
	return enqueue_job(s, j);
}

static int start_job(struct sim *s, int c, int64_t j)
{
	struct core_state *cs = &s->core[c];
	cs->job = j;
	cs->launch = 0;
	cs->job_start = s->now;
	s->jobs[j].start = s->now;
	s->jobs[j].core = c;
	for (int64_t r = s->jobs[j].head; r >= 0; r = s->next_req[r])
		s->out->wait_ns[r] = s->now - s->arrival[r];
	return begin_launch(s, c);
}

static int pop_queue(struct sim *s, int q, int64_t *j)
{
	*j = s->qhead[q];
	if (*j < 0)
		return 0;
	s->qhead[q] = s->jobs[*j].next;
	if (s->qhead[q] < 0)
		s->qtail[q] = -1;
	return 1;
}

static int dispatch(struct sim *s)
{
	int cores = s->cfg->cores;
	int64_t j;
	if (s->cfg->least_loaded) {
		while (s->qhead[0] >= 0) {
			int best = -1;
			for (int c = 0; c < cores; c++)
				if (s->core[c].job < 0 &&
				    (best < 0 || s->out->core_busy_ns[c] < s->out->core_busy_ns[best]))
					best = c;
			if (best < 0)
				return 0;
			pop_queue(s, 0, &j);
			int rc = start_job(s, best, j);
			if (rc)
				return rc;
		}
		return 0;
	}
	for (int c = 0; c < cores; c++)
		if (s->core[c].job < 0 && pop_queue(s, c, &j)) {
			int rc = start_job(s, c, j);
			if (rc)
				return rc;
		}
	return 0;
}

static int begin_launch(struct sim *s, int c)
{
	const struct col_pipe_launch *l = &s->l[s->core[c].launch];
	s->out->overhead_ns += l->overhead_ns;
	return heap_push(&s->h, s->now + l->overhead_ns, EV_OVERHEAD_END, c, 0);
}

static int finish_job(struct sim *s, int c)
{
	struct core_state *cs = &s->core[c];
	int64_t j = cs->job;
	double service = s->now - cs->job_start;
	s->out->core_busy_ns[c] += service;
	s->out->core_jobs[c]++;
	s->out->service_ns += service;
	for (int64_t r = s->jobs[j].head; r >= 0; r = s->next_req[r]) {
		s->out->latency_ns[r] = s->now - s->arrival[r];
		s->in_system -= 1;
		s->ndone++;
	}
	if (s->now > s->out->makespan_ns)
		s->out->makespan_ns = s->now;
	cs->job = -1;
	return dispatch(s);
}

/* Called whenever a phase of core c's launch ends. */
static int launch_progress(struct sim *s, int c)
{
	struct core_state *cs = &s->core[c];
	if (cs->xfer)
		return 0;
	if (cs->compute) {
		/* single-buffered: the data is in, compute starts now */
		const struct col_pipe_launch *l = &s->l[cs->launch];
		if (!l->double_buffer && cs->compute == 1) {
			cs->compute = 2;
			return heap_push(&s->h, s->now + cs->compute_ns, EV_COMPUTE_END, c, 0);
		}
		return 0;
	}
	if (++cs->launch < s->nl)
		return begin_launch(s, c);
	return finish_job(s, c);
}

/* The overhead phase ended: issue the launch's transfer and compute.
 * compute: 0 none pending, 1 waiting for data, 2 scheduled. */
static int launch_body(struct sim *s, int c)
{
	struct core_state *cs = &s->core[c];
	const struct col_pipe_launch *l = &s->l[cs->launch];
	double b = s->jobs[cs->job].b;
	double bytes = b * l->global_bytes;
	cs->compute_ns = b * l->compute_ns;
	cs->compute = cs->compute_ns > 0 ? 1 : 0;
	cs->xfer = bytes > 0;
	if (cs->xfer) {
		cs->remaining = bytes;
		s->active[s->nactive++] = c;
		if (s->nactive > s->out->max_concurrent_bursts)
			s->out->max_concurrent_bursts = s->nactive;
		s->out->bytes += bytes;
	}
	if (cs->compute && (l->double_buffer || !cs->xfer)) {
		cs->compute = 2;
		return heap_push(&s->h, s->now + cs->compute_ns, EV_COMPUTE_END, c, 0);
	}
	return launch_progress(s, c);
}

/* Ends the transfer with the least remaining bytes (and any within rounding
 * of zero); their launches move on. */
static int finish_transfers(struct sim *s)
{
	int done[COL_PIPE_MAX_CORES], ndone = 0;
	int argmin = 0;
	for (int k = 1; k < s->nactive; k++)
		if (s->core[s->active[k]].remaining < s->core[s->active[argmin]].remaining)
			argmin = k;
	s->core[s->active[argmin]].remaining = 0;
	int keep = 0;
	for (int k = 0; k < s->nactive; k++) {
		int c = s->active[k];
		if (s->core[c].remaining <= 1e-6)
			done[ndone++] = c;
		else
			s->active[keep++] = c;
	}
	s->nactive = keep;
	for (int k = 0; k < ndone; k++) {
		s->core[done[k]].xfer = 0;
		s->core[done[k]].remaining = 0;
	}
	for (int k = 0; k < ndone; k++) {
		int rc = launch_progress(s, done[k]);
		if (rc)
			return rc;
	}
	return 0;
}

static double next_arrival(struct sim *s, int i)
{
	struct stream_state *st = &s->st[i];
	if (s->cfg->poisson)
		return s->now - log(rng_unit(&st->rng)) / st->lambda;
	return st->phase + (double)st->sent / st->lambda;
}

static int on_arrival(struct sim *s, int i)
{
	struct stream_state *st = &s->st[i];
	int64_t r = s->narrived;
	s->arrival[r] = s->now;
	s->out->stream_of[r] = i;
	s->next_req[r] = -1;
	s->in_system += 1;
	s->narrived++;
	st->sent++;
	if (s->narrived == s->out->n)
		s->last_arrival = s->now;
	int rc = 0;
	if (st->sent < st->quota)
		rc = heap_push(&s->h, next_arrival(s, i), EV_ARRIVAL, i, 0);
	if (rc)
		return rc;
	if (st->count == 0) {
		st->head = st->tail = r;
		st->count = 1;
		if (s->cfg->batch_max > 1) {
			rc = heap_push(&s->h, s->now + s->cfg->batch_timeout_us * 1e3,
				       EV_TIMEOUT, i, st->gen);
			if (rc)
				return rc;
		}
	} else {
		s->next_req[st->tail] = r;
		st->tail = r;
		st->count++;
	}
	if (st->count >= s->cfg->batch_max)
		return close_batch(s, i);
	return 0;
}

static int run(struct sim *s)
{
	while (s->h.n || s->nactive) {
		double te = s->h.n ? s->h.e[0].t : INFINITY;
		if (s->nactive) {
			double minrem = INFINITY;
			for (int k = 0; k < s->nactive; k++)
				if (s->core[s->active[k]].remaining < minrem)
					minrem = s->core[s->active[k]].remaining;
			double tf = s->now + minrem / xfer_rate(s);
			if (tf <= te) {
				advance(s, tf);
				int rc = finish_transfers(s);
				if (rc)
					return rc;
				continue;
			}
		}
		struct event ev = heap_pop(&s->h);
		advance(s, ev.t);
		int rc = 0;
		switch (ev.type) {
		case EV_ARRIVAL:
			rc = on_arrival(s, ev.who);
			break;
		case EV_TIMEOUT:
			if (ev.gen == s->st[ev.who].gen && s->st[ev.who].count > 0)
				rc = close_batch(s, ev.who);
			break;
		case EV_OVERHEAD_END:
			rc = launch_body(s, ev.who);
			break;
		case EV_COMPUTE_END:
			s->core[ev.who].compute = 0;
			rc = launch_progress(s, ev.who);
			break;
		}
		if (rc)
			return rc;
	}
	return s->ndone == s->out->n ? 0 : OPR_EINTERNAL;
}

/* ---- statistics ------------------------------------------------------------ */

double col_pipe_jain(const double *x, size_t n)
{
	double sum = 0, sq = 0;
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	if (n == 0 || sq == 0)
		return 1.0;
	return sum * sum / ((double)n * sq);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}


static int summarise(struct sim *s, double *scratch)
{
	struct col_pipe_result *o = s->out;
	size_t n = (size_t)o->n;
	double sum = 0, wsum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += o->latency_ns[i];
		wsum += o->wait_ns[i];
	}
	o->mean_ns = sum / (double)n;
	o->wait_mean_ns = wsum / (double)n;

	memcpy(scratch, o->latency_ns, n * sizeof *scratch);
	qsort(scratch, n, sizeof *scratch, cmp_double);
	o->p50_ns = opr_quantile_nearest_rank(scratch, n, 0.50);
	o->p95_ns = opr_quantile_nearest_rank(scratch, n, 0.95);
	o->p99_ns = opr_quantile_nearest_rank(scratch, n, 0.99);
	o->max_ns = scratch[n - 1];

	memcpy(scratch, o->wait_ns, n * sizeof *scratch);
	qsort(scratch, n, sizeof *scratch, cmp_double);
	o->wait_p50_ns = opr_quantile_nearest_rank(scratch, n, 0.50);
	o->wait_p95_ns = opr_quantile_nearest_rank(scratch, n, 0.95);
	o->wait_p99_ns = opr_quantile_nearest_rank(scratch, n, 0.99);
	o->wait_max_ns = scratch[n - 1];

	size_t bins = o->hist_bins;
	for (size_t i = 0; i <= bins; i++)
		o->hist_edges_ns[i] = o->wait_max_ns * (double)i / (double)bins;
	o->hist_edges_ns[bins] = o->wait_max_ns;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		if (o->wait_max_ns > 0) {
			k = (size_t)(o->wait_ns[i] / o->wait_max_ns * (double)bins);
			if (k >= bins)
				k = bins - 1;
			/* keep the bin consistent with the stored edges despite rounding */
			while (k > 0 && o->wait_ns[i] < o->hist_edges_ns[k])
				k--;
			while (k + 1 < bins && o->wait_ns[i] >= o->hist_edges_ns[k + 1])
				k++;
		}
		o->hist_counts[k]++;
	}

	/* per stream: group latencies by stream (counting sort), then sort each */
	int ns = o->streams;
	int64_t *off = calloc((size_t)ns + 1, sizeof *off);
	if (!off)
		return OPR_ENOMEM;
	for (size_t i = 0; i < n; i++)
		off[o->stream_of[i] + 1]++;
	for (int i = 0; i < ns; i++)
		off[i + 1] += off[i];
	for (size_t i = 0; i < n; i++)
		scratch[off[o->stream_of[i]]++] = o->latency_ns[i];
	for (int i = ns; i > 0; i--)
		off[i] = off[i - 1];
	off[0] = 0;
	for (int i = 0; i < ns; i++) {
		size_t m = (size_t)(off[i + 1] - off[i]);
		double *v = scratch + off[i];
		double ssum = 0;
		for (size_t k = 0; k < m; k++)
			ssum += v[k];
		qsort(v, m, sizeof *v, cmp_double);
		o->stream_n[i] = (int64_t)m;
		o->stream_mean_ns[i] = m ? ssum / (double)m : 0;
		o->stream_p95_ns[i] = m ? opr_quantile_nearest_rank(v, m, 0.95) : 0;
	}
	free(off);
	o->jain_streams = col_pipe_jain(o->stream_mean_ns, (size_t)ns);

	o->jobs = s->njobs;
	o->mean_batch = (double)o->n / (double)s->njobs;
	o->throughput_rps = (double)o->n / o->makespan_ns * 1e9;
	for (int c = 0; c < o->cores; c++)
		o->core_util[c] = o->core_busy_ns[c] / o->makespan_ns;
	o->jain_cores = col_pipe_jain(o->core_busy_ns, (size_t)o->cores);
	o->bw_util = o->bytes / (s->bw * o->makespan_ns);
	o->little_W = o->mean_ns;
	if (s->last_arrival > 0) {
		o->little_lambda = (double)o->n / s->last_arrival;
		o->little_L = s->area / s->last_arrival;
	}
	return 0;
}

/* ---- validation and entry points ------------------------------------------- */

static int finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

static int validate(const struct col_pipe_config *c, const struct col_pipe_launch *l,
		    size_t nl, struct opr_error *err)
{
	if (!c || (!l && nl))
		return opr_error_set(err, OPR_EINPUT, "pipeline: missing 'config' or 'launches'");
	if (c->streams < 1 || c->streams > COL_PIPE_MAX_STREAMS)
		return opr_error_set(err, OPR_EINPUT, "pipeline: 'streams' must be 1..%d, got %d",
				     COL_PIPE_MAX_STREAMS, c->streams);
	if (!isfinite(c->rate_rps) || c->rate_rps <= 0)
		return opr_error_set(err, OPR_EINPUT, "pipeline: 'rate_rps' must be positive, got %g",
				     c->rate_rps);
	if (c->batch_max < 1 || c->batch_max > COL_PIPE_MAX_BATCH)
		return opr_error_set(err, OPR_EINPUT, "pipeline: 'batch_max' must be 1..%d, got %d",
				     COL_PIPE_MAX_BATCH, c->batch_max);
	if (!finite_nonneg(c->batch_timeout_us))
		return opr_error_set(err, OPR_EINPUT,
				     "pipeline: 'batch_timeout_us' must be >= 0, got %g",
				     c->batch_timeout_us);
	if (c->requests < c->streams || c->requests > COL_PIPE_MAX_REQUESTS)
		return opr_error_set(err, OPR_EINPUT,
				     "pipeline: 'requests' must be streams..%d, got %lld",
				     COL_PIPE_MAX_REQUESTS, (long long)c->requests);
	if (c->cores < 1 || c->cores > COL_PIPE_MAX_CORES)
		return opr_error_set(err, OPR_EINPUT, "pipeline: 'cores' must be 1..%d, got %d",
				     COL_PIPE_MAX_CORES, c->cores);
	if (!isfinite(c->global_bw_gbps) || c->global_bw_gbps <= 0)
		return opr_error_set(err, OPR_EINPUT,
				     "pipeline: 'global_bw_gbps' must be positive, got %g",
				     c->global_bw_gbps);
	if (!finite_nonneg(c->dma_peak_gbps))
		return opr_error_set(err, OPR_EINPUT,
				     "pipeline: 'dma_peak_gbps' must be >= 0, got %g", c->dma_peak_gbps);
	if (c->hist_bins > 1000000)
		return opr_error_set(err, OPR_EINPUT, "pipeline: 'hist_bins' must be at most 1000000");
	if (nl < 1 || nl > COL_PIPE_MAX_LAUNCHES)
		return opr_error_set(err, OPR_EINPUT, "pipeline: 'launches' must be 1..%d, got %zu",
				     COL_PIPE_MAX_LAUNCHES, nl);
	for (size_t i = 0; i < nl; i++)
		if (!finite_nonneg(l[i].overhead_ns) || !finite_nonneg(l[i].compute_ns) ||
		    !finite_nonneg(l[i].global_bytes))
			return opr_error_set(err, OPR_EINPUT,
					     "pipeline: launch %zu: 'overhead_ns', 'compute_ns' and "
					     "'global_bytes' must be finite and >= 0", i);
	int any = 0;
	for (size_t i = 0; i < nl; i++)
		any |= l[i].overhead_ns > 0 || l[i].compute_ns > 0 || l[i].global_bytes > 0;
	if (!any)
		return opr_error_set(err, OPR_EINPUT, "pipeline: the launches take no time");
	if (c->stream_weight)
		for (int i = 0; i < c->streams; i++)
			if (!isfinite(c->stream_weight[i]) || c->stream_weight[i] <= 0)
				return opr_error_set(err, OPR_EINPUT,
						     "pipeline: 'stream_weight[%d]' must be positive", i);
	return 0;
}

void col_pipe_result_release(struct col_pipe_result *r)
{
	if (!r)
		return;
	free(r->latency_ns);
	free(r->wait_ns);
	free(r->stream_of);
	free(r->hist_edges_ns);
	free(r->hist_counts);
	free(r->stream_mean_ns);
	free(r->stream_p95_ns);
	free(r->stream_n);
	free(r->arrival_ns);
	free(r->job_of);
	free(r->job_close_ns);
	free(r->job_stream);
	free(r->job_b);
	memset(r, 0, sizeof *r);
}

/* Splits rate and requests over the streams. */
static void setup_streams(struct sim *s)
{
	const struct col_pipe_config *c = s->cfg;
	double wsum = 0;
	for (int i = 0; i < c->streams; i++)
		wsum += c->stream_weight ? c->stream_weight[i] : 1.0;
	int64_t given = 0;
	for (int i = 0; i < c->streams; i++) {
		struct stream_state *st = &s->st[i];
		double w = (c->stream_weight ? c->stream_weight[i] : 1.0) / wsum;
		st->lambda = c->rate_rps * w * 1e-9;
		st->quota = (int64_t)floor((double)c->requests * w);
		if (st->quota < 1)
			st->quota = 1;
		given += st->quota;
		st->phase = (double)i / c->streams / st->lambda;
		st->head = st->tail = -1;
		rng_seed(&st->rng, c->seed, (uint64_t)i);
	}
	/* the remainder (or excess from the minimum of one) goes to the first streams */
	for (int i = 0; given != c->requests; i = (i + 1) % c->streams) {
		if (given < c->requests) {
			s->st[i].quota++;
			given++;
		} else if (s->st[i].quota > 1) {
			s->st[i].quota--;
			given--;
		}
	}
}

int col_pipe_simulate(const struct col_pipe_config *cfg,
		      const struct col_pipe_launch *launches, size_t nlaunches,
		      struct col_pipe_result *out, struct opr_error *err)
{
	if (!out)
		return opr_error_set(err, OPR_EINPUT, "pipeline: missing 'result'");
	memset(out, 0, sizeof *out);
	int rc = validate(cfg, launches, nlaunches, err);
	if (rc)
		return rc;
	struct sim s;
	memset(&s, 0, sizeof s);
	s.cfg = cfg;
	s.l = launches;
	s.nl = nlaunches;
	s.out = out;
	s.bw = cfg->global_bw_gbps;
	s.peak = cfg->dma_peak_gbps > 0 ? cfg->dma_peak_gbps : cfg->global_bw_gbps;
	size_t n = (size_t)cfg->requests;
	size_t ns = (size_t)cfg->streams;
	out->n = cfg->requests;
	out->streams = cfg->streams;
	out->cores = cfg->cores;
	out->hist_bins = cfg->hist_bins ? cfg->hist_bins : COL_PIPE_DEFAULT_BINS;
	out->latency_ns = malloc(n * sizeof *out->latency_ns);
	out->wait_ns = malloc(n * sizeof *out->wait_ns);
	out->stream_of = malloc(n * sizeof *out->stream_of);
	out->hist_edges_ns = calloc(out->hist_bins + 1, sizeof *out->hist_edges_ns);
	out->hist_counts = calloc(out->hist_bins, sizeof *out->hist_counts);
	out->stream_mean_ns = calloc(ns, sizeof *out->stream_mean_ns);
	out->stream_p95_ns = calloc(ns, sizeof *out->stream_p95_ns);
	out->stream_n = calloc(ns, sizeof *out->stream_n);
	s.arrival = malloc(n * sizeof *s.arrival);
	s.next_req = malloc(n * sizeof *s.next_req);
	s.jobs = malloc(n * sizeof *s.jobs);
	s.st = calloc(ns, sizeof *s.st);
	if (!out->latency_ns || !out->wait_ns || !out->stream_of || !out->hist_edges_ns ||
	    !out->hist_counts || !out->stream_mean_ns || !out->stream_p95_ns ||
	    !out->stream_n || !s.arrival || !s.next_req || !s.jobs || !s.st) {
		rc = OPR_ENOMEM;
		goto done;
	}
	/* poisoned so a request the simulation never completed cannot pass as 0 */
	for (size_t i = 0; i < n; i++)
		out->latency_ns[i] = out->wait_ns[i] = NAN;
	for (int c = 0; c < COL_PIPE_MAX_CORES; c++) {
		s.core[c].job = -1;
		s.qhead[c] = s.qtail[c] = -1;
	}
	setup_streams(&s);
	for (int i = 0; i < cfg->streams; i++) {
		double t = cfg->poisson ? next_arrival(&s, i) : s.st[i].phase;
		if ((rc = heap_push(&s.h, t, EV_ARRIVAL, i, 0)))
			goto done;
	}
	if ((rc = run(&s)))
		goto done;
	if (cfg->keep_trace) {
		size_t nj = s.njobs > 0 ? (size_t)s.njobs : 1;
		out->arrival_ns = malloc(n * sizeof *out->arrival_ns);
		out->job_of = malloc(n * sizeof *out->job_of);
		out->job_close_ns = malloc(nj * sizeof *out->job_close_ns);
		out->job_stream = malloc(nj * sizeof *out->job_stream);
		out->job_b = malloc(nj * sizeof *out->job_b);
		if (!out->arrival_ns || !out->job_of || !out->job_close_ns || !out->job_stream ||
		    !out->job_b) {
			rc = OPR_ENOMEM;
			goto done;
		}
		memcpy(out->arrival_ns, s.arrival, n * sizeof *s.arrival);
		for (int64_t j = 0; j < s.njobs; j++) {
			out->job_close_ns[j] = s.jobs[j].close;
			out->job_stream[j] = s.jobs[j].stream;
			out->job_b[j] = s.jobs[j].b;
			for (int64_t r = s.jobs[j].head; r >= 0; r = s.next_req[r])
				out->job_of[r] = j;
		}
	}
	/* the arrays are reused as scratch for sorting: arrival is no longer needed */
	rc = summarise(&s, s.arrival);
done:
	free(s.arrival);
	free(s.next_req);
	free(s.jobs);
	free(s.st);
	free(s.h.e);
	if (rc) {
		col_pipe_result_release(out);
		if (rc == OPR_ENOMEM)
			return opr_error_set(err, rc, "pipeline: out of memory");
		return opr_error_set(err, rc, "pipeline: the simulation did not complete "
				     "every request");
	}
	return 0;
}

int col_pipe_sweep(const struct col_pipe_config *cfg,
		   const struct col_pipe_launch *launches, size_t nlaunches,
		   struct col_pipe_sweep_row **rows, size_t *nrows,
		   struct opr_error *err)
{
	if (!rows || !nrows)
		return opr_error_set(err, OPR_EINPUT, "pipeline: missing 'rows'");
	*rows = NULL;
	*nrows = 0;
	int rc = validate(cfg, launches, nlaunches, err);
	if (rc)
		return rc;
	size_t m = (size_t)cfg->batch_max;
	struct col_pipe_sweep_row *r = calloc(m, sizeof *r);
	if (!r)
		return opr_error_set(err, OPR_ENOMEM, "pipeline: out of memory");
	for (size_t k = 0; k < m; k++) {
		struct col_pipe_config c = *cfg;
		struct col_pipe_result res;
		c.batch_max = (int)k + 1;
		rc = col_pipe_simulate(&c, launches, nlaunches, &res, err);
		if (rc) {
			free(r);
			return rc;
		}
		r[k].batch = c.batch_max;
		r[k].p50_ns = res.p50_ns;
		r[k].p95_ns = res.p95_ns;
		r[k].p99_ns = res.p99_ns;
		r[k].throughput_rps = res.throughput_rps;
		r[k].wait_mean_ns = res.wait_mean_ns;
		r[k].wait_p95_ns = res.wait_p95_ns;
		r[k].mean_batch = res.mean_batch;
		r[k].jain_cores = res.jain_cores;
		r[k].bw_util = res.bw_util;
		col_pipe_result_release(&res);
	}
	*rows = r;
	*nrows = m;
	return 0;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void col_pipe_config_from_profile(const struct col_profile *p,
				  const struct col_block *b,
				  struct col_pipe_config *cfg)
{
	const struct col_traffic *t = b ? &b->traffic : &p->traffic;
	memset(cfg, 0, sizeof *cfg);
	cfg->seed = p->seed ^ (b ? fnv1a(b->name) : 0);
	cfg->streams = t->streams;
	cfg->poisson = strcmp(t->process, "uniform") != 0;
	cfg->rate_rps = t->rate_rps;
	cfg->batch_max = t->batch_max;
	cfg->batch_timeout_us = t->batch_timeout_us;
	cfg->least_loaded = strcmp(t->placement, "round-robin") != 0;
	cfg->requests = t->requests;
	cfg->cores = p->envelope.cores;
	cfg->global_bw_gbps = p->envelope.global_bw_gbps;
	/* a core drives GLOBAL through its dma.engines engines, each at most at
	 * the fair per-core share of the bandwidth: contention starts once more
	 * than cores / engines launches are in their transfer at once */
	double share = p->envelope.global_bw_gbps * p->envelope.dma_engines / p->envelope.cores;
	cfg->dma_peak_gbps = share < p->envelope.global_bw_gbps ? share : p->envelope.global_bw_gbps;
	cfg->hist_bins = COL_PIPE_DEFAULT_BINS;
}

void col_pipe_device_launches(const double *ns, size_t n, const struct ops_launch_rec *recs,
			      size_t nrecs, struct col_pipe_launch *out)
{
	double bytes = 0;
	for (size_t i = 0; recs && i < nrecs; i++)
		bytes += (double)recs[i].global_bytes;
	for (size_t i = 0; i < n; i++) {
		out[i].overhead_ns = 0;
		out[i].compute_ns = ns[i];
		out[i].double_buffer = 1;
		out[i].global_bytes = recs && n == nrecs ? (double)recs[i].global_bytes
							: bytes / (double)n;
	}
}

void col_pipe_device_config(struct col_pipe_config *cfg)
{
	cfg->cores = 1;
	cfg->dma_peak_gbps = cfg->global_bw_gbps;
	cfg->keep_trace = 1;
}
