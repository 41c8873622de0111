/*
 * The Linux guest kind of vm_create (-k bzImage): no firmware; the kernel,
 * initrd, command line, zero page, ACPI tables and entry page tables in guest
 * memory; KVM's in-kernel irqchip (PIC, IOAPIC, local APICs) and PIT; the
 * UART's interrupt; the PC ports for reset and power-off; CPUID with KVM's
 * PV leaves filtered to what this host serves.
 *
 * No timer ticks until each CPU's local-APIC timer starts, on purpose. The
 * FADT says hardware-reduced, so Linux programs neither the PIT's channel 0
 * nor the 8259s (its timer_init is a no-op there), and there is no HPET. Its
 * clock events are then the per-CPU local-APIC timers, which KVM emulates in
 * the kernel with no exit to this process: in TSC-deadline mode when CPUID
 * offers it (KVM_CAP_TSC_DEADLINE_TIMER), which needs no calibration, else
 * calibrated by polling the TSC. A PIT tick would add an interrupt through
 * the IOAPIC per tick that only a legacy machine needs, and an HPET would be
 * MMIO exits to emulate here (HOST.md: exits are dear). The in-kernel PIT
 * stays for what needs no interrupt: channel 2 behind port 0x61, which Linux
 * may use to measure the TSC when kvmclock is masked. The 8259s cannot be
 * left out of KVM_CREATE_IRQCHIP, so LINT0 is masked (vcpu/x86/boot_linux.c).
 */
#ifndef VMM_VM_LINUX_H
#define VMM_VM_LINUX_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/guest_mem.h"
#include "devices/pc_legacy.h"
#include "devices/pci_bus.h"
#include "devices/virtio_blk.h"
#include "vcpu/vcpu.h"
#include "vcpu/x86/boot_linux.h"
#include "vcpu/x86/cpuid_kvm.h"
#include "vmm/linux/boot_linux.h"

struct vm;
struct vm_error;

struct vm_linux {
	struct vm *vm;
	struct bzimage bz;
	struct linux_load_out load;
	struct x86_linux_entry entry;
	struct x86_cpuid_linux cpuid;
	struct vcpu_guest_hooks hooks;
	struct pc_legacy pc;
	int vmcall_ok;             /* the probe's answer: 1, 0, or -errno */
	char vmcall_note[200];
	char pv_note[400];         /* which KVM PV features were offered, and why */
	char mask_note[320];       /* which CPUID features were masked, and why */
	uint64_t acpi_rsdp;
	int power_event;           /* enum pc_power_event / KVM system event seen, 0 */
	struct guest_mem gm;       /* guest RAM as the PCI devices see it */
	struct pci_bus pci;        /* host bridge 00:00.0 and the devices behind it */
	bool pci_ready;
	struct virtio_blk_pci *blk; /* -d FILE */
	unsigned blk_gsi;           /* its INTA# (pci_intx_gsi of its slot) */
};


/* After guest memory exists: probe, load, tables. 0 or negative with err filled. */
int vm_linux_load(struct vm *vm, struct vm_error *err);
/* After the UART and buses exist, before vCPUs: irqchip, PIT, ports, IRQ 4. */
int vm_linux_devices(struct vm *vm, struct vm_error *err);
/*
 * True when the disk left I/O in flight past its bound at shutdown (said on
 * stderr): that I/O may still write guest memory, so it must stay mapped.
 */
bool vm_linux_destroy(struct vm *vm);
/* For the seccomp filters: the virtio-blk backend's io_uring fd, -1 without -d. */
int vm_linux_blk_uring_fd(const struct vm *vm);

#endif
