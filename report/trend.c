/* report/trend.c: a run's place in its history: `run` records the analyzed
 * archive in the history database and puts the primary metric's series over
 * the comparable runs (with asv's change points) into findings.json as
 * "trend", which the packet's trend section, its SVG chart and the
 * workbook's Trend sheet render. */
#include "report.h"

#include <libgen.h>
#include <string.h>

void rep_history_path(const char *flag, const struct col_run *run, char *buf, size_t n)
{
	buf[0] = '\0';
	if (flag && *flag) {
		snprintf(buf, n, "%s", flag);
		return;
	}
	const char *h = run->profile->history;
	if (!*h)
		return;
	if (h[0] == '/') {
		snprintf(buf, n, "%s", h);
		return;
	}
	char origin[512];
	snprintf(origin, sizeof origin, "%s", run->profile_origin);
	snprintf(buf, n, "%s/%s", dirname(origin), h);
}

int rep_history_trend(const char *db, const char *archive, const struct ana_findings *f,
		      json_t *findings, struct opr_error *err)
{
	if (!db)
		return 0;
	struct ana_history *h = NULL;
	struct ana_trend t;
	char digest[65];
	int added = 0, rc;
	const struct col_profile *p = f->run->profile;
	if ((rc = ana_history_open(db, &h, err)))
		return rc;
	if ((rc = ana_history_add(h, archive, f, &added, err)) ||
	    (rc = ana_archive_digest(archive, digest, err)))
		goto out;
	rc = ana_history_trend(h, digest, p->blocks[p->primary.block].name,
			       col_variant_name(p->primary.variant), col_metric_name(p->primary.metric),
			       (size_t)(p->history_window > 0 ? p->history_window : 20), &t, err);
	if (rc)
		goto out;
	json_t *tj = ana_trend_json(&t);
	ana_trend_release(&t);
	if (!tj || json_object_set_new(tj, "history", json_string(db)) ||
	    json_object_set_new(tj, "this_run", json_string(digest)) ||
	    json_object_set_new(findings, "trend", tj))
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
out:
	ana_history_close(h);
	return rc;
}
