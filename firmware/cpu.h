/* What a vCPU knows about itself while it runs a workload. */
#ifndef FW_CPU_H
#define FW_CPU_H

#include <stdint.h>

#include "firmware/dt_config.h"
#include "hypercalls/abi.h"

struct fw_cpu {
	uint32_t idx;
	/* Read by the VMM at any time: plain volatile stores, never an exit. */
	volatile struct vmm_shared_page *sp;
	const struct fw_config *cfg;
};

static inline volatile struct vmm_shared_page *fw_shared_page(const struct fw_config *cfg,
							      uint32_t vcpu)
{
	return (volatile struct vmm_shared_page *)(uintptr_t)(cfg->shared_pages +
							      4096ull * vcpu);
}

#endif
