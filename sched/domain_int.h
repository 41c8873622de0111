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

static inline bool dom_busy(const struct dom_member *x)
{
	return x->nheld > 0 || x->nqueued > 0;
}

#endif
