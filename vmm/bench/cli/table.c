/*
 * The rows of `vmm bench`'s option table (values.h) and the parsers of the
 * options that are more than a whole number or a switch. The rows are in
 * --help's order; the hidden ones say why they are hidden.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sched/policy.h"
#include "vmm/bench/cli/values.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/cli/parse.h"
#include "vmm/cli/workloads.h"

#define FIELD(f) .off = offsetof(struct bench_opts, f), .size = sizeof(((struct bench_opts *)0)->f)
#define WHOLE(f, lo, hi) .kind = BENCH_OPT_WHOLE, .min = (lo), .max = (hi), FIELD(f)
#define SET(f, v) .kind = BENCH_OPT_SET, FIELD(f), .value = (v)
#define FN(fn) .kind = BENCH_OPT_FN, .parse = (fn)

static const char *const bench_workloads[] = { "lockbench", "shootdown", "barrier", "hackbench",
					       "sysbench-threads", "sysbench-mutex", "kbuild", NULL };

static int opt_duration(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	uint64_t v;
	if (parse_time_ms(arg, &v) || v < 10 || v > 600000)
		return parse_fail(err, errlen, "--duration: '%s' is not a time from 10ms to 600s", arg);
	o->duration_ms = (uint32_t)v;
	return 0;
}

/* Its bound is this host's usable CPUs, or what a merge lifts it to. */
static int opt_pcpus(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	uint64_t v;
	int r = bench_cli_whole("--pcpus", arg, 1, o->pcpus_max, &v, err, errlen);
	if (!r)
		o->pcpus = (unsigned)v;
	return r;
}

static int opt_workloads(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_names("--workloads", arg, bench_workloads, false, &o->workloads, err, errlen);
}

static int opt_locks(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_names("--locks", arg, vmm_lock_names, false, &o->locks, err, errlen);
}

static int opt_policies(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_names("--policies", arg, sched_policy_names(), true, &o->policies, err, errlen);
}

static int opt_overcommit(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_numbers("--overcommit", arg, MAX_OVERCOMMIT, true, false, &o->overcommit, err, errlen);
}

static int opt_vms(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_numbers("--vms", arg, MAX_VMS, false, false, &o->vms, err, errlen);
}

static int opt_thresholds(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_numbers("--spin-thresholds", arg, 1u << 30, false, false, &o->thresholds, err, errlen);
}

/* The next three in vmm run's own ranges for the option. */
static int opt_slices(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_numbers_from("--slice-us", arg, 50, 10000000, &o->slices, err, errlen);
}

static int opt_defers(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_numbers_from("--defer-us", arg, 1, 1000000, &o->defers, err, errlen);
}

static int opt_wake_slices(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_numbers_from("--wake-slice-us", arg, 0, 10000000, &o->wake_slices, err, errlen);
}

static int opt_guest_slice(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_on_off("--guest-slice", arg, &o->guest_slices, err, errlen);
}

static int opt_loop_cpu(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_loop_cpus("--loop-cpu", arg, &o->loops, err, errlen);
}

/* --kernel, --initrd, --qemu: kept in a pool, since merge parses argv it
 * built in its own buffers. The messages name the option (what getopt_long
 * took last is the empty value itself with `--kernel ""`). */
static int path(const char *arg, const char *said, const char **out, char *err, size_t errlen)
{
	if (!arg[0])
		return parse_fail(err, errlen, "%s: empty path", said);
	if (!(*out = bench_cli_kept(arg)))
		return parse_fail(err, errlen, "%s: path too long", said);
	return 0;
}

static int opt_kernel(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return path(arg, "--kernel", &o->kernel, err, errlen);
}

static int opt_initrd(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return path(arg, "--initrd", &o->initrd, err, errlen);
}

static int opt_qemu(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return path(arg, "--qemu", &o->qemu, err, errlen);
}

/* Asked in seconds' worth of time, kept in seconds. */
static int opt_linux_timeout(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	uint64_t v;
	if (parse_time_ms(arg, &v) || v < 10000 || v > 86400000)
		return parse_fail(err, errlen, "--linux-timeout: '%s' is not a time from 10s to 24h", arg);
	o->linux_timeout_s = (uint32_t)(v / 1000);
	return 0;
}

static int opt_out(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	if (!arg[0])
		return parse_fail(err, errlen, "--out: empty path");
	o->out_dir = arg;
	return 0;
}

static int opt_vm_mode(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	return bench_cli_vm_modes(arg, o, err, errlen);
}

static int opt_start_margin(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	uint64_t v;
	if (parse_time_ms(arg, &v) || v < 1 || v > 600000)
		return parse_fail(err, errlen, "--start-margin: '%s' is not a time from 1ms to 600s", arg);
	o->start_margin_ms = (uint32_t)v;
	return 0;
}

static int opt_shard(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	if (bench_shard_parse(arg, &o->shard_index, &o->shard_count))
		return parse_fail(err, errlen, "--shard: '%s' is not I/N with 1 <= I <= N", arg);
	return 0;
}

/* Resolved against the matrix once it is built (matrix/shard.c). */
static int opt_cells(const char *arg, const char *said, struct bench_opts *o, char *err, size_t errlen)
{
	(void)said;
	if (!arg[0])
		return parse_fail(err, errlen, "--cells: empty list");
	o->cells = arg;
	return 0;
}

const struct bench_opt bench_opt_rows[] = {
	{ .name = "preset", .kind = BENCH_OPT_PRESET },
	{ .name = "reps", WHOLE(reps, 1, BENCH_MAX_REPS) },
	{ .name = "duration", FN(opt_duration) },
	{ .name = "pcpus", FN(opt_pcpus) },
	{ .name = "workloads", FN(opt_workloads) },
	{ .name = "locks", FN(opt_locks) },
	{ .name = "policies", FN(opt_policies) },
	{ .name = "overcommit", FN(opt_overcommit) },
	{ .name = "vms", FN(opt_vms) },
	{ .name = "spin-thresholds", FN(opt_thresholds) },
	{ .name = "slice-us", FN(opt_slices) },
	{ .name = "defer-us", FN(opt_defers) },
	{ .name = "wake-slice-us", FN(opt_wake_slices) },
	{ .name = "guest-slice", FN(opt_guest_slice) },
	{ .name = "loop-cpu", FN(opt_loop_cpu) },
	{ .name = "kernel", FN(opt_kernel) },
	{ .name = "initrd", FN(opt_initrd) },
	{ .name = "qemu", FN(opt_qemu) },
	{ .name = "linux-size", WHOLE(linux_size, 1, UINT32_MAX) },
	{ .name = "linux-threads", WHOLE(linux_threads, 1, 1024) },
	{ .name = "linux-timeout", FN(opt_linux_timeout) },
	{ .name = "cs-cycles", WHOLE(cs_cycles, 0, UINT32_MAX) },
	{ .name = "work-cycles", WHOLE(work_cycles, 0, UINT32_MAX) },
	{ .name = "out", FN(opt_out) },
	{ .name = "no-plot", SET(plot, false) },
	{ .name = "no-native", SET(native, false) },
	{ .name = "no-micro", SET(micro, false) },
	{ .name = "vm-mode", FN(opt_vm_mode) },
	{ .name = "start-margin", FN(opt_start_margin) },
	/* Not in --help: makes one cell's runs fail, so tests can see failures reported. */
	{ .name = "test-fail-cell", WHOLE(test_fail_cell, 0, BENCH_MAX_CELLS) },
	/* Not in --help: units record made-up results, so shard and merge run without KVM. */
	{ .name = "test-synthetic", SET(test_synthetic, true) },
	{ .name = "list-cells", SET(list_cells, true) },
	{ .name = "shard", FN(opt_shard) },
	{ .name = "cells", FN(opt_cells) },
	{ .name = "help", .short_name = 'h', .kind = BENCH_OPT_HELP },
};
_Static_assert(sizeof(bench_opt_rows) / sizeof(bench_opt_rows[0]) <= BENCH_OPT_MAX_ROWS,
	       "options.c's getopt arrays hold BENCH_OPT_MAX_ROWS rows");
const unsigned bench_opt_nrows = sizeof(bench_opt_rows) / sizeof(bench_opt_rows[0]);

int bench_opt_apply(const struct bench_opt *r, const char *arg, const char *said, struct bench_opts *o, char *err,
		    size_t errlen)
{
	uint64_t v;
	char opt[40];
	switch (r->kind) {
	case BENCH_OPT_WHOLE:
		snprintf(opt, sizeof(opt), "--%s", r->name);
		if (bench_cli_whole(opt, arg, r->min, r->max, &v, err, errlen))
			return -EINVAL;
		/* a 32-bit field (test_fail_cell's int too) or a 64-bit one, as vmm run stores */
		uint32_t v32 = (uint32_t)v;
		memcpy((char *)o + r->off, r->size == sizeof(v32) ? (void *)&v32 : (void *)&v, r->size);
		return 0;
	case BENCH_OPT_SET:
		memcpy((char *)o + r->off, &r->value, sizeof(r->value));
		return 0;
	case BENCH_OPT_FN:
		return r->parse(arg, said, o, err, errlen);
	case BENCH_OPT_PRESET:
	case BENCH_OPT_HELP:
		break;
	}
	return 0;
}
