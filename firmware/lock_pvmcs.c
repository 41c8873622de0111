/*
 * Paravirtual MCS lock: a waiter past spin_threshold marks its node halted
 * and sleeps in WAIT on its own locked word (VMM_PV_WAIT_KICK); the
 * unlocker hands over and kicks the successor only if it is halted, so an
 * uncontended or awake hand-off takes no exit.
 *
 * No lost wake-up: the waiter stores halted, fences, and WAITs on locked
 * == 1 (the VMM re-reads it); the unlocker stores locked = 0, fences, and
 * reads halted. Whoever clears a node's halted kicks that node's vCPU
 * right after, so a waiter that finds itself un-marked by a late unlocker
 * of an earlier round is woken and marks itself again.
 */
#include "firmware/fw.h"
#include "firmware/mcs.h"

static struct mcs_node nodes[FW_MAX_CPUS];

static void pvmcs_init(union fw_lock *l, const struct fw_lock_params *p)
{
	(void)p;
	mcs_init(l);
}

/* Returns once locked is 0; wake-ups may be spurious, hence the loop. */
static void pvmcs_sleep(struct mcs_node *node, struct fw_cpu *self)
{
	do {
		__atomic_store_n(&node->halted, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&node->locked, __ATOMIC_ACQUIRE))
			break;
		if (fw_pv_wait(self, &node->locked, 1) < 0)
			break; /* not served after all: back to spinning */
	} while (__atomic_load_n(&node->locked, __ATOMIC_ACQUIRE));
	__atomic_store_n(&node->halted, 0, __ATOMIC_RELAXED);
}

static void pvmcs_spun_out(struct mcs_node *node, struct fw_cpu *self)
{
	if (self->pv & VMM_PV_WAIT_KICK)
		pvmcs_sleep(node, self);
	else
		fw_spin_exit(self);
}

static void pvmcs_lock(union fw_lock *l, struct fw_cpu *self)
{
	mcs_acquire(l, nodes, self, pvmcs_spun_out);
}

static void pvmcs_unlock(union fw_lock *l, struct fw_cpu *self)
{
	struct mcs_node *next = mcs_successor((struct mcs_lock *)l, &nodes[self->idx], self);

	if (!next)
		return;
	__atomic_store_n(&next->locked, 0, __ATOMIC_RELEASE);
	if (!(self->pv & VMM_PV_WAIT_KICK))
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* next may already run, even be queued again: then this kick is a
	 * spurious wake-up its loop absorbs. */
	if (__atomic_load_n(&next->halted, __ATOMIC_RELAXED)) {
		__atomic_store_n(&next->halted, 0, __ATOMIC_RELAXED);
		fw_pv_kick(self, (uint32_t)(next - nodes));
	}
}

static const struct lock_ops pvmcs_ops = {
	.name = "pvmcs",
	.init = pvmcs_init,
	.lock = pvmcs_lock,
	.unlock = pvmcs_unlock,
};
FW_LOCK_REGISTER(pvmcs_ops);
