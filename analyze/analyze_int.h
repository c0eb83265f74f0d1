/* analyze/analyze_int.h: internals shared by the files of analyze/ only. */
#ifndef ANALYZE_INT_H
#define ANALYZE_INT_H

#include "analyze.h"

struct ana_ctx {
	const struct col_run *run;
	const char *archive;
};

/* Sums of the modelled launch terms of one variant (ns) and the utilisation
 * of each resource over the busy (non-overhead) time. */
struct ana_terms {
	double total, overhead, compute, shared, global, dma;
	double u_compute, u_shared, u_global, launch_share;
	double imbalance; /* the worst launch's max/mean core work */
};
void ana_terms(const struct col_variant_run *vr, struct ana_terms *t);

/* A growable array of fixed-size elements; push returns a zeroed element. */
struct ana_list {
	void *items;
	size_t n, cap, size;
};
void *ana_list_push(struct ana_list *l);
void *ana_list_at(const struct ana_list *l, size_t i);

/* Evaluates the rule table on one variant, appending findings; sets the
 * primary class. */
int ana_classify_variant(const struct ana_ctx *cx, int b, int v, struct ana_list *out,
			 enum ana_class *primary);

/* The candidate's simulated tail regression with its attribution; makes it
 * the candidate's primary class when it applies. */
int ana_tail_finding(const struct ana_ctx *cx, int b, struct ana_list *out, enum ana_class *primary);

/* The quality metric the profile thresholds (rel L2 or LSB) and its limit. */
void ana_quality_metric(const struct col_profile *p, const struct col_block *b,
			const struct col_variant_run *vr, double *value, double *threshold);
const char *ana_quality_name(const struct col_block *b);

/* Imported runs (analyze/imported.c): the SOL rule on the source's
 * throughput counters (sets ab->primary[v] or ab->unclassified[v]), and the
 * checks whose inputs exist, the others unavailable with the reason. */
int ana_imported_classify(const struct ana_ctx *cx, int b, int v, struct ana_list *out,
			  struct ana_block *ab);
int ana_imported_checks(const struct ana_ctx *cx, int b, int v, const struct ana_block *ab,
			struct ana_list *cmps, struct ana_list *out);
/* findings.json parts written by analyze/primary.c (new references). */
struct json_t;
struct json_t *ana_value_json(const struct ana_findings *f, const struct ana_value *v);
struct json_t *ana_primary_json(const struct ana_findings *f);

#endif
