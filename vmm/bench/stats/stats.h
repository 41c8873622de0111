/*
 * The stats layer: each cell's figures from its runs (stats.c: medians,
 * spreads, efficiency against the pooled 1x), their intervals (ci.c), the
 * slice fit over a sweep (fit.c) and where a lost point goes (loss.c).
 */
#ifndef VMM_BENCH_STATS_H
#define VMM_BENCH_STATS_H

#include <stdbool.h>

#include "vmm/bench/matrix/types.h"

void bench_stats_cell(struct bench_cell *c);

/*
 * Slice length from data (stats/fit.c): loss(slice) = a + C/slice by least
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

/* Where a lost point goes (stats/loss.c): a cell above 1x against its pooled 1x. */
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

/* Confidence intervals (stats/ci.c). */
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

#endif
