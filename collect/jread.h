/* collect/jread.h (internal to collect/): strict typed reads of the archive's
 * JSON. A value of the wrong type is an error naming the file, the JSON path
 * and what was expected ("manifest.json: blocks[0].rounds: expected an
 * integer, found a string"), never a 0. The first error sticks; later reads
 * return 0/NAN/"" so a loader reads on and checks r->rc once. */
#ifndef COLLECT_JREAD_H
#define COLLECT_JREAD_H

#include <jansson.h>
#include <stdint.h>

#include "../opreview.h"

struct col_jr {
	const char *file;          /* "manifest.json" */
	struct opr_error *err;
	int rc;                    /* 0 or the first error */
	char path[256];            /* where the reader is: "blocks[0].variants" */
};

/* Enters o's member key (or element i) for the reads that follow; returns a
 * mark for col_jr_leave. */
size_t col_jr_enter(struct col_jr *r, const char *key);
size_t col_jr_enter_i(struct col_jr *r, size_t i);
void col_jr_leave(struct col_jr *r, size_t mark);
/* Fails at the current path + key with "expected ..." and what was found. */
int col_jr_fail(struct col_jr *r, const char *key, const char *expected, json_t *found);

/* Required members of o (which must be an object). */
json_t *col_jr_obj(struct col_jr *r, json_t *o, const char *key);
json_t *col_jr_arr(struct col_jr *r, json_t *o, const char *key);
int64_t col_jr_int(struct col_jr *r, json_t *o, const char *key, int64_t min, int64_t max);
double col_jr_num(struct col_jr *r, json_t *o, const char *key); /* a number, or null: NAN */
int col_jr_bool(struct col_jr *r, json_t *o, const char *key);
void col_jr_str(struct col_jr *r, json_t *o, const char *key, char *buf, size_t len);
/* Optional members: absent gives dflt; present must have the type. */
double col_jr_num_opt(struct col_jr *r, json_t *o, const char *key, double dflt);
int col_jr_bool_opt(struct col_jr *r, json_t *o, const char *key, int dflt);
/* Element i of array a, an integer in [min, max] / a number or null. */
int64_t col_jr_int_at(struct col_jr *r, json_t *a, size_t i, int64_t min, int64_t max);
double col_jr_num_at(struct col_jr *r, json_t *a, size_t i);

#endif
