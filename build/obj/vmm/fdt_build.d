build/obj/vmm/fdt_build.o: vmm/fdt_build.c vmm/fdt_build.h vmm/config.h \
 vmm/layout.h hypercalls/abi.h
vmm/fdt_build.h:
vmm/config.h:
vmm/layout.h:
hypercalls/abi.h:
