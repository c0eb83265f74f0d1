/* report/view_util.c: how report/'s view files read findings and write the
 * template context: lookups that tolerate a missing key (an empty string, a NAN),
 * and setters that remember an allocation failure in the builder instead of
 * checking every call (the view is returned only when none failed). */
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* The ownership split of the packet (seed 002, "Ownership split"): team,
 * responsibility and closure artifact per sign-off role. */
const struct rep_ownership REP_OWNERSHIP[REP_NROLES] = {
	{ "ml-compiler-engineer", "ML compiler engineer", "mechanism and architecture intent",
	  "design rationale + tradeoffs" },
	{ "kernel-performance-owner", "kernel performance owner", "mapping, runtime, and execution",
	  "profile traces + bottleneck map" },
	{ "runtime-systems-engineer", "runtime systems engineer", "correctness, risk, and signoff",
	  "test report + closure memo" },
};

json_t *rep_vget(json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

const char *rep_vstr(json_t *o, const char *k)
{
	const char *s = json_string_value(rep_vget(o, k));
	return s ? s : "";
}

double rep_vnum(json_t *o, const char *k)
{
	json_t *v = rep_vget(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

void rep_vset(struct rep_vb *vb, json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v))
		vb->oom = 1;
}

void rep_vsetf(struct rep_vb *vb, json_t *o, const char *k, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	rep_vset(vb, o, k, json_string(buf));
}

void rep_vsets(struct rep_vb *vb, json_t *o, const char *k, const char *s)
{
	rep_vset(vb, o, k, json_string(s ? s : ""));
}

json_t *rep_vpush(struct rep_vb *vb, json_t *a)
{
	json_t *o = json_object();
	if (!o || json_array_append_new(a, o)) {
		json_decref(o);
		vb->oom = 1;
		return NULL;
	}
	return o;
}
