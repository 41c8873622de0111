/*
 * barrier: phases of work_cycles private work separated by an all-vCPU
 * barrier (where gang scheduling wins: one preempted vCPU stalls all).
 * The last vCPU to arrive at a barrier decides, from the shared deadline,
 * whether it is the final one and publishes that with the release, so
 * every vCPU stops after the same phase.
 *
 * Reports per vCPU: "ops" (phases completed, equal on every vCPU),
 * "elapsed_ns", "run_ns", "gaps", "gap_ns" (bench_window.h), "early_releases" (times this vCPU left a barrier before
 * its neighbour had arrived: must be 0), pv_* counts with PV features.
 * The last vCPU to finish checks sum(ops) == num_cpus * phases.
 */
#include "firmware/bench_window.h"
#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/pv.h"
#include "firmware/spin.h"
#include "firmware/workload.h"

/*
 * A sense-reversing barrier whose sense is a generation count: waiters
 * wait for gen to move past the value they arrived in, so the count can be
 * reset for the next phase before anyone leaves this one.
 */
static struct {
	_Alignas(64) uint32_t count; /* arrivals at the current barrier */
	_Alignas(64) uint32_t gen;   /* barriers completed; sleepers WAIT on it */
	uint32_t stop;               /* set with gen's release: that was the last */
} bar;

/* Per vCPU, one line each: the barrier it last arrived at (a laggard is
 * one behind), whether it sleeps in WAIT on gen, its final phase count. */
static struct {
	_Alignas(64) uint32_t arrived;
	uint32_t sleeping;
	uint64_t phases;
} cpu_state[FW_MAX_CPUS];

struct barrier_params {
	uint32_t work_cycles;
	uint64_t deadline;
};

/* Some vCPU that has not arrived at barrier `target` yet, or -1. */
static int32_t find_laggard(const struct fw_cpu *self, uint32_t target)
{
	uint32_t n = self->cfg->num_cpus;

	for (uint32_t i = 1; i < n; i++) {
		uint32_t v = (self->idx + i) % n;

		if (__atomic_load_n(&cpu_state[v].arrived, __ATOMIC_RELAXED) != target)
			return (int32_t)v;
	}
	return -1;
}

/* Sleeps while gen == g. Marks itself before each WAIT: a releaser that
 * clears the mark kicks right after, so a stale clear still wakes us. */
static void barrier_sleep(struct fw_cpu *self, uint32_t g)
{
	uint32_t *sleeping = &cpu_state[self->idx].sleeping;

	while (__atomic_load_n(&bar.gen, __ATOMIC_ACQUIRE) == g) {
		__atomic_store_n(sleeping, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&bar.gen, __ATOMIC_ACQUIRE) != g)
			break;
		if (fw_pv_wait(self, &bar.gen, g) < 0)
			break; /* not served after all: back to spinning */
	}
	__atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
}

/* The last arriver: open the barrier, then wake only declared sleepers. */
static void barrier_release(struct fw_cpu *self, uint32_t g, bool stop)
{
	uint32_t n = self->cfg->num_cpus;

	__atomic_store_n(&bar.count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&bar.stop, stop, __ATOMIC_RELAXED);
	__atomic_store_n(&bar.gen, g + 1, __ATOMIC_RELEASE);
	if (!(self->pv & VMM_PV_WAIT_KICK))
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t v = 0; v < n; v++) {
		if (v == self->idx || !__atomic_load_n(&cpu_state[v].sleeping, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&cpu_state[v].sleeping, 0, __ATOMIC_RELAXED);
		fw_pv_kick(self, v);
	}
}

/* Waits at barrier g (0, 1, ...); true when it was the last one. */
static bool barrier_wait(struct fw_cpu *self, const struct barrier_params *p, uint32_t g)
{
	struct fw_spin s;

	__atomic_store_n(&cpu_state[self->idx].arrived, g + 1, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&bar.count, 1, __ATOMIC_ACQ_REL) == self->cfg->num_cpus) {
		barrier_release(self, g, fw_run_tick(&self->run) >= p->deadline);
	} else {
		uint32_t seen = __atomic_load_n(&bar.count, __ATOMIC_RELAXED);

		fw_spin_start(self, &s, -1);
		while (__atomic_load_n(&bar.gen, __ATOMIC_ACQUIRE) == g) {
			uint32_t now = __atomic_load_n(&bar.count, __ATOMIC_RELAXED);

			if (now != seen) { /* others still arrive */
				seen = now;
				fw_spin_progress(self, &s);
			}
			if (!fw_spin_pause(self, &s))
				continue;
			fw_spin_waiting_for(self, find_laggard(self, g + 1));
			if (self->pv & VMM_PV_WAIT_KICK)
				barrier_sleep(self, g);
			else
				fw_spin_exit(self);
		}
		fw_spin_stop(self);
	}
	return __atomic_load_n(&bar.stop, __ATOMIC_RELAXED);
}

static uint32_t barrier_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	struct barrier_params p;
	struct fw_window w;
	uint64_t phases = 0, early = 0, total;
	uint32_t neighbour = (self->idx + 1) % cfg->num_cpus;
	bool last;

	if (fw_dt_workload_u32(cfg, "work-cycles", &p.work_cycles))
		return FW_EXIT_CONFIG;
	if (self->idx == 0) {
		char pv[96];

		fw_printf("firmware: barrier: %u vCPUs, %u ms, work %u cycles, tsc %lu Hz, "
			  "pv-features %s\n",
			  cfg->num_cpus, cfg->duration_ms, p.work_cycles, cfg->tsc_hz,
			  fw_pv_names(cfg->pv_features, pv, sizeof(pv)));
	}

	fw_window_start(self, &w);
	p.deadline = w.deadline_tsc;
	do {
		fw_run_busy(&self->run, p.work_cycles);
		last = barrier_wait(self, &p, (uint32_t)phases);
		phases++;
		/* Cheap self-check: nobody leaves before everyone arrived. */
		if (__atomic_load_n(&cpu_state[neighbour].arrived, __ATOMIC_RELAXED) < phases)
			early++;
	} while (!last);
	fw_window_stop(self, &w);

	fw_report("ops", phases);
	fw_window_report(self, &w);
	fw_report("early_releases", early);
	fw_pv_report(self);
	/* Published before fw_window_finish's release, read after the last
	 * finisher's acquire. */
	cpu_state[self->idx].phases = phases;
	if (!fw_window_finish(self, phases, &total))
		return early ? FW_EXIT_VERIFY : FW_EXIT_OK;

	bool ok = !early;

	for (uint32_t v = 0; v < cfg->num_cpus; v++)
		ok = ok && cpu_state[v].phases == phases;

	fw_printf("firmware: barrier: %lu phases on each of %u vCPUs, %lu in all: %s\n", phases,
		  cfg->num_cpus, total, ok ? "every vCPU passed every barrier" : "BARRIER BROKEN");
	return ok ? FW_EXIT_OK : FW_EXIT_VERIFY;
}

static const struct fw_workload barrier = {
	.name = "barrier",
	.run = barrier_run,
};
FW_WORKLOAD_REGISTER(barrier);
