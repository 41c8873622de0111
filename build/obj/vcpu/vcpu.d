build/obj/vcpu/vcpu.o: vcpu/vcpu.c vcpu/vcpu.h devices/io_bus.h \
 hypercalls/hypercalls.h hypercalls/abi.h vcpu/x86_boot.h sched/sched.h \
 sched/types.h sched/hist.h vcpu/x86_cpuid.h
vcpu/vcpu.h:
devices/io_bus.h:
hypercalls/hypercalls.h:
hypercalls/abi.h:
vcpu/x86_boot.h:
sched/sched.h:
sched/types.h:
sched/hist.h:
vcpu/x86_cpuid.h:
