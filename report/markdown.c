/* report/markdown.c: the one file that speaks cmark-gfm: renders the Markdown
 * packet from findings through the templates, checks that it parses (tables
 * count, no table row stranded in a paragraph) and converts it to HTML. */
#include "report_int.h"

#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>
#include <stdlib.h>
#include <string.h>

/* Safe mode: raw HTML in the Markdown is omitted from the HTML. */
#define MD_OPTIONS (CMARK_OPT_DEFAULT | CMARK_OPT_VALIDATE_UTF8)

static const char *const EXTENSIONS[] = { "table", "tasklist", "strikethrough", "autolink",
					  "tagfilter" };

int rep_markdown(json_t *findings, const char *templates_dir, char **md, struct opr_error *err)
{
	json_t *view = NULL;
	int rc = rep_view_new(findings, &view, err);
	if (rc)
		return rc;
	rc = rep_template_render(templates_dir ? templates_dir : rep_templates_dir(), "packet.md",
				 view, md, err);
	json_decref(view);
	return rc;
}

/* A parser with the GFM extensions attached; NULL when out of memory. */
static cmark_parser *new_parser(void)
{
	cmark_gfm_core_extensions_ensure_registered();
	cmark_parser *p = cmark_parser_new(MD_OPTIONS);
	if (!p)
		return NULL;
	for (size_t i = 0; i < sizeof EXTENSIONS / sizeof EXTENSIONS[0]; i++) {
		cmark_syntax_extension *e = cmark_find_syntax_extension(EXTENSIONS[i]);
		if (!e || !cmark_parser_attach_syntax_extension(p, e)) {
			cmark_parser_free(p);
			return NULL;
		}
	}
	return p;
}

/* The first byte of line `line` (1-based) of md. */
static const char *line_at(const char *md, int line)
{
	for (int l = 1; l < line && md; l++) {
		md = strchr(md, '\n');
		if (md)
			md++;
	}
	return md ? md : "";
}

int rep_markdown_check(const char *md, int *tables, struct opr_error *err)
{
	cmark_parser *p = new_parser();
	if (!p)
		return opr_error_set(err, OPR_ENOMEM, "cannot create the markdown parser");
	cmark_parser_feed(p, md, strlen(md));
	cmark_node *doc = cmark_parser_finish(p);
	if (!doc) {
		cmark_parser_free(p);
		return opr_error_set(err, OPR_ENOMEM, "cannot parse the markdown packet");
	}
	int n = 0, rc = 0;
	cmark_iter *it = cmark_iter_new(doc);
	cmark_event_type ev;
	while (it && (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		if (ev != CMARK_EVENT_ENTER)
			continue;
		cmark_node *node = cmark_iter_get_node(it);
		if (!strcmp(cmark_node_get_type_string(node), "table")) {
			n++;
		} else if (cmark_node_get_type(node) == CMARK_NODE_PARAGRAPH) {
			/* a pipe row that did not join a table: a blank line or a
			 * bad delimiter row broke the table */
			int line = cmark_node_get_start_line(node);
			const char *s = line_at(md, line);
			while (*s == ' ')
				s++;
			if (*s == '|') {
				rc = opr_error_at(err, OPR_EINPUT, "packet.md", line, 1,
						  "table row outside a table");
				break;
			}
		}
	}
	if (!it)
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
	cmark_iter_free(it);
	cmark_node_free(doc);
	cmark_parser_free(p);
	if (!rc)
		*tables = n;
	return rc;
}

/* The page must not reference anything outside itself: links whose target is
 * not a "#fragment" (autolinked URLs and e-mail addresses included) are
 * replaced by their text, images by their alt text. Returns 0 or -1 when out
 * of memory. */
static int unwrap_external(cmark_node *doc)
{
	cmark_node *n = cmark_node_first_child(doc);
	while (n) {
		cmark_node_type t = cmark_node_get_type(n);
		const char *url = (t == CMARK_NODE_LINK || t == CMARK_NODE_IMAGE)
					  ? cmark_node_get_url(n) : NULL;
		if (url && url[0] != '#') {
			cmark_node *child;
			while ((child = cmark_node_first_child(n)))
				if (!cmark_node_insert_before(n, child))
					return -1;
			cmark_node *next = cmark_node_next(n);
			cmark_node *parent = cmark_node_parent(n);
			cmark_node_free(n); /* unlinks it */
			n = next ? next : parent;
			if (!next) {
				/* continue after the parent */
				while (n && n != doc && !cmark_node_next(n))
					n = cmark_node_parent(n);
				n = n && n != doc ? cmark_node_next(n) : NULL;
			}
			continue;
		}
		/* depth-first: children, then siblings, then up */
		if (cmark_node_first_child(n)) {
			n = cmark_node_first_child(n);
			continue;
		}
		while (n && n != doc && !cmark_node_next(n))
			n = cmark_node_parent(n);
		n = n && n != doc ? cmark_node_next(n) : NULL;
	}
	return 0;
}

int rep_md_to_html(const char *md, char **html, struct opr_error *err)
{
	cmark_parser *p = new_parser();
	if (!p)
		return opr_error_set(err, OPR_ENOMEM, "cannot create the markdown parser");
	cmark_parser_feed(p, md, strlen(md));
	cmark_node *doc = cmark_parser_finish(p);
	if (doc && unwrap_external(doc)) {
		cmark_node_free(doc);
		cmark_parser_free(p);
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	char *h = doc ? cmark_render_html(doc, MD_OPTIONS, cmark_parser_get_syntax_extensions(p)) : NULL;
	if (doc)
		cmark_node_free(doc);
	cmark_parser_free(p);
	if (!h)
		return opr_error_set(err, OPR_ENOMEM, "cannot render the markdown packet");
	/* cmark allocates with the system allocator by default: plain free() */
	*html = h;
	return 0;
}
