/* Undirected yield (KVM before 2012): the spinner's slot goes to a RUNNABLE
 * vCPU drawn at random, of any VM, from the seeded PRNG in the core. */
#include "sched/policy.h"

static int random_on_spin(struct sched_core *c, int v, int target, uint64_t now)
{
	(void)v, (void)target, (void)now;
	if (c->nrunnable == 0)
		return -1;
	/* Uniform over the RUNNABLE set, without walking the queue. */
	uint64_t k = sched_core_rand(c) % (uint64_t)c->nrunnable;
	return sched_core_runnable_at(c, (int)k);
}

const struct sched_policy sched_policy_random = {
	.name = "random",
	.help = "a spinner gives its slot to a random runnable vCPU",
	.on_spin = random_on_spin,
};
