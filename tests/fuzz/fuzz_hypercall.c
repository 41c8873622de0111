/* libFuzzer: the hypercall dispatcher (hypercalls/dispatch.c) as a hostile
 * guest drives it, with a scheduler that never blocks: byte 0 says how many
 * calls follow (34 bytes each: nr, vcpu, 4 x u64 args); the rest of the input becomes the
 * start and the end of a 64 KiB guest memory (strings the guest points at,
 * some running into the end of memory). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hypercalls/hypercalls.h"

#define MEM (64u << 10)
#define NCPUS 4

static void console(void *opaque, const char *buf, unsigned len)
{
	(void)opaque;
	/* touch every byte the dispatcher hands out */
	static volatile char sink;
	for (unsigned i = 0; i < len; i++)
		sink = (char)(sink ^ buf[i]);
}

/* A scheduler that never blocks, so wait/kick/yield/spin reach their checks
 * of the guest's arguments (alignment, guest memory, vCPU range) and back. */
static int fake_wait(void *s, int v, uint64_t timeout_ns)
{
	(void)s, (void)v;
	return timeout_ns ? -ETIMEDOUT : 0;
}

static int fake_pair(void *s, int v, int target)
{
	(void)s, (void)v, (void)target;
	return 0;
}

static int fake_one(void *s, int v)
{
	(void)s, (void)v;
	return 0;
}

static const struct hc_sched_ops fake_sched = {
	.wait = fake_wait, .kick = fake_pair, .spin = fake_pair, .safe_point = fake_one,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hc_vcpu_reports reports[NCPUS];
	if (size < 1)
		return 0;
	size_t ncalls = data[0], calls_len;
	data++, size--;
	if (ncalls > size / 34)
		ncalls = size / 34;
	calls_len = ncalls * 34;
	const uint8_t *calls = data, *rest = data + calls_len;
	size_t nrest = size - calls_len;
	if (nrest > MEM / 2)
		nrest = MEM / 2;

	uint8_t *mem = calloc(1, MEM);
	if (!mem)
		return 0;
	memcpy(mem, rest, nrest);
	memcpy(mem + MEM - nrest, rest, nrest);
	memset(reports, 0, sizeof(reports));
	struct hc_vm vm = { .ncpus = NCPUS, .reports = reports, .console = console,
			    .sched_ops = &fake_sched, .pv_features = ~0u };
	guest_mem_init_flat(&vm.mem, mem, MEM);
	for (size_t i = 0; i < ncalls; i++, calls += 34) {
		uint64_t args[4];
		memcpy(args, calls + 2, sizeof(args));
		struct hc_result r = hc_dispatch(&vm, calls[1] % NCPUS, calls[0], args);
		(void)r;
		(void)hc_name(calls[0]);
	}
	uint64_t v;
	(void)hc_report_get(&vm, 0, "ops", &v);
	free(mem);
	return 0;
}
