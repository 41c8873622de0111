/*
 * For the bench's unit tests: a matrix from command-line words, a cell
 * found by its key, an option's value on a cell's `vmm run` command line,
 * and pool membership. Include after tests/unit/check.h (CHECK_EQ).
 */
#ifndef VMM_TESTS_BENCH_MATRIX_TEST_H
#define VMM_TESTS_BENCH_MATRIX_TEST_H

#include <string.h>

#include "vmm/bench/cli/cli.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"

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

/* The value after option a in args, or NULL when a is not there. */
static inline const char *arg_of(const char *const *args, const char *a)
{
	for (unsigned i = 0; args[i] && args[i + 1]; i++)
		if (!strcmp(args[i], a))
			return args[i + 1];
	return NULL;
}

static inline bool in_pool(const struct bench_cell *c, int k)
{
	for (unsigned i = 0; i < c->npool; i++)
		if (c->pool[i] == k)
			return true;
	return false;
}

#endif
