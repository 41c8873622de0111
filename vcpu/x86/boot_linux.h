/*
 * The vCPU state of the Linux 64-bit boot protocol entry (boot.rst, "64-bit
 * Boot Protocol"): long mode, paging on with an identity map, a GDT with
 * flat __BOOT_CS (0x10) and __BOOT_DS (0x18), interrupts off, RSI = the zero
 * page. Application processors are left to the in-kernel local APIC: they
 * wait for INIT/SIPI from the boot CPU, as on real hardware.
 */
#ifndef VMM_VCPU_X86_BOOT_LINUX_H
#define VMM_VCPU_X86_BOOT_LINUX_H

#include <linux/kvm.h>
#include <stdint.h>

struct x86_linux_entry {
	uint64_t entry;     /* RIP: kernel load address + 0x200 */
	uint64_t zero_page; /* RSI */
	uint64_t pt_gpa;    /* CR3 */
	uint64_t gdt_gpa;
	uint16_t cs, ds, tss;
};

/* Sets the entry state on vCPU 0; on every vCPU, the local APIC's LINT
 * entries (x86_linux_lint) and the MSRs firmware would have programmed
 * (vcpu/x86/msrs_linux.h). */
int x86_boot_linux_set_vcpu(int vcpu_fd, const struct x86_linux_entry *e, unsigned vcpu_id);

#define APIC_LVT0 0x350
#define APIC_LVT1 0x360
#define APIC_LVT_MASKED (1u << 16)
#define APIC_LVT_MODE(v) (((v) >> 8) & 7u)
#define APIC_MODE_NMI 0x4u
#define APIC_MODE_EXTINT 0x7u

/* LVT0 (LINT0) and LVT1 (LINT1) for vCPU vcpu_id (0 is the boot CPU). */
struct x86_lint {
	uint32_t lvt0, lvt1;
};
struct x86_lint x86_linux_lint(unsigned vcpu_id);
/* Writes them into a KVM_GET_LAPIC image, leaving every other register. */
void x86_linux_lint_apply(struct kvm_lapic_state *s, unsigned vcpu_id);

#endif
