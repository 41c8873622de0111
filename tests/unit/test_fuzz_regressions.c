/*
 * Regression tests for what the fuzzers (tests/fuzz) found; the sanitized
 * stage of `make test` runs them under ASan.
 *
 * fuzz_cli found a heap-use-after-free in parse_digits within seconds:
 * cli_parse_run reset getopt with optind = 1, which keeps glibc's pointer
 * into a half-read option cluster ("-qzc5" stopped at the unknown 'z') of the
 * previous call's argv, so a later call could resume in freed memory. It
 * needs two calls in one process (the fuzzer's loop; `vmm` parses once, so
 * it was latent there), and no single input reproduces it. Fixed with
 * optind = 0, glibc's full reset; these checks pin down that consecutive
 * parses are independent, and fuzz_cli has run clean since.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "vmm/cli/cli.h"

static int parse(const char *const *args, int n, struct vm_config *cfg)
{
	char **argv = calloc((size_t)n + 1, sizeof(*argv));
	for (int i = 0; i < n; i++)
		argv[i] = strdup(args[i]);
	char err[256];
	vm_config_defaults(cfg);
	int r = cli_parse_run(n, argv, cfg, err, sizeof(err));
	for (int i = 0; i < n; i++)
		free(argv[i]);
	free(argv);
	return r;
}

int main(void)
{
	struct vm_config cfg;
	const char *stop[] = { "run", "-qzc5" };
	const char *bare[] = { "run", "-q" };
	const char *two[] = { "run", "-c", "3" };
	CHECK(parse(stop, 2, &cfg) < 0);
	CHECK_EQ(parse(bare, 2, &cfg), 0);
	CHECK_EQ(cfg.ncpus, 2); /* the default, nothing left over */
	CHECK(cfg.quiet);
	CHECK(parse(stop, 2, &cfg) < 0);
	CHECK_EQ(parse(two, 3, &cfg), 0);
	CHECK_EQ(cfg.ncpus, 3);
	return check_summary();
}
