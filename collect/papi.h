/* collect/papi.h: counters through PAPI (hardware presets, perf software events and
 * the device's SDE counters), one event set per component; part of the collect/
 * contract. Only collect/papi.c includes <papi.h>. */
#ifndef COL_PAPI_H
#define COL_PAPI_H

#include <stddef.h>

#include "../opreview.h"

#define COL_EVENT_NAME_MAX 96
#define COL_COMPONENT_NAME_MAX 32
#define COL_REASON_MAX 192

/* One requested event and whether this host can count it. Availability is decided
 * by adding the event to an event set and starting and stopping it, never by
 * PAPI_query_event (which says yes to presets the kernel cannot count). reason is
 * empty when available, else says why not, e.g. "no CPU PMU exposed (virtual
 * machine without vPMU): PAPI_add_event returned PAPI_ENOEVNT". component is
 * empty when the name resolves to no component. */
struct col_event {
	char name[COL_EVENT_NAME_MAX];
	char component[COL_COMPONENT_NAME_MAX];
	int available;
	char reason[COL_REASON_MAX];
};

/* One PAPI component of this build and whether it initialised on this host. */
struct col_component {
	char name[COL_COMPONENT_NAME_MAX];
	char description[128];
	int enabled;
	int native_events;  /* enumerated native events when enabled, else 0 */
	char reason[256];   /* disabled reason when !enabled, else "" */
};

/* Opaque: the event sets of one thread (one per component). */
struct col_papi;

/* Opens n named events (n may be 0) and tests each one. Initialises PAPI once per
 * process (with thread support). When PAPI itself fails to initialise this does
 * not fail: it returns a handle whose events are all unavailable with reason
 * "PAPI failed to initialise: ...", so a packet can still be produced.
 * SDE names (sde:::lib::counter) are checked against the counters registered so
 * far, so register them (ops_sde_register) before opening.
 * A handle belongs to the thread that opened it; each thread opens its own, and
 * only one handle per thread may be started at a time.
 * Fails only on bad arguments (OPR_EINPUT: NULL or too long name), OPR_ENOMEM,
 * or OPR_EPAPI when PAPI cannot take a failed event back out of its set.
 * On success *out is owned by the caller: col_papi_close. */
int col_papi_open(const char *const *names, size_t n, struct col_papi **out,
		  struct opr_error *err);
/* The events in the order given to col_papi_open; *n gets their count (n may be
 * NULL). Owned by p, valid until col_papi_close. */
const struct col_event *col_papi_events(const struct col_papi *p, size_t *n);
/* "ok", or why PAPI is unusable ("PAPI failed to initialise: ..."). Owned by p. */
const char *col_papi_status(const struct col_papi *p);
/* Number of event sets (components with at least one available event). */
size_t col_papi_sets(const struct col_papi *p);

/* Starts every event set, in the order their components first appear in the
 * names. OPR_EPAPI if already started or
 * PAPI refuses (sets started before the failing one are stopped again). */
int col_papi_start(struct col_papi *p, struct opr_error *err);
/* Reads every event set without stopping: values[i] gets the count of event i
 * since start. Entries of unavailable events are left as they are (consult
 * col_event.available). OPR_EPAPI when not started or a read fails. */
int col_papi_read(struct col_papi *p, long long *values, struct opr_error *err);
/* Stops every event set in reverse order and stores the final counts as
 * col_papi_read does (values may be NULL to discard them). Every set is stopped
 * even if one fails; the first failure is returned. */
int col_papi_stop(struct col_papi *p, long long *values, struct opr_error *err);
/* Stops if needed and frees the event sets. NULL does nothing. */
void col_papi_close(struct col_papi *p);

/* Measures the cost of one col_papi_read (PAPI_read of all sets) in ns: the median
 * over 9 batches of reps reads each. Starts and stops the sets around the
 * measurement when they are not running. 0 when no event is available. */
int col_papi_read_cost(struct col_papi *p, int reps, double *ns_per_read,
		       struct opr_error *err);
/* Cost of one clock_gettime(CLOCK_MONOTONIC) in ns (median over batches), for
 * comparison with the counter read cost. */
double col_clock_read_cost_ns(void);

/* The default events: PAPI_TOT_CYC, PAPI_TOT_INS, PAPI_L1_DCM, PAPI_L2_TCM,
 * PAPI_L3_TCM, PAPI_BR_MSP, perf::TASK-CLOCK, perf::PAGE-FAULTS,
 * perf::CONTEXT-SWITCHES, perf::CPU-MIGRATIONS, then the device's counters
 * sde:::opreview::<NAME> (the names of ops_sde_names). NULL-terminated, static. */
const char *const *col_papi_default_events(void);

/* Writes the PAPI library version, e.g. "7.0.0.0" (the linked library when PAPI
 * initialises, else the headers'). OPR_ELIMIT when buf is too small. */
int col_papi_version(char *buf, size_t len);
/* Describes up to cap components in out; *n gets how many the build has (may be
 * more than cap). Components that initialise lazily are initialised first so
 * their real reason shows. OPR_EPAPI when PAPI fails to initialise. */
int col_papi_component_states(struct col_component *out, size_t cap, size_t *n,
			      struct opr_error *err);
/* Calls fn(name, arg) for every native event of the named component, in PAPI's
 * order; stops early and returns fn's value when it is not 0. OPR_EINPUT for an
 * unknown component, OPR_EPAPI when PAPI fails to initialise or the component is
 * disabled. */
int col_papi_native_events(const char *component,
			   int (*fn)(const char *name, void *arg), void *arg,
			   struct opr_error *err);

/* Host facts behind the reasons: kernel.perf_event_paranoid (-99 when
 * unreadable) and whether /sys/bus/event_source/devices has a CPU PMU (cpu,
 * cpu_core or cpu_atom). */
int col_perf_paranoid(void);
int col_cpu_pmu_present(void);
/* 0 when this thread can open a perf software counter, else perf_event_open's
 * errno (ENOSYS where a seccomp filter or an emulator lacks the call). */
int col_perf_open_errno(void);

/* ---- GPU counters through PAPI's cuda component (collect/papi_cuda.c) ---- */

/* One GPU event of a counting pass: its value when available, else why not
 * (e.g. "this PAPI (7.0.0) has no cuda component (built without it)"). */
struct col_gpu_counter {
	char name[COL_EVENT_NAME_MAX];
	int available;
	long long value;
	char reason[COL_REASON_MAX];
};
/* The default GPU events (dram__bytes_read/write, SM<->L2 sectors, shared
 * wavefronts, sm__cycles_elapsed max, instructions), qualified for device 0;
 * NULL-terminated, static. */
const char *const *col_gpu_default_events(void);
/* Counts each of the n named cuda events around its own call of run(ctx),
 * prepare(ctx) (may be NULL) running before each event set starts (an L2
 * flush, say, that must not be counted). An event PAPI cannot count is
 * recorded unavailable with the reason and the pass goes on; without a cuda
 * component every event is unavailable and run is never called. Fails only
 * on a name too long (OPR_EINPUT) or when prepare or run fails (their
 * error). */
int col_gpu_count(const char *const *names, size_t n,
		  int (*prepare)(void *ctx, struct opr_error *err),
		  int (*run)(void *ctx, struct opr_error *err), void *ctx,
		  struct col_gpu_counter *out, struct opr_error *err);


#endif
