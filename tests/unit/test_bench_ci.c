/*
 * The bench's intervals and its pooled 1x (vmm/bench/stats/ci.c,
 * stats/stats.c, matrix/matrix.c): order-statistic CIs of known small
 * samples, the bootstrap's determinism and bounds, the pool's members, and
 * the slice/defer dimensions' keys and command lines.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "tests/unit/bench_matrix_test.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/stats/stats.h"

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

static void test_median_ci_known_samples(void)
{
	double lo, hi, level;
	/* n = 5: no k reaches 95%; [min, max] covers 1 - 2/32 */
	double five[] = { 4, 1, 5, 3, 2 };
	CHECK_EQ(bench_median_ci(five, 5, &lo, &hi, &level), 0);
	CHECK(lo == 1 && hi == 5 && level == 0.9375);
	/* n = 6: [x(1), x(6)] covers 1 - 2/64 */
	double six[] = { 6, 5, 4, 3, 2, 1 };
	CHECK_EQ(bench_median_ci(six, 6, &lo, &hi, &level), 0);
	CHECK(lo == 1 && hi == 6 && level == 0.96875);
	/* n = 9: P(B <= 1) = 10/512, so [x(2), x(8)] at 1 - 20/512 */
	double nine[] = { 90, 10, 80, 20, 70, 30, 60, 40, 50 };
	CHECK_EQ(bench_median_ci(nine, 9, &lo, &hi, &level), 0);
	CHECK(lo == 20 && hi == 80 && near(level, 1 - 20.0 / 512));
	/* n = 20: the textbook [x(6), x(15)], 95.86% */
	double twenty[20];
	for (unsigned i = 0; i < 20; i++)
		twenty[i] = (double)((i * 7) % 20 + 1); /* 1..20 shuffled */
	CHECK_EQ(bench_median_ci(twenty, 20, &lo, &hi, &level), 0);
	CHECK(lo == 6 && hi == 15 && level > 0.958 && level < 0.959);
	/* below 5 runs: no interval */
	CHECK_EQ(bench_median_ci(five, 4, &lo, &hi, &level), -EDOM);
	CHECK(isnan(lo) && isnan(hi) && isnan(level));
	/* the input is left as it was */
	CHECK(five[0] == 4 && five[4] == 2);
}

static void test_ratio_ci(void)
{
	double num[] = { 50, 52, 48, 51, 49 }, den[] = { 100, 98, 102, 101, 99, 100, 97 };
	double lo, hi, lo2, hi2;
	CHECK_EQ(bench_ratio_ci(num, 5, den, 7, 3, &lo, &hi), 0);
	/* inside what any resample could give, and around the ratio of medians */
	CHECK(lo >= 48.0 / 102 && hi <= 52.0 / 97 && lo < hi);
	CHECK(lo <= 50.0 / 100 && 50.0 / 100 <= hi);
	/* a fixed seed: the same inputs give the same interval */
	CHECK_EQ(bench_ratio_ci(num, 5, den, 7, 3, &lo2, &hi2), 0);
	CHECK(lo == lo2 && hi == hi2);
	/* no spread, no width */
	double same[] = { 2, 2, 2, 2, 2 };
	CHECK_EQ(bench_ratio_ci(same, 5, same, 5, 0, &lo, &hi), 0);
	CHECK(lo == 1 && hi == 1);
	CHECK_EQ(bench_ratio_ci(num, 4, den, 7, 3, &lo, &hi), -EDOM);
	CHECK(isnan(lo) && isnan(hi));
	CHECK_EQ(bench_ratio_ci(num, 5, den, 4, 3, &lo, &hi), -EDOM);
	/* a zero denominator is no ratio: no interval rather than a made-up one */
	double zero[] = { 0, 0, 0, 0, 0 };
	CHECK_EQ(bench_ratio_ci(num, 5, zero, 5, 3, &lo, &hi), -EDOM);
}

/* Every cell gets reps runs: ops = base + rep, base by cell. */
static void fill(struct bench_matrix *m, unsigned reps, const double *base)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct bench_cell *c = &m->cells[i];
		c->nruns = reps;
		for (unsigned r = 0; r < reps; r++) {
			memset(&c->runs[r], 0, sizeof(c->runs[r]));
			c->runs[r].rep = r;
			c->runs[r].ok = true;
			c->runs[r].ops_per_s = base[i] + r;
			bench_sched_clear(c->runs[r].sched);
		}
	}
}

static void test_pooled_denominator(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "pv,none", "--overcommit", "1,2",
			 "--pcpus", "1", "--slice-us", "3000,6000", "--no-native", NULL };
	matrix(&o, &m, 12, argv);
	int host1 = find(&m, "vm:lockbench:tas:host:process:1x1:p1:t4096");
	int pv1 = find(&m, "vm:lockbench:tas:pv:process:1x1:p1:t4096");
	int pv1s = find(&m, "vm:lockbench:tas:pv:process:1x1:p1:t4096:s3000");
	int none1 = find(&m, "vm:lockbench:tas:none:process:1x1:p1:t4096");
	int none1s = find(&m, "vm:lockbench:tas:none:process:1x1:p1:t4096:s3000");
	int pv2 = find(&m, "vm:lockbench:tas:pv:process:1x2:p1:t4096");
	CHECK(host1 >= 0 && pv1 >= 0 && pv1s >= 0 && none1 >= 0 && none1s >= 0 && pv2 >= 0);
	/* host takes no slice: one host cell per overcommit, none marked s3000 */
	CHECK_EQ(find(&m, "vm:lockbench:tas:host:process:1x1:p1:t4096:s3000"), -1);
	CHECK_EQ(m.n, 10);
	if (pv2 < 0 || host1 < 0) {
		bench_matrix_free(&m);
		return;
	}
	/* 1x cells: 100, 200, 300, 400, 500 (+rep); the 2x pv cell 150 (+rep) */
	double base[10];
	for (unsigned i = 0; i < m.n; i++)
		base[i] = 1000;
	base[host1] = 100, base[pv1] = 200, base[pv1s] = 300, base[none1] = 400, base[none1s] = 500;
	base[pv2] = 150;
	fill(&m, 5, base);
	CHECK(!bench_stats_matrix(&m));
	struct bench_cell *c = &m.cells[pv2];
	/* ref stays the same policy's 1x; the pool holds all five 1x cells */
	CHECK_EQ(c->ref, pv1);
	CHECK_EQ(c->nused, 5);
	CHECK_EQ(c->npool, 5);
	/* 25 runs 100..504: the 13th is 300 + 2 */
	CHECK(c->pooled_1x == 302);
	CHECK(c->median == 152);
	CHECK(near(c->eff, 152.0 / 302));
	CHECK(c->eff_lo <= c->eff && c->eff <= c->eff_hi && c->eff_lo > 0);
	CHECK(c->median_lo == 150 && c->median_hi == 154);
	/* a per-policy denominator would have said 152 / 202 */
	CHECK(!near(c->eff, 152.0 / 202));

	/* a failed pool cell is left out of the pool and of ref_ids */
	m.cells[none1s].runs[0].ok = false;
	CHECK(bench_stats_matrix(&m));
	CHECK_EQ(c->nused, 4);
	for (unsigned i = 0; i < c->nused; i++)
		CHECK(c->used[i] != none1s);
	/* 20 runs 100..404: the 10th and 11th, (204 + 300) / 2 */
	CHECK(c->pooled_1x == 252);
	CHECK(near(c->eff, 152.0 / 252));

	/* fewer than 5 runs: an efficiency, but no intervals */
	fill(&m, 4, base);
	bench_stats_matrix(&m);
	CHECK(isfinite(c->eff) && isnan(c->eff_lo) && isnan(c->median_lo));
	bench_matrix_free(&m);
}

static bool has_arg(const char *const *args, const char *a, const char *v)
{
	for (unsigned i = 0; args[i] && args[i + 1]; i++)
		if (!strcmp(args[i], a) && (!v || !strcmp(args[i + 1], v)))
			return true;
	return false;
}

static void test_slice_defer_args_and_keys(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "pv", "--overcommit", "2",
			 "--pcpus", "1", "--slice-us", "6000,12000", "--defer-us", "100", "--no-native",
			 NULL };
	matrix(&o, &m, 14, argv);
	const char *args[64];
	char buf[16][32];
	int def = find(&m, "vm:lockbench:tas:pv:process:1x2:p1:t4096:d100");
	int lng = find(&m, "vm:lockbench:tas:pv:process:1x2:p1:t4096:s12000:d100");
	int host = find(&m, "vm:lockbench:tas:host:process:1x2:p1:t4096");
	CHECK(def >= 0 && lng >= 0 && host >= 0);
	if (def < 0 || lng < 0 || host < 0) {
		bench_matrix_free(&m);
		return;
	}
	bench_run_args(&o, &m.cells[def], args, buf);
	CHECK(!has_arg(args, "--slice-us", NULL) && has_arg(args, "--defer-us", "100"));
	bench_run_args(&o, &m.cells[lng], args, buf);
	CHECK(has_arg(args, "--slice-us", "12000") && has_arg(args, "--defer-us", "100"));
	bench_run_args(&o, &m.cells[host], args, buf);
	CHECK(!has_arg(args, "--slice-us", NULL) && !has_arg(args, "--defer-us", NULL));
	/* the default matrix's keys and fingerprint do not see the new dimensions */
	char fp1[17], fp2[17];
	struct bench_opts o2;
	struct bench_matrix m2;
	char *plain[] = { "bench", "--pcpus", "1", NULL };
	char *given[] = { "bench", "--pcpus", "1", "--slice-us", "6000", "--defer-us", "200", NULL };
	matrix(&o2, &m2, 3, plain);
	bench_fingerprint(&o2, &m2, fp1);
	bench_matrix_free(&m2);
	matrix(&o2, &m2, 7, given);
	bench_fingerprint(&o2, &m2, fp2);
	CHECK(!strcmp(fp1, fp2));
	CHECK_EQ(o2.reps, 5);
	bench_fingerprint(&o, &m, fp2);
	CHECK(strcmp(fp1, fp2));
	bench_matrix_free(&m2);
	bench_matrix_free(&m);
}

/* A domain cell at another slice still compares with the host's processes. */
static void test_multi_vm_refs_across_slices(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "pv", "--overcommit", "2", "--vms", "2",
			 "--pcpus", "1", "--slice-us", "3000", "--no-native", NULL };
	matrix(&o, &m, 14, argv);
	int dom = find(&m, "vm:lockbench:tas:pv:domain:2x2:p1:t4096:s3000");
	int procs = find(&m, "vm:lockbench:tas:host:host-procs:2x2:p1:t4096");
	int one = find(&m, "vm:lockbench:tas:pv:process:1x2:p1:t4096:s3000");
	CHECK(dom >= 0 && procs >= 0 && one >= 0);
	if (dom >= 0) {
		CHECK_EQ(m.cells[dom].host_procs_ref, procs);
		CHECK_EQ(m.cells[dom].one_vm_ref, one);
	}
	bench_matrix_free(&m);
}

static void test_sched_rates(void)
{
	double s[BENCH_SCHED_STATS];
	bench_sched_clear(s);
	CHECK(isnan(bench_sched_rate(s, BENCH_RATE_SWITCHES)));
	struct bench_json a, b;
	CHECK_EQ(bench_json_parse("{\"sched\": {\"preemptions\": 30, \"yields_given\": 10, \"deferrals\": 4},"
				  " \"event_loop\": {\"ticks\": 50}, \"wall_ns\": 2000000000}", &a), 0);
	CHECK_EQ(bench_json_parse("{\"sched\": {\"preemptions\": 10, \"yields_given\": 10, \"deferrals\": 2},"
				  " \"event_loop\": {\"ticks\": 30}, \"wall_ns\": 1000000000}", &b), 0);
	bench_sched_add(&a, s);
	CHECK(s[BENCH_SCHED_PREEMPTIONS] == 30 && s[BENCH_SCHED_WINDOW_S] == 2);
	CHECK(isnan(s[BENCH_SCHED_KICKS_SENT])); /* absent stays unknown */
	CHECK(bench_sched_rate(s, BENCH_RATE_SWITCHES) == 20);
	/* a second process of the same window: counts add, the window is the longest */
	bench_sched_add(&b, s);
	CHECK(s[BENCH_SCHED_PREEMPTIONS] == 40 && s[BENCH_SCHED_WINDOW_S] == 2);
	CHECK(bench_sched_rate(s, BENCH_RATE_SWITCHES) == 30);
	CHECK(bench_sched_rate(s, BENCH_RATE_LOOP_WAKEUPS) == 40);
	CHECK(bench_sched_rate(s, BENCH_RATE_DEFERRALS) == 3);
	bench_json_free(&a);
	bench_json_free(&b);
}

int main(void)
{
	RUN(test_median_ci_known_samples);
	RUN(test_ratio_ci);
	RUN(test_pooled_denominator);
	RUN(test_slice_defer_args_and_keys);
	RUN(test_multi_vm_refs_across_slices);
	RUN(test_sched_rates);
	return check_summary();
}
