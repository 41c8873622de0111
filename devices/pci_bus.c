#include "devices/pci_bus.h"

#include <errno.h>
#include <string.h>

#include "lib/bytes.h"

#define CONFIG_ENABLE 0x80000000u
#define BAR_END (PCI_BASE_ADDRESS_0 + 4 * PCI_NUM_BARS)
#define FIRST_CAP 0x40

/* The host bridge: a QEMU/Red Hat "PCIe host bridge" id, class 06.00.00. */
#define HOST_BRIDGE_VENDOR 0x1b36
#define HOST_BRIDGE_DEVICE 0x0008

void pci_dev_init(struct pci_device *d, uint16_t vendor, uint16_t device, uint32_t class_code, uint8_t rev,
		  uint16_t subsys_vendor, uint16_t subsys_id)
{
	memset(d, 0, sizeof(*d));
	put_le16(d->cfg + PCI_VENDOR_ID, vendor);
	put_le16(d->cfg + PCI_DEVICE_ID, device);
	d->cfg[PCI_REVISION_ID] = rev;
	d->cfg[PCI_CLASS_PROG] = (uint8_t)class_code;
	d->cfg[PCI_CLASS_PROG + 1] = (uint8_t)(class_code >> 8);
	d->cfg[PCI_CLASS_PROG + 2] = (uint8_t)(class_code >> 16);
	d->cfg[PCI_HEADER_TYPE] = 0;
	put_le16(d->cfg + PCI_SUBSYSTEM_VENDOR_ID, subsys_vendor);
	put_le16(d->cfg + PCI_SUBSYSTEM_ID, subsys_id);
	d->cfg[PCI_INTERRUPT_PIN] = 1; /* INTA# */
	/* What the guest may write: command (I/O, memory, bus master, INTx disable), cache line, latency, IRQ line. */
	put_le16(d->wmask + PCI_COMMAND, PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |
					      PCI_COMMAND_INTX_DISABLE);
	d->wmask[0x0c] = 0xff;
	d->wmask[0x0d] = 0xff;
	d->wmask[PCI_INTERRUPT_LINE] = 0xff;
	d->next_cap = FIRST_CAP;
}

int pci_dev_set_bar(struct pci_device *d, unsigned idx, uint32_t size, io_handler_fn fn, void *opaque)
{
	if (idx >= PCI_NUM_BARS || size < 16 || (size & (size - 1)))
		return -EINVAL;
	d->bar[idx] = (struct pci_bar){ size, 0, fn, opaque };
	return 0;
}

unsigned pci_dev_add_cap(struct pci_device *d, const void *cap, unsigned len)
{
	unsigned off = d->next_cap;
	if (len < 2 || off + len > PCI_CFG_SIZE)
		return 0;
	memcpy(d->cfg + off, cap, len);
	d->cfg[off + 1] = 0;
	if (d->last_cap_next)
		*d->last_cap_next = (uint8_t)off;
	else
		d->cfg[PCI_CAPABILITY_LIST] = (uint8_t)off;
	d->last_cap_next = d->cfg + off + 1;
	put_le16(d->cfg + PCI_STATUS, (uint16_t)(d->cfg[PCI_STATUS] | PCI_STATUS_CAP_LIST));
	d->next_cap = (uint8_t)((off + len + 3) & ~3u);
	return off;
}

int pci_bus_init(struct pci_bus *bus, uint64_t mmio_base, uint64_t mmio_size)
{
	memset(bus, 0, sizeof(*bus));
	if (!mmio_size || mmio_base + mmio_size < mmio_base || mmio_base + mmio_size > (1ull << 32))
		return -EINVAL;
	int r = pthread_rwlock_init(&bus->lock, NULL);
	if (r)
		return -r;
	bus->mmio_base = bus->mmio_next = mmio_base;
	bus->mmio_size = mmio_size;
	pci_dev_init(&bus->host_bridge, HOST_BRIDGE_VENDOR, HOST_BRIDGE_DEVICE, 0x060000, 0, HOST_BRIDGE_VENDOR,
		     0x1100);
	bus->host_bridge.cfg[PCI_INTERRUPT_PIN] = 0;
	bus->host_bridge.wmask[PCI_INTERRUPT_LINE] = 0;
	bus->dev[0] = &bus->host_bridge;
	return 0;
}

void pci_bus_destroy(struct pci_bus *bus)
{
	pthread_rwlock_destroy(&bus->lock);
}

/* The io_bus handlers, below with the accesses they decode. */
static int pci_config_addr_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write);
static int pci_config_data_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write);
static int pci_mmio_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write);

int pci_bus_register(struct pci_bus *bus, struct io_bus *pio, struct io_bus *mmio)
{
	int r = io_bus_register(pio, PCI_CONFIG_ADDR_PORT, 4, pci_config_addr_io, bus, "pci-addr");
	if (!r)
		r = io_bus_register(pio, PCI_CONFIG_DATA_PORT, 4, pci_config_data_io, bus, "pci-data");
	if (!r)
		r = io_bus_register(mmio, bus->mmio_base, bus->mmio_size, pci_mmio_io, bus, "pci-mmio");
	return r;
}

int pci_bus_next_slot(const struct pci_bus *bus)
{
	for (unsigned s = 1; s < PCI_MAX_SLOTS; s++)
		if (!bus->dev[s])
			return (int)s;
	return -ENOSPC;
}

int pci_bus_add(struct pci_bus *bus, struct pci_device *d, unsigned *slot)
{
	int free_slot = pci_bus_next_slot(bus);
	if (free_slot < 0)
		return free_slot;
	unsigned s = (unsigned)free_slot;
	uint64_t next = bus->mmio_next;
	for (unsigned i = 0; i < PCI_NUM_BARS; i++) {
		uint32_t size = d->bar[i].size;
		if (!size)
			continue;
		next = (next + size - 1) & ~(uint64_t)(size - 1);
		if (next + size > bus->mmio_base + bus->mmio_size)
			return -ENOSPC;
		d->bar[i].addr = (uint32_t)next;
		put_le32(d->cfg + PCI_BASE_ADDRESS_0 + 4 * i, (uint32_t)next);
		next += size;
	}
	pthread_rwlock_wrlock(&bus->lock);
	bus->mmio_next = next;
	d->slot = s;
	bus->dev[s] = d;
	pthread_rwlock_unlock(&bus->lock);
	if (slot)
		*slot = s;
	return 0;
}

void pci_bus_remove(struct pci_bus *bus, struct pci_device *d)
{
	pthread_rwlock_wrlock(&bus->lock);
	for (unsigned s = 1; s < PCI_MAX_SLOTS; s++)
		if (bus->dev[s] == d)
			bus->dev[s] = NULL;
	pthread_rwlock_unlock(&bus->lock);
}

static int pci_config_addr_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write)
{
	struct pci_bus *bus = opaque;
	(void)vcpu;
	/* Only a doubleword at 0xCF8 is CONFIG_ADDRESS; other accesses go elsewhere on a PC (e.g. 0xCF9). */
	if (off != 0 || len != 4) {
		if (!is_write)
			memset(data, 0xff, len);
		return 0;
	}
	pthread_rwlock_wrlock(&bus->lock);
	if (is_write) {
		bus->config_addr = get_le32(data) & 0x80fffffcu;
	} else {
		put_le32(data, bus->config_addr);
	}
	pthread_rwlock_unlock(&bus->lock);
	return 0;
}

static struct pci_device *selected(struct pci_bus *bus)
{
	uint32_t a = bus->config_addr;
	unsigned busno = (a >> 16) & 0xff, slot = (a >> 11) & 0x1f, fn = (a >> 8) & 7;
	if (!(a & CONFIG_ENABLE) || busno || fn)
		return NULL;
	return bus->dev[slot];
}

static void bar_write(struct pci_device *d, unsigned off, const uint8_t *data, unsigned len)
{
	unsigned i = (off - PCI_BASE_ADDRESS_0) / 4, boff = off & 3;
	struct pci_bar *b = &d->bar[i];
	uint8_t *reg = d->cfg + PCI_BASE_ADDRESS_0 + 4 * i;
	if (!b->size)
		return;
	uint8_t bytes[4];
	memcpy(bytes, reg, 4);
	memcpy(bytes + boff, data, len);
	uint32_t v = get_le32(bytes);
	/* Size probing: the low bits read back as zero, type bits 0 (32-bit, non-prefetchable memory). */
	v &= ~(b->size - 1);
	b->addr = v;
	put_le32(reg, v);
}

static void cfg_write(struct pci_device *d, unsigned off, const uint8_t *data, unsigned len)
{
	if (off >= PCI_BASE_ADDRESS_0 && off < BAR_END) {
		bar_write(d, off, data, len);
	} else {
		for (unsigned i = 0; i < len; i++) {
			uint8_t m = d->wmask[off + i];
			d->cfg[off + i] = (uint8_t)((d->cfg[off + i] & ~m) | (data[i] & m));
		}
	}
	if (d->cfg_write)
		d->cfg_write(d, off, len);
}

static int pci_config_data_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write)
{
	struct pci_bus *bus = opaque;
	(void)vcpu;
	pthread_rwlock_wrlock(&bus->lock);
	struct pci_device *d = selected(bus);
	unsigned reg = (bus->config_addr & 0xfc) + (unsigned)off;
	if (!d) {
		if (!is_write)
			memset(data, 0xff, len);
	} else if (is_write) {
		cfg_write(d, reg, data, len);
	} else {
		if (d->cfg_read)
			d->cfg_read(d, reg, len);
		memcpy(data, d->cfg + reg, len);
	}
	pthread_rwlock_unlock(&bus->lock);
	return 0;
}

static int pci_mmio_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write)
{
	struct pci_bus *bus = opaque;
	uint64_t addr = bus->mmio_base + off;
	int r = 0;
	bool hit = false;
	pthread_rwlock_rdlock(&bus->lock);
	for (unsigned s = 0; s < PCI_MAX_SLOTS && !hit; s++) {
		struct pci_device *d = bus->dev[s];
		if (!d || !(d->cfg[PCI_COMMAND] & PCI_COMMAND_MEMORY))
			continue;
		for (unsigned i = 0; i < PCI_NUM_BARS; i++) {
			const struct pci_bar *b = &d->bar[i];
			if (b->size && addr >= b->addr && addr - b->addr < b->size && len <= b->size - (addr - b->addr)) {
				r = b->fn(b->opaque, vcpu, addr - b->addr, data, len, is_write);
				hit = true;
				break;
			}
		}
	}
	pthread_rwlock_unlock(&bus->lock);
	if (!hit) {
		__atomic_fetch_add(&bus->unclaimed_mmio, 1, __ATOMIC_RELAXED);
		if (!is_write)
			memset(data, 0xff, len);
	}
	return r;
}
