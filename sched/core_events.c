/*
 * The core's events: ticks (timeouts, deferrals, slice ends, hint spin
 * checks), spins, waits and kicks, done and stop. Bookkeeping lives in
 * core.c; policy decisions in policy_*.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "sched/core.h"
#include "sched/core_int.h"
#include "sched/policy.h"

/* ---- preemption ---- */

/* counted: a preemption (not a yield the scheduler carries out for v) */
void sc_force_out(struct sched_core *c, int v, bool counted, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->preempt_req)
		return;
	x->preempt_req = true;
	if (counted)
		x->st.preemptions++;
	sc_emit(c, SCHED_ACT_FORCE_EXIT, v, 0);
	sc_trace(c, SCHED_TR_PREEMPT, v, -1, now);
}

void sched_core_request_preempt(struct sched_core *c, int v, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING || x->preempt_req || x->preempt_pending)
		return;
	/*
	 * With deferral, a preemption always starts as a request in the shared
	 * page. Reading in_critical now and forcing at once would race: the
	 * signal lands ~10-20 us later, maybe after the guest took a ticket.
	 * The guest checks the request when it enters and leaves a lock region
	 * and yields there; deferrals() forces it out at the hard deadline.
	 */
	if (c->defer) {
		x->defer_deadline = now + c->defer_max_ns;
		x->st.deferrals++;
		sc_set_pending(c, v, true);
		sc_trace(c, SCHED_TR_DEFER, v, -1, now);
		return;
	}
	sc_force_out(c, v, true, now);
}


static int cmp_ended(const void *a, const void *b)
{
	const struct sched_slot_end *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->slot - y->slot;
}

static void slice_ends(struct sched_core *c, uint64_t now)
{
	int budget = c->nrunnable;
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		/* a GOING_OFF slot's holder leaves, but the queue gets nothing */
		if (v >= 0 && sc_outgoing(&c->v[v]) && !sc_leaving(c, v))
			budget--;
	}
	if (budget <= 0)
		return;
	/* Oldest slice first, and no more preemptions than there are
	 * vCPUs to take the slots: no needless exits. A slot leaves the
	 * running once it is asked (outgoing) or continued (a new slice), and
	 * nothing else changes, so one sort gives the order. */
	struct sched_slot_end *e = c->ended;
	int k = 0;
	bool cut = sc_slice_cut(c);
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0 || sc_outgoing(&c->v[v]) || now - c->slot[s].slice_start < sc_slice_ns(c, s))
			continue;
		/* A guest that times its slice leaves by itself: only its
		 * hard deadline is the core's business, unless a woken vCPU
		 * cut the slice short (the guest knows only its full length). */
		if (sc_gslice(c, v) && !cut && now < sc_gslice_hard(c, s))
			continue;
		e[k++] = (struct sched_slot_end){ c->slot[s].slice_start, s };
	}
	qsort(e, (size_t)k, sizeof(*e), cmp_ended);
	for (int i = 0; i < k && budget > 0; i++) {
		int v = c->slot[e[i].slot].vcpu;
		if (now - e[i].start < sc_full_slice(c, e[i].slot)) {
			c->v[v].st.wake_cut_slices++;
			sc_trace(c, SCHED_TR_SLICE_CUT, v, -1, now);
		}
		if (sc_gslice(c, v) && now >= sc_gslice_hard(c, e[i].slot)) {
			c->v[v].st.deferrals_hard++;
			sc_trace(c, SCHED_TR_DEFER_HARD, v, -1, now);
			sc_force_out(c, v, true, now);
			budget--;
			continue;
		}
		enum sched_slice_verdict vd = c->pol->on_slice_end ?
			c->pol->on_slice_end(c, v, now) : SCHED_SLICE_PREEMPT;
		if (vd == SCHED_SLICE_CONTINUE) {
			sc_slice_restart(c, e[i].slot, now);
			continue;
		}
		sched_core_request_preempt(c, v, now);
		budget--;
	}
}

static void deferrals(struct sched_core *c, uint64_t now)
{
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0 || !c->v[v].preempt_pending || c->v[v].preempt_req)
			continue;
		struct sched_vcore *x = &c->v[v];
		if (c->nrunnable == 0 && !sc_leaving(c, v)) {
			sc_set_pending(c, v, false); /* nobody left to give it to */
		} else if (now >= x->defer_deadline) {
			x->st.deferrals_hard++;
			sc_trace(c, SCHED_TR_DEFER_HARD, v, -1, now);
			sc_force_out(c, v, true, now);
		}
		/*
		 * No polling in between: on a machine with as many slots as CPUs
		 * the event loop shares a CPU with a vCPU, and waking it every few
		 * microseconds starves exactly the lock holder we wait for. A
		 * cooperative guest yields at its next lock boundary by itself.
		 */
	}
}

/* ---- spin events ---- */

static void spin_event(struct sched_core *c, int v, int target, bool in_guest,
		       uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	x->st.spin_events++;
	sc_trace(c, SCHED_TR_SPIN, v, target, now);
	if (target < 0 || target >= c->nvcpus)
		target = sched_core_get_hint(c, v).waiting_for;
	if (target >= c->nvcpus)
		target = -1;
	sc_floor_spun(c, v, target, now);
	/* A slot going offline passes to nobody. */
	if (!c->pol->on_spin || c->nrunnable == 0 || sc_leaving(c, v))
		return;
	int to = c->pol->on_spin(c, v, target, now);
	if (to < 0 || to == v || c->v[to].state != SCHED_ST_RUNNABLE)
		return;
	if (in_guest) {
		/* It must leave guest mode first; the slot follows. */
		x->handoff_to = to;
		sc_force_out(c, v, false, now);
		return;
	}
	sc_release(c, v, to, now);
	sc_make_runnable(c, v, false, now);
	sc_set_preempted(c, v, true);
}

static void hint_checks(struct sched_core *c, uint64_t now)
{
	if (!(c->spin_sources & SCHED_SPIN_HINT) || now < c->next_hint_check)
		return;
	c->next_hint_check = now + c->ple_window_ns;
	if (c->nrunnable == 0)
		return;
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0 || c->v[v].preempt_req)
			continue;
		struct sched_vcore *x = &c->v[v];
		uint64_t since = sched_core_get_hint(c, v).spinning_since;
		if (!since || since > now || now - since < c->ple_window_ns)
			continue;
		if (x->last_hint_spin && now - x->last_hint_spin < c->ple_window_ns)
			continue;
		x->last_hint_spin = now;
		spin_event(c, v, -1, true, now);
	}
}

/* ---- events ---- */

static void end(struct sched_core *c, uint64_t now)
{
	sc_fill_slots(c, now);
	sc_force_unslotted(c, now);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Timed-out waits go to the back of the queue, in index order when several
 * end at once. The due ones come off the deadline heap; the heap's array
 * has room to collect them, since each leaves it as it is taken. */
static void wait_timeouts(struct sched_core *c, uint64_t now)
{
	struct sched_vheap *h = &c->wait_heap;
	int k = 0, cap = h->cap;
	for (int v; (v = sched_vheap_min(h)) >= 0 && h->key[v] <= now;) {
		sched_vheap_del(h, v);
		h->a[cap - 1 - k++] = v; /* the array's free end */
	}
	if (!k)
		return;
	int *due = &h->a[cap - k];
	qsort(due, (size_t)k, sizeof(int), cmp_int);
	for (int i = 0; i < k; i++) {
		int v = due[i];
		c->v[v].wake_reason = -ETIMEDOUT;
		sc_make_runnable(c, v, false, now); /* adds nothing to h */
	}
}

void sched_core_tick(struct sched_core *c, uint64_t now)
{
	SC_EVENT(c, now);
	if (c->stopping || c->deadlock)
		return;
	wait_timeouts(c, now);
	sc_halt_checks(c, now);
	deferrals(c, now);
	if (c->pol->tick)
		c->pol->tick(c, now);
	sc_lease_ends(c, now);
	slice_ends(c, now);
	hint_checks(c, now);
	end(c, now);
}

void sched_core_tick_slots(struct sched_core *c, uint64_t now)
{
	SC_EVENT(c, now);
	if (c->stopping || c->deadlock)
		return;
	deferrals(c, now);
	sc_lease_ends(c, now);
	slice_ends(c, now);
	end(c, now);
}

void sched_core_yield(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	/* The thread is out of guest mode now, whatever it was told before. */
	x->unslotted = x->unslotted_forced = false;
	if (x->parked) {
		sc_unpark(c, v, false, now);
		end(c, now);
		return;
	}
	if (x->state != SCHED_ST_RUNNING)
		return;
	bool forced = x->preempt_req && x->handoff_to < 0;
	sc_release(c, v, x->handoff_to, now);
	sc_make_runnable(c, v, false, now);
	x->crit_forced = forced && x->q_crit;
	sc_set_preempted(c, v, true);
	end(c, now);
}

void sched_core_spin(struct sched_core *c, int v, int target, unsigned source,
		     uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING)
		return;
	sc_gslice_learn(c, v);
	if (x->preempt_req) {
		sched_core_yield(c, v, now);
		return;
	}
	if (x->preempt_pending) {
		/*
		 * A spinner outside any lock region (a tas waiter, a barrier) may
		 * go now: this exit is the safe point we were waiting for. One
		 * queued in a lock (a ticket or an MCS node: in_critical > 0) may
		 * not: preempted there, its turn comes while it is off its slot
		 * and everyone queued behind it waits for it. It yields at the
		 * release instead, and the hard deadline still bounds the wait.
		 */
		if (!sched_core_get_hint(c, v).in_critical) {
			sched_core_yield(c, v, now);
			return;
		}
		x->st.spins_queued_kept++;
	} else if (sc_gslice(c, v) && !sched_core_get_hint(c, v).in_critical &&
		   sc_gslice_claim(c, v, now, false)) {
		/* The same safe point for a guest-timed slice that is over. */
		sched_core_yield(c, v, now);
		return;
	}
	if (!(c->spin_sources & source))
		return;
	spin_event(c, v, target, false, now);
	end(c, now);
}

void sched_core_spin_seen(struct sched_core *c, int v, unsigned source, uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	/* Seen from outside (a PLE tracepoint): v is in guest mode, so the
	 * policy's answer goes through a forced exit, like a hint spin. */
	if (x->state != SCHED_ST_RUNNING || x->preempt_req || !(c->spin_sources & source))
		return;
	spin_event(c, v, -1, true, now);
	end(c, now);
}

void sched_core_safe_point(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING)
		return;
	sc_gslice_learn(c, v);
	if (x->preempt_req || (x->preempt_pending && (c->nrunnable > 0 || sc_leaving(c, v))))
		sched_core_yield(c, v, now);
	else if (x->preempt_pending)
		sc_set_pending(c, v, false);
	else if (sc_gslice(c, v) && sc_gslice_claim(c, v, now, true))
		sched_core_yield(c, v, now);
}

static int sleep_on(struct sched_core *c, int v, enum sched_vstate s,
		    uint64_t deadline, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->kick_pending) {
		sc_set_kick_pending(c, v, false);
		return 0;
	}
	if (x->state != SCHED_ST_RUNNING)
		return 0; /* only a vCPU holding a slot can go to sleep */
	sc_release(c, v, -1, now);
	x->wait_deadline = deadline;
	x->wake_reason = 0;
	x->kicked_at = 0;
	sc_set_state(c, v, s, now);
	sc_set_preempted(c, v, false);
	sc_check_deadlock(c, now);
	end(c, now);
	return 1;
}

int sched_core_wait(struct sched_core *c, int v, uint64_t timeout_ns, uint64_t now)
{
	SC_EVENT(c, now);
	c->v[v].st.waits++;
	uint64_t dl = timeout_ns == SCHED_NO_TIMEOUT ? UINT64_MAX :
		      (now + timeout_ns < now ? UINT64_MAX - 1 : now + timeout_ns);
	return sleep_on(c, v, SCHED_ST_WAITING, dl, now);
}

int sched_core_halt(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	return sleep_on(c, v, SCHED_ST_IDLE, UINT64_MAX, now);
}

static void wake(struct sched_core *c, int from, int to, uint64_t now)
{
	struct sched_vcore *t = &c->v[to];
	if (t->state == SCHED_ST_DONE)
		return;
	if (t->state != SCHED_ST_WAITING && t->state != SCHED_ST_IDLE) {
		sc_set_kick_pending(c, to, true);
		return;
	}
	if (t->parked) {
		/* The interrupt wakes it inside KVM_RUN: it runs already. */
		sc_unpark(c, to, true, now);
		return;
	}
	t->wake_reason = 0;
	t->kicked_at = now ? now : 1;
	enum sched_kick_verdict vd = c->pol->on_kick ? c->pol->on_kick(c, from, to) :
				     SCHED_KICK_FRONT;
	bool can_handoff = from >= 0 && from != to &&
			   c->v[from].state == SCHED_ST_RUNNING && !c->stopping;
	if (vd == SCHED_KICK_HANDOFF && can_handoff) {
		sc_make_runnable(c, to, true, now);
		sc_release(c, from, to, now);
		sc_make_runnable(c, from, false, now);
		sc_set_preempted(c, from, true);
	} else {
		sc_make_runnable(c, to, vd != SCHED_KICK_BACK, now);
	}
	sc_mark_woken(c, to);
}

void sched_core_kick(struct sched_core *c, int from, int to, uint64_t now)
{
	SC_EVENT(c, now);
	if (to < 0 || to >= c->nvcpus)
		return;
	if (from >= 0)
		c->v[from].st.kicks_sent++;
	c->v[to].st.kicks_received++;
	sc_trace(c, SCHED_TR_KICK, to, from, now);
	wake(c, from, to, now);
	end(c, now);
}

void sched_core_wake(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	wake(c, -1, v, now);
	end(c, now);
}

void sched_core_done(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state == SCHED_ST_DONE)
		return;
	if (x->state == SCHED_ST_RUNNING)
		sc_release(c, v, -1, now);
	x->parked = x->unslotted = false;
	sc_set_state(c, v, SCHED_ST_DONE, now);
	sc_set_preempted(c, v, false);
	for (int i = 0; i < c->nvcpus; i++)
		if (c->v[i].handoff_to == v)
			c->v[i].handoff_to = -1;
	sc_check_deadlock(c, now);
	end(c, now);
}

void sched_core_stop(struct sched_core *c, uint64_t now)
{
	SC_EVENT(c, now);
	if (c->stopping)
		return;
	c->stopping = true;
	for (int s = 0; s < c->nslots; s++)
		if (c->slot[s].vcpu >= 0)
			sc_force_out(c, c->slot[s].vcpu, false, now);
	/* Threads left in guest mode without a slot must come out too. */
	for (int v = 0; v < c->nvcpus; v++)
		if (c->v[v].parked || c->v[v].unslotted)
			sc_emit(c, SCHED_ACT_FORCE_EXIT, v, 0);
	sc_emit(c, SCHED_ACT_WAKE_ALL, -1, -ECANCELED);
}

void sched_core_resumed(struct sched_core *c, int v, uint64_t now)
{
	SC_EVENT(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->kicked_at) {
		sched_hist_add(&x->st.kick_latency, now > x->kicked_at ? now - x->kicked_at : 0);
		x->kicked_at = 0;
	}
	/* Only the first return after a grant: a call that kept the slot (a
	 * kick, a spin nobody took) must not lose a request made while it ran. */
	if (!x->resume_due || x->state != SCHED_ST_RUNNING || x->preempt_req)
		return;
	x->resume_due = false;
	/* A slice that ended before the guest ran again was not its slice. */
	bool dropped = x->preempt_pending;
	if (dropped)
		sc_set_pending(c, v, false);
	if (dropped || x->fresh_slice)
		sc_slice_restart(c, x->slot, now);
	sc_gslice_learn(c, v);
	sc_gslice_new_slice(c, v, now);
	/* A slot going offline must still be given back: ask anew, with a
	 * new number the guest can see (ABI.md 7). */
	if (dropped && sc_leaving(c, v))
		sched_core_request_preempt(c, v, now);
}
