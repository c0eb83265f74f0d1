/* report/report_int.h: internals shared by the files of report/ only (and
 * their tests): the packet's template language (mustache-style, documented in
 * templates/README.md), the text buffer, the view that turns findings into
 * display strings for it, and the SVG charts of the HTML page. Other folders
 * use report/report.h. */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include <jansson.h>

#include "report.h"

#define REP_TEMPLATE_MAX_PARTIAL_DEPTH 16 /* partials including partials */
#define REP_TEMPLATE_MAX_SECTION_DEPTH 64 /* nested sections (context stack) */
#define REP_TEMPLATE_MAX_BYTES (4u << 20) /* one template file */

/* Text is built in struct opr_buf (opreview.h). */

/* Renders dir/name.mustache with the context ctx (an object, borrowed).
 * Partials {{> p}} load dir/p.mustache. Syntax errors, unknown partials and
 * recursion beyond the limits are OPR_EINPUT with file, line and column.
 * *out is malloc'd; the caller frees it. */
int rep_template_render(const char *dir, const char *name, json_t *ctx, char **out,
			struct opr_error *err);
/* The same from template text; origin names it in error messages; dir may be
 * NULL (then every partial is unknown). *out malloc'd, the caller frees it. */
int rep_template_render_string(const char *text, const char *origin, const char *dir,
			       json_t *ctx, char **out, struct opr_error *err);
/* Appends s to a Markdown document so that it reads as literal text: escapes
 * the characters Markdown gives meaning to (| included, so table cells are
 * safe) and newlines become spaces. line_start: s begins a line, so a
 * leading list or heading marker is escaped too. Returns the malloc'd text
 * (the caller frees it) or NULL when out of memory. */
char *rep_md_escape(const char *s, int line_start);

/* The built-in templates folder: $OPREVIEW_TEMPLATES, else ./templates when it
 * holds packet.md.mustache, else templates/ beside the executable. Returns a
 * static string (never NULL). */
const char *rep_templates_dir(void);

/* The template context of the packet: findings with every number formatted
 * for display (units, CIs, provenance tags, status badges), plus the lists the
 * templates iterate. findings is borrowed; *view is a new reference the caller
 * releases with json_decref. */
int rep_view_new(json_t *findings, json_t **view, struct opr_error *err);
/* ---- building the view (view_util.c), shared by view.c and view_review.c ----
 * A builder remembers an allocation failure (oom) instead of every call checking:
 * the view is returned only when none failed. Lookups tolerate a missing key:
 * rep_vget NULL, rep_vstr "", rep_vnum NAN. */
struct rep_vb {
	int oom;
};
json_t *rep_vget(json_t *o, const char *k);
const char *rep_vstr(json_t *o, const char *k);
double rep_vnum(json_t *o, const char *k);
void rep_vset(struct rep_vb *vb, json_t *o, const char *k, json_t *v); /* steals v */
void rep_vsetf(struct rep_vb *vb, json_t *o, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rep_vsets(struct rep_vb *vb, json_t *o, const char *k, const char *s);
json_t *rep_vpush(struct rep_vb *vb, json_t *a); /* a new object appended to a */

/* The sign-off roles: team, responsibility and closure artifact (seed 002). */
#define REP_NROLES 3
struct rep_ownership {
	const char *role, *team, *responsibility, *artifact;
};
extern const struct rep_ownership REP_OWNERSHIP[REP_NROLES];

/* Adds the review-across-runs parts to a view (report/view_review.c):
 * primary, trend (false without a history), shapes, shapes_note, closure.
 * Returns 0 or OPR_ENOMEM. */
int rep_view_review(json_t *findings, json_t *view);

/* Markdown to an HTML fragment with cmark-gfm (tables, task lists,
 * strikethrough, autolinks, tag filter; raw HTML omitted). *html malloc'd,
 * the caller frees it. */
int rep_md_to_html(const char *md, char **html, struct opr_error *err);

/* The charts of the HTML page as a sequence of <figure> elements, each with
 * one inline <svg>: latency percentiles, queue-wait histograms, rooflines and
 * fusion before/after. Deterministic for given findings. *html malloc'd, the
 * caller frees it. *ncharts gets the number of <svg> elements. */
int rep_svg_charts(json_t *findings, char **html, int *ncharts, struct opr_error *err);

#endif
