/* collect/hostcount.h: the host's software counters without PAPI (context switches,
 * page faults, thread CPU time, migrations) read straight from the kernel; part of the
 * collect/ contract. They come on every Linux host, whether or not PAPI's perf_event
 * component initialised (Debian's PAPI 7.0 disables it, software events included,
 * when libpfm4 finds no CPU PMU). Units: counts, and ns for CPU time. */
#ifndef COL_HOSTCOUNT_H
#define COL_HOSTCOUNT_H

#include "../opreview.h"

/* The counters, in the order of every array indexed by them. */
enum col_hc {
	COL_HC_CSW_VOLUNTARY,   /* the thread blocked or yielded */
	COL_HC_CSW_INVOLUNTARY, /* the thread was preempted */
	COL_HC_FAULTS_MINOR,
	COL_HC_FAULTS_MAJOR,
	COL_HC_CPU_NS,          /* this thread's CPU time */
	COL_HC_MIGRATIONS,      /* moves to another CPU */
	COL_NHC
};

#define COL_HC_NAME_MAX 48
#define COL_HC_SOURCE_MAX 96
#define COL_HC_REASON_MAX 160

/* One counter: its name ("context-switches-voluntary"), where its values come from
 * ("getrusage(RUSAGE_THREAD).ru_nvcsw"), and whether it is available on this host
 * (reason empty when it is, else why not). */
struct col_hc_info {
	char name[COL_HC_NAME_MAX];
	char source[COL_HC_SOURCE_MAX];
	int available;
	char reason[COL_HC_REASON_MAX];
};

/* Opaque: the counters of one thread (getrusage, the thread CPU clock and, where the
 * kernel allows it, perf_event_open software counters). */
struct col_hostcount;

/* Opens the counters of the calling thread and tests each source once. Never fails
 * for an unavailable source (that counter is marked unavailable with the reason);
 * fails only with OPR_ENOMEM. *out is owned by the caller: col_hostcount_close. */
int col_hostcount_open(struct col_hostcount **out, struct opr_error *err);
/* The counters' descriptions, [COL_NHC], owned by h. */
const struct col_hc_info *col_hostcount_info(const struct col_hostcount *h);
/* Reads every available counter into v[COL_NHC] (values since an arbitrary origin:
 * use differences); unavailable entries are set to 0 and must not be shown. Call
 * from the thread that opened h. */
void col_hostcount_read(const struct col_hostcount *h, long long v[COL_NHC]);
/* NULL does nothing. */
void col_hostcount_close(struct col_hostcount *h);

/* The counter's name, for archives: "context-switches-voluntary", ... */
const char *col_hc_name(enum col_hc c);

#endif
