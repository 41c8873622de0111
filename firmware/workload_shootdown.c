/*
 * shootdown: every vCPU does chunks of work_cycles private work; every
 * num_cpus chunks (vCPU i at chunks i, i + n, ..., so initiations are
 * staggered evenly) it is the initiator of a TLB-shootdown-like request:
 * it posts to every other vCPU's mailbox and waits for each ack. There are
 * no interrupts, so targets poll their mailbox before each chunk, and an
 * initiator polls its own while it waits (two initiators may wait on each
 * other). With pv-shootdown and VMM_PV_PREEMPTED, the initiator does not
 * wait for a target whose shared page says preempted: the request stays
 * posted and the target acts on it when it runs again (KVM's PV TLB flush).
 *
 * Reports per vCPU: "ops" (shootdowns it initiated and completed),
 * "elapsed_ns", "run_ns", "gaps", "gap_ns" (bench_window.h), "requests"
 * (requests it posted), "flushes" (requests it acted on, deferred ones
 * included), "deferred" (targets it did not wait for), pv_* counts with
 * PV features. After the window every vCPU drains its mailbox once no one
 * can post any more, so sum(flushes) == sum(requests); the last vCPU to
 * finish checks that.
 */
#include "firmware/bench_window.h"
#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/pv.h"
#include "firmware/spin.h"
#include "firmware/workload.h"

/*
 * Mailboxes as counts, so nothing is lost or merged: posted[t][i] is how
 * many requests initiator i posted to target t (written by i only),
 * done[t][i] how many of them t acted on (written by t only). Rows are
 * `stride` words apart, a whole number of cache lines, so a target's acks
 * share no line with another target's.
 */
static _Alignas(64) uint32_t posted[FW_MAX_CPUS * FW_MAX_CPUS];
static _Alignas(64) uint32_t done[FW_MAX_CPUS * FW_MAX_CPUS];

static struct {
	_Alignas(64) uint32_t doorbell; /* set by posters: "scan your row" */
} mbox[FW_MAX_CPUS];

static struct {
	_Alignas(64) uint32_t initiators_done; /* vCPUs past their last post */
	_Alignas(64) uint64_t requests, flushes;
} sd;

/* One per vCPU, on its stack. */
struct shootdown {
	uint32_t n, stride;
	bool pv;          /* skip preempted targets */
	uint64_t flushes; /* requests this vCPU acted on */
};

/* Acts on every request posted to us that we have not acted on yet. */
static void scan_mailbox(struct shootdown *d, const struct fw_cpu *self)
{
	uint32_t *row_posted = &posted[self->idx * d->stride];
	uint32_t *row_done = &done[self->idx * d->stride];

	for (uint32_t i = 0; i < d->n; i++) {
		uint32_t p = __atomic_load_n(&row_posted[i], __ATOMIC_ACQUIRE);
		uint32_t a = row_done[i];

		if (p != a) {
			d->flushes += p - a; /* the "flush" */
			__atomic_store_n(&row_done[i], p, __ATOMIC_RELEASE);
		}
	}
}

/* One load of our own line unless someone rang. */
static inline void poll_mailbox(struct shootdown *d, const struct fw_cpu *self)
{
	uint32_t *bell = &mbox[self->idx].doorbell;

	if (!__atomic_load_n(bell, __ATOMIC_RELAXED))
		return;
	/* Clear before scanning: a post that rings after this is seen by the
	 * next poll, one that rang before is in the row we scan now. */
	__atomic_exchange_n(bell, 0, __ATOMIC_ACQUIRE);
	scan_mailbox(d, self);
}

/* Posts to every other vCPU and waits for their acks; returns the number
 * of targets not waited for because they were preempted. */
static uint32_t initiate(struct shootdown *d, struct fw_cpu *self, uint64_t *requests)
{
	const struct fw_config *cfg = self->cfg;
	uint32_t deferred = 0;
	struct fw_spin s;

	for (uint32_t t = 0; t < d->n; t++) {
		uint32_t *slot = &posted[t * d->stride + self->idx];

		if (t == self->idx)
			continue;
		__atomic_store_n(slot, *slot + 1, __ATOMIC_RELEASE);
		/* An RMW, so every earlier post is ordered before it for the
		 * target's exchange, whoever rang last. */
		__atomic_exchange_n(&mbox[t].doorbell, 1, __ATOMIC_RELEASE);
		(*requests)++;
	}
	for (uint32_t t = 0; t < d->n; t++) {
		uint32_t want = posted[t * d->stride + self->idx];
		uint32_t *ack = &done[t * d->stride + self->idx];
		volatile struct vmm_shared_page *tp = fw_shared_page(cfg, t);

		if (t == self->idx || __atomic_load_n(ack, __ATOMIC_ACQUIRE) == want)
			continue;
		fw_spin_start(self, &s, (int32_t)t);
		while (__atomic_load_n(ack, __ATOMIC_ACQUIRE) != want) {
			if (d->pv && tp->preempted) {
				deferred++;
				break;
			}
			poll_mailbox(d, self);
			if (fw_spin_pause(self, &s))
				fw_spin_exit(self);
		}
		fw_spin_stop(self);
	}
	return deferred;
}

/* After the window: keep acting on requests until no one can post, then
 * take whatever is left (deferred requests included). */
static void drain(struct shootdown *d, struct fw_cpu *self)
{
	struct fw_spin s;

	__atomic_add_fetch(&sd.initiators_done, 1, __ATOMIC_ACQ_REL);
	fw_spin_start(self, &s, -1);
	while (__atomic_load_n(&sd.initiators_done, __ATOMIC_ACQUIRE) != d->n) {
		poll_mailbox(d, self);
		if (fw_spin_pause(self, &s))
			fw_spin_exit(self);
	}
	fw_spin_stop(self);
	scan_mailbox(d, self);
}

static uint32_t shootdown_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	uint32_t work_cycles, pv_shootdown, countdown = self->idx;
	uint64_t ops = 0, requests = 0, deferred = 0, total;
	struct shootdown d = { .n = cfg->num_cpus, .stride = (cfg->num_cpus + 15) & ~15u };
	struct fw_window w;

	if (fw_dt_workload_u32(cfg, "work-cycles", &work_cycles) ||
	    fw_dt_workload_u32_opt(cfg, "pv-shootdown", 1, &pv_shootdown))
		return FW_EXIT_CONFIG;
	d.pv = pv_shootdown && (self->pv & VMM_PV_PREEMPTED);
	if (self->idx == 0) {
		char pv[96];

		fw_printf("firmware: shootdown: %u vCPUs, %u ms, work %u cycles, %s variant, "
			  "tsc %lu Hz, pv-features %s\n",
			  cfg->num_cpus, cfg->duration_ms, work_cycles, d.pv ? "PV" : "plain",
			  cfg->tsc_hz, fw_pv_names(cfg->pv_features, pv, sizeof(pv)));
	}

	fw_window_start(self, &w);
	while (fw_run_tick(&self->run) < w.deadline_tsc) {
		/* First thing: a vCPU back from preemption acts on what it missed. */
		poll_mailbox(&d, self);
		if (countdown-- == 0) {
			countdown = d.n - 1;
			deferred += initiate(&d, self, &requests);
			ops++;
		}
		fw_run_busy(&self->run, work_cycles);
	}
	fw_window_stop(self, &w);
	drain(&d, self);

	fw_report("ops", ops);
	fw_window_report(self, &w);
	fw_report("requests", requests);
	fw_report("flushes", d.flushes);
	fw_report("deferred", deferred);
	fw_pv_report(self);
	__atomic_add_fetch(&sd.requests, requests, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sd.flushes, d.flushes, __ATOMIC_RELAXED);
	if (!fw_window_finish(self, ops, &total))
		return FW_EXIT_OK;

	uint64_t req = __atomic_load_n(&sd.requests, __ATOMIC_RELAXED);
	uint64_t fl = __atomic_load_n(&sd.flushes, __ATOMIC_RELAXED);

	fw_printf("firmware: shootdown: %lu shootdowns, %lu requests posted, %lu acted on: %s\n",
		  total, req, fl, req == fl ? "every request acted on" : "REQUESTS LOST");
	return req == fl ? FW_EXIT_OK : FW_EXIT_VERIFY;
}

static const struct fw_workload shootdown = {
	.name = "shootdown",
	.run = shootdown_run,
};
FW_WORKLOAD_REGISTER(shootdown);
