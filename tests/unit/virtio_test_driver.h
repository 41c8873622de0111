/*
 * A fake guest for the virtio unit tests: a malloc'd "guest RAM", the port
 * and MMIO buses a vCPU would use, a PCI bus, and a virtio driver that finds
 * its device through PCI config space and drives it through BAR 0 the way
 * Linux's virtio_pci_modern does. Included by one test file each.
 */
#ifndef VMM_TESTS_VIRTIO_TEST_DRIVER_H
#define VMM_TESTS_VIRTIO_TEST_DRIVER_H

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lib/guest_mem.h"
#include "devices/io_bus.h"
#include "devices/pci_bus.h"
#include "devices/virtio_blk.h"
#include "devices/virtio_pci.h"
#include "devices/virtqueue.h"

#define RAM_SIZE (1u << 20)
#define DESC_GPA 0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA 0x3000
#define INDIRECT_GPA 0x8000
#define DATA_GPA 0x10000

struct vdrv {
	struct io_bus pio, mmio;
	struct pci_bus bus;
	uint8_t *ram;
	struct guest_mem gm;
	struct virtio_blk_pci *blk;
	unsigned slot;
	uint32_t bar0, common, isr, device, notify, notify_mult;
	uint16_t qsize, avail_idx, used_seen;
	int irq_level;
	unsigned irq_raises;
};

static inline void vd_irq(void *ctx, int level)
{
	struct vdrv *d = ctx;
	d->irq_level = level;
	d->irq_raises += level;
}

static inline uint32_t cfg_rd(struct vdrv *d, unsigned slot, unsigned off, unsigned len)
{
	uint32_t a = 0x80000000u | (slot << 11) | (off & 0xfc), v = 0;
	io_bus_access(&d->pio, 0, 0xcf8, (uint8_t *)&a, 4, true);
	io_bus_access(&d->pio, 0, 0xcfc + (off & 3), (uint8_t *)&v, len, false);
	return v;
}

static inline void cfg_wr(struct vdrv *d, unsigned slot, unsigned off, uint32_t v, unsigned len)
{
	uint32_t a = 0x80000000u | (slot << 11) | (off & 0xfc);
	io_bus_access(&d->pio, 0, 0xcf8, (uint8_t *)&a, 4, true);
	io_bus_access(&d->pio, 0, 0xcfc + (off & 3), (uint8_t *)&v, len, true);
}

static inline uint64_t mm_rd(struct vdrv *d, uint64_t addr, unsigned len)
{
	uint64_t v = 0;
	CHECK_EQ(io_bus_access(&d->mmio, 0, addr, (uint8_t *)&v, len, false), 0);
	return v;
}

static inline void mm_wr(struct vdrv *d, uint64_t addr, uint64_t v, unsigned len)
{
	CHECK_EQ(io_bus_access(&d->mmio, 0, addr, (uint8_t *)&v, len, true), 0);
}

static inline uint64_t cc_rd(struct vdrv *d, unsigned off, unsigned len)
{
	return mm_rd(d, d->common + off, len);
}

static inline void cc_wr(struct vdrv *d, unsigned off, uint64_t v, unsigned len)
{
	mm_wr(d, d->common + off, v, len);
}

static inline void vd_bus_init(struct vdrv *d)
{
	memset(d, 0, sizeof(*d));
	d->ram = calloc(1, RAM_SIZE);
	guest_mem_init_flat(&d->gm, d->ram, RAM_SIZE);
	CHECK_EQ(pci_bus_init(&d->bus, PCI_MMIO_DEFAULT_BASE, PCI_MMIO_DEFAULT_SIZE), 0);
	CHECK_EQ(pci_bus_register(&d->bus, &d->pio, &d->mmio), 0);
}

static inline void vd_bus_fini(struct vdrv *d)
{
	CHECK_EQ(virtio_blk_pci_destroy(d->blk, NULL), 0); /* nothing left out */
	d->blk = NULL;
	pci_bus_destroy(&d->bus);
	free(d->ram);
}

/* Finds the virtio device and its four regions through the capability list. */
static inline int vd_probe(struct vdrv *d)
{
	for (d->slot = 0; d->slot < 32; d->slot++)
		if (cfg_rd(d, d->slot, 0, 4) == (0x1042u << 16 | 0x1af4))
			break;
	if (d->slot == 32)
		return -ENODEV;
	cfg_wr(d, d->slot, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
	d->bar0 = cfg_rd(d, d->slot, PCI_BASE_ADDRESS_0, 4) & ~0xfu;
	unsigned found = 0;
	for (unsigned p = cfg_rd(d, d->slot, PCI_CAPABILITY_LIST, 1), n = 0; p && n < 48;
	     p = cfg_rd(d, d->slot, p + 1, 1), n++) {
		if (cfg_rd(d, d->slot, p, 1) != PCI_CAP_ID_VNDR)
			continue;
		unsigned type = cfg_rd(d, d->slot, p + 3, 1), bar = cfg_rd(d, d->slot, p + 4, 1);
		uint32_t off = cfg_rd(d, d->slot, p + 8, 4);
		if (bar != 0)
			continue;
		switch (type) {
		case VIRTIO_PCI_CAP_COMMON_CFG: d->common = d->bar0 + off; found |= 1; break;
		case VIRTIO_PCI_CAP_NOTIFY_CFG:
			d->notify = d->bar0 + off;
			d->notify_mult = cfg_rd(d, d->slot, p + 16, 4);
			found |= 2;
			break;
		case VIRTIO_PCI_CAP_ISR_CFG: d->isr = d->bar0 + off; found |= 4; break;
		case VIRTIO_PCI_CAP_DEVICE_CFG: d->device = d->bar0 + off; found |= 8; break;
		default: break;
		}
	}
	return found == 15 ? 0 : -ENOENT;
}

static inline uint64_t vd_device_features(struct vdrv *d)
{
	cc_wr(d, VIRTIO_PCI_COMMON_DFSELECT, 0, 4);
	uint64_t lo = cc_rd(d, VIRTIO_PCI_COMMON_DF, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_DFSELECT, 1, 4);
	return lo | cc_rd(d, VIRTIO_PCI_COMMON_DF, 4) << 32;
}

/* Reset, negotiate `want` (masked by what is offered), set up queue 0 of qsize. 0 or -1. */
static inline int vd_start(struct vdrv *d, uint64_t want, uint16_t qsize)
{
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	CHECK_EQ(cc_rd(d, VIRTIO_PCI_COMMON_STATUS, 1), 0);
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, VIRTIO_STATUS_ACKNOWLEDGE, 1);
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER, 1);
	uint64_t f = vd_device_features(d) & want;
	cc_wr(d, VIRTIO_PCI_COMMON_GFSELECT, 0, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_GF, (uint32_t)f, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_GF, (uint32_t)(f >> 32), 4);
	uint8_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, st, 1);
	if (!(cc_rd(d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_FEATURES_OK))
		return -1;
	cc_wr(d, VIRTIO_PCI_COMMON_Q_SELECT, 0, 2);
	uint16_t max = (uint16_t)cc_rd(d, VIRTIO_PCI_COMMON_Q_SIZE, 2);
	if (qsize > max)
		return -1;
	memset(d->ram, 0, DATA_GPA); /* rings */
	cc_wr(d, VIRTIO_PCI_COMMON_Q_SIZE, qsize, 2);
	/* Addresses as Linux writes them: two 32-bit halves. */
	cc_wr(d, VIRTIO_PCI_COMMON_Q_DESCLO, DESC_GPA, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_Q_DESCLO + 4, 0, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_Q_AVAILLO, AVAIL_GPA, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_Q_AVAILLO + 4, 0, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_Q_USEDLO, USED_GPA, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_Q_USEDLO + 4, 0, 4);
	cc_wr(d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	if (cc_rd(d, VIRTIO_PCI_COMMON_Q_ENABLE, 2) != 1)
		return -1;
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, st | VIRTIO_STATUS_DRIVER_OK, 1);
	d->qsize = qsize;
	d->avail_idx = d->used_seen = 0;
	return 0;
}

static inline struct virtq_desc *vd_desc(struct vdrv *d, unsigned i)
{
	return (struct virtq_desc *)(d->ram + DESC_GPA) + i;
}

static inline void vd_set_desc(struct vdrv *d, unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	*vd_desc(d, i) = (struct virtq_desc){ addr, len, flags, next };
}

static inline uint16_t *vd_avail(struct vdrv *d)
{
	return (uint16_t *)(d->ram + AVAIL_GPA);
}

static inline uint16_t vd_used_idx(struct vdrv *d)
{
	return __atomic_load_n((uint16_t *)(d->ram + USED_GPA + 2), __ATOMIC_ACQUIRE);
}

static inline struct virtq_used_elem vd_used_elem(struct vdrv *d, uint16_t i)
{
	struct virtq_used_elem e;
	memcpy(&e, d->ram + USED_GPA + 4 + 8 * (i % d->qsize), sizeof(e));
	return e;
}

/* Makes head available and kicks queue 0. */
static inline void vd_kick_head(struct vdrv *d, uint16_t head)
{
	vd_avail(d)[2 + d->avail_idx % d->qsize] = head;
	d->avail_idx++;
	__atomic_store_n(&vd_avail(d)[1], d->avail_idx, __ATOMIC_RELEASE);
	mm_wr(d, d->notify + 0 * d->notify_mult, 0, 2);
}

/* Runs completions until the used index reaches the avail index (or 5 s pass). */
static inline int vd_wait_all(struct vdrv *d)
{
	for (int i = 0; i < 500 && vd_used_idx(d) != d->avail_idx; i++) {
		struct pollfd p = { .fd = virtio_blk_pci_event_fd(d->blk), .events = POLLIN };
		poll(&p, 1, 10);
		virtio_blk_pci_process_completions(d->blk);
	}
	return vd_used_idx(d) == d->avail_idx ? 0 : -ETIMEDOUT;
}

/* Next used element after the ones already seen. */
static inline struct virtq_used_elem vd_next_used(struct vdrv *d)
{
	return vd_used_elem(d, d->used_seen++);
}

static inline uint8_t vd_isr(struct vdrv *d)
{
	return (uint8_t)mm_rd(d, d->isr, 1);
}

#endif
