/* fuzz/fuzz_template.c: libFuzzer target of the template renderer. The input's
 * first line is a JSON context (an empty object when it is not one), the rest
 * is the template; partials load from templates/ (run from the tree's root). */
#include "fuzz.h"

#include "../report/report_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t clen = nl ? (size_t)(nl - data) : 0;
	const uint8_t *tpl = nl ? nl + 1 : data;
	size_t tlen = size - (size_t)(tpl - data);

	json_t *ctx = clen ? json_loadb((const char *)data, clen, JSON_DECODE_ANY, NULL) : NULL;
	if (!json_is_object(ctx)) {
		json_decref(ctx);
		ctx = json_object();
	}
	char *text = malloc(tlen + 1);
	if (!text || !ctx)
		abort();
	memcpy(text, tpl, tlen);
	text[tlen] = '\0';

	char *out = NULL;
	struct opr_error err = {0};
	int rc = rep_template_render_string(text, "fuzz.mustache", "templates", ctx, &out, &err);
	if (rc ? (out || !err.msg[0] || strchr(err.msg, '\n')) : !out)
		abort();
	free(out);
	/* the Markdown escaper takes arbitrary text too */
	char *esc = rep_md_escape(text, size & 1);
	if (!esc || strchr(esc, '\n'))
		abort();
	free(esc);
	free(text);
	json_decref(ctx);
	return 0;
}
