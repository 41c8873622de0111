/* The host's KVM: open it once, learn what it offers. */
#ifndef VMM_KVM_H
#define VMM_KVM_H

#include <stdbool.h>
#include <linux/kvm.h>

struct kvm_host {
	int fd;
	int vcpu_mmap_size;
	unsigned max_vcpus;
	bool sync_regs;      /* registers arrive in kvm_run at every exit */
	bool immediate_exit;
	struct kvm_cpuid2 *supported_cpuid;
};

/*
 * Opens the KVM device at path. Returns 0 or -errno; msg gets what the host
 * lacks: when the device cannot be used at all, one or two lines ('\n'
 * between) naming the cause and the next step (vmm/host/kvm_diagnose.h).
 */
int kvm_host_open(struct kvm_host *kvm, const char *path, char *msg, unsigned msglen);
void kvm_host_close(struct kvm_host *kvm);

#endif
