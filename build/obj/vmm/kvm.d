build/obj/vmm/kvm.o: vmm/kvm.c vmm/kvm.h
vmm/kvm.h:
