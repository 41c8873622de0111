/*
 * Ticket lock: FIFO, so a preempted waiter stalls everyone queued behind
 * it (lock-waiter preemption) - the baseline the PV kinds improve on.
 */
#include "firmware/lock.h"

struct ticket_lock {
	uint32_t next;  /* next ticket to hand out */
	uint32_t owner; /* ticket now allowed in */
	/* A hint for waiting_for: apart, so its store never disturbs spinners. */
	_Alignas(64) int32_t holder;
};

_Static_assert(sizeof(struct ticket_lock) <= FW_LOCK_SIZE, "fits union fw_lock");

static void ticket_init(union fw_lock *l, const struct fw_lock_params *p)
{
	struct ticket_lock *t = (struct ticket_lock *)l;

	(void)p;
	__atomic_store_n(&t->next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->holder, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->owner, 0, __ATOMIC_RELEASE);
}

static void ticket_lock(union fw_lock *l, struct fw_cpu *self)
{
	struct ticket_lock *t = (struct ticket_lock *)l;
	uint32_t me = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
	uint32_t seen = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE);
	struct fw_spin s;

	if (seen != me) {
		fw_spin_start(self, &s, __atomic_load_n(&t->holder, __ATOMIC_RELAXED));
		for (;;) {
			uint32_t now = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE);

			if (now == me)
				break;
			if (now != seen) {
				/* The queue moves: who holds it now? */
				seen = now;
				fw_spin_progress(self, &s);
				fw_spin_waiting_for(self, __atomic_load_n(&t->holder, __ATOMIC_RELAXED));
			}
			if (fw_spin_pause(self, &s)) {
				fw_spin_waiting_for(self, __atomic_load_n(&t->holder, __ATOMIC_RELAXED));
				fw_spin_exit(self);
			}
		}
		fw_spin_stop(self);
	}
	__atomic_store_n(&t->holder, (int32_t)self->idx, __ATOMIC_RELAXED);
}

static void ticket_unlock(union fw_lock *l, struct fw_cpu *self)
{
	struct ticket_lock *t = (struct ticket_lock *)l;

	(void)self;
	/* Only the holder writes owner. */
	__atomic_store_n(&t->owner, t->owner + 1, __ATOMIC_RELEASE);
}

static const struct lock_ops ticket_ops = {
	.name = "ticket",
	.init = ticket_init,
	.lock = ticket_lock,
	.unlock = ticket_unlock,
};
FW_LOCK_REGISTER(ticket_ops);
