/* exit_port_guest: vCPU 0 writes 7 to the guest-exit port 0xf4 (ABI.md §5),
 * so vmm should exit 1 with guest status 7; the other vCPUs HLT at once. */
	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	test	%rsi, %rsi
	jnz	halt
	mov	$7, %eax
	outl	%eax, $0xf4
halt:
	hlt
	jmp	halt

	.section .note.GNU-stack, "", @progbits
