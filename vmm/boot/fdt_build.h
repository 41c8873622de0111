/*
 * The device tree the guest reads its configuration from (libfdt): vCPU
 * count, memory, TSC frequency, hypercall ABI and the workload. The node and
 * property names are part of the guest ABI (hypercalls/ABI.md).
 */
#ifndef VMM_FDT_BUILD_H
#define VMM_FDT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/config.h"
#include "vmm/boot/layout.h"

struct fdt_guest_info {
	const struct vm_config *cfg;
	const struct guest_layout *layout;
	uint64_t tsc_hz;
	uint32_t vm_id;
	uint32_t pv_features; /* VMM_PV_* */
};

/* What this configuration offers the guest (ABI.md 4.2). */
uint32_t fdt_pv_features(const struct vm_config *cfg);

/* Writes the tree into buf; returns 0 or a negative libfdt error. */
int fdt_build(void *buf, size_t size, const struct fdt_guest_info *info);

#endif
