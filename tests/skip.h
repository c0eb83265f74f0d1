/* tests/skip.h: how a cmocka test that needs something this host lacks reports
 * itself skipped, with the reason on a TAP comment line that tests/run.sh shows:
 * never passed, never failed. Include after <cmocka.h>. */
#ifndef TESTS_SKIP_H
#define TESTS_SKIP_H

#include <stdio.h>

#define SKIP_BECAUSE(...)                                                    \
	do {                                                                 \
		printf("# SKIP %s: ", __func__);                             \
		printf(__VA_ARGS__);                                         \
		printf("\n");                                                \
		fflush(stdout);                                              \
		skip();                                                      \
	} while (0)

#endif
