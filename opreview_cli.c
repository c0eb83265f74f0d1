/* opreview_cli.c: option parsing and --help from one table per command. */
#include "opreview.h"

#include <string.h>

static const struct opr_option *find_option(const struct opr_option *o,
					    const char *name, size_t len)
{
	for (; o->kind != OPR_OPT_END; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	return NULL;
}

int opr_parse(const struct opr_command_help *h, int argc, char **argv,
	      const char **pos, int maxpos, int *npos, struct opr_error *err)
{
	int only_pos = 0;
	*npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_pos || a[0] != '-' || !a[1]) {
			if (*npos >= maxpos)
				return opr_error_set(err, OPR_EUSAGE,
						     "%s: unexpected argument '%s'", h->name, a);
			if (opr_path_check(a, h->name, err))
				return OPR_EUSAGE;
			pos[(*npos)++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			opr_print_help(h, stdout);
			return 1;
		}
		if (strncmp(a, "--", 2))
			return opr_error_set(err, OPR_EUSAGE, "%s: unknown option '%s'", h->name, a);
		const char *name = a + 2;
		const char *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		const struct opr_option *o = find_option(h->options, name, len);
		if (!o)
			return opr_error_set(err, OPR_EUSAGE, "%s: unknown option '%s'", h->name, a);
		if (o->kind == OPR_OPT_FLAG) {
			if (eq)
				return opr_error_set(err, OPR_EUSAGE,
						     "%s: option '--%s' takes no value", h->name, o->name);
			*(int *)o->value = 1;
			continue;
		}
		const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!v || !*v)
			return opr_error_set(err, OPR_EUSAGE, "%s: option '--%s' needs a value",
					     h->name, o->name);
		if (o->kind == OPR_OPT_PATH) {
			char what[80];
			snprintf(what, sizeof what, "%s --%s", h->name, o->name);
			if (opr_path_check(v, what, err))
				return OPR_EUSAGE;
		}
		*(const char **)o->value = v;
	}
	return 0;
}

void opr_print_help(const struct opr_command_help *h, FILE *fp)
{
	fprintf(fp, "usage: opreview %s\n\n%s\n", h->usage, h->summary);
	if (h->details)
		fprintf(fp, "\n%s\n", h->details);
	if (h->options && h->options->kind != OPR_OPT_END) {
		fprintf(fp, "\noptions:\n");
		for (const struct opr_option *o = h->options; o->kind != OPR_OPT_END; o++) {
			char left[64];
			snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
			fprintf(fp, "  %-24s %s\n", left, o->help);
		}
	}
	fprintf(fp, "  %-24s %s\n", "--help", "show this help and exit");
}

int opr_fail(const struct opr_error *err)
{
	opr_error_print(err, stderr);
	return opr_exit_status(err->code);
}

int opr_cmd_start(const struct opr_command_help *h, int argc, char **argv, const char **pos,
		  int maxpos, int *npos, const char **const *required, int min_pos, const char *missing,
		  int *status)
{
	struct opr_error err = {0};
	int rc = opr_parse(h, argc, argv, pos, maxpos, npos, &err);
	if (rc == 1) {
		*status = fflush(stdout) == 0 ? OPR_EXIT_OK : OPR_EXIT_FAILURE;
		return 1;
	}
	int absent = !rc && *npos < min_pos;
	for (int i = 0; !rc && required && required[i]; i++)
		absent |= !*required[i];
	if (absent)
		rc = opr_error_set(&err, OPR_EUSAGE, "%s", missing);
	if (rc) {
		*status = opr_fail(&err);
		return 1;
	}
	*status = 0; /* the caller's rc, from which it goes on */
	return 0;
}
