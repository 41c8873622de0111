/*
 * A member's answers to the agent's liveness probes (sched/DOMAIN.md,
 * "Probe"), given by its vCPUs, seat by seat. A probe asks "is this seat's
 * holder alive?"; the link thread living says nothing about that (a member
 * whose vCPU threads hang behind a device or a lock while its link runs
 * answered every probe and kept its slots, bounded only by the vtime
 * charge). So a seat's answer is written only by a vCPU thread holding
 * that seat, at a scheduling point passed after the probe was seen
 * (sched_set_point_cb): a grant, a yield, a PV wait or kick, a safe
 * point. A vCPU that stays in guest mode without exits is made to pass
 * one: the link pokes every held seat at each new probe
 * (sched_slot_poke: a forced exit that keeps the slot; its after_exit is
 * the point). One exit per held seat per probe, and probes come only at
 * slice ends renewed while another member waits.
 *
 * The hot path (every scheduling point of every vCPU) is two atomic
 * loads; the link's mutex is taken only for an answer, once a seat a
 * probe, because a new agent's segments are swapped in under it.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "sched/sched.h"
#include "vmm/domain/member_int.h"

/* Seat j's answer: the agent's probe word as it is now, which a point
 * passed now answers. mu held. */
static void answer(struct dlink *l, int j)
{
	if (l->lost || j >= l->nlive)
		return;
	uint32_t p = __atomic_load_n(&dom_shm_live(&l->shm)->probe, __ATOMIC_ACQUIRE);
	uint32_t *ack = dom_shm_probe_ack(&l->shm, j);
	if (ack && __atomic_load_n(ack, __ATOMIC_RELAXED) != p) {
		__atomic_store_n(ack, p, __ATOMIC_RELEASE);
		l->rep.probes++;
	}
}

void dprobe_point(void *ctx, int j)
{
	struct dlink *l = ctx;
	if (j < 0 || j >= l->nlocal)
		return;
	uint32_t want = atomic_load_explicit(&l->probe_want, memory_order_acquire);
	if (atomic_load_explicit(&l->probe_done[j], memory_order_relaxed) == want)
		return;
	pthread_mutex_lock(&l->mu);
	answer(l, j);
	pthread_mutex_unlock(&l->mu);
	atomic_store_explicit(&l->probe_done[j], want, memory_order_relaxed);
}

void dprobe_look(struct dlink *l)
{
	pthread_mutex_lock(&l->mu);
	uint32_t p = l->lost ? l->probe_seen : __atomic_load_n(&dom_shm_live(&l->shm)->probe, __ATOMIC_ACQUIRE);
	bool fresh = p != l->probe_seen;
	l->probe_seen = p;
	int n = l->nlive;
	pthread_mutex_unlock(&l->mu);
	if (!fresh)
		return;
	/* every vCPU's next point looks, then the holders are made to pass one */
	atomic_fetch_add_explicit(&l->probe_want, 1, memory_order_release);
	for (int j = 0; j < n; j++) {
		if (sched_slot_poke(l->s, j) != 0)
			continue; /* held: its vCPU answers; offline: its next grant's does */
		/* online and empty: no vCPU there to hang, and with another
		 * member waiting the co-scheduler gives it back at once */
		pthread_mutex_lock(&l->mu);
		answer(l, j);
		pthread_mutex_unlock(&l->mu);
	}
}

void dprobe_rejoined(struct dlink *l)
{
	l->probe_seen = __atomic_load_n(&dom_shm_live(&l->shm)->probe, __ATOMIC_ACQUIRE);
}
