/*
 * The tables a 64-bit direct entry needs in guest memory, for both boot
 * paths (the bundled guest's, vcpu/x86/boot.c, and Linux's,
 * vmm/linux/boot_linux.c): identity page tables for the low 4 GiB in 2 MiB
 * pages and a flat GDT. One builder, so a fix to either reaches both.
 */
#ifndef VMM_VCPU_X86_BOOT_TABLES_H
#define VMM_VCPU_X86_BOOT_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/guest_mem.h"

#define X86_BOOT_PT_BYTES (6 * 0x1000ull) /* PML4, PDPT, four PDs */

struct x86_gdt_desc {
	uint16_t sel;    /* its offset in the GDT */
	uint32_t base, limit;
	uint16_t flags;  /* access byte in 7:0, G/D/L/AVL in 15:12 (Intel SDM vol. 3, 3.4.5) */
};

struct x86_boot_tables {
	uint64_t pt_gpa;      /* X86_BOOT_PT_BYTES there */
	bool user;            /* U/S on every level: the bundled guest runs CPL3 code on these tables */
	uint64_t gdt_gpa;
	uint64_t gdt_bytes;   /* cleared first: every selector not named is null */
	unsigned ndesc;
	struct x86_gdt_desc desc[4];
};

/* Writes both through gm: 0, or -EFAULT when a table or descriptor lies
 * outside guest memory (nothing is written then). */
int x86_boot_tables_write(const struct guest_mem *gm, const struct x86_boot_tables *t);

#endif
