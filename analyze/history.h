/* analyze/history.h: the review across runs: change points of a series
 * (analyze/changepoint.c, asv's step detection) and the history of runs in
 * an SQLite database (analyze/history.c, the one file that includes
 * sqlite3.h). Part of the analyze/ contract; included by analyze/analyze.h. */
#ifndef ANALYZE_HISTORY_H
#define ANALYZE_HISTORY_H

#include <stddef.h>

#include "../opreview.h"

#define ANA_CP_MAX 256            /* points of one series */
#define ANA_CP_THRESHOLD 0.05     /* asv's default regressions_thresholds */

/* A segment [left, right) of the piecewise-constant fit with its level (the
 * weighted median), its smallest point and its mean L1 error. */
struct ana_step {
	size_t left, right;
	double value, min, err;
};
/* A change: the series moved between point at - 1 and point at, from the
 * level before to the best level after (asv's "value before" and "best
 * value after"); rel = after / before - 1; worse: a regression. */
struct ana_change {
	size_t at;
	double before, after, rel;
	int worse;
};
struct ana_changes {
	struct ana_step steps[ANA_CP_MAX];
	size_t nsteps;
	struct ana_change changes[ANA_CP_MAX];
	size_t nchanges;
};
/* Change points of y[0..n) (positive values) whose points have the CI
 * widths ci_width (NULL or a non-positive width: no weight known).
 * threshold: the relative size a step must exceed. higher_is_better: the
 * series is a throughput. Returns 0, OPR_EINPUT (a bad point, n above
 * ANA_CP_MAX) or OPR_ENOMEM. */
int ana_changepoints(const double *y, const double *ci_width, size_t n, double threshold,
		     int higher_is_better, struct ana_changes *out, struct opr_error *err);

/* ---- the history database ---- */

#define ANA_HISTORY_SCHEMA 2      /* PRAGMA user_version after migration */

struct ana_history;               /* an open database (opaque) */
struct ana_findings;

/* Opens (creating if needed) and migrates the database at path: WAL
 * journal, a busy timeout for concurrent writers, schema brought to
 * ANA_HISTORY_SCHEMA one version at a time, each step in one transaction.
 * A database of a newer schema is refused (OPR_EINPUT). *h is freed with
 * ana_history_close. */
int ana_history_open(const char *path, struct ana_history **h, struct opr_error *err);
void ana_history_close(struct ana_history *h); /* NULL is fine */
/* The schema version the database is at. */
int ana_history_schema(struct ana_history *h);

/* SHA-256 over the archive's files (manifest, samples, counters, pipeline,
 * and rounds when the archive has it): the key of a run in the history, the
 * same wherever the archive lies. */
int ana_archive_digest(const char *archive_dir, char out[65], struct opr_error *err);
/* SHA-256 over an envelope's parameters (what the device model sees): runs
 * on envelopes with another digest are never one series. */
struct ops_envelope;
void ana_envelope_digest(const struct ops_envelope *e, char out[65]);

/* Records an analyzed run (per block and variant: p50/p95/p99 with CIs,
 * throughput, modelled time, simulated pipeline p95, the PAPI counters that
 * were available; the verdict) in one transaction. *added = 0 when the
 * archive's digest is there already (then nothing changes). archive names
 * where the archive lies, for the record. */
int ana_history_add(struct ana_history *h, const char *archive_dir,
		    const struct ana_findings *f, int *added, struct opr_error *err);

/* What keeps runs apart: only runs with the same key form one series. */
struct ana_series_key {
	char profile[64], block[64], variant[16], metric[48];
	char host_class[256];      /* "CPU model / N cpus" */
	char envelope[64];         /* envelope name */
	char envelope_sha256[65];  /* over the envelope's parameters */
	char model_revision[256];
};
struct ana_trend_point {
	char digest[65];
	char started_utc[32];
	char verdict[32];
	char provenance[16];       /* of the run: collected | imported */
	double value, lo, hi;      /* lo/hi NAN without a CI */
};
struct ana_trend {
	struct ana_series_key key;
	char unit[8], value_provenance[16];
	int higher_is_better;
	struct ana_trend_point *pts; /* oldest first (owned) */
	size_t n;
	size_t apart;              /* runs of the same profile, block and metric
				    * kept out: another host class, envelope or
				    * model revision */
	char apart_why[256];       /* which of them differ, e.g. "host class" */
	struct ana_changes cp;     /* change points of pts (asv) */
	int cp_done;               /* 0 with fewer than 3 points */
};
/* The last `last` runs comparable with the run of digest `ref` (or, with
 * ref NULL or "", the latest-started run) for one block, variant and metric;
 * ordered by start time; change points computed. OPR_EINPUT when no run
 * matches. Release with ana_trend_release. */
int ana_history_trend(struct ana_history *h, const char *ref, const char *block,
		      const char *variant, const char *metric, size_t last,
		      struct ana_trend *t, struct opr_error *err);
void ana_trend_release(struct ana_trend *t);
/* The reference run's primary metric as "block/variant/metric". */
int ana_history_primary(struct ana_history *h, const char *ref, char *buf, size_t n,
			struct opr_error *err);
/* findings.json's "trend" object (a new reference). */
struct json_t *ana_trend_json(const struct ana_trend *t);

int cmd_history(int argc, char **argv);

#endif
