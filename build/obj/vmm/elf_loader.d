build/obj/vmm/elf_loader.o: vmm/elf_loader.c vmm/elf_loader.h
vmm/elf_loader.h:
