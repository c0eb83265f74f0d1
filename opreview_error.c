/* opreview_error.c: the shared error type (see opreview.h). */
#include "opreview.h"

#include <stdarg.h>
#include <string.h>

static void set_msg(struct opr_error *err, const char *fmt, va_list ap)
{
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	/* one line only: a message never carries a newline */
	for (char *p = err->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

int opr_error_set(struct opr_error *err, int code, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	err->code = code;
	err->file[0] = '\0';
	err->line = err->col = 0;
	va_start(ap, fmt);
	set_msg(err, fmt, ap);
	va_end(ap);
	return code;
}

int opr_error_at(struct opr_error *err, int code, const char *file, int line,
		 int col, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	err->code = code;
	snprintf(err->file, sizeof err->file, "%s", file ? file : "");
	err->line = line;
	err->col = col;
	va_start(ap, fmt);
	set_msg(err, fmt, ap);
	va_end(ap);
	return code;
}

void opr_error_print(const struct opr_error *err, FILE *fp)
{
	if (err->file[0] && err->line > 0)
		fprintf(fp, "opreview: %s:%d:%d: %s\n", err->file, err->line,
			err->col > 0 ? err->col : 1, err->msg);
	else if (err->file[0])
		fprintf(fp, "opreview: %s: %s\n", err->file, err->msg);
	else
		fprintf(fp, "opreview: %s\n", err->msg);
}

int opr_exit_status(int code)
{
	switch (code) {
	case OPR_OK:
		return OPR_EXIT_OK;
	case OPR_EUSAGE:
	case OPR_EINPUT:
	case OPR_ELIMIT:
		return OPR_EXIT_USAGE;
	case OPR_EMISMATCH:
		return OPR_EXIT_MISMATCH;
	case OPR_EEXIST:
		return OPR_EXIT_EXISTS;
	case OPR_ENOTIMPL:
		return OPR_EXIT_NOTIMPL;
	case OPR_ENODEV:
		return OPR_EXIT_NODEV;
	default:
		return OPR_EXIT_FAILURE;
	}
}
