/*
 * The domain core's invariants, checked from scratch (O(everything)): the
 * unit tests call it after every event. Returns what broke, or NULL.
 */
#include <stddef.h>

#include "sched/domain_int.h"

static const char *check_slots(const struct dom_core *c, int *held, int *nrev, int *nfree_out)
{
	int nfree = 0;
	*nrev = 0;
	for (int s = 0; s < c->nslots; s++) {
		const struct dom_slot *sl = &c->slot[s];
		if (sl->m < 0) {
			if (sl->revoking || sl->probing)
				return "a free slot is being revoked or probed";
			nfree++;
			continue;
		}
		if (sl->m >= c->max_members || !c->mem[sl->m].used)
			return "a slot is held by a member that is gone";
		const struct dom_member *x = &c->mem[sl->m];
		if (sl->v < 0 || sl->v >= x->nvcpus)
			return "a slot names no vCPU of its member";
		if (x->v[sl->v].state != DOM_V_HOLDING || x->v[sl->v].slot != s)
			return "a slot's vCPU does not hold it (or holds another)";
		if (sl->probing && (sl->revoking || (int32_t)(x->probe_seq - sl->probe_seq) < 0))
			return "a slot is probed while revoked, or with a probe never sent";
		held[sl->m]++;
		*nrev += sl->revoking;
	}
	*nfree_out = nfree;
	return NULL;
}

/* A gang's slots end, renew and are revoked together. */
static const char *check_gang(const struct dom_core *c, int m)
{
	const struct dom_member *x = &c->mem[m];
	if (!x->gang)
		return NULL;
	if (x->nvcpus > c->nslots)
		return "a gang member has more vCPUs than the domain has slots";
	uint64_t end;
	bool rev;
	dg_held(c, m, &end, &rev);
	for (int s = 0; s < c->nslots; s++) {
		const struct dom_slot *sl = &c->slot[s];
		if (sl->m == m && (sl->slice_end != end || sl->revoking != rev))
			return "a gang's slots differ in slice end or in being revoked";
	}
	return NULL;
}

static const char *check_member(const struct dom_core *c, int m, int held)
{
	const struct dom_member *x = &c->mem[m];
	if (!x->used)
		return held || x->heap_idx >= 0 || x->nqueued ? "a gone member holds or queues" : NULL;
	if (held != x->nheld)
		return "nheld differs from the slots";
	int nq = 0, nhold = 0, last = -1;
	for (int v = x->qhead; v >= 0; v = x->v[v].qnext) {
		if (++nq > x->nvcpus || x->v[v].state != DOM_V_QUEUED || x->v[v].qprev != last)
			return "a member's queue is broken";
		last = v;
	}
	if (nq != x->nqueued || last != x->qtail)
		return "a member's queue length or tail is wrong";
	for (int v = 0; v < x->nvcpus; v++) {
		nhold += x->v[v].state == DOM_V_HOLDING;
		nq -= x->v[v].state == DOM_V_QUEUED;
	}
	if (nq || nhold != x->nheld)
		return "a member's vCPU states disagree with its queue or slots";
	int nover = 0;
	for (int v = 0; v < x->nvcpus; v++)
		nover += x->v[v].state == DOM_V_OVERRUN;
	if (nover != x->noverrun)
		return "noverrun differs from the OVERRUN vCPUs";
	if ((x->nqueued > 0 && !x->noverrun) != (x->heap_idx >= 0))
		return "a member is in the heap iff it has queued vCPUs: broken";
	if (dom_busy(x) && x->vtime < c->min_vtime)
		return "a busy member is behind the vtime floor";
	/* vtime grew by exactly the held time at this weight, less at most
	 * one rounding per charge. */
	uint64_t want = (x->held_ns - x->held_in) * DOM_WEIGHT_DEFAULT / x->weight;
	uint64_t got = x->vtime - x->vtime_in;
	if (x->vtime < x->vtime_in || got > want || got + x->ncharges < want)
		return "vtime does not match the held time and weight";
	return NULL;
}

const char *dom_core_check(const struct dom_core *c)
{
	int held[4096] = { 0 };
	int nrev, nfree, nq = 0, nq_ok = 0, nheap = 0;
	const char *e = check_slots(c, held, &nrev, &nfree);
	if (e)
		return e;
	if (nrev != c->nrevoking)
		return "nrevoking differs from the slots";
	for (int m = 0; m < c->max_members; m++) {
		if ((e = check_member(c, m, held[m])) || (c->mem[m].used && (e = check_gang(c, m))))
			return e;
		nq += c->mem[m].used ? c->mem[m].nqueued : 0;
		nq_ok += c->mem[m].used && !c->mem[m].noverrun ? c->mem[m].nqueued : 0;
		nheap += c->mem[m].heap_idx >= 0;
	}
	if (nq != c->nqueued || nq_ok != c->nqueued_ok || nheap != c->nheap)
		return "the domain's queued count or heap size is wrong";
	for (int i = 0; i < c->nheap; i++) {
		if (c->mem[c->heap[i]].heap_idx != i)
			return "a heap index is stale";
		if (i && dh_less(c, c->heap[i], c->heap[(i - 1) / 2]))
			return "the heap order is broken";
	}
	/* The one exception to work conservation: a gang on top that cannot
	 * start yet keeps the free slots for itself. */
	uint64_t end;
	if (nfree && c->nheap && !c->deferred && dg_take(c, c->heap[0], nfree, c->last_now, &end))
		return "a slot is free while a queued vCPU could take it";
	return NULL;
}
