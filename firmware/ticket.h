/*
 * The ticket wait both ticket locks share (lock_ticket.c, lock_pvticket.c):
 * spin until owner reaches our ticket, name the vCPU we wait for at the
 * start and on every hand-off, and when the spin budget runs out name it
 * again and ask the lock what to do. The locks differ only in how they
 * know the holder (ticket: who took the ticket now up, so a preempted
 * next-in-line is named; pvticket: the holder hint) and in what a waiter
 * does on spin budget out (ticket: the SPIN exit; pvticket: sleep in WAIT).
 * Always inlined with constant callbacks, so each hot loop has no call.
 */
#ifndef FW_TICKET_H
#define FW_TICKET_H

#include <stdbool.h>
#include <stdint.h>

#include "firmware/fw.h"

/* holder(ctx, owner): the vCPU to name while owner is up.
 * spun_out(ctx, self, me, seen): true once the lock is ours (owner == me). */
static inline __attribute__((always_inline)) void
ticket_wait(struct fw_cpu *self, void *ctx, const uint32_t *owner, uint32_t me, uint32_t seen,
	    int32_t (*holder)(void *ctx, uint32_t owner),
	    bool (*spun_out)(void *ctx, struct fw_cpu *self, uint32_t me, uint32_t seen))
{
	struct fw_spin s;

	if (seen == me)
		return;
	fw_spin_start(self, &s, holder(ctx, seen));
	for (;;) {
		uint32_t now = __atomic_load_n(owner, __ATOMIC_ACQUIRE);

		if (now == me)
			break;
		if (now != seen) {
			/* The queue moves: who holds it now? */
			seen = now;
			fw_spin_progress(self, &s);
			fw_spin_waiting_for(self, holder(ctx, now));
		}
		if (!fw_spin_pause(self, &s))
			continue;
		fw_spin_waiting_for(self, holder(ctx, now));
		if (spun_out(ctx, self, me, seen))
			break;
	}
	fw_spin_stop(self);
}

#endif
