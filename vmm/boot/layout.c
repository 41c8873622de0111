#include "vmm/boot/layout.h"

#include <errno.h>

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int layout_compute(uint64_t mem_size, unsigned ncpus, struct guest_layout *out)
{
	uint64_t need = (LAYOUT_PT_PAGES + 1) * PAGE_SIZE + LAYOUT_FDT_MAX + (uint64_t)ncpus * PAGE_SIZE;
	/* 2 MiB aligned so the guest can map everything below with large pages. */
	uint64_t reserved = align_up(need, HUGE_2M);

	if (mem_size > RAM_MAX_BELOW_4G || mem_size < reserved + HUGE_2M)
		return -ENOMEM;
	out->mem_size = mem_size;
	out->reserved_base = (mem_size - reserved) & ~(HUGE_2M - 1);
	out->pt_gpa = out->reserved_base;
	out->gdt_gpa = out->pt_gpa + LAYOUT_PT_PAGES * PAGE_SIZE;
	out->fdt_gpa = out->gdt_gpa + PAGE_SIZE;
	out->shared_gpa = out->fdt_gpa + LAYOUT_FDT_MAX;
	return 0;
}
