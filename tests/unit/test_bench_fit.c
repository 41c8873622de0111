/* The slice fit's arithmetic (loss = a + C/slice by least squares), its
 * grouping of a matrix's cells, and the loss table's decomposition. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/stats/stats.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_exact_recovery(void)
{
	const double a[] = { 0.03, 0, -0.01, 0.5 }, c[] = { 45, 120, 7.5, 0.25 };
	const double s[] = { 3000, 6000, 12000, 24000 };
	for (unsigned k = 0; k < 4; k++) {
		double y[4];
		for (unsigned i = 0; i < 4; i++)
			y[i] = a[k] + c[k] / s[i];
		struct bench_fit f;
		CHECK_EQ(bench_fit_inverse(s, y, 4, &f), 0);
		CHECK(NEAR(f.a, a[k]) && NEAR(f.c_us, c[k]));
		CHECK(NEAR(f.r2, 1));
		CHECK_EQ(f.n, 4u);
		/* three points suffice, in any order */
		const double s3[] = { 12000, 3000, 6000 }, y3[] = { y[2], y[0], y[1] };
		CHECK_EQ(bench_fit_inverse(s3, y3, 3, &f), 0);
		CHECK(NEAR(f.a, a[k]) && NEAR(f.c_us, c[k]));
	}
}

static void test_noisy_and_repeated(void)
{
	/* Repeated slices are fine as long as three are distinct. */
	const double s[] = { 3000, 3000, 6000, 12000, 24000 };
	const double y[] = { 0.045, 0.047, 0.04, 0.031, 0.033 };
	struct bench_fit f;
	CHECK_EQ(bench_fit_inverse(s, y, 5, &f), 0);
	CHECK(f.r2 > 0 && f.r2 < 1);
	CHECK(f.c_us > 0);
	/* the least-squares normal equations hold: residuals sum to 0 and are orthogonal to 1/s */
	double r0 = 0, r1 = 0;
	for (unsigned i = 0; i < 5; i++) {
		double e = y[i] - f.a - f.c_us / s[i];
		r0 += e;
		r1 += e / s[i];
	}
	CHECK(fabs(r0) < 1e-12 && fabs(r1) < 1e-15);
}

static void test_degenerate(void)
{
	struct bench_fit f;
	const double two[] = { 3000, 3000, 6000, 6000 }, y[] = { 0.1, 0.1, 0.05, 0.05 };
	CHECK_EQ(bench_fit_inverse(two, y, 4, &f), -EDOM);
	CHECK(isnan(f.a) && isnan(f.c_us) && isnan(f.r2));
	const double same[] = { 6000, 6000, 6000 };
	CHECK_EQ(bench_fit_inverse(same, y, 3, &f), -EDOM);
	CHECK_EQ(bench_fit_inverse(same, y, 0, &f), -EDOM);
	const double s[] = { 3000, 6000, 12000 }, nan_y[] = { 0.1, NAN, 0.02 };
	CHECK_EQ(bench_fit_inverse(s, nan_y, 3, &f), -EDOM);
	const double inf_y[] = { 0.1, INFINITY, 0.02 };
	CHECK_EQ(bench_fit_inverse(s, inf_y, 3, &f), -EDOM);
	const double zero_s[] = { 0, 6000, 12000 }, neg_s[] = { -3000, 6000, 12000 },
		     nan_s[] = { NAN, 6000, 12000 };
	CHECK_EQ(bench_fit_inverse(zero_s, y, 3, &f), -EDOM);
	CHECK_EQ(bench_fit_inverse(neg_s, y, 3, &f), -EDOM);
	CHECK_EQ(bench_fit_inverse(nan_s, y, 3, &f), -EDOM);
	/* Every loss equal: an exact, flat line that explains nothing. */
	const double flat[] = { 0.2, 0.2, 0.2 };
	CHECK_EQ(bench_fit_inverse(s, flat, 3, &f), 0);
	CHECK(NEAR(f.a, 0.2) && NEAR(f.c_us, 0) && isnan(f.r2));
	CHECK(bench_fit_slice_for(&f, 0.01) == 0);
}

static void test_slice_for(void)
{
	struct bench_fit f = { 4, 0.02, 45, 1 };
	CHECK(NEAR(bench_fit_slice_for(&f, 0.01), 4500));
	CHECK(NEAR(bench_fit_slice_for(&f, 0.05), 900));
	CHECK(isnan(bench_fit_slice_for(&f, 0)));
	f.c_us = -3; /* longer slices cost more: no minimum from switching */
	CHECK(bench_fit_slice_for(&f, 0.01) == 0);
	f.c_us = NAN;
	CHECK(isnan(bench_fit_slice_for(&f, 0.01)));
}

static struct bench_cell cell(unsigned id, const char *policy, unsigned vcpus, uint32_t slice, double eff)
{
	struct bench_cell c;
	memset(&c, 0, sizeof(c));
	c.id = id;
	c.kind = BENCH_VM;
	c.workload = "lockbench";
	c.lock = "ticket";
	c.policy = policy;
	c.spin_threshold = 4096;
	c.slice_us = slice;
	c.defer_us = BENCH_DEFER_US_DEFAULT;
	c.wake_slice_us = BENCH_WAKE_SLICE_US_DEFAULT;
	c.vms = 1;
	c.vcpus = vcpus;
	c.pcpus = 2;
	c.overcommit = vcpus / 2.0;
	c.eff = eff;
	return c;
}

static double loss_at(double a, double c, double s)
{
	return 1 - (a + c / s);
}

static void test_groups(void)
{
	struct bench_cell cells[14];
	unsigned n = 0;
	const double s[] = { 3000, 6000, 12000, 24000 };
	cells[n] = cell(n, "host", 4, 6000, 0.2), n++;           /* the host: no slice */
	for (unsigned k = 0; k < 4; k++) {
		cells[n] = cell(n, "pv", 2, (uint32_t)s[k], 1), n++;  /* 1x: not fitted */
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.05, 90, s[k])), n++;
	}
	/* none: 4x at three slices, one of which failed -> two left, no fit */
	for (unsigned k = 0; k < 3; k++)
		cells[n] = cell(n, "none", 8, (uint32_t)s[k], loss_at(0.1, 30, s[k])), n++;
	cells[n - 1].failed = true;
	/* pv at 4x with a different deferral bound: its own group of two, no fit */
	cells[n] = cell(n, "pv", 8, 3000, 0.5), cells[n].defer_us = 50, n++;
	cells[n] = cell(n, "pv", 8, 6000, 0.6), cells[n].defer_us = 50, n++;
	struct bench_matrix m = { n, cells };
	struct bench_slice_fit *f;
	CHECK_EQ(bench_slice_fits(&m, &f), 1);
	CHECK_EQ(f[0].first, 2);
	CHECK_EQ(f[0].n, 4u);
	CHECK(f[0].ids[0] == 2 && f[0].ids[1] == 4 && f[0].ids[2] == 6 && f[0].ids[3] == 8);
	CHECK(NEAR(f[0].fit.a, 0.05) && NEAR(f[0].fit.c_us, 90) && NEAR(f[0].fit.r2, 1));
	CHECK(NEAR(f[0].slice_1pct_us, 9000));
	CHECK(f[0].swept_1pct_us == 12000);
	/* 2 vCPUs per slot: a queued one waits for one other's slice */
	CHECK(NEAR(f[0].wait_bound_us, 9000));
	free(f);
	/* a third slice of none's that ran makes its group fit */
	cells[n - 3].failed = false;
	CHECK_EQ(bench_slice_fits(&m, &f), 2);
	CHECK_EQ(f[1].first, 9);
	CHECK(NEAR(f[1].fit.a, 0.1) && NEAR(f[1].fit.c_us, 30));
	CHECK(NEAR(f[1].slice_1pct_us, 3000) && f[1].swept_1pct_us == 3000);
	CHECK(NEAR(f[1].wait_bound_us, 3 * 3000)); /* 4 per slot */
	free(f);
	struct bench_matrix empty = { 0, cells };
	CHECK_EQ(bench_slice_fits(&empty, &f), 0);
	free(f);
}

/* Both safe-point paths in one sweep, interleaved as the matrix makes them:
 * each is its own group, so each fit is exact; mixed, neither would be. */
static void test_groups_guest_slice(void)
{
	struct bench_cell cells[8];
	unsigned n = 0;
	const double s[] = { 3000, 6000, 12000, 24000 };
	for (unsigned k = 0; k < 4; k++) {
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.05, 90, s[k])), n++;
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.02, 40, s[k]));
		cells[n].guest_slice_off = true, n++;
	}
	struct bench_matrix m = { n, cells };
	struct bench_slice_fit *f;
	CHECK_EQ(bench_slice_fits(&m, &f), 2);
	CHECK(f[0].first == 0 && f[0].n == 4 && f[0].ids[3] == 6);
	CHECK(NEAR(f[0].fit.a, 0.05) && NEAR(f[0].fit.c_us, 90) && NEAR(f[0].fit.r2, 1));
	CHECK(f[1].first == 1 && f[1].n == 4 && f[1].ids[3] == 7);
	CHECK(NEAR(f[1].fit.a, 0.02) && NEAR(f[1].fit.c_us, 40) && NEAR(f[1].fit.r2, 1));
	free(f);
}

/* Two loop placements in one sweep (auto and none, as --loop-cpu auto,none
 * interleaves them): each is its own group, and a CPU number is a third. */
static void test_groups_loop_cpu(void)
{
	struct bench_cell cells[12];
	unsigned n = 0;
	const double s[] = { 3000, 6000, 12000, 24000 };
	for (unsigned k = 0; k < 4; k++) {
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.05, 90, s[k])), n++;
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.03, 120, s[k]));
		cells[n].loop = (struct bench_loop){ BENCH_LOOP_NONE, 0 }, n++;
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.01, 30, s[k]));
		cells[n].loop = (struct bench_loop){ BENCH_LOOP_CPU, 3 }, n++;
	}
	struct bench_matrix m = { n, cells };
	struct bench_slice_fit *f;
	CHECK_EQ(bench_slice_fits(&m, &f), 3);
	CHECK(f[0].first == 0 && f[0].n == 4 && f[0].ids[3] == 9);
	CHECK(NEAR(f[0].fit.a, 0.05) && NEAR(f[0].fit.c_us, 90) && NEAR(f[0].fit.r2, 1));
	CHECK(f[1].first == 1 && f[1].n == 4 && f[1].ids[3] == 10);
	CHECK(NEAR(f[1].fit.a, 0.03) && NEAR(f[1].fit.c_us, 120) && NEAR(f[1].fit.r2, 1));
	CHECK(f[2].first == 2 && f[2].n == 4 && f[2].ids[3] == 11);
	CHECK(NEAR(f[2].fit.a, 0.01) && NEAR(f[2].fit.c_us, 30) && NEAR(f[2].fit.r2, 1));
	free(f);
	/* CPU 3 and CPU 4 are two placements too: two sweeps of 2 slices, no fit */
	for (unsigned k = 0; k < 2; k++)
		cells[3 * k + 2].loop.cpu = 4;
	CHECK_EQ(bench_slice_fits(&m, &f), 2);
	CHECK(f[0].first == 0 && f[1].first == 1);
	free(f);
}

/* Each slice with and without the wake cut (--wake-slice-us 0,1000, as the
 * slices preset interleaves them): two groups, each fitted on its own. */
static void test_groups_wake_slice(void)
{
	struct bench_cell cells[8];
	unsigned n = 0;
	const double s[] = { 3000, 6000, 12000, 24000 };
	for (unsigned k = 0; k < 4; k++) {
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.04, 70, s[k]));
		cells[n].wake_slice_us = 0, n++;
		cells[n] = cell(n, "pv", 4, (uint32_t)s[k], loss_at(0.02, 110, s[k])), n++;
	}
	struct bench_matrix m = { n, cells };
	struct bench_slice_fit *f;
	CHECK_EQ(bench_slice_fits(&m, &f), 2);
	CHECK(f[0].first == 0 && f[0].n == 4 && f[0].ids[3] == 6);
	CHECK(NEAR(f[0].fit.a, 0.04) && NEAR(f[0].fit.c_us, 70) && NEAR(f[0].fit.r2, 1));
	CHECK(f[1].first == 1 && f[1].n == 4 && f[1].ids[3] == 7);
	CHECK(NEAR(f[1].fit.a, 0.02) && NEAR(f[1].fit.c_us, 110) && NEAR(f[1].fit.r2, 1));
	free(f);
}

/* The names a placement has in keys, tables and files, and what parses. */
static void test_loop_names(void)
{
	char b[16];
	struct bench_loop l;
	CHECK_EQ(bench_loop_parse("auto", &l), 0);
	CHECK(l.kind == BENCH_LOOP_AUTO && !strcmp(bench_loop_name(&l, b, sizeof(b)), "auto"));
	CHECK_EQ(bench_loop_parse("none", &l), 0);
	CHECK(l.kind == BENCH_LOOP_NONE && !strcmp(bench_loop_name(&l, b, sizeof(b)), "none"));
	CHECK_EQ(bench_loop_parse("0", &l), 0);
	CHECK(l.kind == BENCH_LOOP_CPU && l.cpu == 0 && !strcmp(bench_loop_name(&l, b, sizeof(b)), "0"));
	CHECK_EQ(bench_loop_parse("1023", &l), 0);
	CHECK(l.cpu == 1023);
	const char *bad[] = { "", "1024", "-1", "+1", "0x1", " 1", "1 ", "auto,none", "Auto", "99999" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(bench_loop_parse(bad[i], &l), -EINVAL);
	struct bench_loop a = { BENCH_LOOP_AUTO, 5 }, z = { BENCH_LOOP_AUTO, 0 };
	struct bench_loop c3 = { BENCH_LOOP_CPU, 3 }, c4 = { BENCH_LOOP_CPU, 4 };
	CHECK(bench_loop_same(&a, &z) && !bench_loop_same(&c3, &c4) && !bench_loop_same(&z, &c3));
	/* a zeroed cell (a reference, a native cell) is vmm run's default */
	struct bench_cell zero = { 0 };
	CHECK(zero.loop.kind == BENCH_LOOP_AUTO);
}

/* A run with ops/s, the guest's running ns and window. */
static void run(struct bench_cell *c, double ops, double run_s, double window_s)
{
	struct bench_run *r = &c->runs[c->nruns++];
	memset(r, 0, sizeof(*r));
	bench_sched_clear(r->sched);
	r->ok = true;
	r->ops_per_s = ops;
	r->sched[BENCH_SCHED_RUN_NS_TOTAL] = run_s * 1e9;
	r->sched[BENCH_SCHED_GUEST_WINDOW_S] = window_s;
}

static void test_loss(void)
{
	struct bench_cell cells[3];
	cells[0] = cell(0, "pv", 2, 6000, 1);
	cells[1] = cell(1, "pv", 4, 6000, NAN);
	cells[2] = cell(2, "pv", 4, 6000, NAN);
	/* 1x: 2 slots, 1 s window, 1.96 s run (share 0.98), 1000 ops/s */
	run(&cells[0], 1000, 1.96, 1);
	run(&cells[0], 1000, 1.96, 1);
	/* 2x: share 0.882 (0.9 of 1x's), 600 ops/s: eff 0.6, ops per running s 2/3 of 1x's */
	run(&cells[1], 600, 1.764, 1);
	run(&cells[1], 600, 1.764, 1);
	cells[1].eff = 0.6;
	int used[] = { 0 };
	cells[1].used = cells[2].used = used;
	cells[1].nused = cells[2].nused = 1;
	bench_sched_clear(cells[1].sched_median);
	cells[1].sched_median[BENCH_SCHED_DEFERRALS] = 200;
	cells[1].sched_median[BENCH_SCHED_DEFERRALS_HARD] = 50;
	cells[1].sched_median[BENCH_SCHED_SPINS_QUEUED_KEPT] = 7;
	cells[1].rate[BENCH_RATE_SWITCHES] = 1000;
	cells[1].rate[BENCH_RATE_LOOP_WAKEUPS] = 300;
	cells[1].rate[BENCH_RATE_DEFERRALS] = 200;
	cells[2].failed = true;
	struct bench_matrix m = { 3, cells };
	struct bench_loss l;
	CHECK_EQ(bench_loss_cell(&m, &cells[0], &l), -EDOM); /* 1x */
	CHECK_EQ(bench_loss_cell(&m, &cells[2], &l), -EDOM); /* failed */
	CHECK_EQ(bench_loss_cell(&m, &cells[1], &l), 0);
	CHECK_EQ(l.id, 1);
	CHECK(NEAR(l.share, 0.882) && NEAR(l.share_1x, 0.98) && NEAR(l.share_ratio, 0.9));
	CHECK(NEAR(l.ops_ratio, 2.0 / 3));
	CHECK(NEAR(l.share_ratio * l.ops_ratio, l.eff));
	CHECK(NEAR(l.pts_slot, 0.1) && NEAR(l.pts_ops, 0.3));
	CHECK(NEAR(l.pts_slot + l.pts_ops, 1 - l.eff));
	/* 0.098 x 2 slot-s lost per s over 1000 switches/s: 196 us each */
	CHECK(NEAR(l.lost_us_per_switch, 196));
	CHECK(NEAR(l.hard_share, 0.25) && NEAR(l.spins_queued_kept, 7));
	CHECK(NEAR(l.loop_wakeups_per_s, 300) && NEAR(l.deferrals_per_s, 200));
	/* guest-timed slices: a slice end is the guest's yield or, when it was
	 * late, the hard deadline alone (no deferral) */
	cells[1].sched_median[BENCH_SCHED_GUEST_SLICE_YIELDS] = 150;
	cells[1].sched_median[BENCH_SCHED_DEFERRALS] = 0;
	cells[1].rate[BENCH_RATE_GUEST_SLICE_YIELDS] = 150;
	CHECK_EQ(bench_loss_cell(&m, &cells[1], &l), 0);
	CHECK(NEAR(l.hard_share, 0.25) && NEAR(l.guest_slice_yields_per_s, 150));
	/* ... and the slice ends the VMM still deferred (a domain's revokes) */
	cells[1].sched_median[BENCH_SCHED_DEFERRALS] = 100;
	CHECK_EQ(bench_loss_cell(&m, &cells[1], &l), 0);
	CHECK(NEAR(l.hard_share, 50.0 / 300));
	cells[1].sched_median[BENCH_SCHED_GUEST_SLICE_YIELDS] = NAN;
	cells[1].sched_median[BENCH_SCHED_DEFERRALS] = 200;
	/* no run meter (an older guest): the shares are unknown, never made up */
	cells[1].runs[0].sched[BENCH_SCHED_RUN_NS_TOTAL] = NAN;
	cells[1].runs[1].sched[BENCH_SCHED_RUN_NS_TOTAL] = NAN;
	cells[1].rate[BENCH_RATE_SWITCHES] = 0;
	CHECK_EQ(bench_loss_cell(&m, &cells[1], &l), 0);
	CHECK(isnan(l.share) && isnan(l.share_ratio) && isnan(l.pts_slot) && isnan(l.ops_ratio));
	CHECK(isnan(l.lost_us_per_switch));
}

int main(void)
{
	RUN(test_exact_recovery);
	RUN(test_noisy_and_repeated);
	RUN(test_degenerate);
	RUN(test_slice_for);
	RUN(test_groups);
	RUN(test_groups_guest_slice);
	RUN(test_groups_loop_cpu);
	RUN(test_groups_wake_slice);
	RUN(test_loop_names);
	RUN(test_loss);
	return check_summary();
}
