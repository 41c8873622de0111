/*
 * Does VMCALL at CPL0 complete on this host? A scratch VM with one vCPU
 * executes VMCALL with RAX = KVM_HC_VAPIC_POLL_IRQ (a no-op every KVM
 * serves) and then HLT; the run is bounded by the vCPU kick signal. On
 * kvm_pvm hosts the vCPU spins in the kernel forever (HOST.md), so a Linux
 * guest must not be offered PV features that issue hypercalls.
 */
#ifndef VMM_VCPU_KVM_VMCALL_PROBE_H
#define VMM_VCPU_KVM_VMCALL_PROBE_H

#include <stddef.h>

/* 1: VMCALL returned 0; 0: it did not complete within timeout_ms (or
 * returned an error); negative errno: the probe itself could not run. The
 * result is cached for the process. Needs vcpu_signals_init() first. */
int kvm_vmcall_probe(int kvm_fd, unsigned timeout_ms, char *note, size_t notelen);

#endif
