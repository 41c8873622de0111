/*
 * What every layer of the harness shares: the options a run was asked for
 * (struct bench_opts), the cells of the matrix and their runs, and the host
 * they ran on. Filled bottom up: cli/ the options, matrix/ the cells, exec/
 * the runs, stats/ the figures of each cell; report/ and fleet/ only read.
 */
#ifndef VMM_BENCH_MATRIX_TYPES_H
#define VMM_BENCH_MATRIX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_MAX_REPS 50
#define BENCH_MAX_LIST 16
#define BENCH_MAX_CELLS 2048
#define BENCH_DEFAULT_REPS 5
/* vmm run's own defaults (vmm/cli/options.c): a cell at these keeps the key it had
 * before slices and deferral bounds were dimensions. */
#define BENCH_SLICE_US_DEFAULT 6000
#define BENCH_DEFER_US_DEFAULT 200
#define BENCH_WAKE_SLICE_US_DEFAULT 1000

/* The pseudo policy for the baseline every other VMM uses: --sched host. */
#define BENCH_POLICY_HOST "host"
/* Native cells (plain host threads, no VM) carry this policy name. */
#define BENCH_POLICY_NATIVE "native"
/* The stock baseline for Linux workloads: QEMU -accel kvm on the same CPUs. */
#define BENCH_POLICY_QEMU "qemu"

struct bench_strs {
	unsigned n;
	const char *v[BENCH_MAX_LIST];
};

struct bench_nums {
	unsigned n;
	double v[BENCH_MAX_LIST];
};

/* --guest-slice on,off: each value at most once, in the order given. */
struct bench_onoff {
	unsigned n;
	bool off[2];
};

/* --loop-cpu: where `vmm run` puts its event loop. AUTO is 0 so a cell
 * built without one (host, native, a reference) has vmm run's default. */
enum bench_loop_kind { BENCH_LOOP_AUTO, BENCH_LOOP_NONE, BENCH_LOOP_CPU };
struct bench_loop {
	enum bench_loop_kind kind;
	unsigned cpu; /* BENCH_LOOP_CPU only */
};
#define BENCH_LOOP_CPU_MAX 1023 /* vmm run's bound: CPU_SETSIZE - 1 */
struct bench_loops {
	unsigned n;
	struct bench_loop v[BENCH_MAX_LIST];
};

/*
 * How a cell with K > 1 VMs runs them. PROCESS: one `vmm run --vms K` (one
 * scheduler, one process; every 1-VM cell is this). DOMAIN: K `vmm run
 * --domain D` processes sharing one agent's M slots. HOST_PROCS: K `vmm run
 * --sched host --pcpus M` processes on the same M CPUs: what K VMs of
 * another VMM get. The K processes start their vCPUs at one instant
 * (--start-at) so their windows coincide.
 */
enum bench_mode { BENCH_MODE_PROCESS, BENCH_MODE_DOMAIN, BENCH_MODE_HOST_PROCS, BENCH_MODES };

struct bench_opts {
	const char *preset;
	unsigned reps;
	uint32_t duration_ms;
	unsigned pcpus;
	uint32_t cs_cycles, work_cycles;
	struct bench_strs workloads, locks, policies;
	struct bench_nums overcommit; /* vCPUs per slot in each VM */
	struct bench_nums vms;
	struct bench_nums thresholds;
	struct bench_nums slices, defers; /* --slice-us, --defer-us: co-scheduler cells only */
	struct bench_nums wake_slices;    /* --wake-slice-us: co-scheduler cells only; 0 allowed */
	struct bench_onoff guest_slices;  /* --guest-slice: co-scheduler cells only */
	struct bench_loops loops;         /* --loop-cpu: co-scheduler cells only */
	const char *out_dir;
	bool plot, native, micro;
	bool modes[BENCH_MODES]; /* --vm-mode: which rows a K > 1 cell gets */
	uint32_t start_margin_ms; /* K processes start their vCPUs this long after being forked; 0: auto */
	int test_fail_cell; /* hidden, for tests: this cell's runs get a bad option; -1 none */
	bool test_synthetic; /* hidden, for tests: units record a made-up result (exec/synth.c) */
	bool list_cells;     /* --list-cells: print the matrix and stop */
	unsigned shard_index, shard_count; /* --shard I/N; 0/0 when not given */
	const char *cells;   /* --cells LIST, resolved against the matrix (matrix/shard.c) */
	unsigned pcpus_max;  /* --pcpus bound: usable CPUs; merge lifts it for other hosts' configs */
	const char *exe;    /* the binary whose `run` each cell execs */
	/* Linux workloads (exec/linux.c): the kernel and workload initramfs
	 * both VMMs boot, QEMU's binary, and what /init is told to do */
	const char *kernel, *initrd, *qemu;
	uint32_t linux_size;      /* vmm.size: 0 = the workload's own default */
	uint32_t linux_threads;   /* vmm.threads: tasks, the same at every overcommit */
	uint32_t linux_timeout_s; /* one boot, its work and power-off */
	bool merging; /* bench_load_opts: the files were the shards' hosts', not checked here */
};

/* VM: `vmm run` (the bundled guest or a Linux workload); NATIVE: the lock
 * code as host threads; QEMU: a Linux workload under QEMU -accel kvm. */
enum bench_kind { BENCH_VM, BENCH_NATIVE, BENCH_QEMU, BENCH_KINDS };

/*
 * A run's scheduler statistics from its report (exec/sched.c): the `sched`
 * totals and the `event_loop` wake-ups, summed over K processes, and the
 * measured window they were counted in. NaN: the report did not have it.
 */
enum bench_sched_stat {
	BENCH_SCHED_PREEMPTIONS, BENCH_SCHED_YIELDS_GIVEN, BENCH_SCHED_YIELDS_RECEIVED,
	BENCH_SCHED_DEFERRALS, BENCH_SCHED_DEFERRALS_HARD, BENCH_SCHED_SPINS_QUEUED_KEPT,
	BENCH_SCHED_SPIN_EVENTS, BENCH_SCHED_WAITS, BENCH_SCHED_KICKS_SENT, BENCH_SCHED_KICKS_RECEIVED,
	BENCH_SCHED_KERNEL_HALTS, BENCH_SCHED_UNSLOTTED_WAKES, BENCH_SCHED_LOOP_TICKS,
	BENCH_SCHED_LOOP_TICKS_EARLY, BENCH_SCHED_LOOP_TIMER_SETS, BENCH_SCHED_WINDOW_S,
	/* The guest's own run meter: its vCPUs' running ns, summed, and the
	 * guest's measured window (the longest VM's), for the loss table. */
	BENCH_SCHED_RUN_NS_TOTAL, BENCH_SCHED_GUEST_WINDOW_S,
	/* Guest-timed slices: the guest left at its own slice end, or asked
	 * too early or with nobody queued. Files written before them lack both. */
	BENCH_SCHED_GUEST_SLICE_YIELDS, BENCH_SCHED_GUEST_SLICE_DECLINED,
	/* Not a count: the CPU the event loop ran on, read back by the child
	 * (event_loop.cpu): -1 not pinned to one CPU, -2 the K processes'
	 * loops were on different CPUs (or, for a cell, its runs' were).
	 * Files written before it lack it. */
	BENCH_SCHED_LOOP_CPU,
	/* Slices cut short for a woken vCPU (--wake-slice-us); files written
	 * before it lack it. */
	BENCH_SCHED_WAKE_CUT_SLICES,
	/* Seat holders asked to leave at their next lock boundary for a
	 * sibling forced out inside a lock region (domain members, lock
	 * drains); files written before it lack it. */
	BENCH_SCHED_LOCK_DRAINS,
	/* Slot deadlines ticked on the holder's own thread (--own-tick), not
	 * the event loop's: not loop wake-ups. Files written before it lack it. */
	BENCH_SCHED_OWN_TICKS,
	BENCH_SCHED_STATS
};
/* Per-second rates the CSV carries: per run, then the median over runs. */
enum bench_rate {
	BENCH_RATE_SWITCHES, BENCH_RATE_LOOP_WAKEUPS, BENCH_RATE_DEFERRALS,
	BENCH_RATE_GUEST_SLICE_YIELDS, /* slice ends the guest timed (gs off: deferrals stand for them) */
	BENCH_RATE_WAKE_CUTS,          /* slices cut short for a woken vCPU */
	BENCH_RATES
};

struct bench_run {
	unsigned rep;    /* the global repetition: shards and merges keep it */
	bool ok;
	int exit_code;   /* the child's exit status; 128+n for signal n; -1 timeout */
	double ops_per_s; /* NaN when absent */
	double wall_s;
	char why[96];    /* why it failed, for the table */
	/* K > 1 VMs: each VM's own ops/s (NaN unknown) [vms], malloc'd; and for
	 * K processes their start instants (CLOCK_MONOTONIC) and lateness. */
	double *vm_ops;
	uint64_t *vm_start_ns;
	double start_spread_ms, max_late_ms; /* NaN when not K processes */
	bool unready;        /* a VM was not made by the instant (its report's start_wait_ns is 0) */
	uint64_t min_grants; /* DOMAIN: the fewest grants any member got */
	double sched[BENCH_SCHED_STATS]; /* NaN: unknown */
};

struct bench_cell {
	unsigned id;
	enum bench_kind kind;
	const char *workload, *lock, *policy;
	enum bench_mode mode;
	uint32_t spin_threshold;
	uint32_t slice_us, defer_us; /* host and native cells: the defaults (they take neither) */
	uint32_t wake_slice_us; /* --wake-slice-us (0: as the slice); the default for host and native */
	bool guest_slice_off; /* --guest-slice off; false (vmm run's default, on) for host and native */
	struct bench_loop loop; /* --loop-cpu; auto (vmm run's default) for host and native */
	unsigned vms, vcpus; /* vCPUs per VM; native: threads */
	unsigned pcpus;
	double overcommit;   /* all vCPUs (or threads) / pcpus */
	bool auto_added;     /* not asked for: a 1x reference the harness added */
	int ref;             /* cell whose median is this one's 1x; -1 none */
	int native_ref;      /* native cell, same lock, pcpus threads; -1 none */
	int one_vm_ref;      /* K > 1: 1 VM of the same vCPUs, lock, policy on the same slots */
	int process_ref;     /* DOMAIN: the same cell as one process (--vms K); -1 none */
	int host_procs_ref;  /* DOMAIN: the same K VMs as host-scheduled processes; -1 none */
	int qemu_ref;        /* a Linux workload's vmm cell: QEMU with the same vCPUs on the same CPUs */
	/* The efficiency's denominator: every policy's (and slice's) 1x cell of the
	 * same workload, lock and threshold (a native cell: its bound). pool[npool]
	 * are the candidates, used[nused] those that did not fail (malloc'd, one block). */
	int *pool, *used;
	unsigned npool, nused;

	unsigned nruns;
	struct bench_run runs[BENCH_MAX_REPS];
	bool missing;        /* merge: some repetitions are in no shard (fails the cell) */

	/* bench_stats_cell */
	unsigned nok;
	double median, min, max, spread_pct;
	double median_lo, median_hi, median_level; /* order-statistic CI; NaN below 5 runs */
	double pooled_1x; /* median of every ok run of the used pool cells */
	double eff;       /* median / pooled_1x; NaN when unknown */
	double eff_lo, eff_hi; /* bootstrap percentile interval (stats/ci.c); NaN below 5 runs */
	double sched_median[BENCH_SCHED_STATS]; /* per statistic, over ok runs (loop CPU: their common one) */
	double rate[BENCH_RATES];
	double of_native; /* median / native bound; NaN when unknown */
	bool failed;
	int fail_exit;
	const char *fail_why;
	/* K > 1 (bench_stats_matrix): per-VM medians over reps [vms] (malloc'd) */
	double *vm_median;
	double jain;        /* Jain's fairness index over vm_median */
	double max_over_min;
	double vs_one_vm;   /* median (the sum) / one_vm_ref's median */
	double vs_process, vs_host_procs;
	double vs_qemu, vs_qemu_lo, vs_qemu_hi; /* median / qemu_ref's median, bootstrap interval */
	double start_spread_ms, max_late_ms; /* worst over reps; NaN when not K processes */
};

struct bench_matrix {
	unsigned n;
	struct bench_cell *cells;
};

struct bench_machine {
	unsigned nproc;
	char cpu[128], kernel[160], kvm[64];
};

#endif
