/* PCI bus 0: config mechanism #1, the host bridge, BAR sizing and moves, capability lists. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "virtio_test_driver.h"

static unsigned hits;
static uint64_t last_off;
static int toy_bar(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write)
{
	(void)opaque;
	(void)vcpu;
	hits++;
	last_off = off;
	if (!is_write)
		memset(data, 0x5a, len);
	return 0;
}

int main(void)
{
	struct vdrv d;
	vd_bus_init(&d);

	/* CONFIG_ADDRESS reads back (Linux's type-1 probe); byte accesses around it do not touch it. */
	uint32_t a = 0x80000000u, v = 0;
	CHECK_EQ(io_bus_access(&d.pio, 0, 0xcf8, (uint8_t *)&a, 4, true), 0);
	CHECK_EQ(io_bus_access(&d.pio, 0, 0xcf8, (uint8_t *)&v, 4, false), 0);
	CHECK_EQ(v, 0x80000000u);
	uint8_t one = 1;
	CHECK_EQ(io_bus_access(&d.pio, 0, 0xcfb, &one, 1, true), 0);
	CHECK_EQ(io_bus_access(&d.pio, 0, 0xcf8, (uint8_t *)&v, 4, false), 0);
	CHECK_EQ(v, 0x80000000u);

	/* The host bridge at 00:00.0. */
	CHECK_EQ(cfg_rd(&d, 0, PCI_VENDOR_ID, 2), 0x1b36);
	CHECK_EQ(cfg_rd(&d, 0, PCI_DEVICE_ID, 2), 0x0008);
	CHECK_EQ(cfg_rd(&d, 0, 0x0a, 2), 0x0600); /* class: host bridge */
	CHECK_EQ(cfg_rd(&d, 0, PCI_HEADER_TYPE, 1), 0);
	CHECK_EQ(cfg_rd(&d, 0, PCI_BASE_ADDRESS_0, 4), 0);
	cfg_wr(&d, 0, PCI_VENDOR_ID, 0x1234, 2); /* read-only */
	CHECK_EQ(cfg_rd(&d, 0, PCI_VENDOR_ID, 2), 0x1b36);
	/* Empty slots, other functions, other buses, and the enable bit off read all-ones. */
	CHECK_EQ(cfg_rd(&d, 5, 0, 4), 0xffffffffu);
	a = 0x80000100u; /* 00:00.1 */
	io_bus_access(&d.pio, 0, 0xcf8, (uint8_t *)&a, 4, true);
	io_bus_access(&d.pio, 0, 0xcfc, (uint8_t *)&v, 4, false);
	CHECK_EQ(v, 0xffffffffu);
	a = 0x80010000u; /* 01:00.0 */
	io_bus_access(&d.pio, 0, 0xcf8, (uint8_t *)&a, 4, true);
	io_bus_access(&d.pio, 0, 0xcfc, (uint8_t *)&v, 4, false);
	CHECK_EQ(v, 0xffffffffu);
	a = 0;
	io_bus_access(&d.pio, 0, 0xcf8, (uint8_t *)&a, 4, true);
	io_bus_access(&d.pio, 0, 0xcfc, (uint8_t *)&v, 4, false);
	CHECK_EQ(v, 0xffffffffu);

	/* A toy device with one 4 KiB BAR. */
	struct pci_device toy;
	pci_dev_init(&toy, 0x1234, 0x5678, 0xff0000, 3, 0x1234, 1);
	CHECK_EQ(pci_dev_set_bar(&toy, 1, 4096, toy_bar, NULL), 0);
	CHECK_EQ(pci_dev_set_bar(&toy, 0, 100, toy_bar, NULL), -EINVAL);
	unsigned slot;
	CHECK_EQ(pci_bus_add(&d.bus, &toy, &slot), 0);
	CHECK_EQ(slot, 1);
	CHECK_EQ(cfg_rd(&d, 1, 0, 4), 0x56781234u);
	CHECK_EQ(cfg_rd(&d, 1, PCI_REVISION_ID, 4), 0xff000003u);
	CHECK_EQ(cfg_rd(&d, 1, PCI_INTERRUPT_PIN, 1), 1);
	uint32_t bar = cfg_rd(&d, 1, PCI_BASE_ADDRESS_0 + 4, 4);
	CHECK_EQ(bar, PCI_MMIO_DEFAULT_BASE);
	CHECK_EQ(cfg_rd(&d, 1, PCI_BASE_ADDRESS_0, 4), 0); /* unimplemented BARs stay 0 */
	/* Memory decoding is off until the command register says so. */
	uint64_t x = 0;
	CHECK_EQ(io_bus_access(&d.mmio, 0, bar + 8, (uint8_t *)&x, 4, false), 0);
	CHECK_EQ(x, 0xffffffffu);
	CHECK_EQ(hits, 0);
	CHECK_EQ(d.bus.unclaimed_mmio, 1);
	cfg_wr(&d, 1, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
	CHECK_EQ(io_bus_access(&d.mmio, 0, bar + 8, (uint8_t *)&x, 4, false), 0);
	CHECK_EQ(x, 0x5a5a5a5au);
	CHECK(hits == 1 && last_off == 8);
	/* Sizing: all-ones reads back the size mask; the BAR is 32-bit non-prefetchable memory. */
	cfg_wr(&d, 1, PCI_COMMAND, 0, 2);
	cfg_wr(&d, 1, PCI_BASE_ADDRESS_0 + 4, 0xffffffffu, 4);
	CHECK_EQ(cfg_rd(&d, 1, PCI_BASE_ADDRESS_0 + 4, 4), 0xfffff000u);
	cfg_wr(&d, 1, PCI_BASE_ADDRESS_0, 0xffffffffu, 4);
	CHECK_EQ(cfg_rd(&d, 1, PCI_BASE_ADDRESS_0, 4), 0);
	cfg_wr(&d, 1, 0x30, 0xfffff800u, 4); /* no expansion ROM */
	CHECK_EQ(cfg_rd(&d, 1, 0x30, 4), 0);
	/* A move: the guest reprograms the BAR (here with two 16-bit writes) and the old place goes dead. */
	uint32_t moved = PCI_MMIO_DEFAULT_BASE + 0x100000;
	cfg_wr(&d, 1, PCI_BASE_ADDRESS_0 + 4, moved & 0xffff, 2);
	cfg_wr(&d, 1, PCI_BASE_ADDRESS_0 + 6, moved >> 16, 2);
	CHECK_EQ(cfg_rd(&d, 1, PCI_BASE_ADDRESS_0 + 4, 4), moved);
	cfg_wr(&d, 1, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
	hits = 0;
	CHECK_EQ(io_bus_access(&d.mmio, 0, moved + 0xffc, (uint8_t *)&x, 4, true), 0);
	CHECK(hits == 1 && last_off == 0xffc);
	CHECK_EQ(io_bus_access(&d.mmio, 0, bar + 8, (uint8_t *)&x, 4, false), 0);
	CHECK_EQ(hits, 1);
	/* An access straddling the BAR's end belongs to no one. */
	CHECK_EQ(io_bus_access(&d.mmio, 0, moved + 0xffe, (uint8_t *)&x, 4, false), 0);
	CHECK_EQ(hits, 1);
	/* Interrupt line is writable, pin is not. */
	cfg_wr(&d, 1, PCI_INTERRUPT_LINE, 0x0a0b, 2);
	CHECK_EQ(cfg_rd(&d, 1, PCI_INTERRUPT_LINE, 2), 0x010b);

	/* The virtio-blk function: ids, revision 1, capability list, BAR 0. */
	char path[] = "/tmp/vmm-test-pci-XXXXXX", err[256];
	int fd = mkstemp(path);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
	close(fd);
	CHECK_EQ(virtio_blk_pci_create(&d.bus, path, false, &d.gm, 11, vd_irq, &d, &d.blk, err, sizeof(err), NULL), 0);
	CHECK_EQ(virtio_blk_pci_slot(d.blk), 2);
	CHECK_EQ(vd_probe(&d), 0);
	CHECK_EQ(d.slot, 2);
	CHECK_EQ(cfg_rd(&d, 2, PCI_REVISION_ID, 1), 1);
	CHECK_EQ(cfg_rd(&d, 2, PCI_SUBSYSTEM_VENDOR_ID, 2), 0x1af4);
	CHECK(cfg_rd(&d, 2, PCI_SUBSYSTEM_ID, 2) >= 0x40);
	CHECK_EQ(cfg_rd(&d, 2, 0x0a, 2), 0x0180);
	CHECK_EQ(cfg_rd(&d, 2, PCI_INTERRUPT_LINE, 1), 11);
	CHECK(cfg_rd(&d, 2, PCI_STATUS, 2) & PCI_STATUS_CAP_LIST);
	CHECK_EQ(d.bar0, PCI_MMIO_DEFAULT_BASE + 0x4000); /* after the toy's original 4 KiB, aligned */
	cfg_wr(&d, 2, PCI_BASE_ADDRESS_0, 0xffffffffu, 4);
	CHECK_EQ(cfg_rd(&d, 2, PCI_BASE_ADDRESS_0, 4), (uint32_t)~(VIRTIO_PCI_BAR_SIZE - 1));
	cfg_wr(&d, 2, PCI_BASE_ADDRESS_0, d.bar0, 4);
	/* The walk: five vendor capabilities, in order, each inside BAR 0. */
	unsigned types[8], n = 0;
	for (unsigned p = cfg_rd(&d, 2, PCI_CAPABILITY_LIST, 1); p && n < 8; p = cfg_rd(&d, 2, p + 1, 1)) {
		CHECK(p >= 0x40 && (p & 3) == 0);
		CHECK_EQ(cfg_rd(&d, 2, p, 1), PCI_CAP_ID_VNDR);
		unsigned len = cfg_rd(&d, 2, p + 2, 1);
		types[n++] = cfg_rd(&d, 2, p + 3, 1);
		CHECK(len == 16 || len == 20);
		uint32_t off = cfg_rd(&d, 2, p + 8, 4), l = cfg_rd(&d, 2, p + 12, 4);
		CHECK(off + l <= VIRTIO_PCI_BAR_SIZE);
	}
	CHECK_EQ(n, 5);
	CHECK(types[0] == 1 && types[1] == 2 && types[2] == 3 && types[3] == 4 && types[4] == 5);
	CHECK_EQ(d.notify_mult, 4);
	/* The same registers through the VIRTIO_PCI_CAP_PCI_CFG window: read num_queues. */
	unsigned pc = 0;
	for (unsigned p = cfg_rd(&d, 2, PCI_CAPABILITY_LIST, 1); p; p = cfg_rd(&d, 2, p + 1, 1))
		if (cfg_rd(&d, 2, p + 3, 1) == VIRTIO_PCI_CAP_PCI_CFG)
			pc = p;
	CHECK(pc != 0);
	cfg_wr(&d, 2, pc + 4, 0, 1);
	cfg_wr(&d, 2, pc + 8, VIRTIO_PCI_COMMON_NUMQ, 4);
	cfg_wr(&d, 2, pc + 12, 2, 4);
	CHECK_EQ(cfg_rd(&d, 2, pc + 16, 2), 1);
	cfg_wr(&d, 2, pc + 8, VIRTIO_PCI_COMMON_Q_SELECT, 4);
	cfg_wr(&d, 2, pc + 16, 0, 2);
	cfg_wr(&d, 2, pc + 8, VIRTIO_PCI_COMMON_Q_SIZE, 4);
	CHECK_EQ(cfg_rd(&d, 2, pc + 16, 2), VIRTIO_BLK_QUEUE_SIZE);
	cfg_wr(&d, 2, pc + 12, 3, 4); /* a bad length reads zero */
	CHECK_EQ(cfg_rd(&d, 2, pc + 16, 4), 0);
	/* The virtio device works through a moved BAR. */
	uint32_t nb = PCI_MMIO_DEFAULT_BASE + 0x200000;
	cfg_wr(&d, 2, PCI_BASE_ADDRESS_0, nb, 4);
	CHECK_EQ(vd_probe(&d), 0);
	CHECK_EQ(d.bar0, nb);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_NUMQ, 2), 1);

	pci_bus_remove(&d.bus, &toy);
	CHECK_EQ(cfg_rd(&d, 1, 0, 4), 0xffffffffu);
	vd_bus_fini(&d);
	CHECK_EQ(cfg_rd(&d, 2, 0, 4), 0xffffffffu); /* destroy took it off the bus */
	unlink(path);
	return check_summary();
}
