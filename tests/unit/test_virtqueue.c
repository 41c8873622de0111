/* The split-virtqueue walker on its own, against a malloc'd guest RAM. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "devices/virtqueue.h"

#define RAM 65536
#define DESC 0x1000
#define AVAIL 0x2000
#define USED 0x3000
#define QS 8

static uint8_t *ram;
static struct guest_mem gm;
static struct virtq q;
static uint16_t avail_idx;

static void desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	struct virtq_desc d = { addr, len, flags, next };
	memcpy(ram + DESC + 16 * i, &d, 16);
}

static void offer(uint16_t head)
{
	uint16_t *a = (uint16_t *)(ram + AVAIL);
	a[2 + avail_idx % QS] = head;
	a[1] = ++avail_idx;
}

static int pop(struct vq_chain *c, struct vq_buf *b, unsigned max)
{
	return vq_pop(&q, &gm, c, b, max);
}

int main(void)
{
	ram = calloc(1, RAM);
	guest_mem_init_flat(&gm, ram, RAM);

	/* Setup checks. */
	CHECK_EQ(vq_setup(&q, &gm, 6, 256, DESC, AVAIL, USED), -EINVAL);
	CHECK_EQ(vq_setup(&q, &gm, 0, 256, DESC, AVAIL, USED), -EINVAL);
	CHECK_EQ(vq_setup(&q, &gm, 512, 256, DESC, AVAIL, USED), -EINVAL);
	CHECK_EQ(vq_setup(&q, &gm, QS, 256, DESC + 8, AVAIL, USED), -EINVAL);
	CHECK_EQ(vq_setup(&q, &gm, QS, 256, DESC, AVAIL + 1, USED), -EINVAL);
	CHECK_EQ(vq_setup(&q, &gm, QS, 256, DESC, AVAIL, USED + 2), -EINVAL);
	CHECK_EQ(vq_setup(&q, &gm, QS, 256, DESC, AVAIL, RAM - 16), -EFAULT);
	CHECK_EQ(vq_setup(&q, &gm, QS, 256, ~0ull - 15, AVAIL, USED), -EFAULT);
	CHECK(!q.ready);
	CHECK_EQ(vq_setup(&q, &gm, QS, 256, DESC, AVAIL, USED), 0);
	CHECK(q.ready);

	struct vq_chain c;
	struct vq_buf b[QS];
	CHECK_EQ(pop(&c, b, QS), 0);

	/* A good chain: 2 readable, 2 writable. */
	desc(0, 0x4000, 16, VIRTQ_DESC_F_NEXT, 3);
	desc(3, 0x5000, 100, VIRTQ_DESC_F_NEXT, 5);
	desc(5, 0x6000, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 7);
	desc(7, 0x7000, 1, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	CHECK_EQ(vq_pending(&q), 1);
	CHECK_EQ(pop(&c, b, QS), 1);
	CHECK_EQ(c.err, VQ_OK);
	CHECK(c.complete);
	CHECK_EQ(c.head, 0);
	CHECK_EQ(c.n, 4);
	CHECK_EQ(c.nread, 2);
	CHECK(b[0].host == ram + 0x4000 && b[0].len == 16 && !b[0].writable);
	CHECK(b[2].host == ram + 0x6000 && b[2].writable);
	CHECK(vq_chain_status_byte(&c) == ram + 0x7000);
	CHECK_EQ(pop(&c, b, QS), 0);

	/* Used ring: element then index. */
	vq_push(&q, 0, 513);
	uint16_t *u = (uint16_t *)(ram + USED);
	CHECK_EQ(u[1], 1);
	struct virtq_used_elem e;
	memcpy(&e, ram + USED + 4, 8);
	CHECK(e.id == 0 && e.len == 513);
	CHECK(vq_want_interrupt(&q));
	((uint16_t *)(ram + AVAIL))[0] = VIRTQ_AVAIL_F_NO_INTERRUPT;
	CHECK(!vq_want_interrupt(&q));
	((uint16_t *)(ram + AVAIL))[0] = 0;

	/* The caller's buffer array is too small. */
	offer(0);
	CHECK_EQ(pop(&c, b, 2), 1);
	CHECK_EQ(c.err, VQ_ERR_TOO_MANY);
	CHECK(vq_chain_status_byte(&c) == ram + 0x7000);

	/* Errors, one each. */
	struct {
		enum vq_err want;
		bool status;
	} cases[] = {
		{ VQ_ERR_LOOP, false }, { VQ_ERR_INDEX, false }, { VQ_ERR_ADDR, true },  { VQ_ERR_ADDR, true },
		{ VQ_ERR_ORDER, true }, { VQ_ERR_INDIRECT, false }, { VQ_ERR_INDIRECT, false },
		{ VQ_ERR_INDIRECT, false }, { VQ_ERR_INDEX, false }, { VQ_ERR_LOOP, false },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		desc(0, 0x4000, 16, VIRTQ_DESC_F_NEXT, 1);
		desc(1, 0x6000, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
		desc(2, 0x7000, 1, VIRTQ_DESC_F_WRITE, 0);
		uint16_t head = 0;
		switch (i) {
		case 0: desc(2, 0x7000, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1); break;
		case 1: desc(1, 0x6000, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, QS); break;
		case 2: desc(1, RAM - 100, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2); break;
		case 3: desc(1, ~0ull - 10, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2); break;
		case 4: desc(1, 0x6000, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 3);
			desc(3, 0x6000, 5, VIRTQ_DESC_F_NEXT, 2); break;
		case 5: desc(0, 0x8000, 24, VIRTQ_DESC_F_INDIRECT, 0); break;
		case 6: desc(0, 0x8000, 16 * (QS + 1), VIRTQ_DESC_F_INDIRECT, 0); break;
		case 7: desc(1, 0x8000, 32, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 2); break;
		case 8: head = QS; break;
		case 9: { /* a loop inside an indirect table of 2 */
			struct virtq_desc t[2] = { { 0x4000, 16, VIRTQ_DESC_F_NEXT, 1 }, { 0x7000, 1, VIRTQ_DESC_F_NEXT | 2, 0 } };
			memcpy(ram + 0x8000, t, sizeof(t));
			desc(0, 0x8000, 32, VIRTQ_DESC_F_INDIRECT, 0);
			break;
		}
		}
		offer(head);
		CHECK_EQ(pop(&c, b, QS), 1);
		CHECK_EQ(c.err, cases[i].want);
		CHECK_EQ(vq_chain_status_byte(&c) != NULL, cases[i].status);
	}
	CHECK_EQ(q.bad_chains, 11);

	/* A good indirect chain. */
	struct virtq_desc t[3] = {
		{ 0x4000, 16, VIRTQ_DESC_F_NEXT, 2 },
		{ 0x7000, 1, VIRTQ_DESC_F_WRITE, 0 },
		{ 0x6000, 64, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1 },
	};
	memcpy(ram + 0x8000, t, sizeof(t));
	desc(4, 0x8000, 48, VIRTQ_DESC_F_INDIRECT, 0);
	offer(4);
	CHECK_EQ(pop(&c, b, QS), 1);
	CHECK_EQ(c.err, VQ_OK);
	CHECK_EQ(c.n, 3);
	CHECK_EQ(c.head, 4);
	CHECK(vq_chain_status_byte(&c) == ram + 0x7000);

	/* The available index running more than a queue ahead is a broken ring. */
	((uint16_t *)(ram + AVAIL))[1] = (uint16_t)(avail_idx + QS + 1);
	CHECK_EQ(vq_pending(&q), -1);
	CHECK_EQ(pop(&c, b, QS), -EIO);
	/* Exactly a queue ahead is fine; the index wraps at 65536. */
	((uint16_t *)(ram + AVAIL))[1] = (uint16_t)(avail_idx + QS);
	CHECK_EQ(vq_pending(&q), QS);
	vq_reset(&q);
	CHECK(!q.ready);
	CHECK_EQ(vq_pending(&q), 0);

	free(ram);
	return check_summary();
}
