/*
 * Microbenchmarks, each beside the host primitive it should be compared
 * with, so the numbers say something on any host (HOST.md: exits here cost
 * ~10x what they cost on hardware):
 *  - hypercall round trip vs a bare MMIO exit (guest-timed, hcbench);
 *  - PV kick -> kicked vCPU running: VMM-side (kick to sched_core_resumed),
 *    and guest-timed (kicker's TSC before the kick to the sleeper's TSC when
 *    its wait returns, kicklat), vs a futex wake timed the same way (stamp
 *    before FUTEX_WAKE to the sleeper's FUTEX_WAIT returning);
 *  - slot time lost per forced preemption (guest-timed, preempt workload),
 *    less the time the host steals anyway without overcommit, with the
 *    event loop's timer ending its slice (the default) and the holder's
 *    own (--own-tick on);
 *  - one safe-point switch (guest-timed, spswitch): the yielding vCPU's
 *    last TSC to the next vCPU's first, with the hard deferrals of that run
 *    beside it to show the switches came at safe points, not forced exits;
 *    on both paths to such a switch: the guest timing its own slice (the
 *    default) and the VMM timing it and requesting the switch
 *    (--guest-slice off), so the two can be read side by side.
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

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

const char *const bench_micro_names[BENCH_MICRO_KINDS] = {
	"hypercall_ns", "bare_exit_ns", "kick_to_running_ns", "futex_wake_ns",
	"forced_preemption_ns", "preemptions", "forced_preemption_gross_ns",
	"safe_point_switch_ns", "safe_point_switches", "safe_point_deferrals_hard",
	"kick_to_guest_ns", "kicks_timed",
	"request_switch_ns", "request_switches", "request_deferrals_hard",
	"forced_preemption_own_ns", "preemptions_own",
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

/* Slot time nobody ran per VMM preemption in an `over` run (2 vCPUs on 1
 * slot), over what the host takes anyway (j1: 1 vCPU on it). */
static void preempt_cost(struct bench_micro *mi, const struct bench_json *j1, const struct bench_json *j2,
			 unsigned rep, enum bench_micro_kind ns, enum bench_micro_kind count,
			 enum bench_micro_kind gross)
{
	double el1 = get(j1, "elapsed_ns"), run1 = get(j1, "vcpus.0.reports.run_ns");
	double el2 = get(j2, "elapsed_ns");
	double run2 = get(j2, "vcpus.0.reports.run_ns") + get(j2, "vcpus.1.reports.run_ns");
	double pre = get(j2, "sched.preemptions");
	double stolen = bench_ratio(el1 - run1, el1) * el2;
	mi->raw[count][rep] = pre;
	mi->raw[ns][rep] = pre > 0 ? (el2 - run2 - stolen) / pre : NAN;
	if ((int)gross >= 0)
		mi->raw[gross][rep] = pre > 0 ? (el2 - run2) / pre : NAN;
	if (!isfinite(mi->raw[ns][rep]))
		note(mi, "%s", "preempt run: no preemptions or missing run_ns");
}

/* The forced preemption on both timers: the event loop's (the default)
 * and the holder's own (--own-tick on), against one 1-vCPU baseline. */
static void preempt(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		    unsigned rep)
{
	char dur[32];
	snprintf(dur, sizeof(dur), "%ums", o->duration_ms);
	const char *base[] = { "-c", "1", "--pcpus", "1", "--yield", "none", "--spin-detect", "none",
			       "--slice-us", "500", "--workload", "preempt", "--duration", dur, NULL };
	const char *over[] = { "-c", "2", "--pcpus", "1", "--yield", "none", "--spin-detect", "none",
			       "--slice-us", "500", "--workload", "preempt", "--duration", dur, NULL };
	const char *own[] = { "-c", "2", "--pcpus", "1", "--yield", "none", "--spin-detect", "none",
			       "--slice-us", "500", "--workload", "preempt", "--duration", dur,
			       "--own-tick", "on", NULL };
	struct bench_json j1, j2;
	if (!child(mi, o, tmpdir, "preempt1", base, &j1))
		return;
	if (child(mi, o, tmpdir, "preempt2", over, &j2)) {
		preempt_cost(mi, &j1, &j2, rep, BENCH_MICRO_PREEMPT, BENCH_MICRO_SIGNAL_EXITS,
			     BENCH_MICRO_PREEMPT_GROSS);
		bench_json_free(&j2);
	}
	if (child(mi, o, tmpdir, "preempt2own", own, &j2)) {
		preempt_cost(mi, &j1, &j2, rep, BENCH_MICRO_PREEMPT_OWN, BENCH_MICRO_SIGNAL_EXITS_OWN,
			     (enum bench_micro_kind)-1);
		bench_json_free(&j2);
	}
	bench_json_free(&j1);
}

/* Guest-timed kicks: 2 vCPUs on 2 slots, one kicks the other out of a
 * wait, like the futex reference's two threads on two CPUs. */
static void kick_guest(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		       unsigned rep)
{
	char dur[32];
	snprintf(dur, sizeof(dur), "%ums", o->duration_ms);
	const char *args[] = { "-c", "2", "--pcpus", "2", "--workload", "kicklat", "--duration", dur,
			       NULL };
	struct bench_json j;
	if (!child(mi, o, tmpdir, "kicklat", args, &j))
		return;
	double n = get(&j, "vcpus.1.reports.kicks_timed");
	mi->raw[BENCH_MICRO_KICKS_TIMED][rep] = n;
	if (n > 0)
		mi->raw[BENCH_MICRO_KICK_GUEST][rep] = get(&j, "vcpus.1.reports.kick_ns");
	else
		note(mi, "%s", "kicklat run: no kick was timed");
	bench_json_free(&j);
}

/* The report key the last vCPU to finish wrote, whichever vCPU that was. */
static double either_vcpu(const struct bench_json *j, const char *key)
{
	char path[96];
	for (int v = 0; v < 2; v++) {
		snprintf(path, sizeof(path), "vcpus.%d.reports.%s", v, key);
		double x = get(j, path);
		if (!isnan(x))
			return x;
	}
	return NAN;
}

/* Safe-point switches: 2 vCPUs on 1 slot, slices as short as the preempt
 * run's, every slice end answered at a lock boundary (spswitch). request:
 * the VMM times the slices (--guest-slice off), else the guest does. */
static void sp_switch(struct bench_micro *mi, const struct bench_opts *o, const char *tmpdir,
		      unsigned rep, bool request)
{
	char dur[32];
	snprintf(dur, sizeof(dur), "%ums", o->duration_ms);
	const char *args[] = { "-c", "2", "--pcpus", "1", "--yield", "none", "--spin-detect", "none",
			       "--slice-us", "500", "--safe-point", "on", "--defer-us", "200",
			       "--guest-slice", request ? "off" : "on",
			       "--workload", "spswitch", "--duration", dur, NULL };
	const char *name = request ? "spswitch-request" : "spswitch";
	enum bench_micro_kind ns = request ? BENCH_MICRO_REQ_SWITCH : BENCH_MICRO_SP_SWITCH;
	enum bench_micro_kind count = request ? BENCH_MICRO_REQ_SWITCHES : BENCH_MICRO_SP_SWITCHES;
	enum bench_micro_kind hard = request ? BENCH_MICRO_REQ_HARD : BENCH_MICRO_SP_HARD;
	struct bench_json j;
	if (!child(mi, o, tmpdir, name, args, &j))
		return;
	double n = either_vcpu(&j, "switches_total");
	mi->raw[count][rep] = n;
	mi->raw[hard][rep] = get(&j, "sched.deferrals_hard");
	if (n > 0)
		mi->raw[ns][rep] = either_vcpu(&j, "switch_ns");
	else
		note(mi, "%s run: no safe-point switch was timed", name);
	bench_json_free(&j);
}

/* Host reference: a thread asleep in FUTEX_WAIT, woken from another CPU;
 * time from the waker's stamp just before FUTEX_WAKE to the sleeper's stamp
 * when its FUTEX_WAIT returns, as kicklat times a kick. A FUTEX_WAIT that
 * found the word changed never slept: no sample (kicklat's "early"). */
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

static void *sleeper(void *arg)
{
	struct futex_ping *p = arg;
	pin(p->cpu);
	for (unsigned i = 0; i < FUTEX_ROUNDS; i++) {
		unsigned v = atomic_load(&p->word);
		atomic_store(&p->asleep, 1);
		p->lat[i] = NAN;
		while (atomic_load(&p->word) == v) {
			long r = syscall(SYS_futex, &p->word, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
			uint64_t t = now_ns();
			if (r == 0 && atomic_load(&p->word) != v)
				p->lat[i] = (double)(t - atomic_load(&p->sent_ns));
		}
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
	unsigned n = 0;
	for (unsigned i = 0; i < FUTEX_ROUNDS; i++)
		if (isfinite(p.lat[i]))
			p.lat[n++] = p.lat[i];
	double med = bench_median(p.lat, n); /* NaN if every wait found the word moved */
	return !isfinite(med) ? 1 : write(fd, &med, sizeof(med)) == sizeof(med) ? 0 : 1;
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
	kick_guest(mi, o, tmpdir, rep);
	preempt(mi, o, tmpdir, rep);
	sp_switch(mi, o, tmpdir, rep, false);
	sp_switch(mi, o, tmpdir, rep, true);
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
