/*
 * Bookkeeping shared by core.c and core_events.c; not for policies or
 * callers (they use core.h).
 */
#ifndef VMM_SCHED_CORE_INT_H
#define VMM_SCHED_CORE_INT_H

#include "sched/core.h"
#include "sched/policy.h"

void sc_emit(struct sched_core *c, enum sched_action_kind k, int v, int val);
void sc_set_state(struct sched_core *c, int v, enum sched_vstate s, uint64_t now);
void sc_set_preempted(struct sched_core *c, int v, bool on);
void sc_set_pending(struct sched_core *c, int v, bool on);
void sc_set_kick_pending(struct sched_core *c, int v, bool on);
void sc_make_runnable(struct sched_core *c, int v, bool front, uint64_t now);
void sc_release(struct sched_core *c, int v, int to, uint64_t now);
void sc_fill_slots(struct sched_core *c, uint64_t now);
void sc_check_deadlock(struct sched_core *c, uint64_t now);
void sc_begin(struct sched_core *c, uint64_t now);
/* Every public event: sc_begin now, sc_end_event on every way out. */
void sc_end_event(struct sched_core *const *cp);
#define SC_EVENT(c, now)                                                      \
	__attribute__((cleanup(sc_end_event))) struct sched_core *const sc_ev_ = \
		(c);                                                          \
	sc_begin(sc_ev_, now)
/* core_slots.c */
void sc_slot_freed(struct sched_core *c, int slot, uint64_t now);
void sc_floor_spun(struct sched_core *c, int v, int target, uint64_t now);
void sc_slot_go_off(struct sched_core *c, int slot, bool ask, uint64_t now);
void sc_force_out(struct sched_core *c, int v, bool counted, uint64_t now);
void sc_lease_ends(struct sched_core *c, uint64_t now);
/* core_sticky.c */
int sc_place(const struct sched_core *c, int v, int s);
void sc_sticky_grant(struct sched_core *c, int v, int slot);
/* core_index.c */
int sc_index_init(struct sched_core *c);
void sc_index_fini(struct sched_core *c);
void sc_index_leave(struct sched_core *c, int v, enum sched_vstate s);
void sc_index_enter(struct sched_core *c, int v, enum sched_vstate s);
void sc_index_restart_ages(struct sched_core *c);
void sc_index_q_pushed(struct sched_core *c, int v, bool front, bool crit);
void sc_index_q_removed(struct sched_core *c, int v);
/* core_check_index.c: NULL, or the index that is wrong */
const char *sc_check_index(const struct sched_core *c);
/* The slice length now: wake_slice_ns while a woken vCPU queues. */
static inline bool sc_slice_cut(const struct sched_core *c)
{
	return c->nwoken > 0 && c->wake_slice_ns && c->wake_slice_ns < c->slice_ns &&
	       c->pol != &sched_policy_gang;
}

/* Slot s's own full slice: the floor's, unless its holder spun past its
 * own (core_slots.c, sc_floor_spun). */
static inline uint64_t sc_own_slice(const struct sched_core *c, int s)
{
	return c->slot[s].floor_off ? c->base_slice_ns : c->slice_ns;
}

bool sc_gslice(const struct sched_core *c, int v);

/* When seat s's slice ends at its lease (its end less the margin) while
 * another member waits; 0: no lease in force (core_slots.c). Only for a
 * holder whose guest times its slice: it yields there by itself. One that
 * does not would need the member's own timer and a deferral, which ends
 * after the agent's slice end often enough that the agent's revoke comes
 * too (the shootdown cells, docs/benchmarks-history.md); its seat goes at the agent's
 * revoke, as before leases. */
static inline uint64_t sc_lease_cut(const struct sched_core *c, int s)
{
	const struct sched_slot *sl = &c->slot[s];
	if (!c->lease_on || !sl->lease_end || sl->vcpu < 0 || !sc_gslice(c, sl->vcpu))
		return 0;
	return sl->lease_end > LEASE_MARGIN_NS ? sl->lease_end - LEASE_MARGIN_NS : 1;
}

/* Slot s's full slice: its own, or less where the lease ends it first. */
static inline uint64_t sc_full_slice(const struct sched_core *c, int s)
{
	uint64_t full = sc_own_slice(c, s), cut = sc_lease_cut(c, s), start = c->slot[s].slice_start;
	if (cut && cut < start + full)
		full = cut > start ? cut - start : 0;
	return full;
}

/* The lease, not the holder's own slice, ends slot s's slice. */
static inline bool sc_lease_ends_slice(const struct sched_core *c, int s)
{
	uint64_t cut = sc_lease_cut(c, s);
	return cut && cut <= c->slot[s].slice_start + sc_own_slice(c, s) &&
	       c->slot[s].state == SCHED_SLOT_ONLINE;
}

static inline uint64_t sc_slice_ns(const struct sched_core *c, int s)
{
	return sc_slice_cut(c) ? c->wake_slice_ns : sc_full_slice(c, s);
}

/* Slot s's holder starts a slice now (the floor holds it again). */
static inline void sc_slice_restart(struct sched_core *c, int s, uint64_t now)
{
	c->slot[s].slice_start = now;
	c->slot[s].floor_off = false;
}

static inline void sc_mark_woken(struct sched_core *c, int v)
{
	struct sched_vcore *x = &c->v[v];
	if (x->state == SCHED_ST_RUNNABLE && !x->woken) {
		x->woken = true;
		c->nwoken++;
	}
}

/* core_gslice.c */
bool sc_gslice(const struct sched_core *c, int v);
void sc_gslice_learn(struct sched_core *c, int v);
uint64_t sc_gslice_hard(const struct sched_core *c, int slot);
bool sc_gslice_claim(struct sched_core *c, int v, uint64_t now, bool decline);
void sc_gslice_new_slice(struct sched_core *c, int v, uint64_t now);
void sc_gslice_sync(struct sched_core *c);
/* core_halts.c */
void sc_halt_checks(struct sched_core *c, uint64_t now);
void sc_unpark(struct sched_core *c, int v, bool in_guest, uint64_t now);
void sc_force_unslotted(struct sched_core *c, uint64_t now);

static inline void sc_trace(struct sched_core *c, enum sched_trace_ev ev, int v,
			 int arg, uint64_t now)
{
	if (c->trace)
		c->trace(c->trace_ctx, ev, v, arg, now);
}

static inline bool sc_outgoing(const struct sched_vcore *x)
{
	return x->preempt_req || x->preempt_pending;
}

/* v holds a GOING_OFF slot: it must leave whether anyone queues or not. */
static inline bool sc_leaving(const struct sched_core *c, int v)
{
	const struct sched_vcore *x = &c->v[v];
	return x->state == SCHED_ST_RUNNING &&
	       c->slot[x->slot].state == SCHED_SLOT_GOING_OFF;
}

#endif
