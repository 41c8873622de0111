/*
 * The 64-bit direct entry state (no real mode, no firmware trampoline): the
 * VMM writes identity page tables and a GDT into guest memory and loads the
 * matching segment state, as Firecracker does for its direct kernel entry.
 */
#ifndef VMM_VCPU_X86_BOOT_H
#define VMM_VCPU_X86_BOOT_H

#include <stdint.h>

#include "lib/guest_mem.h"

#define X86_SEL_CODE64 0x08
#define X86_SEL_DATA 0x10
#define X86_SEL_TSS 0x18

struct x86_boot {
	uint64_t entry;   /* RIP */
	uint64_t arg0;    /* RDI: device tree GPA */
	uint64_t pt_gpa;  /* CR3 */
	uint64_t gdt_gpa; /* GDT (and TSS at +0x80) */
};

/* Identity-map 0..4 GiB with 2 MiB pages (user-accessible) at pt_gpa, and
 * the GDT/TSS (vcpu/x86/boot_tables.h). 0, or -EFAULT outside gm. */
int x86_boot_write_tables(const struct guest_mem *gm, const struct x86_boot *b);
/* Registers, segments, control registers and FPU of a vCPU at entry. */
int x86_boot_set_vcpu(int vcpu_fd, const struct x86_boot *b, unsigned vcpu_id);

#endif
