/*
 * hcbench: what a hypercall costs beyond the exit it rides on. vCPU 0
 * alternates a VERSION hypercall and a bare exit (an 8-byte read of the
 * VMM's null MMIO page, VMM_NULL_MMIO_BASE in the ABI: same kind of exit,
 * no work in the VMM), timing each with the TSC; alternating makes the noisy host's
 * slow periods hit both alike. Medians, because a single host hiccup is
 * worth hundreds of exits. Other vCPUs exit at once.
 *
 * Reports (vCPU 0): "hc_ps", "exit_ps" (median round trip, picoseconds),
 * "hc_mean_ps", "exit_mean_ps", "ops" (calls timed), "elapsed_ns".
 */
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/sort.h"
#include "firmware/tsc.h"
#include "firmware/workload.h"

#define HCB_N 2000

static uint32_t hc_cycles[HCB_N], exit_cycles[HCB_N];

static inline uint64_t bare_exit(void)
{
	uint64_t v;

	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(VMM_NULL_MMIO_BASE) : "memory");
	return v;
}

static uint64_t to_ps(uint64_t cycles, uint64_t tsc_hz)
{
	return fw_muldiv64(cycles, 1000000000000ull, tsc_hz);
}

static uint32_t hcbench_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	uint64_t hc_sum = 0, exit_sum = 0, start = fw_rdtsc();

	if (self->idx != 0)
		return FW_EXIT_OK;
	for (unsigned i = 0; i < HCB_N; i++) {
		uint64_t t0 = fw_rdtsc();
		int64_t v = fw_hc(VMM_HC_VERSION, 0, 0, 0, 0);
		uint64_t t1 = fw_rdtsc();

		if (v != (int64_t)VMM_ABI_VERSION)
			return FW_EXIT_VERIFY;
		if (bare_exit() != 0)
			return FW_EXIT_VERIFY;
		uint64_t t2 = fw_rdtsc();

		hc_cycles[i] = fw_sample_u32(t1 - t0);
		exit_cycles[i] = fw_sample_u32(t2 - t1);
		hc_sum += t1 - t0;
		exit_sum += t2 - t1;
	}
	uint64_t end = fw_rdtsc();

	fw_sort_u32(hc_cycles, HCB_N);
	fw_sort_u32(exit_cycles, HCB_N);
	fw_report("hc_ps", to_ps(hc_cycles[HCB_N / 2], cfg->tsc_hz));
	fw_report("exit_ps", to_ps(exit_cycles[HCB_N / 2], cfg->tsc_hz));
	fw_report("hc_mean_ps", to_ps(hc_sum / HCB_N, cfg->tsc_hz));
	fw_report("exit_mean_ps", to_ps(exit_sum / HCB_N, cfg->tsc_hz));
	fw_report("ops", 2 * HCB_N);
	fw_report("elapsed_ns", fw_muldiv64(end - start, 1000000000ull, cfg->tsc_hz));
	return FW_EXIT_OK;
}

static const struct fw_workload hcbench = {
	.name = "hcbench",
	.run = hcbench_run,
};
FW_WORKLOAD_REGISTER(hcbench);
