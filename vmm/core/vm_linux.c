#include "vmm/core/vm_linux.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "devices/blk_backend_uring.h"
#include "vcpu/kvm_vmcall_probe.h"
#include "vmm/linux/acpi.h"
#include "vmm/errors.h"
#include "vmm/core/vm.h"

#define VMCALL_PROBE_MS 100
/* KVM's special pages for VMX real-mode support, below the IOAPIC (as Firecracker). */
#define KVM_TSS_GPA 0xfffbd000ull

static struct kvm_cpuid2 *linux_cpuid(void *opaque, unsigned id)
{
	struct vm_linux *l = opaque;
	return x86_cpuid_linux_for_vcpu(l->vm->kvm->supported_cpuid, id, &l->cpuid);
}

static int linux_set_entry(void *opaque, int fd, unsigned id)
{
	struct vm_linux *l = opaque;
	return x86_boot_linux_set_vcpu(fd, &l->entry, id);
}

static void power(struct vm_linux *l, int ev, const char *what)
{
	int none = 0;
	if (__atomic_compare_exchange_n(&l->power_event, &none, ev, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		fprintf(stderr, "\r\nvmm: guest %s; the run ends\n", what);
	run_request_stop(l->vm->ctl, VM_STOP_GUEST_EXIT, (int)l->vm->id, -1, 0);
}

static void linux_system_event(void *opaque, unsigned vcpu, uint32_t type)
{
	(void)vcpu;
	power(opaque, type == KVM_SYSTEM_EVENT_RESET ? PC_POWER_RESET : PC_POWER_OFF,
	      type == KVM_SYSTEM_EVENT_RESET ? "reset (KVM system event)" : "shut down (KVM system event)");
}

static void pc_power(void *opaque, unsigned vcpu, enum pc_power_event ev)
{
	(void)vcpu;
	power(opaque, ev, ev == PC_POWER_RESET ? "rebooted (keyboard-controller reset)" : "powered off (ACPI S5)");
}

static void uart_irq(void *opaque, int level)
{
	vm_irq_line(opaque, UART_COM1_IRQ, level);
}

int vm_linux_load(struct vm *vm, struct vm_error *err)
{
	const struct vm_config *cfg = vm->cfg;
	struct vm_linux *l = calloc(1, sizeof(*l));
	if (!l)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "out of memory");
	vm->linux_guest = l;
	l->vm = vm;

	/* CPU features: PV features only where the host serves them. */
	l->vmcall_ok = kvm_vmcall_probe(vm->kvm->fd, VMCALL_PROBE_MS, l->vmcall_note, sizeof(l->vmcall_note));
	unsigned mask = cfg->cpuid_mask;
	if (mask & CPUID_MASK_AUTO) {
		char why[256];
		mask = (mask & ~CPUID_MASK_AUTO) | x86_cpuid_mask_auto(why, sizeof(why));
		char names[100];
		snprintf(l->mask_note, sizeof(l->mask_note), "masked %s%s%s",
			 x86_cpuid_mask_names(mask, names, sizeof(names)), why[0] ? ": " : "", why);
	} else {
		char names[100];
		snprintf(l->mask_note, sizeof(l->mask_note), "masked %s (--cpuid-mask)",
			 x86_cpuid_mask_names(mask, names, sizeof(names)));
	}
	l->cpuid.mask = mask;
	size_t at = strlen(l->mask_note);
	x86_cpuid_linux_offer(&l->cpuid, x86_kvm_tsc_deadline_cap(vm->kvm->fd), l->mask_note + at,
			      sizeof(l->mask_note) - at);
	l->cpuid.kvm_features = (mask & CPUID_MASK_KVM) ? 0 :
		x86_kvm_pv_features(vm->kvm->supported_cpuid, l->vmcall_ok == 1, cfg->pv_spinlock, l->pv_note,
				    sizeof(l->pv_note));
	if (mask & CPUID_MASK_KVM)
		snprintf(l->pv_note, sizeof(l->pv_note), "no KVM leaves (--cpuid-mask kvm)");
	if (!cfg->quiet)
		fprintf(stderr, "vmm: linux: cpuid %s\nvmm: linux: %s; KVM PV features %s\n", l->mask_note,
			l->vmcall_note, l->pv_note);

	/* The kernel and initrd vm_inputs_prepare read, checked and placed. */
	const struct vm_inputs *in = vm->in;
	char why[256];
	l->bz = in->bz;
	const struct acpi_pci pci = { .mmio_base = PCI_MMIO_DEFAULT_BASE, .mmio_size = PCI_MMIO_DEFAULT_SIZE };
	size_t acpi_len = acpi_build(vm->mem, LINUX_ACPI_GPA, LINUX_HIGH_MEM - LINUX_ACPI_GPA, cfg->ncpus, &pci,
				     &l->acpi_rsdp);
	if (!acpi_len)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOSPC, "the ACPI tables for %u vCPUs do not fit", cfg->ncpus);
	struct linux_load_req req = {
		.mem_size = cfg->mem_bytes, .ram_end = vm->layout.reserved_base, .cmdline = cfg->cmdline,
		.initrd = in->initrd, .initrd_len = in->initrd_len, .acpi_rsdp = l->acpi_rsdp,
		.acpi_end = LINUX_ACPI_GPA + acpi_len,
	};
	struct guest_mem gm;
	guest_mem_init_flat(&gm, vm->mem, cfg->mem_bytes);
	int r = linux_load(&gm, in->kernel, in->kernel_len, &l->bz, &req, &l->load, why, sizeof(why));
	if (r)
		return vm_error_set(err, VMM_EXIT_USAGE, r, "--kernel %s: %s", cfg->kernel_path, why);
	if (linux_write_entry_tables(&gm))
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -EFAULT, "the boot tables lie outside guest memory");
	l->entry = (struct x86_linux_entry){ .entry = l->load.entry, .zero_page = l->load.zero_page,
					     .pt_gpa = LINUX_PT_GPA, .gdt_gpa = LINUX_GDT_GPA,
					     .cs = LINUX_BOOT_CS, .ds = LINUX_BOOT_DS, .tss = LINUX_BOOT_TSS };
	l->hooks = (struct vcpu_guest_hooks){ .cpuid = linux_cpuid, .set_entry = linux_set_entry,
					      .system_event = linux_system_event, .pc_bus = true, .opaque = l };
	if (!cfg->quiet)
		fprintf(stderr, "vmm: linux: %s, boot protocol %u.%02u, loaded at 0x%llx (init_size %u MiB), initrd %llu bytes at 0x%llx\n",
			l->bz.kernel_version[0] ? l->bz.kernel_version : "kernel", l->bz.version >> 8, l->bz.version & 0xff,
			(unsigned long long)l->load.load_addr, l->bz.init_size >> 20,
			(unsigned long long)l->load.initrd_size, (unsigned long long)l->load.initrd_gpa);
	return 0;
}

static void blk_irq(void *opaque, int level)
{
	struct vm *vm = opaque;
	vm_irq_line(vm, vm->linux_guest->blk_gsi, level);
}

static void blk_completions(void *ctx)
{
	virtio_blk_pci_process_completions(ctx);
}

/*
 * A reset that left I/O in flight (the disk hung past BLK_DRAIN_WAIT_MS, or
 * io_uring could not wait): the device holds its status at NEEDS_RESET, the
 * guest's driver would wait on it for ever; the run ends as a host error.
 * From the resetting vCPU's thread: fprintf and run_request_stop only.
 */
static void blk_host_error(void *opaque, const char *what)
{
	struct vm *vm = opaque;
	fprintf(stderr, "vmm: --disk %s (virtio-blk, PCI 00:%02x.0): %s; a host error, the run ends\n",
		vm->cfg->disk_path, virtio_blk_pci_slot(vm->linux_guest->blk), what);
	run_request_stop(vm->ctl, VM_STOP_HOST_ERROR, (int)vm->id, -1, 0);
}

/* The PCI host bridge, and virtio-blk behind it when -d was given. */
static int linux_pci(struct vm *vm, struct vm_error *err)
{
	struct vm_linux *l = vm->linux_guest;
	const struct vm_config *cfg = vm->cfg;
	guest_mem_init_flat(&l->gm, vm->mem, cfg->mem_bytes);
	int r = pci_bus_init(&l->pci, PCI_MMIO_DEFAULT_BASE, PCI_MMIO_DEFAULT_SIZE);
	if (r)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, r, "PCI bus: %s", strerror(-r));
	l->pci_ready = true;
	r = pci_bus_register(&l->pci, &vm->pio, &vm->mmio);
	if (r)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, r, "PCI bus ports/window: %s", strerror(-r));
	if (!cfg->disk_path)
		return 0;
	char why[200];
	/* INTA# of the slot it gets, routed as the DSDT's _PRT says */
	int slot = pci_bus_next_slot(&l->pci);
	if (slot < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, slot, "PCI bus: no free slot");
	l->blk_gsi = pci_intx_gsi((unsigned)slot, 0);
	bool host_fault;
	r = virtio_blk_pci_create(&l->pci, cfg->disk_path, cfg->disk_read_only, &l->gm, (uint8_t)l->blk_gsi,
				  blk_irq, vm, &l->blk, why, sizeof(why), &host_fault);
	if (r)
		return vm_error_set(err, host_fault ? VMM_EXIT_HOST_ERROR : VMM_EXIT_USAGE, r, "--disk: %s", why);
	virtio_blk_pci_on_host_error(l->blk, blk_host_error, vm);
	return vm_add_poller(vm, virtio_blk_pci_event_fd(l->blk), blk_completions, l->blk);
}

int vm_linux_devices(struct vm *vm, struct vm_error *err)
{
	struct vm_linux *l = vm->linux_guest;
	/* Needed by VMX for real mode (APs start there); a no-op elsewhere, so a refusal is the host's fault. */
	if (ioctl(vm->fd, KVM_SET_TSS_ADDR, (unsigned long)KVM_TSS_GPA) < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "KVM_SET_TSS_ADDR: %s", strerror(errno));
	if (ioctl(vm->fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "KVM_CREATE_IRQCHIP: %s", strerror(errno));
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	if (ioctl(vm->fd, KVM_CREATE_PIT2, &pit) < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "KVM_CREATE_PIT2: %s", strerror(errno));
	l->pc = (struct pc_legacy){ .power = pc_power, .opaque = l };
	int r = io_bus_register(&vm->pio, PC_KBC_DATA, 1, pc_kbc_data_io, &l->pc, "i8042-data");
	if (!r)
		r = io_bus_register(&vm->pio, PC_KBC_CMD, 1, pc_kbc_io, &l->pc, "i8042");
	if (!r)
		r = io_bus_register(&vm->pio, PC_CMOS_BASE, 2, pc_cmos_io, &l->pc, "cmos");
	if (!r)
		r = io_bus_register(&vm->pio, ACPI_SLEEP_PORT, 1, pc_acpi_sleep_io, &l->pc, "acpi-sleep");
	if (r)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, r, "PC ports overlap");
	uart8250_set_irq(&vm->uart, uart_irq, vm);
	return linux_pci(vm, err);
}

int vm_linux_blk_uring_fd(const struct vm *vm)
{
	const struct vm_linux *l = vm->linux_guest;
	return l && l->blk ? virtio_blk_pci_uring_fd(l->blk) : -1;
}

bool vm_linux_destroy(struct vm *vm)
{
	struct vm_linux *l = vm->linux_guest;
	bool mem_busy = false;
	unsigned left = 0;
	/* vCPUs have stopped: nothing reaches it; its drain is bounded (BLK_DRAIN_WAIT_MS) */
	int r = l && l->blk ? virtio_blk_pci_destroy(l->blk, &left) : 0;
	if (r < 0 && left) {
		fprintf(stderr, "vmm: --disk %s: %u request%s still in flight at shutdown after %u ms (%s); "
			"guest memory stays mapped until the process exits\n", vm->cfg->disk_path, left,
			left == 1 ? "" : "s", BLK_DRAIN_WAIT_MS, strerror(-r));
		mem_busy = true;
	}
	if (l && l->pci_ready)
		pci_bus_destroy(&l->pci);
	free(vm->linux_guest);
	vm->linux_guest = NULL;
	return mem_busy;
}
