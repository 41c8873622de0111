/*
 * A Linux guest's (-k) devices, on both thread kinds: the UART's and
 * virtio-blk's interrupt lines are raised from vCPU threads (a register
 * write) and from the loop (input, a disk completion); a virtio-blk queue
 * kick submits from the vCPU thread, completions resubmit from the loop
 * and the tear-down drains the ring. Rows whose fd is absent (not a Linux
 * guest, no disk) are left out.
 */
#include <linux/kvm.h>

#include "vmm/sandbox/seccomp_table.h"

static const struct seccomp_row rows[] = {
	SC_ALLOW("ioctl", "KVM_IRQ_LINE on the VM fd only: the UART's IRQ 4, virtio-blk's INTA#",
	  SC_EQ_RT(0, SRC_VM_FD), SC_EQ(1, KVM_IRQ_LINE)),
	SC_ALLOW("io_uring_enter", "the virtio-blk backend's ring only", SC_EQ_RT(0, SRC_BLK_URING)),
};

SECCOMP_TABLE(seccomp_rows_linux, "linux", rows);
