/*
 * How slices end, scenario by scenario on a fake clock: slices cut short
 * while a woken vCPU queues (params.wake_slice_ns), and guest-timed slices
 * (sched/core_gslice.c): the core tells a guest that opted in how long its slice is and
 * whether anyone queues; the guest leaves at its own slice end; the core
 * arms only the hard deadline and never wakes for the slice end itself.
 * The random event sequences with invariants after every event are in
 * test_sched_core.c (its gslice runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core.h"
#include "sched/policy.h"
#include "tests/unit/check_cases.h"

#define US 1000ull
#define MS (1000 * US)
#define SLICE (2 * MS)
#define DEFER (200 * US)

struct fake {
	struct sched_hint h[4];
	bool contended[4];
	int new_slice_us[4]; /* the last NEW_SLICE's length; -1: none since reset */
	int pending_sets, forces, grants[4], slot_offs;
	int traced[SCHED_TR_COUNT];
};

static void count_trace(void *p, enum sched_trace_ev ev, int v, int arg, uint64_t now)
{
	(void)v, (void)arg, (void)now;
	((struct fake *)p)->traced[ev]++;
}

static void hint(void *p, int v, struct sched_hint *out)
{
	*out = ((struct fake *)p)->h[v];
}

static void drain(struct sched_core *c, struct fake *f)
{
	for (int i = 0; i < c->nact; i++) {
		struct sched_action a = c->act[i];
		switch (a.kind) {
		case SCHED_ACT_SET_CONTENDED: f->contended[a.v] = a.val; break;
		case SCHED_ACT_NEW_SLICE: f->new_slice_us[a.v] = a.val; break;
		case SCHED_ACT_SET_PREEMPT_PENDING: f->pending_sets += a.val != 0; break;
		case SCHED_ACT_FORCE_EXIT: f->forces++; break;
		case SCHED_ACT_GRANT: f->grants[a.v]++; break;
		case SCHED_ACT_SLOT_OFF: f->slot_offs++; break;
		default: break;
		}
	}
	sched_core_clear_actions(c);
	const char *bad = sched_core_check(c);
	if (bad)
		printf("invariant: %s\n", bad);
	CHECK(bad == NULL);
}

static uint64_t mk_wake_slice; /* the next mk's wake_slice_ns */
static bool mk_seats;          /* the next mk's slots_offline: a domain member's seats */

static struct sched_core *mk(const char *pol, int m, int n, bool opt_in, struct fake *f)
{
	memset(f, 0, sizeof(*f));
	for (int v = 0; v < 4; v++) {
		f->h[v].waiting_for = -1;
		f->h[v].guest_slice = opt_in;
		f->new_slice_us[v] = -1;
	}
	struct sched_params p = {
		.nvcpus = n, .npcpus = m, .policy = pol, .defer = true, .guest_slice = true,
		.slice_ns = SLICE, .defer_max_ns = DEFER, .spin_sources = SCHED_SPIN_YIELD,
		.nvms = !strcmp(pol, "gang") ? n : 1, .wake_slice_ns = mk_wake_slice,
		.slots_offline = mk_seats, .trace = count_trace, .trace_ctx = f,
	};
	static const int vm_of[4] = { 0, 1, 2, 3 };
	if (!strcmp(pol, "gang"))
		p.vm_of = vm_of;
	const char *why;
	struct sched_core *c = sched_core_create(&p, hint, f, &why);
	if (!c) {
		printf("create: %s\n", why);
		exit(1);
	}
	sched_core_start(c, 0);
	drain(c, f);
	return c;
}

/* Back from the grant: its slice starts, the guest is told its length. */
static void resume(struct sched_core *c, struct fake *f, int v, uint64_t now)
{
	f->new_slice_us[v] = -1;
	sched_core_resumed(c, v, now);
	drain(c, f);
}

static void case_guest_ends_its_slice(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, true, &f);
	resume(c, &f, 0, 10);
	CHECK(f.new_slice_us[0] == (int)(SLICE / US));
	CHECK(f.contended[0]); /* vCPU 1 queues */
	/* The core's next wake-up is the hard deadline, not the slice end. */
	CHECK(sched_core_next_deadline(c) == 10 + SLICE + DEFER);
	sched_core_tick(c, 10 + SLICE);
	drain(c, &f);
	CHECK(f.pending_sets == 0 && f.forces == 0 && sched_core_state(c, 0) == SCHED_ST_RUNNING);
	/* At its next lock boundary the guest sees the slice over and leaves. */
	sched_core_safe_point(c, 0, 10 + SLICE + 5 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNABLE && sched_core_state(c, 1) == SCHED_ST_RUNNING);
	CHECK(c->v[0].st.guest_slice_yields == 1 && c->v[0].st.preemptions == 0);
	CHECK(f.traced[SCHED_TR_SLICE_GUEST] == 1 && f.traced[SCHED_TR_DEFER] == 0);
	CHECK(c->v[0].st.deferrals == 0 && c->v[0].st.deferrals_hard == 0);
	resume(c, &f, 1, 10 + SLICE + 30 * US);
	CHECK(f.new_slice_us[1] == (int)(SLICE / US) && f.contended[1]);
	CHECK(f.pending_sets == 0 && f.forces == 0);
	sched_core_destroy(c);
}

/* A guest's ack of the slice fields (ABI.md 4.3) comes mid-slice, after
 * the grant's NEW_SLICE was dropped for it: the core says again what is
 * left of the slice and whether anyone queues, and learns the opt-in the
 * guest set before its ack, so this very slice is guest-timed. */
static void case_ack_publishes_mid_slice(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, false, &f);
	resume(c, &f, 0, 10);
	f.new_slice_us[0] = -1, f.contended[0] = false; /* what the page holds: nothing */
	f.h[0].guest_slice = true;
	sched_core_features_acked(c, 0, 10 + SLICE / 2);
	drain(c, &f);
	CHECK(f.new_slice_us[0] == (int)(SLICE / 2 / US));
	CHECK(f.contended[0]); /* vCPU 1 queues */
	CHECK(sched_core_next_deadline(c) == 10 + SLICE + DEFER);
	sched_core_tick(c, 10 + SLICE);
	drain(c, &f);
	CHECK(f.pending_sets == 0 && f.forces == 0);
	/* a vCPU that holds no slot has no slice to publish */
	f.new_slice_us[1] = -1;
	sched_core_features_acked(c, 1, 10 + SLICE + 1);
	drain(c, &f);
	CHECK(f.new_slice_us[1] == -1);
	sched_core_destroy(c);
}

static void case_hard_deadline(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, true, &f);
	resume(c, &f, 0, 0);
	/* The guest does not keep its word: forced out at the hard deadline. */
	uint64_t hard = sched_core_next_deadline(c);
	CHECK(hard == SLICE + DEFER);
	sched_core_tick(c, hard - 1);
	drain(c, &f);
	CHECK(f.forces == 0);
	sched_core_tick(c, hard);
	drain(c, &f);
	CHECK(f.forces == 1 && f.pending_sets == 0);
	CHECK(c->v[0].st.deferrals_hard == 1 && c->v[0].st.preemptions == 1);
	sched_core_destroy(c);
}

static void case_early_claim_declined(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, true, &f);
	resume(c, &f, 0, 0);
	/* Before its slice ends: declined, and the old way takes over. */
	sched_core_safe_point(c, 0, SLICE / 2);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING && c->v[0].st.guest_slice_declined == 1);
	CHECK(sched_core_next_deadline(c) == SLICE);
	sched_core_tick(c, SLICE);
	drain(c, &f);
	CHECK(f.pending_sets == 1 && c->v[0].st.deferrals == 1);
	/* its next slice is guest-timed again */
	sched_core_safe_point(c, 0, SLICE + 10 * US);
	drain(c, &f);
	resume(c, &f, 1, SLICE + 20 * US);
	CHECK(f.new_slice_us[1] == (int)(SLICE / US));
	CHECK(sched_core_next_deadline(c) == SLICE + 20 * US + SLICE + DEFER);
	sched_core_destroy(c);
}

static void case_nobody_queued(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, true, &f);
	resume(c, &f, 0, 0);
	sched_core_safe_point(c, 0, SLICE + 1);
	drain(c, &f);
	resume(c, &f, 1, SLICE + 2);
	/* vCPU 1 sleeps: nobody queues, no deadline, the flag says so. */
	CHECK(sched_core_wait(c, 1, SCHED_NO_TIMEOUT, SLICE + 3) == 1);
	drain(c, &f);
	resume(c, &f, 0, SLICE + 4);
	CHECK(sched_core_state(c, 1) == SCHED_ST_WAITING && !f.contended[0]);
	CHECK(sched_core_next_deadline(c) == UINT64_MAX);
	/* Its slice ended long ago when someone queues at t: the hard
	 * deadline runs from t, and the guest is told at once. */
	uint64_t t = 10 * SLICE;
	sched_core_kick(c, 0, 1, t);
	drain(c, &f);
	CHECK(sched_core_state(c, 1) == SCHED_ST_RUNNABLE && f.contended[0]);
	CHECK(sched_core_next_deadline(c) == t + DEFER);
	sched_core_safe_point(c, 0, t + 3 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 1) == SCHED_ST_RUNNING && c->v[0].st.guest_slice_yields == 2);
	CHECK(f.pending_sets == 0 && f.forces == 0);
	sched_core_destroy(c);
}

static void case_handoff_inherits(void)
{
	struct fake f;
	struct sched_core *c = mk("holder", 1, 3, true, &f);
	resume(c, &f, 0, 0);
	resume(c, &f, 0, 0);
	/* 0 hands its slot to 1 by a directed yield: 1 gets what is left */
	sched_core_spin(c, 0, 1, SCHED_SPIN_YIELD, 500 * US);
	drain(c, &f);
	if (sched_core_state(c, 1) == SCHED_ST_RUNNING) {
		resume(c, &f, 1, 600 * US);
		CHECK(f.new_slice_us[1] == (int)((SLICE - 600 * US) / US));
	} else {
		CHECK(!"holder handed the slot to the named vCPU");
	}
	sched_core_destroy(c);
}

static void case_not_opted_in(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, false, &f);
	resume(c, &f, 0, 0);
	/* the page still says it all, but the slice ends the old way */
	CHECK(f.new_slice_us[0] == (int)(SLICE / US) && f.contended[0]);
	CHECK(sched_core_next_deadline(c) == SLICE);
	sched_core_tick(c, SLICE);
	drain(c, &f);
	CHECK(f.pending_sets == 1 && c->v[0].st.guest_slice_yields == 0);
	sched_core_destroy(c);
}

static void case_gang_keeps_its_slices(void)
{
	struct fake f;
	struct sched_core *c = mk("gang", 1, 2, true, &f);
	resume(c, &f, 0, 0);
	CHECK(sched_core_next_deadline(c) <= SLICE);
	sched_core_safe_point(c, 0, SLICE / 2);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING && c->v[0].st.guest_slice_declined == 0);
	sched_core_destroy(c);
}

/* A seat going offline (a domain member's) is still asked through
 * preempt_pending: the guest's own slice end is not the only reason. */
static void case_leaving_seat(void)
{
	struct fake f;
	memset(&f, 0, sizeof(f));
	for (int v = 0; v < 4; v++) {
		f.h[v].waiting_for = -1;
		f.h[v].guest_slice = true;
	}
	struct sched_params p = {
		.nvcpus = 1, .npcpus = 1, .policy = "none", .defer = true, .guest_slice = true,
		.slice_ns = SLICE, .defer_max_ns = DEFER, .slots_offline = true,
	};
	const char *why;
	struct sched_core *c = sched_core_create(&p, hint, &f, &why);
	sched_core_start(c, 0);
	sched_core_slot_online(c, 0, 0);
	drain(c, &f);
	resume(c, &f, 0, 1);
	sched_core_slot_offline(c, 0, 100 * US);
	drain(c, &f);
	CHECK(f.pending_sets == 1);
	sched_core_safe_point(c, 0, 120 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNABLE && c->v[0].st.guest_slice_yields == 0);
	sched_core_destroy(c);
}

#define WAKE_SLICE (500 * US)

/* A kicked vCPU queues (no hand-off under `none`): the running slice ends
 * WAKE_SLICE after it began, not SLICE. */
static void case_wake_cuts_the_slice(bool opt_in)
{
	struct fake f;
	mk_wake_slice = WAKE_SLICE;
	struct sched_core *c = mk("none", 1, 3, opt_in, &f);
	mk_wake_slice = 0;
	resume(c, &f, 0, 0);
	/* 1 and 2 queue; 0 leaves at its slice end, 1 runs and 0 waits */
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 10 * US) == 1);
	drain(c, &f);
	resume(c, &f, 1, 20 * US);
	/* a plain queue: the full slice (guest-timed or not) */
	uint64_t full = opt_in ? 20 * US + SLICE + DEFER : 20 * US + SLICE;
	CHECK(sched_core_next_deadline(c) == full);
	/* 1 kicks 0: woken, queued behind 2 at the front; the slice is cut */
	sched_core_kick(c, 1, 0, 100 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNABLE && c->nwoken == 1);
	CHECK(sched_core_next_deadline(c) == 20 * US + WAKE_SLICE);
	sched_core_tick(c, 20 * US + WAKE_SLICE);
	drain(c, &f);
	/* asked at a safe point even when the guest times its slices: it
	 * knows only the full length */
	CHECK(f.pending_sets == 1 && c->v[1].st.wake_cut_slices == 1 && c->v[1].st.deferrals == 1);
	CHECK(f.traced[SCHED_TR_SLICE_CUT] == 1);
	sched_core_safe_point(c, 1, 20 * US + WAKE_SLICE + 5 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING && c->nwoken == 0);
	/* the woken one runs: slices are whole again */
	resume(c, &f, 0, 600 * US);
	CHECK(sched_core_next_deadline(c) == (opt_in ? 600 * US + SLICE + DEFER : 600 * US + SLICE));
	sched_core_destroy(c);
}

/* Gang keeps the slices of its VM sets: a wake-up does not cut them. */
static void case_wake_leaves_gang_alone(void)
{
	struct fake f;
	mk_wake_slice = WAKE_SLICE;
	struct sched_core *c = mk("gang", 1, 2, false, &f);
	mk_wake_slice = 0;
	resume(c, &f, 0, 0);
	uint64_t before = sched_core_next_deadline(c);
	CHECK(sched_core_wait(c, 0, SCHED_NO_TIMEOUT, 10 * US) == 1);
	drain(c, &f);
	sched_core_wake(c, 0, 20 * US);
	drain(c, &f);
	CHECK(sched_core_next_deadline(c) >= before && c->v[1].st.wake_cut_slices == 0);
	sched_core_destroy(c);
}


/*
 * A domain member's slice floor (sched_core_set_slice_floor): while another
 * member waits, the slice lasts the floor, so the domain's revoke ends it;
 * a floor below the slice changes nothing; dropping the floor ends a slice
 * already past its own length at once. A guest timing its own slice is
 * told the new end both ways.
 */
static void case_slice_floor(bool opt_in)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, opt_in, &f);
	resume(c, &f, 0, 0);
	uint64_t tail = opt_in ? DEFER : 0; /* a guest-timed slice: its hard deadline */
	CHECK(sched_core_next_deadline(c) == SLICE + tail);
	sched_core_set_slice_floor(c, SLICE / 2, 10 * US);
	drain(c, &f);
	CHECK(f.traced[SCHED_TR_SLICE_FLOOR] == 0 && sched_core_next_deadline(c) == SLICE + tail);
	f.new_slice_us[0] = -1;
	sched_core_set_slice_floor(c, 3 * SLICE, 100 * US);
	drain(c, &f);
	CHECK(f.traced[SCHED_TR_SLICE_FLOOR] == 1);
	CHECK(sched_core_next_deadline(c) == 3 * SLICE + tail);
	CHECK(f.new_slice_us[0] == (int)((3 * SLICE - 100 * US) / US)); /* guest_slice is on for the VM */
	/* the slice's own end passes: nothing happens */
	sched_core_tick(c, SLICE + tail);
	drain(c, &f);
	CHECK(f.forces == 0 && f.pending_sets == 0 && sched_core_state(c, 0) == SCHED_ST_RUNNING);
	if (opt_in) { /* nor does the guest's claim at the old end end it */
		sched_core_safe_point(c, 0, SLICE + tail + US);
		drain(c, &f);
		CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING && c->v[0].st.guest_slice_yields == 0);
	}
	/* nobody waits any more: the floor goes and the slice, past its own
	 * length, ends now */
	uint64_t t = 2 * SLICE;
	f.new_slice_us[0] = -1;
	sched_core_set_slice_floor(c, 0, t);
	drain(c, &f);
	CHECK(f.traced[SCHED_TR_SLICE_FLOOR] == 2);
	CHECK(f.new_slice_us[0] == 0);
	CHECK(sched_core_next_deadline(c) <= t + tail);
	sched_core_tick(c, t + tail);
	drain(c, &f);
	if (opt_in && sched_core_state(c, 0) == SCHED_ST_RUNNING) {
		sched_core_safe_point(c, 0, t + tail + US);
		drain(c, &f);
	}
	CHECK(sched_core_state(c, 0) != SCHED_ST_RUNNING || f.forces + f.pending_sets > 0);
	sched_core_destroy(c);
}

/* Under the floor, a holder that spins past its own slice for a sibling
 * off its slot ends it there; one that spun before its own slice ended,
 * or names no sibling, or waits for one that runs (a lock changing hands),
 * keeps the floor. */
static void case_floor_ends_on_spin(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, false, &f);
	resume(c, &f, 0, 0);
	resume(c, &f, 1, 0);
	CHECK(sched_core_state(c, 1) == SCHED_ST_RUNNABLE);
	sched_core_set_slice_floor(c, 3 * SLICE, 10 * US);
	drain(c, &f);
	sched_core_spin(c, 0, 1, SCHED_SPIN_YIELD, SLICE / 2);
	drain(c, &f);
	CHECK(c->v[0].st.floor_spin_ends == 0 && sched_core_next_deadline(c) == 3 * SLICE);
	sched_core_spin(c, 0, -1, SCHED_SPIN_YIELD, SLICE + 5 * US);
	sched_core_spin(c, 0, 0, SCHED_SPIN_YIELD, SLICE + 6 * US);
	drain(c, &f);
	CHECK(c->v[0].st.floor_spin_ends == 0 && sched_core_next_deadline(c) == 3 * SLICE);
	sched_core_spin(c, 0, 1, SCHED_SPIN_YIELD, SLICE + 10 * US);
	drain(c, &f);
	CHECK(c->v[0].st.floor_spin_ends == 1 && sched_core_next_deadline(c) <= SLICE + 10 * US);
	sched_core_tick(c, SLICE + 10 * US);
	drain(c, &f);
	CHECK(f.forces + f.pending_sets > 0);
	sched_core_destroy(c);

	/* two slots: the sibling it names is running */
	c = mk("none", 2, 3, false, &f);
	resume(c, &f, 0, 0);
	resume(c, &f, 1, 0);
	resume(c, &f, 2, 0);
	CHECK(sched_core_state(c, 1) == SCHED_ST_RUNNING && sched_core_state(c, 2) == SCHED_ST_RUNNABLE);
	sched_core_set_slice_floor(c, 3 * SLICE, 10 * US);
	drain(c, &f);
	sched_core_spin(c, 0, 1, SCHED_SPIN_YIELD, SLICE + 10 * US);
	drain(c, &f);
	CHECK(c->v[0].st.floor_spin_ends == 0);
	sched_core_spin(c, 0, 2, SCHED_SPIN_YIELD, SLICE + 20 * US);
	drain(c, &f);
	CHECK(c->v[0].st.floor_spin_ends == 1);
	sched_core_destroy(c);
}

/* A member (seats that come and go), with the slice floor or without:
 * both seats are revoked while both holders are queued in a lock, so both
 * are forced out holding tickets. When a seat comes back the first ticket
 * holder gets it, and is asked to leave at its next lock boundary while
 * the other forced-out one waits; once that one runs, nobody is asked. */
static void case_lock_drains_forced_tickets(bool floor)
{
	struct fake f;
	memset(&f, 0, sizeof(f));
	for (int v = 0; v < 4; v++)
		f.h[v].waiting_for = -1;
	struct sched_params p = {
		.nvcpus = 3, .npcpus = 2, .policy = "none", .defer = true, .guest_slice = true,
		.slice_ns = SLICE, .defer_max_ns = DEFER, .slots_offline = true,
	};
	const char *why;
	struct sched_core *c = sched_core_create(&p, hint, &f, &why);
	sched_core_start(c, 0);
	sched_core_slot_online(c, 0, 0);
	sched_core_slot_online(c, 1, 0);
	drain(c, &f);
	for (int v = 0; v < 3; v++)
		resume(c, &f, v, 1);
	CHECK(sched_core_state(c, 2) == SCHED_ST_RUNNABLE);
	if (floor)
		sched_core_set_slice_floor(c, 3 * SLICE, 5 * US);
	f.h[0].in_critical = f.h[1].in_critical = true;
	sched_core_slot_offline(c, 0, 100 * US);
	sched_core_slot_offline(c, 1, 100 * US);
	drain(c, &f);
	sched_core_tick(c, 100 * US + DEFER);
	drain(c, &f);
	CHECK(f.forces == 2);
	sched_core_yield(c, 0, 100 * US + DEFER + 10 * US);
	sched_core_yield(c, 1, 100 * US + DEFER + 20 * US);
	drain(c, &f);
	/* 2 runs nowhere: both seats are off */
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNABLE && sched_core_state(c, 1) == SCHED_ST_RUNNABLE);
	int asked = f.pending_sets;
	sched_core_slot_online(c, 0, MS);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING);
	resume(c, &f, 0, MS + 5 * US);
	CHECK(c->v[0].st.lock_drains == 1 && f.pending_sets == asked + 1);
	/* it leaves at the release; the other ticket holder runs, unasked */
	f.h[0].in_critical = false;
	sched_core_safe_point(c, 0, MS + 50 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 1) == SCHED_ST_RUNNING && sched_core_state(c, 0) == SCHED_ST_RUNNABLE);
	CHECK(c->v[1].st.lock_drains == 0 && c->v[0].st.lock_drains == 1);
	/* a holder that yields inside its lock region (not forced) asks nobody */
	f.h[1].in_critical = true;
	sched_core_yield(c, 1, MS + 80 * US);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING || sched_core_state(c, 1) == SCHED_ST_RUNNING);
	CHECK(c->v[0].st.lock_drains + c->v[1].st.lock_drains == 1);
	sched_core_destroy(c);
}

#define LEASE (5 * MS)

/* One seat of a domain member, its slice 2 ms, its lease (the domain's
 * slice end) at LEASE: the lease ends nothing while nobody else waits;
 * with lease on, the slice ends LEASE_MARGIN_NS before it and the seat goes
 * back at that yield (a guest that times its slice), or at the tick there
 * through a deferral (one that does not), unasked by the domain. */
static struct sched_core *mk_seat(int n, bool opt_in, struct fake *f)
{
	mk_seats = true;
	struct sched_core *c = mk("none", 1, n, opt_in, f);
	mk_seats = false;
	sched_core_slot_lease(c, 0, LEASE, 0);
	sched_core_slot_online(c, 0, 0);
	drain(c, f);
	/* the guest's claims are learnt on its own events */
	sched_core_safe_point(c, 0, 1);
	drain(c, f);
	resume(c, f, 0, 1);
	return c;
}

static void case_lease_ends_the_seat(bool opt_in)
{
	struct fake f;
	struct sched_core *c = mk_seat(1, opt_in, &f);
	const uint64_t cut = LEASE - LEASE_MARGIN_NS;
	/* nobody else waits: the lease ends nothing */
	CHECK(sched_core_next_deadline(c) == UINT64_MAX);
	sched_core_tick(c, LEASE + MS);
	drain(c, &f);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNING && f.slot_offs == 0 && f.pending_sets == 0);
	/* a renewed lease, then another member waits: the guest is told the
	 * slice that is left and that it is contended */
	const uint64_t lease2 = LEASE + 2 * MS + 7 * US;
	f.new_slice_us[0] = -1;
	sched_core_slot_lease(c, 0, lease2, LEASE + MS);
	drain(c, &f);
	CHECK(f.new_slice_us[0] == -1); /* no lease in force yet: nothing to tell */
	uint64_t on = LEASE + MS + 10 * US;
	sched_core_set_lease(c, true, on);
	drain(c, &f);
	const uint64_t cut2 = lease2 - LEASE_MARGIN_NS;
	CHECK(f.contended[0]);
	if (opt_in)
		CHECK(f.new_slice_us[0] == (int)((cut2 - on) / US));
	CHECK(sched_core_next_deadline(c) == (opt_in ? cut2 + DEFER : UINT64_MAX));
	sched_core_tick(c, cut2 - 1);
	drain(c, &f);
	CHECK(f.slot_offs == 0 && f.pending_sets == 0 && sched_core_state(c, 0) == SCHED_ST_RUNNING);
	if (!opt_in) {
		/* a guest that does not time its slice: the lease ends nothing
		 * (its seat goes at the domain's revoke, as before leases) */
		sched_core_tick(c, cut2 + 2 * DEFER);
		drain(c, &f);
		CHECK(f.slot_offs == 0 && f.pending_sets == 0 && sched_core_state(c, 0) == SCHED_ST_RUNNING);
		sched_core_slot_offline(c, 0, cut2 + 3 * DEFER);
		drain(c, &f);
		CHECK(f.pending_sets == 1);
		sched_core_safe_point(c, 0, cut2 + 3 * DEFER + US);
		drain(c, &f);
		CHECK(f.slot_offs == 1 && c->v[0].st.lease_ends == 0 && c->slot[0].lease_end == 0);
		sched_core_destroy(c);
		return;
	}
	{
		/* the core leaves the guest to it until the hard deadline */
		sched_core_tick(c, cut2);
		drain(c, &f);
		CHECK(f.pending_sets == 0 && f.forces == 0);
		sched_core_safe_point(c, 0, cut2 + US);
		drain(c, &f);
		CHECK(c->v[0].st.guest_slice_yields == 1 && c->v[0].st.deferrals == 0);
	}
	/* the seat went back unasked; its holder queues for the next grant */
	CHECK(f.slot_offs == 1 && c->v[0].st.lease_ends == 1);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNABLE && c->slot[0].state == SCHED_SLOT_OFFLINE);
	CHECK(c->slot[0].lease_end == 0); /* the next grant brings its own */
	CHECK(f.forces == 0);
	(void)cut;
	sched_core_destroy(c);
}

/* A guest that times its slice but does not yield at the lease: the seat
 * goes at its hard deadline (the lease less the margin, plus --defer-us),
 * asked as at a revoke. */
static void case_lease_hard_deadline(void)
{
	struct fake f;
	struct sched_core *c = mk_seat(1, true, &f);
	/* the floor keeps its own slice past the lease, as with another
	 * member waiting (DOMAIN.md) */
	sched_core_set_slice_floor(c, 3 * SLICE, MS);
	sched_core_set_lease(c, true, MS);
	drain(c, &f);
	const uint64_t hard = LEASE - LEASE_MARGIN_NS + DEFER;
	CHECK(sched_core_next_deadline(c) == hard);
	sched_core_tick(c, hard - 1);
	drain(c, &f);
	CHECK(c->slot[0].state == SCHED_SLOT_ONLINE && f.pending_sets == 0 && f.forces == 0);
	sched_core_tick(c, hard);
	drain(c, &f);
	CHECK(c->slot[0].state == SCHED_SLOT_GOING_OFF && c->v[0].st.lease_ends == 1);
	CHECK(f.pending_sets + f.forces == 1);
	sched_core_yield(c, 0, hard + 10 * US);
	drain(c, &f);
	CHECK(f.slot_offs == 1 && sched_core_state(c, 0) == SCHED_ST_RUNNABLE);
	sched_core_destroy(c);
}

/* Lease on while the lease is long past (the domain renewed the slice
 * without telling, then someone queued): the seat goes at once, as the
 * agent's own revoke of a long-past slice would. A guest's claim before
 * the cut, for its own slice, is not a lease end. */
static void case_lease_past_and_own_slice(void)
{
	struct fake f;
	struct sched_core *c = mk_seat(2, true, &f);
	/* vCPU 1 queues: the own slice (2 ms) ends first, a rotation */
	sched_core_safe_point(c, 0, SLICE + 2);
	drain(c, &f);
	CHECK(sched_core_state(c, 1) == SCHED_ST_RUNNING && f.slot_offs == 0 && c->v[0].st.lease_ends == 0);
	resume(c, &f, 1, SLICE + 20 * US);
	/* a lease long past, lease on: the tick leaves the guest its hard
	 * deadline; its next lock boundary gives the seat back */
	sched_core_set_lease(c, true, LEASE + 3 * MS);
	drain(c, &f);
	CHECK(f.new_slice_us[1] == 0);
	sched_core_safe_point(c, 1, LEASE + 3 * MS + US);
	drain(c, &f);
	CHECK(f.slot_offs == 1 && c->v[1].st.lease_ends == 1);
	CHECK(sched_core_state(c, 0) == SCHED_ST_RUNNABLE && sched_core_state(c, 1) == SCHED_ST_RUNNABLE);
	/* back on without a lease (no domain): leases are off for it */
	sched_core_slot_online(c, 0, LEASE + 4 * MS);
	drain(c, &f);
	int v = c->slot[0].vcpu;
	CHECK(v >= 0 && c->slot[0].lease_end == 0);
	resume(c, &f, v, LEASE + 4 * MS + 10 * US);
	CHECK(f.new_slice_us[v] == (int)(SLICE / US));
	sched_core_destroy(c);
}

/* A one-process core has no seats: a lease is ignored. */
static void case_lease_needs_a_seat(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, true, &f);
	sched_core_slot_lease(c, 0, MS, 0);
	sched_core_set_lease(c, true, 0);
	drain(c, &f);
	CHECK(c->slot[0].lease_end == 0);
	resume(c, &f, 0, 10);
	CHECK(f.new_slice_us[0] == (int)(SLICE / US));
	sched_core_destroy(c);
}

int main(void)
{
	CASE(case_wake_cuts_the_slice(false));
	CASE(case_wake_cuts_the_slice(true));
	CASE(case_wake_leaves_gang_alone());
	CASE(case_guest_ends_its_slice());
	CASE(case_ack_publishes_mid_slice());
	CASE(case_hard_deadline());
	CASE(case_early_claim_declined());
	CASE(case_nobody_queued());
	CASE(case_handoff_inherits());
	CASE(case_not_opted_in());
	CASE(case_gang_keeps_its_slices());
	CASE(case_leaving_seat());
	CASE(case_slice_floor(false));
	CASE(case_slice_floor(true));
	CASE(case_floor_ends_on_spin());
	CASE(case_lock_drains_forced_tickets(true));
	CASE(case_lock_drains_forced_tickets(false));
	CASE(case_lease_ends_the_seat(true));
	CASE(case_lease_ends_the_seat(false));
	CASE(case_lease_past_and_own_slice());
	CASE(case_lease_hard_deadline());
	CASE(case_lease_needs_a_seat());
	printf("%ld passed, %ld failed\n", n_pass, n_fail);
	return n_fail != 0;
}
