#ifndef VMM_VCPU_X86_REGS_DUMP_H
#define VMM_VCPU_X86_REGS_DUMP_H

#include <linux/kvm.h>
#include <stdio.h>

/* The registers a person needs to see why a guest died, a few lines of text. */
void x86_regs_print(FILE *out, const char *indent, const struct kvm_regs *r, const struct kvm_sregs *s);

#endif
