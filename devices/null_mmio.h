/*
 * A page of MMIO that does nothing: reads return 0, writes are dropped. It
 * exists so a guest can time a bare exit (KVM_RUN -> userspace -> KVM_RUN
 * with no work on our side), the reference the hypercall round trip is
 * compared with in `vmm bench` (firmware/workload_hcbench.c). MMIO rather
 * than a port: port I/O from CPL3 would need a TSS I/O bitmap (HOST.md).
 * Its address is guest-visible, so it is the ABI's (hypercalls/abi.h,
 * VMM_NULL_MMIO_BASE): the guest includes that header, never this one.
 */
#ifndef VMM_DEVICES_NULL_MMIO_H
#define VMM_DEVICES_NULL_MMIO_H

#include <stdbool.h>
#include <stdint.h>

#include "hypercalls/abi.h"

int null_mmio_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len,
		 bool is_write);

#endif
