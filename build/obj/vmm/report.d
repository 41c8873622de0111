build/obj/vmm/report.o: vmm/report.c vmm/report.h vmm/vm.h \
 devices/debug_exit.h devices/io_bus.h devices/uart8250.h \
 hypercalls/hypercalls.h hypercalls/abi.h vcpu/vcpu.h vcpu/x86_boot.h \
 vmm/config.h vmm/elf_loader.h vmm/kvm.h vmm/layout.h \
 vcpu/x86_regs_dump.h vmm/errors.h vmm/json_writer.h
vmm/report.h:
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
vcpu/x86_regs_dump.h:
vmm/errors.h:
vmm/json_writer.h:
