/*
 * Every vCPU starts here at once, at CPL0, with RDI = device tree GPA and
 * RSI = vCPU index (see hypercalls/ABI.md). CPL0 code is emulated
 * instruction by instruction on some hosts (~1 us each), so this path does
 * the minimum to reach CPL3 safely: no loops, and every descriptor table is
 * already complete in the image (x86_tables.S, linker.ld). Only what
 * differs per vCPU is written here: its TSS.rsp0 and its task register.
 */
#include "firmware/fw.h"

	.section .text.entry, "ax"
	.code64
	.global _start
_start:
	/* vCPUs beyond the static stacks must not touch memory they do not own. */
	cmp	$FW_MAX_CPUS, %rsi
	jae	.Ltoo_many

	/* Kernel stack: top of fw_kstacks[idx]. */
	lea	1(%rsi), %rax
	shl	$FW_KSTACK_SHIFT, %rax
	lea	fw_kstacks(%rax), %rsp

	lgdt	fw_gdt_ptr(%rip)
	lidt	fw_idt_ptr(%rip)

	/* Reload CS from our GDT (far return), then the data selectors. */
	pushq	$FW_SEL_KCODE
	lea	1f(%rip), %rax
	pushq	%rax
	lretq
1:	mov	$FW_SEL_KDATA, %eax
	mov	%eax, %ss
	/* DPL3 data selectors, so the privilege drop in iretq keeps them and,
	 * above all, keeps the FS base written below. */
	mov	$(FW_SEL_UDATA | FW_RPL3), %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %fs
	mov	%eax, %gs

	/* libfdt is built with -fstack-protector: its canary is %fs:0x28. */
	mov	$FW_MSR_FS_BASE, %ecx
	mov	$fw_tls, %eax
	xor	%edx, %edx
	wrmsr

	/* This vCPU's TSS: ring-0 stack for faults from CPL3, no I/O bitmap. */
	mov	%rsi, %rax
	shl	$7, %rax			/* FW_TSS_STRIDE */
	lea	fw_tss(%rax), %rax
	mov	%rsp, FW_TSS_RSP0(%rax)
	movw	$(FW_TSS_LIMIT + 1), FW_TSS_IOMAP(%rax)
	mov	%esi, %eax
	shl	$4, %eax
	add	$FW_SEL_TSS0, %eax
	ltr	%ax

	/* Drop to CPL3 on the user stack, IF=0, RDI/RSI still as given. */
	lea	1(%rsi), %rax
	shl	$FW_USTACK_SHIFT, %rax
	lea	fw_ustacks(%rax), %rax
	pushq	$(FW_SEL_UDATA | FW_RPL3)
	pushq	%rax
	pushq	$0x2
	pushq	$(FW_SEL_UCODE | FW_RPL3)
	pushq	$fw_user_entry
	iretq

.Ltoo_many:
	/* No stack: the hypercall is a bare load. fw_main on vCPU 0 says why. */
	mov	fw_hc_base(%rip), %rax
	add	fw_hc_exit_offset(%rip), %rax
	mov	$FW_EXIT_CONFIG, %edi
	mov	(%rax), %rax
2:	hlt
	jmp	2b

	.text
	/* CPL3 from here on. The stack top is 16-byte aligned, as the SysV
	 * ABI wants before a call. */
fw_user_entry:
	xor	%ebp, %ebp
	call	fw_main
	ud2		/* fw_main never returns */

	/* Per-vCPU stacks: static, so no allocator is needed before CPL3. */
	.bss
	.balign 4096
	.global fw_kstacks
fw_kstacks:
	.skip	FW_MAX_CPUS * FW_KSTACK_SIZE
	.global fw_ustacks
fw_ustacks:
	.skip	FW_MAX_CPUS * FW_USTACK_SIZE

	.section .note.GNU-stack, "", @progbits
