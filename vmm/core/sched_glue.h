/*
 * Between the co-scheduler (which knows no KVM) and the VMs: each vCPU's
 * callbacks read and write its guest-visible shared page and force it out of
 * KVM_RUN; the scheduler's parameters come from the command line.
 */
#ifndef VMM_SCHED_GLUE_H
#define VMM_SCHED_GLUE_H

#include <sched.h>
#include <stdint.h>

#include "sched/sched.h"
#include "vmm/core/vm.h"

struct sched_glue {
	struct vm *vm;
	unsigned vcpu;  /* index inside its VM */
	int base;       /* the VM's vCPU 0 in the scheduler's numbering */
	uint64_t last_stamp;    /* spinning_since as last seen */
	uint64_t first_seen_ns; /* when the VMM first saw that spin */
};

extern const struct sched_vcpu_ops sched_glue_ops;

/*
 * The host CPUs the slots are tied to: the first `want` CPUs this process may
 * run on (want 0: all of them). Returns the count, or -ERANGE if fewer exist.
 */
int sched_glue_host_cpus(unsigned want, int *cpus, unsigned max, cpu_set_t *set);

#endif
