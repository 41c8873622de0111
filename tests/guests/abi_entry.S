/* abi_guest entry: every vCPU starts here (ABI.md §2) with RDI = device
 * tree GPA, RSI = vCPU index, RSP = 0. Give each vCPU its own stack, indexed
 * by RSI, and call guest_main(fdt, index) with RDI/RSI untouched. */

#define MAX_CPUS	64
#define STACK_SHIFT	13		/* 8 KiB per vCPU */
#define HC_FALLBACK	0xd0000000	/* documented hypercall base, v1 */
#define HC_EXIT		3

	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	cmp	$MAX_CPUS, %rsi
	jae	too_many
	lea	1(%rsi), %rax
	shl	$STACK_SHIFT, %rax
	lea	stacks(%rip), %rsp
	add	%rax, %rsp		/* top of this vCPU's stack, 16-aligned */
	xor	%ebp, %ebp
	call	guest_main		/* does not return */
halt:
	hlt
	jmp	halt

	/* More vCPUs than stacks: no stack, so exit(101) by hand. */
too_many:
	mov	$101, %edi
	mov	$(HC_FALLBACK + 8 * HC_EXIT), %ecx
	mov	(%rcx), %rax
	jmp	halt

	.section .bss
	.balign	4096
stacks:
	.skip	MAX_CPUS << STACK_SHIFT

	.section .note.GNU-stack, "", @progbits
