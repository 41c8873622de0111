/* trap_guest: INT3 and FWAIT at CPL 0 behave as on hardware. It installs an
 * IDT whose #BP handler counts, runs INT3 three times and FWAIT twice (no
 * x87 exception pending, so FWAIT does nothing), and exits through the
 * guest-exit port (ABI.md §5) with 0x40 | the #BP count: 0x43. On hosts
 * whose KVM emulates CPL 0 code without these instructions (kvm_pvm) the
 * VMM does them (vcpu/x86/emulation_gaps.c); elsewhere the CPU does. */
	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	test	%rsi, %rsi
	jnz	halt
	mov	$stack_top, %rsp
	/* IDT entry 3: a 64-bit interrupt gate to bp_handler, selector 0x08 */
	mov	$bp_handler, %rax
	mov	%ax, idt + 3 * 16
	movw	$0x08, idt + 3 * 16 + 2
	movb	$0, idt + 3 * 16 + 4
	movb	$0x8e, idt + 3 * 16 + 5
	shr	$16, %rax
	mov	%ax, idt + 3 * 16 + 6
	shr	$16, %rax
	mov	%eax, idt + 3 * 16 + 8
	lidt	idtr
	int3
	fwait
	int3
	fwait
	int3
	mov	bp_count, %eax
	or	$0x40, %eax
	outl	%eax, $0xf4
halt:
	hlt
	jmp	halt

bp_handler:
	incl	bp_count
	iretq

	.data
	.balign	16
idtr:
	.word	16 * 32 - 1
	.quad	idt

	.bss
	.balign	16
idt:
	.skip	16 * 32
bp_count:
	.skip	4
	.balign	16
stack:
	.skip	4096
stack_top:

	.section .note.GNU-stack, "", @progbits
