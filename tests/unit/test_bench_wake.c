/*
 * --wake-slice-us as a bench dimension (vmm/bench/cli/options.c, matrix/matrix.c,
 * exec/args.c, matrix/shard.c, report/table.c): the cells it makes (co-scheduler
 * cells only), their keys and labels, the command lines (the flag only when not
 * vmm run's default), one 1x pool for every wake slice, the slices preset, and
 * what the option refuses. Also the tables' label width.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "tests/unit/bench_matrix_test.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/report/report.h"

#define K(pol, x, tail) "vm:lockbench:tas:" pol ":process:1x" #x ":p1:t4096" tail

static void test_cells_keys_args_pools(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "pv", "--overcommit", "1,2",
			 "--pcpus", "1", "--wake-slice-us", "0,500,1000", "--no-native", NULL };
	matrix(&o, &m, 12, argv);
	int d1 = find(&m, K("pv", 1, "")), d2 = find(&m, K("pv", 2, ""));
	int z1 = find(&m, K("pv", 1, ":w0")), z2 = find(&m, K("pv", 2, ":w0"));
	int f1 = find(&m, K("pv", 1, ":w500")), f2 = find(&m, K("pv", 2, ":w500"));
	int h1 = find(&m, K("host", 1, "")), h2 = find(&m, K("host", 2, ""));
	CHECK(d1 >= 0 && d2 >= 0 && z1 >= 0 && z2 >= 0 && f1 >= 0 && f2 >= 0 && h1 >= 0 && h2 >= 0);
	/* host cells keep vmm run's default only: 2 host + 3 wake slices x 2 */
	CHECK_EQ(m.n, 8);
	CHECK_EQ(find(&m, K("host", 2, ":w0")), -1);
	CHECK_EQ(find(&m, K("pv", 2, ":w1000")), -1); /* the default is never in a key */
	if (d1 < 0 || d2 < 0 || z1 < 0 || z2 < 0 || f1 < 0 || f2 < 0 || h1 < 0 || h2 < 0) {
		bench_matrix_free(&m);
		return;
	}
	CHECK(m.cells[z2].wake_slice_us == 0 && m.cells[f2].wake_slice_us == 500);
	CHECK(m.cells[d2].wake_slice_us == BENCH_WAKE_SLICE_US_DEFAULT);
	CHECK(m.cells[h2].wake_slice_us == BENCH_WAKE_SLICE_US_DEFAULT);
	/* in the order given, each after the other */
	CHECK(z1 < f1 && f1 < d1);

	const char *args[64];
	char buf[16][32];
	bench_run_args(&o, &m.cells[z2], args, buf);
	CHECK(arg_of(args, "--wake-slice-us") && !strcmp(arg_of(args, "--wake-slice-us"), "0"));
	bench_run_args(&o, &m.cells[f1], args, buf);
	CHECK(arg_of(args, "--wake-slice-us") && !strcmp(arg_of(args, "--wake-slice-us"), "500"));
	bench_run_args(&o, &m.cells[d2], args, buf);
	CHECK(!arg_of(args, "--wake-slice-us"));
	bench_run_args(&o, &m.cells[h2], args, buf);
	CHECK(!arg_of(args, "--wake-slice-us"));

	/* at 1x nobody queues: one pool of every wake slice's 1x and the host's */
	const int above[] = { z2, f2, d2, h2 };
	for (unsigned i = 0; i < 4; i++) {
		const struct bench_cell *c = &m.cells[above[i]];
		CHECK_EQ(c->npool, 4);
		CHECK(in_pool(c, z1) && in_pool(c, f1) && in_pool(c, d1) && in_pool(c, h1));
	}
	CHECK_EQ(m.cells[z2].ref, z1);
	CHECK_EQ(m.cells[f2].ref, f1);

	/* the labels the tables show */
	char l[BENCH_LABEL_MAX];
	CHECK(!strcmp(bench_cell_label(&m.cells[z2], l, sizeof(l)), "pv/w0us"));
	CHECK(!strcmp(bench_cell_label(&m.cells[f2], l, sizeof(l)), "pv/w500us"));
	CHECK(!strcmp(bench_cell_label(&m.cells[d2], l, sizeof(l)), "pv"));
	CHECK(!strcmp(bench_cell_label(&m.cells[h2], l, sizeof(l)), "host"));

	/* asking for the default is the default matrix: same keys, same fingerprint */
	char fp1[17], fp2[17];
	struct bench_opts o2;
	struct bench_matrix m2;
	char *plain[] = { "bench", "--pcpus", "1", NULL };
	char *given[] = { "bench", "--pcpus", "1", "--wake-slice-us", "1000", NULL };
	matrix(&o2, &m2, 3, plain);
	bench_fingerprint(&o2, &m2, fp1);
	bench_matrix_free(&m2);
	matrix(&o2, &m2, 5, given);
	bench_fingerprint(&o2, &m2, fp2);
	CHECK(!strcmp(fp1, fp2));
	bench_matrix_free(&m2);
	bench_matrix_free(&m);
}

/* Every other dimension crossed with it: the wake slice is the innermost. */
static void test_crossed(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "none", "--overcommit", "2",
			 "--pcpus", "1", "--slice-us", "3000,6000", "--defer-us", "100,200",
			 "--guest-slice", "on,off", "--loop-cpu", "auto,none", "--wake-slice-us", "0,1000",
			 "--no-native", NULL };
	matrix(&o, &m, 20, argv);
	/* host 1x and 2x; none: 2 x 2 x 2 x 2 x 2 settings at 1x and 2x */
	CHECK_EQ(m.n, 2 + 32 * 2);
	unsigned zero = 0;
	char k[256];
	for (unsigned i = 0; i < m.n; i++) {
		bench_cell_key(&m.cells[i], k, sizeof(k));
		bool host = !strcmp(m.cells[i].policy, BENCH_POLICY_HOST);
		CHECK(host ? m.cells[i].wake_slice_us == BENCH_WAKE_SLICE_US_DEFAULT
			   : m.cells[i].wake_slice_us == 0 || m.cells[i].wake_slice_us == 1000);
		zero += m.cells[i].wake_slice_us == 0;
		/* the key's suffix is the last, after the loop's */
		size_t n = strlen(k);
		CHECK((m.cells[i].wake_slice_us == 0) == (n > 3 && !strcmp(k + n - 3, ":w0")));
	}
	CHECK_EQ(zero, 32);
	int a = find(&m, "vm:lockbench:tas:none:process:1x2:p1:t4096:s3000:d100:gsoff:loopnone:w0");
	int b = find(&m, "vm:lockbench:tas:none:process:1x2:p1:t4096:s3000:d100:gsoff:loopnone");
	CHECK(a >= 0 && b >= 0);
	if (a >= 0 && b >= 0) {
		char l[BENCH_LABEL_MAX];
		CHECK(!strcmp(bench_cell_label(&m.cells[a], l, sizeof(l)), "none/s3ms/d100us/gsoff/loopnone/w0us"));
		/* the tables' policy column fits the longest label, never less than asked */
		CHECK_EQ(bench_label_width(&m, NULL, 12), (int)strlen(l));
		CHECK_EQ(bench_label_width(&m, NULL, 60), 60);
	}
	bench_matrix_free(&m);
}

static bool host_only(const struct bench_cell *c)
{
	return !strcmp(c->policy, BENCH_POLICY_HOST);
}

static void test_label_width(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "pv", "--overcommit", "2",
			 "--pcpus", "1", "--wake-slice-us", "12345", "--no-native", NULL };
	matrix(&o, &m, 12, argv);
	/* "pv/w12345us": 11, below the tables' 12 */
	CHECK_EQ(bench_label_width(&m, NULL, 12), 12);
	CHECK_EQ(bench_label_width(&m, NULL, 0), 11);
	CHECK_EQ(bench_label_width(&m, host_only, 0), 4);
	bench_matrix_free(&m);
}

/* The slices preset sweeps each slice with and without the wake cut. */
static void test_preset_slices(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--preset", "slices", "--pcpus", "2", NULL };
	matrix(&o, &m, 5, argv);
	CHECK(o.wake_slices.n == 2 && o.wake_slices.v[0] == 0 && o.wake_slices.v[1] == 1000);
	CHECK(find(&m, "vm:lockbench:tas:pv:process:1x4:p2:t4096:s3000:w0") >= 0);
	CHECK(find(&m, "vm:lockbench:tas:pv:process:1x4:p2:t4096:s3000") >= 0);
	CHECK(find(&m, "vm:lockbench:tas:host:process:1x4:p2:t4096:w0") < 0);
	bench_matrix_free(&m);
	/* a flag overrides the preset's part */
	char *one[] = { "bench", "--preset", "slices", "--pcpus", "2", "--wake-slice-us", "500", NULL };
	matrix(&o, &m, 7, one);
	CHECK(o.wake_slices.n == 1 && o.wake_slices.v[0] == 500);
	bench_matrix_free(&m);
	/* the other presets leave it at vmm run's, and keep their own parts */
	char *quick[] = { "bench", NULL };
	matrix(&o, &m, 1, quick);
	CHECK(o.wake_slices.n == 1 && o.wake_slices.v[0] == BENCH_WAKE_SLICE_US_DEFAULT);
	bench_matrix_free(&m);
	char *hot[] = { "bench", "--preset", "hotpath", "--pcpus", "2", NULL };
	matrix(&o, &m, 5, hot);
	CHECK(o.wake_slices.n == 1 && o.wake_slices.v[0] == BENCH_WAKE_SLICE_US_DEFAULT);
	CHECK(o.guest_slices.n == 2 && !o.guest_slices.off[0] && o.guest_slices.off[1]);
	bench_matrix_free(&m);
}

static void test_bad_lists(void)
{
	const char *bad[] = { "0,0", "1000,1000", "-1", "10000001", "x", "", "1.5", "500us", "," };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bench_opts o;
		char err[256] = "";
		char *argv[] = { "bench", "--wake-slice-us", (char *)bad[i], NULL };
		bench_opts_defaults(&o);
		CHECK_EQ(bench_parse(3, argv, &o, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "--wake-slice-us") != NULL && !strchr(err, '\n'));
	}
	/* 0 is a value here (never cut), though not for --defer-us */
	struct bench_opts o;
	char err[256] = "";
	char *zero[] = { "bench", "--wake-slice-us", "0", NULL };
	bench_opts_defaults(&o);
	CHECK_EQ(bench_parse(3, zero, &o, err, sizeof(err)), 0);
	char *dzero[] = { "bench", "--defer-us", "0", NULL };
	bench_opts_defaults(&o);
	CHECK_EQ(bench_parse(3, dzero, &o, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	RUN(test_cells_keys_args_pools);
	RUN(test_crossed);
	RUN(test_label_width);
	RUN(test_preset_slices);
	RUN(test_bad_lists);
	return check_summary();
}
