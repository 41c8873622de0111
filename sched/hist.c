#include "sched/hist.h"

static unsigned bucket_of(uint64_t v)
{
	if (v < SCHED_HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* e >= 2 */
	unsigned sub = (unsigned)(v >> (e - 2)) & (SCHED_HIST_SUB - 1);
	return (e - 1) * SCHED_HIST_SUB + sub;
}

/* Largest value that lands in bucket b. */
static uint64_t bucket_top(unsigned b)
{
	if (b < SCHED_HIST_SUB)
		return b;
	unsigned e = b / SCHED_HIST_SUB + 1, sub = b % SCHED_HIST_SUB;
	uint64_t lo = ((uint64_t)(SCHED_HIST_SUB + sub)) << (e - 2);
	return lo + (1ull << (e - 2)) - 1;
}

void sched_hist_add(struct sched_hist *h, uint64_t value)
{
	h->bucket[bucket_of(value)]++;
	h->count++;
	if (value > h->max)
		h->max = value;
}

void sched_hist_merge(struct sched_hist *into, const struct sched_hist *from)
{
	for (unsigned i = 0; i < SCHED_HIST_BUCKETS; i++)
		into->bucket[i] += from->bucket[i];
	into->count += from->count;
	if (from->max > into->max)
		into->max = from->max;
}

uint64_t sched_hist_percentile(const struct sched_hist *h, double p)
{
	if (!h->count)
		return 0;
	uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.5);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < SCHED_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t top = bucket_top(i);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}
