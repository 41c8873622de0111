/*
 * A fixed-size log-linear latency histogram (4 buckets per power of two, so
 * any percentile is within ~19% of the truth). O(1) to record, mergeable by
 * adding counts, no allocation: it lives inside per-vCPU stats.
 */
#ifndef VMM_SCHED_HIST_H
#define VMM_SCHED_HIST_H

#include <stdint.h>

#define SCHED_HIST_SUB 4
#define SCHED_HIST_BUCKETS (64 * SCHED_HIST_SUB)

struct sched_hist {
	uint64_t count;
	uint64_t max;
	uint32_t bucket[SCHED_HIST_BUCKETS];
};

void sched_hist_add(struct sched_hist *h, uint64_t value);
void sched_hist_merge(struct sched_hist *into, const struct sched_hist *from);
/* p in [0,100]; returns an upper bound of the bucket holding it (0 if empty). */
uint64_t sched_hist_percentile(const struct sched_hist *h, double p);

#endif
