/*
 * The fake domain for the decision core's unit tests (test_domain_core.c,
 * test_domain_gang.c): fake member VMs on a fake clock. The fakes keep
 * their own books of which vCPU runs on which slot, built only from the
 * actions, and measure slot time themselves: the core's own counters are
 * never what a share check reads.
 */
#ifndef VMM_TESTS_UNIT_DOMAIN_SIM_H
#define VMM_TESTS_UNIT_DOMAIN_SIM_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/domain_core.h"
#include "tests/unit/check.h"

#define US 1000ull
#define MS (1000 * US)
#define SEC (1000 * MS)
#define MAXM 8
#define MAXV 8
#define MAXS 8

/* ---- the fake members ---- */

struct fvcpu {
	bool running;      /* per the actions: holds a slot */
	int slot;
	uint64_t since;    /* when it was granted */
	uint64_t release_at; /* 0: no release scheduled */
	uint64_t held;     /* slot time, measured here */
};

struct fmember {
	bool live;
	bool busy;          /* every release is a yield: always runnable */
	bool deaf;          /* ignores REVOKE and PROBE (a stopped or rogue member) */
	uint64_t alive_at;  /* 0: no probe to answer; else when it answers */
	uint64_t lat[MAXV]; /* a vCPU's answer to REVOKE comes this much later */
	int nvcpus;
	struct fvcpu v[MAXV];
};

struct sim {
	struct dom_core *c;
	uint64_t now;
	uint64_t release_lat;   /* REVOKE -> release of a member that answers */
	struct fmember m[MAXM];
	int slot_owner[MAXS][2]; /* (m, v) or -1 */
	int nact_last;           /* actions of the last event */
	struct dom_action last[64];
	bool broken;             /* a check failed: stop the run */
};

/* What the random runs exercised, all runs together. */
static long n_grant, n_revoke, n_reclaim, n_kill, n_probe;

static inline void sim_init(struct sim *s, int nslots, uint64_t slice, uint64_t grace)
{
	memset(s, 0, sizeof(*s));
	struct dom_params p = { .nslots = nslots, .max_members = MAXM,
				.slice_ns = slice, .grace_ns = grace };
	const char *why = NULL;
	s->c = dom_core_create(&p, &why);
	CHECK(s->c != NULL);
	s->release_lat = 20 * US;
	for (int i = 0; i < MAXS; i++)
		s->slot_owner[i][0] = s->slot_owner[i][1] = -1;
}

static inline void fail_if(struct sim *s, bool bad, const char *what)
{
	if (bad && !s->broken) {
		s->broken = true;
		fprintf(stderr, "  at t=%llu ns: %s\n", (unsigned long long)s->now, what);
	}
	/* Counted when it fails; a run that never failed is one passed check
	 * (CHECK(!s->broken) at its end), not millions. */
	if (bad)
		CHECK(!bad);
}

static inline void stop_running(struct sim *s, int m, int v)
{
	struct fvcpu *x = &s->m[m].v[v];
	x->held += s->now - x->since;
	x->running = false;
	x->release_at = 0;
	s->slot_owner[x->slot][0] = s->slot_owner[x->slot][1] = -1;
}

/* Execute and clear the core's actions as an agent would, then check the
 * core's invariants: after every single event. */
static inline int nrunning(const struct sim *s, int m)
{
	int n = 0;
	for (int v = 0; s->m[m].live && v < s->m[m].nvcpus; v++)
		n += s->m[m].v[v].running;
	return n;
}

static inline void drain(struct sim *s)
{
	struct dom_core *c = s->c;
	int before[MAXM];
	for (int m = 0; m < MAXM; m++)
		before[m] = nrunning(s, m);
	s->nact_last = c->nact < 64 ? c->nact : 64;
	memcpy(s->last, c->act, sizeof(*s->last) * (size_t)s->nact_last);
	for (int i = 0; i < c->nact && !s->broken; i++) {
		struct dom_action a = c->act[i];
		bool ok = a.m >= 0 && a.m < MAXM && s->m[a.m].live && a.v >= 0 &&
			  a.v < s->m[a.m].nvcpus && a.slot >= 0 && a.slot < c->nslots;
		fail_if(s, !ok, "an action names a dead member or a bad vCPU/slot");
		if (!ok)
			break;
		struct fvcpu *x = &s->m[a.m].v[a.v];
		switch (a.kind) {
		case DOM_ACT_GRANT:
			n_grant++;
			/* At most P: a slot someone still holds is never granted. */
			fail_if(s, s->slot_owner[a.slot][0] >= 0, "grant of a held slot");
			fail_if(s, x->running, "grant to a vCPU that already holds one");
			x->running = true;
			x->slot = a.slot;
			x->since = s->now;
			x->release_at = 0;
			s->slot_owner[a.slot][0] = a.m;
			s->slot_owner[a.slot][1] = a.v;
			break;
		case DOM_ACT_REVOKE:
			n_revoke++;
			fail_if(s, !x->running || x->slot != a.slot, "revoke of a slot it does not hold");
			if (!s->m[a.m].deaf)
				x->release_at = s->now + s->release_lat + s->m[a.m].lat[a.v];
			break;
		case DOM_ACT_RECLAIM:
			n_reclaim++;
			fail_if(s, !x->running || x->slot != a.slot, "reclaim of a slot it does not hold");
			stop_running(s, a.m, a.v);
			break;
		case DOM_ACT_PROBE:
			n_probe++;
			fail_if(s, !x->running || x->slot != a.slot, "probe of a slot it does not hold");
			if (!s->m[a.m].deaf && !s->m[a.m].alive_at)
				s->m[a.m].alive_at = s->now + s->release_lat;
			break;
		case DOM_ACT_MOVE:
			/* The member moved it first (sim_handoff); the books follow. */
			fail_if(s, s->slot_owner[a.slot][0] != a.m || s->slot_owner[a.slot][1] != a.v ||
				!x->running, "move that does not match the member's own");
			break;
		}
	}
	dom_core_clear_actions(c);
	/* A gang starts whole: when it goes from holding nothing to holding,
	 * every vCPU it had queued got a slot in that event. */
	for (int m = 0; m < MAXM && !s->broken; m++)
		if (s->m[m].live && c->mem[m].gang && !before[m] && nrunning(s, m))
			fail_if(s, c->mem[m].nqueued != 0, "a gang started with part of its queued vCPUs");
	const char *e = dom_core_check(c);
	fail_if(s, e != NULL, e ? e : "");
}

static inline int sim_join_f(struct sim *s, uint32_t w, int nvcpus, bool busy, uint32_t flags)
{
	int m = dom_core_join(s->c, w, nvcpus, flags, s->now);
	CHECK(m >= 0 && m < MAXM);
	if (m < 0 || m >= MAXM)
		return -1;
	drain(s);
	s->m[m] = (struct fmember){ .live = true, .busy = busy, .nvcpus = nvcpus };
	/* All its vCPUs ask in one doorbell, as the agent sees a new member. */
	dom_core_defer(s->c);
	for (int v = 0; v < nvcpus; v++)
		CHECK_EQ(dom_core_runnable(s->c, m, v, s->now), 0);
	dom_core_commit(s->c, s->now);
	drain(s);
	return m;
}

static inline int sim_join(struct sim *s, uint32_t w, int nvcpus, bool busy)
{
	return sim_join_f(s, w, nvcpus, busy, 0);
}

/* A SIGKILL as the agent sees it: the process is gone, whatever it held. */
static inline void sim_kill(struct sim *s, int m)
{
	for (int v = 0; v < s->m[m].nvcpus; v++)
		if (s->m[m].v[v].running)
			stop_running(s, m, v);
	s->m[m].live = false;
	n_kill++;
	CHECK_EQ(dom_core_leave(s->c, m, s->now), 0);
	drain(s);
}

static inline void sim_release(struct sim *s, int m, int v, enum dom_release why)
{
	stop_running(s, m, v);
	CHECK_EQ(dom_core_release(s->c, m, v, why, s->now), 0);
	drain(s);
}

/* The member moves from's slot to to itself, then tells the core. */
static inline int sim_handoff(struct sim *s, int m, int from, int to, enum dom_release why, bool ok)
{
	if (ok) {
		struct fvcpu *f = &s->m[m].v[from], *t = &s->m[m].v[to];
		int slot = f->slot;
		stop_running(s, m, from);
		t->running = true;
		t->slot = slot;
		t->since = s->now;
		t->release_at = 0;
		s->slot_owner[slot][0] = m;
		s->slot_owner[slot][1] = to;
	}
	int r = dom_core_handoff(s->c, m, from, to, why, s->now);
	drain(s);
	return r;
}

/* Slot time of m so far, the running part included. */
static inline uint64_t held(const struct sim *s, int m)
{
	uint64_t t = 0;
	for (int v = 0; v < s->m[m].nvcpus; v++)
		t += s->m[m].v[v].held +
		     (s->m[m].v[v].running ? s->now - s->m[m].v[v].since : 0);
	return t;
}

/* Busy members only: run the clock to t_end, answering revokes. */
static inline void run_until(struct sim *s, uint64_t t_end)
{
	while (!s->broken) {
		uint64_t next = dom_core_next_deadline(s->c);
		for (int m = 0; m < MAXM; m++) {
			if (s->m[m].live && s->m[m].alive_at && s->m[m].alive_at < next)
				next = s->m[m].alive_at;
			for (int v = 0; s->m[m].live && v < s->m[m].nvcpus; v++)
				if (s->m[m].v[v].release_at && s->m[m].v[v].release_at < next)
					next = s->m[m].v[v].release_at;
		}
		if (next > t_end) {
			s->now = t_end;
			return;
		}
		if (next > s->now)
			s->now = next;
		/* The member's link thread reads the latest probe and answers it
		 * (a deaf one does not: the probe's deadline then reclaims). */
		for (int m = 0; m < MAXM; m++)
			if (s->m[m].live && s->m[m].alive_at && s->m[m].alive_at <= s->now) {
				s->m[m].alive_at = 0;
				if (!s->m[m].deaf)
					fail_if(s, dom_core_alive(s->c, m, s->c->mem[m].probe_seq, s->now) != 0,
						"an answer to the last probe was refused");
			}
		for (int m = 0; m < MAXM; m++)
			for (int v = 0; s->m[m].live && v < s->m[m].nvcpus; v++)
				if (s->m[m].v[v].release_at && s->m[m].v[v].release_at <= s->now)
					sim_release(s, m, v, s->m[m].busy ? DOM_REL_YIELD : DOM_REL_BLOCK);
		if (dom_core_next_deadline(s->c) <= s->now) {
			dom_core_tick(s->c, s->now);
			drain(s);
			/* No busy loop: a tick leaves nothing due. */
			fail_if(s, dom_core_next_deadline(s->c) <= s->now, "a tick left work due now");
		}
	}
}

/* ---- shares ---- */

static inline double wsum(const uint32_t *w, int n)
{
	double t = 0;
	for (int i = 0; i < n; i++)
		t += w[i];
	return t;
}

/* Is every member's measured share within tol of w_i / sum(w)? */
static inline bool shares_within(const uint64_t *got, const uint32_t *w, int n, double tol)
{
	double tot = 0, wsum = 0;
	for (int i = 0; i < n; i++) {
		tot += (double)got[i];
		wsum += w[i];
	}
	for (int i = 0; i < n; i++) {
		double want = w[i] / wsum, share = got[i] / tot;
		if (fabs(share / want - 1) > tol) {
			return false;
		}
	}
	return true;
}


static inline int count_acts(const struct sim *s, enum dom_action_kind k, int m)
{
	int n = 0;
	for (int i = 0; i < s->nact_last; i++)
		n += s->last[i].kind == k && s->last[i].m == m;
	return n;
}


#endif
