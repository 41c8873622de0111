/*
 * kicklat: PV kick to the kicked vCPU's guest code running again, timed by
 * the guest. Meant for two vCPUs on two slots (vmm run -c 2 --pcpus 2),
 * the way vmm bench's futex reference wakes a thread on another CPU.
 *
 * Each round vCPU 1 says it is about to wait and calls wait(&round_word,
 * round); vCPU 0 sees that, lets it fall asleep (KL_SETTLE_US of busy
 * time, as the futex reference sleeps before its wake), moves the word on,
 * stores its TSC just before the kick hypercall and kicks vCPU 1. vCPU 1
 * reads the TSC as soon as its wait returns: the sample is that less the
 * kicker's stamp (one TSC for all vCPUs of a VM). A wait that returns 1
 * (the word had moved before it reached the VMM: the sleeper was not
 * asleep) is no sample; it is counted as "early" and the kick that follows
 * is consumed by one more wait, so no later round sees a stale kick.
 *
 * Reports: vCPU 0 "ops" (kicks sent); vCPU 1 "ops" (waits woken by a
 * kick), "kick_ns" (median sample), "kick_mean_ns", "kicks_timed",
 * "early"; both the window's keys and pv_* counts. Needs PV_WAIT_KICK.
 * With one vCPU there is nobody to kick; vCPUs beyond two only share the
 * window.
 */
#include "firmware/bench_window.h"
#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/pv.h"
#include "firmware/sort.h"
#include "firmware/workload.h"

#define KL_MAX 8192
#define KL_SETTLE_US 200

static uint32_t kl_samples[KL_MAX];

static struct {
	_Alignas(64) uint32_t word; /* the sleeper waits while it equals its round */
	_Alignas(64) uint32_t ready; /* round + 1: the sleeper is about to wait */
	uint32_t stop;
	_Alignas(64) uint64_t kick_tsc;
} kl;

static uint64_t to_ns(uint64_t cycles, uint64_t tsc_hz)
{
	return fw_muldiv64(cycles, 1000000000ull, tsc_hz);
}

static uint64_t kl_kicker(struct fw_cpu *self, uint64_t deadline)
{
	uint64_t settle = fw_muldiv64(KL_SETTLE_US, self->cfg->tsc_hz, 1000000);

	for (uint32_t i = 0;; i++) {
		while (__atomic_load_n(&kl.ready, __ATOMIC_ACQUIRE) != i + 1)
			fw_pause();
		fw_run_busy(&self->run, settle);
		bool last = fw_run_tick(&self->run) >= deadline;

		if (last)
			__atomic_store_n(&kl.stop, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&kl.word, i + 1, __ATOMIC_RELEASE);
		uint64_t t = fw_rdtsc();

		__atomic_store_n(&kl.kick_tsc, t, __ATOMIC_RELEASE);
		fw_pv_kick(self, 1);
		if (last)
			return i + 1;
	}
}

struct kl_result {
	uint64_t woken, early, sum_cycles;
	uint32_t n;
};

/* 0, or a negative wait result (the ABI's -errno). */
static int64_t kl_sleeper(struct fw_cpu *self, struct kl_result *res)
{
	for (uint32_t i = 0;; i++) {
		__atomic_store_n(&kl.ready, i + 1, __ATOMIC_RELEASE);
		int64_t r;

		do {
			r = fw_pv_wait(self, &kl.word, i);
		} while (r == 0 && __atomic_load_n(&kl.word, __ATOMIC_ACQUIRE) == i);
		uint64_t t = fw_rdtsc();

		if (r < 0)
			return r;
		if (r == 1) {
			res->early++;
			/* The round's kick comes anyway: consume it here. */
			r = fw_pv_wait(self, &kl.word, i + 1);
			if (r < 0)
				return r;
		} else {
			uint64_t s = __atomic_load_n(&kl.kick_tsc, __ATOMIC_ACQUIRE);

			res->woken++;
			if (t > s && res->n < KL_MAX) {
				kl_samples[res->n++] = fw_sample_u32(t - s);
				res->sum_cycles += t - s;
			}
		}
		fw_run_tick(&self->run);
		if (__atomic_load_n(&kl.stop, __ATOMIC_RELAXED))
			return 0;
	}
}

static uint32_t kicklat_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	bool paired = self->idx < 2 && cfg->num_cpus >= 2;
	struct kl_result res = { 0 };
	struct fw_window w;
	uint64_t ops = 0, total;
	int64_t r = 0;

	if (!(self->pv & VMM_PV_WAIT_KICK)) {
		fw_config_error(cfg, "kicklat needs wait/kick (vmm run --pv-spinlock on)");
		return FW_EXIT_CONFIG;
	}
	if (self->idx == 0)
		fw_printf("firmware: kicklat: %u vCPUs, %u ms, %u us before each kick\n",
			  cfg->num_cpus, cfg->duration_ms, KL_SETTLE_US);

	fw_window_start(self, &w);
	if (paired && self->idx == 0)
		ops = kl_kicker(self, w.deadline_tsc);
	else if (paired) {
		r = kl_sleeper(self, &res);
		ops = res.woken;
	}
	fw_window_stop(self, &w);
	if (r < 0) {
		fw_printf("firmware: kicklat: wait failed: %ld\n", (long)r);
		return FW_EXIT_VERIFY;
	}

	fw_report("ops", ops);
	fw_window_report(self, &w);
	fw_pv_report(self);
	if (paired && self->idx == 1) {
		fw_report("kicks_timed", res.n);
		fw_report("early", res.early);
		if (res.n) {
			fw_report("kick_mean_ns", to_ns(res.sum_cycles / res.n, cfg->tsc_hz));
			fw_report("kick_ns", to_ns(fw_median_u32(kl_samples, res.n), cfg->tsc_hz));
		}
	}
	fw_window_finish(self, ops, &total);
	return FW_EXIT_OK;
}

static const struct fw_workload kicklat = {
	.name = "kicklat",
	.run = kicklat_run,
};
FW_WORKLOAD_REGISTER(kicklat);
