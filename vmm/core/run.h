/*
 * One `vmm run`: K copies of the guest (--vms), the co-scheduler they share,
 * and the event loop the main thread sleeps in until every vCPU has ended.
 */
#ifndef VMM_RUN_H
#define VMM_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "sched/sched.h"
#include "vmm/core/sched_glue.h"
#include "vmm/core/linux_pv_counts.h"
#include "vmm/core/loop_pin.h"
#include "vmm/core/ple_source.h"
#include "vmm/core/trace.h"
#include "vmm/core/vm.h"
#include "vmm/domain/member_link.h"

struct run {
	const struct vm_config *cfg;
	const struct vm_inputs *in; /* read and checked before KVM was opened */
	struct kvm_host *kvm;
	struct run_ctl ctl;
	struct vm *vms;
	unsigned nvms, vms_created;
	unsigned nvcpus; /* all VMs */
	struct sched *sched;
	struct sched_glue *glue; /* [nvcpus] */
	unsigned nslots;
	cpu_set_t cpus; /* the CPUs slots are tied to, or host mode confines to */
	struct trace *trace;
	char ple_note[200]; /* why PLE spin detection cannot work here, if it cannot */
	char halt_note[160]; /* why halted Linux vCPUs cannot be parked, if they cannot */
	uint32_t halt_check_us; /* the interval in force: 0 when halts are not checked */
	bool ple_on;              /* watch a tracepoint per vCPU thread */
	struct ple_source *ple;   /* [nvcpus] while the run lasts */
	uint64_t ple_events;      /* exits the watches saw */
	struct linux_pv_vcpu *pv; /* [nvcpus], Linux guests: PV kicks and halts inside KVM */
	char pv_count_note[160];  /* why kicks are not counted, if they are not */
	uint64_t start_ns, end_ns;
	uint64_t start_late_ns;     /* --start-at: how long after that instant the vCPUs started */
	uint64_t start_wait_ns;     /* --start-at: how long the VM waited for it (0: not ready in time) */
	struct dlink *domain;       /* --domain: the link to the domain's agent */
	struct dlink_info dom;      /* what the agent said at the join */
	struct { uint64_t at_ns; char policy[32]; } policy_change[16]; /* --yield changed live */
	_Atomic unsigned npolicy_changes;
	struct { uint64_t at_ns; uint32_t weight; } weight_change[16]; /* --weight changed live */
	_Atomic unsigned nweight_changes;
	struct loop_pin loop_pin; /* --loop-cpu: where the event loop ran, read back */
	FILE *json_out;   /* --json, opened before the seccomp filter (report_write_json) */
	int json_out_err; /* its -errno */
};

/* 0, or negative with err filled (status: usage error or host error). */
int run_create(struct run *r, const struct vm_config *cfg, const struct vm_inputs *in, struct kvm_host *kvm,
	       struct vm_error *err);
/* Runs to the end; returns the process exit status (enum vmm_exit_status). */
int run_execute(struct run *r);
void run_destroy(struct run *r);
/* The VM and in-VM index of the scheduler's vCPU g. */
const struct vm *run_vm_of(const struct run *r, unsigned g, unsigned *idx);

#endif
