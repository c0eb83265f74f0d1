/* fuzz/fuzz_profile.c: libFuzzer target of the profile loader. The input is one
 * profile file; envelopes resolve in fixtures/envelopes (run from the tree's root). */
#include "fuzz.h"

#include "../collect/collect.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_dir();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/profile.yaml", fuzz_dir());
	fuzz_write("profile.yaml", data, size);
	struct col_profile *p = NULL;
	struct opr_error err = {0};
	int rc = col_profile_load(path, "fixtures/envelopes", &p, &err);
	/* the contract: an error leaves nothing behind and says something on one
	 * line (the command line prints it as the one line of exit 2) */
	if (rc && (p || !err.msg[0] || strchr(err.msg, '\n')))
		abort();
	col_profile_free(p);
	return 0;
}
