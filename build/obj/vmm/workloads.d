build/obj/vmm/workloads.o: vmm/workloads.c vmm/workloads.h
vmm/workloads.h:
