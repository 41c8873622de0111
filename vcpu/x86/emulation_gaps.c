#include "vcpu/x86/emulation_gaps.h"

#include <stdio.h>
#include <sys/ioctl.h>

/* The bytes KVM could not emulate, when it says: ": insn 48 0f ae 2f ...", or "". */
const char *x86_emulation_insn_text(const struct kvm_run *run, char *buf, size_t len)
{
	buf[0] = '\0';
	if (run->emulation_failure.ndata < 3 ||
	    !(run->emulation_failure.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES))
		return buf;
	unsigned n = run->emulation_failure.insn_size;
	if (n > 8)
		n = 8; /* enough to name the instruction */
	size_t at = (size_t)snprintf(buf, len, ": insn");
	for (unsigned i = 0; i < n && at + 4 < len; i++)
		at += (size_t)snprintf(buf + at, len - at, " %02x", run->emulation_failure.insn_bytes[i]);
	return buf;
}

/* kvm_pvm runs guest CPL0 code through KVM's instruction emulator, which lacks
 * a few instructions a Linux kernel runs however its CPUID reads:
 *  - INT3 (int3_selftest() in alternative_instructions(), text_poke_bp()):
 *    the emulator cannot deliver a software interrupt in long mode. Deliver
 *    the #BP ourselves: RIP past the INT3 (a trap), then inject vector 3,
 *    which KVM delivers through the guest's IDT.
 *  - FWAIT (fpu__drop(), on every task exit): raise the #MF it would raise if
 *    the x87 status word has an unmasked exception pending (ES), else step
 *    over it.
 * KVM hands over the instruction bytes; true when the vCPU may go on. */
bool x86_emulate_failed_insn(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	if (run->emulation_failure.suberror != KVM_INTERNAL_ERROR_EMULATION || run->emulation_failure.ndata < 3 ||
	    !(run->emulation_failure.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES) ||
	    run->emulation_failure.insn_size < 1)
		return false;
	uint8_t op = run->emulation_failure.insn_bytes[0];
	if (op != 0xcc && op != 0x9b)
		return false;
	struct kvm_regs r;
	struct kvm_vcpu_events ev;
	if (ioctl(v->fd, KVM_GET_REGS, &r) < 0 || ioctl(v->fd, KVM_GET_VCPU_EVENTS, &ev) < 0 || ev.exception.injected ||
	    ev.exception.pending)
		return false;
	int vector = -1;
	uint64_t rip = r.rip;
	if (op == 0xcc) {
		vector = 3;
		r.rip += 1;
	} else {
		struct kvm_fpu fpu;
		if (ioctl(v->fd, KVM_GET_FPU, &fpu) < 0)
			return false;
		if (fpu.fsw & 0x80)
			vector = 16; /* #MF, a fault: RIP stays on the FWAIT */
		else
			r.rip += 1;
	}
	if (r.rip != rip && ioctl(v->fd, KVM_SET_REGS, &r) < 0)
		return false;
	if (vector >= 0) {
		ev.exception.injected = 1;
		ev.exception.nr = (uint8_t)vector;
		ev.exception.has_error_code = 0;
		ev.exception.error_code = 0;
		ev.flags = 0;
		if (ioctl(v->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
			return false;
	}
	if (op == 0xcc ? v->int3_emulated++ == 0 : v->fwait_emulated++ == 0)
		fprintf(stderr, "vmm: vCPU %u: %s at rip %llx the host's emulator cannot run: %s (reported once)\n", v->id,
			op == 0xcc ? "INT3" : "FWAIT", (unsigned long long)rip,
			vector == 3 ? "#BP injected" : vector == 16 ? "#MF injected" : "stepped over");
	return true;
}
