/*
 * For tests whose closing line counts scenarios (each fixed case, each
 * random run), not the millions of invariant checks inside them: CHECK
 * counts and prints the first 40 failures with `ctx` (which random run);
 * CASE(call) counts call as one passed or failed scenario. A scenario is
 * a test: at exit the scenario counts are said again on the "tests:" line
 * tests/run_all.py reads (tests/unit/check.h), after main's closing line.
 */
#ifndef VMM_TESTS_CHECK_CASES_H
#define VMM_TESTS_CHECK_CASES_H

#include <stdio.h>

static long n_pass, n_fail, cases_pass, cases_fail;
static char ctx[160];

#define CHECK(e)                                                                          \
	do {                                                                              \
		if (e) {                                                                  \
			n_pass++;                                                         \
		} else if (++n_fail <= 40) {                                              \
			printf("%s:%d: CHECK(%s) failed%s%s\n", __FILE__, __LINE__, #e,   \
			       ctx[0] ? " in " : "", ctx);                                \
		}                                                                         \
	} while (0)

#define CASE(call)                        \
	do {                              \
		long f0_ = n_fail;        \
		call;                     \
		if (n_fail == f0_)        \
			cases_pass++;     \
		else                      \
			cases_fail++;     \
	} while (0)

__attribute__((destructor)) static void cases_say_tests(void)
{
	printf("tests: %ld passed, %ld failed\n", cases_pass, cases_fail);
}

#endif
