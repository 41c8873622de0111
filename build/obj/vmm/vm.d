build/obj/vmm/vm.o: vmm/vm.c vmm/vm.h devices/debug_exit.h \
 devices/io_bus.h devices/uart8250.h hypercalls/hypercalls.h \
 hypercalls/abi.h vcpu/vcpu.h vcpu/x86_boot.h vmm/config.h \
 vmm/elf_loader.h vmm/kvm.h vmm/layout.h vmm/errors.h vmm/fdt_build.h \
 vmm/file.h
vmm/vm.h:
devices/debug_exit.h:
devices/io_bus.h:
devices/uart8250.h:
hypercalls/hypercalls.h:
hypercalls/abi.h:
vcpu/vcpu.h:
vcpu/x86_boot.h:
vmm/config.h:
vmm/elf_loader.h:
vmm/kvm.h:
vmm/layout.h:
vmm/errors.h:
vmm/fdt_build.h:
vmm/file.h:
