/*
 * What a Linux guest's vCPUs get beyond KVM's supported CPUID: the
 * TSC-deadline bit offered from KVM_CAP_TSC_DEADLINE_TIMER (or masked), MTRR
 * in CPUID with MSR_MTRRdefType programmed, and the local APIC's LINT0/LINT1.
 * The pure parts on plain structs; the same read back from real vCPUs where
 * /dev/kvm exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vcpu/x86/boot_linux.h"
#include "vcpu/x86/cpuid_kvm.h"
#include "vcpu/x86/msrs_linux.h"

#define TSC_DEADLINE (1u << 24)
#define MTRR (1u << 12)

/* Whether the fake KVM_GET_SUPPORTED_CPUID lists TSC-deadline, as newer KVMs do. */
static bool sup_lists_tsc_deadline;

/* A host's supported CPUID as KVM lists it: TSC-deadline as set above, no
 * MTRR (a host CPU without it), plus the KVM PV leaf. */
static struct kvm_cpuid2 *fake_supported(void)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + 3 * sizeof(c->entries[0]));
	c->nent = 3;
	c->entries[0] = (struct kvm_cpuid_entry2){ .function = 0, .eax = 0xd };
	c->entries[1] = (struct kvm_cpuid_entry2){ .function = 1, .ecx = 0x00200000, .edx = 0x00000200 };
	if (sup_lists_tsc_deadline)
		c->entries[1].ecx |= TSC_DEADLINE;
	c->entries[2] = (struct kvm_cpuid_entry2){ .function = 0x40000001, .eax = 0x1 };
	return c;
}

static const struct kvm_cpuid_entry2 *leaf(const struct kvm_cpuid2 *c, uint32_t fn)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn)
			return &c->entries[i];
	return NULL;
}

/* Leaf 1 as vCPU id sees it after x86_cpuid_linux_offer(cap) with mask. */
static struct kvm_cpuid_entry2 leaf1(int cap, unsigned mask, char *note, size_t notelen)
{
	struct kvm_cpuid2 *sup = fake_supported();
	struct x86_cpuid_linux o = { .mask = mask, .kvm_features = 1 };
	note[0] = '\0';
	x86_cpuid_linux_offer(&o, cap, note, notelen);
	struct kvm_cpuid2 *c = x86_cpuid_linux_for_vcpu(sup, 1, &o);
	struct kvm_cpuid_entry2 e = *leaf(c, 1);
	free(c);
	free(sup);
	return e;
}

static void tsc_deadline_cases(void)
{
	char note[200];
	struct kvm_cpuid_entry2 e = leaf1(1, 0, note, sizeof(note));
	CHECK(e.ecx & TSC_DEADLINE); /* the cap offers it */
	CHECK(strstr(note, "; offered tsc-deadline") == note);
	CHECK(e.ecx & (1u << 21));   /* the rest of leaf 1 as supported said */
	CHECK_EQ(e.ebx >> 24, 1);    /* the APIC ID */

	e = leaf1(0, 0, note, sizeof(note));
	CHECK(!(e.ecx & TSC_DEADLINE)); /* no cap: never offered */
	CHECK(strstr(note, "lacks KVM_CAP_TSC_DEADLINE_TIMER") != NULL);

	e = leaf1(-ENOTTY, 0, note, sizeof(note));
	CHECK(!(e.ecx & TSC_DEADLINE)); /* the probe failed: not offered, and said */
	CHECK(strstr(note, "KVM_CHECK_EXTENSION") != NULL);

	e = leaf1(1, CPUID_MASK_TSC_DEADLINE, note, sizeof(note));
	CHECK(!(e.ecx & TSC_DEADLINE)); /* --cpuid-mask tsc-deadline wins over the cap */
	CHECK(strstr(note, "tsc-deadline masked") != NULL);

	/* the other masks leave it alone */
	e = leaf1(1, CPUID_MASK_CX16 | CPUID_MASK_XSAVE | CPUID_MASK_X2APIC, note, sizeof(note));
	CHECK(e.ecx & TSC_DEADLINE);
	CHECK(!(e.ecx & (1u << 21)));

	/* a short note buffer is cut, never overrun */
	char tiny[8];
	memset(tiny, 'x', sizeof(tiny));
	leaf1(1, 0, tiny, 6);
	CHECK_EQ(strlen(tiny), 5);
	CHECK_EQ(tiny[7], 'x');
}

/* The cap decides, whether or not KVM_GET_SUPPORTED_CPUID lists the bit. */
static void test_tsc_deadline(void)
{
	sup_lists_tsc_deadline = false;
	tsc_deadline_cases();
	sup_lists_tsc_deadline = true;
	tsc_deadline_cases();
	sup_lists_tsc_deadline = false;
}

static void test_mtrr_in_cpuid(void)
{
	char note[200];
	/* offered on every host, cap or mask, since the MSR is always programmed */
	for (int cap = 0; cap <= 1; cap++) {
		struct kvm_cpuid_entry2 e = leaf1(cap, cap ? CPUID_MASK_TSC_DEADLINE : 0, note, sizeof(note));
		CHECK(e.edx & MTRR);
		CHECK(e.edx & (1u << 9)); /* APIC stays */
		CHECK(strstr(note, "mtrr (default type write-back)") != NULL);
	}
	/* --cpuid-mask kvm drops KVM's leaves, not MTRR */
	struct kvm_cpuid2 *sup = fake_supported();
	struct x86_cpuid_linux o = { .mask = CPUID_MASK_KVM };
	x86_cpuid_linux_offer(&o, 1, note, sizeof(note));
	struct kvm_cpuid2 *c = x86_cpuid_linux_for_vcpu(sup, 0, &o);
	CHECK(leaf(c, 1)->edx & MTRR);
	CHECK(leaf(c, 1)->ecx & TSC_DEADLINE);
	CHECK(leaf(c, 0x40000001) == NULL);
	free(c);
	free(sup);
}

static void test_msr_list(void)
{
	struct kvm_msr_entry e[4];
	memset(e, 0xff, sizeof(e));
	size_t n = x86_msrs_linux(e, 4);
	CHECK_EQ(n, 1);
	CHECK_EQ(e[0].index, 0x2ff);
	CHECK_EQ(e[0].data, 0x806); /* E (bit 11) + write-back (6); FE and reserved bits 0 */
	CHECK_EQ(e[0].reserved, 0);
	CHECK_EQ(x86_msrs_linux(e, 0), 0); /* no room: nothing, not half a list */

	/* KVM_SET_MSRS answers how many it set; a short count is an error */
	CHECK_EQ(x86_msrs_set_result(1, 0, 1), 0);
	CHECK_EQ(x86_msrs_set_result(0, 0, 1), -EINVAL);
	CHECK_EQ(x86_msrs_set_result(2, 0, 3), -EINVAL);
	CHECK_EQ(x86_msrs_set_result(-1, E2BIG, 1), -E2BIG);
	CHECK_EQ(x86_msrs_set_result(-1, 0, 1), -EIO);
}

static uint32_t reg(const struct kvm_lapic_state *s, unsigned off)
{
	uint32_t v;
	memcpy(&v, s->regs + off, 4);
	return v;
}

static void test_lint(void)
{
	struct x86_lint b = x86_linux_lint(0), a = x86_linux_lint(3);
	/* LINT0: ExtINT but masked everywhere: the 8259s nobody programs never reach a CPU */
	CHECK_EQ(b.lvt0, 0x10700);
	CHECK_EQ(a.lvt0, 0x10700);
	CHECK(b.lvt0 & APIC_LVT_MASKED);
	CHECK_EQ(APIC_LVT_MODE(b.lvt0), APIC_MODE_EXTINT);
	/* LINT1: NMI, open on the boot CPU only */
	CHECK_EQ(b.lvt1, 0x400);
	CHECK_EQ(a.lvt1, 0x10400);
	CHECK_EQ(APIC_LVT_MODE(a.lvt1), APIC_MODE_NMI);

	/* applied to a LAPIC image: KVM's reset values (boot CPU: LVT0 open
	 * ExtINT, the KVM_X86_QUIRK_LINT0_REENABLED quirk) replaced, nothing
	 * else touched */
	struct kvm_lapic_state s, before;
	for (unsigned i = 0; i < sizeof(s.regs); i++)
		s.regs[i] = (char)(i * 7 + 1);
	uint32_t reset0 = 0x700, reset1 = 0x10000;
	memcpy(s.regs + APIC_LVT0, &reset0, 4);
	memcpy(s.regs + APIC_LVT1, &reset1, 4);
	before = s;
	x86_linux_lint_apply(&s, 0);
	CHECK_EQ(reg(&s, APIC_LVT0), 0x10700);
	CHECK_EQ(reg(&s, APIC_LVT1), 0x400);
	memcpy(before.regs + APIC_LVT0, s.regs + APIC_LVT0, 4);
	memcpy(before.regs + APIC_LVT1, s.regs + APIC_LVT1, 4);
	CHECK(!memcmp(&s, &before, sizeof(s)));
	x86_linux_lint_apply(&s, 1);
	CHECK_EQ(reg(&s, APIC_LVT1), 0x10400);
}

static struct kvm_cpuid2 *supported(int kvm)
{
	for (unsigned n = 64; n <= 1024; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		c->nent = n;
		if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		free(c);
		if (errno != E2BIG)
			break;
	}
	return NULL;
}

/* x86_boot_linux_set_vcpu on real vCPUs, read back through KVM. */
static void test_real(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		SKIP("no /dev/kvm for the real-vCPU part");
		return;
	}
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	CHECK(vm >= 0);
	CHECK_EQ(ioctl(vm, KVM_CREATE_IRQCHIP, 0), 0);
	struct kvm_cpuid2 *sup = supported(kvm);
	CHECK(sup != NULL);
	/* Older KVMs leave the bit out of this list, newer ones (kvm_pvm on
	 * 6.18) put it in: either way the vCPU gets it iff the cap says so
	 * (checked below through KVM_GET_CPUID2). */
	CHECK(leaf(sup, 1) != NULL);
	int cap = x86_kvm_tsc_deadline_cap(kvm);
	CHECK(cap >= 0);
	struct x86_cpuid_linux o = { .mask = 0 };
	char note[200];
	x86_cpuid_linux_offer(&o, cap, note, sizeof(note));
	const struct x86_linux_entry entry = { .entry = 0x1000200, .zero_page = 0x7000, .pt_gpa = 0x9000,
					       .gdt_gpa = 0x500, .cs = 0x10, .ds = 0x18, .tss = 0x20 };
	for (unsigned id = 0; id < 2; id++) {
		int fd = ioctl(vm, KVM_CREATE_VCPU, (unsigned long)id);
		CHECK(fd >= 0);
		struct kvm_cpuid2 *c = x86_cpuid_linux_for_vcpu(sup, id, &o);
		CHECK_EQ(ioctl(fd, KVM_SET_CPUID2, c), 0);
		CHECK_EQ(x86_boot_linux_set_vcpu(fd, &entry, id), 0);

		struct kvm_lapic_state s;
		CHECK_EQ(ioctl(fd, KVM_GET_LAPIC, &s), 0);
		struct x86_lint want = x86_linux_lint(id);
		CHECK_EQ(reg(&s, APIC_LVT0), want.lvt0);
		CHECK_EQ(reg(&s, APIC_LVT1), want.lvt1);

		struct {
			struct kvm_msrs h;
			struct kvm_msr_entry e;
		} m = { .h.nmsrs = 1, .e.index = MSR_MTRR_DEF_TYPE };
		CHECK_EQ(ioctl(fd, KVM_GET_MSRS, &m), 1);
		CHECK_EQ(m.e.data, 0x806);

		/* what KVM holds for the vCPU, not what we meant to give it */
		memset(c->entries, 0, c->nent * sizeof(c->entries[0]));
		CHECK_EQ(ioctl(fd, KVM_GET_CPUID2, c), 0);
		const struct kvm_cpuid_entry2 *l1 = leaf(c, 1);
		CHECK(l1 && (l1->edx & MTRR));
		CHECK(l1 && !!(l1->ecx & TSC_DEADLINE) == (cap > 0));
		free(c);
		close(fd);
	}
	free(sup);
	close(vm);
	close(kvm);
}

int main(void)
{
	RUN(test_tsc_deadline);
	RUN(test_mtrr_in_cpuid);
	RUN(test_msr_list);
	RUN(test_lint);
	RUN(test_real);
	return check_summary();
}
