#include "vmm/core/sched_hc_ops.h"

#include "sched/sched.h"

static int glue_wait(void *s, int v, uint64_t timeout_ns)
{
	/* the ABI's "0 = no timeout", in the scheduler's words */
	return sched_vcpu_wait(s, v, timeout_ns ? timeout_ns : SCHED_NO_TIMEOUT);
}

static int glue_kick(void *s, int from, int target)
{
	return sched_vcpu_kick(s, from, target);
}

static int glue_spin(void *s, int v, int target)
{
	return sched_vcpu_spin(s, v, target, SCHED_SPIN_YIELD);
}

static int glue_safe_point(void *s, int v)
{
	return sched_vcpu_safe_point(s, v);
}

static int glue_features_acked(void *s, int v)
{
	sched_vcpu_features_acked(s, v);
	return 0;
}

const struct hc_sched_ops sched_glue_hc_ops = {
	.wait = glue_wait,
	.kick = glue_kick,
	.spin = glue_spin,
	.safe_point = glue_safe_point,
	.features_acked = glue_features_acked,
};
