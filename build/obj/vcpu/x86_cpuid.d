build/obj/vcpu/x86_cpuid.o: vcpu/x86_cpuid.c vcpu/x86_cpuid.h
vcpu/x86_cpuid.h:
