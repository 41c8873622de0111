/*
 * How many hypercalls of one number a vCPU thread made, counted by KVM's
 * kvm:kvm_hypercall tracepoint through a per-thread perf counter (no ring,
 * no wake-ups: one read at the end). KVM serves a Linux guest's PV spinlock
 * kicks (KVM_HC_KICK_CPU) inside the kernel and never tells userspace; this
 * is how the report shows that the guest's PV spinlocks really kicked.
 */
#ifndef VMM_SPIN_HYPERCALL_COUNT_H
#define VMM_SPIN_HYPERCALL_COUNT_H

#include <stdint.h>
#include <sys/types.h>

/* A counter of thread TID's hypercalls numbered NR: its fd, or -errno
 * (-ENOENT: no kvm:kvm_hypercall tracepoint; -EACCES/-EPERM: perf refused). */
int hypercall_counter_open(pid_t tid, unsigned nr);
/* The count so far: 0 and *count, or -errno. */
int hypercall_counter_read(int fd, uint64_t *count);

#endif
