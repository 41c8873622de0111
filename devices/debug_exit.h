/*
 * The guest-exit port (isa-debug-exit style, at VMM_DEBUG_EXIT_PORT): a
 * write of value v ends the whole VM with guest status v. Any guest, even one
 * with no hypercall support, can end a run with it.
 */
#ifndef VMM_DEVICES_DEBUG_EXIT_H
#define VMM_DEVICES_DEBUG_EXIT_H

#include <stdbool.h>
#include <stdint.h>

struct debug_exit {
	void (*on_exit)(void *opaque, unsigned vcpu, uint32_t status);
	void *opaque;
};

int debug_exit_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write);

#endif
