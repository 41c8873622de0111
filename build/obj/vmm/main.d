build/obj/vmm/main.o: vmm/main.c vcpu/vcpu.h devices/io_bus.h \
 hypercalls/hypercalls.h hypercalls/abi.h vcpu/x86_boot.h vmm/cli.h \
 vmm/config.h vmm/errors.h vmm/kvm.h vmm/report.h sched/types.h \
 sched/hist.h vmm/run.h sched/sched.h vmm/sched_glue.h vmm/vm.h \
 devices/debug_exit.h devices/uart8250.h vmm/elf_loader.h vmm/layout.h \
 vmm/trace.h
vcpu/vcpu.h:
devices/io_bus.h:
hypercalls/hypercalls.h:
hypercalls/abi.h:
vcpu/x86_boot.h:
vmm/cli.h:
vmm/config.h:
vmm/errors.h:
vmm/kvm.h:
vmm/report.h:
sched/types.h:
sched/hist.h:
vmm/run.h:
sched/sched.h:
vmm/sched_glue.h:
vmm/vm.h:
devices/debug_exit.h:
devices/uart8250.h:
vmm/elf_loader.h:
vmm/layout.h:
vmm/trace.h:
