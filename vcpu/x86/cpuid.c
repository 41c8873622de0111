#include "vcpu/x86/cpuid.h"

#include <stdlib.h>
#include <string.h>

/* Leaf 1 ECX/EDX bits. */
#define ECX_MONITOR (1u << 3)  /* MWAIT would idle in the host kernel, unseen by our scheduler */
#define ECX_VMX (1u << 5)      /* no nested virtualization offered */
#define ECX_SMX (1u << 6)
#define ECX_X2APIC (1u << 21)  /* no local APIC is emulated for direct-entry guests */
#define ECX_TSC_DEADLINE (1u << 24)
#define ECX_HYPERVISOR (1u << 31)
#define EDX_APIC (1u << 9)
/* Leaf 7 ECX. */
#define L7_ECX_WAITPKG (1u << 5) /* UMWAIT: another way to idle unseen */

struct kvm_cpuid2 *x86_cpuid_for_vcpu(const struct kvm_cpuid2 *sup, unsigned vcpu_id)
{
	size_t sz = sizeof(*sup) + sup->nent * sizeof(sup->entries[0]);
	struct kvm_cpuid2 *c = malloc(sz);
	if (!c)
		return NULL;
	memcpy(c, sup, sz);

	for (unsigned i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];
		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0x00ffffff) | (vcpu_id << 24);
			e->ecx &= ~(ECX_MONITOR | ECX_VMX | ECX_SMX | ECX_X2APIC | ECX_TSC_DEADLINE);
			e->ecx |= ECX_HYPERVISOR;
			e->edx &= ~EDX_APIC;
			break;
		case 5: /* MONITOR/MWAIT parameters, meaningless without the feature */
			e->eax = e->ebx = e->ecx = e->edx = 0;
			break;
		case 7:
			if (e->index == 0)
				e->ecx &= ~L7_ECX_WAITPKG;
			break;
		case 0xb:
		case 0x1f: /* topology leaves carry the x2APIC ID in EDX */
			e->edx = vcpu_id;
			break;
		default:
			break;
		}
	}
	return c;
}
