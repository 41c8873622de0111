/*
 * ack_features (ABI.md 4.3): the guest half of feature negotiation, as
 * virtio's driver features or KVM's PV MSRs. Fields added to the shared page
 * after version 2 fixed it were reserved bytes, which a guest of that time
 * may check are 0; so the VMM writes them only for a vCPU that said it knows
 * them. The ack is a hypercall, not a word in the page, because the VMM must
 * learn it at a known moment: the fields are written before the call
 * returns, and the hot paths read a VMM-private word, never guest memory.
 */
#include "hypercalls/features.h"

#include "hypercalls/pv_calls.h"

struct hc_result hc_ack_features(struct hc_vm *vm, unsigned vcpu, uint64_t bits)
{
	/* Accepting what was not offered is using it: refused whole, like any
	 * bad argument, so a guest never half-negotiates. */
	if (bits & ~(uint64_t)vm->pv_features)
		return hc_bad(vm, vcpu, VMM_HC_ACK_FEATURES, VMM_EINVAL, "acknowledges a feature not offered");
	if (!vm->acked)
		return (struct hc_result){ .ret = (int64_t)bits };
	uint32_t old = atomic_fetch_or(&vm->acked[vcpu], (uint32_t)bits);
	/* Set before the writers run (under the scheduler's mutex), so none
	 * of their later writes is dropped. */
	if ((bits & ~old & VMM_PV_NEED_ACK) && vm->sched_ops && vm->sched_ops->features_acked) {
		int r = vm->sched_ops->features_acked(vm->sched, vm->sched_base + (int)vcpu);
		if (r < 0)
			return (struct hc_result){ .ret = r, .stop = r };
	}
	return (struct hc_result){ .ret = (int64_t)(old | bits) };
}
