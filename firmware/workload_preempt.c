/*
 * preempt: how much slot time a forced preemption costs. Every vCPU reads
 * the TSC in a tight loop until the shared deadline; the window's run
 * meter (run_meter.h, bench_window.h) counts as "run" only the steps
 * shorter than 2 us; any longer step is time it did not run (descheduled,
 * or the host itself busy). With more vCPUs than slots, slot time not run
 * by anyone, divided by the number of preemptions the VMM reports, is the
 * cost of one (signal, exit, switch, re-entry). `vmm bench` subtracts the
 * same loss measured without overcommit.
 *
 * Reports per vCPU: "ops" (loop iterations), "elapsed_ns", "run_ns",
 * "gaps" (steps of 2 us or more), "gap_ns".
 */
#include "firmware/bench_window.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/workload.h"

static uint32_t preempt_run(struct fw_cpu *self)
{
	uint64_t n = 0, total;
	struct fw_window w;

	fw_window_start(self, &w);
	while (fw_run_tick(&self->run) < w.deadline_tsc)
		n++;
	fw_window_stop(self, &w);
	fw_report("ops", n);
	fw_window_report(self, &w);
	fw_window_finish(self, n, &total);
	return FW_EXIT_OK;
}

static const struct fw_workload preempt = {
	.name = "preempt",
	.run = preempt_run,
};
FW_WORKLOAD_REGISTER(preempt);
