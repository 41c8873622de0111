/*
 * Halts the VMM cannot see: a guest HLT with an in-kernel irqchip blocks in
 * the host kernel and KVM_RUN does not return. The blocked probe (e.g. KVM's
 * per-vCPU `blocking` statistic) is asked every halt_check_ns; see core.h
 * for the contract. Parking frees the slot without forcing the vCPU out,
 * because the only way back into the guest is KVM_RUN itself: an exit would
 * just block again on re-entry.
 */
#include <stdlib.h>

#include "sched/core.h"
#include "sched/core_int.h"

void sched_core_set_blocked_fn(struct sched_core *c, sched_core_blocked_fn fn, void *ctx)
{
	c->blocked = fn;
	c->blocked_ctx = ctx;
}

static void park(struct sched_core *c, int v, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	sc_release(c, v, -1, now);
	sc_set_state(c, v, SCHED_ST_IDLE, now);
	sc_set_preempted(c, v, false);
	x->parked = true;
	x->st.kernel_halts++;
	sc_emit(c, SCHED_ACT_PARK, v, 0);
}

void sc_unpark(struct sched_core *c, int v, bool in_guest, uint64_t now)
{
	struct sched_vcore *x = &c->v[v];
	x->parked = false;
	x->wake_reason = 0;
	/* Like any woken vCPU: first in line for the next slot. */
	sc_make_runnable(c, v, true, now);
	sc_mark_woken(c, v);
	x->unslotted = in_guest;
	x->unslotted_forced = false;
	c->maybe_unslotted |= in_guest;
	if (in_guest && !x->unpark_listed) {
		x->unpark_listed = true;
		c->unparked[c->nunparked++] = v;
	}
}

void sc_halt_checks(struct sched_core *c, uint64_t now)
{
	if (!c->halt_check_ns || !c->blocked || now < c->next_halt_check)
		return;
	c->next_halt_check = now + c->halt_check_ns;
	/* One probe per vCPU; the slots freed here are filled at the event's end. */
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_RUNNING && !x->preempt_req) {
			if (c->blocked(c->blocked_ctx, v))
				park(c, v, now);
		} else if (x->parked && !c->blocked(c->blocked_ctx, v)) {
			sc_unpark(c, v, true, now);
		}
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* After the slots are filled: who woke in guest mode and got none must leave. */
void sc_force_unslotted(struct sched_core *c, uint64_t now)
{
	/* Runs after every event: free unless something was unparked. */
	if (!c->maybe_unslotted)
		return;
	c->maybe_unslotted = false;
	/* Only the vCPUs unparked since the last pass can be new here (the
	 * pass forces the others); index order, as a scan would give. */
	qsort(c->unparked, (size_t)c->nunparked, sizeof(int), cmp_int);
	int n = c->nunparked;
	c->nunparked = 0;
	for (int i = 0; i < n; i++) {
		int v = c->unparked[i];
		struct sched_vcore *x = &c->v[v];
		x->unpark_listed = false;
		if (x->state != SCHED_ST_RUNNABLE || !x->unslotted || x->unslotted_forced)
			continue;
		x->unslotted_forced = true;
		x->st.unslotted_wakes++;
		sc_emit(c, SCHED_ACT_FORCE_EXIT, v, 0);
		sc_trace(c, SCHED_TR_PREEMPT, v, -1, now);
	}
}
