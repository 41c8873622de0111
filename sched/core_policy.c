/*
 * The yield policy switched live (a domain member's --yield can change
 * while its VM runs). The new policy's state is made before the old one's
 * is dropped, so a failed init leaves everything as it was.
 */
#include <errno.h>
#include <string.h>

#include "sched/core.h"
#include "sched/core_int.h"
#include "sched/policy.h"

static int policy_index(const struct sched_policy *p)
{
	const char *const *n = sched_policy_names();
	for (int i = 0; n[i]; i++)
		if (!strcmp(n[i], p->name))
			return i;
	return -1;
}

int sched_core_set_policy(struct sched_core *c, const char *name, uint64_t now)
{
	const struct sched_policy *np = sched_policy_find(name);
	if (!np)
		return -EINVAL;
	SC_EVENT(c, now);
	if (np == c->pol)
		return 0;
	const struct sched_policy *old = c->pol;
	void *old_state = c->pstate;
	c->pol = np;
	c->pstate = NULL;
	int r = np->init ? np->init(c) : 0;
	if (r < 0) {
		if (np->fini)
			np->fini(c); /* what a half-done init allocated */
		c->pol = old;
		c->pstate = old_state;
		return r;
	}
	void *new_state = c->pstate;
	c->pstate = old_state;
	if (old->fini)
		old->fini(c);
	c->pstate = new_state;
	sc_trace(c, SCHED_TR_POLICY, -1, policy_index(np), now);
	/* Everything else reads c->pol at each decision (the deferral's
	 * lock-holder-first pick included); only free slots need a look now,
	 * e.g. ones gang kept empty for a member that sleeps. */
	sc_fill_slots(c, now);
	sc_force_unslotted(c, now);
	return 0;
}
