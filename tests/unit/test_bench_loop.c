/*
 * --loop-cpu as a bench dimension (vmm/bench/matrix/loop.c, matrix/matrix.c,
 * exec/args.c, exec/sched.c, stats/stats.c): the cells it makes and their
 * keys, the command lines, the 1x pools kept apart per placement, and where
 * the loop ran, read back from the reports and summed over K processes.
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

#define K(pol, x, tail) "vm:lockbench:tas:" pol ":process:1x" #x ":p1:t4096" tail

static void test_cells_keys_args_pools(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "pv", "--overcommit", "1,2",
			 "--pcpus", "1", "--loop-cpu", "auto,none,3", "--no-native", NULL };
	matrix(&o, &m, 12, argv);
	int a1 = find(&m, K("pv", 1, "")), a2 = find(&m, K("pv", 2, ""));
	int n1 = find(&m, K("pv", 1, ":loopnone")), n2 = find(&m, K("pv", 2, ":loopnone"));
	int c1 = find(&m, K("pv", 1, ":loop3")), c2 = find(&m, K("pv", 2, ":loop3"));
	int h1 = find(&m, K("host", 1, "")), h2 = find(&m, K("host", 2, ""));
	CHECK(a1 >= 0 && a2 >= 0 && n1 >= 0 && n2 >= 0 && c1 >= 0 && c2 >= 0 && h1 >= 0 && h2 >= 0);
	/* host cells keep auto only: 2 host + 3 placements x 2 */
	CHECK_EQ(m.n, 8);
	CHECK_EQ(find(&m, K("host", 1, ":loopnone")), -1);
	if (a1 < 0 || a2 < 0 || n1 < 0 || n2 < 0 || c1 < 0 || c2 < 0 || h1 < 0 || h2 < 0) {
		bench_matrix_free(&m);
		return;
	}
	/* the order is the one before the dimension, each placement after the other */
	CHECK(a1 < n1 && n1 < c1);
	const char *args[64];
	char buf[16][32];
	bench_run_args(&o, &m.cells[a2], args, buf);
	CHECK(!arg_of(args, "--loop-cpu"));
	bench_run_args(&o, &m.cells[n2], args, buf);
	CHECK(arg_of(args, "--loop-cpu") && !strcmp(arg_of(args, "--loop-cpu"), "none"));
	bench_run_args(&o, &m.cells[c2], args, buf);
	CHECK(arg_of(args, "--loop-cpu") && !strcmp(arg_of(args, "--loop-cpu"), "3"));
	bench_run_args(&o, &m.cells[h2], args, buf);
	CHECK(!arg_of(args, "--loop-cpu"));
	/* a placement pools its own 1x only; the host's 1x is auto's */
	CHECK(in_pool(&m.cells[a2], a1) && in_pool(&m.cells[a2], h1) && !in_pool(&m.cells[a2], n1));
	CHECK(in_pool(&m.cells[h2], a1) && !in_pool(&m.cells[h2], c1));
	CHECK(in_pool(&m.cells[n2], n1) && m.cells[n2].npool == 1);
	CHECK(in_pool(&m.cells[c2], c1) && m.cells[c2].npool == 1);
	CHECK_EQ(m.cells[a2].npool, 2);
	CHECK_EQ(m.cells[n2].ref, n1);
	CHECK_EQ(m.cells[c2].ref, c1);

	/* asking for auto is the default matrix: same keys, same fingerprint */
	char fp1[17], fp2[17];
	struct bench_opts o2;
	struct bench_matrix m2;
	char *plain[] = { "bench", "--pcpus", "1", NULL };
	char *given[] = { "bench", "--pcpus", "1", "--loop-cpu", "auto", NULL };
	matrix(&o2, &m2, 3, plain);
	bench_fingerprint(&o2, &m2, fp1);
	bench_matrix_free(&m2);
	matrix(&o2, &m2, 5, given);
	bench_fingerprint(&o2, &m2, fp2);
	CHECK(!strcmp(fp1, fp2));
	bench_matrix_free(&m2);
	bench_matrix_free(&m);
}

static void test_bad_lists(void)
{
	const char *bad[] = { "auto,auto", "3,3", "none,auto,none", "sometimes", "-1", "1024", "" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bench_opts o;
		char err[256] = "";
		char *argv[] = { "bench", "--loop-cpu", (char *)bad[i], NULL };
		bench_opts_defaults(&o);
		CHECK_EQ(bench_parse(3, argv, &o, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "--loop-cpu") != NULL);
	}
}

static void report(struct bench_json *j, const char *loop)
{
	char text[256];
	snprintf(text, sizeof(text), "{\"sched\": {\"preemptions\": 1}, \"event_loop\": {\"ticks\": 5%s%s},"
		 " \"wall_ns\": 1000000000}", loop ? ", \"cpu\": " : "", loop ? loop : "");
	CHECK_EQ(bench_json_parse(text, j), 0);
}

/* One process's CPU; K processes' common one, or -2 when they differ. */
static void test_readback(void)
{
	static const struct {
		const char *a, *b;
		double want_a, want_ab;
	} cases[] = {
		{ "1", "1", 1, 1 },      /* two members' loops on the spare CPU */
		{ "-1", "-1", -1, -1 },  /* none: not pinned */
		{ "1", "-1", 1, -2 },    /* they differ */
		{ "-1", "0", -1, -2 },
		{ NULL, "1", NAN, 1 },   /* an older report without it: unknown */
		{ "-5", NULL, NAN, NAN }, /* not a value a report gives */
		{ "1.5", NULL, NAN, NAN },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double s[BENCH_SCHED_STATS];
		struct bench_json a, b;
		bench_sched_clear(s);
		report(&a, cases[i].a);
		report(&b, cases[i].b);
		bench_sched_add(&a, s);
		double got = s[BENCH_SCHED_LOOP_CPU];
		CHECK(isnan(cases[i].want_a) ? isnan(got) : got == cases[i].want_a);
		bench_sched_add(&b, s);
		got = s[BENCH_SCHED_LOOP_CPU];
		CHECK(isnan(cases[i].want_ab) ? isnan(got) : got == cases[i].want_ab);
		/* the counts beside it still add */
		CHECK(s[BENCH_SCHED_LOOP_TICKS] == 10);
		bench_json_free(&a);
		bench_json_free(&b);
	}
}

/* A cell's value is its ok runs' common CPU, never a median of CPU numbers. */
static void test_cell_value(void)
{
	static const struct {
		double runs[4];
		bool ok[4];
		double want;
	} cases[] = {
		{ { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, 1 },
		{ { -1, -1, -1, -1 }, { 1, 1, 1, 1 }, -1 },
		{ { 1, 1, -1, -1 }, { 1, 1, 1, 1 }, -2 },       /* the median would say 0 */
		{ { 1, 1, -1, NAN }, { 1, 1, 0, 1 }, 1 },        /* a failed run does not count */
		{ { NAN, NAN, NAN, NAN }, { 1, 1, 1, 1 }, NAN },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bench_cell *c = calloc(1, sizeof(*c));
		if (!c)
			return;
		c->nruns = 4;
		for (unsigned r = 0; r < 4; r++) {
			c->runs[r].ok = cases[i].ok[r];
			c->runs[r].ops_per_s = 100 + r;
			bench_sched_clear(c->runs[r].sched);
			c->runs[r].sched[BENCH_SCHED_LOOP_CPU] = cases[i].runs[r];
		}
		bench_stats_cell(c);
		double got = c->sched_median[BENCH_SCHED_LOOP_CPU];
		CHECK(isnan(cases[i].want) ? isnan(got) : got == cases[i].want);
		free(c);
	}
}

int main(void)
{
	RUN(test_cells_keys_args_pools);
	RUN(test_bad_lists);
	RUN(test_readback);
	RUN(test_cell_value);
	return check_summary();
}
