/*
 * One 16-byte stub per exception vector 0..31 (linker.ld derives every IDT
 * gate from the first stub's address and this stride). Each pushes a dummy
 * error code where the CPU pushes none, then the vector, so fw_fault sees
 * one frame layout: struct fw_fault_frame in fault.c.
 */
#include "firmware/fw.h"

/* Vectors for which the CPU pushes an error code. */
#define HAS_ERR(v) ((v) == 8 || ((v) >= 10 && (v) <= 14) || (v) == 17 || \
		    (v) == 21 || (v) == 29 || (v) == 30)

	.text
	.balign 512	/* the stubs never cross a 64 KiB boundary: linker.ld */
	.global fw_fault_stubs
fw_fault_stubs:
	.set	v, 0
	.rept	FW_NUM_FAULT_VECTORS
	.balign	FW_FAULT_STUB_SIZE
	.if	!HAS_ERR(v)
	pushq	$0
	.endif
	pushq	$v
	jmp	fw_fault_common
	.set	v, v + 1
	.endr
	.balign	FW_FAULT_STUB_SIZE
	.global fw_fault_stubs_end
fw_fault_stubs_end:

fw_fault_common:
	/* On this vCPU's kernel stack (TSS.rsp0 from CPL3; the current one at
	 * CPL0). fw_fault reports and ends the vCPU; it never returns. */
	mov	%rsp, %rdi
	and	$-16, %rsp
	call	fw_fault
1:	hlt
	jmp	1b

	.section .note.GNU-stack, "", @progbits
