/*
 * `vmm bench`: runs a matrix of `vmm run` configurations (workload x lock x
 * policy x overcommit x VMs x spin threshold), each cell several times,
 * interleaved, and reports medians, spreads and overcommit efficiency next
 * to the --sched host baseline and a native-threads upper bound.
 *
 * The pieces, one file each: bench_cli (options -> bench_opts), bench_matrix
 * (cells, references, run order), bench_exec (one child run with a timeout),
 * bench_procs (a multi-VM cell as K processes: one domain, or host-scheduled,
 * started at one --start-at instant), bench_json (reads the child's JSON
 * report), bench_stats (medians, Jain's index, comparisons), bench_native
 * (the same locks as host threads), bench_micro, bench_report, bench_plot.
 */
#ifndef VMM_BENCH_H
#define VMM_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_MAX_REPS 50
#define BENCH_MAX_LIST 16
#define BENCH_MAX_CELLS 2048
#define BENCH_HELP 1
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

int bench_main(int argc, char **argv);

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
/* "auto", "none" or the CPU number, in buf (at least 12 bytes). */
const char *bench_loop_name(const struct bench_loop *l, char *buf, size_t len);
bool bench_loop_same(const struct bench_loop *a, const struct bench_loop *b);
/* One value as --loop-cpu takes it; -EINVAL when it is none of them. */
int bench_loop_parse(const char *s, struct bench_loop *out);

/*
 * How a cell with K > 1 VMs runs them. PROCESS: one `vmm run --vms K` (one
 * scheduler, one process; every 1-VM cell is this). DOMAIN: K `vmm run
 * --domain D` processes sharing one agent's M slots. HOST_PROCS: K `vmm run
 * --sched host --pcpus M` processes on the same M CPUs: what K VMs of
 * another VMM get. The K processes start their vCPUs at one instant
 * (--start-at) so their windows coincide.
 */
enum bench_mode { BENCH_MODE_PROCESS, BENCH_MODE_DOMAIN, BENCH_MODE_HOST_PROCS, BENCH_MODES };
extern const char *const bench_mode_names[BENCH_MODES]; /* "process", "domain", "host-procs" */

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
	bool test_synthetic; /* hidden, for tests: units record a made-up result (bench_synth.c) */
	bool list_cells;     /* --list-cells: print the matrix and stop */
	unsigned shard_index, shard_count; /* --shard I/N; 0/0 when not given */
	const char *cells;   /* --cells LIST, resolved against the matrix (bench_shard.c) */
	unsigned pcpus_max;  /* --pcpus bound: usable CPUs; merge lifts it for other hosts' configs */
	const char *exe;    /* the binary whose `run` each cell execs */
	/* Linux workloads (bench_linux.c): the kernel and workload initramfs
	 * both VMMs boot, QEMU's binary, and what /init is told to do */
	const char *kernel, *initrd, *qemu;
	uint32_t linux_size;      /* vmm.size: 0 = the workload's own default */
	uint32_t linux_threads;   /* vmm.threads: tasks, the same at every overcommit */
	uint32_t linux_timeout_s; /* one boot, its work and power-off */
	bool merging; /* bench_load_opts: the files were the shards' hosts', not checked here */
};

/* Fills defaults (the quick matrix); bench_parse may then override. */
void bench_opts_defaults(struct bench_opts *o);
/* 0, BENCH_HELP, or -EINVAL with one line in err. */
int bench_parse(int argc, char **argv, struct bench_opts *o, char *err, size_t errlen);
void bench_print_usage(FILE *out);

/* VM: `vmm run` (the bundled guest or a Linux workload); NATIVE: the lock
 * code as host threads; QEMU: a Linux workload under QEMU -accel kvm. */
enum bench_kind { BENCH_VM, BENCH_NATIVE, BENCH_QEMU, BENCH_KINDS };
extern const char *const bench_kind_names[BENCH_KINDS]; /* "vm", "native", "qemu" */

/*
 * A run's scheduler statistics from its report (bench_sched.c): the `sched`
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
	BENCH_SCHED_STATS
};
/* results.json keys, in this order */
extern const char *const bench_sched_names[BENCH_SCHED_STATS];
/* Per-second rates the CSV carries: per run, then the median over runs. */
enum bench_rate {
	BENCH_RATE_SWITCHES, BENCH_RATE_LOOP_WAKEUPS, BENCH_RATE_DEFERRALS,
	BENCH_RATE_GUEST_SLICE_YIELDS, /* slice ends the guest timed (gs off: deferrals stand for them) */
	BENCH_RATE_WAKE_CUTS,          /* slices cut short for a woken vCPU */
	BENCH_RATES
};
extern const char *const bench_rate_names[BENCH_RATES];
struct bench_json;
void bench_sched_clear(double *s);
/* Adds report j's statistics into s (a clear s is all NaN: the first report sets). */
void bench_sched_add(const struct bench_json *j, double *s);
/* The rate of one run; NaN when a count or the window is unknown. */
double bench_sched_rate(const double *s, enum bench_rate r);

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
	double eff_lo, eff_hi; /* bootstrap percentile interval (bench_ci.c); NaN below 5 runs */
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

int bench_matrix_build(const struct bench_opts *o, struct bench_matrix *m, char *err,
		       size_t errlen);
void bench_matrix_free(struct bench_matrix *m);
/* The order of the cells in repetition rep: a permutation, different per rep. */
void bench_run_order(unsigned ncells, unsigned rep, unsigned *order);

/* Statistics over doubles; NaN for an empty set. v is not modified. */
double bench_median(const double *v, unsigned n);
double bench_min(const double *v, unsigned n);
double bench_max(const double *v, unsigned n);
/* (max - min) / median in percent; NaN when median is 0 or unknown. */
double bench_spread_pct(double min, double max, double median);
double bench_ratio(double num, double den);
/* Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when
 * one gets everything; NaN when n is 0, any x is unknown or negative, or all are 0. */
double bench_jain(const double *v, unsigned n);
void bench_stats_cell(struct bench_cell *c);

/*
 * Slice length from data (bench_fit.c): loss(slice) = a + C/slice by least
 * squares, loss = 1 - efficiency, slice and C in microseconds.
 */
#define BENCH_FIT_MIN_SLICES 3
#define BENCH_FIT_SWITCH_SHARE 0.01 /* the switch term the default slice may cost */
struct bench_fit {
	unsigned n;
	double a, c_us, r2; /* r2 NaN when every loss is equal */
};
/* -EDOM: fewer than 3 distinct slices, a slice not above 0, or a value not finite. */
int bench_fit_inverse(const double *slice_us, const double *loss, unsigned n, struct bench_fit *f);
/* The shortest slice whose switch term C/slice is at most share; 0 when C <= 0. */
double bench_fit_slice_for(const struct bench_fit *f, double share);
/* One group of co-scheduler cells above 1x that differ only in the slice. */
struct bench_slice_fit {
	int first;      /* the group's first cell (its workload, lock, policy, ...) */
	unsigned n;     /* the cells fitted: those that did not fail */
	int ids[BENCH_MAX_LIST];
	double slice_us[BENCH_MAX_LIST], loss[BENCH_MAX_LIST];
	struct bench_fit fit;
	double slice_1pct_us; /* C / 1 % */
	double swept_1pct_us; /* the shortest slice of the sweep at or above it; NaN: none */
	double wait_bound_us; /* (vCPUs per slot - 1) x slice_1pct_us */
};
/* Every group with a fit, in cell order, into *out (malloc'd); the count or -ENOMEM. */
int bench_slice_fits(const struct bench_matrix *m, struct bench_slice_fit **out);

/* Where a lost point goes (bench_loss.c): a cell above 1x against its pooled 1x. */
struct bench_loss {
	int id;
	double eff;
	double share, share_1x, share_ratio; /* guest running share of the slots' time */
	double ops_ratio;          /* ops per guest-running second / 1x's */
	double pts_slot, pts_ops;  /* 1 - eff = pts_slot + pts_ops */
	double switches_per_s, lost_us_per_switch, loop_wakeups_per_s, deferrals_per_s;
	double guest_slice_yields_per_s;
	double wake_cuts_per_s;    /* slices cut short for a woken vCPU */
	double hard_share;         /* hard deadlines / deferrals */
	double spins_queued_kept;  /* median count per run */
};
/* A VM cell above 1x that did not fail. */
bool bench_loss_applies(const struct bench_cell *c);
/* -EDOM when it does not apply; unknown values are NaN. */
int bench_loss_cell(const struct bench_matrix *m, const struct bench_cell *c, struct bench_loss *l);

/* Confidence intervals (bench_ci.c). */
#define BENCH_CI_MIN_RUNS 5
#define BENCH_BOOT_RESAMPLES 2000
#define BENCH_BOOT_SEED 0x62656e6368636921ull
/*
 * Distribution-free CI of the median of v[n] from order statistics: the
 * widest-needed [x(k), x(n+1-k)] whose binomial(n, 1/2) coverage is at least
 * 95%, or [min, max] when no k reaches it (n = 5: 93.75%). *level gets the
 * coverage. -EDOM (all NaN) below BENCH_CI_MIN_RUNS.
 */
int bench_median_ci(const double *v, unsigned n, double *lo, double *hi, double *level);
/* 2.5th and 97.5th percentiles of median(num*)/median(den*) over resamples
 * with replacement, from a fixed seed mixed with id: the same inputs in the same order
 * give the same interval anywhere. -EDOM below BENCH_CI_MIN_RUNS on either side. */
int bench_ratio_ci(const double *num, unsigned nn, const double *den, unsigned nd, unsigned id,
		   double *lo, double *hi);
/* The pool: a cell's used pool cells' ok runs, in cell then run order (malloc'd, *n). */
double *bench_pool_runs(const struct bench_matrix *m, const struct bench_cell *c, unsigned *n);
/* Every cell, then efficiencies against refs; true if any cell failed. */
bool bench_stats_matrix(struct bench_matrix *m);

/* A report read by jansson (bench_json.c); values are asked for by path, "a.b.0.c". */
struct json_t;
struct bench_json {
	struct json_t *root; /* an object; NULL once freed */
};
int bench_json_parse(const char *text, struct bench_json *j);
int bench_json_load(const char *path, struct bench_json *j);
void bench_json_free(struct bench_json *j);
/* parse/load: 0, -EINVAL (not strict JSON, or not an object at the top), -ENOMEM, or load's -errno.
 * num/bool: 0, -ENOENT (absent), -EINVAL (null, a string, or not a number / bool). */
int bench_json_num(const struct bench_json *j, const char *key, double *out);
int bench_json_bool(const struct bench_json *j, const char *key, bool *out);

/* Runs `exe run ARGS... --json JSON -q`, killed after timeout_ms.
 * Returns its exit status, 128+n after signal n, -1 on timeout or when it
 * could not start. errbuf gets the last line of its stderr. */
int bench_exec_run(const char *exe, const char *const *args, const char *json,
		   unsigned timeout_ms, char *errbuf, size_t errlen);
/* Forks; the child calls fn(arg, fd) writing its result to fd and exits with
 * fn's return. Same statuses as bench_exec_run; the result is read to buf. */
int bench_exec_fork(int (*fn)(void *arg, int fd), void *arg, unsigned timeout_ms, void *buf,
		    size_t len);
/* One repetition of one cell; tmpdir holds the child's report. */
void bench_run_cell(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		    unsigned rep, struct bench_run *out);
/* Starts exe with argv (argv[0] is exe), stdin from /dev/null, stdout to
 * outpath (NULL: /dev/null), stderr to errpath. pid or -errno. */
int bench_exec_spawn(const char *exe, const char *const *argv, const char *outpath, const char *errpath);
/* Waits for pid until deadline_ms (CLOCK_MONOTONIC ms), then kills it; status as bench_exec_run. */
int bench_exec_wait(int pid, uint64_t deadline_ms);
uint64_t bench_now_ms(void);
/* How long after forking K processes their vCPUs start (--start-margin, or by K). */
unsigned bench_start_margin_ms(const struct bench_opts *o, const struct bench_cell *c);
/* The least margin the runs so far showed was needed; 0 while none was late. */
unsigned bench_start_margin_learned_ms(void);
/* The child's timeout: generous (boot, report, many VMs), but finite. */
unsigned bench_cell_timeout_ms(const struct bench_cell *c, const struct bench_opts *o);
/* The run's common `vmm run` options for cell c (NULL-terminated into args,
 * strings in buf); returns the count. */
unsigned bench_run_args(const struct bench_opts *o, const struct bench_cell *c, const char **args,
			char (*buf)[32]);
/* DOMAIN and HOST_PROCS: K `vmm run` processes at once (bench_procs.c). */
void bench_run_procs(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		     unsigned rep, struct bench_run *out);
/* Fills out's ops_per_s/ok/why from a child's report; per-VM ops into vm_ops when not NULL. */
int bench_read_report(const char *json, struct bench_run *out, double *vm_ops, unsigned nvms,
		      struct bench_json *keep);

/* Linux workloads (bench_linux.c): hackbench, sysbench-threads, ... booted
 * under vmm run -k, or under QEMU -accel kvm for BENCH_QEMU cells. */
bool bench_linux_workload(const char *workload);
extern const char *const bench_linux_workloads[]; /* NULL-terminated */
/* The result /init printed: "VMM-WORK-RESULT work=W ops=N seconds=S ... rc=R".
 * 0 with ops/s and the guest's steal in ms (NaN if absent), or -EINVAL with why. */
int bench_linux_result(const char *console, double *ops_per_s, double *steal_ms, char *why, size_t len);
void bench_linux_run(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		     struct bench_run *out);
/* The command line of one Linux run: vmm run's (stdout is the console, the
 * report goes to json) or QEMU's (serial to console); the strings live in s. */
#define BENCH_LINUX_ARGS 48
struct bench_linux_strs {
	char cmdline[512], serial[4200];
	char num[16][32];
};
unsigned bench_linux_argv(const struct bench_opts *o, const struct bench_cell *c, const char *console,
			  const char *json, const char **argv, struct bench_linux_strs *s);
/* The co-scheduler's options of cell c (--sched host, or --yield and every
 * dimension not at its default) appended at args[n]; returns the new count.
 * Numbers go to buf[*b], which advances. */
unsigned bench_sched_args(const struct bench_cell *c, const char **args, unsigned n, char (*buf)[32],
			  unsigned *b);

/* Native: the lock loop as threads pinned round robin on pcpus CPUs. */
bool bench_native_has_lock(const char *lock);
int bench_native_run(const char *lock, unsigned threads, unsigned pcpus, uint32_t duration_ms,
		     uint32_t cs_cycles, uint32_t work_cycles, uint32_t spin_threshold,
		     double *ops_per_s);

#define BENCH_MICRO_KINDS 15
/* The kinds every results.json with shards has (hypercall_ns .. forced_preemption_gross_ns);
 * a file may lack the later ones, which were added after it (bench_load.c). */
#define BENCH_MICRO_KINDS_FIRST 7
/* New kinds go at the end: results.json and micro.csv list them in this order. */
enum bench_micro_kind {
	BENCH_MICRO_HC,      /* hypercall round trip, ns */
	BENCH_MICRO_EXIT,    /* bare MMIO exit round trip, ns */
	BENCH_MICRO_KICK,    /* PV kick -> kicked vCPU running again (VMM-side p50), ns */
	BENCH_MICRO_FUTEX,   /* stamp before FUTEX_WAKE -> woken thread's FUTEX_WAIT returned, ns */
	BENCH_MICRO_PREEMPT, /* slot time lost per forced preemption, ns */
	BENCH_MICRO_SIGNAL_EXITS, /* preemptions in the preempt run, for context */
	BENCH_MICRO_PREEMPT_GROSS, /* the same before subtracting the host's own steal */
	BENCH_MICRO_SP_SWITCH,  /* guest TSC: last instruction of the yielder -> first of the next, ns */
	BENCH_MICRO_SP_SWITCHES, /* switches timed in that run */
	BENCH_MICRO_SP_HARD,    /* its hard deferrals (forced exits): ~0 when the path is right */
	BENCH_MICRO_KICK_GUEST, /* guest TSC: kicker before the kick -> sleeper's wait returned, ns */
	BENCH_MICRO_KICKS_TIMED, /* kicks timed in that run */
	/* The same spswitch with --guest-slice off: the VMM times the slice and
	 * requests the switch (preempt_pending), the guest yields at its next
	 * lock boundary. The SP_ kinds above are the guest-timed path (the default). */
	BENCH_MICRO_REQ_SWITCH,  /* guest TSC, as SP_SWITCH, ns */
	BENCH_MICRO_REQ_SWITCHES, /* switches timed in that run */
	BENCH_MICRO_REQ_HARD,    /* its hard deferrals */
};

struct bench_micro {
	bool ran;
	unsigned reps;
	double raw[BENCH_MICRO_KINDS][BENCH_MAX_REPS]; /* NaN: that try failed */
	double median[BENCH_MICRO_KINDS];
	unsigned failures;
	char why[128]; /* the first failure */
};

extern const char *const bench_micro_names[BENCH_MICRO_KINDS];
/* One repetition of every microbenchmark (interleaved like the cells). */
void bench_micro_rep(const struct bench_opts *o, const char *tmpdir, unsigned rep,
		     struct bench_micro *mi);
void bench_micro_finish(struct bench_micro *mi);

struct bench_machine {
	unsigned nproc;
	char cpu[128], kernel[160], kvm[64];
};
void bench_machine_probe(struct bench_machine *mc);

/* The policy as the tables show it, with its mode and every dimension not at
 * vmm run's default: "none@dom/s3ms/d100us/gsoff/loopnone/w500us". */
#define BENCH_LABEL_MAX 64
const char *bench_cell_label(const struct bench_cell *c, char *buf, size_t len);
/* The widest label among the cells show() keeps (all when NULL), at least min:
 * the tables' policy column, so long labels keep the columns aligned. */
int bench_label_width(const struct bench_matrix *m, bool (*show)(const struct bench_cell *c), int min);

/* Table to out; CSV and JSON into o->out_dir. 0 or -errno. */
void bench_report_table(FILE *out, const struct bench_opts *o, const struct bench_matrix *m,
			const struct bench_micro *mi, const struct bench_machine *mc);
int bench_report_csv(const char *dir, const struct bench_matrix *m, const struct bench_micro *mi);
struct bench_shard_meta; /* bench_shard.h */
int bench_report_json(const char *path, const struct bench_opts *o, const struct bench_matrix *m,
		      const struct bench_micro *mi, const struct bench_machine *mc,
		      const struct bench_shard_meta *meta);

/* The slice fit and the loss table (bench_report_loss.c): after the main table,
 * into DIR/slice_fit.csv and DIR/loss.csv, and as results.json's "slice_fit"
 * and "loss" arrays. */
void bench_report_derived(FILE *out, const struct bench_matrix *m);
int bench_derived_csv(const char *dir, const struct bench_matrix *m);
void bench_derived_json(struct json_t *root, const struct bench_matrix *m);
/* v with printf format f, or "-" when unknown (NaN). */
const char *bench_fmt(double v, const char *f, char *buf, size_t len);
/* Linux workloads beside QEMU+KVM (bench_report_linux.c): after the main
 * table, when the matrix has any. */
void bench_report_linux(FILE *out, const struct bench_matrix *m);
/* The open issues' speed targets judged on the cells (bench_targets.c): a
 * table after the derived ones, and "targets" in results.json. */
void bench_targets_print(FILE *out, const struct bench_matrix *m);
void bench_targets_json(struct json_t *root, const struct bench_matrix *m);
/* A results.json number: whole values as integers, NaN (unknown) as null. */
struct json_t *bench_json_number(double v);
/* ",value" in the shortest text that reads back as the same double; "," when unknown. */
void bench_csv_num(FILE *f, double v);

/* Writes DIR/<name>.gp + .dat and runs gnuplot for the SVGs. 0, or -1 with
 * one line in err (gnuplot missing or failed). */
int bench_plot(const char *dir, const struct bench_matrix *m, char *err, size_t errlen);

#endif
