/* One guest: its KVM VM, memory, devices, vCPUs, and the outcome of its run. */
#ifndef VMM_VM_H
#define VMM_VM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/debug_exit.h"
#include "devices/io_bus.h"
#include "devices/uart8250.h"
#include "hypercalls/hypercalls.h"
#include "vcpu/vcpu.h"
#include "vmm/config.h"
#include "vmm/boot/elf_loader.h"
#include "vmm/host/kvm.h"
#include "vmm/boot/layout.h"
#include "vmm/core/prepare.h"

enum vm_stop {
	VM_STOP_NONE = 0,
	VM_STOP_GUEST_EXIT, /* debug-exit port, or a vCPU exited with non-zero status */
	VM_STOP_FAULT,
	VM_STOP_TIMEOUT,
	VM_STOP_SIGNAL,
	VM_STOP_DEADLOCK,   /* every vCPU waits for a kick that cannot come */
	VM_STOP_HOST_ERROR, /* the host failed the run mid-way (a refused KVM_IRQ_LINE, a device fd the loop cannot poll): exit 6 */
};

/*
 * What every VM of one run shares: the reason to stop (first one wins) and the
 * eventfd that wakes the event loop. Any VM's stop stops the whole run.
 */
struct run_ctl {
	int wake_fd;
	atomic_int stop;          /* enum vm_stop */
	atomic_int stop_vm, stop_vcpu;
	atomic_uint guest_status; /* debug-exit value or failing exit status */
	atomic_uint ended;        /* vCPU threads that have ended, all VMs */
	int stop_signal;
};

/* Asks every vCPU of the run to leave (first reason wins); safe from any thread. */
void run_request_stop(struct run_ctl *ctl, enum vm_stop why, int vm, int vcpu, uint32_t guest_status);

struct vm_error {
	int status; /* enum vmm_exit_status */
	char msg[256];
};

/* Fills err (one line for the user, and the exit status it deserves); returns code. */
int vm_error_set(struct vm_error *err, int status, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* An fd the event loop watches for a device (e.g. disk completions). */
struct vm_poller {
	int fd;
	void (*fn)(void *ctx); /* called in the event loop when fd is readable */
	void *ctx;
};
#define VM_MAX_POLLERS 4

struct vm {
	unsigned id;
	struct run_ctl *ctl;
	const struct vm_config *cfg;
	const struct vm_inputs *in; /* the image and files, read and checked before KVM */
	struct kvm_host *kvm;
	int fd;
	uint8_t *mem;
	struct guest_layout layout;
	struct elf_image image;
	uint64_t tsc_hz;

	struct io_bus pio, mmio;
	struct uart8250 uart;
	struct debug_exit dbg;
	struct hc_vm hc;
	struct vcpu_env env;
	struct vcpu *vcpus;
	unsigned nvcpus_created;
	uint64_t start_ns, end_ns;
	struct vm_linux *linux_guest; /* Linux guests (-k): vmm/core/vm_linux.c; NULL otherwise */
	struct vm_poller pollers[VM_MAX_POLLERS];
	unsigned npollers;
	atomic_bool irq_line_failed; /* vm_irq_line said so already */
};

int vm_create(struct vm *vm, unsigned id, struct kvm_host *kvm, const struct vm_config *cfg,
	      const struct vm_inputs *in, struct run_ctl *ctl, struct vm_error *err);
void vm_destroy(struct vm *vm);
/* Before run_execute: have the event loop call fn whenever fd is readable. */
int vm_add_poller(struct vm *vm, int fd, void (*fn)(void *ctx), void *ctx);
/*
 * KVM_IRQ_LINE on the in-kernel irqchip, from a device model on any thread.
 * A refused line would be an interrupt lost without a word: it ends the run
 * as a host error, said once on stderr. 0 or -errno.
 */
int vm_irq_line(struct vm *vm, unsigned irq, int level);
/* The vCPU's guest-visible page, by this VM's own vCPU index. */
struct vmm_shared_page *vm_shared_page(const struct vm *vm, unsigned vcpu);

#endif
