/*
 * preempt: how much slot time a forced preemption costs. Every vCPU reads
 * the TSC in a tight loop until the shared deadline and counts as "run"
 * only the steps shorter than 2 us; any longer step is time it did not
 * run (descheduled, or the host itself busy). With more vCPUs than slots,
 * slot time not run by anyone, divided by the number of preemptions the
 * VMM reports, is the cost of one (signal, exit, switch, re-entry).
 * `vmm bench` subtracts the same loss measured without overcommit.
 *
 * Reports per vCPU: "run_ns", "gaps" (steps over 2 us), "ops" (loop
 * iterations), "elapsed_ns".
 */
#include "firmware/bench_window.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/tsc.h"
#include "firmware/workload.h"

static uint32_t preempt_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	const uint64_t gap = cfg->tsc_hz / 500000; /* 2 us */
	uint64_t run = 0, gaps = 0, n = 0, prev, total;
	struct fw_window w;

	fw_window_start(self, &w);
	prev = fw_rdtsc();
	while (prev < w.deadline_tsc) {
		uint64_t now = fw_rdtsc();

		if (now - prev < gap)
			run += now - prev;
		else
			gaps++;
		prev = now;
		n++;
	}
	fw_report("run_ns", fw_muldiv64(run, 1000000000ull, cfg->tsc_hz));
	fw_report("gaps", gaps);
	fw_report("ops", n);
	fw_report("elapsed_ns", fw_muldiv64(prev - w.start_tsc, 1000000000ull, cfg->tsc_hz));
	fw_window_finish(self, n, &total);
	return FW_EXIT_OK;
}

static const struct fw_workload preempt = {
	.name = "preempt",
	.run = preempt_run,
};
FW_WORKLOAD_REGISTER(preempt);
