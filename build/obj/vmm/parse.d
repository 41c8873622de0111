build/obj/vmm/parse.o: vmm/parse.c vmm/parse.h
vmm/parse.h:
