#include "hypercalls/pv_calls.h"

#include <errno.h>
#include <sched.h>

/* A guest vCPU number, or -1 ("any"), as the scheduler's global index; -2 if invalid. */
static int target_index(const struct hc_vm *vm, uint64_t target, bool allow_any)
{
	if (allow_any && (int64_t)target == -1)
		return -1;
	if (target >= vm->ncpus)
		return -2;
	return vm->sched_base + (int)target;
}

/* The scheduler said stop: end this vCPU, answer nothing. */
static struct hc_result stopped(int r)
{
	return (struct hc_result){ .ret = r, .stop = r };
}

struct hc_result hc_wait(struct hc_vm *vm, unsigned vcpu, uint64_t gpa, uint64_t expected, uint64_t timeout_ns)
{
	if (!(vm->pv_features & VMM_PV_WAIT_KICK) || !vm->sched_ops)
		return hc_bad(vm, vcpu, VMM_HC_WAIT, VMM_ENOSYS, "wait/kick not offered (--pv-spinlock off)");
	if (gpa & 3)
		return hc_bad(vm, vcpu, VMM_HC_WAIT, VMM_EINVAL, "address not 4-byte aligned");
	const uint8_t *p = guest_mem_ptr(&vm->mem, gpa, 4);
	if (!p)
		return hc_bad(vm, vcpu, VMM_HC_WAIT, VMM_EFAULT, "address outside guest memory");
	/*
	 * A kick between this look and the sleep is not lost: the scheduler keeps
	 * it pending and its wait returns at once.
	 */
	if (__atomic_load_n((const uint32_t *)p, __ATOMIC_SEQ_CST) != (uint32_t)expected)
		return (struct hc_result){ .ret = 1 };
	int r = vm->sched_ops->wait(vm->sched, vm->sched_base + (int)vcpu, timeout_ns);
	if (r == -ETIMEDOUT)
		return (struct hc_result){ .ret = -VMM_ETIMEDOUT };
	if (r < 0)
		return stopped(r);
	return (struct hc_result){ 0 };
}

struct hc_result hc_kick(struct hc_vm *vm, unsigned vcpu, uint64_t target)
{
	if (!(vm->pv_features & VMM_PV_WAIT_KICK) || !vm->sched_ops)
		return hc_bad(vm, vcpu, VMM_HC_KICK, VMM_ENOSYS, "wait/kick not offered (--pv-spinlock off)");
	int t = target_index(vm, target, false);
	if (t < 0)
		return hc_bad(vm, vcpu, VMM_HC_KICK, VMM_ESRCH, "no such vCPU");
	int r = vm->sched_ops->kick(vm->sched, vm->sched_base + (int)vcpu, t);
	return r < 0 ? stopped(r) : (struct hc_result){ 0 };
}

struct hc_result hc_yield(struct hc_vm *vm, unsigned vcpu, uint64_t nr, uint64_t target)
{
	uint32_t need = nr == VMM_HC_SPIN ? VMM_PV_SPIN_EXIT : VMM_PV_YIELD;
	if (!(vm->pv_features & need))
		return hc_bad(vm, vcpu, nr, VMM_ENOSYS,
			      nr == VMM_HC_SPIN ? "spin not offered (--spin-detect yield)" : "yield_to not offered");
	int t = target_index(vm, target, true);
	if (t == -2)
		return hc_bad(vm, vcpu, nr, VMM_ESRCH, "no such vCPU");
	if (vm->host_yield || !vm->sched_ops) {
		sched_yield(); /* what KVM's PV sched-yield amounts to on a host scheduler */
		return (struct hc_result){ 0 };
	}
	int me = vm->sched_base + (int)vcpu, r;
	if (nr == VMM_HC_YIELD_TO && t < 0)
		r = vm->sched_ops->safe_point(vm->sched, me); /* "I left my lock region" */
	else
		r = vm->sched_ops->spin(vm->sched, me, t);
	return r < 0 ? stopped(r) : (struct hc_result){ 0 };
}
