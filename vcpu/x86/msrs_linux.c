#include "vcpu/x86/msrs_linux.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#define MAX_MSRS 4

size_t x86_msrs_linux(struct kvm_msr_entry *out, size_t max)
{
	static const struct kvm_msr_entry list[] = {
		/* Everything write-back, MMIO included: Linux maps MMIO through
		 * PAT (UC-), which wins over a write-back MTRR, and a write-back
		 * default keeps Linux from trimming RAM the MTRRs do not cover. */
		{ .index = MSR_MTRR_DEF_TYPE, .data = MTRR_DEF_TYPE_ENABLE | MTRR_TYPE_WRBACK },
	};
	size_t n = sizeof(list) / sizeof(list[0]);
	if (n > max)
		return 0;
	memcpy(out, list, sizeof(list));
	return n;
}

int x86_msrs_set_result(int r, int err, size_t n)
{
	if (r < 0)
		return err > 0 ? -err : -EIO;
	return (size_t)r == n ? 0 : -EINVAL;
}

int x86_msrs_linux_set(int fd, unsigned vcpu_id)
{
	/* KVM_GET_MSR_INDEX_LIST does not name the MTRRs (it lists the MSRs
	 * that need host support and KVM's own emulated ones; the MTRRs are
	 * served by KVM's common MSR code on every host, and QEMU sets them
	 * whenever CPUID says MTRR, not by that list). So the list would only
	 * skip them wrongly: KVM_SET_MSRS's count is the test, as it stops at
	 * the first MSR it refuses. */
	union {
		struct kvm_msrs h;
		char room[sizeof(struct kvm_msrs) + MAX_MSRS * sizeof(struct kvm_msr_entry)];
	} m;
	memset(&m, 0, sizeof(m));
	size_t n = x86_msrs_linux(m.h.entries, MAX_MSRS);
	m.h.nmsrs = (__u32)n;
	int r = ioctl(fd, KVM_SET_MSRS, &m.h);
	int rc = x86_msrs_set_result(r, errno, n);
	if (rc == -EINVAL)
		fprintf(stderr, "vmm: vCPU %u: KVM_SET_MSRS refused MSR 0x%x = 0x%llx\n", vcpu_id,
			m.h.entries[r].index, (unsigned long long)m.h.entries[r].data);
	return rc;
}
