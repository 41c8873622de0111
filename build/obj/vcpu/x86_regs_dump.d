build/obj/vcpu/x86_regs_dump.o: vcpu/x86_regs_dump.c vcpu/x86_regs_dump.h
vcpu/x86_regs_dump.h:
