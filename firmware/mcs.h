/*
 * The MCS queue shared by lock_mcs.c and lock_pvmcs.c: each waiter spins
 * on its own node, so a hand-off touches one remote cache line and the
 * predecessor is always known (waiting_for). Nodes are per vCPU, one array
 * per lock kind (each file defines its own), so a vCPU holds or queues for
 * one lock of a kind at a time.
 */
#ifndef FW_MCS_H
#define FW_MCS_H

#include <stddef.h>

#include "firmware/lock.h"

struct mcs_node {
	_Alignas(64) struct mcs_node *next;
	uint32_t locked; /* 1 while its owner waits; the unlocker writes 0 */
	uint32_t halted; /* pvmcs: the owner sleeps (or is about to) in WAIT */
};

struct mcs_lock {
	struct mcs_node *tail;
	_Alignas(64) int32_t holder;
};

_Static_assert(sizeof(struct mcs_lock) <= FW_LOCK_SIZE, "fits union fw_lock");

static inline void mcs_init(union fw_lock *l)
{
	struct mcs_lock *m = (struct mcs_lock *)l;

	__atomic_store_n(&m->holder, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&m->tail, NULL, __ATOMIC_RELEASE);
}

/* Queues node; returns the predecessor, NULL if the lock was free. */
static inline struct mcs_node *mcs_enqueue(struct mcs_lock *m, struct mcs_node *node)
{
	struct mcs_node *pred;

	__atomic_store_n(&node->next, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&node->locked, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&node->halted, 0, __ATOMIC_RELAXED);
	pred = __atomic_exchange_n(&m->tail, node, __ATOMIC_ACQ_REL);
	if (pred)
		__atomic_store_n(&pred->next, node, __ATOMIC_RELEASE);
	return pred;
}

/*
 * The successor to hand over to, or NULL when the queue emptied and the
 * lock is free. A successor that swapped itself into tail but has not yet
 * linked in is waited for: it is unknown (waiting_for -1), and if it was
 * preempted right there only the SPIN exit helps.
 */
static inline struct mcs_node *mcs_successor(struct mcs_lock *m, struct mcs_node *node,
					     struct fw_cpu *self)
{
	struct mcs_node *next = __atomic_load_n(&node->next, __ATOMIC_ACQUIRE);
	struct mcs_node *expect = node;
	struct fw_spin s;

	if (next)
		return next;
	if (__atomic_compare_exchange_n(&m->tail, &expect, NULL, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return NULL;
	fw_spin_start(self, &s, -1);
	while (!(next = __atomic_load_n(&node->next, __ATOMIC_ACQUIRE)))
		if (fw_spin_pause(self, &s))
			fw_spin_exit(self);
	fw_spin_stop(self);
	return next;
}

/*
 * The lock side both MCS kinds share: queue, spin on our own node until the
 * predecessor hands over, then record the holder. Only what a waiter does
 * when its spin budget runs out differs (the SPIN exit, or pvmcs's WAIT),
 * so that is spun_out; always inlined with a constant spun_out, each lock
 * keeps its own straight-line hot loop with no indirect call.
 */
static inline __attribute__((always_inline)) void
mcs_acquire(union fw_lock *l, struct mcs_node *nodes, struct fw_cpu *self,
	    void (*spun_out)(struct mcs_node *node, struct fw_cpu *self))
{
	struct mcs_lock *m = (struct mcs_lock *)l;
	struct mcs_node *node = &nodes[self->idx];
	struct mcs_node *pred = mcs_enqueue(m, node);
	struct fw_spin s;

	if (pred && __atomic_load_n(&node->locked, __ATOMIC_ACQUIRE)) {
		fw_spin_start(self, &s, (int32_t)(pred - nodes));
		while (__atomic_load_n(&node->locked, __ATOMIC_ACQUIRE))
			if (fw_spin_pause(self, &s))
				spun_out(node, self);
		fw_spin_stop(self);
	}
	__atomic_store_n(&m->holder, (int32_t)self->idx, __ATOMIC_RELAXED);
}

#endif
