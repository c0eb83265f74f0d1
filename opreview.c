/* opreview.c: main and the command table. Each command lives beside its module
 * (collect/cmd_collect.c, report/cmd_sign.c, ...); this file only dispatches. */
#include "opreview.h"

#include <string.h>

#include "opreview_cmds.h"
#include "ops/ops.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* The one table: dispatch, `opreview --help`, and `opreview --commands` (which
 * the tests compare with the README and the man page). */
static const struct command commands[] = {
	{"run", cmd_run, "collect, analyze and report in one go: profile in, packet out"},
	{"collect", cmd_collect, "run the profile's blocks and write a run archive"},
	{"ingest", cmd_ingest, "turn Google Benchmark JSON or Nsight Compute CSV into a run archive"},
	{"analyze", cmd_analyze, "read a run archive and write findings.json with the verdict"},
	{"report", cmd_report, "render the packet (Markdown, HTML, XLSX) from an archive"},
	{"keygen", cmd_keygen, "write an owner's Ed25519 key pair"},
	{"sign", cmd_sign, "add an owner's signed approval or rejection to a packet"},
	{"verify", cmd_verify, "check a packet's digests and signatures"},
	{"replay", cmd_replay, "re-run an archive and check that it reproduces"},
	{"ops", cmd_ops, "list operators, dtypes, strategies and plan parameters"},
	{"events", cmd_events, "list the PAPI events this host offers, and why others are missing"},
	{"history", cmd_history, "record runs in a history database and show a metric's trend"},
	{"compare", cmd_compare, "compare two run archives, tail first; refuses runs that are not comparable"},
	{"calibrate", cmd_calibrate, "measure this host as an envelope with spreads; validates the model"},
};

static void usage(FILE *fp)
{
	fprintf(fp, "usage: opreview <command> [options]\n\n"
		    "opreview turns a workload profile into a signed-off performance-review\n"
		    "packet for operator fusion and tiling decisions.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		fprintf(fp, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(fp, "\n'opreview <command> --help' describes a command; 'man opreview' has the rest.\n"
		    "exit codes: 0 success or SHIP, 1 failure, 2 bad usage or input, 3 not implemented,\n"
		    "4 verify/replay mismatch, 5 output exists or is being written, 6 needs the CUDA backend\n"
		    "(or its GPU), 10 SHIP WITH MITIGATIONS, 11 HOLD, 12 ROLLBACK,\n"
		    "130/143 interrupted by SIGINT/SIGTERM (output removed)\n"
		    "environment: OPREVIEW_ISA=scalar|avx2|avx512 forces the host kernel path (default:\n"
		    "the best this CPU runs)\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return OPR_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		usage(stdout);
		return OPR_EXIT_OK;
	}
	if (!strcmp(name, "--version")) {
		printf("opreview %s (%s)\n", OPR_VERSION, OPR_GIT_REVISION);
		return OPR_EXIT_OK;
	}
	if (!strcmp(name, "--commands")) {
		for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
			printf("%s\n", commands[i].name);
		return OPR_EXIT_OK;
	}
	/* the kernel path is fixed before any command runs: a bad OPREVIEW_ISA
	 * (an unknown name, or a path this CPU lacks) is bad input, exit 2 */
	struct opr_error err;
	memset(&err, 0, sizeof err);
	int rc = ops_isa_from_env(&err);
	if (rc) {
		opr_error_print(&err, stderr);
		return opr_exit_status(rc);
	}
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(name, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "opreview: '%s' is not a command; see 'opreview --help'\n", name);
	return OPR_EXIT_USAGE;
}
