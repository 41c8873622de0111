/*
 * Guest physical memory as the VMM's guest-facing code sees it: a few
 * regions (guest address, size, host pointer) and the one bounds-checked,
 * overflow-safe translation that devices, hypercalls and steal time all use,
 * because every address they are handed comes from the guest and may be
 * anything. Unit tests describe a malloc'd buffer the same way, so no caller
 * touches vm.c's mapping directly. The rules are tested in
 * tests/unit/test_guest_mem.c.
 */
#ifndef VMM_LIB_GUEST_MEM_H
#define VMM_LIB_GUEST_MEM_H

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
 * else NULL. gpa itself must lie in the region, even for len 0: a pointer is
 * only ever handed out for an address the guest really has, so an empty range
 * at or past the end of RAM is refused like any other outside address.
 * Written as "offset < size, len <= size - offset" so that no sum can wrap.
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
