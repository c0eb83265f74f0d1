/* tests/test_papi.c: the PAPI wrapper (collect/papi.c) and `opreview events`:
 * availability agrees with independent probes, counts are exact for SDE counters
 * this test registers itself, and reasons name the cause. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <linux/perf_event.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sde_lib.h>

#include "../collect/hostcount.h"
#include "../collect/papi.h"
#include "../opreview_cmds.h"
#include "skip.h"

#define POISON 0x5a5a5a5a5a5a5a5aLL

/* The test's own SDE library, so these tests do not depend on ops/. */
static long long t_ticks, t_bytes;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	/* xorshift64: seeded, so a failure reproduces. */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int setup_sde(void **state)
{
	papi_handle_t h = papi_sde_init("opreview_test");
	(void)state;
	if (!h)
		return -1;
	if (papi_sde_register_counter(h, "ticks", PAPI_SDE_RO | PAPI_SDE_DELTA,
				      PAPI_SDE_long_long, &t_ticks) != 0)
		return -1;
	if (papi_sde_register_counter(h, "bytes", PAPI_SDE_RO | PAPI_SDE_DELTA,
				      PAPI_SDE_long_long, &t_bytes) != 0)
		return -1;
	return 0;
}

static const struct col_event *find_event(const struct col_papi *p,
					  const char *name, size_t *index)
{
	size_t n;
	const struct col_event *ev = col_papi_events(p, &n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ev[i].name, name) == 0) {
			if (index)
				*index = i;
			return &ev[i];
		}
	return NULL;
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Independent probe of a hardware event: the raw syscall, user space only as
 * PAPI's default domain. 1 when the kernel can count it. */
static int raw_hw_countable(unsigned long long config)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof a;
	a.config = config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

/* Independent probe of a software event (task-clock): 1 when this thread
 * can open it. It fails with ENOSYS where a seccomp filter or an emulator
 * (qemu-user) lacks the system call, while PAPI's perf_event component still
 * initialises. */
static int raw_sw_countable(void)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof a;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

static int host_has_cpu_pmu(void)
{
	return access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
	       access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0 ||
	       access("/sys/bus/event_source/devices/cpu_atom", F_OK) == 0;
}

struct names {
	const char *want;
	int found, count;
};

static int look_for(const char *name, void *arg)
{
	struct names *s = arg;
	s->count++;
	if (strcmp(name, s->want) == 0)
		s->found = 1;
	return 0;
}

static int sde_lists(const char *name)
{
	struct names s = { name, 0, 0 };
	struct opr_error err = { 0 };
	assert_int_equal(col_papi_native_events("sde", look_for, &s, &err), 0);
	return s.found;
}

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Burns about ms milliseconds of this thread's CPU time; returns the ns burnt. */
static double busy(double ms)
{
	volatile double x = (double)(next_rand() % 1000) + 1.0;
	double t0 = thread_cpu_ns(), t;
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
		t = thread_cpu_ns();
	} while (t - t0 < ms * 1e6);
	return t - t0;
}

/* Whether PAPI's perf_event component is enabled in this process. Debian's PAPI
 * 7.0 disables it, software events included, where libpfm4 finds no CPU PMU;
 * OPREVIEW_PAPI_DISABLE=perf_event does the same on any host. */
static int perf_component_enabled(char *why, size_t len)
{
	struct col_component comps[32];
	struct opr_error err = { 0 };
	size_t n;

	snprintf(why, len, "this PAPI build has no perf_event component");
	if (col_papi_component_states(comps, 32, &n, &err) != 0) {
		snprintf(why, len, "%s", err.msg);
		return 0;
	}
	for (size_t c = 0; c < n && c < 32; c++)
		if (strcmp(comps[c].name, "perf_event") == 0) {
			if (!comps[c].enabled)
				snprintf(why, len, "PAPI's perf_event component is disabled: %s",
					 comps[c].reason);
			return comps[c].enabled;
		}
	return 0;
}

/* Whether perf's software events can be counted here: the component is
 * enabled and the kernel opens one for this thread. */
static int perf_sw_usable(char *why, size_t len)
{
	if (!perf_component_enabled(why, len))
		return 0;
	if (!raw_sw_countable()) {
		snprintf(why, len, "perf_event_open fails on this host for a software counter");
		return 0;
	}
	return 1;
}

/* The unavailable path of a perf_event software event where the component is
 * enabled but perf_event_open fails: the reason says so, no value written. */
static void check_perf_open_fails(const char *name)
{
	const char *names[1] = { name };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	long long v = POISON;
	const struct col_event *e;

	assert_int_equal(col_papi_open(names, 1, &p, &err), 0);
	e = find_event(p, name, NULL);
	assert_non_null(e);
	assert_int_equal(e->available, 0);
	assert_string_equal(e->component, "perf_event");
	assert_true(starts_with(e->reason, "perf_event_open fails on this host ("));
	assert_int_equal(col_papi_sets(p), 0);
	assert_int_equal(col_papi_start(p, &err), 0);
	assert_int_equal(col_papi_stop(p, &v, &err), 0);
	assert_int_equal(v, POISON);
	col_papi_close(p);
}

/* The unavailable path of a perf_event software event: a reason that names the
 * disabled component, no component-less "no such event", no value written. */
static void check_perf_event_unavailable(const char *name)
{
	const char *names[1] = { name };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	long long v = POISON;
	const struct col_event *e;

	assert_int_equal(col_papi_open(names, 1, &p, &err), 0);
	e = find_event(p, name, NULL);
	assert_non_null(e);
	assert_int_equal(e->available, 0);
	assert_string_equal(e->component, "perf_event");
	assert_true(starts_with(e->reason, "component 'perf_event' is disabled: "));
	assert_int_equal(col_papi_sets(p), 0);
	assert_int_equal(col_papi_start(p, &err), 0);
	assert_int_equal(col_papi_stop(p, &v, &err), 0);
	assert_int_equal(v, POISON);
	col_papi_close(p);
}

/* ---- tests -------------------------------------------------------------------- */

static void test_default_list_opens(void **state)
{
	const char *const *names = col_papi_default_events();
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	const struct col_event *ev, *e;
	size_t n = 0, nev;
	char why[256];
	(void)state;

	while (names[n])
		n++;
	assert_int_equal(n, 27);
	assert_int_equal(col_papi_open(names, n, &p, &err), 0);
	assert_non_null(p);
	assert_int_equal(err.code, 0);
	assert_string_equal(col_papi_status(p), "ok");
	ev = col_papi_events(p, &nev);
	assert_int_equal(nev, n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(ev[i].name, names[i]);
		/* available exactly when there is no reason */
		assert_int_equal(ev[i].available, ev[i].reason[0] == '\0');
	}

	/* Hardware presets agree with the raw syscall, on any host with the
	 * perf_event component (without it PAPI can count none of them). */
	e = find_event(p, "PAPI_TOT_CYC", NULL);
	assert_non_null(e);
	assert_string_equal(e->component, "perf_event");
	assert_int_equal(e->available, raw_hw_countable(PERF_COUNT_HW_CPU_CYCLES) &&
					       perf_component_enabled(why, sizeof why));
	e = find_event(p, "PAPI_TOT_INS", NULL);
	assert_int_equal(col_cpu_pmu_present(), host_has_cpu_pmu());
	if (!perf_component_enabled(why, sizeof why)) {
		/* PAPI without perf_event: every perf event names the component */
		assert_int_equal(e->available, 0);
		for (size_t i = 0; i < 10; i++) {
			assert_int_equal(ev[i].available, 0);
			assert_string_equal(ev[i].component, "perf_event");
			assert_true(starts_with(ev[i].reason,
						"component 'perf_event' is disabled: "));
		}
	} else {
		assert_int_equal(e->available, raw_hw_countable(PERF_COUNT_HW_INSTRUCTIONS));
		if (!raw_sw_countable())
			for (size_t i = 0; i < 10; i++) {
				assert_int_equal(ev[i].available, 0);
				assert_true(starts_with(ev[i].reason,
							"perf_event_open fails on this host (") ||
					    starts_with(ev[i].reason, "no CPU PMU exposed"));
			}
		else if (!host_has_cpu_pmu())
			for (size_t i = 0; i < 6; i++) {
				assert_true(starts_with(names[i], "PAPI_"));
				assert_int_equal(ev[i].available, 0);
				assert_string_equal(ev[i].reason, "no CPU PMU exposed (virtual "
						    "machine without vPMU): PAPI_add_event "
						    "returned PAPI_ENOEVNT");
			}
		/* software events need no PMU where the component is enabled */
		e = find_event(p, "perf::TASK-CLOCK", NULL);
		assert_int_equal(e->available, raw_sw_countable());
		assert_string_equal(e->component, "perf_event");
	}

	/* The device's counters are available exactly when registered. */
	for (size_t i = 10; i < n; i++) {
		assert_true(starts_with(names[i], "sde:::opreview::"));
		assert_string_equal(ev[i].component, "sde");
		assert_int_equal(ev[i].available, sde_lists(names[i]));
		if (!ev[i].available)
			assert_true(starts_with(ev[i].reason,
						"not registered by any library"));
	}
	/* one set per component that has an available event */
	{
		size_t comps = 0;
		for (size_t i = 0; i < n; i++) {
			size_t j = 0;
			while (j < i && !(ev[j].available &&
					  !strcmp(ev[j].component, ev[i].component)))
				j++;
			comps += ev[i].available && j == i;
		}
		assert_int_equal(col_papi_sets(p), comps);
	}
	col_papi_close(p);
}

static void test_task_clock_increases(void **state)
{
	const char *names[] = { "perf::TASK-CLOCK" };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	long long v1 = POISON, v2 = POISON, v3 = POISON;
	double burnt;
	char why[256];
	(void)state;

	if (!perf_component_enabled(why, sizeof why)) {
		check_perf_event_unavailable(names[0]);
		SKIP_BECAUSE("%s", why);
	}
	if (!perf_sw_usable(why, sizeof why)) {
		check_perf_open_fails(names[0]);
		SKIP_BECAUSE("%s", why);
	}
	assert_int_equal(col_papi_open(names, 1, &p, &err), 0);
	assert_int_equal(col_papi_sets(p), 1);
	assert_int_equal(col_papi_start(p, &err), 0);
	/* TASK-CLOCK is this thread's CPU time in ns: it must match the busy loop's
	 * thread CPU time (bounds loose for timer granularity). On a loaded VM
	 * the two clocks can part for one window (steal time is charged to them
	 * differently), so the relation must hold in one of three windows. */
	for (int attempt = 0; attempt < 3; attempt++) {
		assert_int_equal(col_papi_read(p, &v1, &err), 0);
		burnt = busy(20.0);
		assert_int_equal(col_papi_read(p, &v2, &err), 0);
		assert_true(v1 != POISON && v2 != POISON);
		assert_true(v1 >= 0);
		assert_true(v2 > v1);
		if ((double)(v2 - v1) > 0.5 * burnt && (double)(v2 - v1) < 1.5 * burnt + 2e6)
			break;
		print_message("# TASK-CLOCK window %d: %lld ns against %.0f ns of thread CPU time\n",
			      attempt, v2 - v1, burnt);
	}
	assert_int_equal(col_papi_stop(p, &v3, &err), 0);
	assert_true(v3 != POISON && v3 >= v2);
	assert_true((double)(v2 - v1) > 0.5 * burnt);
	assert_true((double)(v2 - v1) < 1.5 * burnt + 2e6);
	assert_int_equal(err.code, 0);
	col_papi_close(p);
}

static void test_sde_exact_and_several_sets(void **state)
{
	const char *names[] = {
		"sde:::opreview_test::ticks", "perf::TASK-CLOCK",
		"sde:::opreview_test::tikcs", "sde:::opreview_test::bytes",
		"sde:::opreview_nolib::ticks", "PAPI_TOT_CYC",
	};
	enum { N = sizeof names / sizeof names[0] };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	const struct col_event *ev;
	long long v[N], a, b, c, d;
	size_t n;
	char why[256];
	int perf = perf_sw_usable(why, sizeof why);
	(void)state;

	assert_int_equal(col_papi_open(names, N, &p, &err), 0);
	ev = col_papi_events(p, &n);
	assert_int_equal(n, N);
	assert_int_equal(ev[0].available, 1);
	assert_int_equal(ev[1].available, perf);
	assert_int_equal(ev[3].available, 1);
	/* Misspelt counter or unknown library: PAPI would accept both silently. */
	assert_int_equal(ev[2].available, 0);
	assert_true(starts_with(ev[2].reason, "not registered by any library"));
	assert_int_equal(ev[4].available, 0);
	assert_true(starts_with(ev[4].reason, "not registered by any library"));
	/* ... and checking them left no placeholder behind in PAPI's list. */
	assert_int_equal(sde_lists("sde:::opreview_test::ticks"), 1);
	assert_int_equal(sde_lists("sde:::opreview_test::tikcs"), 0);
	assert_int_equal(sde_lists("sde:::opreview_nolib::ticks"), 0);
	/* perf_event and sde: two sets read together (one without perf_event) */
	assert_int_equal(col_papi_sets(p), perf ? 2 : 1);

	for (int i = 0; i < N; i++)
		v[i] = POISON;
	t_ticks += (long long)(next_rand() % 1000); /* before start: not counted */
	assert_int_equal(col_papi_start(p, &err), 0);
	a = 1 + (long long)(next_rand() % 100000);
	b = 1 + (long long)(next_rand() % 100000000);
	t_ticks += a;
	t_bytes += b;
	busy(1.0);
	assert_int_equal(col_papi_read(p, v, &err), 0);
	assert_int_equal(v[0], a);
	assert_int_equal(v[3], b);
	if (perf)
		assert_true(v[1] > 0 && v[1] != POISON);
	else
		assert_int_equal(v[1], POISON);
	assert_int_equal(v[2], POISON);
	assert_int_equal(v[4], POISON);
	if (!ev[5].available)
		assert_int_equal(v[5], POISON);

	c = 1 + (long long)(next_rand() % 100000);
	d = 1 + (long long)(next_rand() % 100000);
	t_ticks += c;
	t_bytes += d;
	assert_int_equal(col_papi_stop(p, v, &err), 0);
	assert_int_equal(v[0], a + c);
	assert_int_equal(v[3], b + d);
	assert_int_equal(v[2], POISON);
	assert_int_equal(err.code, 0);
	col_papi_close(p);
	if (!perf)
		SKIP_BECAUSE("two components' sets read together need perf_event: %s", why);
}

static void test_unknown_and_disabled(void **state)
{
	const char *names[] = { "NOT_AN_EVENT", "nosuchcomp:::x", "perf::NO-SUCH-THING",
				"PAPI_NOPE" };
	char why[256];
	struct col_component comps[16];
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	const struct col_event *ev;
	size_t n;
	(void)state;

	assert_int_equal(col_papi_open(names, 4, &p, &err), 0);
	ev = col_papi_events(p, &n);
	assert_true(starts_with(ev[0].reason, "no such event"));
	assert_string_equal(ev[1].reason,
			    "no such event: no component 'nosuchcomp' in this PAPI build");
	/* a perf_event name (pmu::event, a preset) where the component is off:
	 * the component's state is the reason, not an unknown name */
	for (size_t i = 2; i < 4; i++)
		if (perf_component_enabled(why, sizeof why))
			assert_true(starts_with(ev[i].reason, "no such event"));
		else
			assert_true(starts_with(ev[i].reason,
						"component 'perf_event' is disabled: "));
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(ev[i].available, 0);
	assert_int_equal(col_papi_sets(p), 0);
	col_papi_close(p);

	/* An event of a disabled component carries the component's reason. */
	assert_int_equal(col_papi_component_states(comps, 16, &n, &err), 0);
	for (size_t c = 0; c < n && c < 16; c++) {
		char name[COL_EVENT_NAME_MAX];
		const char *one[1] = { name };
		if (comps[c].enabled)
			continue;
		snprintf(name, sizeof name, "%.31s:::x", comps[c].name);
		assert_int_equal(col_papi_open(one, 1, &p, &err), 0);
		ev = col_papi_events(p, NULL);
		assert_int_equal(ev[0].available, 0);
		assert_string_equal(ev[0].component, comps[c].name);
		assert_true(starts_with(ev[0].reason, "component '"));
		assert_non_null(strstr(ev[0].reason, "is disabled: "));
		col_papi_close(p);
	}
}

static void test_duplicates_share_a_slot(void **state)
{
	const char *names[] = { "sde:::opreview_test::bytes", "perf::TASK-CLOCK",
				"sde:::opreview_test::bytes" };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	const struct col_event *ev;
	long long v[3] = { POISON, POISON, POISON }, b;
	(void)state;

	assert_int_equal(col_papi_open(names, 3, &p, &err), 0);
	ev = col_papi_events(p, NULL);
	assert_int_equal(ev[0].available, 1);
	assert_int_equal(ev[2].available, 1);
	assert_int_equal(col_papi_start(p, &err), 0);
	b = 1 + (long long)(next_rand() % 5000);
	t_bytes += b;
	assert_int_equal(col_papi_stop(p, v, &err), 0);
	assert_int_equal(v[0], b);
	assert_int_equal(v[2], b);
	col_papi_close(p);
}

static void test_bad_arguments(void **state)
{
	char long_name[200];
	const char *names[2] = { "perf::TASK-CLOCK", NULL };
	struct opr_error err = { 0 };
	struct col_papi *p = (struct col_papi *)&err;
	double ns = -1.0;
	(void)state;

	assert_int_equal(col_papi_open(names, 2, &p, &err), OPR_EINPUT);
	assert_null(p);
	assert_int_equal(err.code, OPR_EINPUT);

	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	names[1] = long_name;
	err.code = 0;
	assert_int_equal(col_papi_open(names, 2, &p, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "longer than 95 characters"));
	assert_null(p);

	/* No events: a valid, empty handle. */
	err.code = 0;
	assert_int_equal(col_papi_open(NULL, 0, &p, &err), 0);
	assert_int_equal(col_papi_sets(p), 0);
	assert_int_equal(col_papi_start(p, &err), 0);
	assert_int_equal(col_papi_read(p, NULL, &err), 0);
	assert_int_equal(col_papi_stop(p, NULL, &err), 0);
	assert_int_equal(col_papi_read_cost(p, 10, &ns, &err), 0);
	assert_true(ns == 0.0);
	assert_int_equal(col_papi_read_cost(p, 0, &ns, &err), OPR_EINPUT);
	col_papi_close(p);
	col_papi_close(NULL);
}

static void test_state_errors(void **state)
{
	const char *names[] = { "sde:::opreview_test::ticks" };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	long long v = POISON;
	(void)state;

	/* the SDE counter needs no host facility: these checks hold on any host */

	assert_int_equal(col_papi_open(names, 1, &p, &err), 0);
	assert_int_equal(col_papi_read(p, &v, &err), OPR_EPAPI);
	assert_string_equal(err.msg, "the event sets are not started");
	assert_int_equal(v, POISON);
	assert_int_equal(col_papi_stop(p, &v, &err), OPR_EPAPI);
	err.code = 0;
	assert_int_equal(col_papi_start(p, &err), 0);
	assert_int_equal(col_papi_start(p, &err), OPR_EPAPI);
	assert_string_equal(err.msg, "the event sets are already started");
	/* close while running stops the sets */
	col_papi_close(p);

	/* a second start after a stop works and counts again from zero */
	assert_int_equal(col_papi_open(names, 1, &p, &err), 0);
	assert_int_equal(col_papi_start(p, &err), 0);
	long long a = 1 + (long long)(next_rand() % 100000);
	t_ticks += a;
	assert_int_equal(col_papi_stop(p, &v, &err), 0);
	assert_int_equal(v, a);
	v = POISON;
	assert_int_equal(col_papi_start(p, &err), 0);
	assert_int_equal(col_papi_stop(p, &v, &err), 0);
	assert_int_equal(v, 0);
	col_papi_close(p);
}

struct other_thread {
	struct col_papi *p;
	int rc;
};

static void *start_elsewhere(void *arg)
{
	struct other_thread *t = arg;
	struct opr_error err = { 0 };
	t->rc = col_papi_start(t->p, &err);
	return NULL;
}

static void test_handle_belongs_to_its_thread(void **state)
{
	const char *names[] = { "sde:::opreview_test::ticks" };
	struct opr_error err = { 0 };
	struct other_thread t = { NULL, 1 };
	pthread_t th;
	(void)state;

	assert_int_equal(col_papi_open(names, 1, &t.p, &err), 0);
	assert_int_equal(pthread_create(&th, NULL, start_elsewhere, &t), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.rc, OPR_EPAPI);
	col_papi_close(t.p);
}

static void test_read_cost(void **state)
{
	const char *names[] = { "sde:::opreview_test::ticks", "sde:::opreview_test::bytes" };
	struct opr_error err = { 0 };
	struct col_papi *p = NULL;
	long long v[2] = { POISON, POISON };
	double ns = -1.0, clock_ns;
	(void)state;

	assert_int_equal(col_papi_open(names, 2, &p, &err), 0);
	assert_int_equal(col_papi_sets(p), 1);
	/* not started: starts and stops around the measurement */
	assert_int_equal(col_papi_read_cost(p, 100, &ns, &err), 0);
	assert_true(isfinite(ns) && ns > 0.0 && ns < 1e6);
	assert_int_equal(col_papi_read(p, v, &err), OPR_EPAPI);
	/* started: stays started */
	err.code = 0;
	assert_int_equal(col_papi_start(p, &err), 0);
	ns = -1.0;
	assert_int_equal(col_papi_read_cost(p, 100, &ns, &err), 0);
	assert_true(isfinite(ns) && ns > 0.0 && ns < 1e6);
	long long a = 1 + (long long)(next_rand() % 100000);
	t_ticks += a;
	assert_int_equal(col_papi_read(p, v, &err), 0);
	assert_int_equal(v[0], a);
	assert_int_equal(col_papi_stop(p, v, &err), 0);
	col_papi_close(p);

	clock_ns = col_clock_read_cost_ns();
	assert_true(isfinite(clock_ns) && clock_ns > 0.0 && clock_ns < 1e5);
}

static void test_version_and_components(void **state)
{
	char buf[32], tiny[4];
	struct col_component comps[32], few[2];
	struct opr_error err = { 0 };
	int major, minor, rev, inc, perf = 0, sde = 0;
	size_t n, nfew;
	(void)state;

	assert_int_equal(col_papi_version(buf, sizeof buf), 0);
	assert_int_equal(sscanf(buf, "%d.%d.%d.%d", &major, &minor, &rev, &inc), 4);
	assert_true(major >= 5);
	assert_int_equal(col_papi_version(tiny, sizeof tiny), OPR_ELIMIT);

	memset(comps, 0x5a, sizeof comps);
	assert_int_equal(col_papi_component_states(comps, 32, &n, &err), 0);
	assert_true(n >= 2 && n <= 32);
	for (size_t c = 0; c < n; c++) {
		assert_true(comps[c].name[0] != '\0' && comps[c].name[0] != 0x5a);
		if (comps[c].enabled) {
			assert_string_equal(comps[c].reason, "");
			assert_true(comps[c].native_events >= 0);
		} else {
			assert_true(comps[c].reason[0] != '\0');
			assert_int_equal(comps[c].native_events, 0);
		}
		if (strcmp(comps[c].name, "perf_event") == 0) {
			/* enabled or not depends on the host and the PAPI build;
			 * enabled, it lists at least the software events */
			perf = 1;
			if (comps[c].enabled)
				assert_true(comps[c].native_events > 0);
		}
		if (strcmp(comps[c].name, "sde") == 0) {
			sde = 1;
			assert_true(comps[c].enabled);
			assert_true(comps[c].native_events >= 2);
		}
	}
	/* opreview links libsde: the sde component is always there */
	assert_true(sde);
	(void)perf;

	/* fewer slots than components: the count is still the total */
	memset(few, 0x5a, sizeof few);
	assert_int_equal(col_papi_component_states(few, 1, &nfew, &err), 0);
	assert_int_equal(nfew, n);
	assert_string_equal(few[0].name, comps[0].name);
	assert_int_equal((unsigned char)few[1].name[0], 0x5a);
}

static int stop_at_second(const char *name, void *arg)
{
	(void)name;
	return ++*(int *)arg == 2 ? 42 : 0;
}

static int perf_event_in_build(void)
{
	struct col_component comps[32];
	struct opr_error err = { 0 };
	size_t n;

	assert_int_equal(col_papi_component_states(comps, 32, &n, &err), 0);
	for (size_t c = 0; c < n && c < 32; c++)
		if (strcmp(comps[c].name, "perf_event") == 0)
			return 1;
	return 0;
}

static void test_native_events(void **state)
{
	struct names s = { "sde:::opreview_test::ticks", 0, 0 };
	struct names t = { "perf::TASK-CLOCK", 0, 0 };
	struct opr_error err = { 0 };
	int count = 0;
	char why[256];
	(void)state;

	/* the test's own SDE counters are listed on any host */
	assert_int_equal(col_papi_native_events("sde", look_for, &s, &err), 0);
	assert_int_equal(s.found, 1);
	assert_true(s.count >= 2);
	assert_int_equal(col_papi_native_events("sde", stop_at_second, &count, &err), 42);
	assert_int_equal(count, 2);
	assert_int_equal(col_papi_native_events("nosuchcomp", look_for, &s, &err),
			 OPR_EINPUT);
	assert_string_equal(err.msg, "no component 'nosuchcomp' in this PAPI build");
	if (!perf_component_enabled(why, sizeof why)) {
		err.code = 0;
		assert_int_equal(col_papi_native_events("perf_event", look_for, &t, &err),
				 perf_event_in_build() ? OPR_EPAPI : OPR_EINPUT);
		assert_int_equal(t.count, 0);
		SKIP_BECAUSE("%s", why);
	}
	assert_int_equal(col_papi_native_events("perf_event", look_for, &t, &err), 0);
	assert_int_equal(t.found, 1);
	assert_true(t.count > 10);
}

/* Runs cmd_events with stdout and stderr captured into out and errs. */
static int run_events(int argc, char **argv, char *out, size_t outlen, char *errs,
		      size_t errlen)
{
	FILE *fo = tmpfile(), *fe = tmpfile();
	int saved_out, saved_err, status;
	size_t k;

	assert_non_null(fo);
	assert_non_null(fe);
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	status = cmd_events(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	rewind(fo);
	k = fread(out, 1, outlen - 1, fo);
	out[k] = '\0';
	rewind(fe);
	k = fread(errs, 1, errlen - 1, fe);
	errs[k] = '\0';
	fclose(fo);
	fclose(fe);
	return status;
}

static void test_cmd_events(void **state)
{
	static char out[1 << 16], errs[4096];
	char *help[] = { "events", "--help", NULL };
	char *bad[] = { "events", "--x", NULL };
	char *plain[] = { "events", NULL };
	const char *line;
	char why[256];
	(void)state;

	assert_int_equal(run_events(2, help, out, sizeof out, errs, sizeof errs), 0);
	assert_true(starts_with(out, "usage: opreview events [--all]"));
	assert_non_null(strstr(out, "--all"));
	assert_string_equal(errs, "");

	assert_int_equal(run_events(2, bad, out, sizeof out, errs, sizeof errs), 2);
	assert_string_equal(out, "");
	assert_string_equal(errs, "opreview: events: unknown option '--x'\n");

	assert_int_equal(run_events(1, plain, out, sizeof out, errs, sizeof errs), 0);
	assert_true(starts_with(out, "PAPI "));
	assert_non_null(strstr(out, "\ncomponents:\n  perf_event "));
	line = strstr(out, "\n  perf::TASK-CLOCK ");
	assert_non_null(line);
	if (perf_sw_usable(why, sizeof why))
		assert_true(starts_with(line + 3 + 35, " perf_event  available\n"));
	else if (perf_component_enabled(why, sizeof why))
		assert_true(starts_with(line + 3 + 35, " perf_event  unavailable  "
					"perf_event_open fails on this host ("));
	else
		assert_true(starts_with(line + 3 + 35, " perf_event  unavailable  "
					"component 'perf_event' is disabled: "));
	/* the host software counters come without PAPI, each with its source */
	line = strstr(out, "\nhost software counters (read without PAPI, provenance measured):\n");
	assert_non_null(line);
	assert_non_null(strstr(line, "\n  context-switches-involuntary        available     "
			       "getrusage(RUSAGE_THREAD).ru_nivcsw\n"));
	assert_non_null(strstr(line, "\n  page-faults-minor                   available     "
			       "getrusage(RUSAGE_THREAD).ru_minflt\n"));
	/* after cmd_events registered the device's counters they are available */
	line = strstr(out, "\n  sde:::opreview::GLOBAL_READ_BYTES ");
	assert_non_null(line);
	assert_non_null(strstr(line, "sde         available\n"));
	if (!host_has_cpu_pmu() && raw_sw_countable() && perf_component_enabled(why, sizeof why))
		assert_non_null(strstr(out, "PAPI_TOT_CYC                        "
				       "perf_event  unavailable  no CPU PMU exposed"));
	/* a read cost needs at least one event set: sde's counters are one */
	assert_non_null(strstr(out, "\nread cost: "));
	assert_string_equal(errs, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_list_opens),
		cmocka_unit_test(test_task_clock_increases),
		cmocka_unit_test(test_sde_exact_and_several_sets),
		cmocka_unit_test(test_unknown_and_disabled),
		cmocka_unit_test(test_duplicates_share_a_slot),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_state_errors),
		cmocka_unit_test(test_handle_belongs_to_its_thread),
		cmocka_unit_test(test_read_cost),
		cmocka_unit_test(test_version_and_components),
		cmocka_unit_test(test_native_events),
		cmocka_unit_test(test_cmd_events),
	};
	return cmocka_run_group_tests_name("papi", tests, setup_sde, NULL);
}
