/*
 * GDT, IDT and the per-vCPU TSSs, complete at link time. A descriptor
 * scatters its base address over several bit fields, which the assembler
 * cannot express for a relocatable symbol; linker.ld computes the
 * descriptors of entry 0 (fw_idt_gate0, fw_tss_desc0), and the others
 * are those plus a fixed stride in the base field, which linker.ld asserts
 * never carries out of that field. Building these at run time would cost
 * thousands of emulated CPL0 instructions per vCPU.
 */
#include "firmware/fw.h"

	.data
	.balign 16
	.global fw_gdt
fw_gdt:
	.quad	0
	.quad	0x00af9a000000ffff	/* FW_SEL_KCODE: 64-bit code, DPL0 */
	.quad	0x00cf92000000ffff	/* FW_SEL_KDATA: data, DPL0 */
	.quad	0x00cff2000000ffff	/* FW_SEL_UDATA: data, DPL3 */
	.quad	0x00affa000000ffff	/* FW_SEL_UCODE: 64-bit code, DPL3 */
	/* FW_SEL_TSS0 + 16*i: available 64-bit TSS of vCPU i */
	.set	i, 0
	.rept	FW_MAX_CPUS
	.quad	fw_tss_desc0 + ((i * FW_TSS_STRIDE) << 16)
	.quad	0
	.set	i, i + 1
	.endr
fw_gdt_end:

	.balign 16
	.global fw_idt
fw_idt:
	/* interrupt gates (IF cleared), DPL0, to the stubs in fault_entry.S */
	.set	i, 0
	.rept	FW_NUM_FAULT_VECTORS
	.quad	fw_idt_gate0 + i * FW_FAULT_STUB_SIZE
	.quad	0
	.set	i, i + 1
	.endr
fw_idt_end:

	.balign 8
	.word	0, 0, 0
	.global fw_gdt_ptr
fw_gdt_ptr:
	.word	fw_gdt_end - fw_gdt - 1
	.quad	fw_gdt

	.word	0, 0, 0
	.global fw_idt_ptr
fw_idt_ptr:
	.word	fw_idt_end - fw_idt - 1
	.quad	fw_idt

	/* Hardware TSS, 104 bytes used of each FW_TSS_STRIDE; entry.S fills
	 * in rsp0 and the I/O-map base of its own. */
	.bss
	.balign FW_TSS_STRIDE
	.global fw_tss
fw_tss:
	.skip	FW_MAX_CPUS * FW_TSS_STRIDE

	.section .note.GNU-stack, "", @progbits
