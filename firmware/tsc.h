/* Time-stamp counter helpers; the guest's only clock. */
#ifndef FW_TSC_H
#define FW_TSC_H

#include <stdint.h>

static inline uint64_t fw_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* For spin-wait loops only: on hardware with pause-loop exiting, PAUSE is
 * what tells the host "this vCPU spins". */
static inline void fw_pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

/* a * b / c with a 128-bit intermediate, saturating at UINT64_MAX (and for
 * c == 0) instead of raising #DE; no libgcc needed. */
static inline uint64_t fw_muldiv64(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t lo, hi, q, r;

	__asm__("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
	if (c == 0 || hi >= c)
		return UINT64_MAX;
	__asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(c) : "cc");
	(void)r;
	return q;
}

#endif
