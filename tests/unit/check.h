/*
 * The smallest test harness that does the job: CHECK counts, a failure prints
 * where and what, and check_summary() prints the closing "N passed, N failed"
 * line that tests/run_all.py adds up, with ", N skipped" when a part could
 * not run here (SKIP says which and why; the runner then runs the binary
 * again in the nested KVM).
 */
#ifndef VMM_TESTS_CHECK_H
#define VMM_TESTS_CHECK_H

#include <stdio.h>

static unsigned check_passed, check_failed, check_skipped;

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

static inline int check_summary(void)
{
	if (check_skipped)
		printf("%u passed, %u failed, %u skipped\n", check_passed, check_failed, check_skipped);
	else
		printf("%u passed, %u failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
