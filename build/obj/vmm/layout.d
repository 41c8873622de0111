build/obj/vmm/layout.o: vmm/layout.c vmm/layout.h
vmm/layout.h:
