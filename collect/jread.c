/* collect/jread.c: strict typed reads of the archive's JSON (see jread.h). */
#include "jread.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

size_t col_jr_enter(struct col_jr *r, const char *key)
{
	size_t mark = strlen(r->path);
	snprintf(r->path + mark, sizeof r->path - mark, "%s%s", mark ? "." : "", key);
	return mark;
}

size_t col_jr_enter_i(struct col_jr *r, size_t i)
{
	size_t mark = strlen(r->path);
	snprintf(r->path + mark, sizeof r->path - mark, "[%zu]", i);
	return mark;
}

void col_jr_leave(struct col_jr *r, size_t mark)
{
	if (mark < sizeof r->path)
		r->path[mark] = '\0';
}

static int fail_at(struct col_jr *r, const char *key, const char *expected, const char *found)
{
	if (r->rc)
		return r->rc;
	char where[300];
	snprintf(where, sizeof where, "%s%s%s", r->path, r->path[0] && key[0] && key[0] != '[' ? "." : "",
		 key);
	r->rc = opr_error_set(r->err, OPR_EINPUT, "%s: %s: expected %s, found %s", r->file,
			      where[0] ? where : "(top)", expected, found);
	return r->rc;
}

int col_jr_fail(struct col_jr *r, const char *key, const char *expected, json_t *found)
{
	return fail_at(r, key, expected, found ? type_name(found) : "nothing (missing)");
}

static json_t *member(struct col_jr *r, json_t *o, const char *key)
{
	if (r->rc)
		return NULL;
	if (!json_is_object(o)) {
		col_jr_fail(r, "", "an object", o);
		return NULL;
	}
	return json_object_get(o, key);
}

json_t *col_jr_obj(struct col_jr *r, json_t *o, const char *key)
{
	json_t *v = member(r, o, key);
	if (!r->rc && !json_is_object(v))
		col_jr_fail(r, key, "an object", v);
	return r->rc ? NULL : v;
}

json_t *col_jr_arr(struct col_jr *r, json_t *o, const char *key)
{
	json_t *v = member(r, o, key);
	if (!r->rc && !json_is_array(v))
		col_jr_fail(r, key, "an array", v);
	return r->rc ? NULL : v;
}

static int64_t int_value(struct col_jr *r, json_t *v, const char *key, int64_t min, int64_t max)
{
	if (r->rc)
		return 0;
	if (!json_is_integer(v)) {
		col_jr_fail(r, key, "an integer", v);
		return 0;
	}
	json_int_t x = json_integer_value(v);
	if (x < min || x > max) {
		char want[96], found[32];
		snprintf(want, sizeof want, "an integer in [%lld, %lld]", (long long)min, (long long)max);
		snprintf(found, sizeof found, "%lld", (long long)x);
		fail_at(r, key, want, found);
		return 0;
	}
	return (int64_t)x;
}

int64_t col_jr_int(struct col_jr *r, json_t *o, const char *key, int64_t min, int64_t max)
{
	json_t *v = member(r, o, key);
	return int_value(r, v, key, min, max);
}

static double num_value(struct col_jr *r, json_t *v, const char *key)
{
	if (r->rc)
		return NAN;
	if (json_is_null(v))
		return NAN; /* a non-finite value is written as null */
	if (!json_is_number(v)) {
		col_jr_fail(r, key, "a number or null", v);
		return NAN;
	}
	return json_number_value(v);
}

double col_jr_num(struct col_jr *r, json_t *o, const char *key)
{
	json_t *v = member(r, o, key);
	if (!r->rc && !v) {
		col_jr_fail(r, key, "a number or null", NULL);
		return NAN;
	}
	return num_value(r, v, key);
}

double col_jr_num_opt(struct col_jr *r, json_t *o, const char *key, double dflt)
{
	json_t *v = member(r, o, key);
	return v ? num_value(r, v, key) : dflt;
}

int col_jr_bool(struct col_jr *r, json_t *o, const char *key)
{
	json_t *v = member(r, o, key);
	if (!r->rc && !json_is_boolean(v))
		col_jr_fail(r, key, "true or false", v);
	return r->rc ? 0 : json_is_true(v);
}

int col_jr_bool_opt(struct col_jr *r, json_t *o, const char *key, int dflt)
{
	json_t *v = member(r, o, key);
	return v ? col_jr_bool(r, o, key) : dflt;
}

void col_jr_str(struct col_jr *r, json_t *o, const char *key, char *buf, size_t len)
{
	json_t *v = member(r, o, key);
	buf[0] = '\0';
	if (r->rc)
		return;
	if (!json_is_string(v)) {
		col_jr_fail(r, key, "a string", v);
		return;
	}
	if (json_string_length(v) >= len) {
		char want[64];
		snprintf(want, sizeof want, "a string of at most %zu bytes", len - 1);
		col_jr_fail(r, key, want, v);
		return;
	}
	snprintf(buf, len, "%s", json_string_value(v));
}

int64_t col_jr_int_at(struct col_jr *r, json_t *a, size_t i, int64_t min, int64_t max)
{
	char key[32];
	snprintf(key, sizeof key, "[%zu]", i);
	return int_value(r, json_array_get(a, i), key, min, max);
}

double col_jr_num_at(struct col_jr *r, json_t *a, size_t i)
{
	char key[32];
	snprintf(key, sizeof key, "[%zu]", i);
	json_t *v = json_array_get(a, i);
	if (!r->rc && !v) {
		col_jr_fail(r, key, "a number or null", NULL);
		return NAN;
	}
	return num_value(r, v, key);
}
