/*
 * The core's indices (core_index.c, vheap.c) against brute force: random
 * runs of the bench's synthetic stream (tests/bench/sched_stream.h) for
 * every policy, and after every step each indexed answer is compared with
 * the scan it replaced: the next deadline, the deferral's lock-region pick
 * and its starvation guard, directed's candidate (and its rotation), gang's
 * pick, the next VM that wants slots; sched_core_check checks the books.
 * Then the heap alone against a brute-force minimum, and random's pick for
 * uniformity.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core.h"
#include "sched/core_int.h"
#include "sched/policy.h"
#include "tests/bench/sched_stream.h"
#include "tests/unit/check.h"

/* The scan sched_core_next_deadline did before the indices. */
static uint64_t ref_next_deadline(const struct sched_core *c)
{
	if (!c->started || c->stopping || c->deadlock)
		return UINT64_MAX;
	uint64_t d = UINT64_MAX;
	int nout = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_WAITING && x->wait_deadline < d)
			d = x->wait_deadline;
		if (x->state == SCHED_ST_RUNNING && sc_outgoing(x) && !sc_leaving(c, v))
			nout++;
		if (x->state == SCHED_ST_RUNNING && x->preempt_pending && !x->preempt_req &&
		    x->defer_deadline < d)
			d = x->defer_deadline;
	}
	if (c->nrunnable > nout) {
		for (int s = 0; s < c->nslots; s++) {
			int v = c->slot[s].vcpu;
			if (v < 0 || sc_outgoing(&c->v[v]))
				continue;
			uint64_t t = c->slot[s].slice_start + c->slice_ns;
			if (t < d)
				d = t;
		}
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
	return d < c->last_now ? c->last_now : d;
}

/* The deferral's pick as it was: the guard, then the first queued vCPU
 * whose guest says it is in a lock region, asked now. */
static int ref_pick_in_critical(struct sched_core *c, uint64_t now)
{
	uint64_t limit = (uint64_t)c->nvcpus * (c->slice_ns + c->defer_max_ns);
	SCHED_FOR_EACH_QUEUED(c, v)
		if (now - c->v[v].state_since > limit)
			return -1;
	SCHED_FOR_EACH_QUEUED(c, v)
		if (sched_core_get_hint(c, v).in_critical)
			return v;
	return -1;
}

static int new_pick_in_critical(struct sched_core *c, uint64_t now)
{
	uint64_t limit = (uint64_t)c->nvcpus * (c->slice_ns + c->defer_max_ns);
	int oldest = sched_vheap_min(&c->age_heap);
	if (oldest >= 0 && now - c->v[oldest].state_since > limit)
		return -1;
	return c->crit_head;
}

/* directed's candidate as it was: every vCPU, from last_boost on. */
static int ref_directed(struct sched_core *c, int v, int *last_boost)
{
	int vm = c->v[v].vm, n = c->nvcpus, spinner = -1;
	int start = last_boost[vm];
	for (int k = 1; k <= n; k++) {
		int i = (start + k) % n;
		if (i == v || c->v[i].vm != vm || c->v[i].state != SCHED_ST_RUNNABLE)
			continue;
		if (sched_core_get_hint(c, i).spinning_since == 0) {
			last_boost[vm] = i;
			return i;
		}
		if (spinner < 0)
			spinner = i;
	}
	if (spinner >= 0)
		last_boost[vm] = spinner;
	return spinner;
}

/* gang's pick as it was: the queue in order, the first of a set VM (one
 * with a vCPU on a slot while the old set is still leaving). */
static int ref_gang_pick(struct sched_core *c)
{
	bool barrier = false;
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v >= 0 && !sched_gang_in_set(c, c->v[v].vm))
			barrier = true;
	}
	SCHED_FOR_EACH_QUEUED(c, it) {
		if (!sched_gang_in_set(c, c->v[it].vm))
			continue;
		if (!barrier)
			return it;
		for (int s = 0; s < c->nslots; s++) {
			int v = c->slot[s].vcpu;
			if (v >= 0 && c->v[v].vm == c->v[it].vm)
				return it;
		}
	}
	return -1;
}

static long n_compared, n_crit_picks, n_gang_picks, n_directed;

static void compare_directed(struct sched_core *c)
{
	int nvms = c->nvms;
	int *a = malloc(sizeof(int) * (size_t)nvms), *b = malloc(sizeof(int) * (size_t)nvms);
	if (!a || !b)
		abort();
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v < 0)
			continue;
		for (int i = 0; i < nvms; i++)
			a[i] = b[i] = (int)((unsigned)(v * 7 + i * 13) % (unsigned)c->nvcpus);
		a[c->v[v].vm] = b[c->v[v].vm] = c->nvcpus - 1 - v % 3;
		int want = ref_directed(c, v, a);
		CHECK(want == sched_directed_candidate(c, v, b));
		n_directed += want >= 0;
		CHECK(!memcmp(a, b, sizeof(int) * (size_t)nvms));
	}
	free(a);
	free(b);
}


/*
 * The deadlines split by who acts on them (own_tick.c): the slots' and the
 * rest together are exactly the whole, and a slot's is one of its holder's
 * (or its lease's) only: a slot with nobody on it and no lease has none.
 */
static uint64_t split_deadline(const struct sched_core *c)
{
	uint64_t slot_d[64];
	if (c->nslots > 64)
		return sched_core_next_deadline(c);
	uint64_t d = sched_core_deadlines(c, slot_d);
	for (int s = 0; s < c->nslots; s++) {
		if (c->slot[s].vcpu < 0 && !c->lease_on)
			CHECK(slot_d[s] == UINT64_MAX);
		d = slot_d[s] < d ? slot_d[s] : d;
	}
	return d;
}

static void run(const char *pol, int n, int m, int vmsize, uint64_t seed, long steps)
{
	struct stream s;
	CHECK(st_init(&s, pol, n, m, vmsize, seed) == 0);
	if (!s.c)
		return;
	struct sched_core *c = s.c;
	for (long i = 0; i < steps; i++) {
		st_step(&s);
		const char *why = sched_core_check(c);
		CHECK(why == NULL);
		if (why) {
			printf("%s n=%d m=%d step %ld: %s\n", pol, n, m, i, why);
			break;
		}
		CHECK(sched_core_next_deadline(c) == ref_next_deadline(c));
		CHECK(split_deadline(c) == sched_core_next_deadline(c));
		int crit = ref_pick_in_critical(c, s.now);
		CHECK(new_pick_in_critical(c, s.now) == crit);
		n_crit_picks += crit >= 0;
		if (i % 7 == 0)
			compare_directed(c);
		if (c->pol == &sched_policy_gang && c->nrunnable > 0) {
			int g = ref_gang_pick(c);
			CHECK(c->pol->pick_next(c, 0, s.now) == g);
			n_gang_picks += g >= 0;
		}
		for (int vm = 0; vm < c->nvms; vm++) {
			int want = -1;
			for (int u = vm; u < c->nvms && want < 0; u++)
				if (c->vm_running[u] + c->vm_runnable[u] > 0)
					want = u;
			CHECK(sched_core_next_want_vm(c, vm) == want);
		}
		n_compared++;
	}
	st_free(&s);
}

static void test_random_runs(void)
{
	/* vCPUs, slots, VM size (0: min(8, slots); larger than the slots: a
	 * gang VM that runs alone, round robin) */
	static const int sizes[][3] = { { 8, 2, 0 },  { 24, 3, 0 }, { 40, 4, 3 },
					{ 70, 16, 5 }, { 130, 5, 7 }, { 60, 6, 2 } };
	for (const char *const *p = sched_policy_names(); *p; p++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			run(*p, sizes[k][0], sizes[k][1], sizes[k][2], 1000 + k, 3000);
	/* the comparisons were about something */
	CHECK(n_compared > 0 && n_crit_picks > 100 && n_gang_picks > 100 && n_directed > 100);
	printf("%ld steps compared: %ld lock-region picks, %ld gang picks, %ld directed\n",
	       n_compared, n_crit_picks, n_gang_picks, n_directed);
}

static void test_heap(void)
{
	enum { N = 300 };
	struct sched_vheap h;
	CHECK(sched_vheap_init(&h, N) == 0);
	uint64_t key[N];
	bool in[N] = { false };
	uint64_t r = 12345;
	for (int step = 0; step < 20000; step++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		int v = (int)(r % N);
		if (in[v]) {
			sched_vheap_del(&h, v);
			in[v] = false;
		} else {
			key[v] = (r >> 20) % 50; /* ties on purpose */
			sched_vheap_add(&h, v, key[v]);
			in[v] = true;
		}
		int best = -1;
		for (int u = 0; u < N; u++)
			if (in[u] && (best < 0 || key[u] < key[best]))
				best = u;
		CHECK(sched_vheap_min(&h) == best);
		CHECK(sched_vheap_has(&h, v) == in[v]);
	}
	sched_vheap_fini(&h);
}

/* random's pick comes from the runnable array, not a queue walk: every
 * runnable vCPU must still be equally likely, and only those. */
static void test_random_uniform(void)
{
	struct stream s;
	CHECK(st_init(&s, "random", 40, 4, 0, 7) == 0);
	if (!s.c)
		return;
	struct sched_core *c = s.c;
	int hits[40] = { 0 }, draws = 36000;
	int spinner = c->slot[0].vcpu;
	CHECK(spinner >= 0 && c->nrunnable == 36);
	for (int i = 0; i < draws; i++) {
		int to = c->pol->on_spin(c, spinner, -1, s.now);
		CHECK(to >= 0 && c->v[to].state == SCHED_ST_RUNNABLE);
		if (to >= 0)
			hits[to]++;
	}
	int lo = draws, hi = 0;
	for (int v = 0; v < 40; v++) {
		if (c->v[v].state != SCHED_ST_RUNNABLE)
			continue;
		lo = hits[v] < lo ? hits[v] : lo;
		hi = hits[v] > hi ? hits[v] : hi;
	}
	/* 1000 expected each; 5 sigma is about 160 */
	CHECK(lo > 800 && hi < 1200);
	st_free(&s);
}

int main(void)
{
	RUN(test_heap);
	RUN(test_random_uniform);
	RUN(test_random_runs);
	return check_summary();
}
