/* What a vCPU knows about itself while it runs a workload. */
#ifndef FW_CPU_H
#define FW_CPU_H

#include <stdint.h>

#include "firmware/dt_config.h"
#include "firmware/run_meter.h"
#include "hypercalls/abi.h"

/* Hypercalls the PV paths made; only slow paths bump these. */
struct fw_pv_stats {
	uint64_t spins, waits, kicks, yields;
};

struct fw_cpu {
	uint32_t idx;
	/* Copies of configuration the spin loops read, kept beside idx so a
	 * slow path never chases cfg. */
	uint32_t pv;             /* /vmm/pv-features: VMM_PV_* */
	uint32_t spin_threshold; /* pauses without progress before a slow step; >= 1 */
	/* Read by the VMM at any time: plain volatile stores, never an exit. */
	volatile struct vmm_shared_page *sp;
	const struct fw_config *cfg;
	struct fw_pv_stats stats;
	/* Written at every work step and spin pause: here, on the vCPU's own
	 * stack, it shares no cache line with another vCPU. */
	struct fw_run_meter run;
	/* Guest-timed slices (VMM_PV_GUEST_SLICE, lock.h): the slice_seq last
	 * seen and when that slice ends by our TSC; UINT64_MAX: not timing. */
	uint32_t slice_seq;
	uint64_t slice_end;
};

static inline volatile struct vmm_shared_page *fw_shared_page(const struct fw_config *cfg,
							      uint32_t vcpu)
{
	return (volatile struct vmm_shared_page *)(uintptr_t)(cfg->shared_pages +
							      4096ull * vcpu);
}

#endif
