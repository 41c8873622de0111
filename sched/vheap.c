#include <errno.h>
#include <stdlib.h>

#include "sched/vheap.h"

int sched_vheap_init(struct sched_vheap *h, int cap)
{
	h->n = 0;
	h->cap = cap;
	h->a = calloc((size_t)cap, sizeof(int));
	h->pos = malloc(sizeof(int) * (size_t)cap);
	h->key = calloc((size_t)cap, sizeof(uint64_t));
	if (!h->a || !h->pos || !h->key)
		return -ENOMEM;
	for (int i = 0; i < cap; i++)
		h->pos[i] = -1;
	return 0;
}

void sched_vheap_fini(struct sched_vheap *h)
{
	free(h->a);
	free(h->pos);
	free(h->key);
	h->a = h->pos = NULL;
	h->key = NULL;
	h->n = 0;
}

static bool less(const struct sched_vheap *h, int x, int y)
{
	return h->key[x] < h->key[y] || (h->key[x] == h->key[y] && x < y);
}

static void put(struct sched_vheap *h, int i, int v)
{
	h->a[i] = v;
	h->pos[v] = i;
}

static void up(struct sched_vheap *h, int i)
{
	int v = h->a[i];
	while (i > 0) {
		int p = (i - 1) / 2;
		if (!less(h, v, h->a[p]))
			break;
		put(h, i, h->a[p]);
		i = p;
	}
	put(h, i, v);
}

static void down(struct sched_vheap *h, int i)
{
	int v = h->a[i];
	for (;;) {
		int l = 2 * i + 1, best = i;
		int bv = v;
		if (l < h->n && less(h, h->a[l], bv))
			best = l, bv = h->a[l];
		if (l + 1 < h->n && less(h, h->a[l + 1], bv))
			best = l + 1, bv = h->a[l + 1];
		if (best == i)
			break;
		put(h, i, bv);
		i = best;
	}
	put(h, i, v);
}

void sched_vheap_add(struct sched_vheap *h, int v, uint64_t key)
{
	h->key[v] = key;
	put(h, h->n++, v);
	up(h, h->n - 1);
}

void sched_vheap_del(struct sched_vheap *h, int v)
{
	int i = h->pos[v];
	if (i < 0)
		return;
	h->pos[v] = -1;
	int last = h->a[--h->n];
	if (i == h->n)
		return;
	put(h, i, last);
	up(h, i);
	down(h, h->pos[last]);
}
