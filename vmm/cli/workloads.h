/* The workloads and lock kinds the bundled firmware understands. */
#ifndef VMM_WORKLOADS_H
#define VMM_WORKLOADS_H

#include <stdbool.h>

extern const char *const vmm_workload_names[];
extern const char *const vmm_lock_names[];

bool vmm_name_in(const char *const *list, const char *name);
/* "a, b, c" into buf, for error messages and --help. */
const char *vmm_name_list(const char *const *list, char *buf, unsigned len);

#endif
