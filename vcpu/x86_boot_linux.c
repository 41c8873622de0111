#include "vcpu/x86_boot_linux.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#define CR0_PE (1ull << 0)
#define CR0_ET (1ull << 4)
#define CR0_PG (1ull << 31)
#define CR4_PAE (1ull << 5)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)

#define APIC_LVT0 0x350
#define APIC_LVT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7

static struct kvm_segment seg(uint16_t sel, uint8_t type, uint8_t s, uint8_t l, uint8_t db, uint8_t g)
{
	return (struct kvm_segment){ .base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
				     .present = 1, .dpl = 0, .db = db, .s = s, .l = l, .g = g };
}

static int set_lint(int fd)
{
	struct kvm_lapic_state lapic;
	if (ioctl(fd, KVM_GET_LAPIC, &lapic) < 0)
		return -errno;
	uint32_t v;
	memcpy(&v, lapic.regs + APIC_LVT0, 4);
	v = (v & ~0x700u) | (APIC_MODE_EXTINT << 8);
	memcpy(lapic.regs + APIC_LVT0, &v, 4);
	memcpy(&v, lapic.regs + APIC_LVT1, 4);
	v = (v & ~0x700u) | (APIC_MODE_NMI << 8);
	memcpy(lapic.regs + APIC_LVT1, &v, 4);
	return ioctl(fd, KVM_SET_LAPIC, &lapic) < 0 ? -errno : 0;
}

int x86_boot_linux_set_vcpu(int fd, const struct x86_linux_entry *e, unsigned vcpu_id)
{
	int r = set_lint(fd);
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
