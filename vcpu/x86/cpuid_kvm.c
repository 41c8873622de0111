#include "vcpu/x86/cpuid_kvm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define KVM_SIG_LEAF 0x40000000u
#define KVM_FEAT_LEAF 0x40000001u

/* Leaf 1 ECX. */
#define ECX_MONITOR (1u << 3)
#define ECX_VMX (1u << 5)
#define ECX_SMX (1u << 6)
#define ECX_FMA (1u << 12)
#define ECX_CX16 (1u << 13)
#define ECX_X2APIC (1u << 21)
#define ECX_TSC_DEADLINE (1u << 24)
#define ECX_XSAVE (1u << 26)
#define ECX_OSXSAVE (1u << 27)
#define ECX_AVX (1u << 28)
#define ECX_F16C (1u << 29)
#define ECX_HYPERVISOR (1u << 31)
/* Leaf 1 EDX. */
#define EDX_MTRR (1u << 12)
/* Leaf 7.0. */
#define L7_EBX_AVX2 (1u << 5)
#define L7_EBX_AVX512 0xdc230000u /* F, DQ, IFMA, PF, ER, CD, BW, VL */
#define L7_ECX_WAITPKG (1u << 5)
#define L7_ECX_AVX512 0x00005842u /* VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */

static const struct { const char *name; unsigned bit; } mask_names[] = {
	{ "cx16", CPUID_MASK_CX16 }, { "xsave", CPUID_MASK_XSAVE }, { "avx", CPUID_MASK_AVX },
	{ "x2apic", CPUID_MASK_X2APIC }, { "tsc-deadline", CPUID_MASK_TSC_DEADLINE }, { "kvm", CPUID_MASK_KVM },
};
#define NMASK (sizeof(mask_names) / sizeof(mask_names[0]))

int x86_cpuid_mask_parse(const char *list, unsigned *mask, char *err, size_t errlen)
{
	char buf[128];
	unsigned m = 0;
	if (strlen(list) >= sizeof(buf)) {
		snprintf(err, errlen, "--cpuid-mask: '%s' is too long", list);
		return -EINVAL;
	}
	strcpy(buf, list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned i;
		if (!strcmp(t, "none"))
			continue;
		if (!strcmp(t, "auto")) {
			m |= CPUID_MASK_AUTO;
			continue;
		}
		for (i = 0; i < NMASK && strcmp(t, mask_names[i].name); i++)
			;
		if (i == NMASK) {
			snprintf(err, errlen, "--cpuid-mask: unknown feature '%s' (known: cx16, xsave, avx, x2apic, tsc-deadline, kvm, none, auto)", t);
			return -EINVAL;
		}
		m |= mask_names[i].bit;
	}
	*mask = m;
	return 0;
}

const char *x86_cpuid_mask_names(unsigned mask, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < NMASK; i++)
		if (mask & mask_names[i].bit) {
			int n = snprintf(buf + at, len - at, "%s%s", at ? "," : "", mask_names[i].name);
			if (n < 0 || (size_t)n >= len - at)
				break;
			at += (size_t)n;
		}
	if (!at)
		snprintf(buf, len, "none");
	return buf;
}

unsigned x86_cpuid_mask_auto(char *why, size_t whylen)
{
	/* kvm_pvm (software-assisted KVM) runs guest CPL0 code through KVM's
	 * instruction emulator, which lacks CMPXCHG16B and XRSTOR (HOST.md): a
	 * Linux guest offered them stops with an emulation failure. Measured
	 * with CPUID read back inside a guest: kvm_pvm honours the cx16 bit but
	 * forces XSAVE (and AVX, SSSE3, POPCNT ... in leaf 1, all of leaf 7 and
	 * 0xD) on whatever KVM_SET_CPUID2 says, so the kernel must be told
	 * (README: noxsave, clearcpuid=). The mask still asks. */
	if (access("/sys/module/kvm_pvm", F_OK) == 0) {
		snprintf(why, whylen, "host KVM is kvm_pvm, whose emulator lacks cmpxchg16b and xsave/xrstor "
			 "(it ignores the xsave bit: boot Linux with noxsave, see README)");
		return CPUID_MASK_CX16 | CPUID_MASK_XSAVE;
	}
	why[0] = '\0';
	return 0;
}

static const char *const feature_names[32] = {
	[0] = "clocksource", [1] = "nop_io_delay", [2] = "mmu_op", [3] = "clocksource2",
	[4] = "async_pf", [5] = "steal_time", [6] = "pv_eoi", [7] = "pv_unhalt",
	[9] = "pv_tlb_flush", [10] = "async_pf_vmexit", [11] = "pv_send_ipi", [12] = "poll_control",
	[13] = "pv_sched_yield", [14] = "async_pf_int", [15] = "msi_ext_dest_id",
	[16] = "hc_map_gpa_range", [17] = "migration_control", [24] = "clocksource_stable",
};

/* "clocksource,nop_io_delay,..." for KVM_FEATURE_* bits. */
static const char *x86_kvm_feature_names(uint32_t f, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < 32; i++) {
		if (!(f & (1u << i)))
			continue;
		char unk[16];
		const char *n = feature_names[i];
		if (!n) {
			snprintf(unk, sizeof(unk), "bit%u", i);
			n = unk;
		}
		int w = snprintf(buf + at, len - at, "%s%s", at ? "," : "", n);
		if (w < 0 || (size_t)w >= len - at)
			break;
		at += (size_t)w;
	}
	if (!at)
		snprintf(buf, len, "none");
	return buf;
}

static const struct kvm_cpuid_entry2 *find(const struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == idx)
			return &c->entries[i];
	return NULL;
}

uint32_t x86_kvm_pv_features(const struct kvm_cpuid2 *sup, bool vmcall_ok, bool pv_spinlock, char *note,
			     size_t notelen)
{
	const struct kvm_cpuid_entry2 *e = find(sup, KVM_FEAT_LEAF, 0);
	char a[200], b[200];
	if (!e) {
		snprintf(note, notelen, "the host's KVM reports no PV feature leaf; none offered");
		return 0;
	}
	uint32_t f = e->eax & ~(1u << 2); /* MMU_OP: long gone from KVM */
	uint32_t no_vmcall = vmcall_ok ? 0 : f & KVM_PV_NEEDS_VMCALL;
	f &= ~no_vmcall;
	bool unhalt_off = !pv_spinlock && (f & (1u << 7));
	if (!pv_spinlock)
		f &= ~(1u << 7);
	int n = snprintf(note, notelen, "offered %s", x86_kvm_feature_names(f, a, sizeof(a)));
	if (no_vmcall && n > 0 && (size_t)n < notelen)
		n += snprintf(note + n, notelen - (size_t)n, "; not offered %s: VMCALL does not complete on this host",
			      x86_kvm_feature_names(no_vmcall, b, sizeof(b)));
	else if (vmcall_ok && n > 0 && (size_t)n < notelen)
		n += snprintf(note + n, notelen - (size_t)n, "; VMCALL completes on this host");
	if (unhalt_off && n > 0 && (size_t)n < notelen)
		snprintf(note + n, notelen - (size_t)n, "; pv_unhalt off (--pv-spinlock off)");
	return f;
}

void x86_cpuid_linux_offer(struct x86_cpuid_linux *o, int cap, char *note, size_t notelen)
{
	/* QEMU offers the bit on the same condition: the cap, and the local APIC
	 * in the kernel (always so for Linux guests here). With it Linux's
	 * local-APIC timer, its only clock event on this hardware-reduced
	 * machine (vmm/core/vm_linux.h), needs no calibration at all. */
	bool masked = o->mask & CPUID_MASK_TSC_DEADLINE;
	o->tsc_deadline = cap > 0 && !masked;
	const char *mtrr = "mtrr (default type write-back)";
	if (o->tsc_deadline)
		snprintf(note, notelen, "; offered tsc-deadline (KVM_CAP_TSC_DEADLINE_TIMER), %s", mtrr);
	else if (masked)
		snprintf(note, notelen, "; offered %s; tsc-deadline masked", mtrr);
	else if (cap == 0)
		snprintf(note, notelen, "; offered %s; tsc-deadline not offered: the host's KVM lacks "
			 "KVM_CAP_TSC_DEADLINE_TIMER", mtrr);
	else
		snprintf(note, notelen, "; offered %s; tsc-deadline not offered: KVM_CHECK_EXTENSION: %s", mtrr,
			 strerror(-cap));
}

int x86_kvm_tsc_deadline_cap(int kvm_fd)
{
	int r = ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER);
	return r < 0 ? -errno : r;
}

/* Leaf 1 for one vCPU: its APIC ID, hypervisor present, no MONITOR, VMX or
 * SMX, the masks asked for. */
static void leaf1(struct kvm_cpuid_entry2 *e, unsigned vcpu_id, const struct x86_cpuid_linux *o)
{
	e->ebx = (e->ebx & 0x00ffffff) | (vcpu_id << 24);
	e->ecx &= ~(ECX_MONITOR | ECX_VMX | ECX_SMX);
	e->ecx |= ECX_HYPERVISOR;
	if (o->mask & CPUID_MASK_CX16)
		e->ecx &= ~ECX_CX16;
	if (o->mask & CPUID_MASK_XSAVE)
		e->ecx &= ~(ECX_XSAVE | ECX_OSXSAVE | ECX_AVX | ECX_FMA | ECX_F16C);
	if (o->mask & CPUID_MASK_AVX)
		e->ecx &= ~(ECX_AVX | ECX_FMA | ECX_F16C);
	if (o->mask & CPUID_MASK_X2APIC)
		e->ecx &= ~ECX_X2APIC;
	/* x86_cpuid_linux_offer decided (the cap, unless masked), not the
	 * list: older KVMs leave the bit out of it, kvm_pvm on 6.18 lists it */
	e->ecx &= ~ECX_TSC_DEADLINE;
	if (o->tsc_deadline)
		e->ecx |= ECX_TSC_DEADLINE;
	/* KVM emulates the MTRR MSRs in its common x86 code on every host
	 * and lists the bit only when the host CPU has it; x86_msrs_linux
	 * programs them on every vCPU, so the bit says what is there.
	 * Without it Linux says "MTRRs disabled" and turns PAT off. */
	e->edx |= EDX_MTRR;
}

struct kvm_cpuid2 *x86_cpuid_linux_for_vcpu(const struct kvm_cpuid2 *sup, unsigned vcpu_id,
					    const struct x86_cpuid_linux *o)
{
	/* Room for the two KVM leaves, should the host not list them. */
	size_t sz = sizeof(*sup) + (sup->nent + 2) * sizeof(sup->entries[0]);
	struct kvm_cpuid2 *c = calloc(1, sz);
	if (!c)
		return NULL;
	c->nent = 0;
	bool have_sig = false, have_feat = false;
	for (unsigned i = 0; i < sup->nent; i++) {
		struct kvm_cpuid_entry2 e = sup->entries[i];
		switch (e.function) {
		case 1:
			leaf1(&e, vcpu_id, o);
			break;
		case 5: /* MONITOR/MWAIT parameters: MWAIT is not offered */
			e.eax = e.ebx = e.ecx = e.edx = 0;
			break;
		case 7:
			if (e.index == 0) {
				e.ecx &= ~L7_ECX_WAITPKG;
				if (o->mask & (CPUID_MASK_XSAVE | CPUID_MASK_AVX)) {
					e.ebx &= ~(L7_EBX_AVX2 | L7_EBX_AVX512);
					e.ecx &= ~L7_ECX_AVX512;
				}
			}
			break;
		case 0xd: /* XSAVE state components: none without XSAVE */
			if (o->mask & CPUID_MASK_XSAVE)
				e.eax = e.ebx = e.ecx = e.edx = 0;
			break;
		case 0xb:
		case 0x1f: /* the x2APIC ID */
			e.edx = vcpu_id;
			break;
		case KVM_SIG_LEAF:
			have_sig = true;
			break;
		case KVM_FEAT_LEAF:
			have_feat = true;
			e.eax = o->kvm_features;
			e.ebx = e.ecx = e.edx = 0; /* EDX: no KVM_HINTS_REALTIME, vCPUs may be preempted */
			break;
		default:
			break;
		}
		if ((o->mask & CPUID_MASK_KVM) && e.function >= KVM_SIG_LEAF && e.function < KVM_SIG_LEAF + 0x100)
			continue;
		c->entries[c->nent++] = e;
	}
	if (!(o->mask & CPUID_MASK_KVM)) {
		if (!have_sig) {
			struct kvm_cpuid_entry2 e = { .function = KVM_SIG_LEAF, .eax = KVM_FEAT_LEAF };
			memcpy(&e.ebx, "KVMKVMKVM\0\0\0", 12);
			c->entries[c->nent++] = e;
		}
		if (!have_feat)
			c->entries[c->nent++] = (struct kvm_cpuid_entry2){ .function = KVM_FEAT_LEAF,
									   .eax = o->kvm_features };
	}
	return c;
}
