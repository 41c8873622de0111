/*
 * How far to trust a cell. The median's interval comes from order
 * statistics (no assumption about the distribution of run times, which on
 * a shared host is anything but normal); the efficiency's from a bootstrap
 * of the ratio of medians, whose generator has a fixed seed so a merge of
 * shards re-derives exactly the interval the full run printed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/stats/stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* P(Binomial(n, 1/2) < k): the chance the median lies below x(k). */
static double below(unsigned n, unsigned k)
{
	double p = 0, term = ldexp(1.0, -(int)n); /* C(n, 0) / 2^n */
	for (unsigned i = 0; i < k; i++) {
		p += term;
		term = term * (n - i) / (i + 1);
	}
	return p;
}

int bench_median_ci(const double *v, unsigned n, double *lo, double *hi, double *level)
{
	*lo = *hi = *level = NAN;
	if (n < BENCH_CI_MIN_RUNS)
		return -EDOM;
	double *s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	/* The largest k whose two tails together leave at least 95%. */
	unsigned k = 1;
	while (k + 1 <= (n + 1) / 2 && 1 - 2 * below(n, k + 1) >= 0.95)
		k++;
	*lo = s[k - 1];
	*hi = s[n - k];
	*level = 1 - 2 * below(n, k);
	free(s);
	return 0;
}

/* splitmix64: tiny, and its sequence is easy to reproduce in a test. */
static uint64_t next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double resampled_median(const double *v, unsigned n, uint64_t *x, double *tmp)
{
	for (unsigned i = 0; i < n; i++)
		tmp[i] = v[next(x) % n];
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

int bench_ratio_ci(const double *num, unsigned nn, const double *den, unsigned nd, unsigned id,
		   double *lo, double *hi)
{
	*lo = *hi = NAN;
	if (nn < BENCH_CI_MIN_RUNS || nd < BENCH_CI_MIN_RUNS)
		return -EDOM;
	double *tmp = malloc((nn > nd ? nn : nd) * sizeof(*tmp));
	double *ratio = malloc(BENCH_BOOT_RESAMPLES * sizeof(*ratio));
	if (!tmp || !ratio) {
		free(tmp);
		free(ratio);
		return -ENOMEM;
	}
	uint64_t x = BENCH_BOOT_SEED ^ id;
	unsigned n = 0;
	for (unsigned b = 0; b < BENCH_BOOT_RESAMPLES; b++) {
		double a = resampled_median(num, nn, &x, tmp);
		double d = resampled_median(den, nd, &x, tmp);
		double r = bench_ratio(a, d);
		if (isfinite(r))
			ratio[n++] = r;
	}
	int ret = -EDOM;
	/* Every resample must count, or the percentiles would be of a subset. */
	if (n == BENCH_BOOT_RESAMPLES) {
		qsort(ratio, n, sizeof(*ratio), cmp_double);
		*lo = ratio[n * 25 / 1000];
		*hi = ratio[n * 975 / 1000 - 1];
		ret = 0;
	}
	free(tmp);
	free(ratio);
	return ret;
}

double *bench_pool_runs(const struct bench_matrix *m, const struct bench_cell *c, unsigned *n)
{
	size_t cap = 1;
	for (unsigned i = 0; i < c->nused; i++)
		cap += m->cells[c->used[i]].nruns;
	double *v = malloc(cap * sizeof(*v));
	*n = 0;
	for (unsigned i = 0; v && i < c->nused; i++) {
		const struct bench_cell *p = &m->cells[c->used[i]];
		for (unsigned k = 0; k < p->nruns; k++)
			if (p->runs[k].ok)
				v[(*n)++] = p->runs[k].ops_per_s;
	}
	return v;
}
