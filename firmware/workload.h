/*
 * A workload is one file that defines a struct fw_workload and registers
 * it with FW_WORKLOAD_REGISTER; main.c runs the one /vmm/workload names.
 */
#ifndef FW_WORKLOAD_H
#define FW_WORKLOAD_H

#include <stdint.h>

#include "firmware/cpu.h"

struct fw_workload {
	const char *name;
	/* Runs on every vCPU; returns this vCPU's exit status (FW_EXIT_*). */
	uint32_t (*run)(struct fw_cpu *self);
};

#define FW_WORKLOAD_REGISTER(w)                                                     \
	static const struct fw_workload *const fw_workload_reg_##w                  \
		__attribute__((used, section(".fw_workloads"), aligned(8))) = &(w)

#endif
