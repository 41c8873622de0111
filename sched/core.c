/*
 * The pure co-scheduler state machine; see core.h. Policies decide *who*;
 * this file keeps the bookkeeping (slots, run queue, time accounting,
 * deferral, deadlock) and turns decisions into actions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core.h"
#include "sched/policy.h"

/* ---- actions and trace ---- */

static void emit(struct sched_core *c, enum sched_action_kind k, int v, int val)
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

static inline void trace(struct sched_core *c, enum sched_trace_ev ev, int v,
			 int arg, uint64_t now)
{
	if (c->trace)
		c->trace(c->trace_ctx, ev, v, arg, now);
}

struct sched_hint sched_core_get_hint(const struct sched_core *c, int v)
{
	struct sched_hint h = { 0, false, -1 };
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

static void q_push(struct sched_core *c, int v, bool front)
{
	struct sched_vcore *x = &c->v[v];
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

static void set_state(struct sched_core *c, int v, enum sched_vstate s, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	uint64_t d = now > x->state_since ? now - x->state_since : 0;
	switch (x->state) {
	case SCHED_ST_RUNNING: x->st.ns_running += d; c->nrunning--; break;
	case SCHED_ST_RUNNABLE: x->st.ns_runnable += d; c->nrunnable--; q_remove(c, v); break;
	case SCHED_ST_WAITING: x->st.ns_waiting += d; break;
	case SCHED_ST_IDLE: x->st.ns_idle += d; break;
	case SCHED_ST_DONE: break;
	}
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
	trace(c, tr[s], v, s == SCHED_ST_RUNNING ? x->slot : -1, now);
}

static void set_preempted(struct sched_core *c, int v, bool on)
{
	if (c->v[v].preempted != on) {
		c->v[v].preempted = on;
		emit(c, SCHED_ACT_SET_PREEMPTED, v, on);
	}
}

static void set_pending(struct sched_core *c, int v, bool on)
{
	if (c->v[v].preempt_pending != on) {
		c->v[v].preempt_pending = on;
		emit(c, SCHED_ACT_SET_PREEMPT_PENDING, v, on);
	}
}

static void make_runnable(struct sched_core *c, int v, bool front, uint64_t now)
{
	set_state(c, v, SCHED_ST_RUNNABLE, now);
	q_push(c, v, front);
}

/* fresh: a new slice starts; otherwise v inherits the rest of the slot's
 * slice, so chains of hand-offs cannot keep a slot from the queue. */
static void grant(struct sched_core *c, int v, int slot, bool fresh, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	c->slot[slot].vcpu = v;
	if (fresh)
		c->slot[slot].slice_start = now;
	x->slot = slot;
	x->preempt_req = false;
	x->handoff_to = -1;
	set_state(c, v, SCHED_ST_RUNNING, now);
	set_pending(c, v, false);
	set_preempted(c, v, false);
	emit(c, SCHED_ACT_GRANT, v, slot);
}

/* v (RUNNING) leaves its slot; the caller sets its new state. If `to` is a
 * RUNNABLE vCPU it gets the slot at once (a yield or hand-off). */
static void release(struct sched_core *c, int v, int to, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	int slot = x->slot;
	c->slot[slot].vcpu = -1;
	x->slot = -1;
	x->preempt_req = false;
	x->handoff_to = -1;
	set_pending(c, v, false);
	if (to >= 0 && to != v && c->v[to].state == SCHED_ST_RUNNABLE) {
		grant(c, to, slot, false, now);
		x->st.yields_given++;
		c->v[to].st.yields_received++;
		trace(c, SCHED_TR_YIELD, v, to, now);
	}
}

static int pick(struct sched_core *c, int slot, uint64_t now)
{
	if (c->pol->pick_next)
		return c->pol->pick_next(c, slot, now);
	return c->qhead;
}

static void fill_slots(struct sched_core *c, uint64_t now)
{
	if (c->stopping || c->deadlock)
		return;
	for (int s = 0; s < c->nslots && c->nrunnable > 0; s++) {
		if (c->slot[s].vcpu >= 0)
			continue;
		int v = pick(c, s, now);
		if (v < 0 || c->v[v].state != SCHED_ST_RUNNABLE)
			continue;
		grant(c, v, s, true, now);
	}
}

static void check_deadlock(struct sched_core *c, uint64_t now)
{
	if (c->deadlock || c->stopping)
		return;
	int live = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_DONE)
			continue;
		if (x->state != SCHED_ST_WAITING || x->wait_deadline != UINT64_MAX ||
		    x->kick_pending)
			return;
		live++;
	}
	if (!live)
		return;
	c->deadlock = true;
	trace(c, SCHED_TR_DEADLOCK, -1, -1, now);
	emit(c, SCHED_ACT_WAKE_ALL, -1, -EDEADLK);
}

/* Every event starts here: actions of the previous one must be drained. */
static void begin(struct sched_core *c, uint64_t now)
{
	if (now > c->last_now)
		c->last_now = now;
}

/* ---- creation ---- */

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
	c->nvcpus = p->nvcpus;
	c->nslots = p->npcpus;
	c->nvms = nvms;
	c->slice_ns = p->slice_ns ? p->slice_ns : SCHED_DEFAULT_SLICE_NS;
	c->ple_window_ns = p->ple_window_ns ? p->ple_window_ns : SCHED_DEFAULT_PLE_WINDOW_NS;
	c->defer_max_ns = p->defer_max_ns ? p->defer_max_ns : SCHED_DEFAULT_DEFER_MAX_NS;
	c->defer = p->defer;
	c->spin_sources = p->spin_sources;
	c->pol = pol;
	c->rng = p->seed;
	c->hint = hint;
	c->hint_ctx = hint_ctx;
	c->trace = p->trace;
	c->trace_ctx = p->trace_ctx;
	c->qhead = c->qtail = -1;
	c->v = calloc((size_t)c->nvcpus, sizeof(*c->v));
	c->slot = calloc((size_t)c->nslots, sizeof(*c->slot));
	c->act_cap = 8 * (c->nvcpus + c->nslots) + 16;
	c->act = calloc((size_t)c->act_cap, sizeof(*c->act));
	if (!c->v || !c->slot || !c->act)
		goto oom;
	for (int s = 0; s < c->nslots; s++)
		c->slot[s].vcpu = -1;
	/* Every vCPU starts RUNNABLE, queued in index order: its thread may
	 * be granted a slot before it first calls enter. */
	for (int v = 0; v < c->nvcpus; v++) {
		struct sched_vcore *x = &c->v[v];
		x->vm = p->vm_of ? p->vm_of[v] : 0;
		x->slot = x->handoff_to = -1;
		x->qprev = x->qnext = -1;
		x->wait_deadline = UINT64_MAX;
		x->state = SCHED_ST_RUNNABLE;
		c->nrunnable++;
		q_push(c, v, false);
	}
	if (pol->init && pol->init(c) < 0)
		goto oom;
	return c;
oom:
	*why = "out of memory";
	free(c->v);
	free(c->slot);
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
	free(c->v);
	free(c->slot);
	free(c->act);
	free(c);
}

void sched_core_start(struct sched_core *c, uint64_t now)
{
	begin(c, now);
	if (c->started)
		return;
	c->started = true;
	for (int v = 0; v < c->nvcpus; v++)
		c->v[v].state_since = now;
	c->next_hint_check = now + c->ple_window_ns;
	fill_slots(c, now);
}

/* ---- preemption ---- */

/* counted: a preemption (not a yield the scheduler carries out for v) */
static void force_out(struct sched_core *c, int v, bool counted, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->preempt_req)
		return;
	x->preempt_req = true;
	if (counted)
		x->st.preemptions++;
	emit(c, SCHED_ACT_FORCE_EXIT, v, 0);
	trace(c, SCHED_TR_PREEMPT, v, -1, now);
}

void sched_core_request_preempt(struct sched_core *c, int v, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING || x->preempt_req || x->preempt_pending)
		return;
	if (c->defer && sched_core_get_hint(c, v).in_critical) {
		x->defer_deadline = now + c->defer_max_ns;
		x->st.deferrals++;
		set_pending(c, v, true);
		trace(c, SCHED_TR_DEFER, v, -1, now);
		return;
	}
	force_out(c, v, true, now);
}

static bool outgoing(const struct sched_vcore *x)
{
	return x->preempt_req || x->preempt_pending;
}

static void slice_ends(struct sched_core *c, uint64_t now)
{
	int budget = c->nrunnable;
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v >= 0 && outgoing(&c->v[v]))
			budget--;
	}
	/* Oldest slice first, and no more preemptions than there are
	 * vCPUs to take the slots: no needless exits. */
	while (budget > 0) {
		int best = -1;
		for (int s = 0; s < c->nslots; s++) {
			int v = c->slot[s].vcpu;
			if (v < 0 || outgoing(&c->v[v]) ||
			    now - c->slot[s].slice_start < c->slice_ns)
				continue;
			if (best < 0 || c->slot[s].slice_start < c->slot[best].slice_start)
				best = s;
		}
		if (best < 0)
			return;
		int v = c->slot[best].vcpu;
		enum sched_slice_verdict vd = c->pol->on_slice_end ?
			c->pol->on_slice_end(c, v, now) : SCHED_SLICE_PREEMPT;
		if (vd == SCHED_SLICE_CONTINUE) {
			c->slot[best].slice_start = now;
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
		if (c->nrunnable == 0) {
			set_pending(c, v, false); /* nobody left to give it to */
		} else if (now >= x->defer_deadline) {
			x->st.deferrals_hard++;
			trace(c, SCHED_TR_DEFER_HARD, v, -1, now);
			force_out(c, v, true, now);
		} else if (!sched_core_get_hint(c, v).in_critical) {
			/* Left its critical section without yielding. */
			force_out(c, v, true, now);
		}
	}
}

/* ---- spin events ---- */

static void spin_event(struct sched_core *c, int v, int target, bool in_guest,
		       uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	x->st.spin_events++;
	trace(c, SCHED_TR_SPIN, v, target, now);
	if (target < 0 || target >= c->nvcpus)
		target = sched_core_get_hint(c, v).waiting_for;
	if (target >= c->nvcpus)
		target = -1;
	if (!c->pol->on_spin || c->nrunnable == 0)
		return;
	int to = c->pol->on_spin(c, v, target, now);
	if (to < 0 || to == v || c->v[to].state != SCHED_ST_RUNNABLE)
		return;
	if (in_guest) {
		/* It must leave guest mode first; the slot follows. */
		x->handoff_to = to;
		force_out(c, v, false, now);
		return;
	}
	release(c, v, to, now);
	make_runnable(c, v, false, now);
	set_preempted(c, v, true);
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
	fill_slots(c, now);
}

void sched_core_tick(struct sched_core *c, uint64_t now)
{
	begin(c, now);
	if (c->stopping || c->deadlock)
		return;
	for (int v = 0; v < c->nvcpus; v++) {
		struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_WAITING && x->wait_deadline <= now) {
			x->wake_reason = -ETIMEDOUT;
			make_runnable(c, v, false, now);
		}
	}
	deferrals(c, now);
	if (c->pol->tick)
		c->pol->tick(c, now);
	slice_ends(c, now);
	hint_checks(c, now);
	end(c, now);
}

void sched_core_yield(struct sched_core *c, int v, uint64_t now)
{
	begin(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING)
		return;
	release(c, v, x->handoff_to, now);
	make_runnable(c, v, false, now);
	set_preempted(c, v, true);
	end(c, now);
}

void sched_core_spin(struct sched_core *c, int v, int target, unsigned source,
		     uint64_t now)
{
	begin(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING)
		return;
	if (x->preempt_pending || x->preempt_req) {
		/* The guest's yield is the safe point we were waiting for. */
		sched_core_yield(c, v, now);
		return;
	}
	if (!(c->spin_sources & source))
		return;
	spin_event(c, v, target, false, now);
	end(c, now);
}

void sched_core_safe_point(struct sched_core *c, int v, uint64_t now)
{
	begin(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state != SCHED_ST_RUNNING)
		return;
	if (x->preempt_req || (x->preempt_pending && c->nrunnable > 0))
		sched_core_yield(c, v, now);
	else
		set_pending(c, v, false);
}

static int sleep_on(struct sched_core *c, int v, enum sched_vstate s,
		    uint64_t deadline, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->kick_pending) {
		x->kick_pending = false;
		return 0;
	}
	if (x->state != SCHED_ST_RUNNING)
		return 0; /* only a vCPU holding a slot can go to sleep */
	release(c, v, -1, now);
	x->wait_deadline = deadline;
	x->wake_reason = 0;
	x->kicked_at = 0;
	set_state(c, v, s, now);
	set_preempted(c, v, false);
	check_deadlock(c, now);
	end(c, now);
	return 1;
}

int sched_core_wait(struct sched_core *c, int v, uint64_t timeout_ns, uint64_t now)
{
	begin(c, now);
	c->v[v].st.waits++;
	uint64_t dl = timeout_ns == SCHED_NO_TIMEOUT ? UINT64_MAX :
		      (now + timeout_ns < now ? UINT64_MAX - 1 : now + timeout_ns);
	return sleep_on(c, v, SCHED_ST_WAITING, dl, now);
}

int sched_core_halt(struct sched_core *c, int v, uint64_t now)
{
	begin(c, now);
	return sleep_on(c, v, SCHED_ST_IDLE, UINT64_MAX, now);
}

static void wake(struct sched_core *c, int from, int to, uint64_t now)
{
	struct sched_vcore *t = &c->v[to];
	if (t->state == SCHED_ST_DONE)
		return;
	if (t->state != SCHED_ST_WAITING && t->state != SCHED_ST_IDLE) {
		t->kick_pending = true;
		return;
	}
	t->wake_reason = 0;
	t->kicked_at = now ? now : 1;
	enum sched_kick_verdict vd = c->pol->on_kick ? c->pol->on_kick(c, from, to) :
				     SCHED_KICK_FRONT;
	bool can_handoff = from >= 0 && from != to &&
			   c->v[from].state == SCHED_ST_RUNNING && !c->stopping;
	if (vd == SCHED_KICK_HANDOFF && can_handoff) {
		make_runnable(c, to, true, now);
		release(c, from, to, now);
		make_runnable(c, from, false, now);
		set_preempted(c, from, true);
	} else {
		make_runnable(c, to, vd != SCHED_KICK_BACK, now);
	}
}

void sched_core_kick(struct sched_core *c, int from, int to, uint64_t now)
{
	begin(c, now);
	if (to < 0 || to >= c->nvcpus)
		return;
	if (from >= 0)
		c->v[from].st.kicks_sent++;
	c->v[to].st.kicks_received++;
	trace(c, SCHED_TR_KICK, to, from, now);
	wake(c, from, to, now);
	end(c, now);
}

void sched_core_wake(struct sched_core *c, int v, uint64_t now)
{
	begin(c, now);
	wake(c, -1, v, now);
	end(c, now);
}

void sched_core_done(struct sched_core *c, int v, uint64_t now)
{
	begin(c, now);
	struct sched_vcore *x = &c->v[v];
	if (x->state == SCHED_ST_DONE)
		return;
	if (x->state == SCHED_ST_RUNNING)
		release(c, v, -1, now);
	set_state(c, v, SCHED_ST_DONE, now);
	set_preempted(c, v, false);
	for (int i = 0; i < c->nvcpus; i++)
		if (c->v[i].handoff_to == v)
			c->v[i].handoff_to = -1;
	check_deadlock(c, now);
	end(c, now);
}

void sched_core_stop(struct sched_core *c, uint64_t now)
{
	begin(c, now);
	if (c->stopping)
		return;
	c->stopping = true;
	for (int s = 0; s < c->nslots; s++)
		if (c->slot[s].vcpu >= 0)
			force_out(c, c->slot[s].vcpu, false, now);
	emit(c, SCHED_ACT_WAKE_ALL, -1, -ECANCELED);
}

void sched_core_resumed(struct sched_core *c, int v, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	if (x->kicked_at) {
		sched_hist_add(&x->st.kick_latency, now > x->kicked_at ? now - x->kicked_at : 0);
		x->kicked_at = 0;
	}
}

/* ---- queries ---- */

uint64_t sched_core_next_deadline(const struct sched_core *c)
{
	if (!c->started || c->stopping || c->deadlock)
		return UINT64_MAX;
	uint64_t d = UINT64_MAX;
	int nout = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_WAITING && x->wait_deadline < d)
			d = x->wait_deadline;
		if (x->state == SCHED_ST_RUNNING && outgoing(x))
			nout++;
		if (x->state == SCHED_ST_RUNNING && x->preempt_pending && !x->preempt_req) {
			/* Poll for the guest leaving its critical section. */
			uint64_t poll = c->last_now + c->ple_window_ns;
			uint64_t t = poll < x->defer_deadline ? poll : x->defer_deadline;
			if (t < d)
				d = t;
		}
	}
	if (c->nrunnable > nout) {
		for (int s = 0; s < c->nslots; s++) {
			int v = c->slot[s].vcpu;
			if (v < 0 || outgoing(&c->v[v]))
				continue;
			uint64_t t = c->slot[s].slice_start + c->slice_ns;
			if (t < d)
				d = t;
		}
	}
	if ((c->spin_sources & SCHED_SPIN_HINT) && c->nrunnable > 0 && c->nrunning > 0 &&
	    c->next_hint_check < d)
		d = c->next_hint_check;
	if (c->pol->deadline) {
		uint64_t t = c->pol->deadline(c);
		if (t < d)
			d = t;
	}
	/* A slice that ran out while nobody queued ends now, not in the past. */
	return d < c->last_now ? c->last_now : d;
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
