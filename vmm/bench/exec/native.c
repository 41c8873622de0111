/*
 * The physical upper bound: the lockbench loop (lock; critical section of
 * cs cycles; unlock; work cycles), same lock algorithms, as plain host
 * threads pinned round robin on M CPUs, no VM at all. With M threads it is
 * the most lock throughput the machine can give; with more threads it is
 * what lock-holder preemption does without any virtualization. The PV
 * locks map wait/kick to futex wait/wake, as a host kernel's would.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

#define NATIVE_MAX_THREADS 256

struct mcs_node {
	_Alignas(64) struct mcs_node *_Atomic next;
	atomic_uint locked;
	atomic_uint sleeping;
};

struct native {
	const char *lock;
	bool pv;
	uint32_t cs, work, threshold;
	uint64_t duration_ns;
	unsigned nthreads;
	_Alignas(64) atomic_uint next;  /* ticket: next ticket to hand out */
	_Alignas(64) atomic_uint owner; /* ticket: now serving; the futex word */
	atomic_uint sleepers;
	_Alignas(64) atomic_uint tas;
	_Alignas(64) struct mcs_node *_Atomic tail;
	_Alignas(64) atomic_uint arrived;
	_Alignas(64) uint64_t counter; /* bumped non-atomically under the lock */
	atomic_uint_fast64_t total;
	_Atomic uint64_t longest_ns;
	struct mcs_node nodes[NATIVE_MAX_THREADS];
};

struct worker {
	struct native *n;
	unsigned idx;
	int cpu;
};

static void futex_wait(atomic_uint *addr, unsigned val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void busy(uint32_t cycles)
{
	uint64_t t0 = __rdtsc();
	while (__rdtsc() - t0 < cycles)
		;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Ticket lock; the PV variant sleeps on "now serving" after threshold
 * spins. Waking every sleeper (they re-check) keeps it obviously correct;
 * the sleeper count read after the release store, and the sleeper's own
 * re-read inside FUTEX_WAIT, make a lost wake-up impossible.
 */
static void ticket_lock(struct native *n)
{
	unsigned t = atomic_fetch_add(&n->next, 1), spins = 0;
	while (atomic_load_explicit(&n->owner, memory_order_acquire) != t) {
		if (n->pv && ++spins >= n->threshold) {
			atomic_fetch_add(&n->sleepers, 1);
			unsigned v;
			while ((v = atomic_load(&n->owner)) != t)
				futex_wait(&n->owner, v);
			atomic_fetch_sub(&n->sleepers, 1);
			return;
		}
		_mm_pause();
	}
}

static void ticket_unlock(struct native *n)
{
	atomic_fetch_add(&n->owner, 1);
	if (n->pv && atomic_load(&n->sleepers))
		futex_wake(&n->owner, INT_MAX);
}

static void tas_lock(struct native *n)
{
	while (atomic_exchange_explicit(&n->tas, 1, memory_order_acquire))
		while (atomic_load_explicit(&n->tas, memory_order_relaxed))
			_mm_pause();
}

static void tas_unlock(struct native *n)
{
	atomic_store_explicit(&n->tas, 0, memory_order_release);
}

static void mcs_lock(struct native *n, struct mcs_node *me)
{
	atomic_store(&me->next, NULL);
	atomic_store(&me->locked, 0);
	struct mcs_node *prev = atomic_exchange(&n->tail, me);
	if (!prev)
		return;
	atomic_store(&prev->next, me);
	unsigned spins = 0;
	while (!atomic_load_explicit(&me->locked, memory_order_acquire)) {
		if (n->pv && ++spins >= n->threshold) {
			atomic_store(&me->sleeping, 1);
			while (!atomic_load(&me->locked))
				futex_wait(&me->locked, 0);
			atomic_store(&me->sleeping, 0);
			return;
		}
		_mm_pause();
	}
}

static void mcs_unlock(struct native *n, struct mcs_node *me)
{
	struct mcs_node *next = atomic_load(&me->next);
	if (!next) {
		struct mcs_node *expect = me;
		if (atomic_compare_exchange_strong(&n->tail, &expect, NULL))
			return;
		while (!(next = atomic_load(&me->next)))
			_mm_pause();
	}
	atomic_store(&next->locked, 1);
	if (n->pv && atomic_load(&next->sleeping))
		futex_wake(&next->locked, 1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct native *n = w->n;
	struct mcs_node *me = &n->nodes[w->idx];
	bool ticket = strstr(n->lock, "ticket") != NULL, mcs = strstr(n->lock, "mcs") != NULL;
	uint64_t ops = 0;

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	atomic_fetch_add(&n->arrived, 1);
	while (atomic_load(&n->arrived) < n->nthreads)
		sched_yield(); /* yield, not spin: threads may outnumber CPUs */
	uint64_t start = now_ns(), deadline = start + n->duration_ns, end;
	while ((end = now_ns()) < deadline) {
		if (ticket)
			ticket_lock(n);
		else if (mcs)
			mcs_lock(n, me);
		else
			tas_lock(n);
		n->counter = n->counter + 1;
		busy(n->cs);
		if (ticket)
			ticket_unlock(n);
		else if (mcs)
			mcs_unlock(n, me);
		else
			tas_unlock(n);
		ops++;
		busy(n->work);
	}
	atomic_fetch_add(&n->total, ops);
	uint64_t len = end - start, cur = atomic_load(&n->longest_ns);
	while (len > cur && !atomic_compare_exchange_weak(&n->longest_ns, &cur, len))
		;
	return NULL;
}

/* The first pcpus CPUs this process may use, as the co-scheduler's slots are. */
static int pick_cpus(unsigned pcpus, int *cpus)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	unsigned k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < pcpus; c++)
		if (CPU_ISSET(c, &set))
			cpus[k++] = c;
	return k == pcpus ? 0 : -EINVAL;
}

int bench_native_run(const char *lock, unsigned threads, unsigned pcpus, uint32_t duration_ms,
		     uint32_t cs_cycles, uint32_t work_cycles, uint32_t spin_threshold,
		     double *ops_per_s)
{
	if (!bench_native_has_lock(lock) || threads == 0 || threads > NATIVE_MAX_THREADS ||
	    pcpus == 0 || pcpus > CPU_SETSIZE)
		return -EINVAL;
	int *cpus = calloc(pcpus, sizeof(*cpus));
	struct native *n = aligned_alloc(64, (sizeof(*n) + 63) / 64 * 64);
	struct worker *w = calloc(threads, sizeof(*w));
	pthread_t *tid = calloc(threads, sizeof(*tid));
	int r = -ENOMEM;
	if (!cpus || !n || !w || !tid)
		goto out;
	if ((r = pick_cpus(pcpus, cpus)))
		goto out;
	memset(n, 0, sizeof(*n));
	n->lock = lock;
	n->pv = !strncmp(lock, "pv", 2);
	n->cs = cs_cycles;
	n->work = work_cycles;
	n->threshold = spin_threshold ? spin_threshold : 1;
	n->duration_ns = (uint64_t)duration_ms * 1000000ull;
	n->nthreads = threads;
	unsigned started = 0;
	for (; started < threads; started++) {
		w[started] = (struct worker){ n, started, cpus[started % pcpus] };
		if (pthread_create(&tid[started], NULL, worker_main, &w[started])) {
			r = -EAGAIN;
			break;
		}
	}
	if (started < threads)
		n->nthreads = started; /* let the ones that started finish */
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (started == threads) {
		uint64_t total = atomic_load(&n->total), longest = atomic_load(&n->longest_ns);
		/* The native run proves its lock as the guest does. */
		r = n->counter == total && longest ? 0 : -EPROTO;
		*ops_per_s = longest ? (double)total * 1e9 / (double)longest : 0;
	}
out:
	free(cpus);
	free(n);
	free(w);
	free(tid);
	return r;
}
