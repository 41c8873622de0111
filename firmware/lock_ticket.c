/*
 * Ticket lock: FIFO, so a preempted waiter stalls everyone queued behind
 * it (lock-waiter preemption) - the baseline the PV kinds improve on.
 */
#include "firmware/fw.h"
#include "firmware/lock.h"
#include "firmware/ticket.h"

struct ticket_lock {
	uint32_t next;  /* next ticket to hand out */
	uint32_t owner; /* ticket now allowed in */
	/* A hint for waiting_for: apart, so its store never disturbs spinners. */
	_Alignas(64) int32_t holder;
};

_Static_assert(sizeof(struct ticket_lock) <= FW_LOCK_SIZE, "fits union fw_lock");

/*
 * Who took each outstanding ticket (at most one per vCPU, so ticket mod 256
 * is unique). A waiter names the vCPU whose ticket is up: the holder, or
 * the preempted next-in-line that stalls everyone (lock-waiter preemption);
 * the `holder` and `directed` policies then yield to exactly that vCPU. One
 * lock instance, like pvticket's sleeper slots: all the workloads need.
 */
#define TAKER_SLOTS 256
_Static_assert(TAKER_SLOTS >= FW_MAX_CPUS, "a slot per outstanding ticket");
static int32_t ticket_taker[TAKER_SLOTS];

static int32_t up_now(uint32_t owner)
{
	return __atomic_load_n(&ticket_taker[owner % TAKER_SLOTS], __ATOMIC_RELAXED);
}

static void ticket_init(union fw_lock *l, const struct fw_lock_params *p)
{
	struct ticket_lock *t = (struct ticket_lock *)l;

	(void)p;
	__atomic_store_n(&t->next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->holder, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->owner, 0, __ATOMIC_RELEASE);
}

static int32_t ticket_holder(void *ctx, uint32_t owner)
{
	(void)ctx;
	return up_now(owner);
}

/* Spin budget out: the SPIN exit (where served), then spin on. */
static bool ticket_spun_out(void *ctx, struct fw_cpu *self, uint32_t me, uint32_t seen)
{
	(void)ctx, (void)me, (void)seen;
	fw_spin_exit(self);
	return false;
}

static void ticket_lock(union fw_lock *l, struct fw_cpu *self)
{
	struct ticket_lock *t = (struct ticket_lock *)l;
	uint32_t me = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
	uint32_t seen = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE);

	__atomic_store_n(&ticket_taker[me % TAKER_SLOTS], (int32_t)self->idx, __ATOMIC_RELAXED);
	ticket_wait(self, t, &t->owner, me, seen, ticket_holder, ticket_spun_out);
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
