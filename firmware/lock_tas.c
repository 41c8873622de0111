/*
 * Test-and-test-and-set lock: unfair, so whoever runs gets it, which is
 * why it degrades far less than the ticket lock under overcommit.
 */
#include "firmware/lock.h"

struct tas_lock {
	uint32_t locked;
	/* A hint for waiting_for: apart, so its store never disturbs spinners. */
	_Alignas(64) int32_t holder;
};

_Static_assert(sizeof(struct tas_lock) <= FW_LOCK_SIZE, "fits union fw_lock");

static void tas_init(union fw_lock *l, const struct fw_lock_params *p)
{
	struct tas_lock *t = (struct tas_lock *)l;

	(void)p;
	__atomic_store_n(&t->holder, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->locked, 0, __ATOMIC_RELEASE);
}

static void tas_lock(union fw_lock *l, struct fw_cpu *self)
{
	struct tas_lock *t = (struct tas_lock *)l;
	struct fw_spin s;
	int spun = 0;

	while (__atomic_exchange_n(&t->locked, 1, __ATOMIC_ACQUIRE)) {
		if (!spun) {
			fw_spin_start(self, &s, __atomic_load_n(&t->holder, __ATOMIC_RELAXED));
			spun = 1;
		}
		/* Spin on a shared read, not on the locked exchange. */
		while (__atomic_load_n(&t->locked, __ATOMIC_RELAXED)) {
			if (fw_spin_pause(self, &s)) {
				fw_spin_waiting_for(self, __atomic_load_n(&t->holder, __ATOMIC_RELAXED));
				fw_spin_exit(self);
			}
		}
		/* Seen free: the holder ran, so the next exit waits a full count. */
		fw_spin_progress(self, &s);
	}
	if (spun)
		fw_spin_stop(self);
	__atomic_store_n(&t->holder, (int32_t)self->idx, __ATOMIC_RELAXED);
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
