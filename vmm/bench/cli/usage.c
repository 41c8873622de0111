/*
 * `vmm bench --help`. The lists of locks, policies and presets come from
 * their tables, so a new one is never left out.
 */
#include <stdio.h>

#include "sched/policy.h"
#include "vmm/bench/cli/cli.h"
#include "vmm/bench/cli/values.h"
#include "vmm/cli/workloads.h"

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
	bench_preset_help(out);
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
