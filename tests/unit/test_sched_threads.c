/*
 * The co-scheduler's thread layer with real threads and fake vCPUs: a fake
 * vCPU "runs its guest" by spinning until its force-exit flag is set, and
 * accumulates progress only while it holds a slot. Time moves on through the
 * same three calls the VMM's event loop makes (see struct ticker).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "sched/policy.h"
#include "sched/sched.h"

static atomic_long n_pass, n_fail;

#define CHECK(e)                                                                   \
	do {                                                                       \
		if (e) {                                                           \
			atomic_fetch_add(&n_pass, 1);                              \
		} else {                                                           \
			atomic_fetch_add(&n_fail, 1);                              \
			printf("%s:%d: CHECK(%s) failed%s\n", __FILE__, __LINE__,  \
			       #e, cur_case);                                      \
		}                                                                  \
	} while (0)

static char cur_case[96];

#define MAXV 8

struct fv {
	int id;
	struct sched *s;
	atomic_int force;
	atomic_long progress;
	atomic_int result;
	pthread_t th;
};

static struct fv fvs[MAXV];
static atomic_int running_now, max_running, stop_flag;
static atomic_int deadlock_calls;

static void fv_force_exit(void *opaque)
{
	atomic_store(&((struct fv *)opaque)->force, 1);
}

static const struct sched_vcpu_ops fv_ops = { .force_exit = fv_force_exit };

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static void on_deadlock(void *ctx)
{
	(void)ctx;
	atomic_fetch_add(&deadlock_calls, 1);
}

static struct sched *mk_params(const struct sched_params *p)
{
	const char *why = NULL;
	struct sched *s = sched_create(p, &why);
	CHECK(s != NULL);
	if (!s) {
		printf("sched_create: %s\n", why);
		exit(1);
	}
	for (int v = 0; v < p->nvcpus; v++) {
		memset(&fvs[v], 0, sizeof(fvs[v]));
		fvs[v].id = v;
		fvs[v].s = s;
		sched_set_vcpu(s, v, &fv_ops, &fvs[v]);
	}
	sched_set_deadlock_cb(s, on_deadlock, NULL);
	atomic_store(&running_now, 0);
	atomic_store(&max_running, 0);
	atomic_store(&stop_flag, 0);
	atomic_store(&deadlock_calls, 0);
	return s;
}

static struct sched *mk(const char *pol, int m, int n, int nvms, const int *vm_of,
			uint64_t slice_ns)
{
	struct sched_params p = {
		.nvcpus = n, .npcpus = m, .policy = pol, .slice_ns = slice_ns,
		.spin_sources = SCHED_SPIN_ALL, .nvms = nvms, .vm_of = vm_of, .seed = 7,
	};
	return mk_params(&p);
}

static void in_guest(void)
{
	int r = atomic_fetch_add(&running_now, 1) + 1, m = atomic_load(&max_running);
	while (r > m && !atomic_compare_exchange_weak(&max_running, &m, r))
		;
}

static void out_of_guest(void)
{
	atomic_fetch_sub(&running_now, 1);
}

/* ---- the event loop's side: deadlines, the timer fd, ticks ---- */

/*
 * vmm/core/run.c's loop with poll in place of an io_uring read: sleep until
 * the scheduler's timerfd is due, read it, sched_tick.
 */
struct ticker {
	struct sched *s;
	int stop_fd; /* an eventfd: written once to end the thread */
	pthread_t th;
	atomic_long ticks;
};

static struct ticker tk;

static void drain(int fd)
{
	uint64_t cnt;
	if (read(fd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: nothing was pending */
	}
}

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	for (;;) {
		struct pollfd p[2] = { { sched_timer_fd(t->s), POLLIN, 0 }, { t->stop_fd, POLLIN, 0 } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents) {
			drain(p[0].fd);
			sched_tick(t->s, sched_now_ns());
			atomic_fetch_add(&t->ticks, 1);
		}
	}
	return NULL;
}

static void ticker_start(struct sched *s)
{
	tk.s = s;
	atomic_store(&tk.ticks, 0);
	tk.stop_fd = eventfd(0, EFD_CLOEXEC);
	CHECK(tk.stop_fd >= 0);
	CHECK(pthread_create(&tk.th, NULL, ticker_main, &tk) == 0);
}

/* After sched_stop, as run.c stops ticking once the run stops. */
static void ticker_stop(void)
{
	uint64_t one = 1;
	CHECK(write(tk.stop_fd, &one, sizeof(one)) == (ssize_t)sizeof(one));
	pthread_join(tk.th, NULL);
	close(tk.stop_fd);
}

static bool fd_readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	return poll(&p, 1, 0) == 1;
}

/* Set: armed at a deadline, or already due (the real clock passed it). */
static bool timer_set(struct sched *s)
{
	struct itimerspec its;
	CHECK(timerfd_gettime(sched_timer_fd(s), &its) == 0);
	return its.it_value.tv_sec || its.it_value.tv_nsec || fd_readable(sched_timer_fd(s));
}

/* Waits for the timer like the event loop (bounded, so a bug fails, not hangs). */
static bool timer_fires(struct sched *s, int ms)
{
	struct pollfd p = { sched_timer_fd(s), POLLIN, 0 };
	bool ok = poll(&p, 1, ms) == 1;
	drain(p.fd);
	return ok;
}

static void *timed_waiter_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_enter(f->s, f->id);
	if (r == 0)
		r = sched_vcpu_wait(f->s, f->id, 1000000);
	atomic_store(&f->result, r);
	return NULL;
}

static void *long_waiter_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_enter(f->s, f->id);
	if (r == 0)
		r = sched_vcpu_wait(f->s, f->id, 60ull * 1000000000ull);
	atomic_store(&f->result, r);
	return NULL;
}

/* sched_tick itself, with the clock in the test's hands. */
static void test_tick(void)
{
	snprintf(cur_case, sizeof(cur_case), " in tick");
	/* A slice end: a tick before the deadline changes nothing, one at it
	 * forces the running vCPU out because another one is queued. Spin hints
	 * off: their polling would be the first deadline. */
	struct sched_params p = { .nvcpus = 2, .npcpus = 1, .policy = "none",
				  .spin_sources = SCHED_SPIN_YIELD };
	struct sched *s = mk_params(&p);
	CHECK(sched_next_deadline(s) == UINT64_MAX && !timer_set(s));
	uint64_t t0 = sched_now_ns();
	sched_start(s);
	CHECK(sched_next_deadline(s) != UINT64_MAX && timer_set(s));
	/* the slice starts when the granted thread is back (sched_core_resumed) */
	CHECK(sched_vcpu_enter(s, 0) == 0);
	uint64_t d = sched_next_deadline(s);
	CHECK(d >= t0 + SCHED_DEFAULT_SLICE_NS && d != UINT64_MAX);
	sched_tick(s, d - 1);
	CHECK(atomic_load(&fvs[0].force) == 0 && !sched_vcpu_after_exit(s, 0));
	CHECK(sched_next_deadline(s) == d && timer_set(s));
	sched_tick(s, d);
	CHECK(atomic_load(&fvs[0].force) == 1 && sched_vcpu_after_exit(s, 0));
	/* no second preemption is due while vCPU 0 is on its way out: disarmed */
	CHECK(sched_next_deadline(s) == UINT64_MAX && !timer_set(s));
	sched_destroy(s);

	/* Alone on its slot, a vCPU is never preempted: no deadline at all. */
	s = mk("none", 1, 1, 1, NULL, 0);
	sched_start(s);
	CHECK(sched_vcpu_enter(s, 0) == 0);
	CHECK(sched_next_deadline(s) == UINT64_MAX);
	sched_tick(s, sched_now_ns() + 10 * SCHED_DEFAULT_SLICE_NS);
	CHECK(atomic_load(&fvs[0].force) == 0 && !sched_vcpu_after_exit(s, 0));
	sched_destroy(s);

	/* A wait's timeout is a deadline: the timer fires at it, and only a
	 * tick at that deadline ends the wait. */
	s = mk("pv", 1, 1, 1, NULL, 0);
	sched_start(s);
	CHECK(sched_next_deadline(s) == UINT64_MAX);
	atomic_store(&fvs[0].result, 1);
	pthread_create(&fvs[0].th, NULL, timed_waiter_main, &fvs[0]);
	CHECK(timer_fires(s, 10000));
	d = sched_next_deadline(s);
	CHECK(d != UINT64_MAX);
	sched_tick(s, d - 1);
	sleep_ms(5);
	CHECK(atomic_load(&fvs[0].result) == 1); /* still waiting */
	sched_tick(s, d);
	pthread_join(fvs[0].th, NULL);
	CHECK(atomic_load(&fvs[0].result) == -ETIMEDOUT);
	struct sched_vcpu_stats st;
	sched_stats(s, 0, &st);
	CHECK(st.waits == 1);
	sched_vcpu_done(s, 0);
	sched_destroy(s);

	/*
	 * A deadline that goes away takes the timer with it: a wait kicked
	 * before its timeout leaves nothing to wake the event loop for (it
	 * used to wake at the old timeout, for nothing).
	 */
	s = mk("pv", 1, 1, 1, NULL, 0);
	sched_start(s);
	atomic_store(&fvs[0].result, 1);
	pthread_create(&fvs[0].th, NULL, long_waiter_main, &fvs[0]);
	for (int i = 0; i < 10000 && sched_next_deadline(s) == UINT64_MAX; i++)
		sleep_ms(1);
	CHECK(sched_next_deadline(s) != UINT64_MAX && timer_set(s));
	CHECK(sched_vcpu_kick(s, -1, 0) == 0);
	pthread_join(fvs[0].th, NULL);
	CHECK(atomic_load(&fvs[0].result) == 0);
	CHECK(sched_next_deadline(s) == UINT64_MAX && !timer_set(s));
	struct sched_loop_stats ls;
	sched_get_loop_stats(s, &ls);
	CHECK(ls.ticks == 0 && ls.timer_sets >= 2);
	sched_vcpu_done(s, 0);
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- progress: M slots, N spinning fake vCPUs, ticked as the VMM ticks ---- */

static void *progress_main(void *arg)
{
	struct fv *f = arg;
	unsigned seed = (unsigned)f->id * 7919u + 1;
	int r = sched_vcpu_enter(f->s, f->id);
	while (r == 0) {
		in_guest();
		long n = 0;
		while (!atomic_load_explicit(&f->force, memory_order_acquire) &&
		       !atomic_load(&stop_flag) && ++n % 4096)
			atomic_fetch_add_explicit(&f->progress, 1, memory_order_relaxed);
		out_of_guest();
		atomic_store(&f->force, 0);
		if (n % 4096 == 0 && rand_r(&seed) % 8 == 0) {
			/* a yield hypercall now and then */
			r = sched_vcpu_spin(f->s, f->id, -1, SCHED_SPIN_YIELD);
			continue;
		}
		if (sched_vcpu_after_exit(f->s, f->id))
			r = sched_vcpu_yield_slot(f->s, f->id);
		else if (atomic_load(&stop_flag))
			break;
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, f->id);
	return NULL;
}

/* Until every vCPU's progress passed before[v], or ms ran out. */
static void wait_all_progressed(int n, const long *before, int ms)
{
	for (int t = 0; t < ms; t++) {
		int v = 0;
		while (v < n && atomic_load(&fvs[v].progress) > before[v])
			v++;
		if (v == n)
			return;
		sleep_ms(1);
	}
}

static void test_progress(const char *pol, int m, int n, int nvms)
{
	snprintf(cur_case, sizeof(cur_case), " in progress(%s m=%d n=%d vms=%d)", pol, m, n, nvms);
	int vm_of[MAXV];
	for (int v = 0; v < n; v++)
		vm_of[v] = v % nvms;
	struct sched *s = mk(pol, m, n, nvms, vm_of, 1000000);
	sched_start(s);
	ticker_start(s);
	for (int v = 0; v < n; v++)
		pthread_create(&fvs[v].th, NULL, progress_main, &fvs[v]);
	/* 150 ms at least, and until every vCPU has run (a loaded machine, or
	 * TSan, can take longer to get round: bounded, so a starved vCPU fails) */
	long none[MAXV] = { 0 };
	sleep_ms(150);
	wait_all_progressed(n, none, 5000);
	atomic_store(&stop_flag, 1);
	sched_stop(s);
	ticker_stop();
	CHECK(atomic_load(&tk.ticks) > 0);
	for (int v = 0; v < n; v++)
		pthread_join(fvs[v].th, NULL);
	CHECK(atomic_load(&max_running) <= m);
	CHECK(atomic_load(&max_running) >= 1);
	uint64_t switches = 0;
	for (int v = 0; v < n; v++) {
		struct sched_vcpu_stats st;
		sched_stats(s, v, &st);
		switches += st.preemptions + st.yields_given;
		CHECK(atomic_load(&fvs[v].progress) > 0);
		CHECK(st.ns_running > 0);
		int r = atomic_load(&fvs[v].result);
		CHECK(r == 0 || r == -ECANCELED);
	}
	CHECK(switches > 0); /* the slots really were shared */
	CHECK(atomic_load(&deadlock_calls) == 0);
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- wait/kick: a token passed round a ring, thousands of times ---- */

static atomic_int turn;
static int ring_n, ring_rounds;
static bool ring_timeouts;

static void *ring_main(void *arg)
{
	struct fv *f = arg;
	int v = f->id, r = sched_vcpu_enter(f->s, v);
	for (int i = 0; r == 0 && i < ring_rounds; i++) {
		/* The hypercall layer's "value still equals expected" check,
		 * then the wait: a kick in between must not be lost. */
		while (r == 0 && atomic_load(&turn) != v) {
			r = sched_vcpu_wait(f->s, v, ring_timeouts && i % 3 == 0 ? 200000 : 0);
			if (r == -ETIMEDOUT)
				r = 0;
		}
		if (r)
			break;
		atomic_store(&turn, (v + 1) % ring_n);
		r = sched_vcpu_kick(f->s, v, (v + 1) % ring_n);
		if (r == 0 && sched_vcpu_after_exit(f->s, v))
			r = sched_vcpu_yield_slot(f->s, v);
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, v);
	return NULL;
}

static void test_ring(const char *pol, int m, int n, int rounds, bool timeouts)
{
	snprintf(cur_case, sizeof(cur_case), " in ring(%s m=%d n=%d timeouts=%d)", pol, m, n, timeouts);
	struct sched *s = mk(pol, m, n, 1, NULL, 100000);
	ring_n = n;
	ring_rounds = rounds;
	ring_timeouts = timeouts;
	atomic_store(&turn, 0);
	sched_start(s);
	ticker_start(s);
	for (int v = 0; v < n; v++)
		pthread_create(&fvs[v].th, NULL, ring_main, &fvs[v]);
	for (int v = 0; v < n; v++)
		pthread_join(fvs[v].th, NULL);
	sched_stop(s);
	ticker_stop();
	long kicks = 0, waits = 0, handoffs = 0;
	for (int v = 0; v < n; v++) {
		CHECK(atomic_load(&fvs[v].result) == 0);
		struct sched_vcpu_stats st;
		sched_stats(s, v, &st);
		kicks += (long)st.kicks_received;
		waits += (long)st.waits;
		handoffs += (long)st.yields_received;
		if (st.kick_latency.count)
			CHECK(sched_hist_percentile(&st.kick_latency, 99) < 1000000000ull);
	}
	if (!strcmp(pol, "pv"))
		CHECK(handoffs > 0);
	CHECK(kicks == (long)n * rounds);
	CHECK(waits > 0);
	CHECK(atomic_load(&deadlock_calls) == 0 && !sched_deadlocked(s));
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- deadlock: everyone waits forever ---- */

static void *waiter_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_enter(f->s, f->id);
	if (r == 0)
		r = sched_vcpu_wait(f->s, f->id, SCHED_NO_TIMEOUT);
	atomic_store(&f->result, r);
	return NULL;
}

static void test_deadlock(void)
{
	snprintf(cur_case, sizeof(cur_case), " in deadlock");
	struct sched *s = mk("pv", 2, 3, 1, NULL, 0);
	sched_start(s);
	ticker_start(s);
	for (int v = 0; v < 3; v++)
		pthread_create(&fvs[v].th, NULL, waiter_main, &fvs[v]);
	for (int v = 0; v < 3; v++) {
		pthread_join(fvs[v].th, NULL);
		CHECK(atomic_load(&fvs[v].result) == -EDEADLK);
	}
	ticker_stop();
	CHECK(atomic_load(&deadlock_calls) == 1 && sched_deadlocked(s));
	CHECK(sched_vcpu_enter(s, 0) == -EDEADLK);
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- small things on one thread ---- */

static void test_single_thread(void)
{
	snprintf(cur_case, sizeof(cur_case), " in single");
	struct sched *s = mk("none", 1, 2, 1, NULL, 0);
	CHECK(sched_next_deadline(s) == UINT64_MAX);
	uint64_t t0 = sched_now_ns();
	sched_start(s);
	/* A deadline now: the event loop's timer is set to it. */
	CHECK(timer_set(s));
	uint64_t d = sched_next_deadline(s);
	/* a deadline after the start (not "in the future": under TSan on a
	 * loaded machine it may already have passed) */
	CHECK(d != UINT64_MAX && d > t0);
	CHECK(sched_vcpu_enter(s, 0) == 0);
	uint64_t t_enter = sched_now_ns();
	/* kick before wait returns at once, from the VMM or from itself */
	CHECK(sched_vcpu_kick(s, -1, 0) == 0);
	CHECK(sched_vcpu_wait(s, 0, SCHED_NO_TIMEOUT) == 0);
	CHECK(sched_vcpu_kick(s, 0, 0) == 0);
	CHECK(sched_vcpu_wait(s, 0, SCHED_NO_TIMEOUT) == 0);
	CHECK(!sched_vcpu_after_exit(s, 0));
	/* past the slice end: the slice started when the thread entered */
	sched_tick(s, t_enter + SCHED_DEFAULT_SLICE_NS);
	CHECK(atomic_load(&fvs[0].force) == 1 && sched_vcpu_after_exit(s, 0));
	sched_stop(s);
	CHECK(sched_vcpu_yield_slot(s, 0) == -ECANCELED);
	CHECK(sched_vcpu_enter(s, 1) == -ECANCELED);
	sched_destroy(s);

	const char *why = NULL;
	struct sched_params bad = { .nvcpus = 1, .npcpus = 1, .policy = "fifo" };
	CHECK(sched_create(&bad, &why) == NULL && why != NULL);
	cur_case[0] = 0;
}

/* ---- pinning: a granted vCPU runs on its slot's host CPU ---- */

static void test_pinning(void)
{
	snprintf(cur_case, sizeof(cur_case), " in pinning");
	cpu_set_t set;
	CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	int cpu = -1;
	for (int i = CPU_SETSIZE - 1; i >= 0 && cpu < 0; i--)
		if (CPU_ISSET(i, &set))
			cpu = i;
	struct sched_params p = { .nvcpus = 1, .npcpus = 1, .host_cpu = &cpu };
	const char *why;
	struct sched *s = sched_create(&p, &why);
	sched_start(s);
	CHECK(sched_vcpu_enter(s, 0) == 0);
	CHECK(sched_getcpu() == cpu);
	sched_vcpu_done(s, 0);
	sched_destroy(s);
	sched_setaffinity(0, sizeof(set), &set);
	cur_case[0] = 0;
}

/* ---- the hand-off: futex words woken after the unlock ---- */

static atomic_int on_cpu[CPU_SETSIZE];

/* Two yielders on one slot pass it back and forth until stopped. */
static void *pingpong_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_enter(f->s, f->id);
	while (r == 0) {
		in_guest();
		atomic_fetch_add(&f->progress, 1);
		out_of_guest();
		r = sched_vcpu_yield_slot(f->s, f->id);
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, f->id);
	return NULL;
}

/*
 * sched_stop lands anywhere in a hand-off: between the grant and its wake
 * (issued after the unlock), between a waiter's last look at its word and
 * its FUTEX_WAIT, or in the wait itself. Every thread must come back with
 * -ECANCELED; a lost wake-up hangs it, and the join's deadline catches that.
 */
static void test_handoff_stop(int rounds)
{
	snprintf(cur_case, sizeof(cur_case), " in handoff_stop");
	for (int round = 0; round < rounds; round++) {
		struct sched *s = mk("none", 1, 2, 1, NULL, 3600ull * 1000000000ull);
		sched_start(s);
		for (int v = 0; v < 2; v++)
			pthread_create(&fvs[v].th, NULL, pingpong_main, &fvs[v]);
		/* Spread the stop over the run: from before the first enter to
		 * well into the ping-pong. */
		if (round % 4)
			usleep((useconds_t)(round % 97) * 10);
		sched_stop(s);
		bool hung = false;
		for (int v = 0; v < 2; v++) {
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_sec += 20;
			hung |= pthread_timedjoin_np(fvs[v].th, NULL, &dl) != 0;
		}
		CHECK(!hung);
		if (hung) {
			printf("handoff_stop: a thread never came back from the stop (round %d)\n", round);
			exit(1);
		}
		for (int v = 0; v < 2; v++)
			CHECK(atomic_load(&fvs[v].result) == -ECANCELED);
		CHECK(atomic_load(&max_running) <= 1);
		sched_destroy(s);
	}
	cur_case[0] = 0;
}

/* Three vCPUs rotate over two slots pinned to two CPUs. */
static void *rotate_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_enter(f->s, f->id);
	while (r == 0 && !atomic_load(&stop_flag)) {
		/* Pinned by its grant: it stays on this CPU while it holds
		 * the slot, so the two holders are never on one CPU. The
		 * count covers the whole hold: it drops before the yield
		 * that releases the slot, and rises after the grant. */
		int cpu = sched_getcpu();
		CHECK(cpu >= 0 && cpu < CPU_SETSIZE);
		if (cpu < 0 || cpu >= CPU_SETSIZE)
			break;
		CHECK(atomic_fetch_add(&on_cpu[cpu], 1) == 0);
		uint64_t until = sched_now_ns() + 20000;
		bool moved = false;
		while (sched_now_ns() < until)
			moved |= sched_getcpu() != cpu;
		CHECK(!moved);
		atomic_fetch_add(&f->progress, 1);
		atomic_fetch_sub(&on_cpu[cpu], 1);
		r = sched_vcpu_yield_slot(f->s, f->id);
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, f->id);
	return NULL;
}

/*
 * The granter moves the granted thread after the unlock, and the thread
 * may see its grant before that: whichever comes first, it returns on its
 * slot's CPU (the woken thread moves itself if need be).
 */
static void test_handoff_pinning(void)
{
	snprintf(cur_case, sizeof(cur_case), " in handoff_pinning");
	cpu_set_t set;
	CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	int cpus[2], n = 0;
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	if (n < 2) {
		printf("handoff_pinning: skipped, fewer than 2 CPUs\n");
		cur_case[0] = 0;
		return;
	}
	struct sched_params p = { .nvcpus = 3, .npcpus = 2, .host_cpu = cpus, .policy = "none",
				  .slice_ns = 3600ull * 1000000000ull };
	struct sched *s = mk_params(&p);
	sched_start(s);
	for (int v = 0; v < 3; v++)
		pthread_create(&fvs[v].th, NULL, rotate_main, &fvs[v]);
	sleep_ms(300);
	atomic_store(&stop_flag, 1);
	sched_stop(s);
	long total = 0;
	for (int v = 0; v < 3; v++) {
		pthread_join(fvs[v].th, NULL);
		total += atomic_load(&fvs[v].progress);
		CHECK(atomic_load(&fvs[v].result) == -ECANCELED || atomic_load(&fvs[v].result) == 0);
	}
	CHECK(total > 3); /* the slots really went round */
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- parking: vCPUs that halt inside "KVM_RUN" (the kernel irqchip case) ---- */

static atomic_int halted[MAXV], blocked_now[MAXV];

static bool fv_blocked(void *opaque)
{
	return atomic_load(&blocked_now[((struct fv *)opaque)->id]);
}

static const struct sched_vcpu_ops fv_halt_ops = { .force_exit = fv_force_exit, .blocked_in_kernel = fv_blocked };

static void *halter_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_enter(f->s, f->id);
	while (r == 0) {
		/* one "KVM_RUN": blocked while the guest is halted, else running */
		if (atomic_load(&halted[f->id])) {
			atomic_store(&blocked_now[f->id], 1);
			while (atomic_load(&halted[f->id]) && !atomic_load(&f->force) && !atomic_load(&stop_flag))
				sleep_ms(0);
			atomic_store(&blocked_now[f->id], 0);
		}
		long n = 0;
		while (!atomic_load(&halted[f->id]) && !atomic_load_explicit(&f->force, memory_order_acquire) &&
		       !atomic_load(&stop_flag) && ++n % 4096)
			atomic_fetch_add_explicit(&f->progress, 1, memory_order_relaxed);
		atomic_store(&f->force, 0);
		if (sched_vcpu_after_exit(f->s, f->id))
			r = sched_vcpu_yield_slot(f->s, f->id);
		else if (atomic_load(&stop_flag))
			break;
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, f->id);
	return NULL;
}

static void test_parking(void)
{
	snprintf(cur_case, sizeof(cur_case), " in parking");
	const int n = 4;
	struct sched_params p = { .nvcpus = n, .npcpus = 1, .policy = "none", .slice_ns = 2000000,
				  .halt_check_ns = 500000 };
	const char *why = NULL;
	struct sched *s = sched_create(&p, &why);
	CHECK(s != NULL);
	if (!s)
		return;
	atomic_store(&stop_flag, 0);
	for (int v = 0; v < n; v++) {
		memset(&fvs[v], 0, sizeof(fvs[v]));
		fvs[v].id = v;
		fvs[v].s = s;
		atomic_store(&halted[v], v > 0); /* the APs wait for their start-up IPI */
		atomic_store(&blocked_now[v], 0);
		sched_set_vcpu(s, v, &fv_halt_ops, &fvs[v]);
	}
	sched_start(s);
	ticker_start(s);
	for (int v = 0; v < n; v++)
		pthread_create(&fvs[v].th, NULL, halter_main, &fvs[v]);
	/* Until its thread runs, an AP is not blocked yet and keeps the slot it
	 * was granted (milliseconds under TSan): measure from the moment every
	 * AP has been parked once. */
	struct sched_vcpu_stats st[MAXV], st0[MAXV];
	bool all_parked = false;
	for (int tries = 0; tries < 5000 && !all_parked; tries++) {
		all_parked = true;
		for (int v = 1; v < n; v++) {
			sched_stats(s, v, &st0[v]);
			all_parked = all_parked && st0[v].kernel_halts >= 1;
		}
		if (!all_parked)
			sleep_ms(1);
	}
	CHECK(all_parked);
	for (int v = 0; v < n; v++)
		sched_stats(s, v, &st0[v]);
	sleep_ms(120);
	uint64_t total = 0;
	for (int v = 0; v < n; v++) {
		sched_stats(s, v, &st[v]);
		total += st[v].ns_running - st0[v].ns_running;
	}
	CHECK(total > 0 && st[0].ns_running - st0[0].ns_running > total * 9 / 10);
	/* vCPU 1 wakes "in the kernel": it must get turns again */
	long before = atomic_load(&fvs[1].progress);
	atomic_store(&halted[1], 0);
	sleep_ms(120);
	CHECK(atomic_load(&fvs[1].progress) > before);
	CHECK(atomic_load(&fvs[0].progress) > 0);
	/* stop reaches the threads still halted in "KVM_RUN" */
	atomic_store(&stop_flag, 1);
	sched_stop(s);
	ticker_stop();
	for (int v = 0; v < n; v++) {
		pthread_join(fvs[v].th, NULL);
		int r = atomic_load(&fvs[v].result);
		CHECK(r == 0 || r == -ECANCELED);
	}
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- seats: slots toggled from another thread while vCPUs run ---- */

/*
 * seats counts the slots online or going off, as the toggler and the slot
 * callback see them: +1 before a slot is put online, -1 at its SLOT_OFF.
 * A thread in "guest mode" holds a slot that cannot go offline before it
 * leaves, so in_guest_now <= seats must hold at every moment; both are
 * changed under seat_mu to check it exactly.
 */
static pthread_mutex_t seat_mu = PTHREAD_MUTEX_INITIALIZER;
static int seats, in_guest_now, max_in_guest; /* under seat_mu */
static bool off_pending[MAXV];                 /* under seat_mu */
static atomic_int seat_demand;

static void seat_cb(void *ctx, enum sched_action_kind kind, int val)
{
	(void)ctx;
	if (kind == SCHED_ACT_SLOT_DEMAND) {
		atomic_store(&seat_demand, val);
		return;
	}
	CHECK(kind == SCHED_ACT_SLOT_OFF);
	pthread_mutex_lock(&seat_mu);
	/* Ours to take offline, or, once the vCPUs are ending (stop_flag comes
	 * just before sched_stop), an idle seat the scheduler gives back. */
	CHECK(off_pending[val] || atomic_load(&stop_flag));
	off_pending[val] = false;
	seats--;
	CHECK(in_guest_now <= seats);
	pthread_mutex_unlock(&seat_mu);
}

static void seat_enter_guest(int delta)
{
	pthread_mutex_lock(&seat_mu);
	in_guest_now += delta;
	CHECK(in_guest_now <= seats);
	if (in_guest_now > max_in_guest)
		max_in_guest = in_guest_now;
	pthread_mutex_unlock(&seat_mu);
}

static void *seat_main(void *arg)
{
	struct fv *f = arg;
	unsigned seed = (unsigned)f->id * 7919u + 3;
	int r = sched_vcpu_enter(f->s, f->id);
	while (r == 0) {
		seat_enter_guest(1);
		long n = 0;
		while (!atomic_load_explicit(&f->force, memory_order_acquire) &&
		       !atomic_load(&stop_flag) && ++n % 4096)
			atomic_fetch_add_explicit(&f->progress, 1, memory_order_relaxed);
		seat_enter_guest(-1);
		atomic_store(&f->force, 0);
		if (n % 4096 == 0 && rand_r(&seed) % 8 == 0) {
			r = sched_vcpu_spin(f->s, f->id, -1, SCHED_SPIN_YIELD);
			continue;
		}
		if (sched_vcpu_after_exit(f->s, f->id))
			r = sched_vcpu_yield_slot(f->s, f->id);
		else if (atomic_load(&stop_flag))
			break;
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, f->id);
	return NULL;
}

/* The domain's side: put a slot online only once its last offline is done. */
static bool seat_online(struct sched *s, int slot, int host_cpu)
{
	pthread_mutex_lock(&seat_mu);
	bool ok = !off_pending[slot];
	if (ok)
		seats++;
	pthread_mutex_unlock(&seat_mu);
	if (ok)
		sched_slot_online(s, slot, host_cpu);
	return ok;
}

static void seat_offline(struct sched *s, int slot)
{
	pthread_mutex_lock(&seat_mu);
	off_pending[slot] = true;
	pthread_mutex_unlock(&seat_mu);
	/* on since its last offline (seat_cb checks nothing else took it off):
	 * its SLOT_OFF is to come */
	CHECK(sched_slot_offline(s, slot));
}

static int seats_now(void)
{
	pthread_mutex_lock(&seat_mu);
	int n = seats;
	pthread_mutex_unlock(&seat_mu);
	return n;
}

static long total_progress(int n)
{
	long t = 0;
	for (int v = 0; v < n; v++)
		t += atomic_load(&fvs[v].progress);
	return t;
}

static void test_seats(const char *pol, int m, int n)
{
	snprintf(cur_case, sizeof(cur_case), " in seats(%s m=%d n=%d)", pol, m, n);
	struct sched_params p = {
		.nvcpus = n, .npcpus = m, .policy = pol, .slice_ns = 1000000,
		.spin_sources = SCHED_SPIN_ALL, .seed = 7, .slots_offline = true,
	};
	struct sched *s = mk_params(&p);
	seats = in_guest_now = max_in_guest = 0;
	memset(off_pending, 0, sizeof(off_pending));
	atomic_store(&seat_demand, -1);
	sched_set_slot_cb(s, seat_cb, NULL);
	sched_start(s);
	ticker_start(s);
	for (int v = 0; v < n; v++)
		pthread_create(&fvs[v].th, NULL, seat_main, &fvs[v]);
	/* No seat: nothing runs, and waiting for one is no deadlock. */
	sleep_ms(20);
	CHECK(total_progress(n) == 0 && sched_slots_online(s) == 0);
	CHECK(atomic_load(&seat_demand) == (n < m ? n : m));
	/* Seats come and go, the policy changes now and then. */
	const char *const *names = sched_policy_names();
	int npol = 0;
	while (names[npol])
		npol++;
	bool on[MAXV] = { false };
	unsigned seed = 12345;
	uint64_t end = sched_now_ns() + 150 * 1000000ull;
	int toggles = 0;
	while (sched_now_ns() < end) {
		int slot = (int)(rand_r(&seed) % (unsigned)m);
		if (on[slot]) {
			seat_offline(s, slot);
			on[slot] = false;
			toggles++;
		} else if (seat_online(s, slot, rand_r(&seed) % 2 ? -1 : 0)) {
			on[slot] = true;
			toggles++;
		}
		if (rand_r(&seed) % 16 == 0) {
			const char *name = names[rand_r(&seed) % (unsigned)npol];
			CHECK(sched_set_policy(s, name) == 0);
			CHECK(!strcmp(sched_policy_name(s), name));
		}
		int k = sched_slots_online(s);
		CHECK(seats_now() <= k); /* only SLOT_OFF lowers seats meanwhile */
		struct timespec ts = { 0, (long)(100000 + rand_r(&seed) % 900000) };
		nanosleep(&ts, NULL);
	}
	CHECK(toggles > 10);
	CHECK(sched_set_policy(s, "bogus") == -EINVAL);
	/* Every seat off: all threads leave, nothing runs, no deadlock. */
	for (int i = 0; i < m; i++)
		if (on[i]) {
			seat_offline(s, i);
			on[i] = false;
		}
	for (int i = 0; i < 2000 && seats_now() > 0; i++)
		sleep_ms(1);
	CHECK(seats_now() == 0 && sched_slots_online(s) == 0);
	long frozen = total_progress(n);
	sleep_ms(20);
	CHECK(total_progress(n) == frozen);
	/* Every seat on: every vCPU runs again. */
	long before[MAXV];
	for (int v = 0; v < n; v++)
		before[v] = atomic_load(&fvs[v].progress);
	for (int i = 0; i < m; i++)
		CHECK(seat_online(s, i, -1));
	CHECK(sched_slots_online(s) == m);
	wait_all_progressed(n, before, 5000);
	for (int v = 0; v < n; v++)
		CHECK(atomic_load(&fvs[v].progress) > before[v]);
	/* The stop first: a thread that saw stop_flag before it would leave
	 * (DONE) while the scheduler still runs, and its seat, idle now, would
	 * go back with a SLOT_OFF nobody asked for. */
	sched_stop(s);
	atomic_store(&stop_flag, 1);
	ticker_stop();
	for (int v = 0; v < n; v++) {
		pthread_join(fvs[v].th, NULL);
		int r = atomic_load(&fvs[v].result);
		CHECK(r == 0 || r == -ECANCELED);
	}
	CHECK(max_in_guest >= 1 && max_in_guest <= m);
	CHECK(atomic_load(&deadlock_calls) == 0);
	sched_destroy(s);
	cur_case[0] = 0;
}

static int offs_seen;
static void count_offs(void *ctx, enum sched_action_kind kind, int val)
{
	(void)ctx;
	(void)val;
	if (kind == SCHED_ACT_SLOT_OFF)
		offs_seen++;
}

static bool answer(void *ctx, int slot)
{
	int *a = ctx; /* a[0]: the answer, a[1]: times asked */
	CHECK(slot == 0);
	a[1]++;
	return a[0];
}

/* sched_slot_offline_if asks first, under the mutex: no means nothing done
 * (a domain member's stale revoke); yes is sched_slot_offline. This thread
 * is vCPU 0's. */
static void test_offline_if(void)
{
	snprintf(cur_case, sizeof(cur_case), " in offline_if");
	struct sched_params p = { .nvcpus = 1, .npcpus = 1, .policy = "none", .slice_ns = 1000000,
				  .slots_offline = true };
	struct sched *s = mk_params(&p);
	offs_seen = 0;
	sched_set_slot_cb(s, count_offs, NULL);
	sched_start(s);
	sched_slot_online(s, 0, -1);
	CHECK(sched_vcpu_enter(s, 0) == 0);
	int a[2] = { 0, 0 };
	CHECK(!sched_slot_offline_if(s, 0, answer, a));
	CHECK(a[1] == 1 && sched_slots_online(s) == 1 && !sched_vcpu_after_exit(s, 0) && offs_seen == 0);
	a[0] = 1;
	CHECK(sched_slot_offline_if(s, 0, answer, a)); /* held: SLOT_OFF when it leaves */
	CHECK(a[1] == 2 && sched_vcpu_after_exit(s, 0) && offs_seen == 0);
	sched_vcpu_done(s, 0);
	CHECK(offs_seen == 1 && sched_slots_online(s) == 0);
	/* off already: nothing more comes, whatever the answer */
	CHECK(!sched_slot_offline_if(s, 0, answer, a));
	CHECK(!sched_slot_offline(s, 0));
	CHECK(offs_seen == 1);
	sched_destroy(s);
	cur_case[0] = 0;
}

static int point_slot[8], npoints;
static void count_points(void *ctx, int slot)
{
	(void)ctx;
	if (npoints < 8)
		point_slot[npoints] = slot;
	npoints++;
}

/* A poke makes the slot's holder pass a scheduling point and keep its
 * slot; a point is told on the vCPU's own thread with the slot it holds. */
static void test_poke(void)
{
	snprintf(cur_case, sizeof(cur_case), " in poke");
	struct sched_params p = { .nvcpus = 1, .npcpus = 2, .policy = "none", .slice_ns = 1000000,
				  .slots_offline = true };
	struct sched *s = mk_params(&p);
	npoints = 0;
	sched_set_point_cb(s, count_points, NULL);
	sched_slots_keep(s, true); /* slot 0 stays online with nobody on it */
	sched_start(s);
	CHECK(sched_slot_poke(s, 0) == -ENOENT && sched_slot_poke(s, 2) == -EINVAL && sched_slot_poke(s, -1) == -EINVAL);
	sched_slot_online(s, 1, -1);
	CHECK(sched_vcpu_enter(s, 0) == 0);
	CHECK(npoints == 1 && point_slot[0] == 1); /* the grant is one */
	sched_slot_online(s, 0, -1);
	CHECK(sched_slot_poke(s, 0) == 0); /* online, nobody on it */
	CHECK(sched_slot_poke(s, 1) == 1 && atomic_load(&fvs[0].force) == 1);
	CHECK(sched_slot_poke(s, 1) == 1 && atomic_load(&fvs[0].force) == 1); /* not forced twice */
	CHECK(!sched_vcpu_after_exit(s, 0)); /* answered, and the slot kept */
	CHECK(npoints == 2 && point_slot[1] == 1);
	CHECK(!sched_vcpu_after_exit(s, 0) && npoints == 2);
	CHECK(sched_vcpu_spin(s, 0, -1, SCHED_SPIN_YIELD) == 0 && npoints == 3); /* nobody else: kept */
	/* a give-back asked for is not turned into a poke */
	atomic_store(&fvs[0].force, 0);
	CHECK(sched_slot_offline(s, 1));
	CHECK(sched_slot_poke(s, 1) == 1 && sched_vcpu_after_exit(s, 0));
	CHECK(sched_vcpu_yield_slot(s, 0) == 0 && npoints == 4 && point_slot[3] == 0); /* moved to slot 0 */
	sched_vcpu_done(s, 0);
	sched_destroy(s);
	cur_case[0] = 0;
}

/* ---- own ticks: slices end on each holder's own timer, no event loop ---- */

#define OWN_SIGNAL (SIGRTMIN + 1)
static __thread volatile sig_atomic_t own_fired;

static void on_own_signal(int sig)
{
	(void)sig;
	own_fired = 1; /* what KVM_RUN's -EINTR tells a real vCPU thread */
}

static void *own_main(void *arg)
{
	struct fv *f = arg;
	int r = sched_vcpu_own_timer(f->s, f->id, OWN_SIGNAL);
	CHECK(r == 0);
	if (r == 0)
		r = sched_vcpu_enter(f->s, f->id);
	while (r == 0 && !atomic_load(&stop_flag)) {
		in_guest();
		while (!own_fired && !atomic_load_explicit(&f->force, memory_order_acquire) &&
		       !atomic_load(&stop_flag))
			atomic_fetch_add_explicit(&f->progress, 1, memory_order_relaxed);
		out_of_guest();
		atomic_store(&f->force, 0);
		if (own_fired) {
			own_fired = 0;
			sched_vcpu_own_tick(f->s, f->id);
		}
		if (sched_vcpu_after_exit(f->s, f->id))
			r = sched_vcpu_yield_slot(f->s, f->id);
	}
	atomic_store(&f->result, r);
	sched_vcpu_done(f->s, f->id);
	return NULL;
}

/*
 * N spinning vCPUs on M slots with nobody reading the timerfd: only their
 * own timers can end a slice, so every vCPU runs only if they do.
 */
static void test_own_ticks(const char *pol, int m, int n)
{
	snprintf(cur_case, sizeof(cur_case), " in own ticks(%s m=%d n=%d)", pol, m, n);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_own_signal;
	sigaction(OWN_SIGNAL, &sa, NULL);
	struct sched_params p = { .nvcpus = n, .npcpus = m, .policy = pol, .slice_ns = 1000000,
				  .spin_sources = SCHED_SPIN_YIELD, .seed = 7 };
	struct sched *s = mk_params(&p);
	sched_start(s);
	for (int v = 0; v < n; v++)
		pthread_create(&fvs[v].th, NULL, own_main, &fvs[v]);
	long none[MAXV] = { 0 };
	sleep_ms(100);
	wait_all_progressed(n, none, 5000);
	/* the loop's timer still holds each own deadline, later: a backstop
	 * (not at every instant: while every holder is on its way out, no
	 * slot has a deadline at all) */
	bool backstop = false;
	for (int i = 0; i < 1000 && !backstop; i++) {
		backstop = timer_set(s);
		if (!backstop)
			sleep_ms(1);
	}
	CHECK(backstop);
	atomic_store(&stop_flag, 1);
	sched_stop(s);
	for (int v = 0; v < n; v++)
		pthread_join(fvs[v].th, NULL);
	struct sched_loop_stats ls;
	sched_get_loop_stats(s, &ls);
	uint64_t preempted = 0;
	for (int v = 0; v < n; v++) {
		struct sched_vcpu_stats st;
		sched_stats(s, v, &st);
		preempted += st.preemptions;
		CHECK(atomic_load(&fvs[v].progress) > 0);
		CHECK(atomic_load(&fvs[v].result) == 0 || atomic_load(&fvs[v].result) == -ECANCELED);
	}
	CHECK(ls.ticks == 0);
	CHECK(ls.own_ticks > 0);
	/* one tick ends every slice that is due: on 1 slot, one each at most */
	CHECK(preempted > 0 && (m > 1 || preempted <= ls.own_ticks));
	CHECK(atomic_load(&max_running) <= m);
	sched_destroy(s);
	cur_case[0] = 0;
}

int main(void)
{
	test_offline_if();
	test_poke();
	test_single_thread();
	test_tick();
	test_pinning();
	test_handoff_pinning();
	test_handoff_stop(400);
	test_deadlock();
	test_parking();
	static const char *const pols[] = { "none", "random", "directed", "holder", "pv" };
	for (size_t i = 0; i < sizeof(pols) / sizeof(pols[0]); i++) {
		test_progress(pols[i], 2, 5, 1);
		test_progress(pols[i], 1, 3, 1);
	}
	test_progress("gang", 2, 4, 2);
	test_progress("gang", 3, 7, 3);
	test_ring("none", 2, 2, 3000, false);
	test_ring("pv", 2, 2, 3000, false);
	test_ring("pv", 2, 3, 3000, false);
	test_ring("pv", 1, 4, 2000, true);
	test_ring("directed", 3, 3, 3000, true);
	test_seats("pv", 2, 4);
	test_seats("directed", 3, 5);
	test_seats("gang", 1, 2);
	test_own_ticks("none", 1, 3);
	test_own_ticks("pv", 2, 5);
	printf("%ld passed, %ld failed\n", atomic_load(&n_pass), atomic_load(&n_fail));
	return atomic_load(&n_fail) != 0;
}
