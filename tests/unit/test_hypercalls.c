/* The hypercall dispatcher: each call's contract, and random calls never crash it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hypercalls/hypercalls.h"

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

static const struct hc_sched_ops fake_ops = {
	.wait = fake_wait, .kick = fake_kick, .spin = fake_spin, .safe_point = fake_safe_point,
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
		if (r.ret < -VMM_ENOSYS)
			out_of_range++;
	}
	CHECK_EQ(out_of_range, 0);
	CHECK_EQ(atomic_load(&vm.errors) - errs_before, bad);
	test_pv_calls(mem);
	return check_summary();
}
