#include "vmm/boot/fdt_build.h"

#include <libfdt.h>
#include <stdio.h>

#include "hypercalls/abi.h"

/* libfdt's sequential-write calls all return <0 on error; stop at the first. */
#define TRY(call)                \
	do {                     \
		int r_ = (call); \
		if (r_ < 0)      \
			return r_; \
	} while (0)

static int prop_reg(void *fdt, uint64_t base, uint64_t size)
{
	fdt64_t reg[2] = { cpu_to_fdt64(base), cpu_to_fdt64(size) };
	return fdt_property(fdt, "reg", reg, sizeof(reg));
}

static int build_cpus(void *fdt, unsigned ncpus)
{
	TRY(fdt_begin_node(fdt, "cpus"));
	TRY(fdt_property_u32(fdt, "#address-cells", 1));
	TRY(fdt_property_u32(fdt, "#size-cells", 0));
	for (unsigned i = 0; i < ncpus; i++) {
		char name[24];
		/* a unit address is hex, as reg is (ABI.md 3; the devicetree spec) */
		snprintf(name, sizeof(name), "cpu@%x", i);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "device_type", "cpu"));
		TRY(fdt_property_u32(fdt, "reg", i));
		TRY(fdt_end_node(fdt));
	}
	return fdt_end_node(fdt);
}

static int build_vmm(void *fdt, const struct fdt_guest_info *info)
{
	const struct vm_config *cfg = info->cfg;
	TRY(fdt_begin_node(fdt, "vmm"));
	TRY(fdt_property_string(fdt, "compatible", "vmm,hypercall-v2"));
	TRY(fdt_property_u32(fdt, "abi-version", VMM_ABI_VERSION));
	TRY(fdt_property_u32(fdt, "num-cpus", cfg->ncpus));
	TRY(fdt_property_u64(fdt, "tsc-hz", info->tsc_hz));
	TRY(fdt_property_u64(fdt, "hypercall-base", VMM_HC_BASE));
	TRY(fdt_property_u64(fdt, "shared-pages", info->layout->shared_gpa));
	TRY(fdt_property_u32(fdt, "vm-id", info->vm_id));
	TRY(fdt_property_u32(fdt, "pv-features", info->pv_features));

	TRY(fdt_begin_node(fdt, "workload"));
	TRY(fdt_property_string(fdt, "name", cfg->workload));
	TRY(fdt_property_string(fdt, "lock", cfg->lock));
	TRY(fdt_property_u32(fdt, "duration-ms", cfg->duration_ms));
	TRY(fdt_property_u32(fdt, "cs-cycles", cfg->cs_cycles));
	TRY(fdt_property_u32(fdt, "work-cycles", cfg->work_cycles));
	TRY(fdt_property_u32(fdt, "spin-threshold", cfg->spin_threshold));
	TRY(fdt_property_u32(fdt, "pv-shootdown", cfg->pv_shootdown));
	TRY(fdt_end_node(fdt));
	return fdt_end_node(fdt);
}

uint32_t fdt_pv_features(const struct vm_config *cfg)
{
	uint32_t f = VMM_PV_YIELD;
	bool cosched = cfg->sched_mode == SCHED_MODE_VMM;
	if (cfg->pv_spinlock)
		f |= VMM_PV_WAIT_KICK;
	if (cfg->spin_detect & SPIN_DETECT_YIELD)
		f |= VMM_PV_SPIN_EXIT;
	/* Hints, safe points and the preempted flag need someone to read and write them. */
	if (cosched && (cfg->spin_detect & SPIN_DETECT_HINT))
		f |= VMM_PV_SPIN_HINT;
	if (cosched && cfg->safe_point)
		f |= VMM_PV_SAFE_POINT;
	if (cosched && cfg->safe_point && cfg->guest_slice)
		f |= VMM_PV_GUEST_SLICE;
	if (cosched)
		f |= VMM_PV_PREEMPTED;
	return f;
}

int fdt_build(void *buf, size_t size, const struct fdt_guest_info *info)
{
	const struct guest_layout *l = info->layout;
	void *fdt = buf;
	char name[40];

	TRY(fdt_create(fdt, (int)size));
	TRY(fdt_finish_reservemap(fdt));
	TRY(fdt_begin_node(fdt, ""));
	TRY(fdt_property_string(fdt, "compatible", "vmm,guest"));
	TRY(fdt_property_u32(fdt, "#address-cells", 2));
	TRY(fdt_property_u32(fdt, "#size-cells", 2));

	snprintf(name, sizeof(name), "memory@0");
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "device_type", "memory"));
	TRY(prop_reg(fdt, 0, l->mem_size));
	TRY(fdt_end_node(fdt));

	/* The VMM's page tables, GDT, this tree and the shared pages. */
	TRY(fdt_begin_node(fdt, "reserved-memory"));
	TRY(fdt_property_u32(fdt, "#address-cells", 2));
	TRY(fdt_property_u32(fdt, "#size-cells", 2));
	TRY(fdt_property(fdt, "ranges", NULL, 0));
	snprintf(name, sizeof(name), "vmm@%llx", (unsigned long long)l->reserved_base);
	TRY(fdt_begin_node(fdt, name));
	TRY(prop_reg(fdt, l->reserved_base, l->mem_size - l->reserved_base));
	TRY(fdt_property(fdt, "no-map", NULL, 0));
	TRY(fdt_end_node(fdt));
	TRY(fdt_end_node(fdt));

	TRY(fdt_begin_node(fdt, "chosen"));
	TRY(fdt_property_string(fdt, "stdout-path", "/vmm"));
	TRY(fdt_end_node(fdt));

	TRY(build_cpus(fdt, info->cfg->ncpus));
	TRY(build_vmm(fdt, info));
	TRY(fdt_end_node(fdt));
	return fdt_finish(fdt);
}
