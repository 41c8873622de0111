/*
 * The co-scheduler's hypercalls (ABI.md 4.1). Each is an exit: callers use
 * them only on slow paths, and only when the matching VMM_PV_* bit is set
 * in self->pv (a clear bit means -ENOSYS). Every call is counted in
 * self->stats so a run can report how often the PV paths were taken.
 */
#ifndef FW_PV_H
#define FW_PV_H

#include <stdint.h>

#include "firmware/cpu.h"
#include "firmware/hypercall.h"

/* Sleeps until kicked unless *word != expected (checked by the VMM, so a
 * kick sent before this call is not lost). 0 kicked, 1 value differed.
 * Wake-ups may be spurious: callers re-check their condition. */
static inline int64_t fw_pv_wait(struct fw_cpu *self, const uint32_t *word, uint32_t expected)
{
	self->stats.waits++;
	return fw_hc(VMM_HC_WAIT, (uint64_t)(uintptr_t)word, expected, 0, 0);
}

static inline void fw_pv_kick(struct fw_cpu *self, uint32_t vcpu)
{
	self->stats.kicks++;
	fw_hc(VMM_HC_KICK, vcpu, 0, 0, 0);
}

/* -1 (sign-extended, as the ABI's RDI) = whoever the VMM picks. */
static inline void fw_pv_yield_to(struct fw_cpu *self, int32_t vcpu)
{
	self->stats.yields++;
	fw_hc(VMM_HC_YIELD_TO, (uint64_t)(int64_t)vcpu, 0, 0, 0);
}

static inline void fw_pv_spin(struct fw_cpu *self, int32_t waiting_for)
{
	self->stats.spins++;
	fw_hc(VMM_HC_SPIN, (uint64_t)(int64_t)waiting_for, 0, 0, 0);
}

/* Acknowledges the offered features whose shared-page fields wait for it,
 * and opts in to them: once per vCPU, at CPL0 before the workload. */
void fw_pv_negotiate(struct fw_cpu *self);
/* "0x25 (wait-kick,spin-exit,preempted)" into buf, for banners. */
const char *fw_pv_names(uint32_t features, char *buf, unsigned len);
/* Reports pv_spins/pv_waits/pv_kicks/pv_yields; nothing when no PV
 * feature is on, so a plain run's keys stay as before. */
void fw_pv_report(const struct fw_cpu *self);

#endif
