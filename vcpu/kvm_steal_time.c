#include "vcpu/kvm_steal_time.h"

#include <asm/kvm_para.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stddef.h>
#include <sys/ioctl.h>

#define ST_SIZE sizeof(struct kvm_steal_time)

int kvm_steal_time_gpa(int vcpu_fd, uint64_t *gpa)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m = { .hdr.nmsrs = 1, .e.index = MSR_KVM_STEAL_TIME };
	int n = ioctl(vcpu_fd, KVM_GET_MSRS, &m);
	if (n < 0)
		return -errno;
	if (n != 1)
		return -EOPNOTSUPP;
	if (!(m.e.data & 1)) /* KVM_MSR_ENABLED */
		return -ENOENT;
	*gpa = m.e.data & KVM_STEAL_VALID_BITS;
	return 0;
}

/* KVM itself refuses a record that is not 64-byte aligned (the MSR's low
 * bits are flags), so we never write one either. */
static struct kvm_steal_time *record(const struct guest_mem *m, uint64_t gpa)
{
	return gpa % 64 ? NULL : guest_mem_ptr(m, gpa, ST_SIZE);
}

bool kvm_steal_time_mark_preempted(const struct guest_mem *m, uint64_t gpa)
{
	struct kvm_steal_time *st = record(m, gpa);
	if (!st)
		return false;
	/* an OR: the guest may be setting KVM_VCPU_FLUSH_TLB beside it */
	__atomic_fetch_or(&st->preempted, KVM_VCPU_PREEMPTED, __ATOMIC_SEQ_CST);
	return true;
}

bool kvm_steal_time_add(const struct guest_mem *m, uint64_t gpa, uint64_t ns)
{
	struct kvm_steal_time *st = record(m, gpa);
	if (!st)
		return false;
	/* odd version while it changes, as KVM does: a reader retries */
	uint32_t ver = __atomic_load_n(&st->version, __ATOMIC_RELAXED);
	__atomic_store_n(&st->version, ver | 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&st->steal, __atomic_load_n(&st->steal, __ATOMIC_RELAXED) + ns, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&st->version, (ver | 1) + 1, __ATOMIC_RELEASE);
	return true;
}

int kvm_steal_time_yield_slot(struct sched *s, int v, uint64_t *held_ns)
{
	uint64_t t0 = sched_now_ns();
	int r = sched_vcpu_yield_slot(s, v);
	uint64_t granted = r < 0 ? t0 : sched_vcpu_granted_ns(s, v);
	/* not from t0 to now: the wake-up after the grant is KVM's to count */
	*held_ns = granted > t0 ? granted - t0 : 0;
	return r;
}
