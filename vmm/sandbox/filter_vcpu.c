/*
 * A vCPU thread, from its filter's install point in vcpu_thread (after
 * KVM_SET_SIGNAL_MASK, before its first slot and KVM_RUN) to its end.
 * KVM: only its own vCPU fd, and only what the run loop, the hypercalls,
 * the emulation fall-backs and the fault report use; nothing that creates
 * or reconfigures.
 */
#include <linux/kvm.h>

#include "vmm/sandbox/seccomp_table.h"

#define VCPU_IOCTL(req, why) SC_ALLOW("ioctl", why, SC_EQ_RT(0, SRC_VCPU_FD), SC_EQ(1, req))

static const struct seccomp_row rows[] = {
	SC_ALLOW("rt_sigtimedwait", "drains a pending kick signal; it is never delivered"),
	VCPU_IOCTL(KVM_RUN, "run the guest"),
	VCPU_IOCTL(KVM_GET_REGS, "hypercall arguments without sync regs; the fault report"),
	VCPU_IOCTL(KVM_GET_SREGS, "the fault report's segment and control registers"),
	VCPU_IOCTL(KVM_GET_MSRS, "where the guest keeps its steal-time record"),
	/* INT3/FWAIT the host's emulator failed on (vcpu/x86/emulation_gaps.c) */
	VCPU_IOCTL(KVM_SET_REGS, "emulation gap: step RIP over INT3/FWAIT"),
	VCPU_IOCTL(KVM_GET_VCPU_EVENTS, "emulation gap: no exception already pending"),
	VCPU_IOCTL(KVM_SET_VCPU_EVENTS, "emulation gap: inject #BP or #MF"),
	VCPU_IOCTL(KVM_GET_FPU, "emulation gap: FWAIT faults (#MF) if an x87 exception is pending"),
};

SECCOMP_TABLE(seccomp_rows_vcpu, "vcpu", rows);

static const struct seccomp_table *const tables[] = { &seccomp_rows_common, &seccomp_rows_vcpu,
						      &seccomp_rows_linux };
const struct seccomp_kind seccomp_kind_vcpu = { "vcpu", tables, sizeof(tables) / sizeof(tables[0]) };
