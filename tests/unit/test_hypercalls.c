/*
 * The hypercall dispatcher: each call's contract, and random calls never
 * crash it; the PV calls (wait, kick, yield_to, spin) both through a
 * recording stand-in and against the real co-scheduler (sched/) with fake
 * vCPU threads, whose shared pages the scheduler writes as in a VM.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "hypercalls/hypercalls.h"
#include "sched/sched.h"
#include "vmm/core/sched_hc_ops.h"

#define MEM (1u << 20)

static char console_buf[8192];
static unsigned console_len;

static void console(void *opaque, const char *buf, unsigned len)
{
	(void)opaque;
	if (console_len + len <= sizeof(console_buf)) {
		memcpy(console_buf + console_len, buf, len);
		console_len += len;
	}
}

static struct hc_result call(struct hc_vm *vm, unsigned vcpu, uint64_t nr, uint64_t a0, uint64_t a1)
{
	uint64_t args[4] = { a0, a1, 0, 0 };
	return hc_dispatch(vm, vcpu, nr, args);
}

/* A recording stand-in for the scheduler: what the PV calls ask of it. */
static struct {
	char op;            /* 'w'ait, 'k'ick, 's'pin, 'p' safe point */
	int v, target;
	uint64_t timeout_ns;
	int answer;         /* what the next call returns */
} fake;

static int fake_wait(void *s, int v, uint64_t timeout_ns)
{
	(void)s;
	fake.op = 'w', fake.v = v, fake.timeout_ns = timeout_ns;
	return fake.answer;
}

static int fake_kick(void *s, int from, int target)
{
	(void)s;
	fake.op = 'k', fake.v = from, fake.target = target;
	return fake.answer;
}

static int fake_spin(void *s, int v, int target)
{
	(void)s;
	fake.op = 's', fake.v = v, fake.target = target;
	return fake.answer;
}

static int fake_safe_point(void *s, int v)
{
	(void)s;
	fake.op = 'p', fake.v = v;
	return fake.answer;
}

static int fake_features_acked(void *s, int v)
{
	(void)s;
	fake.op = 'a', fake.v = v;
	return fake.answer;
}

static const struct hc_sched_ops fake_ops = {
	.wait = fake_wait, .kick = fake_kick, .spin = fake_spin, .safe_point = fake_safe_point,
	.features_acked = fake_features_acked,
};

static struct hc_result call3(struct hc_vm *vm, unsigned vcpu, uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	uint64_t args[4] = { a0, a1, a2, 0 };
	return hc_dispatch(vm, vcpu, nr, args);
}

/*
 * wait/kick/yield_to/spin through struct hc_sched_ops: the guest's vCPU
 * numbers become the scheduler's (sched_base + index), the timeout passes
 * unchanged (0 = none), -ETIMEDOUT goes back to the guest and any other
 * error stops the vCPU, and nothing reaches the scheduler for a bad call.
 */
static void test_pv_calls(uint8_t *mem)
{
	struct hc_vcpu_reports reports[3] = { 0 };
	struct hc_vm vm = { .ncpus = 3, .reports = reports, .sched_ops = &fake_ops, .sched_base = 10,
			    .pv_features = VMM_PV_WAIT_KICK | VMM_PV_YIELD | VMM_PV_SPIN_EXIT };
	guest_mem_init_flat(&vm.mem, mem, MEM);
	uint32_t *lock = (uint32_t *)(mem + 0x6000);
	*lock = 5;

	fake.op = 0, fake.answer = 0;
	CHECK_EQ(call3(&vm, 1, VMM_HC_WAIT, 0x6000, 6, 0).ret, 1); /* value differs: no sleep */
	CHECK_EQ(fake.op, 0);
	CHECK_EQ(call3(&vm, 1, VMM_HC_WAIT, 0x6000, 5, 0).ret, 0);
	CHECK(fake.op == 'w' && fake.v == 11 && fake.timeout_ns == 0);
	CHECK_EQ(call3(&vm, 2, VMM_HC_WAIT, 0x6000, 5, 12345).ret, 0);
	CHECK(fake.v == 12 && fake.timeout_ns == 12345);
	fake.answer = -ETIMEDOUT;
	struct hc_result r = call3(&vm, 0, VMM_HC_WAIT, 0x6000, 5, 1000);
	CHECK(r.ret == -VMM_ETIMEDOUT && !r.stop);
	fake.answer = -ECANCELED;
	r = call3(&vm, 0, VMM_HC_WAIT, 0x6000, 5, 0);
	CHECK(r.stop == -ECANCELED);
	fake.answer = 0, fake.op = 0;
	CHECK_EQ(call3(&vm, 0, VMM_HC_WAIT, 0x6002, 5, 0).ret, -VMM_EINVAL);
	CHECK_EQ(call3(&vm, 0, VMM_HC_WAIT, MEM - 2, 5, 0).ret, -VMM_EINVAL);
	CHECK_EQ(call3(&vm, 0, VMM_HC_WAIT, MEM, 5, 0).ret, -VMM_EFAULT);
	CHECK_EQ(call3(&vm, 0, VMM_HC_WAIT, ~0ull - 3, 5, 0).ret, -VMM_EFAULT);
	CHECK_EQ(fake.op, 0);

	CHECK_EQ(call3(&vm, 0, VMM_HC_KICK, 2, 0, 0).ret, 0);
	CHECK(fake.op == 'k' && fake.v == 10 && fake.target == 12);
	fake.op = 0;
	CHECK_EQ(call3(&vm, 0, VMM_HC_KICK, 3, 0, 0).ret, -VMM_ESRCH);
	CHECK_EQ(call3(&vm, 0, VMM_HC_KICK, ~0ull, 0, 0).ret, -VMM_ESRCH); /* no "any" for kick */
	CHECK_EQ(fake.op, 0);
	fake.answer = -EDEADLK;
	CHECK_EQ(call3(&vm, 0, VMM_HC_KICK, 1, 0, 0).stop, -EDEADLK);
	fake.answer = 0;

	CHECK_EQ(call3(&vm, 2, VMM_HC_SPIN, 0, 0, 0).ret, 0);
	CHECK(fake.op == 's' && fake.v == 12 && fake.target == 10);
	CHECK_EQ(call3(&vm, 2, VMM_HC_SPIN, ~0ull, 0, 0).ret, 0);
	CHECK(fake.op == 's' && fake.target == -1);
	CHECK_EQ(call3(&vm, 1, VMM_HC_YIELD_TO, 2, 0, 0).ret, 0);
	CHECK(fake.op == 's' && fake.v == 11 && fake.target == 12);
	CHECK_EQ(call3(&vm, 1, VMM_HC_YIELD_TO, ~0ull, 0, 0).ret, 0); /* "I left my lock region" */
	CHECK(fake.op == 'p' && fake.v == 11);
	fake.op = 0;
	CHECK_EQ(call3(&vm, 1, VMM_HC_YIELD_TO, 3, 0, 0).ret, -VMM_ESRCH);
	CHECK_EQ(fake.op, 0);

	/* a feature bit clear, or no scheduler: -ENOSYS, the scheduler untouched */
	vm.pv_features = VMM_PV_YIELD;
	CHECK_EQ(call3(&vm, 0, VMM_HC_WAIT, 0x6000, 5, 0).ret, -VMM_ENOSYS);
	CHECK_EQ(call3(&vm, 0, VMM_HC_KICK, 1, 0, 0).ret, -VMM_ENOSYS);
	CHECK_EQ(call3(&vm, 0, VMM_HC_SPIN, 1, 0, 0).ret, -VMM_ENOSYS);
	vm.pv_features = VMM_PV_WAIT_KICK;
	vm.sched_ops = NULL;
	CHECK_EQ(call3(&vm, 0, VMM_HC_WAIT, 0x6000, 5, 0).ret, -VMM_ENOSYS);
	CHECK_EQ(fake.op, 0);
}

/*
 * ack_features (ABI.md 4.3): a bit not offered refuses the whole call and is
 * counted; acks only add, per vCPU; the scheduler publishes the fields the
 * first time a vCPU accepts a bit that governs some, and only then.
 */
static void test_ack_features(void)
{
	struct hc_vcpu_reports reports[2] = { 0 };
	atomic_uint acked[2] = { 0 };
	struct hc_vm vm = { .ncpus = 2, .reports = reports, .sched_ops = &fake_ops, .sched_base = 4,
			    .pv_features = VMM_PV_WAIT_KICK | VMM_PV_SAFE_POINT | VMM_PV_GUEST_SLICE, .acked = acked };
	fake.op = 0, fake.answer = 0;
	uint64_t errs = atomic_load(&vm.errors);
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, VMM_PV_GUEST_SLICE | VMM_PV_YIELD, 0).ret, -VMM_EINVAL);
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, 1ull << 32, 0).ret, -VMM_EINVAL); /* all 64 bits count */
	CHECK_EQ(atomic_load(&vm.errors), errs + 2);
	CHECK(atomic_load(&acked[1]) == 0 && fake.op == 0); /* nothing of a refused call */
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, VMM_PV_WAIT_KICK, 0).ret, VMM_PV_WAIT_KICK);
	CHECK_EQ(fake.op, 0); /* bit 0 governs no field: nothing to publish */
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, VMM_PV_GUEST_SLICE, 0).ret, VMM_PV_WAIT_KICK | VMM_PV_GUEST_SLICE);
	CHECK(fake.op == 'a' && fake.v == 5);
	fake.op = 0;
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, VMM_PV_GUEST_SLICE, 0).ret, VMM_PV_WAIT_KICK | VMM_PV_GUEST_SLICE);
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, 0, 0).ret, VMM_PV_WAIT_KICK | VMM_PV_GUEST_SLICE); /* only adds */
	CHECK_EQ(fake.op, 0); /* published once */
	CHECK_EQ(call(&vm, 0, VMM_HC_ACK_FEATURES, 0, 0).ret, 0); /* per vCPU */
	CHECK_EQ(atomic_load(&vm.errors), errs + 2);
	/* the scheduler says stop: the vCPU ends */
	fake.answer = -ECANCELED;
	CHECK_EQ(call(&vm, 0, VMM_HC_ACK_FEATURES, VMM_PV_GUEST_SLICE, 0).stop, -ECANCELED);
	fake.answer = 0;
	/* a VM without a scheduler (--sched host) or without per-vCPU state */
	vm.sched_ops = NULL;
	vm.pv_features = VMM_PV_YIELD;
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, VMM_PV_GUEST_SLICE, 0).ret, -VMM_EINVAL);
	vm.acked = NULL;
	CHECK_EQ(call(&vm, 1, VMM_HC_ACK_FEATURES, VMM_PV_YIELD, 0).ret, VMM_PV_YIELD);
}

/* ---- the real scheduler ---- */

#define US 1000ull
#define MS (1000 * US)

/* A negative answer the ABI defines (ABI.md 4: "Error numbers used"). */
static bool abi_error(int64_t r)
{
	return r == -VMM_EPERM || r == -VMM_ESRCH || r == -VMM_EFAULT || r == -VMM_EINVAL ||
	       r == -VMM_ENOSYS || r == -VMM_ETIMEDOUT;
}

/* The fake vCPUs' shared pages, written by the scheduler as sched_glue does. */
static struct vmm_shared_page pages[2];

static void pg_set_preempted(void *o, bool on) { __atomic_store_n(&((struct vmm_shared_page *)o)->preempted, on, __ATOMIC_SEQ_CST); }
static void pg_set_pending(void *o, uint32_t req) { __atomic_store_n(&((struct vmm_shared_page *)o)->preempt_pending, req, __ATOMIC_SEQ_CST); }
static void pg_set_kick(void *o, bool on) { __atomic_store_n(&((struct vmm_shared_page *)o)->kick_pending, on, __ATOMIC_SEQ_CST); }
static void pg_set_steal(void *o, uint64_t ns) { __atomic_store_n(&((struct vmm_shared_page *)o)->steal_ns, ns, __ATOMIC_SEQ_CST); }
static bool pg_in_critical(void *o) { return __atomic_load_n(&((struct vmm_shared_page *)o)->in_critical, __ATOMIC_SEQ_CST) != 0; }

static const struct sched_vcpu_ops page_ops = {
	.set_preempted = pg_set_preempted, .set_preempt_pending = pg_set_pending,
	.set_kick_pending = pg_set_kick, .set_steal_ns = pg_set_steal, .in_critical = pg_in_critical,
};

static uint32_t pg(int v, size_t off)
{
	return __atomic_load_n((uint32_t *)((uint8_t *)&pages[v] + off), __ATOMIC_SEQ_CST);
}
#define PG(v, field) pg(v, offsetof(struct vmm_shared_page, field))

/* The event loop's part: ticks, so that slices end and timeouts fire. */
static atomic_int ticker_stop;
static void *ticker(void *arg)
{
	struct sched *s = arg;
	struct timespec t = { 0, 100 * US };
	while (!atomic_load(&ticker_stop)) {
		nanosleep(&t, NULL);
		sched_tick(s, sched_now_ns());
	}
	return NULL;
}

static struct sched *real_sched(int n, int m, bool defer, pthread_t *tick)
{
	struct sched_params p = { .nvcpus = n, .npcpus = m, .policy = "holder", .slice_ns = 1 * MS,
				  .spin_sources = SCHED_SPIN_YIELD, .defer = defer, .defer_max_ns = 10000 * MS };
	const char *why = NULL;
	struct sched *s = sched_create(&p, &why);
	if (!s) {
		printf("sched_create: %s\n", why);
		exit(1);
	}
	memset(pages, 0, sizeof(pages));
	for (int v = 0; v < n; v++)
		sched_set_vcpu(s, v, &page_ops, &pages[v]);
	sched_start(s);
	atomic_store(&ticker_stop, 0);
	pthread_create(tick, NULL, ticker, s);
	return s;
}

static void real_sched_end(struct sched *s, pthread_t tick)
{
	atomic_store(&ticker_stop, 1);
	pthread_join(tick, NULL);
	sched_destroy(s);
}

static struct hc_vm real_vm;

static struct hc_result rcall(unsigned v, uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	uint64_t args[4] = { a0, a1, a2, 0 };
	struct hc_result r = hc_dispatch(&real_vm, v, nr, args);
	/* what the vCPU loop does after every exit */
	if (!r.stop && sched_vcpu_after_exit(real_vm.sched, (int)v))
		sched_vcpu_yield_slot(real_vm.sched, (int)v);
	return r;
}

#define W0 0x6000
#define W1 0x6010

/* vCPU 0: a safe point, kicks, waits, a timeout, a directed yield, a deadlock. */
static void *script0(void *arg)
{
	(void)arg;
	struct sched *s = real_vm.sched;
	CHECK_EQ(sched_vcpu_enter(s, 0), 0);
	/* ABI.md 7: the slice ends with vCPU 1 queued: preempt_pending, no preemption */
	uint64_t until = sched_now_ns() + 2000 * MS;
	uint32_t req;
	while (!(req = PG(0, preempt_pending)) && sched_now_ns() < until)
		;
	/* a request, numbered from 1 (a host that holds this thread back for a
	 * whole slice may show a later number: each request a new one) */
	CHECK(req >= 1);
	CHECK_EQ(rcall(0, VMM_HC_YIELD_TO, ~0ull, 0, 0).ret, 0); /* the safe point: vCPU 1 runs */
	CHECK(PG(0, preempt_pending) == 0 && PG(0, preempted) == 0);
	/* vCPU 1 sleeps in wait now. A self-kick stays pending, in the page too */
	CHECK_EQ(rcall(0, VMM_HC_KICK, 0, 0, 0).ret, 0);
	CHECK_EQ(PG(0, kick_pending), 1);
	CHECK_EQ(rcall(0, VMM_HC_WAIT, W0, 5, 0).ret, 0); /* returns at once */
	CHECK_EQ(PG(0, kick_pending), 0);
	CHECK_EQ(rcall(0, VMM_HC_WAIT, W0, 6, 0).ret, 1); /* the value differs */
	uint64_t errs = atomic_load(&real_vm.errors), t0 = sched_now_ns();
	struct hc_result r = rcall(0, VMM_HC_WAIT, W0, 5, 3 * MS);
	CHECK(r.ret == -VMM_ETIMEDOUT && !r.stop && sched_now_ns() - t0 >= 3 * MS);
	CHECK_EQ(atomic_load(&real_vm.errors), errs); /* a timeout is no bad call */
	CHECK_EQ(rcall(0, VMM_HC_KICK, 1, 0, 0).ret, 0); /* wakes vCPU 1: nothing left pending */
	CHECK_EQ(PG(1, kick_pending), 0);
	CHECK_EQ(rcall(0, VMM_HC_YIELD_TO, 1, 0, 0).ret, 0); /* holder: vCPU 1 gets the slot */
	CHECK_EQ(PG(0, preempted), 0);
	/* vCPU 1 has ended: a wait nothing can end is a deadlock, the vCPU stops */
	r = rcall(0, VMM_HC_WAIT, W0, 5, 0);
	CHECK_EQ(r.stop, -EDEADLK);
	sched_vcpu_done(s, 0);
	return NULL;
}

/* vCPU 1: queued at start, so it has steal; sleeps until vCPU 0 kicks it. */
static void *script1(void *arg)
{
	(void)arg;
	struct sched *s = real_vm.sched;
	CHECK_EQ(sched_vcpu_enter(s, 1), 0);
	CHECK(__atomic_load_n(&pages[1].steal_ns, __ATOMIC_SEQ_CST) >= 1 * MS); /* a slice, queued */
	CHECK_EQ(PG(1, preempted), 0);
	CHECK_EQ(rcall(1, VMM_HC_WAIT, W1, 7, 0).ret, 0); /* until kicked */
	CHECK(PG(1, preempted) == 0 && PG(1, kick_pending) == 0);
	CHECK_EQ(rcall(1, VMM_HC_KICK, 2, 0, 0).ret, -VMM_ESRCH);
	CHECK_EQ(rcall(1, VMM_HC_YIELD_TO, 9, 0, 0).ret, -VMM_ESRCH);
	CHECK_EQ(rcall(1, VMM_HC_SPIN, ~0ull, 0, 0).ret, 0);
	CHECK_EQ(rcall(1, VMM_HC_YIELD_TO, ~0ull, 0, 0).ret, 0); /* nothing pending: goes on */
	sched_vcpu_done(s, 1);
	return NULL;
}

static void test_pv_calls_real_sched(uint8_t *mem)
{
	struct hc_vcpu_reports reports[2] = { 0 };
	pthread_t tick, t0, t1;
	struct sched *s = real_sched(2, 1, true, &tick);
	real_vm = (struct hc_vm){ .ncpus = 2, .reports = reports, .sched_ops = &sched_glue_hc_ops, .sched = s,
				  .pv_features = VMM_PV_WAIT_KICK | VMM_PV_YIELD | VMM_PV_SPIN_EXIT | VMM_PV_SAFE_POINT };
	guest_mem_init_flat(&real_vm.mem, mem, MEM);
	*(uint32_t *)(mem + W0) = 5;
	*(uint32_t *)(mem + W1) = 7;
	pthread_create(&t0, NULL, script0, NULL);
	pthread_create(&t1, NULL, script1, NULL);
	pthread_join(t0, NULL);
	pthread_join(t1, NULL);
	real_sched_end(s, tick);
}

/*
 * Random calls against the real scheduler (two vCPUs, two slots, one
 * thread): every answer is one the ABI defines, -ETIMEDOUT included, and
 * every error but a timeout is counted.
 */
static void fuzz_real_sched(uint8_t *mem)
{
	struct hc_vcpu_reports reports[2] = { 0 };
	pthread_t tick;
	struct sched *s = real_sched(2, 2, false, &tick);
	real_vm = (struct hc_vm){ .ncpus = 2, .reports = reports, .sched_ops = &sched_glue_hc_ops, .sched = s,
				  .pv_features = ~0u };
	guest_mem_init_flat(&real_vm.mem, mem, MEM);
	unsigned seed = 11;
	uint64_t bad = 0, out_of_range = 0, timeouts = 0, errs0 = atomic_load(&real_vm.errors);
	for (int i = 0; i < 20000; i++) {
		uint64_t nr = VMM_HC_WAIT + (uint64_t)(rand_r(&seed) % 4);
		uint64_t a[3];
		for (int k = 0; k < 3; k++)
			a[k] = (rand_r(&seed) & 1) ? (uint64_t)rand_r(&seed) % 4 : ((uint64_t)rand_r(&seed) << 33) ^ (uint64_t)rand_r(&seed);
		if (nr == VMM_HC_WAIT) {
			a[0] = (rand_r(&seed) & 3) ? 0x7000 + 4 * (a[0] % 4) : a[0]; /* mostly a real word */
			a[1] = rand_r(&seed) & 1 ? 0 : a[1];
			a[2] = 1 + a[2] % (20 * US); /* never forever: one thread drives both vCPUs */
		}
		struct hc_result r = rcall((unsigned)(rand_r(&seed) & 1), nr, a[0], a[1], a[2]);
		CHECK_EQ(r.stop, 0);
		if (r.ret == -VMM_ETIMEDOUT)
			timeouts++;
		else if (r.ret < 0)
			bad++;
		if (r.ret < 0 && !abi_error(r.ret))
			out_of_range++;
	}
	CHECK_EQ(out_of_range, 0);
	CHECK(timeouts > 0); /* the path was taken */
	CHECK_EQ(atomic_load(&real_vm.errors) - errs0, bad);
	real_sched_end(s, tick);
}

int main(void)
{
	static uint8_t mem[MEM];
	struct hc_vcpu_reports reports[2];
	struct hc_vm vm = { .ncpus = 2, .reports = reports, .console = console };
	guest_mem_init_flat(&vm.mem, mem, MEM);
	memset(reports, 0, sizeof(reports));

	CHECK_EQ(call(&vm, 0, VMM_HC_VERSION, 0, 0).ret, VMM_ABI_VERSION);

	strcpy((char *)mem + 0x1000, "hello");
	CHECK_EQ(call(&vm, 0, VMM_HC_CONSOLE_WRITE, 0x1000, 5).ret, 5);
	CHECK(console_len == 5 && !memcmp(console_buf, "hello", 5));
	CHECK_EQ(call(&vm, 0, VMM_HC_CONSOLE_WRITE, MEM - 2, 5).ret, -VMM_EFAULT);
	CHECK_EQ(call(&vm, 0, VMM_HC_CONSOLE_WRITE, ~0ull - 1, 5).ret, -VMM_EFAULT);
	CHECK_EQ(call(&vm, 0, VMM_HC_CONSOLE_WRITE, 0, VMM_CONSOLE_WRITE_MAX + 1).ret, -VMM_EINVAL);
	CHECK_EQ(console_len, 5);

	strcpy((char *)mem + 0x2000, "ops");
	CHECK_EQ(call(&vm, 1, VMM_HC_REPORT, 0x2000, 42).ret, 0);
	CHECK_EQ(call(&vm, 1, VMM_HC_REPORT, 0x2000, 43).ret, 0); /* replaces */
	uint64_t v = 0;
	CHECK(hc_report_get(&vm, 1, "ops", &v) && v == 43);
	CHECK(!hc_report_get(&vm, 0, "ops", &v)); /* per vCPU */
	CHECK_EQ(reports[1].n, 1);

	strcpy((char *)mem + 0x3000, "");
	CHECK_EQ(call(&vm, 0, VMM_HC_REPORT, 0x3000, 1).ret, -VMM_EINVAL);
	strcpy((char *)mem + 0x3000, "bad key");
	CHECK_EQ(call(&vm, 0, VMM_HC_REPORT, 0x3000, 1).ret, -VMM_EINVAL);
	memset(mem + 0x4000, 'k', 40); /* 32 characters or more: too long */
	mem[0x4000 + 40] = 0;
	CHECK_EQ(call(&vm, 0, VMM_HC_REPORT, 0x4000, 1).ret, -VMM_EINVAL);
	mem[0x4000 + 31] = 0; /* exactly 31 is fine */
	CHECK_EQ(call(&vm, 0, VMM_HC_REPORT, 0x4000, 1).ret, 0);
	memset(mem + MEM - 4, 'z', 4); /* key runs off the end of memory */
	CHECK_EQ(call(&vm, 0, VMM_HC_REPORT, MEM - 4, 1).ret, -VMM_EFAULT);
	CHECK_EQ(call(&vm, 0, VMM_HC_REPORT, MEM + 100, 1).ret, -VMM_EFAULT);

	/* at most HC_MAX_REPORTS distinct keys per vCPU */
	int last = 0;
	for (int i = 0; i < HC_MAX_REPORTS + 2; i++) {
		sprintf((char *)mem + 0x5000, "key%d", i);
		last = (int)call(&vm, 1, VMM_HC_REPORT, 0x5000, (uint64_t)i).ret;
	}
	CHECK_EQ(last, -VMM_EINVAL);
	CHECK_EQ(reports[1].n, HC_MAX_REPORTS);

	struct hc_result r = call(&vm, 0, VMM_HC_EXIT, 7, 0);
	CHECK(r.exit_vcpu && r.exit_status == 7);
	CHECK_EQ(call(&vm, 0, VMM_HC_WAIT, 0, 0).ret, -VMM_ENOSYS);
	CHECK_EQ(call(&vm, 0, 99, 0, 0).ret, -VMM_ENOSYS);
	CHECK_EQ(call(&vm, 0, ~0ull, 0, 0).ret, -VMM_ENOSYS);
	uint64_t errs_before = atomic_load(&vm.errors);
	CHECK(errs_before >= 9);

	/* fuzz: random numbers and arguments, always an answer, errors counted */
	unsigned seed = 7;
	uint64_t bad = 0, out_of_range = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t nr = (uint64_t)(rand_r(&seed) % 12);
		if (rand_r(&seed) % 16 == 0)
			nr = ((uint64_t)rand_r(&seed) << 32) | (uint64_t)rand_r(&seed);
		uint64_t args[4];
		for (int k = 0; k < 4; k++)
			args[k] = (rand_r(&seed) & 1) ? (uint64_t)rand_r(&seed) % (MEM + 64)
						       : ((uint64_t)rand_r(&seed) << 33) ^ (uint64_t)rand_r(&seed);
		if (nr == VMM_HC_CONSOLE_WRITE)
			args[1] %= 8192;
		r = hc_dispatch(&vm, (unsigned)(rand_r(&seed) & 1), nr, args);
		if (r.ret < 0)
			bad++;
		if (r.ret < 0 && !abi_error(r.ret))
			out_of_range++;
	}
	CHECK_EQ(out_of_range, 0);
	CHECK_EQ(atomic_load(&vm.errors) - errs_before, bad);
	test_pv_calls(mem);
	test_ack_features();
	memset(mem, 0, MEM);
	test_pv_calls_real_sched(mem);
	fuzz_real_sched(mem);
	return check_summary();
}
