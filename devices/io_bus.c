#include "devices/io_bus.h"

#include <errno.h>

int io_bus_register(struct io_bus *bus, uint64_t base, uint64_t len, io_handler_fn fn, void *dev,
		    const char *name)
{
	if (!len || base + len < base)
		return -EINVAL;
	for (unsigned i = 0; i < bus->n; i++) {
		const struct io_range *r = &bus->r[i];
		if (base < r->base + r->len && r->base < base + len)
			return -EEXIST;
	}
	if (bus->n == IO_BUS_MAX)
		return -ENOSPC;
	bus->r[bus->n++] = (struct io_range){ base, len, fn, dev, name };
	return 0;
}

int io_bus_access(const struct io_bus *bus, unsigned vcpu, uint64_t addr, uint8_t *data,
		  unsigned len, bool is_write)
{
	for (unsigned i = 0; i < bus->n; i++) {
		const struct io_range *r = &bus->r[i];
		/* An access must lie wholly inside one device. */
		if (addr >= r->base && addr - r->base < r->len && len <= r->len - (addr - r->base))
			return r->fn(r->dev, vcpu, addr - r->base, data, len, is_write);
	}
	return -ENOENT;
}
