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

static void mcs_spun_out(struct mcs_node *node, struct fw_cpu *self)
{
	(void)node;
	fw_spin_exit(self);
}

static void mcs_lock(union fw_lock *l, struct fw_cpu *self)
{
	mcs_acquire(l, nodes, self, mcs_spun_out);
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
