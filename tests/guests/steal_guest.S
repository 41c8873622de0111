/* steal_guest: KVM's steal-time record under the co-scheduler. vCPUs 0 and
 * 1 each register a record with MSR_KVM_STEAL_TIME (at CPL 0, where the
 * whole guest stays), then spin for SPIN_TSC cycles of the TSC watching the
 * other's `preempted` byte: a time, not a count of loops, so that both spin
 * across several slices whatever the KVM (kvm_pvm emulates CPL 0 at ~1 us an
 * instruction; hardware runs 60000 loops in well under one slice). vCPU 0 then waits for vCPU 1's verdict and exits
 * through the guest-exit port (ABI.md §5) with
 *	0x10 | own steal > 0 (1) | saw vCPU 1 preempted (2)
 *	     | vCPU 1's steal > 0 (4) | vCPU 1 saw vCPU 0 preempted (8)
 * so two vCPUs sharing one slot give 0x1f. Other vCPUs halt. */
#define MSR_KVM_STEAL_TIME 0x4b564d03
#define SPIN_TSC 300000000	/* ~150 ms at 2 GHz: many 6 ms slices */

	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	cmp	$2, %rsi
	jae	halt
	mov	%rsi, %r12		/* my id */
	mov	%r12, %r13
	shl	$6, %r13
	add	$records, %r13		/* my record */
	mov	%r12, %r14
	xor	$1, %r14
	shl	$6, %r14
	add	$records, %r14		/* the other's */
	mov	%r13, %rax
	or	$1, %rax		/* KVM_MSR_ENABLED */
	mov	%rax, %rdx
	shr	$32, %rdx
	mov	$MSR_KVM_STEAL_TIME, %ecx
	wrmsr
	xor	%r15, %r15		/* times the other was seen preempted */
	rdtsc
	shl	$32, %rdx
	or	%rax, %rdx
	lea	SPIN_TSC(%rdx), %rbx	/* spin until the TSC passes this */
1:	movzbl	16(%r14), %eax		/* kvm_steal_time.preempted */
	and	$1, %eax
	add	%rax, %r15
	rdtsc
	shl	$32, %rdx
	or	%rax, %rdx
	cmp	%rbx, %rdx
	jb	1b
	xor	%eax, %eax
	cmpq	$0, (%r13)		/* kvm_steal_time.steal */
	je	2f
	or	$1, %eax
2:	test	%r15, %r15
	jz	3f
	or	$2, %eax
3:	test	%r12, %r12
	jnz	vcpu1
	/* vCPU 0: wait for vCPU 1, then report both */
4:	cmpl	$0, done1
	je	4b
	mov	result1, %edx
	shl	$2, %edx
	or	%edx, %eax
	or	$0x10, %eax
	outl	%eax, $0xf4
	jmp	halt
vcpu1:
	mov	%eax, result1
	movl	$1, done1
halt:
	hlt
	jmp	halt

	.bss
	.balign	64
records:
	.skip	128
done1:
	.skip	4
result1:
	.skip	4

	.section .note.GNU-stack, "", @progbits
