/*
 * A vCPU's own running time, as its TSC sees it. The workloads read the
 * TSC at points they pass anyway (every spin pause, every step of busy
 * work, every loop iteration) through fw_run_tick; a step between two
 * reads longer than the meter's gap is time this vCPU did not run: taken
 * off its slot, the host busy, asleep in a WAIT, or a long exit. Running
 * time is then the window minus the gaps, which lets the bench tell slot
 * time lost from operations that got slower.
 *
 * No exit and no shared store: the state lives in struct fw_cpu, on the
 * vCPU's own stack. bench_window.c starts and stops it with the window.
 */
#ifndef FW_RUN_METER_H
#define FW_RUN_METER_H

#include <stdint.h>

#include "firmware/tsc.h"

/* The preempt workload's threshold: far above any step of the loops (a
 * pause, a TSC read, an uncontended lock), far below a slot switch. */
#define FW_RUN_GAP_NS 2000

struct fw_run_meter {
	uint64_t prev;       /* the last TSC read */
	uint64_t gap_min;    /* cycles: a step this long or longer is a gap */
	uint64_t gaps;       /* steps counted as not running */
	uint64_t gap_cycles; /* their length in all */
};

/* Accounts the step from the last read to now; the pure half of the tick. */
static inline uint64_t fw_run_step(struct fw_run_meter *m, uint64_t now)
{
	uint64_t step = now - m->prev;

	m->prev = now;
	if (__builtin_expect(step >= m->gap_min, 0)) {
		m->gaps++;
		/* A TSC that went back (a migration on a host without a stable
		 * TSC) is a gap of unknown length: 0, not 2^64 - something. */
		m->gap_cycles += (int64_t)step < 0 ? 0 : step;
	}
	return now;
}

/* One TSC read, accounted; returns it so loops test their deadline with it. */
static inline uint64_t fw_run_tick(struct fw_run_meter *m)
{
	return fw_run_step(m, fw_rdtsc());
}

/* Simulated work: burns `cycles` TSC cycles, accounting every read it
 * makes anyway. Deliberately no PAUSE, so a host that watches pause loops
 * never mistakes work for spinning. */
static inline void fw_run_busy(struct fw_run_meter *m, uint64_t cycles)
{
	uint64_t t0;

	if (!cycles)
		return;
	t0 = fw_run_tick(m);
	while (fw_run_tick(m) - t0 < cycles)
		;
}

/* Starts counting at `start` (a TSC value in the past is fine: the step
 * up to the next read is accounted like any other). */
static inline void fw_run_start(struct fw_run_meter *m, uint64_t start, uint64_t tsc_hz)
{
	m->prev = start;
	m->gap_min = fw_muldiv64(FW_RUN_GAP_NS, tsc_hz, 1000000000ull);
	if (!m->gap_min)
		m->gap_min = 1;
	m->gaps = 0;
	m->gap_cycles = 0;
}

/* Cycles run from start to the last read: the window less its gaps. */
static inline uint64_t fw_run_cycles(const struct fw_run_meter *m, uint64_t start)
{
	uint64_t window = m->prev - start;

	if (m->prev < start || m->gap_cycles >= window)
		return 0;
	return window - m->gap_cycles;
}

#endif
