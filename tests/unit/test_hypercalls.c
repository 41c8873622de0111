/* The hypercall dispatcher: each call's contract, and random calls never crash it. */
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

int main(void)
{
	static uint8_t mem[MEM];
	struct hc_vcpu_reports reports[2];
	struct hc_vm vm = { .mem = mem, .mem_size = MEM, .ncpus = 2, .reports = reports, .console = console };
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
	return check_summary();
}
