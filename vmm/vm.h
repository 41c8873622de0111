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
#include "vmm/elf_loader.h"
#include "vmm/kvm.h"
#include "vmm/layout.h"

enum vm_stop {
	VM_STOP_NONE = 0,
	VM_STOP_GUEST_EXIT, /* debug-exit port, or a vCPU exited with non-zero status */
	VM_STOP_FAULT,
	VM_STOP_TIMEOUT,
	VM_STOP_SIGNAL,
};

struct vm_error {
	int status; /* enum vmm_exit_status */
	char msg[256];
};

struct vm {
	const struct vm_config *cfg;
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

	int wake_fd; /* eventfd: a vCPU ended or the VM must stop */
	atomic_int stop; /* enum vm_stop, first reason wins */
	atomic_uint ended;
	atomic_int stop_vcpu;       /* the vCPU that caused the stop, -1 = none */
	atomic_uint guest_status;   /* debug-exit value or failing exit status */
	int stop_signal;
	uint64_t start_ns, end_ns;
};

int vm_create(struct vm *vm, struct kvm_host *kvm, const struct vm_config *cfg, struct vm_error *err);
/* Runs until every vCPU ended; returns the process exit status (enum vmm_exit_status). */
int vm_run(struct vm *vm);
void vm_destroy(struct vm *vm);
/* Asks every vCPU to leave (first reason wins); safe from any thread. */
void vm_request_stop(struct vm *vm, enum vm_stop why, int vcpu, uint32_t guest_status);

#endif
