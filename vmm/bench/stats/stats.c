/*
 * Medians, not means: on a host where identical runs vary up to 2.5x
 * (HOST.md), one slow run must not move the figure. Spread is reported
 * beside it so a reader sees how much to trust a cell.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/stats/stats.h"

/* Worst over the runs that have it; NaN when none does. */
static double worst(const struct bench_cell *c, bool spread)
{
	double w = NAN;
	for (unsigned i = 0; i < c->nruns; i++) {
		double x = spread ? c->runs[i].start_spread_ms : c->runs[i].max_late_ms;
		if (isfinite(x) && !(x <= w))
			w = x;
	}
	return w;
}

/*
 * K VMs: each VM's median over the reps of its own ops/s (not a split of
 * the summed median), so one VM starved in every rep shows as starved.
 */
static void per_vm(struct bench_cell *c)
{
	c->jain = c->max_over_min = NAN;
	c->start_spread_ms = worst(c, true);
	c->max_late_ms = worst(c, false);
	free(c->vm_median);
	c->vm_median = NULL;
	if (c->kind != BENCH_VM || c->vms < 2 || !(c->vm_median = malloc(c->vms * sizeof(double))))
		return;
	double x[BENCH_MAX_REPS];
	for (unsigned k = 0; k < c->vms; k++) {
		unsigned n = 0;
		for (unsigned i = 0; i < c->nruns; i++)
			if (c->runs[i].ok && c->runs[i].vm_ops && isfinite(c->runs[i].vm_ops[k]))
				x[n++] = c->runs[i].vm_ops[k];
		c->vm_median[k] = bench_median(x, n);
	}
	c->jain = bench_jain(c->vm_median, c->vms);
	c->max_over_min = bench_ratio(bench_max(c->vm_median, c->vms), bench_min(c->vm_median, c->vms));
}

/* The CPU every ok run's loop ran on, -2 when they differ; NaN none knows. */
static double common_loop_cpu(const struct bench_cell *c)
{
	double v = NAN;
	for (unsigned i = 0; i < c->nruns; i++) {
		double x = c->runs[i].sched[BENCH_SCHED_LOOP_CPU];
		if (c->runs[i].ok && isfinite(x))
			v = isnan(v) || v == x ? x : -2;
	}
	return v;
}

/* Each statistic's and rate's median over the ok runs that have it; the
 * loop's CPU is a name, not an amount: the runs' common one. */
static void sched_medians(struct bench_cell *c)
{
	double x[BENCH_MAX_REPS], y[BENCH_MAX_REPS];
	for (int k = 0; k < BENCH_SCHED_STATS; k++) {
		unsigned n = 0;
		for (unsigned i = 0; i < c->nruns; i++)
			if (c->runs[i].ok && isfinite(c->runs[i].sched[k]))
				x[n++] = c->runs[i].sched[k];
		c->sched_median[k] = k == BENCH_SCHED_LOOP_CPU ? common_loop_cpu(c) : bench_median(x, n);
	}
	for (int k = 0; k < BENCH_RATES; k++) {
		unsigned n = 0;
		for (unsigned i = 0; i < c->nruns; i++) {
			double r = bench_sched_rate(c->runs[i].sched, (enum bench_rate)k);
			if (c->runs[i].ok && isfinite(r))
				y[n++] = r;
		}
		c->rate[k] = bench_median(y, n);
	}
}

void bench_stats_cell(struct bench_cell *c)
{
	double ok[BENCH_MAX_REPS];
	c->nok = 0;
	c->failed = false;
	c->fail_exit = 0;
	c->fail_why = NULL;
	for (unsigned i = 0; i < c->nruns; i++) {
		const struct bench_run *r = &c->runs[i];
		if (r->ok) {
			ok[c->nok++] = r->ops_per_s;
		} else if (!c->failed) {
			/* One failed repetition fails the cell: a lock that breaks
			 * one time in three is broken, not noisy. */
			c->failed = true;
			c->fail_exit = r->exit_code;
			c->fail_why = r->why;
		}
	}
	if (c->missing) {
		/* Kept: the reps that are there; but a partial cell is no figure. */
		c->failed = true;
		c->fail_exit = -1;
		c->fail_why = "missing from the merge";
	} else if (c->nruns == 0) {
		c->failed = true;
		c->fail_exit = -1;
		c->fail_why = "never ran";
	}
	c->median = bench_median(ok, c->nok);
	c->min = bench_min(ok, c->nok);
	c->max = bench_max(ok, c->nok);
	c->spread_pct = bench_spread_pct(c->min, c->max, c->median);
	bench_median_ci(ok, c->nok, &c->median_lo, &c->median_hi, &c->median_level);
	per_vm(c);
	sched_medians(c);
}

/* The ok runs of a cell, into v (BENCH_MAX_REPS); their count. */
static unsigned ok_runs(const struct bench_cell *c, double *v)
{
	unsigned n = 0;
	for (unsigned i = 0; i < c->nruns; i++)
		if (c->runs[i].ok)
			v[n++] = c->runs[i].ops_per_s;
	return n;
}

/* median of c / median of cell i, when both ran */
static double vs(const struct bench_matrix *m, const struct bench_cell *c, int i)
{
	if (i < 0 || c->failed || m->cells[i].failed)
		return NAN;
	return bench_ratio(c->median, m->cells[i].median);
}

/*
 * The efficiency against the pooled 1x (matrix/matrix.c, link_pools): a pool
 * cell that failed is left out (and out of ref_ids), the others count with
 * every ok run; the interval is a bootstrap of the ratio of the two medians.
 */
static void pooled_eff(const struct bench_matrix *m, struct bench_cell *c)
{
	double ok[BENCH_MAX_REPS];
	unsigned nok = 0, np = 0;
	c->nused = 0;
	for (unsigned i = 0; i < c->npool; i++)
		if (!m->cells[c->pool[i]].failed)
			c->used[c->nused++] = c->pool[i];
	double *pool = bench_pool_runs(m, c, &np);
	c->pooled_1x = pool ? bench_median(pool, np) : NAN;
	c->eff = c->eff_lo = c->eff_hi = NAN;
	if (c->failed || !pool) {
		free(pool);
		return;
	}
	c->eff = bench_ratio(c->median, c->pooled_1x);
	nok = ok_runs(c, ok);
	bench_ratio_ci(ok, nok, pool, np, c->id, &c->eff_lo, &c->eff_hi);
	free(pool);
}

/* A Linux workload under vmm against QEMU+KVM at the same vCPUs and CPUs,
 * with a bootstrap interval of the ratio of medians. */
static void vs_qemu(const struct bench_matrix *m, struct bench_cell *c)
{
	c->vs_qemu = vs(m, c, c->qemu_ref);
	c->vs_qemu_lo = c->vs_qemu_hi = NAN;
	if (!isfinite(c->vs_qemu))
		return;
	double a[BENCH_MAX_REPS], b[BENCH_MAX_REPS];
	unsigned na = ok_runs(c, a), nb = ok_runs(&m->cells[c->qemu_ref], b);
	bench_ratio_ci(a, na, b, nb, c->id, &c->vs_qemu_lo, &c->vs_qemu_hi);
}

bool bench_stats_matrix(struct bench_matrix *m)
{
	bool any_failed = false;
	for (unsigned i = 0; i < m->n; i++) {
		bench_stats_cell(&m->cells[i]);
		any_failed |= m->cells[i].failed;
	}
	for (unsigned i = 0; i < m->n; i++) {
		struct bench_cell *c = &m->cells[i];
		const struct bench_cell *nat = c->native_ref >= 0 ? &m->cells[c->native_ref] : NULL;
		pooled_eff(m, c);
		c->of_native = nat && !nat->failed && !c->failed ? bench_ratio(c->median, nat->median) : NAN;
		c->vs_one_vm = vs(m, c, c->one_vm_ref);
		c->vs_process = vs(m, c, c->process_ref);
		c->vs_host_procs = vs(m, c, c->host_procs_ref);
		vs_qemu(m, c);
	}
	return any_failed;
}
