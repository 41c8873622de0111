/*
 * The lock interface the workloads use. A lock kind is one file that
 * defines a struct lock_ops and registers it with FW_LOCK_REGISTER; it is
 * then found by name. Its state lives in the opaque union fw_lock
 * (static_assert that it fits); per-vCPU state such as MCS queue nodes can
 * be a static array in that file indexed by self->idx.
 *
 * Every kind stores its holder's vCPU index in the lock after acquiring
 * (a plain store, on a cache line waiters do not spin on) and spins only
 * through spin.h, so waiters publish waiting_for (the holder they see, or
 * for queue locks the vCPU they queue behind) and take the SPIN exit when
 * the VMM serves it. The wrappers below keep in_critical > 0 while queued
 * or holding, and make the release the safe point of VMM_PV_SAFE_POINT.
 *
 * State kept in static arrays limits the kinds that use it: with per-vCPU
 * MCS nodes a vCPU holds or queues for one lock of that kind at a time;
 * pvticket's sleeper slots serve a single lock instance. The workloads
 * need no more.
 */
#ifndef FW_LOCK_H
#define FW_LOCK_H

#include <stdint.h>

#include "firmware/cpu.h"
#include "firmware/pv.h"
#include "firmware/spin.h"
#include "firmware/tsc.h"

#define FW_LOCK_SIZE 128

union fw_lock {
	_Alignas(64) unsigned char bytes[FW_LOCK_SIZE];
	uint64_t words[FW_LOCK_SIZE / 8];
};

struct fw_lock_params {
	uint32_t num_cpus;
	uint32_t spin_threshold; /* for PV locks: pauses before waiting */
};

struct lock_ops {
	const char *name;
	/* Called once, by one vCPU, before any vCPU takes the lock. */
	void (*init)(union fw_lock *l, const struct fw_lock_params *p);
	void (*lock)(union fw_lock *l, struct fw_cpu *self);
	void (*unlock)(union fw_lock *l, struct fw_cpu *self);
};

#define FW_LOCK_REGISTER(ops)                                                       \
	static const struct lock_ops *const fw_lock_reg_##ops                       \
		__attribute__((used, section(".fw_locks"), aligned(8))) = &(ops)

/* NULL if no lock kind has that name. */
const struct lock_ops *fw_lock_find(const char *name);
/* "ticket, tas" into buf, for error messages. */
const char *fw_lock_names(char *buf, unsigned len);

/*
 * Guest-timed slices (VMM_PV_GUEST_SLICE, ABI.md 7): the VMM says how long
 * each slice is and whether anyone queues; we time it from when we first
 * see its number, and leave at a lock boundary once it is over with
 * someone queued. The VMM then needs no wake-up at the slice end, and arms
 * only the hard deadline. The common case is two loads of our own page,
 * and a TSC read only while someone queues.
 */
static inline int fw_slice_over(struct fw_cpu *self)
{
	uint32_t seq = __atomic_load_n(&self->sp->slice_seq, __ATOMIC_ACQUIRE);
	if (seq != self->slice_seq) {
		self->slice_seq = seq;
		self->slice_end = fw_rdtsc() + self->sp->slice_tsc;
	}
	return self->sp->contended && fw_rdtsc() >= self->slice_end;
}

/* Leave; if the VMM declined (no new slice number: nobody left to take the
 * CPU, or its clock disagrees), stop asking until the next slice. */
static inline void fw_slice_yield(struct fw_cpu *self)
{
	uint32_t seq = self->slice_seq;
	fw_pv_yield_to(self, -1);
	if (__atomic_load_n(&self->sp->slice_seq, __ATOMIC_ACQUIRE) == seq)
		self->slice_end = UINT64_MAX;
}

static inline void fw_lock_acquire(const struct lock_ops *ops, union fw_lock *l,
				   struct fw_cpu *self)
{
	uint32_t depth = self->sp->in_critical;

	/* Outside any lock region: a slice that ran out ends here. */
	if (!depth && (self->pv & VMM_PV_GUEST_SLICE) && fw_slice_over(self))
		fw_slice_yield(self);
	self->sp->in_critical = depth + 1;
	/*
	 * Entering the lock region is a safe point too, and the one that must
	 * be race-free: the VMM publishes preempt_pending and only later looks
	 * at in_critical before forcing us out; we publish in_critical and then
	 * look at preempt_pending (Dekker, hence the fence). Either we see the
	 * request and yield before taking a ticket or queue node, or the VMM
	 * sees us in the region and keeps deferring: never preempted holding a
	 * place in a lock queue we took after the request.
	 */
	if (!depth && (self->pv & VMM_PV_SAFE_POINT)) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		while (__atomic_load_n(&self->sp->preempt_pending, __ATOMIC_RELAXED)) {
			self->sp->in_critical = 0;
			fw_pv_yield_to(self, -1);
			self->sp->in_critical = 1;
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
	}
	ops->lock(l, self);
}

static inline void fw_lock_release(const struct lock_ops *ops, union fw_lock *l,
				   struct fw_cpu *self)
{
	uint32_t depth = self->sp->in_critical - 1;

	ops->unlock(l, self);
	self->sp->in_critical = depth;
	/* The safe point: the VMM deferred a preemption while we were in the
	 * lock region. preempt_pending is first because it is almost always
	 * 0, so the fast path costs one load of our own page. No fence: a
	 * request that races with this store is caught at the next acquire. */
	if (depth || !(self->pv & VMM_PV_SAFE_POINT))
		return;
	if (self->sp->preempt_pending)
		fw_pv_yield_to(self, -1);
	else if ((self->pv & VMM_PV_GUEST_SLICE) && fw_slice_over(self))
		fw_slice_yield(self);
}

#endif
