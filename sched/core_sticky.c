/*
 * Slot stickiness: a vCPU granted a slot gets the one it last ran on when
 * that slot is free, so it finds its cache and TLB warm on that host CPU.
 *
 * Only *where* is decided here, never *who*: the policy (or the deferral's
 * lock-region pick) has already chosen the vCPU, in its own order, and
 * every free slot is the same to every policy (pick_next's slot is only
 * the one on offer). So no policy's fairness or order changes. Hand-offs
 * (a spin yield's target, a PV kick's receiver) pass the giver's slot with
 * the rest of its slice and are never moved.
 *
 * The other side, a freed slot preferring the vCPU that last ran on it, is
 * not done: every policy's pick is unique (queue order; gang's and the
 * deferral's oldest head), so there is never a tie to break, and jumping
 * the queue for a warm cache would break FIFO's bound on waiting. What is
 * done instead is cheap: a pick whose own slot is taken leaves free slots
 * that a queued vCPU last held to that vCPU, when another free slot is
 * there, so a later pick of this fill may still find its own.
 *
 * A slot that went OFFLINE (a domain member's seat) may come back on
 * another host CPU: its gen changes, and nobody is warm on it.
 */
#include "sched/core.h"
#include "sched/core_int.h"

/* v's last slot if that is still the same seat, else -1. */
static int last_slot(const struct sched_core *c, int v)
{
	const struct sched_vcore *x = &c->v[v];
	if (x->last_slot < 0 || c->slot[x->last_slot].gen != x->last_gen)
		return -1;
	return x->last_slot;
}

static bool free_slot(const struct sched_core *c, int s)
{
	return c->slot[s].vcpu < 0 && sched_core_slot_usable(c, s);
}

/* Would a queued vCPU other than v find its own warm slot in s? */
static bool kept_for_other(const struct sched_core *c, int s, int v)
{
	int w = c->slot[s].last_vcpu;
	return w >= 0 && w != v && c->v[w].state == SCHED_ST_RUNNABLE && last_slot(c, w) == s;
}

/* The free slot that v (RUNNABLE, picked for the free slot s) gets:
 * O(slots) at most, and only when a fill has several slots free. */
int sc_place(const struct sched_core *c, int v, int s)
{
	int l = last_slot(c, v);
	if (l >= 0 && free_slot(c, l))
		return l;
	if (!kept_for_other(c, s, v))
		return s;
	for (int t = s + 1; t < c->nslots; t++)
		if (free_slot(c, t) && !kept_for_other(c, t, v))
			return t;
	return s;
}

/* Every grant, hand-offs too: the books for the next one, and the stats. */
void sc_sticky_grant(struct sched_core *c, int v, int slot)
{
	struct sched_vcore *x = &c->v[v];
	int l = last_slot(c, v);
	if (l == slot)
		x->st.sticky_grants++;
	else if (x->last_slot >= 0)
		x->st.slot_moves++;
	x->last_slot = slot;
	x->last_gen = c->slot[slot].gen;
	c->slot[slot].last_vcpu = v;
}
