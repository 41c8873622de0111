/*
 * Guest-physical layout for the 64-bit direct entry (bundled firmware and
 * user ELF guests). RAM starts at GPA 0; the VMM keeps the top of RAM for
 * what it builds (page tables, GDT, device tree, per-vCPU shared pages) and
 * tells the guest so in the device tree (/reserved-memory).
 */
#ifndef VMM_LAYOUT_H
#define VMM_LAYOUT_H

#include <stdint.h>

#define PAGE_SIZE 4096ull
#define HUGE_2M (2ull << 20)

/* RAM must end below the hypercall window and the 32-bit MMIO hole. */
#define RAM_MAX_BELOW_4G 0xc0000000ull

#define LAYOUT_PT_PAGES 6 /* PML4, PDPT, 4 PDs: identity map of 0..4 GiB */
#define LAYOUT_FDT_MAX (64ull << 10)

struct guest_layout {
	uint64_t mem_size;
	uint64_t reserved_base; /* first byte the guest image may not use */
	uint64_t pt_gpa;        /* PML4; PDPT and PDs follow */
	uint64_t gdt_gpa;       /* GDT, then a 64-bit TSS in the same page */
	uint64_t fdt_gpa;
	uint64_t shared_gpa;    /* vCPU i's struct vmm_shared_page at +4096*i */
};

/* Returns 0, or -ENOMEM if mem_size cannot hold the VMM's pages for ncpus. */
int layout_compute(uint64_t mem_size, unsigned ncpus, struct guest_layout *out);

#endif
