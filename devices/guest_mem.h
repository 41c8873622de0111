/*
 * Guest physical memory as a device sees it: a few regions (guest address,
 * size, host pointer), and one bounds-checked, overflow-safe translation.
 * Unit tests describe a malloc'd buffer the same way, so device code never
 * touches vm.c's mapping directly.
 */
#ifndef VMM_DEVICES_GUEST_MEM_H
#define VMM_DEVICES_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

#define GUEST_MEM_MAX_REGIONS 4

struct guest_mem_region {
	uint64_t gpa, size;
	uint8_t *host;
};

struct guest_mem {
	unsigned n;
	struct guest_mem_region r[GUEST_MEM_MAX_REGIONS];
};

/* One region at guest address 0 (what vm.c maps today). */
static inline void guest_mem_init_flat(struct guest_mem *m, void *host, uint64_t size)
{
	m->n = 1;
	m->r[0] = (struct guest_mem_region){ 0, size, host };
}

/*
 * Host pointer for [gpa, gpa+len) when the whole range lies in one region,
 * else NULL. len 0 is a valid (empty) range at an in-bounds address.
 */
static inline void *guest_mem_ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len)
{
	for (unsigned i = 0; i < m->n; i++) {
		const struct guest_mem_region *r = &m->r[i];
		if (gpa < r->gpa)
			continue;
		uint64_t off = gpa - r->gpa;
		if (off < r->size && len <= r->size - off)
			return r->host + off;
	}
	return NULL;
}

#endif
