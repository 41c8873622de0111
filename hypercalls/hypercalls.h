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

struct sched;

struct hc_vm {
	uint8_t *mem;
	uint64_t mem_size;
	unsigned ncpus;
	struct hc_vcpu_reports *reports; /* [ncpus] */
	void (*console)(void *opaque, const char *buf, unsigned len);
	void *opaque;
	/* wait/kick/yield/spin: the scheduler, and this VM's first vCPU in it */
	struct sched *sched;
	int sched_base;
	uint32_t pv_features; /* VMM_PV_*: calls whose bit is clear answer -ENOSYS */
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
