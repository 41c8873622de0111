#include "vcpu/x86/boot.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vcpu/x86/boot_tables.h"

#define CR0_PE (1ull << 0)
#define CR0_MP (1ull << 1)
#define CR0_ET (1ull << 4)
#define CR0_NE (1ull << 5)
#define CR0_WP (1ull << 16)
#define CR0_PG (1ull << 31)
#define CR4_PAE (1ull << 5)
#define CR4_OSFXSR (1ull << 9)
#define CR4_OSXMMEXCPT (1ull << 10)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)

#define TSS_OFFSET 0x80
#define TSS_LIMIT 0x67

int x86_boot_write_tables(const struct guest_mem *gm, const struct x86_boot *b)
{
	/* the TSS inside the GDT's page, zeroed with it */
	struct x86_boot_tables t = {
		.pt_gpa = b->pt_gpa, .user = true, .gdt_gpa = b->gdt_gpa, .gdt_bytes = 0x1000, .ndesc = 3,
		.desc = {
			{ X86_SEL_CODE64, 0, 0xfffff, 0xa09b }, /* G, L, P, code r/x */
			{ X86_SEL_DATA, 0, 0xfffff, 0xc093 },   /* G, D/B, P, data r/w */
			{ X86_SEL_TSS, (uint32_t)(b->gdt_gpa + TSS_OFFSET), TSS_LIMIT, 0x008b }, /* P, busy 64-bit TSS */
		},
	};
	return x86_boot_tables_write(gm, &t);
}

static struct kvm_segment seg(uint16_t sel, uint8_t type, uint8_t s, uint8_t l, uint8_t db,
			      uint64_t base, uint32_t limit, uint8_t g)
{
	return (struct kvm_segment){ .base = base, .limit = limit, .selector = sel, .type = type,
				     .present = 1, .dpl = 0, .db = db, .s = s, .l = l, .g = g };
}

int x86_boot_set_vcpu(int fd, const struct x86_boot *b, unsigned vcpu_id)
{
	struct kvm_sregs sregs;
	if (ioctl(fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	sregs.cs = seg(X86_SEL_CODE64, 0xb, 1, 1, 0, 0, 0xffffffff, 1);
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss =
		seg(X86_SEL_DATA, 0x3, 1, 0, 1, 0, 0xffffffff, 1);
	sregs.tr = seg(X86_SEL_TSS, 0xb, 0, 0, 0, b->gdt_gpa + TSS_OFFSET, TSS_LIMIT, 0);
	sregs.ldt = (struct kvm_segment){ .type = 0x2, .present = 1, .unusable = 1 };
	sregs.gdt.base = b->gdt_gpa;
	sregs.gdt.limit = X86_SEL_TSS + 16 - 1;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	sregs.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
	sregs.cr3 = b->pt_gpa;
	sregs.cr4 = CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT;
	sregs.efer = EFER_LME | EFER_LMA;
	if (ioctl(fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;

	struct kvm_regs regs = { .rip = b->entry, .rdi = b->arg0, .rsi = vcpu_id, .rflags = 0x2 };
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		return -errno;

	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	if (ioctl(fd, KVM_SET_FPU, &fpu) < 0)
		return -errno;
	return 0;
}
