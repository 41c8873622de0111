/*
 * The core's indices, kept up to date on every state change (sc_set_state)
 * and every run-queue change (q_push, q_remove) so that no event has to
 * scan every vCPU (docs/benchmarks-history.md, "The scheduler's own cost"):
 *  - the wait deadlines and the ages of the queued vCPUs (min-heaps);
 *  - the RUNNABLE vCPUs in an array, for a uniform random pick;
 *  - the queued vCPUs inside a lock region, in queue order (the deferral's
 *    lock-holder-first pick). The guest's in_critical is read when a vCPU
 *    is queued: a queued vCPU runs no guest code, so it cannot change
 *    until the vCPU runs again (a parked vCPU woken in guest mode is the
 *    exception, for the one exit latency until it is forced out);
 *  - per VM: its queued vCPUs in queue order, and counts of running,
 *    runnable and live vCPUs (gang, directed);
 *  - counts of DONE vCPUs and of WAITING ones with no deadline (deadlock).
 * sched_core_check recomputes all of them from scratch.
 */
#include <errno.h>
#include <stdlib.h>

#include "sched/core.h"
#include "sched/core_int.h"

int sc_index_init(struct sched_core *c)
{
	int n = c->nvcpus, nv = c->nvms;
	c->crit_head = c->crit_tail = -1;
	if (sched_vheap_init(&c->wait_heap, n) < 0 || sched_vheap_init(&c->age_heap, n) < 0)
		return -ENOMEM;
	c->rq_arr = calloc((size_t)n, sizeof(int));
	c->unparked = calloc((size_t)n, sizeof(int));
	c->vm_qhead = malloc(sizeof(int) * (size_t)nv);
	c->vm_qtail = malloc(sizeof(int) * (size_t)nv);
	c->vm_running = calloc((size_t)nv, sizeof(int));
	c->vm_runnable = calloc((size_t)nv, sizeof(int));
	c->vm_live = calloc((size_t)nv, sizeof(int));
	c->vm_mem = calloc((size_t)n, sizeof(int));
	c->vm_start = calloc((size_t)nv + 1, sizeof(int));
	c->want_bits = calloc((size_t)nv / 64 + 1, sizeof(uint64_t));
	c->want_sum = calloc((size_t)nv / 4096 + 1, sizeof(uint64_t));
	if (!c->want_bits || !c->want_sum || !c->unparked || !c->rq_arr || !c->vm_qhead || !c->vm_qtail || !c->vm_running ||
	    !c->vm_runnable || !c->vm_live || !c->vm_mem || !c->vm_start)
		return -ENOMEM;
	for (int i = 0; i < nv; i++)
		c->vm_qhead[i] = c->vm_qtail[i] = -1;
	/* vm_mem: a counting sort of the vCPUs by VM, ascending within one */
	for (int v = 0; v < n; v++)
		c->vm_start[c->v[v].vm + 1]++;
	for (int i = 0; i < nv; i++)
		c->vm_start[i + 1] += c->vm_start[i];
	for (int v = 0; v < n; v++)
		c->vm_mem[c->vm_start[c->v[v].vm] + c->vm_live[c->v[v].vm]++] = v;
	for (int i = 0; i < nv; i++)
		c->vm_live[i] = c->vm_start[i + 1] - c->vm_start[i]; /* none DONE yet */
	for (int v = 0; v < n; v++) {
		c->v[v].rq_pos = -1;
		c->v[v].cprev = c->v[v].cnext = -1;
		c->v[v].vqprev = c->v[v].vqnext = -1;
	}
	return 0;
}

void sc_index_fini(struct sched_core *c)
{
	sched_vheap_fini(&c->wait_heap);
	sched_vheap_fini(&c->age_heap);
	free(c->rq_arr);
	free(c->unparked);
	free(c->vm_qhead);
	free(c->vm_qtail);
	free(c->vm_running);
	free(c->vm_runnable);
	free(c->vm_live);
	free(c->vm_mem);
	free(c->vm_start);
	free(c->want_bits);
	free(c->want_sum);
}

static void want_set(struct sched_core *c, int vm, bool on)
{
	int w = vm / 64;
	if (on)
		c->want_bits[w] |= 1ull << (vm % 64);
	else
		c->want_bits[w] &= ~(1ull << (vm % 64));
	if (c->want_bits[w])
		c->want_sum[w / 64] |= 1ull << (w % 64);
	else
		c->want_sum[w / 64] &= ~(1ull << (w % 64));
}

/* Two levels of bits: a word of want_sum stands for 4096 VMs. */
int sched_core_next_want_vm(const struct sched_core *c, int vm)
{
	if (vm < 0 || vm >= c->nvms)
		return -1;
	int w = vm / 64;
	uint64_t b = c->want_bits[w] & (~0ull << (vm % 64));
	if (b)
		return w * 64 + __builtin_ctzll(b);
	int nw = (c->nvms + 63) / 64, ns = (nw + 63) / 64;
	for (int sw = (w + 1) / 64; sw < ns; sw++) {
		uint64_t m = c->want_sum[sw];
		if (sw == (w + 1) / 64)
			m &= (w + 1) % 64 ? ~0ull << ((w + 1) % 64) : ~0ull;
		if (m) {
			int word = sw * 64 + __builtin_ctzll(m);
			return word * 64 + __builtin_ctzll(c->want_bits[word]);
		}
	}
	return -1;
}

static int want(const struct sched_core *c, int vm)
{
	return c->vm_running[vm] + c->vm_runnable[vm];
}

/* v leaves state s (its fields still those of s). */
void sc_index_leave(struct sched_core *c, int v, enum sched_vstate s)
{
	struct sched_vcore *x = &c->v[v];
	int vm = x->vm, w = want(c, vm);
	switch (s) {
	case SCHED_ST_RUNNING:
		c->vm_running[vm]--;
		break;
	case SCHED_ST_RUNNABLE: {
		c->vm_runnable[vm]--;
		int last = c->rq_arr[c->nrunnable]; /* nrunnable is already one less */
		c->rq_arr[x->rq_pos] = last;
		c->v[last].rq_pos = x->rq_pos;
		x->rq_pos = -1;
		sched_vheap_del(&c->age_heap, v);
		break;
	}
	case SCHED_ST_WAITING:
		if (x->wait_deadline == UINT64_MAX)
			c->nstuck--;
		else
			sched_vheap_del(&c->wait_heap, v);
		break;
	case SCHED_ST_IDLE:
		break;
	case SCHED_ST_DONE:
		c->ndone--;
		c->vm_live[vm]++;
		break;
	}
	if (w > 0 && want(c, vm) == 0) {
		c->nwant_vms--;
		want_set(c, vm, false);
	}
}

/* v entered state s (x->state_since and the counts are set). */
void sc_index_enter(struct sched_core *c, int v, enum sched_vstate s)
{
	struct sched_vcore *x = &c->v[v];
	int vm = x->vm, w = want(c, vm);
	switch (s) {
	case SCHED_ST_RUNNING:
		c->vm_running[vm]++;
		break;
	case SCHED_ST_RUNNABLE:
		c->vm_runnable[vm]++;
		x->rq_pos = c->nrunnable - 1; /* nrunnable counts v already */
		c->rq_arr[x->rq_pos] = v;
		sched_vheap_add(&c->age_heap, v, x->state_since);
		break;
	case SCHED_ST_WAITING:
		if (x->wait_deadline == UINT64_MAX)
			c->nstuck++;
		else
			sched_vheap_add(&c->wait_heap, v, x->wait_deadline);
		break;
	case SCHED_ST_IDLE:
		break;
	case SCHED_ST_DONE:
		c->ndone++;
		c->vm_live[vm]--;
		break;
	}
	if (w == 0 && want(c, vm) > 0) {
		c->nwant_vms++;
		want_set(c, vm, true);
	}
}

/* The ages restart (sched_core_start resets every state_since). */
void sc_index_restart_ages(struct sched_core *c)
{
	for (int v = 0; v < c->nvcpus; v++) {
		if (sched_vheap_has(&c->age_heap, v)) {
			sched_vheap_del(&c->age_heap, v);
			sched_vheap_add(&c->age_heap, v, c->v[v].state_since);
		}
	}
}

/* v was just linked into the run queue at the front or back. */
void sc_index_q_pushed(struct sched_core *c, int v, bool front, bool crit)
{
	struct sched_vcore *x = &c->v[v];
	x->qseq = front ? c->qlo-- : c->qhi++;
	x->q_crit = crit;
	int vm = x->vm;
	int *head = &c->vm_qhead[vm], *tail = &c->vm_qtail[vm];
	if (front) {
		x->vqprev = -1;
		x->vqnext = *head;
		if (*head >= 0)
			c->v[*head].vqprev = v;
		else
			*tail = v;
		*head = v;
	} else {
		x->vqnext = -1;
		x->vqprev = *tail;
		if (*tail >= 0)
			c->v[*tail].vqnext = v;
		else
			*head = v;
		*tail = v;
	}
	if (!crit)
		return;
	if (front) {
		x->cprev = -1;
		x->cnext = c->crit_head;
		if (c->crit_head >= 0)
			c->v[c->crit_head].cprev = v;
		else
			c->crit_tail = v;
		c->crit_head = v;
	} else {
		x->cnext = -1;
		x->cprev = c->crit_tail;
		if (c->crit_tail >= 0)
			c->v[c->crit_tail].cnext = v;
		else
			c->crit_head = v;
		c->crit_tail = v;
	}
}

/* v is being unlinked from the run queue. */
void sc_index_q_removed(struct sched_core *c, int v)
{
	struct sched_vcore *x = &c->v[v];
	int vm = x->vm;
	if (x->vqprev >= 0)
		c->v[x->vqprev].vqnext = x->vqnext;
	else
		c->vm_qhead[vm] = x->vqnext;
	if (x->vqnext >= 0)
		c->v[x->vqnext].vqprev = x->vqprev;
	else
		c->vm_qtail[vm] = x->vqprev;
	x->vqprev = x->vqnext = -1;
	if (!x->q_crit)
		return;
	if (x->cprev >= 0)
		c->v[x->cprev].cnext = x->cnext;
	else
		c->crit_head = x->cnext;
	if (x->cnext >= 0)
		c->v[x->cnext].cprev = x->cprev;
	else
		c->crit_tail = x->cprev;
	x->cprev = x->cnext = -1;
}
