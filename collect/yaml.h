/* collect/yaml.h: a small read-only YAML tree with 1-based positions, built by
 * collect/yaml.c (the only file that includes libfyaml). Internal to collect/:
 * other folders never include it. */
#ifndef COL_YAML_H
#define COL_YAML_H

#include <stddef.h>

struct opr_error; /* opreview.h */

#define COL_YAML_MAX_DEPTH 32     /* nesting of mappings and sequences */
#define COL_YAML_MAX_ENTRIES 4096 /* entries of one mapping or sequence */

enum col_ykind { COL_Y_SCALAR, COL_Y_SEQ, COL_Y_MAP };

struct col_ynode {
	enum col_ykind kind;
	int line, col;             /* 1-based, of the node's first character */
	char *text;                /* scalar: NUL-terminated text (owned) */
	size_t len;                /* scalar: bytes of text */
	int plain;                 /* scalar: written without quotes */
	struct col_ynode **kids;   /* SEQ: items; MAP: key, value, key, value... */
	size_t n;                  /* SEQ: items; MAP: pairs */
	size_t nkids, cap;         /* slots of kids used and allocated */
};

/* Checks that text[0..len) is UTF-8 without NUL bytes; on failure sets an
 * OPR_EINPUT error at the line and column (in characters) of the first bad
 * byte. */
int col_yaml_check_utf8(const char *file, const char *text, size_t len,
			struct opr_error *err);

/* Parses one YAML document from text (len bytes). Aliases, tags, several
 * documents, non-scalar keys, duplicate keys, nesting deeper than
 * COL_YAML_MAX_DEPTH and more than COL_YAML_MAX_ENTRIES entries in one
 * collection are refused; libfyaml's own syntax errors keep its position and
 * message. An empty document gives *root == NULL. *root is owned by the
 * caller: free with col_ynode_free. file names the input in errors. */
int col_yaml_parse(const char *file, const char *text, size_t len,
		   struct col_ynode **root, struct opr_error *err);
void col_ynode_free(struct col_ynode *n); /* NULL is fine */

/* Mapping lookup: the value of key, or NULL (also when m is not a mapping).
 * keyp, if given, receives the key node. */
struct col_ynode *col_ymap_get(const struct col_ynode *m, const char *key,
			       struct col_ynode **keyp);

#endif
