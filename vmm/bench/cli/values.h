/*
 * What the option table (options.c), the presets (presets.c) and the usage
 * text (usage.c) share inside cli/: the value parsers, each 0 or -EINVAL
 * with one line naming the option opt in err, and the presets.
 */
#ifndef VMM_BENCH_CLI_VALUES_H
#define VMM_BENCH_CLI_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/bench/matrix/types.h"

#define MAX_VMS 64
#define MAX_OVERCOMMIT 64

/* A comma list in a copy that lives as long as the process. */
int bench_cli_split(const char *opt, const char *arg, struct bench_strs *out, char *err, size_t errlen);
/* A path option's copy that lives as long as the process; NULL when the pool is full. */
const char *bench_cli_kept(const char *arg);
/* Names from known; host_ok: the baselines host and qemu are names too. */
int bench_cli_names(const char *opt, const char *arg, const char *const *known, bool host_ok,
		    struct bench_strs *out, char *err, size_t errlen);
/* Positive numbers (or 0 too, with zero); whole numbers only unless fractions is set. */
int bench_cli_numbers(const char *opt, const char *arg, double max, bool fractions, bool zero,
		      struct bench_nums *out, char *err, size_t errlen);
/* Whole numbers in [min, max], each once. */
int bench_cli_numbers_from(const char *opt, const char *arg, double min, double max, struct bench_nums *out,
			   char *err, size_t errlen);
int bench_cli_on_off(const char *opt, const char *arg, struct bench_onoff *out, char *err, size_t errlen);
int bench_cli_loop_cpus(const char *opt, const char *arg, struct bench_loops *out, char *err, size_t errlen);
int bench_cli_vm_modes(const char *arg, struct bench_opts *o, char *err, size_t errlen);
/* One whole number in [min, max]. */
int bench_cli_whole(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out, char *err,
		    size_t errlen);

/*
 * `vmm bench`'s options as data, one row each (table.c), as `vmm run`'s are
 * (vmm/cli/options.h); getopt_long's arrays are built from the rows
 * (options.c). cli_opt's rows store into struct vm_config, so these are
 * their own rows of the same shape: a whole number in [min, max], a switch,
 * or the row's own parser.
 */
enum bench_opt_kind {
	BENCH_OPT_WHOLE,  /* a whole number in [min, max] into a 32-bit field */
	BENCH_OPT_SET,    /* no argument: the bool field becomes value */
	BENCH_OPT_FN,     /* the row's own parser */
	BENCH_OPT_PRESET, /* taken before every other (bench_preset_pass): nothing to do in order */
	BENCH_OPT_HELP,   /* no argument: asks for the usage text */
};
struct bench_opt {
	const char *name; /* the long name, without "--" */
	char short_name;  /* 0: none */
	enum bench_opt_kind kind;
	uint64_t min, max; /* BENCH_OPT_WHOLE */
	size_t off, size;  /* the struct bench_opts field (WHOLE, SET) */
	bool value;        /* BENCH_OPT_SET */
	/* BENCH_OPT_FN: arg is the value, said the argument getopt_long took last
	 * (what the path options' messages name) */
	int (*parse)(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen);
};
/* The most rows the getopt arrays built from the table can hold. */
#define BENCH_OPT_MAX_ROWS 64
extern const struct bench_opt bench_opt_rows[];
extern const unsigned bench_opt_nrows;
/* One row's argument into o: 0, or -EINVAL with one line in err. */
int bench_opt_apply(const struct bench_opt *r, const char *arg, const char *said, struct bench_opts *o, char *err,
		    size_t errlen);

/* The preset named on the command line (the first --preset), applied to o
 * before any other option. 0 or -EINVAL with err. */
int bench_preset_pass(int argc, char **argv, struct bench_opts *o, char *err, size_t errlen);
/* One line per preset, as --help lists them. */
void bench_preset_help(FILE *out);

#endif
