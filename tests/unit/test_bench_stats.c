/* The bench's arithmetic: medians, spread, efficiency, failed cells, and
 * the reader of the child's JSON report. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "tests/unit/bench_matrix_test.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/stats/stats.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_median(void)
{
	double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 }, one[] = { 7 };
	CHECK(NEAR(bench_median(odd, 3), 3));
	CHECK(NEAR(bench_median(even, 4), 2.5));
	CHECK(NEAR(bench_median(one, 1), 7));
	CHECK(isnan(bench_median(odd, 0)));
	/* The input is left as it was (raw runs stay in run order). */
	CHECK(odd[0] == 5 && odd[1] == 1 && odd[2] == 3);
}

static void test_spread(void)
{
	double v[] = { 90, 110, 100 };
	CHECK(NEAR(bench_min(v, 3), 90));
	CHECK(NEAR(bench_max(v, 3), 110));
	CHECK(NEAR(bench_spread_pct(90, 110, 100), 20));
	CHECK(isnan(bench_spread_pct(1, 2, 0)));
	CHECK(isnan(bench_ratio(1, 0)));
	CHECK(NEAR(bench_ratio(1, 4), 0.25));
}

static void test_cells(void)
{
	struct bench_cell cells[2];
	memset(cells, 0, sizeof(cells));
	struct bench_matrix m = { 2, cells };
	double ref[] = { 100, 300, 200 }, over[] = { 50, 40, 60 };
	for (int i = 0; i < 3; i++) {
		cells[0].runs[i] = (struct bench_run){ .ok = true, .ops_per_s = ref[i] };
		cells[1].runs[i] = (struct bench_run){ .ok = true, .ops_per_s = over[i] };
	}
	cells[0].nruns = cells[1].nruns = 3;
	cells[0].ref = cells[1].ref = 0;
	cells[0].native_ref = cells[1].native_ref = -1;
	/* The denominator is the pool (matrix/matrix.c links it): here cell 0 alone. */
	int pool0[2] = { 0, -1 }, pool1[2] = { 0, -1 };
	cells[0].pool = pool0, cells[0].used = pool0 + 1, cells[0].npool = 1;
	cells[1].pool = pool1, cells[1].used = pool1 + 1, cells[1].npool = 1;
	CHECK(!bench_stats_matrix(&m));
	CHECK(NEAR(cells[0].median, 200));
	CHECK(NEAR(cells[1].median, 50));
	CHECK(NEAR(cells[1].eff, 0.25));
	CHECK(NEAR(cells[0].eff, 1));
	CHECK(NEAR(cells[1].spread_pct, 40));
	CHECK(isnan(cells[1].of_native));

	/* One failed repetition fails the cell, and its dependants' efficiency. */
	cells[0].runs[1] = (struct bench_run){ .ok = false, .exit_code = 3, .ops_per_s = NAN };
	CHECK(bench_stats_matrix(&m));
	CHECK(cells[0].failed);
	CHECK_EQ(cells[0].fail_exit, 3);
	CHECK_EQ(cells[0].nok, 2);
	CHECK(NEAR(cells[0].median, 150));
	CHECK(isnan(cells[1].eff));
	CHECK_EQ(cells[1].nused, 0); /* a failed 1x is no denominator */
	CHECK(!cells[1].failed);
}

static void test_jain(void)
{
	double eq[] = { 5, 5, 5, 5 }, one[] = { 8, 0, 0, 0 }, two[] = { 1, 3 }, zero[] = { 0, 0 };
	double bad[] = { 1, NAN }, neg[] = { 2, -1 };
	CHECK(NEAR(bench_jain(eq, 4), 1));
	CHECK(NEAR(bench_jain(one, 4), 0.25)); /* 1/n: one VM got everything */
	CHECK(NEAR(bench_jain(two, 2), 16.0 / 20)); /* (1+3)^2 / (2 (1+9)) */
	CHECK(isnan(bench_jain(eq, 0)));
	CHECK(isnan(bench_jain(zero, 2)));
	CHECK(isnan(bench_jain(bad, 2)));
	CHECK(isnan(bench_jain(neg, 2)));
}

/* K VMs: per-VM medians over reps, fairness, and the three comparisons. */
static void test_multi_vm(void)
{
	static struct bench_cell cells[4];
	memset(cells, 0, sizeof(cells));
	struct bench_matrix m = { 4, cells };
	/* 0: 1 VM; 1: 2 VMs as a domain; 2: one process; 3: host processes */
	double one[] = { 100, 120, 105 };
	double vm0[] = { 40, 60, 50 }, vm1[] = { 70, 50, 90 };
	double late[] = { 0.5, 3, 1 }, spread[] = { 0.2, 0.1, 4 };
	double dom_ops[3][2];
	for (int c = 0; c < 4; c++) {
		cells[c].kind = BENCH_VM;
		cells[c].vms = c ? 2 : 1;
		cells[c].nruns = 3;
		cells[c].ref = 0;
		cells[c].native_ref = cells[c].process_ref = cells[c].host_procs_ref = -1;
		cells[c].one_vm_ref = c ? 0 : -1;
	}
	cells[1].mode = BENCH_MODE_DOMAIN;
	cells[1].process_ref = 2;
	cells[1].host_procs_ref = 3;
	cells[3].mode = BENCH_MODE_HOST_PROCS;
	for (int i = 0; i < 3; i++) {
		cells[0].runs[i] = (struct bench_run){ .ok = true, .ops_per_s = one[i] };
		dom_ops[i][0] = vm0[i];
		dom_ops[i][1] = vm1[i];
		cells[1].runs[i] = (struct bench_run){ .ok = true, .ops_per_s = vm0[i] + vm1[i],
						       .vm_ops = dom_ops[i], .max_late_ms = late[i],
						       .start_spread_ms = spread[i] };
		cells[2].runs[i] = (struct bench_run){ .ok = true, .ops_per_s = 100 + i };
		cells[3].runs[i] = (struct bench_run){ .ok = true, .ops_per_s = 50 };
	}
	cells[2].runs[0].start_spread_ms = cells[2].runs[0].max_late_ms = NAN;
	CHECK(!bench_stats_matrix(&m));
	CHECK(NEAR(cells[1].median, 110)); /* sums 110, 110, 140 */
	CHECK(cells[1].vm_median != NULL);
	CHECK(NEAR(cells[1].vm_median[0], 50) && NEAR(cells[1].vm_median[1], 70));
	CHECK(NEAR(cells[1].jain, 120.0 * 120 / (2 * (2500 + 4900))));
	CHECK(NEAR(cells[1].max_over_min, 70.0 / 50));
	CHECK(NEAR(cells[1].vs_one_vm, 110.0 / 105));
	CHECK(NEAR(cells[1].vs_process, 110.0 / 101));
	CHECK(NEAR(cells[1].vs_host_procs, 110.0 / 50));
	CHECK(NEAR(cells[1].max_late_ms, 3) && NEAR(cells[1].start_spread_ms, 4));
	CHECK(isnan(cells[2].jain)); /* no per-VM figures: unknown, not fair */
	CHECK(isnan(cells[2].vs_process) && isnan(cells[0].vs_one_vm));
	/* A failed reference leaves the comparison unknown, never a number. */
	cells[3].runs[1].ok = false;
	CHECK(bench_stats_matrix(&m));
	CHECK(isnan(cells[1].vs_host_procs));
	for (int c = 0; c < 4; c++)
		free(cells[c].vm_median);
}

static const struct bench_cell *find_cell(const struct bench_matrix *m, const char *policy,
					  enum bench_mode mode, unsigned vms)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->cells[i].kind == BENCH_VM && !strcmp(m->cells[i].policy, policy) &&
		    m->cells[i].mode == mode && m->cells[i].vms == vms)
			return &m->cells[i];
	return NULL;
}

static void test_matrix_modes(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char err[256];
	char *argv[] = { "bench", "--locks", "tas", "--policies", "host,pv", "--overcommit", "2",
			 "--vms", "2", "--pcpus", "1", "--no-native", NULL };
	bench_opts_defaults(&o);
	CHECK_EQ(bench_parse(12, argv, &o, err, sizeof(err)), 0);
	CHECK_EQ(bench_matrix_build(&o, &m, err, sizeof(err)), 0);
	const struct bench_cell *dom = find_cell(&m, "pv", BENCH_MODE_DOMAIN, 2);
	const struct bench_cell *proc = find_cell(&m, "pv", BENCH_MODE_PROCESS, 2);
	const struct bench_cell *hp = find_cell(&m, "host", BENCH_MODE_HOST_PROCS, 2);
	CHECK(dom && proc && hp);
	CHECK(!find_cell(&m, "host", BENCH_MODE_DOMAIN, 2) && !find_cell(&m, "pv", BENCH_MODE_HOST_PROCS, 2));
	if (dom && proc && hp) {
		CHECK_EQ(dom->process_ref, (int)proc->id);
		CHECK_EQ(dom->host_procs_ref, (int)hp->id);
		/* 1 VM of the same 2 vCPUs on the same slot, added though --vms has no 1 */
		const struct bench_cell *one = &m.cells[dom->one_vm_ref];
		CHECK(one->vms == 1 && one->vcpus == dom->vcpus && !strcmp(one->policy, "pv") &&
		      one->mode == BENCH_MODE_PROCESS && one->auto_added);
		CHECK(hp->one_vm_ref >= 0 && m.cells[hp->one_vm_ref].vms == 1 &&
		      !strcmp(m.cells[hp->one_vm_ref].policy, "host"));
		CHECK_EQ(proc->process_ref, -1);
	}
	bench_matrix_free(&m);

	char *only[] = { "bench", "--policies", "pv", "--vms", "2", "--vm-mode", "domain", "--no-native", NULL };
	bench_opts_defaults(&o);
	CHECK_EQ(bench_parse(8, only, &o, err, sizeof(err)), 0);
	CHECK_EQ(bench_matrix_build(&o, &m, err, sizeof(err)), 0);
	CHECK(find_cell(&m, "pv", BENCH_MODE_DOMAIN, 2) && !find_cell(&m, "pv", BENCH_MODE_PROCESS, 2));
	bench_matrix_free(&m);

	char *bad[] = { "bench", "--vm-mode", "domain,threads", NULL };
	bench_opts_defaults(&o);
	CHECK(bench_parse(3, bad, &o, err, sizeof(err)) < 0 && strstr(err, "threads"));
}

static unsigned count_cells(const struct bench_matrix *m, const char *policy, bool gsoff)
{
	unsigned n = 0;
	for (unsigned i = 0; i < m->n; i++)
		n += !strcmp(m->cells[i].policy, policy) && m->cells[i].guest_slice_off == gsoff;
	return n;
}

/* gang keeps its own slice ends: with --guest-slice on,off it gets only on
 * cells; the other policies both; asked for off alone, gang runs it. */
static void test_gang_takes_no_gsoff(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	char *argv[] = { "bench", "--locks", "tas", "--policies", "host,none,gang", "--overcommit", "1,2",
			 "--pcpus", "1", "--guest-slice", "on,off", "--no-native", NULL };
	matrix(&o, &m, 12, argv);
	CHECK(count_cells(&m, "host", false) == 2 && count_cells(&m, "host", true) == 0); /* takes neither */
	CHECK(count_cells(&m, "none", false) == 2 && count_cells(&m, "none", true) == 2);
	CHECK(count_cells(&m, "gang", false) == 2 && count_cells(&m, "gang", true) == 0);
	bench_matrix_free(&m);
	/* asked for off alone, gang runs it */
	char *only_off[] = { "bench", "--locks", "tas", "--policies", "gang", "--overcommit", "2",
			     "--pcpus", "1", "--guest-slice", "off", "--no-native", NULL };
	matrix(&o, &m, 12, only_off);
	CHECK(count_cells(&m, "gang", true) > 0);
	bench_matrix_free(&m);
}

static void test_order(void)
{
	unsigned order[50], seen[50];
	for (unsigned rep = 0; rep < 4; rep++) {
		bench_run_order(50, rep, order);
		memset(seen, 0, sizeof(seen));
		for (unsigned i = 0; i < 50; i++)
			seen[order[i]]++;
		for (unsigned i = 0; i < 50; i++)
			CHECK_EQ(seen[i], 1);
	}
}

static void test_json(void)
{
	struct bench_json j;
	const char *doc = "{\"a\": 1.5, \"b\": {\"c\": [10, {\"d\": true}], \"s\": \"x,y}\"},"
			  " \"n\": null, \"e\": -2e3}";
	double v;
	bool b;
	CHECK_EQ(bench_json_parse(doc, &j), 0);
	CHECK(bench_json_num(&j, "a", &v) == 0 && NEAR(v, 1.5));
	CHECK(bench_json_num(&j, "b.c.0", &v) == 0 && NEAR(v, 10));
	CHECK(bench_json_bool(&j, "b.c.1.d", &b) == 0 && b);
	CHECK(bench_json_num(&j, "e", &v) == 0 && NEAR(v, -2000));
	CHECK_EQ(bench_json_num(&j, "n", &v), -EINVAL);
	CHECK_EQ(bench_json_num(&j, "missing", &v), -ENOENT);
	CHECK_EQ(bench_json_num(&j, "b.s", &v), -EINVAL);
	bench_json_free(&j);
	CHECK(bench_json_parse("{\"a\": 1", &j) < 0);
	CHECK(bench_json_parse("{\"a\": 1} x", &j) < 0);
}

int main(void)
{
	RUN(test_median);
	RUN(test_spread);
	RUN(test_cells);
	RUN(test_jain);
	RUN(test_multi_vm);
	RUN(test_matrix_modes);
	RUN(test_gang_takes_no_gsoff);
	RUN(test_order);
	RUN(test_json);
	return check_summary();
}
