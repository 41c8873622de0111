/*
 * lockbench: every vCPU loops { lock; critical section; unlock; private
 * work } until a common deadline. The critical section increments a shared
 * counter non-atomically, so counter == sum of ops proves mutual exclusion.
 * Reports per vCPU: "ops", "elapsed_ns", "run_ns", "gaps", "gap_ns" (its
 * own running time, bench_window.h), and pv_* counts when the VMM offers
 * PV features (pv.h); the last vCPU to finish: "counter".
 */
#include "firmware/bench_window.h"
#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"
#include "firmware/lock.h"
#include "firmware/pv.h"
#include "firmware/workload.h"

static union fw_lock bench_lock;
static _Alignas(64) volatile uint64_t shared_counter;

struct lockbench_params {
	const struct lock_ops *ops;
	const char *lock_name;
	uint32_t cs_cycles, work_cycles, spin_threshold;
};

static int parse(const struct fw_config *cfg, struct lockbench_params *p)
{
	char names[128];

	if (fw_dt_workload_str(cfg, "lock", &p->lock_name) ||
	    fw_dt_workload_u32(cfg, "cs-cycles", &p->cs_cycles) ||
	    fw_dt_workload_u32(cfg, "work-cycles", &p->work_cycles) ||
	    fw_dt_workload_u32(cfg, "spin-threshold", &p->spin_threshold))
		return -1;
	p->ops = fw_lock_find(p->lock_name);
	if (!p->ops) {
		fw_config_error(cfg, "unknown lock \"%s\" (known: %s)", p->lock_name,
				fw_lock_names(names, sizeof(names)));
		return -1;
	}
	return 0;
}

/* The measured loop; kept free of exits and of anything not under test.
 * Its TSC reads (deadline, busy work, spin pauses) also run the meter. */
static uint64_t bench_loop(const struct lockbench_params *p, struct fw_cpu *self,
			   uint64_t deadline)
{
	const struct lock_ops *ops = p->ops;
	uint64_t n = 0;

	while (fw_run_tick(&self->run) < deadline) {
		fw_lock_acquire(ops, &bench_lock, self);
		shared_counter = shared_counter + 1; /* deliberately not atomic */
		fw_run_busy(&self->run, p->cs_cycles);
		fw_lock_release(ops, &bench_lock, self);
		n++;
		fw_run_busy(&self->run, p->work_cycles);
	}
	return n;
}

static uint32_t lockbench_run(struct fw_cpu *self)
{
	const struct fw_config *cfg = self->cfg;
	struct lockbench_params p;
	struct fw_window w;
	uint64_t ops, total;

	if (parse(cfg, &p))
		return FW_EXIT_CONFIG;
	if (self->idx == 0) {
		struct fw_lock_params lp = { cfg->num_cpus, p.spin_threshold };
		char pv[96];

		/* Before vCPU 0 arrives at the start barrier, so before any use. */
		p.ops->init(&bench_lock, &lp);
		fw_printf("firmware: lockbench: lock %s, %u vCPUs, %u ms, cs %u cycles, "
			  "work %u cycles, tsc %lu Hz, pv-features %s\n",
			  p.ops->name, cfg->num_cpus, cfg->duration_ms, p.cs_cycles,
			  p.work_cycles, cfg->tsc_hz, fw_pv_names(cfg->pv_features, pv, sizeof(pv)));
	}

	fw_window_start(self, &w);
	ops = bench_loop(&p, self, w.deadline_tsc);
	fw_window_stop(self, &w);

	fw_report("ops", ops);
	fw_window_report(self, &w);
	fw_pv_report(self);
	if (!fw_window_finish(self, ops, &total))
		return FW_EXIT_OK;

	/* Last to finish: every critical section is over. */
	uint64_t counter = shared_counter;

	fw_report("counter", counter);
	fw_printf("firmware: lockbench: %lu acquisitions, shared counter %lu: %s\n", total,
		  counter, counter == total ? "mutual exclusion held" : "MUTUAL EXCLUSION VIOLATED");
	return counter == total ? FW_EXIT_OK : FW_EXIT_VERIFY;
}

static const struct fw_workload lockbench = {
	.name = "lockbench",
	.run = lockbench_run,
};
FW_WORKLOAD_REGISTER(lockbench);
