/* collect/collect.h: the contract of collect/: the profile, host facts, PAPI
 * event sets, host sampling, the scheduling pipeline simulation, and the run
 * archive that analyze/ reads. It includes the parts it is made of.
 *
 * Units: time in integer nanoseconds (ns) for samples, doubles in ns for
 * modelled and simulated times; bytes; counters as exact integers. */
#ifndef COLLECT_H
#define COLLECT_H

#include <stdint.h>

#include "../ops/ops.h"
#include "profile.h"
#include "papi.h"
#include "hostcount.h"
#include "pipeline.h"

#define COL_ARCHIVE_VERSION 2 /* 2: manifest.json holds file digests */
#define COL_MAX_RUN_EVENTS 64
#define COL_MEASURED_ALTS 4      /* planner candidates timed on a calibrated host */

/* Facts about the host, detected (never taken from the profile). */
struct col_host {
	char cpu_model[128];
	int cpus_online;
	char caches[256];          /* "L1d 32K, L2 512K, L3 32768K" */
	char kernel[128];          /* uname -sr */
	char governor[64];         /* cpufreq governor, or "unavailable: <reason>" */
	char compiler[128];        /* __VERSION__ */
	char cflags[256];
	char versions[512];        /* "papi 7.0.0.0; libxlsxwriter 1.1.4; ..." */
	char tool_version[32];
	char git_revision[64];
	char hostname[128];
	uint64_t mem_total_bytes;
	/* The host kernel path that ran (ops_isa_active at detection: "scalar",
	 * "avx2", "avx512"; "... (OPREVIEW_ISA; the host has ...)" when forced
	 * below the best), and each kernel family's path with its instructions. */
	char kernel_isa[96];
	char kernel_paths[512];  /* "conv2d avx512 (fma, ...); gemm_f32 ...; ..." */
};
void col_host_detect(struct col_host *h);

/* The GPU that ran the blocks on a `device: cuda` profile, as it reported
 * itself (cudaGetDeviceProperties, the driver and runtime), recorded in the
 * archive's manifest ("device"). present is 0 on a host run. */
struct col_gpu {
	int present;
	int index;
	char name[256];
	int cc_major, cc_minor;
	int sm_count;
	int sm_clock_khz, mem_clock_khz;       /* the device's rated clocks */
	/* SM clock seen: sm__cycles_elapsed (max over SMs) of a counted run over
	 * that variant's median CUDA-event time, the lowest and highest over the
	 * run's variants; 0 when the counter was unavailable */
	double clock_seen_mhz_min, clock_seen_mhz_max;
	int64_t l2_bytes, shared_per_block_optin, global_bytes;
	int driver_version, runtime_version;   /* CUDA API versions, 13000 = 13.0 */
	char kernel_driver[64];                /* "580.159.03" (/proc/driver/nvidia), or why not */
	char papi_version[32];
	int l2_flush;                          /* 1: L2 flushed before each sample */
};

enum col_variant_id { COL_BASELINE = 0, COL_CANDIDATE = 1 };
const char *col_variant_name(int v); /* "baseline", "candidate" */

/* A counter that a source outside opreview measured (`opreview ingest`):
 * provenance "imported", e.g. ncu's dram__bytes_read.sum. available 0: the
 * source lacks it (value 0 then, never shown), reason says why. */
struct col_ext_counter {
	char name[COL_NAME_MAX + 32];
	char unit[16];
	double value;              /* per sample (mean over the samples that had it) */
	int available;
	char reason[160];
};
#define COL_MAX_EXT_COUNTERS 16

/* Where an imported run's measurements came from: the manifest's "imported"
 * section. format "" for a run opreview collected. */
struct col_import {
	char format[16];           /* "gbench" | "ncu" */
	char path[512];            /* the source file as given */
	char sha256[65];           /* of the source file's bytes */
	char tool[256];            /* what the source says produced it */
	char device[256];          /* the device it ran on, when it says */
	char date_from[16];        /* started_utc is the "source"'s date or the "ingest" time */
};

/* The simulation's arrival trace replayed on the GPU (collect/gpu.c,
 * ops/cuda/replay.cu): per-request latency and queue wait measured with CUDA
 * events (provenance measured), over the first `n` requests of the trace,
 * beside the simulation's values for the same requests (sim_*, simulated). */
#define COL_REPLAY_MAX_REQUESTS 4000
enum col_replay_state { COL_REPLAY_NONE = 0, COL_REPLAY_MEASURED, COL_REPLAY_UNAVAILABLE };
struct col_replay {
	int state;                 /* NONE: a host run (nothing is written) */
	char reason[256];          /* UNAVAILABLE: why */
	int64_t n, jobs;           /* requests and jobs replayed */
	int streams;               /* CUDA streams */
	double p50_ns, p95_ns, p99_ns, max_ns, mean_ns;
	double wait_p50_ns, wait_p95_ns, wait_p99_ns, wait_mean_ns;
	double throughput_rps;     /* n / (last end - first arrival) */
	/* the simulation over the same requests */
	double sim_p50_ns, sim_p95_ns, sim_p99_ns, sim_wait_p95_ns, sim_wait_mean_ns;
};

/* What one variant of one block produced. */
struct col_variant_run {
	struct ops_plan plan;            /* the plan that ran */
	int plan_was_auto;
	int fell_back;                   /* a pinned plan did not fit: mapping fallback */
	char plan_note[256];             /* why this plan (planner's words) */
	struct ops_plan_eval *alts;      /* planner's candidates, best first (owned) */
	size_t nalts;
	/* host time of alts[i] (median ns of a short run), NAN when not measured:
	 * measured only when the envelope is calibrated, for the planner's top
	 * COL_MEASURED_ALTS fitting plans and the plan that ran (owned, [nalts]) */
	double *alt_measured_ns;
	/* the same rounds paired: for alts[i], the median over rounds of the
	 * planner's choice's time (the first fitting alternative) over alts[i]'s
	 * time in the same round, and that median's distribution-free 95% CI:
	 * [3 i] median, [3 i + 1] low, [3 i + 2] high; > 1 the choice was slower.
	 * NAN where not measured; NULL when nothing was (owned, [3 nalts]) */
	double *alt_vs_choice;
	struct ops_counters counters;    /* simulated, one execution */
	struct ops_launch_rec *launches; /* simulated, one execution (owned) */
	size_t nlaunches;
	double model_ns;                 /* sum of launches' modelled time */
	struct ops_quality quality;
	char output_sha256[65];
	char input_sha256[65];           /* digest over all input tensors */
	/* host samples, in order; round[i] is the round of sample i */
	int64_t *samples_ns;
	int32_t *round;
	size_t nsamples;
	/* PAPI deltas summed over each batch (a batch = one round's reps) */
	long long *event_totals;         /* [nevents], totals over all samples */
	int events_per_sample;           /* 1: read per sample, 0: per batch */
	/* host software counters (hostcount.h): totals over all samples, and each
	 * batch's deltas, hc_rounds[r] for round r (one batch per round; all 0 for an
	 * unavailable counter); NULL when the archive predates them */
	long long hc_totals[COL_NHC];
	long long (*hc_rounds)[COL_NHC];
	size_t nhc_rounds, hc_rounds_cap;
	int repro_counters_equal;        /* a count-only dry run gave the same counters */
	int repro_output_stable;         /* the output digest after sampling is unchanged */
	/* GPU runs: PAPI cuda-component counts of one run each (a counting pass
	 * after timing, provenance papi), NULL on a host run (owned) */
	struct col_gpu_counter *gpu_counters;
	size_t ngpu_counters;
	struct col_pipe_result pipe;     /* scheduling simulation (owned arrays) */
	/* distribution-free 95% CIs of the simulated p95/p99 (binomial ranks,
	 * normal approximation), ns; NAN when too few requests */
	double pipe_p95_lo, pipe_p95_hi, pipe_p99_lo, pipe_p99_hi;
	/* the same traffic with GLOBAL bandwidth uncontended (every launch gets
	 * its DMA peak): the counterfactual that attributes a tail to bursts */
	double pipe_free_p95_ns, pipe_free_p99_ns;
	/* ... and with every launch's transfer hidden behind its compute (as if
	 * double-buffered): attributes a tail to bursts on the critical path */
	double pipe_hidden_p95_ns;
	struct col_pipe_sweep_row *sweep;/* batch 1..max (owned) */
	size_t nsweep;
	/* GPU runs: each kernel launch's device time in one run (CUDA events, L2
	 * flushed; median of COL_GPU_LAUNCH_SAMPLES), the simulation's service
	 * times there; NULL on a host run (owned) */
	double *dev_launch_ns;
	size_t ndev_launch;
	struct col_replay replay;        /* the trace replayed on the GPU */
	/* imported runs only: the source's counters */
	struct col_ext_counter ext[COL_MAX_EXT_COUNTERS];
	int next;
};

struct col_block_run {
	const struct col_block *block;   /* points into run->profile */
	struct col_variant_run v[2];
	char stop_reason[128];           /* what ended sampling */
	int nrounds;
	int reps_per_round;
};

struct col_run {
	struct col_profile *profile;     /* owned */
	char profile_origin[512];        /* the profile's path when collected (owner keys
					  * resolve relative to its folder) */
	struct col_host host;
	struct col_gpu gpu;              /* the GPU that ran the blocks, if one did */
	char started_utc[32];            /* ISO 8601 */
	struct col_event events[COL_MAX_RUN_EVENTS];
	size_t nevents;
	char papi_status[256];           /* "ok" or why PAPI is unusable */
	struct col_hc_info hc[COL_NHC];  /* the host software counters and their sources */
	int hc_recorded;                 /* 0: an archive from before they were recorded */
	double clock_read_ns;            /* cost of one CLOCK_MONOTONIC read */
	double papi_read_ns;             /* cost of reading all event sets once */
	double sampling_seconds;
	struct col_block_run blocks[COL_MAX_BLOCKS];
	int nblocks;
	struct col_import import;        /* imported runs: the source (format "" otherwise) */
};

struct col_options {
	const char *profile_path;
	const char *envelope_dir;        /* NULL: default search */
	double budget_scale;             /* 1.0 normally */
	int progress;                    /* progress on stderr */
	int no_papi;                     /* skip PAPI (tests of the unavailable path) */
};

/* Runs a whole collection: loads the profile, plans, runs, samples and
 * simulates every block. *out is owned by the caller (col_run_free). */
int col_collect(const struct col_options *opt, struct col_run **out,
		struct opr_error *err);
/* The same for one block of the profile (replay --block): its inputs,
 * outputs and counters are those of the whole run, keyed by the block's
 * name. OPR_EUSAGE when the profile has no such block. */
int col_collect_block(const struct col_options *opt, const char *block, struct col_run **out,
		      struct opr_error *err);
void col_run_free(struct col_run *run); /* NULL is fine */

#define COL_ARCHIVE_MARKER "manifest.json" /* every archive holds it (opr_output) */
/* Writes the archive into the new directory dir (which must not exist; the
 * caller's opr_output makes it appear atomically), each file fsync'd, and
 * manifest.json last with the SHA-256 of every other file ("files") and its
 * own ("manifest_sha256", computed with its 64 digits read as zeros). */
int col_archive_write(const struct col_run *run, const char *dir, struct opr_error *err);
/* Loads an archive written by col_archive_write (profile re-parsed from the
 * archived text) after checking every digest: an altered file is OPR_EINPUT
 * naming it; every value is checked for its type and range, samples.csv row
 * by row (FILE:LINE:COL) against the manifest's rounds x reps_per_round.
 * *out is owned by the caller. */
int col_archive_load(const char *dir, struct col_run **out, struct opr_error *err);
/* Recomputes the digests of dir's files into its manifest.json (and its own):
 * for tests that change an archive on purpose and for migrating an archive
 * written before digests. The commands never call it. */
int col_archive_seal(const char *dir, struct opr_error *err);

/* SHA-256 of a buffer as 64 lowercase hex digits + NUL (libsodium). */
void col_sha256_hex(const void *data, size_t len, char out[65]);
/* The q-quantile's distribution-free 95% CI from n sorted values: the order
 * statistics at ranks n q -+ 1.96 sqrt(n q (1 - q)) (normal approximation of
 * the binomial). Returns 0, or -1 when n is too small (lo/hi = NAN). */
int col_quantile_ci95(const double *sorted, size_t n, double q, double *lo, double *hi);
/* JSON of a pipeline result and its sweep (summary only), and back.
 * Declared here rather than in pipeline.h to keep that part free of jansson. */
struct json_t;
struct col_jr;
struct json_t *col_pipe_to_json(const struct col_variant_run *vr);
/* Strict (collect/jread.h): a wrong type or a missing key fails r. */
int col_pipe_from_json(struct col_jr *r, struct json_t *j, struct col_variant_run *vr);

/* Importers (collect/ingest.c): a source file's measurements as a run whose
 * profile is imported (profile.h), one block per baseline/candidate pair,
 * each repetition or profiled launch one sample. Bad input is an OPR_EINPUT
 * error at the source's line and column. *out owned by the caller.
 *   gbench: Google Benchmark JSON (--benchmark_format=json, with
 *           --benchmark_repetitions); a sample is one repetition's real_time
 *           per iteration; aggregates (mean, median, stddev, cv) are skipped.
 *   ncu:    Nsight Compute CSV (ncu --csv --page raw): a sample is one
 *           profiled launch's gpu__time_duration.sum; dram__bytes_read.sum
 *           and dram__bytes_write.sum become imported counters. */
struct col_ingest_options {
	const char *format;              /* "gbench" | "ncu" */
	const char *path;                /* the source file */
	const char *name;                /* the profile name; NULL: "imported-<format>" */
	const char *block;               /* the block name; NULL: "imported" */
	const char *baseline, *candidate;/* the source's names of the two */
	const char *model_revision;      /* NULL: "unknown" */
	double sla_p95_us, sla_p99_us;   /* NAN: no SLA */
	double min_throughput_rps;       /* NAN: none */
	const char *owners_from;         /* a profile whose owners sign the packet; NULL: none */
	const char *production;          /* the trace the shape came from; NULL: synthetic */
};
int col_ingest(const struct col_ingest_options *o, struct col_run **out,
	       struct opr_error *err);
/* The manifest's imported sections (used by archive.c). */
struct json_t *col_import_json(const struct col_import *im);
void col_import_load(struct json_t *j, struct col_import *im);
struct json_t *col_ext_counters_json(const struct col_variant_run *vr);
void col_ext_counters_load(struct json_t *j, struct col_variant_run *vr);

/* ---- the GPU path (collect/gpu.c; the backend is ops/cuda/, or ops/cuda_none.c
 * in the plain build, where every entry fails with OPR_ENODEV) ---- */
/* 1 when this build can run blocks on `kind` (the host always; cuda only
 * with the backend linked). */
int col_device_available(int kind);
/* OPR_ENODEV at the profile's `device` key when this build cannot run it. */
int col_device_check(const struct col_profile *p, struct opr_error *err);
struct col_gpu_ctx;
/* Opens the profile's GPU and fills run->gpu. *out freed by col_gpu_close. */
int col_gpu_open(struct col_run *run, struct col_gpu_ctx **out, struct opr_error *err);
void col_gpu_close(struct col_gpu_ctx *g); /* NULL is fine */
/* The GPU's part of one variant, after the host model's characterisation:
 * uploads inst, runs it checked (quality and the output digest are the
 * GPU's). *gi freed by col_gpu_inst_free. */
struct col_gpu_inst;
int col_gpu_prepare(struct col_gpu_ctx *g, struct ops_instance *inst, struct col_variant_run *vr,
		    struct col_gpu_inst **gi, struct opr_error *err);
void col_gpu_inst_free(struct col_gpu_inst *gi);
/* Samples both variants on the GPU in seeded randomised A B / B A rounds, one
 * CUDA-event sample each per round, with the host's stopping rule; then the
 * counting pass (PAPI's cuda component) and the output-stability check. */
int col_gpu_sample(struct col_run *run, struct col_gpu_ctx *g, struct col_block_run *br,
		   struct col_gpu_inst *gi[2], double budget_s, int progress, uint64_t *rng,
		   struct opr_error *err);
/* On a calibrated envelope, times the planner's top fitting plans and the
 * plan that ran on the GPU (median ns each, NAN for the others). */
int col_gpu_measure_alts(const struct col_profile *p, struct col_gpu_ctx *g,
			 const struct col_block *b, struct col_variant_run *vr,
			 struct opr_error *err);
/* Each kernel launch's device time of one run of gi (vr->dev_launch_ns). */
#define COL_GPU_LAUNCH_SAMPLES 15
int col_gpu_launch_times(struct col_gpu_ctx *g, struct col_gpu_inst *gi,
			 struct col_variant_run *vr, struct opr_error *err);
/* Replays vr->pipe's trace (simulated with keep_trace) on the GPU: streams
 * as CUDA streams, the simulation's batches issued at their close times;
 * fills vr->replay. Never fails for want of a device: the replay is then
 * COL_REPLAY_UNAVAILABLE with the reason (so in the plain build, without
 * the backend). 0 or OPR_ENOMEM. */
int col_gpu_replay(struct col_gpu_ctx *g, struct ops_instance *inst, struct col_variant_run *vr,
		   struct opr_error *err);
/* collect.c's sampling helpers, shared with gpu.c */
int col_sample_push(struct col_variant_run *vr, size_t *cap, int64_t ns, int32_t round,
		    struct opr_error *err);
/* 1 when vr has need samples and p95's 95% CI is within +-2% (0 not yet,
 * negative on error); need = col_samples_needed (min_samples, at least the
 * 368 a p99 claim takes). */
int col_p95_ci_enough(const struct col_variant_run *vr, int64_t need, int64_t **scratch,
		      size_t *scratch_cap, struct opr_error *err);
int64_t col_samples_needed(const struct col_profile *p);


#endif
