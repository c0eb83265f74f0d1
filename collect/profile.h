/* collect/profile.h: the workload profile (the input contract, PROFILE.md and
 * README "Profile reference") as loaded and validated from YAML. Part of the
 * collect/ contract; included by collect/collect.h. */
#ifndef COL_PROFILE_H
#define COL_PROFILE_H

#include <stdint.h>

#include "../ops/ops.h"

#define COL_NAME_MAX 64
#define COL_TEXT_MAX 256
#define COL_MAX_BLOCKS 32
#define COL_MAX_OWNERS 16
#define COL_MAX_EVENTS 32

/* Calibration metadata of an envelope measured on a host (`opreview
 * calibrate`): where and when, and per measured value its median, spread
 * (interquartile range over the median) and sample count. An envelope
 * without it is a target description: the device model is then unvalidated
 * on the host. */
/* Which device runs the blocks (profile key `device`, README "Profile
 * reference"): the host's executor unless the profile names the GPU. */
enum col_device_kind { COL_DEV_HOST = 0, COL_DEV_CUDA = 1 };

#define COL_CAL_MAX_VALUES 32
struct col_cal_value {
	char key[COL_NAME_MAX];    /* global_bandwidth_gbps, fp32_tops, ... */
	double median, spread;
	int64_t samples;
	char method[COL_TEXT_MAX]; /* which loop measured it */
};
struct col_calibration {
	int present;               /* the envelope has a calibration: mapping */
	char host[COL_TEXT_MAX], date[COL_NAME_MAX], cpu[COL_TEXT_MAX];
	int64_t cpus_online;       /* the machine's CPUs (the executor uses one) */
	char kernel_isa[COL_NAME_MAX]; /* the host kernel path measured ("" if not said) */
	int device;                /* enum col_device_kind the values were measured on */
	char gpu[COL_TEXT_MAX];    /* device cuda: "NVIDIA H200, 132 SMs, cc 9.0, ..." */
	int64_t retried;           /* host samples taken again because another
				    * process had the CPU (0 when not said) */
	struct col_cal_value v[COL_CAL_MAX_VALUES];
	int nv;
};

/* A variant of a block: fusion and plan ("auto" lets the planner choose). */
struct col_variant {
	int fused;                 /* fusion: none -> 0, full -> 1 */
	int plan_auto;             /* plan: auto */
	struct ops_plan plan;      /* pinned plan when !plan_auto (plan.fused == fused) */
	int line, col;             /* where the variant was written */
};

struct col_traffic {
	int streams;
	char process[16];          /* poisson | uniform */
	double rate_rps;           /* total over all streams */
	int batch_max;
	double batch_timeout_us;
	char placement[16];        /* least-loaded | round-robin */
	int64_t requests;
};

struct col_block {
	char name[COL_NAME_MAX];   /* [A-Za-z0-9._-]+, unique: used in file names */
	/* where the shape came from: 1 production (shape_source names the trace or
	 * model revision it was taken from), 0 synthetic (the default) */
	int shape_production;
	char shape_source[COL_TEXT_MAX];
	struct ops_workload work;  /* group, activation, dtype, shape, quant */
	struct col_traffic traffic;/* the profile's traffic with the block's overrides */
	struct col_variant baseline;
	struct col_variant candidate;
	/* an imported block (profile->imported set): the source's names of the
	 * baseline's and the candidate's benchmark or kernel; work, traffic and the
	 * variants are then unset (no group, shape or plan) */
	char source[2][COL_TEXT_MAX];
	int line, col;
};

struct col_owner {
	char role[COL_NAME_MAX];   /* ml-compiler-engineer | kernel-performance-owner | runtime-systems-engineer */
	char name[COL_TEXT_MAX];
	char key[COL_TEXT_MAX];    /* public key path, relative to the profile's folder */
};

struct col_precision {
	double fp32_max_rel_l2, fp16_max_rel_l2, bf16_max_rel_l2;
	double int8_max_abs_lsb;
};

struct col_sla {
	double p95_us, p99_us;
	double min_throughput_rps;
	double max_regression;     /* regression threshold vs baseline, fraction (default 0.05) */
};

struct col_budget {
	double seconds;            /* host sampling budget for the whole run */
	int64_t min_samples;       /* per variant */
	int64_t max_samples;       /* per variant (default 2000) */
	double memory_gib;         /* cap on host memory for operands (default: half of RAM) */
};

/* The one metric the packet leads with and a history trends: a block's
 * variant and one of its results. */
enum col_metric { COL_M_P95, COL_M_P99, COL_M_THROUGHPUT, COL_M_MODEL_TIME, COL_NMETRICS };
const char *col_metric_name(int m); /* "p95", "p99", "throughput", "model_time" */
int col_metric_parse(const char *s); /* -1 when unknown */
struct col_primary {
	int block;                 /* index into blocks (default 0) */
	int variant;               /* 0 baseline, 1 candidate (default) */
	int metric;                /* enum col_metric (default p95) */
	int given;                 /* 1 when the profile names it */
};

#define COL_DEV_INDEX_MAX 63
struct col_device {
	int kind;                  /* enum col_device_kind */
	int index;                 /* CUDA device ordinal (cudaSetDevice) */
	int line, col;             /* where `device` was written; 0 when absent */
};
const char *col_device_kind_name(int kind); /* "host", "cuda" */

struct col_profile {
	char path[512];            /* as given */
	char *text;                /* the file's bytes, NUL-terminated (owned) */
	size_t text_len;
	char name[COL_NAME_MAX];
	int version;
	uint64_t seed;
	char model_revision[COL_TEXT_MAX];
	char compiler[COL_TEXT_MAX], runtime[COL_TEXT_MAX], firmware[COL_TEXT_MAX];
	struct col_device device;
	struct ops_envelope envelope;
	char envelope_source[512]; /* file path, or "inline" */
	struct col_calibration calibration; /* present when measured on a host */
	struct col_sla sla;
	struct col_precision precision;
	struct col_traffic traffic;
	struct col_budget budget;
	struct col_owner owners[COL_MAX_OWNERS];
	int nowners;
	struct col_block blocks[COL_MAX_BLOCKS];
	int nblocks;
	char events[COL_MAX_EVENTS][COL_NAME_MAX]; /* extra PAPI events asked for */
	int nevents;
	struct col_primary primary;
	char history[512];         /* history database, relative to the profile's folder; "" none */
	int history_window;        /* runs in the packet's trend (default 20) */
	char rationale[1024];      /* the compiler engineer's design rationale, free text */
	/* "" for a profile opreview collects; the source format ("gbench", "ncu")
	 * for measurements taken outside opreview (`opreview ingest`): such a
	 * profile has no envelope (envelope.name "none"), traffic, budget or
	 * events, its sla and owners are optional (sla values NAN when absent),
	 * and its blocks name sources instead of a workload */
	char imported[16];
};

/* Loads and validates a profile. Every problem is an OPR_EINPUT error with the
 * file, line and column of the offending node, reported one line at a time
 * (first problem wins). Envelope names resolve to <envelope_dir>/<name>.yaml;
 * envelope_dir NULL means "fixtures/envelopes" next to the profile's folder's
 * parent, then ./fixtures/envelopes. *out is owned by the caller. */
int col_profile_load(const char *path, const char *envelope_dir,
		     struct col_profile **out, struct opr_error *err);
/* Loads an envelope file (same keys as the inline map). */
int col_envelope_load(const char *path, struct ops_envelope *env,
		      struct opr_error *err);
/* The same, also returning the envelope's calibration metadata (cal->present
 * is 0 when the envelope has none). */
int col_envelope_load_cal(const char *path, struct ops_envelope *env,
			  struct col_calibration *cal, struct opr_error *err);
/* The same from text in memory (copied); name stands for the file in errors.
 * Envelope names resolve as for envelope_dir NULL. */
int col_profile_from_text(const char *name, const char *text, size_t len,
			  struct col_profile **out, struct opr_error *err);
void col_profile_free(struct col_profile *p); /* NULL is fine */
/* The same block names, group, dtype, shapes: for the packet's inputs table. */
void col_workload_describe(const struct ops_workload *w, char *buf, size_t len);

#endif
