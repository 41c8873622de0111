/*
 * Slice length from data (issue 13): a slot switch costs a fixed slice of
 * slot time, so the efficiency lost to switching falls as 1/slice, while
 * what is lost whatever the slice (exits, convoys, cache) stays. Fitting
 * loss(slice) = a + C/slice over a sweep separates the two: C is the cost
 * of one switch-equivalent in microseconds of slot time, and C/slice the
 * share of the slot a given slice pays for switching. The default slice
 * is then the shortest whose switch term stays under ~1 %, bounded above
 * by how long a queued vCPU may wait ((N-1) x slice with N per slot).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/stats/stats.h"

int bench_fit_inverse(const double *slice_us, const double *loss, unsigned n, struct bench_fit *f)
{
	double su = 0, sy = 0;
	unsigned distinct = 0;
	f->a = f->c_us = f->r2 = NAN;
	f->n = n;
	for (unsigned i = 0; i < n; i++) {
		if (!isfinite(slice_us[i]) || !(slice_us[i] > 0) || !isfinite(loss[i]))
			return -EDOM;
		bool seen = false;
		for (unsigned k = 0; k < i; k++)
			seen |= slice_us[k] == slice_us[i];
		distinct += !seen;
		su += 1 / slice_us[i];
		sy += loss[i];
	}
	/* Two slices always fit a line exactly: a fit needs a third to mean anything. */
	if (distinct < BENCH_FIT_MIN_SLICES)
		return -EDOM;
	double mu = su / n, my = sy / n, suu = 0, suy = 0, syy = 0;
	for (unsigned i = 0; i < n; i++) {
		double du = 1 / slice_us[i] - mu, dy = loss[i] - my;
		suu += du * du;
		suy += du * dy;
		syy += dy * dy;
	}
	if (!(suu > 0))
		return -EDOM;
	bool flat = true;
	for (unsigned i = 1; i < n; i++)
		flat &= loss[i] == loss[0];
	if (flat) {
		/* Exact and explains no variance (rounding in the mean must not
		 * turn it into a tiny slope). */
		f->a = loss[0];
		f->c_us = 0;
		return 0;
	}
	f->c_us = suy / suu;
	f->a = my - f->c_us * mu;
	double res = 0;
	for (unsigned i = 0; i < n; i++) {
		double e = loss[i] - f->a - f->c_us / slice_us[i];
		res += e * e;
	}
	/* Every loss equal: the line is exact but explains no variance. */
	f->r2 = syy > 0 ? 1 - res / syy : NAN;
	return isfinite(f->a) && isfinite(f->c_us) ? 0 : -EDOM;
}

double bench_fit_slice_for(const struct bench_fit *f, double share)
{
	if (!isfinite(f->c_us) || !(share > 0))
		return NAN;
	/* A switch that costs nothing (or a fit that says so) needs no minimum. */
	return f->c_us > 0 ? f->c_us / share : 0;
}

/* The cells a fit may use: co-scheduler cells above 1x. */
static bool fittable(const struct bench_cell *c)
{
	return c->kind == BENCH_VM && strcmp(c->policy, BENCH_POLICY_HOST) && c->overcommit > 1 &&
	       !bench_linux_workload(c->workload);
}

/* The same cell but for its slice. */
static bool same_but_slice(const struct bench_cell *a, const struct bench_cell *b)
{
	return !strcmp(a->workload, b->workload) && !strcmp(a->lock, b->lock) &&
	       !strcmp(a->policy, b->policy) && a->spin_threshold == b->spin_threshold &&
	       a->defer_us == b->defer_us && a->guest_slice_off == b->guest_slice_off &&
	       bench_loop_same(&a->loop, &b->loop) && a->wake_slice_us == b->wake_slice_us &&
	       a->vms == b->vms && a->vcpus == b->vcpus &&
	       a->pcpus == b->pcpus && a->mode == b->mode;
}

/* Fits group g's cells that did not fail; false when there is no fit. */
static bool fit_group(const struct bench_matrix *m, unsigned g, struct bench_slice_fit *out)
{
	const struct bench_cell *first = &m->cells[g];
	memset(out, 0, sizeof(*out));
	out->first = (int)g;
	for (unsigned i = g; i < m->n && out->n < BENCH_MAX_LIST; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (!fittable(c) || !same_but_slice(c, first) || c->failed || !isfinite(c->eff))
			continue;
		out->ids[out->n] = (int)i;
		out->slice_us[out->n] = c->slice_us;
		out->loss[out->n] = 1 - c->eff;
		out->n++;
	}
	if (bench_fit_inverse(out->slice_us, out->loss, out->n, &out->fit))
		return false;
	out->slice_1pct_us = bench_fit_slice_for(&out->fit, BENCH_FIT_SWITCH_SHARE);
	out->swept_1pct_us = NAN;
	for (unsigned k = 0; k < out->n; k++)
		if (out->slice_us[k] >= out->slice_1pct_us &&
		    !(out->slice_us[k] >= out->swept_1pct_us))
			out->swept_1pct_us = out->slice_us[k];
	/* A queued vCPU waits for the N-1 others on its slot, a slice each. */
	out->wait_bound_us = (first->overcommit - 1) * out->slice_1pct_us;
	return true;
}

int bench_slice_fits(const struct bench_matrix *m, struct bench_slice_fit **out)
{
	*out = NULL;
	if (!m->n)
		return 0;
	struct bench_slice_fit *v = malloc(m->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	int n = 0;
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (!fittable(c))
			continue;
		bool first = true;
		for (unsigned j = 0; j < i && first; j++)
			first = !(fittable(&m->cells[j]) && same_but_slice(&m->cells[j], c));
		if (first && fit_group(m, i, &v[n]))
			n++;
	}
	*out = v;
	return n;
}
