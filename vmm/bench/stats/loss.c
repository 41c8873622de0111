/*
 * Where a lost point goes (issue 13). Throughput is slot time the guest
 * ran times what it did per running second, so with the same slots
 *   eff = (run share / 1x run share) x (ops per running s / 1x's)
 * and the points lost, 1 - eff, split exactly into slot time lost
 * (1 - share ratio: switches, the event loop, idle slots) and slower
 * operations (share ratio - eff: convoys, spinning, cache). The guest's
 * run meter (firmware/run_meter.h) gives the run share; the scheduler's
 * counts (exec/sched.c) say which mechanism took the slot time.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/stats/stats.h"

/* Of the slots' time in the guest's window, the share its vCPUs ran. */
static double run_share(const struct bench_cell *c, const struct bench_run *r)
{
	return bench_ratio(r->sched[BENCH_SCHED_RUN_NS_TOTAL] / 1e9,
			   c->pcpus * r->sched[BENCH_SCHED_GUEST_WINDOW_S]);
}

/* Operations per second of guest running time, all vCPUs together. */
static double ops_per_run_s(const struct bench_run *r)
{
	return bench_ratio(r->ops_per_s * r->sched[BENCH_SCHED_GUEST_WINDOW_S],
			   r->sched[BENCH_SCHED_RUN_NS_TOTAL] / 1e9);
}

/* Median over c's ok runs (every used pool cell's, if pool) of share or ops/run-s. */
static double median_of(const struct bench_matrix *m, const struct bench_cell *c, bool pool,
			bool share)
{
	unsigned ncells = pool ? c->nused : 1, n = 0, cap = 0;
	for (unsigned k = 0; k < ncells; k++)
		cap += pool ? m->cells[c->used[k]].nruns : c->nruns;
	double *v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v)
		return NAN;
	for (unsigned k = 0; k < ncells; k++) {
		const struct bench_cell *p = pool ? &m->cells[c->used[k]] : c;
		for (unsigned i = 0; i < p->nruns; i++) {
			const struct bench_run *r = &p->runs[i];
			double x = share ? run_share(p, r) : ops_per_run_s(r);
			if (r->ok && isfinite(x))
				v[n++] = x;
		}
	}
	double med = bench_median(v, n);
	free(v);
	return med;
}

bool bench_loss_applies(const struct bench_cell *c)
{
	/* not a Linux workload: its ops/s is timed by the guest over its work
	 * alone, the run meter over the whole boot */
	return c->kind == BENCH_VM && c->overcommit > 1 && !c->failed && !bench_linux_workload(c->workload);
}

int bench_loss_cell(const struct bench_matrix *m, const struct bench_cell *c, struct bench_loss *l)
{
	if (!bench_loss_applies(c))
		return -EDOM;
	const double *s = c->sched_median;
	l->id = (int)c->id;
	l->eff = c->eff;
	l->share = median_of(m, c, false, true);
	l->share_1x = median_of(m, c, true, true);
	l->share_ratio = bench_ratio(l->share, l->share_1x);
	l->ops_ratio = bench_ratio(median_of(m, c, false, false), median_of(m, c, true, false));
	l->pts_slot = 1 - l->share_ratio;
	l->pts_ops = l->share_ratio - l->eff;
	l->switches_per_s = c->rate[BENCH_RATE_SWITCHES];
	/* The slot time lost beyond 1x's, spread over the switches that caused
	 * most of it: an upper bound on what one switch costs. */
	double lost_s_per_s = (l->share_1x - l->share) * c->pcpus;
	l->lost_us_per_switch = l->switches_per_s > 0 ? lost_s_per_s / l->switches_per_s * 1e6 : NAN;
	l->loop_wakeups_per_s = c->rate[BENCH_RATE_LOOP_WAKEUPS];
	l->deferrals_per_s = c->rate[BENCH_RATE_DEFERRALS];
	l->guest_slice_yields_per_s = c->rate[BENCH_RATE_GUEST_SLICE_YIELDS];
	l->wake_cuts_per_s = c->rate[BENCH_RATE_WAKE_CUTS];
	/* Of the slice ends at a safe point, those the hard deadline ended. A
	 * VMM-timed slice end is a deferral, hard or not; a guest-timed one is
	 * the guest's own yield or, when it is late, a hard deadline alone.
	 * With guest-timed slices the VMM still defers what the guest does not
	 * time (a domain's revokes, cut slices), so those count too: a domain
	 * member's slices end mostly at revokes, and without them 5 hard ends
	 * beside 7 yields read as 41 %. A hard deferral is then counted twice
	 * in the sum (the two are not told apart), which errs low. */
	double gsy = s[BENCH_SCHED_GUEST_SLICE_YIELDS], hard = s[BENCH_SCHED_DEFERRALS_HARD];
	double defer = s[BENCH_SCHED_DEFERRALS];
	l->hard_share = gsy > 0 ? bench_ratio(hard, gsy + (defer > 0 ? defer : 0) + hard) : bench_ratio(hard, defer);
	l->spins_queued_kept = s[BENCH_SCHED_SPINS_QUEUED_KEPT];
	return 0;
}
