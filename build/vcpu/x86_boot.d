build/vcpu/x86_boot.o: vcpu/x86_boot.c vcpu/x86_boot.h
vcpu/x86_boot.h:
