/*
 * For the bench's unit tests: a matrix from command-line words, and a cell
 * found by its key. Include after tests/unit/check.h (CHECK_EQ).
 */
#ifndef VMM_TESTS_BENCH_MATRIX_TEST_H
#define VMM_TESTS_BENCH_MATRIX_TEST_H

#include <string.h>

#include "vmm/bench/bench.h"
#include "vmm/bench/bench_shard.h"

static inline void matrix(struct bench_opts *o, struct bench_matrix *m, int argc, char **argv)
{
	char err[256];
	bench_opts_defaults(o);
	CHECK_EQ(bench_parse(argc, argv, o, err, sizeof(err)), 0);
	CHECK_EQ(bench_matrix_build(o, m, err, sizeof(err)), 0);
}

/* The cell's index, or -1. */
static inline int find(const struct bench_matrix *m, const char *key)
{
	char k[256];
	for (unsigned i = 0; i < m->n; i++) {
		bench_cell_key(&m->cells[i], k, sizeof(k));
		if (!strcmp(k, key))
			return (int)i;
	}
	return -1;
}

#endif
