/*
 * One thread per vCPU running the KVM_RUN loop and dispatching its exits.
 * A vCPU is forced out of KVM_RUN by VCPU_KICK_SIGNAL, which is blocked in
 * every thread except while that vCPU is inside KVM_RUN (KVM_SET_SIGNAL_MASK):
 * a kick sent while the thread is outside stays pending and ends the next
 * KVM_RUN at once, so no kick is ever lost.
 */
#ifndef VMM_VCPU_H
#define VMM_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/io_bus.h"
#include "hypercalls/hypercalls.h"
#include "vcpu/kvm_stats.h"
#include "vcpu/x86/boot.h"

#define VCPU_KICK_SIGNAL (SIGRTMIN + 0)

struct sched;

enum vcpu_end {
	VCPU_RUNNING = 0,
	VCPU_EXITED,  /* the guest said exit (hypercall) */
	VCPU_HALTED,  /* HLT with interrupts off: this vCPU will never run again */
	VCPU_FAULTED, /* shutdown, emulation failure, bad access: see fault */
	VCPU_STOPPED, /* the VMM stopped it (timeout, signal, another vCPU's fault) */
	VCPU_HOST_FAILED, /* the host failed it: KVM_RUN or the thread's set-up returned an
			   * error no guest causes (EFAULT, ENOMEM, EBUSY...): exit 6, not 3 */
};

struct vcpu_exit_counts {
	uint64_t total, io, mmio, hypercall, hlt, intr, other;
};

struct vcpu;

/* Linux guests (vmm/core/vm_linux.c): how their vCPUs differ from the
 * direct-entry guests'. env->guest is NULL for the bundled firmware. */
struct vcpu_guest_hooks {
	struct kvm_cpuid2 *(*cpuid)(void *opaque, unsigned vcpu_id); /* malloc'd */
	int (*set_entry)(void *opaque, int vcpu_fd, unsigned vcpu_id);
	/* KVM_EXIT_SYSTEM_EVENT (shutdown / reset); the vCPU then ends STOPPED */
	void (*system_event)(void *opaque, unsigned vcpu_id, uint32_t type);
	bool pc_bus; /* unclaimed MMIO reads all-ones and drops writes, as on a PC */
	void *opaque;
};

/* What every vCPU thread shares: the VM, its buses, and how to say "I ended". */
struct vcpu_env {
	int vm_fd;
	int run_size;
	bool sync_regs;
	const struct kvm_cpuid2 *supported_cpuid;
	struct x86_boot boot;
	struct io_bus *pio;
	struct io_bus *mmio;
	struct hc_vm *hc;
	atomic_int *stop; /* non-zero: every vCPU leaves KVM_RUN and ends */
	struct sched *sched; /* the co-scheduler, or NULL: always runnable */
	bool own_tick;       /* its slot's deadlines on each vCPU thread's own timer */
	int sched_base;      /* this VM's vCPU 0 in the scheduler's numbering */
	void (*ended)(void *opaque, struct vcpu *v);
	void (*guest_exit)(void *opaque, unsigned vcpu, uint32_t status);
	void *opaque;
	const struct vcpu_guest_hooks *guest; /* Linux guests; NULL otherwise */
	/* seccomp: called by the vCPU thread on itself after its set-up, before
	 * its first KVM_RUN; 0 or -errno (the vCPU then faults). NULL: none. */
	int (*sandbox)(struct vcpu *v);
};

struct vcpu {
	unsigned id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	atomic_bool thread_started; /* release after pthread_create wrote thread (vcpu_start) */
	atomic_int tid; /* the thread's kernel id once it runs (per-thread perf events) */
	struct vcpu_env *env;
	uint64_t tsc_khz;

	enum vcpu_end end;
	uint32_t exit_status;
	char fault[160];
	struct vcpu_exit_counts exits;
	/* Linux guests: KVM's binary stats (halts happen inside KVM_RUN); fd -1
	 * otherwise, or where the kernel has none (stats_err says why). */
	struct kvm_vcpu_stats stats;
	int stats_err;
	uint64_t steal_ns; /* added to the guest's steal-time record while held out of a slot */
	bool steal_registered;     /* the guest had a record at the last look */
	uint64_t steal_recheck_ns; /* when to look again if it had none */
	/* instructions the host's emulator failed on, done by emulate_failed_insn() */
	uint64_t int3_emulated, fwait_emulated;
	bool regs_valid; /* regs/sregs captured when the vCPU ended abnormally */
	struct kvm_regs regs;
	struct kvm_sregs sregs;
};

/* Blocks VCPU_KICK_SIGNAL in the calling thread and installs its handler; call before any thread. */
int vcpu_signals_init(void);
/* KVM_SET_SIGNAL_MASK: the calling thread's mask, less the kick signal, while in KVM_RUN. */
int vcpu_unblock_kick_in_run(int vcpu_fd);
int vcpu_create(struct vcpu *v, unsigned id, struct vcpu_env *env);
int vcpu_start(struct vcpu *v);
void vcpu_kick(struct vcpu *v);
/* The started vCPU thread's kernel id (it publishes it as it starts), or -ETIMEDOUT. */
int vcpu_wait_tid(const struct vcpu *v);
void vcpu_join(struct vcpu *v);
void vcpu_destroy(struct vcpu *v);
const char *vcpu_end_name(enum vcpu_end e);

#endif
