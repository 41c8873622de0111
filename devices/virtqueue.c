#include "devices/virtqueue.h"

#include <errno.h>
#include <string.h>

#include "lib/bytes.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "virtio rings are little-endian");
_Static_assert(sizeof(struct virtq_desc) == 16, "descriptor layout");

#define AVAIL_FLAGS 0
#define AVAIL_IDX 1
#define AVAIL_RING 2
#define USED_FLAGS 0
#define USED_IDX 1

void vq_reset(struct virtq *q)
{
	memset(q, 0, sizeof(*q));
}

int vq_setup(struct virtq *q, const struct guest_mem *m, uint16_t size, uint16_t max, uint64_t desc_gpa,
	     uint64_t avail_gpa, uint64_t used_gpa)
{
	q->ready = false;
	if (!is_pow2(size) || size > max || size > VIRTQ_MAX_SIZE)
		return -EINVAL;
	if ((desc_gpa & 15) || (avail_gpa & 1) || (used_gpa & 3))
		return -EINVAL;
	/* Sized with the event-index words, whether or not that feature is on. */
	const uint8_t *d = guest_mem_ptr(m, desc_gpa, 16ull * size);
	uint16_t *a = guest_mem_ptr(m, avail_gpa, 6ull + 2ull * size);
	uint16_t *u = guest_mem_ptr(m, used_gpa, 6ull + 8ull * size);
	if (!d || !a || !u)
		return -EFAULT;
	q->size = size;
	q->desc_gpa = desc_gpa;
	q->avail_gpa = avail_gpa;
	q->used_gpa = used_gpa;
	q->desc = d;
	q->avail = a;
	q->used = u;
	q->last_avail = q->used_idx = 0;
	q->ready = true;
	return 0;
}

int vq_pending(const struct virtq *q)
{
	if (!q->ready)
		return 0;
	uint16_t idx = __atomic_load_n(&q->avail[AVAIL_IDX], __ATOMIC_ACQUIRE);
	uint16_t n = (uint16_t)(idx - q->last_avail);
	return n > q->size ? -1 : n;
}

/* One copy of a descriptor the guest may be rewriting as we read it. */
static struct virtq_desc read_desc(const uint8_t *table, unsigned i)
{
	struct virtq_desc d;
	memcpy(&d, table + 16ull * i, sizeof(d));
	__asm__ __volatile__("" ::: "memory"); /* use the copy, never the guest's bytes again */
	return d;
}

static void set_err(struct vq_chain *c, enum vq_err e)
{
	if (c->err == VQ_OK)
		c->err = e;
}

static void walk(const struct virtq *q, const struct guest_mem *m, struct vq_chain *c, struct vq_buf *bufs,
		 unsigned max)
{
	const uint8_t *table = q->desc;
	unsigned tsize = q->size, count = 0, idx = c->head;
	bool indirect = false, seen_writable = false;

	if (idx >= tsize) {
		set_err(c, VQ_ERR_INDEX);
		return;
	}
	for (;;) {
		if (count++ >= tsize) {
			set_err(c, VQ_ERR_LOOP);
			return;
		}
		struct virtq_desc d = read_desc(table, idx);
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			/* Only the head may point to a table, one level deep, without NEXT. */
			if (indirect || count != 1 || (d.flags & VIRTQ_DESC_F_NEXT) || !d.len || (d.len & 15) ||
			    d.len / 16 > q->size) {
				set_err(c, VQ_ERR_INDIRECT);
				return;
			}
			const uint8_t *t = guest_mem_ptr(m, d.addr, d.len);
			if (!t) {
				set_err(c, VQ_ERR_INDIRECT);
				return;
			}
			table = t;
			tsize = d.len / 16;
			idx = 0;
			count = 0;
			indirect = true;
			continue;
		}
		bool w = d.flags & VIRTQ_DESC_F_WRITE;
		uint8_t *p = guest_mem_ptr(m, d.addr, d.len);
		if (!p)
			set_err(c, VQ_ERR_ADDR);
		if (!w && seen_writable)
			set_err(c, VQ_ERR_ORDER);
		seen_writable |= w;
		if (p) {
			if (c->n < max) {
				bufs[c->n++] = (struct vq_buf){ p, d.len, w };
				if (!w)
					c->nread = c->n;
			} else {
				set_err(c, VQ_ERR_TOO_MANY);
			}
		}
		c->last = (struct vq_buf){ p, d.len, w };
		if (!(d.flags & VIRTQ_DESC_F_NEXT)) {
			c->complete = true;
			return;
		}
		idx = d.next;
		if (idx >= tsize) {
			set_err(c, VQ_ERR_INDEX);
			return;
		}
	}
}

int vq_pop(struct virtq *q, const struct guest_mem *m, struct vq_chain *c, struct vq_buf *bufs, unsigned max)
{
	int pending = vq_pending(q);
	if (pending <= 0)
		return pending < 0 ? -EIO : 0;
	/* vq_pending's acquire load orders this read after the driver's ring write. */
	uint16_t head = __atomic_load_n(&q->avail[AVAIL_RING + q->last_avail % q->size], __ATOMIC_RELAXED);
	q->last_avail++;
	q->popped++;
	*c = (struct vq_chain){ .head = head };
	walk(q, m, c, bufs, max);
	if (c->err)
		q->bad_chains++;
	return 1;
}

void vq_push(struct virtq *q, uint16_t head, uint32_t len)
{
	struct virtq_used_elem e = { head, len };
	memcpy((uint8_t *)q->used + 4 + 8ull * (q->used_idx % q->size), &e, sizeof(e));
	q->used_idx++;
	/* The element is visible before the index that publishes it. */
	__atomic_store_n(&q->used[USED_IDX], q->used_idx, __ATOMIC_RELEASE);
}

bool vq_want_interrupt(const struct virtq *q)
{
	/* Our index store before the driver's flag load (pairs with the driver's barrier). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !(__atomic_load_n(&q->avail[AVAIL_FLAGS], __ATOMIC_RELAXED) & VIRTQ_AVAIL_F_NO_INTERRUPT);
}

uint8_t *vq_chain_status_byte(const struct vq_chain *c)
{
	if (!c->complete || !c->last.host || !c->last.writable || !c->last.len)
		return NULL;
	return c->last.host + c->last.len - 1;
}

const char *vq_err_name(enum vq_err e)
{
	switch (e) {
	case VQ_OK: return "ok";
	case VQ_ERR_INDEX: return "descriptor index out of range";
	case VQ_ERR_LOOP: return "chain loops or is too long";
	case VQ_ERR_ADDR: return "buffer outside guest memory";
	case VQ_ERR_ORDER: return "readable buffer after a writable one";
	case VQ_ERR_INDIRECT: return "bad indirect table";
	case VQ_ERR_TOO_MANY: return "too many buffers";
	}
	return "?";
}
