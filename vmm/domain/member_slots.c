/*
 * A member's slot threads (one per domain slot, "vmm-slotN"): each waits on
 * its slot's bell and brings the seats the agent named there online or
 * offline (member_link.c reads the grants and applies them; these threads
 * only serve their slot). The link thread serves, the same way, slots a
 * new agent added beyond them.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vmm/domain/member_int.h"

#ifdef VMM_TEST_HOOKS
void (*dlink_test_gap)(int slot);
#endif

/* Until one of ws's words or local changes; ns 0: no timeout. */
int dlink_wait_words(const struct waitset *ws, const _Atomic uint32_t *local, uint32_t b, uint64_t ns)
{
	struct futex_waitv w[WAIT_SHARED_MAX + 1];
	for (int i = 0; i < ws->n; i++)
		w[i] = (struct futex_waitv){ .val = ws->val[i], .uaddr = (uintptr_t)ws->word[i], .flags = FUTEX_32 };
	w[ws->n] = (struct futex_waitv){ .val = b, .uaddr = (uintptr_t)local, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
	unsigned n = (unsigned)ws->n + 1;
	if (!ns)
		return (int)syscall(SYS_futex_waitv, w, n, 0, NULL, CLOCK_MONOTONIC);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec = (time_t)(at / 1000000000ull);
	ts.tv_nsec = (long)(at % 1000000000ull);
	return (int)syscall(SYS_futex_waitv, w, n, 0, &ts, CLOCK_MONOTONIC);
}

/*
 * A slot's look: its bell's value into ws, then the seats its grant words
 * name on it, brought online or offline. The slot's own thread does this;
 * the link thread does it for slots a new agent added beyond this
 * member's slot threads (a rejoin to a bigger domain).
 */
void dlink_serve_slot(struct dlink *l, int slot, struct waitset *ws)
{
	struct todo t;
	t.non = t.noff = 0;
	t.give_back = false;
	pthread_rwlock_rdlock(&l->apply);
	pthread_mutex_lock(&l->mu);
	/* a new agent's segments are swapped in under mu: read the bell here */
	const uint32_t *bell = dom_shm_slot_bell(&l->shm, slot);
	if (bell && ws->n < WAIT_SHARED_MAX) {
		ws->word[ws->n] = bell;
		ws->val[ws->n++] = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
	}
	if (!l->lost)
		dlink_read_grants(l, &t, slot);
	pthread_mutex_unlock(&l->mu);
#ifdef VMM_TEST_HOOKS
	if (dlink_test_gap && (t.non || t.noff))
		dlink_test_gap(slot);
#endif
	dlink_apply_todo(l, &t);
	pthread_rwlock_unlock(&l->apply);
}

/*
 * A domain slot's own thread (one per slot, "vmm-slotN"): it waits on that
 * slot's bell, which the agent rings for every grant, revoke and reclaim
 * on the slot, and brings the seats named there online or offline. It may
 * run on the slot's CPU (and on CPUs outside the domain): a grant comes
 * when a releaser has just left that CPU, so it runs there at once, where
 * one link thread for all slots, woken on a CPU that runs a vCPU in guest
 * mode, waited milliseconds with the slot idle (docs/benchmarks-history.md).
 */
static bool slot_thread_cpus(const struct slot_thread *t, cpu_set_t *set);

static void *slot_main(void *arg)
{
	struct slot_thread *me = arg;
	struct dlink *l = me->l;
	int rc = l->hooks.sandbox ? l->hooks.sandbox(l->hooks.ctx, l->sock) : 0;
	me->start_rc = rc;
	sem_post(&l->started);
	if (rc)
		return NULL;
	while (!atomic_load(&l->stopping)) {
		uint32_t b = atomic_load(&l->local);
		pthread_mutex_lock(&l->mu);
		int cpu = me->slot < l->info.nslots ? l->info.slot_cpu[me->slot] : -1;
		pthread_mutex_unlock(&l->mu);
		cpu_set_t set;
		if (cpu >= 0 && cpu != me->cpu) { /* a new agent put this slot elsewhere */
			me->cpu = cpu;
			if (slot_thread_cpus(me, &set))
				sched_setaffinity(0, sizeof(set), &set);
		}
		struct waitset ws = { .n = 0 };
		dlink_serve_slot(l, me->slot, &ws);
		/* no timeout: the bell is read before the look, so no ring is
		 * lost; a new agent's segments wake it through l->local */
		dlink_wait_words(&ws, &l->local, b, 0);
	}
	return NULL;
}

/* The CPUs the calling thread may use outside the domain: a big host's
 * housekeeping CPUs, where a revoke finds one idle while the slot's own CPU
 * runs the vCPU to be revoked. */
static void outside_cpus(const struct dlink *l, cpu_set_t *set)
{
	cpu_set_t mine;
	CPU_ZERO(set);
	if (sched_getaffinity(0, sizeof(mine), &mine) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &mine) && !CPU_ISSET(c, &l->info.cpus))
				CPU_SET(c, set);
}

/* false: the slot has no CPU of its own (leave the thread unpinned) */
static bool slot_thread_cpus(const struct slot_thread *t, cpu_set_t *set)
{
	if (t->cpu < 0 || t->cpu >= CPU_SETSIZE)
		return false;
	*set = t->outside;
	CPU_SET(t->cpu, set);
	return true;
}

int dlink_start_slot_threads(struct dlink *l)
{
	l->sthr = calloc((size_t)l->info.nslots, sizeof(*l->sthr));
	if (!l->sthr)
		return -ENOMEM;
	for (int k = 0; k < l->info.nslots; k++) {
		struct slot_thread *t = &l->sthr[k];
		*t = (struct slot_thread){ .l = l, .slot = k, .cpu = l->info.slot_cpu[k] };
		outside_cpus(l, &t->outside);
		pthread_attr_t at;
		pthread_attr_init(&at);
		cpu_set_t set;
		if (slot_thread_cpus(t, &set))
			pthread_attr_setaffinity_np(&at, sizeof(set), &set);
		int rc = pthread_create(&t->thr, &at, slot_main, t);
		pthread_attr_destroy(&at);
		if (rc)
			return -rc;
		l->nsthr++;
		char name[16];
		snprintf(name, sizeof(name), "vmm-slot%d", k % 1000); /* DOM_SLOTS_MAX: 3 digits */
		pthread_setname_np(t->thr, name);
		while (sem_wait(&l->started) < 0 && errno == EINTR)
			;
		if (t->start_rc)
			return t->start_rc;
	}
	return 0;
}
