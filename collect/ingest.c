/* collect/ingest.c: measurements taken outside opreview as a run: Google
 * Benchmark JSON and Nsight Compute raw CSV. Neither source knows an operator
 * group, shape, plan or device model, so the run's profile is imported
 * (profile.h): one block whose baseline and candidate are two of the source's
 * benchmarks or kernels, each repetition or profiled launch one sample
 * (integer ns), the source's counters kept per sample with provenance
 * "imported". What a source does not say is recorded as unavailable with the
 * reason, never as 0. */
#include "collect.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SOURCE (64u << 20) /* bytes of one source file */

/* The source being read: where errors point. */
struct src {
	const char *path;
	const char *text;
	size_t len;
	struct opr_error *err;
};

static void line_col(const struct src *s, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && i < s->len; i++) {
		if (s->text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)s->text[i] & 0xc0) != 0x80) {
			(*col)++; /* columns count characters, not UTF-8 continuation bytes */
		}
	}
}

static int bad(const struct src *s, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(const struct src *s, size_t off, const char *fmt, ...)
{
	char msg[600];
	int line, col;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	line_col(s, off, &line, &col);
	return opr_error_at(s->err, OPR_EINPUT, s->path, line, col, "%s", msg);
}

/* ---- samples and counters of a variant ---------------------------------------- */

struct acc {
	size_t cap;
	/* per counter: sum over the samples that had it, and how many had it */
	double sum[COL_MAX_EXT_COUNTERS];
	size_t had[COL_MAX_EXT_COUNTERS];
};

static int add_sample(struct col_variant_run *vr, struct acc *a, int64_t ns, int32_t round,
		      struct opr_error *err)
{
	if (vr->nsamples == a->cap) {
		size_t nc = a->cap ? 2 * a->cap : 64;
		int64_t *s = realloc(vr->samples_ns, nc * sizeof *s);
		if (s)
			vr->samples_ns = s;
		int32_t *r = s ? realloc(vr->round, nc * sizeof *r) : NULL;
		if (!r)
			return opr_error_set(err, OPR_ENOMEM, "out of memory reading samples");
		vr->round = r;
		a->cap = nc;
	}
	vr->samples_ns[vr->nsamples] = ns;
	vr->round[vr->nsamples] = round;
	vr->nsamples++;
	return 0;
}

/* The counter named name of vr (added, unavailable, when new): its index, or
 * -1 when the table is full. */
static int ext_slot(struct col_variant_run *vr, const char *name, const char *unit)
{
	for (int i = 0; i < vr->next; i++)
		if (!strcmp(vr->ext[i].name, name))
			return i;
	if (vr->next == COL_MAX_EXT_COUNTERS)
		return -1;
	struct col_ext_counter *c = &vr->ext[vr->next];
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->unit, sizeof c->unit, "%s", unit);
	return vr->next++;
}

static void add_counter(struct col_variant_run *vr, struct acc *a, const char *name,
			const char *unit, double value)
{
	int i = ext_slot(vr, name, unit);
	if (i >= 0 && isfinite(value)) {
		a->sum[i] += value;
		a->had[i]++;
	}
}

/* Each counter's value per sample: the mean over the samples that had it. */
static void finish_counters(struct col_variant_run *vr, const struct acc *a, const char *absent)
{
	for (int i = 0; i < vr->next; i++) {
		struct col_ext_counter *c = &vr->ext[i];
		c->available = a->had[i] > 0;
		c->value = c->available ? a->sum[i] / (double)a->had[i] : 0;
		if (!c->available)
			snprintf(c->reason, sizeof c->reason, "%s", absent);
		else if (a->had[i] < vr->nsamples)
			snprintf(c->reason, sizeof c->reason, "mean over the %zu of %zu samples that had it",
				 a->had[i], vr->nsamples);
	}
}

/* ---- the run around the samples ------------------------------------------------ */

/* A YAML double-quoted scalar of s; -1 when s holds a control character. */
static int yaml_quote(const char *s, char *buf, size_t n)
{
	size_t j = 0;
	if (n < 3)
		return -1;
	buf[j++] = '"';
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return -1;
		if ((*s == '"' || *s == '\\') && j + 1 < n - 2)
			buf[j++] = '\\';
		if (j >= n - 2)
			return -1;
		buf[j++] = *s;
	}
	buf[j++] = '"';
	buf[j] = '\0';
	return 0;
}

/* The imported profile: the source format, the block and its two sources, the
 * SLA when given; parsed like any profile, so an archive reads it back. */
static int make_profile(const struct col_ingest_options *o, struct col_profile **out,
			struct opr_error *err)
{
	char text[8192], base[600], cand[600], rev[600];
	const char *name = o->name ? o->name : o->format;
	if (yaml_quote(o->baseline, base, sizeof base) || yaml_quote(o->candidate, cand, sizeof cand) ||
	    yaml_quote(o->model_revision ? o->model_revision : "unknown", rev, sizeof rev))
		return opr_error_set(err, OPR_EUSAGE, "ingest: a name holds a control character or "
				     "is too long");
	int n = snprintf(text, sizeof text,
			 "# Imported by opreview ingest (%s): measurements taken outside opreview,\n"
			 "# so no group, shape, plan or device model.\n"
			 "version: 1\nname: %s%s\nseed: 0\nmodel_revision: %s\nimported: %s\n",
			 o->format, o->name ? "" : "imported-", name, rev, o->format);
	if (isfinite(o->sla_p95_us))
		n += snprintf(text + n, sizeof text - (size_t)n,
			      "sla: {p95_us: %.17g, p99_us: %.17g, min_throughput_rps: %.17g}\n",
			      o->sla_p95_us, o->sla_p99_us, o->min_throughput_rps);
	if (o->owners_from) {
		/* the owners of another profile, their keys made absolute: the archive
		 * is not beside that profile */
		struct col_profile *op = NULL;
		int rc = col_profile_load(o->owners_from, NULL, &op, err);
		if (rc)
			return rc;
		char dir[PATH_MAX], from[PATH_MAX], key[PATH_MAX + 300], q[3][700];
		snprintf(from, sizeof from, "%s", o->owners_from);
		if (!realpath(dirname(from), dir))
			snprintf(dir, sizeof dir, ".");
		n += snprintf(text + n, sizeof text - (size_t)n, "owners:\n");
		for (int i = 0; i < op->nowners && n < (int)sizeof text; i++) {
			snprintf(key, sizeof key, "%s%s%s", op->owners[i].key[0] == '/' ? "" : dir,
				 op->owners[i].key[0] == '/' ? "" : "/", op->owners[i].key);
			if (yaml_quote(op->owners[i].role, q[0], sizeof q[0]) ||
			    yaml_quote(op->owners[i].name, q[1], sizeof q[1]) ||
			    yaml_quote(key, q[2], sizeof q[2]))
				continue; /* parsed names hold no control characters */
			n += snprintf(text + n, sizeof text - (size_t)n, "  - {role: %s, name: %s, key: %s}\n",
				      q[0], q[1], q[2]);
		}
		col_profile_free(op);
	}
	n += snprintf(text + n, sizeof text - (size_t)n,
		      "blocks:\n  - name: %s\n    baseline: %s\n    candidate: %s\n",
		      o->block ? o->block : "imported", base, cand);
	if (o->production) {
		char tr[700];
		if (yaml_quote(o->production, tr, sizeof tr))
			return opr_error_set(err, OPR_EUSAGE, "ingest: --production holds a control "
					     "character or is too long");
		n += snprintf(text + n, sizeof text - (size_t)n, "    shape_origin: {production: %s}\n", tr);
	}
	if (n >= (int)sizeof text)
		return opr_error_set(err, OPR_EUSAGE, "ingest: the names are too long");
	/* the names given on the command line are what a bad name points at */
	return col_profile_from_text("ingest", text, (size_t)n, out, err);
}

static void utc_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* What the source cannot say about the host: unavailable with the reason. */
static void host_unknown(struct col_host *h, const char *what)
{
	struct col_host me;
	col_host_detect(&me);
	memset(h, 0, sizeof *h);
	snprintf(h->cpu_model, sizeof h->cpu_model, "unavailable: %s does not name it", what);
	snprintf(h->caches, sizeof h->caches, "unavailable: %s does not give them", what);
	snprintf(h->kernel, sizeof h->kernel, "unavailable: %s does not name it", what);
	snprintf(h->governor, sizeof h->governor, "unavailable: %s does not give it", what);
	snprintf(h->compiler, sizeof h->compiler, "unavailable: %s does not name it", what);
	snprintf(h->cflags, sizeof h->cflags, "unavailable: %s does not give them", what);
	snprintf(h->versions, sizeof h->versions, "ingested by opreview %s", me.tool_version);
	snprintf(h->tool_version, sizeof h->tool_version, "%s", me.tool_version);
	snprintf(h->git_revision, sizeof h->git_revision, "%s", me.git_revision);
	snprintf(h->hostname, sizeof h->hostname, "unavailable: %s does not name it", what);
}

static void run_defaults(struct col_run *run, const struct col_ingest_options *o,
			 const char *what)
{
	snprintf(run->profile_origin, sizeof run->profile_origin, "%s", o->path);
	host_unknown(&run->host, what);
	utc_now(run->started_utc, sizeof run->started_utc);
	snprintf(run->papi_status, sizeof run->papi_status,
		 "unavailable: imported from %s; opreview read no counters itself", what);
	run->clock_read_ns = run->papi_read_ns = NAN;
	run->sampling_seconds = NAN;
	run->hc_recorded = 1;
	for (int c = 0; c < COL_NHC; c++) {
		snprintf(run->hc[c].name, sizeof run->hc[c].name, "%s", col_hc_name(c));
		snprintf(run->hc[c].source, sizeof run->hc[c].source, "none");
		snprintf(run->hc[c].reason, sizeof run->hc[c].reason,
			 "unavailable: imported from %s, which does not report it", what);
	}
	run->nblocks = 1;
	run->blocks[0].block = &run->profile->blocks[0];
	run->blocks[0].reps_per_round = 1;
	snprintf(run->import.format, sizeof run->import.format, "%s", o->format);
	snprintf(run->import.path, sizeof run->import.path, "%s", o->path);
}

/* Both variants have samples, or the error names what the source holds. */
static int check_found(const struct src *s, struct col_run *run, const char *kind,
		       const char *names)
{
	struct col_block_run *br = &run->blocks[0];
	for (int v = 0; v < 2; v++)
		if (!br->v[v].nsamples)
			return bad(s, 0, "no %s named '%s' (the %s) in the file; it holds: %s", kind,
				   br->block->source[v], col_variant_name(v), names);
	size_t n0 = br->v[0].nsamples, n1 = br->v[1].nsamples;
	int rounds = 0;
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < br->v[v].nsamples; i++)
			if (br->v[v].round[i] + 1 > rounds)
				rounds = br->v[v].round[i] + 1;
	br->nrounds = rounds;
	snprintf(br->stop_reason, sizeof br->stop_reason,
		 "imported: %zu baseline and %zu candidate %s", n0, n1,
		 strcmp(kind, "kernel") ? "repetitions" : "profiled launches");
	return 0;
}

static void add_name(char *list, size_t n, const char *name)
{
	size_t used = strlen(list);
	if (strstr(list, name) || used + strlen(name) + 8 >= n)
		return;
	snprintf(list + used, n - used, "%s'%s'", used ? ", " : "", name);
}

/* ---- Google Benchmark JSON ---------------------------------------------------------
 * {"context": {...}, "benchmarks": [{"name", "run_name", "run_type": "iteration" |
 * "aggregate", "repetition_index", "iterations", "real_time", "cpu_time",
 * "time_unit": "ns" | "us" | "ms" | "s", user counters...}, ...]}; real_time is
 * per iteration already. jansson keeps no positions, so a small scanner over the
 * (already valid) text finds where an element or a key starts. */

static size_t ws(const struct src *s, size_t i)
{
	while (i < s->len && strchr(" \t\r\n", s->text[i]))
		i++;
	return i;
}

static size_t skip_str(const struct src *s, size_t i)
{
	for (i++; i < s->len && s->text[i] != '"'; i++)
		if (s->text[i] == '\\')
			i++;
	return i + 1;
}

static size_t skip_val(const struct src *s, size_t i)
{
	int depth = 0;
	do {
		if (i >= s->len)
			return s->len;
		char ch = s->text[i];
		if (ch == '"') {
			i = skip_str(s, i);
			continue;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']')
			depth--;
		else if (!depth && (ch == ',' || strchr(" \t\r\n", ch)))
			return i;
		i++;
	} while (depth > 0);
	return i;
}

/* The offset of key's value in the object at off, or off when absent. */
static size_t key_at(const struct src *s, size_t off, const char *key)
{
	size_t i = ws(s, off), kl = strlen(key);
	if (i >= s->len || s->text[i] != '{')
		return off;
	for (i = ws(s, i + 1); i < s->len && s->text[i] == '"';) {
		size_t k = i + 1, e = skip_str(s, i);
		int match = e - k - 1 == kl && !memcmp(s->text + k, key, kl);
		i = ws(s, ws(s, e) + 1); /* past ':' */
		if (match)
			return i;
		i = ws(s, skip_val(s, i));
		if (i < s->len && s->text[i] == ',')
			i = ws(s, i + 1);
	}
	return off;
}

/* The offset of element idx of the array at off, or off. */
static size_t elem_at(const struct src *s, size_t off, size_t idx)
{
	size_t i = ws(s, off);
	if (i >= s->len || s->text[i] != '[')
		return off;
	i = ws(s, i + 1);
	for (size_t k = 0; k < idx && i < s->len; k++) {
		i = ws(s, skip_val(s, i));
		if (i < s->len && s->text[i] == ',')
			i = ws(s, i + 1);
	}
	return i;
}

static double unit_ns(const char *u)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (!strcmp(u, units[i].name))
			return units[i].ns;
	return NAN;
}

/* Keys of a benchmark entry that are not user counters. */
static int gbench_known_key(const char *k)
{
	static const char *const known[] = {"name", "family_index", "per_family_instance_index",
		"run_name", "run_type", "repetitions", "repetition_index", "threads", "iterations",
		"real_time", "cpu_time", "time_unit", "aggregate_name", "aggregate_unit",
		"error_occurred", "error_message", "label", NULL};
	for (int i = 0; known[i]; i++)
		if (!strcmp(k, known[i]))
			return 1;
	return 0;
}

static int gbench_entry(const struct src *s, size_t at, json_t *b, struct col_run *run,
			struct acc acc[2], int32_t seen[2], char *names, size_t names_len)
{
	struct col_block_run *br = &run->blocks[0];
	json_t *v;
	if (!json_is_object(b))
		return bad(s, at, "a benchmark must be an object");
	json_t *name = json_object_get(b, "name");
	if (!json_is_string(name))
		return bad(s, key_at(s, at, "name"), "a benchmark needs a string 'name'");
	const char *rt = json_string_value(json_object_get(b, "run_type"));
	if (rt && strcmp(rt, "iteration"))
		return 0; /* mean, median, stddev, cv: summaries of the samples, not samples */
	json_t *rn = json_object_get(b, "run_name");
	const char *bn = json_is_string(rn) ? json_string_value(rn) : json_string_value(name);
	add_name(names, names_len, bn);
	int which = !strcmp(bn, br->block->source[0]) ? 0 : !strcmp(bn, br->block->source[1]) ? 1 : -1;
	if (which < 0)
		return 0;
	if (json_is_true(json_object_get(b, "error_occurred"))) {
		const char *m = json_string_value(json_object_get(b, "error_message"));
		return bad(s, key_at(s, at, "error_occurred"), "benchmark '%s' reported an error: %s",
			   bn, m ? m : "(no message)");
	}
	const char *unit = "ns";
	if ((v = json_object_get(b, "time_unit"))) {
		if (!json_is_string(v) || !isfinite(unit_ns(json_string_value(v))))
			return bad(s, key_at(s, at, "time_unit"), "'time_unit' must be ns, us, ms or s");
		unit = json_string_value(v);
	}
	v = json_object_get(b, "real_time");
	if (!json_is_number(v) || !(json_number_value(v) >= 0))
		return bad(s, key_at(s, at, "real_time"), "benchmark '%s' needs a 'real_time' >= 0", bn);
	double ns = json_number_value(v) * unit_ns(unit);
	if (ns > 9e18)
		return bad(s, key_at(s, at, "real_time"), "'real_time' %g %s is out of range",
			   json_number_value(v), unit);
	v = json_object_get(b, "iterations");
	if (!json_is_integer(v) || json_integer_value(v) < 1)
		return bad(s, key_at(s, at, "iterations"), "benchmark '%s' needs 'iterations' >= 1", bn);
	int32_t round = seen[which];
	if ((v = json_object_get(b, "repetition_index"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
			return bad(s, key_at(s, at, "repetition_index"),
				   "'repetition_index' must be an integer >= 0");
		round = (int32_t)json_integer_value(v);
	}
	seen[which]++;
	struct col_variant_run *vr = &br->v[which];
	int rc = add_sample(vr, &acc[which], llround(ns), round, s->err);
	if (rc)
		return rc;
	if ((v = json_object_get(b, "cpu_time")) && json_is_number(v))
		add_counter(vr, &acc[which], "cpu_time", "ns", json_number_value(v) * unit_ns(unit));
	const char *k;
	json_object_foreach(b, k, v)
		if (!gbench_known_key(k) && json_is_number(v))
			add_counter(vr, &acc[which], k,
				    strstr(k, "bytes_per_second") ? "B/s"
				    : strstr(k, "items_per_second") ? "1/s" : "", json_number_value(v));
	return 0;
}

static void gbench_context(json_t *ctx, struct col_run *run)
{
	struct col_host *h = &run->host;
	const char *sv;
	json_t *v;
	if ((sv = json_string_value(json_object_get(ctx, "host_name"))))
		snprintf(h->hostname, sizeof h->hostname, "%s", sv);
	if (json_is_integer(v = json_object_get(ctx, "num_cpus")))
		h->cpus_online = (int)json_integer_value(v);
	if (json_is_boolean(v = json_object_get(ctx, "cpu_scaling_enabled")))
		snprintf(h->governor, sizeof h->governor, "CPU scaling %s (as Google Benchmark saw it)",
			 json_is_true(v) ? "enabled" : "disabled");
	json_t *caches = json_object_get(ctx, "caches");
	size_t used = 0;
	for (size_t i = 0; i < json_array_size(caches) && used < sizeof h->caches; i++) {
		json_t *c = json_array_get(caches, i);
		json_t *lv = json_object_get(c, "level"), *sz = json_object_get(c, "size");
		const char *ty = json_string_value(json_object_get(c, "type"));
		if (!json_is_integer(lv) || !json_is_integer(sz) || !ty)
			continue;
		if (!used)
			h->caches[0] = '\0';
		used += (size_t)snprintf(h->caches + used, sizeof h->caches - used, "%sL%lld %s %lldK",
					 used ? ", " : "", (long long)json_integer_value(lv), ty,
					 (long long)json_integer_value(sz) / 1024);
	}
	const char *ver = json_string_value(json_object_get(ctx, "library_version"));
	const char *build = json_string_value(json_object_get(ctx, "library_build_type"));
	snprintf(run->import.tool, sizeof run->import.tool, "Google Benchmark%s%s%s%s%s",
		 ver ? " " : "", ver ? ver : "", build ? " (" : "", build ? build : "", build ? " build)" : "");
	const char *exe = json_string_value(json_object_get(ctx, "executable"));
	if (exe)
		snprintf(run->import.device, sizeof run->import.device, "host CPU (executable %s)", exe);
	/* the measurement's date, "2026-12-01T20:40:00+00:00": in UTC */
	const char *date = json_string_value(json_object_get(ctx, "date"));
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	char *end = date ? strptime(date, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	int sign = 0, oh = 0, om = 0;
	if (end && (sscanf(end, "%1[+-]", (char[2]){0}) == 1)) {
		sign = *end == '-' ? -1 : 1;
		if (sscanf(end + 1, "%2d:%2d", &oh, &om) != 2)
			end = NULL;
	} else if (end && *end && *end != 'Z') {
		end = NULL;
	}
	if (end) {
		time_t t = timegm(&tm) - sign * (oh * 3600 + om * 60);
		gmtime_r(&t, &tm);
		strftime(run->started_utc, sizeof run->started_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(run->import.date_from, sizeof run->import.date_from, "source");
	}
}

static int ingest_gbench(const struct src *s, struct col_run *run)
{
	json_error_t je;
	json_t *root = json_loadb(s->text, s->len, JSON_REJECT_DUPLICATES, &je);
	char names[1024] = "";
	struct acc acc[2];
	int32_t seen[2] = {0, 0};
	int rc = 0;
	memset(acc, 0, sizeof acc);
	if (!root)
		return opr_error_at(s->err, OPR_EINPUT, s->path, je.line > 0 ? je.line : 1,
				    je.column > 0 ? je.column : 1, "%s", je.text);
	json_t *list = json_object_get(root, "benchmarks");
	if (!json_is_array(list)) {
		rc = bad(s, json_is_object(root) ? key_at(s, 0, "benchmarks") : ws(s, 0),
			 "expected an object with a 'benchmarks' array (--benchmark_format=json)");
		goto out;
	}
	gbench_context(json_object_get(root, "context"), run);
	size_t at = key_at(s, ws(s, 0), "benchmarks");
	for (size_t i = 0; i < json_array_size(list) && !rc; i++)
		rc = gbench_entry(s, elem_at(s, at, i), json_array_get(list, i), run, acc, seen, names,
				  sizeof names);
	if (!rc)
		rc = check_found(s, run, "benchmark", names[0] ? names : "no benchmarks");
	for (int v = 0; v < 2 && !rc; v++)
		finish_counters(&run->blocks[0].v[v], &acc[v], "no repetition reported it");
out:
	json_decref(root);
	return rc;
}

/* ---- Nsight Compute CSV ------------------------------------------------------------
 * ncu --csv --page raw: the program's output and "==PROF==" lines, then a
 * header row ("ID","Process ID",...,"Kernel Name",...,metric names), a units
 * row (empty for the identity columns, "nsecond", "Mbyte", "%"... for metrics),
 * then one row per profiled launch; numbers may carry thousands separators
 * ("171,616"), a metric ncu could not collect reads "n/a". */

#define NCU_MAX_COLS 512

struct row {
	size_t off[NCU_MAX_COLS];  /* where each field starts in the source */
	char *f[NCU_MAX_COLS];     /* unquoted fields (owned by buf) */
	int n;
	/* a real `ncu --csv --page raw` row carries every device attribute
	 * (273 columns, 10137 bytes on an H200 with three metrics) */
	char buf[65536];
};

/* Splits the line at text[off..end) into fields. */
static int csv_row(const struct src *s, size_t off, size_t end, struct row *r)
{
	size_t i = off, j = 0;
	r->n = 0;
	for (;;) {
		if (r->n == NCU_MAX_COLS)
			return bad(s, i, "more than %d columns", NCU_MAX_COLS);
		r->off[r->n] = i;
		r->f[r->n++] = r->buf + j;
		if (i < end && s->text[i] == '"') {
			for (i++;; i++) {
				if (i >= end)
					return bad(s, r->off[r->n - 1], "unterminated quoted field");
				if (s->text[i] == '"' && (i + 1 >= end || s->text[i + 1] != '"'))
					break;
				if (s->text[i] == '"')
					i++;
				if (j + 2 >= sizeof r->buf)
					return bad(s, i, "the row is too long");
				r->buf[j++] = s->text[i];
			}
			i++;
			if (i < end && s->text[i] != ',')
				return bad(s, i, "expected ',' after a quoted field");
		} else {
			for (; i < end && s->text[i] != ','; i++) {
				if (j + 2 >= sizeof r->buf)
					return bad(s, i, "the row is too long");
				r->buf[j++] = s->text[i];
			}
		}
		r->buf[j++] = '\0';
		if (i >= end)
			return 0;
		i++; /* past ',' */
	}
}

/* A number as ncu prints it: digits with optional thousands separators in
 * groups of three, an optional fraction and exponent. 0, or -1. */
static int ncu_number(const char *f, double *out)
{
	char digits[128];
	size_t j = 0, run = 0;
	int groups = 0;
	const char *p = f;
	if (*p == '-' || *p == '+')
		digits[j++] = *p++;
	for (; *p && *p != '.' && *p != 'e' && *p != 'E'; p++) {
		if (*p == ',') {
			if (!run || (groups && run != 3) || run > 3)
				return -1;
			groups++;
			run = 0;
			continue;
		}
		if (*p < '0' || *p > '9' || j + 2 >= sizeof digits)
			return -1;
		digits[j++] = *p;
		run++;
	}
	if (!run || (groups && run != 3))
		return -1;
	for (; *p && j + 2 < sizeof digits; p++)
		digits[j++] = *p;
	digits[j] = '\0';
	if (*p)
		return -1;
	char *end;
	errno = 0;
	*out = strtod(digits, &end);
	return errno || *end || !isfinite(*out) ? -1 : 0;
}

/* How many ns or bytes one unit of a metric is (ncu's prefixes are decimal);
 * NAN for a unit that is neither. */
static double ncu_scale(const char *unit, int time)
{
	/* the long forms and the short ones (ncu 2025 on the H200 printed "ns") */
	static const char *const tu[] = {"nsecond", "usecond", "msecond", "second",
					 "ns", "us", "ms", "s"};
	static const char *const bu[] = {"byte", "Kbyte", "Mbyte", "Gbyte", "Tbyte"};
	static const double ts[] = {1, 1e3, 1e6, 1e9, 1, 1e3, 1e6, 1e9},
			    bs[] = {1, 1e3, 1e6, 1e9, 1e12};
	for (int i = 0; time && i < 8; i++)
		if (!strcmp(unit, tu[i]))
			return ts[i];
	for (int i = 0; !time && i < 5; i++)
		if (!strcmp(unit, bu[i]))
			return bs[i];
	return NAN;
}

/* A launch's kernel is the source named: the whole demangled name, or the
 * function's name before its parameter list. */
static int kernel_is(const char *kernel, const char *want)
{
	size_t n = strlen(want);
	if (!strcmp(kernel, want))
		return 1;
	return !strncmp(kernel, want, n) && kernel[n] == '(';
}

static int col_of(const struct row *h, const char *name)
{
	for (int i = 0; i < h->n; i++)
		if (!strcmp(h->f[i], name))
			return i;
	return -1;
}

static const char *const NCU_TIME = "gpu__time_duration.sum";
static const char *const NCU_BYTES[] = {"dram__bytes_read.sum", "dram__bytes_write.sum"};

/* The metrics kept as imported counters besides the duration: DRAM traffic and
 * the speed-of-light throughputs (the inputs of Nsight Compute's SOL rule); a
 * full raw page has hundreds more, which the archive does not carry. */
static int ncu_kept(const char *name)
{
	static const char *const kept[] = {"dram__bytes_read.sum", "dram__bytes_write.sum",
		"sm__throughput.avg.pct_of_peak_sustained_elapsed",
		"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
		"dram__throughput.avg.pct_of_peak_sustained_elapsed",
		"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", NULL};
	for (int i = 0; kept[i]; i++)
		if (!strcmp(name, kept[i]))
			return 1;
	return 0;
}

/* A metric's cell of one launch into the counters: bytes in bytes, the rest
 * as the units row says. */
static int ncu_metric(const struct src *s, const struct row *r, const struct row *units, int c,
		      const char *name, struct col_variant_run *vr, struct acc *a)
{
	double x;
	const char *u = units ? units->f[c] : "";
	if (!strcmp(r->f[c], "n/a") || !*r->f[c]) {
		ext_slot(vr, name, u);
		return 0;
	}
	if (ncu_number(r->f[c], &x))
		return bad(s, r->off[c], "'%s' is not a number (metric %s)", r->f[c], name);
	double scale = ncu_scale(u, 0);
	if (isfinite(scale))
		add_counter(vr, a, name, "bytes", x * scale);
	else
		add_counter(vr, a, name, u, x);
	return 0;
}

static int ingest_ncu(const struct src *s, struct col_run *run)
{
	struct col_block_run *br = &run->blocks[0];
	struct row *h = calloc(1, sizeof *h), *u = calloc(1, sizeof *u), *r = calloc(1, sizeof *r);
	struct acc acc[2];
	int32_t seen[2] = {0, 0};
	char names[1024] = "";
	int rc = 0, header = 0;
	int c_kernel = -1, c_time = -1, c_host = -1, c_dev = -1, c_cc = -1, c_devname = -1;
	memset(acc, 0, sizeof acc);
	if (!h || !u || !r) {
		rc = opr_error_set(s->err, OPR_ENOMEM, "out of memory reading '%s'", s->path);
		goto out;
	}
	snprintf(run->import.tool, sizeof run->import.tool, "Nsight Compute (ncu --csv --page raw)");
	for (size_t off = 0, end; off < s->len && !rc; off = end + 1) {
		end = off;
		while (end < s->len && s->text[end] != '\n')
			end++;
		size_t e = end > off && s->text[end - 1] == '\r' ? end - 1 : end;
		if (e == off || !strncmp(s->text + off, "==", 2))
			continue; /* ==PROF==, ==WARNING== lines and empty lines */
		if (!header) {
			/* the program's own output comes before the header */
			if (e - off < 5 || strncmp(s->text + off, "\"ID\",", 5))
				continue;
			if ((rc = csv_row(s, off, e, h)))
				break;
			header = 1;
			c_kernel = col_of(h, "Kernel Name");
			c_time = col_of(h, NCU_TIME);
			c_host = col_of(h, "Host Name");
			c_dev = col_of(h, "Device");
			c_cc = col_of(h, "CC");
			c_devname = col_of(h, "device__attribute_display_name");
			if (c_kernel < 0)
				rc = bad(s, off, "the header has no 'Kernel Name' column");
			else if (c_time < 0)
				rc = bad(s, off, "the header has no '%s' column (profile with --page raw or "
					 "--metrics %s)", NCU_TIME, NCU_TIME);
			continue;
		}
		struct row *row = header == 2 ? r : u;
		if ((rc = csv_row(s, off, e, row)))
			break;
		if (row->n != h->n) {
			rc = bad(s, off, "%d fields, but the header has %d", row->n, h->n);
			break;
		}
		if (header == 1) { /* the units row: what each metric is counted in */
			header = 2;
			if (*row->f[0]) {
				rc = bad(s, off, "expected the units row after the header (its ID field "
					 "empty), got a launch");
				break;
			}
			if (!isfinite(ncu_scale(u->f[c_time], 1))) {
				rc = bad(s, u->off[c_time], "unknown time unit '%s' of %s", u->f[c_time],
					 NCU_TIME);
				break;
			}
			continue;
		}
		const char *k = row->f[c_kernel];
		add_name(names, sizeof names, k);
		int which = kernel_is(k, br->block->source[0]) ? 0 : kernel_is(k, br->block->source[1]) ? 1 : -1;
		if (c_host >= 0 && *row->f[c_host] && !strncmp(run->host.hostname, "unavailable", 11))
			snprintf(run->host.hostname, sizeof run->host.hostname, "%s", row->f[c_host]);
		if (!run->import.device[0] && c_devname >= 0 && *row->f[c_devname])
			snprintf(run->import.device, sizeof run->import.device, "%s", row->f[c_devname]);
		else if (!run->import.device[0] && c_dev >= 0)
			snprintf(run->import.device, sizeof run->import.device, "device %s%s%s",
				 row->f[c_dev], c_cc >= 0 ? ", compute capability " : "",
				 c_cc >= 0 ? row->f[c_cc] : "");
		if (which < 0)
			continue;
		double t;
		if (ncu_number(row->f[c_time], &t) || t < 0) {
			rc = bad(s, row->off[c_time], "'%s' is not a duration (%s)", row->f[c_time], NCU_TIME);
			break;
		}
		double ns = t * ncu_scale(u->f[c_time], 1);
		struct col_variant_run *vr = &br->v[which];
		if ((rc = add_sample(vr, &acc[which], llround(ns), seen[which]++, s->err)))
			break;
		for (int b = 0; b < 2; b++)
			ext_slot(vr, NCU_BYTES[b], "bytes"); /* listed even when the CSV lacks them */
		for (int c = 0; c < h->n && !rc; c++)
			if (c != c_time && *u->f[c] && ncu_kept(h->f[c]))
				rc = ncu_metric(s, row, u, c, h->f[c], vr, &acc[which]);
	}
	if (!rc && header == 1)
		rc = bad(s, s->len, "the header is not followed by a units row");
	if (!rc && !header)
		rc = bad(s, s->len, "no CSV header (a line starting \"ID\",) in the file: was it "
			 "written by ncu --csv --page raw?");
	if (!rc)
		rc = check_found(s, run, "kernel", names[0] ? names : "no launches");
	for (int v = 0; v < 2 && !rc; v++) {
		struct col_variant_run *vr = &br->v[v];
		finish_counters(vr, &acc[v], "n/a in every profiled launch");
		for (int i = 0; i < vr->next; i++)
			if (!vr->ext[i].available && col_of(h, vr->ext[i].name) < 0)
				snprintf(vr->ext[i].reason, sizeof vr->ext[i].reason,
					 "the CSV has no column '%s' (profile with --metrics %s)",
					 vr->ext[i].name, vr->ext[i].name);
	}
out:
	free(h);
	free(u);
	free(r);
	return rc;
}

/* ---- the entry --------------------------------------------------------------------- */

int col_ingest(const struct col_ingest_options *o, struct col_run **out, struct opr_error *err)
{
	char *data = NULL;
	size_t len = 0;
	struct col_run *run = calloc(1, sizeof *run);
	int rc;
	*out = NULL;
	if (!run)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	if ((rc = make_profile(o, &run->profile, err)))
		goto fail;
	if ((rc = opr_read_file(o->path, &data, &len, MAX_SOURCE, err)))
		goto fail;
	if (memchr(data, '\0', len)) {
		rc = opr_error_at(err, OPR_EINPUT, o->path, 1, 1, "a NUL byte: not a text file");
		goto fail;
	}
	const char *what = !strcmp(o->format, "gbench") ? "Google Benchmark JSON"
							 : "an Nsight Compute CSV";
	run_defaults(run, o, what);
	snprintf(run->import.date_from, sizeof run->import.date_from, "ingest");
	col_sha256_hex(data, len, run->import.sha256);
	struct src s = {o->path, data, len, err};
	rc = !strcmp(o->format, "gbench") ? ingest_gbench(&s, run) : ingest_ncu(&s, run);
	if (rc)
		goto fail;
	free(data);
	*out = run;
	return 0;
fail:
	free(data);
	col_run_free(run);
	return rc;
}

/* ---- the manifest's sections ----------------------------------------------------------- */

json_t *col_import_json(const struct col_import *im)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "format", im->format, "path", im->path,
			 "sha256", im->sha256, "tool", im->tool, "device",
			 im->device[0] ? im->device : "unavailable: the source does not name it",
			 "date_from", im->date_from);
}

static void jcopy(json_t *o, const char *key, char *buf, size_t n)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(buf, n, "%s", v ? v : "");
}

void col_import_load(json_t *j, struct col_import *im)
{
	jcopy(j, "format", im->format, sizeof im->format);
	jcopy(j, "path", im->path, sizeof im->path);
	jcopy(j, "sha256", im->sha256, sizeof im->sha256);
	jcopy(j, "tool", im->tool, sizeof im->tool);
	jcopy(j, "device", im->device, sizeof im->device);
	jcopy(j, "date_from", im->date_from, sizeof im->date_from);
}

json_t *col_ext_counters_json(const struct col_variant_run *vr)
{
	json_t *a = json_array();
	for (int i = 0; i < vr->next; i++) {
		const struct col_ext_counter *c = &vr->ext[i];
		json_array_append_new(a, json_pack("{s:s,s:s,s:o,s:b,s:s}", "name", c->name, "unit",
						   c->unit, "value",
						   c->available ? json_real(c->value) : json_null(),
						   "available", c->available, "reason", c->reason));
	}
	return a;
}

void col_ext_counters_load(json_t *j, struct col_variant_run *vr)
{
	vr->next = 0;
	for (size_t i = 0; i < json_array_size(j) && vr->next < COL_MAX_EXT_COUNTERS; i++) {
		json_t *e = json_array_get(j, i);
		struct col_ext_counter *c = &vr->ext[vr->next++];
		jcopy(e, "name", c->name, sizeof c->name);
		jcopy(e, "unit", c->unit, sizeof c->unit);
		jcopy(e, "reason", c->reason, sizeof c->reason);
		json_t *v = json_object_get(e, "value");
		c->available = json_is_true(json_object_get(e, "available")) && json_is_number(v);
		c->value = c->available ? json_number_value(v) : 0;
	}
}
