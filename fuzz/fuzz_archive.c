/* fuzz/fuzz_archive.c: libFuzzer target of the run-archive loader and of the
 * analysis that reads what it loaded. The input is manifest.json, samples.csv,
 * pipeline.json and counters.csv separated by lines "----8<----"; profile.yaml
 * is fixed (fixtures/fuzz/archive.yaml, envelope npu-a) so the blocks resolve.
 * The archive is sealed (col_archive_seal: its digests recomputed) before it
 * is loaded, so the strict reading of every value is reached, unless the
 * input starts with "#raw\n": then the digest checks themselves are fuzzed. */
#include "fuzz.h"

#include "../analyze/analyze.h"
#include "../collect/collect.h"

#define SEP "\n----8<----\n"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_copy("fixtures/fuzz/archive.yaml", "profile.yaml");
	fuzz_copy("fixtures/envelopes/npu-a.yaml", "npu-a.yaml");
	return 0;
}

/* Finds the separator in [p, end); returns its start or end. A plain loop
 * from each newline: libFuzzer's memcmp hooks made memcmp at every byte
 * half the cost of an execution. */
static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end)
{
	static const char sep[] = SEP;
	size_t n = sizeof sep - 1;
	while ((p = memchr(p, '\n', (size_t)(end - p))) && (size_t)(end - p) >= n) {
		size_t i = 1;
		while (i < n && p[i] == (uint8_t)sep[i])
			i++;
		if (i == n)
			return p;
		p++;
	}
	return end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[4] = {"manifest.json", "samples.csv", "pipeline.json",
					     "counters.csv"};
	const uint8_t *p = data, *end = data + size;
	int raw = size >= 5 && !memcmp(data, "#raw\n", 5);
	if (raw)
		p += 5;
	for (int i = 0; i < 4; i++) {
		const uint8_t *q = i < 3 ? find_sep(p, end) : end;
		fuzz_write(names[i], p, (size_t)(q - p));
		p = q < end ? q + sizeof SEP - 1 : end;
	}
	struct col_run *run = NULL;
	struct opr_error err = {0};
	if (!raw) {
		int sealed = col_archive_seal(fuzz_dir(), &err);
		if (sealed && (!err.msg[0] || strchr(err.msg, '\n')))
			abort();
		memset(&err, 0, sizeof err);
	}
	int rc = col_archive_load(fuzz_dir(), &run, &err);
	if (rc ? (run || !err.msg[0] || strchr(err.msg, '\n')) : !run)
		abort();
	if (!rc) {
		struct ana_findings *f = NULL;
		struct opr_error e2 = {0};
		if (ana_analyze(run, fuzz_dir(), &f, &e2) ? (f || !e2.msg[0]) : !f)
			abort();
		ana_findings_free(f);
	}
	col_run_free(run);
	return 0;
}
