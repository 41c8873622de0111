/*
 * The presets: a starting matrix each, the first of them (quick) the
 * default. A preset fills the lists first, wherever --preset stands on the
 * line, then any explicit flag overrides its part, so `--preset threshold
 * --reps 5` means what it says.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "vmm/bench/cli/cli.h"
#include "vmm/bench/cli/values.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/cli/parse.h"

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
	int r = bench_cli_split("--workloads", p->workloads, &o->workloads, err, errlen);
	if (!r)
		r = bench_cli_split("--locks", p->locks, &o->locks, err, errlen);
	if (!r)
		r = bench_cli_split("--policies", p->policies, &o->policies, err, errlen);
	if (!r)
		r = bench_cli_numbers("--overcommit", p->overcommit, MAX_OVERCOMMIT, true, false, &o->overcommit, err, errlen);
	if (!r)
		r = bench_cli_numbers("--vms", p->vms, MAX_VMS, false, false, &o->vms, err, errlen);
	if (!r)
		r = bench_cli_numbers("--spin-thresholds", p->thresholds, 1u << 30, false, false, &o->thresholds, err, errlen);
	if (!r && p->slices)
		r = bench_cli_numbers_from("--slice-us", p->slices, 50, 10000000, &o->slices, err, errlen);
	if (!r && p->guest_slice)
		r = bench_cli_on_off("--guest-slice", p->guest_slice, &o->guest_slices, err, errlen);
	if (!r && p->wake_slices)
		r = bench_cli_numbers_from("--wake-slice-us", p->wake_slices, 0, 10000000, &o->wake_slices, err, errlen);
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

/* The preset first, wherever it stands on the line, so flags override it. */
int bench_preset_pass(int argc, char **argv, struct bench_opts *o, char *err, size_t errlen)
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

void bench_preset_help(FILE *out)
{
	for (unsigned i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		fprintf(out, "                            %-10s %s\n", presets[i].name, presets[i].help);
}
