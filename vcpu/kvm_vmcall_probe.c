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

/* A throw-away VM with one vCPU, so the probe cannot disturb a real guest. */
struct scratch {
	int vm, vcpu, run_size;
	uint8_t *mem;
	struct kvm_run *run;
};

static void scratch_close(struct scratch *s)
{
	if (s->run != MAP_FAILED)
		munmap(s->run, (size_t)s->run_size);
	if (s->vcpu >= 0)
		close(s->vcpu);
	if (s->mem != MAP_FAILED)
		munmap(s->mem, PROBE_MEM);
	if (s->vm >= 0)
		close(s->vm);
}

/* The VM's memory holds only the VMCALL and the tables to reach it in long mode. */
static int scratch_open(int kvm_fd, struct scratch *s, char *note, size_t notelen)
{
	*s = (struct scratch){ .vm = -1, .vcpu = -1, .mem = MAP_FAILED, .run = MAP_FAILED };
	s->run_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	s->vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (s->vm < 0 || s->run_size <= 0) {
		int e = errno;
		snprintf(note, notelen, "VMCALL probe: cannot create a scratch VM: %s", strerror(e));
		return -e;
	}
	s->mem = mmap(NULL, PROBE_MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED) {
		snprintf(note, notelen, "VMCALL probe: out of memory");
		return -ENOMEM;
	}
	struct kvm_userspace_memory_region region = { .slot = 0, .memory_size = PROBE_MEM,
						      .userspace_addr = (uint64_t)(uintptr_t)s->mem };
	/* mov eax, 1 (KVM_HC_VAPIC_POLL_IRQ); vmcall; hlt */
	static const uint8_t code[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x01, 0xc1, 0xf4 };
	memcpy(s->mem + PROBE_CODE, code, sizeof(code));
	struct x86_boot b = { .entry = PROBE_CODE, .pt_gpa = PROBE_PT, .gdt_gpa = PROBE_GDT };
	struct guest_mem gm;
	guest_mem_init_flat(&gm, s->mem, PROBE_MEM);
	x86_boot_write_tables(&gm, &b); /* cannot fail: PROBE_PT and PROBE_GDT lie inside PROBE_MEM */
	if (ioctl(s->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0 ||
	    (s->vcpu = ioctl(s->vm, KVM_CREATE_VCPU, 0)) < 0 ||
	    (s->run = mmap(NULL, (size_t)s->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->vcpu, 0)) ==
		    MAP_FAILED) {
		int e = errno;
		snprintf(note, notelen, "VMCALL probe: cannot set up the scratch vCPU: %s", strerror(e));
		return -e;
	}
	int r = x86_boot_set_vcpu(s->vcpu, &b, 0);
	if (r)
		snprintf(note, notelen, "VMCALL probe: cannot set the scratch vCPU's registers: %s", strerror(-r));
	return r;
}

/*
 * KVM_RUN runs on its own thread so that a host where the VMCALL never
 * completes costs timeout_ms, not a hang; *timed_out says it was kicked.
 */
static int run_with_timeout(struct probe *p, unsigned timeout_ms, bool *timed_out, char *note,
			    size_t notelen)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, probe_thread, p);
	if (r) {
		snprintf(note, notelen, "VMCALL probe: no thread: %s", strerror(r));
		return -r;
	}
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	*timed_out = false;
	for (;;) {
		if (atomic_load(&p->done))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms >= (long)timeout_ms) {
			*timed_out = true;
			pthread_kill(t, VCPU_KICK_SIGNAL); /* ends KVM_RUN with EINTR; repeated until it does */
		}
		struct timespec pause = { 0, 1000000 };
		nanosleep(&pause, NULL);
	}
	pthread_join(t, NULL);
	return 0;
}

/* 1 when the VMCALL returned to the guest with rax 0 and it halted; else 0, with why. */
static int judge(const struct probe *p, bool timed_out, unsigned timeout_ms, char *note,
		 size_t notelen)
{
	if (!timed_out && !p->rc && p->exit_reason == KVM_EXIT_HLT && p->rax == 0) {
		snprintf(note, notelen, "VMCALL at CPL0 completes here (KVM_HC_VAPIC_POLL_IRQ returned 0)");
		return 1;
	}
	if (timed_out || p->rc == EINTR)
		snprintf(note, notelen, "VMCALL at CPL0 did not complete within %u ms on this host", timeout_ms);
	else
		snprintf(note, notelen, "VMCALL at CPL0 misbehaves here (KVM_RUN %s, exit %u, rax 0x%llx)",
			 p->rc ? strerror(p->rc) : "ok", p->exit_reason, (unsigned long long)p->rax);
	return 0;
}

static int probe_once(int kvm_fd, unsigned timeout_ms, char *note, size_t notelen)
{
	struct scratch s;
	int result = scratch_open(kvm_fd, &s, note, notelen);
	if (!result) {
		struct probe p = { .vcpu_fd = s.vcpu, .run = s.run };
		bool timed_out;
		result = run_with_timeout(&p, timeout_ms, &timed_out, note, notelen);
		if (!result)
			result = judge(&p, timed_out, timeout_ms, note, notelen);
	}
	scratch_close(&s);
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
