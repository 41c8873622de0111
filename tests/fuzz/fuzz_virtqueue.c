/* libFuzzer: the split-virtqueue walker (devices/virtqueue.c) as a hostile
 * driver drives it. Guest RAM is two regions with a hole between them
 * (GPA 0..32 KiB and 64..96 KiB), each malloc'd at exactly its size, so ASan
 * sees any buffer the walker hands out past them. Input: byte 0 the queue
 * size (1 << (b % 12)), bytes 1..12 the three ring addresses (u32 each),
 * byte 13 how many buffers the device takes (1..16), byte 14 how many
 * operations follow (3 bytes each: pop-and-push, a guest write of a u16
 * anywhere in RAM, e.g. the available index, or an interrupt check); the
 * rest fills both regions. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtqueue.h"
#include "lib/bytes.h"

#define REGION (32u << 10)
#define R1_GPA (64u << 10)
#define HDR 15

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	uint16_t qsize = (uint16_t)(1u << (data[0] % 12));
	uint64_t desc = get_le32(data + 1), avail = get_le32(data + 5), used = get_le32(data + 9);
	unsigned max = 1 + data[13] % 16;
	size_t nops = data[14], ops_len;
	data += HDR, size -= HDR;
	if (nops > size / 3)
		nops = size / 3;
	ops_len = nops * 3;
	const uint8_t *ops = data, *rest = data + ops_len;
	size_t nrest = size - ops_len;

	uint8_t *r0 = calloc(1, REGION), *r1 = calloc(1, REGION);
	if (!r0 || !r1)
		goto out;
	memcpy(r0, rest, nrest < REGION ? nrest : REGION);
	if (nrest > REGION)
		memcpy(r1, rest + REGION, nrest - REGION < REGION ? nrest - REGION : REGION);
	struct guest_mem m = { .n = 2, .r = { { 0, REGION, r0 }, { R1_GPA, REGION, r1 } } };

	struct virtq q;
	vq_reset(&q);
	if (vq_setup(&q, &m, qsize, VIRTQ_MAX_SIZE, desc, avail, used) != 0)
		goto out;
	struct vq_buf bufs[16];
	for (size_t i = 0; i < nops; i++, ops += 3) {
		switch (ops[0] % 3) {
		case 0: { /* the device pops a chain, touches it all, and completes it */
			struct vq_chain c;
			int r = vq_pop(&q, &m, &c, bufs, max);
			if (r <= 0)
				break;
			if (c.n > max || c.nread > c.n)
				abort();
			uint32_t written = 0;
			for (unsigned b = 0; b < c.n; b++) {
				/* a good chain: readable buffers first (a bad one says VQ_ERR_ORDER) */
				if (c.err == VQ_OK && (b < c.nread) == bufs[b].writable)
					abort();
				for (uint32_t k = 0; k < bufs[b].len; k++) {
					sink ^= bufs[b].host[k];
					if (bufs[b].writable)
						bufs[b].host[k] = (uint8_t)k;
				}
				if (bufs[b].writable)
					written += bufs[b].len;
			}
			uint8_t *st = vq_chain_status_byte(&c);
			if (st)
				*st = 1;
			(void)vq_err_name(c.err);
			vq_push(&q, c.head, written);
			break;
		}
		case 1: { /* the guest rewrites a u16 (avail index, a ring entry, a descriptor) */
			uint32_t off = (uint32_t)(ops[1] | ops[2] << 8) % (2 * REGION - 1);
			uint8_t *p = off < REGION ? r0 + off : r1 + (off - REGION);
			uint32_t lim = off < REGION ? REGION : 2 * REGION;
			p[0] = ops[2];
			if (off + 1 < lim)
				p[1] = ops[1];
			break;
		}
		default:
			(void)vq_want_interrupt(&q);
			(void)vq_pending(&q);
			break;
		}
	}
out:
	free(r0);
	free(r1);
	return 0;
}
