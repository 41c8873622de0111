#include "vcpu/x86/boot_linux.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vcpu/x86/msrs_linux.h"

#define CR0_PE (1ull << 0)
#define CR0_ET (1ull << 4)
#define CR0_PG (1ull << 31)
#define CR4_PAE (1ull << 5)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)

static struct kvm_segment seg(uint16_t sel, uint8_t type, uint8_t s, uint8_t l, uint8_t db, uint8_t g)
{
	return (struct kvm_segment){ .base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
				     .present = 1, .dpl = 0, .db = db, .s = s, .l = l, .g = g };
}

/*
 * LINT0 is masked on every vCPU, the boot CPU too. What is wired to it is
 * KVM's in-kernel 8259 pair (KVM_CREATE_IRQCHIP), and KVM's default GSI
 * routing sends GSIs 0-15 to those 8259s as well as to the IOAPIC: the UART's
 * IRQ 4 and the PIT's IRQ 0 reach both. A hardware-reduced ACPI Linux never
 * touches the 8259s (its legacy PIC is the null one), so they stay as KVM
 * creates them: nothing masked, vector base 0. With LINT0 open as ExtINT
 * (KVM resets the boot CPU's so, KVM_X86_QUIRK_LINT0_REENABLED, for a BIOS
 * that programs the 8259s), the first UART interrupt would also arrive
 * through the 8259 as vector 4, an exception vector. Linux keeps LINT0 as it finds it on the boot CPU (open
 * if open, else masked) and masks it on the others; masked, every legacy
 * IRQ reaches the CPUs through the IOAPIC only. The ExtINT mode stays set,
 * so a guest that does program the 8259s need only unmask it.
 *
 * LINT1 is NMI, open on the boot CPU only, as firmware leaves it and as
 * Linux sets it anyway; nothing in KVM drives it (KVM_NMI does not pass
 * through LINT1). On the APs both values last only until the INIT that
 * starts them resets their local APIC to all-masked, which they match.
 */
struct x86_lint x86_linux_lint(unsigned vcpu_id)
{
	uint32_t lint1 = APIC_MODE_NMI << 8;
	return (struct x86_lint){ .lvt0 = APIC_LVT_MASKED | (APIC_MODE_EXTINT << 8),
				  .lvt1 = vcpu_id == 0 ? lint1 : lint1 | APIC_LVT_MASKED };
}

void x86_linux_lint_apply(struct kvm_lapic_state *s, unsigned vcpu_id)
{
	struct x86_lint l = x86_linux_lint(vcpu_id);
	memcpy(s->regs + APIC_LVT0, &l.lvt0, 4);
	memcpy(s->regs + APIC_LVT1, &l.lvt1, 4);
}

static int set_lint(int fd, unsigned vcpu_id)
{
	struct kvm_lapic_state lapic;
	if (ioctl(fd, KVM_GET_LAPIC, &lapic) < 0)
		return -errno;
	x86_linux_lint_apply(&lapic, vcpu_id);
	return ioctl(fd, KVM_SET_LAPIC, &lapic) < 0 ? -errno : 0;
}

int x86_boot_linux_set_vcpu(int fd, const struct x86_linux_entry *e, unsigned vcpu_id)
{
	int r = set_lint(fd, vcpu_id);
	if (!r)
		r = x86_msrs_linux_set(fd, vcpu_id);
	if (r)
		return r;
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	if (ioctl(fd, KVM_SET_FPU, &fpu) < 0)
		return -errno;
	if (vcpu_id != 0)
		return 0; /* an AP: waits for INIT/SIPI in the in-kernel APIC */

	struct kvm_sregs sregs;
	if (ioctl(fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	sregs.cs = seg(e->cs, 0xb, 1, 1, 0, 1);
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = seg(e->ds, 0x3, 1, 0, 1, 1);
	sregs.tr = seg(e->tss, 0xb, 0, 0, 0, 1);
	sregs.ldt = (struct kvm_segment){ .type = 0x2, .present = 1, .unusable = 1 };
	sregs.gdt.base = e->gdt_gpa;
	sregs.gdt.limit = (uint16_t)(e->tss + 8 - 1);
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	sregs.cr0 = CR0_PE | CR0_ET | CR0_PG;
	sregs.cr3 = e->pt_gpa;
	sregs.cr4 = CR4_PAE;
	sregs.efer = EFER_LME | EFER_LMA;
	if (ioctl(fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	struct kvm_regs regs = { .rip = e->entry, .rsi = e->zero_page, .rflags = 0x2 };
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}
