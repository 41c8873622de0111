/* libFuzzer: the hypercall dispatcher (hypercalls/dispatch.c) as a hostile
 * guest drives it, against the real co-scheduler: byte 0 says how many
 * calls follow (34 bytes each: nr, vcpu, 4 x u64 args); the rest of the input becomes the
 * start and the end of a 64 KiB guest memory (strings the guest points at,
 * some running into the end of memory). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hypercalls/hypercalls.h"
#include "sched/sched.h"
#include "vmm/core/sched_hc_ops.h"

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

/*
 * The real co-scheduler (sched/) behind wait/kick/yield_to/spin, with one
 * slot per vCPU and an event-loop thread that ticks, so a call blocks at
 * most for its wait's timeout, which the harness keeps short (one thread
 * drives every vCPU: a wait without one could only end in deadlock).
 */
static struct sched *sched;
static pthread_t ticker_thread;

static void *ticker(void *arg)
{
	(void)arg;
	struct timespec t = { 0, 50000 };
	for (;;) {
		nanosleep(&t, NULL);
		sched_tick(sched, sched_now_ns());
	}
	return NULL;
}

static void sched_once(void)
{
	if (sched)
		return;
	struct sched_params p = { .nvcpus = NCPUS, .npcpus = NCPUS, .policy = "holder",
				  .spin_sources = SCHED_SPIN_YIELD, .defer = true };
	const char *why = NULL;
	sched = sched_create(&p, &why);
	if (!sched)
		abort();
	sched_start(sched);
	for (int v = 0; v < NCPUS; v++)
		if (sched_vcpu_enter(sched, v) < 0) /* granted: one slot each */
			abort();
	pthread_create(&ticker_thread, NULL, ticker, NULL);
}

static bool abi_error(int64_t r)
{
	return r == -VMM_EPERM || r == -VMM_ESRCH || r == -VMM_EFAULT || r == -VMM_EINVAL ||
	       r == -VMM_ENOSYS || r == -VMM_ETIMEDOUT;
}

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
	sched_once();
	struct hc_vm vm = { .ncpus = NCPUS, .reports = reports, .console = console,
			    .sched_ops = &sched_glue_hc_ops, .sched = sched, .pv_features = ~0u };
	guest_mem_init_flat(&vm.mem, mem, MEM);
	for (size_t i = 0; i < ncalls; i++, calls += 34) {
		uint64_t args[4];
		memcpy(args, calls + 2, sizeof(args));
		if (calls[0] == VMM_HC_WAIT)
			args[2] = 1 + args[2] % 20000; /* never forever (see sched_once) */
		unsigned v = calls[1] % NCPUS;
		struct hc_result r = hc_dispatch(&vm, v, calls[0], args);
		/* every answer is one the ABI defines; the scheduler never stops us */
		if (r.stop || (r.ret < 0 && !abi_error(r.ret)))
			abort();
		if (sched_vcpu_after_exit(sched, (int)v) && sched_vcpu_yield_slot(sched, (int)v) < 0)
			abort();
		(void)hc_name(calls[0]);
	}
	uint64_t v;
	(void)hc_report_get(&vm, 0, "ops", &v);
	free(mem);
	return 0;
}
