/*
 * The MSRs a PC's firmware leaves programmed and a Linux guest expects, set
 * on every vCPU before it runs: the MTRRs' default memory type (write-back,
 * enabled), as Firecracker does. Without it Linux finds the MTRRs disabled
 * and turns PAT off with them.
 */
#ifndef VMM_VCPU_X86_MSRS_LINUX_H
#define VMM_VCPU_X86_MSRS_LINUX_H

#include <linux/kvm.h>
#include <stddef.h>

#define MSR_MTRR_DEF_TYPE 0x2ffu
#define MTRR_DEF_TYPE_ENABLE (1u << 11) /* E; FE (bit 10) stays 0: no fixed ranges */
#define MTRR_TYPE_WRBACK 6u

/* The list, into out (room for max); returns how many, or 0 if max is too small. */
size_t x86_msrs_linux(struct kvm_msr_entry *out, size_t max);

/* KVM_SET_MSRS's answer r for n entries: 0 when all were set, else -errno (a
 * refused entry, which KVM reports as a short count, is -EINVAL). */
int x86_msrs_set_result(int r, int err, size_t n);

/* Sets the list on a vCPU; a refused MSR is named on stderr and is an error. */
int x86_msrs_linux_set(int vcpu_fd, unsigned vcpu_id);

#endif
