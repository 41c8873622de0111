/*
 * The smallest test harness that does the job: CHECK counts, a failure prints
 * where and what, and check_summary() prints the closing "N passed, N failed"
 * line that tests/run_all.py adds up, with ", N skipped" when a part could
 * not run here (SKIP says which and why; the runner then runs the binary
 * again in the nested KVM).
 *
 * Checks are not tests: one test function may hold thousands of checks. So
 * RUN(test_fn) counts test_fn as one test case, failed if any of its checks
 * failed, else skipped if it skipped any part, else passed; check_summary()
 * prints those counts first, on a line of their own:
 *   tests: T passed, T failed[, T skipped]
 * Checks outside every RUN count as one more case (a binary with no RUN is
 * one test).
 */
#ifndef VMM_TESTS_CHECK_H
#define VMM_TESTS_CHECK_H

#include <stdio.h>

static unsigned check_passed, check_failed, check_skipped;
/* cases counted by RUN, and the checks and skips that ran inside them */
static unsigned check_cases_passed, check_cases_failed, check_cases_skipped;
static unsigned check_in_cases_passed, check_in_cases_failed, check_in_cases_skipped;

/* A part of the test that cannot run on this machine: counted, and said. */
#define SKIP(...)                               \
	do {                                    \
		check_skipped++;                \
		printf("skipped: " __VA_ARGS__); \
		printf("\n");                   \
	} while (0)

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (cond) {                                                           \
			check_passed++;                                               \
		} else {                                                              \
			check_failed++;                                               \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                     \
	} while (0)

#define CHECK_EQ(a, b)                                                                        \
	do {                                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);                           \
		if (a_ == b_) {                                                               \
			check_passed++;                                                       \
		} else {                                                                      \
			check_failed++;                                                       \
			fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n", __FILE__, __LINE__, \
				#a, #b, a_, b_);                                              \
		}                                                                             \
	} while (0)

#define RUN(test_fn) check_run(#test_fn, test_fn)

static inline void check_run(const char *name, void (*test_fn)(void))
{
	unsigned p0 = check_passed, f0 = check_failed, s0 = check_skipped;
	test_fn();
	check_in_cases_passed += check_passed - p0;
	check_in_cases_failed += check_failed - f0;
	check_in_cases_skipped += check_skipped - s0;
	if (check_failed > f0) {
		check_cases_failed++;
		fprintf(stderr, "FAIL test %s: %u of its checks failed\n", name, check_failed - f0);
	} else if (check_skipped > s0) {
		check_cases_skipped++;
	} else {
		check_cases_passed++;
	}
}

static inline int check_summary(void)
{
	unsigned tp = check_cases_passed, tf = check_cases_failed, ts = check_cases_skipped;
	if (check_failed > check_in_cases_failed)
		tf++;
	else if (check_skipped > check_in_cases_skipped)
		ts++;
	else if (check_passed > check_in_cases_passed || tp + tf + ts == 0)
		tp++;
	printf("tests: %u passed, %u failed", tp, tf);
	if (ts)
		printf(", %u skipped", ts);
	printf("\n");
	if (check_skipped)
		printf("%u passed, %u failed, %u skipped\n", check_passed, check_failed, check_skipped);
	else
		printf("%u passed, %u failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
