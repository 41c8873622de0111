/* fault_guest: vCPU 0 loads an IDT with limit 0 and executes ud2:
 * #UD -> #GP (vector outside the IDT) -> #DF -> triple fault, so vmm should
 * exit 3 naming vCPU 0. The other vCPUs HLT at once. No stack is needed. */
	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	test	%rsi, %rsi
	jnz	halt
	lidt	idt_desc(%rip)
	ud2
halt:
	hlt
	jmp	halt

	.section .rodata
	.balign	16
idt_desc:
	.word	0		/* limit */
	.quad	0		/* base */

	.section .note.GNU-stack, "", @progbits
