/*
 * Instructions a host's KVM fails to emulate, done by the VMM instead.
 * kvm_pvm (HOST.md) runs guest CPL0 code through KVM's instruction
 * emulator, which lacks a few instructions a Linux kernel executes whatever
 * its CPUID says; on hardware virtualization none of this ever runs (the CPU
 * executes them). Each kind is counted per vCPU, said once on stderr, and
 * shown in the report (`vcpus[].emulated`).
 */
#ifndef VMM_VCPU_X86_EMULATION_GAPS_H
#define VMM_VCPU_X86_EMULATION_GAPS_H

#include <stdbool.h>
#include <stddef.h>

#include "vcpu/vcpu.h"

/* On KVM_EXIT_INTERNAL_ERROR: true if the failed instruction was done here
 * and the vCPU may run on, false if the failure stands. */
bool x86_emulate_failed_insn(struct vcpu *v);
/* ": insn 48 0f ae 2f" when KVM handed over the bytes, else "". */
const char *x86_emulation_insn_text(const struct kvm_run *run, char *buf, size_t len);

#endif
