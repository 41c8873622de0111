/*
 * The run's configuration, read from the device tree the VMM builds:
 * /vmm (ABI, CPUs, clock, addresses) and /vmm/workload. A workload reads
 * its own parameters with fw_dt_workload_u32/str, so a new workload needs
 * no change here.
 */
#ifndef FW_DT_CONFIG_H
#define FW_DT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

struct fw_config {
	const void *fdt;
	bool quiet; /* set by the caller: only one vCPU explains errors */
	uint32_t abi_version, num_cpus, vm_id;
	uint32_t pv_features; /* VMM_PV_* (abi.h); 0 when the tree has none */
	uint64_t tsc_hz, hc_base, shared_pages, mem_base, mem_size;
	int workload_node;
	const char *workload; /* /vmm/workload name */
	uint32_t duration_ms;
};

/* 0, or -1 after a console message (unless cfg->quiet). */
int fw_config_parse(struct fw_config *cfg, const void *fdt);
int fw_dt_workload_u32(const struct fw_config *cfg, const char *prop, uint32_t *out);
/* Absent gives dflt; present but not a u32 is an error. */
int fw_dt_workload_u32_opt(const struct fw_config *cfg, const char *prop, uint32_t dflt,
			   uint32_t *out);
int fw_dt_workload_str(const struct fw_config *cfg, const char *prop, const char **out);

/* A configuration error, printed unless cfg->quiet. */
void fw_config_error(const struct fw_config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
