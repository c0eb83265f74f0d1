/* collect/pipeline.h: the scheduling pipeline simulation (compile plan ->
 * runtime queue -> core placement -> completion and tail), a deterministic
 * discrete-event simulation of one block variant under the profile's traffic.
 * Part of the collect/ contract. Times in ns (double), bandwidth in GB/s. */
#ifndef COL_PIPELINE_H
#define COL_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h" /* struct col_profile; brings opreview.h's error type */

/* as many cores as an envelope may have (OPS_MAX_CORES: an H200 has 132 SMs) */
#define COL_PIPE_MAX_CORES OPS_MAX_CORES
#define COL_PIPE_MAX_STREAMS 4096
#define COL_PIPE_MAX_BATCH 4096
#define COL_PIPE_MAX_REQUESTS 10000000
#define COL_PIPE_MAX_LAUNCHES 4096
#define COL_PIPE_DEFAULT_BINS 32

/* One launch of the variant, for ONE request; a batch of b scales
 * compute_ns and global_bytes by b, overhead_ns is paid once per launch. */
struct col_pipe_launch {
	double overhead_ns;   /* launch overhead (host/runtime side, no traffic) */
	double compute_ns;    /* on-chip work of one request */
	double global_bytes;  /* GLOBAL traffic of one request */
	int double_buffer;    /* 1: compute overlaps the transfer */
};

struct col_pipe_config {
	uint64_t seed;
	int streams;              /* independent request streams, >= 1 */
	int poisson;              /* 1: exponential gaps, 0: fixed gaps */
	double rate_rps;          /* total over all streams */
	const double *stream_weight; /* NULL: rate and requests split evenly;
				      * else `streams` positive shares (not owned) */
	int batch_max;            /* close a batch at this many requests */
	double batch_timeout_us;  /* ... or when its oldest has waited this long */
	int least_loaded;         /* 1: least-loaded free core, 0: round-robin */
	int64_t requests;         /* total over all streams */
	int cores;                /* 1..COL_PIPE_MAX_CORES */
	double global_bw_gbps;    /* shared by every launch in flight */
	double dma_peak_gbps;     /* per-launch cap on its transfer rate; 0: none */
	size_t hist_bins;         /* queue-wait histogram bins; 0: default */
	int keep_trace;           /* 1: the result keeps the arrival trace and
				   * the jobs (what a replay on the device needs) */
};

struct col_pipe_result {
	int64_t n;                /* requests */
	int64_t jobs;             /* batches executed */
	int streams, cores;
	double *latency_ns;       /* [n] arrival -> completion, by arrival order */
	double *wait_ns;          /* [n] arrival -> start of its job (batching + queue) */
	int32_t *stream_of;       /* [n] stream of each request */
	/* exact order statistics (nearest rank: the ceil(p*n)-th smallest) */
	double p50_ns, p95_ns, p99_ns, max_ns, mean_ns;
	double wait_p50_ns, wait_p95_ns, wait_p99_ns, wait_max_ns, wait_mean_ns;
	/* queue-wait histogram: linear bins over [0, wait_max_ns], bin i holds
	 * edges[i] <= w < edges[i+1], the last bin also holds w == edges[bins];
	 * when no request waited at all every edge is 0 and bin 0 holds them all */
	size_t hist_bins;
	double *hist_edges_ns;    /* [hist_bins + 1] */
	int64_t *hist_counts;     /* [hist_bins] */
	double throughput_rps;    /* n / makespan */
	double makespan_ns;       /* t = 0 (arrivals start) -> last completion */
	double core_busy_ns[COL_PIPE_MAX_CORES];
	double core_util[COL_PIPE_MAX_CORES];   /* busy / makespan */
	int64_t core_jobs[COL_PIPE_MAX_CORES];
	double jain_cores;        /* Jain's index over core busy time */
	double *stream_mean_ns;   /* [streams] mean latency per stream */
	double *stream_p95_ns;    /* [streams] */
	int64_t *stream_n;        /* [streams] requests per stream */
	double jain_streams;      /* Jain's index over per-stream mean latency */
	double mean_batch;        /* n / jobs */
	/* Little's law over the arrival window [0, last arrival]:
	 * L = time-average number in system (integrated by the event loop),
	 * lambda = arrivals per ns, W = mean latency (ns); L ~ lambda * W */
	double little_L, little_lambda, little_W;
	double bytes;             /* GLOBAL bytes moved */
	double bw_util;           /* bytes / (global_bw * makespan) */
	int max_concurrent_bursts;/* most launches in their transfer at once */
	double overhead_ns;       /* launch overhead paid, summed over jobs */
	double service_ns;        /* job start -> job end, summed over jobs */
	/* with keep_trace (else NULL): the trace, jobs in the order they closed */
	double *arrival_ns;       /* [n] arrival of each request */
	int64_t *job_of;          /* [n] the job of each request */
	double *job_close_ns;     /* [jobs] when the batch closed (entered the queue) */
	int32_t *job_stream;      /* [jobs] its stream */
	int32_t *job_b;           /* [jobs] its requests */
};

/* One row of the batch-policy sweep: the same traffic with batch_max = batch. */
struct col_pipe_sweep_row {
	int batch;
	double p50_ns, p95_ns, p99_ns;
	double throughput_rps;
	double wait_mean_ns, wait_p95_ns;
	double mean_batch;
	double jain_cores, bw_util;
};

/* The simulation's inputs from a profile's traffic and envelope for a block:
 * the seed mixes the profile seed with the block name, so both variants of a
 * block see the same arrivals (common random numbers). dma_peak_gbps is the
 * envelope's global bandwidth: a launch alone gets all of it. */
void col_pipe_config_from_profile(const struct col_profile *p,
				  const struct col_block *b,
				  struct col_pipe_config *cfg);

/* Simulates; on success *out holds arrays owned by the caller, released with
 * col_pipe_result_release. Bad inputs: OPR_EINPUT; allocation: OPR_ENOMEM
 * (then *out is zeroed and owns nothing). */
int col_pipe_simulate(const struct col_pipe_config *cfg,
		      const struct col_pipe_launch *launches, size_t nlaunches,
		      struct col_pipe_result *out, struct opr_error *err);
/* Frees the arrays and zeroes *r; NULL or a zeroed result is fine. */
void col_pipe_result_release(struct col_pipe_result *r);

/* Runs the simulation for batch_max = 1..cfg->batch_max; *rows (cfg->batch_max
 * rows) is owned by the caller (free()). */
int col_pipe_sweep(const struct col_pipe_config *cfg,
		   const struct col_pipe_launch *launches, size_t nlaunches,
		   struct col_pipe_sweep_row **rows, size_t *nrows,
		   struct opr_error *err);

/* A GPU run's service description: launch i of a request takes ns[i], its
 * measured device time (which includes its launch gap: no overhead is added),
 * overlapped with its GLOBAL bytes (recs[i]'s, the model's; spread evenly
 * over the n launches when the GPU ran another number of kernels than the
 * model's nrecs launches). out has n entries. */
void col_pipe_device_launches(const double *ns, size_t n, const struct ops_launch_rec *recs,
			      size_t nrecs, struct col_pipe_launch *out);
/* ... and its configuration: the device is one server (a launch's blocks
 * cover the SMs, so requests queue for the GPU rather than for one SM each),
 * a launch alone gets all of GLOBAL, and the trace is kept (keep_trace) for
 * the replay on the device. */
void col_pipe_device_config(struct col_pipe_config *cfg);

/* Jain, Chiu, Hawe (1984): J = (sum x)^2 / (n * sum x^2), in [1/n, 1];
 * 1 when n == 0 or every x is 0. */
double col_pipe_jain(const double *x, size_t n);

#endif
