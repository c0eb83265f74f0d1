/* tests/test_archive.c: the run archive against alteration and malformed
 * contents, on copies of fixtures/archive: every file's digest is checked
 * before loading (an edit is refused naming the file), and a resealed archive
 * (digests recomputed by col_archive_seal, as a deliberate edit would) is still
 * read strictly: wrong JSON types with their path, samples.csv numbers and row
 * counts with FILE:LINE:COL. Run from the repository root. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../collect/collect.h"
#include "../opreview_cmds.h"

#define FIXTURE "fixtures/archive"

static char tmpdir[64];
static int serial;

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/opr-archive-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	opr_rmtree(tmpdir);
	return 0;
}

/* A fresh copy of the fixture archive; returns its path (static buffer). */
static const char *copy_fixture(void)
{
	static char dir[128];
	struct opr_error err = {0};
	snprintf(dir, sizeof dir, "%s/a%d", tmpdir, serial++);
	assert_int_equal(opr_mkdirs(dir, &err), 0);
	DIR *d = opendir(FIXTURE);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char src[256], dst[256], *data;
		size_t len;
		snprintf(src, sizeof src, "%s/%s", FIXTURE, e->d_name);
		snprintf(dst, sizeof dst, "%s/%s", dir, e->d_name);
		if (opr_read_file(src, &data, &len, 64u << 20, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(opr_write_file(dst, data, len, &err), 0);
		free(data);
	}
	closedir(d);
	return dir;
}

/* Replaces the first occurrence of from by to in dir/name. */
static void edit(const char *dir, const char *name, const char *from, const char *to)
{
	char path[256], *data;
	size_t len;
	struct opr_error err = {0};
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (opr_read_file(path, &data, &len, 64u << 20, &err))
		fail_msg("%s", err.msg);
	char *at = strstr(data, from);
	if (!at)
		fail_msg("'%s' not in %s", from, name);
	size_t fl = strlen(from), tl = strlen(to);
	char *out = malloc(len - fl + tl + 1);
	assert_non_null(out);
	memcpy(out, data, (size_t)(at - data));
	memcpy(out + (at - data), to, tl);
	memcpy(out + (at - data) + tl, at + fl, len - (size_t)(at - data) - fl);
	assert_int_equal(opr_write_file(path, out, len - fl + tl, &err), 0);
	free(out);
	free(data);
}

/* Loads dir, which must fail with OPR_EINPUT and a message holding want
 * (and, when file is given, a location in FILE: at line when line > 0). */
static void refused(const char *dir, const char *want, const char *file, int line)
{
	struct col_run *run = NULL;
	struct opr_error err = {0};
	int rc = col_archive_load(dir, &run, &err);
	if (rc != OPR_EINPUT || !strstr(err.msg, want)) {
		col_run_free(run);
		fail_msg("expected OPR_EINPUT with '%s', got %d: %s:%d:%d: %s", want, rc, err.file,
			 err.line, err.col, err.msg);
	}
	assert_null(run);
	if (file) {
		assert_non_null(strstr(err.file, file));
		if (line > 0)
			assert_int_equal(err.line, line);
		assert_true(err.line >= 1 && err.col >= 1);
	}
}

static void seal(const char *dir)
{
	struct opr_error err = {0};
	if (col_archive_seal(dir, &err))
		fail_msg("seal: %s", err.msg);
}

/* ---- digests ---- */

static void test_fixture_verifies(void **state)
{
	(void)state;
	struct col_run *run = NULL;
	struct opr_error err = {0};
	if (col_archive_load(FIXTURE, &run, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(run->nblocks, 5);
	col_run_free(run);
}

/* The case: one line added to the archived profile turns HOLD into
 * SHIP unless the archive is checked. Every file, and the manifest itself. */
static void test_any_edit_is_refused(void **state)
{
	(void)state;
	const char *dir = copy_fixture();
	edit(dir, "profile.yaml", "sla:\n", "sla:\n  max_regression: 0.9\n");
	refused(dir, "profile.yaml: the archive was altered", NULL, 0);

	static const char *const files[][3] = {
		{"samples.csv", "conv-small,baseline,0,", "conv-small,baseline,0,1"},
		{"counters.csv", "simulated", "Simulated"},
		{"pipeline.json", "\"p95_ns\": ", "\"p95_ns\": 1"},
		{"npu-a.yaml", "cores: 8", "cores: 9"},
		{"manifest.json", "\"rounds\": 50", "\"rounds\": 51"},
	};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		dir = copy_fixture();
		edit(dir, files[i][0], files[i][1], files[i][2]);
		char want[96];
		snprintf(want, sizeof want, "%s: the archive was altered", files[i][0]);
		refused(dir, want, NULL, 0);
	}
	/* a listed file removed */
	dir = copy_fixture();
	char path[256];
	snprintf(path, sizeof path, "%s/counters.csv", dir);
	assert_int_equal(unlink(path), 0);
	refused(dir, "counters.csv", NULL, 0);
	/* the digests themselves removed: not an archive this version reads */
	dir = copy_fixture();
	edit(dir, "manifest.json", "\"manifest_sha256\"", "\"manifest_sha\"");
	refused(dir, "no manifest_sha256", NULL, 0);
}

/* The manifest's own digest is its top-level key only: the same name as a
 * value or a nested key (a profile or an event may be called that) is not. */
static void test_self_digest_is_top_level(void **state)
{
	(void)state;
	const char *dir = copy_fixture();
	edit(dir, "manifest.json", "\"stop_reason\": \"max_samples 200 reached\"",
	     "\"stop_reason\": \"manifest_sha256\", \"x\": {\"manifest_sha256\": \"\\\"manifest_sha256\\\": \"}");
	seal(dir);
	struct col_run *run = NULL;
	struct opr_error err = {0};
	if (col_archive_load(dir, &run, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(run->blocks[0].stop_reason, "manifest_sha256");
	col_run_free(run);
	/* two top-level keys: refused */
	edit(dir, "manifest.json", "\"overhead\": {", "\"manifest_sha256\": \"0\", \"overhead\": {");
	refused(dir, "no manifest_sha256", NULL, 0);
}

static void test_not_a_directory(void **state)
{
	(void)state;
	char path[256];
	struct opr_error err = {0};
	snprintf(path, sizeof path, "%s/plain-file", tmpdir);
	assert_int_equal(opr_write_file(path, "x", 1, &err), 0);
	refused(path, "not a directory", NULL, 0);
	snprintf(path, sizeof path, "%s/missing", tmpdir);
	refused(path, "No such file", NULL, 0);
}

/* ---- contents, once resealed ---- */

static void test_wrong_json_types(void **state)
{
	(void)state;
	static const char *const cases[][4] = {
		{"manifest.json", "\"rounds\": 50", "\"rounds\": \"fifty\"",
		 "blocks[0].rounds: expected an integer, found a string"},
		{"manifest.json", "\"launches\": 3", "\"launches\": \"200\"",
		 ".launches: expected an integer, found a string"},
		{"manifest.json", "\"reps_per_round\": 4", "\"reps_per_round\": 4.5",
		 "blocks[0].reps_per_round: expected an integer, found a real number"},
		{"manifest.json", "\"fused\": false", "\"fused\": 0",
		 ".fused: expected true or false, found an integer"},
		{"manifest.json", "\"model_ns\": ", "\"model_ns\": \"fast\", \"x\": ",
		 ".model_ns: expected a number or null, found a string"},
		{"manifest.json", "\"splits\": 0", "\"splits\": -1",
		 ".splits: expected an integer in [0, 9223372036854775807], found -1"},
		{"pipeline.json", "\"p95_ns\": ", "\"p95_ns\": \"slow\", \"y\": ",
		 "pipeline.json: blocks[0].baseline.p95_ns: expected a number or null, found a string"},
		{"pipeline.json", "\"requests\": ", "\"requests\": true, \"z\": ",
		 "requests: expected an integer, found a boolean"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *dir = copy_fixture();
		edit(dir, cases[i][0], cases[i][1], cases[i][2]);
		seal(dir);
		refused(dir, cases[i][3], NULL, 0);
	}
}

static void test_samples_numbers(void **state)
{
	(void)state;
	/* the second sample row: conv-small,baseline,0,19366 */
	static const char *const bad[][2] = {
		{"19366\n", "19366abc\n"}, {"19366\n", "1.9e4\n"}, {"19366\n", "-19366\n"},
		{"19366\n", " 19366\n"},   {"19366\n", "\n"},       {"19366\n", "99999999999999999999\n"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *dir = copy_fixture();
		edit(dir, "samples.csv", bad[i][0], bad[i][1]);
		seal(dir);
		refused(dir, "expected a time in integer nanoseconds", "samples.csv", 3);
	}
	const char *dir = copy_fixture();
	edit(dir, "samples.csv", "conv-small,baseline,0,19366", "conv-small,baseline,x,19366");
	seal(dir);
	refused(dir, "expected a round in 0..49", "samples.csv", 3);
	dir = copy_fixture();
	edit(dir, "samples.csv", "conv-small,baseline,0,19366", "conv-big,baseline,0,19366");
	seal(dir);
	refused(dir, "expected a block of the profile, found 'conv-big'", "samples.csv", 3);
	dir = copy_fixture();
	edit(dir, "samples.csv", "conv-small,baseline,0,19366", "conv-small,baseline,0,19366,7");
	seal(dir);
	refused(dir, "expected 4 fields", "samples.csv", 3);
	/* a sample moved to another round: rounds are in order, reps each */
	dir = copy_fixture();
	edit(dir, "samples.csv", "conv-small,baseline,0,19366", "conv-small,baseline,1,19366");
	seal(dir);
	refused(dir, "expected round 0 for sample 2 of conv-small baseline, found 1", "samples.csv", 3);
}

/* Cut on a row boundary: every remaining row is well formed, but the count
 * is not the manifest's rounds x repetitions. */
static void test_samples_cut(void **state)
{
	(void)state;
	const char *dir = copy_fixture();
	char path[256], *data;
	size_t len;
	struct opr_error err = {0};
	snprintf(path, sizeof path, "%s/samples.csv", dir);
	assert_int_equal(opr_read_file(path, &data, &len, 64u << 20, &err), 0);
	/* drop the last 8 rows of conv-small's candidate (two rounds) */
	char *rest = strstr(data, "\nqgemm-small,baseline,0,");
	assert_non_null(rest);
	char *cut = rest;
	for (int k = 0; k < 8; k++)
		while (*--cut != '\n')
			;
	memmove(cut, rest, strlen(rest) + 1);
	assert_int_equal(opr_write_file(path, data, strlen(data), &err), 0);
	free(data);
	seal(dir);
	refused(dir, "192 conv-small candidate samples, but the manifest has 50 rounds x 4 "
		     "repetitions = 200 (a cut file?)", "samples.csv", 0);
}

/* The same cut at the end of the file: the count check itself. */
static void test_samples_cut_at_end(void **state)
{
	(void)state;
	const char *dir = copy_fixture();
	char path[256], *data;
	size_t len;
	struct opr_error err = {0};
	snprintf(path, sizeof path, "%s/samples.csv", dir);
	assert_int_equal(opr_read_file(path, &data, &len, 64u << 20, &err), 0);
	char *end = data + len - 1; /* the last newline */
	for (int k = 0; k < 4; k++)
		while (*--end != '\n')
			;
	assert_int_equal(opr_write_file(path, data, (size_t)(end - data) + 1, &err), 0);
	free(data);
	seal(dir);
	refused(dir, "samples, but the manifest has", "samples.csv", 0);
	/* and a row cut in the middle: no newline at the end */
	dir = copy_fixture();
	snprintf(path, sizeof path, "%s/samples.csv", dir);
	assert_int_equal(opr_read_file(path, &data, &len, 64u << 20, &err), 0);
	assert_int_equal(opr_write_file(path, data, len - 3, &err), 0);
	free(data);
	seal(dir);
	refused(dir, "does not end with a newline", "samples.csv", 0);
}

/* A GPU archive (the fixture turned into one: the profile says device:
 * cuda, the manifest records the GPU and a variant its counting pass) loads
 * with the GPU's facts and counters; a manifest without the device for such
 * a profile is refused; and replay, in this build without the CUDA backend,
 * refuses it with exit 6 before running anything. */
static void make_gpu_archive(const char *dir, int with_device)
{
	char path[256], *text, digest[65], from[80], to[80];
	size_t len;
	struct opr_error err = {0};
	edit(dir, "profile.yaml", "\nenvelope: npu-a", "\ndevice: {kind: cuda, index: 0}\nenvelope: npu-a");
	snprintf(path, sizeof path, "%s/profile.yaml", dir);
	if (opr_read_file(path, &text, &len, 1 << 20, &err))
		fail_msg("%s", err.msg);
	col_sha256_hex(text, len, digest);
	free(text);
	snprintf(from, sizeof from, "\"sha256\": \"2d81df2e50b169dff0e3debe34c1e96156eef67ced1e23c6161117236dea3fb7\"");
	snprintf(to, sizeof to, "\"sha256\": \"%s\"", digest);
	edit(dir, "manifest.json", from, to);
	if (with_device)
		edit(dir, "manifest.json", "\"archive_version\": 2,",
		     "\"archive_version\": 2, \"device\": {\"kind\": \"cuda\", \"index\": 0, "
		     "\"name\": \"NVIDIA H200\", \"compute_capability\": \"9.0\", \"sm_count\": 132, "
		     "\"sm_clock_khz\": 1980000, \"mem_clock_khz\": 3201000, \"clock_seen_mhz_min\": 1755.5, "
		     "\"clock_seen_mhz_max\": 1980.0, \"l2_bytes\": 62914560, "
		     "\"shared_per_block_optin_bytes\": 232448, \"global_bytes\": 150109880320, "
		     "\"kernel_driver\": \"580.159.03\", \"driver_version\": 13000, "
		     "\"cuda_runtime_version\": 13000, \"papi_version\": \"7.3.0.0\", "
		     "\"l2_flushed_per_sample\": true, \"timing\": \"CUDA events\"},");
	edit(dir, "manifest.json", "\"repro_output_stable\": true",
	     "\"repro_output_stable\": true, \"gpu_counters\": [{\"name\": "
	     "\"cuda:::dram__bytes_read:stat=sum:device=0\", \"available\": true, \"value\": 123456, "
	     "\"reason\": \"\"}, {\"name\": \"cuda:::sm__cycles_elapsed:stat=max:device=0\", "
	     "\"available\": false, \"value\": null, \"reason\": \"PAPI_start: busy\"}]");
	assert_int_equal(col_archive_seal(dir, &err), 0);
}

static void test_gpu_archive(void **state)
{
	(void)state;
	struct col_run *run = NULL;
	struct opr_error err = {0};
	const char *dir = copy_fixture();
	make_gpu_archive(dir, 1);
	if (col_archive_load(dir, &run, &err))
		fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
	assert_int_equal(run->profile->device.kind, COL_DEV_CUDA);
	assert_true(run->gpu.present);
	assert_string_equal(run->gpu.name, "NVIDIA H200");
	assert_int_equal(run->gpu.sm_count, 132);
	assert_int_equal(run->gpu.cc_major, 9);
	assert_string_equal(run->gpu.kernel_driver, "580.159.03");
	assert_true(run->gpu.clock_seen_mhz_min == 1755.5);
	const struct col_variant_run *vr = &run->blocks[0].v[0];
	assert_int_equal(vr->ngpu_counters, 2);
	assert_true(vr->gpu_counters[0].available && vr->gpu_counters[0].value == 123456);
	assert_false(vr->gpu_counters[1].available);
	assert_string_equal(vr->gpu_counters[1].reason, "PAPI_start: busy");
	assert_null(run->blocks[0].v[1].gpu_counters);
	/* written again, it loads the same */
	char again[160];
	snprintf(again, sizeof again, "%s/again", tmpdir);
	assert_int_equal(col_archive_write(run, again, &err), 0);
	struct col_run *back = NULL;
	if (col_archive_load(again, &back, &err))
		fail_msg("%s: %s", err.file, err.msg);
	assert_string_equal(back->gpu.papi_version, "7.3.0.0");
	assert_int_equal(back->blocks[0].v[0].ngpu_counters, 2);
	col_run_free(back);
	col_run_free(run);
	/* replay needs the backend: exit 6 */
	char *argv[] = {"replay", (char *)dir, NULL};
	assert_int_equal(cmd_replay(2, argv), OPR_EXIT_NODEV);
	/* the profile says cuda, the manifest has no device */
	dir = copy_fixture();
	make_gpu_archive(dir, 0);
	refused(dir, "device: absent, but the profile says device cuda", NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_verifies),
		cmocka_unit_test(test_gpu_archive),
		cmocka_unit_test(test_any_edit_is_refused),
		cmocka_unit_test(test_self_digest_is_top_level),
		cmocka_unit_test(test_not_a_directory),
		cmocka_unit_test(test_wrong_json_types),
		cmocka_unit_test(test_samples_numbers),
		cmocka_unit_test(test_samples_cut),
		cmocka_unit_test(test_samples_cut_at_end),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
