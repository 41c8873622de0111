/*
 * hcfuzz_guest: every vCPU throws CALLS pseudo-random hypercalls (all but
 * exit) with random arguments at the VMM: numbers past the table, addresses
 * anywhere, unknown vCPUs, waits with short timeouts. The VMM must answer
 * each one and stay up. The guest counts the answers that were errors
 * (timeouts of a wait are not errors) and reports them, so the test can
 * compare with the VMM's own count.
 */
#include "guest_hc.h"

#define CALLS 3000

static volatile uint32_t word;
static char text[16] = "hcfuzz\n";

void guest_main(uint64_t fdt, uint64_t idx);

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mostly plausible values, sometimes wild ones. */
static uint64_t arg(uint64_t *s)
{
	switch (rnd(s) % 6) {
	case 0: return rnd(s);
	case 1: return rnd(s) % 16;
	case 2: return (uint64_t)-1;
	case 3: return (uint64_t)&word + rnd(s) % 8;
	case 4: return rnd(s) % (256ull << 20);
	default: return (uint64_t)text;
	}
}

void guest_main(uint64_t fdt, uint64_t idx)
{
	(void)fdt;
	uint64_t s = 0x9e3779b97f4a7c15ull ^ (idx + 1), errors = 0;
	for (int i = 0; i < CALLS; i++) {
		uint64_t nr = rnd(&s) % 12;
		if (nr == HC_EXIT)
			nr = 8 + rnd(&s) % 504; /* the rest of the 4 KiB window */
		uint64_t a0 = arg(&s), a1 = arg(&s), a2 = arg(&s), a3 = arg(&s);
		if (nr == HC_WAIT)
			a2 = 1000 + rnd(&s) % 100000; /* never an endless wait */
		if (nr == HC_CONSOLE_WRITE)
			a1 %= 8; /* keep the test's output readable */
		int64_t r = hc4(nr, a0, a1, a2, a3);
		if (r < 0 && r != -110)
			errors++;
	}
	hc_report("calls", CALLS);
	hc_report("errors", errors);
	hc_exit(0);
}
