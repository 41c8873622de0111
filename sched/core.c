/*
 * The pure co-scheduler state machine; see core.h. Policies decide *who*;
 * this file keeps the bookkeeping (slots, run queue, time accounting,
 * deferral, deadlock) and turns decisions into actions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core.h"
#include "sched/core_int.h"
#include "sched/policy.h"

/* ---- actions and trace ---- */

void sc_emit(struct sched_core *c, enum sched_action_kind k, int v, int val)
{
	if (c->nact == c->act_cap) {
		/* Sized for the worst event up front; this only runs if a new
		 * event kind outgrows it. */
		int cap = c->act_cap * 2;
		struct sched_action *a = realloc(c->act, sizeof(*a) * (size_t)cap);
		if (!a)
			abort();
		c->act = a;
		c->act_cap = cap;
	}
	c->act[c->nact++] = (struct sched_action){ k, v, val };
}


struct sched_hint sched_core_get_hint(const struct sched_core *c, int v)
{
	struct sched_hint h = { 0, false, -1, false };
	if (c->hint)
		c->hint(c->hint_ctx, v, &h);
	return h;
}

uint64_t sched_core_rand(struct sched_core *c)
{
	uint64_t z = (c->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- run queue ---- */

static void q_remove(struct sched_core *c, int v)
{
	struct sched_vcore *x = &c->v[v];
	sc_index_q_removed(c, v);
	if (x->qprev >= 0)
		c->v[x->qprev].qnext = x->qnext;
	else
		c->qhead = x->qnext;
	if (x->qnext >= 0)
		c->v[x->qnext].qprev = x->qprev;
	else
		c->qtail = x->qprev;
	x->qprev = x->qnext = -1;
}

/* crit: v is inside a lock region (the deferral runs it first) */
static void q_push(struct sched_core *c, int v, bool front, bool crit)
{
	struct sched_vcore *x = &c->v[v];
	sc_index_q_pushed(c, v, front, crit);
	if (front) {
		x->qprev = -1;
		x->qnext = c->qhead;
		if (c->qhead >= 0)
			c->v[c->qhead].qprev = v;
		else
			c->qtail = v;
		c->qhead = v;
	} else {
		x->qnext = -1;
		x->qprev = c->qtail;
		if (c->qtail >= 0)
			c->v[c->qtail].qnext = v;
		else
			c->qhead = v;
		c->qtail = v;
	}
}

/* ---- state changes (all time accounting happens here) ---- */

void sc_set_state(struct sched_core *c, int v, enum sched_vstate s, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	uint64_t d = now > x->state_since ? now - x->state_since : 0;
	switch (x->state) {
	case SCHED_ST_RUNNING: x->st.ns_running += d; c->nrunning--; break;
	case SCHED_ST_RUNNABLE:
		x->st.ns_runnable += d;
		c->nrunnable--;
		q_remove(c, v);
		if (x->woken) {
			x->woken = false;
			c->nwoken--;
		}
		break;
	case SCHED_ST_WAITING: x->st.ns_waiting += d; break;
	case SCHED_ST_IDLE: x->st.ns_idle += d; break;
	case SCHED_ST_DONE: break;
	}
	sc_index_leave(c, v, x->state);
	x->state = s;
	x->state_since = now;
	static const enum sched_trace_ev tr[] = {
		[SCHED_ST_RUNNING] = SCHED_TR_GRANT, [SCHED_ST_RUNNABLE] = SCHED_TR_RUNNABLE,
		[SCHED_ST_WAITING] = SCHED_TR_WAITING, [SCHED_ST_IDLE] = SCHED_TR_IDLE,
		[SCHED_ST_DONE] = SCHED_TR_DONE,
	};
	if (s == SCHED_ST_RUNNING)
		c->nrunning++;
	else if (s == SCHED_ST_RUNNABLE)
		c->nrunnable++;
	sc_index_enter(c, v, s);
	sc_trace(c, tr[s], v, s == SCHED_ST_RUNNING ? x->slot : -1, now);
}

void sc_set_preempted(struct sched_core *c, int v, bool on)
{
	if (c->v[v].preempted != on) {
		c->v[v].preempted = on;
		sc_emit(c, SCHED_ACT_SET_PREEMPTED, v, on);
	}
}

/* Each request gets its own number (1, 2, ... per vCPU, never 0), so a
 * guest tells a new request from the one it just answered (ABI.md 7). */
void sc_set_pending(struct sched_core *c, int v, bool on)
{
	struct sched_vcore *x = &c->v[v];
	if (x->preempt_pending != on) {
		x->preempt_pending = on;
		if (on)
			x->pending_seq = x->pending_seq % 0x7fffffff + 1;
		sc_emit(c, SCHED_ACT_SET_PREEMPT_PENDING, v, on ? (int)x->pending_seq : 0);
	}
}

void sc_set_kick_pending(struct sched_core *c, int v, bool on)
{
	if (c->v[v].kick_pending != on) {
		c->v[v].kick_pending = on;
		sc_emit(c, SCHED_ACT_SET_KICK_PENDING, v, on);
	}
}

void sc_make_runnable(struct sched_core *c, int v, bool front, uint64_t now)
{
	sc_set_state(c, v, SCHED_ST_RUNNABLE, now);
	c->v[v].crit_forced = false; /* sched_core_yield says if it was */
	/* Read once, here: a queued vCPU runs no guest code (core_index.c). */
	q_push(c, v, front, c->defer && sched_core_get_hint(c, v).in_critical);
}

static void sc_requeue_front(struct sched_core *c, int v)
{
	bool crit = c->v[v].q_crit;
	q_remove(c, v);
	q_push(c, v, true, crit);
}

/* fresh: a new slice starts; otherwise v inherits the rest of the slot's
 * slice, so chains of hand-offs cannot keep a slot from the queue. */
static void sc_grant(struct sched_core *c, int v, int slot, bool fresh, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	sc_sticky_grant(c, v, slot);
	c->slot[slot].vcpu = v;
	if (fresh)
		sc_slice_restart(c, slot, now);
	x->resume_due = true;
	x->fresh_slice = fresh;
	c->gs_dirty = true;
	x->slot = slot;
	x->preempt_req = false;
	x->handoff_to = -1;
	x->unslotted = x->unslotted_forced = false;
	sc_set_state(c, v, SCHED_ST_RUNNING, now);
	sc_set_pending(c, v, false);
	sc_set_preempted(c, v, false);
	sc_emit(c, SCHED_ACT_GRANT, v, slot);
}

/* v (RUNNING) leaves its slot; the caller sets its new state. If `to` is a
 * RUNNABLE vCPU it gets the slot at once (a yield or hand-off). */
void sc_release(struct sched_core *c, int v, int to, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	int slot = x->slot;
	c->slot[slot].vcpu = -1;
	x->slot = -1;
	x->preempt_req = false;
	x->handoff_to = -1;
	sc_set_pending(c, v, false);
	if (c->slot[slot].state == SCHED_SLOT_GOING_OFF) {
		/* The slot leaves with v: a receiver is first in line instead. */
		if (to >= 0 && to != v && c->v[to].state == SCHED_ST_RUNNABLE)
			sc_requeue_front(c, to);
		sc_slot_freed(c, slot, now);
		return;
	}
	if (to >= 0 && to != v && c->v[to].state == SCHED_ST_RUNNABLE) {
		sc_grant(c, to, slot, false, now);
		x->st.yields_given++;
		c->v[to].st.yields_received++;
		sc_trace(c, SCHED_TR_YIELD, v, to, now);
	}
}

/*
 * With safe points, a vCPU is preempted inside a lock region only by the
 * hard deadline; it then holds a ticket or queue place that every running
 * vCPU will wait for, and the ones queued behind it are forced out in turn.
 * Running queued lock holders and waiters first drains such a convoy in a
 * few hand-offs instead of one hard deadline per waiter. The guest could
 * claim a lock region forever to jump the queue, so this stops once anyone
 * has waited a full round: nobody waits more than two rounds. Gang keeps
 * its own order.
 */
static int pick_in_critical(struct sched_core *c, uint64_t now)
{
	uint64_t limit = (uint64_t)c->nvcpus * (c->slice_ns + c->defer_max_ns);
	int oldest = sched_vheap_min(&c->age_heap);
	if (oldest >= 0 && now - c->v[oldest].state_since > limit)
		return -1;
	return c->crit_head;
}

static int pick(struct sched_core *c, int slot, uint64_t now)
{
	if (c->defer && c->pol != &sched_policy_gang) {
		int v = pick_in_critical(c, now);
		if (v >= 0)
			return v;
	}
	if (c->pol->pick_next)
		return c->pol->pick_next(c, slot, now);
	return c->qhead;
}

/* The policy says who, in its order; which free slot the pick gets is the
 * core's (sc_place: its last one if free). Slot s stays on offer until a
 * pick takes it or the policy leaves it empty, so every pass grants or
 * moves on; placing costs O(slots) per grant at most. */
void sc_fill_slots(struct sched_core *c, uint64_t now)
{
	if (c->stopping || c->deadlock)
		return;
	for (int s = 0; s < c->nslots && c->nrunnable > 0; s++) {
		while (c->nrunnable > 0 && c->slot[s].vcpu < 0 && sched_core_slot_usable(c, s)) {
			int v = pick(c, s, now);
			if (v < 0 || c->v[v].state != SCHED_ST_RUNNABLE)
				break;
			sc_grant(c, v, sc_place(c, v, s), true, now);
		}
	}
}

void sc_check_deadlock(struct sched_core *c, uint64_t now)
{
	if (c->deadlock || c->stopping)
		return;
	/* A WAITING vCPU never has a kick pending (a kick wakes it), so
	 * "every live vCPU waits forever" is a comparison of two counts. */
	int live = c->nvcpus - c->ndone;
	if (!live || c->nstuck != live)
		return;
	c->deadlock = true;
	sc_trace(c, SCHED_TR_DEADLOCK, -1, -1, now);
	sc_emit(c, SCHED_ACT_WAKE_ALL, -1, -EDEADLK);
}

/* Every event starts here: actions of the previous one must be drained. */
void sc_begin(struct sched_core *c, uint64_t now)
{
	if (now > c->last_now)
		c->last_now = now;
}

/* ---- creation ---- */

/* The parameters, with their defaults, into a zeroed core. */
static void take_params(struct sched_core *c, const struct sched_params *p, int nvms, const struct sched_policy *pol,
			sched_core_hint_fn hint, void *hint_ctx)
{
	c->nvcpus = p->nvcpus;
	c->nslots = p->npcpus;
	c->nvms = nvms;
	c->slice_ns = c->base_slice_ns = p->slice_ns ? p->slice_ns : SCHED_DEFAULT_SLICE_NS;
	c->ple_window_ns = p->ple_window_ns ? p->ple_window_ns : SCHED_DEFAULT_PLE_WINDOW_NS;
	c->defer_max_ns = p->defer_max_ns ? p->defer_max_ns : SCHED_DEFAULT_DEFER_MAX_NS;
	c->defer = p->defer;
	c->guest_slice = p->guest_slice;
	c->wake_slice_ns = p->wake_slice_ns;
	c->halt_check_ns = p->halt_check_ns;
	c->spin_sources = p->spin_sources;
	c->slots_offline = p->slots_offline;
	c->demand = -1;
	c->pol = pol;
	c->rng = p->seed;
	c->hint = hint;
	c->hint_ctx = hint_ctx;
	c->trace = p->trace;
	c->trace_ctx = p->trace_ctx;
}

struct sched_core *sched_core_create(const struct sched_params *p,
				     sched_core_hint_fn hint, void *hint_ctx,
				     const char **why)
{
	static const char *dummy;
	if (!why)
		why = &dummy;
	if (p->nvcpus < 1 || p->npcpus < 1) {
		*why = "need at least one vCPU and one physical CPU slot";
		return NULL;
	}
	const struct sched_policy *pol = sched_policy_find(p->policy ? p->policy : "none");
	if (!pol) {
		*why = "unknown scheduling policy";
		return NULL;
	}
	int nvms = p->nvms > 0 ? p->nvms : 1;
	for (int v = 0; p->vm_of && v < p->nvcpus; v++) {
		if (p->vm_of[v] < 0 || p->vm_of[v] >= nvms) {
			*why = "vCPU mapped to a VM out of range";
			return NULL;
		}
	}
	struct sched_core *c = calloc(1, sizeof(*c));
	if (!c) {
		*why = "out of memory";
		return NULL;
	}
	take_params(c, p, nvms, pol, hint, hint_ctx);
	c->qhead = c->qtail = -1;
	c->v = calloc((size_t)c->nvcpus, sizeof(*c->v));
	c->slot = calloc((size_t)c->nslots, sizeof(*c->slot));
	c->ended = calloc((size_t)c->nslots, sizeof(*c->ended));
	c->act_cap = 8 * (c->nvcpus + c->nslots) + 16;
	c->act = calloc((size_t)c->act_cap, sizeof(*c->act));
	if (!c->v || !c->slot || !c->ended || !c->act)
		goto oom;
	for (int v = 0; v < c->nvcpus; v++)
		c->v[v].vm = p->vm_of ? p->vm_of[v] : 0;
	if (sc_index_init(c) < 0)
		goto oom;
	for (int s = 0; s < c->nslots; s++) {
		c->slot[s].vcpu = c->slot[s].last_vcpu = -1;
		c->slot[s].state = p->slots_offline ? SCHED_SLOT_OFFLINE : SCHED_SLOT_ONLINE;
	}
	c->nusable = p->slots_offline ? 0 : c->nslots;
	/* Every vCPU starts RUNNABLE, queued in index order: its thread may
	 * be granted a slot before it first calls enter. */
	for (int v = 0; v < c->nvcpus; v++) {
		struct sched_vcore *x = &c->v[v];
		x->slot = x->handoff_to = x->last_slot = -1;
		x->qprev = x->qnext = -1;
		x->wait_deadline = UINT64_MAX;
		x->state = SCHED_ST_RUNNABLE;
		c->nrunnable++;
		sc_index_enter(c, v, SCHED_ST_RUNNABLE);
		q_push(c, v, false, false);
	}
	if (pol->init && pol->init(c) < 0) {
		if (pol->fini)
			pol->fini(c); /* what a half-done init allocated */
		goto oom;
	}
	return c;
oom:
	*why = "out of memory";
	sc_index_fini(c);
	free(c->v);
	free(c->slot);
	free(c->ended);
	free(c->act);
	free(c);
	return NULL;
}

void sched_core_destroy(struct sched_core *c)
{
	if (!c)
		return;
	if (c->pol->fini)
		c->pol->fini(c);
	sc_index_fini(c);
	free(c->v);
	free(c->slot);
	free(c->ended);
	free(c->act);
	free(c);
}

void sched_core_start(struct sched_core *c, uint64_t now)
{
	SC_EVENT(c, now);
	if (c->started)
		return;
	c->started = true;
	for (int v = 0; v < c->nvcpus; v++)
		c->v[v].state_since = now;
	sc_index_restart_ages(c);
	c->next_hint_check = now + c->ple_window_ns;
	c->next_halt_check = now + c->halt_check_ns;
	sc_fill_slots(c, now);
}

/* ---- queries ---- */

/* t to slot s's deadline (slot_d) or to the one shared (*d). */
static inline void put_deadline(uint64_t *slot_d, int s, uint64_t t, uint64_t *d)
{
	uint64_t *at = slot_d ? &slot_d[s] : d;
	if (t < *at)
		*at = t;
}

/* Inlined into both callers, so the one without slot_d (every event's
 * next deadline) compiles to the loops it had before the split: the cost
 * guard counts its instructions (tests/cost_budgets.json). */
static inline __attribute__((always_inline)) uint64_t deadlines(const struct sched_core *c,
								uint64_t *slot_d)
{
	for (int s = 0; slot_d && s < c->nslots; s++)
		slot_d[s] = UINT64_MAX;
	if (!c->started || c->stopping || c->deadlock)
		return UINT64_MAX;
	uint64_t d = UINT64_MAX;
	int nout = 0, w = sched_vheap_min(&c->wait_heap);
	if (w >= 0)
		d = c->v[w].wait_deadline;
	/* Only slot holders run: their deadlines, not every vCPU's. */
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0)
			continue;
		const struct sched_vcore *x = &c->v[v];
		/* a holder leaving a GOING_OFF slot frees nothing for the queue */
		if (x->state == SCHED_ST_RUNNING && sc_outgoing(x) && !sc_leaving(c, v))
			nout++;
		if (x->state == SCHED_ST_RUNNING && x->preempt_pending && !x->preempt_req)
			put_deadline(slot_d, s, x->defer_deadline, &d);
	}
	if (c->nrunnable > nout) {
		for (int s = 0; s < c->nslots; s++) {
			int v = c->slot[s].vcpu;
			if (v < 0 || sc_outgoing(&c->v[v]))
				continue;
			uint64_t t = sc_gslice(c, v) && !sc_slice_cut(c) ? sc_gslice_hard(c, s) :
				     c->slot[s].slice_start + sc_slice_ns(c, s);
			put_deadline(slot_d, s, t, &d);
		}
	}
	/* seats' leases, whoever queues here (another member waits) */
	for (int s = 0; s < c->nslots && c->lease_on; s++) {
		const struct sched_slot *sl = &c->slot[s];
		int v = sl->vcpu;
		uint64_t cut = sc_lease_cut(c, s);
		if (!cut || sl->state != SCHED_SLOT_ONLINE || (v >= 0 && sc_outgoing(&c->v[v])))
			continue;
		put_deadline(slot_d, s, v >= 0 && sc_gslice(c, v) ? sc_gslice_hard(c, s) : cut, &d);
	}
	if ((c->spin_sources & SCHED_SPIN_HINT) && c->nrunnable > 0 && c->nrunning > 0 &&
	    c->next_hint_check < d)
		d = c->next_hint_check;
	if (c->halt_check_ns && c->blocked && c->next_halt_check < d)
		d = c->next_halt_check;
	if (c->pol->deadline) {
		uint64_t t = c->pol->deadline(c);
		if (t < d)
			d = t;
	}
	/* A slice that ran out while nobody queued ends now, not in the past. */
	for (int s = 0; slot_d && s < c->nslots; s++)
		if (slot_d[s] < c->last_now)
			slot_d[s] = c->last_now;
	return d < c->last_now ? c->last_now : d;
}

uint64_t sched_core_deadlines(const struct sched_core *c, uint64_t *slot_d)
{
	return deadlines(c, slot_d);
}

uint64_t sched_core_next_deadline(const struct sched_core *c)
{
	return deadlines(c, NULL);
}

void sched_core_stats(const struct sched_core *c, int v, uint64_t now,
		      struct sched_vcpu_stats *out)
{
	const struct sched_vcore *x = &c->v[v];
	*out = x->st;
	uint64_t d = now > x->state_since ? now - x->state_since : 0;
	switch (x->state) {
	case SCHED_ST_RUNNING: out->ns_running += d; break;
	case SCHED_ST_RUNNABLE: out->ns_runnable += d; break;
	case SCHED_ST_WAITING: out->ns_waiting += d; break;
	case SCHED_ST_IDLE: out->ns_idle += d; break;
	case SCHED_ST_DONE: break;
	}
}
