#include "vcpu/x86/regs_dump.h"

void x86_regs_print(FILE *out, const char *in, const struct kvm_regs *r, const struct kvm_sregs *s)
{
	fprintf(out, "%srip %016llx  rsp %016llx  rflags %08llx  cpl %u\n", in, r->rip, r->rsp,
		r->rflags, s->cs.selector & 3);
	fprintf(out, "%srax %016llx  rbx %016llx  rcx %016llx  rdx %016llx\n", in, r->rax, r->rbx,
		r->rcx, r->rdx);
	fprintf(out, "%srsi %016llx  rdi %016llx  rbp %016llx  r8  %016llx\n", in, r->rsi, r->rdi,
		r->rbp, r->r8);
	fprintf(out, "%sr9  %016llx  r10 %016llx  r11 %016llx  r12 %016llx\n", in, r->r9, r->r10,
		r->r11, r->r12);
	fprintf(out, "%sr13 %016llx  r14 %016llx  r15 %016llx\n", in, r->r13, r->r14, r->r15);
	fprintf(out, "%scr0 %016llx  cr2 %016llx  cr3 %016llx  cr4 %016llx  efer %llx\n", in, s->cr0,
		s->cr2, s->cr3, s->cr4, s->efer);
	fprintf(out, "%scs %04x ss %04x  gdt %llx/%x  idt %llx/%x\n", in, s->cs.selector, s->ss.selector,
		s->gdt.base, s->gdt.limit, s->idt.base, s->idt.limit);
}
