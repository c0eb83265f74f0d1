/* collect/yaml.c: the one wrapper of libfyaml. Builds a small tree with
 * 1-based positions from libfyaml's event stream (libfyaml 0.7.12 gives no
 * position for a mapping or sequence node of its DOM, events carry marks) and
 * refuses the YAML features a profile never needs: aliases, tags, several
 * documents, non-scalar or duplicate keys, deep nesting. */
#include "yaml.h"
#include "../opreview.h"

#include <libfyaml.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int col_yaml_check_utf8(const char *file, const char *text, size_t len,
			struct opr_error *err)
{
	const unsigned char *s = (const unsigned char *)text;
	int line = 1, col = 1;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t need;
		uint32_t cp, min;

		if (c == 0)
			return opr_error_at(err, OPR_EINPUT, file, line, col,
					    "NUL byte in the file");
		if (c < 0x80) {
			if (c == '\n') {
				line++;
				col = 0;
			}
			i++;
			col++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			need = 1; cp = c & 0x1F; min = 0x80;
		} else if (c >= 0xE0 && c <= 0xEF) {
			need = 2; cp = c & 0x0F; min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3; cp = c & 0x07; min = 0x10000;
		} else {
			goto bad;
		}
		if (len - i <= need)
			goto bad;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				goto bad;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		/* overlong forms, UTF-16 surrogates and code points past U+10FFFF */
		if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			goto bad;
		i += need + 1;
		col++;
	}
	return 0;
bad:
	return opr_error_at(err, OPR_EINPUT, file, line, col,
			    "invalid UTF-8 byte 0x%02x", s[i]);
}

void col_ynode_free(struct col_ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		col_ynode_free(n->kids[i]);
	free(n->kids);
	free(n->text);
	free(n);
}

struct col_ynode *col_ymap_get(const struct col_ynode *m, const char *key,
			       struct col_ynode **keyp)
{
	if (!m || m->kind != COL_Y_MAP)
		return NULL;
	for (size_t i = 0; i < m->n; i++) {
		struct col_ynode *k = m->kids[2 * i];
		if (strcmp(k->text, key) == 0) {
			if (keyp)
				*keyp = k;
			return m->kids[2 * i + 1];
		}
	}
	return NULL;
}

/* libfyaml writes diagnostics through this when not collecting; we collect
 * them, so whatever arrives here is dropped rather than printed. */
static void quiet_output(struct fy_diag *diag, void *user, const char *buf,
			 size_t len)
{
	(void)diag;
	(void)user;
	(void)buf;
	(void)len;
}

struct builder {
	const char *file;
	struct opr_error *err;
	struct col_ynode *stack[COL_YAML_MAX_DEPTH + 1];
	int depth;
	struct col_ynode *root;
	int docs;
};

static int at(struct builder *b, const struct fy_mark *m, const char *msg,
	      const char *subject)
{
	int line = m ? m->line + 1 : 1, col = m ? m->column + 1 : 1;
	if (subject)
		return opr_error_at(b->err, OPR_EINPUT, b->file, line, col,
				    "%s '%.200s'", msg, subject);
	return opr_error_at(b->err, OPR_EINPUT, b->file, line, col, "%s", msg);
}

/* Attaches node to the open collection (or makes it the root). On failure the
 * node is freed. */
static int attach(struct builder *b, struct col_ynode *node,
		  const struct fy_mark *m)
{
	if (b->depth == 0) {
		b->root = node;
		return 0;
	}
	struct col_ynode *p = b->stack[b->depth - 1];
	/* in a mapping, an even slot count means the next node is a key */
	int is_key = p->kind == COL_Y_MAP && p->nkids % 2 == 0;
	int rc = 0;

	if (is_key) {
		if (node->kind != COL_Y_SCALAR) {
			rc = at(b, m, "mapping keys must be scalars", NULL);
			goto fail;
		}
		if (p->n >= COL_YAML_MAX_ENTRIES) {
			rc = at(b, m, "too many entries in one mapping (the limit is 4096)", NULL);
			goto fail;
		}
		for (size_t i = 0; i < p->n; i++)
			if (strcmp(p->kids[2 * i]->text, node->text) == 0) {
				rc = at(b, m, "duplicate key", node->text);
				goto fail;
			}
	} else if (p->kind == COL_Y_SEQ && p->n >= COL_YAML_MAX_ENTRIES) {
		rc = at(b, m, "too many entries in one sequence (the limit is 4096)", NULL);
		goto fail;
	}
	if (OPR_GROW(p->kids, p->nkids, p->cap, 8)) {
		rc = opr_error_set(b->err, OPR_ENOMEM, "out of memory reading '%s'", b->file);
		goto fail;
	}
	p->kids[p->nkids++] = node;
	p->n = p->kind == COL_Y_MAP ? p->nkids / 2 : p->nkids;
	return 0;
fail:
	col_ynode_free(node);
	return rc;
}

static struct col_ynode *new_node(enum col_ykind kind, const struct fy_mark *m)
{
	struct col_ynode *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->kind = kind;
	n->line = m ? m->line + 1 : 1;
	n->col = m ? m->column + 1 : 1;
	return n;
}

/* Handles one event; returns 0, 1 at the end of the stream, or an error. */
static int on_event(struct builder *b, struct fy_event *ev)
{
	const struct fy_mark *m = fy_event_start_mark(ev);
	struct col_ynode *node;
	int rc;

	switch (ev->type) {
	case FYET_STREAM_END:
		return 1;
	case FYET_DOCUMENT_START:
		if (++b->docs > 1)
			return at(b, m, "only one YAML document is allowed", NULL);
		return 0;
	case FYET_ALIAS:
		return at(b, m, "aliases are not supported", NULL);
	case FYET_SCALAR: {
		if (ev->scalar.tag)
			return at(b, m, "tags are not supported", NULL);
		size_t len = 0;
		const char *t = fy_token_get_text(ev->scalar.value, &len);
		node = new_node(COL_Y_SCALAR, m);
		if (!node || !(node->text = malloc(len + 1))) {
			col_ynode_free(node);
			return opr_error_set(b->err, OPR_ENOMEM, "out of memory reading '%s'", b->file);
		}
		if (len)
			memcpy(node->text, t, len);
		node->text[len] = '\0';
		node->len = len;
		node->plain = fy_token_scalar_style(ev->scalar.value) == FYSS_PLAIN;
		/* a NUL written as an escape ("\0") would cut the text short */
		if (strlen(node->text) != len) {
			col_ynode_free(node);
			return at(b, m, "NUL character in a string", NULL);
		}
		return attach(b, node, m);
	}
	case FYET_SEQUENCE_START:
	case FYET_MAPPING_START: {
		int is_map = ev->type == FYET_MAPPING_START;
		if (is_map ? ev->mapping_start.tag != NULL : ev->sequence_start.tag != NULL)
			return at(b, m, "tags are not supported", NULL);
		if (b->depth >= COL_YAML_MAX_DEPTH)
			return at(b, m, "nesting deeper than 32 levels", NULL);
		node = new_node(is_map ? COL_Y_MAP : COL_Y_SEQ, m);
		if (!node)
			return opr_error_set(b->err, OPR_ENOMEM, "out of memory reading '%s'", b->file);
		rc = attach(b, node, m);
		if (rc)
			return rc;
		b->stack[b->depth++] = node;
		return 0;
	}
	case FYET_SEQUENCE_END:
	case FYET_MAPPING_END:
		if (b->depth > 0)
			b->depth--;
		return 0;
	default:
		return 0;
	}
}

/* The first error libfyaml collected, as ours: its position and message. */
static int syntax_error(struct builder *b, struct fy_diag *diag,
			const struct fy_mark *last)
{
	void *it = NULL;
	struct fy_diag_error *e;
	while ((e = fy_diag_errors_iterate(diag, &it)))
		if (e->type >= FYET_ERROR && e->msg)
			return opr_error_at(b->err, OPR_EINPUT, b->file,
					    e->line > 0 ? e->line : 1,
					    e->column > 0 ? e->column : 1, "%s", e->msg);
	return at(b, last, "YAML syntax error", NULL);
}

int col_yaml_parse(const char *file, const char *text, size_t len,
		   struct col_ynode **root, struct opr_error *err)
{
	struct builder b;
	struct fy_diag_cfg dc;
	struct fy_parse_cfg cfg;
	struct fy_diag *diag = NULL;
	struct fy_parser *fyp = NULL;
	struct fy_mark last = {0, 0, 0};
	int rc = 0;

	*root = NULL;
	memset(&b, 0, sizeof b);
	b.file = file;
	b.err = err;

	fy_diag_cfg_default(&dc);
	dc.fp = NULL;
	dc.output_fn = quiet_output;
	dc.colorize = false;
	diag = fy_diag_create(&dc);
	if (!diag)
		return opr_error_set(err, OPR_ENOMEM, "cannot create the YAML diagnostics");
	fy_diag_set_collect_errors(diag, true);

	memset(&cfg, 0, sizeof cfg);
	cfg.flags = FYPCF_QUIET | FYPCF_DEFAULT_VERSION_1_2 | FYPCF_JSON_NONE;
	cfg.diag = diag;
	fyp = fy_parser_create(&cfg);
	if (!fyp || fy_parser_set_string(fyp, text, len) != 0) {
		rc = opr_error_set(err, OPR_ENOMEM, "cannot create the YAML parser");
		goto out_parser;
	}
	for (;;) {
		struct fy_event *ev = fy_parser_parse(fyp);
		if (!ev) {
			if (fy_parser_get_stream_error(fyp))
				rc = syntax_error(&b, diag, &last);
			break;
		}
		const struct fy_mark *m = fy_event_start_mark(ev);
		if (m)
			last = *m;
		rc = on_event(&b, ev);
		fy_parser_event_free(fyp, ev);
		if (rc) {
			if (rc == 1)
				rc = 0;
			break;
		}
	}
	if (rc == 0 && fy_parser_get_stream_error(fyp))
		rc = syntax_error(&b, diag, &last);
	if (rc) {
		col_ynode_free(b.root);
		goto out_parser;
	}
	*root = b.root;
out_parser:
	fy_parser_destroy(fyp);
	fy_diag_destroy(diag);
	return rc;
}
