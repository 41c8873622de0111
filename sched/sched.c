/*
 * The thread layer over the pure core; see sched.h. Every event takes the
 * one mutex, feeds the core, and executes the core's actions before
 * unlocking, so an action can never overtake the state change behind it.
 * Two parts of a grant wait until after the unlock (unlock_sched): moving
 * the thread to its slot's CPU and waking it. Done under the mutex, the
 * woken thread would only block again on the mutex its granter still holds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "sched/core.h"
#include "sched/policy.h"
#include "sched/sched.h"
#include "sched/sched_int.h"

static const struct sched_vcpu_ops no_ops;

uint64_t sched_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void read_hint(void *ctx, int v, struct sched_hint *out)
{
	struct svcpu *x = &((struct sched *)ctx)->vc[v];
	out->spinning_since = x->ops->spinning_since_ns ? x->ops->spinning_since_ns(x->opaque) : 0;
	out->in_critical = x->ops->in_critical ? x->ops->in_critical(x->opaque) : false;
	out->waiting_for = x->ops->waiting_for ? x->ops->waiting_for(x->opaque) : -1;
	out->guest_slice = x->ops->guest_slice && x->ops->guest_slice(x->opaque);
}

static bool read_blocked(void *ctx, int v)
{
	struct svcpu *x = &((struct sched *)ctx)->vc[v];
	return x->ops->blocked_in_kernel && x->ops->blocked_in_kernel(x->opaque);
}

struct sched *sched_create(const struct sched_params *p, const char **why)
{
	struct sched *s = calloc(1, sizeof(*s));
	if (!s) {
		*why = "out of memory";
		return NULL;
	}
	s->tfd = -1;
	s->c = sched_core_create(p, read_hint, s, why);
	if (!s->c)
		goto fail;
	sched_core_set_blocked_fn(s->c, read_blocked, s);
	s->vc = calloc((size_t)p->nvcpus, sizeof(*s->vc));
	if (!s->vc)
		goto oom;
	s->host_cpu = malloc(sizeof(int) * (size_t)p->npcpus);
	s->pend = malloc(sizeof(int) * (size_t)p->nvcpus);
	s->slot_d = malloc(sizeof(uint64_t) * (size_t)p->npcpus);
	s->own_v = malloc(sizeof(int) * (size_t)p->npcpus);
	if (!s->host_cpu || !s->pend || !s->slot_d || !s->own_v)
		goto oom;
	for (int i = 0; i < p->npcpus; i++)
		s->own_v[i] = -1;
	s->own_ticking = -1;
	for (int i = 0; i < p->npcpus; i++)
		s->host_cpu[i] = p->host_cpu ? p->host_cpu[i] : -1;
	atomic_init(&s->policy, s->c->pol->name);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->tfd < 0) {
		*why = "timerfd_create failed";
		goto fail;
	}
	pthread_mutex_init(&s->mu, NULL);
	for (int v = 0; v < p->nvcpus; v++) {
		pthread_mutex_init(&s->vc[v].pin_mu, NULL);
		s->vc[v].ops = &no_ops;
		atomic_init(&s->vc[v].pin_want, -1);
		atomic_init(&s->vc[v].pin_applied, -1);
		atomic_init(&s->vc[v].own_at, UINT64_MAX); /* no own timer: never its tick */
	}
	s->armed = UINT64_MAX;
	return s;
oom:
	*why = "out of memory";
fail:
	sched_core_destroy(s->c);
	free(s->vc);
	free(s->host_cpu);
	free(s->pend);
	free(s->slot_d);
	free(s->own_v);
	free(s);
	return NULL;
}

void sched_set_vcpu(struct sched *s, int v, const struct sched_vcpu_ops *ops, void *opaque)
{
	pthread_mutex_lock(&s->mu);
	s->vc[v].ops = ops ? ops : &no_ops;
	s->vc[v].opaque = opaque;
	sched_unlock(s);
}

void sched_set_deadlock_cb(struct sched *s, void (*cb)(void *ctx), void *ctx)
{
	pthread_mutex_lock(&s->mu);
	s->deadlock_cb = cb;
	s->deadlock_ctx = ctx;
	sched_unlock(s);
}

/* Under the mutex: v is to be moved (if its slot has a CPU) and woken
 * after the unlock. */
static void hand_over_later(struct sched *s, int v, int slot)
{
	struct svcpu *x = &s->vc[v];
	if (x->has_thread && slot >= 0 && s->host_cpu[slot] >= 0)
		atomic_store(&x->pin_want, s->host_cpu[slot]);
	if (!x->pending) {
		x->pending = true;
		s->pend[s->npend++] = v;
	}
}

/*
 * After the unlock. The granter moves the thread to its slot's CPU before
 * waking it, so the wake-up lands there: woken on its old CPU it would
 * first preempt whoever runs in that slot (maybe a lock holder) and only
 * then migrate. Two granters of one vCPU may get here in either order (the
 * thread can see its grant and be granted again before the first granter
 * moved it): each moves it to the latest pin_want, so the last move wins
 * with the latest CPU. pin_want != -1 means has_thread was set before it.
 */
static void pin_apply(struct svcpu *x)
{
	if (atomic_load(&x->pin_want) == atomic_load(&x->pin_applied))
		return;
	pthread_mutex_lock(&x->pin_mu);
	int cpu = atomic_load(&x->pin_want);
	if (cpu >= 0 && cpu != atomic_load(&x->pin_applied)) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (pthread_setaffinity_np(x->thread, sizeof(set), &set) == 0)
			atomic_store(&x->pin_applied, cpu);
	}
	pthread_mutex_unlock(&x->pin_mu);
}

/*
 * The word was bumped under the mutex before this (seq_cst), and the
 * waiter sets sleeping before its last look at the word (seq_cst): either
 * it sees the new value and does not sleep, or this sees it sleeping.
 */
static void wake(struct svcpu *x)
{
	if (atomic_load(&x->sleeping))
		syscall(SYS_futex, &x->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleeps until the word moves on from seen (or a signal, or spuriously). */
static void sleep_on(struct svcpu *x, unsigned seen)
{
	atomic_store(&x->sleeping, 1);
	if (atomic_load(&x->word) == seen)
		syscall(SYS_futex, &x->word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
	atomic_store(&x->sleeping, 0);
}

/* The most hand-overs carried past one unlock on the stack; beyond that
 * (a tick on many slots, a WAKE_ALL) every vCPU is looked at. */
#define HAND_BATCH 16

/* Every public function unlocks here: the grants' moves and wakes go out
 * after the mutex does. */
void sched_unlock(struct sched *s)
{
	int n = s->npend, idx[HAND_BATCH];
	bool all = s->pend_all || n > HAND_BATCH;
	for (int i = 0; i < n; i++) {
		s->vc[s->pend[i]].pending = false;
		if (!all)
			idx[i] = s->pend[i];
	}
	s->npend = 0;
	s->pend_all = false;
	int nv = s->c->nvcpus; /* fixed at create */
	pthread_mutex_unlock(&s->mu);
	if (all)
		n = nv;
	for (int i = 0; i < n; i++) {
		struct svcpu *x = &s->vc[all ? i : idx[i]];
		pin_apply(x);
		wake(x);
	}
}

static void run_actions_once(struct sched *s);
static void arm_deadline(struct sched *s);

/*
 * Seats (slots_offline) that sit free while nobody is runnable go back at
 * once: a domain's CPU is not kept idle by a VM that has nothing to run on
 * it. Not while the domain is lost (keep_slots) or stopping.
 */
static void give_back_idle(struct sched *s)
{
	struct sched_core *c = s->c;
	if (!c->slots_offline || s->keep_slots || c->stopping)
		return;
	int want = c->nrunning + c->nrunnable;
	for (int i = 0; i < c->nslots && c->nusable > want; i++)
		if (c->slot[i].state == SCHED_SLOT_ONLINE && c->slot[i].vcpu < 0)
			sched_core_slot_offline(c, i, c->last_now);
}

/* With the mutex held, after every core event. */
void sched_run_actions(struct sched *s)
{
	run_actions_once(s);
	give_back_idle(s);
	if (s->c->nact)
		run_actions_once(s);
	arm_deadline(s);
}

static void run_actions_once(struct sched *s)
{
	struct sched_core *c = s->c;
	for (int i = 0; i < c->nact; i++) {
		const struct sched_action *a = &c->act[i];
		struct svcpu *x = a->v >= 0 ? &s->vc[a->v] : NULL;
		switch (a->kind) {
		case SCHED_ACT_GRANT:
			atomic_store_explicit(&x->yield_req, YR_NONE, memory_order_relaxed);
			/* RUNNABLE time ended with this grant: the guest's steal */
			if (x->ops->set_steal_ns)
				x->ops->set_steal_ns(x->opaque, c->v[a->v].st.ns_runnable);
			atomic_fetch_add(&x->word, 1);
			hand_over_later(s, a->v, a->val);
			break;
		case SCHED_ACT_FORCE_EXIT:
			/* The flag first: force_exit may land before KVM_RUN. */
			atomic_store_explicit(&x->yield_req, YR_GIVE_BACK, memory_order_release);
			/* In its own tick it is out of guest mode and reads the flag
			 * before it goes back in: a kick would only end its next
			 * KVM_RUN for nothing. */
			if (x->ops->force_exit && a->v != s->own_ticking)
				x->ops->force_exit(x->opaque);
			break;
		case SCHED_ACT_PARK:
			/* Left in KVM_RUN; whenever it comes out it must ask again. */
			atomic_store_explicit(&x->yield_req, YR_GIVE_BACK, memory_order_release);
			break;
		case SCHED_ACT_SET_PREEMPTED:
			if (x->ops->set_preempted)
				x->ops->set_preempted(x->opaque, a->val);
			break;
		case SCHED_ACT_SET_PREEMPT_PENDING:
			if (x->ops->set_preempt_pending)
				x->ops->set_preempt_pending(x->opaque, (uint32_t)a->val);
			break;
		case SCHED_ACT_SET_KICK_PENDING:
			if (x->ops->set_kick_pending)
				x->ops->set_kick_pending(x->opaque, a->val);
			break;
		case SCHED_ACT_SET_CONTENDED:
			if (x->ops->set_contended)
				x->ops->set_contended(x->opaque, a->val);
			break;
		case SCHED_ACT_NEW_SLICE:
			if (x->ops->new_slice)
				x->ops->new_slice(x->opaque, (uint64_t)a->val * 1000);
			break;
		case SCHED_ACT_SLOT_OFF:
		case SCHED_ACT_SLOT_DEMAND:
			if (s->slot_cb)
				s->slot_cb(s->slot_ctx, a->kind, a->val);
			break;
		case SCHED_ACT_WAKE_ALL:
			for (int v = 0; v < c->nvcpus; v++)
				atomic_fetch_add(&s->vc[v].word, 1);
			s->pend_all = true;
			if (a->val == -EDEADLK && s->deadlock_cb)
				s->deadlock_cb(s->deadlock_ctx);
			break;
		}
	}
	sched_core_clear_actions(c);
}

/*
 * The thread that moved the deadline sets the timer itself, earlier or
 * later, so the event loop wakes only when a deadline is due: never to be
 * told of a move, never at a deadline that went away (a deferral ended by
 * a safe point, a slice handed on by a yield).
 */
static void arm_deadline(struct sched *s)
{
	uint64_t d = s->own_any ? sched_own_arm(s) : sched_core_next_deadline(s->c);
	if (d == s->armed)
		return;
	s->armed = d;
	struct itimerspec its = sched_its_at(d);
	s->loop.timer_sets++;
	/* Cannot fail: our own timerfd, a valid absolute time. */
	(void)timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static uint64_t lock(struct sched *s)
{
	pthread_mutex_lock(&s->mu);
	return sched_now_ns();
}

/* Under the mutex: v holds a slot and is at a scheduling point. */
static struct point point_at(const struct sched *s, int v)
{
	return (struct point){ s->point_cb, s->point_ctx, s->c->v[v].slot };
}

/* On v's own thread, after the unlock: the callback may take its own locks. */
static void point_pass(struct sched *s, int v, struct point pt)
{
	s->vc[v].held_slot = pt.slot;
	if (pt.cb)
		pt.cb(pt.ctx, pt.slot);
}

/* Mutex held on entry, released on return. Blocks until v holds a slot. */
static int block_unlock(struct sched *s, int v, int *wake_reason)
{
	struct sched_core *c = s->c;
	struct svcpu *x = &s->vc[v];
	while (!c->stopping && !c->deadlock && c->v[v].state != SCHED_ST_RUNNING) {
		/* Read under the mutex: a grant after this changes it. */
		unsigned seen = atomic_load(&x->word);
		sched_unlock(s);
		sleep_on(x, seen);
		pthread_mutex_lock(&s->mu);
	}
	int r = c->stopping ? -ECANCELED : c->deadlock ? -EDEADLK : 0;
	struct point pt = { NULL, NULL, -1 };
	if (!r) {
		s->vc[v].granted_ns = c->v[v].state_since; /* RUNNING since the grant */
		sched_core_resumed(c, v, sched_now_ns());
		sched_run_actions(s);
		if (wake_reason)
			*wake_reason = c->v[v].wake_reason;
		pt = point_at(s, v);
	}
	sched_unlock(s);
	/* Back on its slot's CPU before it returns, even when it saw its
	 * grant before the granter got round to moving it. */
	if (!r) {
		pin_apply(x);
		point_pass(s, v, pt);
	}
	return r;
}

void sched_start(struct sched *s)
{
	sched_core_start(s->c, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

int sched_vcpu_enter(struct sched *s, int v)
{
	pthread_mutex_lock(&s->mu);
	s->vc[v].thread = pthread_self();
	s->vc[v].has_thread = true;
	/* Granted before this thread existed: move it now. */
	if (s->c->v[v].state == SCHED_ST_RUNNING)
		hand_over_later(s, v, s->c->v[v].slot);
	return block_unlock(s, v, NULL);
}

uint64_t sched_vcpu_granted_ns(const struct sched *s, int v)
{
	return s->vc[v].granted_ns;
}

int sched_vcpu_host_cpu(const struct sched *s, int v)
{
	return atomic_load(&s->vc[v].pin_want);
}

/* A poke only (no give-back asked for since): v keeps its slot and has
 * passed a scheduling point on it. The poke's store (under the mutex,
 * after sched_set_point_cb's) is what this exchange reads: the callback
 * is read after it. */
static bool after_poke(struct sched *s, int v)
{
	struct svcpu *x = &s->vc[v];
	int was = YR_POKE;
	if (!atomic_compare_exchange_strong(&x->yield_req, &was, YR_NONE))
		return was != YR_NONE; /* a give-back came after the poke */
	point_pass(s, v, (struct point){ s->point_cb, s->point_ctx, x->held_slot });
	return false;
}

bool sched_vcpu_after_exit(struct sched *s, int v)
{
	int r = atomic_load_explicit(&s->vc[v].yield_req, memory_order_acquire);
	return r == YR_POKE ? after_poke(s, v) : r != YR_NONE;
}

int sched_vcpu_yield_slot(struct sched *s, int v)
{
	sched_core_yield(s->c, v, lock(s));
	sched_run_actions(s);
	return block_unlock(s, v, NULL);
}

int sched_vcpu_spin(struct sched *s, int v, int target, unsigned source)
{
	sched_core_spin(s->c, v, target, source, lock(s));
	sched_run_actions(s);
	return block_unlock(s, v, NULL);
}

void sched_vcpu_spin_seen(struct sched *s, int v, unsigned source)
{
	sched_core_spin_seen(s->c, v, source, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

int sched_vcpu_safe_point(struct sched *s, int v)
{
	sched_core_safe_point(s->c, v, lock(s));
	sched_run_actions(s);
	return block_unlock(s, v, NULL);
}

int sched_vcpu_wait(struct sched *s, int v, uint64_t timeout_ns)
{
	int slept = sched_core_wait(s->c, v, timeout_ns, lock(s));
	sched_run_actions(s);
	if (!slept) { /* a kick was pending: the wait ends at once */
		struct point pt = point_at(s, v);
		sched_unlock(s);
		point_pass(s, v, pt);
		return 0;
	}
	int reason = 0;
	int r = block_unlock(s, v, &reason);
	return r ? r : reason;
}

int sched_vcpu_kick(struct sched *s, int from, int target)
{
	sched_core_kick(s->c, from, target, lock(s));
	sched_run_actions(s);
	if (from < 0) {
		sched_unlock(s);
		return 0;
	}
	return block_unlock(s, from, NULL);
}

void sched_vcpu_done(struct sched *s, int v)
{
	sched_core_done(s->c, v, lock(s));
	sched_run_actions(s);
	sched_own_drop(s, v);
	sched_unlock(s);
}

void sched_vcpu_features_acked(struct sched *s, int v)
{
	sched_core_features_acked(s->c, v, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

uint64_t sched_next_deadline(struct sched *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t d = sched_core_next_deadline(s->c);
	sched_unlock(s);
	return d;
}

void sched_tick(struct sched *s, uint64_t now)
{
	pthread_mutex_lock(&s->mu);
	s->loop.ticks++;
	if (now < sched_core_next_deadline(s->c))
		s->loop.ticks_early++;
	sched_core_tick(s->c, now);
	s->armed = 0; /* it fired, so it is disarmed: set it again whatever comes next */
	sched_run_actions(s);
	sched_unlock(s);
}

int sched_timer_fd(struct sched *s)
{
	return s->tfd;
}

void sched_get_loop_stats(struct sched *s, struct sched_loop_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->loop;
	sched_unlock(s);
}

void sched_stop(struct sched *s)
{
	sched_core_stop(s->c, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

void sched_destroy(struct sched *s)
{
	if (!s)
		return;
	sched_stop(s);
	for (int v = 0; v < s->c->nvcpus; v++)
		pthread_mutex_destroy(&s->vc[v].pin_mu);
	pthread_mutex_destroy(&s->mu);
	for (int v = 0; v < s->c->nvcpus; v++)
		sched_own_drop(s, v); /* a thread that never got to sched_vcpu_done */
	sched_core_destroy(s->c);
	close(s->tfd);
	free(s->vc);
	free(s->host_cpu);
	free(s->pend);
	free(s->slot_d);
	free(s->own_v);
	free(s);
}

void sched_stats(struct sched *s, int v, struct sched_vcpu_stats *out)
{
	sched_core_stats(s->c, v, lock(s), out);
	sched_unlock(s);
}

bool sched_deadlocked(struct sched *s)
{
	pthread_mutex_lock(&s->mu);
	bool d = s->c->deadlock;
	sched_unlock(s);
	return d;
}

const char *sched_policy_name(const struct sched *s)
{
	return atomic_load_explicit(&((struct sched *)s)->policy, memory_order_acquire);
}

void sched_set_slot_cb(struct sched *s, void (*cb)(void *ctx, enum sched_action_kind kind, int val),
		       void *ctx)
{
	pthread_mutex_lock(&s->mu);
	s->slot_cb = cb;
	s->slot_ctx = ctx;
	sched_unlock(s);
}

void sched_set_point_cb(struct sched *s, void (*cb)(void *ctx, int slot), void *ctx)
{
	pthread_mutex_lock(&s->mu);
	s->point_cb = cb;
	s->point_ctx = ctx;
	sched_unlock(s);
}

/* A give-back already asked for needs no poke: the holder passes a point
 * when it leaves, or its successor on the slot when granted. */
static void poke(struct sched *s, int v)
{
	struct svcpu *x = &s->vc[v];
	int none = YR_NONE;
	if (atomic_compare_exchange_strong(&x->yield_req, &none, YR_POKE) && x->ops->force_exit)
		x->ops->force_exit(x->opaque);
}

int sched_slot_poke(struct sched *s, int slot)
{
	pthread_mutex_lock(&s->mu);
	int r = -EINVAL;
	if (slot >= 0 && slot < s->c->nslots) {
		const struct sched_slot *sl = &s->c->slot[slot];
		r = sl->vcpu >= 0 ? 1 : sl->state == SCHED_SLOT_ONLINE ? 0 : -ENOENT;
		if (r == 1)
			poke(s, sl->vcpu);
	}
	sched_unlock(s);
	return r;
}

void sched_slot_online(struct sched *s, int slot, int host_cpu)
{
	uint64_t now = lock(s);
	/* Before the grants: each one pins its thread to this CPU. */
	if (slot >= 0 && slot < s->c->nslots)
		s->host_cpu[slot] = host_cpu;
	sched_core_slot_online(s->c, slot, now);
	sched_run_actions(s);
	sched_unlock(s);
}

bool sched_slot_offline(struct sched *s, int slot)
{
	return sched_slot_offline_if(s, slot, NULL, NULL);
}

bool sched_slot_offline_if(struct sched *s, int slot, bool (*still)(void *ctx, int slot), void *ctx)
{
	uint64_t now = lock(s);
	bool comes = (!still || still(ctx, slot)) && sched_core_slot_offline(s->c, slot, now);
	sched_run_actions(s);
	sched_unlock(s);
	return comes;
}

int sched_set_policy(struct sched *s, const char *name)
{
	int r = sched_core_set_policy(s->c, name, lock(s));
	if (!r)
		atomic_store_explicit(&s->policy, s->c->pol->name, memory_order_release);
	sched_run_actions(s);
	sched_unlock(s);
	return r;
}

void sched_slot_lease(struct sched *s, int slot, uint64_t end)
{
	sched_core_slot_lease(s->c, slot, end, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

void sched_set_lease(struct sched *s, bool on)
{
	sched_core_set_lease(s->c, on, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

void sched_set_slice_floor(struct sched *s, uint64_t ns)
{
	sched_core_set_slice_floor(s->c, ns, lock(s));
	sched_run_actions(s);
	sched_unlock(s);
}

void sched_slots_keep(struct sched *s, bool keep)
{
	pthread_mutex_lock(&s->mu);
	s->keep_slots = keep;
	if (!keep)
		sched_run_actions(s); /* the seats kept idle so far go now */
	sched_unlock(s);
}

enum sched_vstate sched_vcpu_state(struct sched *s, int v)
{
	pthread_mutex_lock(&s->mu);
	enum sched_vstate st = s->c->v[v].state;
	sched_unlock(s);
	return st;
}

int sched_slots_online(struct sched *s)
{
	pthread_mutex_lock(&s->mu);
	int n = 0;
	for (int i = 0; i < s->c->nslots; i++)
		n += s->c->slot[i].state != SCHED_SLOT_OFFLINE;
	sched_unlock(s);
	return n;
}
