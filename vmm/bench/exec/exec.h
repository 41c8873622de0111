/*
 * The exec layer: one unit of the matrix run and recorded in its struct
 * bench_run. A cell (cell.c) is a `vmm run` child (child.c, args.c), K of
 * them at one instant (procs.c), a Linux guest under vmm or QEMU (linux.c),
 * host threads (native.c) or, for tests, a made-up result (synth.c); the
 * microbenchmarks (micro.c) likewise. The child's report is read with
 * jansson (json.c), its scheduler statistics kept per run (sched.c).
 */
#ifndef VMM_BENCH_EXEC_H
#define VMM_BENCH_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/bench/matrix/types.h"

/* results.json keys, in this order */
extern const char *const bench_sched_names[BENCH_SCHED_STATS];
extern const char *const bench_rate_names[BENCH_RATES];
struct bench_json;
void bench_sched_clear(double *s);
/* Adds report j's statistics into s (a clear s is all NaN: the first report sets). */
void bench_sched_add(const struct bench_json *j, double *s);
/* The rate of one run; NaN when a count or the window is unknown. */
double bench_sched_rate(const double *s, enum bench_rate r);

/* A report read by jansson (exec/json.c); values are asked for by path, "a.b.0.c". */
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
/* A run that used used_ms found a VM late_ms late: later runs get more. */
void bench_start_margin_learn(unsigned used_ms, double late_ms);
/* The child's timeout: generous (boot, report, many VMs), but finite. */
unsigned bench_cell_timeout_ms(const struct bench_cell *c, const struct bench_opts *o);
/* The run's common `vmm run` options for cell c (NULL-terminated into args,
 * strings in buf); returns the count. */
unsigned bench_run_args(const struct bench_opts *o, const struct bench_cell *c, const char **args,
			char (*buf)[32]);
/* DOMAIN and HOST_PROCS: K `vmm run` processes at once (exec/procs.c). */
void bench_run_procs(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		     unsigned rep, struct bench_run *out);
/* Fills out's ops_per_s/ok/why from a child's report; per-VM ops into vm_ops when not NULL. */
int bench_read_report(const char *json, struct bench_run *out, double *vm_ops, unsigned nvms,
		      struct bench_json *keep);

/* Linux workloads (linux.c): a Linux guest under vmm run -k or QEMU. */
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
int bench_native_run(const char *lock, unsigned threads, unsigned pcpus, uint32_t duration_ms,
		     uint32_t cs_cycles, uint32_t work_cycles, uint32_t spin_threshold,
		     double *ops_per_s);

#define BENCH_MICRO_KINDS 17
/* The kinds every results.json with shards has (hypercall_ns .. forced_preemption_gross_ns);
 * a file may lack the later ones, which were added after it (fleet/load.c). */
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
	/* The forced preemption with --own-tick on: the holder's own timer
	 * ends each slice (sched/README.md). PREEMPT above is the default,
	 * the event loop's timer and a signal sent across CPUs. */
	BENCH_MICRO_PREEMPT_OWN, /* slot time lost per forced preemption, ns */
	BENCH_MICRO_SIGNAL_EXITS_OWN, /* preemptions in that run */
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

/* --test-synthetic: a made-up but deterministic result per (cell key, rep). */
void bench_synth_run(const struct bench_opts *o, const struct bench_cell *c, unsigned rep,
		     struct bench_run *out);
void bench_synth_micro(unsigned rep, struct bench_micro *mi);

#endif
