/* The co-scheduler's hypercalls (ABI.md 4.1): wait, kick, yield_to, spin. */
#ifndef VMM_HYPERCALLS_PV_CALLS_H
#define VMM_HYPERCALLS_PV_CALLS_H

#include "hypercalls/hypercalls.h"

struct hc_result hc_wait(struct hc_vm *vm, unsigned vcpu, uint64_t gpa, uint64_t expected, uint64_t timeout_ns);
struct hc_result hc_kick(struct hc_vm *vm, unsigned vcpu, uint64_t target);
struct hc_result hc_yield(struct hc_vm *vm, unsigned vcpu, uint64_t nr, uint64_t target);

/* Shared with dispatch.c: a counted, warned-about error answer. */
struct hc_result hc_bad(struct hc_vm *vm, unsigned vcpu, uint64_t nr, int err, const char *why);

#endif
