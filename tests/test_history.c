/* tests/test_history.c: the review across runs: asv's step detection on
 * planted series (steps up and down, noise, a lone outlier, throughput), and
 * the SQLite history: a fresh schema, the migration from version 1, a newer
 * schema refused, adding an archive twice, and three runs of the fixture
 * archive, the last one made 40% slower, whose trend shows the change point. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analyze/analyze.h"

#define ARCHIVE "fixtures/archive"

/* seeded noise: splitmix64, uniform in [-1, 1) */
static double noise(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

static void series(double *y, double *w, size_t n, double level, double jump, size_t at,
		   double rel_noise, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		double base = i >= at ? level * (1 + jump) : level;
		y[i] = base * (1 + rel_noise * noise(&seed));
		w[i] = 0.02 * base; /* a CI 2% wide */
	}
}

static void test_cp_step_up(void **state)
{
	(void)state;
	double y[20], w[20];
	struct ana_changes c;
	struct opr_error err = {0};
	series(y, w, 20, 400e3, 0.30, 12, 0.01, 7);
	assert_int_equal(ana_changepoints(y, w, 20, ANA_CP_THRESHOLD, 0, &c, &err), 0);
	assert_int_equal(c.nchanges, 1);
	assert_int_equal(c.changes[0].at, 12);
	assert_true(c.changes[0].worse);
	assert_true(c.changes[0].rel > 0.25 && c.changes[0].rel < 0.35);
	assert_int_equal(c.nsteps, 2);
	assert_int_equal(c.steps[0].right, 12);
}

static void test_cp_step_down_is_better(void **state)
{
	(void)state;
	double y[15], w[15];
	struct ana_changes c;
	struct opr_error err = {0};
	series(y, w, 15, 400e3, -0.25, 5, 0.01, 9);
	assert_int_equal(ana_changepoints(y, w, 15, ANA_CP_THRESHOLD, 0, &c, &err), 0);
	assert_int_equal(c.nchanges, 1);
	assert_int_equal(c.changes[0].at, 5);
	assert_false(c.changes[0].worse);
	assert_true(c.changes[0].rel < -0.2);
}

/* noise of +-3% and no step: nothing moved, for many seeds */
static void test_cp_noise_only(void **state)
{
	(void)state;
	double y[20], w[20];
	struct ana_changes c;
	struct opr_error err = {0};
	for (uint64_t seed = 1; seed <= 30; seed++) {
		series(y, w, 20, 250e3, 0, 0, 0.03, seed);
		assert_int_equal(ana_changepoints(y, w, 20, ANA_CP_THRESHOLD, 0, &c, &err), 0);
		if (c.nchanges)
			fail_msg("seed %llu: %zu change(s) in noise, first at %zu (%+.3f)",
				 (unsigned long long)seed, c.nchanges, c.changes[0].at, c.changes[0].rel);
	}
}

/* a single slow run in the middle that comes back is not a regression
 * (asv's short-interval rule), while the same slow run at the end is */
static void test_cp_lone_outlier(void **state)
{
	(void)state;
	double y[9] = {100, 101, 99, 100, 160, 100, 101, 99, 100}, w[9];
	struct ana_changes c;
	struct opr_error err = {0};
	for (int i = 0; i < 9; i++)
		w[i] = 2;
	assert_int_equal(ana_changepoints(y, w, 9, ANA_CP_THRESHOLD, 0, &c, &err), 0);
	for (size_t i = 0; i < c.nchanges; i++)
		assert_false(c.changes[i].worse);
	double z[3] = {100, 103, 150}, wz[3] = {2, 2, 2};
	assert_int_equal(ana_changepoints(z, wz, 3, ANA_CP_THRESHOLD, 0, &c, &err), 0);
	assert_int_equal(c.nchanges, 1);
	assert_int_equal(c.changes[0].at, 2);
	assert_true(c.changes[0].worse);
}

/* throughput: a drop is the regression */
static void test_cp_throughput(void **state)
{
	(void)state;
	double y[10], w[10];
	struct ana_changes c;
	struct opr_error err = {0};
	series(y, w, 10, 3000, -0.3, 6, 0.01, 3);
	assert_int_equal(ana_changepoints(y, w, 10, ANA_CP_THRESHOLD, 1, &c, &err), 0);
	assert_int_equal(c.nchanges, 1);
	assert_int_equal(c.changes[0].at, 6);
	assert_true(c.changes[0].worse);
	assert_true(c.changes[0].before > 2900 && c.changes[0].after < 2200);
	double bad[2] = {1, -1};
	assert_int_equal(ana_changepoints(bad, NULL, 2, ANA_CP_THRESHOLD, 0, &c, &err), OPR_EINPUT);
}

/* ---- the database ---- */

static void tmpname(char *buf, size_t n, const char *what)
{
	snprintf(buf, n, "/tmp/opreview-test-history-%ld-%s", (long)getpid(), what);
}

static void rm_db(const char *path)
{
	char p[600];
	unlink(path);
	snprintf(p, sizeof p, "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", path);
	unlink(p);
}

static void test_db_fresh_and_newer(void **state)
{
	(void)state;
	char path[512];
	tmpname(path, sizeof path, "fresh.db");
	rm_db(path);
	struct ana_history *h = NULL;
	struct opr_error err = {0};
	assert_int_equal(ana_history_open(path, &h, &err), 0);
	assert_int_equal(ana_history_schema(h), ANA_HISTORY_SCHEMA);
	ana_history_close(h);
	/* reopening changes nothing */
	assert_int_equal(ana_history_open(path, &h, &err), 0);
	assert_int_equal(ana_history_schema(h), ANA_HISTORY_SCHEMA);
	ana_history_close(h);
	/* a schema from a newer opreview is refused, not downgraded */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(ana_history_open(path, &h, &err), OPR_EINPUT);
	assert_null(h);
	assert_non_null(strstr(err.msg, "schema version 99 is newer"));
	rm_db(path);
	/* a file that is not a database */
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("not a database, just text that is long enough to look like a header page\n", fp);
	fclose(fp);
	struct opr_error e2 = {0};
	assert_int_not_equal(ana_history_open(path, &h, &e2), 0);
	assert_null(h);
	rm_db(path);
}

/* A version-1 database (as the first release wrote it) with one run is
 * migrated to the current schema and keeps its data. */
static void test_db_migrates_v1(void **state)
{
	(void)state;
	char path[512];
	tmpname(path, sizeof path, "v1.db");
	rm_db(path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	const char *v1 =
		"CREATE TABLE runs (digest TEXT PRIMARY KEY, added_utc TEXT NOT NULL, started_utc TEXT NOT NULL,"
		" profile TEXT NOT NULL, host_class TEXT NOT NULL, hostname TEXT NOT NULL, envelope TEXT NOT NULL,"
		" envelope_sha256 TEXT NOT NULL, model_revision TEXT NOT NULL, tool_version TEXT NOT NULL,"
		" verdict TEXT NOT NULL, archive TEXT NOT NULL);"
		"CREATE TABLE results (digest TEXT NOT NULL REFERENCES runs(digest), block TEXT NOT NULL,"
		" variant TEXT NOT NULL, metric TEXT NOT NULL, value REAL, lo REAL, hi REAL, unit TEXT NOT NULL,"
		" provenance TEXT NOT NULL, reason TEXT, PRIMARY KEY (digest, block, variant, metric));"
		"INSERT INTO runs VALUES ('abc', 't', '2026-01-01T00:00:00Z', 'p', 'h', 'n', 'e', 'es', 'm', '0.1.0',"
		" 'SHIP', 'a');"
		"INSERT INTO results VALUES ('abc', 'b', 'candidate', 'p95', 5.0, 4.0, 6.0, 'ns', 'measured', NULL);"
		"PRAGMA user_version = 1;";
	assert_int_equal(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct ana_history *h = NULL;
	struct opr_error err = {0};
	assert_int_equal(ana_history_open(path, &h, &err), 0);
	assert_int_equal(ana_history_schema(h), 2);
	struct ana_trend t;
	assert_int_equal(ana_history_trend(h, "ab", "b", "candidate", "p95", 10, &t, &err), 0);
	assert_int_equal(t.n, 1);
	assert_true(t.pts[0].value == 5.0 && t.pts[0].lo == 4.0 && t.pts[0].hi == 6.0);
	assert_string_equal(t.pts[0].provenance, "collected"); /* the v2 column's default */
	assert_false(t.cp_done);
	ana_trend_release(&t);
	ana_history_close(h);
	rm_db(path);
}

/* Writes a copy of the fixture archive into dir, its host samples scaled by
 * factor and its start time set, so it is another run of the same workload. */
static void write_run(const char *dir, double factor, const char *started)
{
	struct col_run *run = NULL;
	struct opr_error err = {0};
	if (col_archive_load(ARCHIVE, &run, &err))
		fail_msg("%s", err.msg);
	for (int b = 0; b < run->nblocks; b++)
		for (int v = 0; v < 2; v++) {
			struct col_variant_run *vr = &run->blocks[b].v[v];
			for (size_t i = 0; i < vr->nsamples; i++)
				vr->samples_ns[i] = (int64_t)llround((double)vr->samples_ns[i] * factor);
		}
	snprintf(run->started_utc, sizeof run->started_utc, "%s", started);
	opr_rmtree(dir); /* a previous test run's */
	if (col_archive_write(run, dir, &err))
		fail_msg("%s", err.msg);
	col_run_free(run);
}

static int add_dir(struct ana_history *h, const char *dir, int *added)
{
	struct col_run *run = NULL;
	struct ana_findings *f = NULL;
	struct opr_error err = {0};
	int rc = col_archive_load(dir, &run, &err);
	if (!rc)
		rc = ana_analyze(run, dir, &f, &err);
	if (!rc)
		rc = ana_history_add(h, dir, f, added, &err);
	if (rc)
		print_error("%s\n", err.msg);
	ana_findings_free(f);
	col_run_free(run);
	return rc;
}

static void test_db_three_runs_one_slower(void **state)
{
	(void)state;
	char path[512], d[3][512];
	tmpname(path, sizeof path, "trend.db");
	rm_db(path);
	static const double factor[3] = {1.0, 1.01, 1.40};
	static const char *const when[3] = {"2026-11-01T10:00:00Z", "2026-11-02T10:00:00Z",
					    "2026-11-03T10:00:00Z"};
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof name, "run%d", i);
		tmpname(d[i], sizeof d[i], name);
		write_run(d[i], factor[i], when[i]);
	}
	struct ana_history *h = NULL;
	struct opr_error err = {0};
	assert_int_equal(ana_history_open(path, &h, &err), 0);
	int added;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(add_dir(h, d[i], &added), 0);
		assert_int_equal(added, 1);
	}
	/* the same archive again: nothing changes */
	assert_int_equal(add_dir(h, d[1], &added), 0);
	assert_int_equal(added, 0);
	char digest[65];
	assert_int_equal(ana_archive_digest(d[2], digest, &err), 0);
	struct col_run *run = NULL;
	assert_int_equal(col_archive_load(d[2], &run, &err), 0);
	const char *block = run->blocks[0].block->name;
	struct ana_trend t;
	assert_int_equal(ana_history_trend(h, digest, block, "candidate", "p50", 20, &t, &err), 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.pts[2].digest, digest);
	assert_string_equal(t.value_provenance, "measured");
	assert_true(t.cp_done);
	assert_int_equal(t.cp.nchanges, 1);
	assert_int_equal(t.cp.changes[0].at, 2);
	assert_true(t.cp.changes[0].worse);
	assert_true(fabs(t.cp.changes[0].rel - 0.40) < 0.05);
	ana_trend_release(&t);
	/* throughput moves the other way, and is still a regression */
	assert_int_equal(ana_history_trend(h, digest, block, "candidate", "throughput", 20, &t, &err), 0);
	assert_int_equal(t.n, 3);
	assert_true(t.higher_is_better);
	assert_int_equal(t.cp.nchanges, 1);
	assert_true(t.cp.changes[0].worse && t.cp.changes[0].rel < -0.2);
	ana_trend_release(&t);
	/* --last 2 keeps the newest two, oldest first */
	assert_int_equal(ana_history_trend(h, digest, block, "candidate", "p50", 2, &t, &err), 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.pts[1].digest, digest);
	assert_false(t.cp_done);
	ana_trend_release(&t);
	col_run_free(run);
	ana_history_close(h);
	for (int i = 0; i < 3; i++)
		opr_rmtree(d[i]);
	rm_db(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cp_step_up),
		cmocka_unit_test(test_cp_step_down_is_better),
		cmocka_unit_test(test_cp_noise_only),
		cmocka_unit_test(test_cp_lone_outlier),
		cmocka_unit_test(test_cp_throughput),
		cmocka_unit_test(test_db_fresh_and_newer),
		cmocka_unit_test(test_db_migrates_v1),
		cmocka_unit_test(test_db_three_runs_one_slower),
	};
	return cmocka_run_group_tests_name("history", tests, NULL, NULL);
}
