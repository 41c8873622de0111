/*
 * Little-endian fields at any alignment, the one way the VMM reads and
 * writes them: every format it shares with a guest (the Linux boot protocol,
 * ACPI tables and AML, PCI configuration space, virtio, page tables and
 * GDTs) is little-endian, and the buffers (a file image, guest memory, a
 * config-space array) carry no alignment promise. Written with shifts, which
 * compilers turn into one plain load or store on x86.
 */
#ifndef VMM_LIB_BYTES_H
#define VMM_LIB_BYTES_H

#include <stdbool.h>
#include <stdint.h>

/* The low n bytes of v at p (n <= 8). */
static inline void put_le(void *p, uint64_t v, unsigned n)
{
	uint8_t *b = p;
	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* n bytes at p (n <= 8), zero-extended. */
static inline uint64_t get_le(const void *p, unsigned n)
{
	const uint8_t *b = p;
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static inline void put_le16(void *p, uint16_t v) { put_le(p, v, 2); }
static inline void put_le32(void *p, uint32_t v) { put_le(p, v, 4); }
static inline void put_le64(void *p, uint64_t v) { put_le(p, v, 8); }
static inline uint16_t get_le16(const void *p) { return (uint16_t)get_le(p, 2); }
static inline uint32_t get_le32(const void *p) { return (uint32_t)get_le(p, 4); }
static inline uint64_t get_le64(const void *p) { return get_le(p, 8); }

/* A power of two (sizes and alignments the guest or an image gives us); 0 is not. */
static inline bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

#endif
