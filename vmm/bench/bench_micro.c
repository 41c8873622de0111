/*
 * Microbenchmarks, each beside the host primitive it should be compared
 * with, so the numbers say something on any host (HOST.md: exits here cost
 * ~10x what they cost on hardware):
 *  - hypercall round trip vs a bare MMIO exit (guest-timed, hcbench);
 *  - PV kick -> kicked vCPU running vs futex wake -> woken thread running;
 *  - slot time lost per forced preemption (guest-timed, preempt workload),
 *    less the time the host steals anyway without overcommit.
 */
#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/bench.h"
#include "vmm/bench/bench_shard.h"

const char *const bench_micro_names[BENCH_MICRO_KINDS] = {
	"hypercall_ns", "bare_exit_ns", "kick_to_running_ns", "futex_wake_ns",
	"forced_preemption_ns", "preemptions", "forced_preemption_gross_ns",
};

#define FUTEX_ROUNDS 400

static void note(struct bench_micro *mi, const char *fmt, const char *what)
{
	mi->failures++;
	if (!mi->why[0])
		snprintf(mi->why, sizeof(mi->why), fmt, what);
}

/* Runs `vmm run args`, loads its report; false (noted) on any failure. */
static bool child(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		  const char *name, const char *const *args, struct bench_json *j)
{
	char json[4096], why[96];
	snprintf(json, sizeof(json), "%s/micro-%s.json", tmpdir, name);
	int st = bench_exec_run(o->exe, args, json, 60000, why, sizeof(why));
	int r = st == 0 ? bench_json_load(json, j) : -1;
	unlink(json);
	if (st != 0 || r) {
		char msg[128];
		snprintf(msg, sizeof(msg), "%s run failed (exit %d): %%s", name, st);
		note(mi, msg, why[0] ? why : "no report");
		return false;
	}
	return true;
}

static double get(const struct bench_json *j, const char *key)
{
	double v;
	return bench_json_num(j, key, &v) ? NAN : v;
}

static void hcbench(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		    unsigned rep)
{
	const char *args[] = { "-c", "1", "--sched", "host", "--pcpus", "1", "--workload",
			       "hcbench", "--duration", "100ms", NULL };
	struct bench_json j;
	if (!child(mi, o, tmpdir, "hcbench", args, &j))
		return;
	mi->raw[BENCH_MICRO_HC][rep] = get(&j, "vcpus.0.reports.hc_ps") / 1000;
	mi->raw[BENCH_MICRO_EXIT][rep] = get(&j, "vcpus.0.reports.exit_ps") / 1000;
	bench_json_free(&j);
}

/* PV kicks under 2x overcommit, where waiters really sleep and are kicked;
 * the VMM's histogram median (within ~19%, sched/hist.h). */
static void kick(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		 unsigned rep)
{
	char cpus[16], pcpus[16], dur[32];
	snprintf(cpus, sizeof(cpus), "%u", 2 * o->pcpus);
	snprintf(pcpus, sizeof(pcpus), "%u", o->pcpus);
	snprintf(dur, sizeof(dur), "%ums", o->duration_ms);
	const char *args[] = { "-c", cpus, "--pcpus", pcpus, "--lock", "pvticket", "--yield", "pv",
			       "--duration", dur, NULL };
	struct bench_json j;
	if (!child(mi, o, tmpdir, "kick", args, &j))
		return;
	double n = get(&j, "sched.kick_latency_ns.count");
	if (n > 0)
		mi->raw[BENCH_MICRO_KICK][rep] = get(&j, "sched.kick_latency_ns.p50");
	else
		note(mi, "%s", "kick run: no vCPU was ever kicked from a wait");
	bench_json_free(&j);
}

/* Slot time nobody ran, per VMM preemption, over what the host takes anyway. */
static void preempt(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		    unsigned rep)
{
	char dur[32];
	snprintf(dur, sizeof(dur), "%ums", o->duration_ms);
	const char *base[] = { "-c", "1", "--pcpus", "1", "--yield", "none", "--spin-detect", "none",
			       "--slice-us", "500", "--workload", "preempt", "--duration", dur, NULL };
	const char *over[] = { "-c", "2", "--pcpus", "1", "--yield", "none", "--spin-detect", "none",
			       "--slice-us", "500", "--workload", "preempt", "--duration", dur, NULL };
	struct bench_json j1, j2;
	if (!child(mi, o, tmpdir, "preempt1", base, &j1))
		return;
	if (!child(mi, o, tmpdir, "preempt2", over, &j2)) {
		bench_json_free(&j1);
		return;
	}
	double el1 = get(&j1, "elapsed_ns"), run1 = get(&j1, "vcpus.0.reports.run_ns");
	double el2 = get(&j2, "elapsed_ns");
	double run2 = get(&j2, "vcpus.0.reports.run_ns") + get(&j2, "vcpus.1.reports.run_ns");
	double pre = get(&j2, "sched.preemptions");
	double stolen = bench_ratio(el1 - run1, el1) * el2;
	mi->raw[BENCH_MICRO_SIGNAL_EXITS][rep] = pre;
	mi->raw[BENCH_MICRO_PREEMPT][rep] = pre > 0 ? (el2 - run2 - stolen) / pre : NAN;
	mi->raw[BENCH_MICRO_PREEMPT_GROSS][rep] = pre > 0 ? (el2 - run2) / pre : NAN;
	if (!isfinite(mi->raw[BENCH_MICRO_PREEMPT][rep]))
		note(mi, "%s", "preempt run: no preemptions or missing run_ns");
	bench_json_free(&j1);
	bench_json_free(&j2);
}

/* Host reference: a thread asleep in FUTEX_WAIT, woken from another CPU;
 * time from just before FUTEX_WAKE to the sleeper running. */
struct futex_ping {
	atomic_uint word;
	atomic_uint asleep;
	_Atomic uint64_t sent_ns;
	double lat[FUTEX_ROUNDS];
	int cpu;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void *sleeper(void *arg)
{
	struct futex_ping *p = arg;
	pin(p->cpu);
	for (unsigned i = 0; i < FUTEX_ROUNDS; i++) {
		unsigned v = atomic_load(&p->word);
		atomic_store(&p->asleep, 1);
		while (atomic_load(&p->word) == v)
			syscall(SYS_futex, &p->word, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
		p->lat[i] = (double)(now_ns() - atomic_load(&p->sent_ns));
	}
	return NULL;
}

static int futex_child(void *arg, int fd)
{
	(void)arg;
	static struct futex_ping p;
	cpu_set_t set;
	int cpus[2] = { 0, 0 }, k = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[k++] = c;
	p.cpu = cpus[1 % k];
	pin(cpus[0]);
	pthread_t t;
	if (pthread_create(&t, NULL, sleeper, &p))
		return 1;
	for (unsigned i = 0; i < FUTEX_ROUNDS; i++) {
		while (!atomic_load(&p.asleep))
			sched_yield();
		/* Let it really reach FUTEX_WAIT: we time a wake of a sleeper. */
		struct timespec ts = { 0, 200 * 1000 };
		nanosleep(&ts, NULL);
		atomic_store(&p.asleep, 0);
		atomic_store(&p.sent_ns, now_ns());
		atomic_fetch_add(&p.word, 1);
		syscall(SYS_futex, &p.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	pthread_join(t, NULL);
	qsort(p.lat, FUTEX_ROUNDS, sizeof(p.lat[0]), cmp_double);
	double med = (p.lat[FUTEX_ROUNDS / 2 - 1] + p.lat[FUTEX_ROUNDS / 2]) / 2;
	return write(fd, &med, sizeof(med)) == sizeof(med) ? 0 : 1;
}

static void futex(struct bench_micro *mi, unsigned rep)
{
	double med = NAN;
	if (bench_exec_fork(futex_child, NULL, 30000, &med, sizeof(med)) != 0)
		note(mi, "%s", "futex wake benchmark failed");
	else
		mi->raw[BENCH_MICRO_FUTEX][rep] = med;
}

void bench_micro_rep(const struct bench_opts *o, const char *tmpdir, unsigned rep,
		     struct bench_micro *mi)
{
	if (rep >= BENCH_MAX_REPS)
		return;
	for (int k = 0; k < BENCH_MICRO_KINDS; k++)
		mi->raw[k][rep] = NAN;
	mi->ran = true;
	mi->reps = rep + 1;
	if (o->test_synthetic) {
		bench_synth_micro(rep, mi);
		return;
	}
	hcbench(mi, o, tmpdir, rep);
	futex(mi, rep);
	kick(mi, o, tmpdir, rep);
	preempt(mi, o, tmpdir, rep);
}

void bench_micro_finish(struct bench_micro *mi)
{
	for (int k = 0; k < BENCH_MICRO_KINDS; k++) {
		double ok[BENCH_MAX_REPS];
		unsigned n = 0;
		for (unsigned r = 0; r < mi->reps; r++)
			if (isfinite(mi->raw[k][r]))
				ok[n++] = mi->raw[k][r];
		mi->median[k] = bench_median(ok, n);
	}
}
