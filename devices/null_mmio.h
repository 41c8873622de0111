/*
 * A page of MMIO that does nothing: reads return 0, writes are dropped. It
 * exists so a guest can time a bare exit (KVM_RUN -> userspace -> KVM_RUN
 * with no work on our side), the reference the hypercall round trip is
 * compared with in `vmm bench` (firmware/workload_hcbench.c). MMIO rather
 * than a port: port I/O from CPL3 would need a TSS I/O bitmap (HOST.md).
 * Freestanding (a plain constant) so the firmware includes it unchanged.
 */
#ifndef VMM_DEVICES_NULL_MMIO_H
#define VMM_DEVICES_NULL_MMIO_H

/* Right after the hypercall window, inside the guest's identity map. */
#define VMM_NULL_MMIO_BASE 0xd0001000ull
#define VMM_NULL_MMIO_SIZE 0x1000ull

#ifndef __ASSEMBLER__
#include <stdbool.h>
#include <stdint.h>
int null_mmio_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len,
		 bool is_write);
#endif

#endif
