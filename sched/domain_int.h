/*
 * Bookkeeping shared by domain_core.c, domain_heap.c and domain_check.c;
 * callers use domain_core.h.
 */
#ifndef VMM_SCHED_DOMAIN_INT_H
#define VMM_SCHED_DOMAIN_INT_H

#include "sched/domain_core.h"

/* The heap of members with queued vCPUs: least (vtime, id) on top. */
bool dh_less(const struct dom_core *c, int a, int b);
void dh_insert(struct dom_core *c, int m);
void dh_remove(struct dom_core *c, int m);
/* m's vtime grew: move it down to its place. */
void dh_sift_down(struct dom_core *c, int i);

/* The slots m holds (count), the earliest of their slice ends (UINT64_MAX
 * if none) and whether any is being revoked: O(P). */
int dg_held(const struct dom_core *c, int m, uint64_t *end, bool *revoking);
/* How many of m's queued vCPUs take free slots now (nfree of them), and
 * the slice end they get. 0 for a gang that waits for more free slots, or
 * for the rest of its own to come back from a revoke: the free slots are
 * kept for it. */
int dg_take(const struct dom_core *c, int m, int nfree, uint64_t now, uint64_t *end);

static inline bool dom_busy(const struct dom_member *x)
{
	/* queued vCPUs of a member with one reclaimed do not count: it is
	 * granted nothing until that one is back (overrun_out) */
	return x->nheld > 0 || (x->nqueued > 0 && !x->noverrun);
}

#endif
