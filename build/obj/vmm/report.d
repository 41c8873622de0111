build/obj/vmm/report.o: vmm/report.c vmm/report.h sched/types.h \
 sched/hist.h vmm/run.h sched/sched.h vmm/sched_glue.h vmm/vm.h \
 devices/debug_exit.h devices/io_bus.h devices/uart8250.h \
 hypercalls/hypercalls.h hypercalls/abi.h vcpu/vcpu.h vcpu/x86_boot.h \
 vmm/config.h vmm/elf_loader.h vmm/kvm.h vmm/layout.h vmm/trace.h \
 vcpu/x86_regs_dump.h vmm/errors.h
vmm/report.h:
sched/types.h:
sched/hist.h:
vmm/run.h:
sched/sched.h:
vmm/sched_glue.h:
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
vmm/trace.h:
vcpu/x86_regs_dump.h:
vmm/errors.h:
