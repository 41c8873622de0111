#include "vcpu/kvm_vmcall_probe.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vcpu/vcpu.h"
#include "vcpu/x86/boot.h"

#define PROBE_MEM (2ull << 20)
#define PROBE_CODE 0x1000
#define PROBE_PT 0x10000
#define PROBE_GDT 0x16000

struct probe {
	int vcpu_fd;
	struct kvm_run *run;
	atomic_int done;
	int rc;          /* KVM_RUN's errno, 0 */
	unsigned exit_reason;
	uint64_t rax;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;
	int r = vcpu_unblock_kick_in_run(p->vcpu_fd);
	p->rc = r ? -r : 0;
	if (!r && ioctl(p->vcpu_fd, KVM_RUN, 0) < 0)
		p->rc = errno;
	p->exit_reason = p->run->exit_reason;
	struct kvm_regs regs;
	if (!p->rc && ioctl(p->vcpu_fd, KVM_GET_REGS, &regs) == 0)
		p->rax = regs.rax;
	atomic_store(&p->done, 1);
	return NULL;
}

static int probe_once(int kvm_fd, unsigned timeout_ms, char *note, size_t notelen)
{
	int vm = -1, vcpu = -1, result = -EIO;
	uint8_t *mem = MAP_FAILED;
	struct kvm_run *run = MAP_FAILED;
	int run_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (vm < 0 || run_size <= 0) {
		result = -errno;
		snprintf(note, notelen, "VMCALL probe: cannot create a scratch VM: %s", strerror(errno));
		goto out;
	}
	mem = mmap(NULL, PROBE_MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		result = -ENOMEM;
		snprintf(note, notelen, "VMCALL probe: out of memory");
		goto out;
	}
	struct kvm_userspace_memory_region region = { .slot = 0, .memory_size = PROBE_MEM,
						      .userspace_addr = (uint64_t)(uintptr_t)mem };
	/* mov eax, 1 (KVM_HC_VAPIC_POLL_IRQ); vmcall; hlt */
	static const uint8_t code[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x01, 0xc1, 0xf4 };
	memcpy(mem + PROBE_CODE, code, sizeof(code));
	struct x86_boot b = { .entry = PROBE_CODE, .pt_gpa = PROBE_PT, .gdt_gpa = PROBE_GDT };
	x86_boot_write_tables(mem, &b);
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0 ||
	    (vcpu = ioctl(vm, KVM_CREATE_VCPU, 0)) < 0 ||
	    (run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0)) == MAP_FAILED) {
		result = -errno;
		snprintf(note, notelen, "VMCALL probe: cannot set up the scratch vCPU: %s", strerror(errno));
		goto out;
	}
	int r = x86_boot_set_vcpu(vcpu, &b, 0);
	if (r) {
		result = r;
		snprintf(note, notelen, "VMCALL probe: cannot set the scratch vCPU's registers: %s", strerror(-r));
		goto out;
	}

	struct probe p = { .vcpu_fd = vcpu, .run = run };
	pthread_t t;
	r = pthread_create(&t, NULL, probe_thread, &p);
	if (r) {
		result = -r;
		snprintf(note, notelen, "VMCALL probe: no thread: %s", strerror(r));
		goto out;
	}
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	bool timed_out = false;
	for (;;) {
		if (atomic_load(&p.done))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms >= (long)timeout_ms) {
			timed_out = true;
			pthread_kill(t, VCPU_KICK_SIGNAL); /* ends KVM_RUN with EINTR; repeated until it does */
		}
		struct timespec pause = { 0, 1000000 };
		nanosleep(&pause, NULL);
	}
	pthread_join(t, NULL);
	if (!timed_out && !p.rc && p.exit_reason == KVM_EXIT_HLT && p.rax == 0) {
		result = 1;
		snprintf(note, notelen, "VMCALL at CPL0 completes here (KVM_HC_VAPIC_POLL_IRQ returned 0)");
	} else if (timed_out || p.rc == EINTR) {
		result = 0;
		snprintf(note, notelen, "VMCALL at CPL0 did not complete within %u ms on this host", timeout_ms);
	} else {
		result = 0;
		snprintf(note, notelen, "VMCALL at CPL0 misbehaves here (KVM_RUN %s, exit %u, rax 0x%llx)",
			 p.rc ? strerror(p.rc) : "ok", p.exit_reason, (unsigned long long)p.rax);
	}
out:
	if (run != MAP_FAILED)
		munmap(run, (size_t)run_size);
	if (vcpu >= 0)
		close(vcpu);
	if (mem != MAP_FAILED)
		munmap(mem, PROBE_MEM);
	if (vm >= 0)
		close(vm);
	return result;
}

int kvm_vmcall_probe(int kvm_fd, unsigned timeout_ms, char *note, size_t notelen)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int cached = -1000;
	static char cached_note[200];
	pthread_mutex_lock(&lock);
	if (cached == -1000) {
		cached = probe_once(kvm_fd, timeout_ms, cached_note, sizeof(cached_note));
	}
	snprintf(note, notelen, "%s", cached_note);
	int r = cached;
	pthread_mutex_unlock(&lock);
	return r;
}
