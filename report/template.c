/* report/template.c: the mustache-style template language of the packet
 * (templates/README.md): parse a template into a flat node list, check it whole,
 * load its partials eagerly, then render against a jansson context stack. */
#include "report_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Markdown escaping ---- */

/* Characters with inline meaning in GFM; '|' splits table cells, '~' is
 * strikethrough, '<' raw HTML or autolinks. (E-mail autolinks cannot be
 * escaped away; markdown.c unwraps every external link when it renders HTML.) A backslash before any ASCII
 * punctuation is literal in CommonMark, so over-escaping is harmless. */
static int md_special(char c)
{
	return c && strchr("\\`*_[]<>#|~", c) != NULL;
}

char *rep_md_escape(const char *s, int line_start)
{
	struct opr_buf b = { 0 };
	size_t n = strlen(s);
	size_t i = 0;
	if (line_start) {
		/* "- x", "+ x", "= x" and "12. x" / "12) x" would start a list,
		 * a thematic break or a setext underline at the start of a line */
		if (s[0] == '-' || s[0] == '+' || s[0] == '=') {
			opr_buf_add(&b, "\\", 1);
		} else {
			size_t d = 0;
			while (d < 10 && s[d] >= '0' && s[d] <= '9')
				d++;
			if (d > 0 && (s[d] == '.' || s[d] == ')')) {
				opr_buf_add(&b, s, d);
				opr_buf_add(&b, "\\", 1);
				i = d;
			}
		}
	}
	for (; i < n; i++) {
		char c = s[i];
		if (c == '\n' || c == '\r' || c == '\t') {
			opr_buf_add(&b, " ", 1);
			continue;
		}
		if (md_special(c) ||
		    (c == '&' && (s[i + 1] == '#' || (s[i + 1] >= 'a' && s[i + 1] <= 'z') ||
				  (s[i + 1] >= 'A' && s[i + 1] <= 'Z'))) ||
		    /* keep the GFM autolink extension from turning text into links */
		    (c == ':' && s[i + 1] == '/' && s[i + 2] == '/') ||
		    (c == '.' && i >= 3 && !strncmp(s + i - 3, "www", 3)))
			opr_buf_add(&b, "\\", 1);
		opr_buf_add(&b, &c, 1);
	}
	return opr_buf_take(&b);
}

/* ---- templates ---- */

enum tkind { TK_TEXT, TK_VAR, TK_RAW, TK_SECTION, TK_INVERTED, TK_CLOSE, TK_PARTIAL };

struct tnode {
	enum tkind kind;
	size_t off;   /* TK_TEXT: first byte; tags: offset of the opening braces */
	size_t len;   /* TK_TEXT: length */
	char *name;   /* tags: the trimmed name (malloc'd) */
	size_t end;   /* sections: index of the matching TK_CLOSE */
};

struct tpl {
	char *src;
	size_t len;
	char *origin;  /* file path (or caller's name) for messages */
	char *pname;   /* partial name; NULL for the root template */
	struct tnode *n;
	size_t nn, cap;
	struct tpl *next;
};

struct rstate {
	const char *dir;
	struct tpl *partials;
	json_t *stack[REP_TEMPLATE_MAX_SECTION_DEPTH + 1];
	int sp;
	int pdepth;
	struct opr_buf out;
	struct opr_error *err;
};

static void tpl_free(struct tpl *t)
{
	while (t) {
		struct tpl *next = t->next;
		for (size_t i = 0; i < t->nn; i++)
			free(t->n[i].name);
		free(t->n);
		free(t->src);
		free(t->origin);
		free(t->pname);
		free(t);
		t = next;
	}
}

static void line_col(const struct tpl *t, size_t off, int *line, int *col)
{
	int l = 1, c = 1;
	for (size_t i = 0; i < off && i < t->len; i++) {
		if (t->src[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*col = c;
}

static int tpl_error(struct opr_error *err, const struct tpl *t, size_t off, const char *fmt,
		     const char *a, const char *b)
{
	int line, col;
	char msg[600];
	line_col(t, off, &line, &col);
	snprintf(msg, sizeof msg, fmt, a, b);
	return opr_error_at(err, OPR_EINPUT, t->origin, line, col, "%s", msg);
}

static int add_node(struct tpl *t, enum tkind kind, size_t off, size_t len, const char *name,
		    size_t name_len)
{
	if (kind == TK_TEXT && len == 0)
		return 0;
	if (OPR_GROW(t->n, t->nn, t->cap, 64))
		return OPR_ENOMEM;
	struct tnode *x = &t->n[t->nn];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	x->off = off;
	x->len = len;
	if (name) {
		x->name = malloc(name_len + 1);
		if (!x->name)
			return OPR_ENOMEM;
		memcpy(x->name, name, name_len);
		x->name[name_len] = '\0';
	}
	t->nn++;
	return 0;
}

static int valid_name(const char *s, size_t n, int partial)
{
	if (n == 0)
		return 0;
	if (!partial && n == 1 && s[0] == '.')
		return 1;
	if (s[0] == '.' || s[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '-' || c == '.';
		if (!ok || (c == '.' && s[i + 1] == '.'))
			return 0;
	}
	return 1;
}

/* A tag alone on its line (only blanks around it) is "standalone": the whole
 * line, its newline included, disappears from the output (mustache spec). On
 * return *cut is where the preceding text ends and *resume where text
 * continues. */
static int standalone(const struct tpl *t, size_t open, size_t close, size_t *cut,
		      size_t *resume)
{
	size_t a = open;
	while (a > 0 && (t->src[a - 1] == ' ' || t->src[a - 1] == '\t'))
		a--;
	if (a > 0 && t->src[a - 1] != '\n')
		return 0;
	size_t z = close;
	while (z < t->len && (t->src[z] == ' ' || t->src[z] == '\t'))
		z++;
	if (z < t->len && t->src[z] == '\r' && z + 1 < t->len && t->src[z + 1] == '\n')
		z += 2;
	else if (z < t->len && t->src[z] == '\n')
		z++;
	else if (z < t->len)
		return 0;
	*cut = a;
	*resume = z;
	return 1;
}

static int parse(struct tpl *t, struct opr_error *err)
{
	size_t open[REP_TEMPLATE_MAX_SECTION_DEPTH];
	int sp = 0, rc;
	size_t i = 0, text = 0;
	for (;;) {
		const char *p = strstr(t->src + i, "{{");
		if (!p) {
			if ((rc = add_node(t, TK_TEXT, text, t->len - text, NULL, 0)))
				return opr_error_set(err, rc, "out of memory");
			break;
		}
		size_t o = (size_t)(p - t->src), q, nb, ne;
		enum tkind kind;
		const char *s = p + 2;
		if (*s == '{') {
			const char *c = strstr(s + 1, "}}}");
			if (!c)
				return tpl_error(err, t, o, "unclosed tag '{{{' (no '}}}')%s%s", "", "");
			kind = TK_RAW;
			nb = (size_t)(s + 1 - t->src);
			ne = (size_t)(c - t->src);
			q = ne + 3;
		} else {
			const char *c = strstr(s, "}}");
			if (!c)
				return tpl_error(err, t, o, "unclosed tag '{{' (no '}}')%s%s", "", "");
			nb = (size_t)(s - t->src);
			ne = (size_t)(c - t->src);
			q = ne + 2;
			switch (*s) {
			case '#': kind = TK_SECTION; nb++; break;
			case '^': kind = TK_INVERTED; nb++; break;
			case '/': kind = TK_CLOSE; nb++; break;
			case '>': kind = TK_PARTIAL; nb++; break;
			case '&': kind = TK_RAW; nb++; break;
			case '!': kind = TK_TEXT; nb = ne; break; /* comment */
			case '=':
				return tpl_error(err, t, o, "bad tag: set-delimiter tags are not supported%s%s",
						 "", "");
			default: kind = TK_VAR; break;
			}
		}
		int comment = kind == TK_TEXT;
		while (nb < ne && (t->src[nb] == ' ' || t->src[nb] == '\t'))
			nb++;
		while (ne > nb && (t->src[ne - 1] == ' ' || t->src[ne - 1] == '\t'))
			ne--;
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(ne - nb < 100 ? ne - nb : 100), t->src + nb);
		if (!comment && !valid_name(t->src + nb, ne - nb, kind == TK_PARTIAL))
			return tpl_error(err, t, o,
					 kind == TK_PARTIAL ? "bad partial name '%s'%s"
							    : "bad tag: name '%s' is not a key path%s",
					 name, "");
		size_t cut = o, resume = q;
		if (comment || kind == TK_SECTION || kind == TK_INVERTED || kind == TK_CLOSE ||
		    kind == TK_PARTIAL)
			standalone(t, o, q, &cut, &resume);
		if ((rc = add_node(t, TK_TEXT, text, cut - text, NULL, 0)))
			return opr_error_set(err, rc, "out of memory");
		if (kind == TK_CLOSE) {
			if (sp == 0)
				return tpl_error(err, t, o, "close tag '%s' without an open section%s", name,
						 "");
			struct tnode *sec = &t->n[open[sp - 1]];
			if (strlen(sec->name) != ne - nb || memcmp(sec->name, t->src + nb, ne - nb)) {
				char where[160];
				int l, c;
				line_col(t, sec->off, &l, &c);
				snprintf(where, sizeof where, "'%s' opened at %d:%d", sec->name, l, c);
				return tpl_error(err, t, o, "mismatched close tag '%s': section %s", name,
						 where);
			}
			sec->end = t->nn;
			sp--;
		}
		if (!comment) {
			if (kind == TK_SECTION || kind == TK_INVERTED) {
				if (sp == REP_TEMPLATE_MAX_SECTION_DEPTH)
					return tpl_error(err, t, o, "sections nested deeper than %s%s", "64",
							 "");
				open[sp++] = t->nn;
			}
			if ((rc = add_node(t, kind, o, 0, t->src + nb, ne - nb)))
				return opr_error_set(err, rc, "out of memory");
		}
		text = i = resume;
	}
	if (sp > 0)
		return tpl_error(err, t, t->n[open[sp - 1]].off, "unclosed section '%s'%s",
				 t->n[open[sp - 1]].name, "");
	return 0;
}

static int tpl_new_text(const char *text, size_t len, const char *origin, struct tpl **out,
			struct opr_error *err)
{
	struct tpl *t = calloc(1, sizeof *t);
	if (!t)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	t->src = malloc(len + 1);
	t->origin = strdup(origin ? origin : "<template>");
	if (!t->src || !t->origin) {
		tpl_free(t);
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	memcpy(t->src, text, len);
	t->src[len] = '\0';
	t->len = len;
	int rc = parse(t, err);
	if (rc) {
		tpl_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* Reads a template file. Returns 0, 1 when it does not exist, or an error. */
static int read_template(const char *path, char **text, size_t *len, struct opr_error *err)
{
	int fd;
	struct opr_error oe = {0};
	if (access(path, F_OK) && errno == ENOENT)
		return 1;
	if (opr_open_regular(path, &fd, &oe)) {
		const char *why = strstr(oe.msg, "': ");
		return opr_error_set(err, oe.code, "cannot read template '%s': %s", path,
				     why ? why + 3 : oe.msg);
	}
	FILE *fp = fdopen(fd, "rb");
	if (!fp) {
		close(fd);
		return opr_error_set(err, OPR_ENOMEM, "out of memory reading template '%s'", path);
	}
	struct opr_buf b = { 0 };
	char chunk[8192];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
		opr_buf_add(&b, chunk, n);
		if (b.len > REP_TEMPLATE_MAX_BYTES) {
			fclose(fp);
			opr_buf_release(&b);
			return opr_error_set(err, OPR_EINPUT, "template '%s' is larger than %u bytes", path,
					     REP_TEMPLATE_MAX_BYTES);
		}
	}
	int bad = ferror(fp);
	fclose(fp);
	if (bad) {
		opr_buf_release(&b);
		return opr_error_set(err, OPR_EIO, "cannot read template '%s'", path);
	}
	size_t total = b.len;
	char *s = opr_buf_take(&b);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	if (strlen(s) != total) {
		free(s);
		return opr_error_set(err, OPR_EINPUT, "template '%s' contains a NUL byte", path);
	}
	*text = s;
	*len = total;
	return 0;
}

static struct tpl *find_partial(struct rstate *st, const char *name)
{
	for (struct tpl *p = st->partials; p; p = p->next)
		if (!strcmp(p->pname, name))
			return p;
	return NULL;
}

/* Loads every partial t refers to (and theirs), so that an unknown partial is
 * an error even in a section the data skips. Each name loads once. */
static int load_partials(struct rstate *st, const struct tpl *t)
{
	for (size_t i = 0; i < t->nn; i++) {
		const struct tnode *x = &t->n[i];
		if (x->kind != TK_PARTIAL || find_partial(st, x->name))
			continue;
		char path[PATH_MAX];
		char *text = NULL;
		size_t len = 0;
		int rc = 1;
		if (st->dir && snprintf(path, sizeof path, "%s/%s.mustache", st->dir, x->name) <
				       (int)sizeof path)
			rc = read_template(path, &text, &len, st->err);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return tpl_error(st->err, t, x->off, "unknown partial '%s'%s", x->name,
					 st->dir ? "" : " (no templates folder)");
		struct tpl *p;
		rc = tpl_new_text(text, len, path, &p, st->err);
		free(text);
		if (rc)
			return rc;
		p->pname = strdup(x->name);
		if (!p->pname) {
			tpl_free(p);
			return opr_error_set(st->err, OPR_ENOMEM, "out of memory");
		}
		p->next = st->partials;
		st->partials = p;
		if ((rc = load_partials(st, p)))
			return rc;
	}
	return 0;
}

/* Name lookup: "." is the current item; otherwise the first segment is
 * searched from the innermost context outwards, the rest strictly inside. */
static json_t *lookup(const struct rstate *st, const char *name)
{
	if (!strcmp(name, "."))
		return st->stack[st->sp - 1];
	size_t seg = strcspn(name, ".");
	json_t *v = NULL;
	for (int i = st->sp - 1; i >= 0 && !v; i--)
		if (json_is_object(st->stack[i]))
			v = json_object_getn(st->stack[i], name, seg);
	while (v && name[seg] == '.') {
		name += seg + 1;
		seg = strcspn(name, ".");
		v = json_is_object(v) ? json_object_getn(v, name, seg) : NULL;
	}
	return v;
}

/* Falsy: missing, null, false, an empty list or an empty string. */
static int truthy(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return 0;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	if (json_is_string(v))
		return json_string_length(v) > 0;
	return 1;
}

static const char *scalar_text(const json_t *v, char *tmp, size_t len)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(tmp, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return tmp;
	}
	if (json_is_real(v)) {
		snprintf(tmp, len, "%g", json_real_value(v));
		return tmp;
	}
	if (json_is_true(v))
		return "true";
	if (json_is_false(v))
		return "false";
	return "";
}

/* Whether the output's current line holds only blanks and block markers, so
 * that a value written now could start a list or a heading. */
static int at_line_start(const struct opr_buf *b)
{
	size_t i = b->len;
	while (i > 0 && b->p[i - 1] != '\n') {
		if (!strchr(" \t>-+*", b->p[i - 1]))
			return 0;
		i--;
	}
	return 1;
}

static int render(struct rstate *st, const struct tpl *t, size_t from, size_t to)
{
	int rc;
	for (size_t i = from; i < to; i++) {
		const struct tnode *x = &t->n[i];
		char tmp[64];
		json_t *v;
		switch (x->kind) {
		case TK_TEXT:
			opr_buf_add(&st->out, t->src + x->off, x->len);
			break;
		case TK_VAR:
		case TK_RAW:
			v = lookup(st, x->name);
			if (!v)
				break;
			if (x->kind == TK_RAW) {
				opr_buf_puts(&st->out, scalar_text(v, tmp, sizeof tmp));
			} else {
				char *e = rep_md_escape(scalar_text(v, tmp, sizeof tmp),
							at_line_start(&st->out));
				if (!e)
					return opr_error_set(st->err, OPR_ENOMEM, "out of memory");
				opr_buf_puts(&st->out, e);
				free(e);
			}
			break;
		case TK_SECTION:
		case TK_INVERTED:
			v = lookup(st, x->name);
			if (x->kind == TK_INVERTED) {
				if (!truthy(v) && (rc = render(st, t, i + 1, x->end)))
					return rc;
			} else if (truthy(v)) {
				if (st->sp > REP_TEMPLATE_MAX_SECTION_DEPTH)
					return tpl_error(st->err, t, x->off, "sections nested deeper than %s%s",
							 "64", "");
				size_t n = json_is_array(v) ? json_array_size(v) : 1;
				for (size_t k = 0; k < n; k++) {
					st->stack[st->sp++] = json_is_array(v) ? json_array_get(v, k) : v;
					rc = render(st, t, i + 1, x->end);
					st->sp--;
					if (rc)
						return rc;
				}
			}
			i = x->end;
			break;
		case TK_CLOSE:
			break;
		case TK_PARTIAL: {
			const struct tpl *p = find_partial(st, x->name);
			if (!p)
				return tpl_error(st->err, t, x->off, "unknown partial '%s'%s", x->name, "");
			if (st->pdepth >= REP_TEMPLATE_MAX_PARTIAL_DEPTH)
				return tpl_error(st->err, t, x->off,
						 "partial '%s' nested deeper than %s (recursive partials?)",
						 x->name, "16");
			st->pdepth++;
			rc = render(st, p, 0, p->nn);
			st->pdepth--;
			if (rc)
				return rc;
			break;
		}
		}
	}
	if (st->out.oom)
		return opr_error_set(st->err, OPR_ENOMEM, "out of memory");
	return 0;
}

static int render_root(struct tpl *t, const char *dir, json_t *ctx, char **out,
		       struct opr_error *err)
{
	struct rstate st;
	memset(&st, 0, sizeof st);
	st.dir = dir;
	st.err = err;
	st.stack[st.sp++] = ctx;
	int rc = load_partials(&st, t);
	if (!rc)
		rc = render(&st, t, 0, t->nn);
	if (!rc) {
		*out = opr_buf_take(&st.out);
		if (!*out)
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	opr_buf_release(&st.out);
	tpl_free(st.partials);
	return rc;
}

int rep_template_render_string(const char *text, const char *origin, const char *dir,
			       json_t *ctx, char **out, struct opr_error *err)
{
	struct tpl *t;
	int rc = tpl_new_text(text, strlen(text), origin, &t, err);
	if (rc)
		return rc;
	rc = render_root(t, dir, ctx, out, err);
	tpl_free(t);
	return rc;
}

int rep_template_render(const char *dir, const char *name, json_t *ctx, char **out,
			struct opr_error *err)
{
	char path[PATH_MAX];
	char *text = NULL;
	size_t len = 0;
	if (!valid_name(name, strlen(name), 1))
		return opr_error_set(err, OPR_EINPUT, "bad template name '%s'", name);
	if (snprintf(path, sizeof path, "%s/%s.mustache", dir, name) >= (int)sizeof path)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s.mustache'", dir, name);
	int rc = read_template(path, &text, &len, err);
	if (rc == 1)
		return opr_error_set(err, OPR_EIO, "cannot read template '%s': %s", path,
				     strerror(ENOENT));
	if (rc)
		return rc;
	struct tpl *t;
	rc = tpl_new_text(text, len, path, &t, err);
	free(text);
	if (rc)
		return rc;
	rc = render_root(t, dir, ctx, out, err);
	tpl_free(t);
	return rc;
}

const char *rep_templates_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("OPREVIEW_TEMPLATES");
	if (env && *env) {
		snprintf(dir, sizeof dir, "%s", env);
		return dir;
	}
	if (access("templates/packet.md.mustache", R_OK) == 0)
		return "templates";
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			char probe[PATH_MAX + 64];
			snprintf(probe, sizeof probe, "%s/templates/packet.md.mustache", exe);
			if (access(probe, R_OK) == 0 &&
			    snprintf(dir, sizeof dir, "%s/templates", exe) < (int)sizeof dir)
				return dir;
		}
	}
	return "templates";
}
