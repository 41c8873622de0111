/*
 * Guest-timed slices (params.guest_slice, issue 13).
 *
 * With safe points, every slice end used to cost the VMM a timer wake-up:
 * the event loop woke at the slice end only to write preempt_pending, and
 * the guest then yielded at its next lock boundary. A guest that opts in
 * (hint.guest_slice) times the slice itself instead: at each grant the core
 * tells it how long its slice is (NEW_SLICE), and while anyone queues for a
 * slot it sees `contended`. At a lock boundary past its slice end, with
 * contended set, it calls yield_to(-1). The core arms only the hard
 * deadline for it (the slice end, or the moment someone began to queue if
 * that is later, plus defer_max_ns), so a guest that does not keep its word
 * is forced out there, exactly as a deferral that ran out.
 *
 * The guest's opt-in is learnt on its own thread's events (resumed, spin,
 * safe point), so a first slice may still end the old way.
 *
 * The guest's clock starts when it first sees the new slice, after the
 * core's (which starts at sched_core_resumed), so a guest that says its
 * slice is over is right by the core's clock too; a small tolerance covers
 * the two clocks' rates. An early or needless claim is declined once:
 * the guest stops timing that slice (ABI.md 7), and the core falls back to
 * a preempt_pending request for it, so a declined claim costs no fairness.
 */
#include "sched/core.h"
#include "sched/core_int.h"
#include "sched/policy.h"

bool sc_gslice(const struct sched_core *c, int v)
{
	const struct sched_vcore *x = &c->v[v];
	return c->guest_slice && c->defer && c->pol != &sched_policy_gang && x->gs_guest &&
	       !x->gs_declined && x->state == SCHED_ST_RUNNING;
}

/* The opt-in is read on the guest's own events only (it is set once, at
 * start), so the deadline and tick paths cost no shared-page read. */
void sc_gslice_learn(struct sched_core *c, int v)
{
	if (c->guest_slice)
		c->v[v].gs_guest = sched_core_get_hint(c, v).guest_slice;
}

uint64_t sc_gslice_hard(const struct sched_core *c, int slot)
{
	uint64_t end = c->slot[slot].slice_start + sc_full_slice(c, slot);
	if (c->contended_since > end)
		end = c->contended_since;
	return end + c->defer_max_ns;
}

static bool sc_gslice_expired(const struct sched_core *c, int v, uint64_t now)
{
	const struct sched_vcore *x = &c->v[v];
	uint64_t full = sc_full_slice(c, x->slot);
	return now + full / 64 >= c->slot[x->slot].slice_start + full;
}

/* Queued vCPUs that no slot already on its way back will take. */
static int sc_gslice_waiting(const struct sched_core *c)
{
	int n = c->nrunnable;
	for (int s = 0; s < c->nslots && n > 0; s++) {
		int v = c->slot[s].vcpu;
		if (v >= 0 && sc_outgoing(&c->v[v]) && !sc_leaving(c, v))
			n--;
	}
	return n;
}

/* v is at a safe point with no request pending (a yield_to(-1), or a SPIN
 * outside any lock region): true if its slice ends here. A yield_to(-1) is
 * the guest's claim, declined once if refused (decline); a SPIN only ends a
 * slice that is over, and is no claim. */
bool sc_gslice_claim(struct sched_core *c, int v, uint64_t now, bool decline)
{
	struct sched_vcore *x = &c->v[v];
	if (sc_gslice_expired(c, v, now) && sc_lease_ends_slice(c, x->slot)) {
		/* a seat's lease is over: it goes back with this yield */
		x->st.guest_slice_yields++;
		x->st.lease_ends++;
		sc_trace(c, SCHED_TR_SLICE_GUEST, v, -1, now);
		sc_slot_go_off(c, x->slot, false, now);
		return true;
	}
	if (sc_gslice_expired(c, v, now) && sc_gslice_waiting(c) > 0) {
		x->st.guest_slice_yields++;
		sc_trace(c, SCHED_TR_SLICE_GUEST, v, -1, now);
		return true;
	}
	if (!decline)
		return false;
	x->gs_declined = true;
	x->st.guest_slice_declined++;
	return false;
}

void sc_gslice_new_slice(struct sched_core *c, int v, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (!c->guest_slice)
		return;
	uint64_t end = c->slot[x->slot].slice_start + sc_full_slice(c, x->slot);
	uint64_t left = end > now ? end - now : 0;
	x->gs_declined = false;
	sc_emit(c, SCHED_ACT_NEW_SLICE, v, (int)(left / 1000));
}

/* v's guest just acknowledged the guest-timed slice fields (ABI.md 4.3):
 * until then the glue dropped their writes, so its page holds none. Say
 * the slice it is in (what is left of it, under a new number) and
 * `contended` now, and learn its opt-in: a guest that set guest_slice
 * before its ack times this very slice, not only its next one. */
void sched_core_features_acked(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	if (!c->guest_slice || x->state != SCHED_ST_RUNNING)
		return;
	sc_gslice_learn(c, v);
	sc_gslice_new_slice(c, v, now);
	sc_emit(c, SCHED_ACT_SET_CONTENDED, v, x->contended);
}

/* After every event: `contended` in every slot holder's page says whether
 * anyone queues. Only a change of the flag or a grant costs a pass. */
void sc_gslice_sync(struct sched_core *c)
{
	bool want = c->nrunnable > 0 || c->lease_on;
	bool changed = want != c->contended;
	if (changed) {
		c->contended = want;
		if (want)
			c->contended_since = c->last_now;
	}
	if (!c->guest_slice || (!changed && !c->gs_dirty))
		return;
	c->gs_dirty = false;
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0 || c->v[v].contended == want)
			continue;
		c->v[v].contended = want;
		sc_emit(c, SCHED_ACT_SET_CONTENDED, v, want);
	}
}
