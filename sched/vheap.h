/*
 * An indexed binary min-heap of vCPU indices by a 64-bit key (ties: the
 * lower index first): add, remove any member, and the minimum, each in
 * O(log n). The core keeps the wait deadlines and the ages of the queued
 * vCPUs in two of them so no event scans every vCPU.
 */
#ifndef VMM_SCHED_VHEAP_H
#define VMM_SCHED_VHEAP_H

#include <stdbool.h>
#include <stdint.h>

struct sched_vheap {
	int n, cap;
	int *a;        /* the heap: vCPU indices */
	int *pos;      /* [cap] where each vCPU sits in a, -1: not in */
	uint64_t *key; /* [cap] each member's key */
};

/* -ENOMEM, or 0; cap is the number of vCPUs. */
int sched_vheap_init(struct sched_vheap *h, int cap);
void sched_vheap_fini(struct sched_vheap *h);
/* v must not be in h. */
void sched_vheap_add(struct sched_vheap *h, int v, uint64_t key);
/* Nothing if v is not in h. */
void sched_vheap_del(struct sched_vheap *h, int v);
static inline bool sched_vheap_has(const struct sched_vheap *h, int v)
{
	return h->pos[v] >= 0;
}
/* The member with the smallest key, or -1 when empty. */
static inline int sched_vheap_min(const struct sched_vheap *h)
{
	return h->n ? h->a[0] : -1;
}

#endif
