/* fuzz/fuzz_ingest.c: libFuzzer target of the importers (collect/ingest.c)
 * and of the analysis of what they read. The first byte picks the format
 * (even: Google Benchmark JSON, odd: Nsight Compute CSV); the rest is the
 * source file. The baseline and candidate are "A" and "B" (for ncu also
 * "A(" and "B(" prefixes match, as for demangled kernel names). */
#include "fuzz.h"

#include "../analyze/analyze.h"
#include "../collect/collect.h"

#include <math.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[1024];
	if (size < 1)
		return 0;
	fuzz_write("source", data + 1, size - 1);
	snprintf(path, sizeof path, "%s/source", fuzz_dir());
	struct col_ingest_options o = {data[0] % 2 ? "ncu" : "gbench", path, NULL, NULL, "A", "B",
				       NULL, NAN, NAN, NAN, NULL, NULL};
	struct opr_error err = {0};
	struct col_run *run = NULL;
	struct ana_findings *f = NULL;
	if (!col_ingest(&o, &run, &err) && !ana_analyze(run, "run", &f, &err))
		ana_findings_free(f);
	col_run_free(run);
	return 0;
}
