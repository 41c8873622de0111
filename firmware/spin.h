/*
 * The one way the firmware spins. A spin loop publishes hints in the
 * shared page (plain stores, no exit): spinning_since when it starts,
 * waiting_for = the vCPU it waits on. After spin_threshold pauses without
 * progress, fw_spin_pause returns true once and restarts its count; the
 * caller then refreshes waiting_for and takes its slow step: sleep (PV
 * locks with VMM_PV_WAIT_KICK) or fw_spin_exit, the software pause-loop
 * exit, which calls SPIN only when the VMM serves it.
 *
 *	fw_spin_start(self, &s, who);
 *	while (!done) {
 *		if (fw_spin_pause(self, &s))
 *			fw_spin_exit(self);
 *	}
 *	fw_spin_stop(self);
 */
#ifndef FW_SPIN_H
#define FW_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#include "firmware/cpu.h"
#include "firmware/pv.h"
#include "firmware/run_meter.h"
#include "firmware/tsc.h"

struct fw_spin {
	uint32_t left;   /* pauses until the next slow step */
	uint32_t pauses; /* in all: the run meter ticks every 16th */
};

static inline void fw_spin_waiting_for(struct fw_cpu *self, int32_t vcpu)
{
	self->sp->waiting_for = vcpu;
}

static inline void fw_spin_start(struct fw_cpu *self, struct fw_spin *s, int32_t waiting_for)
{
	s->left = self->spin_threshold;
	s->pauses = 0;
	self->sp->waiting_for = waiting_for;
	self->sp->spinning_since = fw_rdtsc();
}

/* The thing waited on moved (a ticket passed, an ack came): whoever we
 * wait behind is running, so an exit now would only cost. */
static inline void fw_spin_progress(const struct fw_cpu *self, struct fw_spin *s)
{
	s->left = self->spin_threshold;
}

/* Also the run meter's tick while spinning (a vCPU spinning runs, however
 * long it waits): every 16th pause, so the loop keeps its pace and a step
 * stays well below the 2 us gap (16 of Skylake's 140-cycle PAUSE: ~1 us
 * at 2 GHz). Counted apart from `left`, which progress resets. */
static inline bool fw_spin_pause(struct fw_cpu *self, struct fw_spin *s)
{
	fw_pause();
	if (!(++s->pauses & 15))
		fw_run_tick(&self->run);
	if (--s->left)
		return false;
	s->left = self->spin_threshold;
	return true;
}

static inline void fw_spin_exit(struct fw_cpu *self)
{
	if (self->pv & VMM_PV_SPIN_EXIT)
		fw_pv_spin(self, self->sp->waiting_for);
}

static inline void fw_spin_stop(struct fw_cpu *self)
{
	self->sp->spinning_since = 0;
	self->sp->waiting_for = -1;
}

#endif
