/*
 * pingpong_guest: vCPUs 0 and 1 pass a token back and forth ROUNDS times.
 * A vCPU whose turn it is not waits on a word that never changes, so only a
 * kick can wake it: kicks land both before the wait (the next vCPU is still
 * looking at the token) and during it. One lost wake-up ends the run as a
 * guest deadlock (vmm status 5); one wait that fails ends it with status 2.
 */
#include "guest_hc.h"

#define ROUNDS 3000

static volatile uint32_t turn;
static volatile uint32_t never_changes;

void guest_main(uint64_t fdt, uint64_t idx);

void guest_main(uint64_t fdt, uint64_t idx)
{
	(void)fdt;
	if (idx > 1)
		hc_exit(0);
	uint64_t other = idx ^ 1, waits = 0;
	for (uint32_t r = 0; r < ROUNDS; r++) {
		while (turn != idx) {
			if (hc4(HC_WAIT, (uint64_t)&never_changes, 0, 0, 0) != 0)
				hc_exit(2);
			waits++;
		}
		turn = (uint32_t)other;
		if (hc4(HC_KICK, other, 0, 0, 0) != 0)
			hc_exit(3);
	}
	hc_report("rounds", ROUNDS);
	hc_report("waits", waits);
	hc_exit(0);
}
