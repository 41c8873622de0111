#include "vmm/host/kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vmm/host/fd_limit.h"
#include "vmm/host/kvm_diagnose.h"

static int check_ext(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);
	return r < 0 ? 0 : r;
}

/* KVM_GET_SUPPORTED_CPUID wants a buffer big enough and says E2BIG otherwise. */
static struct kvm_cpuid2 *get_supported_cpuid(int fd)
{
	for (unsigned n = 64; n <= 4096; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		if (!c)
			return NULL;
		c->nent = n;
		if (ioctl(fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		free(c);
		if (errno != E2BIG)
			return NULL;
	}
	return NULL;
}

/* The device failed to open or to answer: say why, in words a user can act on. */
static int explain(const char *path, int e, char *msg, unsigned msglen)
{
	struct kvm_diag d;
	if (e == EMFILE) { /* nothing wrong with KVM: this process may open no more files */
		char note[80];
		snprintf(msg, msglen, "%s: %s%s", path, strerror(e), fd_limit_note(e, note, sizeof(note)));
		return -e;
	}
	if (kvm_diagnose(path, "/sys", "/proc", &d, msg, msglen) == KVM_DIAG_USABLE)
		snprintf(msg, msglen, "%s: %s", path, strerror(e)); /* it changed under us */
	return -e;
}

int kvm_host_open(struct kvm_host *kvm, const char *path, char *msg, unsigned msglen)
{
	memset(kvm, 0, sizeof(*kvm));
	kvm->fd = open(path, O_RDWR | O_CLOEXEC);
	if (kvm->fd < 0)
		return explain(path, errno, msg, msglen);
	int r = -ENOTSUP;
	int api = ioctl(kvm->fd, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION) {
		close(kvm->fd);
		kvm->fd = -1;
		return explain(path, api < 0 ? errno : ENOTSUP, msg, msglen);
	}
	if (!check_ext(kvm->fd, KVM_CAP_USER_MEMORY)) {
		snprintf(msg, msglen, "KVM lacks KVM_CAP_USER_MEMORY");
		goto fail;
	}
	kvm->vcpu_mmap_size = ioctl(kvm->fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (kvm->vcpu_mmap_size < (int)sizeof(struct kvm_run)) {
		snprintf(msg, msglen, "KVM_GET_VCPU_MMAP_SIZE failed");
		goto fail;
	}
	int max = check_ext(kvm->fd, KVM_CAP_MAX_VCPUS);
	if (max <= 0)
		max = check_ext(kvm->fd, KVM_CAP_NR_VCPUS);
	kvm->max_vcpus = max > 0 ? (unsigned)max : 4;
	kvm->sync_regs = (check_ext(kvm->fd, KVM_CAP_SYNC_REGS) & KVM_SYNC_X86_REGS) != 0;
	kvm->immediate_exit = check_ext(kvm->fd, KVM_CAP_IMMEDIATE_EXIT) != 0;
	kvm->supported_cpuid = get_supported_cpuid(kvm->fd);
	if (!kvm->supported_cpuid) {
		snprintf(msg, msglen, "KVM_GET_SUPPORTED_CPUID failed: %s", strerror(errno));
		goto fail;
	}
	return 0;
fail:
	close(kvm->fd);
	kvm->fd = -1;
	return r;
}

void kvm_host_close(struct kvm_host *kvm)
{
	free(kvm->supported_cpuid);
	kvm->supported_cpuid = NULL;
	if (kvm->fd >= 0)
		close(kvm->fd);
	kvm->fd = -1;
}
