/*
 * --test-synthetic: each unit records a result made from a hash of (cell
 * key, rep) instead of running anything, so the whole shard -> merge path
 * runs in milliseconds on a machine without KVM, and two runs of the same
 * unit anywhere give the same numbers (what the merge tests compare).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"

static uint64_t unit_hash(const char *key, unsigned rep, unsigned salt)
{
	uint64_t h = bench_fnv1a(key, strlen(key), BENCH_FNV_INIT);
	h = bench_fnv1a(&rep, sizeof(rep), h);
	return bench_fnv1a(&salt, sizeof(salt), h);
}

/* In [lo, lo * 2): a spread like real runs', never zero. */
static double spread(uint64_t h, double lo)
{
	return lo * (1.0 + (double)(h % 1000) / 1000.0);
}

/*
 * A co-scheduler cell above 1x loses SYNTH_LOSS_A + SYNTH_LOSS_C_US / slice of
 * its throughput and SYNTH_SLOT_C_US / slice of its slots' time, and its
 * noise is the same for every slice (hashed without it), so a slice sweep's
 * efficiencies lie exactly on a + C/slice: the fit is checked end to end.
 */
#define SYNTH_LOSS_A 0.02
#define SYNTH_LOSS_C_US 60.0
#define SYNTH_SLOT_C_US 30.0
#define SYNTH_RUN_SHARE 0.98

static bool slice_shaped(const struct bench_cell *c)
{
	return c->kind == BENCH_VM && strcmp(c->policy, BENCH_POLICY_HOST) && c->overcommit > 1;
}

/* The guest's run meter: its window and its vCPUs' running time. */
static void synth_run_meter(const struct bench_opts *o, const struct bench_cell *c,
			    struct bench_run *out)
{
	double share = SYNTH_RUN_SHARE;
	if (slice_shaped(c))
		share -= SYNTH_SLOT_C_US / c->slice_us;
	else if (c->overcommit > 1)
		share *= 0.9; /* the host scheduler's */
	out->sched[BENCH_SCHED_GUEST_WINDOW_S] = o->duration_ms / 1000.0;
	out->sched[BENCH_SCHED_RUN_NS_TOTAL] = floor(share * c->pcpus * o->duration_ms * 1e6);
}

/*
 * Guest-timed slices: a co-scheduler cell with them on ends its slices by
 * the guest's own yields (and some declined asks), with them off by the
 * VMM's deferrals and no guest yields; --sched host has neither.
 */
static void synth_guest_slices(const struct bench_cell *c, const char *key, unsigned rep,
			       struct bench_run *out)
{
	double *s = out->sched;
	bool cosched = strcmp(c->policy, BENCH_POLICY_HOST);
	s[BENCH_SCHED_GUEST_SLICE_YIELDS] = s[BENCH_SCHED_GUEST_SLICE_DECLINED] = 0;
	if (!cosched || c->guest_slice_off || c->overcommit <= 1)
		return;
	s[BENCH_SCHED_GUEST_SLICE_YIELDS] = s[BENCH_SCHED_DEFERRALS];
	s[BENCH_SCHED_GUEST_SLICE_DECLINED] =
		floor(s[BENCH_SCHED_DEFERRALS] * (double)(unit_hash(key, rep, 7) % 50) / 100);
	s[BENCH_SCHED_DEFERRALS] = 0; /* the hard deadlines stay: a late guest */
}

/* Slices cut for woken vCPUs: only where a co-scheduler queues (above 1x)
 * and --wake-slice-us is not 0. */
static void synth_wake_cuts(const struct bench_cell *c, const char *key, unsigned rep, struct bench_run *out)
{
	double *s = out->sched;
	bool cuts = strcmp(c->policy, BENCH_POLICY_HOST) && c->overcommit > 1 && c->wake_slice_us;
	s[BENCH_SCHED_WAKE_CUT_SLICES] =
		cuts ? floor(s[BENCH_SCHED_PREEMPTIONS] * (double)(unit_hash(key, rep, 8) % 50) / 100) : 0;
}

/*
 * Where the loop ran, as a report reads it back: --sched host leaves it on
 * the vCPU threads' CPUs (one CPU only at 1 pcpu), none leaves it unpinned,
 * auto takes the first CPU past the slots (this made-up host has one to
 * spare), and a number is that CPU.
 */
static double synth_loop_cpu(const struct bench_cell *c)
{
	if (!strcmp(c->policy, BENCH_POLICY_HOST))
		return c->pcpus == 1 ? 0 : -1;
	switch (c->loop.kind) {
	case BENCH_LOOP_NONE:
		return -1;
	case BENCH_LOOP_CPU:
		return c->loop.cpu;
	default:
		return c->pcpus;
	}
}

void bench_synth_run(const struct bench_opts *o, const struct bench_cell *c, unsigned rep,
		     struct bench_run *out)
{
	char key[256], nkey[256];
	bench_cell_key(c, key, sizeof(key));
	struct bench_cell plain = *c;
	if (slice_shaped(c))
		plain.slice_us = BENCH_SLICE_US_DEFAULT;
	bench_cell_key(&plain, nkey, sizeof(nkey));
	out->wall_s = o->duration_ms / 1000.0 + spread(unit_hash(key, rep, 1), 0.05);
	if ((int)c->id == o->test_fail_cell) {
		out->exit_code = 2;
		snprintf(out->why, sizeof(out->why), "synthetic failure (--test-fail-cell)");
		return;
	}
	out->ok = true;
	if (c->kind == BENCH_VM) {
		/* Counts that grow with overcommit and shorter slices, as real ones do. */
		double per_s = 100.0 * c->overcommit * BENCH_SLICE_US_DEFAULT / c->slice_us;
		out->sched[BENCH_SCHED_WINDOW_S] = o->duration_ms / 1000.0;
		for (unsigned k = 0; k < BENCH_SCHED_WINDOW_S; k++)
			out->sched[k] = floor(spread(unit_hash(key, rep, 200 + k), per_s) *
					      out->sched[BENCH_SCHED_WINDOW_S]);
		/* a hard deadline ends some of the deferrals, never more than all */
		out->sched[BENCH_SCHED_DEFERRALS_HARD] =
			floor(out->sched[BENCH_SCHED_DEFERRALS] * (double)(unit_hash(key, rep, 6) % 100) / 100);
		synth_guest_slices(c, key, rep, out);
		synth_wake_cuts(c, key, rep, out);
		synth_run_meter(o, c, out);
		out->sched[BENCH_SCHED_LOOP_CPU] = synth_loop_cpu(c);
	}
	/* Overcommit costs something, so efficiencies are below 1 as in life. */
	double base = 1e6 / (c->overcommit > 0 ? c->overcommit : 1);
	if (slice_shaped(c))
		base *= 1 - SYNTH_LOSS_A - SYNTH_LOSS_C_US / c->slice_us;
	out->ops_per_s = spread(unit_hash(nkey, rep, 2), base);
	if (!out->vm_ops)
		return;
	double sum = 0;
	for (unsigned k = 0; k < c->vms; k++) {
		out->vm_ops[k] = spread(unit_hash(nkey, rep, 10 + k), base / c->vms);
		sum += out->vm_ops[k];
	}
	out->ops_per_s = sum;
	if (c->mode == BENCH_MODE_PROCESS)
		return;
	uint64_t t0 = 1000000000ull * (rep + 1);
	for (unsigned k = 0; k < c->vms; k++)
		out->vm_start_ns[k] = t0 + unit_hash(key, rep, 100 + k) % 500000;
	out->start_spread_ms = (double)(unit_hash(key, rep, 3) % 500) / 1000.0;
	out->max_late_ms = (double)(unit_hash(key, rep, 4) % 800) / 1000.0;
	if (c->mode == BENCH_MODE_DOMAIN)
		out->min_grants = 100 + unit_hash(key, rep, 5) % 100;
}

void bench_synth_micro(unsigned rep, struct bench_micro *mi)
{
	for (unsigned k = 0; k < BENCH_MICRO_KINDS; k++)
		mi->raw[k][rep] = spread(unit_hash("micro", rep, k), 1000.0 * (k + 1));
}
