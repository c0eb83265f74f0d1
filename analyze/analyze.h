/* analyze/analyze.h: the contract of analyze/: from a run archive to findings:
 * tail-first statistics, evidence-backed bottleneck classes, the fusion and
 * tile-plan worksheet, the validation matrix with rollback triggers,
 * mitigations and the release recommendation. findings.json (schema
 * ANA_FINDINGS_VERSION, documented in README "findings.json") is what
 * report/ reads. Every number carries its provenance. */
#ifndef ANALYZE_H
#define ANALYZE_H

#include "../collect/collect.h"
#include "stats.h"
#include "history.h"

#define ANA_FINDINGS_VERSION 1
#define ANA_MAX_EVIDENCE 8
#define ANA_TEXT 256

/* ANA_IMPORTED: measured outside opreview and read from the source file of an
 * imported run (`opreview ingest`) */
enum ana_prov { ANA_MEASURED, ANA_PAPI, ANA_SIMULATED, ANA_DERIVED, ANA_UNAVAILABLE, ANA_IMPORTED };
const char *ana_prov_name(enum ana_prov p); /* "measured",...,"unavailable","imported" */

/* One piece of evidence: metric, value, the rule's comparison, provenance. */
struct ana_evidence {
	char metric[64];
	double value;
	char unit[16];
	enum ana_prov prov;
	char comparison[64];     /* "0.91 >= 0.60" as evaluated */
	char note[160];          /* e.g. the reason an event is unavailable */
};

enum ana_class {
	ANA_COMPUTE_BOUND, ANA_GLOBAL_BW_BOUND, ANA_ONCHIP_BW_BOUND,
	ANA_LAUNCH_OVERHEAD_BOUND, ANA_QUEUEING_DELAY, ANA_CORE_IMBALANCE,
	ANA_MAPPING_FALLBACK, ANA_PRECISION_LOSS, ANA_NCLASSES
};
const char *ana_class_name(enum ana_class c); /* "compute-bound", ... */

/* A bottleneck rule as data (likwid groups / Nsight rules style). The rule is
 * evaluated from its own row (analyze/rules.c): limit and second are the
 * numbers it compares against, and its evidence's comparisons are written
 * from them, so the table exported into the packet is the one that ran. */
struct ana_rule {
	enum ana_class cls;      /* rows are in class order: ana_rule(cls) */
	const char *formula;     /* what is computed */
	const char *threshold;   /* printf format of (limit, second): "x >= %.2f" */
	double limit;            /* the metric's threshold */
	double second;           /* the rule's second number (SOL gap, Jain floor,
				  * warning share, overhead share that outranks a
				  * SOL bound); 0 when the rule has none */
	const char *explanation;
	const char *source;      /* where the threshold comes from */
};
const struct ana_rule *ana_rules(size_t *n);
const struct ana_rule *ana_rule(enum ana_class c);
/* The rule's threshold as text, its numbers filled in: "u >= 0.60 and ...". */
void ana_rule_threshold(const struct ana_rule *r, char *buf, size_t len);

struct ana_finding {
	int block, variant;      /* variant: 0 baseline, 1 candidate */
	enum ana_class cls;
	int primary;             /* the class that explains the symptom */
	double score;            /* the rule's metric value */
	char symptom[ANA_TEXT];
	char explanation[ANA_TEXT];
	char reproduce[ANA_TEXT];/* the command that replays the artifact */
	struct ana_evidence ev[ANA_MAX_EVIDENCE];
	int nev;
};

enum ana_status { ANA_PASS, ANA_WARN, ANA_FAIL };
const char *ana_status_name(enum ana_status s);

enum ana_verdict { ANA_SHIP, ANA_SHIP_WITH_MITIGATIONS, ANA_HOLD, ANA_ROLLBACK };
const char *ana_verdict_name(enum ana_verdict v); /* "SHIP", "SHIP WITH MITIGATIONS", ... */
int ana_verdict_exit(enum ana_verdict v);          /* 0, 10, 11, 12 */

/* The validation checks as data (analyze/analyze.c evaluates them): each row
 * says when a check passes, warns and fails, what a candidate FAIL does to
 * the verdict, and the numbers that are not the profile's own (the SLA and
 * regression limits come from the profile). The last two rows judge the
 * device model against the host and gate nothing. */
enum ana_check_id {
	ANA_CHK_QUALITY, ANA_CHK_SLA_P95, ANA_CHK_SLA_P99, ANA_CHK_THROUGHPUT,
	ANA_CHK_REG_HOST, ANA_CHK_REG_MODEL, ANA_CHK_REG_PIPE, ANA_CHK_MEMORY,
	ANA_CHK_REPRO, ANA_CHK_SDE, ANA_CHK_MODEL_ERROR, ANA_CHK_PLANNER, ANA_NCHECKS
};
#define ANA_GATES_NOTHING (-1)
struct ana_check_rule {
	enum ana_check_id id;    /* rows are in id order: ana_check_rule(id) */
	const char *key;         /* "quality", "sla_p95", ...: findings.json's "id" */
	const char *name;        /* "numerical quality", "SLA p95", ... */
	const char *pass, *warn, *fail; /* when each status is given */
	int on_fail;             /* the verdict a candidate FAIL gives (enum
				  * ana_verdict), or ANA_GATES_NOTHING */
	double limit;            /* the check's own number (0: the profile's) */
	const char *source;
};
const struct ana_check_rule *ana_check_rules(size_t *n);
const struct ana_check_rule *ana_check_rule(enum ana_check_id id);
/* The id of the check named name (a row's name; "regression p95 (imported)",
 * an imported run's own measurement, is the host regression check). */
enum ana_check_id ana_check_id_named(const char *name);

/* The verdict rules as data, most severe first: the first that holds wins. */
struct ana_verdict_rule {
	enum ana_verdict verdict;
	const char *when;
};
const struct ana_verdict_rule *ana_verdict_rules(size_t *n);

/* Per variant latency statistics of the host samples (ns). */
struct ana_latency {
	size_t n;
	struct ana_qci p50, p90, p95, p99;
	double max_ns, mean_ns;
};

/* Candidate vs baseline for one percentile of one block. */
struct ana_block_cmp {
	int block;
	double q;                /* 0.5, 0.95, 0.99 */
	int available;
	char reason[128];
	struct ana_comparison c; /* ratio CI, rank tests, outcome (stats.h) */
};

struct ana_worksheet_row {
	int block;
	int variant;             /* -1: a planner alternative that no variant ran */
	char group[64];
	char plan[160];
	int fused;
	uint64_t footprint_bytes, capacity_bytes;
	uint64_t global_bytes;
	double reuse_ratio;
	uint64_t launches;
	double launch_overhead_saved_ns; /* vs the baseline */
	double model_ns;
	char expected_bottleneck[64];
	char shift[128];         /* "global-bandwidth-bound -> compute-bound" */
	int chosen;
	int fits;                /* within the envelope's capacities */
	int shown;               /* listed in the packet (all are in findings.json) */
	char reason[160];
};

struct ana_check {
	int block;
	int variant;
	enum ana_check_id id;
	char dtype[8];
	char name[48];           /* the rule's name: "numerical quality", "SLA p95", ... */
	enum ana_status status;
	char value[96];
	char threshold[96];
	enum ana_prov prov;
	char trigger[160];       /* rollback trigger to watch after release */
	char rollback_to[160];   /* the rollback target */
};

struct ana_mitigation {
	int block;
	char title[128];
	char owner_role[48];
	char expected[160];
	char validation[160];
	char rollback[160];
};

struct ana_block {
	struct ana_latency lat[2];
	struct ana_noise noise;  /* A/A of the baseline rounds */
	double launch_reduction; /* launches baseline - candidate */
	double launch_overhead_saved_ns;
	double reuse[2];         /* on-chip reuse ratio per variant */
	enum ana_class primary[2];
	/* why a variant has no primary class (then primary[v] means nothing):
	 * "" when it has one; set for imported runs the rules cannot classify */
	char unclassified[2][ANA_TEXT];
};

/* Model validation (analyze/validate.c): the device model's time of each
 * plan held against the host's measured time, on a calibrated envelope. */
enum ana_term { ANA_T_OVERHEAD, ANA_T_COMPUTE, ANA_T_SHARED, ANA_T_GLOBAL, ANA_T_DMA, ANA_NTERMS };
const char *ana_term_name(enum ana_term t); /* "launch overhead","compute","SHARED","GLOBAL","DMA setup" */

struct ana_model_row {
	int block, variant;
	int alt;                 /* index into the variant's alternatives; -1: the plan
				  * that ran, measured by the run's samples (median) */
	int ran;                 /* this plan is the one the variant ran */
	int counted;             /* enters the error statistics (a plan measured twice
				  * counts once, by its run samples) */
	char plan[160];
	double model_ns, measured_ns;
	double ratio;            /* model_ns / measured_ns */
	double terms[ANA_NTERMS];/* the model's terms, ns */
	enum ana_term dominant;  /* the largest term */
};

struct ana_planner_row {
	int block, variant;
	int candidates;          /* fitting plans with a measured time */
	double tau;              /* Kendall's tau-a, modelled vs measured ranking; NAN if < 2 */
	char choice_plan[160], best_plan[160];
	double choice_ns, best_ns;
	double slowdown;         /* choice_ns / best_ns - 1 (0: the planner chose the best);
				  * from paired rounds where the run kept them: the
				  * median over rounds of the choice's time over the
				  * best plan's in the same round, minus 1 */
	double slowdown_lo, slowdown_hi; /* its distribution-free 95% CI (paired
				  * rounds only; NAN otherwise) */
	int paired;              /* slowdown is from paired rounds */
	int within;              /* slowdown within ANA_CHK_PLANNER's limit */
};

struct ana_model_validation {
	int calibrated;
	char reason[ANA_TEXT];   /* why not, when not calibrated */
	struct ana_model_row *rows;     /* owned */
	size_t nrows;
	struct ana_planner_row *planner;/* owned */
	size_t nplanner;
	double median_abs_error;        /* median of |ratio - 1| over counted rows; NAN if none */
	int trusted;                    /* median within ANA_CHK_MODEL_ERROR's limit */
	double worst_abs_error;
	int worst;                      /* index of the worst counted row, -1 if none */
};
/* Fills mv from a run (a calibrated envelope gives rows; an uncalibrated one
 * the reason). Release with ana_model_validation_release. */
int ana_model_validate(const struct col_run *run, struct ana_model_validation *mv,
		       struct opr_error *err);
void ana_model_validation_release(struct ana_model_validation *mv);
/* Kendall's tau-a of two paired lists: (concordant - discordant) / (n(n-1)/2);
 * a tied pair counts as neither. NAN when n < 2. */
double ana_kendall_tau(const double *x, const double *y, size_t n);

/* One value of a block's variant: a latency percentile with its
 * distribution-free 95% CI, throughput, or modelled time
 * (analyze/primary.c). Latencies and modelled time in ns, throughput in
 * samples per second. */
struct ana_value {
	int block, variant, metric;     /* metric: enum col_metric */
	int available;
	char reason[128];               /* why not, when !available */
	double value, lo, hi;           /* lo/hi NAN when the metric has no CI */
	char unit[8];                   /* "ns" or "1/s" */
	enum ana_prov prov;
	int higher_is_better;           /* throughput */
};

struct ana_findings {
	const struct col_run *run;      /* not owned */
	struct ana_block blocks[COL_MAX_BLOCKS];
	struct ana_block_cmp *cmp;      /* owned */
	size_t ncmp;
	struct ana_finding *find;       /* owned */
	size_t nfind;
	struct ana_worksheet_row *ws;   /* owned */
	size_t nws;
	struct ana_check *checks;       /* owned */
	size_t nchecks;
	struct ana_mitigation *mit;     /* owned */
	size_t nmit;
	enum ana_verdict verdict;
	char reasons[8][ANA_TEXT];
	int nreasons;
	char archive_dir[512];
	struct ana_model_validation model;  /* model validation (owned arrays) */
	struct ana_value primary;       /* the profile's primary metric */
	struct ana_value primary_base;  /* the same metric of the other variant */
	int synthetic_blocks;           /* blocks whose shapes are synthetic */
};

/* The host software counters of one block's variant split at its p95 sample: per
 * sample in the tail (samples >= p95) and in the rest, a sample charged its batch's
 * counts over the batch's samples; share = fraction of those samples whose batch
 * counted at least one. available is 0 (values NAN) for a counter the host lacked or
 * an archive that predates them. */
struct ana_tail_counter {
	int block, variant;
	enum col_hc counter;
	int available;
	size_t tail_samples, rest_samples;
	double tail_per_sample, rest_per_sample;
	double tail_share, rest_share;
};
/* Fills out[COL_NHC]; 0 or OPR_ENOMEM. */
int ana_tail_counters(const struct col_run *run, int b, int v,
		      struct ana_tail_counter out[COL_NHC]);

/* Evaluates metric of (block, variant) on an analyzed run. */
void ana_value_eval(const struct ana_findings *f, int block, int variant, int metric,
		    struct ana_value *out);

/* Analyzes a loaded run. *out owned by the caller (ana_findings_free). */
int ana_analyze(const struct col_run *run, const char *archive_dir,
		struct ana_findings **out, struct opr_error *err);
void ana_findings_free(struct ana_findings *f);
/* Writes findings.json (sorted keys) atomically into dir. */
int ana_findings_write(const struct ana_findings *f, const char *path,
		       struct opr_error *err);


#endif
