/*
 * The timed window every benchmark workload runs in: all vCPUs start
 * together, share one deadline, and the last one to finish learns it is
 * last (everyone else is done, so it may read shared results).
 *
 * The window also meters each vCPU's own running time (run_meter.h): start
 * resets self->run, stop freezes it, report hands out "elapsed_ns",
 * "run_ns" (window less gaps), "gaps" and "gap_ns".
 */
#ifndef FW_BENCH_WINDOW_H
#define FW_BENCH_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "firmware/cpu.h"

struct fw_window {
	uint64_t start_tsc, deadline_tsc;
	/* Set by fw_window_stop: this vCPU's end and what its meter saw. */
	uint64_t end_tsc, run_cycles, gaps, gap_cycles;
};

/* Blocks (spinning, no exits) until every vCPU has arrived; starts the
 * run meter at the window's start. */
void fw_window_start(struct fw_cpu *self, struct fw_window *w);
/* This vCPU's window ends now (no exit): returns the TSC. */
uint64_t fw_window_stop(struct fw_cpu *self, struct fw_window *w);
/* Reports the stopped window: "elapsed_ns", "run_ns", "gaps", "gap_ns". */
void fw_window_report(const struct fw_cpu *self, const struct fw_window *w);
/* Adds ops to the total; true on the last vCPU, with *total_ops set. */
bool fw_window_finish(const struct fw_cpu *self, uint64_t ops, uint64_t *total_ops);

#endif
