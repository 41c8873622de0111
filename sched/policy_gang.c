/*
 * Gang scheduling: the vCPUs of a VM run together or not at all.
 *
 * Slots are handed out VM by VM. A "set" of VMs owns the slots for one
 * slice: starting at a rotating VM, whole VMs are added while their live
 * (not DONE) vCPU counts fit in the M slots; the first VM that did not fit
 * leads the next set, so every VM gets its turn. A set changes only at a
 * slice boundary (or at once when nothing in it is runnable), and it is a
 * barrier: no vCPU of the new set is granted until every vCPU of the old one
 * has left its slot, so the whole new set starts in one step. (A vCPU woken
 * while the old set is still leaving joins its VM's running siblings at
 * once if a slot is free; if none is, its VM runs in part until the old
 * set's last vCPU is out: at most the exit latency, or defer_max_ns with
 * safe-point deferral.)
 *
 * Slots of a set member that waits or halts stay empty: filling them with
 * another VM would break the all-or-nothing promise when the member wakes.
 *
 * A VM with more live vCPUs than slots cannot run whole. It then runs alone,
 * as many of its vCPUs as fit, round robin among them at slice ends; that
 * is the only case where part of a VM runs.
 *
 * "The M slots" are the ONLINE ones (c->nusable): when slots come or go
 * (a domain member's seats) the set is made again at the next tick, the
 * way a slice end makes it.
 */
#include <errno.h>
#include <stdlib.h>

#include "sched/policy.h"

struct gang {
	bool have_set, oversize;
	int next_vm;
	int set_slots;    /* c->nusable when the set was made */
	uint64_t start;
	bool *in_set;
	int *set, nset;   /* the set's VMs; at most one per usable slot */
};

/* The core keeps per-VM counts and a bitset of the VMs that want slots
 * (core_index.c), so nothing here scans every vCPU, and a set is made by
 * visiting only VMs that want slots. */
static int live(const struct sched_core *c, int vm)
{
	return c->vm_live[vm];
}

/* The next VM after vm, cyclically, that wants slots (vm itself last). */
static int next_want(const struct sched_core *c, int vm)
{
	int n = sched_core_next_want_vm(c, vm + 1 < c->nvms ? vm + 1 : 0);
	return n >= 0 ? n : sched_core_next_want_vm(c, 0);
}

static void compute_set(struct sched_core *c, struct gang *g, uint64_t now)
{
	for (int i = 0; i < g->nset; i++)
		g->in_set[g->set[i]] = false;
	g->nset = 0;
	int total = 0, first = -1, next = -1;
	g->oversize = false;
	/* From next_vm on, every VM that wants slots, once (first fit); once
	 * the set is full only the first VM left out is still looked for. */
	int vm = sched_core_next_want_vm(c, g->next_vm);
	if (vm < 0)
		vm = sched_core_next_want_vm(c, 0);
	for (int k = 0; vm >= 0 && k < c->nwant_vms; k++, vm = next_want(c, vm)) {
		bool full = g->oversize || total >= c->nusable;
		if (full && next >= 0)
			break;
		if (first < 0) {
			first = vm;
			total = live(c, vm);
			g->oversize = total > c->nusable;
			g->in_set[vm] = true;
			g->set[g->nset++] = vm;
		} else if (!g->oversize && total + live(c, vm) <= c->nusable) {
			total += live(c, vm);
			g->in_set[vm] = true;
			g->set[g->nset++] = vm;
		} else if (next < 0) {
			next = vm;
		}
	}
	if (next >= 0)
		g->next_vm = next;
	else if (first >= 0)
		g->next_vm = (first + 1) % c->nvms;
	g->start = now;
	g->have_set = true;
	g->set_slots = c->nusable;
}

/* Is there a runnable VM outside the set / inside it? */
static void wants(const struct sched_core *c, struct gang *g, bool *out, bool *in)
{
	int nin = 0;
	for (int i = 0; i < g->nset; i++)
		nin += c->vm_running[g->set[i]] + c->vm_runnable[g->set[i]] > 0;
	*in = nin > 0;
	*out = c->nwant_vms > nin;
}

static int gang_init(struct sched_core *c)
{
	struct gang *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->in_set = calloc((size_t)c->nvms, sizeof(bool));
	g->set = calloc((size_t)c->nvms, sizeof(int));
	c->pstate = g;
	if (!g->in_set || !g->set)
		return -ENOMEM;
	return 0;
}

static void gang_fini(struct sched_core *c)
{
	struct gang *g = c->pstate;
	if (g) {
		free(g->in_set);
		free(g->set);
		free(g);
	}
	c->pstate = NULL;
}

static void gang_tick(struct sched_core *c, uint64_t now)
{
	struct gang *g = c->pstate;
	if (!g->have_set) {
		compute_set(c, g, now);
		return;
	}
	bool out, in;
	wants(c, g, &out, &in);
	bool resized = g->set_slots != c->nusable;
	if (!resized && (!out || (in && now - g->start < c->slice_ns)))
		return;
	compute_set(c, g, now);
	for (int s = 0; s < c->nslots; s++) {
		int v = c->slot[s].vcpu;
		if (v >= 0 && !g->in_set[c->v[v].vm])
			sched_core_request_preempt(c, v, now);
	}
}

static uint64_t gang_deadline(const struct sched_core *c)
{
	struct gang *g = c->pstate;
	if (!g->have_set || g->set_slots != c->nusable)
		return c->last_now;
	bool out, in;
	wants(c, g, &out, &in);
	if (!out)
		return UINT64_MAX;
	return in ? g->start + c->slice_ns : c->last_now;
}

/* The first queued vCPU of a set VM (one with running siblings during a
 * barrier): each VM's queue is the run queue's order, so it is the head
 * with the smallest qseq among the set's VMs. */
static int gang_pick_next(struct sched_core *c, int slot, uint64_t now)
{
	(void)slot;
	struct gang *g = c->pstate;
	if (!g->have_set)
		compute_set(c, g, now);
	/* The old set has not left yet while someone outside the set runs. */
	int in_running = 0;
	for (int i = 0; i < g->nset; i++)
		in_running += c->vm_running[g->set[i]];
	bool barrier = c->nrunning > in_running;
	int best = -1;
	for (int i = 0; i < g->nset; i++) {
		int vm = g->set[i], h = c->vm_qhead[vm];
		/* A woken vCPU may still join siblings that already run. */
		if (h < 0 || (barrier && !c->vm_running[vm]))
			continue;
		if (best < 0 || c->v[h].qseq < c->v[best].qseq)
			best = h;
	}
	return best;
}

static enum sched_slice_verdict gang_on_slice_end(struct sched_core *c, int v,
						  uint64_t now)
{
	(void)now;
	struct gang *g = c->pstate;
	if (!g->in_set[c->v[v].vm])
		return SCHED_SLICE_PREEMPT;
	if (g->oversize) {
		for (int i = 0; i < g->nset; i++)
			if (c->vm_runnable[g->set[i]])
				return SCHED_SLICE_PREEMPT;
	}
	return SCHED_SLICE_CONTINUE; /* set changes are gang_tick's job */
}

bool sched_gang_in_set(const struct sched_core *c, int vm)
{
	const struct gang *g = c->pstate;
	return c->pol == &sched_policy_gang && g && vm >= 0 && vm < c->nvms && g->in_set[vm];
}

const struct sched_policy sched_policy_gang = {
	.name = "gang",
	.help = "all vCPUs of a VM run together or not at all (several VMs)",
	.init = gang_init,
	.fini = gang_fini,
	.tick = gang_tick,
	.deadline = gang_deadline,
	.pick_next = gang_pick_next,
	.on_slice_end = gang_on_slice_end,
};
