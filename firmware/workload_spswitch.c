/*
 * spswitch: what one safe-point switch costs, timed by the guest. Meant for
 * two vCPUs on one slot with safe points on (vmm run -c 2 --pcpus 1
 * --safe-point on): each loops { acquire its own ticket lock; cs-cycles;
 * release; work-cycles }, so every slice end reaches the guest as
 * preempt_pending and is answered at the next lock boundary by
 * yield_to(-1) inside fw_lock_acquire/release (lock.h), not by a forced
 * exit. The locks are private: no vCPU ever waits for a lock, so what is
 * timed is the switch alone.
 *
 * Each vCPU stores its TSC into its leave stamp just before every lock
 * call (the call that may yield; a handful of instructions before the
 * hypercall) and clears it when the call returns. When a call returns
 * having yielded, and the other vCPU's stamp is set and was taken after
 * this call began, the other vCPU ran meanwhile and is now parked inside a
 * lock call, i.e. it left at a safe point: the sample is the TSC now (the
 * first instructions back) less that stamp. The TSC is one clock for all
 * vCPUs of a VM. A resume without such a stamp (the other vCPU was forced
 * out between lock calls, or did not run) is counted as unpaired.
 *
 * Reports per vCPU: "ops", the window's "elapsed_ns", "run_ns", "gaps",
 * "gap_ns", pv_* counts, "switches" (samples this vCPU took as the
 * incoming one), "unpaired"; the last vCPU to finish: "switch_ns" (median
 * over every sample of both), "switch_mean_ns", "switches_total". vCPUs
 * beyond the first two only share the window.
 */
#include "firmware/bench_window.h"
#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/lock.h"
#include "firmware/pv.h"
#include "firmware/sort.h"
#include "firmware/workload.h"

#define SPS_MAX 8192 /* samples kept per vCPU: a 500 us slice for 4 s */

static union fw_lock sps_lock[2];
static uint32_t sps_samples[2][SPS_MAX];
static uint32_t sps_all[2 * SPS_MAX];

/* Each on its own line: the owner writes it at every lock call. */
static struct {
	_Alignas(64) volatile uint64_t tsc;
} sps_leave[2];

static struct {
	_Alignas(64) uint32_t n[2];
	uint64_t sum_cycles[2];
} sps_count;

struct sps_ctx {
	struct fw_cpu *self;
	const struct lock_ops *ops;
	uint32_t me, other;
	uint64_t unpaired;
};

static void sps_lock_call(struct sps_ctx *x, bool acquire)
{
	struct fw_cpu *self = x->self;
	uint64_t yields = self->stats.yields;
	uint64_t t0 = fw_rdtsc();

	sps_leave[x->me].tsc = t0;
	if (acquire)
		fw_lock_acquire(x->ops, &sps_lock[x->me], self);
	else
		fw_lock_release(x->ops, &sps_lock[x->me], self);
	uint64_t t1 = fw_rdtsc();

	sps_leave[x->me].tsc = 0;
	if (self->stats.yields == yields)
		return;
	uint64_t s = sps_leave[x->other].tsc;
	uint32_t *n = &sps_count.n[x->me];

	if (s <= t0 || s >= t1) {
		x->unpaired++;
		return;
	}
	if (*n < SPS_MAX) {
		sps_samples[x->me][(*n)++] = fw_sample_u32(t1 - s);
		sps_count.sum_cycles[x->me] += t1 - s;
	}
}

static uint64_t sps_loop(struct sps_ctx *x, uint32_t cs, uint32_t work, uint64_t deadline)
{
	struct fw_cpu *self = x->self;
	uint64_t n = 0;

	while (fw_run_tick(&self->run) < deadline) {
		sps_lock_call(x, true);
		fw_run_busy(&self->run, cs);
		sps_lock_call(x, false);
		n++;
		fw_run_busy(&self->run, work);
	}
	return n;
}

static uint64_t to_ns(uint64_t cycles, uint64_t tsc_hz)
{
	return fw_muldiv64(cycles, 1000000000ull, tsc_hz);
}

/* The last vCPU to finish: both sample sets are complete. */
static void sps_summary(const struct fw_config *cfg)
{
	unsigned n = 0;
	uint64_t sum = 0;

	for (unsigned v = 0; v < 2; v++) {
		for (unsigned i = 0; i < sps_count.n[v]; i++)
			sps_all[n++] = sps_samples[v][i];
		sum += sps_count.sum_cycles[v];
	}
	fw_report("switches_total", n);
	if (!n)
		return;
	fw_report("switch_ns", to_ns(fw_median_u32(sps_all, n), cfg->tsc_hz));
	fw_report("switch_mean_ns", to_ns(sum / n, cfg->tsc_hz));
}

static uint32_t spswitch_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	struct sps_ctx x = { .self = self, .me = self->idx, .other = self->idx ^ 1 };
	uint32_t cs, work;
	struct fw_window w;
	uint64_t ops = 0, total;

	x.ops = fw_lock_find("ticket");
	if (!x.ops || fw_dt_workload_u32(cfg, "cs-cycles", &cs) ||
	    fw_dt_workload_u32(cfg, "work-cycles", &work))
		return FW_EXIT_CONFIG;
	if (self->idx < 2) {
		struct fw_lock_params lp = { cfg->num_cpus, 1 };

		/* Each vCPU its own lock, initialised before the window opens. */
		x.ops->init(&sps_lock[self->idx], &lp);
	}
	if (self->idx == 0)
		fw_printf("firmware: spswitch: %u vCPUs, %u ms, cs %u cycles, work %u cycles, "
			  "safe points %s\n", cfg->num_cpus, cfg->duration_ms, cs, work,
			  (self->pv & VMM_PV_SAFE_POINT) ? "on" : "off");

	fw_window_start(self, &w);
	if (self->idx < 2 && cfg->num_cpus >= 2)
		ops = sps_loop(&x, cs, work, w.deadline_tsc);
	fw_window_stop(self, &w);

	fw_report("ops", ops);
	fw_window_report(self, &w);
	fw_pv_report(self);
	if (self->idx < 2) {
		fw_report("switches", sps_count.n[self->idx]);
		fw_report("unpaired", x.unpaired);
	}
	if (fw_window_finish(self, ops, &total))
		sps_summary(cfg);
	return FW_EXIT_OK;
}

static const struct fw_workload spswitch = {
	.name = "spswitch",
	.run = spswitch_run,
};
FW_WORKLOAD_REGISTER(spswitch);
