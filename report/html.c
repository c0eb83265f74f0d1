/* report/html.c: rep_html: the self-contained HTML page of the packet: the
 * Markdown rendered by cmark-gfm, tables wrapped so they scroll on a phone,
 * the SVG charts from findings in a "Charts" section, and inline CSS for
 * screen, print and narrow screens. No external resource of any kind. */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>

static const char CSS[] =
	":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--head:#f6f8fa;--bad:#b42318;}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0;color:var(--fg);background:#fff;font:15px/1.5 system-ui,-apple-system,"
	"'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}\n"
	"main{max-width:1200px;margin:0 auto;padding:8px 20px 64px;overflow-wrap:anywhere}\n"
	/* the decision fits a 1280x800 window: tight paragraphs and lists */
	"p,ul{margin:.5em 0}li{margin:0}li>ul{margin:0}\n"
	"pre{overflow-x:auto}\n"
	"h1{font-size:1.6em;margin:.4em 0 .5em;border-bottom:2px solid var(--line);padding-bottom:.3em}\n"
	"h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid var(--line);padding-bottom:.2em}\n"
	"h3,h4{margin-top:1.4em}\n"
	"code{font:0.9em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--head);"
	"padding:.1em .3em;border-radius:4px;word-break:break-word}\n"
	".table-wrap{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:1em 0;"
	"border:1px solid var(--line);border-radius:6px}\n"
	"table{border-collapse:collapse;width:100%;font-size:.88em}\n"
	"th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}\n"
	"th{background:var(--head);position:sticky;top:0}\n"
	"tr:nth-child(even) td{background:#fbfcfd}\n"
	"td strong,td em{white-space:nowrap}\n"
	"ul.contains-task-list,li.task-list-item{list-style:none}\n"
	"details.long{margin:1em 0}details.long>summary{cursor:pointer;color:var(--muted)}\n"
	"figure.chart{margin:1.5em 0;break-inside:avoid;page-break-inside:avoid}\n"
	"figure.chart svg{display:block;width:100%;max-width:100%;height:auto;"
	"border:1px solid var(--line);border-radius:6px}\n"
	"figcaption{color:var(--muted);font-size:.9em;margin-top:.3em}\n"
	"@media (max-width:640px){body{font-size:14px}main{padding:12px 10px 40px}"
	"h1{font-size:1.3em}table{font-size:.8em}th,td{padding:4px 6px}}\n"
	"@media print{body{font-size:10pt}main{max-width:none;padding:0}"
	".table-wrap{overflow:visible;border:none}table{font-size:8pt}th{position:static}"
	"h2{break-after:avoid;page-break-after:avoid}tr,figure{break-inside:avoid;page-break-inside:avoid}"
	"a{color:inherit;text-decoration:none}}\n";

static void xml_text(struct opr_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '&')
			opr_buf_puts(b, "&amp;");
		else if (*s == '<')
			opr_buf_puts(b, "&lt;");
		else if (*s == '>')
			opr_buf_puts(b, "&gt;");
		else
			opr_buf_add(b, s, 1);
	}
}

/* Body rows of the table that starts at p (cmark writes one <tr> per row,
 * the header's included). */
static size_t table_rows(const char *p)
{
	const char *end = strstr(p, "</table>");
	size_t n = 0;
	for (const char *q = strstr(p, "<tr>"); q && (!end || q < end); q = strstr(q + 4, "<tr>"))
		n++;
	return n ? n - 1 : 0;
}

/* Copies body into b with every <table> inside a scrolling wrapper, a long
 * one (more than REP_HTML_OPEN_ROWS rows) collapsed in a <details> that says
 * how many rows it holds, so the page reads as the Markdown's outline; and
 * the charts inserted before the "Inputs" heading or at the end when there
 * is no such heading. */
#define REP_HTML_OPEN_ROWS 8
static void assemble(struct opr_buf *b, const char *body, const char *charts)
{
	static const char anchor[] = "<h2>Inputs</h2>";
	const char *insert = charts && *charts ? strstr(body, anchor) : NULL;
	const char *p = body;
	int collapsed = 0;
	while (*p) {
		if (p == insert) {
			opr_buf_puts(b, "<section id=\"charts\">\n<h2>Charts</h2>\n");
			opr_buf_puts(b, charts);
			opr_buf_puts(b, "</section>\n");
			insert = NULL;
		}
		if (!strncmp(p, "<table>", 7)) {
			size_t rows = table_rows(p);
			collapsed = rows > REP_HTML_OPEN_ROWS;
			if (collapsed)
				opr_buf_printf(b, "<details class=\"long\"><summary>Show the table (%zu rows)</summary>", rows);
			opr_buf_puts(b, "<div class=\"table-wrap\"><table>");
			p += 7;
		} else if (!strncmp(p, "</table>", 8)) {
			opr_buf_puts(b, collapsed ? "</table></div></details>" : "</table></div>");
			collapsed = 0;
			p += 8;
		} else {
			opr_buf_add(b, p, 1);
			p++;
		}
	}
	if (charts && *charts && !strstr(body, anchor)) {
		opr_buf_puts(b, "<section id=\"charts\">\n<h2>Charts</h2>\n");
		opr_buf_puts(b, charts);
		opr_buf_puts(b, "</section>\n");
	}
}

int rep_html(const char *md, json_t *findings, char **html, struct opr_error *err)
{
	char *body = NULL, *charts = NULL;
	int ncharts = 0;
	int rc = rep_md_to_html(md, &body, err);
	if (rc)
		return rc;
	if (findings && (rc = rep_svg_charts(findings, &charts, &ncharts, err))) {
		free(body);
		return rc;
	}
	struct opr_buf b = { 0 };
	opr_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
	/* the page title is the packet's first line without the "# " */
	const char *t = md;
	while (*t == '\n')
		t++;
	if (*t == '#') {
		while (*t == '#' || *t == ' ')
			t++;
		size_t n = strcspn(t, "\n");
		char title[512];
		snprintf(title, sizeof title, "%.*s", (int)(n < 500 ? n : 500), t);
		/* drop Markdown escapes from the title */
		char clean[512];
		size_t k = 0;
		for (size_t i = 0; title[i] && k + 1 < sizeof clean; i++) {
			if (title[i] == '\\' && title[i + 1])
				i++;
			clean[k++] = title[i];
		}
		clean[k] = '\0';
		xml_text(&b, clean);
	} else {
		opr_buf_puts(&b, "Fusion and tiling review");
	}
	opr_buf_puts(&b, "</title>\n<style>\n");
	opr_buf_puts(&b, CSS);
	opr_buf_puts(&b, "</style>\n</head>\n<body>\n<main>\n");
	assemble(&b, body, charts);
	opr_buf_puts(&b, "</main>\n</body>\n</html>\n");
	free(body);
	free(charts);
	char *s = opr_buf_take(&b);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	*html = s;
	return 0;
}
