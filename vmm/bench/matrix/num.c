/*
 * Statistics over doubles where NaN is "unknown": what exec/ (the
 * microbenchmarks, the scheduler rates), stats/ and report/ all compute, so
 * it sits at the floor with the cells rather than in stats/ above exec/.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(const double *v, unsigned n)
{
	double small[BENCH_MAX_REPS * 4];
	/* A pooled 1x holds every policy's runs: more than a cell's. */
	double *tmp = n <= sizeof(small) / sizeof(small[0]) ? small : malloc(n * sizeof(*tmp));
	if (n == 0 || !tmp)
		return NAN;
	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	double m = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
	if (tmp != small)
		free(tmp);
	return m;
}

double bench_min(const double *v, unsigned n)
{
	double m = NAN;
	for (unsigned i = 0; i < n; i++)
		if (isnan(m) || v[i] < m)
			m = v[i];
	return m;
}

double bench_max(const double *v, unsigned n)
{
	double m = NAN;
	for (unsigned i = 0; i < n; i++)
		if (isnan(m) || v[i] > m)
			m = v[i];
	return m;
}

double bench_ratio(double num, double den)
{
	if (!isfinite(num) || !isfinite(den) || den <= 0)
		return NAN;
	return num / den;
}

double bench_spread_pct(double min, double max, double median)
{
	return bench_ratio(max - min, median) * 100;
}

double bench_jain(const double *v, unsigned n)
{
	double sum = 0, sq = 0;
	if (n == 0)
		return NAN;
	for (unsigned i = 0; i < n; i++) {
		if (!isfinite(v[i]) || v[i] < 0)
			return NAN;
		sum += v[i];
		sq += v[i] * v[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : NAN;
}
