/* CPUID a vCPU sees: what KVM supports, less what this VMM does not emulate. */
#ifndef VMM_VCPU_X86_CPUID_H
#define VMM_VCPU_X86_CPUID_H

#include <linux/kvm.h>

/* A copy of supported, filtered and patched for vcpu_id; free() it. NULL on ENOMEM. */
struct kvm_cpuid2 *x86_cpuid_for_vcpu(const struct kvm_cpuid2 *supported, unsigned vcpu_id);

#endif
