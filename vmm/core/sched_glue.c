#include "vmm/core/sched_glue.h"

#include <errno.h>

#include "hypercalls/abi.h"
#include "hypercalls/features.h"
#include "vcpu/kvm_stats.h"

static struct vmm_shared_page *page(const struct sched_glue *g)
{
	return vm_shared_page(g->vm, g->vcpu);
}

static void force_exit(void *opaque)
{
	struct sched_glue *g = opaque;
	vcpu_kick(&g->vm->vcpus[g->vcpu]);
}

/*
 * The guest stamps spins with its TSC; rather than translate guest TSC to
 * host time, the VMM notes when it first saw each stamp: a spin seen again a
 * window later has lasted at least that window.
 */
static uint64_t spinning_since_ns(void *opaque)
{
	struct sched_glue *g = opaque;
	uint64_t stamp = __atomic_load_n(&page(g)->spinning_since, __ATOMIC_RELAXED);
	if (!stamp) {
		g->last_stamp = 0;
		return 0;
	}
	if (stamp != g->last_stamp) {
		g->last_stamp = stamp;
		g->first_seen_ns = sched_now_ns();
	}
	return g->first_seen_ns;
}

static bool in_critical(void *opaque)
{
	return __atomic_load_n(&page(opaque)->in_critical, __ATOMIC_RELAXED) != 0;
}

static int waiting_for(void *opaque)
{
	struct sched_glue *g = opaque;
	int32_t w = __atomic_load_n(&page(g)->waiting_for, __ATOMIC_RELAXED);
	/* The guest writes this: trust nothing outside its own VM. */
	return w >= 0 && (unsigned)w < g->vm->cfg->ncpus ? g->base + w : -1;
}

static void set_preempted(void *opaque, bool on)
{
	__atomic_store_n(&page(opaque)->preempted, on, __ATOMIC_RELEASE);
}

static void set_preempt_pending(void *opaque, uint32_t req)
{
	__atomic_store_n(&page(opaque)->preempt_pending, req, __ATOMIC_RELEASE);
}

static void set_kick_pending(void *opaque, bool on)
{
	__atomic_store_n(&page(opaque)->kick_pending, on, __ATOMIC_RELEASE);
}

static void set_steal_ns(void *opaque, uint64_t ns)
{
	__atomic_store_n(&page(opaque)->steal_ns, ns, __ATOMIC_RELEASE);
}

/*
 * Guest-timed slices' fields were reserved bytes when version 2 fixed the
 * page: without the guest's ack (ABI.md 4.3) they stay 0 and its
 * guest_slice means nothing, as before the feature existed. The ack is set
 * before the scheduler's mutex is taken to publish them (hypercalls/
 * features.c), and every write below runs under that mutex: none is lost.
 */
static bool slice_acked(const struct sched_glue *g)
{
	return hc_acked(&g->vm->hc, g->vcpu) & VMM_PV_GUEST_SLICE;
}

static bool guest_slice(void *opaque)
{
	return slice_acked(opaque) && __atomic_load_n(&page(opaque)->guest_slice, __ATOMIC_RELAXED) != 0;
}

static void set_contended(void *opaque, bool on)
{
	if (slice_acked(opaque))
		__atomic_store_n(&page(opaque)->contended, on, __ATOMIC_RELEASE);
}

/* The guest counts the slice in its own TSC from when it first sees the new
 * number, so no clock needs translating: only the length. */
static void new_slice(void *opaque, uint64_t ns)
{
	struct sched_glue *g = opaque;
	if (!slice_acked(g))
		return;
	struct vmm_shared_page *p = page(g);
	uint64_t khz = g->vm->vcpus[g->vcpu].tsc_khz;
	uint64_t ticks = khz ? ns / 1000 * khz / 1000 + ns % 1000 * khz / 1000000 : ns;
	uint32_t seq = __atomic_load_n(&p->slice_seq, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&p->slice_tsc, ticks, __ATOMIC_RELAXED);
	__atomic_store_n(&p->slice_seq, seq ? seq : 1, __ATOMIC_RELEASE);
}

/* KVM's `blocking` stat: 1 while a guest HLT sleeps in the host kernel. */
static bool blocked_in_kernel(void *opaque)
{
	struct sched_glue *g = opaque;
	uint64_t b = 0;
	return kvm_stats_read(&g->vm->vcpus[g->vcpu].stats, KVM_STAT_BLOCKING, &b) == 0 && b;
}

const struct sched_vcpu_ops sched_glue_ops = {
	.force_exit = force_exit,
	.spinning_since_ns = spinning_since_ns,
	.in_critical = in_critical,
	.waiting_for = waiting_for,
	.set_preempted = set_preempted,
	.set_preempt_pending = set_preempt_pending,
	.blocked_in_kernel = blocked_in_kernel,
	.set_kick_pending = set_kick_pending,
	.set_steal_ns = set_steal_ns,
	.guest_slice = guest_slice,
	.set_contended = set_contended,
	.new_slice = new_slice,
};

int sched_glue_host_cpus(unsigned want, int *cpus, unsigned max, cpu_set_t *set)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return -errno;
	unsigned n = 0;
	CPU_ZERO(set);
	for (int c = 0; c < CPU_SETSIZE && n < max && (!want || n < want); c++) {
		if (!CPU_ISSET(c, &allowed))
			continue;
		cpus[n++] = c;
		CPU_SET(c, set);
	}
	if (want && n < want)
		return -ERANGE;
	return (int)n;
}
