/*
 * How the scheduler's own cost grows (issue 13, item 4): the pure sched/
 * core driven by the synthetic stream of sched_stream.h for every policy at
 * 8..4096 vCPUs on 2..128 slots. Each cell first runs its stream once with
 * sched_core_check after every step (the stream is legal), then times it
 * with no checks: median of --reps runs. ns/event counts every core entry
 * (ticks, resumes, yields, spins, waits, kicks, ...); ns/decision divides
 * the same time by the GRANTs (slot hand-outs). The event loop's
 * next-deadline query after every step is part of the time.
 *
 *   build/bench/sched_scale [--reps N] [--steps N] [--csv FILE] [--policy P]
 *                           [--no-check] [--hash] [--instr N:M]
 * --hash prints a hash of each cell's actions instead of timing it.
 * --instr N:M runs the policy's stream at N vCPUs on M slots once, its steps
 * in measured_steps() alone, for `valgrind --tool=callgrind
 * --toggle-collect=measured_steps` to count their instructions (the cost
 * guard, tests/cost_guard.py: counts, not times, so CI can hold a budget).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/policy.h"
#include "tests/bench/sched_stream.h"

#define SEED 0x5eed5eedull

static const int vcpus[] = { 8, 64, 512, 4096 };
static const int slots[] = { 2, 16, 128 };
#define NV (int)(sizeof(vcpus) / sizeof(vcpus[0]))
#define NS (int)(sizeof(slots) / sizeof(slots[0]))

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The stream once with the invariants after every step; -EINVAL if one
 * breaks (printed). */
static int check_stream(const char *pol, int n, int m, long steps)
{
	struct stream s;
	int r = st_init(&s, pol, n, m, 0, SEED);
	if (r < 0)
		return r;
	for (long i = 0; i < steps; i++) {
		st_step(&s);
		const char *why = sched_core_check(s.c);
		if (why) {
			fprintf(stderr, "%s n=%d m=%d step %ld: %s\n", pol, n, m, i, why);
			st_free(&s);
			return -EINVAL;
		}
	}
	st_free(&s);
	return 0;
}

/* --hash: one line per cell with a hash of every action of the stream, so
 * two builds of the core can be shown to decide the same. */
static int hash_stream(const char *pol, int n, int m, long steps)
{
	struct stream s;
	int r = st_init(&s, pol, n, m, 0, SEED);
	if (r < 0)
		return r;
	for (long i = 0; i < steps; i++)
		st_step(&s);
	printf("hash %-9s %6d %5d %016" PRIx64 " %ld\n", pol, n, m, s.hash, s.decisions);
	st_free(&s);
	return 0;
}

/* Only the steps: the one function callgrind collects in --instr mode. */
__attribute__((noinline)) void measured_steps(struct stream *s, long steps);
__attribute__((noinline)) void measured_steps(struct stream *s, long steps)
{
	for (long i = 0; i < steps; i++)
		st_step(s);
}

static int instr_stream(const char *pol, int n, int m, long steps)
{
	struct stream s;
	int r = st_init(&s, pol, n, m, 0, SEED);
	if (r < 0)
		return r;
	measured_steps(&s, steps);
	printf("instr %s %d %d events %ld decisions %ld\n", pol, n, m, s.events, s.decisions);
	st_free(&s);
	return 0;
}

struct sample {
	double ns_event, ns_decision;
	long events, decisions;
};

static int time_stream(const char *pol, int n, int m, long steps, struct sample *out)
{
	struct stream s;
	int r = st_init(&s, pol, n, m, 0, SEED);
	if (r < 0)
		return r;
	uint64_t t0 = mono_ns();
	for (long i = 0; i < steps; i++)
		st_step(&s);
	uint64_t dt = mono_ns() - t0;
	out->events = s.events;
	out->decisions = s.decisions;
	out->ns_event = s.events ? (double)dt / (double)s.events : 0;
	out->ns_decision = s.decisions ? (double)dt / (double)s.decisions : 0;
	st_free(&s);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *x, int k)
{
	qsort(x, (size_t)k, sizeof(*x), cmp_double);
	return k % 2 ? x[k / 2] : (x[k / 2 - 1] + x[k / 2]) / 2;
}

static void usage(void)
{
	fprintf(stderr, "usage: sched_scale [--reps N] [--steps N] [--csv FILE] "
			"[--policy NAME] [--no-check] [--hash] [--instr N:M]\n");
}

int main(int argc, char **argv)
{
	int reps = 5;
	long steps = 10000;
	const char *csv = NULL, *only = NULL;
	bool check = true, hash = false;
	int in_n = 0, in_m = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv = argv[++i];
		else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--no-check"))
			check = false;
		else if (!strcmp(argv[i], "--hash"))
			hash = true;
		else if (!strcmp(argv[i], "--instr") && i + 1 < argc &&
			 sscanf(argv[++i], "%d:%d", &in_n, &in_m) == 2 && in_n >= in_m && in_m > 0)
			;
		else {
			usage();
			return 2;
		}
	}
	if (reps < 1 || steps < 1 || (only && !sched_policy_find(only))) {
		usage();
		return 2;
	}
	if (in_n) {
		for (const char *const *pn = sched_policy_names(); *pn; pn++)
			if ((!only || !strcmp(only, *pn)) && instr_stream(*pn, in_n, in_m, steps) < 0)
				return 1;
		return 0;
	}
	FILE *cf = NULL;
	if (csv) {
		cf = fopen(csv, "w");
		if (!cf) {
			perror(csv);
			return 1;
		}
		fprintf(cf, "policy,vcpus,slots,ns_per_event,ns_per_decision,events,decisions,reps\n");
	}
	printf("sched core scale: %ld steps/run, median of %d, checks %s first\n", steps,
	       reps, check ? "run" : "NOT run");
	printf("%-9s %6s %5s %12s %12s %9s %9s\n", "policy", "vcpus", "slots",
	       "ns/event", "ns/decision", "events", "decisions");
	int bad = 0;
	double *ev = calloc((size_t)reps, sizeof(double));
	double *de = calloc((size_t)reps, sizeof(double));
	if (!ev || !de)
		return 1;
	for (const char *const *pn = sched_policy_names(); *pn; pn++) {
		if (only && strcmp(only, *pn))
			continue;
		double lo = 0, hi = 0;
		for (int si = 0; si < NS; si++) {
			for (int vi = 0; vi < NV; vi++) {
				int n = vcpus[vi], m = slots[si];
				if (n < m)
					continue; /* overcommit >= 1 only */
				if (hash) {
					if (hash_stream(*pn, n, m, steps) < 0)
						return 1;
					continue;
				}
				if (check && check_stream(*pn, n, m, steps) < 0) {
					bad++;
					continue;
				}
				struct sample sm = { 0 };
				/* one run untimed: caches, page faults, clock ramp */
				if (time_stream(*pn, n, m, steps, &sm) < 0)
					return 1;
				for (int r = 0; r < reps; r++) {
					if (time_stream(*pn, n, m, steps, &sm) < 0)
						return 1;
					ev[r] = sm.ns_event;
					de[r] = sm.ns_decision;
				}
				double me = median(ev, reps), md = median(de, reps);
				if (lo == 0 || me < lo)
					lo = me;
				if (me > hi)
					hi = me;
				printf("%-9s %6d %5d %12.1f %12.1f %9ld %9ld\n", *pn, n, m, me,
				       md, sm.events, sm.decisions);
				if (cf)
					fprintf(cf, "%s,%d,%d,%.1f,%.1f,%ld,%ld,%d\n", *pn, n, m, me,
						md, sm.events, sm.decisions, reps);
				fflush(stdout);
			}
		}
		printf("%-9s largest/smallest ns/event: %.2f\n", *pn, lo > 0 ? hi / lo : 0);
	}
	free(ev);
	free(de);
	if (cf)
		fclose(cf);
	if (bad)
		fprintf(stderr, "%d cells broke an invariant\n", bad);
	return bad ? 1 : 0;
}
