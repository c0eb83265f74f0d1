/* report/report.h: the contract of report/: the handoff packet rendered from
 * findings.json (a jansson tree, schema in fixtures/findings/SCHEMA.md) and the
 * run archive: packet.md through templates, packet.html through cmark-gfm with
 * SVG charts, packet.xlsx through libxlsxwriter; and owner sign-off with
 * Ed25519 keys (libsodium). */
#ifndef REPORT_H
#define REPORT_H

#include <jansson.h>
#include <time.h>

#include "../analyze/analyze.h"
#include "signoff.h"

/* A file every packet holds: `run --force` replaces only a folder holding it. */
#define REP_PACKET_MARKER "findings.json"

/* Markdown packet from findings through templates_dir/packet.md.mustache
 * (templates_dir NULL: the built-in templates/ folder). *md malloc'd. */
int rep_markdown(json_t *findings, const char *templates_dir, char **md,
		 struct opr_error *err);
/* Self-contained HTML page: md rendered by cmark-gfm (tables, task lists),
 * inline CSS, SVG charts from findings. *html malloc'd. */
int rep_html(const char *md, json_t *findings, char **html, struct opr_error *err);
/* Checks that md parses with cmark-gfm; *tables gets the number of tables. */
int rep_markdown_check(const char *md, int *tables, struct opr_error *err);
/* Workbook (Summary, Findings, Worksheet, Validation, Pipeline, Samples,
 * Counters, Environment, Model) with native charts; byte-reproducible for a given
 * `created` time. samples_csv: the archive's samples.csv (may be NULL). */
int rep_xlsx(json_t *findings, const char *samples_csv, const char *path,
	     time_t created, struct opr_error *err);

struct rep_options {
	const char *templates_dir; /* NULL: built-in */
	time_t created;            /* pinned in the workbook; 0: SOURCE_DATE_EPOCH, else the
				    * archive's start time */
};
/* Writes packet.md, packet.html, packet.xlsx, findings.json and owners.json
 * into out_dir (which must exist) from the findings tree and the archive. */
int rep_packet(json_t *findings, const struct col_run *run, const char *archive_dir,
	       const char *out_dir, const struct rep_options *o, struct opr_error *err);

/* The history a run goes into: flag (as given) if set, else the profile's
 * history key resolved against the profile's folder; "" when none. */
void rep_history_path(const char *flag, const struct col_run *run, char *buf, size_t n);
/* With db set: adds the analyzed archive to the history db and puts the
 * primary metric's trend over comparable runs into findings as "trend"
 * (report/trend.c). db NULL: nothing. */
int rep_history_trend(const char *db, const char *archive, const struct ana_findings *f,
		      json_t *findings, struct opr_error *err);


#endif
