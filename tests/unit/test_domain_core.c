/*
 * The domain's pure decision core (sched/domain_core.h), driven by fake
 * member VMs on a fake clock (domain_sim.h). Gang members have their own
 * cases in test_domain_gang.c; the random runs here mix them in.
 */
#include "tests/unit/domain_sim.h"

/* n busy members of the given weights, 4 vCPUs each, on nslots for 10 s. */
static void check_weights(const uint32_t *w, const uint32_t *wrong, int n, int nslots)
{
	struct sim s;
	sim_init(&s, nslots, 10 * MS, 5 * MS);
	int id[MAXM];
	uint64_t got[MAXM];
	for (int i = 0; i < n; i++)
		id[i] = sim_join(&s, w[i], 4, true);
	run_until(&s, 10 * SEC);
	uint64_t tot = 0;
	for (int i = 0; i < n; i++) {
		got[i] = held(&s, id[i]);
		tot += got[i];
	}
	for (int i = 0; i < n; i++)
		printf("  %d slot(s), weight %u: %.2f%% of slot time (want %.2f%%)\n", nslots, w[i],
		       100.0 * (double)got[i] / (double)tot, 100.0 * w[i] / wsum(w, n));
	for (int i = 0; i < n; i++) {
		struct dom_member_stats st;
		CHECK_EQ(dom_core_member_stats(s.c, id[i], s.now, &st), 0);
		CHECK_EQ(st.held_ns, got[i]); /* what `status` will show */
		CHECK_EQ(st.weight, w[i]);
	}
	/* Work conserving: the slots were busy the whole time. */
	CHECK(tot == nslots * 10 * SEC);
	CHECK(shares_within(got, w, n, 0.05));
	/* The check can fail: the same run against wrong weights must. */
	CHECK(!shares_within(got, wrong, n, 0.05));
	dom_core_destroy(s.c);
}

static void test_weights_1_2(void)
{
	check_weights((uint32_t[]){ 100, 200 }, (uint32_t[]){ 100, 100 }, 2, 2);
	check_weights((uint32_t[]){ 1, 2 }, (uint32_t[]){ 1, 3 }, 2, 3);
}

static void test_weights_1_1_2(void)
{
	check_weights((uint32_t[]){ 100, 100, 200 }, (uint32_t[]){ 100, 100, 100 }, 3, 2);
	check_weights((uint32_t[]){ 50, 50, 100 }, (uint32_t[]){ 50, 100, 100 }, 3, 1);
}

/* ---- faults ---- */

static void test_killed_holder(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 2, true);
	int b = sim_join(&s, 100, 3, true);
	s.now = 3 * MS; /* mid-slice: A holds both slots, B waits */
	CHECK(s.m[a].v[0].running && s.m[a].v[1].running);
	CHECK_EQ(s.c->mem[b].nqueued, 3);
	sim_kill(&s, a);
	/* The kill itself regrants both slots: no waiting for a slice end. */
	CHECK_EQ(count_acts(&s, DOM_ACT_GRANT, b), 2);
	CHECK_EQ(s.nact_last, 2);
	CHECK(s.m[b].v[0].running && s.m[b].v[1].running);
	/* The dead id is refused from then on. */
	CHECK_EQ(dom_core_runnable(s.c, a, 0, s.now), -EINVAL);
	CHECK_EQ(dom_core_release(s.c, a, 0, DOM_REL_YIELD, s.now), -EINVAL);
	CHECK_EQ(dom_core_leave(s.c, a, s.now), -EINVAL);
	CHECK(dom_core_check(s.c) == NULL);
	run_until(&s, 1 * SEC);
	CHECK(held(&s, b) == 2 * (1 * SEC - 3 * MS));
	dom_core_destroy(s.c);
}

static void test_deaf_member_reclaimed(void)
{
	struct sim s;
	sim_init(&s, 1, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 1, true);
	s.m[a].deaf = true; /* SIGSTOP'ed, or a rogue that ignores revokes */
	s.now = 1 * MS;
	int b = sim_join(&s, 100, 1, true);
	CHECK_EQ(dom_core_next_deadline(s.c), 10 * MS);
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	CHECK_EQ(dom_core_next_deadline(s.c), 15 * MS);
	s.now = 15 * MS - 1;
	dom_core_tick(s.c, s.now); /* early: nothing */
	drain(&s);
	CHECK_EQ(s.nact_last, 0);
	s.now = 15 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	/* Reclaimed at the hard deadline and regranted in the same event. */
	CHECK_EQ(count_acts(&s, DOM_ACT_RECLAIM, a), 1);
	CHECK_EQ(count_acts(&s, DOM_ACT_GRANT, b), 1);
	CHECK(s.m[b].v[0].running && !s.m[a].v[0].running);
	CHECK_EQ(s.c->mem[a].v[0].state, DOM_V_OVERRUN);
	CHECK_EQ(s.c->mem[a].reclaims, 1);
	/* Charged up to the reclaim, not past it. */
	CHECK_EQ(s.c->mem[a].held_ns, 15 * MS);
	/* It comes back: its late release is accepted once, then queued. */
	s.now = 40 * MS;
	CHECK_EQ(dom_core_release(s.c, a, 0, DOM_REL_YIELD, s.now), 0);
	drain(&s);
	CHECK_EQ(s.c->mem[a].v[0].state, DOM_V_QUEUED);
	CHECK_EQ(dom_core_release(s.c, a, 0, DOM_REL_YIELD, s.now), -EINVAL);
	s.m[a].deaf = false;
	run_until(&s, 2 * SEC);
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* A member with a vCPU past its hard deadline (SIGSTOPped) is granted
 * nothing more until that vCPU is back: reclaimed once, not granted and
 * reclaimed again at every slice. */
static void test_overrun_member_granted_nothing(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 3, true); /* 2 hold, 1 queued */
	s.m[a].deaf = true;
	s.now = 1 * MS;
	int b = sim_join(&s, 100, 2, true);
	run_until(&s, 15 * MS);
	CHECK_EQ(s.c->mem[a].reclaims, 2);
	CHECK_EQ(s.c->mem[a].noverrun, 2);
	CHECK_EQ(s.c->mem[a].nqueued, 1);   /* still asking ... */
	CHECK_EQ(s.c->mem[a].heap_idx, -1); /* ... but out of the running */
	CHECK_EQ(s.c->nqueued_ok, 0);
	CHECK(s.m[b].v[0].running && s.m[b].v[1].running);
	uint64_t grants_a = s.c->mem[a].held_ns;
	run_until(&s, 200 * MS);
	/* b keeps both slots (no revoke for an ineligible waiter), a gets none */
	CHECK(s.m[b].v[0].running && s.m[b].v[1].running);
	CHECK_EQ(s.c->mem[a].held_ns, grants_a);
	CHECK_EQ(dom_core_next_deadline(s.c), UINT64_MAX);
	/* a comes back: both late releases accepted, and it is served again */
	s.m[a].deaf = false;
	CHECK_EQ(dom_core_release(s.c, a, 0, DOM_REL_YIELD, s.now), 0);
	drain(&s);
	CHECK_EQ(s.c->mem[a].heap_idx, -1); /* one still out */
	CHECK_EQ(dom_core_release(s.c, a, 1, DOM_REL_YIELD, s.now), 0);
	drain(&s);
	CHECK(s.c->mem[a].heap_idx >= 0);
	CHECK_EQ(s.c->nqueued_ok, 3);
	run_until(&s, 300 * MS);
	CHECK(s.c->mem[a].held_ns > grants_a);
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* The liveness gap CI found (issue 12): a stopped member that is BEHIND in
 * vtime used to keep its slot, renewed at every slice end, because only a
 * member ahead was revoked. Now the renewal is a probe: unanswered by the
 * hard deadline, the slot is reclaimed as for an ignored revoke. */
/* a (2 vCPUs) on both slots, then b (1 vCPU, 3x the weight: its vtime
 * lags a's, so at its slice ends it is behind the waiting a). */
static void behind_pair(struct sim *s, int *a, int *b)
{
	sim_init(s, 2, 10 * MS, 5 * MS);
	*a = sim_join(s, 100, 2, true);
	s->now = 1 * MS;
	*b = sim_join(s, 300, 1, true);
}

static void test_stopped_member_behind_is_reclaimed(void)
{
	struct sim s;
	int a, b;
	behind_pair(&s, &a, &b);
	run_until(&s, 200 * MS);
	/* Find a moment where b holds a slot, a waits, and b is behind a. */
	uint64_t t = s.now;
	while (t < 2 * SEC && !(s.m[b].v[0].running && s.c->mem[a].nqueued &&
				s.c->mem[b].vtime < s.c->mem[a].vtime))
		run_until(&s, t += 100 * US);
	CHECK(s.m[b].v[0].running && s.c->mem[a].nqueued && s.c->mem[b].vtime < s.c->mem[a].vtime);
	uint64_t stop_at = s.now, probes0 = s.c->mem[b].probes;
	int slot = s.m[b].v[0].slot;
	s.m[b].deaf = true; /* SIGSTOP */
	while (s.m[b].v[0].running && s.now < stop_at + 1 * SEC)
		run_until(&s, s.now + 100 * US);
	/* Lost within one slice plus the grace (plus the 100 us steps). */
	CHECK(!s.m[b].v[0].running);
	CHECK(s.now - stop_at <= 15 * MS + 100 * US);
	CHECK_EQ(s.c->mem[b].v[0].state, DOM_V_OVERRUN);
	CHECK_EQ(s.c->mem[b].reclaims, 1);
	CHECK(s.c->mem[b].probes > probes0);
	/* It was probed, not revoked: it was behind. And the slot went on. */
	CHECK(s.slot_owner[slot][0] == a);
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* The agent stopped (SIGSTOP) past a revoke's hard deadline: the
 * holder's answer waits in a word it has not read. Shifted by the stall,
 * the deadline gives the grace back from where the agent resumed, the
 * answer read after the tick counts, and nobody is reclaimed; unshifted,
 * the same tick reclaims the holder that obeyed. */
static void stalled_agent_revoke(bool shift)
{
	struct sim s;
	sim_init(&s, 1, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 1, true);
	s.m[a].deaf = true; /* answered, but nobody read it */
	s.now = 1 * MS;
	int b = sim_join(&s, 100, 1, true);
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	const uint64_t gap = 1 * SEC; /* stopped from 11 ms */
	if (shift)
		dom_core_shift_deadlines(s.c, gap);
	CHECK(dom_core_check(s.c) == NULL);
	CHECK_EQ(dom_core_next_deadline(s.c), shift ? 15 * MS + gap : 15 * MS);
	s.now = 11 * MS + gap;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_RECLAIM, a), shift ? 0 : 1);
	if (shift) { /* the word read now: the release counts */
		s.m[a].deaf = false;
		sim_release(&s, a, 0, DOM_REL_YIELD);
		CHECK(s.m[b].v[0].running);
		run_until(&s, 2 * SEC);
		CHECK_EQ(s.c->mem[a].reclaims + s.c->mem[b].reclaims, 0);
	}
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* The same for a probe: its deadline moves by the stall, the answer read
 * after the tick clears it; a deadline still missed after the shift is
 * reclaimed at its new time. */
static void test_stalled_agent_shifts_deadlines(void)
{
	stalled_agent_revoke(true);
	stalled_agent_revoke(false); /* the check can fail */
	struct sim s;
	int a, b;
	behind_pair(&s, &a, &b);
	run_until(&s, 200 * MS);
	while (s.now < 2 * SEC && !(s.m[b].v[0].running && s.c->mem[a].nqueued &&
				    s.c->mem[b].vtime < s.c->mem[a].vtime))
		run_until(&s, s.now + 100 * US);
	s.m[b].deaf = true; /* its answer, like the revoke's above, not read yet */
	int slot = -1;
	while (slot < 0 && s.now < 2 * SEC) {
		run_until(&s, s.now + 100 * US);
		for (int k = 0; k < 2; k++)
			if (s.c->slot[k].m == b && s.c->slot[k].probing)
				slot = k;
	}
	CHECK(slot >= 0);
	if (slot < 0)
		return;
	uint64_t hard = s.c->slot[slot].hard_at, gap = 1 * SEC;
	dom_core_shift_deadlines(s.c, gap);
	CHECK_EQ(s.c->slot[slot].hard_at, hard + gap);
	CHECK(dom_core_check(s.c) == NULL);
	s.now = hard + gap - 1;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(s.c->mem[b].reclaims, 0);
	CHECK_EQ(dom_core_alive_seat(s.c, b, 0, s.c->mem[b].probe_seq, s.now), 0);
	s.m[b].deaf = false;
	run_until(&s, s.now + 1 * SEC);
	CHECK_EQ(s.c->mem[a].reclaims + s.c->mem[b].reclaims, 0);
	s.m[b].deaf = true; /* now really stopped: reclaimed as ever */
	uint64_t t0 = s.now;
	while (s.m[b].v[0].running && s.now < t0 + 1 * SEC)
		run_until(&s, s.now + 100 * US);
	CHECK(!s.m[b].v[0].running);
	CHECK_EQ(s.c->mem[b].reclaims, 1);
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* The same member answering its probes (the test above is its deaf twin)
 * keeps its slot and is never reclaimed. */
static void test_live_member_behind_answers_probes(void)
{
	struct sim s;
	int a, b;
	behind_pair(&s, &a, &b);
	long p0 = n_probe;
	run_until(&s, 10 * SEC);
	printf("  %ld probes in 10 s, %llu reclaims; shares a %.3f b %.3f\n", n_probe - p0,
	       (unsigned long long)s.c->mem[b].reclaims, (double)held(&s, a) / (20.0 * SEC),
	       (double)held(&s, b) / (20.0 * SEC));
	CHECK(n_probe - p0 > 100);
	CHECK_EQ(s.c->mem[a].reclaims + s.c->mem[b].reclaims, 0);
	/* b (weight 300) can use one slot at most: it gets it all the time
	 * (half the slot time, under its 3/4 share); a has the rest. */
	CHECK(held(&s, b) >= 10 * SEC - 20 * MS);
	CHECK(held(&s, a) + held(&s, b) == 2 * 10 * SEC); /* work conserving */
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* A member's own queued vCPUs never revoke it: alone, it is never ticked,
 * revoked or probed (its seats are alike: a switch would gain nothing). */
static void test_own_queue_never_revokes(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 3, true);
	CHECK_EQ(s.c->mem[a].nqueued, 1);
	CHECK_EQ(dom_core_next_deadline(s.c), UINT64_MAX);
	long r0 = n_revoke, p0 = n_probe;
	run_until(&s, 1 * SEC);
	CHECK_EQ(n_revoke - r0, 0);
	CHECK_EQ(n_probe - p0, 0);
	CHECK_EQ(held(&s, a), 2 * SEC);
	dom_core_destroy(s.c);
}

/* An answer is checked against what was sent: one never sent is refused
 * and changes nothing; an old one clears only the probes it covers. */
static void test_alive_checks_the_answer(void)
{
	struct sim s;
	sim_init(&s, 1, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 1, true);
	int b = sim_join(&s, 300, 1, true); /* queued, and will stay ahead */
	s.m[a].deaf = true;                 /* answers by hand below */
	CHECK_EQ(dom_core_alive(s.c, a, 0, s.now), 0); /* nothing sent: 0 is not ahead */
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	/* b joined at the floor (a's vtime then); a ran 10 ms more: a is
	 * ahead and is revoked, not probed. Let it give the slot back. */
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	s.m[a].deaf = false;
	sim_release(&s, a, 0, DOM_REL_YIELD);
	CHECK(s.m[b].v[0].running);
	/* b (weight 300) holds while a waits; its vtime grows 3x slower,
	 * so it is behind a at its slice end: probed, not revoked. */
	s.m[b].deaf = true;
	s.now = 20 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_PROBE, b), 1);
	uint32_t seq = s.c->mem[b].probe_seq;
	CHECK(s.c->slot[0].probing);
	CHECK_EQ(dom_core_alive(s.c, b, seq + 1, s.now), -EINVAL); /* never sent */
	CHECK_EQ(dom_core_alive(s.c, b, seq + 1000, s.now), -EINVAL);
	CHECK_EQ(dom_core_alive(s.c, -1, seq, s.now), -EINVAL);
	CHECK_EQ(dom_core_alive(s.c, MAXM - 1, seq, s.now), -EINVAL); /* not a member */
	CHECK(s.c->slot[0].probing);
	CHECK_EQ(dom_core_alive(s.c, b, seq - 1, s.now), 0); /* older: covers nothing */
	CHECK(s.c->slot[0].probing);
	CHECK_EQ(dom_core_next_deadline(s.c), 25 * MS);
	CHECK_EQ(dom_core_alive(s.c, b, seq, s.now + 1 * MS), 0);
	CHECK(!s.c->slot[0].probing);
	CHECK(dom_core_check(s.c) == NULL);
	/* Answered: the deadline is the next slice end, and no reclaim. */
	CHECK_EQ(dom_core_next_deadline(s.c), 30 * MS);
	s.now = 25 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(s.nact_last, 0);
	CHECK_EQ(s.c->mem[b].reclaims, 0);
	dom_core_destroy(s.c);
}

/* Seats answer one by one (the agent's way): the seat that answered keeps
 * its slot, the one that did not is reclaimed at the probe's deadline. */
static void test_alive_seat_answers_its_own_slot(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 2, true);
	int b = sim_join(&s, 300, 2, true);
	s.m[a].deaf = true;
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 2); /* a is ahead */
	s.m[a].deaf = false;
	sim_release(&s, a, 0, DOM_REL_YIELD);
	sim_release(&s, a, 1, DOM_REL_YIELD);
	CHECK(s.m[b].v[0].running && s.m[b].v[1].running);
	/* b (weight 300) is behind a at its slice end: both seats probed */
	s.m[b].deaf = true;
	s.now = 20 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_PROBE, b), 2);
	uint32_t seq = s.c->mem[b].probe_seq;
	int s0 = s.c->mem[b].v[0].slot, s1 = s.c->mem[b].v[1].slot;
	CHECK(s.c->slot[s0].probing && s.c->slot[s1].probing);
	CHECK_EQ(dom_core_alive_seat(s.c, b, 2, seq, s.now), -EINVAL); /* no such seat */
	CHECK_EQ(dom_core_alive_seat(s.c, b, -1, seq, s.now), -EINVAL);
	CHECK_EQ(dom_core_alive_seat(s.c, b, 0, seq + 1, s.now), -EINVAL); /* never sent */
	CHECK_EQ(dom_core_alive_seat(s.c, a, 0, 0, s.now), 0);             /* holds nothing */
	uint32_t seq0 = s.c->slot[s0].probe_seq;
	CHECK_EQ(dom_core_alive_seat(s.c, b, 0, seq0 - 1, s.now), 0); /* older: covers nothing */
	CHECK(s.c->slot[s0].probing);
	/* the member's newest probe, answered on seat 0: seat 1's stays */
	CHECK_EQ(dom_core_alive_seat(s.c, b, 0, seq, s.now + 1 * MS), 0);
	CHECK(!s.c->slot[s0].probing && s.c->slot[s1].probing);
	CHECK(dom_core_check(s.c) == NULL);
	s.now = 25 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_RECLAIM, b), 1);
	CHECK_EQ(s.c->mem[b].reclaims, 1);
	CHECK(s.m[b].v[0].running && !s.m[b].v[1].running);
	CHECK(dom_core_check(s.c) == NULL);
	dom_core_destroy(s.c);
}

static void test_join_mid_run(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 4, true);
	run_until(&s, 5 * SEC);
	CHECK_EQ(held(&s, a), 10 * SEC);
	int b = sim_join(&s, 100, 4, true);
	/* No credit for the 5 s before it joined: it starts at A's vtime, not
	 * at 0 (which would let it own both slots for the next 5 s). */
	CHECK(s.c->mem[b].vtime + 20 * MS >= s.c->mem[a].vtime);
	uint64_t a0 = held(&s, a), b0 = held(&s, b);
	run_until(&s, 5 * SEC + 200 * MS);
	uint64_t da = held(&s, a) - a0, db = held(&s, b) - b0;
	/* Neither starves in the first 200 ms: each gets at least a third. */
	CHECK(da * 3 >= da + db && db * 3 >= da + db);
	run_until(&s, 10 * SEC);
	uint64_t got[2] = { held(&s, a) - a0, held(&s, b) - b0 };
	CHECK(shares_within(got, (uint32_t[]){ 1, 1 }, 2, 0.05));
	/* ... and a model with banked credit (B owed 5 s) would not pass. */
	CHECK(!shares_within(got, (uint32_t[]){ 1, 3 }, 2, 0.05));
	dom_core_destroy(s.c);
}

/* A member that asked for nothing banks no credit: back after 2 s idle,
 * it gets its share from then on, not the 2 s it missed. */
static void idle_no_credit(int nvcpus_a)
{
	struct sim s;
	sim_init(&s, 1, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, nvcpus_a, true);
	int b = sim_join(&s, 100, 2, false); /* blocks at its first revoke */
	run_until(&s, 100 * MS);
	for (int v = 0; v < 2; v++)
		CHECK_EQ(s.c->mem[b].v[v].state, DOM_V_BLOCKED);
	run_until(&s, 2 * SEC);
	s.m[b].busy = true;
	uint64_t a0 = held(&s, a), b0 = held(&s, b);
	for (int v = 0; v < 2; v++) {
		CHECK_EQ(dom_core_runnable(s.c, b, v, s.now), 0);
		drain(&s);
	}
	run_until(&s, 2 * SEC + 100 * MS);
	uint64_t got[2] = { held(&s, a) - a0, held(&s, b) - b0 };
	/* Over 100 ms a 1:1 split; banked credit would give B all of it. */
	CHECK(shares_within(got, (uint32_t[]){ 1, 1 }, 2, 0.2));
	dom_core_destroy(s.c);
}

static void test_idle_no_credit(void)
{
	idle_no_credit(2);
	/* a alone holds its one slot with nothing queued: no event for 2 s,
	 * and b's wake must still see the floor of now (charge raises it). */
	idle_no_credit(1);
}

/* A holder behind its weighted share keeps its slot at its slice end while
 * the only one queued is further ahead: no needless revoke. */
static void test_no_needless_revoke(void)
{
	struct sim s;
	sim_init(&s, 1, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 1, true);
	int b = sim_join(&s, 1000, 1, true);
	run_until(&s, 10 * MS + s.release_lat); /* A's slice, then B */
	CHECK(s.m[b].v[0].running);
	long r0 = n_revoke;
	uint64_t t = s.now;
	while (s.m[b].v[0].running && t < 200 * MS)
		run_until(&s, t += 100 * US);
	/* B (weight 10x) runs 10 slices in a row before A is due again:
	 * 10 ms of A's vtime is 100 ms of B's slot time; one revoke ends it. */
	CHECK(t >= 100 * MS && t <= 125 * MS);
	CHECK_EQ(n_revoke - r0, 1);
	CHECK(s.m[a].v[0].running);
	dom_core_destroy(s.c);
}

/* Both slots end their slices at once with one vCPU queued: one revoke,
 * and it hits the holder furthest ahead of its weighted share. */
static void test_revoke_choice(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 200, 1, true); /* slot 0, vtime grows at half rate */
	int b = sim_join(&s, 100, 1, true); /* slot 1 */
	int c = sim_join(&s, 100, 1, true); /* queued */
	CHECK(s.m[a].v[0].running && s.m[a].v[0].slot == 0 && s.m[b].v[0].running);
	long r0 = n_revoke;
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(n_revoke - r0, 1);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, b), 1);
	/* With no release latency slices stay aligned: still one revoke per
	 * round for the one vCPU that waits, never both slots. */
	s.release_lat = 0;
	r0 = n_revoke;
	run_until(&s, 1 * SEC);
	CHECK(n_revoke - r0 <= 101);
	CHECK(held(&s, c) > 0);
	dom_core_destroy(s.c);
}

/* Hand-offs inside a member (its own yield policy): the slot moves at
 * once, keeps its slice end and any pending revoke and hard deadline. */
static void test_handoff(void)
{
	struct sim s;
	sim_init(&s, 1, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 3, true); /* v0 holds, v1 v2 queued */
	int b = sim_join(&s, 100, 1, true);
	s.now = 3 * MS;
	CHECK_EQ(sim_handoff(&s, a, 0, 2, DOM_REL_BLOCK, true), 0);
	CHECK_EQ(count_acts(&s, DOM_ACT_MOVE, a), 1);
	CHECK_EQ(s.nact_last, 1);
	CHECK_EQ(s.c->mem[a].v[2].state, DOM_V_HOLDING);
	CHECK_EQ(s.c->mem[a].v[0].state, DOM_V_BLOCKED);
	CHECK_EQ(s.c->mem[a].qhead, 1); /* v1 keeps its place */
	s.now = 6 * MS; /* a PV kick: the woken sleeper takes the slot */
	CHECK_EQ(sim_handoff(&s, a, 2, 0, DOM_REL_YIELD, true), 0);
	CHECK_EQ(s.c->mem[a].qtail, 2);
	/* Refused, nothing changed: not the holder, itself, a holder, done. */
	CHECK_EQ(dom_core_handoff(s.c, a, 1, 2, DOM_REL_YIELD, s.now), -EINVAL);
	CHECK_EQ(dom_core_handoff(s.c, a, 0, 0, DOM_REL_YIELD, s.now), -EINVAL);
	CHECK_EQ(dom_core_handoff(s.c, a, 0, 3, DOM_REL_YIELD, s.now), -EINVAL);
	CHECK_EQ(dom_core_handoff(s.c, b, 0, 0, DOM_REL_YIELD, s.now), -EINVAL);
	CHECK_EQ(s.c->nact, 0);
	/* No hand-off chain extends the slice: B's turn comes at 10 ms. */
	CHECK_EQ(dom_core_next_deadline(s.c), 10 * MS);
	s.m[a].deaf = true;
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	/* A hand-off of a slot being revoked passes the revoke on... */
	s.now = 12 * MS;
	CHECK_EQ(sim_handoff(&s, a, 0, 1, DOM_REL_YIELD, true), 0);
	CHECK_EQ(count_acts(&s, DOM_ACT_MOVE, a), 1);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	CHECK_EQ(s.last[1].v, 1);
	/* ... and the hard deadline stays where it was. */
	CHECK_EQ(dom_core_next_deadline(s.c), 15 * MS);
	s.now = 15 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_RECLAIM, a), 1);
	CHECK_EQ(count_acts(&s, DOM_ACT_GRANT, b), 1);
	CHECK_EQ(s.c->mem[a].v[1].state, DOM_V_OVERRUN);
	dom_core_destroy(s.c);
}

static void test_bad_params_and_events(void)
{
	const char *why = NULL;
	struct dom_params p = { .nslots = 0, .max_members = 4 };
	CHECK(dom_core_create(&p, &why) == NULL && why);
	p = (struct dom_params){ .nslots = 2, .max_members = 0 };
	CHECK(dom_core_create(&p, &why) == NULL);
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	CHECK_EQ(dom_core_join(s.c, 0, 2, 0, 0), -EINVAL);
	CHECK_EQ(dom_core_join(s.c, 10001, 2, 0, 0), -EINVAL);
	CHECK_EQ(dom_core_join(s.c, 100, 0, 0, 0), -EINVAL);
	CHECK_EQ(dom_core_join(s.c, 100, DOM_VCPUS_MAX + 1, 0, 0), -EINVAL);
	int a = sim_join(&s, 100, 2, true);
	CHECK_EQ(dom_core_runnable(s.c, a, 2, 0), -EINVAL);
	CHECK_EQ(dom_core_runnable(s.c, a, -1, 0), -EINVAL);
	CHECK_EQ(dom_core_runnable(s.c, a, 0, 0), -EINVAL); /* holds already */
	CHECK_EQ(dom_core_runnable(s.c, MAXM, 0, 0), -EINVAL);
	CHECK_EQ(dom_core_release(s.c, a, 0, (enum dom_release)7, 0), -EINVAL);
	CHECK_EQ(dom_core_set_weight(s.c, a, 0, 0), -EINVAL);
	CHECK_EQ(dom_core_set_weight(s.c, a, 300, 0), 0);
	CHECK_EQ(s.c->nact, 0);
	for (int i = 1; i < MAXM; i++)
		CHECK(dom_core_join(s.c, 100, 1, 0, 0) >= 0);
	CHECK_EQ(dom_core_join(s.c, 100, 1, 0, 0), -ENOSPC);
	CHECK(dom_core_check(s.c) == NULL);
	dom_core_destroy(s.c);
}

/* ---- random runs ---- */

static uint64_t rng;
static long n_handoff, n_setgang, n_gang_wait, n_batch;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void random_run(uint64_t seed, int nslots, int nevents)
{
	struct sim s;
	sim_init(&s, nslots, 1 * MS + rnd() % (5 * MS), 100 * US + rnd() % (2 * MS));
	rng = seed;
	for (int e = 0; e < nevents && !s.broken; e++) {
		int m = (int)(rnd() % MAXM), v = (int)(rnd() % MAXV);
		bool live = s.m[m].live;
		enum dom_vstate st = live && v < s.m[m].nvcpus ? s.c->mem[m].v[v].state : DOM_V_DONE;
		int r;
		s.now += rnd() % (3 * MS);
		switch (rnd() % 11) {
		case 0: /* join */
			if (!live && rnd() % 3 == 0) /* a gang fits the slots */
				sim_join_f(&s, 1 + (uint32_t)(rnd() % 400), 1 + (int)(rnd() % nslots), rnd() & 1,
					   DOM_MEMBER_GANG);
			else if (!live)
				sim_join(&s, 1 + (uint32_t)(rnd() % 400), 1 + (int)(rnd() % MAXV), rnd() & 1);
			break;
		case 1: /* leave or death: the same to the core */
			if (live && rnd() % 3 == 0)
				sim_kill(&s, m);
			break;
		case 2: /* a member turns deaf or answers again */
			if (live)
				s.m[m].deaf = rnd() % 4 == 0;
			break;
		case 3: /* several runnables as one doorbell: decided at commit */
			dom_core_defer(s.c);
			for (int k = (int)(rnd() % 4); k >= 0; k--) {
				v = (int)(rnd() % MAXV);
				st = live && v < s.m[m].nvcpus ? s.c->mem[m].v[v].state : DOM_V_DONE;
				r = dom_core_runnable(s.c, m, v, s.now);
				fail_if(&s, (r == 0) != (live && v < s.m[m].nvcpus && st == DOM_V_BLOCKED),
					"runnable accepted or refused wrongly");
				fail_if(&s, s.c->nact != 0, "a deferred event granted");
			}
			dom_core_commit(s.c, s.now);
			n_batch++;
			drain(&s);
			break;
		case 4: /* runnable: valid only from BLOCKED */
			r = dom_core_runnable(s.c, m, v, s.now);
			fail_if(&s, (r == 0) != (live && v < s.m[m].nvcpus && st == DOM_V_BLOCKED),
				"runnable accepted or refused wrongly");
			drain(&s);
			break;
		case 5:
		case 6: { /* release: valid only when holding or overrun */
			bool ok = live && v < s.m[m].nvcpus && (st == DOM_V_HOLDING || st == DOM_V_OVERRUN);
			if (ok && st == DOM_V_HOLDING)
				stop_running(&s, m, v);
			r = dom_core_release(s.c, m, v, (enum dom_release)(rnd() % 3), s.now);
			fail_if(&s, (r == 0) != ok, "release accepted or refused wrongly");
			drain(&s);
			break;
		}
		case 8: { /* a hand-off inside the member, mostly from a holder */
			for (int i = 0; live && i < s.m[m].nvcpus && rnd() % 8; i++)
				if (s.m[m].v[(v + i) % s.m[m].nvcpus].running) {
					v = (v + i) % s.m[m].nvcpus;
					st = s.c->mem[m].v[v].state;
					break;
				}
			int to = (int)(rnd() % MAXV);
			for (int i = 0; live && i < s.m[m].nvcpus && rnd() % 8; i++) {
				int u = (to + i) % s.m[m].nvcpus;
				enum dom_vstate us = s.c->mem[m].v[u].state;
				if (u != v && (us == DOM_V_QUEUED || us == DOM_V_BLOCKED)) {
					to = u;
					break;
				}
			}
			enum dom_vstate ts = live && to < s.m[m].nvcpus ? s.c->mem[m].v[to].state : DOM_V_DONE;
			bool ok = live && v < s.m[m].nvcpus && st == DOM_V_HOLDING && v != to &&
				  (ts == DOM_V_QUEUED || ts == DOM_V_BLOCKED);
			r = sim_handoff(&s, m, v, to, (enum dom_release)(rnd() % 3), ok);
			fail_if(&s, (r == 0) != ok, "handoff accepted or refused wrongly");
			if (ok)
				n_handoff++;
			break;
		}
		case 7:
			if (live && rnd() % 2) {
				bool g = rnd() % 2;
				r = dom_core_set_gang(s.c, m, g, s.now);
				fail_if(&s, (r == 0) != (!g || s.m[m].nvcpus <= nslots),
					"set_gang accepted or refused wrongly");
				n_setgang += r == 0 && g;
			} else if (live) {
				dom_core_set_weight(s.c, m, 1 + (uint32_t)(rnd() % 400), s.now);
			}
			drain(&s);
			break;
		default: /* time passes: answer revokes, tick at deadlines */
			run_until(&s, s.now + rnd() % (20 * MS));
			break;
		}
		/* The fake's own books: never more than P vCPUs hold a slot. */
		int nrun = 0;
		for (int i = 0; i < MAXM; i++)
			for (int j = 0; s.m[i].live && j < s.m[i].nvcpus; j++)
				nrun += s.m[i].v[j].running;
		fail_if(&s, nrun > nslots, "more vCPUs hold slots than there are slots");
		/* ... and none idles while vCPUs are queued, unless the least-vtime
		 * one is a gang that waits: for more free slots than it has
		 * queued vCPUs, or for its own revoked slots to come back. (The
		 * queued vCPUs of a member with one reclaimed and not back yet
		 * wait outside: nqueued_ok.) */
		if (s.c->nqueued_ok > 0 && nrun < nslots) {
			const struct dom_member *top = &s.c->mem[s.c->heap[0]];
			bool out = false;
			for (int k = 0; k < nslots; k++)
				out |= s.c->slot[k].m == s.c->heap[0] && s.c->slot[k].revoking;
			bool waits = top->gang && (out || (!top->nheld && top->nqueued > nslots - nrun));
			fail_if(&s, !waits, "a slot is idle while vCPUs are queued");
			n_gang_wait += waits;
		}
		/* The core's accounting is what the fakes measured, to the ns. */
		for (int i = 0; i < MAXM && !s.broken; i++) {
			struct dom_member_stats st;
			int running = 0;
			for (int j = 0; s.m[i].live && j < s.m[i].nvcpus; j++)
				running += s.m[i].v[j].running;
			r = dom_core_member_stats(s.c, i, s.now, &st);
			fail_if(&s, (r == 0) != s.m[i].live, "stats of a gone member, or none of a live one");
			fail_if(&s, r == 0 && (st.held_ns != held(&s, i) || st.nheld != running),
				"the core's held time or slots differ from the member's");
		}
	}
	CHECK(!s.broken); /* every invariant held after every event */
	dom_core_destroy(s.c);
}

static void test_random_runs(void)
{
	int runs = 0;
	n_grant = n_revoke = n_reclaim = n_kill = n_probe = n_handoff = n_setgang = n_gang_wait = n_batch = 0;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		rng = seed * 0x9e3779b97f4a7c15ull;
		random_run(seed * 0x9e3779b97f4a7c15ull, 1 + (int)(seed % 4), 5000);
		runs++;
	}
	printf("  %d random runs of 5000 events, invariants after each: %ld grants, "
	       "%ld revokes, %ld probes, %ld reclaims, %ld leaves, %ld hand-offs, %ld turned gang, "
	       "%ld events with a gang waiting on kept slots, %ld batches\n", runs, n_grant, n_revoke,
	       n_probe, n_reclaim, n_kill, n_handoff, n_setgang, n_gang_wait, n_batch);
	/* Each kind of event really happened, many times. */
	CHECK(n_grant > 10000 && n_revoke > 1000 && n_probe > 1000 && n_reclaim > 100 && n_kill > 100 &&
	      n_handoff > 1000 && n_setgang > 100 && n_gang_wait > 100 && n_batch > 1000);
}

int main(void)
{
	RUN(test_bad_params_and_events);
	RUN(test_killed_holder);
	RUN(test_handoff);
	RUN(test_deaf_member_reclaimed);
	RUN(test_overrun_member_granted_nothing);
	RUN(test_stopped_member_behind_is_reclaimed);
	RUN(test_live_member_behind_answers_probes);
	RUN(test_stalled_agent_shifts_deadlines);
	RUN(test_own_queue_never_revokes);
	RUN(test_alive_checks_the_answer);
	RUN(test_alive_seat_answers_its_own_slot);
	RUN(test_weights_1_2);
	RUN(test_weights_1_1_2);
	RUN(test_join_mid_run);
	RUN(test_idle_no_credit);
	RUN(test_no_needless_revoke);
	RUN(test_revoke_choice);
	RUN(test_random_runs);
	return check_summary();
}
