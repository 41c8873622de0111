/* deadlock_guest: every vCPU waits for a kick that nobody will send, so the
 * VMM must end the run as a guest deadlock (status 5), never hang. */
	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	lea	word(%rip), %rdi	/* wait(&word, 0, no timeout) */
	xor	%esi, %esi
	xor	%edx, %edx
1:	mov	$0xd0000020, %rax	/* hypercall-base + 8 * 4 (wait) */
	mov	(%rax), %rax
	jmp	1b
	.balign 4
word:	.long	0

	.section .note.GNU-stack, "", @progbits
