/*
 * Paravirtual ticket lock: a ticket lock whose waiters, after spinning
 * spin_threshold pauses, sleep in WAIT (VMM_PV_WAIT_KICK) until the
 * unlocker of the ticket before theirs kicks them. Without the feature it
 * is the ticket lock (plus the SPIN exit where served).
 *
 * A sleeper announces itself in the slot of its ticket, t & slot_mask.
 * At most num_cpus tickets are outstanding and there are at least
 * num_cpus slots (a power of two, so the index survives the u32
 * wrap-around), so the slot of an outstanding ticket belongs to that
 * ticket alone. The unlocker reads only the slot of the ticket it just let
 * in: no scan, and no exit when that waiter is awake.
 *
 * Lost wake-ups are excluded Dekker-style: the waiter stores its slot,
 * fences, and WAITs on owner with the value it saw (the VMM re-reads it);
 * the unlocker stores owner, fences, and reads the slot. One of them sees
 * the other's store, and a kick that lands before the WAIT stays pending
 * (ABI.md 4.1).
 */
#include "firmware/fw.h"
#include "firmware/lock.h"
#include "firmware/ticket.h"

struct pvticket_lock {
	uint32_t next;  /* next ticket to hand out */
	uint32_t owner; /* ticket now allowed in; the word sleepers WAIT on */
	_Alignas(64) int32_t holder;
	uint32_t slot_mask; /* read-only after init */
};

_Static_assert(sizeof(struct pvticket_lock) <= FW_LOCK_SIZE, "fits union fw_lock");

/* vCPU + 1 of the ticket's waiter while it sleeps, else 0. One line each:
 * a sleeper's store must not evict the slot the unlocker reads next. */
static struct {
	_Alignas(64) uint32_t sleeper;
} slots[FW_MAX_CPUS];

_Static_assert((FW_MAX_CPUS & (FW_MAX_CPUS - 1)) == 0, "slot index is a mask");

static void pvticket_init(union fw_lock *l, const struct fw_lock_params *p)
{
	struct pvticket_lock *t = (struct pvticket_lock *)l;
	uint32_t n = 1;

	while (n < p->num_cpus)
		n <<= 1;
	t->slot_mask = n - 1;
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&slots[i].sleeper, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->holder, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->owner, 0, __ATOMIC_RELEASE);
}

/*
 * Sleeps until owner == me (true) or until owner moved on without reaching
 * us (false: the holder runs, so spinning again beats an exit per hand-off).
 * Re-announces before every WAIT: an unlocker may have cleared the slot
 * (it then kicks us, so we come back here). The slot of an outstanding
 * ticket is ours alone, so our own plain clears never erase another
 * sleeper's announcement.
 */
static bool pvticket_sleep(struct pvticket_lock *t, struct fw_cpu *self, uint32_t me,
			   uint32_t seen)
{
	uint32_t *slot = &slots[me & t->slot_mask].sleeper;
	bool in;

	for (;;) {
		__atomic_store_n(slot, self->idx + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		uint32_t now = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE);

		if (now == me || now != seen || fw_pv_wait(self, &t->owner, seen) != 0)
			break;
		/* Kicked: our turn, or a stale kick meant for an earlier wait. */
		if (__atomic_load_n(&t->owner, __ATOMIC_ACQUIRE) != seen)
			break;
	}
	in = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE) == me;
	__atomic_store_n(slot, 0, __ATOMIC_RELAXED);
	return in;
}

static int32_t pvticket_holder(void *ctx, uint32_t owner)
{
	(void)owner;
	return __atomic_load_n(&((struct pvticket_lock *)ctx)->holder, __ATOMIC_RELAXED);
}

/* Spin budget out: sleep in WAIT until our turn, or the SPIN exit without it. */
static bool pvticket_spun_out(void *ctx, struct fw_cpu *self, uint32_t me, uint32_t seen)
{
	if (!(self->pv & VMM_PV_WAIT_KICK)) {
		fw_spin_exit(self);
		return false;
	}
	return pvticket_sleep(ctx, self, me, seen);
}

static void pvticket_lock(union fw_lock *l, struct fw_cpu *self)
{
	struct pvticket_lock *t = (struct pvticket_lock *)l;
	/* Acquire: orders our slot use after the unlock that freed it. */
	uint32_t me = __atomic_fetch_add(&t->next, 1, __ATOMIC_ACQUIRE);
	uint32_t seen = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE);

	ticket_wait(self, t, &t->owner, me, seen, pvticket_holder, pvticket_spun_out);
	__atomic_store_n(&t->holder, (int32_t)self->idx, __ATOMIC_RELAXED);
}

static void pvticket_unlock(union fw_lock *l, struct fw_cpu *self)
{
	struct pvticket_lock *t = (struct pvticket_lock *)l;
	uint32_t next_in = t->owner + 1; /* only the holder writes owner */
	uint32_t *slot = &slots[next_in & t->slot_mask].sleeper;
	uint32_t sleeper;

	__atomic_store_n(&t->owner, next_in, __ATOMIC_RELEASE);
	if (!(self->pv & VMM_PV_WAIT_KICK))
		return; /* nobody sleeps, so no fence either */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(slot, __ATOMIC_RELAXED))
		return;
	/* Take exactly the announcement we kick: a plain clear could erase a
	 * later sleeper's if we were delayed here past its whole turn. */
	sleeper = __atomic_exchange_n(slot, 0, __ATOMIC_RELAXED);
	if (sleeper)
		fw_pv_kick(self, sleeper - 1);
}

static const struct lock_ops pvticket_ops = {
	.name = "pvticket",
	.init = pvticket_init,
	.lock = pvticket_lock,
	.unlock = pvticket_unlock,
};
FW_LOCK_REGISTER(pvticket_ops);
