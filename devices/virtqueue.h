/*
 * Split virtqueues (virtio 1.x, section 2.6), device side: pops descriptor
 * chains off the available ring and pushes finished ones onto the used ring.
 *
 * Everything the guest wrote is untrusted. Each descriptor is read exactly
 * once; every index is checked against its table, every address range
 * against guest memory (overflow-safe), chains are bounded by the table size
 * (so a loop ends as an error), and indirect tables follow the spec's rules.
 * A bad chain is reported in vq_chain.err for the device to fail that one
 * request; only a broken ring (an available index more than a queue ahead)
 * is a device-level error.
 *
 * Not thread-safe: the transport serialises all calls on one queue.
 */
#ifndef VMM_DEVICES_VIRTQUEUE_H
#define VMM_DEVICES_VIRTQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/guest_mem.h"

#define VIRTQ_DESC_F_NEXT 1
#define VIRTQ_DESC_F_WRITE 2
#define VIRTQ_DESC_F_INDIRECT 4
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_MAX_SIZE 32768

/* The guest's layout (little-endian; this VMM runs on little-endian hosts). */
struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

struct virtq_used_elem {
	uint32_t id, len;
};

struct virtq {
	bool ready;
	uint16_t size;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	/* Host views of the rings, checked once by vq_setup. */
	const uint8_t *desc;
	uint16_t *avail; /* flags, idx, ring[size], used_event */
	uint16_t *used;  /* flags, idx, then used elements */
	uint16_t last_avail, used_idx;
	uint64_t popped, bad_chains;
};

enum vq_err {
	VQ_OK = 0,
	VQ_ERR_INDEX,    /* a descriptor index past its table */
	VQ_ERR_LOOP,     /* longer than its table: a loop, or simply too long */
	VQ_ERR_ADDR,     /* a buffer not wholly inside guest memory */
	VQ_ERR_ORDER,    /* a device-readable buffer after a device-writable one */
	VQ_ERR_INDIRECT, /* nested, not the head, with NEXT, bad length, or table outside memory */
	VQ_ERR_TOO_MANY, /* more buffers than the caller can take */
};

struct vq_buf {
	uint8_t *host;
	uint32_t len;
	bool writable;
};

struct vq_chain {
	uint16_t head;
	enum vq_err err; /* the first problem met; VQ_OK for a good chain */
	bool complete;   /* the walk reached the descriptor without NEXT */
	unsigned n;      /* buffers in bufs; device-readable ones come first */
	unsigned nread;
	struct vq_buf last; /* the final descriptor (host NULL if outside memory) */
};

/*
 * Checks a queue the driver enabled: size a power of two up to max, rings
 * aligned (16/2/4) and inside guest memory. -EINVAL or -EFAULT, else 0 and
 * the queue is ready with both indices at 0.
 */
int vq_setup(struct virtq *q, const struct guest_mem *m, uint16_t size, uint16_t max, uint64_t desc_gpa,
	     uint64_t avail_gpa, uint64_t used_gpa);
void vq_reset(struct virtq *q);

/* Chains the driver made available and the device has not popped; -1 if the ring is broken. */
int vq_pending(const struct virtq *q);

/*
 * Pops the next chain into c and bufs (at most max entries).
 * 1: a chain (look at c->err), 0: none available, -EIO: the available index
 * is more than a queue ahead, nothing popped (the device needs a reset).
 */
int vq_pop(struct virtq *q, const struct guest_mem *m, struct vq_chain *c, struct vq_buf *bufs, unsigned max);

/* Puts head on the used ring with len bytes written, publishing it with release order. */
void vq_push(struct virtq *q, uint16_t head, uint32_t len);

/* After pushes: false when the driver asked for no interrupts (VIRTQ_AVAIL_F_NO_INTERRUPT). */
bool vq_want_interrupt(const struct virtq *q);

/* For a chain that went wrong: the status byte a device may still write, or NULL. */
uint8_t *vq_chain_status_byte(const struct vq_chain *c);

const char *vq_err_name(enum vq_err e);

#endif
