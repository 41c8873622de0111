/*
 * What a Linux guest's paravirtual spinlocks did inside KVM, where this
 * process never sees it: per vCPU, the PV kicks it sent (KVM_HC_KICK_CPU,
 * counted through the kvm:kvm_hypercall tracepoint), and from KVM's binary
 * stats its halts (a PV spinlock waiter halts until kicked), wake-ups from
 * halt and all hypercalls. Counted from the vCPU threads' start to their
 * end, for the report (vcpus[].kvm).
 */
#ifndef VMM_CORE_LINUX_PV_COUNTS_H
#define VMM_CORE_LINUX_PV_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

struct run;

struct linux_pv_vcpu {
	int kick_fd;           /* perf counter, -1 when not counted */
	bool kicks_counted;
	uint64_t kicks;        /* KVM_HC_KICK_CPU hypercalls this vCPU made */
	bool stats_read;       /* KVM's binary stats were there to read */
	uint64_t halt_exits, halt_wakeups, hypercalls;
};

/* Once the vCPU threads run, before the loop's seccomp filter: opens the
 * kick counters, also where PV_UNHALT was not offered (r->pv_count_note
 * says so, and why kicks are not counted where they cannot be). Linux
 * guests only; 0 or -ENOMEM. */
int linux_pv_counts_start(struct run *r);
/* The counters' fds, for the loop's filter (read); returns how many were put in fds (room: nvcpus). */
unsigned linux_pv_counts_fds(const struct run *r, int *fds);
/* After every vCPU thread ended: reads the counters and KVM's stats, closes the counters. */
void linux_pv_counts_finish(struct run *r);
/* At the run's destruction: closes what a run that never finished left open. */
void linux_pv_counts_free(struct run *r);

#endif
