/*
 * The pure co-scheduler core, driven by fake vCPUs on a fake clock: fixed
 * scenarios first, then long random event sequences for every policy,
 * checking the invariants after every single event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core.h"
#include "sched/policy.h"
#include "tests/unit/check_cases.h"

#define US 1000ull
#define MS (1000 * US)
#define MAXV 16

/* ---- the fake vCPUs ---- */

struct fake {
	struct sched_hint h[MAXV];
	bool running[MAXV];
	bool force[MAXV];
	uint64_t exit_at[MAXV];     /* when a forced vCPU notices */
	bool preempted[MAXV], pending[MAXV], kick_pending[MAXV];
	uint64_t pending_since[MAXV];
	uint32_t last_req[MAXV];
	int grants[MAXV];           /* GRANTs in the last batch */
	int grant_slot[MAXV];
	int forces[MAXV];
	/* guest-timed slices (core_gslice.c), as the guest's page says them */
	bool contended[MAXV], resume_due[MAXV], gs_off[MAXV];
	uint64_t gs_end[MAXV];      /* the guest's own slice end */
	int wake_all;               /* its value, or 0 */
	uint64_t rng;
};

static uint64_t rnd(struct fake *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return f->rng;
}

static void fake_hint(void *p, int v, struct sched_hint *out)
{
	*out = ((struct fake *)p)->h[v];
}

/* Execute and clear the core's actions, as sched.c would. */
static void drain(struct sched_core *c, struct fake *f, uint64_t now)
{
	memset(f->grants, 0, sizeof(f->grants));
	memset(f->forces, 0, sizeof(f->forces));
	for (int i = 0; i < c->nact; i++) {
		struct sched_action a = c->act[i];
		switch (a.kind) {
		case SCHED_ACT_GRANT:
			f->resume_due[a.v] = true;
			f->running[a.v] = true;
			f->force[a.v] = false;
			f->grants[a.v]++;
			f->grant_slot[a.v] = a.val;
			break;
		case SCHED_ACT_FORCE_EXIT:
			CHECK(c->v[a.v].state == SCHED_ST_RUNNING);
			if (!f->force[a.v])
				f->exit_at[a.v] = now + rnd(f) % (30 * US);
			f->force[a.v] = true;
			f->forces[a.v]++;
			break;
		case SCHED_ACT_SET_PREEMPTED:
			CHECK(f->preempted[a.v] != (bool)a.val);
			f->preempted[a.v] = a.val;
			break;
		case SCHED_ACT_SET_PREEMPT_PENDING:
			CHECK(f->pending[a.v] != (bool)a.val);
			/* a request is a new number, never 0 (ABI.md 7) */
			if (a.val) {
				CHECK((uint32_t)a.val != f->last_req[a.v]);
				f->last_req[a.v] = (uint32_t)a.val;
			}
			f->pending[a.v] = a.val;
			if (a.val)
				f->pending_since[a.v] = now;
			break;
		case SCHED_ACT_WAKE_ALL:
			f->wake_all = a.val;
			break;
		case SCHED_ACT_SLOT_OFF:
		case SCHED_ACT_SLOT_DEMAND:
			CHECK(!"slot actions without slots_offline"); /* test_sched_slots.c */
			break;
		case SCHED_ACT_SET_KICK_PENDING:
			CHECK(f->kick_pending[a.v] != (bool)a.val);
			f->kick_pending[a.v] = a.val;
			break;
		case SCHED_ACT_PARK:
			CHECK(!"parking without halt checks"); /* test_sched_halts.c */
			break;
		case SCHED_ACT_SET_CONTENDED:
			CHECK(c->guest_slice && f->contended[a.v] != (bool)a.val);
			f->contended[a.v] = a.val;
			break;
		case SCHED_ACT_NEW_SLICE:
			/* only to a vCPU back from its grant, never longer than a slice */
			CHECK(c->guest_slice && c->v[a.v].state == SCHED_ST_RUNNING);
			CHECK(a.val >= 0 && (uint64_t)a.val * US <= c->slice_ns);
			f->gs_end[a.v] = now + (uint64_t)a.val * US;
			f->gs_off[a.v] = false;
			break;
		}
	}
	sched_core_clear_actions(c);
	for (int v = 0; v < c->nvcpus; v++)
		if (c->v[v].state != SCHED_ST_RUNNING) {
			f->running[v] = false;
			f->force[v] = false;
		}
}

static bool mk_gslice; /* the next mk offers guest-timed slices */
static uint64_t mk_wake_slice; /* ... and cuts slices for woken vCPUs */

static struct sched_core *mk(const char *pol, int m, int n, int nvms, const int *vm_of,
			     bool defer, unsigned spin, struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->rng = 88172645463325252ull;
	for (int v = 0; v < MAXV; v++)
		f->h[v].waiting_for = -1;
	struct sched_params p = {
		.nvcpus = n, .npcpus = m, .policy = pol, .defer = defer,
		.spin_sources = spin, .nvms = nvms, .vm_of = vm_of, .seed = 42,
		.guest_slice = mk_gslice, .wake_slice_ns = mk_wake_slice,
	};
	const char *why = NULL;
	struct sched_core *c = sched_core_create(&p, fake_hint, f, &why);
	CHECK(c != NULL);
	if (!c) {
		printf("create: %s\n", why);
		exit(1);
	}
	sched_core_start(c, 0);
	drain(c, f, 0);
	return c;
}

/* ---- invariants, after every event ---- */

static bool outgoing(const struct sched_core *c, int v)
{
	return c->v[v].preempt_req || c->v[v].preempt_pending;
}

static void check_invariants(struct sched_core *c, struct fake *f, uint64_t now)
{
	/* the core's own books, its indices included */
	const char *why = sched_core_check(c);
	CHECK(why == NULL);
	if (why)
		printf("sched_core_check: %s\n", why);
	int running = 0, runnable = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_RUNNING) {
			running++;
			CHECK(x->slot >= 0 && x->slot < c->nslots && c->slot[x->slot].vcpu == v);
		} else {
			CHECK(x->slot == -1);
			CHECK(!x->preempt_pending && !x->preempt_req);
		}
		if (x->state == SCHED_ST_RUNNABLE)
			runnable++;
		CHECK(f->running[v] == (x->state == SCHED_ST_RUNNING));
		CHECK(f->preempted[v] == x->preempted);
		CHECK(f->pending[v] == x->preempt_pending);
		CHECK(f->kick_pending[v] == x->kick_pending); /* the shared page says it (ABI.md 7) */
		if (c->guest_slice && x->state == SCHED_ST_RUNNING)
			CHECK(f->contended[v] == (c->nrunnable > 0));
		/* Deferral is bounded: past the hard deadline it is forced. */
		if (x->preempt_pending && !x->preempt_req)
			CHECK(now < f->pending_since[v] + c->defer_max_ns);
	}
	CHECK(running <= c->nslots);
	CHECK(running == c->nrunning && runnable == c->nrunnable);
	int q = 0, prev = -1;
	SCHED_FOR_EACH_QUEUED(c, it) {
		CHECK(c->v[it].state == SCHED_ST_RUNNABLE && c->v[it].qprev == prev);
		prev = it;
		if (++q > c->nvcpus)
			break;
	}
	CHECK(q == runnable && c->qtail == prev);
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		CHECK(v == -1 || (c->v[v].state == SCHED_ST_RUNNING && c->v[v].slot == s));
		/* Work conserving: no slot stays free while someone queues. */
		if (v == -1 && c->pol != &sched_policy_gang && !c->stopping && !c->deadlock)
			CHECK(runnable == 0);
	}
	/* Deadlock is reported exactly when every live vCPU waits forever. */
	int live = 0, stuck = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_DONE)
			continue;
		live++;
		stuck += x->state == SCHED_ST_WAITING && x->wait_deadline == UINT64_MAX;
	}
	CHECK(c->deadlock == (live > 0 && live == stuck));
	/* Gang: a VM that fits never runs in part, except while the previous
	 * set is still leaving its slots (see policy_gang.c). */
	bool leaving = false;
	for (int v = 0; v < c->nvcpus; v++)
		leaving |= c->v[v].state == SCHED_ST_RUNNING && outgoing(c, v);
	if (c->pol == &sched_policy_gang && !leaving) {
		for (int vm = 0; vm < c->nvms; vm++) {
			int size = 0, in = 0, queued = 0;
			for (int v = 0; v < c->nvcpus; v++) {
				if (c->v[v].vm != vm)
					continue;
				size++;
				in += c->v[v].state == SCHED_ST_RUNNING && !outgoing(c, v);
				queued += c->v[v].state == SCHED_ST_RUNNABLE;
			}
			if (size <= c->nslots)
				CHECK(!(in && queued));
		}
	}
}

/* ---- random event sequences ---- */

enum mode {
	PROGRESS, /* compute-bound vCPUs: nobody sleeps, nobody may starve */
	SLEEPERS, /* waits, halts, kicks, wakes, done: the deadlock detector */
};

struct run {
	const char *pol;
	int m, n, nvms;
	enum mode mode;
	bool defer;
	uint64_t seed;
	bool gslice; /* guest-timed slices; vCPUs 1, 2, 4, 5, ... opt in */
	uint64_t wake_slice; /* params.wake_slice_ns */
};

static int spin_candidates(struct sched_core *c, struct fake *f, int v, bool *nonspin)
{
	int k = 0;
	*nonspin = false;
	for (int u = 0; u < c->nvcpus; u++) {
		if (u == v || c->v[u].vm != c->v[v].vm || c->v[u].state != SCHED_ST_RUNNABLE)
			continue;
		k++;
		if (!f->h[u].spinning_since)
			*nonspin = true;
	}
	return k;
}

static long gs_claims_all, gs_yields_all, gs_hard_all, wake_cuts_all;

/* A guest timing its own slice: at a lock boundary (outside any lock
 * region) past its slice end with someone queued, it asks to leave, once
 * per slice (ABI.md 7). Most of the time; sometimes it keeps running and
 * the hard deadline must come. True if it asked. */
static bool gslice_claim(struct sched_core *c, struct fake *f, int v, uint64_t now)
{
	if (!f->h[v].guest_slice || f->gs_off[v] || !f->contended[v] || now < f->gs_end[v] ||
	    rnd(f) % 4 == 0)
		return false;
	f->h[v].in_critical = false;
	bool gt = c->v[v].gs_guest && !c->v[v].gs_declined && c->defer && !outgoing(c, v);
	uint64_t ys = c->v[v].st.guest_slice_yields, dc = c->v[v].st.guest_slice_declined;
	int waiting = c->nrunnable;
	for (int s = 0; s < c->nslots; s++)
		waiting -= c->slot[s].vcpu >= 0 && outgoing(c, c->slot[s].vcpu);
	sched_core_safe_point(c, v, now);
	/* by its clock, which starts after the core's, the slice is over: with
	 * someone waiting it leaves, else it is declined and stops asking */
	if (gt) {
		bool left = c->v[v].st.guest_slice_yields == ys + 1;
		CHECK(left == (waiting > 0));
		CHECK(left != (c->v[v].st.guest_slice_declined == dc + 1));
		CHECK(!left || c->v[v].state == SCHED_ST_RUNNABLE);
		if (!left)
			f->gs_off[v] = true;
		gs_claims_all++;
	}
	drain(c, f, now);
	return true;
}

/* One event by running vCPU v. Returns false when the run should end. */
static void vcpu_event(struct sched_core *c, struct fake *f, const struct run *r, int v,
		       uint64_t now)
{
	if (r->gslice && gslice_claim(c, f, v, now))
		return;
	uint64_t x = rnd(f) % 100;
	bool sleepers = r->mode == SLEEPERS;
	if (x < 10) {
		f->h[v].spinning_since = f->h[v].spinning_since ? 0 : now + 1 - (rnd(f) % 2) * (now / 2 + 1);
	} else if (x < 20) {
		f->h[v].in_critical = !f->h[v].in_critical;
	} else if (x < 25) {
		f->h[v].waiting_for = rnd(f) % 3 ? -1 : (int)(rnd(f) % (uint64_t)c->nvcpus);
	} else if (x < 40) {
		int target = rnd(f) % 2 ? -1 : (int)(rnd(f) % (uint64_t)c->nvcpus);
		unsigned src = 1u << (rnd(f) % 3);
		bool nonspin;
		int ncand = spin_candidates(c, f, v, &nonspin);
		int slot = c->v[v].slot;
		bool plain = target < 0 && f->h[v].waiting_for < 0 && !outgoing(c, v) &&
			     (c->spin_sources & src);
		/* A soft request meets a SPIN: a safe point only outside a lock region. */
		bool soft = c->v[v].state == SCHED_ST_RUNNING && c->v[v].preempt_pending &&
			    !c->v[v].preempt_req;
		bool queued = soft && f->h[v].in_critical;
		uint64_t kept = c->v[v].st.spins_queued_kept, gsy = c->v[v].st.guest_slice_yields;
		sched_core_spin(c, v, target, src, now);
		/* a guest-timed slice that was over ends at this SPIN (a safe
		 * point): the queue's next, not the policy's pick */
		plain &= c->v[v].st.guest_slice_yields == gsy;
		if (soft && !queued)
			CHECK(c->v[v].state != SCHED_ST_RUNNING || !c->v[v].preempt_pending);
		CHECK(c->v[v].st.spins_queued_kept == kept + queued);
		drain(c, f, now);
		if (plain && c->pol == &sched_policy_directed) {
			/* directed yields whenever it can, and to a spinner only
			 * if nothing else is there */
			int to = c->slot[slot].vcpu;
			CHECK((ncand > 0) == (to != v));
			if (to != v && to >= 0)
				CHECK(!nonspin || !f->h[to].spinning_since);
		}
		return;
	} else if (x < 45) {
		sched_core_safe_point(c, v, now);
	} else if (x < 55 && sleepers) {
		uint64_t t = rnd(f) % 2 ? SCHED_NO_TIMEOUT : rnd(f) % (3 * MS) + 1;
		sched_core_wait(c, v, t, now);
	} else if (x < 58 && sleepers) {
		sched_core_halt(c, v, now);
	} else if (x < 75) {
		/* mostly kick a sleeper, as an unlock does */
		int to = (int)(rnd(f) % (uint64_t)c->nvcpus);
		for (int k = 0; k < c->nvcpus && rnd(f) % 4; k++) {
			int u = (to + k) % c->nvcpus;
			if (c->v[u].state == SCHED_ST_WAITING || c->v[u].state == SCHED_ST_IDLE) {
				to = u;
				break;
			}
		}
		sched_core_kick(c, v, to, now);
	} else if (x < 76 && sleepers && rnd(f) % 8 == 0) {
		sched_core_done(c, v, now);
	}
	drain(c, f, now);
}

/*
 * Stickiness, seen from outside: the test keeps each vCPU's last slot from
 * the GRANT traces. A new slice granted while that slot is free and online
 * must go to it (at trace time the core's slots are those of that moment).
 * Hand-offs pass the giver's slot and are exempt. No policy is exempt: they
 * choose who, never where.
 */
struct sticky_watch {
	const struct sched_core *c;
	int last[MAXV];
	long chances;         /* new slices whose last slot was free */
	uint64_t same[MAXV], moved[MAXV]; /* every grant: to its last slot, elsewhere */
};

static long sticky_chances_all, sticky_grants_all;

static void sticky_trace(void *p, enum sched_trace_ev ev, int v, int arg, uint64_t now)
{
	(void)now;
	struct sticky_watch *w = p;
	const struct sched_core *c = w->c;
	if (ev != SCHED_TR_GRANT)
		return;
	int l = w->last[v];
	w->last[v] = arg;
	if (l < 0)
		return;
	w->same[v] += l == arg;
	w->moved[v] += l != arg;
	if (!c->v[v].fresh_slice)
		return;
	bool was_free = l == arg || (c->slot[l].vcpu < 0 && sched_core_slot_usable(c, l));
	if (!was_free)
		return;
	w->chances++;
	CHECK(l == arg);
}

static void run_random(const struct run *r, int steps)
{
	snprintf(ctx, sizeof(ctx), "run(%s m=%d n=%d vms=%d mode=%d defer=%d gslice=%d wake=%" PRIu64 " seed=%" PRIu64 ")",
		 r->pol, r->m, r->n, r->nvms, r->mode, r->defer, r->gslice, r->wake_slice, r->seed);
	int vm_of[MAXV];
	for (int v = 0; v < r->n; v++)
		vm_of[v] = v % r->nvms;
	struct fake f;
	mk_gslice = r->gslice;
	mk_wake_slice = r->wake_slice;
	struct sched_core *c = mk(r->pol, r->m, r->n, r->nvms, vm_of, r->defer, SCHED_SPIN_ALL, &f);
	mk_gslice = false;
	mk_wake_slice = 0;
	f.rng = r->seed * 2654435761u + 1;
	for (int v = 0; r->gslice && v < r->n; v++)
		f.h[v].guest_slice = v % 3 != 0;
	uint64_t now = 0, runnable_since[MAXV] = { 0 };
	struct sticky_watch sw = { .c = c };
	for (int v = 0; v < MAXV; v++)
		sw.last[v] = v < r->n && c->v[v].state == SCHED_ST_RUNNING ? c->v[v].slot : -1;
	c->trace = sticky_trace;
	c->trace_ctx = &sw;
	/* Round robin needs one round; boosts of vCPUs forced out inside a lock
	 * region (deferral) may add at most one more. */
	uint64_t bound = (uint64_t)(r->n + r->nvms + 2) * (r->defer ? 2 : 1) *
			 (c->slice_ns + c->defer_max_ns + 100 * US);
	long failed_before = n_fail;
	for (int step = 0; step < steps && !c->deadlock && n_fail == failed_before; step++) {
		/* The next instant: a scheduler deadline, a forced vCPU
		 * noticing, or a random vCPU event. */
		uint64_t next = now + rnd(&f) % (200 * US) + 1;
		uint64_t dl = sched_core_next_deadline(c);
		CHECK(dl >= now);
		int exiter = -1;
		for (int v = 0; v < r->n; v++)
			if (f.force[v] && f.exit_at[v] < next && f.exit_at[v] < dl) {
				next = f.exit_at[v] > now ? f.exit_at[v] : now;
				exiter = v;
			}
		if (dl <= next) {
			now = dl;
			int handoff_before[MAXV];
			for (int v = 0; v < r->n; v++)
				handoff_before[v] = c->v[v].handoff_to;
			sched_core_tick(c, now);
			drain(&*c, &f, now);
			for (int v = 0; v < r->n && c->pol == &sched_policy_directed; v++) {
				int to = c->v[v].handoff_to;
				if (to >= 0 && handoff_before[v] < 0 && f.h[v].waiting_for < 0) {
					bool nonspin;
					spin_candidates(c, &f, v, &nonspin);
					CHECK(!nonspin || !f.h[to].spinning_since);
				}
			}
		} else if (exiter >= 0) {
			now = next;
			sched_core_yield(c, exiter, now);
			drain(c, &f, now);
		} else {
			now = next;
			int v = (int)(rnd(&f) % (uint64_t)r->n);
			if (c->v[v].state == SCHED_ST_RUNNING) {
				vcpu_event(c, &f, r, v, now);
			} else if (r->mode == SLEEPERS && rnd(&f) % 16 == 0) {
				/* the VMM: an interrupt or a kick from outside */
				if (rnd(&f) % 2)
					sched_core_wake(c, v, now);
				else
					sched_core_kick(c, -1, v, now);
				drain(c, &f, now);
			}
		}
		/* a granted thread comes back at once (sched_core_resumed) */
		for (int v = 0; r->gslice && v < r->n; v++) {
			if (!f.resume_due[v] || c->v[v].state != SCHED_ST_RUNNING)
				continue;
			f.resume_due[v] = false;
			sched_core_resumed(c, v, now);
			drain(c, &f, now);
		}
		check_invariants(c, &f, now);
		for (int v = 0; v < r->n; v++) {
			if (c->v[v].state != SCHED_ST_RUNNABLE)
				runnable_since[v] = now;
			else if (r->mode == PROGRESS)
				CHECK(now - runnable_since[v] <= bound);
		}
	}
	if (r->mode == PROGRESS) {
		for (int v = 0; v < r->n; v++) {
			struct sched_vcpu_stats st;
			sched_core_stats(c, v, now, &st);
			CHECK(st.ns_running > 0);
		}
	}
	if (c->deadlock)
		CHECK(f.wake_all == -EDEADLK);
	sticky_chances_all += sw.chances;
	for (int v = 0; v < r->n; v++)
		wake_cuts_all += (long)c->v[v].st.wake_cut_slices;
	for (int v = 0; r->gslice && v < r->n; v++) {
		gs_yields_all += (long)c->v[v].st.guest_slice_yields;
		if (f.h[v].guest_slice)
			gs_hard_all += (long)c->v[v].st.deferrals_hard;
	}
	for (int v = 0; v < r->n; v++) {
		/* the core's counters agree with what the test saw */
		sticky_grants_all += (long)c->v[v].st.sticky_grants;
		CHECK(c->v[v].st.sticky_grants == sw.same[v]);
		CHECK(c->v[v].st.slot_moves == sw.moved[v]);
	}
	sched_core_destroy(c);
	ctx[0] = 0;
}

static void run_random_all(void)
{
	static const char *const pols[] = { "none", "random", "directed", "holder", "pv", "gang" };
	uint64_t seed = 1;
	for (size_t p = 0; p < sizeof(pols) / sizeof(pols[0]); p++)
		for (int m = 1; m <= 3; m++)
			for (int n = 1; n <= 9; n++)
				for (int mode = PROGRESS; mode <= SLEEPERS; mode++)
					for (int defer = 0; defer <= 1; defer++) {
						struct run r = { pols[p], m, n, 1, mode, defer, seed++, false, 0 };
						if (!strcmp(pols[p], "gang"))
							r.nvms = 1 + (int)(seed % 3 < 2 ? (n + 1) / 2 : 1);
						if (r.nvms > n)
							r.nvms = n;
						CASE(run_random(&r, mode == PROGRESS ? 12000 : 4000));
						/* sleeper runs end at deadlock: run more seeds */
						for (int k = 0; k < 5 && mode == SLEEPERS; k++) {
							r.seed = seed++;
							CASE(run_random(&r, 4000));
						}
					}
	/* Guest-timed slices, every policy but gang (which keeps slice ends
	 * its own): a third of the vCPUs do not opt in. */
	for (size_t p = 0; p + 1 < sizeof(pols) / sizeof(pols[0]); p++)
		for (int m = 1; m <= 3; m++)
			for (int n = m + 1; n <= 9; n += 2)
				for (int mode = PROGRESS; mode <= SLEEPERS; mode++) {
					struct run r = { pols[p], m, n, 1, mode, true, seed++, true, 0 };
					CASE(run_random(&r, mode == PROGRESS ? 12000 : 4000));
					/* and slices cut while a woken vCPU queues */
					r.seed = seed++;
					r.wake_slice = 300 * US;
					CASE(run_random(&r, mode == PROGRESS ? 12000 : 4000));
				}
	/* ... and both ways out were taken: the guest's yield and the hard
	 * deadline of a guest that did not keep its word. */
	CHECK(gs_claims_all > 100 && gs_yields_all > 100 && gs_hard_all > 10);
	CHECK(wake_cuts_all > 100);
	printf("guest-timed slices: %ld claims, %ld yields, %ld hard deadlines; %ld slices cut for wake-ups\n",
	       gs_claims_all, gs_yields_all, gs_hard_all, wake_cuts_all);
	/* The check above was not vacuous: slots were free to come back to. */
	CHECK(sticky_chances_all > 1000 && sticky_grants_all >= sticky_chances_all);
}

/* ---- fixed scenarios ---- */

static int running_count(struct sched_core *c)
{
	int k = 0;
	for (int v = 0; v < c->nvcpus; v++)
		k += c->v[v].state == SCHED_ST_RUNNING;
	return k;
}

/* Advance to each deadline in turn, up to `until`. */
static void run_until(struct sched_core *c, struct fake *f, uint64_t *now, uint64_t until)
{
	for (int i = 0; i < 100000; i++) {
		uint64_t d = sched_core_next_deadline(c);
		if (d > until)
			break;
		*now = d;
		sched_core_tick(c, d);
		drain(c, f, d);
		check_invariants(c, f, d);
	}
	*now = until;
}

static void case_basics(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 2, 2, 1, NULL, false, 0, &f);
	CHECK(running_count(c) == 2 && f.grants[0] == 1 && f.grants[1] == 1);
	/* nobody queued: no slice ends, no deadline, no needless exits */
	CHECK(sched_core_next_deadline(c) == UINT64_MAX);
	sched_core_tick(c, 100 * MS);
	CHECK(c->nact == 0);
	sched_core_destroy(c);

	CHECK(sched_policy_find("pv") == &sched_policy_pv);
	CHECK(sched_policy_find("bogus") == NULL && sched_policy_find(NULL) == NULL);
	int k = 0;
	for (const char *const *n = sched_policy_names(); *n; n++)
		k += sched_policy_find(*n) != NULL;
	CHECK(k == 6);
	struct sched_params bad = { .nvcpus = 2, .npcpus = 1, .policy = "nope" };
	const char *why = NULL;
	CHECK(sched_core_create(&bad, NULL, NULL, &why) == NULL && why != NULL);
}

static void count_trace(void *p, enum sched_trace_ev ev, int v, int arg, uint64_t now)
{
	(void)v, (void)arg, (void)now;
	((int *)p)[ev]++;
}

static void case_round_robin(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 3, 1, NULL, false, 0, &f);
	int traced[SCHED_TR_COUNT] = { 0 };
	c->trace = count_trace;
	c->trace_ctx = traced;
	uint64_t now = 0;
	CHECK(c->slot[0].vcpu == 0 && sched_core_next_deadline(c) == 2 * MS);
	run_until(c, &f, &now, 2 * MS);
	CHECK(f.force[0] && c->v[0].state == SCHED_ST_RUNNING); /* still holds it */
	sched_core_yield(c, 0, now + 10 * US);
	drain(c, &f, now + 10 * US);
	CHECK(c->slot[0].vcpu == 1 && f.preempted[0] && c->qtail == 0);
	struct sched_vcpu_stats st;
	sched_core_stats(c, 0, now + 10 * US, &st);
	CHECK(st.preemptions == 1 && st.ns_running == 2 * MS + 10 * US);
	CHECK(traced[SCHED_TR_PREEMPT] == 1 && traced[SCHED_TR_GRANT] == 1);
	CHECK(traced[SCHED_TR_RUNNABLE] == 1);
	sched_core_destroy(c);
}

static void case_kick_before_wait(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 2, 2, 1, NULL, false, 0, &f);
	sched_core_kick(c, 0, 1, 5);
	drain(c, &f, 5);
	CHECK(c->v[1].kick_pending && f.kick_pending[1]);
	CHECK(sched_core_wait(c, 1, SCHED_NO_TIMEOUT, 6) == 0);
	drain(c, &f, 6);
	CHECK(c->v[1].state == SCHED_ST_RUNNING && !c->v[1].kick_pending && !f.kick_pending[1]);
	/* a self-kick is a kick like any other */
	sched_core_kick(c, 1, 1, 7);
	drain(c, &f, 7);
	CHECK(f.kick_pending[1]);
	CHECK(sched_core_wait(c, 1, SCHED_NO_TIMEOUT, 7) == 0);
	drain(c, &f, 7);
	CHECK(!f.kick_pending[1]);
	/* consumed: the next wait sleeps */
	CHECK(sched_core_wait(c, 1, SCHED_NO_TIMEOUT, 7) == 1);
	drain(c, &f, 7);
	CHECK(c->v[1].state == SCHED_ST_WAITING);
	/* a wake (interrupt) ends it just like a kick */
	sched_core_wake(c, 1, 8);
	drain(c, &f, 8);
	CHECK(c->v[1].state == SCHED_ST_RUNNING && c->v[1].wake_reason == 0);
	sched_core_destroy(c);
}

static void case_kick_front_and_handoff(void)
{
	struct fake f;
	/* none: the kicked vCPU jumps the queue */
	struct sched_core *c = mk("none", 1, 3, 1, NULL, false, 0, &f);
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 1) == 1); /* 1 runs, 2 queued */
	drain(c, &f, 1);
	sched_core_kick(c, 1, 0, 2);
	drain(c, &f, 2);
	CHECK(c->slot[0].vcpu == 1 && c->qhead == 0 && c->v[0].qnext == 2);
	sched_core_destroy(c);

	/* pv: the kicker hands its slot over and goes to the back */
	c = mk("pv", 1, 3, 1, NULL, false, 0, &f);
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 1) == 1);
	drain(c, &f, 1);
	sched_core_kick(c, 1, 0, 2);
	drain(c, &f, 2);
	CHECK(c->slot[0].vcpu == 0 && f.grants[0] == 1);
	CHECK(c->qhead == 2 && c->qtail == 1 && f.preempted[1]);
	CHECK(c->slot[0].slice_start == 1); /* inherits the slice */
	struct sched_vcpu_stats st;
	sched_core_resumed(c, 0, 12);
	sched_core_stats(c, 0, 20, &st);
	CHECK(st.yields_received == 1 && st.kicks_received == 1);
	CHECK(st.kick_latency.count == 1 && sched_hist_percentile(&st.kick_latency, 50) == 10);
	sched_core_destroy(c);
}

/*
 * ABI.md 7: a vCPU back from giving up its slot reads preempt_pending 0.
 * The grant reaches its thread late (the host wakes it); a slice end in
 * between must not leave a request the guest finds on its return.
 */
static void case_pending_cleared_when_it_runs_again(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, 1, NULL, true, 0, &f);
	uint64_t now = 0;
	run_until(c, &f, &now, 2 * MS);
	CHECK(f.pending[0]); /* vCPU 0's slice ended: asked to yield */
	sched_core_safe_point(c, 0, 2 * MS + 10 * US);
	drain(c, &f, 2 * MS + 10 * US);
	CHECK(c->slot[0].vcpu == 1 && !f.pending[0]);
	/* vCPU 1's thread is slow to wake: its slice "ends" before it ran */
	sched_core_tick(c, 4 * MS + 20 * US);
	drain(c, &f, 4 * MS + 20 * US);
	CHECK(f.pending[1]);
	sched_core_resumed(c, 1, 4 * MS + 50 * US);
	drain(c, &f, 4 * MS + 50 * US);
	CHECK(!f.pending[1] && !c->v[1].preempt_pending);
	/* and its slice starts now, not at the grant */
	CHECK(sched_core_next_deadline(c) == 6 * MS + 50 * US);
	/* a request made while it runs stays, whatever call it comes back from */
	sched_core_tick(c, 6 * MS + 50 * US);
	drain(c, &f, 6 * MS + 50 * US);
	CHECK(f.pending[1]);
	sched_core_kick(c, 1, 0, 6 * MS + 55 * US); /* vCPU 0 is queued, not waiting */
	drain(c, &f, 6 * MS + 55 * US);
	sched_core_resumed(c, 1, 6 * MS + 56 * US);
	drain(c, &f, 6 * MS + 56 * US);
	CHECK(f.pending[1] && c->slot[0].slice_start == 4 * MS + 50 * US);
	/* vCPU 0 comes back the same way; a fresh slice starts when it runs */
	sched_core_safe_point(c, 1, 6 * MS + 60 * US);
	drain(c, &f, 6 * MS + 60 * US);
	CHECK(c->slot[0].vcpu == 0 && !f.pending[0]);
	sched_core_resumed(c, 0, 7 * MS);
	drain(c, &f, 7 * MS);
	CHECK(!f.pending[0]);
	CHECK(sched_core_next_deadline(c) == 9 * MS);
	sched_core_destroy(c);
}

static void case_wait_timeout(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, 1, NULL, false, 0, &f);
	uint64_t now = 0;
	CHECK(sched_core_wait(c, 0, 100 * US, 0) == 1);
	drain(c, &f, 0);
	CHECK(c->slot[0].vcpu == 1 && sched_core_next_deadline(c) == 100 * US);
	run_until(c, &f, &now, 100 * US);
	CHECK(c->v[0].state == SCHED_ST_RUNNABLE && c->v[0].wake_reason == -ETIMEDOUT);
	sched_core_destroy(c);
}

static void case_deadlock(void)
{
	struct fake f;
	struct sched_core *c = mk("pv", 2, 3, 1, NULL, false, 0, &f);
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 1) == 1);
	drain(c, &f, 1);
	CHECK(sched_core_wait(c, 1, 50 * US, 2) == 1); /* a timeout: not stuck */
	drain(c, &f, 2);
	CHECK(sched_core_wait(c, 2, SCHED_NO_TIMEOUT, 3) == 1);
	drain(c, &f, 3);
	CHECK(!c->deadlock);
	uint64_t now = 3;
	run_until(c, &f, &now, 60 * US); /* 1 times out, runs */
	CHECK(c->v[1].state == SCHED_ST_RUNNING && !c->deadlock);
	CHECK(sched_core_halt(c, 1, now) == 1); /* IDLE: an interrupt may come */
	drain(c, &f, now);
	CHECK(!c->deadlock);
	sched_core_wake(c, 1, now);
	drain(c, &f, now);
	CHECK(sched_core_wait(c, 1, SCHED_NO_TIMEOUT, now) == 1);
	drain(c, &f, now);
	CHECK(c->deadlock && f.wake_all == -EDEADLK);
	CHECK(sched_core_next_deadline(c) == UINT64_MAX);
	sched_core_destroy(c);

	/* the last runner exiting while the rest wait forever is one too */
	c = mk("none", 1, 2, 1, NULL, false, 0, &f);
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 1) == 1);
	drain(c, &f, 1);
	sched_core_done(c, 1, 2);
	drain(c, &f, 2);
	CHECK(c->deadlock);
	sched_core_destroy(c);
}

static void case_deferral(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, 1, NULL, true, 0, &f);
	f.h[0].in_critical = true; /* forever */
	uint64_t now = 0, forced = 0;
	for (int i = 0; !forced && i < 10000 && now < 10 * MS; i++) {
		uint64_t d = sched_core_next_deadline(c);
		now = d;
		sched_core_tick(c, d);
		drain(c, &f, d);
		check_invariants(c, &f, d);
		if (f.forces[0])
			forced = d;
	}
	CHECK(forced >= c->slice_ns && forced <= c->slice_ns + c->defer_max_ns);
	CHECK(c->v[0].st.deferrals == 1 && c->v[0].st.deferrals_hard == 1);
	sched_core_destroy(c);

	/* leaving the critical section and yielding at the safe point */
	c = mk("none", 1, 2, 1, NULL, true, 0, &f);
	f.h[0].in_critical = true;
	now = 0;
	run_until(c, &f, &now, 2 * MS + 10 * US);
	CHECK(f.pending[0] && !f.force[0]);
	f.h[0].in_critical = false;
	sched_core_safe_point(c, 0, now);
	drain(c, &f, now);
	CHECK(c->slot[0].vcpu == 1 && !f.pending[0] && c->v[0].st.deferrals_hard == 0);
	sched_core_destroy(c);
}

/* A SPIN while queued in a lock is not the safe point; the release is. */
static void case_spin_while_queued(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, 1, NULL, true, SCHED_SPIN_ALL, &f);
	f.h[0].in_critical = true; /* holds a ticket */
	uint64_t now = 0;
	run_until(c, &f, &now, 2 * MS + 10 * US);
	CHECK(f.pending[0] && !f.force[0] && c->slot[0].vcpu == 0);
	sched_core_spin(c, 0, -1, SCHED_SPIN_YIELD, now);
	drain(c, &f, now);
	CHECK(c->slot[0].vcpu == 0 && f.pending[0] && c->v[0].st.spins_queued_kept == 1);
	f.h[0].in_critical = false; /* served, released */
	sched_core_safe_point(c, 0, now);
	drain(c, &f, now);
	CHECK(c->slot[0].vcpu == 1 && c->v[0].st.deferrals_hard == 0);
	sched_core_destroy(c);

	/* outside a lock region the same SPIN is the safe point */
	c = mk("none", 1, 2, 1, NULL, true, SCHED_SPIN_ALL, &f);
	f.h[0].in_critical = true;
	now = 0;
	run_until(c, &f, &now, 2 * MS + 10 * US);
	CHECK(f.pending[0]);
	f.h[0].in_critical = false; /* a tas waiter between tries */
	sched_core_spin(c, 0, -1, SCHED_SPIN_YIELD, now);
	drain(c, &f, now);
	CHECK(c->slot[0].vcpu == 1 && c->v[0].st.spins_queued_kept == 0);
	sched_core_destroy(c);
}

static void case_hint_spin(void)
{
	struct fake f;
	struct sched_core *c = mk("directed", 1, 3, 1, NULL, false, SCHED_SPIN_HINT, &f);
	f.h[1].spinning_since = 1; /* a spinning candidate, queued first */
	f.h[0].spinning_since = 1;
	uint64_t now = 0;
	run_until(c, &f, &now, 100 * US);
	CHECK(f.force[0] && c->v[0].handoff_to == 2); /* the non-spinner */
	CHECK(c->v[0].st.spin_events == 1 && c->v[0].st.preemptions == 0);
	run_until(c, &f, &now, 140 * US);
	CHECK(c->v[0].st.spin_events == 1); /* once per window at most */
	sched_core_yield(c, 0, now);
	drain(c, &f, now);
	CHECK(c->slot[0].vcpu == 2 && c->v[0].st.yields_given == 1);
	sched_core_destroy(c);
}

static void case_gang(void)
{
	struct fake f;
	int vm_of[4] = { 0, 0, 1, 1 };
	struct sched_core *c = mk("gang", 2, 4, 2, vm_of, false, 0, &f);
	uint64_t now = 0;
	CHECK(c->slot[0].vcpu == 0 && c->slot[1].vcpu == 1);
	int switches = 0, cur = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t d = sched_core_next_deadline(c);
		uint64_t t = now + 7 * US;
		now = d < t ? d : t;
		if (now == d) {
			sched_core_tick(c, now);
		} else {
			for (int v = 0; v < 4; v++)
				if (f.force[v]) {
					sched_core_yield(c, v, now);
					break;
				}
		}
		drain(c, &f, now);
		check_invariants(c, &f, now);
		if (running_count(c) == 2 && c->v[c->slot[0].vcpu].vm != cur) {
			cur = !cur;
			switches++;
		}
	}
	CHECK(switches >= 4);
	sched_core_destroy(c);
}

/* Two slots freed at once, and the queue head's last slot is the second:
 * it goes back there, the next one takes what is left. */
static void case_sticky(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 2, 3, 1, NULL, false, 0, &f);
	CHECK(c->slot[0].vcpu == 0 && c->slot[1].vcpu == 1);
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 0) == 1);
	drain(c, &f, 0);
	CHECK(c->slot[0].vcpu == 2); /* never ran: nothing to come back to */
	CHECK(sched_core_wait(c, 1, 50 * US, 10 * US) == 1);
	drain(c, &f, 10 * US);
	CHECK(c->slot[1].vcpu < 0);
	sched_core_kick(c, -1, 0, 20 * US); /* its slot 0 is held: moves */
	drain(c, &f, 20 * US);
	CHECK(c->slot[1].vcpu == 0 && c->v[0].st.slot_moves == 1);
	/* v0 (last: 1), v1 (last: 1), v2 (last: 0) all time out at 60 us. */
	CHECK(sched_core_wait(c, 0, 40 * US, 20 * US) == 1);
	drain(c, &f, 20 * US);
	CHECK(sched_core_wait(c, 2, 30 * US, 30 * US) == 1);
	drain(c, &f, 30 * US);
	CHECK(c->nrunning == 0);
	sched_core_tick(c, 60 * US);
	drain(c, &f, 60 * US);
	/* queue order is kept: v0 and v1 run, v2 waits. Without stickiness v0
	 * would have taken slot 0, the first one on offer. */
	CHECK(c->slot[1].vcpu == 0 && c->v[0].st.sticky_grants == 1);
	CHECK(c->slot[0].vcpu == 1 && c->v[1].st.slot_moves == 1);
	CHECK(c->v[2].state == SCHED_ST_RUNNABLE && c->qhead == 2);
	CHECK(f.grants[0] == 1 && f.grant_slot[0] == 1 && f.grant_slot[1] == 0);
	CHECK(sched_core_check(c) == NULL);
	sched_core_destroy(c);

	/* A pick whose own slot is taken leaves the free slot a queued vCPU
	 * last held to that one: v0 (last: 0, held by v3) and v1 (last: 1)
	 * time out together with slots 1 and 2 free. */
	c = mk("none", 3, 4, 1, NULL, false, 0, &f);
	CHECK(sched_core_wait(c, 0, 99 * US, 1 * US) == 1);
	drain(c, &f, 1 * US);
	CHECK(c->slot[0].vcpu == 3);
	CHECK(sched_core_wait(c, 1, 98 * US, 2 * US) == 1);
	drain(c, &f, 2 * US);
	sched_core_done(c, 2, 3 * US);
	drain(c, &f, 3 * US);
	sched_core_tick(c, 100 * US);
	drain(c, &f, 100 * US);
	CHECK(c->slot[2].vcpu == 0 && c->slot[1].vcpu == 1);
	CHECK(c->v[1].st.sticky_grants == 1 && c->v[0].st.slot_moves == 1);
	sched_core_destroy(c);

	/* gang chooses who, never where: each set starts on the slots its
	 * vCPUs last held, though they leave in the other order each time. */
	int vm_of[4] = { 0, 0, 1, 1 };
	c = mk("gang", 2, 4, 2, vm_of, false, 0, &f);
	uint64_t now = 0;
	int where[4] = { 0, 1, -1, -1 }, back = 0;
	for (int round = 0; round < 6; round++) {
		now += c->slice_ns;
		sched_core_tick(c, now);
		drain(c, &f, now);
		for (int s = 1; s >= 0; s--) {
			int v = c->slot[s].vcpu;
			CHECK(v >= 0 && f.force[v]);
			if (v < 0)
				continue;
			sched_core_yield(c, v, now);
			drain(c, &f, now);
			for (int u = 0; u < 4; u++) {
				if (!f.grants[u])
					continue;
				CHECK(where[u] < 0 || where[u] == f.grant_slot[u]);
				back += where[u] >= 0;
				where[u] = f.grant_slot[u];
			}
		}
		CHECK(sched_core_check(c) == NULL && c->nrunning == 2);
	}
	CHECK(back == 10); /* rounds 1..5, two vCPUs each */
	sched_core_destroy(c);
}

static void case_hist(void)
{
	struct sched_hist h = { 0 };
	for (uint64_t i = 1; i <= 1000; i++)
		sched_hist_add(&h, i * 1000);
	uint64_t p50 = sched_hist_percentile(&h, 50), p99 = sched_hist_percentile(&h, 99);
	CHECK(p50 >= 500000 && p50 <= 500000 * 5 / 4);
	CHECK(p99 >= 990000 && p99 <= 1000000);
	CHECK(sched_hist_percentile(&h, 100) == 1000000);
}

static void run_cases(void)
{
	CASE(case_basics());
	CASE(case_round_robin());
	CASE(case_kick_before_wait());
	CASE(case_kick_front_and_handoff());
	CASE(case_pending_cleared_when_it_runs_again());
	CASE(case_wait_timeout());
	CASE(case_deadlock());
	CASE(case_deferral());
	CASE(case_spin_while_queued());
	CASE(case_hint_spin());
	CASE(case_gang());
	CASE(case_sticky());
	CASE(case_hist());
}


int main(void)
{
	run_cases();
	run_random_all();
	fprintf(stderr, "%ld invariant checks passed, %ld failed\n", n_pass, n_fail);
	printf("%ld passed, %ld failed\n", cases_pass, cases_fail);
	return n_fail != 0;
}
