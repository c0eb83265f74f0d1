/* opreview.h: what every folder shares: the error type, exit codes, version.
 * Library code fills a struct opr_error and returns a negative code; only main()
 * prints and chooses the exit status. */
#ifndef OPREVIEW_H
#define OPREVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPR_VERSION "0.1.0"
#ifndef OPR_GIT_REVISION
#define OPR_GIT_REVISION "unknown"
#endif

/* Error codes: 0 is success, every failure is negative. */
enum opr_code {
	OPR_OK = 0,
	OPR_EUSAGE = -1,    /* bad command line */
	OPR_EINPUT = -2,    /* bad profile, envelope, template or archive */
	OPR_ENOMEM = -3,    /* allocation failed */
	OPR_EIO = -4,       /* read, write, fsync or rename failed */
	OPR_ELIMIT = -5,    /* a shape or plan over a capacity or cap */
	OPR_EPAPI = -6,     /* PAPI could not do what was asked */
	OPR_EMISMATCH = -7, /* replay or verify found a difference */
	OPR_EEXIST = -8,    /* refusing to overwrite an existing output */
	OPR_EINTERNAL = -9, /* a bug: an invariant did not hold */
	OPR_ENOTIMPL = -10, /* the command exists but is not implemented yet */
	OPR_ENODEV = -11,   /* the profile or archive needs a device backend this
			     * build lacks, or the device is not there */
};

/* Exit statuses of the command line (README "Exit codes"). */
enum opr_exit {
	OPR_EXIT_OK = 0,          /* success; for run/analyze: verdict SHIP */
	OPR_EXIT_FAILURE = 1,     /* runtime failure: I/O, PAPI, out of memory, bug */
	OPR_EXIT_USAGE = 2,       /* bad command line or bad input file */
	OPR_EXIT_NOTIMPL = 3,     /* command not implemented yet */
	OPR_EXIT_MISMATCH = 4,    /* verify or replay found a difference */
	OPR_EXIT_EXISTS = 5,      /* output exists or is being written; pass --force */
	OPR_EXIT_NODEV = 6,       /* needs a device backend this build lacks (or no device) */
	OPR_EXIT_SIGINT = 130,    /* interrupted by SIGINT (128 + 2); output undone */
	OPR_EXIT_SIGTERM = 143,   /* terminated by SIGTERM (128 + 15); output undone */
	OPR_EXIT_SHIP_MITIGATE = 10, /* verdict SHIP WITH MITIGATIONS */
	OPR_EXIT_HOLD = 11,          /* verdict HOLD */
	OPR_EXIT_ROLLBACK = 12,      /* verdict ROLLBACK */
};

/* One error: filled by the callee, left untouched on success so calls chain.
 * file/line/col are set when the fault is in an input file (1-based). */
struct opr_error {
	int code;
	char file[512];
	int line;
	int col;
	char msg[1024];
};

/* Sets code and message (printf-style); returns code so callers can
 * `return opr_error_set(err, OPR_EIO, ...)`. err may be NULL. */
int opr_error_set(struct opr_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with an input location. */
int opr_error_at(struct opr_error *err, int code, const char *file, int line,
		 int col, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Writes "opreview: FILE:LINE:COL: message\n" (or "opreview: message\n"). */
void opr_error_print(const struct opr_error *err, FILE *fp);
/* Maps an error code to the documented exit status. */
int opr_exit_status(int code);

/* ---- command-line options (opreview_cli.c) ----------------------------------
 * One table per command drives parsing and --help (git's parse-options). */
/* OPR_OPT_PATH is a string checked by opr_path_check; positional arguments
 * are paths (RUN, PACKET) and are checked the same way. */
enum opr_opt_kind { OPR_OPT_FLAG, OPR_OPT_STRING, OPR_OPT_PATH, OPR_OPT_END };
struct opr_option {
	enum opr_opt_kind kind;
	const char *name;      /* long name without "--" */
	const char *arg;       /* placeholder shown in help, e.g. "FILE" */
	const char *help;
	void *value;           /* int * for flags, const char ** for strings */
};
struct opr_command_help {
	const char *name;      /* "run" */
	const char *usage;     /* "run --profile FILE --out DIR [--force]" */
	const char *summary;   /* one line */
	const char *details;   /* paragraphs, may be NULL */
	const struct opr_option *options; /* ends with OPR_OPT_END */
};
/* Parses argv[1..] (argv[0] is the command name). Positional arguments are
 * collected into pos (at most maxpos). Returns 0, 1 when --help was printed
 * (caller exits 0), or OPR_EUSAGE with a message in err. */
int opr_parse(const struct opr_command_help *h, int argc, char **argv,
	      const char **pos, int maxpos, int *npos, struct opr_error *err);
void opr_print_help(const struct opr_command_help *h, FILE *fp);
/* Prints the error and returns the exit status for it (for cmd_* functions). */
int opr_fail(const struct opr_error *err);
/* The prologue every command shares: opr_parse, then each option in required
 * (a NULL-terminated list of the caller's option variables, or NULL) given
 * and at least min_pos positional arguments, else `missing` is the usage
 * error. Returns 1 when the command is done and returns *status (--help
 * printed: 0, or 1 when stdout could not be written; a usage error printed:
 * its exit status), 0 when the command goes on (*status then 0). */
int opr_cmd_start(const struct opr_command_help *h, int argc, char **argv, const char **pos,
		  int maxpos, int *npos, const char **const *required, int min_pos, const char *missing,
		  int *status);

/* ---- shared helpers (opreview_util.c) ------------------------------------ */

/* The one growable text buffer (Redis's sds, git's strbuf). Out of memory is
 * sticky: later appends do nothing and oom stays set, so a caller checks
 * once at the end. p is NUL-terminated once anything was added; the owner
 * frees p with opr_buf_release, or takes it with opr_buf_take. */
struct opr_buf {
	char *p;
	size_t len, cap;
	int oom;
};
void opr_buf_add(struct opr_buf *b, const char *s, size_t n);
void opr_buf_puts(struct opr_buf *b, const char *s);
void opr_buf_printf(struct opr_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Returns the text (malloc'd, the caller frees it; "" when nothing was added)
 * and empties b; NULL when out of memory (b is released). */
char *opr_buf_take(struct opr_buf *b);
void opr_buf_release(struct opr_buf *b);

/* The one growth rule of the project's arrays: room for one more element,
 * the capacity doubling from first. OPR_GROW(arr, n, cap, 16) is 0 when
 * arr[n] may be written (reallocated if n == cap), -1 when out of memory or
 * the size would overflow (arr and cap unchanged). slot is the address of
 * the array pointer, read and written with memcpy, so any element type
 * goes through one function without a cast that aliases. */
int opr_grow(void *slot, size_t *cap, size_t first, size_t size);
#define OPR_GROW(arr, n, cap, first) \
	((n) < (cap) ? 0 : opr_grow(&(arr), &(cap), (first), sizeof *(arr)))

/* The quantile and CI definitions, by name, for every folder (collect/ may
 * not use analyze/'s statistics, so they live here):
 *   type 7 (Hyndman & Fan; R's default, numpy's linear): h = (n-1) q,
 *     x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]);
 *   nearest rank: the ceil(q n)-th smallest (the pipeline's percentiles);
 *   normal-approximation binomial CI ranks (0-based) of the q-quantile at
 *     95%: r = floor(n q - 1.96 sqrt(n q (1-q))), s = ceil(n q + ...);
 *     -1 when the interval leaves the sample (the analyzer's exact binomial
 *     interval is ana_quantile_ci, analyze/stats.h).
 * The quantiles take sorted values; NAN for n == 0 or q outside [0, 1]. */
double opr_quantile_type7(const double *sorted, size_t n, double q);
double opr_quantile_type7_i64(const int64_t *sorted, size_t n, double q);
double opr_quantile_nearest_rank(const double *sorted, size_t n, double q);
int opr_quantile_ci95_ranks(size_t n, double q, size_t *r, size_t *s);
/* The fewest samples for an equal-tailed distribution-free CI of the
 * q-quantile at confidence conf: the smallest n with max(q, 1-q)^n <=
 * (1-conf)/2 (p95: 72, p99: 368 at 95%). The collector's stop rule and the
 * analyzer's comparisons both ask it. 0 for q or conf outside (0, 1). */
size_t opr_min_samples(double q, double conf);

/* The one clock of measurements: CLOCK_MONOTONIC in ns. */
int64_t opr_now_ns(void);

/* ---- paths, input files and outputs (opreview_fs.c) -------------------------
 * Every path a user gives is at most OPR_PATH_USER_MAX characters (its last
 * component OPR_NAME_USER_MAX), checked when the command line is parsed: the
 * names built from it (OUT.tmp-PID/run/manifest.json, a block's files) then
 * fit OPR_PATH_MAX buffers, so nothing is cut and then written or removed. */
#define OPR_PATH_MAX 1024
#define OPR_PATH_USER_MAX 400
#define OPR_NAME_USER_MAX 200

/* 0, or OPR_EUSAGE naming `what` ("--out") and the length. */
int opr_path_check(const char *path, const char *what, struct opr_error *err);
/* "dir/name" into buf, or OPR_EUSAGE when it does not fit (nothing cut). */
int opr_path_join(char *buf, size_t size, const char *dir, const char *name,
		  struct opr_error *err);
/* Opens an input file for reading: refused (OPR_EINPUT, naming what it is)
 * unless a regular file, and never blocking (a FIFO without a writer). *fd
 * is the caller's to close. */
int opr_open_regular(const char *path, int *fd, struct opr_error *err);
/* Whole files: write + fsync (created 0644, truncated), and a regular file of at
 * most max bytes read whole (opr_open_regular: a FIFO or device is refused,
 * never waited on; *data malloc'd and NUL-terminated, the caller frees it). */
int opr_write_file(const char *path, const void *data, size_t len, struct opr_error *err);
/* All of data to the open fd, then fsync (path names it in errors). */
int opr_write_fd(int fd, const void *data, size_t len, const char *path, struct opr_error *err);
/* Replaces dir/name in place through a temporary file beside it, fsync and
 * rename, then fsyncs dir: a reader sees the old content or the new, never a
 * part (for files inside an output that already exists: MANIFEST, a
 * sign-off record). */
int opr_replace_file(const char *dir, const char *name, const void *data, size_t len,
		     struct opr_error *err);
int opr_read_file(const char *path, char **data, size_t *len, size_t max,
		  struct opr_error *err);
/* mkdir -p. */
int opr_mkdirs(const char *path, struct opr_error *err);
/* rm -r without following links; system calls only, so a signal handler may
 * call it. Returns 0 or -1. A missing path is 0. */
int opr_rmtree(const char *path);
int opr_fsync_dir(const char *dir, struct opr_error *err);
/* Removes what an interrupted writer left beside target: "<target>.tmp-PID"
 * (and a lock being made, "<target>.lock-PID") of processes that no longer run; a stale "<target>.old-PID" goes back to
 * target when target is missing. Returns how many it handled. */
int opr_clean_stale(const char *target);

/* One output of a command, written the one way:
 *   opr_output_claim   at the start: path checked, stale leftovers removed,
 *                      TARGET.opreview-lock taken (when its folder exists; else
 *                      at open), TARGET refused when it exists without force
 *                      (OPR_EEXIST), SIGINT/SIGTERM handled from here on;
 *   opr_output_open    before writing: creates the folder if missing, takes
 *                      the lock if not yet held; the caller then creates
 *                      o->tmp (the directory or the file) and fills it;
 *   opr_output_publish renames o->tmp to TARGET: never over an existing one
 *                      without force (RENAME_NOREPLACE); with force over a
 *                      file, or over a directory that holds `marker` or is
 *                      empty, the old one removed only once the new one is in;
 *   opr_output_release always: removes o->tmp if not published, the lock.
 * A second process claiming the same TARGET gets OPR_EEXIST ("is being
 * written"). On SIGINT/SIGTERM o->tmp and the lock are removed, a directory
 * moved aside is put back, and the process exits 130 or 143. */
enum opr_output_kind { OPR_OUT_DIR, OPR_OUT_FILE };
struct opr_output {
	char target[OPR_PATH_MAX];
	char parent[OPR_PATH_MAX];
	char tmp[OPR_PATH_MAX];
	char old[OPR_PATH_MAX];
	char lock[OPR_PATH_MAX];
	const char *marker;     /* a file every output of this kind holds */
	enum opr_output_kind kind;
	int force;
	int lock_fd;
	volatile int tmp_made, old_made, published; /* read by the signal handler */
};
int opr_output_claim(struct opr_output *o, const char *target, enum opr_output_kind kind,
		     const char *marker, int force, struct opr_error *err);
int opr_output_open(struct opr_output *o, struct opr_error *err);
int opr_output_publish(struct opr_output *o, struct opr_error *err);
/* A failure while writing names the file as the user will look for it:
 * "OUT/packet.xlsx", not "OUT.tmp-PID/packet.xlsx" (which is gone). */
void opr_output_name(const struct opr_output *o, struct opr_error *err);
/* After opr_output_claim, whatever it returned, or on an OPR_OUTPUT_INIT
 * struct never claimed; NULL is fine. */
void opr_output_release(struct opr_output *o);
#define OPR_OUTPUT_INIT {.lock_fd = -1}

#endif
