/* The bundled guest, embedded so `vmm run` needs no other file. */
	.section .rodata
	.balign 64
	.global vmm_firmware_start, vmm_firmware_end
vmm_firmware_start:
	.incbin FW_PATH
vmm_firmware_end:
	.section .note.GNU-stack,"",@progbits
