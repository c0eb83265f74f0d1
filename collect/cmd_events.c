/* collect/cmd_events.c: `opreview events`, what PAPI offers on this host: each
 * component enabled or disabled with the reason, each default event available or
 * not with the reason (tested by add + start + stop), and the counter read cost. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "hostcount.h"
#include "papi.h"
#include "../opreview_cmds.h"

static int opt_all;

/* The command's table, shared with --help and the man page (opreview_cli.c). */
static const struct opr_option options[] = {
	{ OPR_OPT_FLAG, "all", NULL,
	  "also list every native event of the enabled components", &opt_all },
	{ OPR_OPT_END, NULL, NULL, NULL, NULL },
};

static const struct opr_command_help help = {
	"events", "events [--all]",
	"Show what PAPI offers on this host.",
	"Each component is listed enabled or disabled with the reason; each default\n"
	"event available or not with the reason (tested by adding, starting and\n"
	"stopping it, never by query alone: a virtual machine without a vPMU lists\n"
	"the hardware presets but cannot count them); then the host's software\n"
	"counters that come without PAPI (getrusage, the thread CPU clock,\n"
	"perf_event_open), each with its source or why it is unavailable; then the\n"
	"cost of reading the counters. OPREVIEW_PAPI_DISABLE=comp[,comp] disables\n"
	"PAPI components, as a host without them would have it. Exit status: 0 success, 1 PAPI or runtime failure, 2 usage error.",
	options,
};

#define READ_COST_REPS 200

static void print_host(void)
{
	char version[32];
	int paranoid = col_perf_paranoid();

	if (col_papi_version(version, sizeof version) != 0)
		version[0] = '\0';
	printf("PAPI %s\n", version);
	if (paranoid == -99)
		printf("kernel.perf_event_paranoid: unreadable\n");
	else
		printf("kernel.perf_event_paranoid: %d\n", paranoid);
	printf("CPU PMU: %s\n", col_cpu_pmu_present()
	       ? "exposed" : "none (no cpu or cpu_core in /sys/bus/event_source/devices)");
	int e = col_perf_open_errno();
	if (e)
		printf("perf_event_open: fails (%s)\n", strerror(e));
	else
		printf("perf_event_open: a software counter opens\n");
}

/* The components, or NULL when PAPI does not initialise (err filled). *n gets
 * their count. The caller frees the array. */
static struct col_component *load_components(size_t *n, struct opr_error *err)
{
	struct col_component *comps;
	size_t total;

	if (col_papi_component_states(NULL, 0, &total, err))
		return NULL;
	comps = calloc(total ? total : 1, sizeof *comps);
	if (!comps) {
		opr_error_set(err, OPR_ENOMEM, "out of memory listing components");
		return NULL;
	}
	if (col_papi_component_states(comps, total, n, err)) {
		free(comps);
		return NULL;
	}
	if (*n > total)
		*n = total;
	return comps;
}

static void print_components(const struct col_component *comps, size_t n)
{
	printf("\ncomponents:\n");
	for (size_t i = 0; i < n; i++) {
		const struct col_component *c = &comps[i];
		if (c->enabled)
			printf("  %-18s enabled   %d native events\n", c->name,
			       c->native_events);
		else
			printf("  %-18s disabled  %s\n", c->name, c->reason);
	}
}

static void print_events(const struct col_event *ev, size_t n)
{
	printf("\ndefault events:\n");
	for (size_t i = 0; i < n; i++) {
		printf("  %-35s %-11s %s", ev[i].name,
		       ev[i].component[0] ? ev[i].component : "-",
		       ev[i].available ? "available" : "unavailable  ");
		printf("%s\n", ev[i].available ? "" : ev[i].reason);
	}
}

/* The host's software counters read without PAPI, each with where it comes from. */
static int print_host_counters(struct opr_error *err)
{
	struct col_hostcount *h;
	const struct col_hc_info *hi;

	if (col_hostcount_open(&h, err))
		return -1;
	hi = col_hostcount_info(h);
	printf("\nhost software counters (read without PAPI, provenance measured):\n");
	for (int c = 0; c < COL_NHC; c++)
		printf("  %-35s %s  %s\n", hi[c].name,
		       hi[c].available ? "available   " : "unavailable ",
		       hi[c].available ? hi[c].source : hi[c].reason);
	col_hostcount_close(h);
	return 0;
}

static int print_name(const char *name, void *arg)
{
	(void)arg;
	printf("    %s\n", name);
	return 0;
}

/* --all: the native events of every enabled component. */
static int print_natives(const struct col_component *comps, size_t n,
			 struct opr_error *err)
{
	printf("\nnative events:\n");
	for (size_t i = 0; i < n; i++) {
		if (!comps[i].enabled)
			continue;
		printf("  %s (%d):\n", comps[i].name, comps[i].native_events);
		if (col_papi_native_events(comps[i].name, print_name, NULL, err))
			return -1;
	}
	return 0;
}

int cmd_events(int argc, char **argv)
{
	struct opr_error err = { 0 };
	const char *pos[1];
	int npos;
	struct col_component *comps = NULL;
	struct col_papi *p = NULL;
	const char *const *names = col_papi_default_events();
	size_t ncomps = 0, nnames = 0, nev;
	const struct col_event *ev;
	double read_ns;
	int status = OPR_EXIT_OK, rc;

	opt_all = 0;
	if (opr_cmd_start(&help, argc, argv, pos, 0, &npos, NULL, 0, "", &rc))
		return rc;

	/* The device's counters must be registered for their SDE names to exist. */
	ops_sde_register();
	print_host();
	comps = load_components(&ncomps, &err);
	if (comps) {
		print_components(comps, ncomps);
	} else {
		fprintf(stderr, "opreview: events: %s\n", err.msg);
		status = opr_exit_status(err.code);
	}

	while (names[nnames])
		nnames++;
	rc = col_papi_open(names, nnames, &p, &err);
	if (rc) {
		fprintf(stderr, "opreview: events: %s\n", err.msg);
		free(comps);
		return opr_exit_status(rc);
	}
	ev = col_papi_events(p, &nev);
	print_events(ev, nev);
	if (print_host_counters(&err)) {
		fprintf(stderr, "opreview: events: %s\n", err.msg);
		status = opr_exit_status(err.code);
	}

	if (col_papi_sets(p) > 0) {
		if (col_papi_read_cost(p, READ_COST_REPS, &read_ns, &err) == 0) {
			printf("\nread cost: %.0f ns per read of %zu event sets "
			       "(clock_gettime: %.0f ns)\n", read_ns, col_papi_sets(p),
			       col_clock_read_cost_ns());
		} else {
			fprintf(stderr, "opreview: events: %s\n", err.msg);
			status = opr_exit_status(err.code);
		}
	}
	if (opt_all && comps && print_natives(comps, ncomps, &err)) {
		fprintf(stderr, "opreview: events: %s\n", err.msg);
		status = opr_exit_status(err.code);
	}

	col_papi_close(p);
	free(comps);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "opreview: events: write error on standard output\n");
		return OPR_EXIT_FAILURE;
	}
	return status;
}
