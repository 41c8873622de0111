/*
 * MCS queue lock: FIFO like the ticket lock, but each waiter spins on its
 * own node, so a hand-off moves one cache line instead of every waiter's.
 */
#include "firmware/fw.h"
#include "firmware/mcs.h"

static struct mcs_node nodes[FW_MAX_CPUS];

static void mcs_lock_init(union fw_lock *l, const struct fw_lock_params *p)
{
	(void)p;
	mcs_init(l);
}

static void mcs_lock(union fw_lock *l, struct fw_cpu *self)
{
	struct mcs_lock *m = (struct mcs_lock *)l;
	struct mcs_node *node = &nodes[self->idx];
	struct mcs_node *pred = mcs_enqueue(m, node);
	struct fw_spin s;

	if (pred && __atomic_load_n(&node->locked, __ATOMIC_ACQUIRE)) {
		fw_spin_start(self, &s, (int32_t)(pred - nodes));
		while (__atomic_load_n(&node->locked, __ATOMIC_ACQUIRE))
			if (fw_spin_pause(self, &s))
				fw_spin_exit(self);
		fw_spin_stop(self);
	}
	__atomic_store_n(&m->holder, (int32_t)self->idx, __ATOMIC_RELAXED);
}

static void mcs_unlock(union fw_lock *l, struct fw_cpu *self)
{
	struct mcs_node *next = mcs_successor((struct mcs_lock *)l, &nodes[self->idx], self);

	if (next)
		__atomic_store_n(&next->locked, 0, __ATOMIC_RELEASE);
}

static const struct lock_ops mcs_ops = {
	.name = "mcs",
	.init = mcs_lock_init,
	.lock = mcs_lock,
	.unlock = mcs_unlock,
};
FW_LOCK_REGISTER(mcs_ops);
