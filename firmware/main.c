/*
 * CPL3 entry of every vCPU (entry.S): read the device tree, run the
 * workload it names, exit with the workload's status.
 */
#include <string.h>

#include "firmware/console.h"
#include "firmware/dt_config.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/pv.h"
#include "firmware/workload.h"

extern const struct fw_workload *const __fw_workloads_start[], *const __fw_workloads_end[];

static const struct fw_workload *find_workload(const char *name)
{
	for (const struct fw_workload *const *p = __fw_workloads_start; p < __fw_workloads_end; p++)
		if (!strcmp((*p)->name, name))
			return *p;
	return NULL;
}

static void list_workloads(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (const struct fw_workload *const *p = __fw_workloads_start; p < __fw_workloads_end; p++)
		n += fw_snprintf(buf + n, len - n, "%s%s", n ? ", " : "", (*p)->name);
}

__attribute__((noreturn)) void fw_main(const void *fdt, uint64_t vcpu);
void fw_main(const void *fdt, uint64_t vcpu)
{
	/* Every vCPU parses the tree itself (so every vCPU can exit on a bad
	 * one); vCPU 0 alone explains the errors everyone shares. */
	struct fw_config cfg = { .quiet = vcpu != 0 };
	const struct fw_workload *w;
	struct fw_cpu self;
	char names[128];

	if (fw_config_parse(&cfg, fdt))
		fw_exit(FW_EXIT_CONFIG);
	__atomic_store_n(&fw_hc_base, cfg.hc_base, __ATOMIC_RELAXED);
	if (vcpu >= cfg.num_cpus) {
		fw_printf("firmware: error: vCPU %lu started, but num-cpus is %u\n", vcpu,
			  cfg.num_cpus);
		fw_exit(FW_EXIT_CONFIG);
	}
	w = find_workload(cfg.workload);
	if (!w) {
		list_workloads(names, sizeof(names));
		fw_config_error(&cfg, "unknown workload \"%s\" (known: %s)", cfg.workload, names);
		fw_exit(FW_EXIT_CONFIG);
	}

	self = (struct fw_cpu){ .idx = vcpu, .cfg = &cfg, .pv = cfg.pv_features };
	/* Every workload spins through spin.h; 0 would mean "never pause". */
	if (fw_dt_workload_u32_opt(&cfg, "spin-threshold", 4096, &self.spin_threshold))
		fw_exit(FW_EXIT_CONFIG);
	if (!self.spin_threshold)
		self.spin_threshold = 1;
	self.sp = fw_shared_page(&cfg, vcpu);
	self.sp->spinning_since = 0;
	self.sp->in_critical = 0;
	self.sp->waiting_for = -1;
	self.slice_end = UINT64_MAX;
	/* Our lock boundaries end our slices (lock.h): say so before any. */
	fw_pv_negotiate(&self);
	fw_exit(w->run(&self));
}
