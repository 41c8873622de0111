/*
 * A slot's deadline on its holder's own timer. The event loop's timerfd
 * ends a slice with a wake-up of the loop thread (on a host where every CPU
 * is a slot, a preemption of some running vCPU) and a signal sent across
 * CPUs to the holder. A POSIX timer of the holder's own thread, signalling
 * that thread only, ends it with one timer interrupt on the slot's CPU when
 * the holder (or its predecessor, handing the slot over on that CPU) set it:
 * the single VM's counterpart of a domain seat's lease, which its member
 * ends on its own tick (sched/DOMAIN.md). The holder ticks only the slots'
 * deadlines: the rest (a halt check reads KVM stats fds no vCPU filter
 * allows) is the loop's. The loop keeps every other
 * deadline and, OWN_TICK_BACKSTOP_NS later, each own one, so a holder that
 * is out of guest mode (the signal waits for KVM_RUN) is still ended.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sched/sched_int.h"

/* Long enough that a holder in guest mode always takes its own signal
 * first, even in a nested KVM whose vCPU threads wait milliseconds for a
 * CPU; short next to any slice the loop would otherwise end on time. */
#define OWN_TICK_BACKSTOP_NS 2000000ull

int sched_vcpu_own_timer(struct sched *s, int v, int signo)
{
	struct svcpu *x = &s->vc[v];
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = signo;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid); /* glibc names it no other way */
	timer_t t;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t))
		return -errno;
	pthread_mutex_lock(&s->mu);
	x->own_timer = t;
	atomic_store(&x->own_at, UINT64_MAX);
	x->has_own_timer = true;
	s->own_any = true;
	s->armed = 0; /* the loop's timer gives its slot's deadline up at the next event */
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* Under the mutex. Cannot fail: our own timer, a valid absolute time. */
static void own_set(struct sched *s, struct svcpu *x, uint64_t at)
{
	if (atomic_load_explicit(&x->own_at, memory_order_relaxed) == at)
		return;
	s->loop.own_timer_sets++;
	atomic_store_explicit(&x->own_at, at, memory_order_relaxed);
	struct itimerspec its = sched_its_at(at);
	(void)timer_settime(x->own_timer, TIMER_ABSTIME, &its, NULL);
}

uint64_t sched_own_arm(struct sched *s)
{
	struct sched_core *c = s->c;
	uint64_t d = sched_core_deadlines(c, s->slot_d);
	/* First the timers of vCPUs that left a slot, so that one that moved
	 * to another slot in the same event keeps the new slot's deadline. */
	for (int i = 0; i < c->nslots; i++) {
		int w = s->own_v[i];
		if (w >= 0 && w != c->slot[i].vcpu) {
			own_set(s, &s->vc[w], UINT64_MAX);
			s->own_v[i] = -1;
		}
	}
	for (int i = 0; i < c->nslots; i++) {
		int v = c->slot[i].vcpu;
		uint64_t t = s->slot_d[i];
		if (v < 0 || !s->vc[v].has_own_timer) {
			d = t < d ? t : d;
			continue;
		}
		s->own_v[i] = v;
		own_set(s, &s->vc[v], t);
		if (t != UINT64_MAX && t + OWN_TICK_BACKSTOP_NS < d)
			d = t + OWN_TICK_BACKSTOP_NS;
	}
	return d;
}

bool sched_vcpu_own_tick(struct sched *s, int v)
{
	struct svcpu *x = &s->vc[v];
	uint64_t at = atomic_load_explicit(&x->own_at, memory_order_relaxed);
	if (at == UINT64_MAX || sched_now_ns() < at)
		return false; /* a kick, or a deadline moved since it was set */
	pthread_mutex_lock(&s->mu);
	uint64_t now = sched_now_ns();
	bool due = atomic_load_explicit(&x->own_at, memory_order_relaxed) <= now;
	if (due) {
		/* it fired, so it is disarmed: set it again whatever comes next */
		atomic_store_explicit(&x->own_at, UINT64_MAX, memory_order_relaxed);
		s->loop.own_ticks++;
		s->own_ticking = v;
		sched_core_tick_slots(s->c, now);
		sched_run_actions(s);
		s->own_ticking = -1;
	}
	sched_unlock(s);
	return due;
}

/* Under the mutex, after v's last event: it holds no slot, so its timer
 * is already disarmed. */
void sched_own_drop(struct sched *s, int v)
{
	struct svcpu *x = &s->vc[v];
	if (!x->has_own_timer)
		return;
	x->has_own_timer = false;
	atomic_store_explicit(&x->own_at, UINT64_MAX, memory_order_relaxed);
	for (int i = 0; i < s->c->nslots; i++)
		if (s->own_v[i] == v)
			s->own_v[i] = -1; /* its id may be the next timer's */
	timer_delete(x->own_timer);
}
