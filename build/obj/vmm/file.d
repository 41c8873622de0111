build/obj/vmm/file.o: vmm/file.c vmm/file.h
vmm/file.h:
