/*
 * CPUID for Linux guests: what KVM supports, with the in-kernel local APIC
 * kept, KVM's signature leaves (0x40000000 "KVMKVMKVM", 0x40000001 PV
 * features) filtered to what the host really serves, the features a host's
 * instruction emulator lacks masked (--cpuid-mask), and two features KVM
 * serves whatever that list says offered: the TSC-deadline timer (never
 * listed) and MTRRs (emulated on every host, listed only when the host CPU
 * has them).
 */
#ifndef VMM_VCPU_X86_CPUID_KVM_H
#define VMM_VCPU_X86_CPUID_KVM_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --cpuid-mask names, as bits. */
#define CPUID_MASK_CX16 (1u << 0)   /* CMPXCHG16B (leaf 1 ECX 13) */
#define CPUID_MASK_XSAVE (1u << 1)  /* XSAVE/OSXSAVE (leaf 1 ECX 26, 27) and leaf 0xd: the FPU uses FXSAVE */
#define CPUID_MASK_AVX (1u << 2)    /* AVX, AVX2, AVX-512 */
#define CPUID_MASK_X2APIC (1u << 3) /* leaf 1 ECX 21 */
#define CPUID_MASK_TSC_DEADLINE (1u << 4)
#define CPUID_MASK_KVM (1u << 5)    /* no KVM signature leaves at all: Linux sees no hypervisor ABI */
#define CPUID_MASK_AUTO (1u << 31)  /* not a mask: "decide from the host" (the default) */

/* "cx16,xsave", "none" or "auto" into bits; -EINVAL with err naming the word. */
int x86_cpuid_mask_parse(const char *list, unsigned *mask, char *err, size_t errlen);
/* "cx16,xsave" (or "none") for bits. */
const char *x86_cpuid_mask_names(unsigned mask, char *buf, size_t len);

/* The default mask for this host, and why ("" when nothing is masked). */
unsigned x86_cpuid_mask_auto(char *why, size_t whylen);

/* KVM_FEATURE_* bits that make the guest issue a hypercall (VMCALL). */
#define KVM_PV_NEEDS_VMCALL ((1u << 7) | (1u << 11) | (1u << 13) | (1u << 16))

/* The PV features to offer: what the host's KVM supports (leaf 0x40000001
 * EAX of KVM_GET_SUPPORTED_CPUID), less the VMCALL users when VMCALL does not
 * work here, less PV_UNHALT when pv_spinlock is off. note says what was
 * dropped and why. */
uint32_t x86_kvm_pv_features(const struct kvm_cpuid2 *supported, bool vmcall_ok, bool pv_spinlock,
			     char *note, size_t notelen);

struct x86_cpuid_linux {
	uint32_t kvm_features; /* 0x40000001 EAX */
	unsigned mask;         /* CPUID_MASK_* */
	bool tsc_deadline;     /* set leaf 1 ECX 24: x86_cpuid_linux_offer decides */
};

/*
 * What KVM serves but KVM_GET_SUPPORTED_CPUID does not list, so the VMM must
 * offer it itself: the TSC-deadline timer of the in-kernel local APIC
 * (tsc_deadline_cap: KVM_CHECK_EXTENSION(KVM_CAP_TSC_DEADLINE_TIMER), >0 yes,
 * 0 no, <0 -errno), unless o->mask hides it. Sets o->tsc_deadline and appends
 * "; offered ..." (and what was not, and why) to note.
 */
void x86_cpuid_linux_offer(struct x86_cpuid_linux *o, int tsc_deadline_cap, char *note, size_t notelen);
/* KVM_CHECK_EXTENSION(KVM_CAP_TSC_DEADLINE_TIMER) on the KVM fd: >0, 0, or -errno. */
int x86_kvm_tsc_deadline_cap(int kvm_fd);

/* A copy of supported for vCPU vcpu_id, for a Linux guest; free() it. */
struct kvm_cpuid2 *x86_cpuid_linux_for_vcpu(const struct kvm_cpuid2 *supported, unsigned vcpu_id,
					    const struct x86_cpuid_linux *o);

#endif
