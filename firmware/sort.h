/*
 * Sorting small arrays of timings, for medians. Shell sort: no recursion on
 * a vCPU's 16 KiB stack, and fast enough at CPL3 for a few thousand values.
 */
#ifndef FW_SORT_H
#define FW_SORT_H

#include <stdint.h>

static inline void fw_sort_u32(uint32_t *a, unsigned n)
{
	for (unsigned gap = n / 2; gap; gap /= 2)
		for (unsigned i = gap; i < n; i++) {
			uint32_t v = a[i];
			unsigned j = i;

			for (; j >= gap && a[j - gap] > v; j -= gap)
				a[j] = a[j - gap];
			a[j] = v;
		}
}

/* Sorts a and returns its median (the upper one of an even count); 0 if empty. */
static inline uint32_t fw_median_u32(uint32_t *a, unsigned n)
{
	if (!n)
		return 0;
	fw_sort_u32(a, n);
	return a[n / 2];
}

/* A TSC interval as a u32 sample: longer ones saturate (they are outliers
 * of seconds, and a median does not care how long). */
static inline uint32_t fw_sample_u32(uint64_t cycles)
{
	return cycles > UINT32_MAX ? UINT32_MAX : (uint32_t)cycles;
}

#endif
