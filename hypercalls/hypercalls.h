/*
 * The VMM side of hypercalls/ABI.md: one dispatcher that validates every
 * argument against guest memory and answers bad calls with -errno.
 */
#ifndef VMM_HYPERCALLS_H
#define VMM_HYPERCALLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hypercalls/abi.h"
#include "lib/guest_mem.h"

#define HC_MAX_REPORTS 32

struct hc_report_entry {
	char key[VMM_REPORT_KEY_MAX + 1];
	uint64_t value;
};

/* Written only by its own vCPU's thread; read after that thread is joined. */
struct hc_vcpu_reports {
	unsigned n;
	struct hc_report_entry e[HC_MAX_REPORTS];
};

/*
 * The scheduler as wait/kick/yield_to/spin see it. The glue above fills it in
 * (vmm/core/sched_glue.c), so hypercalls/ knows nothing of sched/ and a test
 * can stand in for the scheduler. vCPUs are numbered as the scheduler numbers
 * them (hc_vm.sched_base + the guest's index). Each returns 0, or -errno:
 * -ETIMEDOUT from wait goes back to the guest, any other error means this
 * vCPU must stop (hc_result.stop).
 */
struct hc_sched_ops {
	/* Sleeps until kicked (at once if a kick is pending); timeout_ns 0: no timeout. */
	int (*wait)(void *sched, int v, uint64_t timeout_ns);
	/* Wakes target; from may hand it its slot. */
	int (*kick)(void *sched, int from, int target);
	/* The guest left a spin loop by hypercall, waiting for target (-1: unknown). */
	int (*spin)(void *sched, int v, int target);
	/* The guest left its lock region: a deferred preemption may happen now. */
	int (*safe_point)(void *sched, int v);
	/* v just acknowledged a feature whose shared-page fields wait for it
	 * (VMM_PV_NEED_ACK): write their current values now, so the guest
	 * finds them on its next look, not a slice later. */
	int (*features_acked)(void *sched, int v);
};

struct hc_vm {
	struct guest_mem mem; /* every guest address is checked through it */
	unsigned ncpus;
	struct hc_vcpu_reports *reports; /* [ncpus] */
	void (*console)(void *opaque, const char *buf, unsigned len);
	void *opaque;
	/* wait/kick/yield/spin: the scheduler (NULL: none), and this VM's first vCPU in it */
	const struct hc_sched_ops *sched_ops;
	void *sched;
	int sched_base;
	uint32_t pv_features; /* VMM_PV_*: calls whose bit is clear answer -ENOSYS */
	/* [ncpus]: the VMM_PV_* bits each vCPU acknowledged (ack_features);
	 * bits only ever add. The shared-page writers read it (NULL: none yet). */
	atomic_uint *acked;
	bool host_yield;      /* --sched host: yield means sched_yield(2) */
	atomic_uint_fast64_t calls[VMM_HC_COUNT];
	atomic_uint_fast64_t errors; /* calls answered with an error code */
	atomic_uint_fast64_t warned;
};

struct hc_result {
	int64_t ret;
	bool exit_vcpu;
	uint32_t exit_status;
	int stop; /* non-zero (-ECANCELED, -EDEADLK): the scheduler says this vCPU must end */
};

/* Never fails: a bad call gets ret < 0 and is counted in vm->errors. */
struct hc_result hc_dispatch(struct hc_vm *vm, unsigned vcpu, uint64_t nr, const uint64_t args[4]);
const char *hc_name(uint64_t nr);
/* The value of key reported by vcpu, if it was. */
bool hc_report_get(const struct hc_vm *vm, unsigned vcpu, const char *key, uint64_t *value);

#endif
