/*
 * The timed window every benchmark workload runs in: all vCPUs start
 * together, share one deadline, and the last one to finish learns it is
 * last (everyone else is done, so it may read shared results).
 */
#ifndef FW_BENCH_WINDOW_H
#define FW_BENCH_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "firmware/cpu.h"

struct fw_window {
	uint64_t start_tsc, deadline_tsc;
};

/* Blocks (spinning, no exits) until every vCPU has arrived. */
void fw_window_start(const struct fw_cpu *self, struct fw_window *w);
/* Adds ops to the total; true on the last vCPU, with *total_ops set. */
bool fw_window_finish(const struct fw_cpu *self, uint64_t ops, uint64_t *total_ops);

#endif
