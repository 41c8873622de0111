/*
 * The scheduler's own counts per run, so a cell's efficiency can be read
 * beside what the co-scheduler did to get it (issue 13: where slot time
 * goes). Rates are per second of the report's measured window, not of the
 * child's whole life, which includes boot and teardown.
 */
#include <math.h>
#include <stdio.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

const char *const bench_sched_names[BENCH_SCHED_STATS] = {
	"preemptions", "yields_given", "yields_received", "deferrals", "deferrals_hard",
	"spins_queued_kept", "spin_events", "waits", "kicks_sent", "kicks_received",
	"kernel_halts", "unslotted_wakes", "loop_ticks", "loop_ticks_early", "loop_timer_sets",
	"window_s", "run_ns_total", "guest_window_s", "guest_slice_yields", "guest_slice_declined",
	"loop_cpu", "wake_cut_slices", "lock_drains", "own_ticks",
};

const char *const bench_rate_names[BENCH_RATES] = {
	"switches_per_s", "loop_wakeups_per_s", "deferrals_per_s", "guest_slice_yields_per_s",
	"wake_cuts_per_s",
};

/* Where each lives in a `vmm run --json` report. */
static const char *const report_paths[BENCH_SCHED_STATS] = {
	"sched.preemptions", "sched.yields_given", "sched.yields_received", "sched.deferrals",
	"sched.deferrals_hard", "sched.spins_queued_kept", "sched.spin_events", "sched.waits",
	"sched.kicks_sent", "sched.kicks_received", "sched.kernel_halts", "sched.unslotted_wakes",
	"event_loop.ticks", "event_loop.ticks_early", "event_loop.timer_sets", "wall_ns", "run_ns_total", "elapsed_ns",
	"sched.guest_slice_yields", "sched.guest_slice_declined", "event_loop.cpu", "sched.wake_cut_slices",
	"sched.lock_drains", "event_loop.own_ticks",
};

void bench_sched_clear(double *s)
{
	for (int i = 0; i < BENCH_SCHED_STATS; i++)
		s[i] = NAN;
}

void bench_sched_add(const struct bench_json *j, double *s)
{
	for (int i = 0; i < BENCH_SCHED_STATS; i++) {
		double v;
		if (i == BENCH_SCHED_LOOP_CPU) {
			/* K processes: their one CPU when they agree, else -2 (a report says -1 or a CPU) */
			if (!bench_json_num(j, report_paths[i], &v) && v == floor(v) && v >= -1 &&
			    v <= BENCH_LOOP_CPU_MAX)
				s[i] = isnan(s[i]) || s[i] == v ? v : -2;
			continue;
		}
		if (bench_json_num(j, report_paths[i], &v) || !isfinite(v) || v < 0)
			continue;
		if (i == BENCH_SCHED_WINDOW_S || i == BENCH_SCHED_GUEST_WINDOW_S) {
			/* K processes' windows coincide (--start-at): the longest is the window. */
			v /= 1e9;
			s[i] = isnan(s[i]) || v > s[i] ? v : s[i];
		} else {
			s[i] = isnan(s[i]) ? v : s[i] + v;
		}
	}
}

double bench_sched_rate(const double *s, enum bench_rate r)
{
	double n;
	switch (r) {
	case BENCH_RATE_SWITCHES:
		/* A slot changes hands on a preemption or a directed yield. */
		n = s[BENCH_SCHED_PREEMPTIONS] + s[BENCH_SCHED_YIELDS_GIVEN];
		break;
	case BENCH_RATE_LOOP_WAKEUPS:
		n = s[BENCH_SCHED_LOOP_TICKS];
		break;
	case BENCH_RATE_DEFERRALS:
		n = s[BENCH_SCHED_DEFERRALS];
		break;
	case BENCH_RATE_GUEST_SLICE_YIELDS:
		/* The slice ends the guest answered itself; with --guest-slice off
		 * the deferrals stand for those (the VMM's requests). */
		n = s[BENCH_SCHED_GUEST_SLICE_YIELDS];
		break;
	case BENCH_RATE_WAKE_CUTS:
		n = s[BENCH_SCHED_WAKE_CUT_SLICES];
		break;
	default:
		return NAN;
	}
	return bench_ratio(n, s[BENCH_SCHED_WINDOW_S]);
}
