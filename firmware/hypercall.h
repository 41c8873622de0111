/*
 * Hypercalls: one 8-byte MMIO load from the hypercall window (abi.h).
 * Usable at CPL0 and CPL3. Each one is a VM exit (~17 us from CPL3 on some
 * hosts), so never call these in a hot loop.
 */
#ifndef FW_HYPERCALL_H
#define FW_HYPERCALL_H

#include <stdint.h>

#include "hypercalls/abi.h"

/* VMM_HC_BASE until the device tree says otherwise (dt_config.c). */
extern uint64_t fw_hc_base;

static inline int64_t fw_hc(enum vmm_hc_nr nr, uint64_t a0, uint64_t a1,
			    uint64_t a2, uint64_t a3)
{
	register uint64_t rdi __asm__("rdi") = a0;
	register uint64_t rsi __asm__("rsi") = a1;
	register uint64_t rdx __asm__("rdx") = a2;
	register uint64_t rcx __asm__("rcx") = a3;
	uint64_t slot = __atomic_load_n(&fw_hc_base, __ATOMIC_RELAXED) + 8 * (uint64_t)nr;
	int64_t ret;

	/* "memory": the VMM reads guest memory (strings, keys) during the exit. */
	__asm__ volatile("movq (%[slot]), %[ret]"
			 : [ret] "=r"(ret)
			 : [slot] "r"(slot), "r"(rdi), "r"(rsi), "r"(rdx), "r"(rcx)
			 : "memory");
	return ret;
}

static inline int64_t fw_report(const char *key, uint64_t value)
{
	return fw_hc(VMM_HC_REPORT, (uint64_t)(uintptr_t)key, value, 0, 0);
}

/* Ends this vCPU with the given status (FW_EXIT_* in fw.h). */
__attribute__((noreturn)) void fw_exit(uint32_t status);

#endif
