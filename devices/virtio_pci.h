/*
 * The modern virtio-pci transport (virtio 1.x, section 4.1): a PCI function
 * with vendor 0x1af4, device 0x1040 + the virtio device type, revision 1,
 * and vendor capabilities pointing into one 16 KiB memory BAR 0:
 *
 *   0x0000 common configuration (struct virtio_pci_common_cfg, 0x38 bytes)
 *   0x1000 ISR status (1 byte, read clears)
 *   0x2000 device-specific configuration
 *   0x3000 notifications: queue q at 0x3000 + 4*q (notify_off_multiplier 4)
 *
 * plus the VIRTIO_PCI_CAP_PCI_CFG window in config space. Interrupts are
 * legacy INTx (pin A), level-triggered: raised while the ISR is non-zero,
 * lowered when the driver reads it. No MSI-X (msix vectors read 0xffff), so
 * Linux's virtio_pci uses its INTx path.
 *
 * One mutex (vp->lock) guards the transport, its queues and the device
 * behind it; the ops are called with it held, and so is the irq callback.
 */
#ifndef VMM_DEVICES_VIRTIO_PCI_H
#define VMM_DEVICES_VIRTIO_PCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/guest_mem.h"
#include "devices/pci_bus.h"
#include "devices/virtqueue.h"

#define VIRTIO_PCI_VENDOR 0x1af4
#define VIRTIO_PCI_DEVICE_BASE 0x1040
#define VIRTIO_PCI_MAX_QUEUES 4

/* Device status bits. */
#define VIRTIO_STATUS_ACKNOWLEDGE 1
#define VIRTIO_STATUS_DRIVER 2
#define VIRTIO_STATUS_DRIVER_OK 4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_NEEDS_RESET 64
#define VIRTIO_STATUS_FAILED 128

/* Transport feature bits. */
#define VIRTIO_RING_F_INDIRECT_DESC 28
#define VIRTIO_RING_F_EVENT_IDX 29
#define VIRTIO_F_VERSION_1 32

/* Capability types. */
#define VIRTIO_PCI_CAP_COMMON_CFG 1
#define VIRTIO_PCI_CAP_NOTIFY_CFG 2
#define VIRTIO_PCI_CAP_ISR_CFG 3
#define VIRTIO_PCI_CAP_DEVICE_CFG 4
#define VIRTIO_PCI_CAP_PCI_CFG 5

/* BAR 0 layout. */
#define VIRTIO_PCI_BAR_SIZE 0x4000
#define VIRTIO_PCI_COMMON_OFF 0x0000
#define VIRTIO_PCI_COMMON_LEN 0x38
#define VIRTIO_PCI_ISR_OFF 0x1000
#define VIRTIO_PCI_DEVICE_OFF 0x2000
#define VIRTIO_PCI_DEVICE_LEN 0x1000
#define VIRTIO_PCI_NOTIFY_OFF 0x3000
#define VIRTIO_PCI_NOTIFY_MULT 4

/* struct virtio_pci_common_cfg offsets. */
#define VIRTIO_PCI_COMMON_DFSELECT 0x00
#define VIRTIO_PCI_COMMON_DF 0x04
#define VIRTIO_PCI_COMMON_GFSELECT 0x08
#define VIRTIO_PCI_COMMON_GF 0x0c
#define VIRTIO_PCI_COMMON_MSIX 0x10
#define VIRTIO_PCI_COMMON_NUMQ 0x12
#define VIRTIO_PCI_COMMON_STATUS 0x14
#define VIRTIO_PCI_COMMON_CFGGENERATION 0x15
#define VIRTIO_PCI_COMMON_Q_SELECT 0x16
#define VIRTIO_PCI_COMMON_Q_SIZE 0x18
#define VIRTIO_PCI_COMMON_Q_MSIX 0x1a
#define VIRTIO_PCI_COMMON_Q_ENABLE 0x1c
#define VIRTIO_PCI_COMMON_Q_NOFF 0x1e
#define VIRTIO_PCI_COMMON_Q_DESCLO 0x20
#define VIRTIO_PCI_COMMON_Q_AVAILLO 0x28
#define VIRTIO_PCI_COMMON_Q_USEDLO 0x30

#define VIRTIO_MSI_NO_VECTOR 0xffff

/* What a virtio device behind the transport provides; every call holds vp->lock. */
struct virtio_dev_ops {
	uint16_t device_type; /* virtio device id: 2 = block */
	uint32_t pci_class;
	uint16_t num_queues, queue_max;
	unsigned cfg_len;
	void (*cfg_read)(void *dev, unsigned off, uint8_t *data, unsigned len);
	void (*cfg_write)(void *dev, unsigned off, const uint8_t *data, unsigned len);
	void (*notify)(void *dev, unsigned q); /* the driver kicked queue q (ready, DRIVER_OK) */
	/*
	 * The driver reset the device: 0 once none of its buffers can be
	 * written any more, -errno while I/O of before may still be (then the
	 * status reads DEVICE_NEEDS_RESET, not 0, until reset_poll says 0).
	 */
	int (*reset)(void *dev);
	int (*reset_poll)(void *dev); /* non-blocking, on each access while a reset is pending */
};

struct virtio_pci_queue_cfg {
	uint16_t size;
	bool enabled;
	uint64_t desc, avail, used;
};

struct virtio_pci {
	pthread_mutex_t lock;
	struct pci_device pci;
	const struct virtio_dev_ops *ops;
	void *dev;
	const struct guest_mem *mem;
	uint64_t dev_features, drv_features;
	uint32_t dfselect, gfselect;
	uint16_t queue_select;
	uint8_t status, isr, config_generation;
	unsigned pci_cfg_cap; /* offset of the VIRTIO_PCI_CAP_PCI_CFG capability */
	struct virtio_pci_queue_cfg qcfg[VIRTIO_PCI_MAX_QUEUES];
	struct virtq vq[VIRTIO_PCI_MAX_QUEUES];
	void (*irq)(void *ctx, int level);
	void *irq_ctx;
	int irq_level;
	bool intx_disabled;
	bool reset_pending; /* reset() said I/O may still write guest memory: status is not 0 yet */
	uint64_t interrupts, resets, needs_reset_events;
	uint64_t resets_held; /* resets whose status stayed non-zero for I/O still out */
};

/* Builds the PCI function; the caller then puts vp->pci on a bus (pci_bus_add). */
int virtio_pci_init(struct virtio_pci *vp, const struct virtio_dev_ops *ops, void *dev, uint64_t features,
		    const struct guest_mem *mem, uint8_t irq_line, void (*irq)(void *ctx, int level), void *irq_ctx);
void virtio_pci_destroy(struct virtio_pci *vp);


/* With vp->lock held: after vq_push()es on queue q, interrupt the driver unless it asked not to. */
void virtio_pci_queue_used(struct virtio_pci *vp, unsigned q);
/* With vp->lock held: an unrecoverable device error; sets DEVICE_NEEDS_RESET, config interrupt. */
void virtio_pci_needs_reset(struct virtio_pci *vp);
/* With vp->lock held: queue q may be processed (DRIVER_OK, ready, no NEEDS_RESET). */
bool virtio_pci_queue_live(const struct virtio_pci *vp, unsigned q);

#endif
