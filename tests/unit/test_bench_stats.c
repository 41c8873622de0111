/* The bench's arithmetic: medians, spread, efficiency, failed cells, and
 * the reader of the child's JSON report. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "tests/unit/check.h"
#include "vmm/bench/bench.h"

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
	CHECK(!cells[1].failed);
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
	RUN(test_order);
	RUN(test_json);
	return check_summary();
}
