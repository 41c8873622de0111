/*
 * Parking: halts inside the host kernel that only a probe can see (core.h).
 * Fake vCPU threads on a fake clock: each is in guest mode or waiting in
 * userspace, and its guest is halted (blocked) or not. Fixed scenarios
 * first, then random runs for every policy, checking after every event
 * that no halted vCPU keeps a slot for longer than a check interval and no
 * awake vCPU runs without a slot for longer than that.
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
#define CHECK_NS (1 * MS)
#define EXIT_MAX (30 * US) /* a forced vCPU leaves guest mode within this */

struct fake {
	bool in_guest[MAXV];   /* the thread is inside KVM_RUN */
	bool blocked[MAXV];    /* its guest is halted */
	bool yield_req[MAXV];  /* as sched.c keeps it */
	bool force[MAXV];
	uint64_t exit_at[MAXV];
	uint64_t awake_since[MAXV]; /* blocked went false, or the thread entered */
	uint64_t blocked_since[MAXV];
	uint64_t granted_at[MAXV];
	int grants[MAXV], parks[MAXV], forces[MAXV];
	uint64_t rng;
	int probes;            /* the probe's reads (a vCPU thread may not make them) */
};

static uint64_t rnd(struct fake *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return f->rng;
}

static bool probe(void *p, int v)
{
	struct fake *f = p;
	f->probes++;
	return f->in_guest[v] && f->blocked[v];
}

static void enter_guest(struct fake *f, int v, uint64_t now)
{
	if (!f->in_guest[v]) {
		f->in_guest[v] = true;
		f->awake_since[v] = now;
		f->blocked_since[v] = now;
	}
}

/* Execute the actions as sched.c does; a granted thread enters the guest. */
static void drain(struct sched_core *c, struct fake *f, uint64_t now)
{
	for (int i = 0; i < c->nact; i++) {
		struct sched_action a = c->act[i];
		switch (a.kind) {
		case SCHED_ACT_GRANT:
			f->yield_req[a.v] = false;
			f->force[a.v] = false;
			f->grants[a.v]++;
			f->granted_at[a.v] = now;
			enter_guest(f, a.v, now);
			break;
		case SCHED_ACT_FORCE_EXIT:
			f->yield_req[a.v] = true;
			if (!f->force[a.v])
				f->exit_at[a.v] = now + rnd(f) % EXIT_MAX;
			f->force[a.v] = true;
			f->forces[a.v]++;
			break;
		case SCHED_ACT_PARK:
			CHECK(c->v[a.v].parked && f->blocked[a.v]);
			f->yield_req[a.v] = true;
			f->parks[a.v]++;
			break;
		case SCHED_ACT_SLOT_OFF:
		case SCHED_ACT_SLOT_DEMAND:
			CHECK(!"slot actions without slots_offline"); /* test_sched_slots.c */
			break;
		case SCHED_ACT_SET_PREEMPTED:
		case SCHED_ACT_SET_PREEMPT_PENDING:
		case SCHED_ACT_SET_KICK_PENDING:
		case SCHED_ACT_SET_CONTENDED:
		case SCHED_ACT_NEW_SLICE:
		case SCHED_ACT_WAKE_ALL:
			break;
		}
	}
	sched_core_clear_actions(c);
}

/* The thread comes out of KVM_RUN (an exit, or forced) and does what the
 * vCPU loop does: yield if asked, then either re-enter or wait. */
static void thread_exits(struct sched_core *c, struct fake *f, int v, uint64_t now)
{
	f->in_guest[v] = false;
	f->force[v] = false;
	if (f->yield_req[v]) {
		sched_core_yield(c, v, now);
		drain(c, f, now);
	}
	if (c->v[v].state == SCHED_ST_RUNNING)
		enter_guest(f, v, now);
}

static struct sched_core *mk(const char *pol, int m, int n, struct fake *f, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	f->rng = seed * 2654435761u + 88172645463325252ull;
	struct sched_params p = { .nvcpus = n, .npcpus = m, .policy = pol, .halt_check_ns = CHECK_NS,
				  .nvms = 1, .seed = 7 };
	const char *why = NULL;
	struct sched_core *c = sched_core_create(&p, NULL, NULL, &why);
	if (!c) {
		printf("create: %s\n", why);
		exit(1);
	}
	sched_core_set_blocked_fn(c, probe, f);
	sched_core_start(c, 0);
	drain(c, f, 0);
	return c;
}

static void check_invariants(struct sched_core *c, struct fake *f, uint64_t now)
{
	/* the core's own books, its indices included */
	const char *why = sched_core_check(c);
	CHECK(why == NULL);
	if (why)
		printf("sched_core_check: %s\n", why);
	int running = 0, executing = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		running += x->state == SCHED_ST_RUNNING;
		if (x->parked)
			CHECK(x->state == SCHED_ST_IDLE && x->slot == -1);
		if (x->unslotted)
			CHECK(x->state == SCHED_ST_RUNNABLE);
		if (x->state == SCHED_ST_RUNNING)
			CHECK(c->slot[x->slot].vcpu == v);
		bool exec = f->in_guest[v] && !f->blocked[v];
		if (exec && x->state == SCHED_ST_RUNNING)
			executing++;
		/* Awake in guest mode without a slot: at most until the next
		 * check, plus the time a forced exit takes. */
		if (exec && x->state != SCHED_ST_RUNNING)
			CHECK(now - f->awake_since[v] <= CHECK_NS + EXIT_MAX);
		/* Halted on a slot: at most until the next check. */
		if (f->in_guest[v] && f->blocked[v] && x->state == SCHED_ST_RUNNING && !x->preempt_req) {
			uint64_t since = f->blocked_since[v] > f->granted_at[v] ? f->blocked_since[v] :
										 f->granted_at[v];
			CHECK(now - since <= CHECK_NS);
		}
	}
	CHECK(running <= c->nslots && executing <= c->nslots);
	if (c->pol != &sched_policy_gang)
		for (int s = 0; s < c->nslots; s++)
			CHECK(c->slot[s].vcpu >= 0 || c->nrunnable == 0);
}

/* ---- fixed scenarios ---- */

static void tick_to(struct sched_core *c, struct fake *f, uint64_t *now, uint64_t until)
{
	for (int i = 0; i < 100000; i++) {
		uint64_t d = sched_core_next_deadline(c);
		int exiter = -1;
		for (int v = 0; v < c->nvcpus; v++)
			if (f->force[v] && f->in_guest[v] && f->exit_at[v] < d) {
				d = f->exit_at[v] > *now ? f->exit_at[v] : *now;
				exiter = v;
			}
		if (d > until)
			break;
		*now = d;
		if (exiter >= 0) {
			thread_exits(c, f, exiter, d);
		} else {
			sched_core_tick(c, d);
			drain(c, f, d);
		}
		check_invariants(c, f, d);
	}
	*now = until;
}

/* Linux's APs wait for their start-up IPI blocked in the kernel: the boot
 * CPU must get the slot nearly all the time. */
static void case_aps_park(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 4, &f, 1);
	for (int v = 1; v < 4; v++)
		f.blocked[v] = true;
	uint64_t now = 0;
	tick_to(c, &f, &now, 100 * MS);
	struct sched_vcpu_stats st0, st;
	sched_core_stats(c, 0, now, &st0);
	CHECK(st0.ns_running >= 90 * MS);
	for (int v = 1; v < 4; v++) {
		sched_core_stats(c, v, now, &st);
		CHECK(c->v[v].parked && st.kernel_halts == 1 && st.ns_running <= CHECK_NS);
		CHECK(f.in_guest[v]); /* never forced out of the halt */
	}
	/* Nobody left to run: no more slice ends for the boot CPU. */
	CHECK(st0.preemptions <= 1);
	sched_core_destroy(c);
}

/* A parked vCPU that wakes takes a free slot without leaving guest mode. */
static void case_wake_free_slot(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 2, 3, &f, 2);
	f.blocked[1] = f.blocked[2] = true;
	uint64_t now = 0;
	tick_to(c, &f, &now, 10 * MS);
	CHECK(c->v[1].parked && c->v[2].parked && c->slot[1].vcpu == -1);
	f.blocked[1] = false;
	f.awake_since[1] = now;
	int forces = f.forces[1];
	tick_to(c, &f, &now, now + CHECK_NS);
	CHECK(c->v[1].state == SCHED_ST_RUNNING && f.forces[1] == forces && f.in_guest[1]);
	CHECK(c->v[1].st.unslotted_wakes == 0);
	sched_core_destroy(c);
}

/* No free slot: the woken vCPU is forced out and comes back first in line. */
static void case_wake_no_slot(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 3, &f, 3);
	f.blocked[1] = f.blocked[2] = true;
	uint64_t now = 0;
	tick_to(c, &f, &now, 20 * MS);
	CHECK(c->slot[0].vcpu == 0 && c->v[1].parked && c->v[2].parked);
	sched_core_yield(c, 0, now); /* a fresh slice for vCPU 0 */
	drain(c, &f, now);
	CHECK(c->slot[0].vcpu == 0);
	f.blocked[1] = false;
	f.awake_since[1] = now;
	tick_to(c, &f, &now, now + CHECK_NS + EXIT_MAX);
	CHECK(c->v[1].st.unslotted_wakes == 1 && !f.in_guest[1]);
	CHECK(c->v[1].state == SCHED_ST_RUNNABLE && c->qhead == 1);
	tick_to(c, &f, &now, now + c->slice_ns + EXIT_MAX);
	CHECK(c->slot[0].vcpu == 1);
	sched_core_destroy(c);
}

/* A parked thread that comes out by itself (an exit) is unparked by its yield. */
static void case_exit_while_parked(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, &f, 4);
	f.blocked[0] = true;
	uint64_t now = 0;
	tick_to(c, &f, &now, 3 * MS);
	CHECK(c->v[0].parked && c->slot[0].vcpu == 1 && f.yield_req[0]);
	f.blocked[0] = false;
	f.awake_since[0] = now;
	thread_exits(&*c, &f, 0, now);
	CHECK(!c->v[0].parked && c->v[0].state == SCHED_ST_RUNNABLE && c->qhead == 0);
	CHECK(c->v[0].st.unslotted_wakes == 0);
	/* vCPU 0 gets the slot at the slice end; vCPU 1 halts when it runs next */
	f.blocked[1] = true;
	tick_to(c, &f, &now, now + 2 * c->slice_ns + 2 * CHECK_NS);
	CHECK(c->slot[0].vcpu == 0 && c->v[1].parked);
	/* a kick to a parked vCPU: it runs already, so it is unparked */
	sched_core_kick(c, 0, 1, now);
	drain(c, &f, now);
	CHECK(!c->v[1].parked && c->v[1].unslotted);
	sched_core_destroy(c);

	/* stop reaches threads left in guest mode too */
	c = mk("none", 1, 2, &f, 5);
	f.blocked[1] = true;
	now = 0;
	tick_to(c, &f, &now, 10 * MS);
	CHECK(c->v[1].parked && f.in_guest[1]);
	int f0 = f.forces[0], f1 = f.forces[1];
	sched_core_stop(c, now);
	drain(c, &f, now);
	CHECK(f.forces[1] == f1 + 1 && f.forces[0] == f0 + 1);
	sched_core_destroy(c);
}

/* Without a probe or an interval nothing is ever parked. */
static void case_off(void)
{
	struct fake f;
	memset(&f, 0, sizeof(f));
	struct sched_params p = { .nvcpus = 2, .npcpus = 1, .policy = "none" };
	struct sched_core *c = sched_core_create(&p, NULL, NULL, NULL);
	sched_core_set_blocked_fn(c, probe, &f);
	sched_core_start(c, 0);
	drain(c, &f, 0);
	f.blocked[0] = true;
	uint64_t now = 0;
	for (int i = 0; i < 20; i++) {
		now = sched_core_next_deadline(c);
		sched_core_tick(c, now);
		drain(c, &f, now);
		for (int v = 0; v < 2; v++)
			if (f.force[v])
				thread_exits(c, &f, v, now);
	}
	CHECK(!c->v[0].parked && !c->v[0].st.kernel_halts && f.parks[0] == 0);
	sched_core_destroy(c);
}

/* ---- random runs ---- */

/*
 * A tick at a due deadline. With own ticks (own_tick.c), one that is a
 * slot's only is its holder's: sched_core_tick_slots, on the vCPU thread,
 * which must never probe (its seccomp filter has no stats fds). The loop's
 * ticks come for the rest, the halt checks among them, on time.
 */
static void tick_due(struct sched_core *c, struct fake *f, uint64_t now, bool own)
{
	uint64_t slot_d[MAXV];
	uint64_t shared = own ? sched_core_deadlines(c, slot_d) : now;
	bool slot_due = false;
	for (int s = 0; own && s < c->nslots; s++)
		slot_due |= slot_d[s] <= now;
	if (slot_due) {
		int probes = f->probes;
		sched_core_tick_slots(c, now);
		CHECK(f->probes == probes);
		drain(c, f, now);
	}
	if (shared <= now) {
		sched_core_tick(c, now);
		drain(c, f, now);
	}
}

/* A holder's own tick at its slice end while the halt check is due too:
 * the slice ends, the probe is left to the loop's tick. */
static void case_own_tick_leaves_the_halt_check(void)
{
	struct fake f;
	struct sched_core *c = mk("none", 1, 2, &f, 4);
	uint64_t slot_d[1], now = 0;
	uint64_t shared = sched_core_deadlines(c, slot_d);
	CHECK(slot_d[0] != UINT64_MAX && shared != UINT64_MAX);
	now = (slot_d[0] > shared ? slot_d[0] : shared) + 1;
	int probes = f.probes, forces = f.forces[0];
	uint64_t check_at = c->next_halt_check;
	CHECK(check_at <= now);
	sched_core_tick_slots(c, now);
	drain(c, &f, now);
	CHECK(f.probes == probes && f.forces[0] == forces + 1 && c->next_halt_check == check_at);
	sched_core_tick(c, now);
	drain(c, &f, now);
	CHECK(c->next_halt_check > now); /* the loop's tick made the check */
	sched_core_destroy(c);
}

static void run_random(const char *pol, int m, int n, uint64_t seed, int steps, bool own)
{
	snprintf(ctx, sizeof(ctx), "run(%s m=%d n=%d seed=%" PRIu64 "%s)", pol, m, n, seed,
		 own ? " own ticks" : "");
	struct fake f;
	struct sched_core *c = mk(pol, m, n, &f, seed);
	uint64_t now = 0;
	long failed_before = n_fail;
	for (int step = 0; step < steps && n_fail == failed_before; step++) {
		uint64_t next = now + rnd(&f) % (300 * US) + 1;
		uint64_t dl = sched_core_next_deadline(c);
		CHECK(dl >= now);
		int exiter = -1;
		for (int v = 0; v < n; v++)
			if (f.force[v] && f.in_guest[v] && f.exit_at[v] < next && f.exit_at[v] < dl) {
				next = f.exit_at[v] > now ? f.exit_at[v] : now;
				exiter = v;
			}
		if (dl <= next) {
			now = dl;
			tick_due(c, &f, now, own);
		} else if (exiter >= 0) {
			now = next;
			thread_exits(c, &f, exiter, now);
		} else {
			now = next;
			int v = (int)(rnd(&f) % (uint64_t)n);
			uint64_t x = rnd(&f) % 100;
			if (f.blocked[v] && x < 30) {
				f.blocked[v] = false; /* an interrupt, delivered in the kernel */
				f.awake_since[v] = now;
			} else if (f.in_guest[v] && !f.blocked[v] && x < 50) {
				f.blocked[v] = true; /* HLT */
				f.blocked_since[v] = now;
			} else if (f.in_guest[v] && !f.blocked[v] && x < 70) {
				thread_exits(c, &f, v, now); /* an MMIO exit */
			} else if (x < 75 && c->v[v].state == SCHED_ST_RUNNING) {
				sched_core_kick(c, v, (int)(rnd(&f) % (uint64_t)n), now);
				drain(c, &f, now);
			}
		}
		check_invariants(c, &f, now);
	}
	/* Everyone awake got to run. */
	for (int v = 0; v < n; v++) {
		struct sched_vcpu_stats st;
		sched_core_stats(c, v, now, &st);
		CHECK(st.ns_running > 0);
	}
	sched_core_destroy(c);
	ctx[0] = 0;
}

int main(void)
{
	CASE(case_aps_park());
	CASE(case_wake_free_slot());
	CASE(case_wake_no_slot());
	CASE(case_exit_while_parked());
	CASE(case_off());
	CASE(case_own_tick_leaves_the_halt_check());
	static const char *const pols[] = { "none", "random", "directed", "holder", "pv", "gang" };
	uint64_t seed = 1;
	for (size_t p = 0; p < sizeof(pols) / sizeof(pols[0]); p++)
		for (int m = 1; m <= 3; m++)
			for (int n = 1; n <= 8; n++)
				for (int k = 0; k < 4; k++)
					CASE(run_random(pols[p], m, n, seed++, 6000, k == 3));
	fprintf(stderr, "%ld checks passed, %ld failed\n", n_pass, n_fail);
	printf("%ld passed, %ld failed\n", cases_pass, cases_fail);
	return n_fail != 0;
}
