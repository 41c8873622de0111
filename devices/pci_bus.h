/*
 * A PCI bus 0 for the guest: configuration mechanism #1 on ports 0xCF8
 * (address, 32-bit accesses only) and 0xCFC..0xCFF (data), a host bridge at
 * 00:00.0, single-function devices in slots 1..31, and 32-bit memory BARs
 * placed in one MMIO window.
 *
 * The window is registered on the MMIO io_bus once, before vCPUs start; an
 * access inside it is routed to whichever BAR the guest has placed there
 * (with memory decoding on), looked up at access time under a read lock, so
 * the guest may move BARs at run time. Config-space accesses take the write
 * lock. Lock order: bus, then the device's own lock.
 */
#ifndef VMM_DEVICES_PCI_BUS_H
#define VMM_DEVICES_PCI_BUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/io_bus.h"

#define PCI_CONFIG_ADDR_PORT 0xcf8
#define PCI_CONFIG_DATA_PORT 0xcfc
#define PCI_CFG_SIZE 256
#define PCI_MAX_SLOTS 32
#define PCI_NUM_BARS 6

/* A default window below the IOAPIC; the boot code must keep RAM (and e820) out of it. */
#define PCI_MMIO_DEFAULT_BASE 0xe0000000ull
#define PCI_MMIO_DEFAULT_SIZE 0x10000000ull

/*
 * INTx routing of this board, which the DSDT's _PRT describes to the guest:
 * slot s, pin p (0 = INTA#) raises IOAPIC input 16 + (s + p) % 8. Inputs
 * 16-23 are the in-kernel IOAPIC's PCI lines (no ISA device, no PIC).
 */
#define PCI_INTX_GSI_BASE 16
#define PCI_INTX_GSI_COUNT 8
static inline unsigned pci_intx_gsi(unsigned slot, unsigned pin)
{
	return PCI_INTX_GSI_BASE + (slot + pin) % PCI_INTX_GSI_COUNT;
}

/* Config-space offsets and bits used here. */
#define PCI_VENDOR_ID 0x00
#define PCI_DEVICE_ID 0x02
#define PCI_COMMAND 0x04
#define PCI_COMMAND_IO 0x1
#define PCI_COMMAND_MEMORY 0x2
#define PCI_COMMAND_MASTER 0x4
#define PCI_COMMAND_INTX_DISABLE 0x400
#define PCI_STATUS 0x06
#define PCI_STATUS_INTERRUPT 0x08
#define PCI_STATUS_CAP_LIST 0x10
#define PCI_REVISION_ID 0x08
#define PCI_CLASS_PROG 0x09
#define PCI_HEADER_TYPE 0x0e
#define PCI_BASE_ADDRESS_0 0x10
#define PCI_SUBSYSTEM_VENDOR_ID 0x2c
#define PCI_SUBSYSTEM_ID 0x2e
#define PCI_CAPABILITY_LIST 0x34
#define PCI_INTERRUPT_LINE 0x3c
#define PCI_INTERRUPT_PIN 0x3d
#define PCI_CAP_ID_VNDR 0x09

struct pci_device;

struct pci_bar {
	uint32_t size; /* power of two >= 16; 0: not implemented */
	uint32_t addr; /* as programmed by the guest */
	io_handler_fn fn;
	void *opaque;
};

struct pci_device {
	uint8_t cfg[PCI_CFG_SIZE];
	uint8_t wmask[PCI_CFG_SIZE]; /* bits the guest may change (BARs aside) */
	struct pci_bar bar[PCI_NUM_BARS];
	uint8_t next_cap;            /* where pci_dev_add_cap puts the next one */
	uint8_t *last_cap_next;
	/* Optional; called with the bus locked: before a read is served, after a write is stored. */
	void (*cfg_read)(struct pci_device *d, unsigned off, unsigned len);
	void (*cfg_write)(struct pci_device *d, unsigned off, unsigned len);
	void *owner;
	unsigned slot;
};

struct pci_bus {
	pthread_rwlock_t lock;
	uint32_t config_addr;
	struct pci_device host_bridge;
	struct pci_device *dev[PCI_MAX_SLOTS];
	uint64_t mmio_base, mmio_size, mmio_next;
	uint64_t unclaimed_mmio; /* accesses in the window that hit no BAR */
};

int pci_bus_init(struct pci_bus *bus, uint64_t mmio_base, uint64_t mmio_size);
void pci_bus_destroy(struct pci_bus *bus);
/* Registers ports 0xCF8 and 0xCFC (4 bytes each) and the MMIO window. */
int pci_bus_register(struct pci_bus *bus, struct io_bus *pio, struct io_bus *mmio);

/* Fills a type-0 header: ids, class (24 bits: class, subclass, prog-if), interrupt pin A. */
void pci_dev_init(struct pci_device *d, uint16_t vendor, uint16_t device, uint32_t class_code, uint8_t rev,
		  uint16_t subsys_vendor, uint16_t subsys_id);
/* A 32-bit non-prefetchable memory BAR; its handler gets offsets from the BAR's start. */
int pci_dev_set_bar(struct pci_device *d, unsigned idx, uint32_t size, io_handler_fn fn, void *opaque);
/* Appends a capability (its first two bytes are rewritten as id/next); returns its offset or 0. */
unsigned pci_dev_add_cap(struct pci_device *d, const void *cap, unsigned len);
/* The slot the next pci_bus_add will use, or -ENOSPC. */
int pci_bus_next_slot(const struct pci_bus *bus);
/* Puts d in the first free slot (1..31), places its BARs in the window; -ENOSPC. */
int pci_bus_add(struct pci_bus *bus, struct pci_device *d, unsigned *slot);
/* Takes d off the bus (waits for accesses in progress to finish). */
void pci_bus_remove(struct pci_bus *bus, struct pci_device *d);


#endif
