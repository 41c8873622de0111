/*
 * Test-and-test-and-set lock: unfair, so whoever runs gets it, which is
 * why it degrades far less than the ticket lock under overcommit.
 */
#include "firmware/lock.h"

struct tas_lock {
	uint32_t locked;
};

_Static_assert(sizeof(struct tas_lock) <= FW_LOCK_SIZE, "fits union fw_lock");

static void tas_init(union fw_lock *l, const struct fw_lock_params *p)
{
	(void)p;
	__atomic_store_n(&((struct tas_lock *)l)->locked, 0, __ATOMIC_RELEASE);
}

static void tas_lock(union fw_lock *l, struct fw_cpu *self)
{
	struct tas_lock *t = (struct tas_lock *)l;
	int spun = 0;

	while (__atomic_exchange_n(&t->locked, 1, __ATOMIC_ACQUIRE)) {
		if (!spun) {
			fw_spin_begin(self);
			spun = 1;
		}
		/* Spin on a shared read, not on the locked exchange. */
		while (__atomic_load_n(&t->locked, __ATOMIC_RELAXED))
			fw_pause();
	}
	if (spun)
		fw_spin_end(self);
}

static void tas_unlock(union fw_lock *l, struct fw_cpu *self)
{
	(void)self;
	__atomic_store_n(&((struct tas_lock *)l)->locked, 0, __ATOMIC_RELEASE);
}

static const struct lock_ops tas_ops = {
	.name = "tas",
	.init = tas_init,
	.lock = tas_lock,
	.unlock = tas_unlock,
};
FW_LOCK_REGISTER(tas_ops);
