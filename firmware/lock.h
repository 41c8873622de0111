/*
 * The lock interface the workloads use. A lock kind is one file that
 * defines a struct lock_ops and registers it with FW_LOCK_REGISTER; it is
 * then found by name. Its state lives in the opaque union fw_lock
 * (static_assert that it fits); per-vCPU state such as MCS queue nodes can
 * be a static array in that file indexed by self->idx.
 *
 * Spin hints (no exits, the VMM reads them from the shared page): the
 * wrappers below keep in_critical > 0 while queued or holding; a lock's
 * slow path calls fw_spin_begin once when it starts waiting and
 * fw_spin_end once it has the lock.
 */
#ifndef FW_LOCK_H
#define FW_LOCK_H

#include <stdint.h>

#include "firmware/cpu.h"
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

static inline void fw_spin_begin(struct fw_cpu *self)
{
	self->sp->spinning_since = fw_rdtsc();
}

static inline void fw_spin_end(struct fw_cpu *self)
{
	self->sp->spinning_since = 0;
}

static inline void fw_lock_acquire(const struct lock_ops *ops, union fw_lock *l,
				   struct fw_cpu *self)
{
	self->sp->in_critical = self->sp->in_critical + 1;
	ops->lock(l, self);
}

static inline void fw_lock_release(const struct lock_ops *ops, union fw_lock *l,
				   struct fw_cpu *self)
{
	ops->unlock(l, self);
	/* Leaving the lock region: the safe point where a later ABI honours
	 * preempt_pending. */
	self->sp->in_critical = self->sp->in_critical - 1;
}

#endif
