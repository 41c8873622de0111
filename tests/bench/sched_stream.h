/*
 * A synthetic event stream for the pure sched/ core (no KVM, no threads):
 * fake vCPUs on a fake clock, a mix like a real run (slice ends and hard
 * deadlines through ticks, PV waits and halts, kicks and device wakes, PLE
 * spin exits, directed yields, safe points, lock regions in the hints).
 * The driver itself is O(1) per event (a sleeper list, an exit list), so
 * the time of a run is the core's. Deterministic: the same seed gives the
 * same stream for a given size, whatever the timing.
 */
#ifndef VMM_TESTS_BENCH_SCHED_STREAM_H
#define VMM_TESTS_BENCH_SCHED_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core.h"

#define ST_US 1000ull
#define ST_MS (1000 * ST_US)

struct stream {
	struct sched_core *c;
	int n, m, vmsize;
	uint64_t now, rng;
	long events, decisions;
	uint64_t hash;           /* of every action, in order: same decisions? */
	struct sched_hint *h;
	bool *pending;           /* preempt_pending as the guest sees it */
	int *exiting, nexit;     /* forced out: yields at the next step */
	int *resuming, nres;     /* granted: back in guest at the next step */
	bool *in_exit, *in_res;
	int *sleeper, nsleep;    /* maybe WAITING/IDLE (checked when drawn) */
	bool *in_sleep;
};

static inline uint64_t st_rnd(struct stream *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static inline void st_hint(void *p, int v, struct sched_hint *out)
{
	*out = ((struct stream *)p)->h[v];
}

static inline void st_drain(struct stream *s)
{
	struct sched_core *c = s->c;
	for (int i = 0; i < c->nact; i++) {
		struct sched_action a = c->act[i];
		s->hash = (s->hash ^ ((uint64_t)a.kind << 48 ^ (uint64_t)(uint32_t)a.v << 16 ^
				      (uint64_t)(uint32_t)a.val)) * 0x100000001b3ull;
		switch (a.kind) {
		case SCHED_ACT_GRANT:
			s->decisions++;
			if (!s->in_res[a.v]) {
				s->in_res[a.v] = true;
				s->resuming[s->nres++] = a.v;
			}
			break;
		case SCHED_ACT_FORCE_EXIT:
			if (!s->in_exit[a.v]) {
				s->in_exit[a.v] = true;
				s->exiting[s->nexit++] = a.v;
			}
			break;
		case SCHED_ACT_SET_PREEMPT_PENDING:
			s->pending[a.v] = a.val != 0;
			break;
		default:
			break;
		}
	}
	sched_core_clear_actions(c);
}

static inline void st_free(struct stream *s)
{
	sched_core_destroy(s->c);
	free(s->h);
	free(s->pending);
	free(s->exiting);
	free(s->resuming);
	free(s->in_exit);
	free(s->in_res);
	free(s->sleeper);
	free(s->in_sleep);
	memset(s, 0, sizeof(*s));
}

/* VMs of vmsize vCPUs; 0: min(8, m), so gang has whole VMs that fit.
 * -errno. */
static inline int st_init(struct stream *s, const char *pol, int n, int m, int vmsize,
			  uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->m = m;
	s->rng = seed | 1;
	size_t un = (size_t)n;
	s->h = calloc(un, sizeof(*s->h));
	s->pending = calloc(un, sizeof(bool));
	s->exiting = calloc(un, sizeof(int));
	s->resuming = calloc(un, sizeof(int));
	s->in_exit = calloc(un, sizeof(bool));
	s->in_res = calloc(un, sizeof(bool));
	s->sleeper = calloc(un, sizeof(int));
	s->in_sleep = calloc(un, sizeof(bool));
	int *vm_of = calloc(un, sizeof(int));
	if (vmsize <= 0)
		vmsize = m < 8 ? m : 8;
	s->vmsize = vmsize;
	if (!s->h || !s->pending || !s->exiting || !s->resuming || !s->in_exit ||
	    !s->in_res || !s->sleeper || !s->in_sleep || !vm_of) {
		free(vm_of);
		st_free(s);
		return -12; /* ENOMEM */
	}
	for (int v = 0; v < n; v++) {
		s->h[v].waiting_for = -1;
		vm_of[v] = v / vmsize;
	}
	struct sched_params p = {
		.nvcpus = n, .npcpus = m, .policy = pol, .defer = true,
		.spin_sources = SCHED_SPIN_ALL, .nvms = (n + vmsize - 1) / vmsize,
		.vm_of = vm_of, .seed = seed,
	};
	s->c = sched_core_create(&p, st_hint, s, NULL);
	free(vm_of);
	if (!s->c) {
		st_free(s);
		return -22; /* EINVAL */
	}
	s->now = 1;
	sched_core_start(s->c, s->now);
	st_drain(s);
	return 0;
}

static inline void st_add_sleeper(struct stream *s, int v)
{
	if (!s->in_sleep[v]) {
		s->in_sleep[v] = true;
		s->sleeper[s->nsleep++] = v;
	}
}

/* A sleeping vCPU drawn at random, or -1; entries that woke meanwhile
 * (timeouts) are dropped as they are met. */
static inline int st_draw_sleeper(struct stream *s)
{
	while (s->nsleep > 0) {
		int i = (int)(st_rnd(s) % (uint64_t)s->nsleep);
		int v = s->sleeper[i];
		enum sched_vstate st = sched_core_state(s->c, v);
		if (st == SCHED_ST_WAITING || st == SCHED_ST_IDLE)
			return v;
		s->sleeper[i] = s->sleeper[--s->nsleep];
		s->in_sleep[v] = false;
	}
	return -1;
}

/* What the running vCPU v does now. */
static inline void st_vcpu_event(struct stream *s, int v)
{
	struct sched_core *c = s->c;
	uint64_t x = st_rnd(s) % 100, now = s->now;
	s->events++;
	if (s->pending[v] && x < 50) {
		sched_core_safe_point(c, v, now); /* at its next lock boundary */
	} else if (x < 8) {
		s->h[v].in_critical = !s->h[v].in_critical;
		s->events--; /* a guest write, not an event */
	} else if (x < 12) {
		s->h[v].spinning_since = s->h[v].spinning_since ? 0 : now;
		s->events--;
	} else if (x < 27) {
		sched_core_spin(c, v, -1, SCHED_SPIN_PLE, now);
	} else if (x < 35) {
		/* a directed yield to a sibling (same VM) */
		int base = v - v % s->vmsize;
		int t = base + (int)(st_rnd(s) % (uint64_t)s->vmsize);
		sched_core_spin(c, v, t < s->n ? t : -1, SCHED_SPIN_YIELD, now);
	} else if (x < 45) {
		/* timed PV waits only: the stream must never deadlock */
		uint64_t t = 200 * ST_US + st_rnd(s) % (3 * ST_MS);
		if (sched_core_wait(c, v, t, now) == 1)
			st_add_sleeper(s, v);
	} else if (x < 50) {
		if (sched_core_halt(c, v, now) == 1)
			st_add_sleeper(s, v);
	} else if (x < 70) {
		int to = st_draw_sleeper(s);
		sched_core_kick(c, v, to >= 0 ? to : (int)(st_rnd(s) % (uint64_t)s->n), now);
	} else if (x < 74) {
		sched_core_safe_point(c, v, now);
	} else {
		s->events--; /* guest code runs on */
	}
	st_drain(s);
}

/* One step of the fake clock: threads come back, forced ones leave, the
 * event loop ticks when a deadline is due, one slot's vCPU acts, and now
 * and then a device interrupt wakes a halted vCPU. */
static inline void st_step(struct stream *s)
{
	struct sched_core *c = s->c;
	s->now += 1 * ST_US + st_rnd(s) % (20 * ST_US);
	while (s->nres > 0) {
		int v = s->resuming[--s->nres];
		s->in_res[v] = false;
		sched_core_resumed(c, v, s->now);
		s->events++;
		st_drain(s);
	}
	while (s->nexit > 0) {
		int v = s->exiting[--s->nexit];
		s->in_exit[v] = false;
		sched_core_yield(c, v, s->now);
		s->events++;
		st_drain(s);
	}
	if (sched_core_next_deadline(c) <= s->now) {
		sched_core_tick(c, s->now);
		s->events++;
		st_drain(s);
	}
	int slot = (int)(st_rnd(s) % (uint64_t)s->m);
	int v = c->slot[slot].vcpu;
	if (v >= 0 && !s->in_exit[v])
		st_vcpu_event(s, v);
	if (st_rnd(s) % 16 == 0) {
		int w = st_draw_sleeper(s);
		if (w >= 0) {
			sched_core_wake(c, w, s->now);
			s->events++;
			st_drain(s);
		}
	}
}

#endif
