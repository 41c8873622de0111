/*
 * The core's indices (core_index.c) against the books, from scratch: the
 * heaps hold exactly the vCPUs they should with their keys and are heaps;
 * the runnable array, the per-VM counts and the deadlock counts are right;
 * the crit list and every VM's queue are the run queue's subsequences, in
 * its order, and qseq grows along the queue. Part of sched_core_check.
 */
#include <stddef.h>
#include <stdlib.h>

#include "sched/core.h"
#include "sched/core_int.h"

static const char *check_heap(const struct sched_vheap *h)
{
	for (int i = 0; i < h->n; i++) {
		int v = h->a[i];
		if (h->pos[v] != i)
			return "a heap's positions are wrong";
		if (i > 0) {
			int p = h->a[(i - 1) / 2];
			if (h->key[v] < h->key[p] || (h->key[v] == h->key[p] && v < p))
				return "a heap is out of order";
		}
	}
	return NULL;
}

static const char *check_members(const struct sched_core *c)
{
	int nwait = 0, nage = 0, stuck = 0, done = 0;
	for (int v = 0; v < c->nvcpus; v++) {
		const struct sched_vcore *x = &c->v[v];
		bool timed = x->state == SCHED_ST_WAITING && x->wait_deadline != UINT64_MAX;
		if (sched_vheap_has(&c->wait_heap, v) != timed ||
		    (timed && c->wait_heap.key[v] != x->wait_deadline))
			return "the wait-deadline heap is wrong";
		bool q = x->state == SCHED_ST_RUNNABLE;
		if (sched_vheap_has(&c->age_heap, v) != q ||
		    (q && c->age_heap.key[v] != x->state_since))
			return "the queue-age heap is wrong";
		if (q ? (x->rq_pos < 0 || x->rq_pos >= c->nrunnable || c->rq_arr[x->rq_pos] != v)
		      : x->rq_pos != -1)
			return "the runnable array is wrong";
		nwait += timed;
		nage += q;
		stuck += x->state == SCHED_ST_WAITING && x->wait_deadline == UINT64_MAX;
		done += x->state == SCHED_ST_DONE;
	}
	if (nwait != c->wait_heap.n || nage != c->age_heap.n)
		return "a heap holds a vCPU it should not";
	if (stuck != c->nstuck || done != c->ndone)
		return "the deadlock counts are wrong";
	const char *why = check_heap(&c->wait_heap);
	return why ? why : check_heap(&c->age_heap);
}

/* Every VM's queue against the run queue, in one pass over it: each
 * queued vCPU must be the next one its VM's queue names. */
static const char *check_vm_queues(const struct sched_core *c)
{
	int *next = malloc(sizeof(int) * (size_t)c->nvms);
	int *prev = malloc(sizeof(int) * (size_t)c->nvms);
	const char *why = NULL;
	if (!next || !prev) {
		why = "out of memory for the check";
		goto out;
	}
	for (int vm = 0; vm < c->nvms; vm++) {
		next[vm] = c->vm_qhead[vm];
		prev[vm] = -1;
	}
	SCHED_FOR_EACH_QUEUED(c, q) {
		int vm = c->v[q].vm;
		if (next[vm] != q || c->v[q].vqprev != prev[vm]) {
			why = "a VM's run queue is not the run queue's order";
			goto out;
		}
		prev[vm] = q;
		next[vm] = c->v[q].vqnext;
	}
	for (int vm = 0; vm < c->nvms; vm++) {
		if (next[vm] != -1 || c->vm_qtail[vm] != prev[vm]) {
			why = "a VM's run queue has extra vCPUs";
			goto out;
		}
	}
out:
	free(next);
	free(prev);
	return why;
}

static const char *check_vms(const struct sched_core *c)
{
	int nwant = 0;
	for (int vm = 0; vm < c->nvms; vm++) {
		int run = 0, rq = 0, live = 0;
		for (int i = c->vm_start[vm]; i < c->vm_start[vm + 1]; i++) {
			int v = c->vm_mem[i];
			if (c->v[v].vm != vm || (i > c->vm_start[vm] && c->vm_mem[i - 1] >= v))
				return "a VM's vCPU list is wrong";
			run += c->v[v].state == SCHED_ST_RUNNING;
			rq += c->v[v].state == SCHED_ST_RUNNABLE;
			live += c->v[v].state != SCHED_ST_DONE;
		}
		if (run != c->vm_running[vm] || rq != c->vm_runnable[vm] || live != c->vm_live[vm])
			return "a VM's counts are wrong";
		nwant += run + rq > 0;
		if ((sched_core_next_want_vm(c, vm) == vm) != (run + rq > 0))
			return "the bitset of VMs that want slots is wrong";
	}
	if (c->vm_start[c->nvms] != c->nvcpus || nwant != c->nwant_vms)
		return "the VMs' totals are wrong";
	return check_vm_queues(c);
}

static const char *check_crit(const struct sched_core *c)
{
	int it = c->crit_head, prev = -1;
	bool first = true;
	int64_t seq = 0;
	SCHED_FOR_EACH_QUEUED(c, q) {
		if (!first && c->v[q].qseq <= seq)
			return "qseq does not grow along the run queue";
		first = false;
		seq = c->v[q].qseq;
		if (!c->v[q].q_crit)
			continue;
		if (it != q || c->v[q].cprev != prev)
			return "the lock-region list is not the run queue's order";
		prev = q;
		it = c->v[q].cnext;
	}
	if (it != -1 || c->crit_tail != prev)
		return "the lock-region list has extra vCPUs";
	return NULL;
}

const char *sc_check_index(const struct sched_core *c)
{
	const char *why = check_members(c);
	if (!why)
		why = check_vms(c);
	return why ? why : check_crit(c);
}
