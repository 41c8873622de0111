/*
 * virtio-blk (virtio 1.x, section 5.2) on the modern virtio-pci transport,
 * served by an io_uring backend. One request queue of 256 entries.
 *
 * Features offered: VERSION_1, SEG_MAX, BLK_SIZE (512), FLUSH, INDIRECT_DESC,
 * and RO for a read-only disk. Requests: IN, OUT, FLUSH, GET_ID; anything
 * else is VIRTIO_BLK_S_UNSUPP. OUT on a read-only disk, a transfer that is
 * not whole sectors or runs past the end, and a backend error are
 * VIRTIO_BLK_S_IOERR. A driver that did not accept FLUSH gets write-through
 * (each write RWF_DSYNC); one that did gets a write-back cache and each
 * FLUSH is an fsync of the image. (virtio-blk has no FUA bit; FLUSH is it.)
 *
 * A malformed descriptor chain fails that request alone: IOERR in its
 * status byte when the chain reaches a writable last byte, otherwise it is
 * returned on the used ring with length 0; both are counted (stats).
 * DEVICE_NEEDS_RESET is set only when the ring itself is unusable (rings
 * outside guest memory, or an available index more than a queue ahead).
 *
 * A reset (status 0) cancels the I/O in flight and waits for what cannot be
 * cancelled before it returns, at most BLK_DRAIN_WAIT_MS, so once the driver
 * reads status 0 no request of before touches guest memory (virtio 1.2
 * §2.4). Past the bound, or when the cancel or the wait cannot be made, the
 * status reads NEEDS_RESET until the last of them is back, and the VMM is
 * told (virtio_blk_pci_on_host_error): it ends the run. A submission io_uring
 * refuses fails its requests with IOERR at once (counted, submit_errors),
 * and none of them runs later.
 *
 * Wiring, for the VMM (vm.c):
 *
 *     struct virtio_blk_pci *blk;
 *     char err[256];
 *     bool host_fault;
 *     if (virtio_blk_pci_create(&vm->pci, path, read_only, &vm->gmem, 0,
 *                               irq_line_fn, vm, 11, &blk, err, sizeof(err), &host_fault))
 *             -> one-line error "--disk: <err>", exit status 2 (the image), 6 (host_fault)
 *     slot = virtio_blk_pci_slot(blk);   // for an MP-table / ACPI routing entry
 *     // in the main thread's event loop: poll virtio_blk_pci_event_fd(blk)
 *     // (re-arm the one-shot poll each time) and when it is readable call
 *     virtio_blk_pci_process_completions(blk);
 *     // after the vCPUs have stopped, before guest memory goes:
 *     virtio_blk_pci_destroy(blk, &left);  // < 0: &left requests still out, keep guest memory mapped
 *
 * irq(ctx, level) is called with the device lock held, from a vCPU thread
 * (synchronous completions) or from the thread that processes completions:
 * level 1 asserts INTA#, 0 deasserts it (KVM_IRQ_LINE on irq_line). It must
 * not call back into the device.
 */
#ifndef VMM_DEVICES_VIRTIO_BLK_H
#define VMM_DEVICES_VIRTIO_BLK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/guest_mem.h"
#include "devices/pci_bus.h"

#define VIRTIO_ID_BLOCK 2
#define VIRTIO_BLK_QUEUE_SIZE 256

#define VIRTIO_BLK_F_SIZE_MAX 1
#define VIRTIO_BLK_F_SEG_MAX 2
#define VIRTIO_BLK_F_RO 5
#define VIRTIO_BLK_F_BLK_SIZE 6
#define VIRTIO_BLK_F_FLUSH 9

#define VIRTIO_BLK_T_IN 0
#define VIRTIO_BLK_T_OUT 1
#define VIRTIO_BLK_T_FLUSH 4
#define VIRTIO_BLK_T_GET_ID 8
#define VIRTIO_BLK_ID_BYTES 20

#define VIRTIO_BLK_S_OK 0
#define VIRTIO_BLK_S_IOERR 1
#define VIRTIO_BLK_S_UNSUPP 2

/* struct virtio_blk_config offsets. */
#define VIRTIO_BLK_CFG_CAPACITY 0
#define VIRTIO_BLK_CFG_SEG_MAX 12
#define VIRTIO_BLK_CFG_BLK_SIZE 20
#define VIRTIO_BLK_CFG_LEN 0x40

struct virtio_blk_req_hdr {
	uint32_t type, reserved;
	uint64_t sector;
};

struct virtio_blk_pci;

struct virtio_blk_stats {
	uint64_t requests, ok, ioerr, unsupp;
	uint64_t bad_chains;    /* malformed chains (also counted below when no status was reachable) */
	uint64_t no_status;     /* returned with used length 0: no writable status byte */
	uint64_t reads, writes, flushes, dsync_writes; /* backend operations */
	uint64_t interrupts, needs_reset;
	uint64_t reset_cancels; /* resets that had I/O in flight to cancel (blk_backend_cancel_all) */
	uint64_t reset_errors;  /* resets that left I/O in flight (bound reached, or io_uring_enter failed) */
	uint64_t reset_timeouts;      /* ... of them, past BLK_DRAIN_WAIT_MS */
	uint64_t reset_cancel_unsent; /* resets whose cancel found no SQE or was refused */
	uint64_t resets_held;   /* resets whose status read NEEDS_RESET, not 0, while I/O was out */
	uint64_t submit_errors; /* io_uring_enter refusals; their requests got IOERR */
	uint64_t backend_errors; /* I/O the host failed (EIO, ENOSPC, EROFS, short file...): IOERR */
	unsigned in_flight;
};

/*
 * Opens the image, builds the PCI function, puts it on bus (its BAR in the
 * bus's MMIO window). irq_line goes into the PCI interrupt-line register.
 * On failure err holds one line (e.g. "disk.img: No such file or directory"),
 * and *host_fault (may be NULL) says whether the image was fine and the host
 * refused the rest (eventfd, the locked io_uring, memory, the PCI bus).
 */
int virtio_blk_pci_create(struct pci_bus *bus, const char *path, bool read_only, const struct guest_mem *mem,
			  uint8_t irq_line, void (*irq)(void *ctx, int level), void *ctx, struct virtio_blk_pci **out,
			  char *err, size_t errlen, bool *host_fault);
/*
 * Cancels in-flight I/O and waits for it at most BLK_DRAIN_WAIT_MS, frees.
 * The device must already be unreachable (vCPUs stopped). 0, or -errno
 * (blk_backend_close) with *left (may be NULL) requests still out: they may
 * still write guest memory, which must then stay mapped.
 */
int virtio_blk_pci_destroy(struct virtio_blk_pci *b, unsigned *left);
/*
 * fn(ctx, what) is called once, with the device lock held, from the thread
 * that reset the device (a vCPU's), when a reset leaves I/O in flight
 * (what: one line, e.g. "reset: 1 request still in flight after 5000 ms"):
 * the host's storage is hung or io_uring refused the wait, and the device
 * holds its status at NEEDS_RESET. The VMM ends the run (exit 6). It must
 * not call back into the device.
 */
void virtio_blk_pci_on_host_error(struct virtio_blk_pci *b, void (*fn)(void *ctx, const char *what), void *ctx);

/* Readable when backend completions wait. */
int virtio_blk_pci_event_fd(const struct virtio_blk_pci *b);
/* The backend's io_uring fd: a queue kick submits on it from the vCPU thread. */
int virtio_blk_pci_uring_fd(const struct virtio_blk_pci *b);
/* Non-blocking: finishes completed requests (status, used ring, interrupt). */
void virtio_blk_pci_process_completions(struct virtio_blk_pci *b);

unsigned virtio_blk_pci_slot(const struct virtio_blk_pci *b);
uint64_t virtio_blk_pci_capacity(const struct virtio_blk_pci *b); /* 512-byte sectors */
struct virtio_blk_stats virtio_blk_pci_stats(struct virtio_blk_pci *b);

#endif
