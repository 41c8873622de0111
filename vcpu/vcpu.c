#include "vcpu/vcpu.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sched/sched.h"
#include "vcpu/kvm_steal_time.h"
#include "vcpu/x86/emulation_gaps.h"
#include "vcpu/x86/cpuid.h"

static void kick_handler(int sig)
{
	(void)sig; /* its only job is to make KVM_RUN return -EINTR */
}

int vcpu_signals_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0)
		return -errno;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

const char *vcpu_end_name(enum vcpu_end e)
{
	static const char *const n[] = { "running", "exited", "halted", "faulted", "stopped", "host-failed" };
	return e <= VCPU_HOST_FAILED ? n[e] : "?";
}

#ifdef VMM_TEST_HOOKS
/*
 * Test builds only (build/vmm-test): VMM_TEST_KVM_RUN_ERRNO=E makes vCPU 0's
 * third KVM_RUN fail with errno E, as a host that runs out of memory or
 * loses a mapping would, so a test can see such an error end the run as a
 * host error (exit 6) with the vCPU named, not as a guest fault.
 */
static int test_run_errno; /* read by vcpu_create, before any vCPU thread */

static int test_kvm_run(struct vcpu *v, unsigned *calls)
{
	if (test_run_errno > 0 && v->id == 0 && ++*calls == 3) {
		errno = test_run_errno;
		return -1;
	}
	return ioctl(v->fd, KVM_RUN, 0);
}
#endif

static int kvm_run(struct vcpu *v, unsigned *calls)
{
#ifdef VMM_TEST_HOOKS
	return test_kvm_run(v, calls);
#else
	(void)calls;
	return ioctl(v->fd, KVM_RUN, 0);
#endif
}

int vcpu_create(struct vcpu *v, unsigned id, struct vcpu_env *env)
{
	memset(v, 0, sizeof(*v));
#ifdef VMM_TEST_HOOKS
	const char *e = getenv("VMM_TEST_KVM_RUN_ERRNO");
	test_run_errno = e ? atoi(e) : 0;
#endif
	v->id = id;
	v->env = env;
	v->stats.fd = -1;
	v->fd = ioctl(env->vm_fd, KVM_CREATE_VCPU, (unsigned long)id);
	if (v->fd < 0)
		return -errno;
	v->run = mmap(NULL, (size_t)env->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		v->run = NULL;
		return -errno;
	}
	const struct vcpu_guest_hooks *g = env->guest; /* Linux guests */
	struct kvm_cpuid2 *cpuid = g ? g->cpuid(g->opaque, id) : x86_cpuid_for_vcpu(env->supported_cpuid, id);
	if (!cpuid)
		return -ENOMEM;
	int r = ioctl(v->fd, KVM_SET_CPUID2, cpuid) < 0 ? -errno : 0;
	free(cpuid);
	if (r)
		return r;
	r = g ? g->set_entry(g->opaque, v->fd, id) : x86_boot_set_vcpu(v->fd, &env->boot, id);
	if (r)
		return r;
	int khz = ioctl(v->fd, KVM_GET_TSC_KHZ, 0);
	v->tsc_khz = khz > 0 ? (uint64_t)khz : 0;
	if (env->sync_regs)
		v->run->kvm_valid_regs = KVM_SYNC_X86_REGS;
	/* A Linux guest halts inside KVM_RUN; the scheduler reads `blocking`. */
	if (g)
		v->stats_err = kvm_stats_open(v->fd, &v->stats);
	return 0;
}

/* Registers for the report; only the vCPU's own thread may ask (it is not in KVM_RUN). */
static void capture_regs(struct vcpu *v)
{
	v->regs_valid = ioctl(v->fd, KVM_GET_REGS, &v->regs) == 0 &&
			ioctl(v->fd, KVM_GET_SREGS, &v->sregs) == 0;
}

static void end_vcpu(struct vcpu *v, enum vcpu_end how, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void end_vcpu(struct vcpu *v, enum vcpu_end how, const char *fmt, ...)
{
	v->end = how;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(v->fault, sizeof(v->fault), fmt, ap);
		va_end(ap);
	}
	if (how != VCPU_EXITED)
		capture_regs(v);
}

static void handle_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;
	v->exits.io++;
	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size) {
		int r = io_bus_access(v->env->pio, v->id, run->io.port, data, run->io.size, is_write);
		/* Unclaimed ports behave like an empty ISA bus, as on real PCs. */
		if (r < 0 && !is_write)
			memset(data, 0xff, run->io.size);
	}
}

static bool read_hc_args(struct vcpu *v, uint64_t args[4])
{
	struct kvm_regs regs, *r = &regs;
	if (v->env->sync_regs)
		r = &v->run->s.regs.regs;
	else if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0)
		return false;
	args[0] = r->rdi;
	args[1] = r->rsi;
	args[2] = r->rdx;
	args[3] = r->rcx;
	return true;
}

/* Returns false when the vCPU must end. */
static bool handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint64_t addr = run->mmio.phys_addr;
	unsigned len = run->mmio.len;

	if (addr >= VMM_HC_BASE && addr - VMM_HC_BASE < VMM_HC_SIZE) {
		v->exits.hypercall++;
		uint64_t off = addr - VMM_HC_BASE, args[4];
		int64_t ret;
		if (run->mmio.is_write || len != 8 || (off & 7)) {
			atomic_fetch_add(&v->env->hc->errors, 1);
			ret = -VMM_EINVAL;
		} else if (!read_hc_args(v, args)) {
			end_vcpu(v, VCPU_HOST_FAILED, "cannot read registers for hypercall: %s", strerror(errno));
			return false;
		} else {
			struct hc_result res = hc_dispatch(v->env->hc, v->id, off / 8, args);
			if (res.stop) {
				end_vcpu(v, VCPU_STOPPED, "in hypercall %s when the run stopped", hc_name(off / 8));
				return false;
			}
			if (res.exit_vcpu) {
				v->exit_status = res.exit_status;
				end_vcpu(v, VCPU_EXITED, NULL);
				return false;
			}
			ret = res.ret;
		}
		if (!run->mmio.is_write)
			memcpy(run->mmio.data, &ret, len < 8 ? len : 8);
		return true;
	}

	v->exits.mmio++;
	if (io_bus_access(v->env->mmio, v->id, addr, run->mmio.data, len, run->mmio.is_write) == -ENOENT) {
		if (v->env->guest && v->env->guest->pc_bus) { /* Linux guests probe empty MMIO */
			if (!run->mmio.is_write)
				memset(run->mmio.data, 0xff, len < 8 ? len : 8);
			return true;
		}
		end_vcpu(v, VCPU_FAULTED, "%s of %u bytes at unmapped guest address 0x%llx",
			 run->mmio.is_write ? "write" : "read", len, (unsigned long long)addr);
		return false;
	}
	return true;
}

/* One exit; false when the vCPU must end. */
static bool handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	v->exits.total++;
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		handle_io(v);
		return true;
	case KVM_EXIT_MMIO:
		return handle_mmio(v);
	case KVM_EXIT_HLT:
		v->exits.hlt++;
		/* No interrupt controller serves direct-entry guests: a HLT is forever. */
		end_vcpu(v, VCPU_HALTED, NULL);
		return false;
	case KVM_EXIT_SHUTDOWN:
		v->exits.other++;
		end_vcpu(v, VCPU_FAULTED, "shutdown (triple fault)");
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		v->exits.other++;
		end_vcpu(v, VCPU_FAULTED, "VM entry failed, hardware reason 0x%llx",
			 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		if (x86_emulate_failed_insn(v))
			return true;
		v->exits.other++;
		if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION) {
			char insn[64];
			end_vcpu(v, VCPU_FAULTED, "KVM internal error, suberror %u (instruction emulation failed%s)",
				 run->internal.suberror, x86_emulation_insn_text(run, insn, sizeof(insn)));
		} else {
			end_vcpu(v, VCPU_FAULTED, "KVM internal error, suberror %u", run->internal.suberror);
		}
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		v->exits.other++;
		if (v->env->guest && v->env->guest->system_event) /* Linux guests: reset / power-off */
			v->env->guest->system_event(v->env->guest->opaque, v->id, run->system_event.type);
		end_vcpu(v, VCPU_STOPPED, "system event %u", run->system_event.type);
		return false;
	default:
		v->exits.other++;
		end_vcpu(v, VCPU_FAULTED, "unhandled KVM exit reason %u", run->exit_reason);
		return false;
	}
}

/* A kick left pending by a sender must not end the next KVM_RUN for nothing. */
static void drain_kick(void)
{
	sigset_t set;
	struct timespec zero = { 0, 0 };
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
}

int vcpu_unblock_kick_in_run(int vcpu_fd)
{
	sigset_t cur;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	sigdelset(&cur, VCPU_KICK_SIGNAL);
	/* The kernel's sigset is 8 bytes on x86-64; glibc's sigset_t is larger. */
	struct {
		struct kvm_signal_mask m;
		uint8_t set[8];
	} km;
	km.m.len = 8;
	memcpy(km.set, &cur, 8);
	return ioctl(vcpu_fd, KVM_SET_SIGNAL_MASK, &km) < 0 ? -errno : 0;
}

/*
 * The slot goes back. While this thread waits for another, the guest's
 * steal-time record (if it registered one) says the vCPU is preempted, and
 * the time the scheduler held it out is added to its steal time: see
 * kvm_steal_time.h.
 */
/* Waits while the record is unknown are lost to the guest's steal time, so
 * the window stays short; ~100 ioctls a second per vCPU cost nothing. */
#define STEAL_RECHECK_NS (10 * 1000 * 1000ull)

static int yield_slot(struct vcpu *v, struct sched *s, int me)
{
	const struct hc_vm *hc = v->env->hc;
	uint64_t gpa = 0, t0 = sched_now_ns(), held = 0;
	bool st = false;
	/* A guest that registered a record is asked every time (it may move
	 * it); one that has not, every 10 ms: an ioctl per yield is not free. */
	if (hc && hc->mem.n && (v->steal_registered || t0 >= v->steal_recheck_ns)) {
		st = kvm_steal_time_gpa(v->fd, &gpa) == 0 &&
		     kvm_steal_time_mark_preempted(&hc->mem, gpa);
		v->steal_registered = st;
		if (!st)
			v->steal_recheck_ns = t0 + STEAL_RECHECK_NS;
	}
	int r = kvm_steal_time_yield_slot(s, me, &held);
	/* a vCPU that will not run again (the run stops) was not kept waiting */
	if (st && r >= 0 && held && kvm_steal_time_add(&hc->mem, gpa, held))
		v->steal_ns += held;
	return r;
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	char name[16];
	snprintf(name, sizeof(name), "vcpu%u", v->id);
	pthread_setname_np(pthread_self(), name);
	atomic_store(&v->tid, (int)gettid());

	struct sched *s = v->env->sched;
	int me = v->env->sched_base + (int)v->id;
	int r = vcpu_unblock_kick_in_run(v->fd);
	if (r) {
		end_vcpu(v, VCPU_HOST_FAILED, "KVM_SET_SIGNAL_MASK: %s", strerror(-r));
		goto out;
	}
	/* before the filter: it allows timer_settime, not timer_create */
	if (s && v->env->own_tick && (r = sched_vcpu_own_timer(s, me, VCPU_KICK_SIGNAL)) != 0) {
		end_vcpu(v, VCPU_HOST_FAILED, "timer_create: %s", strerror(-r));
		goto out;
	}
	/* seccomp: from here on this thread makes only the calls its filter allows */
	if (v->env->sandbox && (r = v->env->sandbox(v)) != 0) {
		end_vcpu(v, VCPU_HOST_FAILED, "seccomp: cannot install the vCPU filter: %s", strerror(-r));
		goto out;
	}
	/* A vCPU enters guest mode only while it holds a physical-CPU slot. */
	if (s && sched_vcpu_enter(s, me) < 0) {
		end_vcpu(v, VCPU_STOPPED, NULL);
		goto out;
	}
	unsigned runs = 0; /* KVM_RUN calls, for the test hook only */
	for (;;) {
		if (atomic_load_explicit(v->env->stop, memory_order_acquire)) {
			end_vcpu(v, VCPU_STOPPED, NULL);
			break;
		}
		if (kvm_run(v, &runs) < 0) {
			if (errno != EINTR && errno != EAGAIN) {
				end_vcpu(v, VCPU_HOST_FAILED, "KVM_RUN: %s", strerror(errno));
				break;
			}
			/* forced out: a kick for the scheduler, a stop, or its own
			 * timer at its slot's deadline (then it ticks here) */
			v->exits.total++;
			v->exits.intr++;
			drain_kick();
			if (s)
				sched_vcpu_own_tick(s, me);
		} else if (!handle_exit(v)) {
			break;
		}
		/* one atomic load unless the scheduler wants the slot back */
		if (s && sched_vcpu_after_exit(s, me) && yield_slot(v, s, me) < 0) {
			end_vcpu(v, VCPU_STOPPED, NULL);
			break;
		}
	}
out:
	if (s)
		sched_vcpu_done(s, me);
	v->env->ended(v->env->opaque, v);
	return NULL;
}

/*
 * Other vCPUs may kick this one (the scheduler grants it a slot) while the
 * main thread is still in here: thread_started is published with release
 * only once pthread_create has written v->thread, and vcpu_kick reads it with
 * acquire, so a kick sees "not started yet" or the whole handle.
 */
int vcpu_start(struct vcpu *v)
{
	int r = pthread_create(&v->thread, NULL, vcpu_thread, v);
	if (r)
		return -r;
	atomic_store_explicit(&v->thread_started, true, memory_order_release);
	return 0;
}

int vcpu_wait_tid(const struct vcpu *v)
{
	for (int i = 0; i < 100000; i++) {
		int tid = atomic_load(&v->tid);
		if (tid)
			return tid;
		sched_yield();
	}
	return -ETIMEDOUT;
}

/* A vCPU not started yet needs no kick: it reads its state when it starts. */
void vcpu_kick(struct vcpu *v)
{
	if (atomic_load_explicit(&v->thread_started, memory_order_acquire))
		pthread_kill(v->thread, VCPU_KICK_SIGNAL);
}

void vcpu_join(struct vcpu *v)
{
	if (atomic_load_explicit(&v->thread_started, memory_order_acquire))
		pthread_join(v->thread, NULL);
	atomic_store_explicit(&v->thread_started, false, memory_order_release);
}

void vcpu_destroy(struct vcpu *v)
{
	kvm_stats_close(&v->stats);
	if (v->run)
		munmap(v->run, (size_t)v->env->run_size);
	if (v->fd > 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}
