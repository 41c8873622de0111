/*
 * Slots that come and go (params.slots_offline): a domain member's seats,
 * granted and revoked by the domain agent; see core.h. The core only ever
 * grants ONLINE slots (sc_fill_slots); a held slot goes offline through
 * sc_release, whichever way its holder gives it back. The demand tells the
 * caller how many seats to ask for.
 */
#include "sched/core.h"
#include "sched/core_int.h"

/* A GOING_OFF (or free) slot is offline now: say so. */
void sc_slot_freed(struct sched_core *c, int slot, uint64_t now)
{
	c->slot[slot].state = SCHED_SLOT_OFFLINE;
	c->slot[slot].lease_end = 0; /* the next grant brings its own */
	c->slot[slot].gen++; /* no vCPU is warm on the CPU it comes back on */
	sc_emit(c, SCHED_ACT_SLOT_OFF, -1, slot);
	sc_trace(c, SCHED_TR_SLOT_OFF, -1, slot, now);
}

static void sc_lock_drain(struct sched_core *c, uint64_t now);

void sc_end_event(struct sched_core *const *cp)
{
	struct sched_core *c = *cp;
	sc_lock_drain(c, c->last_now);
	sc_gslice_sync(c);
	if (!c->slots_offline)
		return;
	int want = c->nrunning + c->nrunnable;
	if (want > c->nslots)
		want = c->nslots;
	if (want != c->demand) {
		c->demand = want;
		sc_emit(c, SCHED_ACT_SLOT_DEMAND, -1, want);
	}
}

void sched_core_slot_online(struct sched_core *c, int slot, uint64_t now)
{
	SC_EVENT(c, now);
	if (slot < 0 || slot >= c->nslots || c->slot[slot].state == SCHED_SLOT_ONLINE)
		return;
	/* From GOING_OFF: the holder was asked to leave and still will; the
	 * slot is then refilled like any other (maybe by the same vCPU). */
	c->slot[slot].state = SCHED_SLOT_ONLINE;
	c->nusable++;
	sc_trace(c, SCHED_TR_SLOT_ON, -1, slot, now);
	sc_fill_slots(c, now);
	sc_force_unslotted(c, now);
}

bool sched_core_slot_offline(struct sched_core *c, int slot, uint64_t now)
{
	SC_EVENT(c, now);
	if (slot < 0 || slot >= c->nslots)
		return false;
	switch (c->slot[slot].state) {
	case SCHED_SLOT_GOING_OFF:
		return true; /* SLOT_OFF comes when the holder leaves */
	case SCHED_SLOT_OFFLINE:
		/* Its SLOT_OFF was said when it went off. Saying it again would
		 * answer a stale request as if it were about the slot's next
		 * grant, which a domain member may be bringing online on another
		 * thread at this moment: that grant would be given back to the
		 * agent while its vCPU runs (test_domain's slot bound). */
		return false;
	case SCHED_SLOT_ONLINE:
		break;
	}
	sc_slot_go_off(c, slot, true, now);
	return true;
}

/* An ONLINE slot goes offline: at once if free, else when its holder
 * leaves (asked as at a slice end, unless it is leaving now: !ask). */
void sc_slot_go_off(struct sched_core *c, int slot, bool ask, uint64_t now)
{
	struct sched_slot *sl = &c->slot[slot];
	c->nusable--;
	if (sl->vcpu < 0) {
		sc_slot_freed(c, slot, now);
		return;
	}
	sl->state = SCHED_SLOT_GOING_OFF;
	/* As at a slice end: with deferral the guest leaves at its next lock
	 * boundary, within defer_max_ns. */
	if (ask)
		sched_core_request_preempt(c, sl->vcpu, now);
}

/*
 * The floor keeps a slice past its own length only while its holder gets
 * work done. One spinning for a sibling that is off its slot (a ticket
 * waiter whose turn is there, under a policy that ignores spins) would
 * waste the whole floor, and a lock convoy would last a floor per round:
 * its slice ends now, as it would have without the floor. A spin for a
 * sibling that runs is a lock changing hands: ending the slice there would
 * force the waiter out holding its ticket (it is in a lock region, so it
 * goes at the hard deadline, not a safe point), and that one forced-out
 * ticket seeds the very convoy this rule is for. Called on every spin the
 * core takes (spin_event), whatever its source, with the sibling it names
 * (-1: not known, no end).
 */
void sc_floor_spun(struct sched_core *c, int v, int target, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (c->slice_ns <= c->base_slice_ns || x->state != SCHED_ST_RUNNING || x->slot < 0)
		return;
	if (target < 0 || target == v || c->v[target].state == SCHED_ST_RUNNING)
		return;
	struct sched_slot *sl = &c->slot[x->slot];
	if (sl->floor_off || now - sl->slice_start < c->base_slice_ns)
		return;
	sl->floor_off = true;
	x->st.floor_spin_ends++;
}

/*
 * A seat's holder queued in a lock (a ticket whose turn is off its seat) is
 * forced out inside its lock region when the domain revokes the seat, or
 * when the floor's spin rule ends its slice there. It then holds a ticket
 * every sibling that runs will queue behind, and those are forced out in
 * turn, each holding one: a convoy in which the pick's order never matches
 * the tickets' (traced under `--yield pv`: a member at 4k ops/s next to
 * three at 105k, for the whole run, with or without the floor). While such
 * a vCPU waits, every holder leaves at its next lock boundary (a deferred
 * preemption: it yields at the release before it takes a new ticket, or is
 * forced at defer_max if it spins), and the queued ticket holders run first
 * (pick_in_critical): each finishes its lock region and leaves, so the
 * convoy drains in a few hand-offs instead of a slice per waiter. Only for
 * seats (slots_offline): one process's slots are never revoked, and there
 * a vCPU handed off inside a lock region (a directed yield) is no convoy.
 * Not for gang, which keeps its own order (the pick would not run the
 * ticket holders first, so asking would only add switches).
 */
static void sc_lock_drain(struct sched_core *c, uint64_t now)
{
	if (!c->slots_offline || !c->defer || c->crit_head < 0 || c->pol == &sched_policy_gang)
		return;
	bool forced = false;
	for (int v = c->crit_head; v >= 0 && !forced; v = c->v[v].cnext)
		forced = c->v[v].crit_forced;
	if (!forced)
		return;
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		/* one granted but not back yet is asked when it is (resumed
		 * drops a request made before it ran) */
		if (v < 0 || c->v[v].state != SCHED_ST_RUNNING || sc_outgoing(&c->v[v]) || c->v[v].resume_due)
			continue;
		c->v[v].st.lock_drains++;
		sched_core_request_preempt(c, v, now);
	}
}

void sched_core_slot_lease(struct sched_core *c, int slot, uint64_t end, uint64_t now)
{
	SC_EVENT(c, now);
	if (!c->slots_offline || slot < 0 || slot >= c->nslots || c->slot[slot].lease_end == end)
		return;
	c->slot[slot].lease_end = end;
	int v = c->slot[slot].vcpu; /* a renewed lease: its guest times the new end */
	if (c->lease_on && v >= 0 && c->v[v].state == SCHED_ST_RUNNING && !sc_outgoing(&c->v[v]))
		sc_gslice_new_slice(c, v, now);
}

void sched_core_set_lease(struct sched_core *c, bool on, uint64_t now)
{
	SC_EVENT(c, now);
	if (on == c->lease_on)
		return;
	c->lease_on = on;
	c->gs_dirty = true; /* `contended` follows it */
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0 || c->v[v].state != SCHED_ST_RUNNING || sc_outgoing(&c->v[v]))
			continue;
		/* A slice that ran out while no sibling queued starts again: it
		 * ended nothing, and the lease, not it, is what ends it now. */
		if (on && now - c->slot[s].slice_start >= sc_own_slice(c, s))
			sc_slice_restart(c, s, now);
		sc_gslice_new_slice(c, v, now);
	}
}

/* At a tick: a seat whose lease is over and whose guest has not yielded
 * by its hard deadline goes back, its holder forced out. */
void sc_lease_ends(struct sched_core *c, uint64_t now)
{
	for (int s = 0; s < c->nslots && c->lease_on; s++) {
		int v = c->slot[s].vcpu;
		uint64_t cut = sc_lease_cut(c, s);
		if (!cut || now < cut || c->slot[s].state != SCHED_SLOT_ONLINE || (v >= 0 && sc_outgoing(&c->v[v])))
			continue;
		if (now < sc_gslice_hard(c, s))
			continue; /* cut > 0: its guest times its slice */
		/* Its guest did not yield by the hard deadline: out now, as a
		 * guest-timed slice's hard end, before the agent's slice end
		 * (LEASE_MARGIN_NS > --defer-us), not through a second deferral. */
		c->v[v].st.lease_ends++;
		c->v[v].st.deferrals_hard++;
		sc_trace(c, SCHED_TR_DEFER_HARD, v, -1, now);
		sc_slot_go_off(c, s, false, now);
		sc_force_out(c, v, true, now);
	}
}

void sched_core_set_slice_floor(struct sched_core *c, uint64_t ns, uint64_t now)
{
	SC_EVENT(c, now);
	uint64_t want = ns > c->base_slice_ns ? ns : c->base_slice_ns;
	if (want == c->slice_ns)
		return;
	c->slice_ns = want;
	sc_trace(c, SCHED_TR_SLICE_FLOOR, -1, (int)(ns / 1000), now);
	/* a guest timing its own slice would otherwise claim at the old end */
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v >= 0 && c->v[v].state == SCHED_ST_RUNNING && !sc_outgoing(&c->v[v]))
			sc_gslice_new_slice(c, v, now);
	}
}
