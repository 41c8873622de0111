/*
 * The vCPU state of the Linux 64-bit boot protocol entry (boot.rst, "64-bit
 * Boot Protocol"): long mode, paging on with an identity map, a GDT with
 * flat __BOOT_CS (0x10) and __BOOT_DS (0x18), interrupts off, RSI = the zero
 * page. Application processors are left to the in-kernel local APIC: they
 * wait for INIT/SIPI from the boot CPU, as on real hardware.
 */
#ifndef VMM_VCPU_X86_BOOT_LINUX_H
#define VMM_VCPU_X86_BOOT_LINUX_H

#include <stdint.h>

struct x86_linux_entry {
	uint64_t entry;     /* RIP: kernel load address + 0x200 */
	uint64_t zero_page; /* RSI */
	uint64_t pt_gpa;    /* CR3 */
	uint64_t gdt_gpa;
	uint16_t cs, ds, tss;
};

/* Sets the entry state on vCPU 0; on every vCPU, LINT0 = ExtINT and LINT1 =
 * NMI in the local APIC (virtual-wire mode, as a PC BIOS leaves it). */
int x86_boot_linux_set_vcpu(int vcpu_fd, const struct x86_linux_entry *e, unsigned vcpu_id);

#endif
