/*
 * Gang members of the domain (domain_core.h): how many of a member's queued
 * vCPUs may take free slots now, and what a gang holds. Shared by the
 * decisions (domain_core.c) and the invariants (domain_check.c), so both
 * read "a gang is waiting for slots" the same way.
 */
#include "sched/domain_int.h"

int dg_held(const struct dom_core *c, int m, uint64_t *end, bool *revoking)
{
	int n = 0;
	*end = UINT64_MAX;
	*revoking = false;
	for (int s = 0; s < c->nslots; s++) {
		const struct dom_slot *sl = &c->slot[s];
		if (sl->m != m)
			continue;
		n++;
		if (sl->slice_end < *end)
			*end = sl->slice_end;
		*revoking |= sl->revoking;
	}
	return n;
}

int dg_take(const struct dom_core *c, int m, int nfree, uint64_t now, uint64_t *end)
{
	const struct dom_member *x = &c->mem[m];
	*end = now + c->slice_ns;
	if (!x->gang)
		return nfree > 0 && x->nqueued > 0;
	if (x->nheld) {
		bool rev;
		dg_held(c, m, end, &rev);
		/* A gang on its way out takes nothing until it is all out: the
		 * next round starts whole. A running one takes what is free,
		 * ending with the others. */
		if (rev)
			return 0;
		return x->nqueued < nfree ? x->nqueued : nfree;
	}
	return x->nqueued <= nfree ? x->nqueued : 0;
}
