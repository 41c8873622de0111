/*
 * `vmm bench` options -> struct bench_opts, driven by the option table
 * (table.c) as `vmm run`'s parser is by its own: getopt_long's arrays come
 * from the rows, each value's checks from its row; what spans several
 * options is checked here. The preset goes first (presets.c). Bad input is
 * one line and exit 2, as for `vmm run`.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "vmm/bench/cli/cli.h"
#include "vmm/bench/cli/values.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/cli/parse.h"

/* getopt_long's value for a row without a short name: past every char. */
#define LONG_ONLY_BASE 256

/* getopt_long's view of the table: a short name is its own value. */
static void getopt_arrays(struct option *lo, char *shorts)
{
	char *s = shorts;
	*s++ = ':'; /* a missing value reads ':', not '?' */
	for (unsigned i = 0; i < bench_opt_nrows; i++) {
		const struct bench_opt *r = &bench_opt_rows[i];
		int has_arg = r->kind == BENCH_OPT_SET || r->kind == BENCH_OPT_HELP ? no_argument : required_argument;
		lo[i] = (struct option){ r->name, has_arg, NULL, r->short_name ? r->short_name : LONG_ONLY_BASE + (int)i };
		if (r->short_name) {
			*s++ = r->short_name;
			if (has_arg == required_argument)
				*s++ = ':';
		}
	}
	lo[bench_opt_nrows] = (struct option){ 0, 0, 0, 0 };
	*s = '\0';
}

/* The row getopt_long's value c names; NULL for ':', '?' or a stray value. */
static const struct bench_opt *row_of(int c)
{
	if (c >= LONG_ONLY_BASE && c < LONG_ONLY_BASE + (int)bench_opt_nrows)
		return &bench_opt_rows[c - LONG_ONLY_BASE];
	for (unsigned i = 0; c > 0 && c < LONG_ONLY_BASE && i < bench_opt_nrows; i++)
		if (bench_opt_rows[i].short_name == c)
			return &bench_opt_rows[i];
	return NULL;
}

/* getopt_long said ':' (a value is missing) or '?' (an option it does not know). */
static int bad_option(int c, char **argv, char *err, size_t errlen)
{
	if (c == ':')
		return parse_fail(err, errlen, "option %s needs a value", argv[optind - 1]);
	return parse_fail(err, errlen, "unknown option '%s' (try vmm bench --help)", argv[optind - 1]);
}

/* Linux workloads need a kernel and initramfs; qemu runs nothing else. */
static int check_linux(const struct bench_opts *o, char *err, size_t errlen)
{
	const char *wl = NULL;
	for (unsigned i = 0; i < o->workloads.n && !wl; i++)
		if (bench_linux_workload(o->workloads.v[i]))
			wl = o->workloads.v[i];
	bool qemu = false;
	for (unsigned i = 0; i < o->policies.n; i++)
		qemu |= !strcmp(o->policies.v[i], BENCH_POLICY_QEMU);
	if (qemu && !wl)
		return parse_fail(err, errlen, "--policies qemu boots only Linux workloads (--workloads hackbench, ...)");
	if (!wl)
		return 0;
	if (!o->kernel || !o->initrd)
		return parse_fail(err, errlen, "--workloads %s boots Linux: give --kernel and --initrd (make bench-linux "
				  "fetches Debian's kernel and builds the workload initramfs)", wl);
	const char *files[] = { o->kernel, o->initrd };
	for (unsigned i = 0; i < 2 && !o->merging; i++)
		if (access(files[i], R_OK) < 0)
			return parse_fail(err, errlen, "%s %s: %s", i ? "--initrd" : "--kernel", files[i], strerror(errno));
	return 0;
}

/*
 * What no single option can check: a stray argument, and --overcommit
 * against --pcpus, which may come in either order on the command line.
 */
static int check_after_options(int argc, char **argv, const struct bench_opts *o, char *err,
			       size_t errlen)
{
	if (optind < argc)
		return parse_fail(err, errlen, "unexpected argument '%s'", argv[optind]);
	if (o->shard_count && o->cells)
		return parse_fail(err, errlen, "--shard and --cells do not combine (a shard is already a set of units)");
	for (unsigned i = 0; i < o->overcommit.n; i++) {
		double vcpus = o->overcommit.v[i] * o->pcpus;
		if (vcpus != floor(vcpus))
			return parse_fail(err, errlen, "--overcommit %g on %u pcpus is not a whole number of vCPUs",
					  o->overcommit.v[i], o->pcpus);
	}
	return check_linux(o, err, errlen);
}

int bench_parse(int argc, char **argv, struct bench_opts *o, char *err, size_t errlen)
{
	struct option lo[BENCH_OPT_MAX_ROWS + 1];
	char shorts[2 * BENCH_OPT_MAX_ROWS + 2];
	int r = bench_preset_pass(argc, argv, o, err, errlen), c;
	if (r)
		return r;
	getopt_arrays(lo, shorts);
	optind = 0;
	opterr = 0;
	while (!r && (c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct bench_opt *row = row_of(c);
		if (!row)
			r = bad_option(c, argv, err, errlen);
		else if (row->kind == BENCH_OPT_HELP)
			return BENCH_HELP;
		else
			r = bench_opt_apply(row, optarg, argv[optind - 1], o, err, errlen);
	}
	return r ? r : check_after_options(argc, argv, o, err, errlen);
}
