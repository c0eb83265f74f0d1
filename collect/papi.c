/* collect/papi.c: the one wrapper of PAPI 7 (the only file including <papi.h>).
 * Requested events are grouped one event set per component, each event is tested
 * by add + start + stop, and an event the host cannot count gets a precise reason.
 * Units: counts as PAPI returns them (TASK-CLOCK in ns, SDE in the counter's unit). */

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include <papi.h>

#include "papi.h"

/* Why one set per component: an event set binds to the component of its first
 * event, and adding an event of another component fails with PAPI_EINVAL. */
struct col_set {
	int es;          /* PAPI event set handle */
	int cidx;        /* its component */
	size_t nev;      /* events in the set */
	long long *buf;  /* nev values in PAPI's order (the order of adding) */
};

struct col_papi {
	size_t n;
	struct col_event *ev;
	int *set_of;        /* per event: index into sets, -1 when unavailable */
	size_t *pos;        /* per event: position in its set's values */
	struct col_set *sets;
	size_t nsets, capsets;
	int running;
	char status[256];   /* "ok" or why PAPI is unusable */
	pthread_t owner;    /* the thread that opened the handle */
};

/* The device's SDE counters; the names must match ops_sde_names() (ops/sde.c).
 * Listed here so this module does not link the operators. */
static const char *const default_events[] = {
	"PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCM", "PAPI_L2_TCM", "PAPI_L3_TCM",
	"PAPI_BR_MSP",
	"perf::TASK-CLOCK", "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES",
	"perf::CPU-MIGRATIONS",
	"sde:::opreview::GLOBAL_READ_BYTES", "sde:::opreview::GLOBAL_WRITE_BYTES",
	"sde:::opreview::SHARED_READ_BYTES", "sde:::opreview::SHARED_WRITE_BYTES",
	"sde:::opreview::LOCAL_READ_BYTES", "sde:::opreview::LOCAL_WRITE_BYTES",
	"sde:::opreview::DMA_TRANSFERS", "sde:::opreview::DMA_SPLITS",
	"sde:::opreview::LAUNCHES", "sde:::opreview::TILES",
	"sde:::opreview::FALLBACKS", "sde:::opreview::MACS_FP32",
	"sde:::opreview::MACS_FP16", "sde:::opreview::MACS_BF16",
	"sde:::opreview::MACS_INT8", "sde:::opreview::ELEM_OPS",
	"sde:::opreview::PEAK_SHARED_BYTES",
	NULL,
};

const char *const *col_papi_default_events(void)
{
	return default_events;
}

/* ---- initialisation, once per process -------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc = PAPI_OK;           /* PAPI_OK or the failing PAPI code */
static const char *init_call = "";      /* the call that failed */

static unsigned long thread_id(void)
{
	return (unsigned long)pthread_self();
}

static int cache_fill(int cidx);

/* OPREVIEW_PAPI_DISABLE=comp[,comp...] disables those components before PAPI
 * initialises: how a host whose PAPI drops a component (Debian's 7.0 drops
 * perf_event, software events included, without a CPU PMU) is reproduced on one
 * that has it. Unknown names are ignored, as PAPI does. */
static void disable_components(void)
{
	const char *list = getenv("OPREVIEW_PAPI_DISABLE");
	char name[PAPI_MAX_STR_LEN];

	while (list && *list) {
		size_t n = strcspn(list, ",");
		if (n > 0 && n < sizeof name) {
			memcpy(name, list, n);
			name[n] = '\0';
			(void)PAPI_disable_component_by_name(name);
		}
		list += n + (list[n] == ',');
	}
}

static void init_papi(void)
{
	int rc;

	if (PAPI_is_initialized() == PAPI_NOT_INITED) {
		disable_components();
		rc = PAPI_library_init(PAPI_VER_CURRENT);
		if (rc != PAPI_VER_CURRENT) {
			/* A positive value is a version mismatch with the headers. */
			init_rc = rc > 0 ? PAPI_EINVAL : rc;
			init_call = "PAPI_library_init";
			return;
		}
	}
	rc = PAPI_thread_init(thread_id);
	if (rc != PAPI_OK) {
		init_rc = rc;
		init_call = "PAPI_thread_init";
		return;
	}
	/* List the native events before any name is looked up: a lookup before the
	 * first walk of the list makes that walk leak the looked-up entries. */
	for (int c = 0; c < PAPI_num_components(); c++) {
		const PAPI_component_info_t *ci = PAPI_get_component_info(c);
		if (ci && !ci->disabled)
			(void)cache_fill(c);
	}
}

static int papi_ready(void)
{
	pthread_once(&init_once, init_papi);
	return init_rc;
}

/* Formats into a fixed field of a struct, truncating on purpose: names and reasons
 * are bounded so records can be copied whole (vsnprintf, so that gcc does not
 * flag the intended truncation). */
__attribute__((format(printf, 3, 4)))
static void put(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

static void copy_str(char *dst, size_t len, const char *src)
{
	put(dst, len, "%s", src);
}

/* ---- reasons ------------------------------------------------------------------ */

static const char *const rc_names[] = {
	"PAPI_OK", "PAPI_EINVAL", "PAPI_ENOMEM", "PAPI_ESYS", "PAPI_ECMP",
	"PAPI_ECLOST", "PAPI_EBUG", "PAPI_ENOEVNT", "PAPI_ECNFLCT", "PAPI_ENOTRUN",
	"PAPI_EISRUN", "PAPI_ENOEVST", "PAPI_ENOTPRESET", "PAPI_ENOCNTR",
	"PAPI_EMISC", "PAPI_EPERM", "PAPI_ENOINIT", "PAPI_ENOCMP", "PAPI_ENOSUPP",
	"PAPI_ENOIMPL", "PAPI_EBUF", "PAPI_EINVAL_DOM", "PAPI_EATTR", "PAPI_ECOUNT",
	"PAPI_ECOMBO", "PAPI_ECMP_DISABLED", "PAPI_EDELAY_INIT", "PAPI_EMULPASS",
};

/* "CALL returned PAPI_EXXX" into buf. */
static void describe_rc(char *buf, size_t len, const char *call, int rc)
{
	size_t nnames = sizeof rc_names / sizeof rc_names[0];

	if (rc <= 0 && (size_t)-rc < nnames)
		put(buf, len, "%s returned %s", call, rc_names[-rc]);
	else
		put(buf, len, "%s returned %d", call, rc);
}

static const char *papi_text(int rc)
{
	const char *s = PAPI_strerror(rc);
	return s ? s : "unknown PAPI error";
}

int col_perf_paranoid(void)
{
	FILE *fp = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int level = -99;

	if (!fp)
		return -99;
	if (fscanf(fp, "%d", &level) != 1)
		level = -99;
	fclose(fp);
	return level;
}

/* 0 when this thread can open a perf software counter (task-clock, user
 * space, as PAPI's perf_event component asks for one), else the errno of
 * perf_event_open: ENOSYS under a seccomp filter, a container's default
 * profile or an emulator without the system call, EACCES/EPERM from
 * perf_event_paranoid. */
int col_perf_open_errno(void)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0L);
	if (fd < 0)
		return errno ? errno : EIO;
	close((int)fd);
	return 0;
}

int col_cpu_pmu_present(void)
{
	static const char *const pmus[] = {
		"/sys/bus/event_source/devices/cpu",
		"/sys/bus/event_source/devices/cpu_core",
		"/sys/bus/event_source/devices/cpu_atom",
	};
	for (size_t i = 0; i < sizeof pmus / sizeof pmus[0]; i++)
		if (access(pmus[i], F_OK) == 0)
			return 1;
	return 0;
}

/* Why an event of component comp failed in call with rc. The perf_event cases
 * name the host fact behind PAPI's code: a VM without vPMU makes the kernel
 * refuse every hardware event (ENOENT, PAPI_ENOEVNT) although libpfm still maps
 * the presets from CPUID; EACCES (PAPI_EPERM) comes from perf_event_paranoid. */
static void fail_reason(char *buf, size_t len, const char *comp, const char *call,
			int rc)
{
	char what[64];

	describe_rc(what, sizeof what, call, rc);
	if (strncmp(comp, "perf_event", 10) == 0 && rc == PAPI_ESYS) {
		int e = col_perf_open_errno();
		if (e) {
			put(buf, len, "perf_event_open fails on this host (%s%s): %s",
				 strerror(e), e == ENOSYS ? ": a seccomp filter, a container "
				 "or an emulator without the system call" : "", what);
			return;
		}
	}
	if (strcmp(comp, "perf_event") == 0 && rc == PAPI_ENOEVNT) {
		if (!col_cpu_pmu_present())
			put(buf, len, "no CPU PMU exposed (virtual machine without "
				 "vPMU): %s", what);
		else
			put(buf, len, "not countable by this CPU's PMU: %s", what);
		return;
	}
	if (strncmp(comp, "perf_event", 10) == 0 && rc == PAPI_EPERM) {
		put(buf, len, "perf_event_open not permitted "
			 "(kernel.perf_event_paranoid=%d%s): %s", col_perf_paranoid(),
			 geteuid() == 0 ? "" : ", not root", what);
		return;
	}
	if (strncmp(comp, "perf_event", 10) == 0 &&
	    (rc == PAPI_ECNFLCT || rc == PAPI_ENOCNTR)) {
		put(buf, len, "not enough hardware counters: %s", what);
		return;
	}
	if (rc == PAPI_EISRUN) {
		put(buf, len, "another '%s' event set is running on this thread: %s",
			 comp, what);
		return;
	}
	put(buf, len, "%s (%s)", what, papi_text(rc));
}

/* Component info, after initialising a lazily initialised component so that its
 * real state and reason show (rocm_smi reports PAPI_EDELAY_INIT until touched). */
static const PAPI_component_info_t *component_info(int cidx)
{
	const PAPI_component_info_t *ci = PAPI_get_component_info(cidx);

	if (ci && ci->disabled == PAPI_EDELAY_INIT) {
		int code = PAPI_NATIVE_MASK;
		(void)PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
		ci = PAPI_get_component_info(cidx);
	}
	return ci;
}


/* ---- the SDE name check ------------------------------------------------------- */

/* PAPI accepts any sde:::lib::name (it creates a placeholder that is never
 * written, and the placeholder then shows in the enumeration), so names are
 * checked against the enumeration *before* PAPI sees them. */
struct name_list {
	char **v;
	size_t n, cap;
};

static void name_list_release(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int name_list_add(struct name_list *l, const char *s)
{
	char *copy;

	if (OPR_GROW(l->v, l->n, l->cap, 32))
		return OPR_ENOMEM;
	copy = strdup(s);
	if (!copy)
		return OPR_ENOMEM;
	l->v[l->n++] = copy;
	return 0;
}

static int name_list_has(const struct name_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

/* Walks PAPI's list of the native events of component cidx. */
static int walk_component(int cidx, int (*fn)(const char *name, void *arg),
			  void *arg)
{
	int code = PAPI_NATIVE_MASK;
	char name[PAPI_HUGE_STR_LEN];
	int rc;

	if (PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx) != PAPI_OK)
		return 0;
	do {
		if (PAPI_event_code_to_name(code, name) != PAPI_OK)
			continue;
		rc = fn(name, arg);
		if (rc)
			return rc;
	} while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx) == PAPI_OK);
	return 0;
}

static int add_to_list(const char *name, void *arg)
{
	return name_list_add(arg, name);
}

/* PAPI 7.0's perf_event components leak their name strings each time their
 * list is walked again, and for each event looked up by name before the first
 * walk (LeakSanitizer: 7 strings per event), so the lists of all components
 * but sde are walked once per process, at initialisation, and kept here.
 * The sde list is walked every time: it grows as libraries register counters. */
#define MAX_COMPONENTS 64
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct name_list name_cache[MAX_COMPONENTS];
static int name_cached[MAX_COMPONENTS];

static int uses_cache(int cidx)
{
	const PAPI_component_info_t *ci = PAPI_get_component_info(cidx);
	return ci && cidx >= 0 && cidx < MAX_COMPONENTS && strcmp(ci->name, "sde") != 0;
}

/* Fills the cache of component cidx once. 0 or OPR_ENOMEM. */
static int cache_fill(int cidx)
{
	int rc = 0;

	if (!uses_cache(cidx))
		return 0;
	pthread_mutex_lock(&cache_lock);
	if (!name_cached[cidx]) {
		rc = walk_component(cidx, add_to_list, &name_cache[cidx]);
		if (rc)
			name_list_release(&name_cache[cidx]);
		else
			name_cached[cidx] = 1;
	}
	pthread_mutex_unlock(&cache_lock);
	return rc ? OPR_ENOMEM : 0;
}

/* fn for every native event name of component cidx; stops on fn's non-zero.
 * Call cache_fill first: an unfilled cache here lists nothing. */
static int enum_component(int cidx, int (*fn)(const char *name, void *arg),
			  void *arg)
{
	int rc, filled;

	if (!uses_cache(cidx))
		return walk_component(cidx, fn, arg);
	pthread_mutex_lock(&cache_lock);
	filled = name_cached[cidx];
	pthread_mutex_unlock(&cache_lock);
	if (!filled)
		return 0;
	/* filled once under the lock and never changed again */
	for (size_t i = 0; i < name_cache[cidx].n; i++) {
		rc = fn(name_cache[cidx].v[i], arg);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- opening ------------------------------------------------------------------ */

static void papi_free_sets(struct col_papi *p)
{
	for (size_t s = 0; s < p->nsets; s++) {
		if (p->sets[s].es != PAPI_NULL) {
			(void)PAPI_cleanup_eventset(p->sets[s].es);
			(void)PAPI_destroy_eventset(&p->sets[s].es);
		}
		free(p->sets[s].buf);
	}
	free(p->sets);
	p->sets = NULL;
	p->nsets = p->capsets = 0;
}

void col_papi_close(struct col_papi *p)
{
	if (!p)
		return;
	if (p->running)
		(void)col_papi_stop(p, NULL, NULL);
	papi_free_sets(p);
	free(p->ev);
	free(p->set_of);
	free(p->pos);
	free(p);
}

/* Adds the event alone to a fresh set, starts and stops it. 0 or the PAPI code,
 * with *call the call that failed. */
static int probe_alone(int code, const char **call)
{
	int es = PAPI_NULL, rc;
	long long v[4];

	*call = "PAPI_create_eventset";
	rc = PAPI_create_eventset(&es);
	if (rc != PAPI_OK)
		return rc;
	*call = "PAPI_add_event";
	rc = PAPI_add_event(es, code);
	if (rc == PAPI_OK) {
		*call = "PAPI_start";
		rc = PAPI_start(es);
		if (rc == PAPI_OK) {
			*call = "PAPI_stop";
			rc = PAPI_stop(es, v);
		}
	}
	(void)PAPI_cleanup_eventset(es);
	(void)PAPI_destroy_eventset(&es);
	return rc;
}

/* The set of component cidx, created when missing; NULL when out of memory. */
static struct col_set *set_for(struct col_papi *p, int cidx, size_t *index)
{
	for (size_t s = 0; s < p->nsets; s++)
		if (p->sets[s].cidx == cidx) {
			*index = s;
			return &p->sets[s];
		}
	if (OPR_GROW(p->sets, p->nsets, p->capsets, 4))
		return NULL;
	*index = p->nsets;
	p->sets[p->nsets] = (struct col_set){ .es = PAPI_NULL, .cidx = cidx };
	return &p->sets[p->nsets++];
}

/* Adds event i (code, component cidx) to its component's set and checks that the
 * set still starts with it. 0, or a negative opr code on out of memory or when
 * PAPI could not take the event back out. */
static int add_to_set(struct col_papi *p, size_t i, int code, int cidx,
		      struct opr_error *err)
{
	struct col_event *e = &p->ev[i];
	struct col_set *set;
	const char *call = "PAPI_create_eventset";
	char why[COL_REASON_MAX];
	size_t index;
	long long *buf;
	int rc;

	set = set_for(p, cidx, &index);
	if (!set)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for event sets");
	buf = realloc(set->buf, (set->nev + 1) * sizeof *buf);
	if (!buf)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for event sets");
	set->buf = buf;
	rc = set->es == PAPI_NULL ? PAPI_create_eventset(&set->es) : PAPI_OK;
	if (rc == PAPI_OK) {
		call = "PAPI_add_event";
		rc = PAPI_add_event(set->es, code);
		if (rc == PAPI_OK) {
			call = "PAPI_start";
			rc = PAPI_start(set->es);
			if (rc == PAPI_OK) {
				call = "PAPI_stop";
				rc = PAPI_stop(set->es, set->buf);
			}
			if (rc != PAPI_OK && PAPI_remove_event(set->es, code) != PAPI_OK)
				return opr_error_set(err, OPR_EPAPI,
						     "PAPI could not remove '%s' from its "
						     "event set", e->name);
		}
	}
	if (rc != PAPI_OK) {
		fail_reason(why, sizeof why, e->component, call, rc);
		if (set->nev == 0)
			copy_str(e->reason, sizeof e->reason, why);
		else
			put(e->reason, sizeof e->reason, "does not fit with the "
				 "earlier events of its set: %s", why);
		return 0;
	}
	e->available = 1;
	p->set_of[i] = (int)index;
	p->pos[i] = set->nev++;
	return 0;
}

/* A name that only PAPI's perf_event component resolves: a libpfm4 PMU event
 * (perf::NAME, or any pmu::event without a component prefix) or a preset. */
static int perf_event_named(const char *name)
{
	return strncmp(name, "PAPI_", 5) == 0 || strstr(name, "::") != NULL;
}

/* Resolves event i, tests it and adds it to its set, or records why not. */
static int open_one(struct col_papi *p, size_t i, const struct name_list *sde,
		    int sde_cidx, struct opr_error *err)
{
	struct col_event *e = &p->ev[i];
	const PAPI_component_info_t *ci;
	const char *call;
	int code = 0, cidx, rc;

	if (strncmp(e->name, "sde:::", 6) == 0) {
		copy_str(e->component, sizeof e->component, "sde");
		ci = sde_cidx >= 0 ? component_info(sde_cidx) : NULL;
		if (!ci) {
			copy_str(e->reason, sizeof e->reason,
				 "PAPI has no sde component in this build");
			return 0;
		}
		if (ci->disabled) {
			put(e->reason, sizeof e->reason,
				 "component 'sde' is disabled: %s", ci->disabled_reason);
			return 0;
		}
		if (!name_list_has(sde, e->name)) {
			copy_str(e->reason, sizeof e->reason,
				 "not registered by any library (PAPI would accept the "
				 "name and never write a value)");
			return 0;
		}
	}
	rc = PAPI_event_name_to_code(e->name, &code);
	if (rc != PAPI_OK) {
		char what[64];
		const char *sep = strstr(e->name, ":::");
		describe_rc(what, sizeof what, "PAPI_event_name_to_code", rc);
		if (sep && (size_t)(sep - e->name) < COL_COMPONENT_NAME_MAX) {
			char comp[COL_COMPONENT_NAME_MAX];
			put(comp, sizeof comp, "%.*s", (int)(sep - e->name), e->name);
			cidx = PAPI_get_component_index(comp);
			ci = cidx >= 0 ? component_info(cidx) : NULL;
			if (!ci) {
				put(e->reason, sizeof e->reason, "no such event: no "
					 "component '%s' in this PAPI build", comp);
				return 0;
			}
			copy_str(e->component, sizeof e->component, ci->name);
			if (ci->disabled) {
				put(e->reason, sizeof e->reason,
					 "component '%s' is disabled: %s", ci->name,
					 ci->disabled_reason);
				return 0;
			}
		}
		if (!sep && perf_event_named(e->name) &&
		    (cidx = PAPI_get_component_index("perf_event")) >= 0 &&
		    (ci = component_info(cidx)) && ci->disabled) {
			/* perf::NAME and presets belong to perf_event: say that the
			 * component is off rather than that the name is unknown */
			copy_str(e->component, sizeof e->component, ci->name);
			put(e->reason, sizeof e->reason, "component 'perf_event' is "
				 "disabled: %s", ci->disabled_reason);
			return 0;
		}
		put(e->reason, sizeof e->reason, "no such event: %s", what);
		return 0;
	}
	cidx = PAPI_get_event_component(code);
	ci = cidx >= 0 ? component_info(cidx) : NULL;
	if (!ci) {
		put(e->reason, sizeof e->reason, "no component for the event: "
			 "PAPI_get_event_component returned %d", cidx);
		return 0;
	}
	copy_str(e->component, sizeof e->component, ci->name);
	if (ci->disabled) {
		put(e->reason, sizeof e->reason, "component '%s' is disabled: %s",
			 ci->name, ci->disabled_reason);
		return 0;
	}
	rc = probe_alone(code, &call);
	if (rc != PAPI_OK) {
		fail_reason(e->reason, sizeof e->reason, e->component, call, rc);
		return 0;
	}
	return add_to_set(p, i, code, cidx, err);
}

/* Drops sets left empty (their only events did not fit) and renumbers set_of. */
static void compact_sets(struct col_papi *p)
{
	size_t kept = 0;

	for (size_t s = 0; s < p->nsets; s++) {
		struct col_set *set = &p->sets[s];
		if (set->nev == 0) {
			if (set->es != PAPI_NULL) {
				(void)PAPI_cleanup_eventset(set->es);
				(void)PAPI_destroy_eventset(&set->es);
			}
			free(set->buf);
			continue;
		}
		for (size_t i = 0; i < p->n; i++)
			if (p->set_of[i] == (int)s)
				p->set_of[i] = (int)kept;
		p->sets[kept++] = *set;
	}
	p->nsets = kept;
}

int col_papi_open(const char *const *names, size_t n, struct col_papi **out,
		  struct opr_error *err)
{
	struct name_list sde = { 0 };
	struct col_papi *p;
	int rc = 0, init, sde_cidx = -1, need_sde = 0;

	*out = NULL;
	if (n && !names)
		return opr_error_set(err, OPR_EINPUT, "no event names given");
	for (size_t i = 0; i < n; i++) {
		if (!names[i])
			return opr_error_set(err, OPR_EINPUT, "event %zu has no name", i);
		if (strlen(names[i]) >= COL_EVENT_NAME_MAX)
			return opr_error_set(err, OPR_EINPUT, "event name '%.40s...' is "
					     "longer than %d characters", names[i],
					     COL_EVENT_NAME_MAX - 1);
		if (strncmp(names[i], "sde:::", 6) == 0)
			need_sde = 1;
	}
	p = calloc(1, sizeof *p);
	if (!p)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for event sets");
	p->n = n;
	copy_str(p->status, sizeof p->status, "ok");
	p->owner = pthread_self();
	p->ev = calloc(n ? n : 1, sizeof *p->ev);
	p->set_of = calloc(n ? n : 1, sizeof *p->set_of);
	p->pos = calloc(n ? n : 1, sizeof *p->pos);
	if (!p->ev || !p->set_of || !p->pos) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for event sets");
		goto fail_handle;
	}
	for (size_t i = 0; i < n; i++) {
		copy_str(p->ev[i].name, sizeof p->ev[i].name, names[i]);
		p->set_of[i] = -1;
	}

	init = papi_ready();
	if (init != PAPI_OK) {
		char what[64];
		describe_rc(what, sizeof what, init_call, init);
		put(p->status, sizeof p->status,
			 "PAPI failed to initialise: %s (%s)", papi_text(init), what);
		for (size_t i = 0; i < n; i++)
			copy_str(p->ev[i].reason, sizeof p->ev[i].reason, p->status);
		*out = p;
		return 0;
	}

	if (need_sde) {
		const PAPI_component_info_t *ci;
		sde_cidx = PAPI_get_component_index("sde");
		ci = sde_cidx >= 0 ? component_info(sde_cidx) : NULL;
		if (ci && !ci->disabled) {
			rc = enum_component(sde_cidx, add_to_list, &sde);
			if (rc) {
				rc = opr_error_set(err, OPR_ENOMEM,
						   "out of memory listing SDE counters");
				goto fail_list;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < i; j++)
			if (strcmp(p->ev[j].name, p->ev[i].name) == 0)
				break;
		if (j < i) {
			/* A repeated name shares the first one's slot. */
			p->ev[i] = p->ev[j];
			p->set_of[i] = p->set_of[j];
			p->pos[i] = p->pos[j];
			continue;
		}
		rc = open_one(p, i, &sde, sde_cidx, err);
		if (rc)
			goto fail_list;
	}
	compact_sets(p);
	name_list_release(&sde);
	*out = p;
	return 0;

fail_list:
	name_list_release(&sde);
fail_handle:
	col_papi_close(p);
	return rc;
}

const struct col_event *col_papi_events(const struct col_papi *p, size_t *n)
{
	if (n)
		*n = p->n;
	return p->ev;
}

const char *col_papi_status(const struct col_papi *p)
{
	return p->status;
}

size_t col_papi_sets(const struct col_papi *p)
{
	return p->nsets;
}

/* ---- counting ----------------------------------------------------------------- */

static const char *set_name(const struct col_set *set)
{
	const PAPI_component_info_t *ci = PAPI_get_component_info(set->cidx);
	return ci ? ci->name : "?";
}

static void scatter(const struct col_papi *p, long long *values)
{
	if (!values)
		return;
	for (size_t i = 0; i < p->n; i++)
		if (p->set_of[i] >= 0)
			values[i] = p->sets[p->set_of[i]].buf[p->pos[i]];
}

static int papi_failed(struct opr_error *err, const char *call,
		       const struct col_set *set, int rc)
{
	char what[64];

	describe_rc(what, sizeof what, call, rc);
	return opr_error_set(err, OPR_EPAPI, "counting the '%s' event set failed: "
			     "%s (%s)", set_name(set), what, papi_text(rc));
}

int col_papi_start(struct col_papi *p, struct opr_error *err)
{
	if (p->running)
		return opr_error_set(err, OPR_EPAPI, "the event sets are already started");
	if (!pthread_equal(p->owner, pthread_self()))
		return opr_error_set(err, OPR_EPAPI, "the event sets belong to "
				     "another thread");
	for (size_t s = 0; s < p->nsets; s++) {
		int rc = PAPI_start(p->sets[s].es);
		if (rc != PAPI_OK) {
			size_t failed = s;
			while (s-- > 0)
				(void)PAPI_stop(p->sets[s].es, p->sets[s].buf);
			return papi_failed(err, "PAPI_start", &p->sets[failed], rc);
		}
	}
	p->running = 1;
	return 0;
}

/* PAPI_read of every set into the sets' buffers. */
static int read_sets(struct col_papi *p, struct opr_error *err)
{
	for (size_t s = 0; s < p->nsets; s++) {
		int rc = PAPI_read(p->sets[s].es, p->sets[s].buf);
		if (rc != PAPI_OK)
			return papi_failed(err, "PAPI_read", &p->sets[s], rc);
	}
	return 0;
}

int col_papi_read(struct col_papi *p, long long *values, struct opr_error *err)
{
	int rc;

	if (!p->running)
		return opr_error_set(err, OPR_EPAPI, "the event sets are not started");
	rc = read_sets(p, err);
	if (rc)
		return rc;
	scatter(p, values);
	return 0;
}

int col_papi_stop(struct col_papi *p, long long *values, struct opr_error *err)
{
	int first = 0;

	if (!p->running)
		return opr_error_set(err, OPR_EPAPI, "the event sets are not started");
	for (size_t s = p->nsets; s-- > 0;) {
		int rc = PAPI_stop(p->sets[s].es, p->sets[s].buf);
		if (rc != PAPI_OK && !first)
			first = papi_failed(err, "PAPI_stop", &p->sets[s], rc);
	}
	p->running = 0;
	if (first)
		return first;
	scatter(p, values);
	return 0;
}

/* ---- read costs --------------------------------------------------------------- */

#define COST_BATCHES 9


static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of COST_BATCHES values (sorted in place): robust to a batch hit by a
 * preemption, which a mean is not. */
static double median(double *v)
{
	qsort(v, COST_BATCHES, sizeof *v, cmp_double);
	return opr_quantile_type7(v, COST_BATCHES, 0.5);
}

int col_papi_read_cost(struct col_papi *p, int reps, double *ns_per_read,
		       struct opr_error *err)
{
	double batch[COST_BATCHES];
	int started = 0, rc = 0;

	if (reps < 1)
		return opr_error_set(err, OPR_EINPUT, "'reps' must be at least 1");
	*ns_per_read = 0.0;
	if (p->nsets == 0)
		return 0;
	if (!p->running) {
		rc = col_papi_start(p, err);
		if (rc)
			return rc;
		started = 1;
	}
	for (int b = 0; b < COST_BATCHES && !rc; b++) {
		double t0 = (double)opr_now_ns();
		for (int r = 0; r < reps && !rc; r++)
			rc = read_sets(p, err);
		batch[b] = ((double)opr_now_ns() - t0) / reps;
	}
	if (started) {
		int rs = col_papi_stop(p, NULL, rc ? NULL : err);
		if (!rc)
			rc = rs;
	}
	if (!rc)
		*ns_per_read = median(batch);
	return rc;
}

double col_clock_read_cost_ns(void)
{
	enum { REPS = 2000 };
	double batch[COST_BATCHES];
	volatile int64_t sink = 0;

	/* the cost of the one clock every sample is timed with */
	for (int b = 0; b < COST_BATCHES; b++) {
		double t0 = (double)opr_now_ns();
		for (int r = 0; r < REPS; r++)
			sink += opr_now_ns();
		batch[b] = ((double)opr_now_ns() - t0) / REPS;
	}
	(void)sink;
	return median(batch);
}

/* ---- components and versions -------------------------------------------------- */

int col_papi_version(char *buf, size_t len)
{
	int v = PAPI_VERSION, n;

	if (papi_ready() == PAPI_OK) {
		int lib = PAPI_get_opt(PAPI_LIB_VERSION, NULL);
		if (lib > 0)
			v = lib;
	}
	n = snprintf(buf, len, "%d.%d.%d.%d", PAPI_VERSION_MAJOR(v),
		     PAPI_VERSION_MINOR(v), PAPI_VERSION_REVISION(v),
		     PAPI_VERSION_INCREMENT(v));
	return n < 0 || (size_t)n >= len ? OPR_ELIMIT : 0;
}

static int count_event(const char *name, void *arg)
{
	(void)name;
	++*(int *)arg;
	return 0;
}

static int init_failed(struct opr_error *err)
{
	char what[64];

	describe_rc(what, sizeof what, init_call, init_rc);
	return opr_error_set(err, OPR_EPAPI, "PAPI failed to initialise: %s (%s)",
			     papi_text(init_rc), what);
}

int col_papi_component_states(struct col_component *out, size_t cap, size_t *n,
			      struct opr_error *err)
{
	int total;

	*n = 0;
	if (papi_ready() != PAPI_OK)
		return init_failed(err);
	total = PAPI_num_components();
	for (int c = 0; c < total && (size_t)c < cap; c++) {
		const PAPI_component_info_t *ci = component_info(c);
		struct col_component *o = &out[c];
		memset(o, 0, sizeof *o);
		if (!ci) {
			copy_str(o->name, sizeof o->name, "?");
			copy_str(o->reason, sizeof o->reason, "PAPI gave no information");
			continue;
		}
		copy_str(o->name, sizeof o->name, ci->name);
		copy_str(o->description, sizeof o->description, ci->description);
		o->enabled = !ci->disabled;
		if (ci->disabled) {
			const char *r = ci->disabled_reason[0] ? ci->disabled_reason
							       : papi_text(ci->disabled);
			if (strncmp(ci->name, "perf_event", 10) == 0)
				put(o->reason, sizeof o->reason,
					 "%s (kernel.perf_event_paranoid=%d)", r,
					 col_perf_paranoid());
			else
				copy_str(o->reason, sizeof o->reason, r);
		} else {
			if (cache_fill(c))
				return opr_error_set(err, OPR_ENOMEM, "out of memory "
						     "listing the events of '%s'", ci->name);
			(void)enum_component(c, count_event, &o->native_events);
		}
	}
	*n = total > 0 ? (size_t)total : 0;
	return 0;
}

int col_papi_native_events(const char *component,
			   int (*fn)(const char *name, void *arg), void *arg,
			   struct opr_error *err)
{
	const PAPI_component_info_t *ci;
	int cidx;

	if (papi_ready() != PAPI_OK)
		return init_failed(err);
	cidx = PAPI_get_component_index(component);
	if (cidx < 0)
		return opr_error_set(err, OPR_EINPUT, "no component '%s' in this "
				     "PAPI build", component);
	ci = component_info(cidx);
	if (!ci || ci->disabled)
		return opr_error_set(err, OPR_EPAPI, "component '%s' is disabled",
				     component);
	if (cache_fill(cidx))
		return opr_error_set(err, OPR_ENOMEM, "out of memory listing the "
				     "events of '%s'", component);
	return enum_component(cidx, fn, arg);
}
