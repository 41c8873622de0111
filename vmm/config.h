/* What a `vmm run` was asked to do, validated before any VM exists. */
#ifndef VMM_CONFIG_H
#define VMM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define VMM_VERSION "0.1.0"

struct vm_config {
	unsigned int ncpus;
	uint64_t mem_bytes;
	const char *firmware_path; /* NULL: the bundled guest */
	const char *workload;
	const char *lock;
	uint32_t cs_cycles;
	uint32_t work_cycles;
	uint32_t spin_threshold;
	uint32_t duration_ms;
	uint64_t timeout_ms; /* 0: none */
	const char *json_path;
	bool quiet; /* no guest console echo */
};

void vm_config_defaults(struct vm_config *cfg);

#endif
