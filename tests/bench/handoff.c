/*
 * The slot hand-off in isolation (issue 13): two vCPU threads share one slot
 * and pass it back and forth by yield, N times each, through the thread
 * layer (sched.c) with no guest and no event loop. What a hand-off costs in
 * kernel work is what this counts: context switches per hand-off from
 * getrusage(RUSAGE_THREAD) of the two threads, and, run under
 * `perf stat -e syscalls:sys_enter_futex` (make bench-handoff), futex calls;
 * the run is fixed (no timing decides anything), so counts compare across
 * builds. With --cpu C the slot is pinned to host CPU C (both threads then
 * share it, as two vCPUs of one slot do in the VMM); --policy picks the
 * yield policy (default none: a yield hands the slot to the other thread).
 *
 *   build/bench/handoff [--n N] [--cpu C] [--policy P]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sched/sched.h"

struct th {
	struct sched *s;
	int v, n, r;
	long csw_vol, csw_invol;
	pthread_t t;
};

/* The last thread back from a yield: a change of owner is one hand-off. */
static atomic_int owner = -1;
static atomic_long handoffs;

static void took_slot(int v)
{
	if (atomic_exchange(&owner, v) != v)
		atomic_fetch_add(&handoffs, 1);
}

static void *vcpu_main(void *arg)
{
	struct th *t = arg;
	int r = sched_vcpu_enter(t->s, t->v);
	for (int i = 0; r == 0 && i < t->n; i++) {
		took_slot(t->v);
		r = sched_vcpu_yield_slot(t->s, t->v);
	}
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	t->csw_vol = ru.ru_nvcsw;
	t->csw_invol = ru.ru_nivcsw;
	t->r = r;
	/* Whoever finishes first leaves; the other's remaining yields find
	 * nobody queued and keep the slot, so it finishes too. */
	sched_vcpu_done(t->s, t->v);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = 20000, cpu = -1;
	const char *policy = "none";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			cpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			policy = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--n N] [--cpu C] [--policy P]\n", argv[0]);
			return 2;
		}
	}
	if (n <= 0) {
		fprintf(stderr, "--n must be > 0\n");
		return 2;
	}
	/* A slice far longer than the run: no deadline ever preempts, every
	 * hand-off is a yield. */
	struct sched_params p = { .nvcpus = 2, .npcpus = 1, .host_cpu = &cpu, .policy = policy,
				  .slice_ns = 3600ull * 1000000000ull };
	const char *why = NULL;
	struct sched *s = sched_create(&p, &why);
	if (!s) {
		fprintf(stderr, "sched_create: %s\n", why);
		return 1;
	}
	struct th t[2];
	sched_start(s);
	for (int v = 0; v < 2; v++) {
		t[v] = (struct th){ .s = s, .v = v, .n = n };
		if (pthread_create(&t[v].t, NULL, vcpu_main, &t[v])) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (int v = 0; v < 2; v++)
		pthread_join(t[v].t, NULL);
	long vol = 0, invol = 0, hand = atomic_load(&handoffs);
	for (int v = 0; v < 2; v++) {
		vol += t[v].csw_vol;
		invol += t[v].csw_invol;
		if (t[v].r) {
			fprintf(stderr, "vCPU %d: %s\n", v, strerror(-t[v].r));
			return 1;
		}
	}
	sched_destroy(s);
	if (!hand) {
		fprintf(stderr, "no hand-off happened\n");
		return 1;
	}
	printf("handoff: policy %s, cpu %d, %d yields per thread, %ld hand-offs\n", policy,
	       cpu, n, hand);
	printf("handoff: context switches per hand-off: %.2f (voluntary %.2f, involuntary %.2f)\n",
	       (double)(vol + invol) / (double)hand, (double)vol / (double)hand,
	       (double)invol / (double)hand);
	return 0;
}
