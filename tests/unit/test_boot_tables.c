/*
 * The one x86 boot-table builder both boot paths use (vcpu/x86/boot_tables.c):
 * the identity map of the low 4 GiB in 2 MiB pages, U/S only where asked,
 * the GDT's descriptors where their selectors say, everything else of the
 * GDT zero, and nothing written when a table lies outside guest memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "tests/unit/check.h"
#include "vcpu/x86/boot.h"
#include "vcpu/x86/boot_tables.h"
#include "vmm/linux/boot_linux.h"

#define MEM (16u << 20)

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_map(const uint8_t *mem, uint64_t pt, uint64_t us)
{
	CHECK_EQ(le64(mem + pt), (pt + 0x1000) | 3 | us);
	for (uint64_t i = 1; i < 512; i++)
		CHECK_EQ(le64(mem + pt + i * 8), 0);
	for (uint64_t g = 0; g < 4; g++) {
		CHECK_EQ(le64(mem + pt + 0x1000 + g * 8), (pt + 0x2000 + g * 0x1000) | 3 | us);
		for (uint64_t i = 0; i < 512; i += 37)
			CHECK_EQ(le64(mem + pt + 0x2000 + g * 0x1000 + i * 8), (g << 30 | i << 21) | 0x83 | us);
	}
}

static void test_both_paths(void)
{
	uint8_t *mem = malloc(MEM);
	CHECK(mem != NULL);
	if (!mem)
		return;
	struct guest_mem gm;
	guest_mem_init_flat(&gm, mem, MEM);
	memset(mem, 0xa5, MEM);
	struct x86_boot b = { .pt_gpa = 0x9000, .gdt_gpa = 0x8000 };
	CHECK_EQ(x86_boot_write_tables(&gm, &b), 0);
	check_map(mem, 0x9000, 4); /* the bundled guest runs CPL3 code: U/S */
	CHECK_EQ(le64(mem + 0x8000), 0);
	CHECK_EQ(le64(mem + 0x8000 + X86_SEL_CODE64), 0x00af9b000000ffffull);
	CHECK_EQ(le64(mem + 0x8000 + X86_SEL_DATA), 0x00cf93000000ffffull);
	CHECK_EQ(le64(mem + 0x8000 + X86_SEL_TSS), 0x00008b0080800067ull); /* base 0x8080 */
	CHECK_EQ(le64(mem + 0x8000 + X86_SEL_TSS + 8), 0);
	CHECK_EQ(mem[0x8fff], 0);      /* the page cleared (the TSS lives in it) */
	CHECK_EQ(mem[0x7fff], 0xa5);   /* and nothing before it */

	memset(mem, 0xa5, MEM);
	CHECK_EQ(linux_write_entry_tables(&gm), 0);
	check_map(mem, LINUX_PT_GPA, 0); /* Linux's own: no U/S */
	CHECK_EQ(le64(mem + LINUX_GDT_GPA + LINUX_BOOT_CS), 0x00af9b000000ffffull);
	CHECK_EQ(le64(mem + LINUX_GDT_GPA + LINUX_BOOT_DS), 0x00cf93000000ffffull);
	CHECK_EQ(le64(mem + LINUX_GDT_GPA + LINUX_BOOT_TSS), 0x008f8b000000ffffull);
	CHECK_EQ(mem[LINUX_GDT_GPA + LINUX_BOOT_TSS + 16], 0xa5); /* cleared only as far as asked */
	free(mem);
}

static void test_outside_guest_memory_writes_nothing(void)
{
	uint8_t *mem = calloc(1, 0x10000);
	CHECK(mem != NULL);
	if (!mem)
		return;
	struct guest_mem gm;
	guest_mem_init_flat(&gm, mem, 0x10000);
	struct x86_boot_tables t = { .pt_gpa = 0xc000, .gdt_gpa = 0x1000, .gdt_bytes = 0x100, .ndesc = 1,
				     .desc = { { 0x08, 0, 0xfffff, 0xa09b } } };
	CHECK_EQ(x86_boot_tables_write(&gm, &t), -EFAULT); /* 6 pages from 0xc000 pass the end */
	t.pt_gpa = 0x2000;
	t.gdt_gpa = 0xfff0;
	CHECK_EQ(x86_boot_tables_write(&gm, &t), -EFAULT);
	t.gdt_gpa = 0x1000;
	t.desc[0].sel = 0xfc; /* a descriptor past gdt_bytes */
	CHECK_EQ(x86_boot_tables_write(&gm, &t), -EFAULT);
	t.ndesc = 5;
	CHECK_EQ(x86_boot_tables_write(&gm, &t), -EFAULT);
	unsigned nz = 0;
	for (unsigned i = 0; i < 0x10000; i++)
		nz += mem[i] != 0;
	CHECK_EQ(nz, 0);
	t.ndesc = 1;
	t.desc[0].sel = 0x08;
	CHECK_EQ(x86_boot_tables_write(&gm, &t), 0);
	CHECK_EQ(le64(mem + 0x1008), 0x00af9b000000ffffull);
	free(mem);
}

int main(void)
{
	RUN(test_both_paths);
	RUN(test_outside_guest_memory_writes_nothing);
	return check_summary();
}
