#include "vmm/core/linux_pv_counts.h"

#include <errno.h>
#include <linux/kvm_para.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vcpu/kvm_stats.h"
#include "vmm/core/run.h"
#include "vmm/core/vm_linux.h"
#include "vmm/spin/hypercall_count.h"

int linux_pv_counts_start(struct run *r)
{
	const struct vm_linux *lx = r->vms[0].linux_guest;
	if (!lx)
		return 0;
	r->pv = calloc(r->nvcpus, sizeof(*r->pv));
	if (!r->pv)
		return -ENOMEM;
	for (unsigned g = 0; g < r->nvcpus; g++)
		r->pv[g].kick_fd = -1;
	/* counted also where PV_UNHALT is not offered: 0 kicks is then a measurement */
	if (!(lx->cpuid.kvm_features & (1u << KVM_FEATURE_PV_UNHALT)))
		snprintf(r->pv_count_note, sizeof(r->pv_count_note), "PV_UNHALT not offered");
	for (unsigned g = 0; g < r->nvcpus; g++) {
		unsigned i;
		const struct vm *vm = run_vm_of(r, g, &i);
		int tid = vcpu_wait_tid(&vm->vcpus[i]);
		int fd = tid > 0 ? hypercall_counter_open(tid, KVM_HC_KICK_CPU) : tid;
		if (fd < 0) {
			snprintf(r->pv_count_note, sizeof(r->pv_count_note),
				 "kicks not counted: kvm:kvm_hypercall on vCPU %u: %s%s", g, strerror(-fd),
				 (lx->cpuid.kvm_features & (1u << KVM_FEATURE_PV_UNHALT)) ? "" : " (PV_UNHALT not offered)");
			for (unsigned k = 0; k < g; k++) {
				close(r->pv[k].kick_fd);
				r->pv[k].kick_fd = -1;
			}
			return 0;
		}
		r->pv[g].kick_fd = fd;
	}
	return 0;
}

unsigned linux_pv_counts_fds(const struct run *r, int *fds)
{
	unsigned n = 0;
	for (unsigned g = 0; r->pv && g < r->nvcpus; g++)
		if (r->pv[g].kick_fd >= 0)
			fds[n++] = r->pv[g].kick_fd;
	return n;
}

void linux_pv_counts_finish(struct run *r)
{
	for (unsigned g = 0; r->pv && g < r->nvcpus; g++) {
		struct linux_pv_vcpu *p = &r->pv[g];
		unsigned i;
		const struct vm *vm = run_vm_of(r, g, &i);
		const struct kvm_vcpu_stats *st = &vm->vcpus[i].stats;
		p->stats_read = kvm_stats_read(st, KVM_STAT_HALT_EXITS, &p->halt_exits) == 0;
		if (p->stats_read) {
			kvm_stats_read(st, KVM_STAT_HALT_WAKEUP, &p->halt_wakeups);
			kvm_stats_read(st, KVM_STAT_HYPERCALLS, &p->hypercalls);
		}
		if (p->kick_fd >= 0) {
			p->kicks_counted = hypercall_counter_read(p->kick_fd, &p->kicks) == 0;
			close(p->kick_fd);
			p->kick_fd = -1;
		}
	}
}

void linux_pv_counts_free(struct run *r)
{
	for (unsigned g = 0; r->pv && g < r->nvcpus; g++)
		if (r->pv[g].kick_fd >= 0)
			close(r->pv[g].kick_fd);
	free(r->pv);
	r->pv = NULL;
}
