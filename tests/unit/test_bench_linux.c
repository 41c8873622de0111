/*
 * Linux workloads in `vmm bench` (vmm/bench/exec/linux.c, matrix/matrix.c,
 * cli/options.c, stats/stats.c, report/targets.c): the cells a Linux workload
 * makes (QEMU's only for it, no lock, threshold or second VM), the pools
 * kept per VMM, the QEMU twin of each vmm cell, both command lines, the
 * result line /init prints, vs qemu with its interval, and its target.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/bench_matrix_test.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"

static char kernel[] = "/tmp/vmm-test-bench-linux.XXXXXX";

#define HKT(kind, pol, x, t) kind ":hackbench:-:" pol ":process:1x" #x ":p1:t" #t
#define HK(kind, pol, x) HKT(kind, pol, x, 4096)

static int parse(int argc, char **argv, struct bench_opts *o, char *err, size_t len)
{
	bench_opts_defaults(o);
	return bench_parse(argc, argv, o, err, len);
}

static void test_matrix(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--workloads", "hackbench,lockbench", "--locks", "tas,ticket", "--policies",
			 "qemu,pv", "--overcommit", "1,2", "--vms", "1,2", "--pcpus", "1", "--spin-thresholds",
			 "2k,4k", "--kernel", kernel, "--initrd", kernel, NULL };
	matrix(&o, &m, 19, argv);
	/* the first threshold asked for: a Linux guest has its own */
	int q1 = find(&m, HKT("qemu", "qemu", 1, 2048)), q2 = find(&m, HKT("qemu", "qemu", 2, 2048));
	int p1 = find(&m, HKT("vm", "pv", 1, 2048)), p2 = find(&m, HKT("vm", "pv", 2, 2048));
	int h1 = find(&m, HKT("vm", "host", 1, 2048)), h2 = find(&m, HKT("vm", "host", 2, 2048));
	CHECK(q1 >= 0 && q2 >= 0 && p1 >= 0 && p2 >= 0 && h1 >= 0 && h2 >= 0);
	if (q1 < 0 || q2 < 0 || p1 < 0 || p2 < 0 || h1 < 0 || h2 < 0) {
		bench_matrix_free(&m);
		return;
	}
	unsigned nlinux = 0;
	for (unsigned i = 0; i < m.n; i++) {
		const struct bench_cell *c = &m.cells[i];
		if (!strcmp(c->workload, "hackbench")) {
			nlinux++;
			/* one lock ("-"), one threshold, one VM: a Linux guest has its own and runs alone */
			CHECK(!strcmp(c->lock, "-") && c->vms == 1 && c->spin_threshold == 2048);
			CHECK(c->kind != BENCH_NATIVE);
		} else {
			/* QEMU boots Linux only */
			CHECK(c->kind != BENCH_QEMU && c->qemu_ref == -1);
		}
	}
	CHECK_EQ(nlinux, 6);
	CHECK(m.cells[q2].kind == BENCH_QEMU && !strcmp(bench_kind_names[BENCH_QEMU], "qemu"));
	/* each VMM pools its own 1x: QEMU's alone, vmm's every policy's */
	CHECK(in_pool(&m.cells[q2], q1) && m.cells[q2].npool == 1);
	CHECK(in_pool(&m.cells[p2], p1) && in_pool(&m.cells[p2], h1) && !in_pool(&m.cells[p2], q1));
	CHECK_EQ(m.cells[p2].npool, 2);
	/* the QEMU twin: same workload, vCPUs and CPUs */
	CHECK_EQ(m.cells[p2].qemu_ref, q2);
	CHECK_EQ(m.cells[p1].qemu_ref, q1);
	CHECK_EQ(m.cells[h2].qemu_ref, q2);
	CHECK_EQ(m.cells[q2].qemu_ref, -1);
	/* the timeout is the Linux one */
	CHECK_EQ(bench_cell_timeout_ms(&m.cells[p2], &o), 600000u);
	bench_matrix_free(&m);
}

static void test_command_lines(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--workloads", "sysbench-mutex", "--policies", "qemu,pv", "--overcommit", "2",
			 "--pcpus", "1", "--kernel", kernel, "--initrd", kernel, "--linux-size", "77",
			 "--linux-threads", "6", "--slice-us", "3000", "--qemu", "/opt/q", NULL };
	matrix(&o, &m, 21, argv);
	int q = find(&m, "qemu:sysbench-mutex:-:qemu:process:1x2:p1:t4096");
	int p = find(&m, "vm:sysbench-mutex:-:pv:process:1x2:p1:t4096:s3000");
	CHECK(q >= 0 && p >= 0);
	if (q < 0 || p < 0) {
		bench_matrix_free(&m);
		return;
	}
	const char *args[BENCH_LINUX_ARGS];
	struct bench_linux_strs s;
	unsigned n = bench_linux_argv(&o, &m.cells[p], "/t/con", "/t/r.json", args, &s);
	CHECK(n > 0 && args[n] == NULL && !strcmp(args[1], "run"));
	CHECK(!strcmp(arg_of(args, "-k"), kernel) && !strcmp(arg_of(args, "-i"), kernel));
	CHECK(!strcmp(arg_of(args, "-c"), "2") && !strcmp(arg_of(args, "--pcpus"), "1"));
	CHECK(!strcmp(arg_of(args, "--yield"), "pv") && !strcmp(arg_of(args, "--slice-us"), "3000"));
	CHECK(!strcmp(arg_of(args, "--json"), "/t/r.json") && !strcmp(arg_of(args, "--timeout"), "595s"));
	CHECK(!strcmp(arg_of(args, "-p"),
		      "console=ttyS0 reboot=k panic=-1 quiet vmm.work=sysbench-mutex vmm.threads=6 vmm.size=77"));
	/* no firmware options, and never -q: the console is the result */
	CHECK(!arg_of(args, "--workload") && !arg_of(args, "--lock"));
	for (unsigned i = 0; i < n; i++)
		CHECK(strcmp(args[i], "-q"));
	n = bench_linux_argv(&o, &m.cells[q], "/t/con", "/t/r.json", args, &s);
	CHECK(n > 0 && args[n] == NULL && !strcmp(args[0], "/opt/q"));
	CHECK(!strcmp(arg_of(args, "-accel"), "kvm") && !strcmp(arg_of(args, "-cpu"), "host"));
	CHECK(!strcmp(arg_of(args, "-smp"), "2") && !strcmp(arg_of(args, "-m"), "1024M"));
	CHECK(!strcmp(arg_of(args, "-serial"), "file:/t/con") && !strcmp(arg_of(args, "-kernel"), kernel));
	CHECK(!strcmp(arg_of(args, "-append"), s.cmdline) && strstr(s.cmdline, "vmm.work=sysbench-mutex"));
	bench_matrix_free(&m);
}

static void test_bad_options(void)
{
	struct bench_opts o;
	char err[256];
	char *nokernel[] = { "bench", "--preset", "linux", NULL };
	CHECK_EQ(parse(3, nokernel, &o, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "--kernel and --initrd") != NULL);
	char *qemu_alone[] = { "bench", "--policies", "qemu", NULL };
	CHECK_EQ(parse(3, qemu_alone, &o, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "only Linux workloads") != NULL);
	char *missing[] = { "bench", "--workloads", "kbuild", "--kernel", "/nonexistent/bz", "--initrd", kernel, NULL };
	CHECK_EQ(parse(7, missing, &o, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "--kernel /nonexistent/bz: No such file") != NULL);
	char *timeout[] = { "bench", "--linux-timeout", "5s", NULL };
	CHECK_EQ(parse(3, timeout, &o, err, sizeof(err)), -EINVAL);
	char *unknown[] = { "bench", "--workloads", "ebizzy", NULL };
	CHECK_EQ(parse(3, unknown, &o, err, sizeof(err)), -EINVAL);
	char *ok[] = { "bench", "--preset", "linux", "--kernel", kernel, "--initrd", kernel, NULL };
	CHECK_EQ(parse(7, ok, &o, err, sizeof(err)), 0);
	CHECK(!strcmp(o.preset, "linux") && o.workloads.n == 2 && o.policies.n == 4);
}

static void test_result_line(void)
{
	double ops, steal;
	char why[96];
	const char *good = "boot...\nVMM-WORK-START work=hackbench\n"
			   "VMM-WORK-RESULT work=hackbench ops=16000 seconds=3.20 cpus=4 steal_ms=810 rc=0\r\nVMM-POWEROFF\n";
	CHECK_EQ(bench_linux_result(good, &ops, &steal, why, sizeof(why)), 0);
	CHECK(fabs(ops - 5000) < 1e-9 && steal == 810);
	/* the last result counts; a failed workload or a line without numbers is no result */
	const char *two = "VMM-WORK-RESULT work=x ops=1 seconds=1 rc=0\nVMM-WORK-RESULT work=x ops=10 seconds=2 rc=0\n";
	CHECK(bench_linux_result(two, &ops, &steal, why, sizeof(why)) == 0 && ops == 5 && isnan(steal));
	CHECK_EQ(bench_linux_result("VMM-WORK-RESULT work=x ops=10 seconds=2 rc=1\n", &ops, &steal, why, sizeof(why)),
		 -EINVAL);
	CHECK(strstr(why, "failed") != NULL && isnan(ops));
	CHECK_EQ(bench_linux_result("VMM-WORK-RESULT work=x ops=10 seconds=0.00 rc=0\n", &ops, &steal, why, sizeof(why)),
		 -EINVAL);
	CHECK_EQ(bench_linux_result("VMM-WORK-RESULT work=x ops=1e400x seconds=1 rc=0\n", &ops, &steal, why, sizeof(why)),
		 -EINVAL);
	CHECK_EQ(bench_linux_result("[ 1.0] Run /init\n", &ops, &steal, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "no VMM-WORK-RESULT") != NULL);
	/* a key is a whole word: "xops=" is not ops */
	CHECK_EQ(bench_linux_result("VMM-WORK-RESULT xops=4 seconds=1 rc=0\n", &ops, &steal, why, sizeof(why)), -EINVAL);
}

static void runs(struct bench_cell *c, const double *v, unsigned n)
{
	c->nruns = n;
	for (unsigned i = 0; i < n; i++) {
		memset(&c->runs[i], 0, sizeof(c->runs[i]));
		c->runs[i].ok = true;
		c->runs[i].ops_per_s = v[i];
		bench_sched_clear(c->runs[i].sched);
	}
}

static void test_vs_qemu_and_target(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--workloads", "hackbench", "--policies", "qemu,pv", "--overcommit", "1,2",
			 "--pcpus", "1", "--kernel", kernel, "--initrd", kernel, NULL };
	matrix(&o, &m, 13, argv);
	int q1 = find(&m, HK("qemu", "qemu", 1)), q2 = find(&m, HK("qemu", "qemu", 2));
	int p1 = find(&m, HK("vm", "pv", 1)), p2 = find(&m, HK("vm", "pv", 2)), h1 = find(&m, HK("vm", "host", 1));
	int h2 = find(&m, HK("vm", "host", 2));
	CHECK(q1 >= 0 && q2 >= 0 && p1 >= 0 && p2 >= 0 && h1 >= 0 && h2 >= 0);
	if (q1 < 0 || q2 < 0 || p1 < 0 || p2 < 0 || h1 < 0 || h2 < 0) {
		bench_matrix_free(&m);
		return;
	}
	const double one[5] = { 100, 101, 99, 100, 102 }, qemu2[5] = { 40, 41, 39, 40, 42 };
	const double pv2[5] = { 90, 91, 89, 90, 92 }, host2[5] = { 30, 31, 29, 30, 32 };
	runs(&m.cells[q1], one, 5);
	runs(&m.cells[p1], one, 5);
	runs(&m.cells[h1], one, 5);
	runs(&m.cells[q2], qemu2, 5);
	runs(&m.cells[p2], pv2, 5);
	runs(&m.cells[h2], host2, 5);
	bench_stats_matrix(&m);
	const struct bench_cell *c = &m.cells[p2];
	CHECK(fabs(c->vs_qemu - 90.0 / 40.0) < 1e-9);
	CHECK(c->vs_qemu_lo <= c->vs_qemu && c->vs_qemu <= c->vs_qemu_hi && c->vs_qemu_lo > 2);
	CHECK(fabs(m.cells[q2].eff - 0.4) < 1e-9); /* QEMU against its own 1x */
	CHECK(fabs(c->eff - 0.9) < 1e-9);
	CHECK(isnan(m.cells[q2].vs_qemu));
	/* the target: pv at 2x only, met */
	json_t *root = json_object();
	bench_targets_json(root, &m);
	json_t *t, *arr = json_object_get(root, "targets");
	size_t i;
	unsigned seen = 0;
	json_array_foreach(arr, i, t) {
		if (strcmp(json_string_value(json_object_get(t, "target")), "vs qemu"))
			continue;
		seen++;
		CHECK_EQ(json_integer_value(json_object_get(t, "cell_id")), p2);
		CHECK_EQ(json_integer_value(json_object_get(t, "qemu_id")), q2);
		CHECK(json_is_true(json_object_get(t, "met")));
	}
	CHECK_EQ(seen, 1);
	json_decref(root);
	/* slower than QEMU: missed */
	const double slow[5] = { 30, 31, 29, 30, 32 };
	runs(&m.cells[p2], slow, 5);
	bench_stats_matrix(&m);
	root = json_object();
	bench_targets_json(root, &m);
	arr = json_object_get(root, "targets");
	json_array_foreach(arr, i, t)
		if (!strcmp(json_string_value(json_object_get(t, "target")), "vs qemu"))
			CHECK(json_is_false(json_object_get(t, "met")));
	json_decref(root);
	bench_matrix_free(&m);
}

int main(void)
{
	int fd = mkstemp(kernel);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	RUN(test_matrix);
	RUN(test_command_lines);
	RUN(test_bad_options);
	RUN(test_result_line);
	RUN(test_vs_qemu_and_target);
	unlink(kernel);
	return check_summary();
}
