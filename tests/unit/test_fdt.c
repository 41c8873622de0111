/* The device tree the VMM writes reads back, with libfdt, as ABI.md says. */
#include <libfdt.h>
#include <string.h>

#include "check.h"
#include "hypercalls/abi.h"
#include "vmm/boot/fdt_build.h"

static uint64_t get_u64(const void *fdt, int node, const char *name)
{
	int len;
	const fdt64_t *p = fdt_getprop(fdt, node, name, &len);
	/* properties are only 4-aligned: fdt64_ld, not *p (UBSan: misaligned load) */
	return p && len == 8 ? fdt64_ld(p) : ~0ull;
}

static uint32_t get_u32(const void *fdt, int node, const char *name)
{
	int len;
	const fdt32_t *p = fdt_getprop(fdt, node, name, &len);
	return p && len == 4 ? fdt32_to_cpu(*p) : ~0u;
}

static const char *get_str(const void *fdt, int node, const char *name)
{
	const char *s = fdt_getprop(fdt, node, name, NULL);
	return s ? s : "";
}

int main(void)
{
	static char buf[LAYOUT_FDT_MAX];
	struct vm_config cfg;
	struct guest_layout l;
	vm_config_defaults(&cfg);
	cfg.ncpus = 6;
	cfg.lock = "tas";
	cfg.cs_cycles = 123;
	cfg.work_cycles = 4567;
	cfg.duration_ms = 1500;
	CHECK_EQ(layout_compute(cfg.mem_bytes, cfg.ncpus, &l), 0);
	struct fdt_guest_info info = { &cfg, &l, 2100000000ull, 3, fdt_pv_features(&cfg) };
	CHECK_EQ(fdt_build(buf, sizeof(buf), &info), 0);
	CHECK_EQ(fdt_check_header(buf), 0);
	CHECK(fdt_totalsize(buf) <= sizeof(buf));

	int vmm = fdt_path_offset(buf, "/vmm");
	CHECK(vmm >= 0);
	CHECK(!strcmp(get_str(buf, vmm, "compatible"), "vmm,hypercall-v2"));
	CHECK_EQ(get_u32(buf, vmm, "abi-version"), VMM_ABI_VERSION);
	CHECK_EQ(get_u32(buf, vmm, "num-cpus"), 6);
	CHECK_EQ(get_u64(buf, vmm, "tsc-hz"), 2100000000ull);
	CHECK_EQ(get_u64(buf, vmm, "hypercall-base"), VMM_HC_BASE);
	CHECK_EQ(get_u64(buf, vmm, "shared-pages"), l.shared_gpa);
	CHECK_EQ(get_u32(buf, vmm, "vm-id"), 3);
	/* defaults: co-scheduler on, PV spinlocks, spin exits, safe points */
	CHECK_EQ(get_u32(buf, vmm, "pv-features"), VMM_PV_WAIT_KICK | VMM_PV_YIELD | VMM_PV_SPIN_EXIT |
						    VMM_PV_SAFE_POINT | VMM_PV_PREEMPTED | VMM_PV_GUEST_SLICE);
	/* guest-timed slices: only with safe points, and --guest-slice off drops them */
	struct vm_config gs = cfg;
	gs.guest_slice = false;
	CHECK_EQ(fdt_pv_features(&gs), VMM_PV_WAIT_KICK | VMM_PV_YIELD | VMM_PV_SPIN_EXIT | VMM_PV_SAFE_POINT |
					       VMM_PV_PREEMPTED);
	gs.guest_slice = true;
	gs.safe_point = false;
	CHECK_EQ(fdt_pv_features(&gs) & VMM_PV_GUEST_SLICE, 0);
	struct vm_config host = cfg;
	host.sched_mode = SCHED_MODE_HOST;
	host.pv_spinlock = false;
	host.spin_detect = SPIN_DETECT_YIELD | SPIN_DETECT_HINT;
	/* the host scheduler reads no hints and keeps no preempted flags */
	CHECK_EQ(fdt_pv_features(&host), VMM_PV_YIELD | VMM_PV_SPIN_EXIT);

	int w = fdt_path_offset(buf, "/vmm/workload");
	CHECK(w >= 0);
	CHECK(!strcmp(get_str(buf, w, "name"), "lockbench"));
	CHECK(!strcmp(get_str(buf, w, "lock"), "tas"));
	CHECK_EQ(get_u32(buf, w, "duration-ms"), 1500);
	CHECK_EQ(get_u32(buf, w, "cs-cycles"), 123);
	CHECK_EQ(get_u32(buf, w, "work-cycles"), 4567);
	CHECK_EQ(get_u32(buf, w, "spin-threshold"), cfg.spin_threshold);

	int mem = fdt_path_offset(buf, "/memory@0");
	int len;
	const fdt64_t *reg = fdt_getprop(buf, mem, "reg", &len);
	CHECK(reg && len == 16);
	if (reg && len == 16) {
		CHECK_EQ(fdt64_to_cpu(reg[0]), 0);
		CHECK_EQ(fdt64_to_cpu(reg[1]), cfg.mem_bytes);
	}

	/* one cpu node per vCPU, and the reserved region covers the VMM's pages */
	int ncpu = 0, cpus = fdt_path_offset(buf, "/cpus"), n;
	fdt_for_each_subnode(n, buf, cpus)
		CHECK_EQ(get_u32(buf, n, "reg"), ncpu++);
	CHECK_EQ(ncpu, 6);
	int rsv = fdt_path_offset(buf, "/reserved-memory");
	int child = fdt_first_subnode(buf, rsv);
	reg = fdt_getprop(buf, child, "reg", &len);
	CHECK(reg && len == 16);
	if (reg && len == 16) {
		CHECK_EQ(fdt64_to_cpu(reg[0]), l.reserved_base);
		CHECK(fdt64_to_cpu(reg[0]) + fdt64_to_cpu(reg[1]) == cfg.mem_bytes);
		CHECK(l.fdt_gpa >= l.reserved_base && l.shared_gpa + 6 * 4096 <= cfg.mem_bytes);
	}

	/* unit addresses are hex (ABI.md 3): vCPU 11 is cpu@b; /reserved-memory
	 * has 2 address and 2 size cells */
	cfg.ncpus = 12;
	CHECK_EQ(layout_compute(cfg.mem_bytes, cfg.ncpus, &l), 0);
	CHECK_EQ(fdt_build(buf, sizeof(buf), &info), 0);
	int c11 = fdt_path_offset(buf, "/cpus/cpu@b");
	CHECK(c11 >= 0 && get_u32(buf, c11, "reg") == 11);
	CHECK(fdt_path_offset(buf, "/cpus/cpu@11") < 0);
	rsv = fdt_path_offset(buf, "/reserved-memory");
	CHECK(get_u32(buf, rsv, "#address-cells") == 2 && get_u32(buf, rsv, "#size-cells") == 2);

	/* a buffer too small is an error, not an overflow */
	static char tiny[256];
	CHECK(fdt_build(tiny, sizeof(tiny), &info) < 0);

	/* layout refuses memory that cannot hold the VMM's own pages */
	CHECK(layout_compute(2ull << 20, 1, &l) < 0);
	CHECK(layout_compute(4ull << 30, 1, &l) < 0);
	CHECK_EQ(layout_compute(64ull << 20, 255, &l), 0);
	CHECK(l.shared_gpa + 255 * 4096 <= (64ull << 20));
	return check_summary();
}
