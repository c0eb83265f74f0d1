/* report/packet.c: assembles the packet directory: findings.json, packet.md,
 * packet.html, packet.xlsx and owners.json, each written with fsync. */
#include "report_int.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES_CSV (512u << 20)

static int write_in(const char *dir, const char *name, const char *data, size_t len,
		    struct opr_error *err)
{
	char path[1024];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s'", dir, name);
	return opr_write_file(path, data, len, err);
}

/* The workbook's creation time: pinned by the caller, else SOURCE_DATE_EPOCH,
 * else when the archive's run started: never the clock, so one archive gives
 * the same bytes whenever and wherever it is rendered. */
static time_t created_time(const struct rep_options *o, const struct col_run *run)
{
	if (o && o->created)
		return o->created;
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (sde && *sde) {
		char *end;
		long long v = strtoll(sde, &end, 10);
		if (!*end && v > 0)
			return (time_t)v;
	}
	struct tm tm = {0};
	const char *end = run ? strptime(run->started_utc, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	time_t t = end && !*end ? timegm(&tm) : (time_t)-1;
	/* an archive without a start time: the epoch the zip format starts at */
	return t > 0 ? t : (time_t)315532800;
}

/* closure/<role>.md for each owner role (the view's closure list) through
 * closure_artifact.mustache: what that role's sign-off covers. */
static int write_closure(json_t *findings, const char *templates, const char *out_dir,
			 struct opr_error *err)
{
	json_t *view = NULL, *entry;
	char dir[1024], path[1100];
	size_t i;
	int rc = rep_view_new(findings, &view, err);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/closure_artifact.mustache", templates);
	if (access(path, R_OK)) /* a team's folder of an older layout */
		templates = rep_templates_dir();
	snprintf(dir, sizeof dir, "%s/%s", out_dir, REP_CLOSURE_DIR);
	if ((rc = opr_mkdirs(dir, err)))
		goto out;
	json_array_foreach(json_object_get(view, "closure"), i, entry) {
		json_t *ctx = json_deep_copy(entry);
		char *md = NULL;
		const char *name = json_string_value(json_object_get(json_object_get(findings, "profile"), "name"));
		const char *verdict = json_string_value(json_object_get(findings, "verdict"));
		if (!ctx || json_object_set_new(ctx, "profile", json_string(name ? name : "")) ||
		    json_object_set_new(ctx, "verdict", json_string(verdict ? verdict : ""))) {
			json_decref(ctx);
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
			goto out;
		}
		rc = rep_template_render(templates, "closure_artifact", ctx, &md, err);
		json_decref(ctx);
		if (!rc) {
			snprintf(path, sizeof path, "%s.md", json_string_value(json_object_get(entry, "role")));
			rc = write_in(dir, path, md, strlen(md), err);
		}
		free(md);
		if (rc)
			goto out;
	}
	rc = opr_fsync_dir(dir, err);
out:
	json_decref(view);
	return rc;
}

int rep_packet(json_t *findings, const struct col_run *run, const char *archive_dir,
	       const char *out_dir, const struct rep_options *o, struct opr_error *err)
{
	char *md = NULL, *html = NULL, *fj = NULL, *csv = NULL;
	size_t csv_len = 0;
	int tables = 0;
	int rc;
	fj = json_dumps(findings, JSON_SORT_KEYS | JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	if (!fj)
		return opr_error_set(err, OPR_ENOMEM, "cannot serialise findings");
	if ((rc = write_in(out_dir, "findings.json", fj, strlen(fj), err)))
		goto out;
	if ((rc = rep_markdown(findings, o ? o->templates_dir : NULL, &md, err)))
		goto out;
	if ((rc = rep_markdown_check(md, &tables, err)))
		goto out;
	if ((rc = write_in(out_dir, "packet.md", md, strlen(md), err)))
		goto out;
	if ((rc = rep_html(md, findings, &html, err)))
		goto out;
	if ((rc = write_in(out_dir, "packet.html", html, strlen(html), err)))
		goto out;
	char path[1024];
	snprintf(path, sizeof path, "%s/samples.csv", archive_dir);
	if ((rc = opr_read_file(path, &csv, &csv_len, MAX_SAMPLES_CSV, err)))
		goto out;
	snprintf(path, sizeof path, "%s/packet.xlsx", out_dir);
	if ((rc = rep_xlsx(findings, csv, path, created_time(o, run), err)))
		goto out;
	if ((rc = write_closure(findings, o && o->templates_dir ? o->templates_dir : rep_templates_dir(),
				out_dir, err)))
		goto out;
	char origin[512];
	snprintf(origin, sizeof origin, "%s", run->profile_origin);
	rc = rep_owners_write(out_dir, run->profile->owners, run->profile->nowners,
			      dirname(origin), err);
out:
	free(fj);
	free(md);
	free(html);
	free(csv);
	return rc;
}
