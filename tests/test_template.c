/* tests/test_template.c: the packet's template language: variables and their
 * Markdown escaping, sections over seeded random lists, inverted sections,
 * dotted names, the context stack, standalone lines, partials, and every error
 * kind with its exact line and column. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../report/report_int.h"

/* ---- seeded data: splitmix64 ---- */

static uint64_t rng_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static json_t *ctx_of(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (!j)
		fail_msg("bad test json: %s", je.text);
	return j;
}

/* Renders text against the JSON context; fails the test on error. */
static char *render_ok(const char *text, const char *ctx_json, const char *dir)
{
	json_t *ctx = ctx_of(ctx_json);
	char *out = NULL;
	struct opr_error err;
	memset(&err, 0x5a, sizeof err);
	int rc = rep_template_render_string(text, "t.mustache", dir, ctx, &out, &err);
	json_decref(ctx);
	if (rc)
		fail_msg("render failed: %s", err.msg);
	assert_non_null(out);
	return out;
}

static void expect(const char *text, const char *ctx_json, const char *want)
{
	char *out = render_ok(text, ctx_json, NULL);
	assert_string_equal(out, want);
	free(out);
}

/* Renders and expects OPR_EINPUT at line:col with a message containing frag. */
static void expect_error(const char *text, const char *dir, int line, int col, const char *frag)
{
	json_t *ctx = ctx_of("{\"a\":[1,2],\"b\":true}");
	char *out = (char *)"poison";
	struct opr_error err;
	memset(&err, 0, sizeof err);
	err.line = err.col = -77;
	int rc = rep_template_render_string(text, "t.mustache", dir, ctx, &out, &err);
	json_decref(ctx);
	assert_int_equal(rc, OPR_EINPUT);
	assert_int_equal(err.code, OPR_EINPUT);
	if (err.line != line || err.col != col)
		fail_msg("'%s': error at %d:%d (%s), want %d:%d", text, err.line, err.col, err.msg, line,
			 col);
	if (!strstr(err.msg, frag))
		fail_msg("message '%s' lacks '%s'", err.msg, frag);
	if (strcmp(err.file + strlen(err.file) - strlen(".mustache"), ".mustache"))
		fail_msg("error file '%s' is not the template", err.file);
	assert_string_equal(out, "poison"); /* untouched on error */
}

/* ---- variables ---- */

static void test_variables(void **state)
{
	(void)state;
	expect("x={{s}} i={{i}} r={{r}} t={{t}} f={{f}} n=[{{n}}] m=[{{missing}}]",
	       "{\"s\":\"abc\",\"i\":-42,\"r\":2.5,\"t\":true,\"f\":false,\"n\":null}",
	       "x=abc i=-42 r=2.5 t=true f=false n=[] m=[]");
	/* escaped vs raw */
	expect("{{s}}|{{{s}}}|{{& s}}", "{\"s\":\"a|b *c* _d_ `e` [f] <g> #h ~i~ \\\\j\"}",
	       "a\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\] \\<g\\> \\#h \\~i\\~ \\\\j|"
	       "a|b *c* _d_ `e` [f] <g> #h ~i~ \\j|a|b *c* _d_ `e` [f] <g> #h ~i~ \\j");
	/* newlines become spaces; entities and autolinks are defused */
	expect("{{s}}", "{\"s\":\"one\\ntwo\\r\\nthree\\tfour &amp; & x\"}",
	       "one two  three four \\&amp; & x");
	expect("{{s}}", "{\"s\":\"see https://x.org or www.y.org\"}",
	       "see https\\://x.org or www\\.y.org");
}

static void test_line_start_escaping(void **state)
{
	(void)state;
	/* a value that would start a list only matters at the start of a line */
	expect("{{a}}\nx {{a}}\n{{b}}\nx {{b}}\n- {{c}}\n{{d}}", "{\"a\":\"- item\",\"b\":\"12. step\","
	       "\"c\":\"3) three\",\"d\":\"+1.5 us\"}",
	       "\\- item\nx - item\n12\\. step\nx 12. step\n- 3\\) three\n\\+1.5 us");
	/* negative numbers mid-line stay readable */
	expect("| {{v}} |", "{\"v\":\"-0.5\"}", "| -0.5 |");
}

/* Random strings over Markdown's special characters: escaped output never
 * holds an unescaped special, and removing the escapes gives the input back. */
static void test_escape_random(void **state)
{
	(void)state;
	static const char alphabet[] = "ab1 -+.|\\*_`[]<>#~&:/w@\n";
	uint64_t seed = 0x5eed0001;
	for (int round = 0; round < 500; round++) {
		char s[40];
		size_t n = 1 + rng_next(&seed) % 38;
		for (size_t i = 0; i < n; i++)
			s[i] = alphabet[rng_next(&seed) % (sizeof alphabet - 1)];
		s[n] = '\0';
		char *e = rep_md_escape(s, (int)(rng_next(&seed) & 1));
		assert_non_null(e);
		char back[128];
		size_t k = 0;
		for (size_t i = 0; e[i]; i++) {
			if (e[i] == '\\') {
				assert_non_null(e[i + 1]);
				i++;
			} else {
				assert_null(strchr("|*_`[]<>#~\n", e[i]));
			}
			back[k++] = e[i];
		}
		back[k] = '\0';
		for (size_t i = 0; i < n; i++)
			if (s[i] == '\n')
				s[i] = ' ';
		assert_string_equal(back, s);
		free(e);
	}
}

/* ---- sections ---- */

static void test_section_random_list(void **state)
{
	(void)state;
	uint64_t seed = 0x5eed0002;
	for (int round = 0; round < 20; round++) {
		size_t n = 1 + rng_next(&seed) % 20;
		json_t *ctx = json_object(), *a = json_array();
		char want[2048] = "";
		size_t used = 0;
		for (size_t i = 0; i < n; i++) {
			long long v = (long long)(rng_next(&seed) % 200001) - 100000;
			json_array_append_new(a, json_pack("{s:I,s:s}", "v", (json_int_t)v, "w",
							   i % 2 ? "odd" : "even"));
			used += (size_t)snprintf(want + used, sizeof want - used, "<%lld %s %s>", v,
						 i % 2 ? "odd" : "even", "T");
		}
		json_object_set_new(ctx, "items", a);
		json_object_set_new(ctx, "title", json_string("T"));
		char *out = NULL;
		struct opr_error err;
		assert_int_equal(rep_template_render_string("{{#items}}<{{v}} {{w}} {{title}}>{{/items}}",
							    "t", NULL, ctx, &out, &err), 0);
		assert_string_equal(out, want);
		free(out);
		json_decref(ctx);
	}
}

static void test_section_truthiness(void **state)
{
	(void)state;
	const char *ctx = "{\"t\":true,\"f\":false,\"n\":null,\"e\":[],\"s\":\"\",\"z\":0,"
			  "\"o\":{\"k\":\"inner\"},\"l\":[\"x\",\"y\"],\"k\":\"outer\"}";
	expect("{{#t}}T{{/t}}{{#f}}F{{/f}}{{#n}}N{{/n}}{{#e}}E{{/e}}{{#s}}S{{/s}}{{#z}}Z{{/z}}"
	       "{{#missing}}M{{/missing}}", ctx, "TZ");
	expect("{{^t}}T{{/t}}{{^f}}F{{/f}}{{^n}}N{{/n}}{{^e}}E{{/e}}{{^s}}S{{/s}}{{^z}}Z{{/z}}"
	       "{{^missing}}M{{/missing}}{{^l}}L{{/l}}", ctx, "FNESM");
	/* an object section pushes the object; {{.}} is the current item */
	expect("{{#o}}{{k}}{{/o}} {{k}} {{#l}}[{{.}}]{{/l}}", ctx, "inner outer [x][y]");
}

static void test_dotted_and_stack(void **state)
{
	(void)state;
	const char *ctx = "{\"profile\":{\"name\":\"p1\",\"meta\":{\"fw\":\"fw 9\"}},"
			  "\"name\":\"root\",\"blocks\":[{\"name\":\"b1\",\"v\":{\"x\":1}},"
			  "{\"name\":\"b2\",\"profile\":{\"seed\":7}}]}";
	expect("{{profile.meta.fw}}/{{profile.name}}/{{profile.nope}}/{{name.x}}", ctx,
	       "fw 9/p1//");
	/* the first segment walks up the stack; the rest resolves strictly inside
	 * (b2's own "profile" hides the root's, so profile.name is empty there) */
	expect("{{#blocks}}{{name}}:{{v.x}}:{{profile.name}}:{{profile.seed}};{{/blocks}}", ctx,
	       "b1:1:p1:;b2:::7;");
}

static void test_standalone_lines(void **state)
{
	(void)state;
	const char *tpl = "| a | b |\n"
			  "| --- | --- |\n"
			  "{{#rows}}\n"
			  "  {{! a comment line }}\n"
			  "| {{a}} | {{b}} |\n"
			  "{{/rows}}\n"
			  "{{^rows}}\n"
			  "none\n"
			  "\t{{/rows}}  \r\n"
			  "end {{#rows}}x{{/rows}}\n"
			  "{{#rows}} not standalone {{/rows}}\n";
	expect(tpl, "{\"rows\":[{\"a\":1,\"b\":\"x|y\"},{\"a\":2,\"b\":\"z\"}]}",
	       "| a | b |\n| --- | --- |\n| 1 | x\\|y |\n| 2 | z |\nend xx\n"
	       " not standalone  not standalone \n");
	expect(tpl, "{\"rows\":[]}", "| a | b |\n| --- | --- |\nnone\nend \n\n");
	/* a standalone tag on the last line without a newline */
	expect("a\n{{#t}}\nb\n{{/t}}", "{\"t\":true}", "a\nb\n");
}

/* ---- partials ---- */

static char tmpdir[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static int setup_dir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/opr-tpl-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int teardown_dir(void **state)
{
	(void)state;
	const char *names[] = { "row.mustache", "tree.mustache", "loop.mustache",
				"bad.mustache", "page.mustache", "usesmissing.mustache" };
	char path[256];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
	return 0;
}

static void test_partials(void **state)
{
	(void)state;
	write_file("row.mustache", "| {{name}} | {{v}} |\n");
	write_file("tree.mustache", "({{name}}{{#kids}}{{> tree}}{{/kids}})");
	write_file("page.mustache", "# {{title}}\n{{#rows}}\n{{> row}}\n{{/rows}}\n");
	char *out = render_ok("{{> page}}", "{\"title\":\"T\",\"rows\":[{\"name\":\"a\",\"v\":1},"
				"{\"name\":\"b_c\",\"v\":2}]}", tmpdir);
	assert_string_equal(out, "# T\n| a | 1 |\n| b\\_c | 2 |\n");
	free(out);
	/* a recursive partial with a base case, 5 levels deep (leaves say kids:[]
	 * or the lookup would find the parent's kids) */
	out = render_ok("{{> tree}}", "{\"name\":\"r\",\"kids\":[{\"name\":\"a\",\"kids\":[{\"name\":"
			"\"b\",\"kids\":[{\"name\":\"c\",\"kids\":[{\"name\":\"d\",\"kids\":[]}]}]}]},"
			"{\"name\":\"e\",\"kids\":[]}]}",
			tmpdir);
	assert_string_equal(out, "(r(a(b(c(d))))(e))");
	free(out);
	/* the file variant */
	json_t *ctx = ctx_of("{\"title\":\"U\",\"rows\":[]}");
	struct opr_error err;
	out = NULL;
	assert_int_equal(rep_template_render(tmpdir, "page", ctx, &out, &err), 0);
	assert_string_equal(out, "# U\n");
	free(out);
	out = (char *)"poison";
	memset(&err, 0, sizeof err);
	assert_int_equal(rep_template_render(tmpdir, "nosuch", ctx, &out, &err), OPR_EIO);
	assert_non_null(strstr(err.msg, "nosuch.mustache"));
	assert_int_equal(rep_template_render(tmpdir, "../x", ctx, &out, &err), OPR_EINPUT);
	assert_string_equal(out, "poison");
	json_decref(ctx);
}

static void test_partial_errors(void **state)
{
	(void)state;
	write_file("loop.mustache", "x{{> loop}}");
	expect_error("ab\n  {{> loop}}", tmpdir, 1, 2, "nested deeper than 16");
	expect_error("ab\n  {{> nope}}", tmpdir, 2, 3, "unknown partial 'nope'");
	/* unknown even when the data skips the section */
	expect_error("{{#f}}\n{{> nope}}\n{{/f}}", tmpdir, 2, 1, "unknown partial 'nope'");
	expect_error("{{> ../etc}}", tmpdir, 1, 1, "bad partial name '../etc'");
	expect_error("z {{>a/b}}", tmpdir, 1, 3, "bad partial name 'a/b'");
	expect_error("{{> row}}", NULL, 1, 1, "unknown partial 'row'");
	/* an error inside a partial is reported in the partial's file */
	write_file("bad.mustache", "ok\n  {{#x}}\n");
	write_file("usesmissing.mustache", "{{> bad}}");
	json_t *ctx = ctx_of("{}");
	char *out = NULL;
	struct opr_error err;
	memset(&err, 0, sizeof err);
	assert_int_equal(rep_template_render(tmpdir, "usesmissing", ctx, &out, &err), OPR_EINPUT);
	assert_non_null(strstr(err.file, "bad.mustache"));
	assert_int_equal(err.line, 2);
	assert_int_equal(err.col, 3);
	assert_non_null(strstr(err.msg, "unclosed section 'x'"));
	json_decref(ctx);
}

/* ---- syntax errors ---- */

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_error("a\nbc {{name\n", NULL, 2, 4, "unclosed tag");
	expect_error("a {{{raw}}\n", NULL, 1, 3, "unclosed tag '{{{'");
	expect_error("x\n\n  {{#a}}\n{{b}}\n", NULL, 3, 3, "unclosed section 'a'");
	expect_error("{{#a}}\n {{#b}}{{/a}}\n", NULL, 2, 8, "mismatched close tag 'a'");
	expect_error("{{#a}}\n {{#b}}{{/a}}\n", NULL, 2, 8, "section 'b' opened at 2:2");
	expect_error("ok\n   {{/a}}", NULL, 2, 4, "close tag 'a' without an open section");
	expect_error("{{a b}}", NULL, 1, 1, "bad tag: name 'a b'");
	expect_error("x {{}}", NULL, 1, 3, "bad tag");
	expect_error("x {{#}}{{/}}", NULL, 1, 3, "bad tag");
	expect_error("{{a..b}}", NULL, 1, 1, "bad tag");
	expect_error("\n\n\n      {{=<% %>=}}", NULL, 4, 7, "set-delimiter");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_variables),
		cmocka_unit_test(test_line_start_escaping),
		cmocka_unit_test(test_escape_random),
		cmocka_unit_test(test_section_random_list),
		cmocka_unit_test(test_section_truthiness),
		cmocka_unit_test(test_dotted_and_stack),
		cmocka_unit_test(test_standalone_lines),
		cmocka_unit_test(test_partials),
		cmocka_unit_test(test_partial_errors),
		cmocka_unit_test(test_syntax_errors),
	};
	return cmocka_run_group_tests_name("template", tests, setup_dir, teardown_dir);
}
