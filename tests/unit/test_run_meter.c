/*
 * The guest's run meter (firmware/run_meter.h), on the host: the header is
 * freestanding inline code, so the accounting is checked here with made-up
 * TSC values, and the busy loop with the real TSC.
 */
#include <stdint.h>

#include "firmware/run_meter.h"
#include "tests/unit/check.h"

/* At 1 GHz one cycle is one ns: the gap is 2000 cycles. */
#define HZ 1000000000ull

static void test_gap_threshold(void)
{
	struct fw_run_meter m;

	fw_run_start(&m, 1000, HZ);
	CHECK_EQ(m.gap_min, 2000);
	fw_run_step(&m, 1000 + 1999); /* just short of a gap: running */
	CHECK_EQ(m.gaps, 0);
	fw_run_step(&m, 2999 + 2000); /* exactly the threshold: not running */
	CHECK_EQ(m.gaps, 1);
	CHECK_EQ(m.gap_cycles, 2000);
	CHECK_EQ(fw_run_cycles(&m, 1000), 1999);
	/* the threshold scales with the TSC, and is never 0 */
	fw_run_start(&m, 0, 3 * HZ);
	CHECK_EQ(m.gap_min, 6000);
	fw_run_start(&m, 0, 100);
	CHECK_EQ(m.gap_min, 1);
}

/* Short steps are running time, long ones are gaps: the two add up to the
 * window, whatever the mix. */
static void test_window_split(void)
{
	struct fw_run_meter m;
	uint64_t t = 5000, start = 5000, ran = 0, lost = 0;

	fw_run_start(&m, start, HZ);
	for (int i = 0; i < 1000; i++) {
		uint64_t step = 100 + (uint64_t)(i % 7) * 100; /* running: at most 700 */

		if (i % 100 == 99) {
			step += 1000000; /* 1 ms off the slot */
			lost += step;
		} else {
			ran += step;
		}
		t += step;
		CHECK_EQ(fw_run_step(&m, t), t);
	}
	CHECK_EQ(m.gaps, 10);
	CHECK_EQ(m.gap_cycles, lost);
	CHECK_EQ(fw_run_cycles(&m, start), ran);
	CHECK_EQ(ran + lost, t - start);
	CHECK(lost > 10 * 1000000);
}

/* A gap before the first read after the start (taken off the slot while
 * waiting for go) is the window's too; a TSC that went backwards cannot
 * make running time negative. */
static void test_edges(void)
{
	struct fw_run_meter m;

	fw_run_start(&m, 100, HZ);
	fw_run_step(&m, 100 + 50000);
	fw_run_step(&m, 100 + 50100);
	CHECK_EQ(m.gaps, 1);
	CHECK_EQ(fw_run_cycles(&m, 100), 100);
	fw_run_step(&m, 10); /* backwards: a huge unsigned step */
	CHECK_EQ(m.gaps, 2);
	CHECK_EQ(m.gap_cycles, 50000);
	CHECK_EQ(fw_run_cycles(&m, 100), 0);
	fw_run_step(&m, 10 + 100000); /* forwards again, past a gap */
	CHECK_EQ(m.gap_cycles, 150000);
	CHECK_EQ(fw_run_cycles(&m, 100), 0); /* never more lost than the window */
}

/* The busy loop with the real TSC: it lasts at least what it was asked,
 * and every cycle of it is either running or a gap (this host may well
 * deschedule us; the split must still add up). */
static void test_busy_real_tsc(void)
{
	struct fw_run_meter m;
	uint64_t t0 = fw_rdtsc();

	fw_run_start(&m, t0, HZ);
	fw_run_busy(&m, 2000000);
	CHECK(m.prev - t0 >= 2000000);
	CHECK_EQ(fw_run_cycles(&m, t0) + m.gap_cycles, m.prev - t0);
	uint64_t before = m.prev;
	fw_run_busy(&m, 0); /* no work: not even a read */
	CHECK_EQ(m.prev, before);
}

int main(void)
{
	RUN(test_gap_threshold);
	RUN(test_window_split);
	RUN(test_edges);
	RUN(test_busy_real_tsc);
	return check_summary();
}
