/*
 * Directed yield with KVM's 2012 candidate filter: the spinner's slot goes to
 * a preempted vCPU of its own VM that is not itself spinning, rotating from
 * the last one boosted so one candidate cannot soak up every boost. A vCPU
 * the guest names (yield target or waiting_for) wins if it is runnable. When
 * every candidate spins we still pick one: with ticket locks the preempted
 * spinner may be the next ticket holder (lock-waiter preemption).
 */
#include <errno.h>
#include <stdlib.h>

#include "sched/policy.h"

/* Where the rotation starts in VM vm's vCPU list: its first vCPU after
 * index start (binary search), wrapping to its first. */
static int rotation_start(const struct sched_core *c, int vm, int start)
{
	int lo = c->vm_start[vm], hi = c->vm_start[vm + 1];
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (c->vm_mem[mid] <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - c->vm_start[vm];
}

/* Only v's own VM is looked at: the cost is its size, not every vCPU's. */
int sched_directed_candidate(struct sched_core *c, int v, int *last_boost)
{
	int vm = c->v[v].vm, spinner = -1;
	const int *mem = &c->vm_mem[c->vm_start[vm]];
	int size = c->vm_start[vm + 1] - c->vm_start[vm];
	int first = rotation_start(c, vm, last_boost[vm]);
	for (int k = 0; k < size; k++) {
		int i = mem[(first + k) % size];
		if (i == v || c->v[i].state != SCHED_ST_RUNNABLE)
			continue;
		if (sched_core_get_hint(c, i).spinning_since == 0) {
			last_boost[vm] = i;
			return i;
		}
		if (spinner < 0)
			spinner = i;
	}
	if (spinner >= 0)
		last_boost[vm] = spinner;
	return spinner;
}

static int directed_init(struct sched_core *c)
{
	int *lb = malloc(sizeof(int) * (size_t)c->nvms);
	if (!lb)
		return -ENOMEM;
	for (int i = 0; i < c->nvms; i++)
		lb[i] = c->nvcpus - 1; /* first rotation starts at vCPU 0 */
	c->pstate = lb;
	return 0;
}

static void directed_fini(struct sched_core *c)
{
	free(c->pstate);
	c->pstate = NULL;
}

/*
 * Both policies take the guest's named target when it is a runnable vCPU of
 * the spinner's VM and otherwise pick as directed; they differ only in a
 * named target that runs already: `holder` keeps spinning for it
 * (wait_if_running), `directed` picks another.
 */
static int named_or_directed(struct sched_core *c, int v, int target, bool wait_if_running)
{
	if (target >= 0 && c->v[target].vm == c->v[v].vm) {
		if (c->v[target].state == SCHED_ST_RUNNABLE)
			return target;
		if (wait_if_running && c->v[target].state == SCHED_ST_RUNNING)
			return -1;
	}
	return sched_directed_candidate(c, v, c->pstate);
}

static int directed_on_spin(struct sched_core *c, int v, int target, uint64_t now)
{
	(void)now;
	return named_or_directed(c, v, target, false);
}

const struct sched_policy sched_policy_directed = {
	.name = "directed",
	.help = "a spinner gives its slot to a preempted, non-spinning vCPU of its VM",
	.init = directed_init,
	.fini = directed_fini,
	.on_spin = directed_on_spin,
};

/* `holder`: trust the guest's named target. If it is running already, keep
 * spinning (the lock will come soon); only with no name fall back to
 * directed. */
static int holder_on_spin(struct sched_core *c, int v, int target, uint64_t now)
{
	(void)now;
	return named_or_directed(c, v, target, true);
}

const struct sched_policy sched_policy_holder = {
	.name = "holder",
	.help = "a spinner gives its slot to the vCPU the guest names (else as directed)",
	.init = directed_init,
	.fini = directed_fini,
	.on_spin = holder_on_spin,
};
