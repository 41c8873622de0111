/*
 * `vmm bench` options -> struct bench_opts. A preset fills the lists first,
 * then any explicit flag overrides its part, so `--preset threshold --reps 5`
 * means what it says. Bad input is one line and exit 2, as for `vmm run`.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/policy.h"
#include "vmm/bench/cli/cli.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/cli/parse.h"
#include "vmm/cli/workloads.h"

#define MAX_VMS 64
#define MAX_OVERCOMMIT 64

static const char *const bench_workloads[] = { "lockbench", "shootdown", "barrier", "hackbench",
					       "sysbench-threads", "sysbench-mutex", "kbuild", NULL };

struct preset {
	const char *name, *help;
	const char *workloads, *locks, *policies, *overcommit, *vms, *thresholds;
	unsigned pcpus; /* 0: every usable CPU; else at most that many */
	const char *slices; /* NULL: vmm run's default slice */
	const char *guest_slice; /* NULL: on only */
	const char *wake_slices; /* NULL: vmm run's default --wake-slice-us */
};

/* The quick default, then the seeds' experiments. */
static const struct preset presets[] = {
	{ "quick", "3 locks x host/none/directed/pv x 1,2,4x (default, a few minutes)",
	  "lockbench", "ticket,pvticket,tas", "host,none,directed,pv", "1,2,4", "1", "4096", 0, NULL, NULL, NULL },
	{ "ple", "pause-loop yield: none/random/directed at 1x and 2x (KVM's PLE handler)",
	  "lockbench", "ticket,tas", "host,none,random,directed", "1,2", "1", "4096", 0, NULL, NULL, NULL },
	{ "threshold", "PV spin threshold 2k-32k with 1, 2 and 4 VMs",
	  "lockbench", "pvticket", "host,pv", "1", "1,2,4", "2048,4096,8192,16384,32768", 0, NULL, NULL, NULL },
	/* The gang seed's table: K VMs of 4 vCPUs on 2 slots, as K processes
	 * (domain), one process, and host-scheduled processes. */
	{ "gang", "TLB shootdown: 1, 2, 4 VMs of 4 vCPUs on 2 slots; host, none, gang, pv",
	  "shootdown", "ticket", "host,none,gang,pv", "2", "1,2,4", "4096", 2, NULL, NULL, NULL },
	/* Issue 13: the default slice from a fit of loss = a + C/slice (BENCHMARKS.md).
	 * Each sweep twice: with slices never cut (--wake-slice-us 0, the plain
	 * a + C/slice) and cut to 1 ms while a woken vCPU queues (vmm run's
	 * default), so the fit and the wake cut's worth come from one run. */
	{ "slices", "slice sweep 3-24 ms x wake slice 0,1 ms: 3 locks x host/none/pv x 1,2,4x, for the slice fit",
	  "lockbench", "ticket,pvticket,tas", "host,none,pv", "1,2,4", "1", "4096", 0,
	  "3000,6000,12000,24000", NULL, "0,1000" },
	/* Issue 13's acceptance table in one run: every lock kind, the barrier
	 * and shootdown workloads, the co-scheduler against the host at each
	 * level, with the guest timing its slices and without. */
	{ "hotpath", "issue 13: 5 locks + barrier + shootdown x host/none/pv x 1,2,4x, guest-timed slices on,off",
	  "lockbench,barrier,shootdown", "ticket,pvticket,tas,mcs,pvmcs", "host,none,pv", "1,2,4", "1", "4096", 0,
	  NULL, "on,off", NULL },
	/* Issue 30: a Linux guest's own locks (its PV spinlocks, the scheduler's
	 * and sockets' locks) under the seeds' kind of load, against QEMU+KVM
	 * with the same kernel on the same CPUs. Needs --kernel and --initrd. */
	{ "linux", "Linux hackbench + sysbench-threads x qemu/host/none/pv x 1,2,4x on up to 4 CPUs "
	  "(--kernel, --initrd)", "hackbench,sysbench-threads", "ticket", "qemu,host,none,pv", "1,2,4", "1", "4096", 4,
	  NULL, NULL, NULL },
};


static unsigned usable_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned)CPU_COUNT(&set);
}

/* Splits a comma list in a copy that lives as long as the process: in a
 * static pool, so the options need no freeing (and leak checkers agree). */
static int split(const char *opt, const char *arg, struct bench_strs *out, char *err, size_t errlen)
{
	static char pool[16384];
	static size_t used;
	size_t len = strlen(arg) + 1;
	if (len > sizeof(pool) - used)
		return parse_fail(err, errlen, "%s: lists too long", opt);
	char *copy = memcpy(pool + used, arg, len), *save = NULL;
	used += len;
	out->n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (out->n == BENCH_MAX_LIST)
			return parse_fail(err, errlen, "%s: at most %d values", opt, BENCH_MAX_LIST);
		out->v[out->n++] = t;
	}
	if (!out->n)
		return parse_fail(err, errlen, "%s: empty list", opt);
	return 0;
}

/* host_ok: the policies, where the baselines host and qemu are names too. */
/* A copy of a path option that lives as long as the process (merge parses
 * argv it built in its own buffers); NULL when the pool is full. */
static const char *kept(const char *arg)
{
	static char pool[3 * 4096];
	static size_t used;
	size_t len = strlen(arg) + 1;
	if (len > sizeof(pool) - used)
		return NULL;
	used += len;
	return memcpy(pool + used - len, arg, len);
}

static int names(const char *opt, const char *arg, const char *const *known, bool host_ok,
		 struct bench_strs *out, char *err, size_t errlen)
{
	int r = split(opt, arg, out, err, errlen);
	for (unsigned i = 0; !r && i < out->n; i++) {
		if (vmm_name_in(known, out->v[i]) ||
		    (host_ok && (!strcmp(out->v[i], BENCH_POLICY_HOST) || !strcmp(out->v[i], BENCH_POLICY_QEMU))))
			continue;
		char list[256];
		return parse_fail(err, errlen, "%s: unknown '%s' (known: %s%s)", opt, out->v[i],
			    host_ok ? "host, qemu, " : "", vmm_name_list(known, list, sizeof(list)));
	}
	return r;
}

/* Positive numbers (or 0 too, with zero); whole numbers only unless fractions is set. */
static int numbers(const char *opt, const char *arg, double max, bool fractions, bool zero,
		   struct bench_nums *out, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = split(opt, arg, &s, err, errlen);
	if (r)
		return r;
	out->n = s.n;
	for (unsigned i = 0; i < s.n; i++) {
		char *end;
		errno = 0;
		double v = strtod(s.v[i], &end);
		/* "4k" for spin thresholds, as the seeds write them. */
		if (!fractions && (*end == 'k' || *end == 'K') && end[1] == '\0') {
			v *= 1024;
			end++;
		}
		if (end == s.v[i] || *end || errno || !(v > 0 || (zero && v == 0)) || v > max ||
		    (!fractions && v != floor(v)))
			return parse_fail(err, errlen, "%s: '%s' is not a %s from %s to %.0f", opt, s.v[i],
				    fractions ? "number" : "whole number", fractions ? "above 0" : zero ? "0" : "1",
				    max);
		out->v[i] = v;
	}
	return 0;
}

/* Whole numbers in vmm run's own range for the option, each once. */
static int numbers_from(const char *opt, const char *arg, double min, double max,
			struct bench_nums *out, char *err, size_t errlen)
{
	int r = numbers(opt, arg, max, false, min == 0, out, err, errlen);
	for (unsigned i = 0; !r && i < out->n; i++) {
		if (out->v[i] < min)
			return parse_fail(err, errlen, "%s: '%g' is not a whole number from %.0f to %.0f", opt,
					  out->v[i], min, max);
		for (unsigned k = 0; k < i; k++)
			if (out->v[k] == out->v[i])
				return parse_fail(err, errlen, "%s: '%g' given twice", opt, out->v[i]);
	}
	return r;
}

/* on,off for --guest-slice, each once. */
static int on_off(const char *opt, const char *arg, struct bench_onoff *out, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = split(opt, arg, &s, err, errlen);
	if (r)
		return r;
	if (s.n > 2)
		return parse_fail(err, errlen, "%s: at most on and off, once each", opt);
	out->n = s.n;
	for (unsigned i = 0; i < s.n; i++) {
		if (strcmp(s.v[i], "on") && strcmp(s.v[i], "off"))
			return parse_fail(err, errlen, "%s: unknown '%s' (known: on, off)", opt, s.v[i]);
		out->off[i] = !strcmp(s.v[i], "off");
		if (i && out->off[0] == out->off[i])
			return parse_fail(err, errlen, "%s: '%s' given twice", opt, s.v[i]);
	}
	return 0;
}

/* auto, none and CPU numbers for --loop-cpu, each once. */
static int loop_cpus(const char *opt, const char *arg, struct bench_loops *out, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = split(opt, arg, &s, err, errlen);
	if (r)
		return r;
	out->n = s.n;
	for (unsigned i = 0; i < s.n; i++) {
		if (bench_loop_parse(s.v[i], &out->v[i]))
			return parse_fail(err, errlen, "%s: '%s' is neither auto, none nor a CPU number (0 to %d)",
					  opt, s.v[i], BENCH_LOOP_CPU_MAX);
		for (unsigned k = 0; k < i; k++)
			if (bench_loop_same(&out->v[k], &out->v[i]))
				return parse_fail(err, errlen, "%s: '%s' given twice", opt, s.v[i]);
	}
	return 0;
}

static int vm_modes(const char *arg, struct bench_opts *o, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = split("--vm-mode", arg, &s, err, errlen);
	if (r)
		return r;
	for (int m = 0; m < BENCH_MODES; m++)
		o->modes[m] = false;
	for (unsigned i = 0; i < s.n; i++) {
		int m = 0;
		while (m < BENCH_MODES && strcmp(s.v[i], bench_mode_names[m]))
			m++;
		if (m == BENCH_MODES)
			return parse_fail(err, errlen, "--vm-mode: unknown '%s' (known: domain, process, host-procs)",
					  s.v[i]);
		o->modes[m] = true;
	}
	return 0;
}

static const struct preset *find_preset(const char *name)
{
	for (unsigned i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

static int apply_preset(const struct preset *p, struct bench_opts *o, char *err, size_t errlen)
{
	o->preset = p->name;
	int r = split("--workloads", p->workloads, &o->workloads, err, errlen);
	if (!r)
		r = split("--locks", p->locks, &o->locks, err, errlen);
	if (!r)
		r = split("--policies", p->policies, &o->policies, err, errlen);
	if (!r)
		r = numbers("--overcommit", p->overcommit, MAX_OVERCOMMIT, true, false, &o->overcommit, err, errlen);
	if (!r)
		r = numbers("--vms", p->vms, MAX_VMS, false, false, &o->vms, err, errlen);
	if (!r)
		r = numbers("--spin-thresholds", p->thresholds, 1u << 30, false, false, &o->thresholds, err, errlen);
	if (!r && p->slices)
		r = numbers_from("--slice-us", p->slices, 50, 10000000, &o->slices, err, errlen);
	if (!r && p->guest_slice)
		r = on_off("--guest-slice", p->guest_slice, &o->guest_slices, err, errlen);
	if (!r && p->wake_slices)
		r = numbers_from("--wake-slice-us", p->wake_slices, 0, 10000000, &o->wake_slices, err, errlen);
	if (p->pcpus && p->pcpus < o->pcpus)
		o->pcpus = p->pcpus;
	return r;
}

void bench_opts_defaults(struct bench_opts *o)
{
	char err[64];
	memset(o, 0, sizeof(*o));
	o->reps = BENCH_DEFAULT_REPS;
	o->slices = (struct bench_nums){ 1, { BENCH_SLICE_US_DEFAULT } };
	o->defers = (struct bench_nums){ 1, { BENCH_DEFER_US_DEFAULT } };
	o->wake_slices = (struct bench_nums){ 1, { BENCH_WAKE_SLICE_US_DEFAULT } };
	o->guest_slices = (struct bench_onoff){ 1, { false } };
	o->loops = (struct bench_loops){ 1, { { BENCH_LOOP_AUTO, 0 } } };
	o->duration_ms = 1000;
	o->pcpus = usable_cpus();
	o->cs_cycles = 1000;
	o->work_cycles = 10000;
	o->out_dir = "bench-results";
	o->plot = o->native = o->micro = true;
	for (int m = 0; m < BENCH_MODES; m++)
		o->modes[m] = true;
	o->test_fail_cell = -1;
	o->pcpus_max = usable_cpus();
	o->exe = "/proc/self/exe";
	o->qemu = "qemu-system-x86_64";
	o->linux_threads = 8;
	o->linux_timeout_s = 600;
	apply_preset(&presets[0], o, err, sizeof(err));
}

void bench_print_usage(FILE *out)
{
	char l[128], p[128];
	fprintf(out,
		"usage: vmm bench [options]\n"
		"Runs a matrix of `vmm run` configurations, each cell --reps times (repetition r of\n"
		"every cell before r+1), and prints medians, spread and overcommit efficiency =\n"
		"ops/s at N vCPUs on M slots / the median of every policy's runs at M vCPUs on M\n"
		"slots (the pooled 1x), with 95%% intervals, beside the --sched host baseline and\n"
		"the same lock code as native threads. Writes CSV, JSON and SVG plots.\n"
		"  --preset NAME           starting matrix (default quick):\n");
	for (unsigned i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		fprintf(out, "                            %-10s %s\n", presets[i].name, presets[i].help);
	fprintf(out,
		"  --reps N                runs per cell; the median is reported, with a 95%% interval\n"
		"                          from 5 runs on (default 5)\n"
		"  --duration T            measured time of each run: 1s, 500ms (default 1s)\n"
		"  --pcpus M               physical CPU slots (default: every CPU this process may use;\n"
		"                          a fleet run gives it, so every host runs the same matrix)\n"
		"  --workloads LIST        lockbench, shootdown, barrier (the bundled guest); hackbench,\n"
		"                          sysbench-threads, sysbench-mutex, kbuild (a Linux guest: --kernel,\n"
		"                          --initrd)\n"
		"  --locks LIST            %s\n"
		"  --policies LIST         host (--sched host: always included), qemu (Linux workloads: QEMU\n"
		"                          -accel kvm on the same CPUs), %s\n"
		"  --overcommit LIST       vCPUs per slot in each VM, e.g. 1,2,4 (1x is always included)\n"
		"  --vms LIST              VMs sharing the slots, e.g. 1,2,4\n"
		"  --spin-thresholds LIST  spins before a PV lock waits, e.g. 2k,4k,8k (PV locks only)\n"
		"  --slice-us LIST         co-scheduler time slices in us, e.g. 3000,6000,12000 (default\n"
		"                          6000, vmm run's; not for --sched host)\n"
		"  --defer-us LIST         bounds on a safe-point deferral in us (default 200, vmm run's)\n"
		"  --wake-slice-us LIST    slice length in us while a woken vCPU queues, 0 = as --slice-us,\n"
		"                          e.g. 0,500,1000 (default 1000, vmm run's)\n"
		"  --guest-slice LIST      on, off or on,off: the guest times its own slices, or the VMM\n"
		"                          does and requests each switch (default on, vmm run's)\n"
		"  --loop-cpu LIST         where vmm run puts its event loop: auto, none or a CPU number,\n"
		"                          e.g. auto,none (default auto, vmm run's; --sched host cells keep\n"
		"                          auto: there auto and none both leave it with the vCPU threads)\n"
		"  --vm-mode LIST          how cells with several VMs run them (default all three):\n"
		"                            domain     one `vmm run --domain` process per VM, one agent\n"
		"                            process    one `vmm run --vms K` process\n"
		"                            host-procs one `vmm run --sched host` process per VM (policy host)\n"
		"  --start-margin T        K processes start their vCPUs together this long after being\n"
		"                          started (default 500ms + 250ms per VM); raised for the\n"
		"                          runs after one where a VM started late\n"
		"  --kernel FILE           the bzImage Linux workloads boot (both VMMs)\n"
		"  --initrd FILE           the workload initramfs (tests/linux/mkworkload.py: /init runs\n"
		"                          vmm.work=NAME and prints VMM-WORK-RESULT; make bench-linux builds it)\n"
		"  --qemu PATH             QEMU for the qemu cells (default qemu-system-x86_64 on PATH)\n"
		"  --linux-size N          the amount of work (vmm.size; default: the workload's own)\n"
		"  --linux-threads N       tasks or groups, the same at every overcommit (default 8)\n"
		"  --linux-timeout T       one Linux run: boot, work, power-off (default 600s)\n"
		"  --cs-cycles N           TSC cycles in the critical section (default 1000)\n"
		"  --work-cycles N         TSC cycles of private work (default 10000)\n"
		"  --out DIR               where results go (default bench-results)\n"
		"  --no-plot               no SVG plots (no gnuplot needed)\n"
		"  --no-native             no native-threads upper bound\n"
		"  --no-micro              no microbenchmarks\n"
		"  --list-cells            print the cells (ID, key, reps) and the unit count; run nothing\n"
		"  --shard I/N             run only every N-th unit (cell x rep) of the full run's order,\n"
		"                          starting at the I-th (1-based, as Slurm's --array=1-N)\n"
		"  --cells LIST            run every rep of only these cells: 0,3-5 (and 'micro')\n"
		"  -h, --help              this text\n"
		"  vmm bench merge [--out DIR] [--no-plot] PATH...  merges shards' results.json\n"
		"  vmm bench tables PATH...  prints the tables and targets of results.json files again\n"
		"Exit status: 0 all cells ran, 1 a cell failed (shown as FAILED) or a plot could not be\n"
		"made, 2 bad options.\n",
		vmm_name_list(vmm_lock_names, l, sizeof(l)),
		vmm_name_list(sched_policy_names(), p, sizeof(p)));
}

enum {
	OPT_PRESET = 256, OPT_REPS, OPT_DURATION, OPT_PCPUS, OPT_WORKLOADS, OPT_LOCKS,
	OPT_POLICIES, OPT_OVERCOMMIT, OPT_VMS, OPT_THRESHOLDS, OPT_CS, OPT_WORK, OPT_OUT,
	OPT_NO_PLOT, OPT_NO_NATIVE, OPT_NO_MICRO, OPT_TEST_FAIL, OPT_VM_MODE, OPT_START_MARGIN,
	OPT_LIST_CELLS, OPT_SHARD, OPT_CELLS, OPT_TEST_SYNTH, OPT_SLICES, OPT_DEFERS,
	OPT_GUEST_SLICE, OPT_LOOP_CPU, OPT_WAKE_SLICES, OPT_KERNEL, OPT_INITRD, OPT_QEMU, OPT_LINUX_SIZE,
	OPT_LINUX_THREADS, OPT_LINUX_TIMEOUT,
};

static const struct option bench_long[] = {
	{ "preset", required_argument, 0, OPT_PRESET },
	{ "reps", required_argument, 0, OPT_REPS },
	{ "duration", required_argument, 0, OPT_DURATION },
	{ "pcpus", required_argument, 0, OPT_PCPUS },
	{ "workloads", required_argument, 0, OPT_WORKLOADS },
	{ "locks", required_argument, 0, OPT_LOCKS },
	{ "policies", required_argument, 0, OPT_POLICIES },
	{ "overcommit", required_argument, 0, OPT_OVERCOMMIT },
	{ "vms", required_argument, 0, OPT_VMS },
	{ "spin-thresholds", required_argument, 0, OPT_THRESHOLDS },
	{ "slice-us", required_argument, 0, OPT_SLICES },
	{ "defer-us", required_argument, 0, OPT_DEFERS },
	{ "wake-slice-us", required_argument, 0, OPT_WAKE_SLICES },
	{ "guest-slice", required_argument, 0, OPT_GUEST_SLICE },
	{ "loop-cpu", required_argument, 0, OPT_LOOP_CPU },
	{ "kernel", required_argument, 0, OPT_KERNEL },
	{ "initrd", required_argument, 0, OPT_INITRD },
	{ "qemu", required_argument, 0, OPT_QEMU },
	{ "linux-size", required_argument, 0, OPT_LINUX_SIZE },
	{ "linux-threads", required_argument, 0, OPT_LINUX_THREADS },
	{ "linux-timeout", required_argument, 0, OPT_LINUX_TIMEOUT },
	{ "cs-cycles", required_argument, 0, OPT_CS },
	{ "work-cycles", required_argument, 0, OPT_WORK },
	{ "out", required_argument, 0, OPT_OUT },
	{ "no-plot", no_argument, 0, OPT_NO_PLOT },
	{ "no-native", no_argument, 0, OPT_NO_NATIVE },
	{ "no-micro", no_argument, 0, OPT_NO_MICRO },
	{ "vm-mode", required_argument, 0, OPT_VM_MODE },
	{ "start-margin", required_argument, 0, OPT_START_MARGIN },
	/* Not in --help: makes one cell's runs fail, so tests can see failures reported. */
	{ "test-fail-cell", required_argument, 0, OPT_TEST_FAIL },
	/* Not in --help: units record made-up results, so shard and merge run without KVM. */
	{ "test-synthetic", no_argument, 0, OPT_TEST_SYNTH },
	{ "list-cells", no_argument, 0, OPT_LIST_CELLS },
	{ "shard", required_argument, 0, OPT_SHARD },
	{ "cells", required_argument, 0, OPT_CELLS },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

static int whole(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out,
		 char *err, size_t errlen)
{
	if (parse_u64(arg, min, max, out))
		return parse_fail(err, errlen, "%s: '%s' is not a whole number from %llu to %llu", opt, arg,
			    (unsigned long long)min, (unsigned long long)max);
	return 0;
}

/* The preset first, wherever it stands on the line, so flags override it. */
static int preset_pass(int argc, char **argv, struct bench_opts *o, char *err, size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *name = NULL;
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--preset") && i + 1 < argc)
			name = argv[i + 1];
		else if (!strncmp(argv[i], "--preset=", 9))
			name = argv[i] + 9;
		if (!name)
			continue;
		const struct preset *p = find_preset(name);
		if (!p) {
			/* the list from the table, so a new preset is never left out */
			char known[256];
			size_t k = 0;
			known[0] = '\0';
			for (size_t j = 0; j < sizeof(presets) / sizeof(presets[0]) && k < sizeof(known); j++)
				k += (size_t)snprintf(known + k, sizeof(known) - k, "%s%s", j ? ", " : "", presets[j].name);
			return parse_fail(err, errlen, "--preset: unknown '%s' (known: %s)", name, known);
		}
		return apply_preset(p, o, err, errlen);
	}
	return 0;
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
	uint64_t v;
	int r = preset_pass(argc, argv, o, err, errlen), c;
	if (r)
		return r;
	optind = 0;
	opterr = 0;
	while (!r && (c = getopt_long(argc, argv, ":h", bench_long, NULL)) != -1) {
		switch (c) {
		case OPT_PRESET:
			break;
		case OPT_REPS:
			r = whole("--reps", optarg, 1, BENCH_MAX_REPS, &v, err, errlen);
			o->reps = (unsigned)v;
			break;
		case OPT_DURATION:
			if (parse_time_ms(optarg, &v) || v < 10 || v > 600000)
				r = parse_fail(err, errlen, "--duration: '%s' is not a time from 10ms to 600s", optarg);
			o->duration_ms = (uint32_t)v;
			break;
		case OPT_PCPUS:
			r = whole("--pcpus", optarg, 1, o->pcpus_max, &v, err, errlen);
			o->pcpus = (unsigned)v;
			break;
		case OPT_WORKLOADS:
			r = names("--workloads", optarg, bench_workloads, false, &o->workloads, err, errlen);
			break;
		case OPT_LOCKS:
			r = names("--locks", optarg, vmm_lock_names, false, &o->locks, err, errlen);
			break;
		case OPT_POLICIES:
			r = names("--policies", optarg, sched_policy_names(), true, &o->policies, err, errlen);
			break;
		case OPT_OVERCOMMIT:
			r = numbers("--overcommit", optarg, MAX_OVERCOMMIT, true, false, &o->overcommit, err, errlen);
			break;
		case OPT_VMS:
			r = numbers("--vms", optarg, MAX_VMS, false, false, &o->vms, err, errlen);
			break;
		case OPT_THRESHOLDS:
			r = numbers("--spin-thresholds", optarg, 1u << 30, false, false, &o->thresholds, err, errlen);
			break;
		case OPT_SLICES:
			r = numbers_from("--slice-us", optarg, 50, 10000000, &o->slices, err, errlen);
			break;
		case OPT_DEFERS:
			r = numbers_from("--defer-us", optarg, 1, 1000000, &o->defers, err, errlen);
			break;
		case OPT_WAKE_SLICES:
			r = numbers_from("--wake-slice-us", optarg, 0, 10000000, &o->wake_slices, err, errlen);
			break;
		case OPT_GUEST_SLICE:
			r = on_off("--guest-slice", optarg, &o->guest_slices, err, errlen);
			break;
		case OPT_LOOP_CPU:
			r = loop_cpus("--loop-cpu", optarg, &o->loops, err, errlen);
			break;
		case OPT_KERNEL:
		case OPT_INITRD:
		case OPT_QEMU:
			if (!optarg[0])
				r = parse_fail(err, errlen, "%s: empty path", argv[optind - 1]);
			else if (!(*(c == OPT_KERNEL ? &o->kernel : c == OPT_INITRD ? &o->initrd : &o->qemu) =
					   kept(optarg)))
				r = parse_fail(err, errlen, "%s: path too long", argv[optind - 1]);
			break;
		case OPT_LINUX_SIZE:
			r = whole("--linux-size", optarg, 1, UINT32_MAX, &v, err, errlen);
			o->linux_size = (uint32_t)v;
			break;
		case OPT_LINUX_THREADS:
			r = whole("--linux-threads", optarg, 1, 1024, &v, err, errlen);
			o->linux_threads = (uint32_t)v;
			break;
		case OPT_LINUX_TIMEOUT:
			if (parse_time_ms(optarg, &v) || v < 10000 || v > 86400000)
				r = parse_fail(err, errlen, "--linux-timeout: '%s' is not a time from 10s to 24h", optarg);
			o->linux_timeout_s = (uint32_t)(v / 1000);
			break;
		case OPT_CS:
			r = whole("--cs-cycles", optarg, 0, UINT32_MAX, &v, err, errlen);
			o->cs_cycles = (uint32_t)v;
			break;
		case OPT_WORK:
			r = whole("--work-cycles", optarg, 0, UINT32_MAX, &v, err, errlen);
			o->work_cycles = (uint32_t)v;
			break;
		case OPT_OUT:
			if (!optarg[0])
				r = parse_fail(err, errlen, "--out: empty path");
			o->out_dir = optarg;
			break;
		case OPT_NO_PLOT:
			o->plot = false;
			break;
		case OPT_NO_NATIVE:
			o->native = false;
			break;
		case OPT_NO_MICRO:
			o->micro = false;
			break;
		case OPT_VM_MODE:
			r = vm_modes(optarg, o, err, errlen);
			break;
		case OPT_START_MARGIN:
			if (parse_time_ms(optarg, &v) || v < 1 || v > 600000)
				r = parse_fail(err, errlen, "--start-margin: '%s' is not a time from 1ms to 600s", optarg);
			o->start_margin_ms = (uint32_t)v;
			break;
		case OPT_TEST_FAIL:
			r = whole("--test-fail-cell", optarg, 0, BENCH_MAX_CELLS, &v, err, errlen);
			o->test_fail_cell = (int)v;
			break;
		case OPT_TEST_SYNTH:
			o->test_synthetic = true;
			break;
		case OPT_LIST_CELLS:
			o->list_cells = true;
			break;
		case OPT_SHARD:
			if (bench_shard_parse(optarg, &o->shard_index, &o->shard_count))
				r = parse_fail(err, errlen, "--shard: '%s' is not I/N with 1 <= I <= N", optarg);
			break;
		case OPT_CELLS:
			if (!optarg[0])
				r = parse_fail(err, errlen, "--cells: empty list");
			o->cells = optarg;
			break;
		case 'h':
			return BENCH_HELP;
		default:
			r = bad_option(c, argv, err, errlen);
		}
	}
	return r ? r : check_after_options(argc, argv, o, err, errlen);
}
