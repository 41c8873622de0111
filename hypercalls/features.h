/* Feature negotiation (ABI.md 4.3): a vCPU accepts the offered features it
 * uses, and only then sees their shared-page fields. */
#ifndef VMM_HYPERCALLS_FEATURES_H
#define VMM_HYPERCALLS_FEATURES_H

#include "hypercalls/hypercalls.h"

struct hc_result hc_ack_features(struct hc_vm *vm, unsigned vcpu, uint64_t bits);

/* The VMM_PV_* bits vcpu acknowledged so far: one relaxed load, for the
 * shared-page writers' hot paths. */
static inline uint32_t hc_acked(const struct hc_vm *vm, unsigned vcpu)
{
	return vm->acked ? atomic_load_explicit(&vm->acked[vcpu], memory_order_relaxed) : 0;
}

#endif
