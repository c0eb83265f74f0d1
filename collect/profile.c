/* collect/profile.c: loads and validates a workload profile and hardware
 * envelopes (fixtures/profiles/README.md is the reference). Every problem is
 * one OPR_EINPUT error at the file, line and column of the offending node;
 * the first problem found wins. */
#include "profile.h"
#include "yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COL_FILE_LIMIT (1024 * 1024)      /* bytes of one profile or envelope */
#define COL_DIM_MAX INT64_C(2147483647)  /* one dimension or shape parameter */
#define COL_QGEMM_K_MAX INT64_C(16777216) /* 2^24: the supported int8 K */

/* The loading context: where errors go. */
struct ld {
	const char *file;
	struct opr_error *err;
};

static int fail(const struct ld *c, const struct col_ynode *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(const struct ld *c, const struct col_ynode *n, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return opr_error_at(c->err, OPR_EINPUT, c->file, n ? n->line : 1,
			    n ? n->col : 1, "%s", msg);
}

/* ---- reading a file ---------------------------------------------------------- */

/* Reads a whole input file of at most COL_FILE_LIMIT bytes, checks it is
 * UTF-8 and not empty, and parses it. *text (NUL-terminated) and *root are
 * owned by the caller. what is "profile" or "envelope". */
static int read_input(const char *path, const char *what, char **text,
		      size_t *len, struct col_ynode **root, struct opr_error *err)
{
	struct stat st;
	FILE *fp;
	char *buf;
	size_t n;
	int rc;

	*text = NULL;
	*len = 0;
	*root = NULL;
	/* a FIFO, device or directory is refused without blocking in open() */
	int fd;
	struct opr_error oe = {0};
	if (opr_open_regular(path, &fd, &oe)) {
		const char *why = strstr(oe.msg, "': ");
		return opr_error_at(err, oe.code, path, 0, 0, "cannot open %s: %s", what,
				    why ? why + 3 : oe.msg);
	}
	fp = fdopen(fd, "rb");
	if (!fp) {
		close(fd);
		return opr_error_set(err, OPR_ENOMEM, "out of memory reading '%s'", path);
	}
	if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > COL_FILE_LIMIT) {
		fclose(fp);
		return opr_error_at(err, OPR_EINPUT, path, 0, 0,
				    "%s is %lld bytes; the limit is %d", what,
				    (long long)st.st_size, COL_FILE_LIMIT);
	}
	buf = malloc(COL_FILE_LIMIT + 2);
	if (!buf) {
		fclose(fp);
		return opr_error_set(err, OPR_ENOMEM, "out of memory reading '%s'", path);
	}
	n = fread(buf, 1, COL_FILE_LIMIT + 1, fp);
	if (ferror(fp)) {
		rc = opr_error_at(err, OPR_EIO, path, 0, 0, "cannot read %s '%s': %s",
				  what, path, strerror(errno));
		goto out_buf;
	}
	if (n > COL_FILE_LIMIT) {
		rc = opr_error_at(err, OPR_EINPUT, path, 0, 0,
				  "%s is more than %d bytes; the limit is %d", what,
				  COL_FILE_LIMIT, COL_FILE_LIMIT);
		goto out_buf;
	}
	fclose(fp);
	fp = NULL;
	buf[n] = '\0';
	if (n == 0) {
		rc = opr_error_at(err, OPR_EINPUT, path, 1, 1, "%s is empty", what);
		goto out_buf;
	}
	rc = col_yaml_check_utf8(path, buf, n, err);
	if (rc)
		goto out_buf;
	rc = col_yaml_parse(path, buf, n, root, err);
	if (rc)
		goto out_buf;
	if (!*root) {
		rc = opr_error_at(err, OPR_EINPUT, path, 1, 1, "%s is empty", what);
		goto out_buf;
	}
	*text = buf;
	*len = n;
	return 0;
out_buf:
	if (fp)
		fclose(fp);
	free(buf);
	return rc;
}

/* ---- typed getters ----------------------------------------------------------- */

static const char *kind_name(enum col_ykind k)
{
	return k == COL_Y_MAP ? "mapping" : k == COL_Y_SEQ ? "sequence" : "scalar";
}

static int want(const struct ld *c, const struct col_ynode *n, enum col_ykind k,
		const char *name)
{
	if (n->kind == k)
		return 0;
	if (k == COL_Y_SCALAR)
		return fail(c, n, "'%s' must be a scalar, not a %s", name, kind_name(n->kind));
	return fail(c, n, "expected a %s for '%s'", kind_name(k), name);
}

/* Refuses any key of m that is not in allowed (NULL-terminated), in order. */
static int check_keys(const struct ld *c, const struct col_ynode *m,
		      const char *const *allowed)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct col_ynode *k = m->kids[2 * i];
		size_t j;
		for (j = 0; allowed[j]; j++)
			if (strcmp(k->text, allowed[j]) == 0)
				break;
		if (allowed[j])
			continue;
		char list[600];
		size_t used = 0;
		list[0] = '\0';
		for (j = 0; allowed[j] && used < sizeof list; j++) {
			int w = snprintf(list + used, sizeof list - used, "%s%s",
					 j ? ", " : "", allowed[j]);
			if (w < 0)
				break;
			used += (size_t)w;
		}
		return fail(c, k, "unknown key '%.100s' (allowed: %s)", k->text, list);
	}
	return 0;
}

static int need(const struct ld *c, const struct col_ynode *m, const char *key,
		struct col_ynode **out)
{
	*out = col_ymap_get(m, key, NULL);
	if (!*out)
		return fail(c, m, "missing key '%s'", key);
	return 0;
}

/* Decimal integer: optional sign then digits. 0, -1 (syntax) or -2 (range). */
static int parse_i64(const char *s, int64_t *out)
{
	const char *p = s;
	char *end;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return -1;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -2;
	*out = v;
	return 0;
}

static int get_int(const struct ld *c, const struct col_ynode *n, const char *name,
		   int64_t min, int64_t max, int64_t *out)
{
	int64_t v = 0;
	int r = n->kind == COL_Y_SCALAR ? parse_i64(n->text, &v) : -1;
	if (r == -2 && n->text[0] != '-')
		return fail(c, n, "'%s' %.40s exceeds the maximum %lld", name,
			    n->text, (long long)max);
	if (r == 0 && v > max)
		return fail(c, n, "'%s' %lld exceeds the maximum %lld", name,
			    (long long)v, (long long)max);
	if (r != 0 || v < min) {
		if (min == 1)
			return fail(c, n, "'%s' must be a positive integer", name);
		if (min == 0)
			return fail(c, n, "'%s' must be a non-negative integer", name);
		return fail(c, n, "'%s' must be an integer in [%lld, %lld]", name,
			    (long long)min, (long long)max);
	}
	*out = v;
	return 0;
}

static int get_u64(const struct ld *c, const struct col_ynode *n, const char *name,
		   uint64_t *out)
{
	const char *p = n->kind == COL_Y_SCALAR ? n->text : "";
	char *end;
	int ok = *p != '\0';
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			ok = 0;
	errno = 0;
	unsigned long long v = ok ? strtoull(p, &end, 10) : 0;
	if (!ok || errno == ERANGE)
		return fail(c, n, "'%s' must be an integer in [0, 18446744073709551615]", name);
	*out = v;
	return 0;
}

enum numkind { NUM_POSITIVE, NUM_NONNEG, NUM_FRACTION };

/* A finite decimal number (YAML 1.2 float syntax without .inf/.nan). */
static int get_num(const struct ld *c, const struct col_ynode *n, const char *name,
		   enum numkind kind, double *out)
{
	const char *s = n->kind == COL_Y_SCALAR ? n->text : "";
	int digits = 0, ok = *s != '\0';
	double v = 0;
	for (const char *p = s; *p; p++) {
		if (*p >= '0' && *p <= '9')
			digits = 1;
		else if (!strchr("+-.eE", *p))
			ok = 0;
	}
	if (ok && digits) {
		char *end;
		errno = 0;
		v = strtod(s, &end);
		ok = *end == '\0' && errno != ERANGE && isfinite(v);
	} else {
		ok = 0;
	}
	switch (kind) {
	case NUM_POSITIVE:
		if (!ok || !(v > 0))
			return fail(c, n, "'%s' must be a positive finite number", name);
		break;
	case NUM_NONNEG:
		if (!ok || !(v >= 0))
			return fail(c, n, "'%s' must be a non-negative finite number", name);
		break;
	case NUM_FRACTION:
		if (!ok || !(v >= 0 && v < 1))
			return fail(c, n, "'%s' must be a finite number in [0, 1)", name);
		break;
	}
	*out = v;
	return 0;
}

static int get_str(const struct ld *c, const struct col_ynode *n, const char *name,
		   char *buf, size_t size, int allow_empty)
{
	int rc = want(c, n, COL_Y_SCALAR, name);
	if (rc)
		return rc;
	if (n->len >= size)
		return fail(c, n, "'%s' is longer than %zu bytes", name, size - 1);
	if (!allow_empty && n->len == 0)
		return fail(c, n, "'%s' must not be empty", name);
	memcpy(buf, n->text, n->len + 1);
	return 0;
}

static int get_bool(const struct ld *c, const struct col_ynode *n, const char *name,
		    int *out)
{
	if (n->kind == COL_Y_SCALAR && n->plain && strcmp(n->text, "true") == 0)
		*out = 1;
	else if (n->kind == COL_Y_SCALAR && n->plain && strcmp(n->text, "false") == 0)
		*out = 0;
	else
		return fail(c, n, "'%s' must be true or false", name);
	return 0;
}

/* One of names (NULL-terminated); *out is its index. */
static int get_enum(const struct ld *c, const struct col_ynode *n, const char *name,
		    const char *const *names, int *out)
{
	char list[300];
	size_t used = 0;
	if (n->kind == COL_Y_SCALAR)
		for (int i = 0; names[i]; i++)
			if (strcmp(n->text, names[i]) == 0) {
				*out = i;
				return 0;
			}
	list[0] = '\0';
	for (int i = 0; names[i] && used < sizeof list; i++) {
		int w = snprintf(list + used, sizeof list - used, "%s%s", i ? "|" : "", names[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (n->kind != COL_Y_SCALAR)
		return fail(c, n, "'%s' must be one of %s", name, list);
	return fail(c, n, "unknown %s '%.100s' (want %s)", name, n->text, list);
}

/* Optional forms: leave *out at its default when the key is absent. */
static int opt_int(const struct ld *c, const struct col_ynode *m, const char *key,
		   int64_t min, int64_t max, int64_t *out)
{
	struct col_ynode *v = col_ymap_get(m, key, NULL);
	return v ? get_int(c, v, key, min, max, out) : 0;
}

static int opt_num(const struct ld *c, const struct col_ynode *m, const char *key,
		   enum numkind kind, double *out)
{
	struct col_ynode *v = col_ymap_get(m, key, NULL);
	return v ? get_num(c, v, key, kind, out) : 0;
}

static int req_num(const struct ld *c, const struct col_ynode *m, const char *key,
		   enum numkind kind, double *out)
{
	struct col_ynode *v;
	int rc = need(c, m, key, &v);
	return rc ? rc : get_num(c, v, key, kind, out);
}

static int req_int(const struct ld *c, const struct col_ynode *m, const char *key,
		   int64_t min, int64_t max, int64_t *out)
{
	struct col_ynode *v;
	int rc = need(c, m, key, &v);
	return rc ? rc : get_int(c, v, key, min, max, out);
}

/* A sub-mapping: NULL when absent, an error when not a mapping or when it has
 * an unknown key. */
static int opt_map(const struct ld *c, const struct col_ynode *m, const char *key,
		   const char *const *allowed, struct col_ynode **out)
{
	int rc;
	*out = col_ymap_get(m, key, NULL);
	if (!*out)
		return 0;
	if ((rc = want(c, *out, COL_Y_MAP, key)))
		return rc;
	return check_keys(c, *out, allowed);
}

static int req_map(const struct ld *c, const struct col_ynode *m, const char *key,
		   const char *const *allowed, struct col_ynode **out)
{
	int rc = need(c, m, key, out);
	if (rc)
		return rc;
	return opt_map(c, m, key, allowed, out);
}

/* Names used in file names: [A-Za-z0-9._-]{1,63}, not "." or "..". */
static int name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= COL_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return 0;
	return 1;
}

static int get_name(const struct ld *c, const struct col_ynode *n, const char *what,
		    char *buf)
{
	if (n->kind != COL_Y_SCALAR || !name_ok(n->text))
		return fail(c, n, "%s '%.100s' is invalid (want 1-63 of [A-Za-z0-9._-], not . or ..)",
			    what, n->kind == COL_Y_SCALAR ? n->text : kind_name(n->kind));
	memcpy(buf, n->text, n->len + 1);
	return 0;
}

/* ---- the envelope ------------------------------------------------------------ */

static const char *const power_modes[] = {"low", "nominal", "boost", NULL};
static const double power_scale[] = {0.7, 1.0, 1.2}; /* clock_scale by mode */

/* The measured values a calibration may describe (collect/calibrate.c). */
static const char *const cal_names[] = {"fp32_tops", "int8_peak_tops", "fp16_tops",
	"bf16_tops", "int8_tops", "vector_tops", "vector_half_tops", "global_bandwidth_gbps",
	"global_read_gbps", "global_write_gbps", "qgemm_one_pass_share",
	"shared_bandwidth_gbps", "dma_setup_ns", "launch_overhead_us",
	/* measured on a GPU (calibrate --device cuda) */
	"l2_bandwidth_gbps", "int8_mma_tops", "launch_first_us",
	/* our own kernels, two plans a family (collect/gpu.c, gpu_kern) */
	"conv_a_us", "conv_b_us", "qgemm_a_us", "qgemm_b_us", "permute_a_us", "permute_b_us",
	"permute_rows_a_us", "permute_rows_b_us", "elementwise_a_us", "elementwise_b_us",
	"conv_gemm_a_us", "conv_gemm_b_us", NULL};

/* kernels: {FAMILY: {efficiency, transfer_ns}} (GPU envelopes: ops.h,
 * ops_envelope.kern), each family at most once. */
static const char *const family_keys[] = {"conv",	     "qgemm",	  "permute", "permute_rows",
					  "elementwise", "conv_gemm", NULL};

static int parse_kernels(const struct ld *c, const struct col_ynode *m, struct ops_envelope *env)
{
	static const char *const ckeys[] = {"efficiency", "transfer_ns", NULL};
	int rc;

	if ((rc = want(c, m, COL_Y_MAP, "kernels")) || (rc = check_keys(c, m, family_keys)))
		return rc;
	for (int f = 0; f < OPS_NKCLASSES; f++) {
		struct col_ynode *k = col_ymap_get(m, ops_kernel_class_name((enum ops_kernel_class)f),
						   NULL);
		if (!k)
			continue;
		if ((rc = want(c, k, COL_Y_MAP, ops_kernel_class_name((enum ops_kernel_class)f))) ||
		    (rc = check_keys(c, k, ckeys)) ||
		    (rc = req_num(c, k, "efficiency", NUM_POSITIVE, &env->kern[f].efficiency)) ||
		    (rc = opt_num(c, k, "transfer_ns", NUM_NONNEG, &env->kern[f].transfer_ns)))
			return rc;
	}
	return 0;
}

/* one_pass: {FAMILY: share} (host envelopes: ops.h, one_pass_share), each
 * family at most once, each share in (0, 1]. */
static int parse_one_pass(const struct ld *c, const struct col_ynode *m, struct ops_envelope *env)
{
	int rc;

	if ((rc = want(c, m, COL_Y_MAP, "one_pass")) || (rc = check_keys(c, m, family_keys)))
		return rc;
	for (int f = 0; f < OPS_NKCLASSES; f++) {
		const char *name = ops_kernel_class_name((enum ops_kernel_class)f);
		struct col_ynode *k = col_ymap_get(m, name, NULL);
		if (!k)
			continue;
		if ((rc = req_num(c, m, name, NUM_POSITIVE, &env->one_pass_share[f])))
			return rc;
		if (env->one_pass_share[f] > 1.0)
			return fail(c, k, "one_pass '%s' is %g: a share of the plain stream's rate, "
				    "at most 1", name, env->one_pass_share[f]);
	}
	return 0;
}

/* calibration: {host, date, cpu, cpus_online, kernel_isa, values: {NAME:
 * {median, spread, samples, method}}}: what `opreview calibrate` measured (on
 * the host kernel path kernel_isa), kept beside the envelope's values so a
 * run can say its model was checked on this host. */
static int parse_calibration(const struct ld *c, const struct col_ynode *m,
			     struct col_calibration *cal)
{
	static const char *const keys[] = {"host", "date", "cpu", "cpus_online", "kernel_isa",
					   "device", "gpu", "retried_samples", "values", NULL};
	static const char *const devices[] = {"host", "cuda", NULL};
	static const char *const vkeys[] = {"median", "spread", "samples", "method", NULL};
	struct col_ynode *v, *vals;
	int rc;

	memset(cal, 0, sizeof *cal);
	if ((rc = want(c, m, COL_Y_MAP, "calibration")) || (rc = check_keys(c, m, keys)))
		return rc;
	if ((rc = need(c, m, "host", &v)) || (rc = get_str(c, v, "host", cal->host, sizeof cal->host, 0)) ||
	    (rc = need(c, m, "date", &v)) || (rc = get_str(c, v, "date", cal->date, sizeof cal->date, 0)))
		return rc;
	if ((v = col_ymap_get(m, "cpu", NULL)) &&
	    (rc = get_str(c, v, "cpu", cal->cpu, sizeof cal->cpu, 1)))
		return rc;
	if ((rc = opt_int(c, m, "cpus_online", 1, 1 << 20, &cal->cpus_online)) ||
	    (rc = opt_int(c, m, "retried_samples", 0, INT32_MAX, &cal->retried)))
		return rc;
	if ((v = col_ymap_get(m, "kernel_isa", NULL))) {
		enum ops_isa isa;
		if ((rc = get_str(c, v, "kernel_isa", cal->kernel_isa, sizeof cal->kernel_isa, 0)))
			return rc;
		if (ops_isa_parse(cal->kernel_isa, &isa))
			return fail(c, v, "'kernel_isa' must be scalar, avx2 or avx512");
	}
	/* device: where the values were measured (the host unless cuda); gpu:
	 * the GPU's own description */
	int dk = COL_DEV_HOST;
	if ((v = col_ymap_get(m, "device", NULL)) && (rc = get_enum(c, v, "device", devices, &dk)))
		return rc;
	cal->device = dk;
	if ((v = col_ymap_get(m, "gpu", NULL)) &&
	    (rc = get_str(c, v, "gpu", cal->gpu, sizeof cal->gpu, 1)))
		return rc;
	if ((rc = req_map(c, m, "values", cal_names, &vals)))
		return rc;
	for (size_t i = 0; i < vals->n && cal->nv < COL_CAL_MAX_VALUES; i++) {
		const struct col_ynode *k = vals->kids[2 * i], *e = vals->kids[2 * i + 1];
		struct col_cal_value *cv = &cal->v[cal->nv];
		if ((rc = want(c, e, COL_Y_MAP, k->text)) || (rc = check_keys(c, e, vkeys)) ||
		    (rc = req_num(c, e, "median", NUM_POSITIVE, &cv->median)) ||
		    (rc = req_num(c, e, "spread", NUM_NONNEG, &cv->spread)) ||
		    (rc = req_int(c, e, "samples", 1, INT32_MAX, &cv->samples)))
			return rc;
		if ((v = col_ymap_get(e, "method", NULL)) &&
		    (rc = get_str(c, v, "method", cv->method, sizeof cv->method, 1)))
			return rc;
		snprintf(cv->key, sizeof cv->key, "%s", k->text);
		cal->nv++;
	}
	cal->present = 1;
	return 0;
}

static int parse_envelope(const struct ld *c, const struct col_ynode *m,
			  const char *default_name, struct ops_envelope *env,
			  struct col_calibration *cal)
{
	static const char *const keys[] = {"name", "power_mode", "clock_ghz", "cores",
		"global", "shared", "local", "dma", "compute_tops", "launch_overhead_us",
		"launch_first_us", "kernels", "one_pass", "calibration", NULL};
	static const char *const gkeys[] = {"bandwidth_gbps", "read_gbps", "write_gbps",
					    "capacity_gib", NULL};
	static const char *const skeys[] = {"capacity_kib", "bandwidth_gbps", NULL};
	static const char *const lkeys[] = {"capacity_kib", NULL};
	static const char *const dkeys[] = {"max_last_dim", "setup_ns", "engines", "serial", NULL};
	static const char *const tkeys[] = {"fp32", "fp16", "bf16", "int8", "vector",
					    "vector_half", NULL};
	struct col_ynode *v, *g, *s, *l, *d, *t;
	int64_t i64;
	int mode = 1, rc;

	memset(env, 0, sizeof *env);
	if ((rc = want(c, m, COL_Y_MAP, "envelope")) || (rc = check_keys(c, m, keys)))
		return rc;
	snprintf(env->name, sizeof env->name, "%s", default_name);
	if ((v = col_ymap_get(m, "name", NULL)) && (rc = get_name(c, v, "envelope name", env->name)))
		return rc;
	if ((v = col_ymap_get(m, "power_mode", NULL)) &&
	    (rc = get_enum(c, v, "power_mode", power_modes, &mode)))
		return rc;
	snprintf(env->power_mode, sizeof env->power_mode, "%s", power_modes[mode]);
	env->clock_scale = power_scale[mode];
	if ((rc = req_num(c, m, "clock_ghz", NUM_POSITIVE, &env->clock_ghz)))
		return rc;
	if ((rc = req_int(c, m, "cores", 1, OPS_MAX_CORES, &i64)))
		return rc;
	env->cores = (int)i64;

	if ((rc = req_map(c, m, "global", gkeys, &g)) ||
	    (rc = req_num(c, g, "bandwidth_gbps", NUM_POSITIVE, &env->global_bw_gbps)) ||
	    /* per direction (a host calibration); absent: the round trip's */
	    (rc = opt_num(c, g, "read_gbps", NUM_POSITIVE, &env->global_read_bw_gbps)) ||
	    (rc = opt_num(c, g, "write_gbps", NUM_POSITIVE, &env->global_write_bw_gbps)) ||
	    (rc = req_num(c, g, "capacity_gib", NUM_POSITIVE, &env->global_capacity_gib)))
		return rc;
	if ((rc = req_map(c, m, "shared", skeys, &s)) ||
	    (rc = req_num(c, s, "capacity_kib", NUM_POSITIVE, &env->shared_capacity_kib)) ||
	    (rc = req_num(c, s, "bandwidth_gbps", NUM_POSITIVE, &env->shared_bw_gbps)))
		return rc;
	if ((rc = req_map(c, m, "local", lkeys, &l)) ||
	    (rc = req_num(c, l, "capacity_kib", NUM_POSITIVE, &env->local_capacity_kib)))
		return rc;

	/* dma defaults: 65535 elements per transfer, 100 ns setup, one engine */
	env->dma_max_last_dim = 65535;
	env->dma_setup_ns = 100;
	i64 = 1;
	if ((rc = opt_map(c, m, "dma", dkeys, &d)) ||
	    (rc = opt_int(c, d, "max_last_dim", 1, COL_DIM_MAX, &env->dma_max_last_dim)) ||
	    (rc = opt_num(c, d, "setup_ns", NUM_NONNEG, &env->dma_setup_ns)) ||
	    (rc = opt_int(c, d, "engines", 1, 64, &i64)))
		return rc;
	env->dma_engines = (int)i64;
	/* serial: the transfers run on the compute's thread (a CPU host) */
	env->dma_serial = 0;
	if (d && (v = col_ymap_get(d, "serial", NULL)) &&
	    (rc = get_bool(c, v, "serial", &env->dma_serial)))
		return rc;

	if ((rc = req_map(c, m, "compute_tops", tkeys, &t)) ||
	    (rc = req_num(c, t, "fp32", NUM_POSITIVE, &env->tops[OPS_F32])) ||
	    (rc = req_num(c, t, "fp16", NUM_POSITIVE, &env->tops[OPS_F16])) ||
	    (rc = req_num(c, t, "bf16", NUM_POSITIVE, &env->tops[OPS_BF16])) ||
	    (rc = req_num(c, t, "int8", NUM_POSITIVE, &env->tops[OPS_S8])))
		return rc;
	env->tops[OPS_U8] = env->tops[OPS_S8];
	env->tops[OPS_S32] = env->tops[OPS_S8];
	env->vector_tops = 0;
	if ((rc = opt_num(c, t, "vector", NUM_POSITIVE, &env->vector_tops)))
		return rc;
	/* vector_half: the element-wise rate on fp16/bf16 data (conversions
	 * included); it refines vector, so it needs it */
	env->vector_half_tops = 0;
	if ((rc = opt_num(c, t, "vector_half", NUM_POSITIVE, &env->vector_half_tops)))
		return rc;
	if (env->vector_half_tops > 0 && !(env->vector_tops > 0))
		return fail(c, col_ymap_get(t, "vector_half", NULL),
			    "'vector_half' needs 'vector' (the fp32 element-wise rate)");
	env->launch_overhead_us = 0;
	if ((rc = opt_num(c, m, "launch_overhead_us", NUM_NONNEG, &env->launch_overhead_us)))
		return rc;
	/* GPU envelopes only (calibrate --device cuda): the first launch of a
	 * run, and our own kernels' costs per family */
	if ((rc = opt_num(c, m, "launch_first_us", NUM_NONNEG, &env->launch_first_us)))
		return rc;
	if ((v = col_ymap_get(m, "kernels", NULL)) && (rc = parse_kernels(c, v, env)))
		return rc;
	/* host envelopes (calibrate): the share of the GLOBAL rates a family's
	 * one-pass launch streams at */
	if ((v = col_ymap_get(m, "one_pass", NULL)) && (rc = parse_one_pass(c, v, env)))
		return rc;
	struct col_calibration scratch;
	if (!cal)
		cal = &scratch;
	memset(cal, 0, sizeof *cal);
	if ((v = col_ymap_get(m, "calibration", NULL)))
		return parse_calibration(c, v, cal);
	return 0;
}

/* The file name without folder and ".yaml": the default envelope name. */
static void stem(const char *path, char *buf, size_t size)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 5 && strcmp(b + n - 5, ".yaml") == 0)
		n -= 5;
	snprintf(buf, size, "%.*s", (int)n, b);
	if (!name_ok(buf))
		snprintf(buf, size, "envelope");
}

int col_envelope_load(const char *path, struct ops_envelope *env,
		      struct opr_error *err)
{
	return col_envelope_load_cal(path, env, NULL, err);
}

int col_envelope_load_cal(const char *path, struct ops_envelope *env,
			  struct col_calibration *cal, struct opr_error *err)
{
	struct ld c = {path, err};
	struct col_ynode *root;
	char *text, name[COL_NAME_MAX];
	size_t len;
	int rc = read_input(path, "envelope", &text, &len, &root, err);
	if (rc)
		return rc;
	stem(path, name, sizeof name);
	if (root->kind != COL_Y_MAP)
		rc = fail(&c, root, "expected a mapping at the top of the envelope");
	else
		rc = parse_envelope(&c, root, name, env, cal);
	col_ynode_free(root);
	free(text);
	return rc;
}

/* Finds <dir>/<name>.yaml: dir is envelope_dir, or the folder "envelopes"
 * beside the profile's folder, then ./fixtures/envelopes. */
static int envelope_path(const char *profile, const char *envelope_dir,
			 const char *name, char *buf, size_t size)
{
	if (envelope_dir) {
		snprintf(buf, size, "%s/%s.yaml", envelope_dir, name);
		return access(buf, F_OK) == 0;
	}
	/* the profile's folder is everything before the last '/'; its parent
	 * is that folder without its last component (".." when unknown) */
	const char *slash = strrchr(profile, '/');
	int dlen = slash ? (int)(slash - profile) : 0;
	const char *dslash = NULL;
	for (int i = 0; i < dlen; i++)
		if (profile[i] == '/')
			dslash = profile + i;
	const char *last = dslash ? dslash + 1 : profile;
	int last_len = dlen - (int)(last - profile);
	int simple = dlen > 0 && !(last_len == 1 && last[0] == '.') &&
		     !(last_len == 2 && last[0] == '.' && last[1] == '.');
	if (simple && dslash)
		snprintf(buf, size, "%.*s/envelopes/%s.yaml", (int)(dslash - profile),
			 profile, name);
	else if (simple)
		snprintf(buf, size, "envelopes/%s.yaml", name);
	else if (dlen > 0)
		snprintf(buf, size, "%.*s/../envelopes/%s.yaml", dlen, profile, name);
	else
		snprintf(buf, size, "../envelopes/%s.yaml", name);
	if (access(buf, F_OK) == 0)
		return 1;
	snprintf(buf, size, "fixtures/envelopes/%s.yaml", name);
	return access(buf, F_OK) == 0;
}

static int load_envelope(const struct ld *c, const struct col_ynode *v,
			 const char *envelope_dir, struct col_profile *p)
{
	char name[COL_NAME_MAX];
	int rc;

	if (v->kind == COL_Y_MAP) {
		snprintf(p->envelope_source, sizeof p->envelope_source, "inline");
		return parse_envelope(c, v, "inline", &p->envelope, &p->calibration);
	}
	if (v->kind != COL_Y_SCALAR)
		return fail(c, v, "'envelope' must be a name or a mapping");
	if ((rc = get_name(c, v, "envelope name", name)))
		return rc;
	if (!envelope_path(c->file, envelope_dir, name, p->envelope_source,
			   sizeof p->envelope_source))
		return fail(c, v, "envelope '%s' not found (no file '%s')", name,
			    p->envelope_source);
	return col_envelope_load_cal(p->envelope_source, &p->envelope, &p->calibration, c->err);
}

/* ---- blocks ------------------------------------------------------------------- */

static int group_is_conv(enum ops_group g)
{
	return g == OPS_G_CONV || g == OPS_G_CONV_BIAS_ACT;
}

static int group_is_qgemm(enum ops_group g)
{
	return g == OPS_G_QGEMM || g == OPS_G_QGEMM_DQ_BIAS_ACT;
}

static int group_is_permute(enum ops_group g)
{
	return g == OPS_G_PERMUTE || g == OPS_G_PERMUTE_ACT;
}

static int group_has_act(enum ops_group g)
{
	return g == OPS_G_ACTIVATION || g == OPS_G_CONV_BIAS_ACT ||
	       g == OPS_G_QGEMM_DQ_BIAS_ACT || g == OPS_G_PERMUTE_ACT;
}

/* a *= b with overflow detection; bytes of tensors must fit size_t */
static int mul_ok(size_t *a, int64_t b)
{
	return !__builtin_mul_overflow(*a, (size_t)b, a);
}

static int prod_ok(size_t elem, const int64_t *f, int n)
{
	size_t acc = elem;
	for (int i = 0; i < n; i++)
		if (!mul_ok(&acc, f[i]))
			return 0;
	return 1;
}

/* stride/pad/dilation: the pair form "x" or "x_h"/"x_w", not both. */
static int conv_pair(const struct ld *c, const struct col_ynode *m, const char *key,
		     int64_t min, int64_t *h, int64_t *w)
{
	char kh[32], kw[32];
	struct col_ynode *v = col_ymap_get(m, key, NULL), *vh, *vw;
	int rc;

	snprintf(kh, sizeof kh, "%s_h", key);
	snprintf(kw, sizeof kw, "%s_w", key);
	vh = col_ymap_get(m, kh, NULL);
	vw = col_ymap_get(m, kw, NULL);
	if (v && (vh || vw))
		return fail(c, vh ? vh : vw, "'%s' conflicts with '%s'", vh ? kh : kw, key);
	if (v) {
		if ((rc = get_int(c, v, key, min, COL_DIM_MAX, h)))
			return rc;
		*w = *h;
		return 0;
	}
	if (vh && (rc = get_int(c, vh, kh, min, COL_DIM_MAX, h)))
		return rc;
	if (vw && (rc = get_int(c, vw, kw, min, COL_DIM_MAX, w)))
		return rc;
	return 0;
}

static int parse_conv(const struct ld *c, const struct col_ynode *m, enum ops_dtype dt,
		      struct ops_conv_shape *s)
{
	static const char *const keys[] = {"n", "c", "h", "w", "k", "r", "s", "stride",
		"stride_h", "stride_w", "pad", "pad_h", "pad_w", "dilation", "dilation_h",
		"dilation_w", "groups", NULL};
	int64_t *dims[] = {&s->n, &s->c, &s->h, &s->w, &s->k, &s->r, &s->s};
	int rc;

	if ((rc = check_keys(c, m, keys)))
		return rc;
	for (int i = 0; i < 7; i++)
		if ((rc = req_int(c, m, keys[i], 1, COL_DIM_MAX, dims[i])))
			return rc;
	s->stride_h = s->stride_w = 1;
	s->pad_h = s->pad_w = 0;
	s->dil_h = s->dil_w = 1;
	s->groups = 1;
	if ((rc = conv_pair(c, m, "stride", 1, &s->stride_h, &s->stride_w)) ||
	    (rc = conv_pair(c, m, "pad", 0, &s->pad_h, &s->pad_w)) ||
	    (rc = conv_pair(c, m, "dilation", 1, &s->dil_h, &s->dil_w)) ||
	    (rc = opt_int(c, m, "groups", 1, COL_DIM_MAX, &s->groups)))
		return rc;
	if (s->c % s->groups || s->k % s->groups)
		return fail(c, col_ymap_get(m, "groups", NULL),
			    "'groups' %lld must divide c %lld and k %lld", (long long)s->groups,
			    (long long)s->c, (long long)s->k);
	/* output size: oh = (h + 2 pad_h - dil_h (r - 1) - 1) / stride_h + 1 */
	int64_t eh = s->dil_h * (s->r - 1) + 1, ew = s->dil_w * (s->s - 1) + 1;
	if (s->dil_h > COL_DIM_MAX / s->r || s->dil_w > COL_DIM_MAX / s->s ||
	    eh > s->h + 2 * s->pad_h || ew > s->w + 2 * s->pad_w)
		return fail(c, m, "the %lldx%lld kernel (dilated) does not fit the padded %lldx%lld input",
			    (long long)s->r, (long long)s->s, (long long)s->h, (long long)s->w);
	int64_t oh = (s->h + 2 * s->pad_h - eh) / s->stride_h + 1;
	int64_t ow = (s->w + 2 * s->pad_w - ew) / s->stride_w + 1;
	int64_t cg = s->c / s->groups;
	int64_t in[] = {s->n, s->c, s->h + 2 * s->pad_h, s->w + 2 * s->pad_w};
	int64_t wt[] = {s->k, cg, s->r, s->s};
	int64_t out[] = {s->n, s->k, oh, ow};
	int64_t col[] = {s->n, oh, ow, cg, s->r, s->s}; /* the im2col matrix */
	size_t es = ops_dtype_size(dt) < 4 ? 4 : ops_dtype_size(dt);
	if (!prod_ok(es, in, 4) || !prod_ok(es, wt, 4) || !prod_ok(es, out, 4) ||
	    !prod_ok(es, col, 6))
		return fail(c, m, "shape product overflows");
	return 0;
}

static int parse_gemm(const struct ld *c, const struct col_ynode *m,
		      struct ops_gemm_shape *s)
{
	static const char *const keys[] = {"m", "n", "k", NULL};
	struct col_ynode *kv;
	int rc;

	if ((rc = check_keys(c, m, keys)) ||
	    (rc = req_int(c, m, "m", 1, COL_DIM_MAX, &s->m)) ||
	    (rc = req_int(c, m, "n", 1, COL_DIM_MAX, &s->n)) ||
	    (rc = req_int(c, m, "k", 1, COL_DIM_MAX, &s->k)))
		return rc;
	kv = col_ymap_get(m, "k", NULL);
	if (s->k > COL_QGEMM_K_MAX)
		return fail(c, kv, "k %lld exceeds the supported maximum %lld",
			    (long long)s->k, (long long)COL_QGEMM_K_MAX);
	/* int32 accumulators and fp32 outputs: 4 bytes per element at most */
	int64_t a[] = {s->m, s->k}, b[] = {s->k, s->n}, o[] = {s->m, s->n};
	if (!prod_ok(4, a, 2) || !prod_ok(4, b, 2) || !prod_ok(4, o, 2))
		return fail(c, m, "shape product overflows");
	return 0;
}

static int parse_tensor(const struct ld *c, const struct col_ynode *m, enum ops_group g,
			enum ops_dtype dt, struct ops_tensor_shape *s)
{
	static const char *const akeys[] = {"dims", NULL};
	static const char *const pkeys[] = {"dims", "perm", NULL};
	int perm = group_is_permute(g);
	struct col_ynode *d, *pv;
	int rc;

	if ((rc = check_keys(c, m, perm ? pkeys : akeys)) || (rc = need(c, m, "dims", &d)) ||
	    (rc = want(c, d, COL_Y_SEQ, "dims")))
		return rc;
	if (d->n > OPS_MAX_RANK)
		return fail(c, d, "rank %zu exceeds the maximum %d", d->n, OPS_MAX_RANK);
	if (perm && d->n == 0)
		return fail(c, d, "a permute needs rank 1 or more");
	s->rank = (int)d->n;
	for (int i = 0; i < s->rank; i++)
		if ((rc = get_int(c, d->kids[i], "dims", perm ? 1 : 0, COL_DIM_MAX, &s->dims[i])))
			return rc;
	/* zero-size dims make an empty tensor, but the other dims still count */
	size_t acc = ops_dtype_size(dt) < 4 ? 4 : ops_dtype_size(dt);
	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] && !mul_ok(&acc, s->dims[i]))
			return fail(c, d, "shape product overflows");
	if (!perm)
		return 0;
	if ((rc = need(c, m, "perm", &pv)) || (rc = want(c, pv, COL_Y_SEQ, "perm")))
		return rc;
	if ((int)pv->n != s->rank)
		return fail(c, pv, "'perm' has %zu entries but the rank is %d", pv->n, s->rank);
	int seen[OPS_MAX_RANK] = {0};
	for (int i = 0; i < s->rank; i++) {
		int64_t v;
		if ((rc = get_int(c, pv->kids[i], "perm", 0, s->rank - 1, &v)))
			return rc;
		if (seen[v])
			return fail(c, pv->kids[i], "'perm' repeats %lld: not a permutation of 0..%d",
				    (long long)v, s->rank - 1);
		seen[v] = 1;
		s->perm[i] = (int)v;
	}
	return 0;
}

static int parse_quant(const struct ld *c, const struct col_ynode *m,
		       struct ops_quant *q)
{
	static const char *const keys[] = {"a", "a_zero_point", "a_scale", "b", "b_scales",
		"out", "out_scale", "out_zero_point", NULL};
	static const char *const a_names[] = {"u8", "s8", NULL};
	static const char *const b_names[] = {"s8", NULL};
	static const char *const scales[] = {"per-tensor", "per-channel", NULL};
	static const char *const outs[] = {"fp32", "int8", NULL};
	struct col_ynode *v;
	int64_t i64;
	double d;
	int e, rc;

	if (!m)
		return 0;
	if ((rc = want(c, m, COL_Y_MAP, "quant")) || (rc = check_keys(c, m, keys)))
		return rc;
	if ((v = col_ymap_get(m, "a", NULL))) {
		if ((rc = get_enum(c, v, "a", a_names, &e)))
			return rc;
		q->a = e ? OPS_S8 : OPS_U8;
	}
	if ((v = col_ymap_get(m, "a_zero_point", NULL))) {
		if (q->a == OPS_U8)
			rc = get_int(c, v, "a_zero_point", 0, 255, &i64);
		else
			rc = get_int(c, v, "a_zero_point", -128, 127, &i64);
		if (rc)
			return rc;
		q->a_zero_point = (int32_t)i64;
	}
	if ((v = col_ymap_get(m, "a_scale", NULL))) {
		if ((rc = get_num(c, v, "a_scale", NUM_POSITIVE, &d)))
			return rc;
		q->a_scale = (float)d;
	}
	if ((v = col_ymap_get(m, "b", NULL)) && (rc = get_enum(c, v, "b", b_names, &e)))
		return rc;
	if ((v = col_ymap_get(m, "b_scales", NULL))) {
		if ((rc = get_enum(c, v, "b_scales", scales, &e)))
			return rc;
		q->b_per_channel = e;
	}
	if ((v = col_ymap_get(m, "out", NULL))) {
		if ((rc = get_enum(c, v, "out", outs, &e)))
			return rc;
		q->out = e ? OPS_S8 : OPS_F32;
	}
	static const char *const requant[] = {"out_scale", "out_zero_point", NULL};
	for (int i = 0; requant[i]; i++)
		if (q->out != OPS_S8 && (v = col_ymap_get(m, requant[i], NULL)))
			return fail(c, v, "'%s' applies only when out is int8", requant[i]);
	if ((v = col_ymap_get(m, "out_scale", NULL))) {
		if ((rc = get_num(c, v, "out_scale", NUM_POSITIVE, &d)))
			return rc;
		q->out_scale = (float)d;
	}
	if ((v = col_ymap_get(m, "out_zero_point", NULL))) {
		if ((rc = get_int(c, v, "out_zero_point", -128, 127, &i64)))
			return rc;
		q->out_zero_point = (int32_t)i64;
	}
	if (!isfinite(q->a_scale) || !isfinite(q->out_scale) || q->a_scale <= 0 ||
	    q->out_scale <= 0)
		return fail(c, m, "quantisation scale out of the fp32 range");
	return 0;
}

static const char *const strategies[] = {"untiled", "direct", "im2col", "winograd", NULL};

static int parse_variant(const struct ld *c, const struct col_ynode *v, const char *which,
			 enum ops_group g, int default_fused, struct col_variant *out)
{
	static const char *const keys[] = {"fusion", "plan", NULL};
	static const char *const fusions[] = {"none", "full", NULL};
	struct col_ynode *f, *p;
	int rc, e;

	memset(out, 0, sizeof *out);
	out->fused = default_fused;
	out->plan_auto = 1;
	out->plan.strategy = OPS_STRAT_DIRECT;
	out->plan.split_k = 1;
	out->plan.double_buffer = 1;
	if (!v)
		goto done;
	out->line = v->line;
	out->col = v->col;
	if ((rc = want(c, v, COL_Y_MAP, which)) || (rc = check_keys(c, v, keys)))
		return rc;
	if ((f = col_ymap_get(v, "fusion", NULL))) {
		if ((rc = get_enum(c, f, "fusion", fusions, &e)))
			return rc;
		out->fused = e;
	}
	p = col_ymap_get(v, "plan", NULL);
	if (!p || (p->kind == COL_Y_SCALAR && strcmp(p->text, "auto") == 0))
		goto done;
	if (p->kind != COL_Y_MAP)
		return fail(c, p, "'plan' must be 'auto' or a mapping");

	/* a pinned plan: strategy, the group's parameters, split_k, double_buffer */
	const char *allowed[OPS_PLAN_MAX_PARAMS + 4];
	const char *const *params = ops_plan_params(g);
	int np = 0, na = 0;
	allowed[na++] = "strategy";
	for (; params && params[np] && np < OPS_PLAN_MAX_PARAMS; np++)
		allowed[na++] = params[np];
	int has_split = 0;
	for (int i = 0; i < np; i++)
		has_split |= strcmp(params[i], "split_k") == 0;
	if (!has_split) /* some groups list split_k among their parameters */
		allowed[na++] = "split_k";
	allowed[na++] = "double_buffer";
	allowed[na] = NULL;
	if ((rc = check_keys(c, p, allowed)))
		return rc;
	out->plan_auto = 0;
	if ((f = col_ymap_get(p, "strategy", NULL))) {
		if ((rc = get_enum(c, f, "strategy", strategies, &e)))
			return rc;
		if ((e == OPS_STRAT_IM2COL || e == OPS_STRAT_WINOGRAD) && !group_is_conv(g))
			return fail(c, f, "strategy '%s' is only for conv2d groups", strategies[e]);
		out->plan.strategy = (enum ops_strategy)e;
	}
	for (int i = 0; i < np; i++)
		if (strcmp(params[i], "split_k") != 0 &&
		    (rc = opt_int(c, p, params[i], 1, COL_DIM_MAX, &out->plan.p[i])))
			return rc;
	int64_t sk = 1;
	if ((f = col_ymap_get(p, "split_k", NULL))) {
		if ((rc = get_int(c, f, "split_k", 1, 4096, &sk)))
			return rc;
		if (sk > 1 && !group_is_qgemm(g))
			return fail(c, f, "'split_k' applies only to qgemm groups");
	}
	out->plan.split_k = (int)sk;
	for (int i = 0; i < np; i++)
		if (strcmp(params[i], "split_k") == 0 && f)
			out->plan.p[i] = sk;
	if ((f = col_ymap_get(p, "double_buffer", NULL)) &&
	    (rc = get_bool(c, f, "double_buffer", &out->plan.double_buffer)))
		return rc;
done:
	out->plan.fused = out->fused;
	return 0;
}

/* "relu|gelu|..." or "conv2d|..." for messages. */
static void join_names(char *buf, size_t size, int n, int first,
		       const char *(*name)(int))
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = first; i < n && used < size; i++) {
		int w = snprintf(buf + used, size - used, "%s%s", i > first ? "|" : "", name(i));
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* The keys of a traffic mapping, over the values already in *t (the
 * defaults at the top level, the profile's traffic in a block). */
static int parse_traffic(const struct ld *c, const struct col_ynode *m, struct col_traffic *t)
{
	static const char *const akeys[] = {"process", "rate_rps", NULL};
	static const char *const bkeys[] = {"max", "timeout_us", NULL};
	static const char *const processes[] = {"poisson", "uniform", NULL};
	static const char *const placements[] = {"least-loaded", "round-robin", NULL};
	struct col_ynode *v, *sub;
	int64_t i64 = t->streams;
	int rc, e;

	if ((rc = opt_int(c, m, "streams", 1, 256, &i64)))
		return rc;
	t->streams = (int)i64;
	if ((rc = opt_map(c, m, "arrival", akeys, &sub)))
		return rc;
	if (sub && (v = col_ymap_get(sub, "process", NULL))) {
		if ((rc = get_enum(c, v, "process", processes, &e)))
			return rc;
		snprintf(t->process, sizeof t->process, "%s", processes[e]);
	}
	if (sub && (rc = opt_num(c, sub, "rate_rps", NUM_POSITIVE, &t->rate_rps)))
		return rc;
	if ((rc = opt_map(c, m, "batch", bkeys, &sub)))
		return rc;
	i64 = t->batch_max;
	if (sub && ((rc = opt_int(c, sub, "max", 1, 1024, &i64)) ||
		    (rc = opt_num(c, sub, "timeout_us", NUM_NONNEG, &t->batch_timeout_us))))
		return rc;
	t->batch_max = (int)i64;
	if ((v = col_ymap_get(m, "placement", NULL))) {
		if ((rc = get_enum(c, v, "placement", placements, &e)))
			return rc;
		snprintf(t->placement, sizeof t->placement, "%s", placements[e]);
	}
	return opt_int(c, m, "requests", 1, 10000000, &t->requests);
}

/* shape_origin: `synthetic` (the default), or {production: TRACE-OR-REVISION}
 * naming where a production shape was taken from. */
static int parse_shape_origin(const struct ld *c, const struct col_ynode *v, struct col_block *b)
{
	static const char *const keys[] = {"production", NULL};
	struct col_ynode *src;
	int rc;
	snprintf(b->shape_source, sizeof b->shape_source, "synthetic");
	if (!v)
		return 0;
	if (v->kind == COL_Y_SCALAR) {
		if (strcmp(v->text, "synthetic"))
			return fail(c, v, "'shape_origin' must be 'synthetic' or {production: TRACE}");
		return 0;
	}
	if ((rc = want(c, v, COL_Y_MAP, "shape_origin")) || (rc = check_keys(c, v, keys)) ||
	    (rc = need(c, v, "production", &src)) ||
	    (rc = get_str(c, src, "production", b->shape_source, sizeof b->shape_source, 0)))
		return rc;
	b->shape_production = 1;
	return 0;
}

/* A block of an imported profile: a name and the source's baseline and
 * candidate (a benchmark's or a kernel's name); no group, shape or plan, so
 * nothing opreview could run or model. */
static int parse_imported_block(const struct ld *c, const struct col_ynode *m,
				struct col_profile *p, struct col_block *b)
{
	static const char *const keys[] = {"name", "shape_origin", "baseline", "candidate", NULL};
	struct col_ynode *v;
	int rc;

	memset(b, 0, sizeof *b);
	b->line = m->line;
	b->col = m->col;
	if ((rc = want(c, m, COL_Y_MAP, "blocks")))
		return rc;
	static const char *const workload[] = {"group", "activation", "dtype", "shape", "quant",
		"traffic", NULL};
	for (int i = 0; workload[i]; i++)
		if ((v = col_ymap_get(m, workload[i], NULL)))
			return fail(c, v, "'%s' does not apply to a block of an imported profile "
				    "(its source ran the workload: no group, shape or plan)",
				    workload[i]);
	if ((rc = check_keys(c, m, keys)) || (rc = need(c, m, "name", &v)) ||
	    (rc = get_name(c, v, "block name", b->name)))
		return rc;
	for (int i = 0; i < p->nblocks; i++)
		if (strcmp(p->blocks[i].name, b->name) == 0)
			return fail(c, v, "duplicate block name '%s'", b->name);
	if ((rc = parse_shape_origin(c, col_ymap_get(m, "shape_origin", NULL), b)) ||
	    (rc = need(c, m, "baseline", &v)) ||
	    (rc = get_str(c, v, "baseline", b->source[0], sizeof b->source[0], 0)) ||
	    (rc = need(c, m, "candidate", &v)) ||
	    (rc = get_str(c, v, "candidate", b->source[1], sizeof b->source[1], 0)))
		return rc;
	b->baseline.line = b->candidate.line = b->line;
	b->baseline.col = b->candidate.col = b->col;
	return 0;
}

static const char *group_name_i(int i) { return ops_group_name((enum ops_group)i); }
static const char *act_name_i(int i) { return ops_act_name((enum ops_act)i); }

static int parse_block(const struct ld *c, const struct col_ynode *m,
		       struct col_profile *p, struct col_block *b)
{
	static const char *const keys[] = {"name", "group", "activation", "dtype", "shape",
		"shape_origin", "quant", "traffic", "baseline", "candidate", NULL};
	static const char *const tkeys[] = {"streams", "arrival", "batch", "placement",
		"requests", NULL};
	static const char *const float_dt[] = {"fp32", "fp16", "bf16", "int8", NULL};
	static const enum ops_dtype float_dt_v[] = {OPS_F32, OPS_F16, OPS_BF16, OPS_S8};
	struct ops_workload *w = &b->work;
	struct col_ynode *v, *sh;
	char list[300];
	int rc, e;

	memset(b, 0, sizeof *b);
	b->line = m->line;
	b->col = m->col;
	if ((rc = want(c, m, COL_Y_MAP, "blocks")) || (rc = check_keys(c, m, keys)) ||
	    (rc = need(c, m, "name", &v)) || (rc = get_name(c, v, "block name", b->name)))
		return rc;
	for (int i = 0; i < p->nblocks; i++)
		if (strcmp(p->blocks[i].name, b->name) == 0)
			return fail(c, v, "duplicate block name '%s'", b->name);

	if ((rc = need(c, m, "group", &v)) || (rc = want(c, v, COL_Y_SCALAR, "group")))
		return rc;
	if (ops_group_parse(v->text, &w->group) != 0) {
		join_names(list, sizeof list, OPS_NGROUPS, 0, group_name_i);
		return fail(c, v, "unknown group '%.100s' (want %s)", v->text, list);
	}
	enum ops_group g = w->group;

	if ((rc = need(c, m, "dtype", &v)) || (rc = get_enum(c, v, "dtype", float_dt, &e)))
		return rc;
	w->dtype = float_dt_v[e];
	if (group_is_qgemm(g) && w->dtype != OPS_S8)
		return fail(c, v, "group '%s' needs dtype int8", ops_group_name(g));
	if (!group_is_qgemm(g) && w->dtype == OPS_S8)
		return fail(c, v, "dtype 'int8' is not supported by group '%s' (want fp32|fp16|bf16)",
			    ops_group_name(g));

	w->act = OPS_ACT_NONE;
	v = col_ymap_get(m, "activation", NULL);
	if (group_has_act(g)) {
		if ((rc = need(c, m, "activation", &v)) || (rc = want(c, v, COL_Y_SCALAR, "activation")))
			return rc;
		if (ops_act_parse(v->text, &w->act) != 0 || w->act == OPS_ACT_NONE) {
			join_names(list, sizeof list, OPS_NACTS, 1, act_name_i);
			return fail(c, v, "unknown activation '%.100s' (want %s)", v->text, list);
		}
	} else if (v) {
		return fail(c, v, "group '%s' has no activation", ops_group_name(g));
	}

	if ((rc = need(c, m, "shape", &sh)) || (rc = want(c, sh, COL_Y_MAP, "shape")) ||
	    (rc = parse_shape_origin(c, col_ymap_get(m, "shape_origin", NULL), b)))
		return rc;
	if (group_is_conv(g))
		rc = parse_conv(c, sh, w->dtype, &w->conv);
	else if (group_is_qgemm(g))
		rc = parse_gemm(c, sh, &w->gemm);
	else
		rc = parse_tensor(c, sh, g, w->dtype, &w->tensor);
	if (rc)
		return rc;

	/* quantisation defaults: u8 activations, zero point 0, scale 1/64,
	 * per-tensor weight scales, dequantised fp32 output (requantised int8
	 * uses out_scale 1, zero point 0 unless given) */
	w->quant.a = OPS_U8;
	w->quant.a_scale = 0.015625f;
	w->quant.out = OPS_F32;
	w->quant.out_scale = 1.0f;
	v = col_ymap_get(m, "quant", NULL);
	if (v && !group_is_qgemm(g))
		return fail(c, v, "'quant' applies only to qgemm groups");
	if (group_is_qgemm(g) && (rc = parse_quant(c, v, &w->quant)))
		return rc;

	/* a block may see other traffic than the profile's (a vision stage
	 * serves images, a decoder tokens): its keys override the profile's */
	b->traffic = p->traffic;
	if ((rc = opt_map(c, m, "traffic", tkeys, &v)) || (v && (rc = parse_traffic(c, v, &b->traffic))))
		return rc;

	if ((rc = parse_variant(c, col_ymap_get(m, "baseline", NULL), "baseline", g, 0,
				&b->baseline)) ||
	    (rc = parse_variant(c, col_ymap_get(m, "candidate", NULL), "candidate", g, 1,
				&b->candidate)))
		return rc;
	if (!col_ymap_get(m, "baseline", NULL)) {
		b->baseline.line = b->line;
		b->baseline.col = b->col;
	}
	if (!col_ymap_get(m, "candidate", NULL)) {
		b->candidate.line = b->line;
		b->candidate.col = b->col;
	}
	return 0;
}

/* ---- the profile -------------------------------------------------------------- */

static const char *const roles[] = {"ml-compiler-engineer", "kernel-performance-owner",
	"runtime-systems-engineer", NULL};

static int parse_owners(const struct ld *c, const struct col_ynode *s, struct col_profile *p)
{
	static const char *const keys[] = {"role", "name", "key", NULL};
	int rc, e, seen[3] = {0, 0, 0};

	if ((rc = want(c, s, COL_Y_SEQ, "owners")))
		return rc;
	if (s->n == 0)
		return fail(c, s, "'owners' must list at least one owner");
	for (size_t i = 0; i < s->n; i++) {
		struct col_ynode *m = s->kids[i], *v;
		struct col_owner *o = &p->owners[p->nowners];
		if ((rc = want(c, m, COL_Y_MAP, "owners")) || (rc = check_keys(c, m, keys)) ||
		    (rc = need(c, m, "role", &v)) || (rc = get_enum(c, v, "role", roles, &e)))
			return rc;
		if (seen[e]++)
			return fail(c, v, "duplicate role '%s'", roles[e]);
		snprintf(o->role, sizeof o->role, "%s", roles[e]);
		if ((rc = need(c, m, "name", &v)) ||
		    (rc = get_str(c, v, "name", o->name, sizeof o->name, 0)) ||
		    (rc = need(c, m, "key", &v)) ||
		    (rc = get_str(c, v, "key", o->key, sizeof o->key, 0)))
			return rc;
		p->nowners++; /* at most one per role, so never past COL_MAX_OWNERS */
	}
	return 0;
}

/* PAPI event names: letters, digits and _:.=+- */
static int parse_events(const struct ld *c, const struct col_ynode *s, struct col_profile *p)
{
	int rc = want(c, s, COL_Y_SEQ, "events");
	if (rc)
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		struct col_ynode *v = s->kids[i];
		if (i >= COL_MAX_EVENTS)
			return fail(c, v, "too many events (the limit is %d)", COL_MAX_EVENTS);
		if ((rc = get_str(c, v, "events", p->events[p->nevents], COL_NAME_MAX, 0)))
			return rc;
		if (strspn(v->text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				    "0123456789_:.=+-") != v->len)
			return fail(c, v, "event name '%.100s' has a character outside [A-Za-z0-9_:.=+-]",
				    v->text);
		for (int j = 0; j < p->nevents; j++)
			if (strcmp(p->events[j], v->text) == 0)
				return fail(c, v, "duplicate event '%s'", v->text);
		p->nevents++;
	}
	return 0;
}

static const char *const metric_names[] = {"p95", "p99", "throughput", "model_time", NULL};

const char *col_metric_name(int m)
{
	return m >= 0 && m < COL_NMETRICS ? metric_names[m] : "?";
}

int col_metric_parse(const char *s)
{
	for (int i = 0; metric_names[i]; i++)
		if (!strcmp(s, metric_names[i]))
			return i;
	return -1;
}

/* The keys of the review across runs: primary_metric {block, variant,
 * metric}, history {path, window} and the free-text rationale. Read after
 * the blocks, which primary_metric names. */
static int parse_review(const struct ld *c, const struct col_ynode *root, struct col_profile *p)
{
	static const char *const pmkeys[] = {"block", "variant", "metric", NULL};
	static const char *const hkeys[] = {"path", "window", NULL};
	static const char *const variants[] = {"baseline", "candidate", NULL};
	struct col_ynode *m, *v;
	int rc, e;
	p->primary = (struct col_primary){0, 1, COL_M_P95, 0};
	if ((rc = opt_map(c, root, "primary_metric", pmkeys, &m)))
		return rc;
	if (m) {
		p->primary.given = 1;
		if ((v = col_ymap_get(m, "block", NULL))) {
			if ((rc = want(c, v, COL_Y_SCALAR, "block")))
				return rc;
			p->primary.block = -1;
			for (int i = 0; i < p->nblocks; i++)
				if (!strcmp(p->blocks[i].name, v->text))
					p->primary.block = i;
			if (p->primary.block < 0)
				return fail(c, v, "'block' names no block of the profile: '%.100s'", v->text);
		}
		if ((v = col_ymap_get(m, "variant", NULL))) {
			if ((rc = get_enum(c, v, "variant", variants, &e)))
				return rc;
			p->primary.variant = e;
		}
		if ((v = col_ymap_get(m, "metric", NULL))) {
			if ((rc = get_enum(c, v, "metric", metric_names, &e)))
				return rc;
			p->primary.metric = e;
		}
	}
	int64_t win = 20;
	if ((rc = opt_map(c, root, "history", hkeys, &m)))
		return rc;
	if (m && ((rc = need(c, m, "path", &v)) ||
		  (rc = get_str(c, v, "path", p->history, sizeof p->history, 0)) ||
		  (rc = opt_int(c, m, "window", 2, 1000, &win))))
		return rc;
	p->history_window = (int)win;
	if ((v = col_ymap_get(root, "rationale", NULL)) &&
	    (rc = get_str(c, v, "rationale", p->rationale, sizeof p->rationale, 0)))
		return rc;
	return 0;
}

static double half_of_ram_gib(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page <= 0)
		return 4.0; /* unknown: a modest cap */
	return (double)pages * (double)page / 2.0 / (1024.0 * 1024.0 * 1024.0);
}

const char *col_device_kind_name(int kind)
{
	return kind == COL_DEV_CUDA ? "cuda" : "host";
}

/* device: host | cuda | {kind: host|cuda, index: N}; the host by default. */
static int parse_device(const struct ld *c, const struct col_ynode *v, struct col_device *d)
{
	static const char *const kinds[] = {"host", "cuda", NULL};
	static const char *const dkeys[] = {"kind", "index", NULL};
	struct col_ynode *k = NULL;
	int64_t idx = 0;
	int kind = COL_DEV_HOST, rc;

	d->line = v->line;
	d->col = v->col;
	if (v->kind == COL_Y_MAP) {
		if ((rc = check_keys(c, v, dkeys)) || (rc = need(c, v, "kind", &k)) ||
		    (rc = opt_int(c, v, "index", 0, COL_DEV_INDEX_MAX, &idx)))
			return rc;
	} else if (v->kind != COL_Y_SCALAR) {
		return fail(c, v, "'device' must be host, cuda or a mapping {kind: cuda, index: N}");
	}
	if ((rc = get_enum(c, k ? k : v, "device", kinds, &kind)))
		return rc;
	if (kind == COL_DEV_HOST && k && col_ymap_get(v, "index", NULL))
		return fail(c, col_ymap_get(v, "index", NULL), "'index' is for a cuda device; the host has none");
	d->kind = kind;
	d->index = (int)idx;
	return 0;
}

static int parse_profile(const struct ld *c, const struct col_ynode *root,
			 const char *envelope_dir, struct col_profile *p)
{
	static const char *const keys[] = {"version", "name", "seed", "model_revision",
		"metadata", "envelope", "sla", "precision", "traffic", "budget", "events",
		"owners", "blocks", "primary_metric", "history", "rationale", "imported", "device", NULL};
	static const char *const formats[] = {"gbench", "ncu", NULL};
	static const char *const not_imported[] = {"envelope", "device", "precision", "traffic", "budget",
		"events", NULL};
	static const char *const mkeys[] = {"compiler", "runtime", "firmware", NULL};
	static const char *const slakeys[] = {"p95_us", "p99_us", "min_throughput_rps",
		"max_regression", NULL};
	static const char *const pkeys[] = {"fp32", "fp16", "bf16", "int8", NULL};
	static const char *const relkeys[] = {"max_rel_l2", NULL};
	static const char *const lsbkeys[] = {"max_abs_lsb", NULL};
	static const char *const tkeys[] = {"streams", "arrival", "batch", "placement",
		"requests", NULL};
	static const char *const budkeys[] = {"seconds", "min_samples", "max_samples",
		"memory_gib", NULL};
	struct col_ynode *v, *m, *sub;
	int64_t i64;
	int rc;

	if (root->kind != COL_Y_MAP)
		return fail(c, root, "expected a mapping at the top of the profile");
	if ((rc = check_keys(c, root, keys)))
		return rc;
	if ((rc = need(c, root, "version", &v)) ||
	    (rc = get_int(c, v, "version", 0, INT32_MAX, &i64)))
		return rc;
	if (i64 != 1)
		return fail(c, v, "unsupported version %lld (want 1)", (long long)i64);
	p->version = 1;
	if ((rc = need(c, root, "name", &v)) || (rc = get_name(c, v, "profile name", p->name)) ||
	    (rc = need(c, root, "seed", &v)) || (rc = get_u64(c, v, "seed", &p->seed)))
		return rc;
	if ((v = col_ymap_get(root, "model_revision", NULL)) &&
	    (rc = get_str(c, v, "model_revision", p->model_revision,
			  sizeof p->model_revision, 1)))
		return rc;
	if ((rc = opt_map(c, root, "metadata", mkeys, &m)))
		return rc;
	char *meta[] = {p->compiler, p->runtime, p->firmware};
	for (int i = 0; m && i < 3; i++)
		if ((v = col_ymap_get(m, mkeys[i], NULL)) &&
		    (rc = get_str(c, v, mkeys[i], meta[i], COL_TEXT_MAX, 1)))
			return rc;

	if ((v = col_ymap_get(root, "device", NULL)) && (rc = parse_device(c, v, &p->device)))
		return rc;
	/* imported measurements: what opreview did not run has no envelope,
	 * traffic, budget or events; an SLA and owners are optional */
	if ((v = col_ymap_get(root, "imported", NULL))) {
		int e;
		if ((rc = get_enum(c, v, "imported", formats, &e)))
			return rc;
		snprintf(p->imported, sizeof p->imported, "%s", formats[e]);
		for (int i = 0; not_imported[i]; i++)
			if ((v = col_ymap_get(root, not_imported[i], NULL)))
				return fail(c, v, "'%s' does not apply to an imported profile "
					    "(its measurements were taken outside opreview)",
					    not_imported[i]);
		snprintf(p->envelope.name, sizeof p->envelope.name, "none");
		snprintf(p->envelope_source, sizeof p->envelope_source, "none");
	} else if ((rc = need(c, root, "envelope", &v)) ||
		   (rc = load_envelope(c, v, envelope_dir, p))) {
		return rc;
	}
	p->envelope.cuda_executor = p->device.kind == COL_DEV_CUDA;

	/* sla: p95 <= p99, regression threshold 5% unless given */
	p->sla.max_regression = 0.05;
	if (p->imported[0] && !col_ymap_get(root, "sla", NULL)) {
		p->sla.p95_us = p->sla.p99_us = p->sla.min_throughput_rps = NAN;
	} else if ((rc = req_map(c, root, "sla", slakeys, &m)) ||
	    (rc = req_num(c, m, "p95_us", NUM_POSITIVE, &p->sla.p95_us)) ||
	    (rc = req_num(c, m, "p99_us", NUM_POSITIVE, &p->sla.p99_us)) ||
	    (rc = req_num(c, m, "min_throughput_rps", NUM_POSITIVE, &p->sla.min_throughput_rps)) ||
	    (rc = opt_num(c, m, "max_regression", NUM_FRACTION, &p->sla.max_regression)))
		return rc;
	if (m && p->sla.p99_us < p->sla.p95_us)
		return fail(c, col_ymap_get(m, "p99_us", NULL), "'p99_us' %g is below 'p95_us' %g",
			    p->sla.p99_us, p->sla.p95_us);

	/* precision defaults: about the rounding error of each storage dtype */
	p->precision.fp32_max_rel_l2 = 1e-5;
	p->precision.fp16_max_rel_l2 = 2e-3;
	p->precision.bf16_max_rel_l2 = 1.6e-2;
	p->precision.int8_max_abs_lsb = 1;
	double *rel[] = {&p->precision.fp32_max_rel_l2, &p->precision.fp16_max_rel_l2,
			 &p->precision.bf16_max_rel_l2};
	if ((rc = opt_map(c, root, "precision", pkeys, &m)))
		return rc;
	for (int i = 0; m && i < 3; i++)
		if ((rc = opt_map(c, m, pkeys[i], relkeys, &sub)) ||
		    (sub && (rc = opt_num(c, sub, "max_rel_l2", NUM_POSITIVE, rel[i]))))
			return rc;
	if (m && ((rc = opt_map(c, m, "int8", lsbkeys, &sub)) ||
		  (sub && (rc = opt_num(c, sub, "max_abs_lsb", NUM_NONNEG,
					&p->precision.int8_max_abs_lsb)))))
		return rc;

	/* traffic defaults: 4 Poisson streams at 1000 requests/s in all,
	 * batches of up to 8 waiting at most 200 us, least-loaded, 20000 requests */
	struct col_traffic *t = &p->traffic;
	t->streams = 4;
	snprintf(t->process, sizeof t->process, "poisson");
	t->rate_rps = 1000;
	t->batch_max = 8;
	t->batch_timeout_us = 200;
	snprintf(t->placement, sizeof t->placement, "least-loaded");
	t->requests = 20000;
	if ((rc = opt_map(c, root, "traffic", tkeys, &m)) || (m && (rc = parse_traffic(c, m, t))))
		return rc;

	/* budget defaults: 20 s, 50 to 2000 samples per variant, half the RAM */
	struct col_budget *bu = &p->budget;
	bu->seconds = 20;
	bu->min_samples = 50;
	bu->max_samples = 2000;
	bu->memory_gib = half_of_ram_gib();
	if ((rc = opt_map(c, root, "budget", budkeys, &m)))
		return rc;
	if (m && ((rc = opt_num(c, m, "seconds", NUM_POSITIVE, &bu->seconds)) ||
		  (rc = opt_int(c, m, "min_samples", 1, 10000000, &bu->min_samples)) ||
		  (rc = opt_int(c, m, "max_samples", 1, 10000000, &bu->max_samples)) ||
		  (rc = opt_num(c, m, "memory_gib", NUM_POSITIVE, &bu->memory_gib))))
		return rc;
	if (m && bu->seconds > 86400)
		return fail(c, col_ymap_get(m, "seconds", NULL),
			    "'seconds' %g exceeds the maximum 86400", bu->seconds);
	if (bu->max_samples < bu->min_samples)
		return fail(c, col_ymap_get(m, "max_samples", NULL) ? col_ymap_get(m, "max_samples", NULL)
			    : m ? m : root, "'max_samples' %lld is below 'min_samples' %lld",
			    (long long)bu->max_samples, (long long)bu->min_samples);

	if ((v = col_ymap_get(root, "events", NULL)) && (rc = parse_events(c, v, p)))
		return rc;
	if ((!p->imported[0] || col_ymap_get(root, "owners", NULL)) &&
	    ((rc = need(c, root, "owners", &v)) || (rc = parse_owners(c, v, p))))
		return rc;

	if ((rc = need(c, root, "blocks", &v)) || (rc = want(c, v, COL_Y_SEQ, "blocks")))
		return rc;
	if (v->n == 0)
		return fail(c, v, "'blocks' must list at least one block");
	for (size_t i = 0; i < v->n; i++) {
		if (i >= COL_MAX_BLOCKS)
			return fail(c, v->kids[i], "too many blocks (the limit is %d)", COL_MAX_BLOCKS);
		if ((rc = p->imported[0] ? parse_imported_block(c, v->kids[i], p, &p->blocks[p->nblocks])
					 : parse_block(c, v->kids[i], p, &p->blocks[p->nblocks])))
			return rc;
		p->nblocks++;
	}
	return parse_review(c, root, p);
}

int col_profile_load(const char *path, const char *envelope_dir,
		     struct col_profile **out, struct opr_error *err)
{
	struct ld c = {path, err};
	struct col_profile *p;
	struct col_ynode *root;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof *p);
	if (!p)
		return opr_error_set(err, OPR_ENOMEM, "out of memory loading '%s'", path);
	snprintf(p->path, sizeof p->path, "%s", path);
	rc = read_input(path, "profile", &p->text, &p->text_len, &root, err);
	if (rc)
		goto out_profile;
	rc = parse_profile(&c, root, envelope_dir, p);
	col_ynode_free(root);
	if (rc)
		goto out_profile;
	*out = p;
	return 0;
out_profile:
	col_profile_free(p);
	return rc;
}

int col_profile_from_text(const char *name, const char *text, size_t len,
			  struct col_profile **out, struct opr_error *err)
{
	struct ld c = {name, err};
	struct col_ynode *root = NULL;
	struct col_profile *p = calloc(1, sizeof *p);
	int rc;

	*out = NULL;
	if (!p || !(p->text = malloc(len + 1))) {
		free(p);
		return opr_error_set(err, OPR_ENOMEM, "out of memory parsing '%s'", name);
	}
	memcpy(p->text, text, len);
	p->text[len] = '\0';
	p->text_len = len;
	snprintf(p->path, sizeof p->path, "%s", name);
	rc = col_yaml_check_utf8(name, p->text, len, err);
	if (!rc)
		rc = col_yaml_parse(name, p->text, len, &root, err);
	if (!rc && !root)
		rc = opr_error_at(err, OPR_EINPUT, name, 1, 1, "profile is empty");
	if (!rc)
		rc = parse_profile(&c, root, NULL, p);
	col_ynode_free(root);
	if (rc) {
		col_profile_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void col_profile_free(struct col_profile *p)
{
	if (!p)
		return;
	free(p->text);
	free(p);
}

/* ---- describing a workload ------------------------------------------------- */

static const char *dtype_label(enum ops_dtype t)
{
	return t == OPS_S8 ? "int8" : ops_dtype_name(t);
}

/* Appends to buf at *used, never past len. */
static void add(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	if (*used >= len)
		return;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (w > 0)
		*used += (size_t)w;
}

/* "stride1", "stride2x1" */
static void add_pair(char *buf, size_t len, size_t *used, const char *name,
		     int64_t h, int64_t w)
{
	if (h == w)
		add(buf, len, used, " %s%lld", name, (long long)h);
	else
		add(buf, len, used, " %s%lldx%lld", name, (long long)h, (long long)w);
}

void col_workload_describe(const struct ops_workload *w, char *buf, size_t len)
{
	size_t used = 0;
	if (!buf || len == 0)
		return;
	buf[0] = '\0';
	add(buf, len, &used, "%s %s", ops_group_name(w->group), dtype_label(w->dtype));
	if (group_is_conv(w->group)) {
		const struct ops_conv_shape *s = &w->conv;
		add(buf, len, &used, " n%lld c%lld h%lld w%lld k%lld r%lld s%lld",
		    (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w,
		    (long long)s->k, (long long)s->r, (long long)s->s);
		add_pair(buf, len, &used, "stride", s->stride_h, s->stride_w);
		add_pair(buf, len, &used, "pad", s->pad_h, s->pad_w);
		if (s->dil_h != 1 || s->dil_w != 1)
			add_pair(buf, len, &used, "dilation", s->dil_h, s->dil_w);
		if (s->groups != 1)
			add(buf, len, &used, " groups%lld", (long long)s->groups);
	} else if (group_is_qgemm(w->group)) {
		const struct ops_quant *q = &w->quant;
		add(buf, len, &used, " m%lld n%lld k%lld a=%s zp%d %s out=%s",
		    (long long)w->gemm.m, (long long)w->gemm.n, (long long)w->gemm.k,
		    ops_dtype_name(q->a), (int)q->a_zero_point,
		    q->b_per_channel ? "per-channel" : "per-tensor", dtype_label(q->out));
	} else {
		const struct ops_tensor_shape *s = &w->tensor;
		add(buf, len, &used, " dims[");
		for (int i = 0; i < s->rank; i++)
			add(buf, len, &used, "%s%lld", i ? "," : "", (long long)s->dims[i]);
		add(buf, len, &used, "]");
		if (group_is_permute(w->group)) {
			add(buf, len, &used, " perm(");
			for (int i = 0; i < s->rank; i++)
				add(buf, len, &used, "%s%d", i ? "," : "", s->perm[i]);
			add(buf, len, &used, ")");
		}
	}
	if (group_has_act(w->group))
		add(buf, len, &used, " %s", ops_act_name(w->act));
}
