/* tests/test_xlsx.c: packet.xlsx from the findings fixture: byte-reproducible,
 * the zip's sheets and charts, values read back by openpyxl (tests/xlsx_check.py),
 * golden Summary and Validation sheet XML, samples on seeded data, and errors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../report/report.h"

#define FINDINGS "fixtures/findings/xlsx-test.json"
#define SAMPLES "fixtures/findings/samples-test.csv"
#define GOLDEN_DIR "fixtures/golden/xlsx"
#define CREATED ((time_t)1700000000) /* 2023-11-14T22:13:20Z */
#define PYTHON "/usr/bin/python3"

struct state {
	char dir[64];
	json_t *findings;
	char *csv;
};

static char *read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	size_t cap = 4096, n = 0, k;
	char *s = malloc(cap + 1);
	while (s && (k = fread(s + n, 1, cap - n, fp)) > 0) {
		n += k;
		if (n == cap) {
			char *t = realloc(s, 2 * cap + 1);
			if (!t) {
				free(s);
				s = NULL;
				break;
			}
			s = t;
			cap *= 2;
		}
	}
	fclose(fp);
	if (s)
		s[n] = '\0';
	if (len)
		*len = n;
	return s;
}

/* Output of a shell command (the caller frees it); *status its exit status
 * when status is not NULL. */
static char *run_status(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, n = 0, k;
	char *s = malloc(cap + 1);
	assert_non_null(s);
	while ((k = fread(s + n, 1, cap - n, p)) > 0) {
		n += k;
		if (n == cap) {
			s = realloc(s, 2 * cap + 1);
			assert_non_null(s);
			cap *= 2;
		}
	}
	int rc = pclose(p);
	if (status)
		*status = rc;
	s[n] = '\0';
	return s;
}

static char *run(const char *cmd)
{
	return run_status(cmd, NULL);
}

static void in_dir(const struct state *st, const char *name, char *path, size_t size)
{
	assert_true(snprintf(path, size, "%s/%s", st->dir, name) < (int)size);
}

static void build(const struct state *st, const char *name, time_t created, char *path, size_t size)
{
	struct opr_error err = {0};
	in_dir(st, name, path, size);
	FILE *fp = fopen(path, "w"); /* poison: a stale file must be replaced */
	assert_non_null(fp);
	fputs("poison", fp);
	fclose(fp);
	int rc = rep_xlsx(st->findings, st->csv, path, created, &err);
	if (rc)
		fail_msg("rep_xlsx: %s", err.msg);
	size_t len;
	char *data = read_all(path, &len);
	assert_non_null(data);
	assert_true(len > 1000);
	assert_memory_equal(data, "PK\x03\x04", 4);
	free(data);
}

static int setup(void **state)
{
	struct state *st = calloc(1, sizeof *st);
	if (!st)
		return -1;
	snprintf(st->dir, sizeof st->dir, "/tmp/opreview-xlsx-XXXXXX");
	json_error_t je;
	st->findings = json_load_file(FINDINGS, JSON_REJECT_DUPLICATES, &je);
	st->csv = read_all(SAMPLES, NULL);
	if (!mkdtemp(st->dir) || !st->findings || !st->csv) {
		free(st->csv);
		json_decref(st->findings);
		free(st);
		return -1;
	}
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct state *st = *state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", st->dir);
	int rc = system(cmd);
	json_decref(st->findings);
	free(st->csv);
	free(st);
	return rc ? -1 : 0;
}

/* Same inputs and created time: identical bytes; another time: not. */
static void test_reproducible(void **state)
{
	const struct state *st = *state;
	char a[128], b[128], c[128], cmd[512];
	build(st, "a.xlsx", CREATED, a, sizeof a);
	build(st, "b.xlsx", CREATED, b, sizeof b);
	build(st, "c.xlsx", CREATED + 1, c, sizeof c);
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, c);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "unzip -p '%s' docProps/core.xml", a);
	char *core = run(cmd);
	assert_non_null(strstr(core, "2023-11-14T22:13:20Z"));
	assert_non_null(strstr(core, "HOLD")); /* the verdict is the subject */
	free(core);
}

static int count(const char *s, const char *needle)
{
	int n = 0;
	for (; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

/* The zip holds the nine sheets and the charts: one latency chart per block,
 * one queue-wait histogram per block and variant, fusion and roofline. */
static void test_zip_entries(void **state)
{
	const struct state *st = *state;
	char path[128], cmd[512];
	build(st, "z.xlsx", CREATED, path, sizeof path);
	snprintf(cmd, sizeof cmd, "unzip -Z1 '%s'", path);
	char *list = run(cmd);
	for (int i = 1; i <= 9; i++) {
		char name[64];
		snprintf(name, sizeof name, "xl/worksheets/sheet%d.xml\n", i);
		if (!strstr(list, name))
			fail_msg("missing %s in:\n%s", name, list);
	}
	assert_null(strstr(list, "sheet10.xml"));
	size_t nb = json_array_size(json_object_get(st->findings, "blocks"));
	assert_int_equal(nb, 2);
	assert_int_equal(count(list, "xl/charts/chart"), (int)(nb + 2 * nb + 2));
	free(list);
	/* stored values only: no formula in any sheet */
	snprintf(cmd, sizeof cmd, "unzip -p '%s' 'xl/worksheets/*.xml'", path);
	char *xml = run(cmd);
	assert_true(strlen(xml) > 10000);
	assert_null(strstr(xml, "<f>"));
	free(xml);
}

/* openpyxl reads the values back (tests/xlsx_check.py). */
static void test_openpyxl(void **state)
{
	const struct state *st = *state;
	if (access(PYTHON, X_OK) != 0)
		skip(); /* no /usr/bin/python3 */
	if (system(PYTHON " -c 'import openpyxl' 2>/dev/null") != 0)
		skip(); /* python3-openpyxl is not installed */
	char path[128], cmd[512];
	build(st, "o.xlsx", CREATED, path, sizeof path);
	snprintf(cmd, sizeof cmd, PYTHON " tests/xlsx_check.py '%s' " FINDINGS " " SAMPLES, path);
	int rc;
	char *out = run_status(cmd, &rc);
	if (rc)
		fail_msg("xlsx_check.py failed:\n%s", out);
	free(out);
}

/* The shared strings of the workbook, in index order: *n pointers into *buf
 * (the caller frees both). */
static char **load_sst(const char *xlsx, size_t *n, char **buf)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "unzip -p '%s' xl/sharedStrings.xml", xlsx);
	*buf = run(cmd);
	size_t cap = 1024;
	char **v = malloc(cap * sizeof *v), *p = *buf;
	assert_non_null(v);
	*n = 0;
	while ((p = strstr(p, "<si><t"))) {
		char *t = strchr(p, '>');
		t = strchr(t + 1, '>') + 1;
		char *end = strstr(t, "</t>");
		assert_non_null(end);
		*end = '\0';
		if (*n == cap) {
			v = realloc(v, 2 * cap * sizeof *v);
			assert_non_null(v);
			cap *= 2;
		}
		v[(*n)++] = t;
		p = end + 1;
	}
	return v;
}

/* XML split one tag a line, so that a difference shows as a readable unified
 * diff; a shared-string cell's value is followed by its text, so that a
 * change of wording shows too. */
static char *golden_text(const char *xml, char **sst, size_t nsst)
{
	size_t n = strlen(xml), cap = 4 * n + 64, len = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	int shared = 0;
	for (size_t i = 0; i < n; i++) {
		if (len + 3 > cap) {
			s = realloc(s, cap *= 2);
			assert_non_null(s);
		}
		s[len++] = xml[i];
		if (xml[i] != '>')
			continue;
		if (i >= 3 && !strncmp(xml + i - 3, "</v>", 4) && shared) {
			const char *v = xml + i - 3;
			while (v > xml && *v != '>')
				v--;
			long k = strtol(v + 1, NULL, 10);
			assert_true(k >= 0 && (size_t)k < nsst);
			size_t tl = strlen(sst[k]) + 4;
			while (len + tl + 3 > cap) {
				s = realloc(s, cap *= 2);
				assert_non_null(s);
			}
			len += (size_t)snprintf(s + len, cap - len, " \"%s\"", sst[k]);
			shared = 0;
		}
		if (i >= 5 && !strncmp(xml + i - 5, "t=\"s\">", 6))
			shared = 1;
		if (xml[i + 1] == '<')
			s[len++] = '\n';
	}
	s[len++] = '\n';
	s[len] = '\0';
	return s;
}

static void golden_one(const struct state *st, const char *xlsx, const char *entry, const char *name)
{
	char cmd[640], golden[256], actual[256];
	snprintf(cmd, sizeof cmd, "unzip -p '%s' %s", xlsx, entry);
	char *raw = run(cmd);
	assert_true(strlen(raw) > 100);
	size_t nsst;
	char *sbuf, **sst = load_sst(xlsx, &nsst, &sbuf);
	char *xml = golden_text(raw, sst, nsst);
	free(raw);
	free(sst);
	free(sbuf);
	snprintf(golden, sizeof golden, GOLDEN_DIR "/%s", name);
	const char *mode = getenv("OPREVIEW_GOLDEN");
	if (mode && !strcmp(mode, "regenerate")) {
		FILE *fp = fopen(golden, "w");
		assert_non_null(fp);
		fputs(xml, fp);
		assert_int_equal(fclose(fp), 0);
	}
	char *want = read_all(golden, NULL);
	if (!want)
		fail_msg("missing %s (OPREVIEW_GOLDEN=regenerate writes it)", golden);
	if (strcmp(want, xml)) {
		in_dir(st, name, actual, sizeof actual);
		FILE *fp = fopen(actual, "w");
		assert_non_null(fp);
		fputs(xml, fp);
		fclose(fp);
		snprintf(cmd, sizeof cmd, "diff -u '%s' '%s' | head -60", golden, actual);
		char *diff = run(cmd);
		fail_msg("%s differs from %s:\n%s", entry, golden, diff);
	}
	free(want);
	free(xml);
}

static void test_golden(void **state)
{
	const struct state *st = *state;
	char path[128];
	build(st, "g.xlsx", CREATED, path, sizeof path);
	golden_one(st, path, "xl/worksheets/sheet1.xml", "summary.xml");
	golden_one(st, path, "xl/worksheets/sheet4.xml", "validation.xml");
}

/* xorshift64*: seeded samples independent of libc's rand */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* Seeded random samples: every row lands in the Samples sheet (sheet6.xml),
 * in order; without samples.csv the sheet has the header only. */
static void test_samples(void **state)
{
	struct state *st = *state;
	enum { N = 700 };
	uint64_t seed = 0x9E3779B97F4A7C15ULL;
	size_t cap = 64 * (N + 1);
	char *csv = malloc(cap), *o = csv;
	long ns[N];
	assert_non_null(csv);
	o += snprintf(o, cap, "block,variant,round,ns\r\n"); /* CRLF is accepted */
	for (int i = 0; i < N; i++) {
		ns[i] = 1000 + (long)(next(&seed) % 5000000);
		o += snprintf(o, cap - (size_t)(o - csv), "blk-%d,%s,%d,%ld\n", i % 3,
			      i % 2 ? "candidate" : "baseline", i / 10, ns[i]);
	}
	char *saved = st->csv, path[128], cmd[512];
	st->csv = csv;
	build(st, "s.xlsx", CREATED, path, sizeof path);
	st->csv = saved;
	snprintf(cmd, sizeof cmd, "unzip -p '%s' xl/worksheets/sheet6.xml", path);
	char *xml = run(cmd);
	assert_int_equal(count(xml, "<row "), N + 1);
	const char *p = xml;
	for (int i = 0; i < N; i++) {
		char cell[80];
		snprintf(cell, sizeof cell, "<c r=\"D%d\" s=", i + 2);
		p = strstr(p, cell);
		assert_non_null(p);
		snprintf(cell, sizeof cell, "<v>%ld</v>", ns[i]);
		const char *v = strstr(p, "<v>");
		assert_non_null(v);
		assert_memory_equal(v, cell, strlen(cell));
	}
	assert_non_null(strstr(xml, "<autoFilter ref=\"A1:D701\"/>"));
	free(xml);
	free(csv);

	struct opr_error err = {0};
	in_dir(st, "empty.xlsx", path, sizeof path);
	assert_int_equal(rep_xlsx(st->findings, NULL, path, CREATED, &err), 0);
	snprintf(cmd, sizeof cmd, "unzip -p '%s' xl/worksheets/sheet6.xml", path);
	xml = run(cmd);
	assert_int_equal(count(xml, "<row "), 1);
	free(xml);
}

/* Text is stored as text: markup escaped, a leading '=' is not a formula,
 * a cell longer than Excel's 32767 characters is cut on a character boundary. */
static void test_strings(void **state)
{
	struct state *st = *state;
	json_t *saved = st->findings, *f = json_deep_copy(saved);
	size_t n = 40000;
	char *long_text = malloc(2 * n + 1);
	assert_non_null(long_text);
	for (size_t i = 0; i < n; i++)
		memcpy(long_text + 2 * i, "\xC3\xA9", 2); /* U+00E9, 2 bytes */
	long_text[2 * n] = '\0';
	json_object_set_new(f, "reasons", json_pack("[s,s,s]", "a<b & c>d", "=1+1", long_text));
	free(long_text);
	st->findings = f;
	char path[128], cmd[512];
	build(st, "t.xlsx", CREATED, path, sizeof path);
	st->findings = saved;
	json_decref(f);
	size_t nsst;
	char *sbuf, **sst = load_sst(path, &nsst, &sbuf);
	int seen = 0;
	for (size_t i = 0; i < nsst; i++) {
		if (!strcmp(sst[i], "a&lt;b &amp; c&gt;d") || !strcmp(sst[i], "=1+1"))
			seen++;
		if (!strncmp(sst[i], "\xC3\xA9", 2)) {
			assert_int_equal(strlen(sst[i]), 2 * 32767);
			seen++;
		}
	}
	assert_int_equal(seen, 3);
	free(sst);
	free(sbuf);
	snprintf(cmd, sizeof cmd, "unzip -p '%s' xl/worksheets/sheet1.xml", path);
	char *xml = run(cmd);
	assert_null(strstr(xml, "<f>"));
	free(xml);
}

static void expect_error(const struct state *st, json_t *f, const char *csv, const char *path,
			 int code, const char *msg, int line)
{
	struct opr_error err = {0};
	assert_int_equal(rep_xlsx(f, csv, path, CREATED, &err), code);
	assert_int_equal(err.code, code);
	if (!strstr(err.msg, msg))
		fail_msg("message '%s' lacks '%s'", err.msg, msg);
	assert_int_equal(err.line, line);
	(void)st;
}

static void test_errors(void **state)
{
	const struct state *st = *state;
	char path[128], missing[160];
	in_dir(st, "err.xlsx", path, sizeof path);
	snprintf(missing, sizeof missing, "%s/no-such-dir/p.xlsx", st->dir);
	expect_error(st, st->findings, st->csv, missing, OPR_EIO, "cannot create workbook", 0);
	expect_error(st, st->findings, st->csv, missing, OPR_EIO, "No such file or directory", 0);

	json_t *arr = json_array();
	expect_error(st, arr, st->csv, path, OPR_EINPUT, "expected an object", 0);
	json_decref(arr);
	json_t *v2 = json_deep_copy(st->findings);
	json_object_set_new(v2, "findings_version", json_integer(2));
	expect_error(st, v2, st->csv, path, OPR_EINPUT, "findings_version", 0);
	json_decref(v2);

	expect_error(st, st->findings, "round,ns\n1,2\n", path, OPR_EINPUT, "expected header", 1);
	expect_error(st, st->findings, "block,variant,round,ns\nb,baseline,0,10\nb,baseline,1,x\n", path,
		     OPR_EINPUT, "sample 'x'", 3);
	expect_error(st, st->findings, "block,variant,round,ns\nb,baseline,-1,10\n", path, OPR_EINPUT,
		     "round '-1'", 2);
	expect_error(st, st->findings, "block,variant,round,ns\nb,baseline,1\n", path, OPR_EINPUT,
		     "expected 4 fields", 2);
	expect_error(st, st->findings, "block,variant,round,ns\nb,baseline,1,2,3\n", path, OPR_EINPUT,
		     "expected 4 fields", 2);
	assert_int_not_equal(access(path, F_OK), 0); /* nothing written on bad input */
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -A '%s'", st->dir);
	char *left = run(cmd);
	assert_null(strstr(left, "err.xlsx")); /* nor a temporary file left behind */
	free(left);

	/* a findings tree with nothing but the version still gives nine sheets */
	json_t *bare = json_pack("{s:i}", "findings_version", 1);
	struct opr_error err = {0};
	assert_int_equal(rep_xlsx(bare, NULL, path, CREATED, &err), 0);
	json_decref(bare);
	snprintf(cmd, sizeof cmd, "unzip -Z1 '%s'", path);
	char *list = run(cmd);
	assert_int_equal(count(list, "xl/worksheets/sheet"), 9);
	assert_int_equal(count(list, "xl/charts/chart"), 0); /* no blocks, no charts */
	free(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reproducible), cmocka_unit_test(test_zip_entries),
		cmocka_unit_test(test_openpyxl),     cmocka_unit_test(test_golden),
		cmocka_unit_test(test_samples),      cmocka_unit_test(test_strings),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests_name("xlsx", tests, setup, teardown);
}
