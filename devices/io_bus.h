/*
 * Port-I/O and MMIO dispatch: devices register an address range and one
 * handler; the vCPU loop looks the exit's address up here. Ranges are fixed
 * before vCPUs start, so lookups take no lock.
 */
#ifndef VMM_DEVICES_IO_BUS_H
#define VMM_DEVICES_IO_BUS_H

#include <stdbool.h>
#include <stdint.h>

/* is_write: data holds len bytes to store; else fill data with len bytes. */
typedef int (*io_handler_fn)(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data,
			     unsigned len, bool is_write);

#define IO_BUS_MAX 16

struct io_range {
	uint64_t base, len;
	io_handler_fn fn;
	void *dev;
	const char *name;
};

struct io_bus {
	struct io_range r[IO_BUS_MAX];
	unsigned n;
};

/* -EEXIST if it overlaps a registered range, -ENOSPC if the bus is full. */
int io_bus_register(struct io_bus *bus, uint64_t base, uint64_t len, io_handler_fn fn, void *dev,
		    const char *name);
/* -ENOENT when no device claims addr; otherwise the handler's result. */
int io_bus_access(const struct io_bus *bus, unsigned vcpu, uint64_t addr, uint8_t *data,
		  unsigned len, bool is_write);

#endif
