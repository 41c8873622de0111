/* Plain round robin, spin events ignored: the lock-holder-preemption
 * baseline. Every method is the core's default. */
#include "sched/policy.h"

const struct sched_policy sched_policy_none = {
	.name = "none",
	.help = "round robin; spinners keep spinning",
};
