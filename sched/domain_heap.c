/*
 * The binary min-heap of members that have queued vCPUs, keyed by
 * (vtime, id): the id breaks ties so that runs are deterministic. Each
 * member knows its index (heap_idx), so removal and re-keying are O(log M).
 */
#include "sched/domain_int.h"

bool dh_less(const struct dom_core *c, int a, int b)
{
	uint64_t va = c->mem[a].vtime, vb = c->mem[b].vtime;
	return va < vb || (va == vb && a < b);
}

static void put(struct dom_core *c, int i, int m)
{
	c->heap[i] = m;
	c->mem[m].heap_idx = i;
}

static void sift_up(struct dom_core *c, int i)
{
	int m = c->heap[i];
	while (i > 0) {
		int p = (i - 1) / 2;
		if (!dh_less(c, m, c->heap[p]))
			break;
		put(c, i, c->heap[p]);
		i = p;
	}
	put(c, i, m);
}

void dh_sift_down(struct dom_core *c, int i)
{
	int m = c->heap[i];
	for (;;) {
		int l = 2 * i + 1, r = l + 1, s = l;
		if (l >= c->nheap)
			break;
		if (r < c->nheap && dh_less(c, c->heap[r], c->heap[l]))
			s = r;
		if (!dh_less(c, c->heap[s], m))
			break;
		put(c, i, c->heap[s]);
		i = s;
	}
	put(c, i, m);
}

void dh_insert(struct dom_core *c, int m)
{
	put(c, c->nheap++, m);
	sift_up(c, c->nheap - 1);
}

void dh_remove(struct dom_core *c, int m)
{
	int i = c->mem[m].heap_idx;
	c->mem[m].heap_idx = -1;
	int last = c->heap[--c->nheap];
	if (i == c->nheap)
		return;
	put(c, i, last);
	/* The moved member may belong above or below i. */
	sift_up(c, i);
	dh_sift_down(c, c->mem[last].heap_idx);
}
