/*
 * Slots that come and go (a domain member's seats) and the policy switched
 * live, in the pure core: fake vCPUs on a fake clock, fixed scenarios first,
 * then random runs for every policy with slot and policy events mixed in,
 * sched_core_check and this file's own checks after every single event.
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
#define MAXV 12
#define MAXS 4

static long tot_events, tot_grants, tot_slot_offs, tot_demands, tot_policies, tot_parks;
static long tot_sticky_chances, tot_floors, tot_lock_drains, tot_lease_ons, tot_lease_ends;

struct fake {
	struct sched_hint h[MAXV];
	bool running[MAXV], force[MAXV];
	uint64_t exit_at[MAXV];
	bool preempted[MAXV], pending[MAXV], kick_pending[MAXV];
	uint64_t pending_since[MAXV];
	int grants[MAXV];       /* in the last batch */
	int slot_offs[MAXS];    /* SLOT_OFFs in the last batch */
	bool owed[MAXS];        /* an offline asked for, not answered yet */
	bool lease_on;          /* as of the last event: leases in force ... */
	uint64_t lease_end[MAXS]; /* ... and each slot's */
	int demands;            /* SLOT_DEMANDs in the last batch */
	int demand;             /* the last one's value; -1: none */
	int ntrace_policy, last_policy_arg;
	bool blocked[MAXV];     /* "halted in the host kernel" (parking) */
	uint64_t rng;
	/* stickiness, from the traces: each vCPU's last slot, forgotten when
	 * that slot goes offline (a seat may come back on another CPU) */
	const struct sched_core *c;
	int last[MAXV];
	bool ran[MAXV];
	uint64_t same[MAXV], moved[MAXV];
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

static bool fake_blocked(void *p, int v)
{
	return ((struct fake *)p)->blocked[v];
}

static void fake_trace(void *p, enum sched_trace_ev ev, int v, int arg, uint64_t now)
{
	struct fake *f = p;
	(void)now;
	if (ev == SCHED_TR_POLICY) {
		CHECK(v == -1);
		f->ntrace_policy++;
		tot_policies++;
		f->last_policy_arg = arg;
	}
	if (ev == SCHED_TR_SLOT_ON || ev == SCHED_TR_SLOT_OFF)
		CHECK(v == -1 && arg >= 0 && arg < MAXS);
	for (int u = 0; ev == SCHED_TR_SLOT_OFF && u < MAXV; u++)
		if (f->last[u] == arg)
			f->last[u] = -1;
	if (ev != SCHED_TR_GRANT)
		return;
	/* A new slice granted while the vCPU's last slot is free and online
	 * goes there; a hand-off passes the giver's slot. */
	const struct sched_core *c = f->c;
	int l = f->last[v];
	f->same[v] += l == arg;
	f->moved[v] += f->ran[v] && l != arg;
	f->last[v] = arg;
	f->ran[v] = true;
	if (l < 0 || !c->v[v].fresh_slice)
		return;
	if (l == arg || (c->slot[l].vcpu < 0 && sched_core_slot_usable(c, l))) {
		tot_sticky_chances++;
		CHECK(l == arg);
	}
}

/* Execute and clear the actions, as sched.c would. */
static void drain(struct sched_core *c, struct fake *f, uint64_t now)
{
	memset(f->grants, 0, sizeof(f->grants));
	memset(f->slot_offs, 0, sizeof(f->slot_offs));
	f->demands = 0;
	/* A seat may go back unasked when its lease is over (within a slice:
	 * the guest's claim has a tolerance; test_sched_slices times it). */
	bool may[MAXS];
	for (int s = 0; s < c->nslots; s++)
		may[s] = f->lease_on && f->lease_end[s] && now + LEASE_MARGIN_NS + c->slice_ns >= f->lease_end[s];
	for (int i = 0; i < c->nact; i++) {
		struct sched_action a = c->act[i];
		switch (a.kind) {
		case SCHED_ACT_GRANT:
			/* only ever an ONLINE slot */
			CHECK(c->slot[a.val].state == SCHED_SLOT_ONLINE);
			f->running[a.v] = true;
			f->force[a.v] = false;
			f->grants[a.v]++;
			tot_grants++;
			break;
		case SCHED_ACT_FORCE_EXIT:
			if (!f->force[a.v])
				f->exit_at[a.v] = now + rnd(f) % (30 * US);
			f->force[a.v] = true;
			break;
		case SCHED_ACT_SET_PREEMPTED:
			f->preempted[a.v] = a.val;
			break;
		case SCHED_ACT_SET_PREEMPT_PENDING:
			CHECK(f->pending[a.v] != (bool)a.val);
			f->pending[a.v] = a.val;
			if (a.val)
				f->pending_since[a.v] = now;
			break;
		case SCHED_ACT_SET_KICK_PENDING:
			f->kick_pending[a.v] = a.val;
			break;
		case SCHED_ACT_PARK:
			tot_parks++;
			break;
		case SCHED_ACT_WAKE_ALL:
		case SCHED_ACT_SET_CONTENDED: /* test_sched_core.c */
		case SCHED_ACT_NEW_SLICE:
			break;
		case SCHED_ACT_SLOT_OFF:
			CHECK(a.v == -1 && a.val >= 0 && a.val < c->nslots);
			/* once per offline asked for, or a seat whose lease is over */
			CHECK(f->owed[a.val] || may[a.val]);
			CHECK(c->slot[a.val].state == SCHED_SLOT_OFFLINE);
			f->owed[a.val] = false;
			f->slot_offs[a.val]++;
			tot_slot_offs++;
			break;
		case SCHED_ACT_SLOT_DEMAND:
			CHECK(a.v == -1 && a.val != f->demand); /* only changes */
			f->demand = a.val;
			f->demands++;
			tot_demands++;
			break;
		}
	}
	sched_core_clear_actions(c);
	for (int v = 0; v < c->nvcpus; v++)
		if (c->v[v].state != SCHED_ST_RUNNING)
			f->running[v] = f->force[v] = false;
	for (int s = 0; s < c->nslots; s++) {
		if (c->slot[s].state == SCHED_SLOT_GOING_OFF && !f->owed[s]) {
			CHECK(may[s]); /* nobody asked: its lease is over */
			f->owed[s] = true;
		}
		f->lease_end[s] = c->slot[s].lease_end;
	}
	f->lease_on = c->lease_on;
}

static struct sched_core *mk(const char *pol, int m, int n, int nvms, bool defer,
			     bool offline, struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->rng = 88172645463325252ull;
	f->demand = -1;
	for (int v = 0; v < MAXV; v++)
		f->h[v].waiting_for = f->last[v] = -1;
	int vm_of[MAXV];
	for (int v = 0; v < n; v++)
		vm_of[v] = v % nvms;
	struct sched_params p = {
		.nvcpus = n, .npcpus = m, .policy = pol, .defer = defer,
		.spin_sources = SCHED_SPIN_ALL, .nvms = nvms, .vm_of = vm_of, .seed = 42,
		.slots_offline = offline, .trace = fake_trace, .trace_ctx = f,
		/* a domain member's guests time their slices: leases end seats */
		.guest_slice = offline && defer,
	};
	for (int v = 0; v < MAXV; v++)
		f->h[v].guest_slice = offline && defer;
	const char *why = NULL;
	struct sched_core *c = sched_core_create(&p, fake_hint, f, &why);
	CHECK(c != NULL);
	if (!c) {
		printf("create: %s\n", why);
		exit(1);
	}
	f->c = c;
	sched_core_start(c, 0);
	drain(c, f, 0);
	return c;
}

/* The test's side of every offline request (see drain). */
static void offline(struct sched_core *c, struct fake *f, int s, uint64_t now)
{
	bool off = c->slot[s].state == SCHED_SLOT_OFFLINE;
	if (!off)
		f->owed[s] = true;
	/* an offline slot's SLOT_OFF was said once: none comes (drain checks) */
	CHECK(sched_core_slot_offline(c, s, now) == !off);
	drain(c, f, now);
}

static void online(struct sched_core *c, struct fake *f, int s, uint64_t now)
{
	sched_core_slot_online(c, s, now);
	f->owed[s] = false; /* a GOING_OFF is cancelled */
	drain(c, f, now);
}

static bool outgoing(const struct sched_core *c, int v)
{
	return c->v[v].preempt_req || c->v[v].preempt_pending;
}

static void check_invariants(struct sched_core *c, struct fake *f, uint64_t now)
{
	const char *why = sched_core_check(c);
	CHECK(why == NULL);
	if (why)
		printf("sched_core_check: %s\n", why);
	int runnable = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		runnable += x->state == SCHED_ST_RUNNABLE;
		CHECK(f->running[v] == (x->state == SCHED_ST_RUNNING));
		CHECK(f->pending[v] == x->preempt_pending);
		/* bounded deferral (after a stop nothing ticks: all just leave) */
		if (x->preempt_pending && !x->preempt_req && !c->stopping)
			CHECK(now < f->pending_since[v] + c->defer_max_ns);
	}
	for (int s = 0; s < c->nslots; s++) {
		enum sched_slot_state st = c->slot[s].state;
		int v = c->slot[s].vcpu;
		/* an unanswered offline is exactly a slot going off */
		CHECK(f->owed[s] == (st == SCHED_SLOT_GOING_OFF));
		/* whoever holds a slot going off has been asked to leave */
		if (st == SCHED_SLOT_GOING_OFF)
			CHECK(v >= 0 && outgoing(c, v));
		/* work conserving on the slots it may use */
		if (v == -1 && st == SCHED_SLOT_ONLINE && c->pol != &sched_policy_gang &&
		    !c->stopping && !c->deadlock)
			CHECK(runnable == 0);
	}
	if (c->slots_offline) {
		int want = c->nrunning + c->nrunnable;
		CHECK(f->demand == (want < c->nslots ? want : c->nslots));
	} else {
		CHECK(f->demand == -1);
	}
	int live = 0, stuck = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_DONE)
			continue;
		live++;
		stuck += x->state == SCHED_ST_WAITING && x->wait_deadline == UINT64_MAX;
	}
	CHECK(c->deadlock == (live > 0 && live == stuck));
}

static int running_count(const struct sched_core *c)
{
	int k = 0;
	for (int v = 0; v < c->nvcpus; v++)
		k += c->v[v].state == SCHED_ST_RUNNING;
	return k;
}

/* ---- fixed scenarios ---- */

/* (a) nothing runs until a slot comes online; then exactly that slot. */
static void case_nothing_without_slots(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 2, 3, 1, false, true, &f);
	CHECK(running_count(c) == 0);
	CHECK(f.demand == 2); /* min(2 slots, 3 runnable) */
	sched_core_tick(c, 5 * MS);
	drain(c, &f, 5 * MS);
	CHECK(running_count(c) == 0);
	check_invariants(c, &f, 5 * MS);
	online(c, &f, 1, 6 * MS);
	CHECK(running_count(c) == 1 && f.grants[0] == 1 && c->v[0].slot == 1);
	check_invariants(c, &f, 6 * MS);
	online(c, &f, 0, 7 * MS);
	CHECK(running_count(c) == 2 && f.grants[1] == 1 && c->v[1].slot == 0);
	/* out of range: ignored */
	sched_core_slot_online(c, 2, 8 * MS);
	sched_core_slot_online(c, -1, 8 * MS);
	CHECK(c->nact == 0);
	check_invariants(c, &f, 8 * MS);
	sched_core_destroy(c);
}

/* (b) offline of a held slot: the holder is forced out; SLOT_OFF only when
 * it has given the slot back, and the slot is not refilled. */
static void case_offline_held(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, 1, false, true, &f);
	online(c, &f, 0, 1 * MS);
	CHECK(c->v[0].state == SCHED_ST_RUNNING);
	offline(c, &f, 0, 2 * MS);
	CHECK(f.force[0] && f.slot_offs[0] == 0);
	CHECK(c->slot[0].state == SCHED_SLOT_GOING_OFF);
	check_invariants(c, &f, 2 * MS);
	sched_core_tick(c, 3 * MS);
	drain(c, &f, 3 * MS);
	CHECK(f.slot_offs[0] == 0);
	sched_core_yield(c, 0, 3 * MS);
	drain(c, &f, 3 * MS);
	CHECK(f.slot_offs[0] == 1 && c->slot[0].state == SCHED_SLOT_OFFLINE);
	CHECK(running_count(c) == 0 && f.grants[1] == 0);
	check_invariants(c, &f, 3 * MS);
	/* again: nothing more to say (a repeat answered with SLOT_OFF would
	 * give back the seat's next grant) */
	offline(c, &f, 0, 4 * MS);
	CHECK(f.slot_offs[0] == 0);
	check_invariants(c, &f, 4 * MS);
	sched_core_destroy(c);

	/* With deferral and nobody queued, the request still stands: the
	 * guest's safe point gives the slot back. */
	c = mk("none", 1, 1, 1, true, true, &f);
	online(c, &f, 0, 1 * MS);
	offline(c, &f, 0, 2 * MS);
	CHECK(f.pending[0] && !f.force[0]);
	sched_core_tick(c, 2 * MS + 10 * US);
	drain(c, &f, 2 * MS + 10 * US);
	CHECK(f.pending[0]); /* not dropped although nobody queues */
	/* granted before the offline, back in guest mode only now: the
	 * request it could not have seen is made again, with a new number */
	uint32_t seq = c->v[0].pending_seq;
	sched_core_resumed(c, 0, 2 * MS + 20 * US);
	drain(c, &f, 2 * MS + 20 * US);
	CHECK(f.pending[0] && c->v[0].pending_seq != seq);
	sched_core_safe_point(c, 0, 2 * MS + 30 * US);
	drain(c, &f, 2 * MS + 30 * US);
	CHECK(f.slot_offs[0] == 1 && c->v[0].state == SCHED_ST_RUNNABLE);
	CHECK(f.demand == 1);
	check_invariants(c, &f, 2 * MS + 30 * US);
	sched_core_destroy(c);

	/* ... and a guest that ignores it is forced out at defer_max_ns. */
	c = mk("none", 1, 1, 1, true, true, &f);
	online(c, &f, 0, 1 * MS);
	offline(c, &f, 0, 2 * MS);
	uint64_t d = sched_core_next_deadline(c);
	CHECK(d == 2 * MS + c->defer_max_ns);
	sched_core_tick(c, d);
	drain(c, &f, d);
	CHECK(f.force[0]);
	sched_core_yield(c, 0, d + 5 * US);
	drain(c, &f, d + 5 * US);
	CHECK(f.slot_offs[0] == 1);
	check_invariants(c, &f, d + 5 * US);
	/* online again: it runs at once */
	online(c, &f, 0, d + 10 * US);
	CHECK(c->v[0].state == SCHED_ST_RUNNING);
	sched_core_destroy(c);
}

/* (c) a hand-off from a vCPU on a slot going off does not pass the slot:
 * the receiver is queued first instead. */
static void case_handoff_on_going_off(void)
{
	struct fake f;
	/* a spin hand-off seen in guest mode, then the offline */
	struct sched_core *c = mk("directed", 1, 2, 1, false, true, &f);
	online(c, &f, 0, 1 * MS);
	sched_core_spin_seen(c, 0, SCHED_SPIN_PLE, 1 * MS + 10 * US);
	drain(c, &f, 1 * MS + 10 * US);
	CHECK(c->v[0].handoff_to == 1 && f.force[0]);
	offline(c, &f, 0, 1 * MS + 20 * US);
	sched_core_yield(c, 0, 1 * MS + 30 * US);
	drain(c, &f, 1 * MS + 30 * US);
	CHECK(f.grants[1] == 0 && c->v[1].state == SCHED_ST_RUNNABLE);
	CHECK(c->qhead == 1);
	CHECK(f.slot_offs[0] == 1);
	CHECK(c->v[0].st.yields_given == 0);
	check_invariants(c, &f, 1 * MS + 30 * US);
	sched_core_destroy(c);

	/* a spin hypercall from the vCPU leaving: it just leaves */
	c = mk("directed", 1, 2, 1, false, true, &f);
	online(c, &f, 0, 1 * MS);
	offline(c, &f, 0, 2 * MS);
	sched_core_spin(c, 0, 1, SCHED_SPIN_YIELD, 2 * MS + 5 * US);
	drain(c, &f, 2 * MS + 5 * US);
	CHECK(f.grants[1] == 0 && f.slot_offs[0] == 1 && running_count(c) == 0);
	check_invariants(c, &f, 2 * MS + 5 * US);
	sched_core_destroy(c);

	/* a PV kick hand-off from the vCPU leaving */
	c = mk("pv", 1, 2, 1, false, true, &f);
	online(c, &f, 0, 1 * MS);
	sched_core_yield(c, 0, 2 * MS); /* v1 runs */
	drain(c, &f, 2 * MS);
	CHECK(c->v[1].state == SCHED_ST_RUNNING);
	sched_core_wait(c, 1, SCHED_NO_TIMEOUT, 3 * MS); /* v0 runs */
	drain(c, &f, 3 * MS);
	CHECK(c->v[0].state == SCHED_ST_RUNNING);
	offline(c, &f, 0, 4 * MS);
	CHECK(f.force[0]);
	sched_core_kick(c, 0, 1, 4 * MS + 5 * US);
	drain(c, &f, 4 * MS + 5 * US);
	CHECK(f.grants[1] == 0 && f.slot_offs[0] == 1);
	CHECK(c->qhead == 1 && c->v[1].qnext == 0);
	check_invariants(c, &f, 4 * MS + 5 * US);
	/* the next seat goes to the woken one */
	online(c, &f, 0, 5 * MS);
	CHECK(f.grants[1] == 1);
	sched_core_destroy(c);
}

/* (d) the demand follows running + runnable, capped at the slots. */
static void case_demand(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 3, 4, 1, false, true, &f);
	CHECK(f.demand == 3);
	for (int s = 0; s < 3; s++)
		online(c, &f, s, 1 * MS);
	CHECK(f.demand == 3 && running_count(c) == 3);
	sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 2 * MS); /* 3 left: no change */
	drain(c, &f, 2 * MS);
	CHECK(f.demands == 0 && f.demand == 3);
	sched_core_halt(c, 1, 3 * MS);
	drain(c, &f, 3 * MS);
	CHECK(f.demands == 1 && f.demand == 2);
	sched_core_halt(c, 2, 4 * MS);
	drain(c, &f, 4 * MS);
	CHECK(f.demand == 1);
	check_invariants(c, &f, 4 * MS);
	sched_core_kick(c, -1, 1, 5 * MS);
	drain(c, &f, 5 * MS);
	CHECK(f.demands == 1 && f.demand == 2);
	sched_core_done(c, 3, 6 * MS);
	drain(c, &f, 6 * MS);
	CHECK(f.demand == 1);
	/* offline slots do not change what is wanted */
	offline(c, &f, 0, 7 * MS);
	offline(c, &f, 1, 7 * MS);
	offline(c, &f, 2, 7 * MS);
	CHECK(f.demands == 0 && f.demand == 1);
	check_invariants(c, &f, 7 * MS);
	sched_core_destroy(c);

	/* slots_offline false: no demand at all, ever */
	c = mk("none", 2, 3, 1, false, false, &f);
	sched_core_halt(c, 0, 1 * MS);
	drain(c, &f, 1 * MS);
	CHECK(f.demand == -1 && running_count(c) == 2);
	check_invariants(c, &f, 1 * MS);
	sched_core_destroy(c);
}

/* (f) set_policy: an unknown name changes nothing; a known one switches. */
static void case_set_policy(void)
{
	struct fake f;
	struct sched_core *c = mk("directed", 2, 4, 2, false, false, &f);
	const struct sched_policy *before = c->pol;
	void *state = c->pstate;
	CHECK(sched_core_set_policy(c, "no-such-policy", 1 * MS) == -EINVAL);
	CHECK(sched_core_set_policy(c, NULL, 1 * MS) == -EINVAL);
	CHECK(c->pol == before && c->pstate == state && c->nact == 0 && f.ntrace_policy == 0);
	const char *const *names = sched_policy_names();
	int changes = 0;
	for (int i = 0; names[i]; i++) {
		bool same = !strcmp(c->pol->name, names[i]);
		CHECK(sched_core_set_policy(c, names[i], (uint64_t)(2 + i) * MS) == 0);
		drain(c, &f, (uint64_t)(2 + i) * MS);
		CHECK(!strcmp(c->pol->name, names[i]));
		if (!same) {
			changes++;
			CHECK(f.last_policy_arg == i);
		}
		check_invariants(c, &f, (uint64_t)(2 + i) * MS);
	}
	/* a switch to the policy in force is no event */
	CHECK(sched_core_set_policy(c, c->pol->name, 9 * MS) == 0 && c->nact == 0);
	CHECK(changes > 0 && f.ntrace_policy == changes);
	sched_core_destroy(c);

	/* gang keeps slots empty for a set member that sleeps; leaving it
	 * fills them at once */
	static const int vm_of[] = { 0, 0, 1 };
	struct sched_params p = { .nvcpus = 3, .npcpus = 2, .policy = "gang", .nvms = 2,
				  .vm_of = vm_of };
	memset(&f, 0, sizeof(f));
	f.demand = -1;
	c = sched_core_create(&p, fake_hint, &f, NULL);
	CHECK(c != NULL);
	sched_core_start(c, 0);
	drain(c, &f, 0);
	CHECK(running_count(c) == 2 && c->v[2].state == SCHED_ST_RUNNABLE);
	sched_core_halt(c, 0, 1 * US);
	drain(c, &f, 1 * US);
	CHECK(running_count(c) == 1); /* VM 0's slot stays empty */
	CHECK(sched_core_set_policy(c, "none", 2 * US) == 0);
	drain(c, &f, 2 * US);
	CHECK(running_count(c) == 2 && c->v[2].state == SCHED_ST_RUNNING);
	check_invariants(c, &f, 2 * US);
	sched_core_destroy(c);
}

/* ---- random event sequences ---- */

struct run {
	const char *pol;
	int m, n, nvms;
	bool sleepers, defer, slots_offline, halts;
	uint64_t seed;
};

static void slot_event(struct sched_core *c, struct fake *f, uint64_t now)
{
	int s = (int)(rnd(f) % (uint64_t)c->nslots);
	uint64_t x = rnd(f) % 100;
	if (x < 55) {
		/* a grant brings its lease: the domain's slice end, near or past */
		uint64_t end = rnd(f) % 4 ? now + rnd(f) % (4 * c->base_slice_ns) : now / 2;
		sched_core_slot_lease(c, s, end, now);
		drain(c, f, now);
		online(c, f, s, now);
	} else if (x < 80) {
		offline(c, f, s, now);
	} else if (x < 95) {
		/* another domain member starts or stops waiting: the floor and
		 * the leases follow it */
		uint64_t fl = rnd(f) % 2 ? 0 : (rnd(f) % 4) * c->base_slice_ns;
		sched_core_set_slice_floor(c, fl, now);
		sched_core_set_lease(c, rnd(f) % 2, now);
		tot_lease_ons += c->lease_on;
		CHECK(c->slice_ns == (fl > c->base_slice_ns ? fl : c->base_slice_ns));
		tot_floors += c->slice_ns > c->base_slice_ns;
		drain(c, f, now);
	} else {
		/* a new policy, now and then an unknown one */
		const char *const *names = sched_policy_names();
		int np = 0;
		while (names[np])
			np++;
		int k = (int)(rnd(f) % (uint64_t)(np + 1));
		const struct sched_policy *before = c->pol;
		int r = sched_core_set_policy(c, k < np ? names[k] : "bogus", now);
		CHECK(k < np ? r == 0 && !strcmp(c->pol->name, names[k]) :
			       r == -EINVAL && c->pol == before);
		drain(c, f, now);
	}
}

static void vcpu_event(struct sched_core *c, struct fake *f, const struct run *r, int v,
		       uint64_t now)
{
	uint64_t x = rnd(f) % 100;
	if (x < 10) {
		f->h[v].spinning_since = f->h[v].spinning_since ? 0 : now / 2 + 1;
	} else if (x < 20) {
		f->h[v].in_critical = !f->h[v].in_critical;
	} else if (x < 25) {
		f->h[v].waiting_for = rnd(f) % 3 ? -1 : (int)(rnd(f) % (uint64_t)c->nvcpus);
	} else if (x < 40) {
		int target = rnd(f) % 2 ? -1 : (int)(rnd(f) % (uint64_t)c->nvcpus);
		sched_core_spin(c, v, target, 1u << (rnd(f) % 3), now);
	} else if (x < 43) {
		sched_core_spin_seen(c, v, SCHED_SPIN_PLE, now);
	} else if (x < 48) {
		sched_core_safe_point(c, v, now);
	} else if (x < 58 && r->sleepers) {
		uint64_t t = rnd(f) % 2 ? SCHED_NO_TIMEOUT : rnd(f) % (3 * MS) + 1;
		sched_core_wait(c, v, t, now);
	} else if (x < 61 && r->sleepers) {
		sched_core_halt(c, v, now);
	} else if (x < 75) {
		int to = (int)(rnd(f) % (uint64_t)c->nvcpus);
		for (int k = 0; k < c->nvcpus && rnd(f) % 4; k++) {
			int u = (to + k) % c->nvcpus;
			if (c->v[u].state == SCHED_ST_WAITING || c->v[u].state == SCHED_ST_IDLE) {
				to = u;
				break;
			}
		}
		sched_core_kick(c, v, to, now);
	} else if (x < 76 && r->sleepers && rnd(f) % 8 == 0) {
		sched_core_done(c, v, now);
	} else if (x < 80) {
		sched_core_resumed(c, v, now);
	}
	drain(c, f, now);
}

/* A seat that went offline may come back on another host CPU: nobody is
 * warm there, so its old holder gets no sticky grant on it. */
static void case_sticky_seat(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 2, 1, 1, false, true, &f);
	online(c, &f, 0, 0);
	online(c, &f, 1, 0);
	CHECK(c->slot[0].vcpu == 0);
	CHECK(sched_core_wait(c, 0, MS /* not a deadlock */, 10 * US) == 1);
	drain(c, &f, 10 * US);
	sched_core_kick(c, -1, 0, 20 * US);
	drain(c, &f, 20 * US);
	CHECK(c->slot[0].vcpu == 0 && c->v[0].st.sticky_grants == 1);
	CHECK(sched_core_wait(c, 0, MS, 30 * US) == 1);
	drain(c, &f, 30 * US);
	offline(c, &f, 0, 40 * US);
	online(c, &f, 0, 50 * US);
	sched_core_kick(c, -1, 0, 60 * US);
	drain(c, &f, 60 * US);
	CHECK(c->slot[0].vcpu == 0); /* first on offer, not warm */
	CHECK(c->v[0].st.sticky_grants == 1 && c->v[0].st.slot_moves == 1);
	check_invariants(c, &f, 60 * US);
	sched_core_destroy(c);
}

static void run_random(const struct run *r, int steps)
{
	snprintf(ctx, sizeof(ctx), "run(%s m=%d n=%d vms=%d sleepers=%d defer=%d off=%d seed=%" PRIu64 ")",
		 r->pol, r->m, r->n, r->nvms, r->sleepers, r->defer, r->slots_offline, r->seed);
	struct fake f;
	struct sched_core *c = mk(r->pol, r->m, r->n, r->nvms, r->defer, r->slots_offline, &f);
	f.rng = r->seed * 2654435761u + 1;
	if (r->halts) {
		/* parking frees slots too: a slot going off must go off then */
		c->halt_check_ns = 300 * US;
		c->next_halt_check = 300 * US;
		sched_core_set_blocked_fn(c, fake_blocked, &f);
	}
	uint64_t now = 0;
	long failed_before = n_fail;
	bool stopped = false;
	for (int step = 0; step < steps && !c->deadlock && n_fail == failed_before; step++) {
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
			sched_core_tick(c, now);
			drain(c, &f, now);
		} else if (exiter >= 0) {
			now = next;
			sched_core_yield(c, exiter, now);
			drain(c, &f, now);
		} else if (rnd(&f) % 8 == 0) {
			now = next;
			slot_event(c, &f, now);
		} else if (r->halts && rnd(&f) % 16 == 0) {
			/* a guest halts in, or wakes inside, the host kernel */
			int v = (int)(rnd(&f) % (uint64_t)r->n);
			f.blocked[v] = !f.blocked[v];
			now = next;
		} else if (!stopped && step > steps - 50 && rnd(&f) % 4 == 0) {
			/* the end of a run: everyone is forced out, slots go off */
			now = next;
			sched_core_stop(c, now);
			drain(c, &f, now);
			stopped = true;
		} else {
			now = next;
			int v = (int)(rnd(&f) % (uint64_t)r->n);
			if (c->v[v].state == SCHED_ST_RUNNING) {
				vcpu_event(c, &f, r, v, now);
			} else if (r->sleepers && rnd(&f) % 16 == 0) {
				if (rnd(&f) % 2)
					sched_core_wake(c, v, now);
				else
					sched_core_kick(c, -1, v, now);
				drain(c, &f, now);
			}
		}
		check_invariants(c, &f, now);
		tot_events++;
	}
	for (int v = 0; v < r->n; v++) {
		CHECK(c->v[v].st.sticky_grants == f.same[v]);
		CHECK(c->v[v].st.slot_moves == f.moved[v]);
		tot_lock_drains += (long)c->v[v].st.lock_drains;
		tot_lease_ends += (long)c->v[v].st.lease_ends;
	}
	sched_core_destroy(c);
	ctx[0] = 0;
}

static void run_random_all(void)
{
	uint64_t seed = 1;
	for (const char *const *p = sched_policy_names(); *p; p++)
		for (int m = 1; m <= 3; m++)
			for (int n = 1; n <= 7; n += 2)
				for (int mode = 0; mode < 4; mode++)
					for (int off = 0; off <= 1; off++) {
						struct run r = { *p, m, n, 1, mode & 1, mode & 2, off,
								 ((seed * 2654435761u) >> 9) & 1, seed };
						seed++;
						if (!strcmp(*p, "gang"))
							r.nvms = 1 + (int)(seed % 3);
						if (r.nvms > n)
							r.nvms = n;
						CASE(run_random(&r, 3000));
					}
}

int main(void)
{
	CASE(case_nothing_without_slots());
	CASE(case_offline_held());
	CASE(case_handoff_on_going_off());
	CASE(case_demand());
	CASE(case_set_policy());
	CASE(case_sticky_seat());
	run_random_all();
	CHECK(tot_sticky_chances > 1000);
	CHECK(tot_floors > 1000);
	CHECK(tot_lock_drains > 50);
	CHECK(tot_lease_ons > 1000 && tot_lease_ends > 100);
	fprintf(stderr, "random runs: %ld events, %ld grants, %ld slots gone offline, %ld demands, %ld policy switches, %ld parks, %ld grants with the last slot free, %ld slice floors, %ld lock drains, %ld leases on, %ld seats gone at their lease's end\n",
		tot_events, tot_grants, tot_slot_offs, tot_demands, tot_policies, tot_parks, tot_sticky_chances,
		tot_floors, tot_lock_drains, tot_lease_ons, tot_lease_ends);
	fprintf(stderr, "%ld invariant checks passed, %ld failed\n", n_pass, n_fail);
	printf("%ld passed, %ld failed\n", cases_pass, cases_fail);
	return n_fail != 0;
}
