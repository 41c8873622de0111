/*
 * `vmm bench`'s options into struct bench_opts: a preset first, then each
 * flag by its row in the option table (options.c), then what spans several.
 */
#ifndef VMM_BENCH_CLI_H
#define VMM_BENCH_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "vmm/bench/matrix/types.h"

#define BENCH_HELP 1

/* Fills defaults (the quick matrix); bench_parse may then override. */
void bench_opts_defaults(struct bench_opts *o);
/* 0, BENCH_HELP, or -EINVAL with one line in err. */
int bench_parse(int argc, char **argv, struct bench_opts *o, char *err, size_t errlen);
void bench_print_usage(FILE *out);

#endif
