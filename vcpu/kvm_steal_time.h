/*
 * KVM's steal-time record (MSR_KVM_STEAL_TIME), kept true under the
 * co-scheduler. KVM fills it from the host scheduler's run delay, which
 * never sees a vCPU thread that our scheduler holds out of KVM_RUN (it
 * sleeps on a condition variable; it is not runnable). So the vCPU's own
 * thread, while it waits for a slot, marks the vCPU preempted (what a
 * Linux guest's vcpu_is_preempted() and PV TLB flush read) and afterwards
 * adds the time it waited to `steal`, under the record's version protocol.
 * KVM writes the record only when that same thread enters KVM_RUN (and
 * clears `preempted` there), so the two writers never overlap.
 *
 * Each nanosecond is counted once. KVM's record_steal_time adds the
 * thread's host run delay (sched_info.run_delay) since its last update,
 * including what the thread accrued outside KVM_RUN: once our scheduler
 * grants the slot and wakes the thread, the time it then waits for a host
 * CPU is run delay, which KVM adds at the next KVM_RUN. So the VMM adds only
 * the time up to the grant, when the thread slept and the host saw nothing.
 */
#ifndef VMM_VCPU_KVM_STEAL_TIME_H
#define VMM_VCPU_KVM_STEAL_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/guest_mem.h"
#include "sched/sched.h"

/* Where the guest registered its record: 0 and *gpa, -ENOENT if it has not
 * (or turned it off), or -errno from KVM_GET_MSRS. */
int kvm_steal_time_gpa(int vcpu_fd, uint64_t *gpa);

/* Both check that the 64-byte record is aligned and lies inside guest RAM
 * (the guest chose gpa); false if not, and nothing is written. */
bool kvm_steal_time_mark_preempted(const struct guest_mem *m, uint64_t gpa);
bool kvm_steal_time_add(const struct guest_mem *m, uint64_t gpa, uint64_t ns);

/* Gives v's slot back and blocks until granted again
 * (sched_vcpu_yield_slot); *held_ns: from this call to the grant, the steal
 * the record must get from the VMM (see above). */
int kvm_steal_time_yield_slot(struct sched *s, int v, uint64_t *held_ns);

#endif
