#include "devices/virtio_pci.h"

#include <errno.h>
#include <string.h>

#include "lib/bytes.h"

/* struct virtio_pci_cap, and the notify and pci_cfg extensions. */
struct vpci_cap {
	uint8_t cap_vndr, cap_next, cap_len, cfg_type, bar, id, padding[2];
	uint32_t offset, length;
};
struct vpci_notify_cap {
	struct vpci_cap cap;
	uint32_t notify_off_multiplier;
};
struct vpci_cfg_cap {
	struct vpci_cap cap;
	uint8_t pci_cfg_data[4];
};
_Static_assert(sizeof(struct vpci_cap) == 16, "virtio_pci_cap layout");
_Static_assert(sizeof(struct vpci_notify_cap) == 20, "virtio_pci_notify_cap layout");
_Static_assert(sizeof(struct vpci_cfg_cap) == 20, "virtio_pci_cfg_cap layout");

#define CFG_CAP_BAR 4
#define CFG_CAP_OFFSET 8
#define CFG_CAP_LENGTH 12
#define CFG_CAP_DATA 16

static void update_irq(struct virtio_pci *vp)
{
	int level = vp->isr && !vp->intx_disabled;
	if (level == vp->irq_level)
		return;
	vp->irq_level = level;
	if (level)
		vp->interrupts++;
	if (vp->irq)
		vp->irq(vp->irq_ctx, level);
}

void virtio_pci_queue_used(struct virtio_pci *vp, unsigned q)
{
	if (q >= vp->ops->num_queues || !vq_want_interrupt(&vp->vq[q]))
		return;
	vp->isr |= 1;
	update_irq(vp);
}

void virtio_pci_needs_reset(struct virtio_pci *vp)
{
	if (vp->status & VIRTIO_STATUS_NEEDS_RESET)
		return;
	vp->status |= VIRTIO_STATUS_NEEDS_RESET;
	vp->needs_reset_events++;
	if (vp->status & VIRTIO_STATUS_DRIVER_OK) {
		vp->isr |= 2;
		update_irq(vp);
	}
}

bool virtio_pci_queue_live(const struct virtio_pci *vp, unsigned q)
{
	return q < vp->ops->num_queues && vp->vq[q].ready && (vp->status & VIRTIO_STATUS_DRIVER_OK) &&
	       !(vp->status & VIRTIO_STATUS_NEEDS_RESET);
}

static void reset(struct virtio_pci *vp)
{
	vp->drv_features = 0;
	vp->dfselect = vp->gfselect = 0;
	vp->queue_select = 0;
	vp->status = 0;
	vp->isr = 0;
	for (unsigned i = 0; i < VIRTIO_PCI_MAX_QUEUES; i++) {
		vp->qcfg[i] = (struct virtio_pci_queue_cfg){ .size = vp->ops->queue_max };
		vq_reset(&vp->vq[i]);
	}
	vp->resets++;
	vp->reset_pending = vp->ops->reset && vp->ops->reset(vp->dev) < 0;
	if (vp->reset_pending) {
		/*
		 * virtio 1.2 §4.1.4.3.2: the driver waits for status 0 before it
		 * reuses its buffers, so status must not read 0 while the device
		 * may still write them; NEEDS_RESET says why.
		 */
		vp->resets_held++;
		virtio_pci_needs_reset(vp);
	}
	update_irq(vp);
}

/* A held reset completes once the device says nothing is left that could write guest memory. */
static void settle_reset(struct virtio_pci *vp)
{
	if (!vp->reset_pending || (vp->ops->reset_poll && vp->ops->reset_poll(vp->dev) < 0))
		return;
	vp->reset_pending = false;
	vp->status = 0;
}

/* ---- common configuration: a snapshot to read from and to merge writes into ---- */

static struct virtio_pci_queue_cfg *selected_queue(struct virtio_pci *vp)
{
	return vp->queue_select < vp->ops->num_queues ? &vp->qcfg[vp->queue_select] : NULL;
}

static void common_snapshot(struct virtio_pci *vp, uint8_t b[0x40])
{
	memset(b, 0, 0x40);
	put_le(b + VIRTIO_PCI_COMMON_DFSELECT, vp->dfselect, 4);
	put_le(b + VIRTIO_PCI_COMMON_DF, vp->dfselect < 2 ? (uint32_t)(vp->dev_features >> (32 * vp->dfselect)) : 0, 4);
	put_le(b + VIRTIO_PCI_COMMON_GFSELECT, vp->gfselect, 4);
	put_le(b + VIRTIO_PCI_COMMON_GF, vp->gfselect < 2 ? (uint32_t)(vp->drv_features >> (32 * vp->gfselect)) : 0, 4);
	put_le(b + VIRTIO_PCI_COMMON_MSIX, VIRTIO_MSI_NO_VECTOR, 2);
	put_le(b + VIRTIO_PCI_COMMON_NUMQ, vp->ops->num_queues, 2);
	put_le(b + VIRTIO_PCI_COMMON_STATUS, vp->status, 1);
	put_le(b + VIRTIO_PCI_COMMON_CFGGENERATION, vp->config_generation, 1);
	put_le(b + VIRTIO_PCI_COMMON_Q_SELECT, vp->queue_select, 2);
	struct virtio_pci_queue_cfg *q = selected_queue(vp);
	put_le(b + VIRTIO_PCI_COMMON_Q_MSIX, VIRTIO_MSI_NO_VECTOR, 2);
	if (q) {
		put_le(b + VIRTIO_PCI_COMMON_Q_SIZE, q->size, 2);
		put_le(b + VIRTIO_PCI_COMMON_Q_ENABLE, q->enabled, 2);
		put_le(b + VIRTIO_PCI_COMMON_Q_NOFF, vp->queue_select, 2);
		put_le(b + VIRTIO_PCI_COMMON_Q_DESCLO, q->desc, 8);
		put_le(b + VIRTIO_PCI_COMMON_Q_AVAILLO, q->avail, 8);
		put_le(b + VIRTIO_PCI_COMMON_Q_USEDLO, q->used, 8);
	}
}

static void write_status(struct virtio_pci *vp, uint8_t v)
{
	if (!v) {
		reset(vp); /* again while held: another bounded try */
		return;
	}
	if (vp->reset_pending)
		return; /* not reset yet: the driver may not start it */
	uint8_t old = vp->status;
	if ((v & VIRTIO_STATUS_FEATURES_OK) && !(old & VIRTIO_STATUS_FEATURES_OK)) {
		/* Accept only features we offered, and only a virtio 1 driver. */
		if ((vp->drv_features & ~vp->dev_features) || !(vp->drv_features & (1ull << VIRTIO_F_VERSION_1)))
			v &= (uint8_t)~VIRTIO_STATUS_FEATURES_OK;
	}
	vp->status = (uint8_t)(v | (old & VIRTIO_STATUS_NEEDS_RESET));
}

static void enable_queue(struct virtio_pci *vp, unsigned qi)
{
	struct virtio_pci_queue_cfg *q = &vp->qcfg[qi];
	if (q->enabled)
		return;
	int r = vq_setup(&vp->vq[qi], vp->mem, q->size, vp->ops->queue_max, q->desc, q->avail, q->used);
	if (r) {
		virtio_pci_needs_reset(vp);
		return;
	}
	q->enabled = true;
}

static void apply_field(struct virtio_pci *vp, unsigned off, const uint8_t *b)
{
	struct virtio_pci_queue_cfg *q = selected_queue(vp);
	bool q_writable = q && !q->enabled;
	bool features_open = !(vp->status & VIRTIO_STATUS_FEATURES_OK);
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT: vp->dfselect = (uint32_t)get_le(b + off, 4); break;
	case VIRTIO_PCI_COMMON_GFSELECT: vp->gfselect = (uint32_t)get_le(b + off, 4); break;
	case VIRTIO_PCI_COMMON_GF:
		if (features_open && vp->gfselect < 2) {
			unsigned sh = 32 * vp->gfselect;
			vp->drv_features = (vp->drv_features & ~(0xffffffffull << sh)) | (get_le(b + off, 4) << sh);
		}
		break;
	case VIRTIO_PCI_COMMON_STATUS: write_status(vp, (uint8_t)get_le(b + off, 1)); break;
	case VIRTIO_PCI_COMMON_Q_SELECT: vp->queue_select = (uint16_t)get_le(b + off, 2); break;
	case VIRTIO_PCI_COMMON_Q_SIZE:
		if (q_writable)
			q->size = (uint16_t)get_le(b + off, 2);
		break;
	case VIRTIO_PCI_COMMON_Q_ENABLE:
		if (q && get_le(b + off, 2) == 1)
			enable_queue(vp, vp->queue_select);
		break;
	case VIRTIO_PCI_COMMON_Q_DESCLO:
		if (q_writable)
			q->desc = get_le(b + off, 8);
		break;
	case VIRTIO_PCI_COMMON_Q_AVAILLO:
		if (q_writable)
			q->avail = get_le(b + off, 8);
		break;
	case VIRTIO_PCI_COMMON_Q_USEDLO:
		if (q_writable)
			q->used = get_le(b + off, 8);
		break;
	default: break; /* read-only: features offered, msix (none), num_queues, generation, notify_off */
	}
}

static const struct {
	uint8_t off, len;
} common_fields[] = {
	{ VIRTIO_PCI_COMMON_DFSELECT, 4 }, { VIRTIO_PCI_COMMON_DF, 4 },        { VIRTIO_PCI_COMMON_GFSELECT, 4 },
	{ VIRTIO_PCI_COMMON_GF, 4 },       { VIRTIO_PCI_COMMON_MSIX, 2 },      { VIRTIO_PCI_COMMON_NUMQ, 2 },
	{ VIRTIO_PCI_COMMON_STATUS, 1 },   { VIRTIO_PCI_COMMON_CFGGENERATION, 1 },
	{ VIRTIO_PCI_COMMON_Q_SELECT, 2 }, { VIRTIO_PCI_COMMON_Q_SIZE, 2 },    { VIRTIO_PCI_COMMON_Q_MSIX, 2 },
	{ VIRTIO_PCI_COMMON_Q_ENABLE, 2 }, { VIRTIO_PCI_COMMON_Q_NOFF, 2 },    { VIRTIO_PCI_COMMON_Q_DESCLO, 8 },
	{ VIRTIO_PCI_COMMON_Q_AVAILLO, 8 }, { VIRTIO_PCI_COMMON_Q_USEDLO, 8 },
};

static void common_io(struct virtio_pci *vp, unsigned off, uint8_t *data, unsigned len, bool is_write)
{
	uint8_t b[0x40];
	settle_reset(vp);
	common_snapshot(vp, b);
	if (off >= sizeof(b) || len > sizeof(b) - off) {
		if (!is_write)
			memset(data, 0, len);
		return;
	}
	if (!is_write) {
		memcpy(data, b + off, len);
		return;
	}
	memcpy(b + off, data, len);
	/*
	 * Every field the write touched, in order (a 64-bit address may come as two
	 * 32-bit halves; a status write may reset everything the later fields see).
	 */
	for (unsigned i = 0; i < sizeof(common_fields) / sizeof(common_fields[0]); i++) {
		unsigned f = common_fields[i].off, fl = common_fields[i].len;
		if (off < f + fl && f < off + len)
			apply_field(vp, f, b);
	}
}

static void bar_access(struct virtio_pci *vp, uint64_t off, uint8_t *data, unsigned len, bool is_write)
{
	if (off < VIRTIO_PCI_ISR_OFF) {
		common_io(vp, (unsigned)off, data, len, is_write);
	} else if (off < VIRTIO_PCI_DEVICE_OFF) {
		if (is_write)
			return;
		memset(data, 0, len);
		if (off == VIRTIO_PCI_ISR_OFF) {
			data[0] = vp->isr;
			vp->isr = 0; /* reading acknowledges, and lowers INTx */
			update_irq(vp);
		}
	} else if (off < VIRTIO_PCI_NOTIFY_OFF) {
		unsigned o = (unsigned)(off - VIRTIO_PCI_DEVICE_OFF), n = vp->ops->cfg_len;
		if (o >= n || len > n - o) {
			if (!is_write)
				memset(data, 0, len);
		} else if (is_write) {
			if (vp->ops->cfg_write)
				vp->ops->cfg_write(vp->dev, o, data, len);
		} else {
			vp->ops->cfg_read(vp->dev, o, data, len);
		}
	} else {
		if (!is_write) {
			memset(data, 0, len);
			return;
		}
		uint64_t o = off - VIRTIO_PCI_NOTIFY_OFF;
		unsigned q = (unsigned)(o / VIRTIO_PCI_NOTIFY_MULT);
		if (o % VIRTIO_PCI_NOTIFY_MULT == 0 && virtio_pci_queue_live(vp, q) && vp->ops->notify)
			vp->ops->notify(vp->dev, q);
	}
}

static int virtio_pci_bar_io(void *opaque, unsigned vcpu, uint64_t off, uint8_t *data, unsigned len, bool is_write)
{
	struct virtio_pci *vp = opaque;
	(void)vcpu;
	if (!len || len > 8) /* KVM never does this; the pci_cfg window could ask for it */
		return 0;
	pthread_mutex_lock(&vp->lock);
	bar_access(vp, off, data, len, is_write);
	pthread_mutex_unlock(&vp->lock);
	return 0;
}

/* ---- config-space hooks: INTx disable / status, and the pci_cfg access window ---- */

static bool overlaps(unsigned off, unsigned len, unsigned start, unsigned n)
{
	return off < start + n && start < off + len;
}

/* A BAR access through VIRTIO_PCI_CAP_PCI_CFG: bar, offset, length chosen by the driver. */
static void cfg_window(struct virtio_pci *vp, bool is_write)
{
	uint8_t *c = vp->pci.cfg + vp->pci_cfg_cap;
	uint32_t boff = get_le32(c + CFG_CAP_OFFSET), blen = get_le32(c + CFG_CAP_LENGTH);
	if (c[CFG_CAP_BAR] != 0 || (blen != 1 && blen != 2 && blen != 4) || boff % blen ||
	    boff >= VIRTIO_PCI_BAR_SIZE) {
		if (!is_write)
			memset(c + CFG_CAP_DATA, 0, 4);
		return;
	}
	virtio_pci_bar_io(vp, 0, boff, c + CFG_CAP_DATA, blen, is_write);
}

static void pci_cfg_read(struct pci_device *d, unsigned off, unsigned len)
{
	struct virtio_pci *vp = d->owner;
	if (overlaps(off, len, PCI_STATUS, 2)) {
		pthread_mutex_lock(&vp->lock);
		if (vp->isr)
			d->cfg[PCI_STATUS] |= PCI_STATUS_INTERRUPT;
		else
			d->cfg[PCI_STATUS] &= (uint8_t)~PCI_STATUS_INTERRUPT;
		pthread_mutex_unlock(&vp->lock);
	}
	if (overlaps(off, len, vp->pci_cfg_cap + CFG_CAP_DATA, 4))
		cfg_window(vp, false);
}

static void pci_cfg_write(struct pci_device *d, unsigned off, unsigned len)
{
	struct virtio_pci *vp = d->owner;
	if (overlaps(off, len, PCI_COMMAND, 2)) {
		pthread_mutex_lock(&vp->lock);
		vp->intx_disabled = get_le16(d->cfg + PCI_COMMAND) & PCI_COMMAND_INTX_DISABLE;
		update_irq(vp);
		pthread_mutex_unlock(&vp->lock);
	}
	if (overlaps(off, len, vp->pci_cfg_cap + CFG_CAP_DATA, 4))
		cfg_window(vp, true);
}

static unsigned add_cap(struct virtio_pci *vp, uint8_t type, uint32_t off, uint32_t len)
{
	struct vpci_cap c = { PCI_CAP_ID_VNDR, 0, sizeof(c), type, 0, 0, { 0, 0 }, off, len };
	return pci_dev_add_cap(&vp->pci, &c, sizeof(c));
}

int virtio_pci_init(struct virtio_pci *vp, const struct virtio_dev_ops *ops, void *dev, uint64_t features,
		    const struct guest_mem *mem, uint8_t irq_line, void (*irq)(void *ctx, int level), void *irq_ctx)
{
	memset(vp, 0, sizeof(*vp));
	if (ops->num_queues == 0 || ops->num_queues > VIRTIO_PCI_MAX_QUEUES || ops->cfg_len > VIRTIO_PCI_DEVICE_LEN ||
	    !ops->cfg_read)
		return -EINVAL;
	int r = pthread_mutex_init(&vp->lock, NULL);
	if (r)
		return -r;
	vp->ops = ops;
	vp->dev = dev;
	vp->mem = mem;
	vp->dev_features = features | (1ull << VIRTIO_F_VERSION_1);
	vp->irq = irq;
	vp->irq_ctx = irq_ctx;

	struct pci_device *p = &vp->pci;
	pci_dev_init(p, VIRTIO_PCI_VENDOR, (uint16_t)(VIRTIO_PCI_DEVICE_BASE + ops->device_type), ops->pci_class, 1,
		     VIRTIO_PCI_VENDOR, 0x1100);
	p->cfg[PCI_INTERRUPT_LINE] = irq_line;
	p->owner = vp;
	p->cfg_read = pci_cfg_read;
	p->cfg_write = pci_cfg_write;
	pci_dev_set_bar(p, 0, VIRTIO_PCI_BAR_SIZE, virtio_pci_bar_io, vp);
	add_cap(vp, VIRTIO_PCI_CAP_COMMON_CFG, VIRTIO_PCI_COMMON_OFF, VIRTIO_PCI_COMMON_LEN);
	struct vpci_notify_cap n = {
		{ PCI_CAP_ID_VNDR, 0, sizeof(n), VIRTIO_PCI_CAP_NOTIFY_CFG, 0, 0, { 0, 0 }, VIRTIO_PCI_NOTIFY_OFF,
		  VIRTIO_PCI_NOTIFY_MULT * ops->num_queues },
		VIRTIO_PCI_NOTIFY_MULT,
	};
	pci_dev_add_cap(p, &n, sizeof(n));
	add_cap(vp, VIRTIO_PCI_CAP_ISR_CFG, VIRTIO_PCI_ISR_OFF, 1);
	if (ops->cfg_len)
		add_cap(vp, VIRTIO_PCI_CAP_DEVICE_CFG, VIRTIO_PCI_DEVICE_OFF, ops->cfg_len);
	struct vpci_cfg_cap w = { { PCI_CAP_ID_VNDR, 0, sizeof(w), VIRTIO_PCI_CAP_PCI_CFG, 0, 0, { 0, 0 }, 0, 0 },
				  { 0, 0, 0, 0 } };
	vp->pci_cfg_cap = pci_dev_add_cap(p, &w, sizeof(w));
	if (!vp->pci_cfg_cap) {
		pthread_mutex_destroy(&vp->lock);
		return -ENOSPC;
	}
	/* The driver picks the window: bar, offset, length and the data bytes are writable. */
	memset(p->wmask + vp->pci_cfg_cap + CFG_CAP_BAR, 0xff, 1);
	memset(p->wmask + vp->pci_cfg_cap + CFG_CAP_OFFSET, 0xff, 12);
	reset(vp);
	vp->resets = 0;
	return 0;
}

void virtio_pci_destroy(struct virtio_pci *vp)
{
	pthread_mutex_destroy(&vp->lock);
}
