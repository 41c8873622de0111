build/obj/vmm/cli.o: vmm/cli.c vmm/cli.h vmm/config.h sched/policy.h \
 sched/core.h sched/types.h sched/hist.h vmm/parse.h vmm/workloads.h
vmm/cli.h:
vmm/config.h:
sched/policy.h:
sched/core.h:
sched/types.h:
sched/hist.h:
vmm/parse.h:
vmm/workloads.h:
