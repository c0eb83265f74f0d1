/* collect/hostcount.c: the host's software counters straight from the kernel, so that
 * context switches, page faults and CPU time reach the packet on hosts where PAPI's
 * perf_event component is disabled. getrusage(RUSAGE_THREAD) gives the switch and
 * fault counts (one syscall, one consistent snapshot), the thread CPU clock the CPU
 * time in ns, and perf_event_open's PERF_TYPE_SOFTWARE the migrations getrusage lacks. */

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hostcount.h"

struct col_hostcount {
	struct col_hc_info info[COL_NHC];
	int migrations_fd;   /* perf_event_open fd, -1 when unavailable */
};

static const char *const hc_names[COL_NHC] = {
	[COL_HC_CSW_VOLUNTARY] = "context-switches-voluntary",
	[COL_HC_CSW_INVOLUNTARY] = "context-switches-involuntary",
	[COL_HC_FAULTS_MINOR] = "page-faults-minor",
	[COL_HC_FAULTS_MAJOR] = "page-faults-major",
	[COL_HC_CPU_NS] = "thread-cpu-ns",
	[COL_HC_MIGRATIONS] = "cpu-migrations",
};

static const char *const hc_sources[COL_NHC] = {
	[COL_HC_CSW_VOLUNTARY] = "getrusage(RUSAGE_THREAD).ru_nvcsw",
	[COL_HC_CSW_INVOLUNTARY] = "getrusage(RUSAGE_THREAD).ru_nivcsw",
	[COL_HC_FAULTS_MINOR] = "getrusage(RUSAGE_THREAD).ru_minflt",
	[COL_HC_FAULTS_MAJOR] = "getrusage(RUSAGE_THREAD).ru_majflt",
	[COL_HC_CPU_NS] = "clock_gettime(CLOCK_THREAD_CPUTIME_ID)",
	[COL_HC_MIGRATIONS] = "perf_event_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS)",
};

const char *col_hc_name(enum col_hc c)
{
	return (unsigned)c < COL_NHC ? hc_names[c] : "?";
}

/* A software counter of this thread on any CPU, kernel side included (a migration
 * happens in the kernel: user-only counting would always read 0). */
static int open_sw_counter(unsigned long long config, int *err_no)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.disabled = 1;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0L);
	if (fd < 0) {
		*err_no = errno;
		return -1;
	}
	if (ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		*err_no = errno;
		close((int)fd);
		return -1;
	}
	return (int)fd;
}

static void mark(struct col_hc_info *i, int available, const char *reason)
{
	i->available = available;
	snprintf(i->reason, sizeof i->reason, "%s", available ? "" : reason);
}

int col_hostcount_open(struct col_hostcount **out, struct opr_error *err)
{
	struct col_hostcount *h = calloc(1, sizeof *h);
	struct rusage ru;
	struct timespec ts;
	char why[COL_HC_REASON_MAX];
	int e = 0;

	*out = NULL;
	if (!h)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for host counters");
	for (int c = 0; c < COL_NHC; c++) {
		snprintf(h->info[c].name, sizeof h->info[c].name, "%s", hc_names[c]);
		snprintf(h->info[c].source, sizeof h->info[c].source, "%s", hc_sources[c]);
	}
	int ru_ok = getrusage(RUSAGE_THREAD, &ru) == 0;
	snprintf(why, sizeof why, "getrusage(RUSAGE_THREAD) failed: %s", strerror(errno));
	for (int c = COL_HC_CSW_VOLUNTARY; c <= COL_HC_FAULTS_MAJOR; c++)
		mark(&h->info[c], ru_ok, why);
	int clk_ok = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0;
	snprintf(why, sizeof why, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed: %s",
		 strerror(errno));
	mark(&h->info[COL_HC_CPU_NS], clk_ok, why);
	h->migrations_fd = open_sw_counter(PERF_COUNT_SW_CPU_MIGRATIONS, &e);
	if (h->migrations_fd < 0) {
		FILE *fp = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
		int level = -99;
		if (fp) {
			if (fscanf(fp, "%d", &level) != 1)
				level = -99;
			fclose(fp);
		}
		snprintf(why, sizeof why, "perf_event_open refused: %s "
			 "(kernel.perf_event_paranoid=%d)", strerror(e), level);
	}
	mark(&h->info[COL_HC_MIGRATIONS], h->migrations_fd >= 0, why);
	*out = h;
	return 0;
}

const struct col_hc_info *col_hostcount_info(const struct col_hostcount *h)
{
	return h->info;
}

void col_hostcount_read(const struct col_hostcount *h, long long v[COL_NHC])
{
	struct rusage ru;
	struct timespec ts;

	memset(v, 0, COL_NHC * sizeof *v);
	if (h->info[COL_HC_CSW_VOLUNTARY].available && getrusage(RUSAGE_THREAD, &ru) == 0) {
		v[COL_HC_CSW_VOLUNTARY] = ru.ru_nvcsw;
		v[COL_HC_CSW_INVOLUNTARY] = ru.ru_nivcsw;
		v[COL_HC_FAULTS_MINOR] = ru.ru_minflt;
		v[COL_HC_FAULTS_MAJOR] = ru.ru_majflt;
	}
	if (h->info[COL_HC_CPU_NS].available && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		v[COL_HC_CPU_NS] = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (h->migrations_fd >= 0) {
		unsigned long long n = 0;
		if (read(h->migrations_fd, &n, sizeof n) == (ssize_t)sizeof n)
			v[COL_HC_MIGRATIONS] = (long long)n;
	}
}

void col_hostcount_close(struct col_hostcount *h)
{
	if (!h)
		return;
	if (h->migrations_fd >= 0)
		close(h->migrations_fd);
	free(h);
}
