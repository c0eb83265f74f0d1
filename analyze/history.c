/* analyze/history.c: the history of runs in SQLite (Debian's libsqlite3; the
 * one file that includes sqlite3.h). A run is keyed by its archive's digest,
 * so adding an archive twice changes nothing; each archive goes in with one
 * BEGIN IMMEDIATE transaction, and the database runs in WAL mode with a busy
 * timeout, so concurrent adders queue instead of failing or corrupting it.
 * The schema is versioned by PRAGMA user_version and migrated one step at a
 * time (MIGRATIONS below); values are ns for latencies, 1/s for throughput. */
#include "analyze_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct ana_history {
	sqlite3 *db;
	char path[512];
};

#define BUSY_TIMEOUT_MS 30000

/* MIGRATIONS[i] brings the schema from version i to i + 1. Never edit a
 * step once released: add one. */
static const char *const MIGRATIONS[ANA_HISTORY_SCHEMA] = {
	/* 0 -> 1: runs and their results */
	"CREATE TABLE runs ("
	" digest TEXT PRIMARY KEY,"
	" added_utc TEXT NOT NULL,"
	" started_utc TEXT NOT NULL,"
	" profile TEXT NOT NULL,"
	" host_class TEXT NOT NULL,"
	" hostname TEXT NOT NULL,"
	" envelope TEXT NOT NULL,"
	" envelope_sha256 TEXT NOT NULL,"
	" model_revision TEXT NOT NULL,"
	" tool_version TEXT NOT NULL,"
	" verdict TEXT NOT NULL,"
	" archive TEXT NOT NULL);"
	"CREATE TABLE results ("
	" digest TEXT NOT NULL REFERENCES runs(digest),"
	" block TEXT NOT NULL,"
	" variant TEXT NOT NULL,"
	" metric TEXT NOT NULL,"
	" value REAL, lo REAL, hi REAL,"
	" unit TEXT NOT NULL,"
	" provenance TEXT NOT NULL,"
	" reason TEXT,"
	" PRIMARY KEY (digest, block, variant, metric));",
	/* 1 -> 2: where a run came from (collected by opreview or imported) and
	 * the profile's primary metric; an index for the trend query */
	"ALTER TABLE runs ADD COLUMN provenance TEXT NOT NULL DEFAULT 'collected';"
	"ALTER TABLE runs ADD COLUMN primary_metric TEXT NOT NULL DEFAULT '';"
	"CREATE INDEX results_series ON results (block, variant, metric);",
};

static int db_fail(struct ana_history *h, struct opr_error *err, const char *what)
{
	int code = sqlite3_errcode(h->db);
	return opr_error_set(err, code == SQLITE_NOMEM ? OPR_ENOMEM : OPR_EIO, "history '%s': %s: %s",
			     h->path, what, sqlite3_errmsg(h->db));
}

static int exec(struct ana_history *h, const char *sql, struct opr_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(h->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		int rc = opr_error_set(err, OPR_EIO, "history '%s': %s", h->path,
				       msg ? msg : sqlite3_errmsg(h->db));
		sqlite3_free(msg);
		return rc;
	}
	return 0;
}

static int user_version(struct ana_history *h)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(h->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

int ana_history_schema(struct ana_history *h)
{
	return user_version(h);
}

/* Each step re-reads the version inside its write transaction: another
 * process may have migrated meanwhile. */
static int migrate(struct ana_history *h, struct opr_error *err)
{
	for (;;) {
		int rc = exec(h, "BEGIN IMMEDIATE", err);
		if (rc)
			return rc;
		int v = user_version(h);
		if (v < 0) {
			rc = db_fail(h, err, "reading the schema version");
			goto rollback;
		}
		if (v > ANA_HISTORY_SCHEMA) {
			rc = opr_error_set(err, OPR_EINPUT,
					   "history '%s': schema version %d is newer than this opreview's %d",
					   h->path, v, ANA_HISTORY_SCHEMA);
			goto rollback;
		}
		if (v == ANA_HISTORY_SCHEMA)
			return exec(h, "COMMIT", err);
		char bump[64];
		snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
		if ((rc = exec(h, MIGRATIONS[v], err)) || (rc = exec(h, bump, err)) ||
		    (rc = exec(h, "COMMIT", err)))
			goto rollback;
	}
rollback:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return err->code ? err->code : OPR_EIO;
}

/* Switches a database into WAL mode (persistent: a no-op once done). The switch
 * needs the database to itself, and SQLite answers SQLITE_BUSY at once, without
 * the busy handler, while another connection has it open: so wait and retry,
 * for as long as the busy timeout, as concurrent adders of a new database do. */
static int enter_wal(struct ana_history *h, struct opr_error *err)
{
	for (int waited_ms = 0;; waited_ms += 5) {
		int rc = sqlite3_exec(h->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			return 0;
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited_ms >= BUSY_TIMEOUT_MS)
			return db_fail(h, err, "cannot enter WAL mode");
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
}

int ana_history_open(const char *path, struct ana_history **out, struct opr_error *err)
{
	*out = NULL;
	struct ana_history *h = calloc(1, sizeof *h);
	if (!h)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	snprintf(h->path, sizeof h->path, "%s", path);
	int rc;
	if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		rc = h->db ? db_fail(h, err, "cannot open")
			   : opr_error_set(err, OPR_ENOMEM, "out of memory opening '%s'", path);
		goto fail;
	}
	sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
	sqlite3_extended_result_codes(h->db, 0);
	/* a file that is not a database fails here, on its first read */
	if ((rc = enter_wal(h, err)) ||
	    (rc = exec(h, "PRAGMA foreign_keys = ON", err)) ||
	    (rc = exec(h, "PRAGMA synchronous = NORMAL", err)))
		goto fail;
	if ((rc = migrate(h, err)))
		goto fail;
	*out = h;
	return 0;
fail:
	ana_history_close(h);
	return rc;
}

void ana_history_close(struct ana_history *h)
{
	if (!h)
		return;
	sqlite3_close(h->db);
	free(h);
}

int ana_archive_digest(const char *dir, char out[65], struct opr_error *err)
{
	/* rounds.csv is absent from archives older than the host counters: a
	 * file that is not there is left out of the list, so their digests hold */
	static const struct {
		const char *name;
		int optional;
	} files[] = {{"manifest.json", 0}, {"samples.csv", 0}, {"counters.csv", 0},
		     {"pipeline.json", 0}, {"rounds.csv", 1}};
	char list[5 * 96 + 1] = "", path[1100], d[65];
	size_t used = 0;
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		char *data = NULL;
		size_t len = 0;
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
		if (files[i].optional && stat(path, &st) && errno == ENOENT)
			continue;
		int rc = opr_read_file(path, &data, &len, 1u << 30, err);
		if (rc)
			return rc;
		col_sha256_hex(data, len, d);
		free(data);
		used += (size_t)snprintf(list + used, sizeof list - used, "%s  %s\n", d, files[i].name);
	}
	col_sha256_hex(list, used, out);
	return 0;
}

/* An imported run's class is where its source measured: an ncu CSV names a
 * device, not a host CPU. */
static void host_class(const struct col_run *run, char *buf, size_t n)
{
	const struct col_host *host = &run->host;
	if (!strcmp(run->import.format, "ncu"))
		snprintf(buf, n, "imported ncu: %s", run->import.device);
	else
		snprintf(buf, n, "%s / %d cpus", host->cpu_model, host->cpus_online);
}

/* A digest over the envelope's parameters (what the device model sees). */
void ana_envelope_digest(const struct ops_envelope *e, char out[65])
{
	char s[1024];
	int n = snprintf(s, sizeof s,
			 "%s|%s|%.17g|%d|%.17g|%.17g|%.17g|%.17g|%lld|%.17g|%d|%d|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g",
			 e->name, e->power_mode, e->clock_ghz, e->cores, e->global_bw_gbps,
			 e->shared_capacity_kib, e->shared_bw_gbps, e->local_capacity_kib,
			 (long long)e->dma_max_last_dim, e->dma_setup_ns, e->dma_engines, e->dma_serial,
			 e->tops[OPS_F32], e->tops[OPS_F16], e->tops[OPS_BF16], e->tops[OPS_S8],
			 e->vector_tops, e->vector_half_tops, e->launch_overhead_us);
	col_sha256_hex(s, n > 0 ? (size_t)n : 0, out);
}

static void bind_num(sqlite3_stmt *st, int i, double x)
{
	if (isfinite(x))
		sqlite3_bind_double(st, i, x);
	else
		sqlite3_bind_null(st, i);
}

static int put_result(struct ana_history *h, sqlite3_stmt *st, const char *digest,
		      const char *block, const char *variant, const char *metric, double v,
		      double lo, double hi, const char *unit, const char *prov, const char *reason,
		      struct opr_error *err)
{
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, block, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, variant, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, metric, -1, SQLITE_TRANSIENT);
	bind_num(st, 5, v);
	bind_num(st, 6, lo);
	bind_num(st, 7, hi);
	sqlite3_bind_text(st, 8, unit, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, prov, -1, SQLITE_STATIC);
	if (reason && *reason)
		sqlite3_bind_text(st, 10, reason, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 10);
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_fail(h, err, "writing a result");
	return 0;
}

static int put_qci(struct ana_history *h, sqlite3_stmt *st, const char *digest, const char *block,
		   const char *variant, const char *metric, const struct ana_qci *q, size_t n,
		   const char *prov, struct opr_error *err)
{
	if (!n)
		return put_result(h, st, digest, block, variant, metric, NAN, NAN, NAN, "ns",
				  "unavailable", "no host samples", err);
	return put_result(h, st, digest, block, variant, metric, q->estimate,
			  q->available ? q->lo : NAN, q->available ? q->hi : NAN, "ns", prov,
			  q->available ? NULL : q->reason, err);
}

/* The results of one block's variant. */
static int put_variant(struct ana_history *h, sqlite3_stmt *st, const char *digest,
		       const struct ana_findings *f, int b, int v, struct opr_error *err)
{
	const struct col_run *run = f->run;
	const char *block = run->blocks[b].block->name, *var = col_variant_name(v);
	const struct ana_latency *l = &f->blocks[b].lat[v];
	const struct col_variant_run *vr = &run->blocks[b].v[v];
	const char *prov = run->profile->imported[0] ? "imported" : "measured";
	int rc;
	if ((rc = put_qci(h, st, digest, block, var, "p50", &l->p50, l->n, prov, err)) ||
	    (rc = put_qci(h, st, digest, block, var, "p95", &l->p95, l->n, prov, err)) ||
	    (rc = put_qci(h, st, digest, block, var, "p99", &l->p99, l->n, prov, err)))
		return rc;
	struct ana_value x;
	for (int m = COL_M_THROUGHPUT; m <= COL_M_MODEL_TIME; m++) {
		ana_value_eval(f, b, v, m, &x);
		if ((rc = put_result(h, st, digest, block, var, col_metric_name(m), x.value, x.lo, x.hi,
				     x.unit, ana_prov_name(x.prov), x.reason, err)))
			return rc;
	}
	double pp = vr->pipe.n ? vr->pipe.p95_ns : NAN;
	if ((rc = put_result(h, st, digest, block, var, "pipeline_p95", pp, vr->pipe_p95_lo,
			     vr->pipe_p95_hi, "ns", isfinite(pp) ? "simulated" : "unavailable",
			     isfinite(pp) ? NULL : "no pipeline simulation", err)))
		return rc;
	/* an imported run's counters: those its source had, per sample */
	for (int k = 0; k < vr->next; k++) {
		char name[128];
		if (!vr->ext[k].available)
			continue;
		snprintf(name, sizeof name, "imported:%s", vr->ext[k].name);
		if ((rc = put_result(h, st, digest, block, var, name, vr->ext[k].value, NAN, NAN,
				     vr->ext[k].unit[0] ? vr->ext[k].unit : "1", "imported", NULL, err)))
			return rc;
	}
	/* counters: only those the host had, per sample (totals over samples) */
	for (size_t e = 0; vr->event_totals && e < run->nevents; e++) {
		if (!run->events[e].available || !vr->nsamples)
			continue;
		char name[96];
		snprintf(name, sizeof name, "papi:%s", run->events[e].name);
		if ((rc = put_result(h, st, digest, block, var, name,
				     (double)vr->event_totals[e] / (double)vr->nsamples, NAN, NAN,
				     "1", "papi", NULL, err)))
			return rc;
	}
	return 0;
}

int ana_history_add(struct ana_history *h, const char *archive_dir, const struct ana_findings *f,
		    int *added, struct opr_error *err)
{
	char digest[65], env[65], hc[256], now[32];
	const struct col_run *run = f->run;
	const struct col_profile *p = run->profile;
	sqlite3_stmt *ins = NULL, *res = NULL;
	int rc;
	*added = 0;
	if ((rc = ana_archive_digest(archive_dir, digest, err)))
		return rc;
	ana_envelope_digest(&p->envelope, env);
	host_class(run, hc, sizeof hc);
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if ((rc = exec(h, "BEGIN IMMEDIATE", err)))
		return rc;
	if (sqlite3_prepare_v2(h->db,
			       "INSERT OR IGNORE INTO runs (digest, added_utc, started_utc, profile,"
			       " host_class, hostname, envelope, envelope_sha256, model_revision,"
			       " tool_version, verdict, archive, provenance, primary_metric)"
			       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(h->db,
			       "INSERT INTO results (digest, block, variant, metric, value, lo, hi,"
			       " unit, provenance, reason) VALUES (?,?,?,?,?,?,?,?,?,?)",
			       -1, &res, NULL) != SQLITE_OK) {
		rc = db_fail(h, err, "preparing");
		goto rollback;
	}
	char pm[160];
	snprintf(pm, sizeof pm, "%s/%s/%s", p->blocks[p->primary.block].name,
		 col_variant_name(p->primary.variant), col_metric_name(p->primary.metric));
	const char *vals[] = {digest, now, run->started_utc, p->name, hc, run->host.hostname,
			      p->envelope.name, env, p->model_revision, run->host.tool_version,
			      ana_verdict_name(f->verdict), f->archive_dir,
			      p->imported[0] ? "imported" : "collected", pm};
	for (int i = 0; i < 14; i++)
		sqlite3_bind_text(ins, i + 1, vals[i], -1, SQLITE_STATIC);
	if (sqlite3_step(ins) != SQLITE_DONE) {
		rc = db_fail(h, err, "writing the run");
		goto rollback;
	}
	if (sqlite3_changes(h->db) == 0) { /* this archive is there already */
		sqlite3_finalize(ins);
		sqlite3_finalize(res);
		return exec(h, "ROLLBACK", err);
	}
	for (int b = 0; b < run->nblocks && !rc; b++)
		for (int v = 0; v < 2 && !rc; v++)
			rc = put_variant(h, res, digest, f, b, v, err);
	if (rc)
		goto rollback;
	sqlite3_finalize(ins);
	sqlite3_finalize(res);
	ins = res = NULL;
	if ((rc = exec(h, "COMMIT", err)))
		goto rollback;
	*added = 1;
	return 0;
rollback:
	sqlite3_finalize(ins);
	sqlite3_finalize(res);
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t n)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	snprintf(buf, n, "%s", s ? (const char *)s : "");
}

static double col_num(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int ana_history_trend(struct ana_history *h, const char *ref, const char *block,
		      const char *variant, const char *metric, size_t last, struct ana_trend *t,
		      struct opr_error *err)
{
	memset(t, 0, sizeof *t);
	sqlite3_stmt *st = NULL;
	int rc = 0;
	struct ana_series_key *k = &t->key;
	/* the reference run: its key is the series' key */
	const char *q_ref = ref && *ref
		? "SELECT profile, host_class, envelope, envelope_sha256, model_revision, digest"
		  " FROM runs WHERE digest LIKE ?1 || '%' ORDER BY started_utc DESC, rowid DESC LIMIT 2"
		: "SELECT profile, host_class, envelope, envelope_sha256, model_revision, digest"
		  " FROM runs ORDER BY started_utc DESC, rowid DESC LIMIT 1";
	if (sqlite3_prepare_v2(h->db, q_ref, -1, &st, NULL) != SQLITE_OK)
		return db_fail(h, err, "reading runs");
	if (ref && *ref)
		sqlite3_bind_text(st, 1, ref, -1, SQLITE_STATIC);
	int found = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (found++)
			break;
		col_text(st, 0, k->profile, sizeof k->profile);
		col_text(st, 1, k->host_class, sizeof k->host_class);
		col_text(st, 2, k->envelope, sizeof k->envelope);
		col_text(st, 3, k->envelope_sha256, sizeof k->envelope_sha256);
		col_text(st, 4, k->model_revision, sizeof k->model_revision);
	}
	sqlite3_finalize(st);
	if (!found)
		return opr_error_set(err, OPR_EINPUT, "history '%s': no run%s%s", h->path,
				     ref && *ref ? " with digest " : "", ref && *ref ? ref : "");
	if (found > 1)
		return opr_error_set(err, OPR_EINPUT, "history '%s': digest prefix '%s' is ambiguous",
				     h->path, ref);
	snprintf(k->block, sizeof k->block, "%s", block);
	snprintf(k->variant, sizeof k->variant, "%s", variant);
	snprintf(k->metric, sizeof k->metric, "%s", metric);
	/* the newest `last` comparable runs, then oldest first; runs that started in
	 * the same second (the times have 1 s resolution) in the order they were
	 * added (rowid), never by digest, which is random */
	static const char *const q =
		"SELECT * FROM (SELECT r.digest, r.started_utc, r.verdict, r.provenance, x.value, x.lo,"
		" x.hi, x.unit, x.provenance, r.rowid AS seq FROM runs r JOIN results x ON x.digest = r.digest"
		" WHERE r.profile = ?1 AND x.block = ?2 AND x.variant = ?3 AND x.metric = ?4"
		" AND r.host_class = ?5 AND r.envelope_sha256 = ?6 AND r.model_revision = ?7"
		" AND x.value IS NOT NULL ORDER BY r.started_utc DESC, r.rowid DESC LIMIT ?8)"
		" ORDER BY started_utc, seq";
	if (sqlite3_prepare_v2(h->db, q, -1, &st, NULL) != SQLITE_OK)
		return db_fail(h, err, "reading the series");
	const char *binds[] = {k->profile, block, variant, metric, k->host_class, k->envelope_sha256,
			       k->model_revision};
	for (int i = 0; i < 7; i++)
		sqlite3_bind_text(st, i + 1, binds[i], -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)(last ? last : ANA_CP_MAX));
	size_t cap = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (t->n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct ana_trend_point *np = realloc(t->pts, nc * sizeof *np);
			if (!np) {
				sqlite3_finalize(st);
				ana_trend_release(t);
				return opr_error_set(err, OPR_ENOMEM, "out of memory");
			}
			t->pts = np;
			cap = nc;
		}
		struct ana_trend_point *p = &t->pts[t->n++];
		col_text(st, 0, p->digest, sizeof p->digest);
		col_text(st, 1, p->started_utc, sizeof p->started_utc);
		col_text(st, 2, p->verdict, sizeof p->verdict);
		col_text(st, 3, p->provenance, sizeof p->provenance);
		p->value = col_num(st, 4);
		p->lo = col_num(st, 5);
		p->hi = col_num(st, 6);
		col_text(st, 7, t->unit, sizeof t->unit);
		col_text(st, 8, t->value_provenance, sizeof t->value_provenance);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		ana_trend_release(t);
		return db_fail(h, err, "reading the series");
	}
	t->higher_is_better = !strcmp(metric, "throughput");
	/* what was kept apart, and why */
	static const char *const qa =
		"SELECT COUNT(*), SUM(r.host_class <> ?5), SUM(r.envelope_sha256 <> ?6),"
		" SUM(r.model_revision <> ?7) FROM runs r JOIN results x ON x.digest = r.digest"
		" WHERE r.profile = ?1 AND x.block = ?2 AND x.variant = ?3 AND x.metric = ?4"
		" AND (r.host_class <> ?5 OR r.envelope_sha256 <> ?6 OR r.model_revision <> ?7)";
	if (sqlite3_prepare_v2(h->db, qa, -1, &st, NULL) != SQLITE_OK) {
		ana_trend_release(t);
		return db_fail(h, err, "reading the series");
	}
	for (int i = 0; i < 7; i++)
		sqlite3_bind_text(st, i + 1, binds[i], -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		t->apart = (size_t)sqlite3_column_int64(st, 0);
		size_t used = 0;
		static const char *const why[] = {"host class", "envelope", "model revision"};
		for (int i = 0; i < 3; i++)
			if (sqlite3_column_int64(st, i + 1) > 0)
				used += (size_t)snprintf(t->apart_why + used, sizeof t->apart_why - used,
							 "%s%s", used ? ", " : "", why[i]);
	}
	sqlite3_finalize(st);
	if (t->n >= 3) {
		double y[ANA_CP_MAX], w[ANA_CP_MAX];
		size_t n = t->n < ANA_CP_MAX ? t->n : ANA_CP_MAX;
		for (size_t i = 0; i < n; i++) {
			y[i] = t->pts[i].value;
			w[i] = t->pts[i].hi - t->pts[i].lo;
		}
		if ((rc = ana_changepoints(y, w, n, ANA_CP_THRESHOLD, t->higher_is_better, &t->cp, err))) {
			ana_trend_release(t);
			return rc;
		}
		t->cp_done = 1;
	}
	return 0;
}

int ana_history_primary(struct ana_history *h, const char *ref, char *buf, size_t n,
			struct opr_error *err)
{
	sqlite3_stmt *st;
	const char *q = ref && *ref
		? "SELECT primary_metric FROM runs WHERE digest LIKE ?1 || '%' ORDER BY started_utc DESC, rowid DESC LIMIT 1"
		: "SELECT primary_metric FROM runs ORDER BY started_utc DESC, rowid DESC LIMIT 1";
	if (sqlite3_prepare_v2(h->db, q, -1, &st, NULL) != SQLITE_OK)
		return db_fail(h, err, "reading runs");
	if (ref && *ref)
		sqlite3_bind_text(st, 1, ref, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		col_text(st, 0, buf, n);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return opr_error_set(err, OPR_EINPUT, "history '%s': no run%s%s", h->path,
				     ref && *ref ? " with digest " : "", ref && *ref ? ref : "");
	return 0;
}

void ana_trend_release(struct ana_trend *t)
{
	free(t->pts);
	t->pts = NULL;
	t->n = 0;
}

static json_t *jnum(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *ana_trend_json(const struct ana_trend *t)
{
	const struct ana_series_key *k = &t->key;
	json_t *o = json_object(), *pts = json_array(), *ch = json_array(), *steps = json_array();
	json_object_set_new(o, "key", json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "profile",
						k->profile, "block", k->block, "variant", k->variant,
						"metric", k->metric, "host_class", k->host_class,
						"envelope", k->envelope, "envelope_sha256",
						k->envelope_sha256, "model_revision", k->model_revision));
	json_object_set_new(o, "unit", json_string(t->unit));
	json_object_set_new(o, "provenance", json_string(t->value_provenance));
	json_object_set_new(o, "higher_is_better", json_boolean(t->higher_is_better));
	for (size_t i = 0; i < t->n; i++) {
		const struct ana_trend_point *p = &t->pts[i];
		int moved = 0;
		for (size_t c = 0; c < t->cp.nchanges; c++)
			moved |= t->cp.changes[c].at == i;
		json_array_append_new(pts, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:b}", "digest",
						     p->digest, "started_utc", p->started_utc,
						     "verdict", p->verdict, "run_provenance",
						     p->provenance, "value", jnum(p->value), "lo",
						     jnum(p->lo), "hi", jnum(p->hi), "change", moved));
	}
	json_object_set_new(o, "points", pts);
	for (size_t c = 0; t->cp_done && c < t->cp.nchanges; c++) {
		const struct ana_change *x = &t->cp.changes[c];
		json_array_append_new(ch, json_pack("{s:I,s:s,s:o,s:o,s:o,s:s}", "at", (json_int_t)x->at,
						    "digest", t->pts[x->at].digest, "before",
						    jnum(x->before), "after", jnum(x->after), "rel",
						    jnum(x->rel), "direction",
						    x->worse ? "worse" : "better"));
	}
	for (size_t s = 0; t->cp_done && s < t->cp.nsteps; s++) {
		const struct ana_step *x = &t->cp.steps[s];
		json_array_append_new(steps, json_pack("{s:I,s:I,s:o}", "from", (json_int_t)x->left, "to",
						       (json_int_t)x->right, "level", jnum(x->value)));
	}
	json_object_set_new(o, "changes", ch);
	json_object_set_new(o, "steps", steps);
	json_object_set_new(o, "tested", json_boolean(t->cp_done));
	json_object_set_new(o, "method",
			    json_string("asv step detection (asv/step_detect.py): weighted L1 Potts fit, "
					"gamma by asv's information criterion, asv's detect_regressions "
					"rule with a 5% threshold"));
	json_object_set_new(o, "apart", json_integer((json_int_t)t->apart));
	json_object_set_new(o, "apart_why", json_string(t->apart_why));
	return o;
}
