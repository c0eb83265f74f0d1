/* tests/test_ingest.c: outside measurements as a run. A small Google Benchmark
 * program is built with g++ and libbenchmark, run with --benchmark_format=json
 * and --benchmark_repetitions, and its JSON ingested: every repetition's
 * real_time is a sample, the archive round-trips, and the analysis runs the
 * tail-first statistics and marks the model's checks unavailable. The ncu
 * fixture (fixtures/ncu/, hand-written: see its README) gives launches with
 * thousands separators and the SOL rule's inputs. Bad input points at its
 * line and column. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "skip.h"

#define NCU_FIXTURE "fixtures/ncu/handmade-copy2-raw.csv"

/* Two benchmarks of the same sum over 4096 floats: one add chain, and four
 * independent chains (about 4x fewer dependent adds per element). */
static const char BENCH_CC[] =
	"#include <benchmark/benchmark.h>\n"
	"#include <vector>\n"
	"static void BM_chain1(benchmark::State &st) {\n"
	"  std::vector<float> v(4096, 1.5f);\n"
	"  for (auto _ : st) { float s = 0; for (size_t i = 0; i < v.size(); i++) s += v[i];\n"
	"    benchmark::DoNotOptimize(s); }\n"
	"  st.SetBytesProcessed(int64_t(st.iterations()) * 4096 * 4);\n"
	"}\n"
	"static void BM_chain4(benchmark::State &st) {\n"
	"  std::vector<float> v(4096, 1.5f);\n"
	"  for (auto _ : st) { float a = 0, b = 0, c = 0, d = 0;\n"
	"    for (size_t i = 0; i < v.size(); i += 4) { a += v[i]; b += v[i+1]; c += v[i+2]; d += v[i+3]; }\n"
	"    float s = a + b + c + d; benchmark::DoNotOptimize(s); }\n"
	"  st.SetBytesProcessed(int64_t(st.iterations()) * 4096 * 4);\n"
	"}\n"
	"BENCHMARK(BM_chain1);\nBENCHMARK(BM_chain4);\nBENCHMARK_MAIN();\n";

static char tmpdir[64];

static int write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		return -1;
	fputs(text, fp);
	return fclose(fp);
}

/* Builds and runs the benchmark into tmpdir/bm.json; 0, or -1 with the
 * reason in why (the host lacks g++ or libbenchmark). */
static int gbench_json(char *why, size_t n)
{
	char cmd[512];
	if (system("command -v g++ >/dev/null 2>&1")) {
		snprintf(why, n, "no g++ on this host");
		return -1;
	}
	snprintf(cmd, sizeof cmd, "%s/bm.cc", tmpdir);
	assert_int_equal(write_text(cmd, BENCH_CC), 0);
	snprintf(cmd, sizeof cmd, "g++ -O2 -o %s/bm %s/bm.cc -lbenchmark -lpthread 2>%s/cc.err", tmpdir,
		 tmpdir, tmpdir);
	if (system(cmd)) {
		snprintf(why, n, "g++ could not build against libbenchmark (libbenchmark-dev missing?)");
		return -1;
	}
	/* 80 repetitions: p95's distribution-free CI needs 72 samples; 10 ms each, so
	 * that a neighbour's burst on a shared host stays inside a sample (at 2 ms
	 * the chains' p95s once came out too close for the regression's FAIL) */
	snprintf(cmd, sizeof cmd, "%s/bm --benchmark_format=json --benchmark_repetitions=80 "
		 "--benchmark_min_time=0.01 >%s/bm.json 2>%s/bm.err", tmpdir, tmpdir, tmpdir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/opr-ingest-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	opr_rmtree(tmpdir);
	return 0;
}

static struct col_ingest_options opts(const char *format, const char *path, const char *base,
				      const char *cand)
{
	struct col_ingest_options o = {format, path, NULL, NULL, base, cand, NULL,
				       NAN, NAN, NAN, NULL, NULL};
	return o;
}

static const struct ana_check *find_check(const struct ana_findings *f, int v, const char *name)
{
	for (size_t i = 0; i < f->nchecks; i++)
		if (f->checks[i].variant == v && !strcmp(f->checks[i].name, name))
			return &f->checks[i];
	return NULL;
}

static void test_gbench_real(void **state)
{
	(void)state;
	char why[128], json[128], dir[128];
	if (gbench_json(why, sizeof why))
		SKIP_BECAUSE("%s", why);
	snprintf(json, sizeof json, "%s/bm.json", tmpdir);
	snprintf(dir, sizeof dir, "%s/run", tmpdir);
	struct opr_error err = {0};
	struct col_run *run = NULL, *back = NULL;
	/* the slower single chain as the candidate: a regression the test must find */
	struct col_ingest_options o = opts("gbench", json, "BM_chain4", "BM_chain1");
	assert_int_equal(col_ingest(&o, &run, &err), 0);
	assert_string_equal(run->profile->imported, "gbench");
	assert_int_equal(run->blocks[0].v[0].nsamples, 80);
	assert_int_equal(run->blocks[0].v[1].nsamples, 80);

	/* every repetition's real_time (ns per iteration) is a sample, in order */
	json_error_t je;
	json_t *root = json_load_file(json, 0, &je), *b;
	assert_non_null(root);
	size_t i, k[2] = {0, 0};
	json_array_foreach(json_object_get(root, "benchmarks"), i, b) {
		if (strcmp(json_string_value(json_object_get(b, "run_type")), "iteration"))
			continue;
		int v = !strcmp(json_string_value(json_object_get(b, "run_name")), "BM_chain1");
		assert_string_equal(json_string_value(json_object_get(b, "time_unit")), "ns");
		double rt = json_number_value(json_object_get(b, "real_time"));
		assert_true(fabs((double)run->blocks[0].v[v].samples_ns[k[v]] - rt) <= 0.5);
		assert_int_equal(run->blocks[0].v[v].round[k[v]], k[v]);
		k[v]++;
	}
	json_decref(root);
	assert_int_equal(k[0], 80);
	assert_int_equal(k[1], 80);

	/* the source's digest is the file's */
	char *data;
	size_t len;
	char hex[65];
	assert_int_equal(opr_read_file(json, &data, &len, 1u << 26, &err), 0);
	col_sha256_hex(data, len, hex);
	free(data);
	assert_string_equal(run->import.sha256, hex);

	assert_int_equal(col_archive_write(run, dir, &err), 0);
	assert_int_equal(col_archive_load(dir, &back, &err), 0);
	assert_string_equal(back->import.sha256, hex);
	assert_string_equal(back->profile->blocks[0].source[1], "BM_chain1");
	assert_int_equal(back->blocks[0].v[1].nsamples, 80);
	assert_memory_equal(back->blocks[0].v[1].samples_ns, run->blocks[0].v[1].samples_ns,
			    80 * sizeof(int64_t));
	int bps = -1;
	for (int c = 0; c < back->blocks[0].v[1].next; c++)
		if (!strcmp(back->blocks[0].v[1].ext[c].name, "bytes_per_second"))
			bps = c;
	assert_true(bps >= 0 && back->blocks[0].v[1].ext[bps].available);
	assert_true(back->blocks[0].v[1].ext[bps].value > 0);

	struct ana_findings *f = NULL;
	assert_int_equal(ana_analyze(back, dir, &f, &err), 0);
	/* tail first on the samples: p95 has its CI at n = 80 */
	assert_true(f->blocks[0].lat[1].p95.available);
	const struct ana_check *c = find_check(f, 1, "regression p95 (imported)");
	assert_non_null(c);
	assert_int_equal(c->status, ANA_FAIL); /* one chain is slower than four */
	assert_int_equal(f->verdict, ANA_HOLD);
	c = find_check(f, 1, "numerical quality");
	assert_non_null(c);
	assert_int_equal(c->prov, ANA_UNAVAILABLE);
	assert_non_null(strstr(c->value, "unavailable"));
	assert_null(find_check(f, 1, "regression (modelled)"));
	assert_int_equal(f->nws, 0);               /* no worksheet without plans */
	assert_false(f->model.calibrated);
	assert_int_equal(f->primary.prov, ANA_IMPORTED);
	assert_true(f->blocks[0].unclassified[1][0] != '\0'); /* no SOL inputs in gbench */
	ana_findings_free(f);
	col_run_free(back);
	col_run_free(run);
}

static void test_ncu_fixture(void **state)
{
	(void)state;
	struct opr_error err = {0};
	struct col_run *run = NULL;
	struct col_ingest_options o = opts("ncu", NCU_FIXTURE, "copy_scalar",
					   "copy_vec4(const float4 *, float4 *, unsigned long)");
	assert_int_equal(col_ingest(&o, &run, &err), 0);
	const struct col_variant_run *a = &run->blocks[0].v[0], *b = &run->blocks[0].v[1];
	assert_int_equal(a->nsamples, 8);
	assert_int_equal(b->nsamples, 8);
	/* "173,489" nsecond: thousands separators */
	assert_int_equal(a->samples_ns[0], 173489);
	assert_int_equal(b->samples_ns[0], 146930);
	assert_int_equal(a->round[7], 7);
	/* "268.40" Mbyte: decimal prefixes, per launch */
	assert_string_equal(a->ext[0].name, "dram__bytes_read.sum");
	assert_true(a->ext[0].available);
	assert_true(fabs(a->ext[0].value - 268.4475e6) < 1);
	assert_string_equal(run->host.hostname, "127.0.0.1");
	struct ana_findings *f = NULL;
	assert_int_equal(ana_analyze(run, "run", &f, &err), 0);
	/* the SOL rule has its inputs: memory 92% of peak, compute 12% */
	assert_int_equal(f->blocks[0].primary[0], ANA_GLOBAL_BW_BOUND);
	assert_string_equal(f->blocks[0].unclassified[0], "");
	assert_int_equal(f->nfind, 2);
	assert_int_equal(f->find[0].ev[0].prov, ANA_IMPORTED);
	assert_true(f->verdict == ANA_SHIP_WITH_MITIGATIONS);
	ana_findings_free(f);
	col_run_free(run);
}

/* A bad source: OPR_EINPUT at the file, line and column given. */
static void bad_source(const char *format, const char *text, int line, int col, const char *want)
{
	char path[128];
	struct opr_error err = {0};
	struct col_run *run = NULL;
	snprintf(path, sizeof path, "%s/bad.src", tmpdir);
	assert_int_equal(write_text(path, text), 0);
	struct col_ingest_options o = opts(format, path, "A", "B");
	assert_int_equal(col_ingest(&o, &run, &err), OPR_EINPUT);
	assert_null(run);
	if (err.line != line || err.col != col || !strstr(err.msg, want))
		fail_msg("got %d:%d '%s', want %d:%d '%s'", err.line, err.col, err.msg, line, col, want);
}

static void test_bad_input(void **state)
{
	(void)state;
	bad_source("gbench", "{\"benchmarks\": [\n", 2, 1, "");
	bad_source("gbench", "{\"context\": {}}\n", 1, 1, "'benchmarks' array");
	bad_source("gbench",
		   "{\"benchmarks\": [\n"
		   " {\"name\": \"A\", \"run_type\": \"iteration\", \"iterations\": 3,\n"
		   "  \"real_time\": \"fast\", \"time_unit\": \"ns\"}]}\n",
		   3, 16, "'real_time'");
	bad_source("gbench",
		   "{\"benchmarks\": [{\"name\": \"A\", \"iterations\": 3, \"real_time\": 5,\n"
		   "  \"time_unit\": \"ps\"}]}\n",
		   2, 16, "'time_unit'");
	bad_source("gbench", "{\"benchmarks\": [{\"name\": \"A\", \"iterations\": 3, \"real_time\": 5}]}\n",
		   1, 1, "no benchmark named 'B'");
	bad_source("ncu", "hello\n==PROF== Disconnected\n", 3, 1, "no CSV header");
	bad_source("ncu",
		   "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
		   "\"\",\"\",\"nsecond\"\n"
		   "\"0\",\"A\",\"17,16\"\n",
		   3, 9, "not a duration");
	bad_source("ncu",
		   "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
		   "\"\",\"\",\"fortnight\"\n",
		   2, 7, "unknown time unit");
	bad_source("ncu",
		   "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
		   "\"\",\"\",\"nsecond\"\n"
		   "\"0\",\"A\",\"1,000\"\n"
		   "\"1\",\"B\n",
		   4, 5, "unterminated");
	bad_source("ncu", "\"ID\",\"Kernel Name\"\n", 1, 1, "'gpu__time_duration.sum'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gbench_real),
		cmocka_unit_test(test_ncu_fixture),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
