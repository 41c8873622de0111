/*
 * The few lines every C test guest needs to speak hypercalls/ABI.md: one
 * 8-byte load from hypercall-base + 8 * nr, arguments in RDI, RSI, RDX, RCX.
 */
#ifndef TEST_GUEST_HC_H
#define TEST_GUEST_HC_H

#include <stdint.h>

#define HC_BASE 0xd0000000ull
enum { HC_VERSION, HC_CONSOLE_WRITE, HC_REPORT, HC_EXIT, HC_WAIT, HC_KICK, HC_YIELD_TO, HC_SPIN };

static inline int64_t hc4(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	int64_t r;
	__asm__ volatile("movq (%1), %0"
			 : "=a"(r)
			 : "r"(HC_BASE + 8 * nr), "D"(a0), "S"(a1), "d"(a2), "c"(a3)
			 : "memory");
	return r;
}

static inline void hc_report(const char *key, uint64_t v)
{
	hc4(HC_REPORT, (uint64_t)key, v, 0, 0);
}

static inline __attribute__((noreturn)) void hc_exit(uint32_t status)
{
	hc4(HC_EXIT, status, 0, 0, 0);
	for (;;)
		__asm__ volatile("hlt");
}

#endif
