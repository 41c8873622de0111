/*
 * The pure core's invariants, recomputed from scratch so a test can run it
 * after every event (like domain_check.c for the domain core). It checks
 * the books only; what a policy promises is the tests' business.
 */
#include <stddef.h>

#include "sched/core.h"
#include "sched/core_int.h"

static const char *check_slots(const struct sched_core *c, int *avail)
{
	int usable = 0;
	*avail = 0;
	for (int s = 0; s < c->nslots; s++) {
		const struct sched_slot *sl = &c->slot[s];
		int v = sl->vcpu;
		usable += sl->state == SCHED_SLOT_ONLINE;
		*avail += sl->state != SCHED_SLOT_OFFLINE;
		if (v < -1 || v >= c->nvcpus)
			return "a slot holds a vCPU out of range";
		if (v >= 0 && sl->state == SCHED_SLOT_OFFLINE)
			return "an offline slot is held";
		if (v < 0 && sl->state == SCHED_SLOT_GOING_OFF)
			return "a going-off slot is free";
		if (v >= 0 && (c->v[v].state != SCHED_ST_RUNNING || c->v[v].slot != s))
			return "a slot's holder does not hold it";
		/* stickiness's books: a holder is the slot's last one, and the
		 * slot is its last, as of this generation (core_sticky.c) */
		if (v >= 0 && (sl->last_vcpu != v || c->v[v].last_slot != s ||
			       c->v[v].last_gen != sl->gen))
			return "a slot's holder is not its last holder";
		if (sl->last_vcpu < -1 || sl->last_vcpu >= c->nvcpus)
			return "a slot's last holder is out of range";
	}
	if (usable != c->nusable)
		return "the count of online slots is wrong";
	return NULL;
}

static const char *check_queue(const struct sched_core *c, int runnable)
{
	int n = 0, prev = -1;
	SCHED_FOR_EACH_QUEUED(c, it) {
		if (it < 0 || it >= c->nvcpus || c->v[it].state != SCHED_ST_RUNNABLE)
			return "a queued vCPU is not runnable";
		if (c->v[it].qprev != prev)
			return "the run queue's back links are broken";
		prev = it;
		if (++n > c->nvcpus)
			return "the run queue loops";
	}
	if (n != runnable || c->qtail != prev)
		return "a runnable vCPU is not queued exactly once";
	return NULL;
}

const char *sched_core_check(const struct sched_core *c)
{
	int avail;
	const char *why = check_slots(c, &avail);
	if (why)
		return why;
	int running = 0, runnable = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		if (x->state == SCHED_ST_RUNNING) {
			running++;
			if (x->slot < 0 || x->slot >= c->nslots || c->slot[x->slot].vcpu != v)
				return "a running vCPU's slot is not its own";
		} else if (x->slot != -1) {
			return "a vCPU that does not run holds a slot";
		}
		runnable += x->state == SCHED_ST_RUNNABLE;
		if (x->last_slot < -1 || x->last_slot >= c->nslots)
			return "a vCPU's last slot is out of range";
	}
	if (running != c->nrunning || runnable != c->nrunnable)
		return "the running/runnable counts are wrong";
	if (running > avail)
		return "more vCPUs run than slots are online or going off";
	why = check_queue(c, runnable);
	if (why)
		return why;
	why = sc_check_index(c);
	if (why)
		return why;
	int woken = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		if (c->v[v].woken && c->v[v].state != SCHED_ST_RUNNABLE)
			return "a vCPU marked woken is not queued";
		woken += c->v[v].woken;
	}
	if (woken != c->nwoken)
		return "the count of woken queued vCPUs is wrong";
	/* guest-timed slices: every slot holder's page says whether anyone
	 * queues (core_gslice.c) */
	if (c->started && c->contended != (runnable > 0 || c->lease_on))
		return "contended does not say whether anyone queues (here or, under a lease, in the domain)";
	for (int v = 0; c->guest_slice && c->started && v < c->nvcpus; v++)
		if (c->v[v].state == SCHED_ST_RUNNING && c->v[v].contended != c->contended)
			return "a slot holder's contended flag is stale";
	if (c->slots_offline) {
		int want = running + runnable < c->nslots ? running + runnable : c->nslots;
		if (c->demand != want)
			return "the last demand emitted is not min(slots, running + runnable)";
	}
	return NULL;
}
