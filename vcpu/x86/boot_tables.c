#include "vcpu/x86/boot_tables.h"

#include <errno.h>
#include <string.h>

#include "lib/bytes.h"

#define PTE_P (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_US (1ull << 2)
#define PTE_PS (1ull << 7)

/* A descriptor's 8 bytes from its fields (Intel SDM vol. 3, 3.4.5). */
static uint64_t x86_gdt_entry(uint32_t base, uint32_t limit, uint16_t flags)
{
	return ((uint64_t)(base & 0xff000000) << 32) | ((uint64_t)(base & 0x00ffffff) << 16) |
	       ((uint64_t)(limit & 0x000f0000) << 32) | (uint64_t)(limit & 0xffff) |
	       ((uint64_t)(flags & 0xf0ff) << 40);
}

int x86_boot_tables_write(const struct guest_mem *gm, const struct x86_boot_tables *t)
{
	uint8_t *pt = guest_mem_ptr(gm, t->pt_gpa, X86_BOOT_PT_BYTES);
	uint8_t *gdt = guest_mem_ptr(gm, t->gdt_gpa, t->gdt_bytes);
	if (!pt || !gdt || t->ndesc > sizeof(t->desc) / sizeof(t->desc[0]))
		return -EFAULT;
	for (unsigned i = 0; i < t->ndesc; i++)
		if ((uint64_t)t->desc[i].sel + 8 > t->gdt_bytes)
			return -EFAULT;
	uint64_t us = t->user ? PTE_US : 0, pdpt = t->pt_gpa + 0x1000, pd = t->pt_gpa + 0x2000;
	memset(pt, 0, X86_BOOT_PT_BYTES);
	put_le64(pt, pdpt | PTE_P | PTE_RW | us);
	for (uint64_t g = 0; g < 4; g++) {
		put_le64(pt + 0x1000 + g * 8, (pd + g * 0x1000) | PTE_P | PTE_RW | us);
		for (uint64_t i = 0; i < 512; i++)
			put_le64(pt + 0x2000 + g * 0x1000 + i * 8, (g << 30) | (i << 21) | PTE_P | PTE_RW | us | PTE_PS);
	}
	memset(gdt, 0, t->gdt_bytes);
	for (unsigned i = 0; i < t->ndesc; i++) {
		const struct x86_gdt_desc *d = &t->desc[i];
		put_le64(gdt + d->sel, x86_gdt_entry(d->base, d->limit, d->flags));
	}
	return 0;
}
