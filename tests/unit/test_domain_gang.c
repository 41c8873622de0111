/*
 * Gang members of the domain's decision core (sched/domain_core.h): their
 * queued vCPUs get slots together, with one slice end, and lose them
 * together; free slots are kept for a gang that waits; weights still hold.
 * The fakes (domain_sim.h) measure everything from the actions, and check
 * after every event that a gang starts whole.
 */
#include "tests/unit/domain_sim.h"

/* Steps the fake clock and samples how many of each member's vCPUs run. */
struct sampler {
	long samples, partial[MAXM], whole[MAXM];
	uint64_t wait_start[MAXM], max_wait[MAXM];
};

/* To t_end in steps of dt; a member whose vCPUs all want slots (busy)
 * counts as partial when some but not all of its vCPUs run. Waits are the
 * spans in which it runs nothing. */
static void sample_until(struct sim *s, struct sampler *p, uint64_t t_end, uint64_t dt)
{
	while (s->now < t_end && !s->broken) {
		run_until(s, s->now + dt);
		p->samples++;
		for (int m = 0; m < MAXM; m++) {
			if (!s->m[m].live)
				continue;
			int n = nrunning(s, m);
			p->partial[m] += n > 0 && n < s->m[m].nvcpus;
			p->whole[m] += n == s->m[m].nvcpus;
			if (n && p->wait_start[m]) {
				uint64_t w = s->now - p->wait_start[m];
				if (w > p->max_wait[m])
					p->max_wait[m] = w;
				p->wait_start[m] = 0;
			} else if (!n && !p->wait_start[m]) {
				p->wait_start[m] = s->now;
			}
		}
	}
}

static uint64_t slot_end(const struct sim *s, int m, int v)
{
	return s->c->slot[s->m[m].v[v].slot].slice_end;
}

/* Two gangs of 2 on 2 slots take turns, whole, a slice each. */
static void test_two_gangs_alternate_whole(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	int b = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	CHECK_EQ(nrunning(&s, a), 2);
	CHECK_EQ(nrunning(&s, b), 0);
	CHECK_EQ(slot_end(&s, a, 0), slot_end(&s, a, 1));
	long r0 = n_revoke;
	struct sampler p = { 0 };
	sample_until(&s, &p, 1 * SEC, 50 * US);
	printf("  %ld samples: gang A whole %ld partial %ld, gang B whole %ld partial %ld\n", p.samples,
	       p.whole[a], p.partial[a], p.whole[b], p.partial[b]);
	CHECK_EQ(p.partial[a], 0);
	CHECK_EQ(p.partial[b], 0);
	/* They alternate: one holds both slots at (nearly) every sample. */
	CHECK(p.whole[a] + p.whole[b] >= p.samples - p.samples / 100);
	/* ~100 slices of 10 ms, each ended by revoking both slots at once. */
	CHECK(n_revoke - r0 >= 2 * 95 && n_revoke - r0 <= 2 * 101);
	printf("  longest waits: A %.3f ms, B %.3f ms\n", p.max_wait[a] / 1e6, p.max_wait[b] / 1e6);
	/* A slice, or two when the vtime rule renews the holder once (the
	 * hand-overs' few us of skew decide which). */
	CHECK(p.max_wait[a] <= 21 * MS && p.max_wait[b] <= 21 * MS);
	uint64_t got[2] = { held(&s, a), held(&s, b) };
	CHECK(shares_within(got, (uint32_t[]){ 1, 1 }, 2, 0.05));
	/* Work conserving here: the two slots are busy all but the hand-overs. */
	CHECK(got[0] + got[1] >= 2 * SEC - 2 * SEC / 100);
	dom_core_destroy(s.c);
}

/* A gang whose vCPUs give a revoked slot back at different times: the next
 * gang starts only when both are back (never on one slot), and the
 * slow one's slot is the only idle time. */
static void test_next_gang_waits_for_all_slots(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	int b = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	s.m[a].lat[1] = s.m[b].lat[1] = 2 * MS;
	s.now = 10 * MS;
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 2);
	run_until(&s, 10 * MS + s.release_lat); /* v0 is out, v1 not yet */
	CHECK_EQ(nrunning(&s, a), 1);
	CHECK_EQ(nrunning(&s, b), 0); /* the free slot is kept for B */
	CHECK_EQ(s.c->mem[b].nqueued, 2);
	run_until(&s, 12 * MS + s.release_lat);
	CHECK_EQ(nrunning(&s, a), 0);
	CHECK_EQ(nrunning(&s, b), 2);
	struct sampler p = { 0 };
	sample_until(&s, &p, 1 * SEC, 50 * US);
	/* Partial only while a gang is on its way out (2 ms of each ~12 ms). */
	CHECK(p.partial[a] + p.partial[b] > 0);
	CHECK(p.partial[a] + p.partial[b] <= p.samples / 5);
	uint64_t got[2] = { held(&s, a), held(&s, b) };
	CHECK(shares_within(got, (uint32_t[]){ 1, 1 }, 2, 0.05));
	dom_core_destroy(s.c);
}

/* A gang and a plain member of weights w[0] (gang) and w[1] on 2 slots. */
static void check_gang_and_plain(const uint32_t *w, const uint32_t *wrong, int plain_vcpus)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int g = sim_join_f(&s, w[0], 2, true, DOM_MEMBER_GANG);
	int x = sim_join(&s, w[1], plain_vcpus, true);
	struct sampler p = { 0 };
	sample_until(&s, &p, 10 * SEC, 100 * US);
	uint64_t got[2] = { held(&s, g), held(&s, x) };
	double tot = (double)(got[0] + got[1]);
	printf("  gang weight %u: %.2f%%, plain (%d vCPUs) weight %u: %.2f%% of slot time; "
	       "slots busy %.1f%%; gang partial in %ld of %ld samples\n", w[0], 100 * got[0] / tot,
	       plain_vcpus, w[1], 100 * got[1] / tot, 100 * tot / (2.0 * 10 * SEC), p.partial[g],
	       p.samples);
	CHECK_EQ(p.partial[g], 0);
	CHECK(shares_within(got, w, 2, 0.05));
	CHECK(!shares_within(got, wrong, 2, 0.05));
	/* Bounded: the gang never waits much more than the plain member's
	 * turn (its weighted share of a round) plus the hand-over. */
	uint64_t turn = 10 * MS * w[1] / w[0] * 2 / (uint64_t)plain_vcpus;
	CHECK(p.max_wait[g] <= turn + 11 * MS);
	dom_core_destroy(s.c);
}

static void test_gang_and_plain_weights(void)
{
	check_gang_and_plain((uint32_t[]){ 100, 200 }, (uint32_t[]){ 100, 100 }, 2);
	check_gang_and_plain((uint32_t[]){ 200, 100 }, (uint32_t[]){ 100, 100 }, 2);
	check_gang_and_plain((uint32_t[]){ 100, 100 }, (uint32_t[]){ 100, 200 }, 1);
}

/* A gang that cannot start keeps the free slot; a slice end frees the
 * rest, and it starts whole: waited at most one slice plus the release. */
static void test_free_slot_kept_for_gang(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int x = sim_join(&s, 100, 1, true);
	s.now = 3 * MS;
	int g = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	CHECK_EQ(nrunning(&s, g), 0);
	CHECK_EQ(s.slot_owner[1][0], -1); /* kept, not given to anyone */
	CHECK(dom_core_check(s.c) == NULL);
	CHECK_EQ(dom_core_next_deadline(s.c), 10 * MS);
	run_until(&s, 10 * MS + s.release_lat);
	CHECK_EQ(nrunning(&s, g), 2);
	CHECK_EQ(nrunning(&s, x), 0);
	CHECK_EQ(count_acts(&s, DOM_ACT_GRANT, g), 2);
	CHECK_EQ(slot_end(&s, g, 0), 20 * MS + s.release_lat);
	CHECK_EQ(slot_end(&s, g, 1), slot_end(&s, g, 0));
	/* At its slice end the gang loses both slots at once for X. */
	run_until(&s, 20 * MS + s.release_lat);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, g), 2);
	dom_core_destroy(s.c);
}

/* A vCPU of a running gang that comes back joins it on a free slot with
 * the gang's slice end: the gang still ends together. */
static void test_late_vcpu_joins_running_gang(void)
{
	struct sim s;
	sim_init(&s, 3, 10 * MS, 5 * MS);
	int g = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	s.now = 2 * MS;
	sim_release(&s, g, 1, DOM_REL_BLOCK);
	CHECK_EQ(nrunning(&s, g), 1);
	s.now = 4 * MS;
	CHECK_EQ(dom_core_runnable(s.c, g, 1, s.now), 0);
	drain(&s);
	CHECK_EQ(nrunning(&s, g), 2);
	CHECK_EQ(slot_end(&s, g, 1), 10 * MS);
	CHECK_EQ(slot_end(&s, g, 0), 10 * MS);
	/* Uncontended: renewed together. */
	int x = sim_join(&s, 100, 2, true); /* one slot free: X takes it */
	CHECK_EQ(nrunning(&s, x), 1);
	run_until(&s, 10 * MS);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, g), 2);
	dom_core_destroy(s.c);
}

static void test_set_gang_live_and_refusals(void)
{
	struct sim s;
	sim_init(&s, 3, 10 * MS, 5 * MS);
	CHECK_EQ(dom_core_join(s.c, 100, 4, DOM_MEMBER_GANG, 0), -EINVAL); /* 4 > 3 slots */
	CHECK_EQ(dom_core_join(s.c, 100, 2, 2, 0), -EINVAL);              /* unknown flag */
	int a = sim_join(&s, 100, 2, true);
	s.now = 2 * MS;
	sim_release(&s, a, 1, DOM_REL_BLOCK);
	CHECK_EQ(dom_core_runnable(s.c, a, 1, s.now), 0);
	drain(&s);
	CHECK_EQ(slot_end(&s, a, 0), 10 * MS);
	CHECK_EQ(slot_end(&s, a, 1), 12 * MS);
	s.now = 5 * MS;
	CHECK_EQ(dom_core_set_gang(s.c, a, true, s.now), 0);
	drain(&s);
	CHECK(s.c->mem[a].gang);
	/* One gang now, ending at the earlier end: never a longer hold. */
	CHECK_EQ(slot_end(&s, a, 0), 10 * MS);
	CHECK_EQ(slot_end(&s, a, 1), 10 * MS);
	struct dom_member_stats st;
	CHECK_EQ(dom_core_member_stats(s.c, a, s.now, &st), 0);
	CHECK(st.gang);
	int big = sim_join(&s, 100, 4, true);
	CHECK_EQ(dom_core_set_gang(s.c, big, true, s.now), -EINVAL);
	CHECK_EQ(dom_core_set_gang(s.c, MAXM, true, s.now), -EINVAL);
	CHECK_EQ(dom_core_set_gang(s.c, -1, false, s.now), -EINVAL);
	CHECK_EQ(s.c->nact, 0);
	CHECK_EQ(dom_core_set_gang(s.c, a, false, s.now), 0);
	drain(&s);
	CHECK(!s.c->mem[a].gang);
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* A plain member being revoked on one of its two slots turns gang: the
 * other is revoked at once, so the gang goes out whole; then it waits for
 * both to come back and starts whole again. */
static void test_set_gang_spreads_a_revoke(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int a = sim_join(&s, 100, 2, true);
	s.m[a].lat[1] = 1 * MS;
	s.now = 2 * MS;
	sim_release(&s, a, 1, DOM_REL_YIELD); /* back at once: slice end 12 ms */
	CHECK_EQ(slot_end(&s, a, 1), 12 * MS);
	s.now = 3 * MS;
	int b = sim_join(&s, 100, 1, true);
	CHECK_EQ(nrunning(&s, b), 0);
	s.now = 10 * MS; /* slot 0 ends: revoked for B; slot 1 runs on */
	dom_core_tick(s.c, s.now);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	CHECK_EQ(s.last[0].v, 0);
	CHECK_EQ(dom_core_set_gang(s.c, a, true, s.now), 0);
	drain(&s);
	CHECK_EQ(count_acts(&s, DOM_ACT_REVOKE, a), 1);
	CHECK_EQ(s.last[0].v, 1);
	CHECK(s.c->slot[0].revoking && s.c->slot[1].revoking);
	CHECK_EQ(s.c->slot[1].slice_end, 10 * MS);
	run_until(&s, 10 * MS + s.release_lat); /* v0 out: B runs */
	CHECK_EQ(nrunning(&s, b), 1);
	CHECK_EQ(nrunning(&s, a), 1);
	run_until(&s, 11 * MS + s.release_lat); /* v1 out: slot kept for A */
	CHECK_EQ(nrunning(&s, a), 0);
	CHECK_EQ(s.c->mem[a].nqueued, 2);
	CHECK_EQ(s.slot_owner[1][0], -1);
	/* A slice end of B's, once B is no longer behind A, frees the other
	 * (B joined at the floor, 6 ms behind A, so it keeps its first
	 * renewal): A starts whole. */
	run_until(&s, 20 * MS + 2 * s.release_lat);
	CHECK_EQ(nrunning(&s, a), 0);
	run_until(&s, 30 * MS + 2 * s.release_lat);
	CHECK_EQ(nrunning(&s, a), 2);
	CHECK_EQ(nrunning(&s, b), 0);
	CHECK(!s.broken);
	dom_core_destroy(s.c);
}

/* A gang among three plain members: it still gets its weighted share and
 * never waits for long. */
static void test_gang_among_plain_members(void)
{
	struct sim s;
	sim_init(&s, 2, 10 * MS, 5 * MS);
	int id[4];
	id[0] = sim_join_f(&s, 100, 2, true, DOM_MEMBER_GANG);
	for (int i = 1; i < 4; i++)
		id[i] = sim_join(&s, 100, 1 + i % 2, true);
	struct sampler p = { 0 };
	sample_until(&s, &p, 10 * SEC, 100 * US);
	uint64_t got[4];
	for (int i = 0; i < 4; i++)
		got[i] = held(&s, id[i]);
	printf("  gang: %.3f s, plain: %.3f %.3f %.3f s; gang's longest wait %.1f ms\n", got[0] / 1e9,
	       got[1] / 1e9, got[2] / 1e9, got[3] / 1e9, p.max_wait[id[0]] / 1e6);
	CHECK_EQ(p.partial[id[0]], 0);
	CHECK(shares_within(got, (uint32_t[]){ 1, 1, 1, 1 }, 4, 0.05));
	CHECK(p.max_wait[id[0]] <= 4 * 11 * MS);
	dom_core_destroy(s.c);
}

int main(void)
{
	RUN(test_two_gangs_alternate_whole);
	RUN(test_next_gang_waits_for_all_slots);
	RUN(test_gang_and_plain_weights);
	RUN(test_free_slot_kept_for_gang);
	RUN(test_late_vcpu_joins_running_gang);
	RUN(test_set_gang_live_and_refusals);
	RUN(test_set_gang_spreads_a_revoke);
	RUN(test_gang_among_plain_members);
	return check_summary();
}
