/* spin_guest: every vCPU loops forever, for testing `vmm run --timeout`
 * (vmm should exit 4). */
	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	pause
	jmp	_start

	.section .note.GNU-stack, "", @progbits
