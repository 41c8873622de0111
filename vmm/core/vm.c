#include "vmm/core/vm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devices/null_mmio.h"
#include "vmm/errors.h"
#include "vmm/host/fd_limit.h"
#include "vmm/boot/fdt_build.h"
#include "vmm/core/vm_linux.h"

int vm_error_set(struct vm_error *err, int status, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	size_t at = strlen(err->msg);
	fd_limit_note(code, err->msg + at, sizeof(err->msg) - at);
	err->status = status;
	return code;
}
static void run_ctl_wake(struct run_ctl *ctl)
{
	uint64_t one = 1;
	if (write(ctl->wake_fd, &one, sizeof(one)) < 0) {
		/* the eventfd counter cannot overflow in practice; nothing else to do */
	}
}

void run_request_stop(struct run_ctl *ctl, enum vm_stop why, int vm, int vcpu, uint32_t guest_status)
{
	int none = VM_STOP_NONE;
	if (atomic_compare_exchange_strong(&ctl->stop, &none, (int)why)) {
		atomic_store(&ctl->stop_vm, vm);
		atomic_store(&ctl->stop_vcpu, vcpu);
		atomic_store(&ctl->guest_status, guest_status);
	}
	run_ctl_wake(ctl);
}

int vm_irq_line(struct vm *vm, unsigned irq, int level)
{
	struct kvm_irq_level line = { .irq = irq, .level = (uint32_t)level };
	if (ioctl(vm->fd, KVM_IRQ_LINE, &line) == 0)
		return 0;
	int e = errno;
	bool first = !atomic_exchange(&vm->irq_line_failed, true);
	if (first) /* fprintf: stderr is allowed by every seccomp filter */
		fprintf(stderr, "vmm: KVM_IRQ_LINE (GSI %u, level %d): %s; the interrupt is lost, the run ends\n", irq,
			level, strerror(e));
	run_request_stop(vm->ctl, VM_STOP_HOST_ERROR, (int)vm->id, -1, 0);
	return -e;
}

int vm_add_poller(struct vm *vm, int fd, void (*fn)(void *ctx), void *ctx)
{
	if (fd < 0)
		return -EBADF;
	if (vm->npollers == VM_MAX_POLLERS)
		return -ENOSPC;
	vm->pollers[vm->npollers++] = (struct vm_poller){ fd, fn, ctx };
	return 0;
}

struct vmm_shared_page *vm_shared_page(const struct vm *vm, unsigned vcpu)
{
	return (struct vmm_shared_page *)(vm->mem + vm->layout.shared_gpa + (uint64_t)vcpu * PAGE_SIZE);
}

static void console_out(void *opaque, const char *buf, unsigned len)
{
	const struct vm *vm = opaque;
	if (vm->cfg->quiet)
		return;
	while (len) {
		ssize_t n = write(STDOUT_FILENO, buf, len);
		if (n <= 0)
			return;
		buf += n;
		len -= (unsigned)n;
	}
}

static void uart_out(void *opaque, const char *buf, unsigned len)
{
	console_out(opaque, buf, len);
}

static void on_debug_exit(void *opaque, unsigned vcpu, uint32_t status)
{
	struct vm *vm = opaque;
	run_request_stop(vm->ctl, VM_STOP_GUEST_EXIT, (int)vm->id, (int)vcpu, status);
}

static void on_vcpu_ended(void *opaque, struct vcpu *v)
{
	struct vm *vm = opaque;
	/* A vCPU's failure ends the run: its siblings would wait on it forever. */
	if (v->end == VCPU_FAULTED)
		run_request_stop(vm->ctl, VM_STOP_FAULT, (int)vm->id, (int)v->id, 0);
	else if (v->end == VCPU_HOST_FAILED) {
		/* not the guest's doing: the run's status says host error (6) */
		fprintf(stderr, "vmm: vCPU %u: %s; a host error, the run ends\n", v->id, v->fault);
		run_request_stop(vm->ctl, VM_STOP_HOST_ERROR, (int)vm->id, (int)v->id, 0);
	}
	else if (v->end == VCPU_EXITED && v->exit_status)
		run_request_stop(vm->ctl, VM_STOP_GUEST_EXIT, (int)vm->id, (int)v->id, v->exit_status);
	atomic_fetch_add(&vm->ctl->ended, 1);
	run_ctl_wake(vm->ctl);
}

/* The ELF vm_inputs_prepare read and validated for this layout. */
static void load_image(struct vm *vm)
{
	vm->image = vm->in->elf;
	elf_copy_segments(vm->in->image, vm->mem);
}

static int setup_devices(struct vm *vm)
{
	uart8250_init(&vm->uart, uart_out, vm);
	vm->dbg = (struct debug_exit){ on_debug_exit, vm };
	int r = io_bus_register(&vm->pio, UART_COM1_BASE, UART_NREGS, uart8250_io, &vm->uart, "uart8250");
	if (!r)
		r = io_bus_register(&vm->pio, VMM_DEBUG_EXIT_PORT, 4, debug_exit_io, &vm->dbg, "debug-exit");
	if (!r)
		r = io_bus_register(&vm->mmio, VMM_NULL_MMIO_BASE, VMM_NULL_MMIO_SIZE, null_mmio_io, NULL, "null");
	return r;
}

static int setup_memory(struct vm *vm, struct vm_error *err)
{
	const struct vm_config *cfg = vm->cfg;
	vm->layout = vm->in->layout;
	vm->mem = mmap(NULL, cfg->mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm->mem == MAP_FAILED) {
		vm->mem = NULL;
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "cannot allocate %lluM of guest memory: %s",
			    (unsigned long long)(cfg->mem_bytes >> 20), strerror(errno));
	}
	madvise(vm->mem, cfg->mem_bytes, MADV_HUGEPAGE);
	struct kvm_userspace_memory_region region = {
		.slot = 0, .guest_phys_addr = 0, .memory_size = cfg->mem_bytes,
		.userspace_addr = (uint64_t)(uintptr_t)vm->mem,
	};
	if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
	return 0;
}

/* The guest's device tree, and the shared pages stamped with their owner. */
static int setup_guest_data(struct vm *vm, struct vm_error *err)
{
	struct fdt_guest_info info = { vm->cfg, &vm->layout, vm->tsc_hz, vm->id, fdt_pv_features(vm->cfg) };
	int r = fdt_build(vm->mem + vm->layout.fdt_gpa, LAYOUT_FDT_MAX, &info);
	if (r < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOSPC, "device tree: libfdt error %d", r);
	for (unsigned i = 0; i < vm->cfg->ncpus; i++) {
		struct vmm_shared_page *p = vm_shared_page(vm, i);
		p->abi_version = VMM_ABI_VERSION;
		p->vcpu_id = i;
		p->waiting_for = -1;
	}
	return 0;
}

static int create_vcpus(struct vm *vm, struct vm_error *err)
{
	const struct vm_config *cfg = vm->cfg;
	vm->env = (struct vcpu_env){
		.vm_fd = vm->fd, .run_size = vm->kvm->vcpu_mmap_size, .sync_regs = vm->kvm->sync_regs,
		.supported_cpuid = vm->kvm->supported_cpuid,
		.boot = { .entry = vm->image.entry, .arg0 = vm->layout.fdt_gpa, .pt_gpa = vm->layout.pt_gpa,
			  .gdt_gpa = vm->layout.gdt_gpa },
		.pio = &vm->pio, .mmio = &vm->mmio, .hc = &vm->hc, .stop = &vm->ctl->stop,
		.ended = on_vcpu_ended, .opaque = vm,
		.guest = vm->linux_guest ? &vm->linux_guest->hooks : NULL, /* Linux guests */
	};
	if (x86_boot_write_tables(&vm->hc.mem, &vm->env.boot))
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -EFAULT, "the boot tables lie outside guest memory");
	vm->vcpus = calloc(cfg->ncpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < cfg->ncpus; i++) {
		int r = vcpu_create(&vm->vcpus[i], i, &vm->env);
		vm->nvcpus_created = i + 1;
		if (r)
			return vm_error_set(err, VMM_EXIT_HOST_ERROR, r, "cannot create vCPU %u: %s", i, strerror(-r));
	}
	/* All vCPUs share one TSC rate; the guest's clock is only as good as this. */
	vm->tsc_hz = vm->vcpus[0].tsc_khz * 1000;
	if (!vm->tsc_hz)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOTSUP, "KVM_GET_TSC_KHZ gave no TSC frequency");
	return 0;
}

int vm_create(struct vm *vm, unsigned id, struct kvm_host *kvm, const struct vm_config *cfg,
	      const struct vm_inputs *in, struct run_ctl *ctl, struct vm_error *err)
{
	memset(vm, 0, sizeof(*vm));
	vm->id = id;
	vm->ctl = ctl;
	vm->cfg = cfg;
	vm->in = in;
	vm->kvm = kvm;
	vm->fd = -1;

	if (cfg->ncpus > kvm->max_vcpus)
		return vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "--cpus: %u vCPUs requested, KVM allows at most %u",
			    cfg->ncpus, kvm->max_vcpus);
	vm->fd = ioctl(kvm->fd, KVM_CREATE_VM, 0);
	if (vm->fd < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "KVM_CREATE_VM: %s", strerror(errno));

	int r = setup_memory(vm, err);
	if (!r && cfg->kernel_path)
		r = vm_linux_load(vm, err); /* Linux guests: vm_linux.c */
	else if (!r)
		load_image(vm);
	if (!r && setup_devices(vm))
		r = vm_error_set(err, VMM_EXIT_HOST_ERROR, -EEXIST, "device ports overlap");
	if (!r && vm->linux_guest)
		r = vm_linux_devices(vm, err); /* irqchip, PIT, PC ports: before the vCPUs */
	if (r)
		return r;

	vm->hc = (struct hc_vm){ .ncpus = cfg->ncpus, .console = console_out, .opaque = vm };
	guest_mem_init_flat(&vm->hc.mem, vm->mem, cfg->mem_bytes);
	vm->hc.reports = calloc(cfg->ncpus, sizeof(*vm->hc.reports));
	vm->hc.acked = calloc(cfg->ncpus, sizeof(*vm->hc.acked));
	if (!vm->hc.reports || !vm->hc.acked)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "out of memory");
	r = create_vcpus(vm, err);
	if (!r)
		r = setup_guest_data(vm, err);
	return r;
}

void vm_destroy(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nvcpus_created; i++)
		vcpu_destroy(&vm->vcpus[i]);
	free(vm->vcpus);
	free(vm->hc.reports);
	free(vm->hc.acked);
	bool mem_busy = vm_linux_destroy(vm); /* Linux guests */
	if (vm->uart.out)
		uart8250_destroy(&vm->uart);
	/* Not under a read the disk could not stop: it would land in whatever is mapped there next. */
	if (vm->mem && !mem_busy)
		munmap(vm->mem, vm->cfg->mem_bytes);
	if (vm->fd >= 0)
		close(vm->fd);
	memset(vm, 0, sizeof(*vm));
	vm->fd = -1;
}
