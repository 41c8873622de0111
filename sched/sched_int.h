/*
 * The thread layer's state (sched.c), shared with its parts that live in
 * files of their own (own_tick.c). Nothing outside sched/ includes it.
 */
#ifndef SCHED_SCHED_INT_H
#define SCHED_SCHED_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sched/core.h"
#include "sched/sched.h"

struct svcpu {
	/*
	 * The futex word its thread sleeps on while it waits for a slot: bumped
	 * under the mutex by every grant to it and every WAKE_ALL, so a change
	 * between the waiter's last look (under the mutex) and its FUTEX_WAIT
	 * makes the wait return at once. sleeping tells the granter whether a
	 * FUTEX_WAKE is needed at all.
	 */
	atomic_uint word;
	atomic_int sleeping;
	atomic_int yield_req; /* YR_*: read lock-free by sched_vcpu_after_exit */
	const struct sched_vcpu_ops *ops;
	void *opaque;
	/* The CPU its thread should be on (set under the mutex at each grant)
	 * and the one it was last moved to (under pin_mu, with the move). */
	atomic_int pin_want, pin_applied;
	pthread_mutex_t pin_mu;
	bool pending;         /* in sched.pend; under the mutex */
	pthread_t thread;     /* the vCPU's thread, once it has entered */
	bool has_thread;
	uint64_t granted_ns;  /* its last grant; written and read by its own thread */
	int held_slot;        /* the slot it holds since its last call returned 0;
				 its own thread's (a poke's point is on it) */
	/* Its own timer (sched_vcpu_own_timer), set under the mutex to its
	 * slot's deadline while it holds one; own_at is what it is set to
	 * (UINT64_MAX: not set), read lock-free by sched_vcpu_own_tick. */
	timer_t own_timer;
	bool has_own_timer;
	_Atomic uint64_t own_at;
};

/* svcpu.yield_req: what the vCPU's next after_exit finds */
enum { YR_NONE, YR_GIVE_BACK /* FORCE_EXIT, PARK */, YR_POKE /* sched_slot_poke: pass a point, keep the slot */ };

/* A scheduling point a vCPU thread passes on its slot, told after the unlock. */
struct point {
	void (*cb)(void *ctx, int slot);
	void *ctx;
	int slot;
};

struct sched {
	pthread_mutex_t mu;
	struct sched_core *c;
	struct svcpu *vc;
	int *host_cpu;        /* [nslots], -1: don't pin; set per grant of a seat */
	int tfd;              /* a timerfd kept at the core's next deadline */
	_Atomic(const char *) policy; /* the current policy's name, read lock-free */
	void (*slot_cb)(void *ctx, enum sched_action_kind kind, int val);
	void *slot_ctx;
	void (*point_cb)(void *ctx, int slot); /* sched_set_point_cb */
	void *point_ctx;
	bool keep_slots;      /* sched_slots_keep: free seats are not given back */
	uint64_t armed;       /* the deadline tfd is set to; 0: re-arm at the next event */
	struct sched_loop_stats loop;
	void (*deadlock_cb)(void *ctx);
	void *deadlock_ctx;
	/* vCPUs granted since the last unlock: moved and woken after it */
	int *pend;            /* [nvcpus], each at most once (svcpu.pending) */
	int npend;
	bool pend_all;        /* WAKE_ALL: every vCPU */
	/* own_tick.c: each slot's deadline, and whose own timer holds it */
	uint64_t *slot_d;     /* [nslots] */
	int *own_v;           /* [nslots], -1: none */
	bool own_any;         /* some vCPU has had an own timer */
	int own_ticking;      /* the vCPU whose own tick is being run, or -1 */
};

/* A one-shot absolute CLOCK_MONOTONIC time for timerfd_settime and
 * timer_settime; UINT64_MAX disarms. */
static inline struct itimerspec sched_its_at(uint64_t at)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (at != UINT64_MAX) {
		its.it_value.tv_sec = (time_t)(at / 1000000000ull);
		its.it_value.tv_nsec = (long)(at % 1000000000ull);
		if (!at)
			its.it_value.tv_nsec = 1; /* 0 would disarm */
	}
	return its;
}

/* own_tick.c, under the mutex: sets every holder's own timer and returns
 * the deadline the event loop's timer keeps (the rest, and a backstop). */
uint64_t sched_own_arm(struct sched *s);
/* own_tick.c, under the mutex: v's thread ends; its timer goes. */
void sched_own_drop(struct sched *s, int v);
/* sched.c: the actions of the event just fed to the core, under the
 * mutex; and the unlock that then moves and wakes the vCPUs granted. */
void sched_run_actions(struct sched *s);
void sched_unlock(struct sched *s);

#endif
